"""Independent reference for inventory_dp on small instances (the conformance suite requires one per family)."""

from __future__ import annotations

import itertools

import numpy as np

SMALL_KNOBS = (4, 3)  # (size, horizon) small enough to enumerate

def reference(mechanism, params) -> float:
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
