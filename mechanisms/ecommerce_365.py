"""ecommerce_365: run an online store day by day (prices, advertising, stock orders) without going bankrupt.

The store sells ``P`` products (the ``size`` knob, 1-3) for ``T`` days (the ``horizon`` knob, 30-365 in the
difficulty grid; the sampler also accepts 3-29 days, with tiny menus and demands, for brute-force checks).
Products share one cash balance. Days are numbered 1..T in the interface (0..T-1 below). The grid stops at
3 products x 300 days: 3 x 365 daily demands do not fit the 6,000-character instruction limit of the written
and revealed modes with every corpus passage (about half the 3 x 365 renderings do).

Parameters (all can be given as data; lists are per product unless said otherwise):
- ``base_demand``: P x T non-negative integers, the hidden base demand of each product on each day
  (seasonality and noise, drawn at sampling)
- ``prices``: P x I selling prices of the I price levels (level 1..I, strictly increasing, positive)
- ``price_response``: P x I integers, the demand multiplier of each price level in percent (0..1000)
- ``ad_costs``: P x A costs per day of the A advertising levels (level 1 is "off" and costs 0; non-negative)
- ``ad_response``: P x A integers, the demand multiplier of each advertising level in percent (0..1000)
- ``unit_cost``, ``fixed_cost``: purchase cost per unit and fixed charge per order (non-negative)
- ``holding_cost``: cost per unit held at the end of a day (non-negative)
- ``lead_time``: days from placing an order to its arrival (1..14, below T); an order placed on day d
  arrives at the start of day d + lead_time, before that day's sales; orders that would arrive after day T
  are refused
- ``daily_fee``: one store-wide fee charged every day (non-negative)
- ``initial_cash``: the starting cash balance (non-negative); ``grace_days``: K (0..60)
- ``max_order``: most units per order (one bound for all products; it must be at least every product's
  total of the largest possible daily demand, so it never binds an optimal plan)
- ``forecast``: P x T, the posted demand forecast "sticker" (a biased decoy) for each day, stated at the
  ``sticker_price_level`` of each product (1-based) and the middle advertising level
Dynamics of day d: the demand of product p is ``base_demand[p][d] * price_response[p][i] * ad_response[p][a]
// 10000`` (integer arithmetic) for its current price level i and advertising level a; sales =
min(demand, stock); the cash balance receives the revenue and pays the advertising, the holding cost of the
stock left at the end of the day, the cost of the orders placed that day (fixed + unit cost each) and the
daily fee. Price and advertising levels are persistent settings (they start at the middle price level and
advertising off). Unsold stock at the end is worth nothing (salvage value 0). BANKRUPTCY: if the cash balance
is negative at the end of more than K consecutive days, the store is bankrupt and the run ends at once; the
utility is then that (negative) cash balance. Otherwise u = the cash balance after day T. ``finish`` hands the
store to an autopilot for the remaining days: current prices, advertising off, no new orders (orders already
placed still arrive), same bankruptcy rule.

Solver (exact): relax the bankruptcy rule; then the problem decomposes per product into a lot-sizing dynamic
programme of Wagner-Whitin type over order intervals: an order arriving on day j covers days j..k exactly
(zero-inventory ordering is optimal: for fixed price/ad choices the problem is a concave-cost network flow
whose extreme flows serve each day from one order or not at all), each covered day t picks its best
(price, ad) pair given the holding age t - j, days not covered have no stock and advertising off, and the
fixed cost is paid once per interval; O(T^2 * menu) vectorised with numpy. The relaxation's optimum bounds
every plan of the true problem; its plan is replayed through the dynamics, and when its cash path never
triggers bankruptcy and ends non-negative (every bankrupt run ends negative) it is optimal: the facts record
``exact: true``. ``sample()`` redraws (at most 40 times) until this certificate holds; ``solve()`` raises
ValueError for data whose relaxed plan is not certified.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, model_validator

from mechanisms.base import ActionError, Mechanism, Solution, require_int
from mechanisms.registry import register
from schemas.envspec import Action, ArgSpec, OperationSpec

MAX_PRODUCTS = 3
MAX_HORIZON = 366
MAX_LEAD = 14
MAX_LEVELS = 6
MAX_RANGE = 92  # days per probe or forecast read
SAMPLE_REDRAWS = 40
TIE = 1e-9
METHOD = ("Wagner-Whitin lot-sizing DP per product over order intervals (best price/ad per day given the "
          "holding age) on the bankruptcy-free relaxation; replayed plan certified free of bankruptcy")


class EcommerceParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    base_demand: list[list[int]]
    forecast: list[list[int]]
    sticker_price_level: list[int]
    prices: list[list[float]]
    price_response: list[list[int]]
    ad_costs: list[list[float]]
    ad_response: list[list[int]]
    unit_cost: list[float]
    fixed_cost: list[float]
    holding_cost: list[float]
    lead_time: list[int]
    daily_fee: float
    initial_cash: float
    grace_days: int
    max_order: int

    @model_validator(mode="after")
    def _shapes(self) -> EcommerceParams:
        n = len(self.base_demand)
        if not 1 <= n <= MAX_PRODUCTS:
            raise ValueError(f"base_demand must have one row per product (1 to {MAX_PRODUCTS}), got {n}")
        horizon = len(self.base_demand[0])
        if not 2 <= horizon <= MAX_HORIZON:
            raise ValueError(f"base_demand rows must cover 2 to {MAX_HORIZON} days, got {horizon}")
        for name in ("base_demand", "forecast"):
            rows = getattr(self, name)
            if len(rows) != n or any(len(row) != horizon for row in rows):
                raise ValueError(f"{name} must be {n} rows of {horizon} days")
            if any(x < 0 or x > 10**6 for row in rows for x in row):
                raise ValueError(f"{name} entries must be between 0 and 1000000")
        for name in ("sticker_price_level", "unit_cost", "fixed_cost", "holding_cost", "lead_time"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"{name} must have one entry per product ({n})")
        levels = len(self.prices[0]) if self.prices else 0
        ads = len(self.ad_costs[0]) if self.ad_costs else 0
        for name, width in (("prices", levels), ("price_response", levels), ("ad_costs", ads),
                            ("ad_response", ads)):
            rows = getattr(self, name)
            if len(rows) != n or any(len(row) != width for row in rows) or not 1 <= width <= MAX_LEVELS:
                raise ValueError(f"{name} must be {n} rows of the same number of levels (1 to {MAX_LEVELS})")
        numbers = [*(x for row in self.prices for x in row), *(x for row in self.ad_costs for x in row),
                   *self.unit_cost, *self.fixed_cost, *self.holding_cost, self.daily_fee, self.initial_cash]
        if not all(math.isfinite(x) for x in numbers):
            raise ValueError("prices, costs, fee and initial_cash must be finite numbers")
        for row in self.prices:
            if row[0] <= 0 or any(b <= a for a, b in zip(row, row[1:], strict=False)):
                raise ValueError("prices must be positive and strictly increasing from level 1")
        for name in ("price_response", "ad_response"):
            if any(not 0 <= x <= 1000 for row in getattr(self, name) for x in row):
                raise ValueError(f"{name} percentages must be between 0 and 1000")
        if any(x < 0 for row in self.ad_costs for x in row) or any(row[0] != 0 for row in self.ad_costs):
            raise ValueError("ad_costs must be non-negative, and level 1 (advertising off) must cost 0")
        for name in ("unit_cost", "fixed_cost", "holding_cost"):
            if min(getattr(self, name)) < 0:
                raise ValueError(f"{name} must be non-negative")
        if self.daily_fee < 0:
            raise ValueError("daily_fee must be non-negative")
        if self.initial_cash < 0:
            raise ValueError("initial_cash must be non-negative")
        if any(not 1 <= s <= levels for s in self.sticker_price_level):
            raise ValueError(f"sticker_price_level entries must be price levels 1..{levels}")
        if any(not 1 <= lt <= min(MAX_LEAD, horizon - 1) for lt in self.lead_time):
            raise ValueError(f"lead_time entries must be between 1 and {min(MAX_LEAD, horizon - 1)} days")
        if not 0 <= self.grace_days <= 60:
            raise ValueError("grace_days must be between 0 and 60")
        need = max(sum(b * max(self.price_response[p]) * max(self.ad_response[p]) // 10000
                       for b in self.base_demand[p]) for p in range(n))
        if not 1 <= self.max_order <= 10**8 or self.max_order < need:
            raise ValueError(f"max_order must be between 1 and 100000000 and at least {need} (the largest total "
                             "demand one product can reach), so that it never binds")
        return self

    @property
    def products(self) -> int:
        return len(self.base_demand)

    @property
    def horizon(self) -> int:
        return len(self.base_demand[0])

    @property
    def price_levels(self) -> int:
        return len(self.prices[0])

    @property
    def ad_levels(self) -> int:
        return len(self.ad_costs[0])


# --- dynamics --------------------------------------------------------------------------------------------

def _demand(p: EcommerceParams, product: int, day: int, level: int, ads: int) -> int:
    return p.base_demand[product][day] * p.price_response[product][level] * p.ad_response[product][ads] // 10000


def _fresh_state(p: EcommerceParams) -> dict[str, Any]:
    n = p.products
    return {"day": 0, "cash": float(p.initial_cash), "stock": [0] * n, "price": [p.price_levels // 2] * n,
            "ads": [0] * n, "pending": [0] * n, "pipeline": [], "negative_days": 0, "bankrupt": False,
            "bankrupt_day": None, "finished": False}


def _close_day(p: EcommerceParams, st: dict[str, Any]) -> list[int]:
    """Serve today's demand, book the day, place today's orders, open the next day. Returns the units sold."""
    d = st["day"]
    cash = st["cash"]
    sold = []
    for i in range(p.products):
        level, ads, stock = st["price"][i], st["ads"][i], st["stock"][i]
        sales = min(_demand(p, i, d, level, ads), stock)
        stock -= sales
        profit = p.prices[i][level] * sales - p.ad_costs[i][ads] - p.holding_cost[i] * stock
        quantity = st["pending"][i]
        if quantity > 0:
            profit -= p.fixed_cost[i] + p.unit_cost[i] * quantity
            st["pipeline"].append([d + p.lead_time[i], i, quantity])
            st["pending"][i] = 0
        cash += profit
        st["stock"][i] = stock
        sold.append(sales)
    cash -= p.daily_fee
    st["cash"] = cash
    st["negative_days"] = st["negative_days"] + 1 if cash < 0 else 0
    d += 1
    st["day"] = d
    if st["pipeline"]:
        keep = []
        for entry in st["pipeline"]:
            if entry[0] == d:
                st["stock"][entry[1]] += entry[2]
            else:
                keep.append(entry)
        st["pipeline"] = keep
    if st["negative_days"] > p.grace_days:
        st.update(bankrupt=True, bankrupt_day=d, finished=True)
    elif d >= p.horizon:
        st["finished"] = True
    return sold


def _autopilot(p: EcommerceParams, st: dict[str, Any]) -> None:
    """The rest of the run with current prices, advertising off and no new orders."""
    st["ads"] = [0] * p.products
    st["pending"] = [0] * p.products
    while not st["finished"]:
        _close_day(p, st)


# --- the exact solver ---------------------------------------------------------------------------------

def _menu(p: EcommerceParams, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Demand of every (price, ad) pair on every day (T x M, pair m = level * A + ads), its price and ad cost."""
    base = np.asarray(p.base_demand[i], dtype=np.int64)
    pr = np.asarray(p.price_response[i], dtype=np.int64)
    ar = np.asarray(p.ad_response[i], dtype=np.int64)
    demand = (base[:, None, None] * pr[None, :, None] * ar[None, None, :] // 10000).reshape(len(base), -1)
    price = np.repeat(np.asarray(p.prices[i], dtype=float), p.ad_levels)
    ad = np.tile(np.asarray(p.ad_costs[i], dtype=float), p.price_levels)
    return demand, price, ad


def _product_plan(p: EcommerceParams, i: int) -> tuple[float, list[tuple[int, int]]]:
    """Wagner-Whitin DP over order intervals for one product: (relaxed value, covered intervals [j, k])."""
    T, L = p.horizon, p.lead_time[i]
    demand, price, ad = _menu(p, i)
    # best[t, j]: best value of day t served from an order arriving on day j <= t (units of age t - j)
    age = np.arange(T)[:, None] - np.arange(T)[None, :]
    held = p.holding_cost[i] * age.astype(float)
    best = np.full((T, T), -np.inf)
    tmp = np.empty((T, T))
    for m in range(demand.shape[1]):
        np.subtract(price[m] - p.unit_cost[i], held, out=tmp)
        tmp *= demand[:, m, None]
        tmp -= ad[m]
        np.maximum(best, tmp, out=best)
    best[age < 0] = 0.0
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


def _plan_actions(p: EcommerceParams, intervals: list[list[tuple[int, int]]]) -> list[Action]:
    """The day-by-day actions of the relaxed optimum: settings only when they change, merged clock steps.

    Each covered day takes its best (price, ad) pair for the holding age of its units; among pairs within
    TIE of the best it keeps the current setting, then the current price level. Uncovered days switch
    advertising off and keep the price.
    """
    T, n, A = p.horizon, p.products, p.ad_levels
    orders: dict[int, list[tuple[int, int]]] = {}
    choices = []
    for i in range(n):
        demand, price, ad = (x.tolist() for x in _menu(p, i))
        pairs = range(len(price))
        cover = [-1] * T  # arrival day of the order serving each day
        for j, k in intervals[i]:
            cover[j:k + 1] = [j] * (k + 1 - j)
        current = (p.price_levels // 2) * A
        picked = []
        for t in range(T):
            if cover[t] < 0:
                current = (current // A) * A
            else:
                age = t - cover[t]
                row = demand[t]
                values = [(price[m] - p.unit_cost[i] - p.holding_cost[i] * age) * row[m] - ad[m] for m in pairs]
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
                actions.append(_advance(idle))
            actions.extend(today)
            idle = 0
        idle += 1
    if idle:
        actions.append(_advance(idle))
    return actions


def _num(x: float) -> str:
    """A number as text without exponent notation or trailing zeros."""
    return np.format_float_positional(float(x), trim="-")


def _advance(days: int) -> Action:
    return Action(op="advance_day") if days == 1 else Action(op="advance_days", args={"days": days})


def _replay(p: EcommerceParams, actions: list[Action], mechanism: Mechanism) -> dict[str, Any]:
    state = _fresh_state(p)
    lowest, longest = state["cash"], 0
    for action in actions:
        if state["finished"]:
            break
        if action.op == "advance_days":
            for _ in range(action.args["days"]):
                _close_day(p, state)
                lowest, longest = min(lowest, state["cash"]), max(longest, state["negative_days"])
                if state["finished"]:
                    break
        elif action.op == "advance_day":
            _close_day(p, state)
            lowest, longest = min(lowest, state["cash"]), max(longest, state["negative_days"])
        else:
            mechanism.apply(p, state, action)
    if not state["finished"]:
        _autopilot(p, state)
    return {"state": state, "lowest_cash": lowest, "longest_negative_run": longest}


class Ecommerce365(Mechanism[EcommerceParams]):
    id = "ecommerce_365"
    version = 1
    group = "external"
    summary = ("run an online store day by day: prices, advertising and stock orders with a lead time, without "
               "going bankrupt; Wagner-Whitin lot-sizing DP on the bankruptcy-free relaxation, certified by replay")
    Params = EcommerceParams
    size_range = (1, 3)  # products sharing one cash balance
    horizon_range = (30, 365)  # days
    default_size = 2
    default_horizon = 365
    difficulty_grid = [(1, 30), (1, 90), (2, 180), (2, 365), (3, 300)]  # 3 x 365 overflows the text limit
    u0_band = (-1.0, 0.9)

    # --- sampling ---------------------------------------------------------------------------------------
    def sample(self, rng: np.random.Generator, size: int, horizon: int) -> EcommerceParams:
        n, T = int(size), int(horizon)
        if not 1 <= n <= MAX_PRODUCTS or not 3 <= T <= MAX_HORIZON:
            raise ValueError(f"size must be 1..{MAX_PRODUCTS} and horizon 3..{MAX_HORIZON}, got {n}, {T}")
        for _ in range(SAMPLE_REDRAWS):
            params = self._draw(rng, n, T)
            try:
                self.solve(params)
            except ValueError:
                continue
            return params
        raise RuntimeError(f"ecommerce_365: no instance with a certified exact reference in {SAMPLE_REDRAWS} "
                           f"draws at size {n}, horizon {T}")

    def _draw(self, rng: np.random.Generator, n: int, T: int) -> EcommerceParams:
        tiny = T < 30
        levels, ad_levels = (2, 2) if tiny else (4, 3)
        data: dict[str, list] = {k: [] for k in ("base_demand", "forecast", "sticker_price_level", "prices",
                                                 "price_response", "ad_costs", "ad_response", "unit_cost",
                                                 "fixed_cost", "holding_cost", "lead_time")}
        margin_scale = 0.0
        cash_scale = 0.0
        mid_ad = ad_levels // 2
        for _ in range(n):
            mean = rng.uniform(1.0, 2.5) if tiny else rng.uniform(8.0, 40.0)
            days = np.arange(T)
            season = (1 + rng.uniform(0.1, 0.5) * np.sin(2 * np.pi * (days / 365 + rng.uniform()))
                      + rng.uniform(0.0, 0.15) * np.sin(2 * np.pi * (days / 7 + rng.uniform())))
            base = np.maximum(np.round(mean * season * np.exp(rng.normal(0, 0.12, T))), 0).astype(int)
            cost = float(rng.integers(4, 41))
            ladder = np.array([1.35, 1.7, 2.05, 2.5])[:levels] if not tiny else np.array([1.5, 2.2])
            prices = np.round(cost * ladder * rng.uniform(0.95, 1.05, levels))
            prices = np.maximum.accumulate(prices + np.arange(levels) * 1e-9).round()
            for k in range(1, levels):
                prices[k] = max(prices[k], prices[k - 1] + 1)
            elasticity = rng.uniform(1.2, 2.6)
            response = np.round(100 * (prices / prices[levels // 2]) ** (-elasticity)).astype(int)
            response = np.clip(response, 1, 1000)
            ad_lift = np.concatenate([[100], 100 + np.cumsum(rng.integers(8, 36, ad_levels - 1))])
            daily_margin = (prices[levels // 2] - cost) * mean
            ad_costs = np.concatenate([[0.0], np.cumsum(np.round(daily_margin * rng.uniform(0.04, 0.18,
                                                                                             ad_levels - 1)))])
            fixed = float(np.round(daily_margin * rng.uniform(0.1, 0.85)))
            holding = float(max(np.round(cost * rng.uniform(0.002, 0.012), 2), 0.01))
            lead = int(rng.integers(1, min(2 if tiny else 5, T - 1) + 1))
            sticker = int(rng.integers(levels // 2 - 1, levels)) if levels > 2 else int(rng.integers(0, levels))
            true = base * response[sticker] * ad_lift[mid_ad] // 10000
            bias = rng.choice([rng.uniform(0.6, 0.85), rng.uniform(1.2, 1.6)])
            forecast = np.maximum(np.round(true * bias * np.exp(rng.normal(0, 0.08, T))), 0).astype(int)
            data["base_demand"].append(base.tolist())
            data["forecast"].append(forecast.tolist())
            data["sticker_price_level"].append(sticker + 1)
            data["prices"].append(prices.tolist())
            data["price_response"].append(response.tolist())
            data["ad_costs"].append(ad_costs.tolist())
            data["ad_response"].append(ad_lift.astype(int).tolist())
            data["unit_cost"].append(cost)
            data["fixed_cost"].append(fixed)
            data["holding_cost"].append(holding)
            data["lead_time"].append(lead)
            margin_scale += daily_margin
            cash_scale += fixed + cost * mean * 12
        need = max(sum(b * max(r) * max(a) // 10000 for b in base)
                   for base, r, a in zip(data["base_demand"], data["price_response"], data["ad_response"],
                                         strict=True))
        fee = float(np.round(margin_scale * rng.uniform(0.05, 0.2)))
        return EcommerceParams(
            **data,
            daily_fee=fee,
            initial_cash=float(np.round(cash_scale * rng.uniform(0.8, 2.0) + fee * 10, -1)),
            grace_days=int(rng.integers(3, 11)),
            max_order=int(10 ** math.ceil(math.log10(max(2 * need, 10)))),
        )

    # --- reference --------------------------------------------------------------------------------------
    def solve(self, params: EcommerceParams) -> Solution:
        p = params
        bound = float(p.initial_cash) - p.daily_fee * p.horizon
        intervals = []
        for i in range(p.products):
            value, product_intervals = _product_plan(p, i)
            bound += value
            intervals.append(product_intervals)
        actions = _plan_actions(p, intervals)
        replay = _replay(p, actions, self)
        state = replay["state"]
        if state["bankrupt"]:
            raise ValueError(f"the bankruptcy-free optimum is not certified: its plan goes bankrupt on day "
                             f"{state['bankrupt_day']}")
        u_star = float(state["cash"])
        if u_star < 0:
            raise ValueError("the bankruptcy-free optimum is not certified: it ends with negative cash")
        if abs(u_star - bound) > 1e-6 * max(1.0, abs(bound)):
            raise RuntimeError(f"replay of the lot-sizing plan reached {u_star}, the DP value is {bound}")
        facts = {"exact": True, "method": METHOD, "relaxation_value": round(bound, 6),
                 "orders": sum(len(x) for x in intervals), "lowest_cash": round(replay["lowest_cash"], 6),
                 "longest_negative_run": replay["longest_negative_run"], "actions": len(actions)}
        return Solution(u_star, actions, "Wagner-Whitin lot-sizing DP on the bankruptcy-free relaxation", facts)

    def default_actions(self, params: EcommerceParams) -> list[Action]:
        """Trusts the forecast sticker: its price level, the middle ad level for every product, and each day an
        order up to the forecast demand until that order arrives (less stock on hand and on order)."""
        p = params
        n, T = p.products, p.horizon
        mid = p.ad_levels // 2
        actions = [Action(op="read_forecast", args={"product": 1, "first_day": 1, "last_day": min(T, MAX_RANGE)})]
        state = _fresh_state(p)
        for i in range(n):
            if p.sticker_price_level[i] - 1 != state["price"][i]:
                actions.append(Action(op="set_price", args={"product": i + 1, "level": p.sticker_price_level[i]}))
            if mid != state["ads"][i]:
                actions.append(Action(op="set_ads", args={"product": i + 1, "level": mid + 1}))
            state["price"][i], state["ads"][i] = p.sticker_price_level[i] - 1, mid
        idle = 0
        while not state["finished"]:
            d = state["day"]
            today = []
            for i in range(n):
                lead = p.lead_time[i]
                if d + lead > T - 1:
                    continue
                on_order = sum(e[2] for e in state["pipeline"] if e[1] == i)
                want = sum(p.forecast[i][d:d + lead + 1])
                quantity = min(max(want - state["stock"][i] - on_order, 0), p.max_order)
                if quantity > 0:
                    today.append(Action(op="order_stock", args={"product": i + 1, "quantity": quantity}))
                    state["pending"][i] = quantity
            if today:
                if idle:
                    actions.append(_advance(idle))
                    idle = 0
                actions.extend(today)
            idle += 1
            _close_day(p, state)
        if idle:
            actions.append(_advance(idle))
        return actions

    # --- dynamics ---------------------------------------------------------------------------------------
    def operations(self, params: EcommerceParams) -> list[OperationSpec]:
        p = params
        product = {"product": ArgSpec(type="integer", description="product number", minimum=1,
                                      maximum=p.products)}
        days = {"first_day": ArgSpec(type="integer", description="first day of the range", minimum=1,
                                     maximum=p.horizon),
                "last_day": ArgSpec(type="integer", description=f"last day of the range (at most {MAX_RANGE} days)",
                                    minimum=1, maximum=p.horizon)}
        price_level = ArgSpec(type="integer", description="price level (1 is the cheapest)", minimum=1,
                              maximum=p.price_levels)
        ad_level = ArgSpec(type="integer", description="advertising level (1 is off)", minimum=1,
                           maximum=p.ad_levels)
        quantity = ArgSpec(type="integer", description="units", minimum=1, maximum=p.max_order)
        count = ArgSpec(type="integer", description="number of days to close", minimum=1, maximum=p.horizon)
        return [
            OperationSpec(name="probe_base_demand", kind="probe",
                          summary="the base demand of one product on a range of days", args={**product, **days}),
            OperationSpec(name="probe_costs", kind="probe",
                          summary="unit cost, fixed cost per order and holding cost per unit and day of one product",
                          args=product),
            OperationSpec(name="probe_lead_time", kind="probe", summary="days from ordering one product to arrival",
                          args=product),
            OperationSpec(name="probe_price_response", kind="probe",
                          summary="the price and demand multiplier of every price level of one product", args=product),
            OperationSpec(name="probe_ad_response", kind="probe",
                          summary="the daily cost and demand multiplier of every advertising level of one product",
                          args=product),
            OperationSpec(name="probe_store_terms", kind="probe",
                          summary="the daily fee, the bankruptcy rule and the salvage value of leftover stock"),
            OperationSpec(name="read_forecast", kind="info", decoy=True,
                          summary="the posted demand forecast of one product on a range of days",
                          args={**product, **days}),
            OperationSpec(name="view_account", kind="info",
                          summary="today's date, cash balance, days in the red, stock and current settings"),
            OperationSpec(name="view_pipeline", kind="info", summary="orders on the way and today's pending orders"),
            OperationSpec(name="set_price", kind="decision", summary="set the price level of one product",
                          args={**product, "level": price_level}),
            OperationSpec(name="set_ads", kind="decision", summary="set the advertising level of one product",
                          args={**product, "level": ad_level}),
            OperationSpec(name="order_stock", kind="decision", summary="add units to today's order of one product",
                          args={**product, "quantity": quantity}),
            OperationSpec(name="cancel_order", kind="decision", summary="cancel today's pending order of one product",
                          args=product),
            OperationSpec(name="advance_day", kind="clock",
                          summary="close today: serve demand, book costs, send today's orders"),
            OperationSpec(name="advance_days", kind="clock", summary="close several days in a row with the same "
                          "settings (orders only on the first)", args={"days": count}),
            OperationSpec(name="finish", kind="clock", summary="stop; the remaining days run on autopilot with "
                          "current prices, advertising off and no new orders"),
        ]

    def initial_state(self, params: EcommerceParams) -> dict[str, Any]:
        return _fresh_state(params)

    def apply(self, params: EcommerceParams, state: dict[str, Any], action: Action) -> dict[str, Any]:
        p, op, args = params, action.op, action.args
        n, T = p.products, p.horizon
        if op == "probe_base_demand" or op == "read_forecast":
            i = require_int(args, "product", 1, n) - 1
            first, last = self._range(args, T)
            if op == "read_forecast":
                return {"product": i + 1, "first_day": first, "forecast": p.forecast[i][first - 1:last],
                        "at_price_level": p.sticker_price_level[i], "at_ad_level": p.ad_levels // 2 + 1}
            return {"product": i + 1, "first_day": first, "base_demand": p.base_demand[i][first - 1:last]}
        if op in ("probe_costs", "probe_lead_time", "probe_price_response", "probe_ad_response"):
            i = require_int(args, "product", 1, n) - 1
            if op == "probe_costs":
                return {"product": i + 1, "unit_cost": p.unit_cost[i], "fixed_cost_per_order": p.fixed_cost[i],
                        "holding_cost_per_unit_per_day": p.holding_cost[i]}
            if op == "probe_lead_time":
                return {"product": i + 1, "lead_time_days": p.lead_time[i]}
            if op == "probe_price_response":
                return {"product": i + 1, "levels": [{"level": k + 1, "price": p.prices[i][k],
                                                      "demand_percent": p.price_response[i][k]}
                                                     for k in range(p.price_levels)],
                        "demand_rule": "floor(base demand * price percent * ad percent / 10000)"}
            return {"product": i + 1, "levels": [{"level": k + 1, "cost_per_day": p.ad_costs[i][k],
                                                  "demand_percent": p.ad_response[i][k]}
                                                 for k in range(p.ad_levels)]}
        if op == "probe_store_terms":
            return {"daily_fee": p.daily_fee, "bankrupt_after_negative_days": p.grace_days + 1,
                    "salvage_value_per_unit": 0, "initial_cash": p.initial_cash}
        if op == "view_account":
            return {"day": min(state["day"] + 1, T), "days_total": T, "cash": round(state["cash"], 6),
                    "negative_days_in_a_row": state["negative_days"], "stock": list(state["stock"]),
                    "price_level": [x + 1 for x in state["price"]], "ad_level": [x + 1 for x in state["ads"]],
                    "pending_orders": list(state["pending"]), "bankrupt": state["bankrupt"],
                    "finished": state["finished"]}
        if op == "view_pipeline":
            return {"on_the_way": [{"product": e[1] + 1, "arrives_day": e[0] + 1, "quantity": e[2]}
                                   for e in state["pipeline"]], "pending_today": list(state["pending"])}
        if op in ("set_price", "set_ads", "order_stock", "cancel_order", "advance_day", "advance_days", "finish"):
            return self._act(p, state, op, args)
        raise ActionError(f"unknown operation {op!r}")

    @staticmethod
    def _range(args: dict[str, Any], T: int) -> tuple[int, int]:
        first = require_int(args, "first_day", 1, T)
        last = require_int(args, "last_day", 1, T)
        if last < first:
            raise ActionError(f"last_day {last} is before first_day {first}")
        if last - first + 1 > MAX_RANGE:
            raise ActionError(f"a range may cover at most {MAX_RANGE} days, got {last - first + 1}")
        return first, last

    def _act(self, p: EcommerceParams, state: dict[str, Any], op: str, args: dict[str, Any]) -> dict[str, Any]:
        n, T = p.products, p.horizon
        if state["finished"]:
            raise ActionError("the run is over" + (" (bankrupt)" if state["bankrupt"] else ""))
        if op == "set_price" or op == "set_ads":
            i = require_int(args, "product", 1, n) - 1
            key, top = ("price", p.price_levels) if op == "set_price" else ("ads", p.ad_levels)
            level = require_int(args, "level", 1, top) - 1
            state[key][i] = level
            return {"product": i + 1, ("price_level" if key == "price" else "ad_level"): level + 1}
        if op == "order_stock":
            i = require_int(args, "product", 1, n) - 1
            quantity = require_int(args, "quantity", 1, p.max_order)
            arrival = state["day"] + p.lead_time[i]
            if arrival > T - 1:
                raise ActionError(f"an order placed today would arrive on day {arrival + 1}, after the last day {T}")
            total = state["pending"][i] + quantity
            if total > p.max_order:
                raise ActionError(f"today's order would total {total} units; the most per order is {p.max_order}")
            state["pending"][i] = total
            return {"product": i + 1, "pending_order": total}
        if op == "cancel_order":
            i = require_int(args, "product", 1, n) - 1
            if state["pending"][i] == 0:
                raise ActionError(f"there is no pending order of product {i + 1} today")
            state["pending"][i] = 0
            return {"product": i + 1, "pending_order": 0}
        if op == "advance_day" or op == "advance_days":
            days = 1 if op == "advance_day" else require_int(args, "days", 1, T)
            left = T - state["day"]
            if days > left:
                raise ActionError(f"only {left} day(s) are left to close")
            first = state["day"] + 1
            sold = [0] * n
            for _ in range(days):
                for i, s in enumerate(_close_day(p, state)):
                    sold[i] += s
                if state["finished"]:
                    break
            return self._report(state, first, sold)
        # finish
        first = state["day"] + 1
        _autopilot(p, state)
        return {**self._report(state, first, None), "autopilot": True}

    @staticmethod
    def _report(state: dict[str, Any], first: int, sold: list[int] | None) -> dict[str, Any]:
        report: dict[str, Any] = {"closed_days": [first, state["day"]], "cash": round(state["cash"], 6),
                                  "stock": list(state["stock"]), "negative_days_in_a_row": state["negative_days"],
                                  "bankrupt": state["bankrupt"], "finished": state["finished"]}
        if sold is not None:
            report["sold"] = sold
        if state["bankrupt"]:
            report["bankrupt_on_day"] = state["bankrupt_day"]
        return report

    def utility(self, params: EcommerceParams, state: dict[str, Any]) -> float:
        if state["finished"]:
            return float(state["cash"])
        rest = {**state, "stock": list(state["stock"]), "price": list(state["price"]), "ads": list(state["ads"]),
                "pending": list(state["pending"]), "pipeline": [list(e) for e in state["pipeline"]]}
        _autopilot(params, rest)
        return float(rest["cash"])

    # --- rendering facts --------------------------------------------------------------------------------
    def describe(self, params: EcommerceParams, vocab: dict[str, str]) -> str:
        p, v = params, vocab
        per = v["period"]
        rows = []
        for i in range(p.products):
            rows.append(
                f"{v['product'].capitalize()} {i + 1}: unit cost {_num(p.unit_cost[i])}, order fee "
                f"{_num(p.fixed_cost[i])}, holding {_num(p.holding_cost[i])}/unit/{per}, "
                f"lead time {p.lead_time[i]}; prices "
                f"{'/'.join(map(_num, p.prices[i]))} keep {'/'.join(map(str, p.price_response[i]))}% of "
                f"demand; ads {'/'.join(map(_num, p.ad_costs[i]))} per {per} lift it to "
                f"{'/'.join(map(str, p.ad_response[i]))}%; {v['sticker']} at price level {p.sticker_price_level[i]}; "
                f"base demand {per}s 1-{p.horizon}: {' '.join(map(str, p.base_demand[i]))}.")
        return (
            f"{p.horizon} {per}s; {p.products} {v['products']} share one cash balance, {_num(p.initial_cash)} "
            f"{v['currency']} at the start, no stock. Demand of a {v['product']} in a {per} = floor(base x price% x "
            f"ad% / 10000) at its current levels (persistent; they start at price level {p.price_levels // 2 + 1}, ad "
            f"level 1 = off); sales = min(demand, stock). Cash gets sales, pays ads, holding on stock left at each "
            f"{per}'s end, orders (fee + unit cost when placed; they arrive after the lead time, before sales, never "
            f"after the last {per}) and a fee of {_num(p.daily_fee)} per {per}. Negative cash at the end of more than "
            f"{p.grace_days} {per}s in a row is bankruptcy and ends the run. Leftover stock is worth nothing. "
            + " ".join(rows)
        )

    def secret_numbers(self, params: EcommerceParams) -> list[float]:
        p = params
        return [*(x for row in p.base_demand for x in row), *(x for row in p.prices for x in row),
                *(x for row in p.price_response for x in row), *(x for row in p.ad_costs for x in row if x),
                *(x for row in p.ad_response for x in row), *p.unit_cost, *p.fixed_cost, *p.holding_cost,
                *p.lead_time, p.daily_fee, p.initial_cash]

    def public_numbers(self, params: EcommerceParams) -> list[float]:
        p = params
        return [p.horizon, p.products, p.price_levels, p.ad_levels, p.max_order, MAX_RANGE, p.grace_days,
                p.grace_days + 1, 10000, *range(1, p.horizon + 1)]

    def probe_allowance(self, params: EcommerceParams) -> int:
        p = params
        return p.products * (math.ceil(p.horizon / MAX_RANGE) + 4) + 2


register(Ecommerce365())
