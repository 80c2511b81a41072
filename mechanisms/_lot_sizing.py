"""The exact solver of ecommerce_365: a Wagner-Whitin lot-sizing dynamic programme per product over order intervals
on the bankruptcy-free relaxation (mechanisms.ecommerce_365's docstring states the model and why it is exact), and
its optimum written as calls: a few bulk plans per product, or the day-by-day steps.

An order arriving on day j covers days j..k exactly; each covered day takes its best (price, ad) pair for the holding
age t - j of its units, uncovered days have no stock and advertising off, and the fixed cost is paid once per
interval: O(T^2 * menu), vectorised with numpy. The family replays the plan through its dynamics to certify it."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from schemas.envspec import Action

# mechanisms.ecommerce_365.EcommerceParams, which imports this module: named, not imported, so no circle
EcommerceParams = Any

TIE = 1e-9


def menu(p: EcommerceParams, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Demand of every (price, ad) pair on every day (T x M, pair m = level * A + ads), its price and ad cost."""
    base = np.asarray(p.base_demand[i], dtype=np.int64)
    pr = np.asarray(p.price_response[i], dtype=np.int64)
    ar = np.asarray(p.ad_response[i], dtype=np.int64)
    demand = (base[:, None, None] * pr[None, :, None] * ar[None, None, :] // 10000).reshape(len(base), -1)
    price = np.repeat(np.asarray(p.prices[i], dtype=float), p.ad_levels)
    ad = np.tile(np.asarray(p.ad_costs[i], dtype=float), p.price_levels)
    return demand, price, ad


@functools.lru_cache(maxsize=16)  # the grids use 8 horizons
def _lower_triangle(T: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (day t, arrival j <= t) pairs of a T-day run, row by row: each pair's day, its age t - j (as a float), and
    the T x T mask that places them."""
    days, arrivals = np.tril_indices(T)
    mask = np.zeros((T, T), dtype=bool)
    mask[days, arrivals] = True
    for array in (days, mask):
        array.flags.writeable = False
    age = (days - arrivals).astype(float)
    age.flags.writeable = False
    return days, age, mask


def product_plan(p: EcommerceParams, i: int) -> tuple[float, list[tuple[int, int]]]:
    """Wagner-Whitin DP over order intervals for one product: (relaxed value, covered intervals [j, k])."""
    T, L = p.horizon, p.lead_time[i]
    demand, price, ad = menu(p, i)
    # best[t, j]: best value of day t served from an order arriving on day j <= t (units of age t - j), computed for
    # those pairs only (half the matrix) and 0 for j > t
    days, age, lower = _lower_triangle(T)
    held = p.holding_cost[i] * age
    units = np.take(demand.T, days, axis=1)  # units[m, pair]: the pair's day's demand at (price, ad) setting m
    pairs = np.empty(len(days))
    tmp = np.empty(len(days))
    for m in range(demand.shape[1]):
        np.subtract(price[m] - p.unit_cost[i], held, out=tmp)
        tmp *= units[m]
        tmp -= ad[m]
        if m:
            np.maximum(pairs, tmp, out=pairs)
        else:
            pairs[:] = tmp
    best = np.zeros((T, T))
    best[lower] = pairs
    span = np.cumsum(best, axis=0)  # span[k, j] = value of days j..k served from an order arriving on day j
    F = np.zeros(T + 1)
    choice = np.full(T + 1, -1)
    fixed = p.fixed_cost[i]
    for k in range(1, T + 1):
        F[k] = F[k - 1]  # day k - 1 uncovered: no stock, advertising off
        if k - 1 >= L:
            candidates = F[L:k] + span[k - 1, L:k] - fixed
            b = int(np.argmax(candidates))
            if candidates[b] > F[k] + TIE:
                F[k], choice[k] = candidates[b], L + b
    intervals = []
    k = T
    while k > 0:
        if choice[k] < 0:
            k -= 1
        else:
            intervals.append((int(choice[k]), k - 1))
            k = int(choice[k])
    return float(F[T]), sorted(intervals)


def daily_plan(p: EcommerceParams, intervals: list[list[tuple[int, int]]]
                ) -> tuple[list[list[int]], dict[int, list[tuple[int, int]]]]:
    """The relaxed optimum day by day: each product's (price, ad) pair per day and the orders placed per day.

    Each covered day takes its best (price, ad) pair for the holding age of its units; among pairs within
    TIE of the best it keeps the current setting, then the current price level. Uncovered days switch
    advertising off and keep the price.
    """
    T, n, A = p.horizon, p.products, p.ad_levels
    orders: dict[int, list[tuple[int, int]]] = {}
    choices = []
    for i in range(n):
        demand, price, ad = (x.tolist() for x in menu(p, i))
        pairs = range(len(price))
        cover = [-1] * T  # arrival day of the order serving each day
        for j, k in intervals[i]:
            cover[j:k + 1] = [j] * (k + 1 - j)
        current = (p.price_levels // 2) * A
        margins = [x - p.unit_cost[i] for x in price]
        holding = p.holding_cost[i]
        picked = []
        for t in range(T):
            if cover[t] < 0:
                current = (current // A) * A
            else:
                held = holding * (t - cover[t])
                values = [(margin - held) * units - cost
                          for margin, units, cost in zip(margins, demand[t], ad, strict=True)]
                top = max(values) - TIE
                if values[current] < top:
                    same = [m for m in pairs if values[m] >= top and m // A == current // A]
                    current = same[0] if same else next(m for m in pairs if values[m] >= top)
            picked.append(current)
        for j, k in intervals[i]:
            quantity = sum(demand[t][picked[t]] for t in range(j, k + 1))
            if quantity > 0:
                orders.setdefault(j - p.lead_time[i], []).append((i, quantity))
        choices.append(picked)
    return choices, orders


def bulk_actions(p: EcommerceParams, intervals: list[list[tuple[int, int]]]) -> list[Action]:
    """The relaxed optimum as a few calls: per product its price plan, advertising plan and order plan (each only
    when it changes something, trailing repeats left out), then every day closed in one call."""
    choices, orders = daily_plan(p, intervals)
    A = p.ad_levels
    actions: list[Action] = []
    for i in range(p.products):
        prices = [c // A + 1 for c in choices[i]]
        ads = [c % A + 1 for c in choices[i]]
        quantities = [0] * p.horizon
        for d, placed in orders.items():
            for j, quantity in placed:
                if j == i:
                    quantities[d] += quantity
        if any(level != p.price_levels // 2 + 1 for level in prices):
            actions.append(Action(op="plan_prices", args={"product": i + 1, "levels": trimmed(prices)}))
        if any(level != 1 for level in ads):
            actions.append(Action(op="plan_ads", args={"product": i + 1, "levels": trimmed(ads)}))
        if any(quantities):
            actions.append(Action(op="plan_orders", args={"product": i + 1,
                                                          "quantities": trimmed(quantities, zeros=True)}))
    return [*actions, advance(p.horizon)]


def trimmed(values: list[int], zeros: bool = False) -> list[int]:
    """A plan without its tail: trailing repeats of a level (it stays in force), or trailing zero orders."""
    end = len(values)
    while end > 1 and (values[end - 1] == 0 if zeros else values[end - 1] == values[end - 2]):
        end -= 1
    return values[:end]


def plan_actions(p: EcommerceParams, intervals: list[list[tuple[int, int]]]) -> list[Action]:
    """The relaxed optimum as day-by-day calls: settings only when they change, merged clock steps."""
    T, n, A = p.horizon, p.products, p.ad_levels
    choices, orders = daily_plan(p, intervals)
    settings = [(p.price_levels // 2) * A] * n
    actions: list[Action] = []
    idle = 0
    for d in range(T):
        today: list[Action] = []
        for i in range(n):
            now, before = choices[i][d], settings[i]
            if now // A != before // A:
                today.append(Action(op="set_price", args={"product": i + 1, "level": now // A + 1}))
            if now % A != before % A:
                today.append(Action(op="set_ads", args={"product": i + 1, "level": now % A + 1}))
            settings[i] = now
        for i, quantity in orders.get(d, []):
            today.append(Action(op="order_stock", args={"product": i + 1, "quantity": quantity}))
        if today:
            if idle:
                actions.append(advance(idle))
            actions.extend(today)
            idle = 0
        idle += 1
    if idle:
        actions.append(advance(idle))
    return actions


def advance(days: int) -> Action:
    return Action(op="advance_day") if days == 1 else Action(op="advance_days", args={"days": days})
