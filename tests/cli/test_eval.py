"""`vhd eval` and `vhd report eval` over a real generated warehouse, through the evaluate flow."""

from __future__ import annotations

import pytest

from cli.main import main
from tests.evaluation.support import COUNT, OracleModel, generated_warehouse
from warehouse.catalog import run_query
from warehouse.location import resolve_warehouse


@pytest.fixture(scope="module")
def warehouse(prefect_server):
    return generated_warehouse()


def _rows(warehouse, sql):
    return run_query(resolve_warehouse(warehouse), sql).to_pylist()


@pytest.mark.parametrize(("agent", "expected"), [("oracle", 1.0), ("default", 0.0)])
def test_baselines_score_one_and_zero_in_every_mode(warehouse, capsys, agent, expected):
    assert main(["eval", "--agent", agent, "--mode", "all", "--warehouse", warehouse, "--concurrency", "2"]) == 0
    out = capsys.readouterr().out
    assert "mean score per family and mode" in out and "knapsack" in out
    rows = _rows(warehouse, f"SELECT family, mode, score, error, cost_usd, trajectory_json, date FROM evaluations "
                            f"WHERE agent = '{agent}'")
    assert len(rows) == COUNT * 3
    assert {row["score"] for row in rows} == {expected}
    assert {row["mode"] for row in rows} == {"written", "revealed", "hidden"}
    assert len({row["family"] for row in rows}) == 13
    assert all(row["error"] is None and row["cost_usd"] == 0.0 for row in rows)


def test_a_litellm_agent_plays_through_vhd_eval_and_lands(warehouse, monkeypatch, capsys):
    model = OracleModel(monkeypatch, warehouse, "hidden")
    assert main(["eval", "--agent", "litellm", "--model", "openai/gpt-4o-mini", "--mode", "hidden",
                 "--where", "family IN ('knapsack', 'inventory_dp', 'routing')", "--limit", "4",
                 "--warehouse", warehouse]) == 0
    rows = _rows(warehouse, "SELECT * FROM evaluations WHERE agent = 'litellm'")
    assert len(rows) == 4 and model.requests >= 4
    for row in rows:
        assert row["score"] == 1.0 and row["model"] == "openai/gpt-4o-mini" and row["error"] is None
        assert row["prompt_tokens"] > 0 and row["cost_usd"] > 0 and row["llm_calls"] == row["turns"]
    out = capsys.readouterr().out
    assert "openai/gpt-4o-mini" in out
    assert main(["report", "eval", "--warehouse", warehouse, "--format", "csv"]) == 0
    report = capsys.readouterr().out
    assert "hidden_minus_revealed" in report and "openai/gpt-4o-mini" in report


@pytest.mark.parametrize(("argv", "message"), [
    (["--agent", "oracle", "--where", "true; DROP TABLE x"], "single SQL expression"),
    (["--agent", "oracle", "--where", "true) UNION SELECT env_id FROM environments WHERE (true"],
     "one SQL expression"),
    (["--agent", "oracle", "--where", "no_such_column = 1"], "no_such_column"),
    (["--agent", "oracle", "--mode", "blind"], "unknown mode 'blind'"),
    (["--agent", "litellm"], "needs --model"),
    (["--agent", "oracle", "--model", "openai/gpt-4o-mini"], "plays without a model"),
    (["--agent", "oracle", "--limit", "0"], "--limit must be at least 1"),
])
def test_bad_eval_input_is_one_line(warehouse, capsys, argv, message):
    assert main(["eval", *argv, "--warehouse", warehouse]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err
