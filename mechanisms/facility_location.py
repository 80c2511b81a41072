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
  access; when omitted from data they equal the true ones). Each kind is posted on one sheet: one call
  shows every site's quote, one every customer's rates.
The knobs: ``size`` is the number of customers n (4..60), ``horizon`` the number of candidate sites
m (2..16).
Dynamics: open sites (several in one call) or close one, serve customers from an open site (several in one
call; serving one that is served elsewhere moves it), unassign; closing a site leaves its customers unserved;
``commit_plan`` or ``finish`` ends the episode. No decision shows a cost: the ending (the closing call, or the
last turn of the budget) states the total cost and its parts (``ledger``).
Probes verify groups: one site's opening cost, or one customer's service costs from every site. The probe
allowance covers every group; the difficulty tiers grant a share of it (at the hard and frontier tiers full
information does not fit). The players believe only what their calls showed (``believed``): the informed agent
scales the posted rates by each site's road factor, read off the rows it has verified.
Solved exactly by enumerating all 2^m open subsets (a table of each customer's cheapest option over
the subset, built one site at a time) and taking the cheapest; each customer then goes to its cheapest
open site, or stays unserved when the penalty is cheaper. u* is the utility of the replayed plan.
The independent references: every assignment vector on tiny instances, a plain subset enumeration and HiGHS
(scipy.optimize.milp) at the frontier sizes (tests).
"""

from __future__ import annotations

import math
from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from mechanisms.base import NEAR_OPTIMAL, ActionError, Mechanism, Solution, Tier
from mechanisms.facts import BUDGET_END, END, OBJECTIVE, Fact, probed, rule
from mechanisms.operations import Between, Observation, State, clock, decision, info, probe
from mechanisms.params import finite, flat, non_negative, one_entry_each, positive, rows_of, stickers_default_to_truth
from mechanisms.players import Knowledge, Policy, Seat
from mechanisms.prose import figure
from mechanisms.registry import register
from schemas.envspec import Action

MAX_SITES = 16  # the exact enumeration visits 2^m subsets (65,536 at 16 sites, in a few tens of ms)
MAX_CUSTOMERS = 60
OPEN_SCALE = (0.1, 0.4)  # opening costs, as a share of a typical total service cost
PENALTY_QUANTILE = (0.75, 0.95)  # the unserved penalty per unit: this quantile of the service costs


class FacilityParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    demand: list[float] = Field(min_length=1, max_length=MAX_CUSTOMERS)
    open_cost: list[float] = Field(min_length=1, max_length=MAX_SITES)
    service_cost: list[list[float]] = Field(min_length=1, max_length=MAX_SITES)
    unserved_penalty: float
    posted_open_cost: list[float]
    posted_service_cost: list[list[float]]

    _default_posted = stickers_default_to_truth(posted_open_cost="open_cost", posted_service_cost="service_cost")

    @model_validator(mode="after")
    def _shapes(self) -> FacilityParams:
        n, m = len(self.demand), len(self.open_cost)
        for name in ("service_cost", "posted_service_cost"):
            matrix = getattr(self, name)
            if len(matrix) != m:
                raise ValueError(f"{name} must have one row per site ({m}), got {len(matrix)}")
            rows_of(name, matrix, n, "customer")
        one_entry_each("posted_open_cost", self.posted_open_cost, m, "site")
        finite("demand, costs and unserved_penalty", self.demand, self.open_cost, [self.unserved_penalty],
               self.posted_open_cost, flat(self.service_cost), flat(self.posted_service_cost))
        if min(self.demand) <= 0:
            raise ValueError("demand must be positive for every customer")
        non_negative("open_cost", self.open_cost)
        non_negative("service_cost", flat(self.service_cost))
        positive("unserved_penalty", [self.unserved_penalty])
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


Site = Annotated[int, Between(1, "sites"), "site number"]  # a site number, 1..m
Sites = Annotated[list[int], Between(1, "sites", max_items="sites"), "site numbers"]  # distinct site numbers
Customer = Annotated[int, Between(1, "customers"), "customer number"]  # a customer number, 1..n
# distinct customer numbers
Customers = Annotated[list[int], Between(1, "customers", max_items="customers"),
                      "customer numbers"]


def _by_site(p: FacilityParams, rates: list[list[float]], customer: int) -> dict[str, float]:
    """One customer's column of a site x customer matrix, by site."""
    return {f"site {i + 1}": rates[i][customer - 1] for i in range(p.sites)}


class FacilityLocation(Mechanism[FacilityParams]):
    id = "facility_location"
    version = 5  # issue 30: canonical solver output (mechanisms.canonical); 4: issue 27, the prose is part of the spec
    group = "far_ood_probe"
    summary = "open candidate sites and assign customers to them at least total cost; exact subset enumeration"
    Params = FacilityParams
    size_range = (4, MAX_CUSTOMERS)  # customers
    horizon_range = (2, MAX_SITES)  # candidate sites
    default_size = 10
    default_horizon = 6
    difficulty_grid = [(6, 3), (10, 6), (15, 8), (20, 10), (30, 12)]
    difficulty_tiers = {
        "easy": Tier(((6, 3), (8, 3)), 1.0),
        "medium": Tier(((25, 10), (20, 8), (30, 10)), 1.0),
        "hard": Tier(((25, 12), (20, 10)), 0.25),
        "frontier": Tier(((40, 10), (42, 11), (44, 10)), 0.15),
    }
    u0_band = (0.2, 0.97)
    turn_slack = 1  # tight probe budget: at the hard and frontier tiers probing every site and customer does not fit

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
        u_idle = -max(penalty, 1.0) * float(sum(data["demand"]))  # the posted figures change neither u_idle nor u*

        def misleading(u0: float, u_star: float, _: FacilityParams) -> bool:
            return u_star - u_idle <= 0 or (u0 - u_idle) / (u_star - u_idle) <= NEAR_OPTIMAL

        return self.with_misleading_stickers(
            lambda: FacilityParams(**data, posted_open_cost=self._posted(rng, open_cost)), misleading)

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
        assignment = _cheapest(open_sites, unit, p.unserved_penalty)
        actions = plan_actions(open_sites, assignment)
        state = self.initial_state(p)
        for action in actions:
            self.apply(p, state, action)
        u_star = self.utility(p, state)
        if abs(-u_star - float(costs[mask])) > 1e-9 * max(1.0, abs(u_star)):
            raise RuntimeError(f"replayed plan costs {-u_star}, the enumeration found {costs[mask]}")
        served = sum(site is not None for site in assignment)
        facts = {"sites": p.sites, "customers": p.customers, "subsets": 1 << p.sites, "open_sites": open_sites,
                 "served": served, "unserved": p.customers - served, "total_cost": -u_star}
        return Solution(u_star, actions, "exhaustive enumeration of open-site subsets, cheapest option per "
                        "customer", facts)

    def default_policy(self, seat: Seat) -> None:
        """Greedy opening by the posted figures, then every customer to its nearest open site (posted rates).

        Reads both posted sheets; starting with nothing open, repeatedly opens the site that lowers the posted total
        the most (posted opening quotes plus every customer served at the posted rate of its nearest open site; with
        no site open, the penalty), until no site lowers it; never verifies a figure. Bulk calls: one to open, one
        per open site to serve its customers, one to commit.
        """
        seat.call("read_posted_opening_costs")
        seat.call("read_posted_rates")
        quotes, rates = _sheets(seat.known)
        demand = np.asarray(seat.known.public["demand"], dtype=float)
        chosen = _greedy_open(quotes, rates, demand, seat.known.public["unserved_penalty"], serve_everyone=True)
        seat.play(plan_actions(chosen, _cheapest(chosen, rates, math.inf)))

    def initial_state(self, params: FacilityParams) -> dict[str, Any]:
        return {"open": [], "assignment": [None] * params.customers, "committed": False, "finished": False}

    def ledger(self, params: FacilityParams, state: dict[str, Any]) -> dict[str, Any]:
        """The plan's outcome as a ledger states it: what is open, who is served, the total cost and its parts
        (opening, service, penalties for the unserved)."""
        p = params
        assignment = state["assignment"]
        served = sum(site is not None for site in assignment)
        unserved = [j + 1 for j, site in enumerate(assignment) if site is None]
        opening = float(sum(p.open_cost[i - 1] for i in state["open"]))
        service = float(sum(p.demand[j] * p.service_cost[site - 1][j] for j, site in enumerate(assignment)
                            if site is not None))
        penalty = float(sum(p.demand[j - 1] for j in unserved)) * p.unserved_penalty
        return {"open_sites": list(state["open"]), "served_count": served, "unserved_list": unserved,
                "opening_total": round(opening, 6), "service_total": round(service, 6),
                "penalty_total": round(penalty, 6), "total_cost": round(-self.utility(p, state), 6)}

    # --- operations -------------------------------------------------------------------------
    @probe
    def probe_opening_cost(self, p: FacilityParams, state: State, site: Site) -> Observation:
        """the true cost of opening one site"""
        return {"site": site, "opening_cost": p.open_cost[site - 1]}

    @probe
    def probe_service_costs(self, p: FacilityParams, state: State, customer: Customer) -> Observation:
        """the true cost per unit of serving one customer from every site"""
        return {"customer": customer, "cost_per_unit_from": _by_site(p, p.service_cost, customer)}

    @info(decoy=True, estimates="opening_cost")
    def read_posted_opening_costs(self, p: FacilityParams, state: State) -> Observation:
        """the posted opening quote of every site: outside estimates of the opening costs, not the true costs"""
        return {"posted_opening_cost": {f"site {i + 1}": p.posted_open_cost[i] for i in range(p.sites)}}

    @info(decoy=True, estimates="cost_per_unit_from")
    def read_posted_rates(self, p: FacilityParams, state: State) -> Observation:
        """the posted straight-line rate per unit of serving every customer from every site: outside estimates of
        the costs, not the true costs"""
        return {"posted_rate_per_unit_from": {f"customer {j + 1}": _by_site(p, p.posted_service_cost, j + 1)
                                              for j in range(p.customers)}}

    @info
    def list_sites(self, p: FacilityParams, state: State) -> Observation:
        """the site numbers and which are open"""
        return {"sites": list(range(1, p.sites + 1)), "open_sites": list(state["open"])}

    @info
    def list_customers(self, p: FacilityParams, state: State) -> Observation:
        """the customer numbers and their demands"""
        return {"demand_of": {f"customer {j + 1}": p.demand[j] for j in range(p.customers)}}

    @info
    def service_terms(self, p: FacilityParams, state: State) -> Observation:
        """the penalty per unit of demand of a customer left unserved"""
        return {"unserved_penalty_per_unit": p.unserved_penalty}

    @info
    def view_plan(self, p: FacilityParams, state: State) -> Observation:
        """the open sites, which site serves each customer and who is unserved"""
        served = {f"customer {j + 1}": site for j, site in enumerate(state["assignment"]) if site is not None}
        unserved = [j + 1 for j, site in enumerate(state["assignment"]) if site is None]
        return {"open_sites": list(state["open"]), "served_from": served, "unserved_list": unserved}

    @decision
    def open_sites(self, p: FacilityParams, state: State, sites: Sites) -> Observation:
        """open one or more sites"""
        already = [i for i in sites if i in state["open"]]
        if already:
            raise ActionError(f"site {already[0]} is already open")
        state["open"] = sorted([*state["open"], *sites])
        return {"opened": sorted(sites), "open_sites": list(state["open"])}

    @decision
    def close_site(self, p: FacilityParams, state: State, site: Site) -> Observation:
        """close one open site; its customers become unserved"""
        if site not in state["open"]:
            raise ActionError(f"site {site} is not open")
        state["open"] = [k for k in state["open"] if k != site]
        dropped = [j + 1 for j, served in enumerate(state["assignment"]) if served == site]
        state["assignment"] = [None if served == site else served for served in state["assignment"]]
        return {"open_sites": list(state["open"]), "now_unserved": dropped}

    @decision
    def serve_customers(self, p: FacilityParams, state: State, customers: Customers, site: Site) -> Observation:
        """serve one or more customers from an open site (moves those served elsewhere)"""
        if site not in state["open"]:
            raise ActionError(f"site {site} is not open; open it first")
        for j in customers:
            state["assignment"][j - 1] = site
        return {"site": site, "now_served": sorted(customers)}

    @decision
    def unassign_customer(self, p: FacilityParams, state: State, customer: Customer) -> Observation:
        """leave one customer unserved"""
        if state["assignment"][customer - 1] is None:
            raise ActionError(f"customer {customer} is not served")
        state["assignment"][customer - 1] = None
        return {"customer": customer,
                "unserved_list": [k + 1 for k, s in enumerate(state["assignment"]) if s is None]}

    @decision
    def clear_plan(self, p: FacilityParams, state: State) -> Observation:
        """close every site and unassign everyone"""
        state["open"] = []
        state["assignment"] = [None] * p.customers
        return {"open_sites": [], "unserved_list": list(range(1, p.customers + 1))}

    @clock
    def commit_plan(self, p: FacilityParams, state: State) -> Observation:
        """commit the plan; this ends the episode"""
        state["committed"] = True
        return self.finish(p, state)

    @clock
    def finish(self, p: FacilityParams, state: State) -> Observation:
        """stop now; the current plan stands"""
        state["finished"] = True
        return {"open_sites": list(state["open"]), "finished": True}

    def utility(self, params: FacilityParams, state: dict[str, Any]) -> float:
        return -_plan_cost(params, state["open"], state["assignment"])

    def facts(self, params: FacilityParams, vocab: dict[str, str]) -> list[Fact]:
        p, v = params, vocab
        demands = "; ".join(f"{j + 1}: {figure(p.demand[j])}" for j in range(p.customers))
        opening = "; ".join(f"{i + 1}: {figure(p.open_cost[i])}" for i in range(p.sites))
        quotes = "; ".join(f"{i + 1}: {figure(p.posted_open_cost[i])}" for i in range(p.sites))
        rows = "; ".join(f"{j + 1}: " + " ".join(f"{figure(p.service_cost[i][j])}" for i in range(p.sites))
                         for j in range(p.customers))
        return [
            rule("structure", f"There are {p.sites} {v['sites']} that may open, numbered 1 to {p.sites}, and "
                 f"{p.customers} {v['customers']}, numbered 1 to {p.customers}.", p.sites, p.customers),
            rule("demand", f"The demand of each of the {v['customers']}, in units: {demands}.", *p.demand),
            rule("penalty", f"Each {v['customer']} left unserved costs {figure(p.unserved_penalty)} "
                            f"{v['currency']} per "
                 "unit of its demand.", p.unserved_penalty),
            probed("opening_costs", "probe_opening_cost", f"The true cost of opening each {v['site']}, in "
                   f"{v['currency']}: {opening}.", p.open_cost),
            probed("service_costs", "probe_service_costs", f"The true cost per unit of demand of serving each "
                   f"{v['customer']}, from {v['sites']} 1 to {p.sites} in order, in {v['currency']}: {rows}.",
                   [x for row in p.service_cost for x in row]),
            probed("quotes", "read_posted_opening_costs", f"The {v['source']} quotes these opening costs in "
                   f"{v['currency']} (an outside estimate, not the true cost): {quotes}.", p.posted_open_cost),
            rule("constraints", f"Every {v['site']} must be open before it serves anyone; each {v['customer']} is "
                 f"served from at most one open {v['site']}, and serving it from another moves it there; closing "
                 f"any {v['site']} leaves its {v['customers']} unserved. An open {v['site']} costs its opening cost "
                 "whether or not it serves anyone."),
            rule(OBJECTIVE, f"Your result is minus the total cost in {v['currency']}: the opening costs of the "
                 f"open {v['sites']}, plus, for each served {v['customer']}, its demand times the cost per unit of "
                 f"serving it from its {v['site']}, plus, for each unserved {v['customer']}, its demand times "
                 f"{figure(p.unserved_penalty)}.", p.unserved_penalty),
            rule(END, "Committing the plan ends the episode, and so does walking away; either way the plan as it "
                 "stands counts."),
            rule(BUDGET_END, "If the turns run out before you commit, the plan as it stands counts: its open "
                 f"{v['sites']}, its served {v['customers']} and its unserved ones."),
        ]

    def public_view(self, params: FacilityParams) -> dict[str, Any]:
        p = params
        return {"sites": p.sites, "customers": p.customers, "demand": list(p.demand),
                "unserved_penalty": p.unserved_penalty}

    def probe_order(self, known: Knowledge) -> list[Action]:
        """The rows of the two customers with the largest demand first (a row shows every site's true rates, so
        each site's road factor), then every other probe, largest expected error first, judged from the posted
        sheets: a site's opening quote is off by about half of itself, a customer's row of rates by about a third
        of its demand times its cheapest posted rate."""
        sites, customers = known.public["sites"], known.public["customers"]
        demand = known.public["demand"]
        quotes, rates = _sheets(known)
        biggest = sorted(range(customers), key=lambda j: (-demand[j], j))[:2]
        scored = [(0.5 * float(quotes[i]), 0, i + 1) for i in range(sites)]
        scored += [(0.35 * demand[j] * float(rates[:, j].min()), 1, j + 1) for j in range(customers)
                   if j not in biggest]
        scored.sort(key=lambda t: (-t[0], t[1], t[2]))
        return [*(Action(op="probe_service_costs", args={"customer": j + 1}) for j in biggest),
                *(Action(op="probe_opening_cost", args={"site": k}) if kind == 0 else
                  Action(op="probe_service_costs", args={"customer": k}) for _, kind, k in scored)]

    def believed(self, known: Knowledge) -> FacilityParams:
        """Verified opening costs and rows of service costs are true; an unverified opening cost is its posted quote;
        an unverified service cost is the posted rate scaled by the site's road factor, read off the verified rows
        (the median ratio of true to posted rate above the fixed 1 per unit; 1 when no row is verified). Without
        the sheets: an opening cost is the mean of the verified ones (0 when none is), a rate the penalty."""
        sites, customers = known.public["sites"], known.public["customers"]
        penalty = float(known.public["unserved_penalty"])
        quotes, posted = _sheets(known)
        surveyed = {seen["site"]: float(seen["opening_cost"]) for _, seen in known.observations("probe_opening_cost")}
        rows = {seen["customer"]: [float(seen["cost_per_unit_from"][f"site {i + 1}"]) for i in range(sites)]
                for _, seen in known.observations("probe_service_costs")}
        open_cost = [surveyed.get(i + 1, float(quotes[i])) for i in range(sites)]
        service = []
        for i in range(sites):
            ratios = [(rows[j][i] - 1.0) / (posted[i, j - 1] - 1.0) for j in rows if posted[i, j - 1] > 1.5]
            factor = float(np.median(ratios)) if ratios else 1.0
            service.append([rows[j + 1][i] if j + 1 in rows else
                            round(max(0.0, (float(posted[i, j]) - 1.0) * factor + 1.0), 6)
                            for j in range(customers)])
        return FacilityParams(demand=list(known.public["demand"]), open_cost=open_cost, service_cost=service,
                              unserved_penalty=penalty, posted_open_cost=[float(x) for x in quotes],
                              posted_service_cost=posted.tolist())

    def heuristic_policies(self) -> dict[str, Policy]:
        """nearest_surveyed: survey every opening cost and every row of service costs, then serve each of the
        customers from its cheapest site (opening those sites, whatever they cost to open), or leave it unserved
        where the penalty is cheaper. one_site_surveyed: the same surveys, then open the one site that is
        cheapest on its own. greedy_quotes_surveyed: read the posted rates, survey the opening costs only, then open
        sites greedily (the one that lowers the total most, while one does) on them and the posted rates, and serve
        everyone at the cheapest open site by the posted rates. greedy_big_surveyed: read both sheets, survey the
        rows of the biggest third of the customers, then open greedily on the quotes, those rows and the posted
        rates. Each acts on what its surveys showed, whatever the turns left it."""

        def survey(seat: Seat, sites: bool, customers: list[int]) -> FacilityParams:
            if sites:
                for i in range(1, seat.known.public["sites"] + 1):
                    seat.call("probe_opening_cost", site=i)
            for j in customers:
                seat.call("probe_service_costs", customer=j)
            return self.believed(seat.known)

        def everyone(seat: Seat) -> list[int]:
            return list(range(1, seat.known.public["customers"] + 1))

        def nearest_surveyed(seat: Seat) -> None:
            b = survey(seat, True, everyone(seat))
            unit = np.asarray(b.service_cost, dtype=float)
            nearest = sorted({int(np.argmin(unit[:, j])) + 1 for j in range(b.customers)
                              if unit[:, j].min() < b.unserved_penalty})
            seat.play(plan_actions(nearest, _cheapest(nearest, unit, b.unserved_penalty)))

        def one_site_surveyed(seat: Seat) -> None:
            b = survey(seat, True, everyone(seat))
            unit = np.asarray(b.service_cost, dtype=float)
            demand = np.asarray(b.demand, dtype=float)
            alone = min(range(b.sites),
                        key=lambda i: (b.open_cost[i] + demand @ np.minimum(unit[i], b.unserved_penalty), i))
            seat.play(plan_actions([alone + 1], _cheapest([alone + 1], unit, b.unserved_penalty)))

        def greedy_quotes_surveyed(seat: Seat) -> None:
            seat.call("read_posted_rates")
            b = survey(seat, True, [])
            posted = np.asarray(b.posted_service_cost, dtype=float)
            greedy = _greedy_open(np.asarray(b.open_cost, dtype=float), posted, np.asarray(b.demand, dtype=float),
                                  b.unserved_penalty)
            seat.play(plan_actions(greedy, _cheapest(greedy, posted, b.unserved_penalty)))

        def greedy_big_surveyed(seat: Seat) -> None:
            seat.call("read_posted_opening_costs")
            seat.call("read_posted_rates")
            demand = seat.known.public["demand"]
            big = sorted(range(len(demand)), key=lambda j: (-demand[j], j))[: (len(demand) + 2) // 3]
            b = survey(seat, False, [j + 1 for j in big])
            mixed = np.asarray(b.posted_service_cost, dtype=float)
            mixed[:, big] = np.asarray(b.service_cost, dtype=float)[:, big]
            greedy = _greedy_open(np.asarray(b.posted_open_cost, dtype=float), mixed, np.asarray(b.demand, dtype=float),
                                  b.unserved_penalty)
            seat.play(plan_actions(greedy, _cheapest(greedy, mixed, b.unserved_penalty)))

        return {"nearest_surveyed": nearest_surveyed, "one_site_surveyed": one_site_surveyed,
                "greedy_quotes_surveyed": greedy_quotes_surveyed, "greedy_big_surveyed": greedy_big_surveyed}

    def secret_numbers(self, params: FacilityParams) -> list[float]:
        p = params
        return [*(x for x in p.open_cost if x != 0), *(x for row in p.service_cost for x in row if x != 0)]

    def probe_allowance(self, params: FacilityParams) -> int:
        """Every opening cost and every row of service costs (the tiers grant a share of it)."""
        return params.sites + params.customers

    def public_numbers(self, params: FacilityParams) -> list[float]:
        p = params
        return [p.sites, p.customers, *range(1, max(p.sites, p.customers) + 1), *p.demand, p.unserved_penalty]


def _cheapest(open_sites: list[int], unit: np.ndarray, penalty: float) -> list[int | None]:
    """Each customer's cheapest open site (1-based; ties: the lowest number), or None where the penalty is
    cheaper."""
    assignment: list[int | None] = []
    for j in range(unit.shape[1]):
        site = min(open_sites, key=lambda i: (unit[i - 1, j], i), default=None)
        assignment.append(site if site is not None and unit[site - 1, j] < penalty else None)
    return assignment


def _sheets(known: Knowledge) -> tuple[np.ndarray, np.ndarray]:
    """The posted opening quotes and the posted rates (site x customer) as the sheets showed them. A sheet not read:
    each quote the mean of the verified opening costs (0 when none is verified), each rate the unserved penalty."""
    sites, customers = known.public["sites"], known.public["customers"]
    quotes_seen = known.latest("read_posted_opening_costs")
    if quotes_seen is not None:
        quotes = np.asarray([float(quotes_seen["posted_opening_cost"][f"site {i + 1}"]) for i in range(sites)])
    else:
        verified = [float(seen["opening_cost"]) for _, seen in known.observations("probe_opening_cost")]
        quotes = np.full(sites, float(np.mean(verified)) if verified else 0.0)
    rates_seen = known.latest("read_posted_rates")
    if rates_seen is not None:
        table = rates_seen["posted_rate_per_unit_from"]
        rates = np.asarray([[float(table[f"customer {j + 1}"][f"site {i + 1}"]) for j in range(customers)]
                            for i in range(sites)])
    else:
        rates = np.full((sites, customers), float(known.public["unserved_penalty"]))
    return quotes, rates


def _greedy_open(open_cost: np.ndarray, unit: np.ndarray, demand: np.ndarray, penalty: float,
                 serve_everyone: bool = False) -> list[int]:
    """Greedy opening (1-based sites): repeatedly open the site that lowers the total most, while one does. The
    total serves each customer at its cheapest open site, or at the penalty (always, with nothing open; else only
    where cheaper, unless `serve_everyone`)."""
    m = unit.shape[0]
    chosen: list[int] = []

    def total(sites: list[int]) -> float:
        nearest = unit[sites].min(axis=0)
        if not serve_everyone:
            nearest = np.minimum(nearest, penalty)
        return float(sum(open_cost[i] for i in sites) + demand @ nearest)

    current = float(penalty * demand.sum())
    while len(chosen) < m:
        value, site = min((total([*chosen, i]), i) for i in range(m) if i not in chosen)
        if value >= current - 1e-9 * max(1.0, abs(current)):
            break
        chosen.append(site)
        current = value
    return sorted(i + 1 for i in chosen)


def plan_actions(open_sites: list[int], assignment: list[int | None]) -> list[Action]:
    """A plan in bulk calls: open every site at once, serve each open site's customers at once, commit."""
    actions = [Action(op="open_sites", args={"sites": list(open_sites)})] if open_sites else []
    for i in open_sites:
        served = [j + 1 for j, site in enumerate(assignment) if site == i]
        if served:
            actions.append(Action(op="serve_customers", args={"customers": served, "site": i}))
    actions.append(Action(op="commit_plan"))
    return actions


register(FacilityLocation())
