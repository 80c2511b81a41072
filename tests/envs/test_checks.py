"""The checker finds what it must: a family broken on purpose gets the problem named, an environment the check named."""

from __future__ import annotations

from typing import Annotated

import numpy as np
import pytest

import mechanisms
from envs.checks import DEFAULT_REPLAY, EXECUTES, FAMILY_CHECKS, check_environment, check_family
from mechanisms.base import Solution
from mechanisms.knapsack import Item, Knapsack, KnapsackParams  # noqa: F401 - the annotations below name them
from mechanisms.operations import Between, Observation, State, decision, info, probe  # noqa: F401 - likewise
from tests.mechanisms.references import knapsack as knapsack_reference
from tests.support import make_spec


def _registered(monkeypatch, family: Knapsack) -> Knapsack:
    """The broken family stands in for knapsack (environments are built through the registry)."""
    monkeypatch.setitem(mechanisms.registry._FAMILIES, "knapsack", family)
    return family


def _problems(family: Knapsack, check: str) -> list[str]:
    return [str(p) for p in check_family(family, knapsack_reference, checks=[check])]


def test_knapsack_passes_every_check():
    assert check_family(mechanisms.get("knapsack"), knapsack_reference) == []


class WrongSolver(Knapsack):
    def solve(self, params: KnapsackParams) -> Solution:
        solution = Knapsack.solve.__wrapped__(self, params)
        return Solution(solution.u_star + 1, solution.optimal_actions, solution.solver, solution.facts)


def test_a_solver_off_the_optimum_is_found(monkeypatch):
    family = _registered(monkeypatch, WrongSolver())
    optimal = _problems(family, "optimal")
    assert optimal and "the independent method finds" in optimal[0] and "replay to" in optimal[1]
    assert any("replay to" in p for p in _problems(family, "reference_bounds"))


class ChangesStateWhenRefusing(Knapsack):
    @decision
    def drop_item(self, p: KnapsackParams, state: State, item: Item) -> Observation:
        """remove one item from the selection

        Args:
            item: item number
        """
        state["dropped"] = state.get("dropped", 0) + 1  # before the refusal below: the bug the checker must see
        return Knapsack.drop_item(self, p, state, item)


def test_a_refusal_that_changes_the_state_is_found(monkeypatch):
    family = _registered(monkeypatch, ChangesStateWhenRefusing())
    assert any("was refused and changed the state" in p for p in _problems(family, "refusals"))
    assert any("was refused and changed the state" in p for p in _problems(family, "tool_fuzz"))


class RaisesOtherErrors(Knapsack):
    @probe
    def probe_value(self, p: KnapsackParams, state: State, item: Item) -> Observation:
        """true value of one item

        Args:
            item: item number
        """
        if item == p.items:
            raise KeyError(item)
        return {"item": item, "value": p.values[item - 1]}


def test_an_exception_other_than_action_error_is_found(monkeypatch):
    family = _registered(monkeypatch, RaisesOtherErrors())
    assert any("raised KeyError, not ActionError" in p for p in _problems(family, "refusals"))


class UnseededSampler(Knapsack):
    def sample(self, rng: np.random.Generator, size: int, horizon: int) -> KnapsackParams:
        return Knapsack.sample(self, np.random.default_rng(), size, horizon)


def test_a_sampler_that_ignores_its_seed_is_found(monkeypatch):
    family = _registered(monkeypatch, UnseededSampler())
    assert any("differ" in p for p in _problems(family, "deterministic_sampling"))


Undescribed = Annotated[int, Between(1, "items")]  # an item number that does not say what it is


class UnphrasedOperation(Knapsack):
    @info
    def count_items(self, p: KnapsackParams, state: State, item: Undescribed) -> Observation:
        """how many items there are"""
        return {"items": p.items}


def test_an_operation_without_phrases_or_argument_description_is_found(monkeypatch):
    family = _registered(monkeypatch, UnphrasedOperation())
    assert _problems(family, "phrase_file") == [
        "phrase_file: the phrase file has no entry for the operation 'count_items'"]
    assert any("argument 'item' of 'count_items' has no description" in p
               for p in _problems(family, "operation_schema"))


def test_the_checker_asks_for_registration_a_reference_and_known_checks():
    unregistered = Knapsack()
    assert [p.check for p in check_family(unregistered)] == ["registered"]
    knapsack = mechanisms.get("knapsack")
    assert "no independent reference" in str(check_family(knapsack, None, checks=["optimal"])[0])
    with pytest.raises(ValueError, match="unknown family check 'nope'"):
        check_family(knapsack, checks=["nope"])
    assert list(FAMILY_CHECKS)[:2] == ["deterministic_sampling", "optimal"]


class CrashingHeuristics(Knapsack):
    def heuristic_policies(self):
        raise ZeroDivisionError("a bug")


def test_a_check_that_crashes_reports_the_crash(monkeypatch):
    family = _registered(monkeypatch, CrashingHeuristics())
    problems = check_family(family, knapsack_reference, checks=["declarations"])
    assert len(problems) == 1 and "raised ZeroDivisionError: a bug (at " in problems[0].message


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



class PeeksThroughThePublicView(Knapsack):
    """A belief that reads values it never observed: the only way in is the public view, which now carries them."""

    def public_view(self, params: KnapsackParams):
        return {**Knapsack.public_view(self, params), "values": list(params.values)}

    def believed(self, known):
        belief = Knapsack.believed(self, known)
        return belief.model_copy(update={"values": list(known.public["values"])})


def test_a_belief_that_reads_a_parameter_it_did_not_observe_fails_conformance(monkeypatch):
    family = _registered(monkeypatch, PeeksThroughThePublicView())
    assert any("public_view shows the hidden figure(s)" in p for p in _problems(family, "players"))


class BelievesTheParameters(Knapsack):
    def believed(self, params, probed=()):  # the old signature: the truth handed in
        return params


def test_a_belief_built_from_the_parameters_fails_conformance(monkeypatch):
    family = _registered(monkeypatch, BelievesTheParameters())
    assert any("knapsack.believed takes ['params', 'probed']" in p for p in _problems(family, "declarations"))


class RecordsAnotherDefault(Knapsack):
    """A default whose recorded calls do not reach what it claims through the tools."""

    def heuristic_policies(self):
        policies = dict(Knapsack.heuristic_policies(self))
        greedy = policies["greedy_value"]

        def claims_more(seat):
            greedy(seat)
            seat.calls.append(seat.calls[0])  # a call that was never made at the seat: the replay differs
            seat.calls[:] = seat.calls[:1]

        policies["greedy_value"] = claims_more
        return policies


def test_a_player_whose_calls_do_not_replay_to_its_utility_fails_conformance(monkeypatch):
    family = _registered(monkeypatch, RecordsAnotherDefault())
    assert any("greedy_value player's calls replay" in p for p in _problems(family, "players"))


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
