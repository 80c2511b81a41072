"""knapsack: 0/1 multi-dimensional knapsack; pick items whose total weight fits every capacity.

Parameters (all can be given as data):
- ``values``: the value of each of the n items (hidden, non-negative); items are numbered 1..n
- ``weights``: an m x n matrix; ``weights[i][j]`` is how much item j+1 uses of capacity dimension i+1
  (hidden, non-negative); m is the number of capacity dimensions
- ``capacities``: the limit of each of the m dimensions (hidden, positive)
- ``sticker_values``: the posted "rating" of each item (a decoy: a noisy, biased estimate of its value
  that the default policy trusts; when omitted from data it equals ``values``)
The knobs: ``size`` is the number of items n, ``horizon`` the number of capacity dimensions m.
Solved exactly by meet-in-the-middle enumeration of every feasible subset (checked against HiGHS MILP
and plain enumeration in the tests).
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
from mechanisms.prose import a, figure, numbered, there_are
from mechanisms.registry import register
from schemas.envspec import Action

MAX_ITEMS = 20  # the exact enumeration checks 2^(n/2) x 2^(n/2) pairs: about a million at 20 items
MAX_DIMENSIONS = 30


def _subsets(values: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every subset of the given items: membership masks, total values and total weights per dimension."""
    n = len(values)
    masks = (np.arange(1 << n)[:, None] >> np.arange(n)[None, :]) & 1
    return masks, masks @ values, masks @ weights.T


def _best_subset(values: np.ndarray, weights: np.ndarray, capacities: np.ndarray) -> tuple[np.ndarray, int]:
    """Exact 0/1 multi-dimensional knapsack by meet-in-the-middle: every pair of half-subsets is checked.

    (HiGHS MILP is exact too, but its MIP solver prints debugging lines to stdout on some instances.)
    """
    half = len(values) // 2
    masks_a, value_a, weight_a = _subsets(values[:half], weights[:, :half])
    masks_b, value_b, weight_b = _subsets(values[half:], weights[:, half:])
    slack = 1e-9 * max(1.0, float(np.max(capacities)))
    fits = np.all(weight_a[:, None, :] + weight_b[None, :, :] <= capacities + slack, axis=2)
    totals = np.where(fits, value_a[:, None] + value_b[None, :], -np.inf)
    a, b = np.unravel_index(int(np.argmax(totals)), totals.shape)
    return np.concatenate([masks_a[a], masks_b[b]]).astype(float), int(totals.size)


class KnapsackParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    values: list[float] = Field(min_length=1, max_length=MAX_ITEMS)
    weights: list[list[float]] = Field(min_length=1, max_length=MAX_DIMENSIONS)
    capacities: list[float] = Field(min_length=1, max_length=MAX_DIMENSIONS)
    sticker_values: list[float]

    _default_sticker = stickers_default_to_truth(sticker_values="values")

    @model_validator(mode="after")
    def _shapes(self) -> KnapsackParams:
        n, m = len(self.values), len(self.weights)
        one_entry_each("capacities", self.capacities, m, "row of weights")
        rows_of("weights", self.weights, n, "item")
        one_entry_each("sticker_values", self.sticker_values, n, "item")
        finite("values, weights, capacities and sticker_values", self.values, self.capacities, self.sticker_values,
               flat(self.weights))
        non_negative("values", self.values)
        non_negative("weights", flat(self.weights))
        positive("capacities", self.capacities)
        return self

    @property
    def items(self) -> int:
        return len(self.values)

    @property
    def dimensions(self) -> int:
        return len(self.capacities)


def _used(p: KnapsackParams, selected: list[int]) -> list[float]:
    """Capacity used in each dimension by the selected items (1-based ids)."""
    return [float(sum(p.weights[i][j - 1] for j in selected)) for i in range(p.dimensions)]


def _overflow(p: KnapsackParams, used: list[float], item: int) -> list[int]:
    """The dimensions (1-based) that adding this item would push over their capacity."""
    over = []
    for i in range(p.dimensions):
        total, cap = used[i] + p.weights[i][item - 1], p.capacities[i]
        if total > cap + 1e-9 * max(1.0, abs(cap)):
            over.append(i + 1)
    return over


Item = Annotated[int, Between(1, "items"), "item number"]  # an item number, 1..n


class Knapsack(Mechanism[KnapsackParams]):
    id = "knapsack"
    version = 3  # issue 27: the prose is part of the spec
    group = "near_ood"
    summary = "choose items under several capacity limits to maximise total value; 0/1 integer program"
    Params = KnapsackParams
    size_range = (4, 20)  # items
    horizon_range = (1, 11)  # capacity dimensions
    default_size = 8
    default_horizon = 2
    # the paper's size-scaling grid: 6 items x 5 limits up to 11 items x 11 limits
    difficulty_grid = [(6, 5), (7, 6), (8, 7), (9, 8), (10, 9), (11, 11)]
    # measured (benchmarks/difficulty.py): the naive agents either hit the optimum or miss it by far, so medium needs
    # a dozen items over few limits; hard gives 70% of the probes, so that verifying the limits and the best-rated
    # items first (the informed agent) beats verifying in listing order (the naive prober) by most of the gap
    difficulty_tiers = {
        "easy": Tier(((6, 2), (8, 2)), 1.0),
        "medium": Tier(((12, 2), (12, 3)), 1.0),
        "hard": Tier(((12, 3), (12, 4), (14, 4)), 0.7),
        "frontier": Tier(((16, 5), (16, 6)), 0.45),
    }
    u0_band = (0.15, 0.98)

    def sample(self, rng: np.random.Generator, size: int, horizon: int) -> KnapsackParams:
        n, m = int(size), int(horizon)
        weights = rng.integers(1, 31, size=(m, n)).astype(float)
        tightness = rng.uniform(0.3, 0.6, m)
        capacities = np.maximum(np.round(tightness * weights.sum(axis=1)), weights.max(axis=1))
        share = (weights / capacities[:, None]).mean(axis=0)
        values = np.maximum(np.round(100 * share * rng.uniform(0.6, 1.4, n) + rng.integers(1, 6, n)), 1)
        data = {"values": values.tolist(), "weights": weights.tolist(), "capacities": capacities.tolist()}
        return self.with_misleading_stickers(
            lambda: KnapsackParams(**data, sticker_values=self._ratings(rng, values)),
            lambda u0, u_star, _: u0 <= NEAR_OPTIMAL * u_star)

    @staticmethod
    def _ratings(rng: np.random.Generator, values: np.ndarray) -> list[float]:
        """The posted ratings: the values under a multiplicative, log-normal error, rescaled."""
        bias = np.exp(rng.normal(0.0, 0.5, len(values)))
        return np.maximum(np.round(values * bias / np.mean(bias)), 1).tolist()

    def solve(self, params: KnapsackParams) -> Solution:
        p = params
        values = np.asarray(p.values, dtype=float)
        weights = np.asarray(p.weights, dtype=float)
        x, pairs = _best_subset(values, weights, np.asarray(p.capacities, dtype=float))
        chosen = [j + 1 for j in range(p.items) if round(x[j]) == 1]
        actions: list[Action] = []
        used = [0.0] * p.dimensions
        for j in chosen:
            if _overflow(p, used, j):
                raise RuntimeError(f"enumerated solution overfills a capacity at item {j}")
            used = [u + p.weights[i][j - 1] for i, u in enumerate(used)]
            actions.append(Action(op="select_item", args={"item": j}))
        actions.append(Action(op="submit"))
        u_star = float(sum(p.values[j - 1] for j in chosen))
        facts = {"items": p.items, "dimensions": p.dimensions, "chosen": chosen, "subset_pairs": pairs}
        return Solution(u_star, actions, "exhaustive meet-in-the-middle enumeration", facts)

    def default_policy(self, seat: Seat) -> None:
        """Reads the posted ratings and shortlists by rating, highest first, keeping whatever the limits accept."""
        seat.call("read_ratings")
        for item in self._by_rating(seat.known):
            seat.call("select_item", item=item)
        seat.call("submit")

    @staticmethod
    def _by_rating(known: Knowledge) -> list[int]:
        """The item numbers, highest posted rating first (in number order when the sheet was not read)."""
        sheet = known.latest("read_ratings")
        n = known.public["items"]
        rating = {j: sheet["ratings"][f"item {j}"] if sheet else 0.0 for j in range(1, n + 1)}
        return sorted(rating, key=lambda j: (-rating[j], j))

    def initial_state(self, params: KnapsackParams) -> dict[str, Any]:
        return {"selected": [], "submitted": False, "finished": False}

    # --- operations -------------------------------------------------------------------------
    @probe
    def probe_value(self, p: KnapsackParams, state: State, item: Item) -> Observation:
        """true value of one item"""
        return {"item": item, "value": p.values[item - 1]}

    @probe
    def probe_weights(self, p: KnapsackParams, state: State, item: Item) -> Observation:
        """how much one item uses of every capacity limit"""
        return {"item": item, "weights": {f"limit {i + 1}": p.weights[i][item - 1] for i in range(p.dimensions)}}

    @probe
    def probe_capacity(self, p: KnapsackParams, state: State) -> Observation:
        """every capacity limit"""
        return {"capacities": {f"limit {i + 1}": p.capacities[i] for i in range(p.dimensions)}}

    @info(decoy=True, estimates="value")
    def read_ratings(self, p: KnapsackParams, state: State) -> Observation:
        """the posted rating of every item: outside estimates of the values, not the true values"""
        return {"ratings": {f"item {j + 1}": p.sticker_values[j] for j in range(p.items)}}

    @info
    def list_items(self, p: KnapsackParams, state: State) -> Observation:
        """the item numbers and the number of limits"""
        return {"items": list(range(1, p.items + 1)), "limits": p.dimensions}

    @info
    def view_selection(self, p: KnapsackParams, state: State) -> Observation:
        """the chosen items and the capacity they use in every limit"""
        used = _used(p, state["selected"])
        return {"selected": list(state["selected"]), "used": {f"limit {i + 1}": used[i] for i in range(p.dimensions)}}

    @decision
    def select_item(self, p: KnapsackParams, state: State, item: Item) -> Observation:
        """add one item to the selection"""
        if item in state["selected"]:
            raise ActionError(f"item {item} is already selected")
        over = _overflow(p, _used(p, state["selected"]), item)
        if over:
            names = ", ".join(f"limit {i}" for i in over)
            raise ActionError(f"item {item} does not fit: it would exceed {names}")
        state["selected"] = sorted([*state["selected"], item])
        return {"selected": list(state["selected"])}

    @decision
    def drop_item(self, p: KnapsackParams, state: State, item: Item) -> Observation:
        """remove one item from the selection"""
        if item not in state["selected"]:
            raise ActionError(f"item {item} is not selected")
        state["selected"] = [k for k in state["selected"] if k != item]
        return {"selected": list(state["selected"])}

    @decision
    def clear_selection(self, p: KnapsackParams, state: State) -> Observation:
        """remove every item from the selection"""
        state["selected"] = []
        return {"selected": []}

    @clock
    def submit(self, p: KnapsackParams, state: State) -> Observation:
        """submit the selection; this ends the episode"""
        state.update(submitted=True, finished=True)
        return {"submitted": list(state["selected"]), "total value": self.utility(p, state), "finished": True}

    @clock
    def finish(self, p: KnapsackParams, state: State) -> Observation:
        """stop now; the current selection stands"""
        state["finished"] = True
        return {"submitted": list(state["selected"]), "total value": self.utility(p, state), "finished": True}

    def utility(self, params: KnapsackParams, state: dict[str, Any]) -> float:
        return float(sum(params.values[j - 1] for j in state["selected"]))

    def facts(self, params: KnapsackParams, vocab: dict[str, str]) -> list[Fact]:
        p, v = params, vocab
        limits = "; ".join(f"limit {i + 1}: {figure(p.capacities[i])}" for i in range(p.dimensions))
        values = "; ".join(f"{j + 1}: {figure(p.values[j])}" for j in range(p.items))
        needs = "; ".join(f"{j + 1}: [{', '.join(f'{figure(p.weights[i][j])}' for i in range(p.dimensions))}]"
                          for j in range(p.items))
        ratings = "; ".join(f"{j + 1}: {figure(p.sticker_values[j])}" for j in range(p.items))
        return [
            rule("structure", f"{there_are(p.items, v['candidate'], v['candidates'])}, numbered 1 to {p.items}, and "
                 f"{numbered(p.dimensions, 'limit on ' + v['capacity'], 'limits on ' + v['capacity'])}.",
                 p.items, p.dimensions),
            probed("capacities", "probe_capacity", f"The limits on {v['capacity']}: {limits}.", p.capacities),
            probed("values", "probe_value", f"The true value of each {v['candidate']}, in {v['currency']}: "
                   f"{values}.", p.values),
            probed("needs", "probe_weights", f"The {v['capacity']} each {v['candidate']} needs, limit by limit: "
                   f"{needs}.", [w for row in p.weights for w in row]),
            probed("ratings", "read_ratings", f"The {v['source']} quotes these values in {v['currency']} "
                   f"(an outside estimate, not the true value): {ratings}.", p.sticker_values),
            rule("constraints", f"Each {v['candidate']} can be shortlisted at most once, and the shortlisted "
                 f"{v['candidates']} together may not exceed any limit on {v['capacity']}: {a(v['candidate'])} that "
                 "would exceed one is refused."),
            rule(OBJECTIVE, f"Your result is the sum of the true values, in {v['currency']}, of the "
                 f"{v['candidates']} on the shortlist when the episode ends."),
            rule(END, "Submitting the shortlist ends the episode, and so does walking away; either way the "
                 "shortlist as it stands counts."),
            rule(BUDGET_END, "If the turns run out before you submit, the shortlist as it stands counts."),
        ]

    def public_view(self, params: KnapsackParams) -> dict[str, Any]:
        return {"items": params.items, "limits": params.dimensions}

    def probe_order(self, known: Knowledge) -> list[Action]:
        """The limits first (one call), then each item's needs and value, highest rating first."""
        calls = [Action(op="probe_capacity")]
        for j in self._by_rating(known):
            calls += [Action(op="probe_weights", args={"item": j}), Action(op="probe_value", args={"item": j})]
        return calls

    def believed(self, known: Knowledge) -> KnapsackParams:
        """Verified values, needs and limits are true; an unverified value is its posted rating (the mean rating, or 1,
        when the sheet was not read), an unverified item needs the mean of the verified needs (1 when none is), an
        unverified limit holds every item."""
        n, m = known.public["items"], known.public["limits"]
        sheet = known.latest("read_ratings")
        ratings = [float(sheet["ratings"][f"item {j}"]) if sheet else 1.0 for j in range(1, n + 1)]
        values = list(ratings)
        for _, seen in known.observations("probe_value"):
            values[seen["item"] - 1] = float(seen["value"])
        needs: dict[int, list[float]] = {}
        for _, seen in known.observations("probe_weights"):
            needs[seen["item"]] = [float(seen["weights"][f"limit {i + 1}"]) for i in range(m)]
        weights = []
        for i in range(m):
            known_needs = [row[i] for row in needs.values()]
            guess = sum(known_needs) / len(known_needs) if known_needs else 1.0
            weights.append([needs[j][i] if j in needs else guess for j in range(1, n + 1)])
        limits = known.latest("probe_capacity")
        if limits is not None:
            capacities = [float(limits["capacities"][f"limit {i + 1}"]) for i in range(m)]
        else:
            capacities = [max(sum(row), 1.0) for row in weights]
        return KnapsackParams(values=values, weights=weights, capacities=capacities, sticker_values=ratings)

    def heuristic_policies(self) -> dict[str, Policy]:
        """greedy_value: verify every value, then shortlist by value, highest first, keeping whatever fits.
        greedy_density: read the ratings and the limits, verify every item's needs, then shortlist by rating per
        share of the limits it uses."""

        def greedy_value(seat: Seat) -> None:
            n = seat.known.public["items"]
            values = {}
            for j in range(1, n + 1):
                seen = seat.call("probe_value", item=j)
                values[j] = seen["value"] if seen and "value" in seen else 0.0
            for j in sorted(values, key=lambda j: (-values[j], j)):
                seat.call("select_item", item=j)
            seat.call("submit")

        def greedy_density(seat: Seat) -> None:
            n, m = seat.known.public["items"], seat.known.public["limits"]
            seat.call("read_ratings")
            seat.call("probe_capacity")
            for j in range(1, n + 1):
                seat.call("probe_weights", item=j)
            belief = self.believed(seat.known)
            share = [sum(belief.weights[i][j] / belief.capacities[i] for i in range(m)) / m for j in range(n)]
            density = {j + 1: belief.values[j] / share[j] if share[j] > 0 else math.inf for j in range(n)}
            for j in sorted(density, key=lambda j: (-density[j], j)):
                seat.call("select_item", item=j)
            seat.call("submit")

        return {"greedy_value": greedy_value, "greedy_density": greedy_density}

    def ledger(self, params: KnapsackParams, state: dict[str, Any]) -> dict[str, Any]:
        return {"shortlist": list(state["selected"]), "total value": self.utility(params, state)}

    def secret_numbers(self, params: KnapsackParams) -> list[float]:
        p = params
        return [*p.values, *(w for row in p.weights for w in row if w != 0), *p.capacities]

    def probe_allowance(self, params: KnapsackParams) -> int:
        return 2 * params.items + 1

    def public_numbers(self, params: KnapsackParams) -> list[float]:
        p = params
        return [p.items, p.dimensions, *range(1, max(p.items, p.dimensions) + 1)]


register(Knapsack())
