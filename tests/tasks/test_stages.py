"""The stage functions without Prefect: plans, exact admitted counts, determinism, landing."""

from __future__ import annotations

import datetime as dt

import pytest

from tasks.commit import commit
from tasks.land import land_result
from tasks.plan import PlanError, plan_shards
from tasks.rounds import run_shard
from warehouse.catalog import run_query
from warehouse.location import resolve_warehouse


def run_plain(warehouse, date="2026-03-01", count=30, families="inventory_dp", shard_size=100):
    shards = plan_shards(date, count, families, shard_size=shard_size)
    landed, results = [], []
    for shard in shards:
        result = run_shard(shard)
        results.append(result)
        landed.append(land_result(warehouse, result, "test-run"))
    summary = commit(warehouse, f"run-{date}-{count}", None, shards[0].date, {"count": count}, landed, 0, [],
                     dt.datetime.now(dt.UTC))
    return shards, results, summary


def test_plan_spreads_the_count_over_families_and_shards():
    shards = plan_shards("2026-03-01", 250, "inventory_dp,knapsack,lp", shard_size=40)
    assert sum(s.count for s in shards) == 250
    assert {s.family for s in shards} == {"inventory_dp", "knapsack", "lp"}
    assert max(s.count for s in shards) <= 40
    assert [s.key for s in shards] == [s.key for s in plan_shards("2026-03-01", 250, "inventory_dp,knapsack,lp",
                                                                  shard_size=40)]
    assert {s.seed for s in shards} != {s.seed for s in plan_shards("2026-03-02", 250, shard_size=40)}


@pytest.mark.parametrize("count", [0, -3])
def test_a_non_positive_count_is_refused(count):
    with pytest.raises(PlanError, match="count must be a positive integer"):
        plan_shards("2026-03-01", count)


@pytest.mark.parametrize("date", ["2026-13-01", "yesterday", "01/02/2026"])
def test_a_bad_date_is_refused(date):
    with pytest.raises(PlanError, match="bad date"):
        plan_shards(date, 10)


def test_exactly_count_admitted_environments_are_delivered(tmp_path):
    shards, results, summary = run_plain(str(tmp_path), count=37, families="inventory_dp,knapsack,lp")
    assert sum(len(r.admitted) for r in results) == 37
    assert summary["new_environments"] == 37
    wh = resolve_warehouse(str(tmp_path))
    rows = run_query(wh, "SELECT count(*) AS n, count(DISTINCT env_id) AS ids FROM environments").to_pylist()[0]
    assert rows == {"n": 37, "ids": 37}
    attempts = run_query(wh, "SELECT count(*) AS n, count(*) FILTER (WHERE admitted) AS ok FROM attempts")
    assert attempts.to_pylist()[0]["ok"] == 37
    assert run_query(wh, "SELECT count(*) AS n FROM runs").to_pylist()[0]["n"] == 1


def test_the_same_plan_yields_the_same_environments(tmp_path):
    _, first, _ = run_plain(str(tmp_path / "a"), count=12)
    _, second, _ = run_plain(str(tmp_path / "b"), count=12)
    assert [e.spec.env_id for r in first for e in r.admitted] == [e.spec.env_id for r in second for e in r.admitted]


def test_every_rejected_attempt_is_recorded_with_a_reason(tmp_path):
    _, results, _ = run_plain(str(tmp_path), count=40)
    attempts = [a for r in results for a in r.attempts]
    assert all(a.reason for a in attempts if not a.admitted)
    assert all(a.env_id for a in attempts if a.admitted)


def test_a_shard_that_runs_out_of_instances_makes_the_run_partial_and_says_why(tmp_path):
    from schemas.shard import ShardSpec

    # 60 customers x 16 sites always describe in more than the admission limit of text: nothing is admitted
    shard = ShardSpec(date="2026-03-09", family="facility_location", family_version=1, split="train", index=0, count=2,
                      size=60, horizon=16)
    result = run_shard(shard)
    assert result.short_by == 2 and not result.admitted
    assert {a.reason.partition("; fix: ")[0] for a in result.attempts} == {
        "structure: an instruction text is longer than 6000 characters"}
    summary = commit(str(tmp_path), "run-short", None, shard.date, {"count": 2},
                     [land_result(str(tmp_path), result, "run-short")], 0, [], dt.datetime.now(dt.UTC))
    assert summary["status"] == "partial" and "2 environment(s) short" in summary["error"]
    assert shard.key in summary["error"]


def test_the_online_policy_below_the_hindsight_ceiling_lands_with_its_score(tmp_path):
    run_plain(str(tmp_path), count=8, families="sequential_stopping,weitzman_search,knapsack")
    rows = run_query(resolve_warehouse(str(tmp_path)),
                     "SELECT family, family_group, online_u, online_score, u_star, u0, spec_json "
                     "FROM environments").to_pylist()
    import json

    from envs.scoring import score

    for row in rows:
        baselines = json.loads(row["spec_json"])["reference"]["baselines"]
        if row["family"] == "knapsack":
            assert row["online_u"] is None and row["online_score"] is None and "online_optimal" not in baselines
            assert {"informed", "naive_prober", "greedy_value", "greedy_density"} <= set(baselines)  # difficulty
            assert row["family_group"] == "near_ood"
            continue
        assert row["family_group"] == "far_ood_structure"
        assert row["online_u"] == baselines["online_optimal"] <= row["u_star"] + 1e-9
        assert row["online_score"] == score(row["online_u"], row["u0"], row["u_star"])
