"""The litellm setter with litellm's own mock_response (the model is outside the machine)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import mechanisms
from envs.admission import admit
from setter.base import RenderFailed
from setter.llm import LitellmSetter, RenderingDraft
from setter.spec import build_spec, turn_budget
from setter.template import TemplateSetter

MODEL = "gpt-4o-mini"


def _instance(index=0):
    m = mechanisms.get("inventory_dp")
    params = m.sample(np.random.default_rng([5, index]), m.default_size, m.default_horizon)
    outcome = m.outcome(params)
    return m, params, outcome, turn_budget(m, params, outcome)


def good_draft(m, params, outcome, budget) -> str:
    """What a competent model writes: names and bindings of every operation, no numbers."""
    rendering, _ = TemplateSetter().render(m, params, outcome, "k", 1, budget)
    tools = [{"name": f"llm_{t.name}", "description": t.description, "operation": t.operation,
              "argument_names": {op_arg: tool_arg for tool_arg, op_arg in t.argument_map.items()}}
             for t in rendering.tools]
    return json.dumps({"title": "A model's title", "intro": "You run the stockroom.", "goal": "Maximise profit.",
                       "entities": [e.model_dump() for e in rendering.entities], "tools": tools})


@pytest.fixture(autouse=True)
def options(monkeypatch):
    def use(response):
        monkeypatch.setenv("VHD_LLM_OPTIONS", json.dumps({"mock_response": response}))
    return use


def test_a_mock_model_rendering_is_admitted_and_its_call_is_costed(options):
    m, params, outcome, budget = _instance()
    options(good_draft(m, params, outcome, budget))
    rendering, calls = LitellmSetter(MODEL).render(m, params, outcome, "key", 1, budget)
    assert all(t.name.startswith("llm_") for t in rendering.tools)
    spec = build_spec(m, params, outcome, rendering, split="train", size=20, horizon=6, seed=[5, 0],
                      setter="litellm", model=MODEL, budget=budget)
    assert admit(spec).admitted
    (call,) = calls
    assert call.prompt_tokens > 0 and call.completion_tokens > 0
    assert call.cost_source == "price_map" and call.cost_usd > 0


def test_malformed_json_is_a_render_failure_with_the_call_recorded(options):
    m, params, outcome, budget = _instance()
    options("{not json")
    with pytest.raises(RenderFailed) as failure:
        LitellmSetter(MODEL).render(m, params, outcome, "key", 1, budget)
    assert "malformed rendering" in str(failure.value)
    assert len(failure.value.calls) == 1 and failure.value.calls[0].prompt_tokens > 0


def test_missing_fields_are_named(options):
    m, params, outcome, budget = _instance()
    draft = json.loads(good_draft(m, params, outcome, budget))
    del draft["goal"]
    options(json.dumps(draft))
    with pytest.raises(RenderFailed, match="goal"):
        LitellmSetter(MODEL).render(m, params, outcome, "key", 1, budget)


def test_unknown_price_is_stored_as_null_not_zero(options):
    m, params, outcome, budget = _instance()
    options(good_draft(m, params, outcome, budget))
    _, (call,) = LitellmSetter("openai/a-model-nobody-prices").render(m, params, outcome, "key", 1, budget)
    assert call.cost_usd is None and call.cost_source == "unknown"


def test_custom_prices_take_precedence(options, monkeypatch):
    m, params, outcome, budget = _instance()
    options(good_draft(m, params, outcome, budget))
    monkeypatch.setenv("VHD_LLM_PRICES", json.dumps({"openai/local": [0.2, 0.8]}))
    _, (call,) = LitellmSetter("openai/local").render(m, params, outcome, "key", 1, budget)
    assert call.cost_source == "custom"
    assert call.cost_usd == pytest.approx((call.prompt_tokens * 0.2 + call.completion_tokens * 0.8) / 1e6)


def test_a_rate_limited_call_is_recorded_as_failed(monkeypatch):
    import litellm

    m, params, outcome, budget = _instance()
    error = litellm.RateLimitError("slow down", llm_provider="openai", model=MODEL)
    original = litellm.completion
    monkeypatch.setattr(litellm, "completion", lambda **kw: original(**{**kw, "mock_response": error,
                                                                         "num_retries": 0}))
    with pytest.raises(RenderFailed, match="RateLimitError") as failure:
        LitellmSetter(MODEL).render(m, params, outcome, "key", 1, budget)
    assert failure.value.calls[0].error.startswith("RateLimitError")


def test_the_draft_schema_requires_the_tools():
    schema = RenderingDraft.model_json_schema()
    assert "tools" in schema["required"] and "goal" in schema["required"]
