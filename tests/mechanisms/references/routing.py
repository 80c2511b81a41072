"""Independent reference for routing on small instances: brute force over every ordered subset of stops."""

from __future__ import annotations

import itertools

SMALL_KNOBS = (6, 2)  # (stops, understated legs): 1,956 ordered subsets


def reference(mechanism, params) -> float:
    """Try every order of every subset of stops (n <= 7), charge the skipped ones, keep the cheapest."""
    d = params.distances
    n = len(d) - 1
    best = n * params.unvisited_penalty  # drive nowhere
    for k in range(1, n + 1):
        for order in itertools.permutations(range(1, n + 1), k):
            path = (0, *order, 0)
            cost = sum(d[a][b] for a, b in zip(path[:-1], path[1:], strict=True)) + params.unvisited_penalty * (n - k)
            best = min(best, cost)
    return -float(best)
