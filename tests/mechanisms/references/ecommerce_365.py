"""Independent reference for ecommerce_365 on tiny instances (the conformance suite requires one per family).

Exhaustive search over every day's (order quantity, price level, ad level) with the bankruptcy rule relaxed
(the sampler only admits instances whose relaxed optimum never goes bankrupt), memoised on the state
(day, stock, orders on the way). It simulates the day dynamics directly and assumes nothing about the shape
of an optimal plan (no zero-inventory ordering, no order intervals).
"""

from __future__ import annotations

from functools import cache

SMALL_KNOBS = (1, 7)  # one product, seven days: tiny menus and demands


def reference(mechanism, params) -> float:
    """The best ending cash balance over every plan (orders of 0..the units that can still be sold)."""
    p = params
    T = p.horizon
    total = float(p.initial_cash) - p.daily_fee * T
    for i in range(p.products):
        total += _product_optimum(p, i)
    return total


def _product_optimum(p, i: int) -> float:
    T, L = p.horizon, p.lead_time[i]
    menu = [(level, ads) for level in range(len(p.prices[i])) for ads in range(len(p.ad_costs[i]))]

    def demand(t: int, level: int, ads: int) -> int:
        return p.base_demand[i][t] * p.price_response[i][level] * p.ad_response[i][ads] // 10000

    most = [max(demand(t, lv, a) for lv, a in menu) for t in range(T)]
    sellable_from = [sum(most[t:]) for t in range(T + 1)]

    @cache
    def best(t: int, stock: int, on_the_way: tuple[int, ...]) -> float:
        """Best profit from day t on; on_the_way[k] arrives at the start of day t + 1 + k."""
        if t == T:
            return 0.0
        top = sellable_from[t + L] if t + L <= T - 1 else 0
        value = float("-inf")
        for quantity in range(top + 1):
            order_cost = (p.fixed_cost[i] + p.unit_cost[i] * quantity) if quantity else 0.0
            pipeline = (*on_the_way, quantity)  # arrivals on days t + 1 .. t + L
            for level, ads in menu:
                sales = min(demand(t, level, ads), stock)
                left = stock - sales
                profit = (p.prices[i][level] * sales - p.ad_costs[i][ads] - p.holding_cost[i] * left
                          - order_cost)
                value = max(value, profit + best(t + 1, left + pipeline[0], pipeline[1:]))
        return value

    return best(0, 0, (0,) * (L - 1))
