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


def test_a_short_shard_gets_more_rounds_and_the_flow_lands_the_pinned_ids(prefect_server, tmp_path):
    """The pinned hard plan: some shards reject instances past their spares, and the flow runs their second
    rounds (task runs named -r2); what lands is what tests/tasks/test_pinned_ids.py pins, also when a
    re-run takes every round's stages from the cache."""
    import json
    import shutil

    from tests.tasks.test_pinned_ids import HARD_PLAN, PINNED

    pinned = sorted(i for ids in json.loads(PINNED.read_text())["hard"].values() for i in ids)
    warehouse = str(tmp_path / "wh")
    summary = run_generate(workers=2, warehouse=warehouse, **HARD_PLAN)
    wh = resolve_warehouse(warehouse)
    ids = run_query(wh, "SELECT env_id FROM environments ORDER BY env_id").column("env_id").to_pylist()
    assert summary["status"] == "completed" and ids == pinned
    # negotiation's and scheduling's shards need a second round (tests/tasks/test_pinned_ids.py's plan)
    second = {f"{stage}-{family}-train-0000-r2" for stage in ("sample", "solve", "render", "validate")
              for family in ("negotiation", "scheduling")}
    runs = settled_task_runs(summary["flow_run_id"], lambda runs: second <= {r.name for r in runs})
    assert second | {"validate-negotiation-train-0000"} <= {r.name for r in runs}

    def second_cached(runs) -> bool:
        return {(r.name, r.state.name) for r in runs if r.state is not None} >= {(name, "Cached") for name in second}

    shutil.rmtree(tmp_path / "wh" / "_commits")  # as if the process died after landing, before committing
    again = run_generate(workers=2, warehouse=warehouse, **HARD_PLAN)
    assert run_query(wh, "SELECT env_id FROM environments ORDER BY env_id").column("env_id").to_pylist() == pinned
    assert second_cached(settled_task_runs(again["flow_run_id"], second_cached))


def test_shards_run_a_few_at_a_time_the_largest_first(prefect_server, tmp_path):
    """With two threads, at most two shards have stages under way at any moment (a stage is submitted once the one
    before it completed, a shard once another finished), and the shards of 10 all start before those of 5."""
    summary = run_generate(workers=2, warehouse=str(tmp_path / "wh"), date="2026-04-03", count=50,
                           families="knapsack,inventory_dp", shard_size=10)  # per family shards of 10, 10 and 5
    assert summary["status"] == "completed" and summary["admitted"] == 50
    stages = ("sample", "solve", "render", "validate")

    def settled(runs) -> bool:
        done = [r for r in runs if r.name.split("-")[0] in stages and r.state is not None and r.state.is_final()]
        return len(done) >= 6 * len(stages) and all(r.start_time and r.end_time for r in done)

    spans: dict[str, list] = {}
    for run in settled_task_runs(summary["flow_run_id"], settled):
        stage, _, shard = run.name.partition("-")
        if stage in stages:
            spans.setdefault(shard, []).extend([run.start_time, run.end_time])
    spans = {shard: (min(times), max(times)) for shard, times in spans.items()}
    assert len(spans) == 6, sorted(spans)
    for shard, (start, _) in spans.items():
        under_way = [other for other, (begun, ended) in spans.items() if begun <= start < ended]
        assert len(under_way) <= 2, (shard, under_way)
    last_of_ten = max(start for shard, (start, _) in spans.items() if not shard.endswith("-0002"))
    assert all(start > last_of_ten for shard, (start, _) in spans.items() if shard.endswith("-0002"))
