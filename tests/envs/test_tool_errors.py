"""Tool errors speak the tool's language: an argument is named as the tool names it, never as the operation does."""

from __future__ import annotations

import json

import pytest

import mechanisms
from envs.environment import Environment, _in_tool_names
from tests.support import make_spec

FAMILIES = sorted(m.id for m in mechanisms.families())


def _renamed_tools(spec):
    """The tools whose arguments the template setter renamed (tool argument -> operation argument)."""
    return [tool for tool in spec.rendering.tools
            if any(tool_name != op_name for tool_name, op_name in tool.argument_map.items())]


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("value", [10**9, -(10**9), 10**30, "seven", 2.5])
def test_out_of_range_arguments_are_named_as_the_tool_names_them(family, value):
    spec = make_spec(family, 0)
    tools = _renamed_tools(spec)
    checked = 0
    for tool in tools:
        env = Environment(spec, "hidden")
        arguments = {name: value for name in tool.parameters.get("properties", {})}
        observation = json.loads(env.call(tool.name, arguments))
        error = observation.get("error")
        assert error is not None, (tool.name, arguments, observation)
        tool_names = set(tool.argument_map) | set(tool.parameters.get("properties", {}))
        for op_name in set(tool.argument_map.values()) - tool_names:
            assert f"'{op_name}'" not in error and f'"{op_name}"' not in error, (tool.name, error)
        if "argument '" in error:
            named = error.split("argument '", 1)[1].split("'", 1)[0]
            assert named in tool_names, (tool.name, error)
            checked += 1
    assert not tools or checked, f"no {family} tool named an argument in its error"


def _renamed_decisions(spec):
    return [t for t in _renamed_tools(spec) if t.kind in ("decision", "clock")]


# the families whose template rendering renames an argument of a decision tool (a plan step can misname it)
PLAN_FAMILIES = [family for family in FAMILIES if _renamed_decisions(make_spec(family, 0))]


def test_several_families_rename_decision_arguments():
    assert len(PLAN_FAMILIES) >= 3, PLAN_FAMILIES


@pytest.mark.parametrize("family", PLAN_FAMILIES)
def test_a_submitted_plan_names_the_tools_arguments_too(family):
    spec = make_spec(family, 0)
    env = Environment(spec, "written")
    decisions = _renamed_decisions(spec)
    tool = decisions[0]
    arguments = {name: 10**9 for name in tool.parameters.get("properties", {})}
    error = json.loads(env.call("submit_plan", {"steps": [{"tool": tool.name, "arguments": arguments}]}))["error"]
    assert error.startswith(f"step 1 ({tool.name}): ")
    for op_name in set(tool.argument_map.values()) - set(tool.argument_map):
        assert f"'{op_name}'" not in error, error


def test_only_whole_quoted_names_are_replaced():
    mapping = {"carton_count": "quantity", "week": "period", "a": "b", "b": "a"}
    assert _in_tool_names("argument 'quantity' must be between 1 and 20, got 99", mapping) == \
        "argument 'carton_count' must be between 1 and 20, got 99"
    assert _in_tool_names("argument \"period\" is past; the period ends at 'periods'", mapping) == \
        "argument \"week\" is past; the period ends at 'periods'"
    assert _in_tool_names("'a' and 'b' swap; 'quantity\" is not quoted whole", mapping) == \
        "'b' and 'a' swap; 'quantity\" is not quoted whole"
    assert _in_tool_names("no names here", {}) == "no names here"
