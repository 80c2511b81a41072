"""Independent references for small instances, one per family: the conformance suite requires each family here."""

from __future__ import annotations

import itertools

import numpy as np
from scipy.optimize import linprog


def inventory_dp(mechanism, params) -> float:
    """Enumerate every order sequence (small capacity and horizon only)."""
    from mechanisms.inventory_dp import _period_step

    best = -np.inf
    for orders in itertools.product(range(params.max_order + 1), repeat=params.horizon):
        stock, total = params.initial_stock, 0.0
        for t, quantity in enumerate(orders):
            if max(stock, 0) + quantity > params.capacity:
                break
            stock, profit = _period_step(params, stock, quantity, params.demand[t])
            total += profit
        else:
            best = max(best, total - params.shortage_penalty * max(-stock, 0))
    return float(best)


def knapsack(mechanism, params) -> float:
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


def lp(mechanism, params) -> float:
    """The dual LP by interior point: strong duality gives the primal optimum independently of the simplex."""
    c = np.asarray(params.c, dtype=float)
    a = np.asarray(params.A_ub, dtype=float)
    b = np.asarray(params.b_ub, dtype=float)
    dual = linprog(b, A_ub=-a.T, b_ub=-c, bounds=[(0, None)] * len(b), method="highs-ipm")
    assert dual.status == 0, dual.message
    return float(dual.fun)


SMALL_KNOBS = {"inventory_dp": (4, 3), "knapsack": (8, 2), "lp": (3, 2)}
