"""inventory_dp: finite-horizon inventory over a fixed, hidden demand path (lost sales or backlog).

Parameters (all can be given as data):
- ``demand``: units demanded in each period (hidden; its length is the horizon T)
- ``forecast``: the "forecast sticker" per period (a decoy the default policy trusts)
- ``capacity``: most units the store can hold after a delivery; ``max_order``: most units per order
- ``initial_stock``; ``price`` per unit sold; ``unit_cost`` per unit ordered; ``fixed_cost`` per order
- ``holding_cost`` per unit left at the end of a period; ``shortage_penalty`` per unit of demand lost
- ``backlog``: if true, unmet demand waits (up to ``max_backlog`` units, ``backlog_cost`` per unit
  and period) instead of being lost; backlog still open after the last period is lost.
Solved exactly by backward Bellman recursion over (period, stock) with the demand path known.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from mechanisms.base import ActionError, Mechanism, Solution, require_int
from mechanisms.registry import register
from schemas.envspec import Action, ArgSpec, OperationSpec


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
        if min(self.demand) < 0 or min(self.forecast) < 0:
            raise ValueError("demand and forecast must be non-negative")
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


class InventoryDP(Mechanism[InventoryParams]):
    id = "inventory_dp"
    version = 1
    group = "trained"
    summary = "finite-horizon inventory over a hidden demand path; backward Bellman recursion"
    Params = InventoryParams
    size_range = (10, 60)  # storage capacity in units
    horizon_range = (3, 24)  # periods
    default_size = 20
    default_horizon = 6
    difficulty_grid = [(20, 6), (12, 4), (30, 8)]
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
        low = -p.max_backlog if p.backlog else 0
        stocks = list(range(low, p.capacity + 1))
        offset = -low
        value_next = np.array([-p.shortage_penalty * max(-s, 0) for s in stocks], dtype=float)
        decisions: list[np.ndarray] = []
        for t in reversed(range(p.horizon)):
            value = np.full(len(stocks), -np.inf)
            best = np.zeros(len(stocks), dtype=int)
            for i, s in enumerate(stocks):
                room = min(p.max_order, p.capacity - max(s, 0))
                for q in range(room + 1):
                    s_next, profit = _period_step(p, s, q, p.demand[t])
                    candidate = profit + value_next[s_next + offset]
                    if candidate > value[i] + 1e-12:
                        value[i], best[i] = candidate, q
            decisions.append(best)
            value_next = value
        decisions.reverse()
        actions: list[Action] = []
        stock = p.initial_stock
        for t in range(p.horizon):
            q = int(decisions[t][stock + offset])
            if q > 0:
                actions.append(Action(op="place_order", args={"quantity": q}))
            actions.append(Action(op="advance_period"))
            stock, _ = _period_step(p, stock, q, p.demand[t])
        u_star = float(value_next[p.initial_stock + offset])
        return Solution(u_star, actions, "backward Bellman recursion", {"states": len(stocks) * p.horizon})

    def default_actions(self, params: InventoryParams) -> list[Action]:
        """Order up to the forecast sticker every period (trusts it, never probes)."""
        p = params
        actions = [Action(op="read_forecast", args={"period": 1})]
        stock = p.initial_stock
        for t in range(p.horizon):
            room = min(p.max_order, p.capacity - max(stock, 0))
            q = int(min(max(p.forecast[t] - stock, 0), room))
            if q > 0:
                actions.append(Action(op="place_order", args={"quantity": q}))
            actions.append(Action(op="advance_period"))
            stock, _ = _period_step(p, stock, q, p.demand[t])
        return actions

    def operations(self, params: InventoryParams) -> list[OperationSpec]:
        period = {"period": ArgSpec(type="integer", description="period number", minimum=1,
                                    maximum=params.horizon)}
        quantity = {"quantity": ArgSpec(type="integer", description="units", minimum=1,
                                        maximum=params.max_order)}
        return [
            OperationSpec(name="probe_demand", kind="probe", summary="true demand of one period", args=period),
            OperationSpec(name="probe_price", kind="probe", summary="selling price per unit"),
            OperationSpec(name="probe_unit_cost", kind="probe", summary="purchase cost per unit ordered"),
            OperationSpec(name="probe_fixed_cost", kind="probe", summary="fixed charge per order placed"),
            OperationSpec(name="probe_holding_cost", kind="probe", summary="cost per unit held overnight"),
            OperationSpec(name="probe_shortage_terms", kind="probe",
                          summary="what happens to unmet demand and what it costs"),
            OperationSpec(name="read_forecast", kind="info", summary="the posted forecast of one period",
                          args=period, decoy=True),
            OperationSpec(name="check_stock", kind="info", summary="current period, stock and pending order"),
            OperationSpec(name="view_ledger", kind="info", summary="what happened in past periods"),
            OperationSpec(name="place_order", kind="decision", summary="add units to this period's order",
                          args=quantity),
            OperationSpec(name="cancel_order", kind="decision", summary="cancel this period's pending order"),
            OperationSpec(name="advance_period", kind="clock",
                          summary="receive the order, serve demand and close the period"),
            OperationSpec(name="finish", kind="clock", summary="stop; remaining periods run with no orders"),
        ]

    def initial_state(self, params: InventoryParams) -> dict[str, Any]:
        return {"period": 0, "stock": params.initial_stock, "pending": 0, "profit": 0.0,
                "ledger": [], "finished": False}

    def apply(self, params: InventoryParams, state: dict[str, Any], action: Action) -> dict[str, Any]:
        p, op, args = params, action.op, action.args
        if op == "probe_demand":
            t = require_int(args, "period", 1, p.horizon)
            return {"period": t, "demand": p.demand[t - 1]}
        if op == "read_forecast":
            t = require_int(args, "period", 1, p.horizon)
            return {"period": t, "forecast": p.forecast[t - 1]}
        if op == "probe_price":
            return {"price": p.price}
        if op == "probe_unit_cost":
            return {"unit_cost": p.unit_cost}
        if op == "probe_fixed_cost":
            return {"fixed_cost": p.fixed_cost}
        if op == "probe_holding_cost":
            return {"holding_cost": p.holding_cost}
        if op == "probe_shortage_terms":
            return {"unmet_demand": "backlogged" if p.backlog else "lost", "max_backlog": p.max_backlog,
                    "backlog_cost": p.backlog_cost, "lost_sale_penalty": p.shortage_penalty}
        if op == "check_stock":
            return {"period": state["period"] + 1, "periods_total": p.horizon, "stock": state["stock"],
                    "pending_order": state["pending"], "profit_so_far": round(state["profit"], 6)}
        if op == "view_ledger":
            return {"ledger": state["ledger"]}
        if op == "place_order":
            quantity = require_int(args, "quantity", 1, p.max_order)
            total = state["pending"] + quantity
            if total > p.max_order:
                raise ActionError(f"order would total {total} units; the most per period is {p.max_order}")
            if max(state["stock"], 0) + total > p.capacity:
                raise ActionError(f"stock plus order would exceed the capacity of {p.capacity} units")
            state["pending"] = total
            return {"pending_order": total}
        if op == "cancel_order":
            state["pending"] = 0
            return {"pending_order": 0}
        if op == "advance_period":
            t = state["period"]
            stock, profit = _period_step(p, state["stock"], state["pending"], p.demand[t])
            state["ledger"].append({"period": t + 1, "ordered": state["pending"], "demand": p.demand[t],
                                    "stock_after": stock, "profit": round(profit, 6)})
            state.update(period=t + 1, stock=stock, pending=0, profit=state["profit"] + profit)
            state["finished"] = state["period"] >= p.horizon
            return {"closed_period": t + 1, "demand": p.demand[t], "stock": stock,
                    "period_profit": round(profit, 6), "finished": state["finished"]}
        if op == "finish":
            state["finished"] = True
            return {"finished": True}
        raise ActionError(f"unknown operation {op!r}")

    def utility(self, params: InventoryParams, state: dict[str, Any]) -> float:
        stock, total = state["stock"], state["profit"]
        for t in range(state["period"], params.horizon):
            stock, profit = _period_step(params, stock, 0, params.demand[t])
            total += profit
        return float(total - params.shortage_penalty * max(-stock, 0))

    def describe(self, params: InventoryParams, vocab: dict[str, str]) -> str:
        p, v = params, vocab
        shortage = (
            f"Unmet demand is backlogged up to {p.max_backlog} {v['items']} at {p.backlog_cost:g} {v['currency']} "
            f"per {v['item']} and {v['period']}; beyond that, and at the end, it is lost at "
            f"{p.shortage_penalty:g} {v['currency']} each."
            if p.backlog
            else f"Unmet demand is lost, with a penalty of {p.shortage_penalty:g} {v['currency']} per {v['item']}."
        )
        return (
            f"There are {p.horizon} {v['period']}s. True demand per {v['period']}: {p.demand}. "
            f"The {v['sticker']} says: {p.forecast}. Capacity {p.capacity} {v['items']}, at most "
            f"{p.max_order} per order, starting stock {p.initial_stock}. Price {p.price:g}, unit cost "
            f"{p.unit_cost:g}, fixed cost per order {p.fixed_cost:g}, holding cost {p.holding_cost:g} per "
            f"{v['item']} left at the end of a {v['period']} (all in {v['currency']}). {shortage}"
        )

    def secret_numbers(self, params: InventoryParams) -> list[float]:
        p = params
        return [*p.demand, p.price, p.unit_cost, p.fixed_cost, p.holding_cost, p.shortage_penalty,
                p.backlog_cost]

    def probe_allowance(self, params: InventoryParams) -> int:
        return params.horizon + 5

    def public_numbers(self, params: InventoryParams) -> list[float]:
        return [params.horizon, params.capacity, params.max_order, *range(1, params.horizon + 1)]


register(InventoryDP())
