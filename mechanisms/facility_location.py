"""facility_location: which candidate sites to open and which open site serves each customer.

Uncapacitated facility location with an unserved-demand penalty, u = -(total cost):
    cost = sum over open sites of open_cost[i]
         + sum over served customers j of demand[j] * service_cost[i(j)][j]   (i(j): the site serving j)
         + sum over unserved customers j of demand[j] * unserved_penalty
Parameters (all can be given as data):
- ``demand``: units each of the n customers needs (public, positive); customers are numbered 1..n
- ``open_cost``: the cost of opening each of the m candidate sites (hidden, non-negative); sites 1..m
- ``service_cost``: an m x n matrix, ``service_cost[i][j]`` is the cost per unit of demand of serving
  customer j+1 from site i+1 (hidden, non-negative)
- ``unserved_penalty``: the documented cost per unit of demand of a customer left unserved (public,
  positive); doing nothing therefore costs ``unserved_penalty * sum(demand)``
- ``posted_open_cost`` and ``posted_service_cost``: the posted figures (decoys the default policy
  trusts: opening quotes under a log-normal error and straight-line rates that ignore each site's
  access; when omitted from data they equal the true ones)
The knobs: ``size`` is the number of customers n (4..30), ``horizon`` the number of candidate sites
m (2..12).
Dynamics: open or close sites, assign a customer to an open site (re-assigning moves it), unassign;
closing a site leaves its customers unserved; ``commit_plan`` or ``finish`` ends the episode.
Probes reveal groups: one site's opening cost, or one customer's service costs from every site. The
probe allowance is about half of what probing every group would take.
Solved exactly by enumerating all 2^m open subsets (a table of each customer's cheapest option over
the subset, built one site at a time) and taking the cheapest; each customer then goes to its cheapest
open site, or stays unserved when the penalty is cheaper. u* is the utility of the replayed plan.
The independent reference enumerates every assignment vector on tiny instances.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from mechanisms.base import ActionError, Mechanism, Solution, require_int
from mechanisms.registry import register
from schemas.envspec import Action, ArgSpec, OperationSpec

MAX_SITES = 12  # the exact enumeration visits 2^m subsets
MAX_CUSTOMERS = 60
STICKER_REDRAWS = 24  # the sampler redraws posted figures that would make the default near-optimal
NEAR_OPTIMAL = 0.97  # ... that is, its position g between idle and optimal above this
OPEN_SCALE = (0.1, 0.4)  # opening costs, as a share of a typical total service cost
PENALTY_QUANTILE = (0.75, 0.95)  # the unserved penalty per unit: this quantile of the service costs


def _require_int(args: dict[str, Any], name: str, low: int, high: int) -> int:
    value = args.get(name)
    if isinstance(value, float) and not math.isfinite(value):
        raise ActionError(f"argument {name!r} must be an integer, got {value!r}")
    return require_int(args, name, low, high)


class FacilityParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    demand: list[float] = Field(min_length=1, max_length=MAX_CUSTOMERS)
    open_cost: list[float] = Field(min_length=1, max_length=MAX_SITES)
    service_cost: list[list[float]] = Field(min_length=1, max_length=MAX_SITES)
    unserved_penalty: float
    posted_open_cost: list[float]
    posted_service_cost: list[list[float]]

    @model_validator(mode="before")
    @classmethod
    def _default_posted(cls, data: Any) -> Any:
        if isinstance(data, dict):
            if "posted_open_cost" not in data and "open_cost" in data:
                data = {**data, "posted_open_cost": data["open_cost"]}
            if "posted_service_cost" not in data and "service_cost" in data:
                data = {**data, "posted_service_cost": data["service_cost"]}
        return data

    @model_validator(mode="after")
    def _shapes(self) -> FacilityParams:
        n, m = len(self.demand), len(self.open_cost)
        for name in ("service_cost", "posted_service_cost"):
            matrix = getattr(self, name)
            if len(matrix) != m:
                raise ValueError(f"{name} must have one row per site ({m}), got {len(matrix)}")
            for i, row in enumerate(matrix, start=1):
                if len(row) != n:
                    raise ValueError(f"{name} row {i} must have one entry per customer ({n}), got {len(row)}")
        if len(self.posted_open_cost) != m:
            raise ValueError(f"posted_open_cost must have one entry per site ({m}), "
                             f"got {len(self.posted_open_cost)}")
        numbers = [*self.demand, *self.open_cost, self.unserved_penalty, *self.posted_open_cost,
                   *(x for row in self.service_cost for x in row),
                   *(x for row in self.posted_service_cost for x in row)]
        if not all(math.isfinite(x) for x in numbers):
            raise ValueError("demand, costs and unserved_penalty must be finite numbers")
        if min(self.demand) <= 0:
            raise ValueError("demand must be positive for every customer")
        if min(self.open_cost) < 0:
            raise ValueError("open_cost must be non-negative")
        if min(x for row in self.service_cost for x in row) < 0:
            raise ValueError("service_cost must be non-negative")
        if self.unserved_penalty <= 0:
            raise ValueError("unserved_penalty must be positive")
        return self

    @property
    def customers(self) -> int:
        return len(self.demand)

    @property
    def sites(self) -> int:
        return len(self.open_cost)


def _subset_costs(open_cost: np.ndarray, unit_cost: np.ndarray, demand: np.ndarray,
                  penalty: float) -> np.ndarray:
    """Total cost of every open subset (bit i of the index: site i+1 open), customers at their cheapest option.

    ``best[S, j]`` (the cheapest way to handle customer j with the sites of S) is built one site at a
    time: the subsets holding site b are those without it, with site b added.
    """
    m, n = unit_cost.shape
    per_customer = demand[None, :] * unit_cost  # the cost of serving each customer from each site
    best = np.empty((1 << m, n))
    opening = np.zeros(1 << m)
    best[0] = penalty * demand
    for b in range(m):
        low, high = 1 << b, 1 << (b + 1)
        best[low:high] = np.minimum(best[:low], per_customer[b][None, :])
        opening[low:high] = opening[:low] + open_cost[b]
    return opening + best.sum(axis=1)


def _plan_cost(p: FacilityParams, open_sites: list[int], assignment: list[int | None]) -> float:
    """The cost of a plan: open sites (1-based) and each customer's site (1-based) or None (unserved)."""
    total = float(sum(p.open_cost[i - 1] for i in open_sites))
    for j, site in enumerate(assignment):
        rate = p.unserved_penalty if site is None else p.service_cost[site - 1][j]
        total += p.demand[j] * rate
    return total


class FacilityLocation(Mechanism[FacilityParams]):
    id = "facility_location"
    version = 1
    group = "far_ood_probe"
    summary = "open candidate sites and assign customers to them at least total cost; exact subset enumeration"
    Params = FacilityParams
    size_range = (4, 30)  # customers
    horizon_range = (2, 12)  # candidate sites
    default_size = 10
    default_horizon = 6
    difficulty_grid = [(6, 3), (10, 6), (15, 8), (20, 10), (30, 12)]
    u0_band = (0.2, 0.97)
    turn_slack = 1  # tight probe budget: probing every site and customer does not fit

    def sample(self, rng: np.random.Generator, size: int, horizon: int) -> FacilityParams:
        n, m = int(size), int(horizon)
        sites = rng.uniform(0.0, 100.0, (m, 2))
        customers = rng.uniform(0.0, 100.0, (n, 2))
        distance = np.linalg.norm(sites[:, None, :] - customers[None, :, :], axis=2)
        rate = rng.uniform(0.5, 1.5)
        access = np.exp(rng.normal(0.0, 0.35, m))  # how much worse than straight-line each site's roads are
        road = np.exp(rng.normal(0.0, 0.15, (m, n)))
        service = np.round(rate * distance * access[:, None] * road + 1.0, 1)
        demand = rng.integers(1, 11, n).astype(float)
        spread = float(demand.sum()) * rate * 100.0 / math.sqrt(n + m)
        open_cost = np.round(rng.uniform(*OPEN_SCALE, m) * spread / math.sqrt(m), 0)
        penalty = float(np.round(np.quantile(service, rng.uniform(*PENALTY_QUANTILE)), 1))
        posted_service = np.round(rate * distance + 1.0, 1).tolist()
        data = {"demand": demand.tolist(), "open_cost": open_cost.tolist(), "service_cost": service.tolist(),
                "unserved_penalty": max(penalty, 1.0), "posted_service_cost": posted_service}
        params = FacilityParams(**data, posted_open_cost=self._posted(rng, open_cost))
        outcome = self.outcome(params)
        for _ in range(STICKER_REDRAWS):
            gap = outcome.solution.u_star - outcome.u_idle
            if gap <= 0 or (outcome.u0 - outcome.u_idle) / gap <= NEAR_OPTIMAL:
                break
            params = FacilityParams(**data, posted_open_cost=self._posted(rng, open_cost))
            outcome = self.outcome(params)
        return params

    @staticmethod
    def _posted(rng: np.random.Generator, open_cost: np.ndarray) -> list[float]:
        """Posted opening quotes: the true costs under a multiplicative, log-normal error."""
        return np.round(open_cost * np.exp(rng.normal(0.0, 0.5, len(open_cost))), 0).tolist()

    def solve(self, params: FacilityParams) -> Solution:
        p = params
        unit = np.asarray(p.service_cost, dtype=float)
        demand = np.asarray(p.demand, dtype=float)
        costs = _subset_costs(np.asarray(p.open_cost, dtype=float), unit, demand, p.unserved_penalty)
        mask = int(np.argmin(costs))  # ties: the lowest index, so the fewest / lowest-numbered sites
        open_sites = [i + 1 for i in range(p.sites) if mask >> i & 1]
        actions = [Action(op="open_site", args={"site": i}) for i in open_sites]
        for j in range(p.customers):
            site = min(open_sites, key=lambda i: (unit[i - 1, j], i), default=None)
            if site is not None and demand[j] * unit[site - 1, j] < demand[j] * p.unserved_penalty:
                actions.append(Action(op="assign_customer", args={"customer": j + 1, "site": site}))
        actions.append(Action(op="commit_plan"))
        state = self.initial_state(p)
        for action in actions:
            self.apply(p, state, action)
        u_star = self.utility(p, state)
        if abs(-u_star - float(costs[mask])) > 1e-9 * max(1.0, abs(u_star)):
            raise RuntimeError(f"replayed plan costs {-u_star}, the enumeration found {costs[mask]}")
        served = sum(1 for a in actions if a.op == "assign_customer")
        facts = {"sites": p.sites, "customers": p.customers, "subsets": 1 << p.sites, "open_sites": open_sites,
                 "served": served, "unserved": p.customers - served, "total_cost": -u_star}
        return Solution(u_star, actions, "exhaustive enumeration of open-site subsets, cheapest option per "
                        "customer", facts)

    def default_actions(self, params: FacilityParams) -> list[Action]:
        """Greedy opening by the posted figures, then every customer to its nearest open site (posted rates).

        Starting with nothing open, repeatedly open the site that lowers the posted total the most (posted
        opening quotes plus every customer served at the posted rate of its nearest open site; with no
        site open, the penalty), until no site lowers it; never probes.
        """
        p = params
        posted = np.asarray(p.posted_service_cost, dtype=float)
        demand = np.asarray(p.demand, dtype=float)
        chosen: list[int] = []

        def posted_total(sites: list[int]) -> float:
            nearest = posted[sites].min(axis=0)
            return float(sum(p.posted_open_cost[i] for i in sites) + demand @ nearest)

        current = float(p.unserved_penalty * demand.sum())
        while len(chosen) < p.sites:
            options = [(posted_total([*chosen, i]), i) for i in range(p.sites) if i not in chosen]
            value, site = min(options)
            if value >= current - 1e-9 * max(1.0, abs(current)):
                break
            chosen.append(site)
            current = value
        actions = [Action(op="read_posted_opening_cost", args={"site": 1})]
        actions += [Action(op="open_site", args={"site": i + 1}) for i in chosen]
        for j in range(p.customers):
            if chosen:
                site = min(chosen, key=lambda i: (posted[i, j], i))
                actions.append(Action(op="assign_customer", args={"customer": j + 1, "site": site + 1}))
        actions.append(Action(op="commit_plan"))
        return actions

    def operations(self, params: FacilityParams) -> list[OperationSpec]:
        p = params
        site = {"site": ArgSpec(type="integer", description="site number", minimum=1, maximum=p.sites)}
        customer = {"customer": ArgSpec(type="integer", description="customer number", minimum=1,
                                        maximum=p.customers)}
        return [
            OperationSpec(name="probe_opening_cost", kind="probe", args=site,
                          summary="the true cost of opening one site"),
            OperationSpec(name="probe_service_costs", kind="probe", args=customer,
                          summary="the true cost per unit of serving one customer from every site"),
            OperationSpec(name="read_posted_opening_cost", kind="info", args=site, decoy=True,
                          summary="the posted opening quote of one site"),
            OperationSpec(name="read_posted_rates", kind="info", args=customer, decoy=True,
                          summary="the posted rate per unit of serving one customer from every site"),
            OperationSpec(name="list_sites", kind="info", summary="the site numbers and which are open"),
            OperationSpec(name="list_customers", kind="info", summary="the customer numbers and their demands"),
            OperationSpec(name="service_terms", kind="info",
                          summary="the penalty per unit of demand of a customer left unserved"),
            OperationSpec(name="view_plan", kind="info",
                          summary="the open sites, which site serves each customer and who is unserved"),
            OperationSpec(name="open_site", kind="decision", args=site, summary="open one site"),
            OperationSpec(name="close_site", kind="decision", args=site,
                          summary="close one open site; its customers become unserved"),
            OperationSpec(name="assign_customer", kind="decision", args={**customer, **site},
                          summary="serve one customer from an open site (moves it if it is served elsewhere)"),
            OperationSpec(name="unassign_customer", kind="decision", args=customer,
                          summary="leave one customer unserved"),
            OperationSpec(name="clear_plan", kind="decision", summary="close every site and unassign everyone"),
            OperationSpec(name="commit_plan", kind="clock", summary="commit the plan; this ends the episode"),
            OperationSpec(name="finish", kind="clock", summary="stop now; the current plan stands"),
        ]

    def initial_state(self, params: FacilityParams) -> dict[str, Any]:
        return {"open": [], "assignment": [None] * params.customers, "committed": False, "finished": False}

    def apply(self, params: FacilityParams, state: dict[str, Any], action: Action) -> dict[str, Any]:
        p, op, args = params, action.op, action.args
        if op == "probe_opening_cost":
            i = _require_int(args, "site", 1, p.sites)
            return {"site": i, "opening_cost": p.open_cost[i - 1]}
        if op == "probe_service_costs":
            j = _require_int(args, "customer", 1, p.customers)
            return {"customer": j, "cost_per_unit_from": {f"site {i + 1}": p.service_cost[i][j - 1]
                                                          for i in range(p.sites)}}
        if op == "read_posted_opening_cost":
            i = _require_int(args, "site", 1, p.sites)
            return {"site": i, "posted_opening_cost": p.posted_open_cost[i - 1]}
        if op == "read_posted_rates":
            j = _require_int(args, "customer", 1, p.customers)
            return {"customer": j, "posted_rate_per_unit_from": {f"site {i + 1}": p.posted_service_cost[i][j - 1]
                                                                 for i in range(p.sites)}}
        if op == "list_sites":
            return {"sites": list(range(1, p.sites + 1)), "open": list(state["open"])}
        if op == "list_customers":
            return {"demand": {f"customer {j + 1}": p.demand[j] for j in range(p.customers)}}
        if op == "service_terms":
            return {"unserved_penalty_per_unit": p.unserved_penalty}
        if op == "view_plan":
            served = {f"customer {j + 1}": site for j, site in enumerate(state["assignment"]) if site is not None}
            unserved = [j + 1 for j, site in enumerate(state["assignment"]) if site is None]
            return {"open_sites": list(state["open"]), "served_from": served, "unserved": unserved}
        if op == "open_site":
            i = _require_int(args, "site", 1, p.sites)
            if i in state["open"]:
                raise ActionError(f"site {i} is already open")
            state["open"] = sorted([*state["open"], i])
            return {"open_sites": list(state["open"])}
        if op == "close_site":
            i = _require_int(args, "site", 1, p.sites)
            if i not in state["open"]:
                raise ActionError(f"site {i} is not open")
            state["open"] = [k for k in state["open"] if k != i]
            dropped = [j + 1 for j, site in enumerate(state["assignment"]) if site == i]
            state["assignment"] = [None if site == i else site for site in state["assignment"]]
            return {"open_sites": list(state["open"]), "now_unserved": dropped}
        if op == "assign_customer":
            j = _require_int(args, "customer", 1, p.customers)
            i = _require_int(args, "site", 1, p.sites)
            if i not in state["open"]:
                raise ActionError(f"site {i} is not open; open it first")
            if state["assignment"][j - 1] == i:
                raise ActionError(f"customer {j} is already served from site {i}")
            state["assignment"][j - 1] = i
            return {"customer": j, "site": i}
        if op == "unassign_customer":
            j = _require_int(args, "customer", 1, p.customers)
            if state["assignment"][j - 1] is None:
                raise ActionError(f"customer {j} is not served")
            state["assignment"][j - 1] = None
            return {"customer": j, "unserved": True}
        if op == "clear_plan":
            state["open"] = []
            state["assignment"] = [None] * p.customers
            return {"cleared": True}
        if op == "commit_plan":
            state.update(committed=True, finished=True)
            return {"open_sites": list(state["open"]), "finished": True}
        if op == "finish":
            state["finished"] = True
            return {"open_sites": list(state["open"]), "finished": True}
        raise ActionError(f"unknown operation {op!r}")

    def utility(self, params: FacilityParams, state: dict[str, Any]) -> float:
        return -_plan_cost(params, state["open"], state["assignment"])

    def describe(self, params: FacilityParams, vocab: dict[str, str]) -> str:
        p, v = params, vocab
        parts = [
            f"There are {p.sites} candidate {v['sites']} and {p.customers} {v['customers']}. Opening a "
            f"{v['site']} costs a fixed amount; each {v['customer']} can be served from one open {v['site']} "
            f"at a cost per unit of demand that depends on the {v['site']}, or left unserved at a penalty of "
            f"{p.unserved_penalty:g} {v['currency']} per unit of demand. The goal is the lowest total cost "
            f"(opening plus service plus penalties)."
        ]
        opening = "; ".join(f"{i + 1}: {p.open_cost[i]:g} (quoted {p.posted_open_cost[i]:g})" for i in range(p.sites))
        parts.append(f"Opening cost of each {v['site']}, with the {v['sticker']} quote in brackets: {opening}.")
        parts.append(f"Per {v['customer']}: its demand, then its cost per unit of demand from {v['sites']} 1 to "
                     f"{p.sites} in order.")
        rows = [f"{j + 1} (demand {p.demand[j]:g}): " + " ".join(f"{p.service_cost[i][j]:g}" for i in range(p.sites))
                for j in range(p.customers)]
        parts.append("; ".join(rows) + ".")
        parts.append(f"The {v['sticker']} quotes and the posted rates (straight-line estimates, readable with a "
                     f"tool) are not the true costs.")
        return " ".join(parts)

    def secret_numbers(self, params: FacilityParams) -> list[float]:
        p = params
        return [*(x for x in p.open_cost if x != 0), *(x for row in p.service_cost for x in row if x != 0)]

    def probe_allowance(self, params: FacilityParams) -> int:
        return (params.sites + params.customers) // 2

    def public_numbers(self, params: FacilityParams) -> list[float]:
        p = params
        return [p.sites, p.customers, *range(1, max(p.sites, p.customers) + 1)]


register(FacilityLocation())
