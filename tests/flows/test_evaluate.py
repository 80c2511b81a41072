"""The evaluate flow: episodes fanned out as tasks, model errors recorded in rows, one committed file per run."""

from __future__ import annotations

import litellm
import pytest

from flows.evaluate import run_evaluate
from tests.evaluation.support import generated_warehouse
from warehouse.catalog import run_query
from warehouse.location import resolve_warehouse


@pytest.fixture(scope="module")
def warehouse(prefect_server):
    return generated_warehouse()


def test_model_errors_are_retried_then_land_in_the_row(warehouse, monkeypatch):
    monkeypatch.setenv("VHD_LLM_RETRIES", "1")
    monkeypatch.setenv("VHD_LLM_RETRY_WAIT", "0")
    original = litellm.completion
    calls = []

    def completion(**kwargs):
        calls.append(kwargs["model"])
        error = litellm.ServiceUnavailableError("overloaded", llm_provider="openai", model=kwargs["model"])
        return original(**{**kwargs, "mock_response": error})

    monkeypatch.setattr(litellm, "completion", completion)
    summary = run_evaluate(concurrency=3, agent="litellm", modes=["hidden", "revealed"], where="family = 'lp'",
                           model="openai/gpt-4o-mini", warehouse=warehouse)
    assert summary["episodes"] == 4 and summary["model_errors"] == 4 and summary["failures"] == []
    assert len(calls) == 8  # each episode: one try and one retry
    rows = run_query(resolve_warehouse(warehouse), "SELECT error, llm_calls, turns, score, u FROM evaluations "
                     f"WHERE eval_run_id = '{summary['eval_run_id']}'").to_pylist()
    assert len(rows) == 4
    assert all(r["error"].startswith("ServiceUnavailableError after 2") and r["llm_calls"] == 2 for r in rows)
    assert all(r["score"] is None and r["u"] is None for r in rows)  # landed as null: avg(score) skips them
    [mean] = run_query(resolve_warehouse(warehouse), "SELECT avg(score) AS mean FROM evaluations "
                       f"WHERE eval_run_id = '{summary['eval_run_id']}'").to_pylist()
    assert mean["mean"] is None


def test_concurrency_must_be_positive(warehouse):
    with pytest.raises(ValueError, match="--concurrency must be at least 1"):
        run_evaluate(concurrency=0, agent="oracle", modes=["hidden"], warehouse=warehouse)
