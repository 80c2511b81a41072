"""routing: one vehicle leaves the depot, visits stops at most once each and returns (a travelling-salesman tour).

Parameters (all can be given as data):
- ``distances``: an (n+1) x (n+1) matrix of the true length of every leg (hidden); row and column 0 are
  the depot, rows/columns 1..n the stops. Entries are finite and non-negative, the diagonal is zero,
  and the matrix may be asymmetric (``distances[i][j]`` is the leg from i to j).
- ``posted_distances``: the posted map's estimate of every leg, same shape and rules (a decoy the
  default policy trusts: it drives the map's shortest tour; when omitted from data it equals ``distances``)
- ``unvisited_penalty``: the charge for every stop still unvisited when the episode ends (hidden,
  non-negative); it makes skipping stops costly, so that doing nothing is worse than driving a tour.
Dynamics: the vehicle drives from where it is to an unvisited stop (a decision), or along a whole list of
unvisited stops in one call (the bulk form the reference plans use); the last leg can be undone or the
whole route cleared while planning; returning to the depot, or finishing, ends the episode. The utility of
a state is ``u = -(distance of the legs driven + the leg from the current position back to the depot +
unvisited_penalty x stops not visited)``: it treats the episode as ending now with the vehicle driving straight
home. Every state is a simple depot path, so no play can beat u*.
The knobs: ``size`` is the number of stops n (4..24); ``horizon`` (1..12) is how many legs of the posted
map's shortest tour (the default's route) the map badly understates (their true length is 2.5-4 times the posted
one, as after a closure, in both directions); from 6 on they are drawn from the legs of that tour and of the map's
nearest-neighbour route (the route a greedy plan takes); it is clipped to the number of those legs.
The sampler draws n+1 points in a 100 x 100 square; the posted map is the rounded straight-line
distance, the true legs are 0-30 % longer (independently per direction), and the penalty is 1-1.5
times the longest depot round trip.
Solved exactly by Held-Karp dynamic programming over subsets up to 12 stops (vectorised with numpy, one
popcount layer at a time): the shortest depot path through each subset ending at each stop, then the best
subset to visit given the penalty (normally every stop). Beyond that, an exact mixed-integer program solved by
HiGHS (scipy.optimize.milp, console silenced): a binary per leg and per stop visited, degree constraints, and
generalised subtour-elimination cuts added while the solution has a cycle that misses the depot (re-solved
until it has none, so the optimum is exact). Both are checked against brute force and each other.

Hidden mode: every leg is posted on the map, one sheet showing them all (the decoy the default trusts); the true
length of each leg comes from its own survey (one call a leg: choosing which legs to verify is the skill), the
charge from its own probe. That legs are one-way and need not obey the triangle inequality is a rule every mode
states. The lengths driven are shown only when the round ends (its ledger: the route with the way back, its length
before and with the return leg, the charges, the total cost). The informed agent reads the map and surveys the
legs of the map's shortest tour, then those of its nearest-neighbour route, then each place's legs to its nearest
places, then the rest, shortest first; it believes a surveyed leg, else a surveyed reverse leg, else the map scaled
by the typical surveyed/posted ratio.
"""

from __future__ import annotations

import functools
import math
from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from mechanisms.base import ActionError, Mechanism, Solution, Tier
from mechanisms.facts import BUDGET_END, END, OBJECTIVE, Fact, probed, rule
from mechanisms.operations import Between, Observation, State, clock, decision, info, probe
from mechanisms.params import stickers_default_to_truth
from mechanisms.players import Knowledge, Policy, Seat
from mechanisms.prose import figure
from mechanisms.registry import register
from schemas.envspec import Action

MAX_STOPS = 24
HELD_KARP_STOPS = 15  # Held-Karp keeps 2^n x n path lengths (491,520 at 15 stops, about 20 ms); the MILP solves beyond
BAD_FACTOR = (2.5, 4.0)  # how much longer than posted a badly understated leg really is
NN_CLOSURES = 6  # from this many understated legs on, they may lie on the map's nearest-neighbour route too
REDRAWS = 24  # the sampler redraws the understated legs while the default would already be optimal
NEAR_LEGS = 3  # after the map's tour, the informed agent surveys each place's legs to its nearest places on the map


def _check_matrix(name: str, matrix: list[list[float]], nodes: int) -> None:
    if len(matrix) != nodes:
        raise ValueError(f"{name} must have {nodes} rows (depot plus stops), got {len(matrix)}")
    for i, row in enumerate(matrix):
        if len(row) != nodes:
            raise ValueError(f"{name} row {i} must have {nodes} entries (a square matrix), got {len(row)}")
        for j, x in enumerate(row):
            if not math.isfinite(x):
                raise ValueError(f"{name}[{i}][{j}] must be a finite number, got {x!r}")
            if x < 0:
                raise ValueError(f"{name}[{i}][{j}] must be non-negative, got {figure(x)}")
        if row[i] != 0:
            raise ValueError(f"{name}[{i}][{i}] must be zero (the diagonal), got {figure(row[i])}")


class RoutingParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    distances: list[list[float]] = Field(min_length=2, max_length=MAX_STOPS + 1)
    posted_distances: list[list[float]]
    unvisited_penalty: float = Field(ge=0, allow_inf_nan=False)

    _default_posted = stickers_default_to_truth(posted_distances="distances")

    @model_validator(mode="after")
    def _shapes(self) -> RoutingParams:
        nodes = len(self.distances)
        _check_matrix("distances", self.distances, nodes)
        _check_matrix("posted_distances", self.posted_distances, nodes)
        return self

    @property
    def stops(self) -> int:
        return len(self.distances) - 1


def _nearest_neighbour(matrix: np.ndarray) -> list[int]:
    """Stops in nearest-neighbour order from the depot (ties to the lowest number)."""
    n = matrix.shape[0] - 1
    here, left, order = 0, set(range(1, n + 1)), []
    while left:
        here = min(left, key=lambda j: (matrix[here, j], j))
        order.append(here)
        left.discard(here)
    return order


@functools.cache  # n <= HELD_KARP_STOPS
def _popcounts(n: int) -> np.ndarray:
    """The number of stops in each mask of n stops (read-only: every solve of n stops shares it)."""
    masks = np.arange(1 << n)
    counts = ((masks[:, None] >> np.arange(n)[None, :]) & 1).sum(axis=1)
    counts.flags.writeable = False
    return counts


@functools.cache  # n <= HELD_KARP_STOPS
def _extensions(n: int) -> tuple[tuple[tuple[int, np.ndarray], ...], np.ndarray]:
    """Held-Karp's steps for n stops, in order: per popcount layer s = 1 .. n-1 and next stop j, the masks of the
    layer that stop j+1 extends; and positions 0, 1, ... as long as the longest of them (read-only, shared)."""
    popcount, masks, bits = _popcounts(n), np.arange(1 << n), 1 << np.arange(n)
    steps = []
    for s in range(1, n):
        layer = masks[popcount == s]
        for j in range(n):
            rows = layer[(layer & bits[j]) == 0]
            rows.flags.writeable = False
            steps.append((j, rows))
    positions = np.arange(max((len(rows) for _, rows in steps), default=0))
    positions.flags.writeable = False
    return tuple(steps), positions


def _held_karp(dist: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """cost[mask, k]: the shortest path from the depot through exactly the stops in mask, ending at stop k+1.

    Bit k of a mask is stop k+1. One popcount layer at a time and one next stop j at a time: every (mask + j, j)
    comes from exactly one smaller mask without j, so the layer is a vectorised min over the previous stop (the
    first on a tie). parent[mask, k] is that stop.
    """
    n = dist.shape[0] - 1
    full = 1 << n
    cost = np.full((full, n), np.inf)
    parent = np.full((full, n), -1, dtype=np.int64)
    bits = 1 << np.arange(n)
    cost[bits, np.arange(n)] = dist[0, 1:]
    into = np.ascontiguousarray(dist[1:, 1:].T)  # into[j, k]: the leg from stop k+1 to stop j+1
    steps, positions = _extensions(n)
    for j, rows in steps:  # the masks of a layer that stop j+1 extends
        candidates = cost[rows] + into[j]
        best_k = np.argmin(candidates, axis=1)
        grown = rows | bits[j]
        cost[grown, j] = candidates[positions[:len(rows)], best_k]
        parent[grown, j] = best_k
    return cost, parent


def _cycles(successor: dict[int, int]) -> list[list[int]]:
    """The cycles of a successor map (every node with a successor lies on exactly one)."""
    seen: set[int] = set()
    cycles = []
    for start in successor:
        if start in seen:
            continue
        cycle, node = [], start
        while node not in seen:
            seen.add(node)
            cycle.append(node)
            node = successor[node]
        cycles.append(cycle)
    return cycles


def _milp_route(dist: np.ndarray, penalty: float) -> list[int]:
    """The best depot tour through a subset of the stops (at least one), exactly, by HiGHS with subtour cuts.

    Variables: x[i, j] (the leg i -> j is driven) and y[k] (stop k is visited). Every visited stop has one leg in
    and one out, the depot one of each; the cost is the legs driven plus the penalty of each stop not visited. A
    solution whose legs form a cycle S that misses the depot gets, for every k in S, the cut
    x(S) <= y(S) - y[k] (a cycle through S needs a leg out of S); the program is re-solved until none is left.
    """
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix, csr_matrix, vstack

    n = dist.shape[0] - 1
    nodes = n + 1
    tail, head = np.nonzero(~np.eye(nodes, dtype=bool))
    legs = len(tail)
    size = legs + n
    cost = np.r_[dist[tail, head], -penalty * np.ones(n)]
    rows, cols, vals, low, high = [], [], [], [], []
    for k in range(nodes):
        out, into = np.nonzero(tail == k)[0], np.nonzero(head == k)[0]
        for r, arcs in ((2 * k, out), (2 * k + 1, into)):
            rows += [r] * len(arcs)
            cols += arcs.tolist()
            vals += [1.0] * len(arcs)
            if k:
                rows.append(r)
                cols.append(legs + k - 1)
                vals.append(-1.0)
        low += [1.0, 1.0] if k == 0 else [0.0, 0.0]
        high += [1.0, 1.0] if k == 0 else [0.0, 0.0]
    matrix = coo_matrix((vals, (rows, cols)), shape=(2 * nodes, size)).tocsr()
    cuts: list = []
    while True:
        constraint = LinearConstraint(vstack([matrix, *cuts]).tocsr() if cuts else matrix,
                                      np.r_[low, [-np.inf] * len(cuts)], np.r_[high, [0.0] * len(cuts)])
        result = milp(cost, constraints=constraint, integrality=np.ones(size), bounds=Bounds(0, 1),
                      options={"disp": False, "mip_rel_gap": 0.0})
        if result.x is None:
            raise RuntimeError(f"HiGHS found no tour: {result.message}")
        driven = result.x[:legs] > 0.5
        successor = {int(i): int(j) for i, j in zip(tail[driven], head[driven], strict=True)}
        stray = [cycle for cycle in _cycles(successor) if 0 not in cycle]
        if not stray:
            break
        for cycle in stray:
            inside = np.isin(tail, cycle) & np.isin(head, cycle)
            for k in cycle:
                row = np.zeros(size)
                row[:legs][inside] = 1.0
                row[[legs + i - 1 for i in cycle if i != k]] = -1.0
                cuts.append(csr_matrix(row[None, :]))
    route, node = [], successor[0]
    while node != 0:
        route.append(node)
        node = successor[node]
    return route


def _tour_cost(dist: np.ndarray, penalty: float, route: list[int]) -> float:
    path = [0, *route, 0]
    return float(sum(dist[a, b] for a, b in zip(path[:-1], path[1:], strict=True))
                 + penalty * (dist.shape[0] - 1 - len(route)))


_POSTED_TOURS: dict[bytes, list[int]] = {}


def posted_tour(posted: np.ndarray) -> list[int]:
    """The shortest tour through every stop on the posted map (remembered: the sampler and a heuristic ask)."""
    key = posted.tobytes()
    if key not in _POSTED_TOURS:
        if len(_POSTED_TOURS) > 256:
            _POSTED_TOURS.clear()
        _POSTED_TOURS[key] = best_route(posted, 1e9)[0]
    return list(_POSTED_TOURS[key])


def best_route(dist: np.ndarray, penalty: float) -> tuple[list[int], str, int]:
    """The stops of a shortest depot tour with the penalty of the skipped ones, in driving order (exact):
    (route, method, Held-Karp states or 0)."""
    n = dist.shape[0] - 1
    if n <= HELD_KARP_STOPS:
        cost, parent = _held_karp(dist)
        unvisited = n - _popcounts(n)
        total = cost + dist[1:, 0][None, :] + penalty * unvisited[:, None]
        mask, last = np.unravel_index(int(np.argmin(total)), total.shape)
        route: list[int] = []
        if total[mask, last] < n * penalty:
            mask, last = int(mask), int(last)
            while last >= 0:
                route.append(last + 1)
                mask, last = mask & ~(1 << last), int(parent[mask, last])
            route.reverse()
        return route, "Held-Karp dynamic programming over subsets", int(np.isfinite(cost).sum())
    route = _milp_route(dist, penalty)
    if _tour_cost(dist, penalty, route) >= n * penalty:
        route = []
    return route, "HiGHS MILP with generalised subtour-elimination cuts", 0


def _row(matrix: list[list[float]], origin: int) -> dict[str, float]:
    """Every leg out of one place, by where it ends."""
    return {str(j): matrix[origin][j] for j in range(len(matrix)) if j != origin}


# the depot (0) or a stop, 1..n, where a leg starts or ends
Origin = Annotated[int, Between(0, "stops"), "where the leg starts (0 is the depot)"]
Destination = Annotated[int, Between(0, "stops"), "where the leg ends (0 is the depot)"]
Stop = Annotated[int, Between(1, "stops"), "stop number"]  # a stop number, 1..n
# distinct stop numbers, in driving order
Stops = Annotated[list[int], Between(1, "stops", max_items="stops"),
                  "stop numbers in driving order"]


class Routing(Mechanism[RoutingParams]):
    id = "routing"
    version = 3  # issue 27: the prose is part of the spec
    group = "trained"
    summary = "drive one vehicle from the depot through every stop and back as briefly as possible; Held-Karp"
    Params = RoutingParams
    size_range = (4, MAX_STOPS)  # stops
    horizon_range = (1, 12)  # legs of the posted nearest-neighbour route that the map badly understates
    default_size = 8
    default_horizon = 3
    difficulty_grid = [(5, 1), (7, 2), (8, 3), (10, 4), (12, 6), (15, 8)]
    difficulty_tiers = {
        "easy": Tier(((5, 1), (6, 1), (6, 2)), 1.0),
        "medium": Tier(((8, 2), (9, 3), (10, 3)), 0.9),  # surveying every leg does not quite fit
        "hard": Tier(((12, 6), (13, 7), (14, 8)), 0.3),
        "frontier": Tier(((15, 8), (16, 10), (18, 12)), 0.07),
    }
    turn_slack = 1  # so that the tier's probe share, not the slack, decides how many legs can be surveyed
    u0_band = (0.3, 0.995)

    # --- parameters -----------------------------------------------------------------------
    def sample(self, rng: np.random.Generator, size: int, horizon: int) -> RoutingParams:
        n = int(size)
        points = rng.uniform(0.0, 100.0, (n + 1, 2))
        straight = np.sqrt(((points[:, None, :] - points[None, :, :]) ** 2).sum(axis=2))
        off = ~np.eye(n + 1, dtype=bool)
        posted = np.where(off, np.maximum(np.round(straight), 1.0), 0.0)
        base = np.where(off, np.maximum(np.round(straight * rng.uniform(1.0, 1.3, (n + 1, n + 1))), 1.0), 0.0)
        tour = posted_tour(posted)  # the default's route
        legs = list(zip([0, *tour], [*tour, 0], strict=True))
        if horizon >= NN_CLOSURES:  # many closures: the map's nearest-neighbour route runs into some of them too
            order = _nearest_neighbour(posted)
            shared = {frozenset(leg) for leg in legs}
            legs += [leg for leg in zip([0, *order], [*order, 0], strict=True) if frozenset(leg) not in shared]
        bad = min(int(horizon), len(legs))
        default = [Action(op="drive_route", args={"stops": tour}), Action(op="return_to_depot")]
        params = None
        for _ in range(REDRAWS):
            true = base.copy()
            for index in rng.choice(len(legs), bad, replace=False):
                i, j = legs[int(index)]
                for a, b in ((i, j), (j, i)):
                    true[a, b] = max(np.round(posted[a, b] * rng.uniform(*BAD_FACTOR)), base[a, b])
            round_trip = float(np.max(true[0, 1:] + true[1:, 0]))
            penalty = float(np.round(round_trip * rng.uniform(1.0, 1.5)))
            params = RoutingParams(distances=true.tolist(), posted_distances=posted.tolist(),
                                   unvisited_penalty=penalty)
            if self.run(params, default) < self.solve(params).u_star - 1e-9:  # the default drives `tour`
                break
        return params

    # --- reference ------------------------------------------------------------------------
    def solve(self, params: RoutingParams) -> Solution:
        p = params
        n = p.stops
        route, method, states = best_route(np.asarray(p.distances, dtype=float), p.unvisited_penalty)
        actions = [*([Action(op="drive_route", args={"stops": route})] if route else []),
                   Action(op="return_to_depot")]
        u_star = self.run(p, actions)
        facts = {"stops": n, "route": route, "skipped": sorted(set(range(1, n + 1)) - set(route)),
                 "subset_states": states}
        return Solution(u_star, actions, method, facts)

    def default_policy(self, seat: Seat) -> None:
        """Reads the posted map, drives its shortest tour through every stop in one call, then home (never surveys a
        leg)."""
        seat.call("read_posted_map")
        seat.call("drive_route", stops=posted_tour(self._posted(seat.known)))
        seat.call("return_to_depot")

    # --- dynamics -------------------------------------------------------------------------
    def initial_state(self, params: RoutingParams) -> dict[str, Any]:
        return {"route": [], "finished": False}

    @staticmethod
    def _driven(p: RoutingParams, route: list[int]) -> float:
        path = [0, *route]
        return float(sum(p.distances[a][b] for a, b in zip(path[:-1], path[1:], strict=True)))

    @staticmethod
    def _where(p: RoutingParams, route: list[int]) -> dict[str, Any]:
        """The route as planned (no length: the surveyed lengths driven are stated when the round ends)."""
        return {"route": [0, *route], "position": route[-1] if route else 0,
                "stops left": [k for k in range(1, p.stops + 1) if k not in route]}

    def _route(self, state: State) -> list[int]:
        """The route driven so far, while the round goes on (ActionError once it is over)."""
        if self.finished(state):
            raise ActionError("the round is over")
        return state["route"]

    @probe
    def probe_leg(self, p: RoutingParams, state: State, origin: Origin, destination: Destination) -> Observation:
        """the true length of one leg"""
        if origin == destination:
            raise ActionError("a leg joins two different places: the origin and the destination are the same")
        return {"origin": origin, "destination": destination, "distance": p.distances[origin][destination]}

    @probe
    def probe_penalty(self, p: RoutingParams, state: State) -> Observation:
        """the charge for each stop left unvisited"""
        return {"penalty": p.unvisited_penalty}

    @info(decoy=True, estimates="distance")
    def read_posted_map(self, p: RoutingParams, state: State) -> Observation:
        """the posted map's length of every leg: outside estimates of the true lengths, not surveys"""
        return {"posted distances": {str(i): _row(p.posted_distances, i) for i in range(p.stops + 1)}}

    @info
    def list_stops(self, p: RoutingParams, state: State) -> Observation:
        """the stop numbers and the depot"""
        return {"depot": 0, "stops": list(range(1, p.stops + 1))}

    @info
    def view_route(self, p: RoutingParams, state: State) -> Observation:
        """the route so far, where the vehicle is and the stops left"""
        return self._where(p, state["route"])

    @decision
    def drive_to(self, p: RoutingParams, state: State, stop: Stop) -> Observation:
        """drive from here to an unvisited stop"""
        route = self._route(state)
        if stop in route:
            raise ActionError(f"stop {stop} has already been visited")
        state["route"] = [*route, stop]
        return self._where(p, state["route"])

    @decision
    def drive_route(self, p: RoutingParams, state: State, stops: Stops) -> Observation:
        """drive from here through a list of unvisited stops in order"""
        route = self._route(state)
        again = [s for s in stops if s in route]
        if again:
            raise ActionError(f"stop {again[0]} has already been visited")
        state["route"] = [*route, *stops]
        return self._where(p, state["route"])

    @decision
    def undo_last_leg(self, p: RoutingParams, state: State) -> Observation:
        """take the last leg off the route"""
        route = self._route(state)
        if not route:
            raise ActionError("the route is empty; there is no leg to undo")
        state["route"] = route[:-1]
        return self._where(p, state["route"])

    @decision
    def clear_route(self, p: RoutingParams, state: State) -> Observation:
        """take every leg off the route"""
        self._route(state)
        state["route"] = []
        return self._where(p, [])

    @clock
    def return_to_depot(self, p: RoutingParams, state: State) -> Observation:
        """drive back to the depot; this ends the episode"""
        return self._home(p, state)

    @clock
    def finish(self, p: RoutingParams, state: State) -> Observation:
        """stop now; the vehicle goes straight home and unvisited stops are charged"""
        return self._home(p, state)

    def _home(self, p: RoutingParams, state: State) -> Observation:
        """End the round: the vehicle drives straight back to the depot from where it is (the lengths and charges
        come with the ending's ledger)."""
        route = self._route(state)
        state["finished"] = True
        return {"route": [0, *route, 0], "finished": True}

    def utility(self, params: RoutingParams, state: dict[str, Any]) -> float:
        return -self._cost(params, state["route"])["total cost"]

    def _cost(self, p: RoutingParams, route: list[int]) -> dict[str, Any]:
        """The round's cost as if the vehicle drove straight back to the depot now, part by part."""
        here, unvisited = route[-1] if route else 0, p.stops - len(route)
        driven, back = self._driven(p, route), float(p.distances[here][0])
        charges = float(p.unvisited_penalty * unvisited)
        return {"route": [0, *route, 0], "distance driven": driven, "return leg": back,
                "distance total": driven + back, "unvisited stops": unvisited, "charges": charges,
                "total cost": driven + back + charges}

    def ledger(self, params: RoutingParams, state: dict[str, Any]) -> dict[str, Any]:
        """The route with the way back, its surveyed length before and with the return leg, the charges, the total
        cost and the result (minus the total cost)."""
        return self._cost(params, state["route"])

    # --- rendering facts ------------------------------------------------------------------
    def facts(self, params: RoutingParams, vocab: dict[str, str]) -> list[Fact]:
        p, v = params, vocab
        n = p.stops

        def rows(matrix: list[list[float]]) -> str:
            return "; ".join(f"from {i}: {' '.join(f'{figure(x)}' for x in row)}" for i, row in enumerate(matrix))

        def off(matrix: list[list[float]]) -> list[float]:
            return [x for i, row in enumerate(matrix) for j, x in enumerate(row) if i != j]

        return [
            rule("structure", f"The {v['vehicle']} starts at the depot at {v['place']} (number 0) and may call at "
                 f"{n} {v['customer']} {v['sites']}, numbered 1 to {n}, each at most once.", n),
            rule("legs", "Legs are one-way: the leg from one place to another may be longer or shorter than the "
                 "leg back, and the legs need not obey the triangle inequality (a direct leg can be longer than "
                 f"going by way of another {v['site']}), so a leg's length says nothing sure about any other leg."),
            probed("legs_surveyed", "probe_leg", "The surveyed length of every leg (row = from, position in "
                   f"the row = to, 0 = the depot): {rows(p.distances)}.", off(p.distances)),
            probed("posted", "read_posted_map", f"The {v['source']} quotes these lengths (an estimate, not "
                   f"a survey): {rows(p.posted_distances)}.", off(p.posted_distances)),
            probed("penalty", "probe_penalty", f"Every {v['customer']} {v['site']} still unvisited when the round "
                   f"ends is charged {figure(p.unvisited_penalty)} length units.", [p.unvisited_penalty]),
            rule("driving", f"The {v['vehicle']} drives from where it is to {v['sites']} not yet visited, one or "
                 "a whole list in one call, always along the direct leg; a leg can be taken back (or the whole "
                 "route cleared) before the round ends. The lengths driven are reported when the round ends."),
            rule(OBJECTIVE, "Your result is minus the total cost, where the total cost is the surveyed length of "
                 f"every leg driven, plus the leg from the last {v['site']} back to the depot, plus the charge of "
                 f"every {v['site']} left unvisited; the smaller the total cost, the better."),
            rule(END, f"Driving back to the depot ends the round, and so does ending it at once: then the "
                 f"{v['vehicle']} goes straight back to the depot from where it is and every unvisited "
                 f"{v['site']} is charged."),
            rule(BUDGET_END, "If the turns run out before the round ends, it ends as if the "
                 f"{v['vehicle']} drove straight back to the depot from where it is then: the legs driven, that "
                 f"way back and the charges of the unvisited {v['sites']} count."),
        ]

    # --- players --------------------------------------------------------------------------
    def public_view(self, params: RoutingParams) -> dict[str, Any]:
        return {"stops": params.stops}

    @staticmethod
    def _surveyed(known: Knowledge) -> dict[tuple[int, int], float]:
        """Every surveyed leg, (from, to) -> length."""
        return {(int(seen["origin"]), int(seen["destination"])): float(seen["distance"])
                for _, seen in known.observations("probe_leg")}

    @classmethod
    def _posted(cls, known: Knowledge) -> np.ndarray:
        """The posted map as the sheet showed it; unread, every leg is the mean surveyed length (1 when none is)."""
        n = known.public["stops"]
        sheet = known.latest("read_posted_map")
        if sheet is None:
            legs = cls._surveyed(known)
            guess = float(np.mean(list(legs.values()))) if legs else 1.0
            return np.where(np.eye(n + 1, dtype=bool), 0.0, guess)
        rows = sheet["posted distances"]
        return np.asarray([[0.0 if i == j else float(rows[str(i)][str(j)]) for j in range(n + 1)]
                           for i in range(n + 1)])

    def listing_order(self, known: Knowledge) -> list[Action]:
        """Every leg in number order (from the depot first; a place to itself is no leg), then the charge."""
        n = known.public["stops"]
        return [*(Action(op="probe_leg", args={"origin": i, "destination": j})
                  for i in range(n + 1) for j in range(n + 1) if i != j), Action(op="probe_penalty")]

    def probe_order(self, known: Knowledge) -> list[Action]:
        """The legs a plan on the map drives first: every leg of the map's shortest tour in driving order, then every
        leg of the map's nearest-neighbour route (the short legs a greedy plan takes), then the short legs a changed
        plan would take instead (each place's legs to its NEAR_LEGS nearest places on the map), then every other
        leg, shortest first on the map; then the charge."""
        n = known.public["stops"]
        posted = self._posted(known)
        ordered: list[tuple[int, int]] = []
        for route in (posted_tour(posted), _nearest_neighbour(posted)):
            path = [0, *route, 0]
            ordered += zip(path[:-1], path[1:], strict=True)
        near = [(i, j) for i in range(n + 1)
                for j in sorted((j for j in range(n + 1) if j != i), key=lambda j: (posted[i, j], j))[:NEAR_LEGS]]
        rest = [(i, j) for i in range(n + 1) for j in range(n + 1) if i != j]
        for group in (near, rest):
            ordered += sorted(group, key=lambda leg: (posted[leg], leg))
        return [*(Action(op="probe_leg", args={"origin": i, "destination": j}) for i, j in dict.fromkeys(ordered)),
                Action(op="probe_penalty")]

    def believed(self, known: Knowledge) -> RoutingParams:
        """Surveyed legs are true; an unsurveyed leg takes its surveyed reverse leg when there is one, else its posted
        length scaled by the typical surveyed/posted ratio (the median of the ratios within twice the smallest: a
        plan's survey finds the badly understated legs it drives, which say nothing of the other legs); an unprobed
        charge is 1.25 times the longest believed round trip through the depot."""
        n = known.public["stops"]
        posted = self._posted(known)
        legs = self._surveyed(known)
        ratios = [x / posted[i, j] for (i, j), x in legs.items() if posted[i, j] > 0]
        typical = [r for r in ratios if r <= 2 * min(ratios)] if ratios else []  # leave out the badly understated
        scale = float(np.median(typical)) if typical and known.latest("read_posted_map") else 1.0
        dist = [[0.0 if i == j else legs[(i, j)] if (i, j) in legs else legs[(j, i)] if (j, i) in legs
                 else float(round(posted[i, j] * scale, 6)) for j in range(n + 1)] for i in range(n + 1)]
        charge = known.latest("probe_penalty")
        if charge is not None:
            penalty = float(charge["penalty"])
        else:
            penalty = round(1.25 * max(dist[0][k] + dist[k][0] for k in range(1, n + 1)), 6)
        return RoutingParams(distances=dist, posted_distances=posted.tolist(), unvisited_penalty=penalty)

    def heuristic_policies(self) -> dict[str, Policy]:
        """map_nearest: read the map, drive nearest neighbour on it from the depot in one call, then home (no
        surveys).
        nearest_surveyed: read the map; at each stop survey the legs to as many of the nearest unvisited stops on the
        map as the turns allow if every stop left gets as many, and drive to the truly nearest of them; when the
        turns allow no survey, the rest by nearest neighbour on the map in one call; then home.
        survey_all: survey every leg and the charge in number order, whatever the turns left, then drive the best
        tour on what it surveyed (the turns run out first unless every survey fits)."""

        def map_nearest(seat: Seat) -> None:
            seat.call("read_posted_map")
            seat.call("drive_route", stops=_nearest_neighbour(self._posted(seat.known)))
            seat.call("return_to_depot")

        def nearest_surveyed(seat: Seat) -> None:
            seat.call("read_posted_map")
            posted = self._posted(seat.known)
            here, left = 0, set(range(1, seat.known.public["stops"] + 1))
            while left:
                # surveys a stop can afford if every stop left gets as many, a leg each and the way home
                k = min(len(left), int(seat.turns_left - len(left) - 1) // len(left))
                if k < 1:
                    break
                nearest = sorted(left, key=lambda j: (posted[here, j], j))[:k]
                length = {}
                for j in nearest:
                    seen = seat.call("probe_leg", origin=here, destination=j)
                    length[j] = float(seen["distance"]) if seen and "distance" in seen else posted[here, j]
                here = min(nearest, key=lambda j: (length[j], j))
                left.discard(here)
                seat.call("drive_to", stop=here)
            rest = []
            while left:  # no turns left for surveys: nearest neighbour on the map for the rest, in one call
                here = min(left, key=lambda j: (posted[here, j], j))
                left.discard(here)
                rest.append(here)
            if rest:
                seat.call("drive_route", stops=rest)
            seat.call("return_to_depot")

        def survey_all(seat: Seat) -> None:
            for action in self.listing_order(seat.known):  # every leg and the charge, whatever the turns left
                seat.call(action)
            seat.play(self.planned_calls(seat.known, self.believed(seat.known)))

        return {"map_nearest": map_nearest, "nearest_surveyed": nearest_surveyed, "survey_all": survey_all}

    def secret_numbers(self, params: RoutingParams) -> list[float]:
        p = params
        return [*(x for row in p.distances for x in row if x != 0), p.unvisited_penalty]

    def public_numbers(self, params: RoutingParams) -> list[float]:
        return [params.stops, *range(0, params.stops + 2)]

    def probe_allowance(self, params: RoutingParams) -> int:
        return params.stops * (params.stops + 1) + 1  # every leg (the depot's included) and the penalty


register(Routing())
