"""The litellm setter against a scripted model (litellm's mock_response): parsing, binding, retries,
fallback, the disk cache and every cost source."""

from __future__ import annotations

import json
import re

import litellm
import pytest

from envs.admission import admit
from envs.difficulty import measure
from setter.base import RenderFailed
from setter.budget import BudgetExhausted, CostBudget, spending
from setter.llm import LitellmSetter, draft_schema
from setter.spec import build_spec
from setter.template import TemplateSetter, bindable_operations
from tests.setter.llm_script import ScriptedModel, good_draft, instance, text

MODEL = "gpt-4o-mini"


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path):
    monkeypatch.setenv("VHD_LLM_CACHE", str(tmp_path / "llm-cache"))
    monkeypatch.setenv("VHD_LLM_RETRY_WAIT", "0.01")
    monkeypatch.delenv("VHD_LLM_OPTIONS", raising=False)
    yield


def _render(model=MODEL, fallback=None, key="key", attempt=1, feedback=None):
    m, params, outcome, budget = instance()
    return LitellmSetter(model, fallback).render(m, params, outcome, key, attempt, budget, feedback)


def _measured(m, params, outcome, budget) -> dict:
    """The difficulty measures the render stage records with every spec."""
    measured = measure(m, params, outcome, budget)
    return {"measured": measured}


def test_a_good_answer_is_admitted_and_its_call_is_costed_from_the_price_map(monkeypatch):
    m, params, outcome, budget = instance()
    scripted = ScriptedModel(monkeypatch, [text(good_draft(m, params, outcome, budget))])
    rendering, calls = LitellmSetter(MODEL).render(m, params, outcome, "key", 1, budget)
    assert all(t.name.startswith("llm_") for t in rendering.tools)
    spec = build_spec(m, params, outcome, rendering, split="train", size=20, horizon=6, seed=[5, 0],
                      setter="litellm", model=MODEL, budget=budget, **_measured(m, params, outcome, budget))
    assert admit(spec).admitted
    (call,) = calls
    assert call.prompt_tokens > 0 and call.completion_tokens > 0 and call.error is None
    assert call.cost_source == "price_map" and call.cost_usd > 0 and not call.cache_hit
    schema = scripted.requests[0]["response_format"]["json_schema"]["schema"]
    assert schema == draft_schema(bindable_operations(m, params))


def test_the_schema_can_be_sent_in_the_form_llama_cpp_enforces(monkeypatch):
    m, params, outcome, budget = instance()
    monkeypatch.setenv("VHD_LLM_RESPONSE_FORMAT", "json_object")
    scripted = ScriptedModel(monkeypatch, [text(good_draft(m, params, outcome, budget))])
    _render()
    assert scripted.requests[0]["response_format"] == {"type": "json_object",
                                                       "schema": draft_schema(bindable_operations(m, params))}
    monkeypatch.setenv("VHD_LLM_RESPONSE_FORMAT", "yaml")
    with pytest.raises(ValueError, match="json_schema or json_object"):
        _render(key="other")


def test_the_schema_binds_every_operation_exactly_once():
    m, params, _, _ = instance()
    schema = draft_schema(bindable_operations(m, params))
    tools = schema["properties"]["tools"]
    names = {op.name for op in bindable_operations(m, params)}
    assert set(tools["required"]) == set(tools["properties"]) == names and tools["additionalProperties"] is False


def test_a_rerun_is_answered_from_the_disk_cache_at_no_cost(monkeypatch):
    m, params, outcome, budget = instance()
    scripted = ScriptedModel(monkeypatch, [text(good_draft(m, params, outcome, budget))])
    first, (paid,) = _render()
    second, (cached,) = _render()
    assert len(scripted.requests) == 1  # the second answer never reached the model
    assert cached.cache_hit and cached.cost_usd == 0.0 and cached.cost_source == "cache"
    assert (cached.prompt_tokens, cached.completion_tokens) == (paid.prompt_tokens, paid.completion_tokens)
    assert first == second


def test_the_cache_can_be_switched_off(monkeypatch):
    m, params, outcome, budget = instance()
    monkeypatch.setenv("VHD_LLM_CACHE", "off")
    scripted = ScriptedModel(monkeypatch, [text(good_draft(m, params, outcome, budget))])
    _render()
    _render()
    assert len(scripted.requests) == 2


def test_a_provider_reported_cost_wins(monkeypatch):
    m, params, outcome, budget = instance()
    ScriptedModel(monkeypatch, [text(good_draft(m, params, outcome, budget))], provider_cost=0.0123)
    _, (call,) = _render()
    assert call.cost_source == "provider" and call.cost_usd == 0.0123


def test_custom_prices_take_precedence_over_the_price_map(monkeypatch):
    m, params, outcome, budget = instance()
    ScriptedModel(monkeypatch, [text(good_draft(m, params, outcome, budget))])
    monkeypatch.setenv("VHD_LLM_PRICES", json.dumps({"openai/local": [0.2, 0.8]}))
    _, (call,) = _render("openai/local")
    assert call.cost_source == "custom"
    assert call.cost_usd == pytest.approx((call.prompt_tokens * 0.2 + call.completion_tokens * 0.8) / 1e6)


def test_an_unknown_price_is_stored_as_null_not_zero(monkeypatch):
    m, params, outcome, budget = instance()
    ScriptedModel(monkeypatch, [text(good_draft(m, params, outcome, budget))])
    _, (call,) = _render("openai/a-model-nobody-prices")
    assert call.cost_usd is None and call.cost_source == "unknown"


def test_rate_limits_and_timeouts_are_retried_and_every_try_is_recorded(monkeypatch):
    m, params, outcome, budget = instance()
    rate_limit = litellm.RateLimitError("slow down", llm_provider="openai", model=MODEL)
    timeout = litellm.Timeout("took too long", model=MODEL, llm_provider="openai")
    scripted = ScriptedModel(monkeypatch, [rate_limit, timeout, text(good_draft(m, params, outcome, budget))])
    rendering, calls = _render()
    assert len(scripted.requests) == 3 and len(rendering.tools) >= 10
    assert [c.error.split(":")[0] if c.error else None for c in calls] == ["RateLimitError", "Timeout", None]
    assert calls[0].cost_usd == 0.0 and calls[0].cost_source == "provider"  # refused: billed nothing
    assert calls[1].cost_usd is None and calls[1].cost_source == "unknown"  # timed out: maybe billed
    assert calls[2].cost_usd > 0


def test_the_fallback_model_answers_when_the_model_keeps_failing(monkeypatch):
    m, params, outcome, budget = instance()
    monkeypatch.setenv("VHD_LLM_RETRIES", "1")
    down = litellm.InternalServerError("overloaded", llm_provider="openai", model=MODEL)
    scripted = ScriptedModel(monkeypatch, [down, down, text(good_draft(m, params, outcome, budget))])
    _, calls = _render(MODEL, fallback="gpt-4o")
    assert [r["model"] for r in scripted.requests] == [MODEL, MODEL, "gpt-4o"]
    assert [c.model for c in calls] == [MODEL, MODEL, "gpt-4o"] and calls[-1].error is None


def test_a_model_that_never_answers_is_a_render_failure_that_keeps_its_calls(monkeypatch):
    monkeypatch.setenv("VHD_LLM_RETRIES", "2")
    ScriptedModel(monkeypatch, [litellm.RateLimitError("slow down", llm_provider="openai", model=MODEL)])
    with pytest.raises(RenderFailed, match="RateLimitError after 3 tries") as failure:
        _render()
    assert len(failure.value.calls) == 3 and all(c.error for c in failure.value.calls)


def test_a_bad_request_is_not_retried(monkeypatch):
    error = litellm.BadRequestError("no such parameter", model=MODEL, llm_provider="openai")
    scripted = ScriptedModel(monkeypatch, [error])
    with pytest.raises(RenderFailed, match="BadRequestError"):
        _render()
    assert len(scripted.requests) == 1


def test_the_budget_stops_calls_before_they_are_made(monkeypatch):
    m, params, outcome, budget = instance()
    scripted = ScriptedModel(monkeypatch, [text(good_draft(m, params, outcome, budget))])
    with spending(CostBudget(1e-9)) as budget:
        _render(key="first")  # the first call is allowed and spends the budget
        with pytest.raises(BudgetExhausted):
            _render(key="second")
    assert len(scripted.requests) == 1 and budget.exhausted


def test_feedback_goes_back_to_the_model(monkeypatch):
    m, params, outcome, budget = instance()
    scripted = ScriptedModel(monkeypatch, [text(good_draft(m, params, outcome, budget))])
    _render(attempt=2, feedback="structure: duplicate tool name 'x'")
    assert "duplicate tool name 'x'" in scripted.requests[0]["messages"][-1]["content"]


def _with_tool(draft, operation, **changes):
    return {**draft, "tools": {**draft["tools"], operation: {**draft["tools"][operation], **changes}}}


@pytest.mark.parametrize(("change", "reason"), [
    (lambda d: "{not json", "malformed JSON"),
    (lambda d: text({k: v for k, v in d.items() if k != "goal"}), "malformed rendering at goal: Field required"),
    (lambda d: text({**d, "intro": "x" * 5000}), "malformed rendering at intro: String should have at most 500"),
    (lambda d: text(_with_tool(d, "place_order", name="Bad Name!")), "invalid tool name 'Bad Name!'"),
    (lambda d: text({**d, "tools": {**d["tools"], "rm_rf": {"name": "wipe", "description": "x"}}}),
     "bound to unknown operation 'rm_rf'"),
    (lambda d: text(_with_tool(d, "place_order", argument_names={"nope": "x"})),
     "renames 'nope', which operation 'place_order'"),
    (lambda d: text(_with_tool(d, "place_order", argument_names={"quantity": "Not An Identifier"})),
     "invalid or repeated argument names"),
])
def test_bad_answers_are_refused_with_a_precise_reason(monkeypatch, change, reason):
    m, params, outcome, budget = instance()
    ScriptedModel(monkeypatch, [change(good_draft(m, params, outcome, budget))])
    with pytest.raises(RenderFailed, match=re.escape(reason)) as failure:
        _render()
    assert len(failure.value.calls) == 1  # the call that produced it is kept (it cost money)


def test_compact_drafts_name_the_tools_and_the_phrasebook_describes_them(monkeypatch):
    m, params, outcome, budget = instance()
    monkeypatch.setenv("VHD_LLM_DRAFT", "compact")
    draft = good_draft(m, params, outcome, budget)
    draft["tools"] = {op: {"name": tool["name"]} for op, tool in draft["tools"].items()}
    scripted = ScriptedModel(monkeypatch, [text(draft)])
    rendering, _ = _render()
    schema = scripted.requests[0]["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["tools"]["properties"]["place_order"]["required"] == ["name"]
    template, _ = TemplateSetter().render(m, params, outcome, "key", 1, budget)
    by_operation = {t.operation: t.description for t in template.tools}
    assert all(t.description == by_operation[t.operation] for t in rendering.tools)
    assert all(t.name.startswith("llm_") for t in rendering.tools)
    monkeypatch.setenv("VHD_LLM_DRAFT", "tiny")
    with pytest.raises(ValueError, match="full or compact"):
        LitellmSetter(MODEL)


def test_raw_newlines_inside_strings_are_accepted(monkeypatch):
    m, params, outcome, budget = instance()
    ScriptedModel(monkeypatch, [text(good_draft(m, params, outcome, budget)).replace("this season.", "this\nseason.")])
    rendering, _ = _render()
    assert "this\nseason." in rendering.instructions["hidden"]


def test_compact_drafts_give_a_repeated_name_the_phrasebooks_name(monkeypatch):
    m, params, outcome, budget = instance()
    monkeypatch.setenv("VHD_LLM_DRAFT", "compact")
    draft = good_draft(m, params, outcome, budget)
    draft["tools"] = {op: {"name": "same_name"} for op in draft["tools"]}
    ScriptedModel(monkeypatch, [text(draft)])
    rendering, _ = _render()
    names = [t.name for t in rendering.tools]
    assert names[0] == "same_name" and len(set(names)) == len(names)
    template, _ = TemplateSetter().render(m, params, outcome, "key", 1, budget)
    assert set(names[1:]) <= {t.name for t in template.tools}


def test_full_drafts_refuse_a_repeated_name(monkeypatch):
    from envs.admission import Rejected, check_structure

    m, params, outcome, budget = instance()
    draft = good_draft(m, params, outcome, budget)
    draft["tools"] = {op: {**tool, "name": "same_name"} for op, tool in draft["tools"].items()}
    ScriptedModel(monkeypatch, [text(draft)])
    rendering, _ = _render()
    spec = build_spec(m, params, outcome, rendering, split="train", size=20, horizon=6, seed=[5, 0],
                      setter="litellm", model=MODEL, budget=budget, **_measured(m, params, outcome, budget))
    with pytest.raises(Rejected, match="duplicate tool name 'same_name'"):
        check_structure(spec)
