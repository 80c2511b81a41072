"""travel_planning: plan one day of visits from a hotel; places have enjoyment, tickets, visit times and hours.

An external-style, long-horizon setting in the manner of TravelBench: the traveller leaves the hotel
(node 0) at the start of the day, visits some places in some order and must be back by the end of it.
Parameters (all can be given as data; times are whole minutes after midnight, 0..1440):
- ``enjoyment``: the enjoyment score of visiting each of the n places (hidden, non-negative); places are
  numbered 1..n
- ``prices``: the ticket price of each place (hidden, non-negative)
- ``durations``: how many minutes a visit to each place takes (hidden, integers >= 1)
- ``opening``: ``[open, close]`` of each place (hidden, integers, open <= close); a visit may start
  no earlier than ``open`` (arriving early means waiting) and must end by ``close``
- ``travel``: an (n+1) x (n+1) matrix of travel minutes (hidden, non-negative integers, zero diagonal,
  may be asymmetric); row and column 0 are the hotel
- ``day_start``, ``day_end``: when the traveller leaves the hotel and the latest return (hidden,
  integers, day_start < day_end)
- ``budget``: the most that may be spent on tickets over the day (hidden, non-negative)
- ``guidebook_ratings``: the posted guidebook rating of each place (a decoy the default policy trusts;
  when omitted from data it equals ``enjoyment``)
Hidden mode: the day's start and end and the ticket budget are stated as rules (the traveller's own terms);
each place's enjoyment, its ticket, visit time and hours, and each row of travel minutes come from probes. The
informed agent probes the travel from the hotel, then each place by decreasing guidebook rating (enjoyment,
details, travel from it), believes the guidebook for an unprobed enjoyment, the mean of the probed details (open
all day) for unprobed details and a probed reverse trip or the mean probed trip for unprobed travel, and plays
the plan it solves for that belief with the bulk ``visit_places`` (which skips a place it cannot visit).
Dynamics: ``visit`` travels from where the traveller is to an unvisited place, waits for it to open if
needed, visits and pays; it is refused if the visit would end after closing, the tickets would exceed
the budget, or the hotel could no longer be reached by ``day_end`` straight from there, so every state
is a feasible day. ``wait`` spends minutes where one is (refused if the hotel could then no longer be
reached in time); ``undo_last_step`` takes back the last visit or wait while planning; returning to
the hotel, or finishing, ends the day. The utility is the total enjoyment of the places visited.
The knobs: ``size`` is the number of places n (4..16); ``horizon`` is the day's length in hours (4..14):
``day_end = day_start + 60 x horizon``, with day_start drawn from 08:00..10:00.
Solved exactly by dynamic programming over (set of places visited, last place) keeping the earliest
feasible finish time: valid because waiting is allowed (finishing earlier never hurts, and every
check is monotone in time) and the ticket total depends only on the set. Vectorised with numpy one
set size at a time; the best set is the one of highest enjoyment with a feasible order. Checked
against enumeration of every ordered sequence of places.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from mechanisms.base import ActionError, Mechanism, Solution, Tier
from mechanisms.facts import BUDGET_END, END, OBJECTIVE, Fact, probed, rule
from mechanisms.operations import Between, Observation, State, clock, decision, info, probe
from mechanisms.params import finite, non_negative, one_entry_each, stickers_default_to_truth
from mechanisms.registry import register
from schemas.envspec import Action

MAX_PLACES = 16  # the DP keeps 2^n x n finish times: about a million at 16 places
DAY_MINUTES = 1440
DURATIONS = (30, 45, 60, 90, 120, 150, 180)


def clock_text(minutes: float) -> str:
    minutes = int(minutes)
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


class TravelParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    enjoyment: list[float] = Field(min_length=1, max_length=MAX_PLACES)
    prices: list[float]
    durations: list[int]
    opening: list[list[int]]
    travel: list[list[int]]
    day_start: int = Field(ge=0, le=DAY_MINUTES)
    day_end: int = Field(ge=0, le=DAY_MINUTES)
    budget: float = Field(ge=0, allow_inf_nan=False)
    guidebook_ratings: list[float]

    _default_guidebook = stickers_default_to_truth(guidebook_ratings="enjoyment")

    @model_validator(mode="after")
    def _shapes(self) -> TravelParams:
        n = len(self.enjoyment)
        for name in ("prices", "durations", "opening", "guidebook_ratings"):
            one_entry_each(name, getattr(self, name), n, "place")
        for name in ("enjoyment", "prices", "guidebook_ratings"):
            finite(name, getattr(self, name))
            non_negative(name, getattr(self, name))
        if min(self.durations) < 1:
            raise ValueError("durations must be at least 1 minute")
        for j, hours in enumerate(self.opening, start=1):
            if len(hours) != 2:
                raise ValueError(f"opening of place {j} must be [open, close], got {hours}")
            if not 0 <= hours[0] <= hours[1] <= DAY_MINUTES:
                raise ValueError(f"opening of place {j} must satisfy 0 <= open <= close <= {DAY_MINUTES}, "
                                 f"got {hours}")
        if len(self.travel) != n + 1:
            raise ValueError(f"travel must have {n + 1} rows (hotel plus places), got {len(self.travel)}")
        for i, row in enumerate(self.travel):
            if len(row) != n + 1:
                raise ValueError(f"travel row {i} must have {n + 1} entries (a square matrix), got {len(row)}")
            non_negative(f"travel row {i}", row)
            if row[i] != 0:
                raise ValueError(f"travel[{i}][{i}] must be zero (the diagonal), got {row[i]}")
        if self.day_start >= self.day_end:
            raise ValueError(f"day_start ({self.day_start}) must be before day_end ({self.day_end})")
        return self

    @property
    def places(self) -> int:
        return len(self.enjoyment)


def _masks(n: int) -> np.ndarray:
    """Membership matrix: row m says which places (bit k = place k+1) the set m holds."""
    return (np.arange(1 << n)[:, None] >> np.arange(n)[None, :]) & 1


def _earliest_finish(p: TravelParams) -> tuple[np.ndarray, np.ndarray]:
    """finish[mask, k]: the earliest time a feasible day can end its visit of place k+1 having visited mask.

    Infinite where no order of mask ending at k+1 is feasible. parent[mask, k] is the place (0-based)
    visited before, or -1. Each (mask + k, k) arises from exactly one smaller mask, so a set-size layer is
    a vectorised min over the previous place of the arrival time.
    """
    n = p.places
    full = 1 << n
    members = _masks(n)
    affordable = members @ np.asarray(p.prices, dtype=float) <= p.budget + 1e-9 * max(1.0, p.budget)
    travel = np.asarray(p.travel, dtype=float)
    opens = np.asarray([h[0] for h in p.opening], dtype=float)
    closes = np.asarray([h[1] for h in p.opening], dtype=float)
    durations = np.asarray(p.durations, dtype=float)
    home = travel[1:, 0]

    def settle(arrive: np.ndarray) -> np.ndarray:
        done = np.maximum(arrive, opens) + durations
        return np.where((done <= closes) & (done + home <= p.day_end), done, np.inf)

    finish = np.full((full, n), np.inf)
    parent = np.full((full, n), -1, dtype=np.int64)
    bits = 1 << np.arange(n)
    first = settle(p.day_start + travel[0, 1:])
    finish[bits, np.arange(n)] = np.where(affordable[bits], first, np.inf)
    between = travel[1:, 1:]
    sizes = members.sum(axis=1)
    masks = np.arange(full)
    for s in range(1, n):
        layer = masks[sizes == s]
        layer = layer[np.isfinite(finish[layer]).any(axis=1)]
        if not len(layer):
            break
        candidates = finish[layer][:, :, None] + between[None, :, :]  # (sets, previous k, next j)
        best_k = np.argmin(candidates, axis=1)
        arrive = np.take_along_axis(candidates, best_k[:, None, :], axis=1)[:, 0, :]
        done = settle(arrive)
        rows, cols = np.nonzero((members[layer] == 0) & np.isfinite(done))
        grown = layer[rows] | bits[cols]
        keep = affordable[grown]
        rows, cols, grown = rows[keep], cols[keep], grown[keep]
        finish[grown, cols] = done[rows, cols]
        parent[grown, cols] = best_k[rows, cols]
    return finish, parent


Place = Annotated[int, Between(1, "places"), "place number"]  # a place number, 1..n


class TravelPlanning(Mechanism[TravelParams]):
    id = "travel_planning"
    version = 1
    group = "external"
    summary = "plan a day of visits from a hotel within opening hours and a ticket budget; subset DP"
    Params = TravelParams
    size_range = (4, MAX_PLACES)  # places
    horizon_range = (4, 14)  # hours in the day
    default_size = 8
    default_horizon = 8
    difficulty_grid = [(5, 6), (7, 8), (8, 8), (10, 10), (12, 12), (13, 14)]
    difficulty_tiers = {
        "easy": Tier(((4, 4), (4, 5), (5, 5)), 1.0),
        "medium": Tier(((5, 6), (6, 6), (6, 7)), 0.7),
        "hard": Tier(((9, 9), (10, 10), (11, 10)), 1.0),
        "frontier": Tier(((13, 12), (14, 12)), 0.4),
    }
    turn_slack = 2  # so that a tier's probe share, not the slack, decides how much of the information fits
    u0_band = (0.15, 0.99)

    # --- parameters -----------------------------------------------------------------------
    def sample(self, rng: np.random.Generator, size: int, horizon: int) -> TravelParams:
        n, hours = int(size), int(horizon)
        day_start = int(rng.choice([480, 510, 540, 570, 600]))
        day_end = day_start + 60 * hours
        points = rng.uniform(0.0, 1.0, (n + 1, 2))
        straight = np.sqrt(((points[:, None, :] - points[None, :, :]) ** 2).sum(axis=2))
        travel = np.maximum(np.ceil(60 * straight * rng.uniform(1.0, 1.2, (n + 1, n + 1))), 5).astype(int)
        np.fill_diagonal(travel, 0)
        durations = rng.choice(DURATIONS, n).astype(int)
        quality = rng.uniform(1.0, 10.0, n)
        enjoyment = np.maximum(np.round(quality * (2 + durations / 30)), 1)
        prices = np.where(rng.random(n) < 0.25, 0, rng.integers(5, 41, n)).astype(float)
        budget = float(max(np.round(rng.uniform(0.35, 0.6) * prices.sum()), 5.0))
        opening = []
        for j in range(n):
            opens = day_start + 30 * int(rng.integers(-4, max(int(0.6 * hours * 2), 1)))
            opens = max(opens, 0)
            closes = min(opens + int(durations[j]) + 30 * int(rng.integers(2, 13)), DAY_MINUTES)
            opening.append([opens, closes])
        data = {"enjoyment": enjoyment.tolist(), "prices": prices.tolist(), "durations": durations.tolist(),
                "opening": opening, "travel": travel.tolist(), "day_start": day_start, "day_end": day_end,
                "budget": budget}
        return self.with_misleading_stickers(
            lambda: TravelParams(**data, guidebook_ratings=self._ratings(rng, enjoyment)),
            lambda u0, u_star, _: u0 < u_star - 1e-9)

    @staticmethod
    def _ratings(rng: np.random.Generator, enjoyment: np.ndarray) -> list[float]:
        """The guidebook: enjoyment under a multiplicative log-normal error, rescaled, rounded."""
        bias = np.exp(rng.normal(0.0, 0.6, len(enjoyment)))
        return np.maximum(np.round(enjoyment * bias / np.mean(bias)), 1).tolist()

    # --- reference ------------------------------------------------------------------------
    def solve(self, params: TravelParams) -> Solution:
        p = params
        n = p.places
        finish, parent = _earliest_finish(p)
        members = _masks(n)
        value = members @ np.asarray(p.enjoyment, dtype=float)
        feasible = np.isfinite(finish).any(axis=1)
        feasible[0] = True  # staying at the hotel
        score = np.where(feasible, value, -np.inf)
        mask = int(np.argmax(score))
        order: list[int] = []
        if mask:
            last = int(np.argmin(finish[mask]))
            while last >= 0:
                order.append(last + 1)
                mask, last = mask & ~(1 << last), int(parent[mask, last])
            order.reverse()
        actions = [*([Action(op="visit_places", args={"places": order})] if order else []),
                   Action(op="return_to_hotel")]
        u_star = self.run(p, actions)
        facts = {"places": n, "visited": order, "feasible_sets": int(feasible.sum()),
                 "states": int(np.isfinite(finish).sum())}
        return Solution(u_star, actions, "DP over (visited set, last place) of the earliest finish time", facts)

    def default_actions(self, params: TravelParams) -> list[Action]:
        """Greedy by guidebook rating per hour spent (travel, waiting and visit) among feasible places."""
        p = params
        order: list[int] = []
        state = self.initial_state(p)
        while True:
            best, best_score = None, -math.inf
            for j in range(1, p.places + 1):
                plan = self._plan_visit(p, state, j)
                if isinstance(plan, str):
                    continue
                hours = (plan["finish"] - state["clock"]) / 60
                score = p.guidebook_ratings[j - 1] / hours if hours > 0 else math.inf
                if score > best_score:
                    best, best_score = j, score
            if best is None:
                break
            self.apply(p, state, Action(op="visit", args={"place": best}))
            order.append(best)
        return [*([Action(op="visit_places", args={"places": order})] if order else []),
                Action(op="return_to_hotel")]

    # --- dynamics -------------------------------------------------------------------------
    def initial_state(self, params: TravelParams) -> dict[str, Any]:
        return {"at": 0, "clock": params.day_start, "visited": [], "steps": [], "finished": False}

    @staticmethod
    def _spent(p: TravelParams, visited: list[int]) -> float:
        return float(sum(p.prices[j - 1] for j in visited))

    def _plan_visit(self, p: TravelParams, state: dict[str, Any], j: int) -> dict[str, Any] | str:
        """The times of visiting place j next, or why it is refused (a string)."""
        if j in state["visited"]:
            return f"place {j} has already been visited"
        arrive = state["clock"] + p.travel[state["at"]][j]
        opens, closes = p.opening[j - 1]
        start = max(arrive, opens)
        finish = start + p.durations[j - 1]
        if finish > closes:
            return f"a visit to place {j} starting at {clock_text(start)} would end after its closing time"
        if finish + p.travel[j][0] > p.day_end:
            return f"after a visit to place {j} the hotel could not be reached by the end of the day"
        spent = self._spent(p, state["visited"])
        if spent + p.prices[j - 1] > p.budget + 1e-9 * max(1.0, p.budget):
            return f"the ticket for place {j} would take the spending over the budget"
        return {"arrive": arrive, "start": start, "finish": finish, "price": p.prices[j - 1]}

    def _go(self, p: TravelParams, state: dict[str, Any], j: int, plan: dict[str, Any]) -> None:
        state["steps"].append({"at": state["at"], "clock": state["clock"], "visit": j})
        state.update(at=j, clock=plan["finish"], visited=[*state["visited"], j])

    def _where(self, p: TravelParams, state: dict[str, Any]) -> dict[str, Any]:
        return {"visited places": list(state["visited"]), "position": state["at"], "clock": clock_text(state["clock"]),
                "clock minute": state["clock"], "spent": self._spent(p, state["visited"])}

    def _still_open(self, state: State) -> None:
        if self.finished(state):
            raise ActionError("the day is over")

    # --- operations -------------------------------------------------------------------------
    @probe
    def probe_enjoyment(self, p: TravelParams, state: State, place: Place) -> Observation:
        """the true enjoyment of visiting one place"""
        return {"place": place, "enjoyment": p.enjoyment[place - 1]}

    @probe
    def probe_place_details(self, p: TravelParams, state: State, place: Place) -> Observation:
        """the ticket price, visit duration and opening hours of one place"""
        opens, closes = p.opening[place - 1]
        return {"place": place, "ticket price": p.prices[place - 1], "visit minutes": p.durations[place - 1],
                "opens at": clock_text(opens), "closes at": clock_text(closes), "opens minute": opens,
                "closes minute": closes}

    @probe
    def probe_travel_from(self, p: TravelParams, state: State,
                          origin: Annotated[int, Between(0, "places")]) -> Observation:
        """the travel minutes from one place (or the hotel) to every other

        Args:
            origin: where the trip starts (0 is the hotel)
        """
        return {"origin": origin,
                "travel minutes": {str(j): p.travel[origin][j] for j in range(p.places + 1) if j != origin}}

    @info
    def probe_day_terms(self, p: TravelParams, state: State) -> Observation:
        """when the day starts and ends and the ticket budget"""
        return {"day starts": clock_text(p.day_start), "day ends": clock_text(p.day_end),
                "day start minute": p.day_start, "day end minute": p.day_end, "budget": p.budget}

    @info(decoy=True, estimates="enjoyment")
    def read_guidebook(self, p: TravelParams, state: State, place: Place) -> Observation:
        """the posted guidebook rating of one place"""
        return {"place": place, "guidebook rating": p.guidebook_ratings[place - 1]}

    @info
    def list_places(self, p: TravelParams, state: State) -> Observation:
        """the place numbers and the hotel"""
        return {"hotel": 0, "places": list(range(1, p.places + 1))}

    @info
    def view_itinerary(self, p: TravelParams, state: State) -> Observation:
        """the places visited so far, where the traveller is, the time and money spent"""
        return self._where(p, state)

    @decision
    def visit(self, p: TravelParams, state: State, place: Place) -> Observation:
        """travel to an unvisited place, wait for it to open if needed, visit and pay"""
        self._still_open(state)
        plan = self._plan_visit(p, state, place)
        if isinstance(plan, str):
            raise ActionError(plan)
        self._go(p, state, place, plan)
        return {"place": place, "arrived": clock_text(plan["arrive"]), "started": clock_text(plan["start"]),
                "left": clock_text(plan["finish"]), "paid": plan["price"], **self._where(p, state)}

    @decision
    def visit_places(self, p: TravelParams, state: State,
                     places: Annotated[list[int], Between(1, "places", max_items="places")]) -> Observation:
        """visit a list of places in order, skipping any that cannot be visited

        Args:
            places: place numbers in visiting order
        """
        self._still_open(state)
        trial = {**state, "visited": list(state["visited"]), "steps": list(state["steps"])}
        skipped = []
        for j in places:
            plan = self._plan_visit(p, trial, j)
            if isinstance(plan, str):
                skipped.append(j)
            else:
                self._go(p, trial, j, plan)
        if len(skipped) == len(places):
            why = self._plan_visit(p, state, places[0])
            raise ActionError(f"none of the listed places can be visited next: {why}")
        state.update(trial)
        return {**self._where(p, state), "skipped": skipped}

    @decision
    def undo_last_step(self, p: TravelParams, state: State) -> Observation:
        """take back the last visit or wait"""
        self._still_open(state)
        if not state["steps"]:
            raise ActionError("nothing to undo: no visit or wait has been made")
        step = state["steps"].pop()
        if step["visit"]:
            state["visited"] = [k for k in state["visited"] if k != step["visit"]]
        state.update(at=step["at"], clock=step["clock"])
        return self._where(p, state)

    @clock
    def wait(self, p: TravelParams, state: State, minutes: Annotated[int, Between(1, DAY_MINUTES)]) -> Observation:
        """wait some minutes where the traveller is

        Args:
            minutes: minutes to wait
        """
        self._still_open(state)
        if state["clock"] + minutes + p.travel[state["at"]][0] > p.day_end:
            raise ActionError(f"after waiting {minutes} minutes the hotel could not be reached by the end of the day")
        state["steps"].append({"at": state["at"], "clock": state["clock"], "visit": 0})
        state["clock"] += minutes
        return self._where(p, state)

    @clock
    def return_to_hotel(self, p: TravelParams, state: State) -> Observation:
        """travel back to the hotel; this ends the day"""
        return self._end_day(p, state)

    @clock
    def finish(self, p: TravelParams, state: State) -> Observation:
        """stop planning now; the traveller goes back"""
        return self._end_day(p, state)

    def _end_day(self, p: TravelParams, state: State) -> Observation:
        self._still_open(state)
        back = state["clock"] + p.travel[state["at"]][0]
        state["finished"] = True
        return {"visited places": list(state["visited"]), "back at": clock_text(back),
                "spent": self._spent(p, state["visited"]), "total points": self.utility(p, state), "finished": True}

    def utility(self, params: TravelParams, state: dict[str, Any]) -> float:
        return float(sum(params.enjoyment[j - 1] for j in state["visited"]))

    # --- rendering facts ------------------------------------------------------------------
    def facts(self, params: TravelParams, vocab: dict[str, str]) -> list[Fact]:
        p, v = params, vocab
        n = p.places
        points = "; ".join(f"{j + 1}: {p.enjoyment[j]:g}" for j in range(n))
        details = "; ".join(f"{j + 1}: ticket {p.prices[j]:g}, visit {p.durations[j]} minutes, open "
                            f"{clock_text(p.opening[j][0])} (minute {p.opening[j][0]}) to "
                            f"{clock_text(p.opening[j][1])} (minute {p.opening[j][1]})" for j in range(n))
        travel = "; ".join(f"from {i}: [{', '.join(str(x) for x in row)}]" for i, row in enumerate(p.travel))
        ratings = "; ".join(f"{j + 1}: {p.guidebook_ratings[j]:g}" for j in range(n))
        return [
            rule("structure", f"The day starts at {clock_text(p.day_start)} (minute {p.day_start}) at {v['place']} "
                 f"(number 0), and the {v['role']} must be back there by {clock_text(p.day_end)} (minute "
                 f"{p.day_end}). There are {n} {v['sites']}, numbered 1 to {n}, each worth some points for a "
                 f"visit; the tickets together may cost at most {p.budget:g} {v['currency']}.",
                 n, p.day_start, p.day_end, p.budget),
            probed("points", "probe_enjoyment", f"The points a visit to each {v['site']} is worth: {points}.",
                   p.enjoyment),
            probed("details", "probe_place_details", f"Each {v['site']}'s ticket in {v['currency']}, visit length "
                   f"and opening hours: {details}.",
                   [*p.prices, *p.durations, *(t for hours in p.opening for t in hours)]),
            probed("travel", "probe_travel_from", "Travel minutes (row = from, position in the row = to, 0 = "
                   f"{v['place']}; trips may differ by direction): {travel}.",
                   [x for i, row in enumerate(p.travel) for j, x in enumerate(row) if i != j]),
            probed("ratings", "read_guidebook", f"The {v['sticker']} rates the {v['sites']} (an outside estimate "
                   f"of the points, not the points): {ratings}.", p.guidebook_ratings),
            rule("visits", f"Each {v['site']} can be visited at most once. A visit starts on arrival, or when the "
                 f"{v['site']} opens if that is later (arriving early means waiting), and must end by its closing "
                 f"time; it is refused if it would end later, take the tickets over the budget, or leave too "
                 f"little time to get back to {v['place']} by the end of the day. Several {v['sites']} can be "
                 "visited in one call, in order; one that cannot be visited is then skipped."),
            rule(OBJECTIVE, f"Your result is the total points of the {v['sites']} visited; the time and the money "
                 "left over count for nothing."),
            rule(END, f"Going back to {v['place']} ends the day, and so does stopping at once; either way the "
                 f"{v['sites']} visited so far count."),
            rule(BUDGET_END, f"If the turns run out before the day ends, the {v['sites']} visited so far count, "
                 "as if the day ended then."),
        ]

    def probe_order(self, params: TravelParams) -> list[Action]:
        """Travel from the hotel first, then per place by decreasing guidebook rating: its points, its details,
        the travel from it."""
        p = params
        ranked = sorted(range(1, p.places + 1), key=lambda j: (-p.guidebook_ratings[j - 1], j))
        calls = [Action(op="probe_travel_from", args={"origin": 0})]
        for j in ranked:
            calls += [Action(op="probe_enjoyment", args={"place": j}),
                      Action(op="probe_place_details", args={"place": j}),
                      Action(op="probe_travel_from", args={"origin": j})]
        return calls

    def believed(self, params: TravelParams, probed: list[Action]) -> TravelParams:
        """Probed values are true; an unprobed enjoyment is its guidebook rating; unprobed details are the mean of
        the probed ones (a ticket of twice the budget over the places, a 90-minute visit when none is probed) and
        open all day; an unprobed trip is its probed reverse trip, else the mean probed trip (30 minutes when none
        is probed)."""
        p = params
        n = p.places
        valued = {a.args["place"] for a in probed if a.op == "probe_enjoyment"}
        detailed = {a.args["place"] for a in probed if a.op == "probe_place_details"}
        rows = {a.args["origin"] for a in probed if a.op == "probe_travel_from"}
        enjoyment = [p.enjoyment[j - 1] if j in valued else p.guidebook_ratings[j - 1] for j in range(1, n + 1)]
        prices = [p.prices[j - 1] for j in detailed]
        durations = [p.durations[j - 1] for j in detailed]
        price = round(sum(prices) / len(prices), 6) if prices else round(2 * p.budget / n, 6)
        duration = round(sum(durations) / len(durations)) if durations else 90
        trips = [p.travel[i][j] for i in rows for j in range(n + 1) if j != i]
        trip = round(sum(trips) / len(trips)) if trips else 30
        travel = [[p.travel[i][j] if i in rows else p.travel[j][i] if j in rows else (0 if i == j else trip)
                   for j in range(n + 1)] for i in range(n + 1)]
        return TravelParams(
            enjoyment=enjoyment,
            prices=[p.prices[j - 1] if j in detailed else price for j in range(1, n + 1)],
            durations=[p.durations[j - 1] if j in detailed else duration for j in range(1, n + 1)],
            opening=[list(p.opening[j - 1]) if j in detailed else [p.day_start, p.day_end] for j in range(1, n + 1)],
            travel=travel, day_start=p.day_start, day_end=p.day_end, budget=p.budget,
            guidebook_ratings=list(p.guidebook_ratings))

    def heuristic_actions(self, params: TravelParams) -> dict[str, list[Action]]:
        """top_rated: visit the places by decreasing guidebook rating in one call (those that do not fit are
        skipped), then go back. assessed_first: probe every place's points, then visit by decreasing points in one
        call, then go back."""
        p = params
        n = p.places
        home = Action(op="return_to_hotel")
        by_rating = sorted(range(1, n + 1), key=lambda j: (-p.guidebook_ratings[j - 1], j))
        by_points = sorted(range(1, n + 1), key=lambda j: (-p.enjoyment[j - 1], j))
        return {
            "top_rated": [Action(op="visit_places", args={"places": by_rating}), home],
            "assessed_first": [*(Action(op="probe_enjoyment", args={"place": j}) for j in range(1, n + 1)),
                               Action(op="visit_places", args={"places": by_points}), home],
        }

    def secret_numbers(self, params: TravelParams) -> list[float]:
        p = params
        return [*p.enjoyment, *(x for x in p.prices if x), *p.durations, *(t for h in p.opening for t in h),
                *(x for row in p.travel for x in row if x)]

    def public_numbers(self, params: TravelParams) -> list[float]:
        p = params
        clocks = [part for t in (p.day_start, p.day_end) for part in divmod(t, 60)]  # 09:30 reads as 9 and 30
        return [p.places, *range(0, p.places + 2), DAY_MINUTES, p.day_start, p.day_end, p.budget, *clocks]

    def probe_allowance(self, params: TravelParams) -> int:
        return 3 * params.places + 1  # the points, details and travel row of every place, the hotel's travel row


register(TravelPlanning())
