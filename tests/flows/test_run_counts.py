"""What the generate flow counts: live progress while it runs, the stages' counts added up, and the LLM budget it
makes per run and hands to the stages that render (no global counter; issue 17)."""

from __future__ import annotations

import threading

import pytest

from flows.generate import run_generate
from tasks.progress import ProgressHub, following
from tests.setter.llm_script import ScriptedModel, answer
from warehouse.catalog import run_query
from warehouse.location import resolve_warehouse

pytestmark = pytest.mark.integration


def _follow(requested: int) -> tuple[ProgressHub, list]:
    """A hub, and what it showed whenever a stage thread reported live (the flow settles from the main thread)."""
    hub, live = ProgressHub(), []

    def listener(counters) -> None:
        if threading.current_thread() is not threading.main_thread():
            live.append((counters.admitted, counters.rejected, counters.llm_calls))

    hub.reset(requested)
    hub.subscribe(listener)
    return hub, live


def test_the_flow_counts_each_admission_live_and_its_stages_add_up_to_the_run(prefect_server, tmp_path):
    hub, seen = _follow(12)
    params = {"date": "2026-04-01", "count": 12, "families": "inventory_dp,lp", "shard_size": 3}
    with following(hub):
        summary = run_generate(workers=2, warehouse=str(tmp_path / "wh"), **params)
    assert summary["status"] == "completed" and summary["admitted"] == 12
    assert set(range(1, 13)) <= {admitted for admitted, _, _ in seen}  # one admission at a time, as it happened
    assert (hub.counters.admitted, hub.counters.rejected) == (12, summary["rejected"])
    stages = summary["stage_counts"]
    assert set(stages) == {"sample", "solve", "render", "validate"}
    assert stages["validate"]["admitted"] == 12 and stages["validate"]["rejected"] == summary["rejected"]
    assert all(stages[name]["seconds"] > 0 for name in stages)

    again_hub, _ = _follow(12)  # a re-run lands nothing new: its bar still shows the night delivered
    with following(again_hub):
        again = run_generate(workers=2, warehouse=str(tmp_path / "wh"), **params)
    assert again["new_environments"] == 0 and again_hub.counters.admitted == 12


def test_the_budget_stops_model_calls_in_the_flow_and_the_next_run_has_its_own(prefect_server, tmp_path,
                                                                                monkeypatch):
    monkeypatch.setenv("VHD_LLM_CACHE", str(tmp_path / "llm-cache"))
    monkeypatch.setenv("VHD_LLM_RETRY_WAIT", "0.01")
    monkeypatch.delenv("VHD_LLM_OPTIONS", raising=False)
    scripted = ScriptedModel(monkeypatch, [answer()])
    # one shard (its renderings one after the other), the plan tests/tasks/test_llm_stages.py budgets
    params = {"date": "2026-03-05", "count": 6, "families": "inventory_dp", "setter": "litellm",
              "model": "gpt-4o-mini"}
    hub, seen = _follow(6)
    with following(hub):
        summary = run_generate(workers=2, warehouse=str(tmp_path / "wh"), max_cost_usd=1e-7, **params)
    assert summary["status"] == "partial" and "LLM budget (--max-cost-usd) was reached" in summary["error"]
    admitted = summary["new_environments"]
    assert 1 <= admitted < 6 and len(scripted.requests) == admitted  # once spent, nothing more was asked
    assert hub.counters.llm_calls == len(scripted.requests) and hub.counters.admitted == admitted
    assert any(calls for _, _, calls in seen)  # the model call was counted as it was made, by the render stage

    paid = len(scripted.requests)
    summary = run_generate(workers=2, warehouse=str(tmp_path / "wh"), max_cost_usd=1.0, **params)  # a new budget
    assert summary["status"] == "completed" and len(scripted.requests) > paid
    rows = run_query(resolve_warehouse(str(tmp_path / "wh")), "SELECT count(DISTINCT env_id) AS n FROM environments")
    assert rows.to_pylist()[0]["n"] == 6
