"""The real local model (gemma-3-270m behind llama.cpp's server) plays 5 episodes through `vhd eval`; they land."""

from __future__ import annotations

import json

import pytest

from cli.main import main
from tests.evaluation.support import generated_warehouse
from warehouse.catalog import run_query
from warehouse.location import resolve_warehouse

pytestmark = pytest.mark.integration


def test_the_local_model_plays_five_episodes_and_they_land(prefect_server, local_llm, capsys):
    model, api_base = local_llm
    warehouse = generated_warehouse()
    # json tool calls: the server constrains each answer to {"tool": <one of the tools>, "arguments": {...}};
    # 3 model calls of at most 48 tokens per episode keep the test at about a minute on 2 cores
    assert main(["eval", "--agent", "litellm", "--model", model, "--api-base", api_base, "--tool-calls", "json",
                 "--mode", "revealed", "--limit", "5", "--max-turns", "3", "--max-tokens", "48",
                 "--concurrency", "1", "--warehouse", warehouse]) == 0
    rows = run_query(resolve_warehouse(warehouse), "SELECT * FROM evaluations WHERE model = "
                     f"'{model}'").to_pylist()
    assert len(rows) == 5
    for row in rows:
        assert row["error"] is None, row["error"]
        assert 1 <= row["llm_calls"] <= 3 and row["prompt_tokens"] > 0 and row["completion_tokens"] > 0
        assert 0.0 <= row["score"] <= 1.0
        messages = json.loads(row["trajectory_json"])["messages"]
        assert messages[0]["role"] == "system" and any(m["role"] == "assistant" for m in messages)
    assert sum(row["turns"] for row in rows) > 0  # the constrained answers reached the environment's tools
    assert "mean score per family and mode" in capsys.readouterr().out
