"""Independent reference for sequential_stopping: the hindsight ceiling by enumerating every open-loop plan."""

from __future__ import annotations

SMALL_KNOBS = (3, 4)


def reference(mechanism, params) -> float:
    """Every plan is 'pass k offers, then accept' or 'pass k offers, then walk away'; take the best payoff."""
    n, cost = len(params.offers), params.waiting_cost
    payoffs = [params.fallback - cost * k for k in range(n + 1)]  # walk away after k passes
    payoffs += [params.offers[k] - cost * k for k in range(n)]  # accept after k passes
    return float(max(payoffs))
