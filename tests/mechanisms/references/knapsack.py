"""Independent reference for knapsack on small instances (the conformance suite requires one per family)."""

from __future__ import annotations

import itertools

import numpy as np

SMALL_KNOBS = (8, 2)

def reference(mechanism, params) -> float:
    """Enumerate every subset."""
    values = np.asarray(params.values, dtype=float)
    weights = np.asarray(params.weights, dtype=float)
    capacities = np.asarray(params.capacities, dtype=float)
    best = 0.0
    for mask in itertools.product((0, 1), repeat=len(values)):
        chosen = np.asarray(mask, dtype=float)
        if np.all(weights @ chosen <= capacities + 1e-9):
            best = max(best, float(values @ chosen))
    return best
