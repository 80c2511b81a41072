"""weitzman_search: Pandora's boxes; open boxes one at a time at a cost, keep the best prize found.

There are n boxes (options to investigate). Box i costs ``costs[i]`` to open and holds a prize drawn from
its own known discrete distribution, independently of the other boxes. Boxes are opened one at a time,
in any order, and the prize of a box is seen only once it is opened; the search can stop at any time.
Utility (higher is better): the best prize opened minus the total opening costs, or 0 if no box was
opened (prizes are non-negative, so keeping nothing is never better than keeping the best prize).

Parameters (all can be given as data; boxes are numbered 1..n):
- ``costs``: the opening cost of every box (non-negative); its length is the number of boxes n
- ``prize_values``: per box, the support of its prize distribution (non-negative, strictly increasing)
- ``prize_probabilities``: per box, the probability of each support value (positive, summing to 1)
- ``prizes``: the drawn prize of every box, one of its support values (hidden: seen only on opening); null in
  a belief (the parameters as an agent knows them: the draws are unknown)
- ``posted_prizes``: the posted "expected prize" of every box (a decoy sticker: a biased estimate of the
  mean that the default policy trusts; when omitted from data it equals the true means)

The knobs: ``size`` is the number of boxes n (2..24) and ``horizon`` the support size of every prize
distribution (2..10 values; data may give each box its own support size). The sticker's error is log-normal
(sigma 0.2): it ranks the means roughly and says nothing of a box's upside.

The reference: u* is the HINDSIGHT CEILING ``max(0, max_i (prizes[i] - costs[i]))``: knowing the draws, open
only the best box (any policy that opens a set S gets max_S prize - sum_S cost <= max_S (prize - cost)); the
revealed and written modes, which state the draws, can reach it. The oracle opens that box and keeps it. The
Weitzman-optimal ONLINE policy knows the distributions and the prizes opened so far: each box gets its reservation
value sigma_i, the exact root of the piecewise-linear equation E[(X_i - sigma_i)^+] = c_i (sigma_i = the top support
value when c_i = 0); boxes are opened in decreasing sigma (ties: the lower number first), and the search stops as
soon as the best prize so far is at least the highest remaining sigma (or no box is left). Its expected value,
E[max(0, max_i min(X_i, sigma_i))], is computed exactly from the distributions. The reservation values, the opening
order, that expected value and the policy's utility on the drawn prizes are recorded in the solver facts and as the
baseline ``online_optimal``: the reference a hidden-mode agent can reach (envs.difficulty.reachable).

Hidden mode: the fees come in one probe, each box's distribution in its own probe, and the posted expected prizes on
one sheet (outside estimates); no tool tells a prize before its box is opened (opening is the clock step that
realises it). Two bulk openings: ``open_boxes`` opens a list of boxes in order; ``open_until`` opens a list of boxes
in order but stops before a box once the best prize found reaches that box's threshold: Weitzman's policy in one call
(the thresholds are the reservation values). The default policy trusts the sheet and never stops early: it opens
the top half of the boxes by posted prize (at least two), highest first, in one bulk call, and keeps the best. The
informed agent verifies the fees, then the distributions of the boxes with the highest posted prizes while its turns
last; it believes a point mass at the posted prize for a box it did not verify, and plays Weitzman's policy on that
belief in one ``open_until`` call.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from mechanisms.base import ActionError, Mechanism, Solution, Tier
from mechanisms.facts import BUDGET_END, END, OBJECTIVE, Fact, drawn, probed, rule
from mechanisms.operations import Between, Observation, State, clock, decision, info, probe
from mechanisms.params import flat, non_negative, one_entry_each, positive
from mechanisms.players import Knowledge, Policy, Seat
from mechanisms.prose import figure
from mechanisms.registry import register
from schemas.envspec import Action

MAX_BOXES = 24
MAX_SUPPORT = 10
PROBABILITY_TOLERANCE = 1e-9
TWENTIETHS = 20  # sampled probabilities are multiples of 1/20
STICKER_NOISE = 0.2  # the log-normal sigma of the posted expected prizes around the true means


class WeitzmanParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    costs: list[float] = Field(min_length=1, max_length=MAX_BOXES)
    prize_values: list[list[float]]
    prize_probabilities: list[list[float]]
    prizes: list[float] | None
    posted_prizes: list[float]

    @model_validator(mode="before")
    @classmethod
    def _default_sticker(cls, data: Any) -> Any:
        if isinstance(data, dict) and "posted_prizes" not in data:
            try:
                means = [float(sum(v * q for v, q in zip(vs, qs, strict=True)))
                         for vs, qs in zip(data["prize_values"], data["prize_probabilities"], strict=True)]
            except (KeyError, TypeError, ValueError):  # the field checks below report what is wrong
                means = [0.0] * len(data["costs"]) if isinstance(data.get("costs"), list) else []
            data = {**data, "posted_prizes": means}
        return data

    @model_validator(mode="after")
    def _check(self) -> WeitzmanParams:
        n = len(self.costs)
        for name in ("prize_values", "prize_probabilities", "prizes", "posted_prizes"):
            if getattr(self, name) is not None:
                one_entry_each(name, getattr(self, name), n, "box")
        numbers = [*self.costs, *(self.prizes or []), *self.posted_prizes, *flat(self.prize_values),
                   *flat(self.prize_probabilities)]
        if not all(math.isfinite(x) for x in numbers):
            raise ValueError("costs, prize_values, prize_probabilities, prizes and posted_prizes must be finite")
        non_negative("costs", self.costs)
        for i in range(n):
            values, probs = self.prize_values[i], self.prize_probabilities[i]
            box = i + 1
            if not 1 <= len(values) <= MAX_SUPPORT:
                raise ValueError(f"prize_values of box {box} must have 1 to {MAX_SUPPORT} values, got {len(values)}")
            one_entry_each(f"prize_probabilities of box {box}", probs, len(values), "prize value")
            non_negative(f"prize_values of box {box}", values)
            if any(b <= a for a, b in zip(values, values[1:], strict=False)):
                raise ValueError(f"prize_values of box {box} must be strictly increasing")
            positive(f"prize_probabilities of box {box}", probs)
            if abs(sum(probs) - 1.0) > PROBABILITY_TOLERANCE:
                raise ValueError(f"prize_probabilities of box {box} must sum to 1, got {sum(probs):.12g}")
            if self.prizes is not None and self.prizes[i] not in values:
                raise ValueError(f"prizes: the prize of box {box} ({figure(self.prizes[i])}) is not one of its "
                                 f"prize_values")
        return self

    @property
    def boxes(self) -> int:
        return len(self.costs)


def reservation_value(values: list[float], probs: list[float], cost: float) -> float:
    """The exact root sigma of E[(X - sigma)^+] = cost (piecewise linear and falling in sigma)."""
    if cost <= 0:
        return float(values[-1])
    mass, weighted = 0.0, 0.0  # P(X >= v_j) and E[X; X >= v_j] over the top values so far
    for j in range(len(values) - 1, -1, -1):
        mass += probs[j]
        weighted += probs[j] * values[j]
        lower = values[j - 1] if j > 0 else -math.inf
        # on [lower, values[j]] the expectation is weighted - mass * sigma
        if j == 0 or weighted - mass * lower >= cost:
            return float((weighted - cost) / mass)
    raise AssertionError("unreachable")


def reservation_values(p: WeitzmanParams) -> list[float]:
    return [reservation_value(p.prize_values[i], p.prize_probabilities[i], p.costs[i]) for i in range(p.boxes)]


def opening_order(sigmas: list[float]) -> list[int]:
    """Box numbers (1-based) in decreasing reservation value, ties by the lower number."""
    return [i + 1 for i in sorted(range(len(sigmas)), key=lambda i: (-sigmas[i], i))]


def weitzman_policy(p: WeitzmanParams, prizes: list[float] | None = None) -> list[Action]:
    """Weitzman's index policy played on the given prizes (default: the drawn ones)."""
    prizes = p.prizes if prizes is None else prizes
    sigmas = reservation_values(p)
    best = 0.0
    actions: list[Action] = []
    for box in opening_order(sigmas):
        if best >= sigmas[box - 1]:
            break
        actions.append(Action(op="open_box", args={"box": box}))
        best = max(best, prizes[box - 1])
    actions.append(Action(op="claim_best"))
    return actions


def weitzman_expected_value(p: WeitzmanParams) -> float:
    """E[max(0, max_i min(X_i, sigma_i))], the expected value of Weitzman's policy (exact)."""
    sigmas = reservation_values(p)
    capped = [[min(v, sigmas[i]) for v in p.prize_values[i]] for i in range(p.boxes)]
    levels = sorted({0.0, *(x for row in capped for x in row if x > 0)})
    expected, below = 0.0, 0.0
    for y in levels:
        at_most = 1.0
        for i in range(p.boxes):
            at_most *= sum(q for x, q in zip(capped[i], p.prize_probabilities[i], strict=True) if x <= y)
        expected += y * (at_most - below)
        below = at_most
    return float(expected)


def weitzman_plan(p: WeitzmanParams) -> list[Action]:
    """Weitzman's policy in one call (the draws need not be known): open in decreasing reservation value every box
    whose reservation value is positive, stopping before a box once the best prize reaches its reservation value;
    then keep the best. Nothing worth opening: stop at once."""
    sigmas = reservation_values(p)
    order = [box for box in opening_order(sigmas) if sigmas[box - 1] > 0]
    if not order:
        return [Action(op="finish")]
    return [Action(op="open_until", args={"boxes": order, "thresholds": [sigmas[b - 1] for b in order]}),
            Action(op="claim_best")]


Box = Annotated[int, Between(1, "boxes"), "number of the option"]  # a box number, 1..n
# distinct box numbers, in order
Boxes = Annotated[list[int], Between(1, "boxes", max_items="boxes"),
                  "numbers of the options, in order"]


class WeitzmanSearch(Mechanism[WeitzmanParams]):
    id = "weitzman_search"
    version = 4  # issue 30: canonical solver output (mechanisms.canonical); 3: issue 27, the prose is part of the spec
    group = "far_ood_structure"
    summary = "open costly boxes with known prize distributions one at a time, keep the best; Pandora's boxes"
    Params = WeitzmanParams
    size_range = (2, MAX_BOXES)  # boxes
    horizon_range = (2, MAX_SUPPORT)  # support size of every prize distribution
    default_size = 6
    default_horizon = 3
    difficulty_grid = [(3, 3), (4, 4), (6, 3), (8, 4), (10, 6)]
    # measured (envs.difficulty: in expectation over the drawn prizes and redraws of them, against Weitzman's online
    # policy): small searches are easy; from medium on the fees and only part of the distributions fit, and the posted
    # sheet is the only guide to which boxes are worth verifying. In expectation the sheet's means net of the fees
    # already guide a naive search close to the online policy (the naive prober scores 0.7-0.95, the best heuristic
    # 0.6-0.8 on most cells), so at every cell and share tried only 10-20% of the draws land in hard's or frontier's
    # band (a skill gap of 0.1 with a heuristic at most 0.75, or 0.5); these cells give the most (two-valued prizes
    # at frontier: a box's mean says least about its upside there)
    difficulty_tiers = {
        "easy": Tier(((5, 3), (6, 3), (4, 4)), 1.0),
        "medium": Tier(((8, 4), (10, 6), (8, 5)), 0.5),
        "hard": Tier(((12, 9), (12, 4), (14, 3)), 0.2),
        "frontier": Tier(((14, 2), (12, 2), (10, 2)), 0.25),
    }
    turn_slack = 2  # so that a tier's probe share, not the slack, decides how much of the information fits
    u0_band = (-1.0, 0.95)

    def sample(self, rng: np.random.Generator, size: int, horizon: int) -> WeitzmanParams:
        n, k = int(size), int(horizon)
        values, probs, costs, prizes, posted = [], [], [], [], []
        for _ in range(n):
            low = int(rng.integers(0, 41))
            spread = int(rng.integers(max(k, 15), 121))
            support = np.sort(rng.choice(np.arange(1, spread + 1), size=k - 1, replace=False))
            vs = [float(low), *(float(low + s) for s in support)]
            risky = rng.random() < 0.5  # a risky box puts little weight on its top values
            weights = rng.dirichlet(np.linspace(2.5, 0.4, k) if risky else np.ones(k))
            counts = 1 + rng.multinomial(TWENTIETHS - k, weights)
            qs = (counts / TWENTIETHS).tolist()
            mean = float(np.dot(vs, qs))
            upside = float(np.dot(np.maximum(np.asarray(vs) - mean, 0), qs))  # E[(X - mean)^+]
            costs.append(float(max(1, round(upside * rng.uniform(0.2, 1.4)))))
            values.append(vs)
            probs.append(qs)
            prizes.append(float(rng.choice(vs, p=np.asarray(qs) / np.sum(qs))))
            posted.append(float(max(0, round(mean * float(np.exp(rng.normal(0.0, STICKER_NOISE)))))))
        return WeitzmanParams(costs=costs, prize_values=values, prize_probabilities=probs, prizes=prizes,
                              posted_prizes=posted)

    def redraw(self, params: WeitzmanParams, rng: np.random.Generator) -> WeitzmanParams:
        """The same boxes with every prize drawn anew from its box's distribution."""
        p = params
        draws = rng.random(p.boxes)
        prizes = [values[min(int(np.searchsorted(np.cumsum(probs), u * sum(probs), side="right")), len(values) - 1)]
                  for values, probs, u in zip(p.prize_values, p.prize_probabilities, draws, strict=True)]
        return p.model_copy(update={"prizes": [float(x) for x in prizes]})

    # --- reference ------------------------------------------------------------------------
    def solve(self, params: WeitzmanParams) -> Solution:
        p = params
        if p.prizes is None:
            raise ValueError("a belief knows no draw: plan on it with weitzman_plan, solve only drawn parameters")
        sigmas = reservation_values(p)
        best_box, best = 0, 0.0
        for i in range(p.boxes):
            if p.prizes[i] - p.costs[i] > best:
                best_box, best = i + 1, p.prizes[i] - p.costs[i]
        actions = [Action(op="open_box", args={"box": best_box}), Action(op="claim_best")] if best_box else [
            Action(op="finish")]
        u_star = self.run(p, actions)
        online = weitzman_policy(p)
        facts = {
            "boxes": p.boxes,
            "hindsight_box": best_box,
            "reservation_values": sigmas,
            "opening_order": opening_order(sigmas),
            "online_expected_value": weitzman_expected_value(p),
            "online_utility": self.run(p, online),
            "online_opened": [a.args["box"] for a in online if a.op == "open_box"],
            "ceiling": "hindsight: open only the best box knowing every prize",
        }
        return Solution(u_star, actions, "hindsight maximum over boxes; Weitzman reservation values for the online "
                        "policy", facts)

    def default_policy(self, seat: Seat) -> None:
        """Reads the posted sheet and opens the top half of the boxes by posted prize (at least two), highest first,
        in one call, never stopping early; then keeps the best."""
        posted = _posted(seat.call("read_posted_prizes"), seat.known.public["boxes"])
        ranked = sorted(posted, key=lambda j: (-posted[j], j))
        seat.call("open_boxes", boxes=ranked[:max(2, (len(ranked) + 1) // 2)])
        seat.call("claim_best")

    def baseline_actions(self, params: WeitzmanParams) -> dict[str, list[Action]]:
        return {"online_optimal": weitzman_policy(params)}

    # --- dynamics -------------------------------------------------------------------------
    def initial_state(self, params: WeitzmanParams) -> dict[str, Any]:
        return {"opened": [], "claimed": False, "finished": False}

    def _summary(self, p: WeitzmanParams, state: dict[str, Any]) -> dict[str, Any]:
        opened = state["opened"]
        return {"opened": [{"box": j, "prize": p.prizes[j - 1]} for j in opened],
                "best prize": max((p.prizes[j - 1] for j in opened), default=0.0),
                "fees paid": float(sum(p.costs[j - 1] for j in opened))}

    def _still_open(self, state: State) -> None:
        if self.finished(state):
            raise ActionError("the search is over")

    # --- operations -------------------------------------------------------------------------
    @probe
    def probe_all_costs(self, p: WeitzmanParams, state: State) -> Observation:
        """the opening cost of every box"""
        return {"fees": {f"box {j}": p.costs[j - 1] for j in range(1, p.boxes + 1)}}

    @probe
    def probe_prize_distribution(self, p: WeitzmanParams, state: State, box: Box) -> Observation:
        """the possible prizes of one box and the probability of each"""
        values, probs = p.prize_values[box - 1], p.prize_probabilities[box - 1]
        return {"box": box, "values": list(values), "probabilities": list(probs),
                "expected value": round(float(sum(v * q for v, q in zip(values, probs, strict=True))), 6)}

    @info(decoy=True, estimates="expected value")
    def read_posted_prizes(self, p: WeitzmanParams, state: State) -> Observation:
        """the posted expected prize of every box: outside estimates, not the distributions"""
        return {"posted expected values": {f"box {j}": p.posted_prizes[j - 1] for j in range(1, p.boxes + 1)}}

    @info
    def list_boxes(self, p: WeitzmanParams, state: State) -> Observation:
        """the box numbers and which are still closed"""
        return {"boxes": list(range(1, p.boxes + 1)),
                "closed": [j for j in range(1, p.boxes + 1) if j not in state["opened"]]}

    @info
    def view_opened(self, p: WeitzmanParams, state: State) -> Observation:
        """the opened boxes, their prizes, the best prize and the costs paid"""
        return self._summary(p, state)

    @info
    def inspect_box(self, p: WeitzmanParams, state: State, box: Box) -> Observation:
        """whether one box is open and, if so, its prize"""
        if box in state["opened"]:
            return {"box": box, "open": True, "prize": p.prizes[box - 1]}
        return {"box": box, "open": False}

    @clock
    def open_box(self, p: WeitzmanParams, state: State, box: Box) -> Observation:
        """pay the cost of one closed box and see its prize"""
        self._still_open(state)
        if box in state["opened"]:
            raise ActionError(f"box {box} is already open")
        state["opened"] = [*state["opened"], box]
        return {"box": box, "prize": p.prizes[box - 1], "fee": p.costs[box - 1], **self._summary(p, state)}

    @clock
    def open_boxes(self, p: WeitzmanParams, state: State, boxes: Boxes) -> Observation:
        """open a list of closed boxes in order"""
        return self._open_in_order(p, state, boxes, [math.inf] * len(boxes))

    @clock
    def open_until(self, p: WeitzmanParams, state: State, boxes: Boxes,
                   thresholds: Annotated[list[float], Between(max_items="boxes")]) -> Observation:
        """open a list of closed boxes in order, stopping before a box once the best prize found reaches its threshold

        Args:
            thresholds: one threshold per option
        """
        if len(thresholds) != len(boxes):
            raise ActionError(f"argument 'thresholds' must list {len(boxes)} numbers, one per entry of 'boxes'")
        return self._open_in_order(p, state, boxes, thresholds)

    def _open_in_order(self, p: WeitzmanParams, state: State, boxes: list[int], limits: list[float]) -> Observation:
        """Open the boxes in order, stopping before a box once the best prize found reaches its limit."""
        self._still_open(state)
        again = [j for j in boxes if j in state["opened"]]
        if again:
            raise ActionError(f"box {again[0]} is already open")
        opened = list(state["opened"])
        best = max((p.prizes[j - 1] for j in opened), default=0.0)
        for j, limit in zip(boxes, limits, strict=True):
            if best >= limit:
                break
            opened.append(j)
            best = max(best, p.prizes[j - 1])
        state["opened"] = opened
        return self._summary(p, state)

    @decision
    def claim_best(self, p: WeitzmanParams, state: State) -> Observation:
        """stop searching and keep the best prize found"""
        self._still_open(state)
        state.update(claimed=True, finished=True)
        return {"kept": self._best_box(p, state), "finished": True}

    @clock
    def finish(self, p: WeitzmanParams, state: State) -> Observation:
        """stop now; the best prize found so far stands"""
        self._still_open(state)
        state.update(claimed=False, finished=True)
        return {"kept": self._best_box(p, state), "finished": True}

    @staticmethod
    def _best_box(p: WeitzmanParams, state: dict[str, Any]) -> int | None:
        """The opened box with the best prize (the first opened among equals), None when none is open."""
        opened = state["opened"]
        return max(opened, key=lambda j: (p.prizes[j - 1], -opened.index(j))) if opened else None

    def utility(self, params: WeitzmanParams, state: dict[str, Any]) -> float:
        opened = state["opened"]
        if not opened:
            return 0.0
        return float(max(params.prizes[j - 1] for j in opened) - sum(params.costs[j - 1] for j in opened))

    def ledger(self, params: WeitzmanParams, state: dict[str, Any]) -> dict[str, Any]:
        return {**self._summary(params, state), "net value": self.utility(params, state)}

    # --- facts, belief, players ---------------------------------------------------------------
    def facts(self, params: WeitzmanParams, vocab: dict[str, str]) -> list[Fact]:
        p, v = params, vocab
        n = p.boxes
        fees = "; ".join(f"{j + 1}: {figure(p.costs[j])}" for j in range(n))
        odds = "; ".join(f"{j + 1}: " + ", ".join(f"{figure(x)} ({figure(q)})" for x, q in
                                                   zip(p.prize_values[j], p.prize_probabilities[j], strict=True))
                         for j in range(n))
        posted = "; ".join(f"{j + 1}: {figure(p.posted_prizes[j])}" for j in range(n))
        draws = "; ".join(f"{j + 1}: {figure(p.prizes[j])}" for j in range(n))
        return [
            rule("structure", f"There are {n} {v['options']}, numbered 1 to {n}. Investigating one costs the fee of "
                 f"that {v['option']} and reveals the value found, drawn independently from the distribution of that "
                 f"{v['option']}; no value is seen before its investigation.", n),
            probed("fees", "probe_all_costs", f"The fee of each {v['option']}, in {v['currency']}: {fees}.",
                   p.costs),
            probed("distributions", "probe_prize_distribution", f"The values each {v['option']} can turn out to "
                   f"have, in {v['currency']}, each with its probability in brackets: {odds}.",
                   [*(x for row in p.prize_values for x in row), *(q for row in p.prize_probabilities for q in row)]),
            drawn("draws", "open_box", f"The value each {v['option']} turns out to have when investigated, in "
                  f"{v['currency']}: {draws}.", p.prizes),
            probed("posted", "read_posted_prizes", f"The {v['source']} quotes these expected values in "
                   f"{v['currency']} (an outside estimate, not the distribution): {posted}.", p.posted_prizes),
            rule("search", f"{v['options'][:1].upper() + v['options'][1:]} are investigated one at a time (or a "
                 "list of them in one call, in order), in any order, each at most once; fees are never refunded, "
                 "and the search can stop at any time."),
            rule(OBJECTIVE, f"Your result, in {v['currency']}, is the highest value among the {v['options']} "
                 "investigated minus the sum of the fees of every one investigated; it is 0 if none is "
                 "investigated."),
            rule(END, f"Keeping the best {v['option']} found ends the search, and so does stopping at once; either "
                 "way the result counts what was investigated so far."),
            rule(BUDGET_END, "If the turns run out before the search ends, the result counts what was "
                 "investigated so far, as if the best one found were kept."),
        ]

    def public_view(self, params: WeitzmanParams) -> dict[str, Any]:
        return {"boxes": params.boxes}

    def probe_order(self, known: Knowledge) -> list[Action]:
        """Every fee in one call (a fee sets how much a box's upside is worth), then each box's distribution by
        decreasing posted prize net of its fee once the fees are known (the boxes the search would open first)."""
        posted = _posted(known.latest("read_posted_prizes"), known.public["boxes"])
        fees = known.latest("probe_all_costs")
        net = {j: posted[j] - (float(fees["fees"][f"box {j}"]) if fees else 0.0) for j in posted}
        ranked = sorted(net, key=lambda j: (-net[j], j))
        return [Action(op="probe_all_costs"), *(Action(op="probe_prize_distribution", args={"box": j})
                                                for j in ranked)]

    def believed(self, known: Knowledge) -> WeitzmanParams:
        """The draws are not known (None). Verified fees and distributions are true; an unverified distribution is a
        point mass at the posted prize (0 when the sheet was not read); unverified fees are 0."""
        n = known.public["boxes"]
        posted = _posted(known.latest("read_posted_prizes"), n)
        fees = known.latest("probe_all_costs")
        costs = [float(fees["fees"][f"box {j}"]) if fees else 0.0 for j in range(1, n + 1)]
        values = [[max(0.0, posted[j])] for j in range(1, n + 1)]
        probs = [[1.0] for _ in range(n)]
        for _, seen in known.observations("probe_prize_distribution"):
            values[seen["box"] - 1] = [float(x) for x in seen["values"]]
            probs[seen["box"] - 1] = [float(q) for q in seen["probabilities"]]
        return WeitzmanParams(costs=costs, prize_values=values, prize_probabilities=probs, prizes=None,
                              posted_prizes=[posted[j] for j in range(1, n + 1)])

    def planned_calls(self, known: Knowledge, belief: WeitzmanParams) -> list[Action]:
        """Weitzman's policy on the belief in one open_until call (it stops by itself), then keep the best."""
        return weitzman_plan(belief)

    def heuristic_policies(self) -> dict[str, Policy]:
        """best_posted: read the sheet and every fee, investigate the one with the highest posted value minus fee,
        keep it. posted_pair: the same with the two highest."""

        def top(count: int) -> Policy:
            def policy(seat: Seat) -> None:
                n = seat.known.public["boxes"]
                posted = _posted(seat.call("read_posted_prizes"), n)
                fees = seat.call("probe_all_costs")
                fee = {j: fees["fees"][f"box {j}"] if fees and "fees" in fees else 0.0 for j in range(1, n + 1)}
                margin = {j: posted[j] - fee[j] for j in range(1, n + 1)}
                ranked = [j for j in sorted(margin, key=lambda j: (-margin[j], j)) if margin[j] > 0]
                if ranked:
                    seat.call("open_boxes", boxes=ranked[:count])
                seat.call("claim_best")

            return policy

        return {"best_posted": top(1), "posted_pair": top(2)}

    def secret_numbers(self, params: WeitzmanParams) -> list[float]:
        p = params
        return [*p.costs, *(x for row in p.prize_values for x in row),
                *(q for row in p.prize_probabilities for q in row), *(p.prizes or [])]

    def public_numbers(self, params: WeitzmanParams) -> list[float]:
        return [params.boxes, *range(0, params.boxes + 1)]

    def probe_allowance(self, params: WeitzmanParams) -> int:
        return params.boxes + 1  # all the fees at once, every box's distribution


def _posted(sheet: dict[str, Any] | None, n: int) -> dict[int, float]:
    """The posted expected prize of every box from the sheet (0 for every box when it was not read)."""
    rows = sheet.get("posted expected values", {}) if sheet else {}
    return {j: float(rows.get(f"box {j}", 0.0)) for j in range(1, n + 1)}


register(WeitzmanSearch())
