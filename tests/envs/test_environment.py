"""The runtime: tools in OpenAI format, errors as messages with the state unchanged, budgets, modes."""

from __future__ import annotations

import copy
import json

import pytest

import mechanisms
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


@pytest.fixture(scope="module")
def knapsack_spec():
    return make_spec("knapsack", 0)


def _outcome_names(spec):
    names = spec.rendering.observation_names
    return names.get("total value", "total value")


def test_the_closing_call_shows_the_outcome(knapsack_spec):
    env = Environment(knapsack_spec, "hidden")
    select = env.tool_for("select_item")
    (argument,) = select.parameters["properties"]
    env.call(select.name, {argument: 1})
    reply = json.loads(env.call(env.tool_for("submit").name, {}))
    assert reply["outcome"]["episode over"] == "finished"
    assert reply["outcome"][_outcome_names(knapsack_spec)] == pytest.approx(env.utility())


def test_the_last_turn_of_the_budget_shows_the_outcome(knapsack_spec):
    env = Environment(knapsack_spec, "hidden")
    select, listing = env.tool_for("select_item"), env.tool_for("list_items")
    (argument,) = select.parameters["properties"]
    env.call(select.name, {argument: 2})
    replies = [json.loads(env.call(listing.name, {})) for _ in range(knapsack_spec.turn_budget - 1)]
    assert env.done and all("outcome" not in reply for reply in replies[:-1])
    ending = replies[-1]["outcome"]
    assert ending["episode over"] == "the turns ran out"
    assert ending[_outcome_names(knapsack_spec)] == pytest.approx(env.utility()) and env.utility() > 0


def test_a_written_plan_shows_its_outcome_and_names_every_steps_arguments(knapsack_spec):
    env = Environment(knapsack_spec, "written")
    select = env.tool_for("select_item")
    (argument,) = select.parameters["properties"]
    plan_tool = next(t for t in env.tools() if t["function"]["name"] == "submit_plan")["function"]
    steps = plan_tool["parameters"]["properties"]["steps"]["items"]["anyOf"]
    by_tool = {step["properties"]["tool"]["const"]: step["properties"]["arguments"] for step in steps}
    assert by_tool[select.name]["properties"] == select.parameters["properties"]
    assert by_tool[select.name]["additionalProperties"] is False
    assert f"{select.name}({argument})" in knapsack_spec.rendering.written_prompt
    assert f"{select.name}({argument})" in plan_tool["description"]
    reply = json.loads(env.call("submit_plan", {"steps": [{"tool": select.name, "arguments": {argument: 1}}]}))
    assert reply["accepted_steps"] == 1 and reply["outcome"]["episode over"] == "finished"
    assert reply["outcome"][_outcome_names(knapsack_spec)] == pytest.approx(env.utility())


def test_a_plan_step_with_a_wrong_argument_name_is_refused_before_any_step_runs(knapsack_spec):
    env = Environment(knapsack_spec, "written")
    select = env.tool_for("select_item")
    (argument,) = select.parameters["properties"]
    before = copy.deepcopy(env.state)
    plan = {"steps": [{"tool": select.name, "arguments": {argument: 1}},
                      {"tool": select.name, "arguments": {"item_number_guess": 2}}]}
    reply = json.loads(env.call("submit_plan", plan))
    assert "step 2" in reply["error"] and "'item_number_guess'" in reply["error"] and argument in reply["error"]
    assert env.state == before and not env.done


@pytest.mark.parametrize("family", [m.id for m in mechanisms.families()])
def test_every_family_states_its_outcome_when_the_turns_run_out(family):
    spec = make_spec(family, 1)
    env = Environment(spec, "hidden")
    info = next(t for t in spec.rendering.tools if t.kind == "info" and not t.parameters.get("required"))
    replies = [json.loads(env.call(info.name, {})) for _ in range(spec.turn_budget)]
    assert env.done and all("outcome" not in reply for reply in replies[:-1])
    ending = replies[-1]["outcome"]
    assert ending["episode over"] == "the turns ran out" and len(ending) >= 2
    from envs.completeness import observed_numbers

    stated = observed_numbers(ending)  # the objective value is stated (a cost as the cost: a utility of -12 as 12)
    assert round(env.utility(), 6) in stated or round(-env.utility(), 6) in stated
