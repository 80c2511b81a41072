"""The completeness check: a hand-broken declaration or rendering is refused, a registered family's is not."""

from __future__ import annotations

import dataclasses

import pytest

import mechanisms
from envs.admission import admit
from envs.completeness import Incomplete, check_facts, observed_numbers
from mechanisms.facts import BUDGET_END, OBJECTIVE, drawn, probed, rule
from setter.corpus import passage_vocabulary
from setter.phrasebook import vocabulary
from tests.support import make_spec

FAMILY = "knapsack"  # the worked example; every declaring family is checked in test_every_family_is_complete


@pytest.fixture(scope="module")
def spec():
    return make_spec(FAMILY, 0)


def _facts(spec):
    m = mechanisms.get(spec.family)
    words = vocabulary(passage_vocabulary(spec.rendering.passage_id, spec.family))
    return m.facts(m.params_from_data(spec.params), words)


def _replace(facts, key, **changes):
    return [dataclasses.replace(f, **changes) if f.key == key else f for f in facts]


def test_the_declared_facts_of_a_rendered_environment_are_complete(spec):
    check_facts(spec, _facts(spec))  # raises on any gap


def test_a_fact_stated_in_revealed_mode_with_no_probe_is_refused(spec):
    facts = _replace(_facts(spec), "values", probe=None)  # the values become a "rule": hidden numbers, no probe
    with pytest.raises(Incomplete, match="rule 'values' carries the hidden value"):
        check_facts(spec, facts)


def test_a_hidden_value_that_belongs_to_no_fact_is_refused(spec):
    facts = [f for f in _facts(spec) if f.key != "needs"]
    with pytest.raises(Incomplete, match="belongs to no declared fact"):
        check_facts(spec, facts)


def test_a_probe_that_does_not_reveal_what_the_fact_states_is_refused(spec):
    values = next(f for f in _facts(spec) if f.key == "values")
    facts = _replace(_facts(spec), "values", numbers=(*values.numbers, 123456.25))
    with pytest.raises(Incomplete, match="states 123456, which no call of 'probe_value' reveals"):
        check_facts(spec, facts)
    facts = _replace(_facts(spec), "values", probe="read_ratings")  # the sticker tool shows ratings, not values
    with pytest.raises(Incomplete, match="which no call of 'read_ratings' reveals"):
        check_facts(spec, facts)


def test_a_fact_whose_probe_no_tool_is_bound_to_is_refused(spec):
    broken = spec.model_copy(deep=True)
    broken.rendering.tools = [t for t in broken.rendering.tools if t.operation != "probe_value"]
    with pytest.raises(Incomplete, match="no hidden-mode tool is bound to 'probe_value'"):
        check_facts(broken, _facts(spec))
    facts = _replace(_facts(spec), "values", probe="select_item")
    with pytest.raises(Incomplete, match="not a probe or info operation"):
        check_facts(spec, facts)


def test_a_missing_required_rule_is_refused(spec):
    for key in (OBJECTIVE, BUDGET_END):
        with pytest.raises(Incomplete, match=f"states no '{key}' rule"):
            check_facts(spec, [f for f in _facts(spec) if f.key != key])


def test_a_rule_one_mode_does_not_state_is_refused_at_admission(spec):
    facts = _facts(spec)
    budget_rule = next(f for f in facts if f.key == BUDGET_END)
    broken = spec.model_copy(deep=True)
    broken.rendering.instructions["hidden"] = broken.rendering.instructions["hidden"].replace(
        budget_rule.statement, "")
    verdict = admit(broken)
    assert not verdict.admitted and verdict.check == "completeness"
    assert "the hidden mode does not state the rule 'budget_end'" in verdict.reason
    broken = spec.model_copy(deep=True)
    values = next(f for f in facts if f.key == "values")
    broken.rendering.instructions["revealed"] = broken.rendering.instructions["revealed"].replace(values.statement, "")
    verdict = admit(broken)
    assert not verdict.admitted and "the revealed mode does not state the fact 'values'" in verdict.reason


def test_a_rule_with_public_numbers_is_fine_and_one_with_hidden_numbers_is_not(spec):
    m = mechanisms.get(spec.family)
    params = m.params_from_data(spec.params)
    structure = next(f for f in _facts(spec) if f.key == "structure").statement
    capacities = next(f for f in _facts(spec) if f.key == "capacities").statement
    check_facts(spec, [*_facts(spec), rule("count", structure, params.items)])  # public: the count of items
    hidden = params.capacities[0]
    with pytest.raises(Incomplete, match="carries the hidden value"):
        check_facts(spec, [*_facts(spec), rule("oops", structure, hidden)])
    check_facts(spec, [*_facts(spec), probed("again", "probe_capacity", capacities, [hidden])])


def test_a_random_draw_is_revealed_when_its_time_comes_and_never_by_a_probe():
    """Issue 26: a draw (an offer that arrives later, a value seen on opening) is declared with `drawn`: no call on a
    fresh state must show it, but the operation that reveals it must be bound to a tool and may not be a probe."""
    spec = make_spec("sequential_stopping", 0)
    facts = _facts(spec)
    offers = next(f for f in facts if f.key == "offers")
    assert offers.draw and offers.probe == "view_offer"
    check_facts(spec, facts)  # the later offers appear in no fresh observation, and that is what a draw is
    as_probed = _replace(facts, "offers", draw=False)  # declared as an ordinary fact, the future offers are unreached
    with pytest.raises(Incomplete, match="which no call of 'view_offer' reveals"):
        check_facts(spec, as_probed)
    with pytest.raises(Incomplete, match="not an operation that reveals them when their time comes"):
        check_facts(spec, _replace(facts, "offers", probe="probe_offer_distribution"))  # a probe: a look-ahead
    with pytest.raises(Incomplete, match="not an operation that reveals them"):
        check_facts(spec, _replace(facts, "offers", probe="no_such_operation"))
    broken = spec.model_copy(deep=True)
    broken.rendering.tools = [t for t in broken.rendering.tools if t.operation != "view_offer"]
    with pytest.raises(Incomplete, match="no hidden-mode tool is bound to 'view_offer', which reveals 'offers'"):
        check_facts(broken, facts)
    assert drawn("k", "open_box", "s", [1, 2]).draw and not probed("k", "probe_value", "s", [1]).draw


def test_observed_numbers_reads_nested_observations_and_ignores_flags():
    assert observed_numbers({"a": 1, "b": [2.5, {"c": 3}], "done": True, "s": "4"}) == {1.0, 2.5, 3.0}


def _declaring():
    return [m.id for m in mechanisms.families()]


@pytest.mark.parametrize("family", _declaring())
def test_every_family_is_complete_at_every_tier(family):
    m = mechanisms.get(family)
    for tier in m.tiers():
        spec = make_spec(family, 1, tier=tier)
        check_facts(spec, _facts(spec))
