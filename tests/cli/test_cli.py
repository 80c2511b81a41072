"""The `vhd` command as a user runs it: one-line errors for bad input, nothing stored lost, clean output."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import mechanisms

VHD = str(Path(sys.executable).parent / "vhd")


def vhd(*args, env=None, check=False, timeout=300, cwd=None, input=None):
    result = subprocess.run([VHD, *args], capture_output=True, text=True, timeout=timeout,
                            env={**os.environ, **(env or {})}, cwd=cwd, input=input)
    if check:
        assert result.returncode == 0, result.stderr
    return result


def assert_one_line_error(result, *needles):
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.strip().splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.fixture(scope="module")
def catalog(prefect_server, tmp_path_factory):
    """A small real catalog generated through the CLI against the test Prefect server."""
    warehouse = str(tmp_path_factory.mktemp("cli") / "wh")
    result = vhd("generate", "--count", "24", "--families", "inventory_dp,knapsack,lp", "--date", "2026-05-01",
                 "--warehouse", warehouse, "--no-progress", check=True)
    return warehouse, result


def _count(warehouse):
    out = vhd("query", "SELECT count(*) AS n FROM environments", "--format", "json", "--warehouse", warehouse,
              check=True)
    return json.loads(out.stdout)[0]["n"]


def test_help_explains_every_command():
    out = vhd("--help", check=True).stdout
    for command in ("generate", "query", "families", "solve", "show", "play", "report", "serve", "llm"):
        assert command in out


def test_a_normal_run_prints_no_traceback_and_no_error_line(catalog):
    _, result = catalog
    for stream in (result.stdout, result.stderr):
        assert "Traceback" not in stream and "ERROR" not in stream
    assert "24 admitted" in result.stdout


def test_families_lists_the_registered_families():
    rows = json.loads(vhd("families", "--format", "json", check=True).stdout)
    groups = {r["family"]: r["group"] for r in rows}
    assert sorted(r["family"] for r in rows) == sorted(m.id for m in mechanisms.families())  # each registered once
    assert [g for g in groups.values()] == sorted(groups.values(), key=list(mechanisms.GROUPS).index)
    assert {f for f, g in groups.items() if g == "trained"} == {"inventory_dp", "routing", "negotiation"}
    assert {f for f, g in groups.items() if g == "external"} == {"ecommerce_365", "travel_planning"}
    assert all(r["grid"] for r in rows)


def test_query_formats(catalog):
    warehouse, _ = catalog
    csv_out = vhd("query", "SELECT family, count(*) AS n FROM environments GROUP BY 1 ORDER BY 1", "--format", "csv",
                  "--warehouse", warehouse, check=True).stdout
    assert csv_out.splitlines()[0] == "family,n" and len(csv_out.splitlines()) == 4


def test_play_oracle_and_default_through_the_cli(catalog):
    warehouse, _ = catalog
    env_id = json.loads(vhd("query", "SELECT env_id FROM environments LIMIT 1", "--format", "json", "--warehouse",
                            warehouse, check=True).stdout)[0]["env_id"]
    for mode in ("written", "revealed", "hidden"):
        oracle = json.loads(vhd("play", env_id, "--mode", mode, "--agent", "oracle", "--format", "json",
                                "--warehouse", warehouse, check=True).stdout)
        default = json.loads(vhd("play", env_id, "--mode", mode, "--agent", "default", "--format", "json",
                                 "--warehouse", warehouse, check=True).stdout)
        assert oracle["score"] == pytest.approx(1.0) and default["score"] == 0.0
    shown = vhd("show", env_id, "--warehouse", warehouse, check=True).stdout
    assert "tools" in shown


def test_interactive_play_takes_typed_tool_calls(catalog):
    warehouse, _ = catalog
    env_id = json.loads(vhd("query", "SELECT env_id FROM environments WHERE family = 'inventory_dp' LIMIT 1",
                            "--format", "json", "--warehouse", warehouse, check=True).stdout)[0]["env_id"]
    result = subprocess.run([VHD, "play", env_id, "--agent", "human", "--mode", "hidden", "--warehouse", warehouse],
                            input='turns_left\nno_such_tool {}\ncalculator {"expression": "2 * 21"}\nquit\n',
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "turns_left" in result.stdout and "unknown tool" in result.stdout and re.search(r"\b42\b", result.stdout)


def test_reports_render(catalog):
    warehouse, _ = catalog
    cost = vhd("report", "cost", "--warehouse", warehouse, check=True).stdout
    assert "cost per family" in cost and "usd_per_environment" in cost
    diversity = vhd("report", "diversity", "--warehouse", warehouse, check=True).stdout
    assert "family x domain coverage" in diversity


def test_unknown_family(tmp_path):
    assert_one_line_error(vhd("generate", "--count", "5", "--families", "chess", "--warehouse", str(tmp_path)),
                          "unknown family 'chess'", "inventory_dp")


@pytest.mark.parametrize("count", ["0", "-2"])
def test_non_positive_count(tmp_path, count):
    assert_one_line_error(vhd("generate", "--count", count, "--warehouse", str(tmp_path)), "count must be")


def test_bad_date(tmp_path):
    assert_one_line_error(vhd("generate", "--count", "5", "--date", "2026-02-30", "--warehouse", str(tmp_path)),
                          "bad date", "YYYY-MM-DD")


@pytest.mark.parametrize("sql", ["DELETE FROM environments", "CREATE TABLE x AS SELECT 1",
                                 "COPY environments TO 'out.csv'", "SELECT 1; DROP VIEW environments"])
def test_write_statements_are_refused_and_nothing_is_lost(catalog, sql):
    warehouse, _ = catalog
    before = _count(warehouse)
    assert_one_line_error(vhd("query", sql, "--warehouse", warehouse), "read-only")
    assert _count(warehouse) == before


def test_unknown_env_id(catalog):
    warehouse, _ = catalog
    assert_one_line_error(vhd("play", "inventory_dp-0000", "--warehouse", warehouse), "unknown environment id")
    assert_one_line_error(vhd("show", "nope", "--warehouse", warehouse), "unknown environment id")


@pytest.mark.parametrize("location", ["ftp://host/x", "s3://"])
def test_malformed_warehouse_path(location):
    assert_one_line_error(vhd("query", "SELECT 1", "--warehouse", location), "warehouse")


def test_a_warehouse_path_that_is_a_file(tmp_path):
    target = tmp_path / "file.txt"
    target.write_text("keep me")
    assert_one_line_error(vhd("generate", "--count", "3", "--warehouse", str(target)), "warehouse")
    assert target.read_text() == "keep me"


def test_serve_without_a_server_says_how_to_start_one(tmp_path):
    result = vhd("serve", "--warehouse", str(tmp_path), env={"PREFECT_API_URL": "http://127.0.0.1:9/api"},
                 timeout=120)
    assert_one_line_error(result, "prefect server start")


def test_solve_prints_the_reference_of_parameters_given_as_data(tmp_path):
    example = vhd("solve", "knapsack", "--example", "--seed", "3", check=True).stdout
    path = tmp_path / "knapsack.json"
    path.write_text(example)
    report = json.loads(vhd("solve", "knapsack", "--params", str(path), "--format", "json", check=True).stdout)
    m = mechanisms.get("knapsack")
    params = m.params_from_data(json.loads(example))
    assert report["u_star"] == m.solve(params).u_star and report["solver"] == m.solve(params).solver
    assert report["optimal_actions"][-1]["op"] == "submit" and report["u0"] <= report["u_star"]
    table = vhd("solve", "knapsack", "--params", str(path), check=True).stdout
    assert "u* = " in table and "optimal plan" in table and "select_item" in table


def test_solve_reads_explicit_data_from_standard_input():
    data = {"values": [6, 5, 4], "weights": [[3, 2, 2]], "capacities": [4]}
    result = subprocess.run([VHD, "solve", "knapsack", "--params", "-", "--format", "json"], input=json.dumps(data),
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["u_star"] == 9  # items 2 and 3: weight 4, value 9


@pytest.mark.parametrize(("family", "data", "needle"), [
    ("knapsack", {"values": [1, 2], "weights": [[1, 1]], "capacities": [-3]}, "capacities must be positive"),
    ("knapsack", {"values": [1, 2], "weights": [[1]], "capacities": [3]}, "weights row 1 must have one entry"),
    ("knapsack", {"values": [1]}, "weights: Field required"),
    ("lp", [1, 2], "expected a JSON object"),
    ("lp", {"c": [1.0], "A_ub": [[1.0]], "b_ub": [-1.0]}, "must be non-negative"),
    ("lp", {"c": [1.0, 1.0], "A_ub": [[1.0, 0.0]], "b_ub": [4.0]}, "unbounded"),
])
def test_solve_refuses_bad_parameters_with_one_line(tmp_path, family, data, needle):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    assert_one_line_error(vhd("solve", family, "--params", str(path)), needle)


def test_solve_refuses_a_missing_file_and_broken_json(tmp_path):
    assert_one_line_error(vhd("solve", "lp", "--params", str(tmp_path / "none.json")), "does not exist",
                          "vhd solve lp --example")
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    assert_one_line_error(vhd("solve", "lp", "--params", str(broken)), "is not valid JSON")
    assert_one_line_error(vhd("solve", "no_such_family", "--example"), "unknown family")
