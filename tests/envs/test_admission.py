"""Admission rejects what it must, with a precise reason."""

from __future__ import annotations

import mechanisms
from envs.admission import DEFAULT_REPLAY, EXECUTES, admit, check_environment, hidden_leaks
from mechanisms.knapsack import Item, Knapsack, KnapsackParams  # noqa: F401 - the annotations below name them
from mechanisms.operations import Observation, State, decision
from tests.support import make_spec


def _spec():
    return make_spec("inventory_dp", 1)


def test_a_template_rendering_is_admitted():
    verdict = admit(_spec())
    assert verdict.admitted, verdict.reason
    assert verdict.checks["C3"] == "ok" and verdict.checks["hidden"]["oracle"] == 1.0


def test_too_few_tools_are_rejected():
    spec = _spec()
    spec.rendering.tools = spec.rendering.tools[:9]
    verdict = admit(spec)
    assert not verdict.admitted and verdict.check == "structure" and "at least 10" in verdict.reason


def test_duplicate_tool_names_are_rejected():
    spec = _spec()
    spec.rendering.tools[1].name = spec.rendering.tools[0].name
    assert "duplicate tool name" in admit(spec).reason


def test_a_tool_bound_to_an_unknown_operation_is_rejected():
    spec = _spec()
    spec.rendering.tools[0].operation = "os.system"
    assert "unknown operation 'os.system'" in admit(spec).reason


def test_a_leaked_demand_value_in_hidden_mode_is_rejected():
    spec = _spec()
    secret = spec.params["demand"][0] + 1000  # a value nothing else in the text could produce
    spec.params["demand"][0] = secret
    spec.rendering.instructions["hidden"] += f" Demand in the first period is {secret}."
    assert str(secret) in hidden_leaks(spec)
    verdict = admit(spec)
    assert not verdict.admitted


def test_a_wrong_reference_fails_c3():
    spec = _spec()
    spec.reference.u_star += 5.0
    verdict = admit(spec)
    assert not verdict.admitted and verdict.check in {"C3", "C2"}


def test_every_refusal_names_its_cause_and_its_fix():
    for breaking in (lambda spec: spec.rendering.tools.__delitem__(slice(9, None)),
                     lambda spec: setattr(spec.reference, "u_star", spec.reference.u_star + 5.0),
                     lambda spec: spec.rendering.instructions.pop("written")):
        spec = _spec()
        breaking(spec)
        verdict = admit(spec)
        (problem,) = verdict.problems
        assert problem.message and problem.fix and "\n" not in verdict.reason, verdict.reason
        assert verdict.reason == f"{verdict.check}: {problem.message}; fix: {problem.fix}"


def _registered(monkeypatch, family: Knapsack) -> Knapsack:
    """The broken family stands in for knapsack (environments are built through the registry)."""
    monkeypatch.setitem(mechanisms.registry._FAMILIES, "knapsack", family)
    return family


def test_the_two_checks_once_both_called_c1_have_their_own_names():
    spec = make_spec("knapsack", 0)
    assert check_environment(spec).admitted
    assert check_environment(spec).checks[DEFAULT_REPLAY] == "ok" and "C1" not in check_environment(spec).checks
    moved = spec.model_copy(deep=True)
    moved.reference.u0 += 0.01 * (moved.reference.u_star - moved.reference.u0)  # the default no longer reaches it
    verdict = check_environment(moved)
    assert verdict.check == DEFAULT_REPLAY and verdict.reason.startswith("default_replay: default policy reached")
    assert [p.check for p in verdict.problems] == [DEFAULT_REPLAY]
    broken = spec.model_copy(deep=True)
    broken.rendering.tools[0].parameters = None  # the runtime crashes reading it
    verdict = check_environment(broken)
    assert verdict.check == EXECUTES and verdict.reason.startswith("executes: ")


def test_a_decision_observation_carrying_a_hidden_figure_is_refused(monkeypatch):
    class SelectShowsValue(Knapsack):
        @decision
        def select_item(self, p: KnapsackParams, state: State, item: Item) -> Observation:
            """add one item to the selection"""
            shown = Knapsack.select_item(self, p, state, item)
            return {**shown, "value": p.values[item - 1]}  # the true value, before any probe

    spec = make_spec("knapsack", 0)
    assert check_environment(spec).admitted
    _registered(monkeypatch, SelectShowsValue())
    verdict = check_environment(spec)
    assert verdict.check == "decision_leak" and "shows the hidden figure(s)" in verdict.reason


def test_an_ending_without_its_outcome_is_refused(monkeypatch):
    from envs import environment

    spec = make_spec("knapsack", 0)
    monkeypatch.setattr(environment, "ENDING_KEY", "nothing")  # the runtime forgets to show the outcome
    verdict = check_environment(spec)
    assert verdict.check == "ending" and "does not state the outcome" in verdict.reason


def test_a_decision_observation_carrying_its_outcome_is_refused(monkeypatch):
    class SelectShowsRunningTotal(Knapsack):
        @decision
        def select_item(self, p: KnapsackParams, state: State, item: Item) -> Observation:
            """add one item to the selection"""
            shown = Knapsack.select_item(self, p, state, item)
            return {**shown, "total value": self.utility(p, state)}  # a trial's result: values by differencing

    spec = make_spec("knapsack", 0)
    _registered(monkeypatch, SelectShowsRunningTotal())
    verdict = check_environment(spec)
    assert verdict.check == "decision_leak" and "shows the hidden figure(s)" in verdict.reason
