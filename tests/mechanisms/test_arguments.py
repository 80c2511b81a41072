"""Reading an operation's arguments: bounds, one-sided messages, lists that must be whole and numbers lowered."""

from __future__ import annotations

import math
from typing import Annotated

import pytest

from mechanisms.arguments import ActionError, require_number
from mechanisms.operations import Between, collect_operations, decision


def test_a_one_sided_bound_is_named_as_one():
    with pytest.raises(ActionError, match=r"'q' must be at least 0, got -1"):
        require_number({"q": -1}, "q", 0, math.inf)
    with pytest.raises(ActionError, match=r"'q' must be at most 5, got 6"):
        require_number({"q": 6}, "q", -math.inf, 5)
    with pytest.raises(ActionError, match=r"'q' must be between 0 and 5, got 6"):
        require_number({"q": 6}, "q", 0, 5)


class _Params:
    n = 3


class _Planner:
    @decision
    def set_plan(self, p, state,
                 quantities: Annotated[list[float], Between(0, 10, max_items="n", min_items="n", clip=True),
                                       "units per product"]):
        """set every quantity"""
        return {"quantities": quantities}


def test_a_whole_list_is_required_and_numbers_above_the_maximum_are_lowered():
    [argument] = collect_operations(_Planner)["set_plan"].arguments
    assert argument.spec(_Params()).model_dump(exclude_defaults=True) == {
        "type": "array", "items": "number", "minimum": 0, "maximum": 10, "max_items": 3,
        "description": "units per product"}
    assert argument.read(_Params(), {"quantities": [12, 3.5, 0]}) == [10.0, 3.5, 0.0]
    for bad, problem in (([1, 2], "at least 3 are needed"), ([1, 2, 3, 4], "at most 3 are allowed"),
                         ([1, -1, 2], "at least 0"), ([1, "2", 3], "must be a number"), ([], "non-empty")):
        with pytest.raises(ActionError, match=problem):
            argument.read(_Params(), {"quantities": bad})
