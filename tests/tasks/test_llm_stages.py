"""The litellm setter through the real stages and warehouse, against a scripted model: bad answers are
re-prompted and recorded, never landed; failed calls count; the budget stops a run cleanly; reports."""

from __future__ import annotations

import datetime as dt
import json

import litellm
import pytest

from setter.budget import CostBudget
from tasks.commit import commit, finished_shard_keys
from tasks.land import land_result
from tasks.plan import plan_shards
from tasks.rounds import run_shard
from tests.setter.llm_script import ScriptedModel, answer, text
from warehouse.catalog import run_query
from warehouse.location import resolve_warehouse
from warehouse.reports import REPORTS

MODEL = "gpt-4o-mini"
DATE = "2026-03-05"


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path):
    monkeypatch.setenv("VHD_LLM_CACHE", str(tmp_path / "llm-cache"))
    monkeypatch.setenv("VHD_LLM_RETRY_WAIT", "0.01")
    monkeypatch.delenv("VHD_LLM_OPTIONS", raising=False)


def run_llm(warehouse, count=3, run_id="llm-run", budget=None):
    budget = None if budget is None else CostBudget(budget)  # one per run, as the flow makes it
    shards = plan_shards(DATE, count, "inventory_dp", setter="litellm", model=MODEL)
    finished = finished_shard_keys(warehouse, DATE)
    landed = []
    for shard in (s for s in shards if s.key not in finished):
        landed.append(land_result(warehouse, run_shard(shard, budget), run_id))
    return commit(warehouse, run_id, None, DATE, {"count": count}, landed, 0, [], dt.datetime.now(dt.UTC))


def q(warehouse, sql):
    return run_query(resolve_warehouse(warehouse), sql).to_pylist()


def test_every_call_lands_with_tokens_and_cost(tmp_path, monkeypatch):
    ScriptedModel(monkeypatch, [answer()])
    summary = run_llm(str(tmp_path), count=6)
    calls = q(str(tmp_path), "SELECT count(*) AS n, min(prompt_tokens) AS p, sum(cost_usd) AS usd, "
                             "any_value(cost_source) AS source FROM llm_calls")[0]
    attempts = q(str(tmp_path), "SELECT count(*) AS n FROM attempts")[0]["n"]
    assert calls["n"] == attempts >= 6 and calls["p"] > 0 and calls["source"] == "price_map"
    envs = q(str(tmp_path), "SELECT count(*) AS n, sum(llm_cost_usd) AS usd, min(setter) AS setter "
                            "FROM environments")[0]
    assert envs["n"] == 6 and envs["setter"] == "litellm" and 0 < envs["usd"] <= calls["usd"] + 1e-12
    assert summary["llm_cost_usd"] == pytest.approx(calls["usd"]) and summary["status"] == "completed"


@pytest.mark.parametrize(("bad", "reason"), [
    (lambda d: "{not json", "setter: malformed JSON"),
    (lambda d: text({**d, "tools": dict(list(d["tools"].items())[:5])}),
     "structure: only 5 tools; at least 10 are required"),
    (lambda d: text({**d, "tools": {k: {**v, "name": "same_name"} for k, v in d["tools"].items()}}),
     "structure: duplicate tool name 'same_name'"),
    (lambda d: text({**d, "tools": {k: v for k, v in d["tools"].items() if k != "place_order"}}),
     "structure: no tool is bound to the operation 'place_order'"),
    (lambda d: text({**d, "intro": "Numbers: " + " ".join(str(n) for n in range(0, 130))}),
     "leak: hidden mode shows parameter or solution values"),
    (lambda d: text({**d, "goal": "g" * 700}), "setter: malformed rendering at goal"),
])
def test_a_bad_answer_is_rejected_with_its_reason_reprompted_and_never_landed(tmp_path, monkeypatch, bad, reason):
    scripted = ScriptedModel(monkeypatch, [answer(bad), answer()])
    run_llm(str(tmp_path), count=1)
    attempts = q(str(tmp_path), "SELECT attempt, admitted, reason FROM attempts ORDER BY attempt")
    assert [a["attempt"] for a in attempts] == [1, 2]
    assert attempts[0]["admitted"] is False and attempts[0]["reason"].startswith(reason)
    assert attempts[1]["admitted"] is True
    assert len(scripted.requests) == 2  # spare instances are never rendered
    assert attempts[0]["reason"][:60] in scripted.requests[1]["messages"][-1]["content"]  # the reason went back
    envs = q(str(tmp_path), "SELECT attempts, spec_json FROM environments")
    assert len(envs) == 1 and envs[0]["attempts"] == 2
    assert "rm_rf" not in envs[0]["spec_json"] and "g" * 700 not in envs[0]["spec_json"]
    assert q(str(tmp_path), "SELECT count(*) AS n FROM llm_calls")[0]["n"] == 2  # both calls cost money


def test_an_instance_whose_model_never_answers_is_rejected_and_its_failed_calls_are_counted(tmp_path, monkeypatch):
    monkeypatch.setenv("VHD_LLM_RETRIES", "1")
    limit = litellm.RateLimitError("slow down", llm_provider="openai", model=MODEL)
    # instance 1: two tries fail, attempt 2 answers; the rest answer at once
    ScriptedModel(monkeypatch, [limit, limit, answer()])
    summary = run_llm(str(tmp_path), count=1)
    attempts = q(str(tmp_path), "SELECT attempt, admitted, reason FROM attempts ORDER BY attempt")
    assert attempts[0]["reason"] == "setter: model call failed: gpt-4o-mini: RateLimitError after 2 tries"
    assert attempts[1]["admitted"] is True
    calls = q(str(tmp_path), "SELECT attempt, error IS NOT NULL AS failed, cost_usd FROM llm_calls ORDER BY latency_s")
    assert sorted(c["failed"] for c in calls) == [False, True, True]
    assert summary["admitted"] == 1 and summary["llm_cost_usd"] > 0


def test_the_budget_stops_the_run_cleanly_and_a_rerun_finishes_it_from_the_cache(tmp_path, monkeypatch):
    scripted = ScriptedModel(monkeypatch, [answer()])
    one_call = 1e-7  # below one call's price: the first call spends it
    summary = run_llm(str(tmp_path), count=6, run_id="budgeted", budget=one_call)
    assert summary["status"] == "partial" and "LLM budget (--max-cost-usd) was reached" in summary["error"]
    landed = q(str(tmp_path), "SELECT count(*) AS n FROM environments")[0]["n"]
    assert 1 <= landed < 6 and len(scripted.requests) == landed
    paid = len(scripted.requests)
    summary = run_llm(str(tmp_path), count=6, run_id="rerun")
    assert summary["status"] == "completed"
    assert q(str(tmp_path), "SELECT count(DISTINCT env_id) AS n FROM environments")[0]["n"] == 6
    cached = q(str(tmp_path), "SELECT count(*) AS n FROM llm_calls WHERE run_id = 'rerun' AND cache_hit")[0]["n"]
    assert cached == landed and len(scripted.requests) == paid + 6 - landed


def test_the_setter_report_counts_first_attempts_rewrites_tokens_and_dollars(tmp_path, monkeypatch):
    ScriptedModel(monkeypatch, ["{not json", answer()])  # the first instance needs a second attempt
    run_llm(str(tmp_path), count=3)
    _, sql = REPORTS["setter"][1]
    (row,) = q(str(tmp_path), sql)
    assert row["setter"] == f"litellm / {MODEL}" and row["instances"] == row["admitted"] == 3
    assert row["first_attempt_admission"] == pytest.approx(2 / 3, abs=1e-3)
    assert row["attempts_per_admitted"] == pytest.approx(4 / 3, abs=1e-3)
    assert row["rewritten_share"] == pytest.approx(1 / 3, abs=1e-3)
    calls = q(str(tmp_path), "SELECT sum(prompt_tokens + completion_tokens) AS t, sum(cost_usd) AS usd FROM llm_calls")
    assert row["requests"] == 4 and abs(float(row["tokens_per_admitted"]) - float(calls[0]["t"]) / 3) <= 0.1
    assert row["usd_per_admitted"] == pytest.approx(calls[0]["usd"] / 3)
    json.dumps(row, default=str)
