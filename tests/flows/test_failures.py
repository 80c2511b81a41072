"""A shard that fails every time: it is retried, the other shards land, and the failure is in `runs` and the state."""

from __future__ import annotations

import pytest

import mechanisms
from flows.generate import run_generate_state, run_summary
from tasks.common import OTHER_ERROR_TRIES
from tests.flows.prefect_api import settled_task_runs
from warehouse.catalog import run_query
from warehouse.location import resolve_warehouse

pytestmark = pytest.mark.integration


def test_a_shard_that_always_fails_is_retried_reported_and_the_rest_lands(prefect_server, tmp_path, monkeypatch):
    from prefect.client.orchestration import get_client

    broken = mechanisms.get("inventory_dp")

    def solve(self, params):
        raise RuntimeError("injected solver failure")

    monkeypatch.setattr(type(broken), "solve", solve)
    warehouse = str(tmp_path / "wh")
    state = run_generate_state(workers=2, date="2026-05-01", count=12, families="inventory_dp,lp",
                               warehouse=warehouse)
    summary = run_summary(state)
    wh = resolve_warehouse(warehouse)

    per_family = run_query(wh, "SELECT family, count(*) AS n FROM environments GROUP BY 1").to_pylist()
    assert per_family == [{"family": "lp", "n": 6}]  # the other family's shards landed and were committed
    (row,) = run_query(wh, "SELECT status, error, new_environments, requested FROM runs").to_pylist()
    assert row["status"] == "partial" and row["new_environments"] == 6 and row["requested"] == 12
    failed = summary["failed_shards"]
    assert failed and all(key.startswith("inventory_dp-") for key in failed)
    for key in failed:
        assert f"{key}: solve failed after {OTHER_ERROR_TRIES} tries: RuntimeError: injected solver failure" \
            in row["error"]

    assert state.is_failed()  # the flow's Prefect state carries the failure, with the shard and the reason
    assert all(key in state.message for key in failed) and "injected solver failure" in state.message
    with get_client(sync_client=True) as client:
        flow_run = client.read_flow_run(summary["flow_run_id"])
    assert flow_run.state.is_failed() and "injected solver failure" in flow_run.state.message

    def failed_solves(runs):
        return [r for r in runs if r.name.startswith("solve") and r.state is not None and r.state.is_failed()]

    task_runs = settled_task_runs(flow_run.id, lambda runs: len(failed_solves(runs)) >= len(failed))
    solves = failed_solves(task_runs)
    assert len(solves) == len(failed) and all(r.run_count == OTHER_ERROR_TRIES for r in solves)


def test_a_rerun_after_the_fix_lands_the_missing_shards_only(prefect_server, tmp_path, monkeypatch):
    broken = mechanisms.get("lp")
    original = type(broken).solve

    def solve(self, params):
        raise RuntimeError("injected solver failure")

    warehouse = str(tmp_path / "wh")
    monkeypatch.setattr(type(broken), "solve", solve)
    first = run_summary(run_generate_state(workers=2, date="2026-05-02", count=8, families="inventory_dp,lp",
                                           warehouse=warehouse))
    monkeypatch.setattr(type(broken), "solve", original)
    second = run_summary(run_generate_state(workers=2, date="2026-05-02", count=8, families="inventory_dp,lp",
                                            warehouse=warehouse))
    wh = resolve_warehouse(warehouse)
    assert first["status"] == "partial" and first["new_environments"] == 4
    assert second["status"] == "completed" and second["new_environments"] == 4 and second["admitted"] == 8
    assert not second["failed_shards"]
    per_family = run_query(wh, "SELECT family, count(*) AS n FROM environments GROUP BY 1 ORDER BY 1").to_pylist()
    assert per_family == [{"family": "inventory_dp", "n": 4}, {"family": "lp", "n": 4}]
