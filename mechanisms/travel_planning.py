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
Hidden mode: the day's start and end and the ticket budget are stated as rules (the traveller's own terms), and so
is that trips are one-way (they may differ by direction and need not obey the triangle inequality); each place's
enjoyment, its ticket, visit time and hours, and each row of travel minutes come from probes; the guidebook is one
posted sheet showing every place's rating (the decoy the default trusts: it visits by decreasing rating in one call).
A decision (a visit, a list of visits, an undo) shows what was planned and, for a skipped place, why, but no time
or money: those show in the itinerary, and the points come with the ending's ledger (the places visited, the points
of each visit and their total, the money spent and the time back at the hotel). The informed agent reads the
guidebook, probes the travel from the hotel, then each place's enjoyment and details by decreasing rating, then the
travel from each place in the same order; it believes the guidebook for an unprobed enjoyment, the mean of the
probed details (open all day) for unprobed details and a probed reverse trip or the mean probed trip for unprobed
travel, and plays the plan it solves for that belief with the bulk ``visit_places`` (which skips a place it cannot
visit).
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
from mechanisms.players import Knowledge, Policy, Seat
from mechanisms.prose import figure
from mechanisms.registry import register
from schemas.envspec import Action

MAX_PLACES = 16  # the DP keeps 2^n x n finish times: about a million at 16 places
DAY_MINUTES = 1440
DURATIONS = (30, 45, 60, 90, 120, 150, 180)
# why a visit is refused (or skipped in a list): what the plan ran into, with no hidden figure
SKIPPED = {"visited": "it has already been visited", "closing": "the visit would end after its closing time",
           "late": "after the visit the hotel could not be reached by the end of the day",
           "budget": "its ticket would take the spending over the budget"}


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
    version = 3  # issue 27: the prose is part of the spec
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
        "hard": Tier(((11, 10), (11, 11), (12, 11)), 0.5),
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

    def default_policy(self, seat: Seat) -> None:
        """Reads the guidebook and visits the places by decreasing rating in one call (a place that cannot be
        visited at its turn is skipped), then goes back (never verifies a figure)."""
        seat.call("read_guidebook")
        order = self._by_rating(seat.known)
        if order:
            seat.call("visit_places", places=order)
        seat.call("return_to_hotel")

    @staticmethod
    def _posted_ratings(known: Knowledge) -> dict[int, float]:
        """The guidebook's rating of every place (each 1.0 when the guidebook was not read)."""
        sheet = known.latest("read_guidebook")
        n = known.public["places"]
        return {j: float(sheet["guidebook ratings"][f"place {j}"]) if sheet else 1.0 for j in range(1, n + 1)}

    @classmethod
    def _by_rating(cls, known: Knowledge) -> list[int]:
        """The place numbers, highest guidebook rating first (in number order when the guidebook was not read)."""
        rating = cls._posted_ratings(known)
        return sorted(rating, key=lambda j: (-rating[j], j))

    # --- dynamics -------------------------------------------------------------------------
    def initial_state(self, params: TravelParams) -> dict[str, Any]:
        return {"at": 0, "clock": params.day_start, "visited": [], "steps": [], "finished": False}

    @staticmethod
    def _spent(p: TravelParams, visited: list[int]) -> float:
        return float(sum(p.prices[j - 1] for j in visited))

    def _plan_visit(self, p: TravelParams, state: dict[str, Any], j: int) -> dict[str, Any] | str:
        """The times of visiting place j next, or why it is refused (a string)."""
        if j in state["visited"]:
            return SKIPPED["visited"]
        arrive = state["clock"] + p.travel[state["at"]][j]
        opens, closes = p.opening[j - 1]
        start = max(arrive, opens)
        finish = start + p.durations[j - 1]
        if finish > closes:
            return SKIPPED["closing"]
        if finish + p.travel[j][0] > p.day_end:
            return SKIPPED["late"]
        spent = self._spent(p, state["visited"])
        if spent + p.prices[j - 1] > p.budget + 1e-9 * max(1.0, p.budget):
            return SKIPPED["budget"]
        return {"arrive": arrive, "start": start, "finish": finish, "price": p.prices[j - 1]}

    def _go(self, p: TravelParams, state: dict[str, Any], j: int, plan: dict[str, Any]) -> None:
        state["steps"].append({"at": state["at"], "clock": state["clock"], "visit": j})
        state.update(at=j, clock=plan["finish"], visited=[*state["visited"], j])

    def _where(self, p: TravelParams, state: dict[str, Any]) -> dict[str, Any]:
        """Where the plan stands, with the time of day and the money spent (an info call's and a clock step's)."""
        return {**self._planned(state), "clock": clock_text(state["clock"]), "clock minute": state["clock"],
                "spent": self._spent(p, state["visited"])}

    @staticmethod
    def _planned(state: dict[str, Any]) -> dict[str, Any]:
        """What a decision shows: the places planned and where the traveller is, no time or money (those come
        with the itinerary, a wait or the end of the day)."""
        return {"visited places": list(state["visited"]), "position": state["at"]}

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

    @info(decoy=True, estimates="enjoyment")
    def read_guidebook(self, p: TravelParams, state: State) -> Observation:
        """the posted guidebook rating of every place: outside estimates of the enjoyment, not the true values"""
        return {"guidebook ratings": {f"place {j + 1}": p.guidebook_ratings[j] for j in range(p.places)}}

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
            raise ActionError(f"place {place} cannot be visited next: {plan}")
        self._go(p, state, place, plan)
        return {"place": place, **self._planned(state)}

    @decision
    def visit_places(self, p: TravelParams, state: State,
                     places: Annotated[list[int], Between(1, "places", max_items="places")]) -> Observation:
        """visit a list of places in order, skipping any that cannot be visited

        Args:
            places: place numbers in visiting order
        """
        self._still_open(state)
        trial = {**state, "visited": list(state["visited"]), "steps": list(state["steps"])}
        skipped: dict[int, str] = {}
        for j in places:
            plan = self._plan_visit(p, trial, j)
            if isinstance(plan, str):
                skipped[j] = plan
            else:
                self._go(p, trial, j, plan)
        if len(skipped) == len(places):
            raise ActionError(f"none of the listed places can be visited next: place {places[0]}: "
                              f"{skipped[places[0]]}")
        state.update(trial)
        return {**self._planned(state), "skipped": list(skipped),
                "why skipped": {f"place {j}": why for j, why in skipped.items()}}

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
        return self._planned(state)

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
        """End the day (the points, the money and the time back come with the ending's ledger)."""
        self._still_open(state)
        state["finished"] = True
        return {"visited places": list(state["visited"]), "finished": True}

    def ledger(self, params: TravelParams, state: dict[str, Any]) -> dict[str, Any]:
        """The places visited, the points of each visit and their total (the result), the money spent and when the
        traveller is back at the hotel (going straight back from where the day stands)."""
        p = params
        back = state["clock"] + p.travel[state["at"]][0]
        return {"visited places": list(state["visited"]),
                "points of each visit": {f"place {j}": p.enjoyment[j - 1] for j in state["visited"]},
                "total points": self.utility(p, state), "spent": self._spent(p, state["visited"]),
                "back at": clock_text(back)}

    def utility(self, params: TravelParams, state: dict[str, Any]) -> float:
        return float(sum(params.enjoyment[j - 1] for j in state["visited"]))

    # --- rendering facts ------------------------------------------------------------------
    def facts(self, params: TravelParams, vocab: dict[str, str]) -> list[Fact]:
        p, v = params, vocab
        n = p.places
        points = "; ".join(f"{j + 1}: {figure(p.enjoyment[j])}" for j in range(n))
        details = "; ".join(f"{j + 1}: ticket {figure(p.prices[j])}, visit {p.durations[j]} minutes, open "
                            f"{clock_text(p.opening[j][0])} (minute {p.opening[j][0]}) to "
                            f"{clock_text(p.opening[j][1])} (minute {p.opening[j][1]})" for j in range(n))
        travel = "; ".join(f"from {i}: [{', '.join(str(x) for x in row)}]" for i, row in enumerate(p.travel))
        ratings = "; ".join(f"{j + 1}: {figure(p.guidebook_ratings[j])}" for j in range(n))
        return [
            rule("structure", f"The day starts at {clock_text(p.day_start)} (minute {p.day_start}) at {v['place']} "
                 f"(number 0), and the {v['role']} must be back there by {clock_text(p.day_end)} (minute "
                 f"{p.day_end}). There are {n} {v['sites']}, numbered 1 to {n}, each worth some points for a "
                 f"visit; the tickets together may cost at most {figure(p.budget)} {v['currency']}.",
                 n, p.day_start, p.day_end, p.budget),
            probed("points", "probe_enjoyment", f"The points a visit to each {v['site']} is worth: {points}.",
                   p.enjoyment),
            probed("details", "probe_place_details", f"Each {v['site']}'s ticket in {v['currency']}, visit length "
                   f"and opening hours: {details}.",
                   [*p.prices, *p.durations, *(t for hours in p.opening for t in hours)]),
            rule("trips", "Trips are one-way: the trip from one place to another may take more or fewer minutes "
                 "than the trip back, and a direct trip may take longer than going by way of another "
                 f"{v['site']}; the {v['role']} always travels directly."),
            probed("travel", "probe_travel_from", "Travel minutes (row = from, position in the row = to, 0 = "
                   f"{v['place']}): {travel}.",
                   [x for i, row in enumerate(p.travel) for j, x in enumerate(row) if i != j]),
            probed("ratings", "read_guidebook", f"The {v['source']} rates the {v['sites']} (an outside estimate "
                   f"of the points, not the points): {ratings}.", p.guidebook_ratings),
            rule("visits", f"Each {v['site']} can be visited at most once. A visit starts on arrival, or when the "
                 f"{v['site']} opens if that is later (arriving early means waiting), and must end by its closing "
                 f"time; it is refused if it would end later, take the tickets over the budget, or leave too "
                 f"little time to get back to {v['place']} by the end of the day. Several {v['sites']} can be "
                 "visited in one call, in order; one that cannot be visited is then skipped, and the reply says "
                 "why. A visit's times and ticket show in the itinerary, and the points when the day ends."),
            rule(OBJECTIVE, f"Your result is the total points of the {v['sites']} visited; the time and the money "
                 "left over count for nothing."),
            rule(END, f"Going back to {v['place']} ends the day, and so does stopping at once; either way the "
                 f"{v['sites']} visited so far count."),
            rule(BUDGET_END, f"If the turns run out before the day ends, the {v['sites']} visited so far count, "
                 "as if the day ended then."),
        ]

    # --- players --------------------------------------------------------------------------
    def public_view(self, params: TravelParams) -> dict[str, Any]:
        """The count of places and the traveller's own terms (stated as a rule in every mode)."""
        p = params
        return {"places": p.places, "day start minute": p.day_start, "day end minute": p.day_end, "budget": p.budget}

    def probe_order(self, known: Knowledge) -> list[Action]:
        """The travel from the hotel first; then per place by decreasing guidebook rating, its points and its
        details (what decides whether a visit fits and is worth it); then the travel from each place, in the same
        order (an unverified trip is guessed well enough from its reverse trip or the mean)."""
        ranked = self._by_rating(known)
        calls = [Action(op="probe_travel_from", args={"origin": 0})]
        for j in ranked:
            calls += [Action(op="probe_enjoyment", args={"place": j}),
                      Action(op="probe_place_details", args={"place": j})]
        return [*calls, *(Action(op="probe_travel_from", args={"origin": j}) for j in ranked)]

    def believed(self, known: Knowledge) -> TravelParams:
        """Verified figures are true; an unverified enjoyment is its guidebook rating (1 when the guidebook was not
        read); unverified details are the mean of the verified ones (a ticket of twice the budget over the places,
        a 90-minute visit when none is verified) and open all day; an unverified trip is its verified reverse trip,
        else the mean verified trip (30 minutes when none is verified)."""
        v = known.public
        n, day_start, day_end, budget = v["places"], v["day start minute"], v["day end minute"], v["budget"]
        rating = self._posted_ratings(known)
        enjoyment = [rating[j] for j in range(1, n + 1)]
        for _, seen in known.observations("probe_enjoyment"):
            enjoyment[seen["place"] - 1] = float(seen["enjoyment"])
        details = {seen["place"]: seen for _, seen in known.observations("probe_place_details")}
        prices = [float(d["ticket price"]) for d in details.values()]
        durations = [int(d["visit minutes"]) for d in details.values()]
        price = round(sum(prices) / len(prices), 6) if prices else round(2 * budget / n, 6)
        duration = round(sum(durations) / len(durations)) if durations else 90
        rows = {int(seen["origin"]): {int(j): int(x) for j, x in seen["travel minutes"].items()}
                for _, seen in known.observations("probe_travel_from")}
        trips = [x for row in rows.values() for x in row.values()]
        trip = round(sum(trips) / len(trips)) if trips else 30
        travel = [[0 if i == j else rows[i][j] if i in rows else rows[j][i] if j in rows else trip
                   for j in range(n + 1)] for i in range(n + 1)]
        return TravelParams(
            enjoyment=enjoyment,
            prices=[float(details[j]["ticket price"]) if j in details else price for j in range(1, n + 1)],
            durations=[int(details[j]["visit minutes"]) if j in details else duration for j in range(1, n + 1)],
            opening=[[int(details[j]["opens minute"]), int(details[j]["closes minute"])] if j in details
                     else [day_start, day_end] for j in range(1, n + 1)],
            travel=travel, day_start=day_start, day_end=day_end, budget=budget,
            guidebook_ratings=[rating[j] for j in range(1, n + 1)])

    def heuristic_policies(self) -> dict[str, Policy]:
        """assessed_first: verify every place's points, then visit by decreasing points in one call (those that do
        not fit are skipped), then go back. rated_per_hour: read the guidebook, check every place's ticket, visit
        length and hours, then visit greedily by rating per hour of the visit and the believed trip to it, then go
        back."""

        def assessed_first(seat: Seat) -> None:
            n = seat.known.public["places"]
            points = {}
            for j in range(1, n + 1):
                seen = seat.call("probe_enjoyment", place=j)
                points[j] = float(seen["enjoyment"]) if seen and "enjoyment" in seen else 0.0
            seat.call("visit_places", places=sorted(points, key=lambda j: (-points[j], j)))
            seat.call("return_to_hotel")

        def rated_per_hour(seat: Seat) -> None:
            n = seat.known.public["places"]
            seat.call("read_guidebook")
            for j in range(1, n + 1):
                seat.call("probe_place_details", place=j)
            belief = self.believed(seat.known)
            order: list[int] = []
            state = self.initial_state(belief)
            while True:
                best, best_rate = None, -math.inf
                for j in range(1, n + 1):
                    plan = self._plan_visit(belief, state, j)
                    if isinstance(plan, str):
                        continue
                    hours = (plan["finish"] - state["clock"]) / 60
                    rate = belief.enjoyment[j - 1] / hours if hours > 0 else math.inf
                    if rate > best_rate:
                        best, best_rate = j, rate
                if best is None:
                    break
                self._go(belief, state, best, self._plan_visit(belief, state, best))
                order.append(best)
            if order:
                seat.call("visit_places", places=order)
            seat.call("return_to_hotel")

        return {"assessed_first": assessed_first, "rated_per_hour": rated_per_hour}

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
