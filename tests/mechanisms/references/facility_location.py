"""Independent reference for facility_location on small instances (the conformance suite requires one)."""

from __future__ import annotations

import itertools

import numpy as np

SMALL_KNOBS = (5, 3)


def reference(mechanism, params) -> float:
    """Enumerate every assignment vector: each customer to one of the m sites or unserved.

    The sites in use are the ones opened (opening a site that serves nobody only adds cost), so the
    cheapest vector is the optimum; u* = -(its cost).
    """
    demand = np.asarray(params.demand, dtype=float)
    open_cost = np.asarray(params.open_cost, dtype=float)
    unit = np.asarray(params.service_cost, dtype=float)
    m, n = unit.shape
    options = np.vstack([unit, np.full((1, n), params.unserved_penalty)])  # row m: unserved
    best = np.inf
    for vector in itertools.product(range(m + 1), repeat=n):
        used = {site for site in vector if site < m}
        cost = sum(open_cost[site] for site in used)
        cost += sum(demand[j] * options[site, j] for j, site in enumerate(vector))
        best = min(best, float(cost))
    return -best
