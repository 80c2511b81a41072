"""Independent reference for weitzman_search: the hindsight ceiling by enumerating every set of opened boxes."""

from __future__ import annotations

import itertools

SMALL_KNOBS = (4, 3)


def reference(mechanism, params) -> float:
    """Knowing every prize, any set S of opened boxes yields max prize in S minus the costs of S (0 if empty)."""
    n = len(params.costs)
    best = 0.0
    for r in range(1, n + 1):
        for subset in itertools.combinations(range(n), r):
            best = max(best, max(params.prizes[i] for i in subset) - sum(params.costs[i] for i in subset))
    return float(best)
