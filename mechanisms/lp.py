"""lp: production planning as a linear program, max c.x subject to A_ub x <= b_ub and x >= 0.

Parameters (all can be given as data):
- ``c``: profit per unit of each of the n variables (hidden); ``c`` may hold losses (negative entries)
- ``A_ub``: an m x n matrix of per-unit use of each constraint row (hidden); ``b_ub``: the m limits
  (hidden, non-negative, so producing nothing is always feasible)
- ``sticker_profit``: the posted profit per unit of each variable (a decoy the default policy trusts;
  when omitted from data it equals ``c``)
- ``products`` and ``periods`` (optional naming structure, n = products * periods): variable
  ``(period - 1) * products + (product - 1)`` is the quantity of that product made in that period.
  Without them the instance is one period with ``products = n`` (a plain LP from c, A_ub, b_ub).
Rows are named by their structure: a row with a single positive entry is the demand cap of that
product in that period; any other row is a resource ("resource k of period t" when it touches one
period only, "shared resource k" otherwise). The sampler draws, per period, 2-3 resource rows that
every product uses, one demand cap per product, and profits that vary by period.
Dynamics: the agent sets the quantities of the current period one product at a time; a setting that
raises the use of some row above its limit (given committed and current quantities) is refused; a
clock step commits the period. Solved exactly with HiGHS (``scipy.optimize.linprog``); an unbounded
instance is rejected with ValueError("unbounded ...").
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from mechanisms.base import ActionError, Mechanism, Solution, require_int, require_number
from mechanisms.registry import register
from schemas.envspec import Action, ArgSpec, OperationSpec

MAX_VARIABLES = 400
MAX_ROWS = 800



def linprog(*args, **kwargs):
    """scipy.optimize.linprog, imported when first called (importing scipy.optimize takes about a second)."""
    from scipy.optimize import linprog as scipy_linprog

    return scipy_linprog(*args, **kwargs)

def _require_int(args: dict[str, Any], name: str, low: int, high: int) -> int:
    """``require_int`` that also refuses NaN and infinities (which it cannot convert) with an ActionError."""
    value = args.get(name)
    if isinstance(value, float) and not math.isfinite(value):
        raise ActionError(f"argument {name!r} must be an integer, got {value!r}")
    return require_int(args, name, low, high)


class LPParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    c: list[float] = Field(min_length=1, max_length=MAX_VARIABLES)
    A_ub: list[list[float]] = Field(min_length=1, max_length=MAX_ROWS)
    b_ub: list[float] = Field(min_length=1, max_length=MAX_ROWS)
    sticker_profit: list[float]
    products: int | None = Field(default=None, ge=1)
    periods: int = Field(default=1, ge=1)

    @model_validator(mode="before")
    @classmethod
    def _default_sticker(cls, data: Any) -> Any:
        if isinstance(data, dict) and "sticker_profit" not in data and "c" in data:
            data = {**data, "sticker_profit": data["c"]}
        return data

    @model_validator(mode="after")
    def _shapes(self) -> LPParams:
        n, m = len(self.c), len(self.A_ub)
        if len(self.b_ub) != m:
            raise ValueError(f"b_ub must have one entry per row of A_ub ({m}), got {len(self.b_ub)}")
        for i, row in enumerate(self.A_ub, start=1):
            if len(row) != n:
                raise ValueError(f"A_ub row {i} must have one entry per variable ({n}), got {len(row)}")
        if len(self.sticker_profit) != n:
            raise ValueError(f"sticker_profit must have one entry per variable ({n}), "
                             f"got {len(self.sticker_profit)}")
        numbers = [*self.c, *self.b_ub, *self.sticker_profit, *(a for row in self.A_ub for a in row)]
        if not all(math.isfinite(x) for x in numbers):
            raise ValueError("c, A_ub, b_ub and sticker_profit must be finite numbers")
        if min(self.b_ub) < 0:
            raise ValueError("b_ub (resource limits and demand caps) must be non-negative")
        products = self.products if self.products is not None else n // self.periods
        if products * self.periods != n:
            raise ValueError(f"products x periods must equal the number of variables ({n}), "
                             f"got {products} x {self.periods}")
        return self

    @property
    def n(self) -> int:
        return len(self.c)

    @property
    def n_products(self) -> int:
        return self.products if self.products is not None else self.n // self.periods

    def var(self, period: int, product: int) -> int:
        """The variable index of a product (1-based) in a period (1-based)."""
        return (period - 1) * self.n_products + (product - 1)


def _rows(p: LPParams) -> list[dict[str, Any]]:
    """Every row's structural role and name: demand cap, resource of one period, or shared resource."""
    a = np.asarray(p.A_ub, dtype=float)
    rows: list[dict[str, Any]] = []
    per_period: dict[int, int] = {}
    shared = 0
    for i in range(a.shape[0]):
        nonzero = np.flatnonzero(a[i])
        periods = sorted({int(j) // p.n_products + 1 for j in nonzero})
        if len(nonzero) == 1 and a[i, nonzero[0]] > 0:
            j = int(nonzero[0])
            t, k = j // p.n_products + 1, j % p.n_products + 1
            rows.append({"row": i, "kind": "cap", "periods": periods, "var": j,
                         "name": f"demand cap of product {k} in period {t}"})
        elif len(periods) == 1:
            per_period[periods[0]] = per_period.get(periods[0], 0) + 1
            rows.append({"row": i, "kind": "resource", "periods": periods,
                         "name": f"resource {per_period[periods[0]]} of period {periods[0]}"})
        elif periods:
            shared += 1
            rows.append({"row": i, "kind": "resource", "periods": periods,
                         "name": f"shared resource {shared}"})
        else:
            rows.append({"row": i, "kind": "empty", "periods": [], "name": f"constraint {i + 1}"})
    return rows


def _quantity_bound(p: LPParams) -> float | None:
    """A structural upper bound on any quantity: a power of ten above every single-row bound, if any."""
    a = np.asarray(p.A_ub, dtype=float)
    b = np.asarray(p.b_ub, dtype=float)
    usable = np.all(a >= 0, axis=1)[:, None] & (a > 0)
    ratio = np.where(usable, b[:, None] / np.where(usable, a, 1.0), np.inf)
    per_variable = ratio.min(axis=0)
    if not np.all(np.isfinite(per_variable)):
        return None
    return float(10 ** math.ceil(math.log10(max(float(per_variable.max()), 1.0))))


def _words(name: str, vocab: dict[str, str]) -> str:
    """A row name in the passage's vocabulary."""
    return re.sub(r"\b(resource|product|period)\b", lambda m: vocab[m.group(1)], name)


def _flat(state: dict[str, Any]) -> np.ndarray:
    return np.asarray([q for period in state["quantities"] for q in period], dtype=float)


def _violations(p: LPParams, state: dict[str, Any], product: int, quantity: float) -> list[str]:
    """Rows whose use would rise above their limit if the current period's product were set so."""
    j = p.var(state["period"] + 1, product)
    a = np.asarray(p.A_ub, dtype=float)
    b = np.asarray(p.b_ub, dtype=float)
    x = _flat(state)
    delta = quantity - x[j]
    x[j] = quantity
    scale = np.maximum(np.maximum(1.0, np.abs(b)), np.abs(a) @ np.abs(x))
    violated = (a[:, j] * delta > 0) & (a @ x > b + 1e-9 * scale)
    if not violated.any():
        return []
    return [info["name"] for info in _rows(p) if violated[info["row"]]]


class LP(Mechanism[LPParams]):
    id = "lp"
    version = 1
    group = "near_ood"
    summary = "plan production over periods under resource limits and demand caps; linear program (HiGHS)"
    Params = LPParams
    size_range = (2, 8)  # products
    horizon_range = (1, 6)  # periods
    default_size = 3
    default_horizon = 2
    difficulty_grid = [(2, 1), (3, 2), (4, 2), (4, 3), (5, 3)]  # 6 x 4 and up describe in over 6,000 characters
    u0_band = (-1.0, 0.97)

    def sample(self, rng: np.random.Generator, size: int, horizon: int) -> LPParams:
        products, periods = int(size), int(horizon)
        n = products * periods
        base = rng.uniform(3.0, 15.0, products)
        rows: list[np.ndarray] = []
        limits: list[float] = []
        c = np.zeros(n)
        for t in range(periods):
            cols = slice(t * products, (t + 1) * products)
            caps = rng.integers(5, 41, products).astype(float)
            usage = np.round(rng.uniform(0.5, 4.0, (int(rng.integers(2, 4)), products)), 1)
            for r in range(usage.shape[0]):
                row = np.zeros(n)
                row[cols] = usage[r]
                rows.append(row)
                limits.append(float(max(1.0, np.round(rng.uniform(0.3, 0.7) * usage[r] @ caps))))
            for k in range(products):
                row = np.zeros(n)
                row[t * products + k] = 1.0
                rows.append(row)
                limits.append(float(caps[k]))
            profit = np.round(base * rng.uniform(0.7, 1.3, products), 1)
            loss = rng.random(products) < 0.1
            loss[int(np.argmax(profit))] = False  # at least one product of every period earns a profit
            profit[loss] = -np.round(rng.uniform(0.5, 3.0, int(loss.sum())), 1)
            c[cols] = profit
        sticker = np.round(c * np.exp(rng.normal(0.0, 0.4, n)) + rng.normal(0.0, 1.5, n), 1)
        return LPParams(c=c.tolist(), A_ub=[r.tolist() for r in rows], b_ub=limits,
                        sticker_profit=sticker.tolist(), products=products, periods=periods)

    def solve(self, params: LPParams) -> Solution:
        p = params
        a = np.asarray(p.A_ub, dtype=float)
        b = np.asarray(p.b_ub, dtype=float)
        c = np.asarray(p.c, dtype=float)
        result = linprog(-c, A_ub=a, b_ub=b, bounds=(0, None), method="highs")
        if result.status == 3:
            raise ValueError("unbounded: profit can grow without limit (a variable is not capped by any row)")
        if result.status == 2:
            raise ValueError("infeasible: no production plan satisfies every row")
        if result.status != 0 or result.x is None:
            raise RuntimeError(f"HiGHS LP failed: {result.message}")
        x = np.clip(np.asarray(result.x, dtype=float), 0.0, None)
        x[x <= 1e-9 * max(1.0, float(x.max(initial=0.0)))] = 0.0
        lhs = a @ x
        over = lhs > b
        if over.any():  # scale toward 0 (always feasible) to remove the solver's tiny violations
            x *= float(np.min(b[over] / lhs[over]))
        actions = self._replayable(p, x)
        state = self.initial_state(p)
        for action in actions:
            self.apply(p, state, action)
        u_star = self.utility(p, state)
        if abs(u_star + result.fun) > 1e-6 * max(1.0, abs(u_star)):
            raise RuntimeError(f"replayed plan earns {u_star}, HiGHS reported {-result.fun}")
        facts = {"variables": p.n, "rows": len(b), "lp_objective": float(-result.fun),
                 "iterations": int(getattr(result, "nit", 0) or 0)}
        return Solution(u_star, actions, "HiGHS LP (scipy.optimize.linprog, method=highs)", facts)

    def _replayable(self, p: LPParams, x: np.ndarray) -> list[Action]:
        """Set the non-zero quantities of each period in an order the dynamics accept, then advance."""
        state = self.initial_state(p)
        actions: list[Action] = []
        for t in range(1, p.periods + 1):
            todo = [k for k in range(1, p.n_products + 1) if x[p.var(t, k)] > 0]
            while todo:
                k = next((k for k in todo if not _violations(p, state, k, float(x[p.var(t, k)]))), None)
                if k is None:
                    raise ValueError("the optimum cannot be reached by setting one product at a time: "
                                     "rows with negative entries block every order")
                action = Action(op="set_production", args={"product": k, "quantity": float(x[p.var(t, k)])})
                self.apply(p, state, action)
                actions.append(action)
                todo.remove(k)
            action = Action(op="advance_period")
            self.apply(p, state, action)
            actions.append(action)
        return actions

    def default_actions(self, params: LPParams) -> list[Action]:
        """Each product gets an equal share of every row's room; products with a sticker <= 0 make nothing."""
        p = params
        actions = [Action(op="read_profit_sticker", args={"product": 1})]
        state = self.initial_state(p)
        for t in range(1, p.periods + 1):
            x = _flat(state)
            columns = [p.var(t, k) for k in range(1, p.n_products + 1)]
            quantities = []
            for k, j in enumerate(columns, start=1):
                best = math.inf
                for i, row in enumerate(p.A_ub):
                    if row[j] <= 0:
                        continue
                    sharers = sum(1 for jj in columns if row[jj] > 0)
                    room = max(p.b_ub[i] - float(np.dot(row, x)), 0.0)
                    best = min(best, room / sharers / row[j])
                ok = p.sticker_profit[j] > 0 and math.isfinite(best)
                quantities.append((k, best if ok else 0.0))
            for k, q in quantities:
                if q > 0:
                    action = Action(op="set_production", args={"product": k, "quantity": q})
                    self.apply(p, state, action)
                    actions.append(action)
            action = Action(op="advance_period")
            self.apply(p, state, action)
            actions.append(action)
        return actions

    def operations(self, params: LPParams) -> list[OperationSpec]:
        p = params
        product = {"product": ArgSpec(type="integer", description="product number", minimum=1,
                                      maximum=p.n_products)}
        quantity = {**product, "quantity": ArgSpec(type="number", description="units to make this period",
                                                   minimum=0, maximum=_quantity_bound(p))}
        return [
            OperationSpec(name="probe_profit", kind="probe",
                          summary="true profit per unit of one product this period", args=product),
            OperationSpec(name="probe_usage", kind="probe", args=product,
                          summary="how much of every resource one unit of a product uses this period"),
            OperationSpec(name="probe_resource_limits", kind="probe",
                          summary="the limit of every resource this period"),
            OperationSpec(name="probe_demand_caps", kind="probe",
                          summary="the most units of each product that can be sold this period"),
            OperationSpec(name="read_profit_sticker", kind="info",
                          summary="the posted profit per unit of one product", args=product, decoy=True),
            OperationSpec(name="list_products", kind="info",
                          summary="the product numbers and the number of periods"),
            OperationSpec(name="view_plan", kind="info",
                          summary="the current period, this period's quantities and the committed ones"),
            OperationSpec(name="resource_slack", kind="info",
                          summary="how much of every resource is still free this period"),
            OperationSpec(name="set_production", kind="decision",
                          summary="set how many units of one product to make this period", args=quantity),
            OperationSpec(name="clear_production", kind="decision",
                          summary="set every quantity of this period to 0"),
            OperationSpec(name="advance_period", kind="clock",
                          summary="commit this period's plan and start the next"),
            OperationSpec(name="finish", kind="clock",
                          summary="stop now; this period's plan stands and later periods make nothing"),
        ]

    def initial_state(self, params: LPParams) -> dict[str, Any]:
        return {"period": 0, "quantities": [[0.0] * params.n_products for _ in range(params.periods)],
                "finished": False}

    def apply(self, params: LPParams, state: dict[str, Any], action: Action) -> dict[str, Any]:
        p, op, args = params, action.op, action.args
        t = state["period"] + 1  # the current period, 1-based
        if op == "probe_profit":
            k = _require_int(args, "product", 1, p.n_products)
            return {"period": t, "product": k, "profit": p.c[p.var(t, k)]}
        if op == "read_profit_sticker":
            k = _require_int(args, "product", 1, p.n_products)
            return {"period": t, "product": k, "sticker_profit": p.sticker_profit[p.var(t, k)]}
        if op == "probe_usage":
            k = _require_int(args, "product", 1, p.n_products)
            j = p.var(t, k)
            usage = {r["name"]: p.A_ub[r["row"]][j] for r in _rows(p)
                     if r["kind"] == "resource" and p.A_ub[r["row"]][j] != 0}
            return {"period": t, "product": k, "usage_per_unit": usage}
        if op == "probe_resource_limits":
            return {"period": t, "limits": {r["name"]: p.b_ub[r["row"]] for r in self._resources(p, t)}}
        if op == "probe_demand_caps":
            caps: dict[str, float | None] = {}
            for k in range(1, p.n_products + 1):
                j = p.var(t, k)
                own = [p.b_ub[r["row"]] / p.A_ub[r["row"]][j] for r in _rows(p)
                       if r["kind"] == "cap" and r["var"] == j]
                caps[f"product {k}"] = min(own) if own else None
            return {"period": t, "demand_caps": caps}
        if op == "list_products":
            return {"products": list(range(1, p.n_products + 1)), "periods": p.periods}
        if op == "view_plan":
            return {"period": t, "periods_total": p.periods,
                    "this_period": {f"product {k + 1}": q for k, q in enumerate(state["quantities"][t - 1])},
                    "committed": [{"period": s + 1, "quantities": list(state["quantities"][s])}
                                  for s in range(t - 1)]}
        if op == "resource_slack":
            x = _flat(state)
            return {"period": t, "free": {r["name"]: p.b_ub[r["row"]] - float(np.dot(p.A_ub[r["row"]], x))
                                          for r in self._resources(p, t)}}
        if op == "set_production":
            k = _require_int(args, "product", 1, p.n_products)
            bound = _quantity_bound(p)
            if bound is None:
                quantity = require_number(args, "quantity", -math.inf, math.inf)
                if quantity < 0:
                    raise ActionError(f"argument 'quantity' must be at least 0, got {quantity:g}")
            else:
                quantity = require_number(args, "quantity", 0.0, bound)
            violated = _violations(p, state, k, quantity)
            if violated:
                raise ActionError(f"making {quantity:g} units of product {k} in period {t} would exceed: "
                                  + ", ".join(violated))
            state["quantities"][t - 1][k - 1] = quantity
            return {"period": t, "product": k, "quantity": quantity}
        if op == "clear_production":
            state["quantities"][t - 1] = [0.0] * p.n_products
            return {"period": t, "cleared": True}
        if op == "advance_period":
            state["period"] = t
            state["finished"] = t >= p.periods
            return {"committed_period": t, "quantities": list(state["quantities"][t - 1]),
                    "finished": state["finished"]}
        if op == "finish":
            state["finished"] = True
            return {"finished": True}
        raise ActionError(f"unknown operation {op!r}")

    @staticmethod
    def _resources(p: LPParams, period: int) -> list[dict[str, Any]]:
        return [r for r in _rows(p) if r["kind"] == "resource" and period in r["periods"]]

    def utility(self, params: LPParams, state: dict[str, Any]) -> float:
        return float(np.dot(params.c, _flat(state)))

    def describe(self, params: LPParams, vocab: dict[str, str]) -> str:
        p, v = params, vocab
        parts = [f"There are {p.n_products} {v['products']} and {p.periods} {v['period']}(s). Each "
                 f"{v['period']} you choose how many units of each {v['product']} to make (any non-negative "
                 f"amount, fractions allowed); the goal is the highest total profit in {v['currency']}."]
        for t in range(1, p.periods + 1):
            profits = ", ".join(f"{v['product']} {k}: {p.c[p.var(t, k)]:g}"
                                for k in range(1, p.n_products + 1))
            stickers = ", ".join(f"{v['product']} {k}: {p.sticker_profit[p.var(t, k)]:g}"
                                 for k in range(1, p.n_products + 1))
            parts.append(f"{v['period']} {t}: profit per unit {profits}; the {v['sticker']} says {stickers}.")
        for r in _rows(p):
            row = p.A_ub[r["row"]]
            if r["kind"] == "cap":
                cap = p.b_ub[r["row"]] / row[r["var"]]
                parts.append(f"At most {cap:g} units: the {_words(r['name'], v)}.")
            elif r["kind"] == "resource":
                uses = ", ".join(f"{v['product']} {j % p.n_products + 1} ({v['period']} "
                                 f"{j // p.n_products + 1}) {row[j]:g}" for j in range(p.n) if row[j] != 0)
                parts.append(f"{_words(r['name'], v)}: limit {p.b_ub[r['row']]:g}; use per unit: {uses}.")
        return " ".join(parts)

    def secret_numbers(self, params: LPParams) -> list[float]:
        p = params
        return [*p.c, *(a for row in p.A_ub for a in row if a != 0), *p.b_ub]

    def probe_allowance(self, params: LPParams) -> int:
        return params.periods * (2 * params.n_products + 2)

    def public_numbers(self, params: LPParams) -> list[float]:
        p = params
        counts = [len(self._resources(p, t)) for t in range(1, p.periods + 1)]
        bound = _quantity_bound(p)
        return [p.n_products, p.periods, *counts, *range(1, max(p.n_products, p.periods, *counts) + 1),
                0, *([bound] if bound is not None else [])]


register(LP())
