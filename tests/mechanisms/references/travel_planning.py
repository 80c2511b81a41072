"""Independent reference for travel_planning on small instances: every ordered sequence of places."""

from __future__ import annotations

import itertools

SMALL_KNOBS = (6, 6)  # (places, hours): 1,956 ordered sequences


def reference(mechanism, params) -> float:
    """Simulate every ordered sequence of distinct places (n <= 6) and keep the best feasible enjoyment."""
    p = params
    n = len(p.enjoyment)
    best = 0.0
    for k in range(1, n + 1):
        for order in itertools.permutations(range(1, n + 1), k):
            clock, here, spent = p.day_start, 0, 0.0
            for j in order:
                opens, closes = p.opening[j - 1]
                done = max(clock + p.travel[here][j], opens) + p.durations[j - 1]
                spent += p.prices[j - 1]
                if done > closes or done + p.travel[j][0] > p.day_end or spent > p.budget + 1e-9:
                    break
                clock, here = done, j
            else:
                best = max(best, float(sum(p.enjoyment[j - 1] for j in order)))
    return best
