"""lp: production planning as a linear program, max c.x subject to A_ub x <= b_ub and x >= 0.

Parameters (all can be given as data):
- ``c``: profit per unit of each of the n variables (hidden); ``c`` may hold losses (negative entries)
- ``A_ub``: an m x n matrix of per-unit use of each constraint row (hidden); ``b_ub``: the m limits
  (hidden, non-negative, so producing nothing is always feasible)
- ``sticker_profit``: the posted profit per unit of each variable (a decoy the default policy trusts, all shown
  by one call; when omitted from data it equals ``c``)
- ``products`` and ``periods`` (optional naming structure, n = products * periods): variable
  ``(period - 1) * products + (product - 1)`` is the quantity of that product made in that period.
  Without them the instance is one period with ``products = n`` (a plain LP from c, A_ub, b_ub).
Rows are named by their structure: a row with a single positive entry is the demand cap of that
product in that period; any other row is a resource ("resource k of period t" when it touches one
period only, "shared resource k" otherwise). The sampler draws, per period, 2-3 resource rows that
every product uses, one demand cap per product, and profits that vary by period.
Dynamics: the agent sets the quantities of the current period one product at a time (a setting that
raises the use of some row above its limit, given committed and current quantities, is refused) or all at
once with ``set_plan``, which replaces the period's whole plan: from an empty period, each quantity in product
order is lowered to what still fits beside the committed periods and the products before it, whatever was
planned before (the same call always gives the same plan). A decision shows what was planned and what was
lowered by which limit, never a profit: the profit of a period is reported when the clock step commits it,
and the whole ledger when the episode ends (differencing trial plans would reveal every margin). Probes take
the period they ask about, so any period can be probed at any time; the informed agent probes every
period's limits and caps first, then the uses and then the profits, highest posted profit first (the posted
profits are noisy, now and then of the wrong sign; a use is a guess from a wide range). Solved exactly with HiGHS
(``scipy.optimize.linprog``); an unbounded instance is rejected with ValueError("unbounded ...").
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from mechanisms._production import limits, planned, resource_shapes, room, scipy_optimize
from mechanisms.base import NEAR_OPTIMAL, ActionError, Mechanism, ParamsError, Solution, Tier
from mechanisms.facts import BUDGET_END, END, OBJECTIVE, Fact, probed, rule
from mechanisms.operations import Between, Observation, State, clock, decision, info, probe
from mechanisms.params import finite, flat, non_negative, stickers_default_to_truth
from mechanisms.players import Knowledge, Policy, Seat
from mechanisms.prose import a, capital, count, figure, numbered, plural, there_are
from mechanisms.registry import register
from schemas.envspec import Action

MAX_VARIABLES = 400
MAX_ROWS = 800
UNBOUNDED_GUESS = 1e6  # the quantity a player tries where no row bounds a quantity (data without caps)

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
    words = {**vocab, "resource": f"{vocab['resource']} limit"}
    return re.sub(r"\b(resource|product|period)\b", lambda m: words[m.group(1)], name)


def _flat(state: dict[str, Any]) -> np.ndarray:
    return np.asarray([q for period in state["quantities"] for q in period], dtype=float)


def _violations(p: LPParams, state: dict[str, Any], product: int, quantity: float) -> list[str]:
    """Rows whose use would rise above their limit if the current period's product were set so."""
    return _over_rows(p, _flat(state), p.var(state["period"] + 1, product), quantity)


def _over_rows(p: LPParams, x: np.ndarray, j: int, quantity: float) -> list[str]:
    """Rows whose use would rise above their limit if variable j of plan x were set to `quantity`."""
    a, b = limits(p)
    x = x.copy()
    delta = quantity - x[j]
    x[j] = quantity
    scale = np.maximum(np.maximum(1.0, np.abs(b)), np.abs(a) @ np.abs(x))
    violated = (a[:, j] * delta > 0) & (a @ x > b + 1e-9 * scale)
    if not violated.any():
        return []
    return [info["name"] for info in _rows(p) if violated[info["row"]]]


def _binding(p: LPParams, x: np.ndarray, j: int) -> list[int]:
    """The rows (indices) that keep variable j of plan x from rising: those it uses whose room is used up."""
    a, b = limits(p)
    free = b - a @ x
    scale = np.maximum(1.0, np.abs(b))
    return [i for i in range(len(b)) if a[i, j] > 0 and free[i] <= 1e-9 * scale[i]]


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
    version = 4  # issue 30: canonical solver output (mechanisms.canonical); 3: issue 27, the prose is part of the spec
    group = "near_ood"
    summary = "plan production over periods under resource limits and demand caps; linear program (HiGHS)"
    Params = LPParams
    size_range = (2, 10)  # products
    horizon_range = (1, 8)  # periods
    default_size = 3
    default_horizon = 2
    difficulty_grid = [(2, 1), (3, 2), (4, 2), (4, 3), (5, 3)]
    # cells measured (issue 26): one period of 2-3 products is where a naive agent that reads every limit already
    # scores above 0.9; more periods and products are medium; at frontier 0.4 of the probe allowance leaves room for
    # every period's limits and caps and about a third of the uses
    difficulty_tiers = {
        "easy": Tier(((3, 1), (2, 1)), 1.0),
        "medium": Tier(((5, 3), (4, 3), (3, 2), (4, 2)), 1.0),
        "hard": Tier(((6, 3), (6, 4)), 0.5),
        "frontier": Tier(((8, 4), (6, 4)), 0.4),
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
        data = {"c": c.tolist(), "A_ub": [r.tolist() for r in rows], "b_ub": limits, "products": products,
                "periods": periods}
        return self.with_misleading_stickers(lambda: LPParams(**data, sticker_profit=self._stickers(rng, c)),
                                            lambda u0, u_star, _: u0 <= NEAR_OPTIMAL * u_star)

    @staticmethod
    def _stickers(rng: np.random.Generator, c: np.ndarray) -> list[float]:
        """Posted profits: the true profits under a log-normal and an additive error, with the sign wrong now and
        then: a loss-making product is posted as profitable, a profitable one is, with chance 0.15, posted as a loss
        (the default then makes none of it)."""
        n = len(c)
        posted = c * np.exp(rng.normal(0.0, 0.4, n)) + rng.normal(0.0, 1.5, n)
        posted[c < 0] = rng.uniform(3.0, 12.0, int((c < 0).sum()))
        flip = (rng.random(n) < 0.15) & (c > 0)
        posted[flip] = -rng.uniform(0.5, 3.0, int(flip.sum()))
        return np.round(posted, 1).tolist()

    def solve(self, params: LPParams) -> Solution:
        p = params
        a, b = limits(p)
        c = np.asarray(p.c, dtype=float)
        result = linprog(-c, A_ub=a, b_ub=b, bounds=(0, None), method="highs")
        if result.status == 3:
            raise ParamsError("unbounded: profit can grow without limit (a variable is not capped by any row)")
        if result.status == 2:
            raise ParamsError("infeasible: no production plan satisfies every row")
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
        facts = {"variables": p.n, "rows": len(b), "lp_objective": float(-result.fun)}
        diagnostics = {"iterations": int(getattr(result, "nit", 0) or 0)}  # the path, not the answer: not in the spec
        return Solution(u_star, actions, "HiGHS LP (scipy.optimize.linprog, method=highs)", facts, diagnostics)

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
                    raise ParamsError("the optimum cannot be reached by setting one product at a time: "
                                      "rows with negative entries block every order")
                action = Action(op="set_production", args={"product": k, "quantity": float(x[p.var(t, k)])})
                self.apply(p, state, action)
                actions.append(action)
                todo.remove(k)
            action = Action(op="advance_period")
            self.apply(p, state, action)
            actions.append(action)
        return actions

    def initial_state(self, params: LPParams) -> dict[str, Any]:
        return {"period": 0, "quantities": [[0.0] * params.n_products for _ in range(params.periods)],
                "finished": False}

    def _period_profit(self, p: LPParams, state: dict[str, Any], t: int) -> float:
        return float(sum(p.c[p.var(t, k + 1)] * q for k, q in enumerate(state["quantities"][t - 1])))

    def _committed_profit(self, p: LPParams, state: dict[str, Any]) -> float:
        return float(sum(self._period_profit(p, state, t) for t in range(1, min(state["period"], p.periods) + 1)))

    @staticmethod
    def _open_period(state: State) -> int:
        """The current period (1-based), which a decision changes; ActionError once the plan is closed."""
        if state["finished"]:
            raise ActionError("the plan is closed")
        return state["period"] + 1

    def _fitted(self, p: LPParams, state: dict[str, Any], t: int, wanted: list[float]
                ) -> tuple[list[float], dict[int, list[int]]]:
        """Period t's plan as a bulk setting makes it and, for each product it lowered, the rows that stopped it:
        the period starts empty (whatever was planned before), then each quantity in product order is lowered to
        what fits beside the committed periods and the products before it (those after it count as 0 until they
        are set). The same call gives the same plan whatever the period held."""
        bound = _quantity_bound(p)
        a, b = limits(p)
        x = _flat(state)
        columns = [p.var(t, k) for k in range(1, p.n_products + 1)]
        x[columns] = 0.0
        cut: dict[int, list[int]] = {}
        for k, (j, quantity) in enumerate(zip(columns, wanted, strict=True), start=1):
            if _over_rows(p, x, j, quantity):
                fits = room(a, b, x, j, math.inf if bound is None else bound)
                quantity = min(quantity, fits)
                if _over_rows(p, x, j, quantity):
                    quantity = 0.0
                x[j] = quantity
                cut[k] = _binding(p, x, j)
            else:
                x[j] = quantity
        return [float(x[j]) for j in columns], cut

    def _reasons(self, p: LPParams, rows: list[int]) -> list[str]:
        """The limits that lowered a quantity, as an observation names them ("caps" for a product's demand cap)."""
        names = _resource_names(p)
        kinds = {r["row"]: r["kind"] for r in _rows(p)}
        return [names[i] if kinds[i] == "resource" else "caps" for i in rows if kinds[i] in ("resource", "cap")]

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
        return {"period": period, "caps": {f"product {k}": self._cap(p, p.var(period, k))
                                           for k in range(1, p.n_products + 1)}}

    @staticmethod
    def _cap(p: LPParams, j: int) -> float | None:
        own = [p.b_ub[r["row"]] / p.A_ub[r["row"]][j] for r in _rows(p) if r["kind"] == "cap" and r["var"] == j]
        return min(own) if own else None

    @info(decoy=True, estimates="profit")
    def read_profit_stickers(self, p: LPParams, state: State) -> Observation:
        """the posted profit per unit of every product in every period: outside estimates, not the true profits"""
        return {"posted": {f"period {t}": {f"product {k}": p.sticker_profit[p.var(t, k)]
                                           for k in range(1, p.n_products + 1)}
                           for t in range(1, p.periods + 1)}}

    @info
    def list_products(self, p: LPParams, state: State) -> Observation:
        """the product numbers and the number of periods"""
        return {"products": list(range(1, p.n_products + 1)), "periods": p.periods}

    @info
    def view_plan(self, p: LPParams, state: State) -> Observation:
        """the current period, this period's quantities, the committed ones and their profit"""
        t = state["period"] + 1
        current = min(t, p.periods)
        return {"period": current, "periods": p.periods, "planned": planned(state["quantities"][current - 1]),
                "committed": [{"period": s + 1, "quantities": list(state["quantities"][s])}
                              for s in range(min(t - 1, p.periods))],
                "profit so far": self._committed_profit(p, state)}

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
            raise ActionError(f"making {figure(quantity)} units of product {product} in period {t} would exceed: "
                              + ", ".join(violated))
        state["quantities"][t - 1][product - 1] = quantity
        return {"period": t, "product": product, "quantity": quantity}

    @decision
    def set_plan(self, p: LPParams, state: State, quantities: Plan) -> Observation:
        """replace this period's whole plan: every product's units at once, each in product order lowered to what
        fits beside the ones before it"""
        t = self._open_period(state)
        plan, cut = self._fitted(p, state, t, quantities)
        state["quantities"][t - 1] = plan
        return {"period": t, "planned": {f"product {k}": q for k, q in enumerate(plan, start=1) if k not in cut},
                "cut": {f"product {k}": self._reasons(p, rows) for k, rows in cut.items()}}

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

    @staticmethod
    def _shared(p: LPParams) -> int:
        return sum(1 for r in _rows(p) if r["kind"] == "resource" and len(r["periods"]) > 1)

    def utility(self, params: LPParams, state: dict[str, Any]) -> float:
        return float(np.dot(params.c, _flat(state)))

    def ledger(self, params: LPParams, state: dict[str, Any]) -> dict[str, Any]:
        return {"profit": {f"period {t}": self._period_profit(params, state, t) for t in range(1, params.periods + 1)},
                "total": self.utility(params, state)}

    # --- facts ------------------------------------------------------------------------------
    def facts(self, params: LPParams, vocab: dict[str, str]) -> list[Fact]:
        p, v = params, vocab
        names = _resource_names(p)
        rows = _rows(p)
        per = v["period"]
        profits, posted, caps, limits, usage = [], [], [], [], []
        for t in range(1, p.periods + 1):
            js = [p.var(t, k) for k in range(1, p.n_products + 1)]
            profits.append(f"{per} {t}: [{', '.join(f'{figure(p.c[j])}' for j in js)}]")
            posted.append(f"{per} {t}: [{', '.join(f'{figure(p.sticker_profit[j])}' for j in js)}]")
            own = []
            for j in js:
                cap = [p.b_ub[r["row"]] / p.A_ub[r["row"]][j] for r in rows if r["kind"] == "cap" and r["var"] == j]
                own.append(f"{figure(min(cap))}" if cap else "none")
            caps.append(f"{per} {t}: [{', '.join(own)}]")
            resources = self._resources(p, t)
            limits.append(f"{per} {t}: " + ", ".join(
                f"{_words(names[r['row']], v)}: {figure(p.b_ub[r['row']])}" for r in resources))
            usage.append(f"{per} {t}: " + "; ".join(
                f"{_words(names[r['row']], v)}: [" + ", ".join(f"{figure(p.A_ub[r['row']][j])}" for j in js) + "]"
                for r in resources))
        resource_rows = [r["row"] for r in rows if r["kind"] == "resource"]
        cap_values = [p.b_ub[r["row"]] / p.A_ub[r["row"]][r["var"]] for r in rows if r["kind"] == "cap"]
        counts = self._counts(p)
        shared = self._shared(p)
        bound = _quantity_bound(p)
        limited = ", ".join(f"{count(n, 'limit')} in {per} {t}" for t, n in enumerate(counts, start=1))
        return [
            rule("structure", f"{there_are(p.n_products, v['product'], v['products'])}, numbered 1 to "
                              f"{p.n_products}, and "
                 f"{numbered(p.periods, per)}. In each {per} you choose how many units of each "
                 f"{v['product']} to make (any non-negative amount, fractions allowed), from 0 to "
                 f"{'any amount' if bound is None else figure(bound)}. Each {per} has its own limits on "
                 f"{v['resources']}, numbered from 1 within its {per}: "
                 f"{limited}"
                 + (f"; {count(shared, 'shared limit')} on {v['resources']} span several {plural(per)}"
                    if shared else "") + ".",
                 p.n_products, p.periods, *counts, *([shared] if shared else []),
                 *([bound] if bound is not None else [])),
            probed("profits", "probe_profit", f"The true profit per unit in {v['currency']}, {v['product']} by "
                   f"{v['product']}: {'; '.join(profits)}.", p.c),
            probed("posted", "read_profit_stickers", f"The {v['source']} posts these profits per unit in "
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
                 f"available nor exceed what can be sold. Setting one {v['product']} above that is refused. "
                 f"Setting a whole {per} at once replaces its plan, whatever was planned before: starting from "
                 f"nothing, each {v['product']} in number order is lowered to what still fits beside the "
                 f"{v['products']} before it, so the same setting always gives the same plan. Only the current "
                 f"{per} can be set; committing it starts the next."),
            rule(OBJECTIVE, f"Your result is the total profit in {v['currency']}: the sum over every {per} and "
                 f"{v['product']} of the units made times the true profit per unit (a negative profit loses "
                 f"money on every unit). {capital(a(per))}'s profit is reported when it is committed; setting a "
                 "plan reports what was planned and what was lowered by which limit, not its profit."),
            rule(END, f"Committing the last {per} ends the episode; closing the books ends it at once, the "
                 f"current {per}'s plan counting and later {plural(per)} making nothing."),
            rule(BUDGET_END, f"If the turns run out first, the committed {plural(per)} and the current {per}'s plan "
                 f"as it stands count, and later {plural(per)} make nothing."),
        ]

    def _counts(self, p: LPParams) -> list[int]:
        """How many limits on resources belong to each period alone."""
        return [sum(1 for r in self._resources(p, t) if len(r["periods"]) == 1) for t in range(1, p.periods + 1)]

    def secret_numbers(self, params: LPParams) -> list[float]:
        p = params
        return [*p.c, *(a for row in p.A_ub for a in row if a != 0), *p.b_ub]

    def probe_allowance(self, params: LPParams) -> int:
        return params.periods * (2 * params.n_products + 2)

    def public_numbers(self, params: LPParams) -> list[float]:
        p = params
        counts = [len(self._resources(p, t)) for t in range(1, p.periods + 1)]
        bound = _quantity_bound(p)
        return [p.n_products, p.periods, *counts, *self._counts(p), self._shared(p),
                *range(1, max(p.n_products, p.periods, *counts) + 1), 0, *([bound] if bound is not None else [])]

    # --- players: what an agent can know (mechanisms.players) -----------------------------------
    def public_view(self, params: LPParams) -> dict[str, Any]:
        p = params
        return {"products": p.n_products, "periods": p.periods, "limits per period": self._counts(p),
                "shared limits": self._shared(p), "largest": _quantity_bound(p)}

    @staticmethod
    def _posted(known: Knowledge) -> dict[tuple[int, int], float]:
        """The posted profit of every (period, product) as the sheet showed it (none when it was not read)."""
        sheet = known.latest("read_profit_stickers")
        if sheet is None:
            return {}
        return {(int(period.split()[-1]), int(product.split()[-1])): float(value)
                for period, row in sheet["posted"].items() for product, value in row.items()}

    def default_policy(self, seat: Seat) -> None:
        """Reads the posted profits and trusts them: each period, every product posted profitable at the largest
        quantity, lowered to fit in number order by the bulk setting; then commits the period."""
        seat.call("read_profit_stickers")
        posted = self._posted(seat.known)
        n, periods = seat.known.public["products"], seat.known.public["periods"]
        most = seat.known.public["largest"] or UNBOUNDED_GUESS
        for t in range(1, periods + 1):
            wanted = [most if posted.get((t, k), 0.0) > 0 else 0.0 for k in range(1, n + 1)]
            if any(wanted):
                seat.call("set_plan", quantities=wanted)
            seat.call("advance_period")

    def probe_order(self, known: Knowledge) -> list[Action]:
        """The limits and caps of every period first (one call each: without them a plan is blind), then each
        product-period's use of the limits, highest posted profit first (a use is a guess from a wide range; the
        posted profit is a noisy but fair estimate), then the profits in the same order."""
        n, periods = known.public["products"], known.public["periods"]
        posted = self._posted(known)
        calls = [Action(op=op, args={"period": t}) for t in range(1, periods + 1)
                 for op in ("probe_resource_limits", "probe_demand_caps")]
        pairs = sorted(((t, k) for t in range(1, periods + 1) for k in range(1, n + 1)),
                       key=lambda tk: (-posted.get(tk, 0.0), tk))
        for op in ("probe_usage", "probe_profit"):
            calls += [Action(op=op, args={"period": t, "product": k}) for t, k in pairs]
        return calls

    def believed(self, known: Knowledge) -> LPParams:
        """Verified figures are true. An unverified profit is the posted one (1 when the sheet was not read); an
        unverified use of a limit is the mean verified use of that limit (of every limit when none of it is
        verified; 2 when none is); a period whose limits were not verified has none; an unverified cap is the
        largest quantity."""
        public = known.public
        n, periods = public["products"], public["periods"]
        most = public["largest"] or UNBOUNDED_GUESS
        total = n * periods

        def var(t: int, k: int) -> int:
            return (t - 1) * n + (k - 1)

        posted = self._posted(known)
        sticker = [posted.get((t, k), 1.0) for t in range(1, periods + 1) for k in range(1, n + 1)]
        c = list(sticker)
        for _, seen in known.observations("probe_profit"):
            c[var(seen["period"], seen["product"])] = float(seen["profit"])
        used = {(seen["period"], seen["product"]): seen["usage"] for _, seen in known.observations("probe_usage")}
        # every limit verified: a period's own ("resource i" of period t) or a shared one (by its name)
        rows: dict[tuple[int, str] | str, dict[str, Any]] = {}
        for _, seen in known.observations("probe_resource_limits"):
            t = seen["period"]
            for name, limit in seen["limits"].items():
                key = name if name.startswith("shared") else (t, name)
                row = rows.setdefault(key, {"limit": float(limit), "periods": set()})
                row["periods"].add(t)
        every_use = [float(u) for usage in used.values() for u in usage.values()]
        a_rows, b = [], []
        for key, row in rows.items():
            name = key if isinstance(key, str) else key[1]
            own = [float(usage[name]) for (t, _), usage in used.items() if t in row["periods"] and name in usage]
            pool = own or every_use
            guess = sum(pool) / len(pool) if pool else 2.0
            coefficients = [0.0] * total
            for t in row["periods"]:
                for k in range(1, n + 1):
                    usage = used.get((t, k))
                    coefficients[var(t, k)] = float(usage.get(name, 0.0)) if usage is not None else guess
            a_rows.append(coefficients)
            b.append(row["limit"])
        caps = {seen["period"]: seen["caps"] for _, seen in known.observations("probe_demand_caps")}
        for t in range(1, periods + 1):
            for k in range(1, n + 1):
                cap = caps[t].get(f"product {k}") if t in caps else most
                if cap is None:  # no cap: the largest quantity still bounds what is believed
                    cap = most
                coefficients = [0.0] * total
                coefficients[var(t, k)] = 1.0
                a_rows.append(coefficients)
                b.append(float(cap))
        return LPParams(c=c, A_ub=a_rows, b_ub=b, sticker_profit=sticker, products=n, periods=periods)

    def heuristic_policies(self) -> dict[str, Policy]:
        """posted_greedy: each period, verify its limits, caps and every product's use, then fill the products in
        order of posted profit per unit of their scarcest limit, each as much as fits, and commit.
        verified_fill: each period, verify every product's profit, then set every truly profitable product at the
        largest quantity, lowered to fit in number order, and commit."""

        def posted_greedy(seat: Seat) -> None:
            seat.call("read_profit_stickers")
            posted = self._posted(seat.known)
            n, periods = seat.known.public["products"], seat.known.public["periods"]
            most = seat.known.public["largest"] or UNBOUNDED_GUESS
            for t in range(1, periods + 1):
                limits_seen = seat.call("probe_resource_limits", period=t) or {}
                caps_seen = seat.call("probe_demand_caps", period=t) or {}
                usage = {k: (seat.call("probe_usage", period=t, product=k) or {}).get("usage", {})
                         for k in range(1, n + 1)}
                free = dict(limits_seen.get("limits", {}))
                caps = caps_seen.get("caps", {})

                scarcity = {k: max((u / max(free.get(name, 0.0), 1e-9) for name, u in usage[k].items() if u > 0),
                                   default=1e-9) for k in range(1, n + 1)}
                chosen = sorted((k for k in range(1, n + 1) if posted.get((t, k), 0.0) > 0),
                                key=lambda k: (-posted[(t, k)] / scarcity[k], k))
                plan = [0.0] * n
                for k in chosen:
                    cap = caps.get(f"product {k}")
                    amount = most if cap is None else min(float(cap), most)
                    for name, u in usage[k].items():
                        if u > 0 and name in free:
                            amount = min(amount, max(free[name], 0.0) / u)
                    plan[k - 1] = amount
                    for name, u in usage[k].items():
                        if name in free:
                            free[name] -= u * amount
                if any(plan):
                    seat.call("set_plan", quantities=plan)
                seat.call("advance_period")

        def verified_fill(seat: Seat) -> None:
            n, periods = seat.known.public["products"], seat.known.public["periods"]
            most = seat.known.public["largest"] or UNBOUNDED_GUESS
            for t in range(1, periods + 1):
                profits = [(seat.call("probe_profit", period=t, product=k) or {}).get("profit", 0.0)
                           for k in range(1, n + 1)]
                wanted = [most if profit > 0 else 0.0 for profit in profits]
                if any(wanted):
                    seat.call("set_plan", quantities=wanted)
                seat.call("advance_period")

        return {"posted_greedy": posted_greedy, "verified_fill": verified_fill}


register(LP())
