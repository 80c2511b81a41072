"""Independent reference for scheduling on small instances (the conformance suite requires one per family)."""

from __future__ import annotations

import itertools

SMALL_KNOBS = (6, 2)


def reference(mechanism, params) -> float:
    """Brute force: every assignment of jobs to machines and every order of the jobs on each machine."""
    n, m = len(params.processing_times), params.machines
    best_single: dict[tuple[int, ...], float] = {}

    def single(jobs: tuple[int, ...]) -> float:
        if jobs not in best_single:
            best = float("inf")
            for order in itertools.permutations(jobs):
                clock = total = 0.0
                for j in order:
                    clock += params.processing_times[j]
                    total += params.weights[j] * clock
                best = min(best, total)
            best_single[jobs] = best if jobs else 0.0
        return best_single[jobs]

    best = float("inf")
    for assignment in itertools.product(range(m), repeat=n):
        cost = sum(single(tuple(j for j in range(n) if assignment[j] == k)) for k in range(m))
        best = min(best, cost)
    return -best
