"""Reading a finished flow run's task runs from the Prefect server.

Task-run states reach the server as events, a moment after the flow itself returns, so a test that reads them
right away can see a task run whose state has not arrived yet. These helpers wait (up to a deadline) until what
the test asks for is there, then return what the server has.
"""

from __future__ import annotations

import time
from collections.abc import Callable

SETTLE_SECONDS = 60.0


def settled_task_runs(flow_run_id, ready: Callable[[list], bool], timeout: float = SETTLE_SECONDS) -> list:
    """The flow run's task runs once `ready(task_runs)` holds (or what is there when the deadline passes)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    deadline = time.monotonic() + timeout
    with get_client(sync_client=True) as client:
        while True:
            runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
            if ready(runs) or time.monotonic() > deadline:
                return runs
            time.sleep(0.5)


def stage_states(task_runs: list) -> set[tuple[str, str]]:
    """(stage, state name) of every task run whose state has arrived, e.g. ("solve", "Cached")."""
    return {(run.name.split("-")[0], run.state.name) for run in task_runs if run.state is not None}


def run_artifacts(flow_run_id, key: str) -> list:
    """The artifacts of that key that the flow run created (artifacts are written through the API at once)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey, FlowRunFilter, FlowRunFilterId

    with get_client(sync_client=True) as client:
        return client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])),
                                     flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
