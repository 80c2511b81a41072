"""A sample of the report's numbers recomputed with independent SQL (other formulations, other joins) or Python
over the tables, and found equal; --since restricts every table to its later dates."""

from __future__ import annotations

import json

import pytest

from reports.collect import collect
from warehouse.catalog import QueryError, run_query


def _q(wh, sql):
    return run_query(wh, sql).to_pylist()


def test_size_numbers(report_warehouse, built_report):
    _, wh = report_warehouse
    c = built_report.collected
    per_family = {r["family"]: r["environments"] for r in c.rows("size_per_family")}
    assert per_family == {r["family"]: r["n"] for r in _q(wh, "SELECT family, count(env_id) AS n FROM environments "
                                                                "GROUP BY family")}
    nights = c.rows("size_per_night")
    independent = _q(wh, "SELECT CAST(date AS VARCHAR) AS d, count(*) AS n FROM environments GROUP BY d ORDER BY d")
    assert [(str(r["night"]), r["environments"]) for r in nights] == [(r["d"], r["n"]) for r in independent]
    running = 0
    for night, row in zip(nights, independent, strict=True):
        running += row["n"]
        assert night["cumulative"] == running
    rejected = _q(wh, "SELECT count(*) AS n FROM attempts WHERE admitted = false")[0]["n"]
    assert c.one("size_summary")["rejected_attempts"] == rejected == sum(r["rejected_attempts"] for r in nights)
    assert c.one("size_summary")["environments"] == sum(per_family.values())


def test_cost_numbers(report_warehouse, built_report):
    _, wh = report_warehouse
    c = built_report.collected
    summary = c.one("cost_summary")
    runs = _q(wh, "SELECT cost_usd FROM runs")
    assert summary["total_usd"] == pytest.approx(sum(r["cost_usd"] for r in runs))
    tokens = _q(wh, "SELECT prompt_tokens, completion_tokens FROM llm_calls")
    assert int(summary["tokens"]) == sum(r["prompt_tokens"] + r["completion_tokens"] for r in tokens) > 0
    environments = _q(wh, "SELECT count(*) AS n FROM environments")[0]["n"]
    assert summary["usd_per_environment"] == pytest.approx(summary["total_usd"] / environments)

    # the rejected share with a semi-join instead of a join
    rejected = _q(wh, """
        SELECT sum(cost_usd) AS usd FROM llm_calls c
        WHERE EXISTS (SELECT 1 FROM attempts a WHERE a.run_id = c.run_id AND a.instance_key = c.instance_key
                      AND a.attempt = c.attempt AND NOT a.admitted)""")[0]["usd"]
    share = c.one("cost_rejected_share")
    assert rejected > 0
    assert share["usd_share_rejected"] == pytest.approx(rejected / sum(r["cost_usd"] for r in _q(
        wh, "SELECT cost_usd FROM llm_calls")))

    per_stage = {r["stage"]: r for r in c.rows("cost_per_stage")}
    for row in _q(wh, "SELECT stage, sum(completion_tokens) AS t FROM llm_calls GROUP BY stage"):
        assert int(per_stage[row["stage"]]["completion_tokens"]) == row["t"]

    per_family_tokens = {r["family"]: int(r["tokens"]) for r in c.rows("cost_per_family")}
    family_of = {(r["run_id"], r["instance_key"], r["attempt"]): r["family"] for r in _q(
        wh, "SELECT run_id, instance_key, attempt, family FROM attempts")}
    by_family: dict[str, int] = {}
    for call in _q(wh, "SELECT run_id, instance_key, attempt, prompt_tokens + completion_tokens AS t FROM llm_calls"):
        family = family_of[(call["run_id"], call["instance_key"], call["attempt"])]
        by_family[family] = by_family.get(family, 0) + call["t"]
    assert {f: t for f, t in per_family_tokens.items() if t} == by_family


def test_next_night_projection(report_warehouse, built_report):
    _, wh = report_warehouse
    projected = built_report.collected.one("cost_next_night_total")
    rows = _q(wh, """
        SELECT e.family, count(*) * (SELECT avg(cost_usd) FROM environments f WHERE f.family = e.family) AS usd
        FROM environments e WHERE e.date = (SELECT max(date) FROM environments) GROUP BY e.family""")
    assert projected["projected_usd"] == pytest.approx(sum(r["usd"] for r in rows))
    assert int(projected["next_night_environments"]) == 26


def test_admission_and_diversity_numbers(report_warehouse, built_report):
    _, wh = report_warehouse
    c = built_report.collected
    for row in c.rows("admission_per_family"):
        instances = _q(wh, f"SELECT count(DISTINCT run_id || instance_key) AS n, "
                           f"count(DISTINCT run_id || instance_key) FILTER (WHERE admitted) AS ok, count(*) AS a "
                           f"FROM attempts WHERE family = '{row['family']}'")[0]
        assert (row["instances"], row["admitted"], int(row["attempts"])) == (instances["n"], instances["ok"],
                                                                             instances["a"])
        assert row["yield"] == round(instances["ok"] / instances["n"], 4)

    specs = _q(wh, "SELECT family, params_hash, spec_json FROM environments")
    interfaces = {tuple(sorted(t["name"] for t in json.loads(r["spec_json"])["rendering"]["tools"])) for r in specs}
    summary = c.one("diversity_summary")
    assert summary["distinct_tool_interfaces"] == len(interfaces)
    assert summary["distinct_instances"] == len({r["params_hash"] for r in specs})
    cells = {(r["family"], r["domain"]): r["environments"] for r in c.rows("diversity_family_domain")}
    assert sum(cells.values()) == len(specs)
    assert cells == {(r["family"], r["domain"]): r["n"] for r in _q(
        wh, "SELECT family, domain, count(*) AS n FROM environments GROUP BY ALL")}


def test_difficulty_numbers(report_warehouse, built_report):
    import statistics

    _, wh = report_warehouse
    rows = {r["family"]: r for r in built_report.collected.rows("difficulty_per_family")}
    for family in ("knapsack", "lp"):
        values = [r["u0"] / r["u_star"] for r in _q(
            wh, f"SELECT u0, u_star FROM environments WHERE family = '{family}'")]
        assert rows[family]["u0_over_u_star_median"] == pytest.approx(statistics.median(values), abs=1e-4)
    histogram = built_report.collected.rows("difficulty_histogram")
    total = _q(wh, "SELECT count(*) AS n FROM environments WHERE u_star <> 0")[0]["n"]
    assert sum(r["environments"] for r in histogram if r["measure"] == "u0 / u*") == total


def test_since_restricts_every_table(report_warehouse):
    _, wh = report_warehouse
    later = collect(wh, "2026-05-02")
    assert later.one("size_summary")["environments"] == 26 and later.one("size_summary")["nights"] == 1
    tokens = _q(wh, "SELECT sum(prompt_tokens + completion_tokens) AS t FROM llm_calls WHERE date >= '2026-05-02'")
    assert int(later.one("cost_summary")["tokens"]) == tokens[0]["t"]
    with pytest.raises(QueryError, match="not a date; give it as YYYY-MM-DD"):
        collect(wh, "May 2")


def test_the_skill_gap_per_tier_is_the_informed_minus_the_naive_prober(report_warehouse, built_report):
    from reports.summary import summary_lines

    _, wh = report_warehouse
    rows = built_report.collected.rows("difficulty_tiers")
    for row in rows:
        landed = _q(wh, "SELECT avg(informed_score) AS i, avg(naive_score) AS n, avg(skill_gap) AS g FROM environments "
                        f"WHERE family = '{row['family']}' AND tier = '{row['tier']}'")[0]
        assert row["mean_naive_score"] == pytest.approx(landed["n"], abs=1e-4)
        assert row["mean_skill_gap"] == pytest.approx(landed["i"] - landed["n"], abs=1e-3)
    tiers = next(line for line in summary_lines(built_report) if line.startswith("tiers: "))
    assert "skill gap" in tiers and "naive prober" in tiers and tiers.endswith("[difficulty_tiers]")
