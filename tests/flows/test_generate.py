"""The generate flow end to end against a real Prefect server started by the test session."""

from __future__ import annotations

import pytest

from flows.generate import run_generate
from tests.flows.prefect_api import settled_task_runs, stage_states
from warehouse.catalog import run_query
from warehouse.location import resolve_warehouse

pytestmark = pytest.mark.integration


def _count(wh, table):
    return run_query(wh, f"SELECT count(*) AS n FROM {table}").to_pylist()[0]["n"]


def test_flow_lands_the_requested_count_and_a_rerun_adds_nothing(prefect_server, tmp_path):
    warehouse = str(tmp_path / "wh")
    params = {"date": "2026-04-01", "count": 90, "families": "inventory_dp,knapsack,lp", "warehouse": warehouse,
              "shard_size": 20}
    summary = run_generate(workers=3, **params)
    wh = resolve_warehouse(warehouse)
    assert summary["status"] == "completed" and summary["new_environments"] == 90
    assert summary["flow_run_id"]
    assert _count(wh, "environments") == 90
    counts = {t: _count(wh, t) for t in ("environments", "attempts", "llm_calls")}
    per_family = run_query(wh, "SELECT family, count(*) AS n FROM environments GROUP BY family ORDER BY family")
    assert per_family.to_pylist() == [{"family": f, "n": 30} for f in ("inventory_dp", "knapsack", "lp")]

    again = run_generate(workers=3, **params)
    assert again["new_environments"] == 0 and again["admitted"] == 90
    assert {t: _count(wh, t) for t in counts} == counts
    runs = run_query(wh, "SELECT status, new_environments FROM runs ORDER BY started_at").to_pylist()
    assert runs == [{"status": "completed", "new_environments": 90}, {"status": "completed", "new_environments": 0}]


def test_a_run_that_died_before_its_commit_is_finished_from_the_stage_cache(prefect_server, tmp_path):
    import shutil

    warehouse = str(tmp_path / "wh")
    params = {"date": "2026-04-02", "count": 30, "families": "lp", "warehouse": warehouse, "shard_size": 10}
    first = run_generate(workers=2, **params)
    wh = resolve_warehouse(warehouse)
    ids = run_query(wh, "SELECT env_id FROM environments ORDER BY env_id").column("env_id").to_pylist()
    shutil.rmtree(tmp_path / "wh" / "_commits")  # as if the process died after landing, before committing
    assert _count(wh, "environments") == 0  # nothing uncommitted is visible

    second = run_generate(workers=2, **params)
    assert second["new_environments"] == 30 and first["new_environments"] == 30
    assert run_query(wh, "SELECT env_id FROM environments ORDER BY env_id").column("env_id").to_pylist() == ids
    wanted = {(stage, "Cached") for stage in ("sample", "solve", "render", "validate")}
    runs = settled_task_runs(second["flow_run_id"], lambda runs: wanted <= stage_states(runs))
    assert wanted <= stage_states(runs), stage_states(runs)
