"""routing: one vehicle leaves the depot, visits stops at most once each and returns (a travelling-salesman tour).

Parameters (all can be given as data):
- ``distances``: an (n+1) x (n+1) matrix of the true length of every leg (hidden); row and column 0 are
  the depot, rows/columns 1..n the stops. Entries are finite and non-negative, the diagonal is zero,
  and the matrix may be asymmetric (``distances[i][j]`` is the leg from i to j).
- ``posted_distances``: the posted map's estimate of every leg, same shape and rules (a decoy the
  default policy trusts; when omitted from data it equals ``distances``)
- ``unvisited_penalty``: the charge for every stop still unvisited when the episode ends (hidden,
  non-negative); it makes skipping stops costly, so that doing nothing is worse than driving a tour.
Dynamics: the vehicle drives from where it is to an unvisited stop (a decision); the last leg can be
undone or the whole route cleared while planning; returning to the depot, or finishing, ends the
episode. The utility of a state is ``u = -(distance of the legs driven + the leg from the current
position back to the depot + unvisited_penalty x stops not visited)``: it treats the episode as ending
now with the vehicle driving straight home. Every state is a simple depot path, so no play can beat u*.
The knobs: ``size`` is the number of stops n (4..15); ``horizon`` (1..8) is how many legs of the posted
map's nearest-neighbour route the map badly understates (their true length is 2.5-4 times the posted
one, as after a closure); it is clipped to the n+1 legs of that route.
The sampler draws n+1 points in a 100 x 100 square; the posted map is the rounded straight-line
distance, the true legs are 0-30 % longer (independently per direction), and the penalty is 1-1.5
times the longest depot round trip.
Solved exactly by Held-Karp dynamic programming over subsets (vectorised with numpy, one popcount layer
at a time): the shortest depot path through each subset ending at each stop, then the best subset to
visit given the penalty (normally every stop). Checked against brute force over all ordered subsets.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from mechanisms.base import ActionError, Mechanism, Solution, require_int
from mechanisms.registry import register
from schemas.envspec import Action, ArgSpec, OperationSpec

MAX_STOPS = 15  # Held-Karp keeps 2^n x n path lengths: about half a million at 15 stops
BAD_FACTOR = (2.5, 4.0)  # how much longer than posted a badly understated leg really is
REDRAWS = 24  # the sampler redraws the understated legs while the default would already be optimal


def _require_int(args: dict[str, Any], name: str, low: int, high: int) -> int:
    """``require_int`` that also refuses NaN and infinities (which it cannot convert) with an ActionError."""
    value = args.get(name)
    if isinstance(value, float) and not math.isfinite(value):
        raise ActionError(f"argument {name!r} must be an integer, got {value!r}")
    return require_int(args, name, low, high)


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

    @model_validator(mode="before")
    @classmethod
    def _default_posted(cls, data: Any) -> Any:
        if isinstance(data, dict) and "posted_distances" not in data and "distances" in data:
            data = {**data, "posted_distances": data["distances"]}
        return data

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


def _popcounts(n: int) -> np.ndarray:
    masks = np.arange(1 << n)
    return ((masks[:, None] >> np.arange(n)[None, :]) & 1).sum(axis=1)


def _held_karp(dist: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """cost[mask, k]: the shortest path from the depot through exactly the stops in mask, ending at stop k+1.

    Bit k of a mask is stop k+1. One popcount layer at a time: every (mask + k, k) comes from exactly one
    smaller mask, so the layer is a vectorised min over the previous stop. parent[mask, k] is that stop.
    """
    n = dist.shape[0] - 1
    full = 1 << n
    cost = np.full((full, n), np.inf)
    parent = np.full((full, n), -1, dtype=np.int64)
    bits = 1 << np.arange(n)
    cost[bits, np.arange(n)] = dist[0, 1:]
    into = np.ascontiguousarray(dist[1:, 1:].T)  # into[j, k]: the leg from stop k+1 to stop j+1
    popcount = _popcounts(n)
    masks = np.arange(full)
    for s in range(1, n):
        layer = masks[popcount == s]
        candidates = cost[layer][:, None, :] + into[None, :, :]  # (masks, next j, previous k)
        best_k = np.argmin(candidates, axis=2)
        best = np.take_along_axis(candidates, best_k[:, :, None], axis=2)[:, :, 0]
        rows, cols = np.nonzero(((layer[:, None] >> np.arange(n)[None, :]) & 1) == 0)
        grown = layer[rows] | bits[cols]
        cost[grown, cols] = best[rows, cols]
        parent[grown, cols] = best_k[rows, cols]
    return cost, parent


class Routing(Mechanism[RoutingParams]):
    id = "routing"
    version = 1
    group = "trained"
    summary = "drive one vehicle from the depot through every stop and back as briefly as possible; Held-Karp"
    Params = RoutingParams
    size_range = (4, 15)  # stops
    horizon_range = (1, 8)  # legs of the posted nearest-neighbour route that the map badly understates
    default_size = 8
    default_horizon = 3
    difficulty_grid = [(5, 1), (7, 2), (8, 3), (10, 4), (12, 6), (15, 8)]
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
        dist = np.asarray(p.distances, dtype=float)
        cost, parent = _held_karp(dist)
        unvisited = n - _popcounts(n)
        total = cost + dist[1:, 0][None, :] + p.unvisited_penalty * unvisited[:, None]
        mask, last = np.unravel_index(int(np.argmin(total)), total.shape)
        route: list[int] = []
        if total[mask, last] < n * p.unvisited_penalty:
            mask, last = int(mask), int(last)
            while last >= 0:
                route.append(last + 1)
                mask, last = mask & ~(1 << last), int(parent[mask, last])
            route.reverse()
        actions = [*(Action(op="drive_to", args={"stop": s}) for s in route), Action(op="return_to_depot")]
        u_star = self.run(p, actions)
        facts = {"stops": n, "route": route, "skipped": sorted(set(range(1, n + 1)) - set(route)),
                 "subset_states": int(np.isfinite(cost).sum())}
        return Solution(u_star, actions, "Held-Karp dynamic programming over subsets", facts)

    def default_actions(self, params: RoutingParams) -> list[Action]:
        """Nearest neighbour on the posted map from the depot, every stop, then home (never probes)."""
        order = _nearest_neighbour(np.asarray(params.posted_distances, dtype=float))
        return [Action(op="read_posted_legs_from", args={"origin": 0}),
                *(Action(op="drive_to", args={"stop": s}) for s in order), Action(op="return_to_depot")]

    # --- dynamics -------------------------------------------------------------------------
    def operations(self, params: RoutingParams) -> list[OperationSpec]:
        n = params.stops
        origin = ArgSpec(type="integer", description="where the leg starts (0 is the depot)", minimum=0, maximum=n)
        destination = ArgSpec(type="integer", description="where the leg ends (0 is the depot)", minimum=0,
                              maximum=n)
        stop = {"stop": ArgSpec(type="integer", description="stop number", minimum=1, maximum=n)}
        return [
            OperationSpec(name="probe_leg", kind="probe", summary="the true length of one leg",
                          args={"origin": origin, "destination": destination}),
            OperationSpec(name="probe_legs_from", kind="probe",
                          summary="the true length of every leg out of one place", args={"origin": origin}),
            OperationSpec(name="probe_penalty", kind="probe", summary="the charge for each stop left unvisited"),
            OperationSpec(name="read_posted_leg", kind="info", summary="the posted map's length of one leg",
                          args={"origin": origin, "destination": destination}, decoy=True),
            OperationSpec(name="read_posted_legs_from", kind="info", decoy=True,
                          summary="the posted map's length of every leg out of one place", args={"origin": origin}),
            OperationSpec(name="list_stops", kind="info", summary="the stop numbers and the depot"),
            OperationSpec(name="view_route", kind="info",
                          summary="the route so far, where the vehicle is, distance driven and stops left"),
            OperationSpec(name="drive_to", kind="decision", summary="drive from here to an unvisited stop",
                          args=stop),
            OperationSpec(name="undo_last_leg", kind="decision", summary="take the last leg off the route"),
            OperationSpec(name="clear_route", kind="decision", summary="take every leg off the route"),
            OperationSpec(name="return_to_depot", kind="clock",
                          summary="drive back to the depot; this ends the episode"),
            OperationSpec(name="finish", kind="clock",
                          summary="stop now; the vehicle goes straight home and unvisited stops are charged"),
        ]

    def initial_state(self, params: RoutingParams) -> dict[str, Any]:
        return {"route": [], "finished": False}

    @staticmethod
    def _driven(p: RoutingParams, route: list[int]) -> float:
        path = [0, *route]
        return float(sum(p.distances[a][b] for a, b in zip(path[:-1], path[1:], strict=True)))

    def apply(self, params: RoutingParams, state: dict[str, Any], action: Action) -> dict[str, Any]:
        p, op, args = params, action.op, action.args
        n = p.stops
        route = state["route"]
        here = route[-1] if route else 0
        if op == "probe_leg":
            i, j = _require_int(args, "origin", 0, n), _require_int(args, "destination", 0, n)
            return {"origin": i, "destination": j, "distance": p.distances[i][j]}
        if op == "probe_legs_from":
            i = _require_int(args, "origin", 0, n)
            return {"origin": i, "distances": {str(j): p.distances[i][j] for j in range(n + 1) if j != i}}
        if op == "probe_penalty":
            return {"penalty_per_unvisited_stop": p.unvisited_penalty}
        if op == "read_posted_leg":
            i, j = _require_int(args, "origin", 0, n), _require_int(args, "destination", 0, n)
            return {"origin": i, "destination": j, "posted_distance": p.posted_distances[i][j]}
        if op == "read_posted_legs_from":
            i = _require_int(args, "origin", 0, n)
            return {"origin": i,
                    "posted_distances": {str(j): p.posted_distances[i][j] for j in range(n + 1) if j != i}}
        if op == "list_stops":
            return {"depot": 0, "stops": list(range(1, n + 1))}
        if op == "view_route":
            return {"route": [0, *route], "at": here, "distance_driven": self._driven(p, route),
                    "stops_left": [s for s in range(1, n + 1) if s not in route]}
        if op == "drive_to":
            s = _require_int(args, "stop", 1, n)
            if s in route:
                raise ActionError(f"stop {s} has already been visited")
            state["route"] = [*route, s]
            return {"at": s, "leg_distance": p.distances[here][s], "distance_driven": self._driven(p, state["route"]),
                    "stops_left": [k for k in range(1, n + 1) if k not in state["route"]]}
        if op == "undo_last_leg":
            if not route:
                raise ActionError("the route is empty; there is no leg to undo")
            state["route"] = route[:-1]
            return {"at": state["route"][-1] if state["route"] else 0, "route": [0, *state["route"]]}
        if op == "clear_route":
            state["route"] = []
            return {"at": 0, "route": [0]}
        if op in ("return_to_depot", "finish"):
            state["finished"] = True
            unvisited = n - len(route)
            return {"route": [0, *route, 0], "return_leg": p.distances[here][0],
                    "distance_total": self._driven(p, route) + p.distances[here][0],
                    "unvisited_stops": unvisited, "finished": True}
        raise ActionError(f"unknown operation {op!r}")

    def utility(self, params: RoutingParams, state: dict[str, Any]) -> float:
        p, route = params, state["route"]
        home = p.distances[route[-1]][0] if route else 0.0
        return -float(self._driven(p, route) + home + p.unvisited_penalty * (p.stops - len(route)))

    # --- rendering facts ------------------------------------------------------------------
    def describe(self, params: RoutingParams, vocab: dict[str, str]) -> str:
        p, v = params, vocab
        n = p.stops

        def rows(matrix: list[list[float]]) -> str:
            return "; ".join(f"from {i}: [{', '.join(f'{x:g}' for x in row)}]" for i, row in enumerate(matrix))

        return (
            f"The {v['vehicle']} starts at the depot at {v['place']} (number 0) and must call at {n} "
            f"{v['customer']} {v['sites']} (numbers 1 to {n}), each at most once, then return to the depot. "
            f"Every {v['site']} not visited when the run ends is charged {p.unvisited_penalty:g} distance units. "
            f"The goal is the smallest total of distance driven (including the way back) plus charges. "
            f"True leg lengths (row = from, position in the row = to, 0 = depot): {rows(p.distances)}. "
            f"The {v['sticker']} (a posted map, not the truth) gives: {rows(p.posted_distances)}."
        )

    def secret_numbers(self, params: RoutingParams) -> list[float]:
        p = params
        return [*(x for row in p.distances for x in row if x != 0), p.unvisited_penalty]

    def public_numbers(self, params: RoutingParams) -> list[float]:
        return [params.stops, *range(0, params.stops + 2)]

    def probe_allowance(self, params: RoutingParams) -> int:
        return params.stops + 2  # every row of legs (depot included) and the penalty


register(Routing())
