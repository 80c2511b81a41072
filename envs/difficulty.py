"""Baselines that measure an environment's difficulty, and the tier those measures put it in.

- The **informed agent** plays hidden mode as a strong, careful agent would: it makes the family's probes in order
  of value of information for as long as its turn budget leaves room for the plan, believes the stickers and the
  public structure for everything it did not probe, solves that belief exactly and plays the plan. Its score is the
  ceiling a hidden-mode agent can reach within the budget (u* needs full information, which may not fit).
- The **heuristic agents** are what a naive agent would do (greedy, myopic, nearest neighbour), declared per family.
- **facts_fit** is the share of the probe calls that fit in the budget beside the optimal plan.

The tier (mechanisms.base.TIERS) is calibrated from these measures only, never from the requested cells:

    frontier  full information does not fit, no heuristic above 0.5, informed at least 0.25
    hard      full information does not fit and no heuristic above 0.75, or no heuristic above 0.5
    medium    no heuristic above 0.9, or full information does not fit
    easy      otherwise: a naive agent already scores above 0.9 and every probe fits
"""

from __future__ import annotations

from envs.scoring import score
from mechanisms.base import Mechanism, Outcome
from schemas.envspec import Action, Difficulty

INFORMED = "informed"
FRONTIER_HEURISTIC, HARD_HEURISTIC, EASY_HEURISTIC = 0.5, 0.75, 0.9
FRONTIER_INFORMED = 0.25
# the informed agent must beat the default by this much of the gap, or the budget (not skill) decides the score
MIN_INFORMED_SCORE = 0.05
_PLAN_FITTING_ROUNDS = 8


def decisions(mechanism: Mechanism, params, actions: list[Action]) -> list[Action]:
    """The decision and clock calls of a plan (what an agent who already knows the facts must still spend)."""
    kinds = {op.name: op.kind for op in mechanism.operations(params)}
    return [a for a in actions if kinds.get(a.op) in ("decision", "clock")]


def informed_actions(mechanism: Mechanism, params, budget: int) -> list[Action]:
    """The informed agent's calls: the longest prefix of the probe order that leaves room for the plan solved on
    what it then believes, then that plan."""
    order = mechanism.probe_order(params)
    k, best = len(order), None
    for _ in range(_PLAN_FITTING_ROUNDS):
        plan = decisions(mechanism, params, mechanism.solve(mechanism.believed(params, order[:k])).optimal_actions)
        if k + len(plan) <= budget:
            return [*order[:k], *plan]
        best = (k, plan)
        room = max(0, budget - len(plan))
        if room >= k:
            break
        k = room
    k, plan = best if best is not None else (0, [])
    return [*order[:k], *plan]  # the plan does not fit: the turns run out while it is played


def facts_fit(mechanism: Mechanism, params, outcome: Outcome, budget: int) -> float:
    """The share of the probe calls that fit in the budget beside the optimal plan's decisions."""
    probes = len(mechanism.probe_order(params))
    if probes == 0:
        return 1.0
    room = budget - len(decisions(mechanism, params, outcome.solution.optimal_actions))
    return min(1.0, max(0, room) / probes)


def tier_of(heuristic: float, informed: float, fit: float) -> str:
    """The tier of an environment from its measures (see the module's table)."""
    full = fit >= 1.0
    if not full and heuristic <= FRONTIER_HEURISTIC and informed >= FRONTIER_INFORMED:
        return "frontier"
    if (not full and heuristic <= HARD_HEURISTIC) or heuristic <= FRONTIER_HEURISTIC:
        return "hard"
    if heuristic <= EASY_HEURISTIC or not full:
        return "medium"
    return "easy"


def measure(mechanism: Mechanism, params, outcome: Outcome, budget: int, probe_share: float = 1.0,
            requested: str | None = None) -> tuple[Difficulty, list[Action], dict[str, float]]:
    """(the difficulty, the informed agent's calls, the utility of every heuristic and of the informed agent)."""
    u0, u_star = outcome.u0, outcome.solution.u_star
    informed = informed_actions(mechanism, params, budget)
    u_informed = mechanism.play(params, informed, budget)[0]
    utilities = {INFORMED: u_informed}
    for name, actions in mechanism.heuristic_actions(params).items():
        utilities[name] = mechanism.play(params, actions, budget)[0]
    heuristics = [score(u, u0, u_star) for name, u in utilities.items() if name != INFORMED]
    heuristic = max(heuristics) if heuristics else 0.0
    informed_score = score(u_informed, u0, u_star)
    fit = facts_fit(mechanism, params, outcome, budget)
    difficulty = Difficulty(tier=tier_of(heuristic, informed_score, fit), requested=requested,
                            probe_share=probe_share, facts_fit=round(fit, 6), informed_score=round(informed_score, 6),
                            heuristic_score=round(heuristic, 6))
    return difficulty, informed, utilities
