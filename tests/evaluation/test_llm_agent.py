"""The litellm agent loop, played against litellm's mock responses (tool calls, JSON text, failures)."""

from __future__ import annotations

import json

import litellm
import pytest

from envs.agents import oracle
from envs.environment import Environment
from evaluation.episodes import play_episode
from evaluation.llm_agent import AgentConfig, parse_content_call
from tests.support import make_spec

MODEL = "openai/gpt-4o-mini"  # priced in litellm's bundled map: the cost comes from it


def _scripted(monkeypatch, answers):
    """litellm.completion answering each call with the next item: a list of tool calls, text, or an exception."""
    original = litellm.completion
    requests = []

    def completion(**kwargs):
        requests.append(kwargs)
        item = answers.pop(0) if len(answers) > 1 else answers[0]
        if isinstance(item, Exception):
            return original(**{**kwargs, "mock_response": item})
        if isinstance(item, list):
            calls = [{"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
                     for i, (n, a) in enumerate(item)]
            return original(**{**kwargs, "mock_response": "", "mock_tool_calls": calls})
        return original(**{**kwargs, "mock_response": item})

    monkeypatch.setattr(litellm, "completion", completion)
    return requests


@pytest.mark.parametrize("family", ["inventory_dp", "knapsack", "weitzman_search"])
def test_native_tool_calls_play_the_oracle_to_score_one(monkeypatch, family):
    spec = make_spec(family, 0)
    script = list(oracle(Environment(spec, "hidden")))
    requests = _scripted(monkeypatch, [[call] for call in script])
    row = play_episode(spec, "hidden", "litellm", "run-1", config=AgentConfig(MODEL))
    assert row["score"] == 1.0 and row["error"] is None
    assert row["turns"] == len(script) and row["llm_calls"] == len(script)
    assert row["prompt_tokens"] > 0 and row["completion_tokens"] > 0 and row["cost_usd"] > 0
    first = requests[0]
    assert first["tools"] == Environment(spec, "hidden").tools()
    assert first["messages"][0]["content"].startswith(spec.rendering.instructions["hidden"])
    trajectory = json.loads(row["trajectory_json"])
    assert [step["tool"] for step in trajectory["tool_calls"]] == [name for name, _ in script]
    assert any(m["role"] == "tool" for m in trajectory["messages"])


def test_written_mode_submits_one_plan(monkeypatch):
    spec = make_spec("lp", 1)
    script = list(oracle(Environment(spec, "written")))
    _scripted(monkeypatch, [[call] for call in script])
    row = play_episode(spec, "written", "litellm", "run-1", config=AgentConfig(MODEL))
    assert row["score"] == 1.0 and row["turns"] == 1


def test_a_json_tool_call_in_the_text_is_played(monkeypatch):
    spec = make_spec("knapsack", 2)
    script = list(oracle(Environment(spec, "revealed")))
    requests = _scripted(monkeypatch, [f"Sure! {json.dumps({'tool': n, 'arguments': a})}" for n, a in script])
    row = play_episode(spec, "revealed", "litellm", "run-1", config=AgentConfig(MODEL, tool_calls="json"))
    assert row["score"] == 1.0 and row["turns"] == len(script)
    # json mode: no native tools; the answer is constrained to one tool with that tool's own argument schema
    tools = Environment(spec, "revealed").tools()
    assert "tools" not in requests[0]
    choices = requests[0]["response_format"]["schema"]["anyOf"]
    assert [c["properties"]["tool"]["const"] for c in choices] == [t["function"]["name"] for t in tools]
    assert [c["properties"]["arguments"] for c in choices] == [t["function"]["parameters"] for t in tools]
    assert '"tool": TOOL_NAME' in requests[0]["messages"][0]["content"]


def test_the_turn_cap_and_silent_replies_end_the_episode(monkeypatch):
    spec = make_spec("inventory_dp", 3)
    _scripted(monkeypatch, ["I would rather not."])
    row = play_episode(spec, "hidden", "litellm", "run-1", config=AgentConfig(MODEL))
    assert row["turns"] == 0 and row["llm_calls"] == 2 and row["error"] is None
    _scripted(monkeypatch, [[("turns_left", {})]])  # a call that never ends the episode
    capped = play_episode(spec, "hidden", "litellm", "run-1", config=AgentConfig(MODEL, max_turns=3))
    assert capped["llm_calls"] == 3 and capped["turns"] == 3


def test_a_failing_model_is_retried_then_recorded(monkeypatch):
    monkeypatch.setenv("VHD_LLM_RETRIES", "2")
    monkeypatch.setenv("VHD_LLM_RETRY_WAIT", "0")
    spec = make_spec("knapsack", 4)
    requests = _scripted(monkeypatch, [litellm.RateLimitError("slow down", llm_provider="openai", model=MODEL)])
    row = play_episode(spec, "hidden", "litellm", "run-1", config=AgentConfig(MODEL))
    assert len(requests) == 3 and row["llm_calls"] == 3
    assert row["error"].startswith("RateLimitError after 3 model call(s)")
    assert row["turns"] == 0 and row["score"] is None and row["u"] is None  # no answer: no score, not a zero


def test_an_unpriced_model_has_an_unknown_cost_not_zero(monkeypatch):
    spec = make_spec("knapsack", 5)
    script = list(oracle(Environment(spec, "hidden")))
    _scripted(monkeypatch, [[call] for call in script])
    row = play_episode(spec, "hidden", "litellm", "run-1", config=AgentConfig("openai/no-such-priced-model"))
    assert row["cost_usd"] is None and row["prompt_tokens"] > 0


@pytest.mark.parametrize(("text", "expected"), [
    ('{"tool": "order", "arguments": {"units": 3}}', ("order", {"units": 3})),
    ('call: {"name": "wait", "arguments": {}} thanks', ("wait", {})),
    ("no json here", None), ('{"tool": 3}', None), ("{broken", None), (None, None),
])
def test_parse_content_call(text, expected):
    assert parse_content_call(text) == expected


def test_bad_agent_settings_are_refused():
    with pytest.raises(ValueError, match="tool calls must be one of"):
        AgentConfig(MODEL, tool_calls="xml")
    with pytest.raises(ValueError, match="--max-turns"):
        AgentConfig(MODEL, max_turns=0)
    with pytest.raises(ValueError, match="needs a model"):
        play_episode(make_spec("knapsack", 0), "hidden", "litellm", "run-1")
