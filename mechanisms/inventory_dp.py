"""inventory_dp: finite-horizon inventory over a fixed, hidden demand path (lost sales or backlog).

Parameters (all can be given as data):
- ``demand``: units demanded in each period (hidden; its length is the horizon T)
- ``forecast``: the "forecast sticker" per period (a decoy the default policy trusts), posted on one sheet
  (``read_forecasts``: every period in one call); the sampler draws it made before period 1, with a bias and an
  error that grows with the distance (FORECAST_SPREAD), so that choosing which periods' true demand to verify
  (``probe_demand``, one period a call) is the skill a tight budget asks for
- ``capacity``: most units the store can hold after a delivery; ``max_order``: most units per order
- ``initial_stock``; ``price`` per unit sold; ``unit_cost`` per unit ordered; ``fixed_cost`` per order
- ``holding_cost`` per unit left at the end of a period; ``shortage_penalty`` per unit of demand lost
- ``backlog``: if true, unmet demand waits (up to ``max_backlog`` units, ``backlog_cost`` per unit
  and period) instead of being lost; backlog still open after the last period is lost.
Solved exactly by backward Bellman recursion over (period, stock) with the demand path known (vectorised over the
stock x order grid). ``close_periods`` is the bulk decision: one call orders and closes several periods in a row.
The ending's ledger shows the total profit and its parts (sales, purchases, fees, holding, waiting, lost sales).
"""

from __future__ import annotations

from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from mechanisms.base import ActionError, Mechanism, Solution, Tier
from mechanisms.facts import BUDGET_END, END, OBJECTIVE, Fact, probed, rule
from mechanisms.operations import Between, Observation, State, clock, decision, info, probe
from mechanisms.params import non_negative
from mechanisms.players import Knowledge, Policy, Seat
from mechanisms.prose import a, figure, plural, there_are_numbered
from mechanisms.registry import register
from schemas.envspec import Action


class InventoryParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    demand: list[int] = Field(min_length=1, max_length=60)
    forecast: list[int]
    capacity: int = Field(ge=1, le=500)
    max_order: int = Field(ge=1, le=500)
    initial_stock: int = Field(ge=0)
    price: float = Field(ge=0)
    unit_cost: float = Field(ge=0)
    fixed_cost: float = Field(ge=0)
    holding_cost: float = Field(ge=0)
    shortage_penalty: float = Field(ge=0)
    backlog: bool = False
    max_backlog: int = Field(default=0, ge=0)
    backlog_cost: float = Field(default=0.0, ge=0)

    @model_validator(mode="after")
    def _shapes(self) -> InventoryParams:
        if len(self.forecast) != len(self.demand):
            raise ValueError("forecast must have one entry per period of demand")
        non_negative("demand and forecast", [*self.demand, *self.forecast])
        if self.initial_stock > self.capacity:
            raise ValueError("initial_stock cannot exceed capacity")
        if not self.backlog and self.max_backlog:
            raise ValueError("max_backlog is only meaningful with backlog=true")
        return self

    @property
    def horizon(self) -> int:
        return len(self.demand)


def _period_books(p: InventoryParams, stock: int, quantity: int, demand: int) -> tuple[int, dict[str, float]]:
    """One period: the order arrives, demand (plus open backlog) is served, costs are booked (each part of the
    period's profit under its ledger name: sales and costs, costs positive)."""
    available = max(stock, 0) + quantity
    need = demand + max(-stock, 0)
    served = min(available, need)
    unmet = need - served
    kept_backlog = min(unmet, p.max_backlog) if p.backlog else 0
    lost = unmet - kept_backlog
    new_stock = available - served if unmet == 0 else -kept_backlog
    return new_stock, {
        "sales revenue": p.price * served,
        "purchase costs": p.unit_cost * quantity,
        "order fees": p.fixed_cost if quantity > 0 else 0.0,
        "holding costs": p.holding_cost * max(new_stock, 0),
        "waiting costs": p.backlog_cost * kept_backlog,
        "lost-sale penalties": p.shortage_penalty * lost,
    }


def _period_step(p: InventoryParams, stock: int, quantity: int, demand: int) -> tuple[int, float]:
    """One period (see _period_books): the stock after it and its profit."""
    new_stock, books = _period_books(p, stock, quantity, demand)
    return new_stock, _profit(books)


def _profit(books: dict[str, float]) -> float:
    return (books["sales revenue"] - books["purchase costs"] - books["order fees"] - books["holding costs"]
            - books["waiting costs"] - books["lost-sale penalties"])


BOOKS = ("sales revenue", "purchase costs", "order fees", "holding costs", "waiting costs", "lost-sale penalties")


# what an agent believes of a cost it has not probed (no sticker posts it): a middling figure of the kind the
# family draws, never the instance's own value
PRIOR_PRICE, PRIOR_UNIT_COST, PRIOR_FIXED_COST, PRIOR_HOLDING_COST, PRIOR_PENALTY = 10.0, 5.0, 20.0, 2.0, 3.0
PRIOR_DEMAND_SHARE = 0.4  # ... and of a period's demand without the forecasts: this share of the capacity
# the spread (standard deviation of the log error) of the posted forecast: at period 1, and added by the last period
FORECAST_SPREAD = (0.05, 1.2)
# a believed plan is played in this many calls, re-planned before each from what the last showed
PLAN_CLOSES = 3
SCALAR_PROBES = ("probe_shortage_terms", "probe_fixed_cost", "probe_holding_cost", "probe_price", "probe_unit_cost")


def _bellman(p: InventoryParams) -> tuple[list[np.ndarray], np.ndarray, int]:
    """Backward recursion over (period, stock) on the stock x order grid: (best order per period and stock, the
    value of each starting stock, the offset of stock 0)."""
    low = -p.max_backlog if p.backlog else 0
    stocks = np.arange(low, p.capacity + 1)
    offset = -low
    orders = np.arange(0, p.max_order + 1)
    on_hand = np.maximum(stocks, 0)[:, None]
    available = on_hand + orders[None, :]
    feasible = available <= p.capacity
    waiting = np.maximum(-stocks, 0)[:, None]
    value_next = -p.shortage_penalty * np.maximum(-stocks, 0).astype(float)
    decisions: list[np.ndarray] = []
    fixed = np.where(orders > 0, p.fixed_cost, 0.0)[None, :]
    for t in reversed(range(p.horizon)):
        need = p.demand[t] + waiting
        served = np.minimum(available, need)
        unmet = need - served
        kept = np.minimum(unmet, p.max_backlog) if p.backlog else np.zeros_like(unmet)
        lost = unmet - kept
        new_stock = np.where(unmet == 0, available - served, -kept)
        profit = (p.price * served - p.unit_cost * orders[None, :] - fixed
                  - p.holding_cost * np.maximum(new_stock, 0) - p.backlog_cost * kept - p.shortage_penalty * lost)
        index = np.clip(new_stock + offset, 0, len(stocks) - 1)
        total = np.where(feasible, profit + value_next[index], -np.inf)
        best = total.max(axis=1)
        choice = np.argmax(total >= best[:, None] - 1e-9, axis=1)  # the smallest order within a hair of the best
        decisions.append(choice)
        value_next = best
    decisions.reverse()
    return decisions, value_next, offset


Period = Annotated[int, Between(1, "horizon"), "period number"]  # a period number, 1..T
# a bulk close: one order per period from the current one, each 0..max_order, at most T of them
Orders = Annotated[list[int], Between(0, "max_order", max_items="horizon", distinct=False),
                   "units to order in each period to close, in order (0: none)"]


def _running(state: dict[str, Any]) -> None:
    """A decision or clock step needs the run still going."""
    if state["finished"]:
        raise ActionError("the run is over")


class InventoryDP(Mechanism[InventoryParams]):
    id = "inventory_dp"
    version = 3  # issue 27: the prose is part of the spec
    group = "trained"
    summary = "finite-horizon inventory over a hidden demand path; backward Bellman recursion"
    Params = InventoryParams
    size_range = (10, 120)  # storage capacity in units
    horizon_range = (3, 52)  # periods
    default_size = 20
    default_horizon = 6
    difficulty_grid = [(20, 6), (12, 4), (30, 8)]
    # measured (envs.difficulty, issue 26): short runs where every demand can be looked up let a naive agent do well
    # (easy); at medium most of the demands fit the budget; at hard about half, and one who looks up the periods in
    # order and trusts the forecasts for the rest still does fairly; at frontier under a third fit, and looking up
    # the far periods (the least reliable forecasts) beats looking them up in order
    difficulty_tiers = {
        "easy": Tier(((40, 12), (50, 10), (60, 12)), 1.0),
        "medium": Tier(((40, 16), (30, 16), (50, 20)), 0.6),
        "hard": Tier(((60, 24), (80, 30), (100, 36)), 0.4),
        "frontier": Tier(((80, 48), (100, 52), (120, 44)), 0.17),
    }
    u0_band = (-3.0, 0.97)

    def sample(self, rng: np.random.Generator, size: int, horizon: int) -> InventoryParams:
        capacity = int(size)
        mean = rng.uniform(0.25, 0.6) * capacity
        demand = np.clip(np.round(rng.gamma(4.0, mean / 4.0, horizon)), 0, capacity).astype(int)
        bias = rng.choice([rng.uniform(0.45, 0.8), rng.uniform(1.3, 1.9)])
        # made before period 1: the further out a period, the less reliable its forecast
        spread = FORECAST_SPREAD[0] + FORECAST_SPREAD[1] * (np.arange(horizon) / max(horizon - 1, 1)) ** 2
        noise = np.exp(rng.normal(0, 1, horizon) * spread - spread**2 / 2)  # mean one: the bias is the bias
        forecast = np.clip(np.round(demand * bias * noise + rng.normal(0, 0.05 * mean, horizon)), 0, capacity)
        backlog = bool(rng.random() < 0.4)
        unit_cost = float(rng.integers(2, 8))
        price = unit_cost + float(rng.integers(3, 10))
        return InventoryParams(
            demand=demand.tolist(),
            forecast=forecast.astype(int).tolist(),
            capacity=capacity,
            max_order=capacity,
            initial_stock=int(rng.integers(0, capacity // 3 + 1)),
            price=price,
            unit_cost=unit_cost,
            fixed_cost=float(rng.integers(5, 40)),
            holding_cost=float(rng.integers(1, 4)),
            shortage_penalty=float(rng.integers(1, 6)),
            backlog=backlog,
            max_backlog=int(rng.integers(1, capacity // 2 + 2)) if backlog else 0,
            backlog_cost=float(rng.integers(1, 3)) if backlog else 0.0,
        )

    def solve(self, params: InventoryParams) -> Solution:
        p = params
        decisions, value, offset = _bellman(p)
        orders = []
        stock = p.initial_stock
        for t in range(p.horizon):
            q = int(decisions[t][stock + offset])
            orders.append(q)
            stock, _ = _period_step(p, stock, q, p.demand[t])
        u_star = float(value[p.initial_stock + offset])
        # every period but the last in one call, then the last (a plan whose first call does not end the run)
        actions = [Action(op="close_periods", args={"orders": part}) for part in (orders[:-1], orders[-1:]) if part]
        return Solution(u_star, actions, "backward Bellman recursion",
                        {"states": len(value) * p.horizon, "orders": orders})

    def default_policy(self, seat: Seat) -> None:
        """Reads the posted forecasts and trusts them: orders up to each period's forecast, the stock followed as
        the forecasts predict it, every period in one call (never verifies a figure)."""
        seat.call("read_forecasts")
        public = seat.known.public
        forecast = _posted(seat.known) or [0] * public["periods"]
        seat.call("close_periods", orders=_order_up_to(public, forecast, forecast))

    # --- dynamics -------------------------------------------------------------------------
    def initial_state(self, params: InventoryParams) -> dict[str, Any]:
        return {"period": 0, "stock": params.initial_stock, "pending": 0, "profit": 0.0,
                "books": dict.fromkeys(BOOKS, 0.0), "ledger": [], "finished": False}

    @probe
    def probe_demand(self, p: InventoryParams, state: State, period: Period) -> Observation:
        """true demand of one period"""
        return {"period": period, "demand": p.demand[period - 1]}

    @probe
    def probe_price(self, p: InventoryParams, state: State) -> Observation:
        """selling price per unit"""
        return {"price": p.price}

    @probe
    def probe_unit_cost(self, p: InventoryParams, state: State) -> Observation:
        """purchase cost per unit ordered"""
        return {"unit cost": p.unit_cost}

    @probe
    def probe_fixed_cost(self, p: InventoryParams, state: State) -> Observation:
        """fixed charge per order placed"""
        return {"order fee": p.fixed_cost}

    @probe
    def probe_holding_cost(self, p: InventoryParams, state: State) -> Observation:
        """cost per unit held overnight"""
        return {"holding cost": p.holding_cost}

    @probe
    def probe_shortage_terms(self, p: InventoryParams, state: State) -> Observation:
        """what happens to unmet demand and what it costs"""
        if p.backlog:
            return {"unmet demand": "waits for later deliveries", "most waiting": p.max_backlog,
                    "waiting cost": p.backlog_cost, "lost-sale penalty": p.shortage_penalty}
        return {"unmet demand": "is lost", "lost-sale penalty": p.shortage_penalty}

    @info(decoy=True, estimates="demand")
    def read_forecasts(self, p: InventoryParams, state: State) -> Observation:
        """the posted forecast of every period: outside estimates of the demand, not the true demand"""
        return {"forecasts": {f"period {t + 1}": f for t, f in enumerate(p.forecast)}}

    @info
    def check_stock(self, p: InventoryParams, state: State) -> Observation:
        """current period, stock and pending order"""
        return {"period": min(state["period"] + 1, p.horizon), "periods": p.horizon, "stock": state["stock"],
                "pending order": state["pending"], "profit so far": round(state["profit"], 6),
                "finished": state["finished"]}

    @info
    def view_ledger(self, p: InventoryParams, state: State) -> Observation:
        """what happened in past periods"""
        return {"ledger": list(state["ledger"])}

    @decision
    def place_order(self, p: InventoryParams, state: State,
                    quantity: Annotated[int, Between(1, "max_order")]) -> Observation:
        """add units to this period's order

        Args:
            quantity: units
        """
        _running(state)
        total = state["pending"] + quantity
        if total > p.max_order:
            raise ActionError(f"the order would total {total}; the most per period is {p.max_order}")
        if max(state["stock"], 0) + total > p.capacity:
            raise ActionError(f"stock plus order would exceed the storage capacity of {p.capacity}")
        state["pending"] = total
        return {"pending order": total}

    @decision
    def cancel_order(self, p: InventoryParams, state: State) -> Observation:
        """cancel this period's pending order"""
        _running(state)
        state["pending"] = 0
        return {"pending order": 0}

    @clock
    def advance_period(self, p: InventoryParams, state: State) -> Observation:
        """receive the order, serve demand and close the period"""
        _running(state)
        return self._close(p, state, [state["pending"]])

    @clock
    def close_periods(self, p: InventoryParams, state: State, orders: Orders) -> Observation:
        """order and close several periods in a row, one order per period"""
        _running(state)
        left = p.horizon - state["period"]
        if len(orders) > left:
            raise ActionError(f"only {left} period(s) are left to close, got {len(orders)} orders")
        return self._close(p, state, [state["pending"] + orders[0], *orders[1:]])

    @clock
    def finish(self, p: InventoryParams, state: State) -> Observation:
        """stop; remaining periods run with no orders"""
        _running(state)
        state["finished"] = True
        return {"finished": True, "total profit": round(self.utility(p, state), 6)}

    def _close(self, p: InventoryParams, state: dict[str, Any], orders: list[int]) -> dict[str, Any]:
        """Close one period per order, booking each as a ledger line; report the periods' profit."""
        closed = []
        for q in orders:
            t = state["period"]
            q = min(q, p.max_order, p.capacity - max(state["stock"], 0))  # cut to what the storage holds
            stock, books = _period_books(p, state["stock"], q, p.demand[t])
            profit = _profit(books)
            for key, amount in books.items():
                state["books"][key] += amount
            line = {"period": t + 1, "ordered": q, "demand": p.demand[t], "stock after": stock,
                    "profit": round(profit, 6)}
            state["ledger"].append(line)
            closed.append(line)
            state.update(period=t + 1, stock=stock, pending=0, profit=state["profit"] + profit)
        state["finished"] = state["period"] >= p.horizon
        report = {"closed": closed, "profit of these periods": round(sum(x["profit"] for x in closed), 6),
                  "profit so far": round(state["profit"], 6), "stock": state["stock"], "finished": state["finished"]}
        if state["finished"]:
            report["total profit"] = round(self.utility(p, state), 6)
        return report

    def utility(self, params: InventoryParams, state: dict[str, Any]) -> float:
        stock, total = state["stock"], state["profit"]
        for t in range(state["period"], params.horizon):
            stock, profit = _period_step(params, stock, 0, params.demand[t])
            total += profit
        return float(total - params.shortage_penalty * max(-stock, 0))

    def ledger(self, params: InventoryParams, state: dict[str, Any]) -> dict[str, Any]:
        """The run's books: every part of the profit (the periods not closed run without orders, a shortage still
        waiting at the end is lost), the total profit and the stock left."""
        p = params
        books, stock = dict(state["books"]), state["stock"]
        for t in range(state["period"], p.horizon):
            stock, part = _period_books(p, stock, 0, p.demand[t])
            for key, amount in part.items():
                books[key] += amount
        books["lost-sale penalties"] += p.shortage_penalty * max(-stock, 0)
        return {"periods closed with your orders": state["period"], **books,
                "total profit": self.utility(params, state), "stock": max(stock, 0)}

    # --- facts, belief, heuristics ----------------------------------------------------------
    def facts(self, params: InventoryParams, vocab: dict[str, str]) -> list[Fact]:
        p, v = params, vocab
        T, per, cur = p.horizon, v["period"], v["currency"]
        demand = "; ".join(f"{t + 1}: {d}" for t, d in enumerate(p.demand))
        forecast = "; ".join(f"{t + 1}: {d}" for t, d in enumerate(p.forecast))
        if p.backlog:
            shortage = probed("shortage", "probe_shortage_terms",
                              f"Unmet demand waits for later deliveries, up to {p.max_backlog} {v['items']} at a "
                              f"time, at a waiting cost of {figure(p.backlog_cost)} {cur} per {v['item']} and {per}; "
                              f"demand beyond that is lost, at a lost-sale penalty of "
                              f"{figure(p.shortage_penalty)} {cur} "
                              f"per {v['item']}.", [p.max_backlog, p.backlog_cost, p.shortage_penalty])
        else:
            shortage = probed("shortage", "probe_shortage_terms",
                              f"Unmet demand is lost (nothing waits for later deliveries), at a lost-sale penalty "
                              f"of {figure(p.shortage_penalty)} {cur} per {v['item']}.", [p.shortage_penalty])
        return [
            rule("structure", f"{there_are_numbered(T, per)}. {v['place']} can hold at most "
                 f"{p.capacity} {v['items']} after a delivery, one {per}'s order is at most {p.max_order} "
                 f"{v['items']}, and the stock at the start is {p.initial_stock} "
                 f"{v['item'] if p.initial_stock == 1 else v['items']}.",
                 T, p.capacity, p.max_order, p.initial_stock),
            probed("demand", "probe_demand", f"The true demand for {v['items']}, {per} by {per}: {demand}.",
                   p.demand),
            probed("forecast", "read_forecasts", f"The {v['source']} forecasts this demand (an outside estimate, "
                   f"not the true demand), {per} by {per}: {forecast}.", p.forecast),
            rule("forecast_reliability", f"The {v['source']}'s forecasts were all made before {per} 1: the "
                 f"further out {a(per)}, the less reliable its forecast."),
            probed("price", "probe_price", f"Each {v['item']} sells for {figure(p.price)} {cur}.", [p.price]),
            probed("unit_cost", "probe_unit_cost", f"The {v['supplier']} charges {figure(p.unit_cost)} {cur} per "
                   f"{v['item']} ordered.", [p.unit_cost]),
            probed("fixed_cost", "probe_fixed_cost", f"Every {per} with an order pays a fee of {figure(p.fixed_cost)} "
                   f"{cur}.", [p.fixed_cost]),
            probed("holding_cost", "probe_holding_cost", f"Holding costs {figure(p.holding_cost)} {cur} per "
                   f"{v['item']} in stock at the end of {a(per)}.", [p.holding_cost]),
            shortage,
            rule("cut_to_fit", f"When several {plural(per)} are closed in one call, an order that would take the stock "
                 f"above {p.capacity} {v['items']} is cut to what fits."),
            rule("timing", f"In each {per} the order arrives first; then the demand, and any shortage waiting from "
                 f"earlier {plural(per)}, is served from stock; the {per}'s costs are booked when it closes."),
            rule("end_of_run", f"A shortage still waiting after the last {per} is lost, at the lost-sale penalty "
                 f"per {v['item']}."),
            rule(OBJECTIVE, f"Your result is the total profit over all {plural(per)}, in {cur}: the price times the "
                 f"{v['items']} sold, minus the unit cost times the {v['items']} ordered, minus the fee of every "
                 f"{per} with an order, minus the holding cost of every {v['item']} in stock at the end of each "
                 f"{per}, minus the waiting cost of every {v['item']} of shortage waiting at the end of each {per}, "
                 f"minus the lost-sale penalty of every {v['item']} of demand lost (shortages still waiting after "
                 f"the last {per} included)."),
            rule(END, f"Closing the last {per} ends the run. Ending the run early lets the remaining {plural(per)} run "
                 "without new orders."),
            rule(BUDGET_END, f"If the turns run out before the last {per} is closed, the remaining {plural(per)} run "
                 f"without new orders (an order of the current {per} not yet closed is dropped), and the profit is "
                 "counted as above."),
        ]

    def public_view(self, params: InventoryParams) -> dict[str, Any]:
        p = params
        return {"periods": p.horizon, "capacity": p.capacity, "max_order": p.max_order,
                "initial_stock": p.initial_stock}

    def probe_order(self, known: Knowledge) -> list[Action]:
        """The demand of period 1 (its forecast is the most reliable: the best read of the forecasts' bias), then of
        the others, the farthest first (a forecast's error grows with how far out the period is), then the cost
        probes (one call each: the middling priors are seldom far off, a period's demand can be)."""
        T = known.public["periods"]
        forecast = _posted(known) or [0] * T
        periods = [1, *sorted(range(2, T + 1), key=lambda t: (-t, -forecast[t - 1]))]
        return [*(Action(op="probe_demand", args={"period": t}) for t in periods),
                *(Action(op=op) for op in SCALAR_PROBES)]

    def believed(self, known: Knowledge) -> InventoryParams:
        """Verified figures are true (a closed period's demand too). An unverified demand is its posted forecast,
        scaled by how far the verified demands were from their forecasts (without the sheet: the verified mean, or a
        middling share of the capacity); an unverified cost is a middling prior; unverified shortage terms: demand
        is lost."""
        public = known.public
        T = public["periods"]
        seen = _verified(known)
        posted = _posted(known)
        if posted is None:
            guess = sum(seen.values()) / len(seen) if seen else PRIOR_DEMAND_SHARE * public["capacity"]
            posted = [int(round(guess))] * T
        # the bias, read from the verified periods, the nearest (most reliable) weighing most
        known_f = sum(posted[t - 1] / t**2 for t in seen)
        ratio = sum(d / t**2 for t, d in seen.items()) / known_f if known_f > 0 else 1.0
        demand = [seen[t] if t in seen else int(round(posted[t - 1] * ratio)) for t in range(1, T + 1)]

        def figure(op: str, key: str, prior: float) -> float:
            seen_op = known.latest(op)
            return float(seen_op[key]) if seen_op is not None else prior

        terms = known.latest("probe_shortage_terms")
        backlog = terms is not None and "most waiting" in terms
        return InventoryParams(
            demand=demand, forecast=list(posted), capacity=public["capacity"], max_order=public["max_order"],
            initial_stock=public["initial_stock"],
            price=figure("probe_price", "price", PRIOR_PRICE),
            unit_cost=figure("probe_unit_cost", "unit cost", PRIOR_UNIT_COST),
            fixed_cost=figure("probe_fixed_cost", "order fee", PRIOR_FIXED_COST),
            holding_cost=figure("probe_holding_cost", "holding cost", PRIOR_HOLDING_COST),
            shortage_penalty=float(terms["lost-sale penalty"]) if terms is not None else PRIOR_PENALTY,
            backlog=backlog,
            max_backlog=int(terms["most waiting"]) if backlog else 0,
            backlog_cost=float(terms["waiting cost"]) if backlog else 0.0,
        )

    def planned_calls(self, known: Knowledge, belief: InventoryParams) -> list[Action]:
        """The believed plan in PLAN_CLOSES calls (act_on_belief re-plans before each from what the last one showed)."""
        orders = self.solve(belief).facts["orders"]
        return [Action(op="close_periods", args={"orders": orders[start:end]})
                for start, end in _chunks(len(orders))]

    def act_on_belief(self, seat: Seat, belief: InventoryParams) -> None:
        """Close the periods in PLAN_CLOSES calls; before each, re-plan the periods left from the stock the last call
        left and what it showed (the closed periods' demand, a better read of the forecasts' bias). The last turn
        closes every period left."""
        T = seat.known.public["periods"]
        period, stock = 0, seat.known.public["initial_stock"]
        ends = [end for _, end in _chunks(T)]
        while period < T and not seat.over:
            orders = self.solve(_remaining(belief, period, stock)).facts["orders"]
            end = T if seat.turns_left <= 1 else next(e for e in ends if e > period)
            closed = seat.call("close_periods", orders=orders[:end - period])
            if closed is None or "error" in closed:
                return
            period, stock = end, closed["stock"]
            belief = self.believed(seat.known)

    def heuristic_policies(self) -> dict[str, Policy]:
        """lot_for_lot: each period, look up its true demand, then order exactly what it lacks and close it (no
        batching against the fee; two turns a period). forecast_pairs: trust the posted forecasts, but order two
        periods' worth every other period to save fees (one call). look_then_trust: read the forecasts, look up the
        periods' true demand in order while the turns last, trust the forecasts for the rest and order lot for lot in
        one call (the naive prober without its costs, its read of the bias and its re-planning)."""

        def lot_for_lot(seat: Seat) -> None:
            public = seat.known.public
            stock = public["initial_stock"]
            for t in range(1, public["periods"] + 1):
                seen = seat.call("probe_demand", period=t)
                if seen is None:
                    return
                need = seen.get("demand", 0) + max(-stock, 0)
                room = min(public["max_order"], public["capacity"] - max(stock, 0))
                closed = seat.call("close_periods", orders=[min(max(need - max(stock, 0), 0), room)])
                if closed is None:
                    return
                stock = closed.get("stock", stock)

        def forecast_pairs(seat: Seat) -> None:
            seat.call("read_forecasts")
            public = seat.known.public
            forecast = _posted(seat.known) or [0] * public["periods"]
            T = len(forecast)
            targets = [forecast[t] + (forecast[t + 1] if t + 1 < T else 0) if t % 2 == 0 else 0 for t in range(T)]
            seat.call("close_periods", orders=_order_up_to(public, targets, forecast, top_up_only=True))

        def look_then_trust(seat: Seat) -> None:
            seat.call("read_forecasts")
            public = seat.known.public
            demand = _posted(seat.known) or [0] * public["periods"]
            for t in range(1, len(demand) + 1):
                if seat.turns_left <= 1:
                    break
                seen = seat.call("probe_demand", period=t)
                demand[t - 1] = seen.get("demand", demand[t - 1]) if seen else demand[t - 1]
            seat.call("close_periods", orders=_order_up_to(public, demand, demand))

        return {"lot_for_lot": lot_for_lot, "forecast_pairs": forecast_pairs, "look_then_trust": look_then_trust}

    def secret_numbers(self, params: InventoryParams) -> list[float]:
        p = params
        extra = [p.max_backlog, p.backlog_cost] if p.backlog else []
        return [*p.demand, p.price, p.unit_cost, p.fixed_cost, p.holding_cost, p.shortage_penalty, *extra]

    def probe_allowance(self, params: InventoryParams) -> int:
        return params.horizon + 5

    def public_numbers(self, params: InventoryParams) -> list[float]:
        return [params.horizon, params.capacity, params.max_order, params.initial_stock,
                *range(1, params.horizon + 1)]


def _chunks(T: int) -> list[tuple[int, int]]:
    """The periods a believed plan closes per call: PLAN_CLOSES spans as even as they come (fewer when T is short)."""
    bounds = sorted({round(k * T / PLAN_CLOSES) for k in range(PLAN_CLOSES + 1)})
    return list(zip(bounds, bounds[1:], strict=False))


def _remaining(belief: InventoryParams, period: int, stock: int) -> InventoryParams:
    """The believed run from a period on, from the stock now (a shortage waiting joins the first period's demand:
    it is served, or waits or is lost, as that period's demand would be)."""
    demand = list(belief.demand[period:])
    demand[0] += max(-stock, 0)
    return belief.model_copy(update={"demand": demand, "forecast": list(belief.forecast[period:]),
                                     "initial_stock": max(stock, 0)})


def _posted(known: Knowledge) -> list[int] | None:
    """The posted forecasts, period by period (None when the sheet was not read)."""
    sheet = known.latest("read_forecasts")
    if sheet is None:
        return None
    return [int(sheet["forecasts"][f"period {t}"]) for t in range(1, known.public["periods"] + 1)]


def _verified(known: Knowledge) -> dict[int, int]:
    """The true demands an agent has seen, by period: looked up, or shown when a period closed."""
    seen = {obs["period"]: int(obs["demand"]) for _, obs in known.observations("probe_demand")}
    for op in ("close_periods", "advance_period"):
        for _, obs in known.observations(op):
            seen.update((line["period"], int(line["demand"])) for line in obs["closed"])
    return seen


def _order_up_to(public: dict[str, Any], targets: list[int], expected: list[int], top_up_only: bool = False
                 ) -> list[int]:
    """Each period, order up to the target (within the capacity and the order limit), the stock followed as the
    `expected` demand would leave it; with `top_up_only`, a period whose target is 0 orders nothing."""
    orders, stock = [], public["initial_stock"]
    for t, target in enumerate(targets):
        room = min(public["max_order"], public["capacity"] - max(stock, 0))
        q = 0 if top_up_only and target == 0 else int(min(max(target - stock, 0), room))
        orders.append(q)
        stock = max(stock, 0) + q - expected[t]  # a shortage is taken as lost
        stock = max(stock, 0)
    return orders


register(InventoryDP())
