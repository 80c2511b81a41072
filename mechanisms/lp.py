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
Dynamics: the agent sets the quantities of the current period one product at a time (a setting that
raises the use of some row above its limit, given committed and current quantities, is refused) or all at
once with ``set_plan`` (each quantity, in product order, lowered to what still fits); a clock step commits
the period. Probes take the period they ask about, so any period can be probed at any time; the informed
agent probes every period's limits and caps first, then profits and uses by posted profit. Solved exactly
with HiGHS (``scipy.optimize.linprog``); an unbounded instance is rejected with ValueError("unbounded ...").
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from mechanisms._production import limits, planned, resource_shapes, room, scipy_optimize
from mechanisms.base import ActionError, Mechanism, Solution, Tier
from mechanisms.facts import BUDGET_END, END, OBJECTIVE, Fact, probed, rule
from mechanisms.operations import Between, Observation, State, clock, decision, info, probe
from mechanisms.params import finite, flat, non_negative, stickers_default_to_truth
from mechanisms.registry import register
from schemas.envspec import Action

MAX_VARIABLES = 400
MAX_ROWS = 800

linprog = scipy_optimize("linprog")


class LPParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    c: list[float] = Field(min_length=1, max_length=MAX_VARIABLES)
    A_ub: list[list[float]] = Field(min_length=1, max_length=MAX_ROWS)
    b_ub: list[float] = Field(min_length=1, max_length=MAX_ROWS)
    sticker_profit: list[float]
    products: int | None = Field(default=None, ge=1)
    periods: int = Field(default=1, ge=1)

    _default_sticker = stickers_default_to_truth(sticker_profit="c")

    @model_validator(mode="after")
    def _shapes(self) -> LPParams:
        n = len(self.c)
        resource_shapes(self.c, self.A_ub, self.b_ub, "sticker_profit", self.sticker_profit, "variable")
        finite("c, A_ub, b_ub and sticker_profit", self.c, self.b_ub, self.sticker_profit, flat(self.A_ub))
        non_negative("b_ub", self.b_ub, "resource limits and demand caps")
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


_ROWS_MEMORY: dict[int, tuple[LPParams, list[dict[str, Any]]]] = {}


def _rows(p: LPParams) -> list[dict[str, Any]]:
    """Every row's structural role and name (remembered per parameters object: the dynamics ask for it often)."""
    kept = _ROWS_MEMORY.get(id(p))
    if kept is not None and kept[0] is p:
        return kept[1]
    if len(_ROWS_MEMORY) >= 64:
        _ROWS_MEMORY.clear()
    rows = _structure(p)
    _ROWS_MEMORY[id(p)] = (p, rows)
    return rows


def _structure(p: LPParams) -> list[dict[str, Any]]:
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
    a, b = limits(p)
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
    a, b = limits(p)
    x = _flat(state)
    delta = quantity - x[j]
    x[j] = quantity
    scale = np.maximum(np.maximum(1.0, np.abs(b)), np.abs(a) @ np.abs(x))
    violated = (a[:, j] * delta > 0) & (a @ x > b + 1e-9 * scale)
    if not violated.any():
        return []
    return [info["name"] for info in _rows(p) if violated[info["row"]]]


def _resource_names(p: LPParams) -> dict[int, str]:
    """The observation key of every resource row: "resource i" (the i-th of its period) or "shared resource i"."""
    names: dict[int, str] = {}
    for r in _rows(p):
        if r["kind"] == "resource":
            words = r["name"].split()
            names[r["row"]] = (f"resource {words[1]}" if words[0] == "resource" else f"shared resource {words[2]}")
    return names


Period = Annotated[int, Between(1, "periods"), "period number"]  # a period number, 1..periods
Product = Annotated[int, Between(1, "n_products"), "product number"]  # a product number, 1..products
# units of one product (no maximum where no row bounds it)
Quantity = Annotated[float, Between(0, _quantity_bound),
                     "units to make this period"]
# one quantity per product, each above its bound lowered to it
Plan = Annotated[list[float], Between(0, _quantity_bound, max_items="n_products", min_items="n_products", clip=True),
                 "units of every product this period, in product order"]


class LP(Mechanism[LPParams]):
    id = "lp"
    version = 1
    group = "near_ood"
    summary = "plan production over periods under resource limits and demand caps; linear program (HiGHS)"
    Params = LPParams
    size_range = (2, 10)  # products
    horizon_range = (1, 8)  # periods
    default_size = 3
    default_horizon = 2
    difficulty_grid = [(2, 1), (3, 2), (4, 2), (4, 3), (5, 3)]
    difficulty_tiers = {
        "easy": Tier(((2, 1), (3, 1), (2, 2)), 1.0),
        "medium": Tier(tuple(difficulty_grid), 1.0),
        "hard": Tier(((6, 3), (6, 4)), 0.5),
        "frontier": Tier(((8, 4), (8, 5)), 0.3),
    }
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
        a, b = limits(p)
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
        actions = self._bulk(p, x)
        if actions is None:
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

    def _bulk(self, p: LPParams, x: np.ndarray) -> list[Action] | None:
        """One bulk setting and one commit per period, if the dynamics keep every quantity exactly (they do unless
        rows with negative entries make the order matter); None otherwise."""
        state = self.initial_state(p)
        actions: list[Action] = []
        for t in range(1, p.periods + 1):
            wanted = [float(x[p.var(t, k)]) for k in range(1, p.n_products + 1)]
            if any(wanted):
                action = Action(op="set_plan", args={"quantities": wanted})
                try:
                    self.apply(p, state, action)
                except ActionError:
                    return None
                if state["quantities"][t - 1] != wanted:
                    return None
                actions.append(action)
            action = Action(op="advance_period")
            self.apply(p, state, action)
            actions.append(action)
        return actions

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

    def _even_split(self, p: LPParams, x: np.ndarray, t: int) -> list[float]:
        """The default's quantities of period t: an equal share of every row's room for each product posted
        profitable (the rest make nothing)."""
        columns = [p.var(t, k) for k in range(1, p.n_products + 1)]
        quantities = []
        for j in columns:
            best = math.inf
            for i, row in enumerate(p.A_ub):
                if row[j] <= 0:
                    continue
                sharers = sum(1 for jj in columns if row[jj] > 0)
                room = max(p.b_ub[i] - float(np.dot(row, x)), 0.0)
                best = min(best, room / sharers / row[j])
            ok = p.sticker_profit[j] > 0 and math.isfinite(best)
            quantities.append(best if ok else 0.0)
        return quantities

    def default_actions(self, params: LPParams) -> list[Action]:
        """Each product posted profitable gets an equal share of every row's room; the rest make nothing. One bulk
        setting per period."""
        p = params
        actions = [Action(op="read_profit_sticker", args={"period": 1, "product": 1})]
        state = self.initial_state(p)
        for t in range(1, p.periods + 1):
            quantities = self._even_split(p, _flat(state), t)
            step = [Action(op="set_plan", args={"quantities": quantities})] if any(quantities) else []
            for action in [*step, Action(op="advance_period")]:
                self.apply(p, state, action)
                actions.append(action)
        return actions

    def initial_state(self, params: LPParams) -> dict[str, Any]:
        return {"period": 0, "quantities": [[0.0] * params.n_products for _ in range(params.periods)],
                "finished": False}

    def _period_profit(self, p: LPParams, state: dict[str, Any], t: int) -> float:
        return float(sum(p.c[p.var(t, k + 1)] * q for k, q in enumerate(state["quantities"][t - 1])))

    @staticmethod
    def _open_period(state: State) -> int:
        """The current period (1-based), which a decision changes; ActionError once the plan is closed."""
        if state["finished"]:
            raise ActionError("the plan is closed")
        return state["period"] + 1

    # --- operations -------------------------------------------------------------------------
    @probe
    def probe_profit(self, p: LPParams, state: State, period: Period, product: Product) -> Observation:
        """true profit per unit of one product in one period"""
        return {"period": period, "product": product, "profit": p.c[p.var(period, product)]}

    @probe
    def probe_usage(self, p: LPParams, state: State, period: Period, product: Product) -> Observation:
        """how much of every resource one unit of a product uses in one period"""
        j = p.var(period, product)
        names = _resource_names(p)
        return {"period": period, "product": product,
                "usage": {names[i]: p.A_ub[i][j] for i in names if p.A_ub[i][j] != 0}}

    @probe
    def probe_resource_limits(self, p: LPParams, state: State, period: Period) -> Observation:
        """the limit of every resource in one period"""
        names = _resource_names(p)
        return {"period": period,
                "limits": {names[r["row"]]: p.b_ub[r["row"]] for r in self._resources(p, period)}}

    @probe
    def probe_demand_caps(self, p: LPParams, state: State, period: Period) -> Observation:
        """the most units of each product that can be sold in one period"""
        caps: dict[str, float | None] = {}
        for k in range(1, p.n_products + 1):
            j = p.var(period, k)
            own = [p.b_ub[r["row"]] / p.A_ub[r["row"]][j] for r in _rows(p) if r["kind"] == "cap" and r["var"] == j]
            caps[f"product {k}"] = min(own) if own else None
        return {"period": period, "caps": caps}

    @info(decoy=True, estimates="profit")
    def read_profit_sticker(self, p: LPParams, state: State, period: Period, product: Product) -> Observation:
        """the posted profit per unit of one product in one period"""
        return {"period": period, "product": product, "posted": p.sticker_profit[p.var(period, product)]}

    @info
    def list_products(self, p: LPParams, state: State) -> Observation:
        """the product numbers and the number of periods"""
        return {"products": list(range(1, p.n_products + 1)), "periods": p.periods}

    @info
    def view_plan(self, p: LPParams, state: State) -> Observation:
        """the current period, this period's quantities, the committed ones and the profit"""
        t = state["period"] + 1
        current = min(t, p.periods)
        return {"period": current, "periods": p.periods, "planned": planned(state["quantities"][current - 1]),
                "committed": [{"period": s + 1, "quantities": list(state["quantities"][s])}
                              for s in range(min(t - 1, p.periods))],
                "total": self.utility(p, state)}

    @info
    def resource_slack(self, p: LPParams, state: State) -> Observation:
        """how much of every resource is still free this period"""
        x = _flat(state)
        names = _resource_names(p)
        current = min(state["period"] + 1, p.periods)
        return {"period": current, "free": {names[r["row"]]: p.b_ub[r["row"]] - float(np.dot(p.A_ub[r["row"]], x))
                                            for r in self._resources(p, current)}}

    @decision
    def set_production(self, p: LPParams, state: State, product: Product, quantity: Quantity) -> Observation:
        """set how many units of one product to make this period"""
        t = self._open_period(state)
        violated = _violations(p, state, product, quantity)
        if violated:
            raise ActionError(f"making {quantity:g} units of product {product} in period {t} would exceed: "
                              + ", ".join(violated))
        state["quantities"][t - 1][product - 1] = quantity
        return {"period": t, "product": product, "quantity": quantity}

    @decision
    def set_plan(self, p: LPParams, state: State, quantities: Plan) -> Observation:
        """set the units of every product this period at once, each cut to what fits"""
        t = self._open_period(state)
        bound = _quantity_bound(p)
        before = list(state["quantities"][t - 1])
        cut = []
        for k, quantity in enumerate(quantities, start=1):
            current = state["quantities"][t - 1][k - 1]
            if _violations(p, state, k, quantity):
                fits = room(*limits(p), _flat(state), p.var(t, k), math.inf if bound is None else bound)
                quantity = min(quantity, max(current, fits))
                if _violations(p, state, k, quantity):
                    quantity = current
                cut.append(k)
            state["quantities"][t - 1][k - 1] = quantity
        if any(q < 0 for q in state["quantities"][t - 1]):  # cannot happen; keep the state whole regardless
            state["quantities"][t - 1] = before
            raise ActionError("the plan could not be set")
        return {"period": t, "planned": planned(state["quantities"][t - 1]), "cut": cut,
                "profit": self._period_profit(p, state, t)}

    @decision
    def clear_production(self, p: LPParams, state: State) -> Observation:
        """set every quantity of this period to 0"""
        t = self._open_period(state)
        state["quantities"][t - 1] = [0.0] * p.n_products
        return {"period": t, "planned": planned(state["quantities"][t - 1])}

    @clock
    def advance_period(self, p: LPParams, state: State) -> Observation:
        """commit this period's plan and start the next"""
        t = self._open_period(state)
        state["period"] = t
        state["finished"] = t >= p.periods
        return {"committed": t, "quantities": list(state["quantities"][t - 1]),
                "profit": self._period_profit(p, state, t), "total": self.utility(p, state),
                "finished": state["finished"]}

    @clock
    def finish(self, p: LPParams, state: State) -> Observation:
        """stop now; this period's plan stands and later periods make nothing"""
        state["finished"] = True
        return {"total": self.utility(p, state), "finished": True}

    @staticmethod
    def _resources(p: LPParams, period: int) -> list[dict[str, Any]]:
        return [r for r in _rows(p) if r["kind"] == "resource" and period in r["periods"]]

    def utility(self, params: LPParams, state: dict[str, Any]) -> float:
        return float(np.dot(params.c, _flat(state)))

    # --- facts, belief, heuristics ----------------------------------------------------------
    def facts(self, params: LPParams, vocab: dict[str, str]) -> list[Fact]:
        p, v = params, vocab
        names = _resource_names(p)
        rows = _rows(p)
        per = v["period"]
        profits, posted, caps, limits, usage = [], [], [], [], []
        for t in range(1, p.periods + 1):
            js = [p.var(t, k) for k in range(1, p.n_products + 1)]
            profits.append(f"{per} {t}: [{', '.join(f'{p.c[j]:g}' for j in js)}]")
            posted.append(f"{per} {t}: [{', '.join(f'{p.sticker_profit[j]:g}' for j in js)}]")
            own = []
            for j in js:
                cap = [p.b_ub[r["row"]] / p.A_ub[r["row"]][j] for r in rows if r["kind"] == "cap" and r["var"] == j]
                own.append(f"{min(cap):g}" if cap else "none")
            caps.append(f"{per} {t}: [{', '.join(own)}]")
            resources = self._resources(p, t)
            limits.append(f"{per} {t}: " + ", ".join(
                f"{_words(names[r['row']], v)}: {p.b_ub[r['row']]:g}" for r in resources))
            usage.append(f"{per} {t}: " + "; ".join(
                f"{_words(names[r['row']], v)}: [" + ", ".join(f"{p.A_ub[r['row']][j]:g}" for j in js) + "]"
                for r in resources))
        resource_rows = [r["row"] for r in rows if r["kind"] == "resource"]
        cap_values = [p.b_ub[r["row"]] / p.A_ub[r["row"]][r["var"]] for r in rows if r["kind"] == "cap"]
        return [
            rule("structure", f"There are {p.n_products} {v['products']}, numbered 1 to {p.n_products}, and "
                 f"{p.periods} {per}(s), numbered 1 to {p.periods}. In each {per} you choose how many units of each "
                 f"{v['product']} to make (any non-negative amount, fractions allowed), from 0 to "
                 f"{'any amount' if _quantity_bound(p) is None else format(_quantity_bound(p), 'g')}.",
                 p.n_products, p.periods,
                 *([_quantity_bound(p)] if _quantity_bound(p) is not None else [])),
            probed("profits", "probe_profit", f"The true profit per unit in {v['currency']}, {v['product']} by "
                   f"{v['product']}: {'; '.join(profits)}.", p.c),
            probed("posted", "read_profit_sticker", f"The {v['sticker']} posts these profits per unit in "
                   f"{v['currency']} (an outside estimate, not the true profit): {'; '.join(posted)}.",
                   p.sticker_profit),
            probed("caps", "probe_demand_caps", f"The most units of each {v['product']} that can be sold, "
                   f"{v['product']} by {v['product']}: {'; '.join(caps)}.", cap_values),
            probed("limits", "probe_resource_limits", f"The {v['resources']} available: {'; '.join(limits)}.",
                   [p.b_ub[i] for i in resource_rows]),
            probed("usage", "probe_usage", f"The {v['resources']} one unit uses, {v['product']} by "
                   f"{v['product']}: {'; '.join(usage)}.",
                   [a for i in resource_rows for a in p.A_ub[i] if a != 0]),
            rule("constraints", f"In each {per} the units made may not use more {v['resources']} than are "
                 f"available nor exceed what can be sold. Setting one {v['product']} above that is refused; "
                 f"setting a whole {per} at once lowers each {v['product']}, in number order, to what still fits. "
                 f"Only the current {per} can be set; committing it starts the next."),
            rule(OBJECTIVE, f"Your result is the total profit in {v['currency']}: the sum over every {per} and "
                 f"{v['product']} of the units made times the true profit per unit (a negative profit loses "
                 f"money on every unit)."),
            rule(END, f"Committing the last {per} ends the episode; closing the books ends it at once, the "
                 f"current {per}'s plan counting and later {per}s making nothing."),
            rule(BUDGET_END, f"If the turns run out first, the committed {per}s and the current {per}'s plan "
                 f"as it stands count, and later {per}s make nothing."),
        ]

    def probe_order(self, params: LPParams) -> list[Action]:
        """The limits and caps of every period first (one call each), then each product-period's profit and use,
        highest posted profit first."""
        p = params
        calls = [Action(op=op, args={"period": t}) for t in range(1, p.periods + 1)
                 for op in ("probe_resource_limits", "probe_demand_caps")]
        pairs = sorted(((t, k) for t in range(1, p.periods + 1) for k in range(1, p.n_products + 1)),
                       key=lambda tk: (-p.sticker_profit[p.var(*tk)], tk))
        for t, k in pairs:
            calls += [Action(op=op, args={"period": t, "product": k}) for op in ("probe_profit", "probe_usage")]
        return calls

    def believed(self, params: LPParams, probed: list[Action]) -> LPParams:
        """Probed figures are true. An unprobed profit is the posted one; an unprobed use of a resource is the mean
        probed use of that resource row (2 when none); unprobed limits of a period make nothing in it; an unprobed
        cap is no cap beyond the largest quantity."""
        p = params
        done = {(a.op, a.args.get("period"), a.args.get("product")) for a in probed}
        c = [p.c[p.var(t, k)] if ("probe_profit", t, k) in done else p.sticker_profit[p.var(t, k)]
             for t in range(1, p.periods + 1) for k in range(1, p.n_products + 1)]
        used = {p.var(t, k) for (op, t, k) in done if op == "probe_usage"}
        bound = _quantity_bound(p) or 1e6
        a, b = [], []
        for r in _rows(p):
            row = list(p.A_ub[r["row"]])
            limit = p.b_ub[r["row"]]
            if r["kind"] == "resource":
                known = [row[j] for j in used if row[j] != 0]
                guess = sum(known) / len(known) if known else 2.0
                row = [row[j] if j in used or row[j] == 0 else guess for j in range(p.n)]
                if not all(("probe_resource_limits", t, None) in done for t in r["periods"]):
                    limit = 0.0
            elif r["kind"] == "cap":
                t = r["periods"][0]
                if ("probe_demand_caps", t, None) not in done:
                    limit = bound * row[r["var"]]
            a.append(row)
            b.append(limit)
        return LPParams(c=c, A_ub=a, b_ub=b, sticker_profit=list(p.sticker_profit), products=p.products,
                        periods=p.periods)

    def heuristic_actions(self, params: LPParams) -> dict[str, list[Action]]:
        """posted_fill: each period, every product posted profitable at the largest quantity, cut to fit in number
        order. posted_greedy: each period, probe its limits, caps and every product's use, then fill the products in
        order of posted profit per unit of their scarcest resource, each as much as fits."""
        p = params
        bound = _quantity_bound(p) or 1e6
        fill: list[Action] = []
        greedy: list[Action] = []
        x = np.zeros(p.n)
        a, b = limits(p)
        for t in range(1, p.periods + 1):
            wanted = [bound if p.sticker_profit[p.var(t, k)] > 0 else 0.0 for k in range(1, p.n_products + 1)]
            fill += [Action(op="set_plan", args={"quantities": wanted}), Action(op="advance_period")]
            greedy += [Action(op="probe_resource_limits", args={"period": t}),
                       Action(op="probe_demand_caps", args={"period": t}),
                       *(Action(op="probe_usage", args={"period": t, "product": k})
                         for k in range(1, p.n_products + 1))]
            js = [p.var(t, k) for k in range(1, p.n_products + 1)]
            scarcity = {j: max((a[i, j] / max(b[i], 1e-9) for i in range(len(b)) if a[i, j] > 0), default=1e-9)
                        for j in js}
            for j in sorted((j for j in js if p.sticker_profit[j] > 0),
                            key=lambda j: (-p.sticker_profit[j] / scarcity[j], j)):
                x[j] = room(a, b, x, j, bound)
            greedy += [Action(op="set_plan", args={"quantities": [float(x[j]) for j in js]}),
                       Action(op="advance_period")]
        return {"posted_fill": fill, "posted_greedy": greedy}

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
