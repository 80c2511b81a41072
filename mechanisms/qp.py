"""qp: production with increasing marginal cost, a convex quadratic program under resource limits.

The plan x (units of each of the n products, x >= 0) earns ``c.x - 1/2 x'Qx``, which is MAXIMISED
subject to ``A_ub x <= b_ub`` and ``x >= 0``.

Parameters (all can be given as data):
- ``c``: the margin per unit of each of the n products when nothing is made yet (hidden; entries may be
  negative: a product that loses money from the first unit)
- ``Q``: an n x n symmetric positive definite matrix (hidden): the curvature. The marginal profit of
  product k is ``c[k] - sum_l Q[k][l] x[l]``: it falls by ``Q[k][k]`` per extra unit of k itself and
  by ``Q[k][l]`` per unit of product l (shared overtime, crowding of one market)
- ``A_ub``: an m x n matrix, ``A_ub[i][k]`` is how much of resource i+1 one unit of product k+1 uses
  (hidden, non-negative); ``b_ub``: the m resource limits (hidden, non-negative), so making nothing is
  always feasible and the instance is never infeasible; a strictly concave objective is never unbounded
- ``sticker_margin``: the posted per-unit margin of each product (a decoy: a noisy, sometimes wrong copy
  of ``c`` that says nothing about the curvature, every product's shown by one call; the default policy
  trusts it; when omitted from data it equals ``c``)
The knobs: ``size`` is the number of products n (2..10), ``horizon`` the number of resource
constraints m (1..6).
Dynamics: the agent sets the quantity of one product at a time (any non-negative number up to a
structural bound, a power of ten; a setting that would push some resource above its limit is refused) or
the whole plan at once with ``set_plan``, which replaces it: from nothing, each quantity in product order is
lowered to what still fits beside the ones before it, whatever was planned before. A decision or a view
shows the units planned and which were lowered by which limit, never the profit (differencing trial plans
would reveal every margin and decline); ``commit_plan`` or ``finish`` ends the episode, the plan stands and
its profit is reported with the ledger (income at the first unit margins, the decline's cost, the total).
u* is the utility of the replayed optimal plan.
Solved exactly: scipy SLSQP gives a starting point; its active set (the rows within a tolerance of
their limit) is taken and the KKT system of that equality-constrained QP is solved by linear algebra;
the result is verified (primal feasibility, multipliers >= 0, stationarity, each within 1e-9 relative)
and, if the verification fails, a primal active-set method from x = 0 finds the optimum instead and is
verified the same way. The residuals, SLSQP's status and iterations and the method that succeeded are the
solution's diagnostics, not its facts: they differ with the host's BLAS threads and CPU, and the spec records only
the answer (mechanisms.canonical; the plan rounded toward zero to 10 significant digits). The tests check the solver
against an enumeration of every active set.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from mechanisms._production import limits, planned, resource_shapes, room, scipy_optimize
from mechanisms.base import NEAR_OPTIMAL, ActionError, Mechanism, Solution, Tier
from mechanisms.canonical import canonical_argument
from mechanisms.facts import BUDGET_END, END, OBJECTIVE, Fact, probed, rule
from mechanisms.operations import Between, Observation, State, clock, decision, info, probe
from mechanisms.params import finite, flat, non_negative, rows_of, stickers_default_to_truth
from mechanisms.players import Knowledge, Policy, Seat
from mechanisms.prose import figure, numbered, there_are
from mechanisms.registry import register
from schemas.envspec import Action

MAX_PRODUCTS = 24
MAX_RESOURCES = 12
KKT_TOLERANCE = 1e-9  # verification of the KKT conditions, relative
FIT_TOLERANCE = 1e-12  # how far (relative) a plan may touch above a limit when the dynamics check it

minimize = scipy_optimize("minimize")


class QPParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    c: list[float] = Field(min_length=1, max_length=MAX_PRODUCTS)
    Q: list[list[float]] = Field(min_length=1, max_length=MAX_PRODUCTS)
    A_ub: list[list[float]] = Field(min_length=1, max_length=MAX_RESOURCES)
    b_ub: list[float] = Field(min_length=1, max_length=MAX_RESOURCES)
    sticker_margin: list[float]

    _default_sticker = stickers_default_to_truth(sticker_margin="c")

    @model_validator(mode="after")
    def _shapes(self) -> QPParams:
        n = len(self.c)
        if len(self.Q) != n:
            raise ValueError(f"Q must have one row per product ({n}), got {len(self.Q)}")
        rows_of("Q", self.Q, n, "product")
        resource_shapes(self.c, self.A_ub, self.b_ub, "sticker_margin", self.sticker_margin, "product")
        finite("c, Q, A_ub, b_ub and sticker_margin", self.c, self.b_ub, self.sticker_margin, flat(self.A_ub),
               flat(self.Q))
        non_negative("A_ub", flat(self.A_ub), "resource use per unit")
        non_negative("b_ub", self.b_ub, "resource limits")
        q = np.asarray(self.Q, dtype=float)
        if not np.allclose(q, q.T, rtol=0.0, atol=1e-9 * max(1.0, float(np.abs(q).max()))):
            raise ValueError("Q must be symmetric")
        try:
            np.linalg.cholesky(q)
        except np.linalg.LinAlgError:
            raise ValueError("Q must be positive definite (the profit must be strictly concave)") from None
        return self

    @property
    def n(self) -> int:
        return len(self.c)

    @property
    def m(self) -> int:
        return len(self.b_ub)


def _arrays(p: QPParams) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    return (np.asarray(p.c, dtype=float), np.asarray(p.Q, dtype=float), *limits(p))


def _profit(p: QPParams, x: np.ndarray) -> float:
    c, q, _, _ = _arrays(p)
    return float(c @ x - 0.5 * x @ q @ x)


def _quantity_bound(p: QPParams) -> float:
    """A structural bound on any useful quantity: a power of ten above every single-product bound.

    A product is bounded by its tightest resource, and, since the optimum earns at least 0 (make
    nothing), by 2 |c| / lambda_min(Q) (beyond that the quadratic term alone loses more than c can earn).
    """
    c, q, a, b = _arrays(p)
    radius = 2.0 * float(np.linalg.norm(c)) / float(np.linalg.eigvalsh(q)[0])
    ratio = np.where(a > 0, b[:, None] / np.where(a > 0, a, 1.0), np.inf)
    per_product = np.minimum(ratio.min(axis=0), radius)
    return float(10 ** math.ceil(math.log10(max(float(per_product.max()), 1.0))))


def _limit_slack(b: np.ndarray) -> np.ndarray:
    return FIT_TOLERANCE * np.maximum(1.0, np.abs(b))


def _over(p: QPParams, x: np.ndarray) -> list[int]:
    """Resources (1-based) whose use by plan x is above their limit."""
    _, _, a, b = _arrays(p)
    return [i + 1 for i in np.flatnonzero(a @ x > b + _limit_slack(b))]


def _constraints(p: QPParams) -> tuple[np.ndarray, np.ndarray]:
    """Every constraint as G x <= h: the m resource rows, then -x_k <= 0 for each product."""
    _, _, a, b = _arrays(p)
    return np.vstack([a, -np.eye(p.n)]), np.concatenate([b, np.zeros(p.n)])


def kkt_point(q: np.ndarray, c: np.ndarray, g: np.ndarray, h: np.ndarray,
              active: list[int]) -> tuple[np.ndarray, np.ndarray] | None:
    """Solve the KKT system of max c.x - x'Qx/2 with the rows ``active`` of G x <= h held as equalities.

    Returns (x, multipliers of the active rows), or None if the system is singular (dependent rows).
    """
    n, k = len(c), len(active)
    gw = g[active]
    kkt = np.zeros((n + k, n + k))
    kkt[:n, :n] = q
    kkt[:n, n:] = gw.T
    kkt[n:, :n] = gw
    rhs = np.concatenate([c, h[active]])
    if k and np.linalg.matrix_rank(gw) < k:
        return None
    try:
        solution = np.linalg.solve(kkt, rhs)
    except np.linalg.LinAlgError:
        return None
    return solution[:n], solution[n:]


def kkt_residuals(q: np.ndarray, c: np.ndarray, g: np.ndarray, h: np.ndarray, x: np.ndarray,
                  active: list[int], multipliers: np.ndarray) -> dict[str, float]:
    """Relative residuals of primal feasibility, dual feasibility and stationarity (all 0 at the optimum)."""
    scale_h = np.maximum(1.0, np.abs(h))
    primal = float(np.max(np.maximum(g @ x - h, 0.0) / scale_h, initial=0.0))
    dual = float(max(-float(np.min(multipliers, initial=0.0)), 0.0) / max(1.0, float(np.abs(c).max())))
    gradient = q @ x - c + g[active].T @ multipliers
    scale = max(1.0, float(np.abs(c).max()), float(np.abs(q @ x).max()))
    stationarity = float(np.abs(gradient).max() / scale)
    slack = h[active] - g[active] @ x
    complementarity = float(np.max(np.abs(slack) / scale_h[active], initial=0.0))
    return {"primal": primal, "dual": dual, "stationarity": stationarity, "complementarity": complementarity}


def _verified(residuals: dict[str, float]) -> bool:
    return all(value <= KKT_TOLERANCE for value in residuals.values())


def active_set_search(q: np.ndarray, c: np.ndarray, g: np.ndarray, h: np.ndarray,
                      max_iterations: int = 1000) -> tuple[np.ndarray, list[int], np.ndarray, int]:
    """Primal active-set method for the strictly concave QP from the feasible point x = 0.

    Starts with every bound x_k >= 0 in the working set (the bound rows are the last n rows of G);
    returns (x, working set, its multipliers, iterations).
    """
    n = len(c)
    x = np.zeros(n)
    working = list(range(len(h) - n, len(h)))
    scale = max(1.0, float(np.abs(c).max()))
    for iteration in range(1, max_iterations + 1):
        point = kkt_point(q, c, g, h, sorted(working))
        if point is None:
            raise RuntimeError("active-set search reached a dependent working set")
        target, multipliers = point
        step = target - x
        if float(np.abs(step).max(initial=0.0)) <= 1e-13 * max(1.0, float(np.abs(target).max(initial=0.0))):
            order = sorted(working)
            if float(np.min(multipliers, initial=0.0)) >= -1e-12 * scale:
                return target, order, multipliers, iteration
            working.remove(order[int(np.argmin(multipliers))])
            continue
        alpha, blocking = 1.0, None
        gp = g @ step
        for i in range(len(h)):
            if i in working or gp[i] <= 1e-14:
                continue
            ratio = max(float(h[i] - g[i] @ x), 0.0) / float(gp[i])
            if ratio < alpha:
                alpha, blocking = ratio, i
        x = x + alpha * step
        if blocking is not None:
            working.append(blocking)
    raise RuntimeError("active-set search did not converge")


def solve_qp(p: QPParams) -> tuple[np.ndarray, dict[str, Any], dict[str, Any]]:
    """The exact optimum: SLSQP's active set verified through the KKT system, else the active-set search.
    Returns (x, facts of the answer, diagnostics of the path: SLSQP's status and iterations, the method that
    succeeded, the KKT residuals; they differ with the host, see mechanisms.canonical)."""
    c, q, _, _ = _arrays(p)
    g, h = _constraints(p)
    start = np.zeros(p.n)
    result = minimize(lambda x: -(c @ x) + 0.5 * x @ q @ x, start, jac=lambda x: q @ x - c, method="SLSQP",
                      constraints=[{"type": "ineq", "fun": lambda x: h - g @ x, "jac": lambda x: -g}],
                      options={"ftol": 1e-14, "maxiter": 500})
    diagnostics: dict[str, Any] = {"slsqp_status": int(result.status), "slsqp_iterations": int(result.nit)}
    slsqp_x = np.asarray(result.x, dtype=float)
    tight = h - g @ slsqp_x <= 1e-6 * np.maximum(1.0, np.abs(h))
    active = [int(i) for i in np.flatnonzero(tight)]
    point = kkt_point(q, c, g, h, active)
    method = "slsqp_active_set"
    if point is not None:
        x, multipliers = point
        residuals = kkt_residuals(q, c, g, h, x, active, multipliers)
    if point is None or not _verified(residuals):
        method = "active_set_search"
        x, active, multipliers, iterations = active_set_search(q, c, g, h)
        residuals = kkt_residuals(q, c, g, h, x, active, multipliers)
        diagnostics["active_set_iterations"] = iterations
        if not _verified(residuals):
            raise RuntimeError(f"QP optimum failed the KKT verification: {residuals}")
    diagnostics.update(method=method, kkt_residuals=residuals)
    facts = {"kkt_tolerance": KKT_TOLERANCE, "active_resources": [i + 1 for i in active if i < p.m],
             "zero_products": [i - p.m + 1 for i in active if i >= p.m],
             "resource_prices": [float(multipliers[active.index(i)]) if i in active else 0.0 for i in range(p.m)]}
    return x, facts, diagnostics



def _fitted(p: QPParams, wanted: list[float]) -> np.ndarray:
    """A whole plan set at once: each quantity, in product order, lowered to what still fits beside the ones
    before it (the ones after it count as 0 until they are set). A quantity that fits is kept exactly."""
    _, _, a, b = _arrays(p)
    x = np.zeros(p.n)
    bound = _quantity_bound(p)
    for k, quantity in enumerate(wanted):
        trial = x.copy()
        trial[k] = quantity
        x[k] = quantity if not _over(p, trial) else min(quantity, room(a, b, x, k, bound))
    return x


def _binding(p: QPParams, x: np.ndarray, k: int) -> list[int]:
    """The resources (0-based) that keep product k of plan x from rising: those it uses whose room is used up."""
    _, _, a, b = _arrays(p)
    free = b - a @ x
    return [i for i in range(p.m) if a[i, k] > 0 and free[i] <= 1e-9 * max(1.0, abs(b[i]))]


Product = Annotated[int, Between(1, "n"), "product number"]  # a product number, 1..n
Quantity = Annotated[float, Between(0, _quantity_bound), "units to make"]  # units of one product
# one quantity per product, each above its bound lowered to it
Plan = Annotated[list[float], Between(0, _quantity_bound, max_items="n", min_items="n", clip=True),
                 "units of every product, in product order"]


class QP(Mechanism[QPParams]):
    id = "qp"
    version = 4  # issue 30: canonical solver output (mechanisms.canonical); 3: issue 27, the prose is part of the spec
    group = "near_ood"
    summary = ("plan production with increasing marginal cost under resource limits; convex quadratic program "
               "(SLSQP, made exact by the KKT system of its active set)")
    Params = QPParams
    size_range = (2, 20)  # products
    horizon_range = (1, 8)  # resource constraints
    default_size = 4
    default_horizon = 2
    difficulty_grid = [(3, 1), (4, 2), (6, 3), (8, 4), (10, 6)]
    # cells and shares measured (issue 26). The default reads the limits and the uses it splits, so its calls lift
    # the budget; the only heuristic that comes near the optimum (own_optimum_scaled) needs every probe, so hard (a
    # heuristic between 0.5 and 0.75 while full information does not fit) is a narrow band of budgets
    difficulty_tiers = {
        "easy": Tier(((2, 1), (3, 1)), 1.0),
        "medium": Tier(((6, 3), (8, 4), (10, 6)), 1.0),
        "hard": Tier(((8, 4), (8, 3)), 0.4),
        "frontier": Tier(((14, 6), (16, 8)), 0.2),
    }
    u0_band = (-1.0, 0.97)

    def sample(self, rng: np.random.Generator, size: int, horizon: int) -> QPParams:
        n, m = int(size), int(horizon)
        c = np.round(rng.uniform(4.0, 20.0, n), 1)
        loss = rng.random(n) < 0.15
        loss[int(np.argmax(c))] = False  # at least one product earns money
        c[loss] = -np.round(rng.uniform(0.5, 3.0, int(loss.sum())), 1)
        target = rng.uniform(6.0, 25.0, n)  # units at which a product's own marginal profit would vanish
        diagonal = np.abs(c) / target
        off = rng.uniform(0.0, 1.0, (n, n)) * (rng.random((n, n)) < 0.6)
        off = np.triu(off, 1)
        off = off + off.T
        if off.sum(axis=1).max() > 0:
            off *= rng.uniform(0.2, 0.6) / off.sum(axis=1).max()
        root = np.sqrt(diagonal)
        q = np.round(root[:, None] * (np.eye(n) + off) * root[None, :], 2)
        q = np.maximum(q, q.T)
        while np.linalg.eigvalsh(q)[0] <= 0.01:  # rounding must keep Q positive definite
            q = np.round(q + 0.01 * np.eye(n), 2)
        usage = np.round(rng.uniform(0.5, 4.0, (m, n)), 1)
        free = np.clip(np.linalg.solve(q, c), 0.0, None)  # where the curvature alone would stop production
        tightness = rng.uniform(0.3, 0.9, m)
        limits = np.maximum(np.round(tightness * (usage @ free)), 1.0)
        data = {"c": c.tolist(), "Q": q.tolist(), "A_ub": usage.tolist(), "b_ub": limits.tolist()}
        return self.with_misleading_stickers(lambda: QPParams(**data, sticker_margin=self._stickers(rng, c)),
                                            lambda u0, u_star, _: u0 <= NEAR_OPTIMAL * u_star)

    @staticmethod
    def _stickers(rng: np.random.Generator, c: np.ndarray) -> list[float]:
        """Posted margins: the true margins under a log-normal error, with the sign wrong now and then.

        A loss-making product is posted as profitable; a profitable one is, with chance 0.15, posted as a
        loss (the default then skips it). The product with the highest posted margin stays profitable.
        """
        posted = np.abs(c) * np.exp(rng.normal(0.0, 0.35, len(c)))
        posted[c < 0] = rng.uniform(3.0, 12.0, int((c < 0).sum()))
        flip = (rng.random(len(c)) < 0.15) & (c > 0)
        flip[int(np.argmax(posted))] = False
        posted[flip] = -rng.uniform(0.5, 3.0, int(flip.sum()))
        return np.round(posted, 1).tolist()

    def solve(self, params: QPParams) -> Solution:
        p = params
        x, facts, diagnostics = solve_qp(p)
        x = np.clip(x, 0.0, None)
        x[x <= 1e-12 * max(1.0, float(x.max(initial=0.0)))] = 0.0
        _, _, a, b = _arrays(p)
        for _ in range(8):  # the KKT point touches its limits up to rounding; keep it inside the dynamics' check
            if not _over(p, x):
                break
            use = a @ x
            over = use > b
            x = x * float(np.min(b[over] / use[over])) * (1.0 - 1e-15)
        if _over(p, x):
            raise RuntimeError("the optimal plan does not fit the resource limits")
        x = np.minimum(x, _quantity_bound(p))
        # the plan as the spec records it (mechanisms.canonical): rounded toward zero, it still fits
        x = np.asarray([canonical_argument(float(v)) for v in x])
        actions = ([Action(op="set_plan", args={"quantities": [float(v) for v in x]})] if np.any(x > 0) else [])
        actions.append(Action(op="commit_plan"))
        state = self.initial_state(p)
        for action in actions:
            self.apply(p, state, action)
        u_star = self.utility(p, state)
        facts.update(products=p.n, resources=p.m, objective=u_star)
        return Solution(u_star, actions, "SLSQP active set made exact by its KKT system (verified; "
                        "primal active-set fallback)", facts, diagnostics)

    def initial_state(self, params: QPParams) -> dict[str, Any]:
        return {"quantities": [0.0] * params.n, "committed": False, "finished": False}

    def _close(self, p: QPParams, state: State, committed: bool) -> Observation:
        """End the episode; the plan as it stands counts (its profit is reported now)."""
        state.update(committed=state["committed"] or committed, finished=True)
        return {"committed": planned(state["quantities"]), "total": self.utility(p, state), "finished": True}

    # --- operations -------------------------------------------------------------------------
    @probe
    def probe_margin(self, p: QPParams, state: State, product: Product) -> Observation:
        """true profit of the first unit of one product"""
        return {"product": product, "margin": p.c[product - 1]}

    @probe
    def probe_curvature(self, p: QPParams, state: State, product: Product) -> Observation:
        """how fast the margin of one product falls per unit of each product made"""
        return {"product": product, "decline": {f"product {j + 1}": p.Q[product - 1][j] for j in range(p.n)}}

    @probe
    def probe_usage(self, p: QPParams, state: State, product: Product) -> Observation:
        """how much of every resource one unit of a product uses"""
        return {"product": product, "usage": {f"resource {i + 1}": p.A_ub[i][product - 1] for i in range(p.m)}}

    @probe
    def probe_limits(self, p: QPParams, state: State) -> Observation:
        """the limit of every resource"""
        return {"limits": {f"resource {i + 1}": p.b_ub[i] for i in range(p.m)}}

    @info(decoy=True, estimates="margin")
    def read_posted_margins(self, p: QPParams, state: State) -> Observation:
        """the posted per-unit margin of every product: outside estimates, not the true margins"""
        return {"posted": {f"product {k + 1}": p.sticker_margin[k] for k in range(p.n)}}

    @info
    def list_products(self, p: QPParams, state: State) -> Observation:
        """the product numbers, the number of resources and the largest quantity allowed"""
        return {"products": list(range(1, p.n + 1)), "resources": p.m, "largest": _quantity_bound(p)}

    @info
    def view_plan(self, p: QPParams, state: State) -> Observation:
        """the planned quantity of every product (its profit is reported when the plan is committed)"""
        return {"quantities": planned(state["quantities"])}

    @info
    def resource_slack(self, p: QPParams, state: State) -> Observation:
        """how much of every resource the plan leaves free"""
        _, _, a, b = _arrays(p)
        free = b - a @ np.asarray(state["quantities"], dtype=float)
        return {"free": {f"resource {i + 1}": float(free[i]) for i in range(p.m)}}

    @decision
    def set_quantity(self, p: QPParams, state: State, product: Product, quantity: Quantity) -> Observation:
        """set how many units of one product to make"""
        x = np.asarray(state["quantities"], dtype=float)
        raised = quantity > x[product - 1]
        x[product - 1] = quantity
        over = _over(p, x) if raised else []
        if over:
            names = ", ".join(f"resource {i}" for i in over)
            raise ActionError(f"making {figure(quantity)} units of product {product} would exceed the limit of {names}")
        state["quantities"][product - 1] = quantity
        return {"product": product, "quantity": quantity}

    @decision
    def set_plan(self, p: QPParams, state: State, quantities: Plan) -> Observation:
        """replace the whole plan: every product's units at once, each in product order lowered to what still fits
        beside the ones before it"""
        x = _fitted(p, quantities)
        state["quantities"] = [float(v) for v in x]
        cut = [k for k in range(p.n) if x[k] < quantities[k]]
        return {"quantities": {f"product {k + 1}": float(x[k]) for k in range(p.n) if k not in cut},
                "cut": {f"product {k + 1}": [f"resource {i + 1}" for i in _binding(p, x, k)] for k in cut}}

    @decision
    def clear_plan(self, p: QPParams, state: State) -> Observation:
        """set every quantity to 0"""
        state["quantities"] = [0.0] * p.n
        return {"quantities": planned(state["quantities"])}

    @clock
    def commit_plan(self, p: QPParams, state: State) -> Observation:
        """commit the plan; this ends the episode"""
        return self._close(p, state, committed=True)

    @clock
    def finish(self, p: QPParams, state: State) -> Observation:
        """stop now; the current plan stands"""
        return self._close(p, state, committed=False)

    def utility(self, params: QPParams, state: dict[str, Any]) -> float:
        return _profit(params, np.asarray(state["quantities"], dtype=float))

    def ledger(self, params: QPParams, state: dict[str, Any]) -> dict[str, Any]:
        c, q, _, _ = _arrays(params)
        x = np.asarray(state["quantities"], dtype=float)
        return {"quantities": planned(state["quantities"]), "first unit income": float(c @ x),
                "decline cost": float(0.5 * x @ q @ x), "total": self.utility(params, state)}

    # --- facts ------------------------------------------------------------------------------
    def facts(self, params: QPParams, vocab: dict[str, str]) -> list[Fact]:
        p, v = params, vocab
        bound = _quantity_bound(p)
        margins = "; ".join(f"{k + 1}: {figure(p.c[k])}" for k in range(p.n))
        decline = "; ".join(f"{k + 1}: [{', '.join(f'{figure(q)}' for q in p.Q[k])}]" for k in range(p.n))
        usage = "; ".join(f"{k + 1}: [{', '.join(f'{figure(p.A_ub[i][k])}' for i in range(p.m))}]" for k in range(p.n))
        limits = "; ".join(f"{i + 1}: {figure(p.b_ub[i])}" for i in range(p.m))
        posted = "; ".join(f"{k + 1}: {figure(p.sticker_margin[k])}" for k in range(p.n))
        return [
            rule("structure", f"{there_are(p.n, v['product'], v['products'])}, numbered 1 to {p.n}, and "
                 f"{numbered(p.m, 'limit on ' + v['resources'], 'limits on ' + v['resources'])}. You choose how "
                 f"many units x_k of each {v['product']} k "
                 f"to make: any amount from 0 to {figure(bound)}, fractions allowed.", p.n, p.m, bound),
            probed("margins", "probe_margin", f"The margin of the first unit, c_k, of each {v['product']} k, in "
                   f"{v['currency']}: {margins}.", p.c),
            probed("decline", "probe_curvature", f"The margin decline Q_kl, by how much the margin of "
                   f"{v['product']} k falls per unit of {v['product']} l made, row k by row: {decline}.",
                   [q for row in p.Q for q in row]),
            probed("usage", "probe_usage", f"The {v['resources']} one unit of each {v['product']} uses, limit by "
                   f"limit: {usage}.", [a for row in p.A_ub for a in row]),
            probed("limits", "probe_limits", f"The limits on {v['resources']}: {limits}.", p.b_ub),
            probed("posted", "read_posted_margins", f"The {v['source']} posts these flat margins per unit in "
                   f"{v['currency']} (an outside estimate of c_k that ignores the decline): {posted}.",
                   p.sticker_margin),
            rule("constraints", f"The {v['resources']} used by the plan (the sum over {v['products']} of x_k times "
                 f"the use per unit) may not exceed any limit. Setting one {v['product']} above what fits is "
                 f"refused. Setting the whole plan at once replaces it, whatever was planned before: starting from "
                 f"nothing, each {v['product']} in number order is lowered to what still fits beside the ones "
                 "before it, so the same setting always gives the same plan."),
            rule(OBJECTIVE, f"Your result is the profit of the plan when the episode ends, in {v['currency']}: "
                 "P(x) = (sum over k of c_k x_k) - 1/2 (sum over every k and every l of Q_kl x_k x_l), the "
                 "double sum taking k = l as well as both Q_kl and Q_lk for k different from l (the decline is mutual: "
                 "Q_kl = Q_lk). So one more unit "
                 f"of {v['product']} k earns about c_k minus the sum over l of Q_kl x_l. The profit is reported "
                 "when the episode ends; setting or viewing a plan shows the units planned and what was lowered by "
                 "which limit, not the profit."),
            rule(END, "Committing the plan ends the episode, and so does walking away; either way the plan as it "
                 "stands counts."),
            rule(BUDGET_END, "If the turns run out before you commit, the plan as it stands counts."),
        ]

    # --- players: what an agent can know (mechanisms.players) -----------------------------------
    def public_view(self, params: QPParams) -> dict[str, Any]:
        return {"products": params.n, "limits": params.m, "largest": _quantity_bound(params)}

    @staticmethod
    def _posted(known: Knowledge) -> list[float] | None:
        """The posted margins as the sheet showed them (None when it was not read)."""
        sheet = known.latest("read_posted_margins")
        if sheet is None:
            return None
        return [float(sheet["posted"][f"product {k}"]) for k in range(1, known.public["products"] + 1)]

    def default_policy(self, seat: Seat) -> None:
        """Reads the posted margins and trusts them as flat (the decline ignored): reads the limits and the use per
        unit of every product posted profitable, gives each of them an equal share of every resource and uses all of
        it (a product that no resource limits is skipped); the plan is set in one bulk call and committed."""
        seat.call("read_posted_margins")
        posted = self._posted(seat.known) or []
        chosen = [k for k in range(1, len(posted) + 1) if posted[k - 1] > 0]
        seen = seat.call("probe_limits") or {}
        limits = seen.get("limits", {})
        usage = {k: (seat.call("probe_usage", product=k) or {}).get("usage", {}) for k in chosen}
        n, most = seat.known.public["products"], seat.known.public["largest"]
        plan = [0.0] * n
        for k in chosen:
            shares = [float(limits[name]) / len(chosen) / float(use) for name, use in usage[k].items()
                      if use > 0 and name in limits]
            if shares:
                plan[k - 1] = float(min(min(shares), most))
        if any(plan):
            seat.call("set_plan", quantities=plan)
        seat.call("commit_plan")

    def probe_order(self, known: Knowledge) -> list[Action]:
        """The limits first (one call), then per product, highest posted margin first: its margin, its decline
        row and its use of the resources."""
        n = known.public["products"]
        posted = self._posted(known) or [0.0] * n
        calls = [Action(op="probe_limits")]
        for k in sorted(range(1, n + 1), key=lambda k: (-posted[k - 1], k)):
            calls += [Action(op=name, args={"product": k})
                      for name in ("probe_margin", "probe_curvature", "probe_usage")]
        return calls

    def believed(self, known: Knowledge) -> QPParams:
        """Verified figures are true. An unverified margin is the posted one (1 when the sheet was not read); an
        unverified decline row keeps what the verified rows say of it (Q is symmetric), its own decline is its margin
        times the mean verified ratio of decline to margin (1/15.5 when none is verified) and its cross declines 0;
        an unverified use of a resource is the mean verified use of that resource (2 when none is); unverified
        limits hold no plan back (the bulk setting lowers what does not fit)."""
        n, m, most = known.public["products"], known.public["limits"], known.public["largest"]
        sticker = self._posted(known) or [1.0] * n
        c = list(sticker)
        for _, seen in known.observations("probe_margin"):
            c[seen["product"] - 1] = float(seen["margin"])
        rows = {seen["product"] - 1: [float(seen["decline"][f"product {j + 1}"]) for j in range(n)]
                for _, seen in known.observations("probe_curvature")}
        ratios = [rows[k][k] / max(abs(c[k]), 0.1) for k in rows]
        ratio = sum(ratios) / len(ratios) if ratios else 1.0 / 15.5
        q = np.zeros((n, n))
        for k, row in rows.items():
            q[k, :] = row
            q[:, k] = row
        for k in range(n):
            if k not in rows:
                q[k, k] = max(abs(c[k]), 0.5) * ratio
        while np.linalg.eigvalsh(q)[0] <= 1e-6:
            q = q + 0.01 * np.eye(n)
        used = {seen["product"] - 1: [float(seen["usage"][f"resource {i + 1}"]) for i in range(m)]
                for _, seen in known.observations("probe_usage")}
        a = []
        for i in range(m):
            verified = [column[i] for column in used.values()]
            guess = sum(verified) / len(verified) if verified else 2.0
            a.append([used[k][i] if k in used else guess for k in range(n)])
        limits = known.latest("probe_limits")
        if limits is not None:
            b = [float(limits["limits"][f"resource {i + 1}"]) for i in range(m)]
        else:  # no limit believed: enough for every product at the largest quantity
            b = [float(sum(row) * most) for row in a]
        return QPParams(c=c, Q=q.tolist(), A_ub=a, b_ub=b, sticker_margin=sticker)

    def heuristic_policies(self) -> dict[str, Policy]:
        """posted_greedy: read the limits and the use per unit, then fill the plan with the products in order of
        posted margin per unit of their scarcest resource, each as much as fits (the decline ignored).
        own_optimum: verify every margin and decline row, set each product to where its own margin would vanish
        (c_k / Q_kk, the cross declines ignored), lowered to fit in number order.
        own_optimum_scaled: the same after reading the limits and every use too, the whole plan scaled down to fit.
        posted_scaled: own_optimum_scaled with the posted margins in place of the verified ones (fewer calls)."""

        def look(seat: Seat) -> tuple[np.ndarray, np.ndarray]:
            """Read the limits and every product's use: (use per unit, limits) as arrays (0 where not shown)."""
            n, m = seat.known.public["products"], seat.known.public["limits"]
            limits = (seat.call("probe_limits") or {}).get("limits", {})
            a = np.zeros((m, n))
            for k in range(1, n + 1):
                usage = (seat.call("probe_usage", product=k) or {}).get("usage", {})
                for i in range(m):
                    a[i, k - 1] = float(usage.get(f"resource {i + 1}", 0.0))
            return a, np.asarray([float(limits.get(f"resource {i + 1}", 0.0)) for i in range(m)])

        def own(seat: Seat, margins: list[float] | None = None) -> np.ndarray:
            """Verify every decline row (and every margin unless given): each product's own optimum."""
            n, most = seat.known.public["products"], seat.known.public["largest"]
            x = np.zeros(n)
            for k in range(1, n + 1):
                margin = margins[k - 1] if margins is not None else \
                    (seat.call("probe_margin", product=k) or {}).get("margin", 0.0)
                row = (seat.call("probe_curvature", product=k) or {}).get("decline", {})
                own_decline = float(row.get(f"product {k}", 0.0))
                x[k - 1] = min(max(margin / own_decline, 0.0), most) if own_decline > 0 else 0.0
            return x

        def scaled(x: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
            use = a @ x
            return x * min([1.0, *(b[i] / use[i] for i in range(len(b)) if use[i] > 0)])

        def finish(seat: Seat, x: np.ndarray) -> None:
            if np.any(x > 0):
                seat.call("set_plan", quantities=[float(v) for v in x])
            seat.call("commit_plan")

        def posted_greedy(seat: Seat) -> None:
            seat.call("read_posted_margins")
            posted = self._posted(seat.known) or []
            a, b = look(seat)
            most = seat.known.public["largest"]
            scarcity = [max((a[i, k] / max(b[i], 1e-9) for i in range(len(b))), default=0.0)
                        for k in range(len(posted))]
            x = np.zeros(len(posted))
            for k in sorted((k for k in range(len(posted)) if posted[k] > 0),
                            key=lambda k: (-posted[k] / max(scarcity[k], 1e-9), k)):
                x[k] = room(a, b, x, k, most)
            finish(seat, x)

        def own_optimum(seat: Seat) -> None:
            finish(seat, own(seat))

        def own_optimum_scaled(seat: Seat) -> None:
            x = own(seat)
            finish(seat, scaled(x, *look(seat)))

        def posted_scaled(seat: Seat) -> None:
            seat.call("read_posted_margins")
            x = own(seat, self._posted(seat.known))
            finish(seat, scaled(x, *look(seat)))

        return {"posted_greedy": posted_greedy, "own_optimum": own_optimum, "own_optimum_scaled": own_optimum_scaled,
                "posted_scaled": posted_scaled}

    def secret_numbers(self, params: QPParams) -> list[float]:
        p = params
        return [*p.c, *(q for row in p.Q for q in row if q != 0), *(a for row in p.A_ub for a in row if a != 0),
                *p.b_ub]

    def probe_allowance(self, params: QPParams) -> int:
        return 3 * params.n + 1

    def public_numbers(self, params: QPParams) -> list[float]:
        p = params
        return [p.n, p.m, *range(0, max(p.n, p.m) + 1), _quantity_bound(p)]


register(QP())
