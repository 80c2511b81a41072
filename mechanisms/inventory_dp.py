"""inventory_dp: finite-horizon inventory over a fixed, hidden demand path (lost sales or backlog).

Parameters (all can be given as data):
- ``demand``: units demanded in each period (hidden; its length is the horizon T)
- ``forecast``: the "forecast sticker" per period (a decoy the default policy trusts)
- ``capacity``: most units the store can hold after a delivery; ``max_order``: most units per order
- ``initial_stock``; ``price`` per unit sold; ``unit_cost`` per unit ordered; ``fixed_cost`` per order
- ``holding_cost`` per unit left at the end of a period; ``shortage_penalty`` per unit of demand lost
- ``backlog``: if true, unmet demand waits (up to ``max_backlog`` units, ``backlog_cost`` per unit
  and period) instead of being lost; backlog still open after the last period is lost.
Solved exactly by backward Bellman recursion over (period, stock) with the demand path known (vectorised over the
stock x order grid). ``close_periods`` is the bulk decision: one call orders and closes several periods in a row.
"""

from __future__ import annotations

from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from mechanisms.base import ActionError, Mechanism, Solution, Tier
from mechanisms.facts import BUDGET_END, END, OBJECTIVE, Fact, probed, rule
from mechanisms.operations import Between, Observation, State, clock, decision, info, probe
from mechanisms.params import non_negative
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


def _period_step(p: InventoryParams, stock: int, quantity: int, demand: int) -> tuple[int, float]:
    """One period: the order arrives, demand (plus open backlog) is served, costs are booked."""
    available = max(stock, 0) + quantity
    need = demand + max(-stock, 0)
    served = min(available, need)
    unmet = need - served
    kept_backlog = min(unmet, p.max_backlog) if p.backlog else 0
    lost = unmet - kept_backlog
    new_stock = available - served if unmet == 0 else -kept_backlog
    profit = (
        p.price * served
        - p.unit_cost * quantity
        - (p.fixed_cost if quantity > 0 else 0.0)
        - p.holding_cost * max(new_stock, 0)
        - p.backlog_cost * kept_backlog
        - p.shortage_penalty * lost
    )
    return new_stock, profit


# what an agent believes of a cost it has not probed (no sticker posts it): a middling figure of the kind the
# family draws, never the instance's own value
PRIOR_PRICE, PRIOR_UNIT_COST, PRIOR_FIXED_COST, PRIOR_HOLDING_COST, PRIOR_PENALTY = 10.0, 5.0, 20.0, 2.0, 3.0
SCALAR_PROBES = ("probe_fixed_cost", "probe_unit_cost", "probe_price", "probe_holding_cost", "probe_shortage_terms")


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
    version = 1
    group = "trained"
    summary = "finite-horizon inventory over a hidden demand path; backward Bellman recursion"
    Params = InventoryParams
    size_range = (10, 120)  # storage capacity in units
    horizon_range = (3, 52)  # periods
    default_size = 20
    default_horizon = 6
    difficulty_grid = [(20, 6), (12, 4), (30, 8)]
    # measured (envs.difficulty): short runs at a wide store let one who looks up each demand and orders it do well
    # (easy); longer runs outlast that heuristic's turns (hard); at frontier half the probes fit the budget
    difficulty_tiers = {
        "easy": Tier(((40, 6), (30, 6), (40, 12)), 1.0),
        "medium": Tier(((12, 4), (20, 4), (20, 8)), 1.0),
        "hard": Tier(((16, 16), (30, 20), (40, 24)), 1.0),
        "frontier": Tier(((60, 24), (80, 30), (100, 40)), 0.5),
    }
    u0_band = (-3.0, 0.97)

    def sample(self, rng: np.random.Generator, size: int, horizon: int) -> InventoryParams:
        capacity = int(size)
        mean = rng.uniform(0.25, 0.6) * capacity
        demand = np.clip(np.round(rng.gamma(4.0, mean / 4.0, horizon)), 0, capacity).astype(int)
        bias = rng.choice([rng.uniform(0.45, 0.8), rng.uniform(1.3, 1.9)])
        forecast = np.clip(np.round(demand * bias + rng.normal(0, 0.1 * mean, horizon)), 0, capacity)
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

    def default_actions(self, params: InventoryParams) -> list[Action]:
        """Order up to the forecast sticker every period (trusts it, never probes), all periods in one call."""
        p = params
        return [Action(op="read_forecast", args={"period": 1}),
                Action(op="close_periods", args={"orders": _order_up_to(p, p.forecast)})]

    # --- dynamics -------------------------------------------------------------------------
    def initial_state(self, params: InventoryParams) -> dict[str, Any]:
        return {"period": 0, "stock": params.initial_stock, "pending": 0, "profit": 0.0,
                "ledger": [], "finished": False}

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
    def read_forecast(self, p: InventoryParams, state: State, period: Period) -> Observation:
        """the posted forecast of one period"""
        return {"period": period, "forecast": p.forecast[period - 1]}

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
            stock, profit = _period_step(p, state["stock"], q, p.demand[t])
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

    # --- facts, belief, heuristics ----------------------------------------------------------
    def facts(self, params: InventoryParams, vocab: dict[str, str]) -> list[Fact]:
        p, v = params, vocab
        T, per, cur = p.horizon, v["period"], v["currency"]
        demand = "; ".join(f"{t + 1}: {d}" for t, d in enumerate(p.demand))
        forecast = "; ".join(f"{t + 1}: {d}" for t, d in enumerate(p.forecast))
        if p.backlog:
            shortage = probed("shortage", "probe_shortage_terms",
                              f"Unmet demand waits for later deliveries, up to {p.max_backlog} {v['items']} at a "
                              f"time, at a waiting cost of {p.backlog_cost:g} {cur} per {v['item']} and {per}; "
                              f"demand beyond that is lost, at a lost-sale penalty of {p.shortage_penalty:g} {cur} "
                              f"per {v['item']}.", [p.max_backlog, p.backlog_cost, p.shortage_penalty])
        else:
            shortage = probed("shortage", "probe_shortage_terms",
                              f"Unmet demand is lost (nothing waits for later deliveries), at a lost-sale penalty "
                              f"of {p.shortage_penalty:g} {cur} per {v['item']}.", [p.shortage_penalty])
        return [
            rule("structure", f"There are {T} {per}s, numbered 1 to {T}. {v['place']} can hold at most "
                 f"{p.capacity} {v['items']} after a delivery, one {per}'s order is at most {p.max_order} "
                 f"{v['items']}, and the stock at the start is {p.initial_stock} "
                 f"{v['item'] if p.initial_stock == 1 else v['items']}.",
                 T, p.capacity, p.max_order, p.initial_stock),
            probed("demand", "probe_demand", f"The true demand for {v['items']}, {per} by {per}: {demand}.",
                   p.demand),
            probed("forecast", "read_forecast", f"The {v['sticker']} forecasts this demand (an outside estimate, "
                   f"not the true demand), {per} by {per}: {forecast}.", p.forecast),
            probed("price", "probe_price", f"Each {v['item']} sells for {p.price:g} {cur}.", [p.price]),
            probed("unit_cost", "probe_unit_cost", f"The {v['supplier']} charges {p.unit_cost:g} {cur} per "
                   f"{v['item']} ordered.", [p.unit_cost]),
            probed("fixed_cost", "probe_fixed_cost", f"Every {per} with an order pays a fee of {p.fixed_cost:g} "
                   f"{cur}.", [p.fixed_cost]),
            probed("holding_cost", "probe_holding_cost", f"Holding costs {p.holding_cost:g} {cur} per {v['item']} "
                   f"in stock at the end of a {per}.", [p.holding_cost]),
            shortage,
            rule("cut_to_fit", f"When several {per}s are closed in one call, an order that would take the stock "
                 f"above {p.capacity} {v['items']} is cut to what fits."),
            rule("timing", f"In each {per} the order arrives first; then the demand, and any shortage waiting from "
                 f"earlier {per}s, is served from stock; the {per}'s costs are booked when it closes."),
            rule("end_of_run", f"A shortage still waiting after the last {per} is lost, at the lost-sale penalty "
                 f"per {v['item']}."),
            rule(OBJECTIVE, f"Your result is the total profit over all {per}s, in {cur}: the price times the "
                 f"{v['items']} sold, minus the unit cost times the {v['items']} ordered, minus the fee of every "
                 f"{per} with an order, minus the holding cost of every {v['item']} in stock at the end of each "
                 f"{per}, minus the waiting cost of every {v['item']} of shortage waiting at the end of each {per}, "
                 f"minus the lost-sale penalty of every {v['item']} of demand lost (shortages still waiting after "
                 f"the last {per} included)."),
            rule(END, f"Closing the last {per} ends the run. Ending the run early lets the remaining {per}s run "
                 "without new orders."),
            rule(BUDGET_END, f"If the turns run out before the last {per} is closed, the remaining {per}s run "
                 f"without new orders (an order of the current {per} not yet closed is dropped), and the profit is "
                 "counted as above."),
        ]

    def probe_order(self, params: InventoryParams) -> list[Action]:
        """The five cost probes first (one call each, they shape every order), then the demand of each period,
        the largest forecast first."""
        p = params
        periods = sorted(range(1, p.horizon + 1), key=lambda t: (-p.forecast[t - 1], t))
        return [*(Action(op=op) for op in SCALAR_PROBES),
                *(Action(op="probe_demand", args={"period": t}) for t in periods)]

    def believed(self, params: InventoryParams, probed: list[Action]) -> InventoryParams:
        """Probed figures are true. An unprobed demand is its forecast, scaled by how far the probed demands were
        from their forecasts; an unprobed cost is a middling prior; unprobed shortage terms: demand is lost."""
        p = params
        done = {a.op for a in probed}
        seen = {a.args["period"] for a in probed if a.op == "probe_demand"}
        known_f = sum(p.forecast[t - 1] for t in seen)
        ratio = sum(p.demand[t - 1] for t in seen) / known_f if known_f > 0 else 1.0
        demand = [p.demand[t - 1] if t in seen else int(round(p.forecast[t - 1] * ratio))
                  for t in range(1, p.horizon + 1)]
        terms = "probe_shortage_terms" in done
        return InventoryParams(
            demand=demand, forecast=list(p.forecast), capacity=p.capacity, max_order=p.max_order,
            initial_stock=p.initial_stock,
            price=p.price if "probe_price" in done else PRIOR_PRICE,
            unit_cost=p.unit_cost if "probe_unit_cost" in done else PRIOR_UNIT_COST,
            fixed_cost=p.fixed_cost if "probe_fixed_cost" in done else PRIOR_FIXED_COST,
            holding_cost=p.holding_cost if "probe_holding_cost" in done else PRIOR_HOLDING_COST,
            shortage_penalty=p.shortage_penalty if terms else PRIOR_PENALTY,
            backlog=p.backlog if terms else False,
            max_backlog=p.max_backlog if terms else 0,
            backlog_cost=p.backlog_cost if terms else 0.0,
        )

    def heuristic_actions(self, params: InventoryParams) -> dict[str, list[Action]]:
        """lot_for_lot: each period, look up its true demand, then order exactly what it lacks and close it (no
        batching against the fee). forecast_pairs: trust the forecast, but order two periods' worth every other
        period to save fees (one call)."""
        p = params
        lot: list[Action] = []
        stock = p.initial_stock
        for t in range(p.horizon):
            q = min(max(p.demand[t] - max(stock, 0) + max(-stock, 0), 0), p.capacity - max(stock, 0), p.max_order)
            lot += [Action(op="probe_demand", args={"period": t + 1}),
                    Action(op="close_periods", args={"orders": [q]})]
            stock, _ = _period_step(p, stock, q, p.demand[t])
        pairs, stock = [], p.initial_stock
        for t in range(p.horizon):
            want = p.forecast[t] + (p.forecast[t + 1] if t + 1 < p.horizon else 0) if t % 2 == 0 else 0
            q = min(max(want - max(stock, 0), 0), p.capacity - max(stock, 0), p.max_order)
            pairs.append(q)
            stock, _ = _period_step(p, stock, q, p.demand[t])
        return {"lot_for_lot": lot, "forecast_pairs": [Action(op="close_periods", args={"orders": pairs})]}

    def secret_numbers(self, params: InventoryParams) -> list[float]:
        p = params
        extra = [p.max_backlog, p.backlog_cost] if p.backlog else []
        return [*p.demand, p.price, p.unit_cost, p.fixed_cost, p.holding_cost, p.shortage_penalty, *extra]

    def probe_allowance(self, params: InventoryParams) -> int:
        return params.horizon + 5

    def public_numbers(self, params: InventoryParams) -> list[float]:
        return [params.horizon, params.capacity, params.max_order, params.initial_stock,
                *range(1, params.horizon + 1)]


def _order_up_to(p: InventoryParams, targets: list[int]) -> list[int]:
    """Each period, order up to the target (within the capacity and the order limit)."""
    orders, stock = [], p.initial_stock
    for t in range(p.horizon):
        room = min(p.max_order, p.capacity - max(stock, 0))
        q = int(min(max(targets[t] - stock, 0), room))
        orders.append(q)
        stock, _ = _period_step(p, stock, q, p.demand[t])
    return orders


register(InventoryDP())
