"""`vhd export`: one row per environment and mode, and each row round-trips into load_env / env_from_row."""

from __future__ import annotations

import json

import pytest

from cli.main import main
from envs import env_from_row, load_env
from envs.agents import play
from envs.export import read_rows
from tests.evaluation.support import generated_warehouse


@pytest.fixture(scope="module")
def warehouse(prefect_server):
    return generated_warehouse()


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_an_export_round_trips_into_load_env(warehouse, tmp_path, capsys, fmt):
    out = tmp_path / f"envs.{fmt}"
    assert main(["export", "--where", "family IN ('knapsack', 'negotiation')", "--format", fmt, "--out", str(out),
                 "--warehouse", warehouse]) == 0
    assert "wrote 12 row(s) (4 environment(s) x 3 mode(s))" in capsys.readouterr().out
    rows = read_rows(out)
    assert len(rows) == 12 and {(r["mode"]) for r in rows} == {"written", "revealed", "hidden"}
    for row in rows:
        env = load_env(row["env_id"], row["mode"], warehouse)
        assert row["system_prompt"] == env.instructions
        assert json.loads(row["tools_json"]) == env.tools()
        assert row["turn_budget"] == env.spec.turn_budget and row["family"] == env.spec.family
        rebuilt = env_from_row(row)
        assert rebuilt.spec == env.spec and play(rebuilt, "oracle").score == 1.0


def test_export_of_one_mode_and_bad_input(warehouse, tmp_path, capsys):
    out = tmp_path / "hidden.jsonl"
    assert main(["export", "--mode", "hidden", "--limit", "5", "--out", str(out), "--warehouse", warehouse]) == 0
    assert [r["mode"] for r in read_rows(out)] == ["hidden"] * 5
    capsys.readouterr()
    assert main(["export", "--where", "1; DROP TABLE environments", "--out", str(out), "--warehouse", warehouse]) == 2
    assert "single SQL expression" in capsys.readouterr().err
