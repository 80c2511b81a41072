"""The runtime: tools in OpenAI format, errors as messages with the state unchanged, budgets, modes."""

from __future__ import annotations

import copy
import json

import pytest

from envs import Environment, play
from envs.calculator import CalculatorError, evaluate
from envs.scoring import score
from tests.support import make_spec


@pytest.fixture(scope="module")
def spec():
    return make_spec("inventory_dp", 3)


def _tool(env, operation):
    return env.tool_for(operation)


def test_tools_are_in_openai_function_format(spec):
    env = Environment(spec, "hidden")
    tools = env.tools()
    assert len(tools) >= 10
    for tool in tools:
        assert tool["type"] == "function"
        assert set(tool["function"]) == {"name", "description", "parameters"}
        assert tool["function"]["parameters"]["type"] == "object"


def test_written_mode_offers_a_calculator_and_a_plan(spec):
    env = Environment(spec, "written")
    assert sorted(t["function"]["name"] for t in env.tools()) == ["calculator", "submit_plan"]
    assert str(spec.params["demand"][0]) in env.instructions


@pytest.mark.parametrize("arguments", [{}, {"wrong": 1}, {"QTY": 2}, "{not json", "[1, 2]"])
def test_bad_arguments_become_messages_and_leave_the_state_unchanged(spec, arguments):
    env = Environment(spec, "revealed")
    order = _tool(env, "place_order")
    before = copy.deepcopy(env.state)
    reply = json.loads(env.call(order.name, arguments))
    assert "error" in reply and reply["error"]
    assert env.state == before
    assert env.turns == 1 and env.errors == 1


def test_wrong_typed_argument_names_the_argument(spec):
    env = Environment(spec, "revealed")
    order = _tool(env, "place_order")
    (argument,) = order.parameters["properties"]
    reply = json.loads(env.call(order.name, {argument: "ten"}))
    assert "must be an integer" in reply["error"]


def test_unknown_tool_lists_the_available_ones(spec):
    env = Environment(spec, "hidden")
    reply = json.loads(env.call("launch_rocket", {}))
    assert "unknown tool" in reply["error"] and "calculator" in reply["error"]


def test_probes_spend_turns_and_the_budget_ends_the_episode(spec):
    env = Environment(spec, "hidden")
    probe = _tool(env, "probe_price")
    for _ in range(spec.turn_budget):
        assert not env.done
        env.call(probe.name, {})
    assert env.done
    assert "episode is over" in json.loads(env.call(probe.name, {}))["error"]
    assert env.turns == spec.turn_budget


def test_probe_reveals_the_hidden_value(spec):
    env = Environment(spec, "hidden")
    demand = _tool(env, "probe_demand")
    (argument,) = demand.parameters["properties"]
    reply = json.loads(env.call(demand.name, {argument: 2}))
    shown = spec.rendering.observation_names["demand"]  # the observation speaks the passage's words
    assert shown != "demand" and reply[shown] == spec.params["demand"][1]


def test_a_rejected_plan_changes_nothing_and_can_be_resubmitted(spec):
    env = Environment(spec, "written")
    order = _tool(env, "place_order")
    (argument,) = order.parameters["properties"]
    before = copy.deepcopy(env.state)
    bad = {"steps": [{"tool": order.name, "arguments": {argument: 1}},
                     {"tool": order.name, "arguments": {argument: 10**6}}]}
    reply = json.loads(env.call("submit_plan", bad))
    assert "step 2" in reply["error"]
    assert env.state == before and not env.done
    assert play(env, "oracle").score == pytest.approx(1.0)


def test_replays_are_identical(spec):
    env = Environment(spec, "hidden")
    first, second = play(env, "random", seed=3), play(env, "random", seed=3)
    assert first.trajectory == second.trajectory and first.u == second.u


def test_score_is_clipped():
    assert score(5.0, 0.0, 10.0) == 0.5
    assert score(-5.0, 0.0, 10.0) == 0.0
    assert score(11.0, 0.0, 10.0) == 1.0


def test_calculator_evaluates_arithmetic_and_refuses_code():
    assert evaluate("(12 - 4) * 3.5") == 28.0
    assert evaluate("max(3, 7) + sqrt(16)") == 11.0
    for bad in ("__import__('os')", "open('x')", "2 ** 1000", "[1, 2]", ""):
        with pytest.raises(CalculatorError):
            evaluate(bad)
