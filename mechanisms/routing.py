"""routing: one vehicle leaves the depot, visits stops at most once each and returns (a travelling-salesman tour).

Parameters (all can be given as data):
- ``distances``: an (n+1) x (n+1) matrix of the true length of every leg (hidden); row and column 0 are
  the depot, rows/columns 1..n the stops. Entries are finite and non-negative, the diagonal is zero,
  and the matrix may be asymmetric (``distances[i][j]`` is the leg from i to j).
- ``posted_distances``: the posted map's estimate of every leg, same shape and rules (a decoy the
  default policy trusts; when omitted from data it equals ``distances``)
- ``unvisited_penalty``: the charge for every stop still unvisited when the episode ends (hidden,
  non-negative); it makes skipping stops costly, so that doing nothing is worse than driving a tour.
Dynamics: the vehicle drives from where it is to an unvisited stop (a decision), or along a whole list of
unvisited stops in one call (the bulk form the reference plans use); the last leg can be undone or the
whole route cleared while planning; returning to the depot, or finishing, ends the episode. The utility of
a state is ``u = -(distance of the legs driven + the leg from the current position back to the depot +
unvisited_penalty x stops not visited)``: it treats the episode as ending now with the vehicle driving straight
home. Every state is a simple depot path, so no play can beat u*.
The knobs: ``size`` is the number of stops n (4..24); ``horizon`` (1..12) is how many legs of the posted
map's nearest-neighbour route the map badly understates (their true length is 2.5-4 times the posted one, as
after a closure); from 6 on they are drawn from the legs of that route and of the map's shortest tour; it is
clipped to the number of those legs.
The sampler draws n+1 points in a 100 x 100 square; the posted map is the rounded straight-line
distance, the true legs are 0-30 % longer (independently per direction), and the penalty is 1-1.5
times the longest depot round trip.
Solved exactly by Held-Karp dynamic programming over subsets up to 12 stops (vectorised with numpy, one
popcount layer at a time): the shortest depot path through each subset ending at each stop, then the best
subset to visit given the penalty (normally every stop). Beyond that, an exact mixed-integer program solved by
HiGHS (scipy.optimize.milp, console silenced): a binary per leg and per stop visited, degree constraints, and
generalised subtour-elimination cuts added while the solution has a cycle that misses the depot (re-solved
until it has none, so the optimum is exact). Both are checked against brute force and each other.

Hidden mode: every leg is posted on the map (the decoy); the true lengths come row by row from surveys, the
charge from its own probe. The informed agent surveys the depot's row, then the rows of the stops along the
map's nearest-neighbour route, and believes the map (scaled by the median true/posted ratio it surveyed, or a
surveyed reverse leg) for the rest.
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
from mechanisms.registry import register
from schemas.envspec import Action

MAX_STOPS = 24
HELD_KARP_STOPS = 15  # Held-Karp keeps 2^n x n path lengths (491,520 at 15 stops, about 20 ms); the MILP solves beyond
BAD_FACTOR = (2.5, 4.0)  # how much longer than posted a badly understated leg really is
TOUR_CLOSURES = 6  # from this many understated legs on, they may lie on the map's shortest tour too
REDRAWS = 24  # the sampler redraws the understated legs while the default would already be optimal


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
                raise ValueError(f"{name}[{i}][{j}] must be non-negative, got {x:g}")
        if row[i] != 0:
            raise ValueError(f"{name}[{i}][{i}] must be zero (the diagonal), got {row[i]:g}")


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
    version = 1
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
        "medium": Tier(((8, 2), (9, 3), (10, 3)), 1.0),
        "hard": Tier(((12, 6), (13, 7), (14, 8)), 1.0),  # every survey fits; the map misleads any naive plan
        "frontier": Tier(((15, 10), (16, 12), (18, 12)), 0.3),
    }
    u0_band = (0.3, 0.995)

    # --- parameters -----------------------------------------------------------------------
    def sample(self, rng: np.random.Generator, size: int, horizon: int) -> RoutingParams:
        n = int(size)
        points = rng.uniform(0.0, 100.0, (n + 1, 2))
        straight = np.sqrt(((points[:, None, :] - points[None, :, :]) ** 2).sum(axis=2))
        off = ~np.eye(n + 1, dtype=bool)
        posted = np.where(off, np.maximum(np.round(straight), 1.0), 0.0)
        base = np.where(off, np.maximum(np.round(straight * rng.uniform(1.0, 1.3, (n + 1, n + 1))), 1.0), 0.0)
        order = _nearest_neighbour(posted)
        legs = list(zip([0, *order], [*order, 0], strict=True))
        if horizon >= TOUR_CLOSURES:  # many closures: the map's shortest tour runs into some of them too
            tour = posted_tour(posted)
            shared = {frozenset(leg) for leg in legs}
            legs += [leg for leg in zip([0, *tour], [*tour, 0], strict=True) if frozenset(leg) not in shared]
        bad = min(int(horizon), len(legs))
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
            if self.run(params, self.default_actions(params)) < self.solve(params).u_star - 1e-9:
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

    def default_actions(self, params: RoutingParams) -> list[Action]:
        """Nearest neighbour on the posted map from the depot, every stop in one call, then home (never probes)."""
        order = _nearest_neighbour(np.asarray(params.posted_distances, dtype=float))
        return [Action(op="drive_route", args={"stops": order}), Action(op="return_to_depot")]

    # --- dynamics -------------------------------------------------------------------------
    def initial_state(self, params: RoutingParams) -> dict[str, Any]:
        return {"route": [], "finished": False}

    @staticmethod
    def _driven(p: RoutingParams, route: list[int]) -> float:
        path = [0, *route]
        return float(sum(p.distances[a][b] for a, b in zip(path[:-1], path[1:], strict=True)))

    def _where(self, p: RoutingParams, route: list[int]) -> dict[str, Any]:
        return {"route": [0, *route], "position": route[-1] if route else 0,
                "distance driven": self._driven(p, route),
                "stops left": [k for k in range(1, p.stops + 1) if k not in route]}

    def _route(self, state: State) -> list[int]:
        """The route driven so far, while the round goes on (ActionError once it is over)."""
        if self.finished(state):
            raise ActionError("the round is over")
        return state["route"]

    @probe
    def probe_leg(self, p: RoutingParams, state: State, origin: Origin, destination: Destination) -> Observation:
        """the true length of one leg"""
        return {"origin": origin, "destination": destination, "distance": p.distances[origin][destination]}

    @probe
    def probe_legs_from(self, p: RoutingParams, state: State, origin: Origin) -> Observation:
        """the true length of every leg out of one place"""
        return {"origin": origin, "distances": _row(p.distances, origin)}

    @probe
    def probe_penalty(self, p: RoutingParams, state: State) -> Observation:
        """the charge for each stop left unvisited"""
        return {"penalty": p.unvisited_penalty}

    @info(decoy=True, estimates="distance")
    def read_posted_leg(self, p: RoutingParams, state: State, origin: Origin, destination: Destination) -> Observation:
        """the posted map's length of one leg"""
        return {"origin": origin, "destination": destination,
                "posted distance": p.posted_distances[origin][destination]}

    @info(decoy=True, estimates="distances")
    def read_posted_legs_from(self, p: RoutingParams, state: State, origin: Origin) -> Observation:
        """the posted map's length of every leg out of one place"""
        return {"origin": origin, "posted distances": _row(p.posted_distances, origin)}

    @info
    def list_stops(self, p: RoutingParams, state: State) -> Observation:
        """the stop numbers and the depot"""
        return {"depot": 0, "stops": list(range(1, p.stops + 1))}

    @info
    def view_route(self, p: RoutingParams, state: State) -> Observation:
        """the route so far, where the vehicle is, distance driven and stops left"""
        return self._where(p, state["route"])

    @decision
    def drive_to(self, p: RoutingParams, state: State, stop: Stop) -> Observation:
        """drive from here to an unvisited stop"""
        route = self._route(state)
        if stop in route:
            raise ActionError(f"stop {stop} has already been visited")
        state["route"] = [*route, stop]
        return {"leg distance": p.distances[route[-1] if route else 0][stop], **self._where(p, state["route"])}

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
        """End the round: the vehicle drives straight back to the depot from where it is."""
        route = self._route(state)
        state["finished"] = True
        here, unvisited = route[-1] if route else 0, p.stops - len(route)
        total = self._driven(p, route) + p.distances[here][0]
        return {"route": [0, *route, 0], "return leg": p.distances[here][0], "distance total": total,
                "unvisited stops": unvisited, "charges": p.unvisited_penalty * unvisited,
                "total cost": total + p.unvisited_penalty * unvisited, "finished": True}

    def utility(self, params: RoutingParams, state: dict[str, Any]) -> float:
        p, route = params, state["route"]
        home = p.distances[route[-1]][0] if route else 0.0
        return -float(self._driven(p, route) + home + p.unvisited_penalty * (p.stops - len(route)))

    # --- rendering facts ------------------------------------------------------------------
    def facts(self, params: RoutingParams, vocab: dict[str, str]) -> list[Fact]:
        p, v = params, vocab
        n = p.stops

        def rows(matrix: list[list[float]]) -> str:
            return "; ".join(f"from {i}: {' '.join(f'{x:g}' for x in row)}" for i, row in enumerate(matrix))

        def off(matrix: list[list[float]]) -> list[float]:
            return [x for i, row in enumerate(matrix) for j, x in enumerate(row) if i != j]

        return [
            rule("structure", f"The {v['vehicle']} starts at the depot at {v['place']} (number 0) and may call at "
                 f"{n} {v['customer']} {v['sites']}, numbered 1 to {n}, each at most once.", n),
            probed("legs", "probe_legs_from", "The surveyed length of every leg (row = from, position in the row = "
                   f"to, 0 = the depot; legs may differ by direction): {rows(p.distances)}.", off(p.distances)),
            probed("posted", "read_posted_legs_from", f"The {v['sticker']} quotes these lengths (an estimate, not "
                   f"a survey): {rows(p.posted_distances)}.", off(p.posted_distances)),
            probed("penalty", "probe_penalty", f"Every {v['customer']} {v['site']} still unvisited when the round "
                   f"ends is charged {p.unvisited_penalty:g} length units.", [p.unvisited_penalty]),
            rule("driving", f"The {v['vehicle']} drives from where it is to {v['sites']} not yet visited, one or "
                 "a whole list in one call, always along the direct leg; a leg can be taken back (or the whole "
                 "route cleared) before the round ends."),
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

    def probe_order(self, params: RoutingParams) -> list[Action]:
        """The depot's legs first, then the legs out of each stop along the map's nearest-neighbour route (where
        the default drives), then the charge."""
        order = _nearest_neighbour(np.asarray(params.posted_distances, dtype=float))
        return [*(Action(op="probe_legs_from", args={"origin": i}) for i in [0, *order]),
                Action(op="probe_penalty")]

    def believed(self, params: RoutingParams, probed: list[Action]) -> RoutingParams:
        """Surveyed rows are true; an unsurveyed leg takes its surveyed reverse leg when there is one, else the
        map's length scaled by the median surveyed/posted ratio; an unprobed charge is 1.25 times the longest
        believed round trip through the depot."""
        p = params
        n = p.stops
        rows = {int(a.args["origin"]) for a in probed if a.op == "probe_legs_from"}
        legs = {(int(a.args["origin"]), int(a.args["destination"])) for a in probed if a.op == "probe_leg"}
        legs |= {(i, j) for i in rows for j in range(n + 1)}
        ratios = [p.distances[i][j] / p.posted_distances[i][j] for i, j in legs
                  if i != j and p.posted_distances[i][j] > 0]
        scale = float(np.median(ratios)) if ratios else 1.0
        dist = [[float(p.distances[i][j]) if (i, j) in legs else
                 float(p.distances[j][i]) if (j, i) in legs else
                 float(round(p.posted_distances[i][j] * scale, 6)) for j in range(n + 1)] for i in range(n + 1)]
        for i in range(n + 1):
            dist[i][i] = 0.0
        if any(a.op == "probe_penalty" for a in probed):
            penalty = p.unvisited_penalty
        else:
            penalty = round(1.25 * max(dist[0][k] + dist[k][0] for k in range(1, n + 1)), 6)
        return RoutingParams(distances=dist, posted_distances=p.posted_distances, unvisited_penalty=penalty)

    def heuristic_actions(self, params: RoutingParams) -> dict[str, list[Action]]:
        """posted_tour: the shortest tour on the map (no surveys), driven in one call.
        nearest_surveyed: survey the legs out of where the vehicle is, drive to the nearest unvisited stop, repeat
        (one call per survey and per leg), then home."""
        p = params
        n = p.stops
        posted = np.asarray(p.posted_distances, dtype=float)
        tour = [Action(op="drive_route", args={"stops": posted_tour(posted)}), Action(op="return_to_depot")]
        nearest, here, left = [], 0, set(range(1, n + 1))
        while left:
            nearest.append(Action(op="probe_legs_from", args={"origin": here}))
            here = min(left, key=lambda j: (p.distances[here][j], j))
            left.discard(here)
            nearest.append(Action(op="drive_to", args={"stop": here}))
        nearest.append(Action(op="return_to_depot"))
        return {"posted_tour": tour, "nearest_surveyed": nearest}

    def secret_numbers(self, params: RoutingParams) -> list[float]:
        p = params
        return [*(x for row in p.distances for x in row if x != 0), p.unvisited_penalty]

    def public_numbers(self, params: RoutingParams) -> list[float]:
        return [params.stops, *range(0, params.stops + 2)]

    def probe_allowance(self, params: RoutingParams) -> int:
        return params.stops + 2  # every row of legs (depot included) and the penalty


register(Routing())
