"""The conformance suite finds what it must: a family broken on purpose (a small subclass of knapsack that overrides
one method) gets, for each rule, one problem that names the cause and the fix."""

from __future__ import annotations

from typing import Annotated

import numpy as np
import pytest

import mechanisms
from envs import conformance
from envs.conformance import FAMILY_CHECKS, check_family
from mechanisms.base import Solution, Tier
from mechanisms.knapsack import Item, Knapsack, KnapsackParams  # noqa: F401 - the annotations below name them
from mechanisms.operations import Between, Observation, State, decision, info, probe  # noqa: F401 - likewise
from tests.mechanisms.references import knapsack as knapsack_reference


def _registered(monkeypatch, family: Knapsack) -> Knapsack:
    """The broken family stands in for knapsack (environments are built through the registry)."""
    monkeypatch.setitem(mechanisms.registry._FAMILIES, "knapsack", family)
    return family


def _problems(family: Knapsack, check: str) -> list[str]:
    return [str(p) for p in check_family(family, knapsack_reference, checks=[check])]


def test_knapsack_passes_every_check():
    assert check_family(mechanisms.get("knapsack"), knapsack_reference) == []


# --- one hand-broken family per rule ------------------------------------------------------------------------------
class UnseededSampler(Knapsack):
    def sample(self, rng: np.random.Generator, size: int, horizon: int) -> KnapsackParams:
        return Knapsack.sample(self, np.random.default_rng(), size, horizon)


class SuboptimalSolver(Knapsack):
    """Leaves the first chosen item out: a consistent plan (it replays to its value), just not the optimum."""

    def solve(self, params: KnapsackParams) -> Solution:
        solution = Knapsack.solve.__wrapped__(self, params)
        actions = solution.optimal_actions[1:]
        return Solution(self.run(params, actions), actions, solution.solver, solution.facts)


class WrongSolver(Knapsack):
    def solve(self, params: KnapsackParams) -> Solution:
        solution = Knapsack.solve.__wrapped__(self, params)
        return Solution(solution.u_star + 1, solution.optimal_actions, solution.solver, solution.facts)


class NarrowBand(Knapsack):
    u0_band = (0.99, 1.0)  # no default lands there: every draw is refused by C2


class ChangesStateWhenRefusing(Knapsack):
    @decision
    def drop_item(self, p: KnapsackParams, state: State, item: Item) -> Observation:
        """remove one item from the selection

        Args:
            item: item number
        """
        state["dropped"] = state.get("dropped", 0) + 1  # before the refusal below: the bug the checker must see
        return Knapsack.drop_item(self, p, state, item)


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


class GenerousFrontier(Knapsack):
    def tiers(self) -> dict[str, Tier]:
        return {**Knapsack.tiers(self), "frontier": Tier(((6, 2),), 1.0)}  # every probe fits: no choice to make


class PeeksThroughThePublicView(Knapsack):
    """A belief that reads values it never observed: the only way in is the public view, which now carries them."""

    def public_view(self, params: KnapsackParams):
        return {**Knapsack.public_view(self, params), "values": list(params.values)}

    def believed(self, known):
        belief = Knapsack.believed(self, known)
        return belief.model_copy(update={"values": list(known.public["values"])})


class OffGrid(Knapsack):
    def grid(self) -> list[tuple[int, int]]:
        return [*Knapsack.grid(self), (999, 2)]


class AcceptsUnknownFields(Knapsack):
    def params_from_data(self, data):
        return Knapsack.params_from_data(self, {k: v for k, v in data.items() if k != "no_such_field"})


class BelievesTheParameters(Knapsack):
    def believed(self, params, probed=()):  # the old signature: the truth handed in
        return params


class NoDecoy(Knapsack):
    @info
    def read_ratings(self, p: KnapsackParams, state: State) -> Observation:
        """the posted rating of every item: outside estimates of the values, not the true values"""
        return Knapsack.read_ratings(self, p, state)


Undescribed = Annotated[int, Between(1, "items")]  # an item number that does not say what it is


class UnphrasedOperation(Knapsack):
    @info
    def count_items(self, p: KnapsackParams, state: State, item: Undescribed) -> Observation:
        """how many items there are"""
        return {"items": p.items}


# check: (the broken family, a piece of the cause, a piece of the fix)
BROKEN = {
    "deterministic_sampling": (UnseededSampler, "two draws with the seed [11, 0] differ", "from its rng argument"),
    "optimal": (SuboptimalSolver, "the independent method finds", "tests/mechanisms/references/knapsack.py"),
    "reference_bounds": (WrongSolver, "the optimal actions replay to", "m.run(params, actions) must reach it"),
    "anchors": (NarrowBand, "only 0 of 8 sampled environments are admitted; at least 5 must be; refused by 8 C2; "
                "the first: C2: default position", "u0_band of mechanisms/knapsack.py"),
    "band": (NarrowBand, "inside the band [0.99, 1.0] on 0 of 60 instances", "retune u0_band"),
    "tool_fuzz": (ChangesStateWhenRefusing, "was refused and changed the state", "raise mechanisms.base.ActionError"),
    "refusals": (RaisesOtherErrors, "raised KeyError, not ActionError", "raise mechanisms.base.ActionError"),
    "frontier_budget": (GenerousFrontier, "only 0 of 8 frontier instances admitted; at least 2 must be; refused by 8 "
                        "difficulty; the first: difficulty: measured easy", "retune the frontier tier"),
    "players": (PeeksThroughThePublicView, "public_view shows the hidden figure(s)", "keep only public structure"),
    "grid": (OffGrid, "cell 999x2 lies outside the size range", "widen size_range"),
    "params_as_data": (AcceptsUnknownFields, "an unknown field 'no_such_field' is accepted", "extra='forbid'"),
    "declarations": (BelievesTheParameters, "knapsack.believed takes ['params', 'probed']",
                     "believed(self, known: Knowledge)"),
    "operation_schema": (NoDecoy, "no decoy (a posted sheet the default policy trusts) (at ", "@info(decoy=True"),
    "phrase_file": (UnphrasedOperation, "the phrase file has no entry for the operation 'count_items'",
                    "add \"count_items\": [tool name pattern, description pattern] under \"operations\" in "
                    "setter/phrases/knapsack.json"),
    "domains": (Knapsack, "passages of only 5 domains suit knapsack; at least 20 must",
                "15 more domains"),
}


def test_every_rule_has_a_broken_family():
    assert sorted(BROKEN) == sorted(FAMILY_CHECKS)


@pytest.mark.parametrize("check", list(BROKEN))
def test_a_broken_family_gets_one_problem_naming_the_cause_and_the_fix(monkeypatch, check):
    broken, cause, fix = BROKEN[check]
    family = _registered(monkeypatch, broken())
    if check == "domains":  # the corpus, not the family, is what this rule reads: five domains' passages suit it
        suited = conformance.passages_for("knapsack")
        kept = {p.domain for p in suited}
        kept = set(sorted(kept)[:5])
        monkeypatch.setattr(conformance, "passages_for", lambda family: [p for p in suited if p.domain in kept])
    problems = check_family(family, knapsack_reference, checks=[check])
    assert len(problems) == 1, "\n".join(map(str, problems))
    problem = problems[0]
    assert problem.check == check and cause in problem.message and fix in problem.fix, str(problem)
    assert str(problem) == f"{check}: {problem.message}; fix: {problem.fix}" and "\n" not in str(problem)


def test_a_second_defect_with_its_own_fix_is_a_second_problem(monkeypatch):
    family = _registered(monkeypatch, WrongSolver())
    optimal = _problems(family, "optimal")
    assert len(optimal) == 2 and "the independent method finds" in optimal[0] and "replay to" in optimal[1]
    assert "(and 11 more like it)" in optimal[0]  # twelve instances, one problem


def test_a_refusal_that_changes_the_state_is_found_by_both_fuzzers(monkeypatch):
    family = _registered(monkeypatch, ChangesStateWhenRefusing())
    assert any("was refused and changed the state" in p for p in _problems(family, "refusals"))


def test_an_operation_without_an_argument_description_is_found(monkeypatch):
    family = _registered(monkeypatch, UnphrasedOperation())
    assert [p.fix for p in check_family(family, knapsack_reference, checks=["operation_schema"])] == [
        "describe it with a string in its Annotated type or an 'Args:' entry of the docstring in "
        "mechanisms/knapsack.py"]


def test_the_checker_asks_for_registration_a_reference_and_known_checks():
    unregistered = Knapsack()
    (problem,) = check_family(unregistered)
    assert problem.check == "registered" and "register(...)" in problem.fix
    knapsack = mechanisms.get("knapsack")
    (missing,) = check_family(knapsack, None, checks=["optimal"])
    assert "no independent reference" in missing.message and "references/knapsack.py" in missing.fix
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
    assert "checks=['declarations']" in problems[0].fix


class RecordsAnotherDefault(Knapsack):
    """A heuristic whose recorded calls do not reach what it claims through the tools."""

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
    (problem,) = check_family(family, knapsack_reference, checks=["players"])
    assert "greedy_value player's calls replay" in problem.message and "seat.call" in problem.fix


def test_a_crash_in_the_corpus_or_a_phrase_pattern_points_at_the_data_not_the_code():
    import traceback

    from envs.conformance import _crash_fix

    corpus = traceback.FrameSummary("/checkout/setter/corpus.py", 54, "load_corpus")
    assert "`bundles[<family>]` with a `role` and a `source`" in _crash_fix("pricing", ValueError("x"), corpus)
    pattern = traceback.FrameSummary("/checkout/setter/template.py", 47, "introduction")
    assert "setter/phrases/pricing.json names {sticker}" in _crash_fix("pricing", KeyError("sticker"), pattern)
    code = traceback.FrameSummary("/checkout/mechanisms/pricing.py", 3, "solve")
    assert _crash_fix("pricing", ZeroDivisionError(), code) == "fix the code at that line"
