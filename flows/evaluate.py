"""evaluate: select -> play (one task per environment and mode, `concurrency` at a time) -> land and commit."""

from __future__ import annotations

import time
import uuid
from typing import Any

from prefect import flow
from prefect.runtime import flow_run
from prefect.task_runners import ThreadPoolTaskRunner

from schemas.errors import UserError
from tasks.evaluate import eval_date, land_evaluations, play_episode_task, select_environments

DEFAULT_CONCURRENCY = 4


@flow(name="evaluate", task_runner=ThreadPoolTaskRunner(max_workers=DEFAULT_CONCURRENCY), log_prints=False)
def evaluate(agent: str, modes: list[str], where: str = "true", limit: int | None = None, model: str | None = None,
             agent_config: dict[str, Any] | None = None, seed: int = 0, warehouse: str | None = None) -> dict:
    """Play every selected environment in every mode with one agent and land one `evaluations` row per episode.

    An episode whose task still fails after its retries (not a model error: those are in the row) is named in
    the summary's `failures`; the others land.
    """
    started = time.perf_counter()
    eval_run_id = f"eval-{flow_run.get_id() or uuid.uuid4().hex}"
    date = eval_date()
    specs = select_environments(warehouse, where, limit, seed)  # --limit: a sample drawn with the same seed
    config = {"model": model, **(agent_config or {})} if model else None
    futures = [(mode, play_episode_task.submit(spec, mode, agent, eval_run_id, seed, config))
               for spec in specs for mode in modes]
    rows, failures = [], []
    for mode, future in futures:
        try:
            rows.append(future.result())
        except Exception as error:  # noqa: BLE001 - reported in the summary, the other episodes still land
            failures.append(f"{mode}: {type(error).__name__}: {str(error)[:200]}")
    summary = {"eval_run_id": eval_run_id, "date": date, "agent": agent, "model": model, "modes": modes,
               "where": where, "limit": limit, "sample_seed": seed if limit is not None else None,
               "environments": len(specs), "episodes": len(rows),
               "model_errors": sum(1 for row in rows if row["error"]), "failures": failures}
    path = land_evaluations(warehouse, rows, eval_run_id, date, summary) if rows else None
    return {**summary, "file": path, "wall_seconds": time.perf_counter() - started}


def run_evaluate(concurrency: int = DEFAULT_CONCURRENCY, **parameters) -> dict:
    """Run the flow with `concurrency` episode workers (threads)."""
    if concurrency < 1:
        raise UserError(f"--concurrency must be at least 1, got {concurrency}")
    return evaluate.with_options(task_runner=ThreadPoolTaskRunner(max_workers=concurrency))(**parameters)
