"""Baselines that measure an environment's difficulty, and the tier those measures put it in.

Every baseline plays at a seat (mechanisms.players): it acts through the hidden mode's operations and knows only
the public structure and what its own calls showed; a posted sheet costs it a call like anyone.

- The **informed agent** reads the posted sheets, verifies figures in the family's order of value of information for
  as long as its turn budget leaves room for the plan, solves what it then believes and acts on it: a ceiling a
  careful hidden-mode agent reaches within the budget (u* needs full information, which may not fit).
- The **naive prober** does the same but verifies figures in listing order. ``skill_gap`` = informed - naive prober:
  what choosing which figures to verify is worth.
- The **heuristic agents** are what a naive agent would do (greedy, myopic, nearest neighbour), declared per family.
- **facts_fit** is the share of the probe calls that fit in the budget beside the optimal plan.

Scores are measured against the reachable reference: u* for a family with full information, the optimal online
policy (``ONLINE_BASELINE``) for a sequential family, whose u* is the hindsight ceiling no agent reaches.

A family with random draws (``Mechanism.redraw``: the offers, the prizes of a sequential family) is scored in
expectation: on one drawn path a rule either has the online policy's luck or not, so its score is nearly 0 or 1.
The scores (informed, naive prober, heuristics, hence the skill gap and the tier) compare each player's mean utility
over the drawn path and ``REDRAWS`` redraws of it (the same instance, its draws drawn anew, seeded from the instance
so that ids stay reproducible; each played at a seat with the same budget) with the means of the default and of the
reachable reference on the same paths. The recorded utilities and calls stay those of the drawn path: admission
replays them through the tools.

The tier (mechanisms.base.TIERS) is calibrated from these measures only, never from the requested cells:

    frontier  full information does not fit, no heuristic above 0.5, informed at least 0.25, skill gap >= 0.1
    hard      full information does not fit and no heuristic above 0.75, or no heuristic above 0.5; skill gap >= 0.1
    medium    no heuristic above 0.9, or full information does not fit
    easy      otherwise: a naive agent already scores above 0.9 and every probe fits
"""

from __future__ import annotations

import hashlib
import statistics

import numpy as np

from envs.scoring import score
from mechanisms import players
from mechanisms.base import ONLINE_BASELINE, Mechanism, Outcome, parsed_once
from mechanisms.players import decisions, run_policy, sheet_calls
from schemas.envspec import Difficulty, Measured, Reference

INFORMED, NAIVE_PROBER = "informed", "naive_prober"
FRONTIER_HEURISTIC, HARD_HEURISTIC, EASY_HEURISTIC = 0.5, 0.75, 0.9
FRONTIER_INFORMED = 0.25
# hard and frontier need choosing what to verify to matter: the informed agent beats the naive prober by this much
MIN_SKILL_GAP = 0.1
# the informed agent must beat the default by this much of the gap, or the budget (not skill) decides the score
MIN_INFORMED_SCORE = 0.05
# the paths a family with random draws is scored on besides the drawn one. Measured on 30 hard and frontier instances
# of each sequential family against 96 redraws: the scores' mean error falls from 0.16-0.22 on the drawn path alone to
# 0.07-0.11 with 8 (0.05-0.07 with 16), the tier matches on 48 of 60 (50 with 16, 31 on the drawn path alone); 8 add
# about 4 CPU-seconds to the 3,300-environment benchmark's 508 sequential environments, 16 about 9
REDRAWS = 8


def reachable(outcome: Outcome) -> float:
    """The reference a hidden-mode agent can reach: the optimal online policy where u* is a hindsight ceiling."""
    return outcome.baselines.get(ONLINE_BASELINE, outcome.solution.u_star)


def reachable_u(reference: Reference) -> float:
    """`reachable` of a landed environment's reference."""
    return reference.baselines.get(ONLINE_BASELINE, reference.u_star)


def facts_fit(mechanism: Mechanism, params, outcome: Outcome, budget: int) -> float:
    """The share of the probe calls that fit in the budget beside the posted sheets' calls and the optimal plan's
    decisions."""
    known = mechanism.knowledge(params)
    probes = len(mechanism.listing_order(known))
    if probes == 0:
        return 1.0
    room = budget - len(sheet_calls(known)) - len(decisions(known, outcome.solution.optimal_actions))
    return min(1.0, max(0, room) / probes)


def tier_of(heuristic: float, informed: float, fit: float, skill_gap: float = 1.0) -> str:
    """The tier of an environment from its measures (see the module's table)."""
    full = fit >= 1.0
    skilled = skill_gap >= MIN_SKILL_GAP
    if not full and heuristic <= FRONTIER_HEURISTIC and informed >= FRONTIER_INFORMED and skilled:
        return "frontier"
    if skilled and ((not full and heuristic <= HARD_HEURISTIC) or heuristic <= FRONTIER_HEURISTIC):
        return "hard"
    if heuristic <= EASY_HEURISTIC or not full:
        return "medium"
    return "easy"


def redrawn_paths(mechanism: Mechanism, params, count: int = REDRAWS) -> list:
    """`count` redraws of the instance's random draws (Mechanism.redraw), seeded from the family and the parameters
    (the same instance always gets the same paths); [] when the family has no random draws."""
    digest = hashlib.sha256(f"{mechanism.id}:{params.model_dump_json()}".encode()).digest()
    rng = np.random.default_rng(int.from_bytes(digest[:8], "big"))
    paths = []
    for _ in range(count):
        path = mechanism.redraw(params, rng)
        if path is None:
            return []
        paths.append(path)
    return paths


def _path_reference(mechanism: Mechanism, params) -> tuple[float, float]:
    """(u0, reachable reference) of one path: the default played without a turn limit, the optimal online policy
    where the family records one, else u*."""
    u0 = run_policy(mechanism, params, mechanism.default_policy)[1]
    online = mechanism.baseline_actions(params).get(ONLINE_BASELINE)
    return u0, (mechanism.run(params, online) if online is not None else mechanism.solve(params).u_star)


def measure(mechanism: Mechanism, params, outcome: Outcome, budget: int, probe_share: float = 1.0,
            requested: str | None = None, redraws: int = REDRAWS) -> Measured:
    """Play the informed agent, the naive prober and every heuristic at a seat within the budget; a family with random
    draws is scored over the drawn path and `redraws` redraws of it (see the module)."""
    with parsed_once():  # a path's players share its operations' listing
        return _measure(mechanism, params, outcome, budget, probe_share, requested, redraws)


def _measure(mechanism: Mechanism, params, outcome: Outcome, budget: int, probe_share: float, requested: str | None,
             redraws: int) -> Measured:
    u0, top = outcome.u0, reachable(outcome)
    policies = {INFORMED: players.informed(mechanism), NAIVE_PROBER: players.naive_prober(mechanism),
                **mechanism.heuristic_policies()}
    calls, utilities = {}, {}
    for name, policy in policies.items():
        calls[name], utilities[name] = run_policy(mechanism, params, policy, budget)
    scored = utilities  # the utilities the scores compare: the drawn path's, or means over it and its redraws
    paths = redrawn_paths(mechanism, params, redraws) if redraws > 0 else []
    if paths:
        samples = {name: [u] for name, u in utilities.items()}
        defaults, tops = [u0], [top]
        for path in paths:
            path_u0, path_top = _path_reference(mechanism, path)
            defaults.append(path_u0)
            tops.append(path_top)
            for name, policy in policies.items():
                samples[name].append(run_policy(mechanism, path, policy, budget)[1])
        scored = {name: statistics.fmean(values) for name, values in samples.items()}
        u0, top = statistics.fmean(defaults), statistics.fmean(tops)
    heuristics = [score(u, u0, top) for name, u in scored.items() if name not in (INFORMED, NAIVE_PROBER)]
    heuristic = max(heuristics) if heuristics else 0.0
    informed_score, naive_score = score(scored[INFORMED], u0, top), score(scored[NAIVE_PROBER], u0, top)
    gap = informed_score - naive_score
    fit = facts_fit(mechanism, params, outcome, budget)
    difficulty = Difficulty(tier=tier_of(heuristic, informed_score, fit, gap), requested=requested,
                            probe_share=probe_share, facts_fit=round(fit, 6), informed_score=round(informed_score, 6),
                            heuristic_score=round(heuristic, 6), naive_score=round(naive_score, 6),
                            skill_gap=round(gap, 6))
    return Measured(difficulty, calls[INFORMED], calls[NAIVE_PROBER], utilities)
