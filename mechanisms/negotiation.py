"""negotiation: sell one lot to a counterpart with a hidden reservation value, a deadline and a cost per round.

The agent is the seller. In each round 1..T it may make one ask on the integer price grid, accept the
counterpart's counteroffer of that round, let the round pass (wait), or walk away to its outside option.
Every round used (an ask, an accepted counteroffer or a wait) costs ``round_cost``; once the deadline has
passed with no deal the seller is left with the outside option minus the costs spent.

The counterpart's behaviour is fixed by the parameters (hidden from the agent in hidden mode):
- in round t it accepts an ask ``a`` iff ``a <= theta_t(A)``, where ``A`` is the lowest ask the seller made
  in an EARLIER round (anchoring: a low ask cannot be undone) and
  ``theta_t(A) = min(reservation_value, (base_thresholds[t] * (100 - anchoring_percent)
  + A * anchoring_percent) // 100)``, or ``theta_t = min(reservation_value, base_thresholds[t])`` before any
  ask (integer arithmetic, exact);
- an ask above ``walkoff_price`` insults it: it breaks off for good (no deal, the round is spent);
- in every round it stands by the counteroffer ``counteroffers[t]``, which the seller may accept.
A rejected ask ends the round and lowers the anchor to ``min(A, ask)``.
A decision states what happened (the ask, accepted or rejected; the counteroffer accepted), never a hidden figure;
the ending (a deal, a break-off, the deadline, walking away or the last turn of the budget) states the outcome: the
deal price or the fallback value, the rounds used, their cost and the net result (``ledger``). A passed round shows
the counteroffer now on the table.
The rule above is stated to the agent in every mode; in hidden mode each of its parameters has its own probe
(the reservation value, each round's base threshold, the anchoring percent, the walk-off price, each round's
counteroffer, the round cost, the fallback value), so that no probe hands over the formula with the figures
worked in and a tight budget forces a choice of what to learn.

Parameters (the data form; all integers unless stated):
- ``reservation_value``: the most the counterpart would ever pay (hidden)
- ``base_thresholds``: T entries, the counterpart's un-anchored acceptance threshold per round (hidden; each
  at most ``reservation_value``); its length is the deadline
- ``anchoring_percent``: 0..100, how strongly the lowest earlier ask pulls the threshold (hidden)
- ``walkoff_price``: asks above it end the negotiation (hidden; at least ``reservation_value``)
- ``counteroffers``: T entries, the counterpart's standing counteroffer per round (hidden; each at most
  ``reservation_value``, non-negative)
- ``deadline``: T, the number of rounds (must equal the length of both lists)
- ``round_cost`` (number >= 0): cost of every round used; ``outside_option`` (number >= 0): the seller's
  value of no deal (before costs)
- ``price_low``, ``price_high``, ``price_step``: the ask grid ``price_low, price_low + price_step, ...,
  price_high`` (public; ``price_high - price_low`` a positive multiple of ``price_step``)
- ``market_report``: the posted "market report" estimate of the counterpart's reservation value (a decoy:
  biased; the default policy trusts it); one call shows it

The sampler draws the grid span (80-400) and the step from ``size``, a reservation value in the upper part
of the grid, concave concessions (base thresholds rising towards the reservation value), plain counteroffers a
little below the base thresholds (now and then one generous later counteroffer), a market report off by 5-30%
of the span either way, and redraws the report while the default policy would already be optimal.

Knobs: ``size`` is the price-grid resolution, the number of ask levels on the grid (5..61); ``horizon`` is the
deadline T in rounds (2..12).
Solved exactly by backward recursion over the states (round, lowest earlier ask on the grid or none); the
independent check enumerates every ask/accept/wait/walk sequence on small grids and few rounds.
The players believe only what their calls showed (``believed``): the market report stands in for an unverified
reservation value, a rejected ask lowers the believed threshold of its round, a passed round shows the counteroffer
on the table. Acting on a belief plays the recursion's move for the state reached, over the rounds the turns left
can still reach, and believes again after a refused ask it expected accepted.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from mechanisms.base import ActionError, Mechanism, Solution, Tier
from mechanisms.facts import BUDGET_END, END, OBJECTIVE, Fact, probed, rule
from mechanisms.operations import Between, Observation, State, clock, decision, info, probe
from mechanisms.params import finite, one_entry_each
from mechanisms.players import Knowledge, Policy, Seat
from mechanisms.prose import a, capital, figure, there_are_numbered
from mechanisms.registry import register
from schemas.envspec import Action

MAX_LEVELS = 201
MAX_ROUNDS = 40


class NegotiationParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    reservation_value: int = Field(ge=0)
    base_thresholds: list[int] = Field(min_length=1, max_length=MAX_ROUNDS)
    anchoring_percent: int = Field(ge=0, le=100)
    walkoff_price: int = Field(ge=0)
    counteroffers: list[int] = Field(min_length=1, max_length=MAX_ROUNDS)
    deadline: int = Field(ge=1, le=MAX_ROUNDS)
    round_cost: float = Field(ge=0)
    outside_option: float = Field(ge=0)
    price_low: int = Field(ge=0)
    price_high: int = Field(ge=1)
    price_step: int = Field(ge=1)
    market_report: int = Field(ge=0)

    @model_validator(mode="after")
    def _shapes(self) -> NegotiationParams:
        one_entry_each("base_thresholds", self.base_thresholds, self.deadline, "round of the deadline")
        one_entry_each("counteroffers", self.counteroffers, self.deadline, "round of the deadline")
        finite("round_cost and outside_option", [self.round_cost, self.outside_option])
        if min(self.base_thresholds) < 0 or max(self.base_thresholds) > self.reservation_value:
            raise ValueError("base_thresholds must lie between 0 and reservation_value")
        if min(self.counteroffers) < 0 or max(self.counteroffers) > self.reservation_value:
            raise ValueError("counteroffers must lie between 0 and reservation_value")
        if self.walkoff_price < self.reservation_value:
            raise ValueError("walkoff_price cannot be below reservation_value")
        if self.price_high <= self.price_low:
            raise ValueError("price_high must be above price_low")
        if (self.price_high - self.price_low) % self.price_step:
            raise ValueError("price_high - price_low must be a multiple of price_step")
        if self.levels > MAX_LEVELS:
            raise ValueError(f"the price grid has {self.levels} levels; at most {MAX_LEVELS} are allowed")
        return self

    @property
    def levels(self) -> int:
        return (self.price_high - self.price_low) // self.price_step + 1

    @property
    def grid(self) -> list[int]:
        return list(range(self.price_low, self.price_high + 1, self.price_step))


def threshold(p: NegotiationParams, round_: int, anchor: int | None) -> int:
    """The highest ask the counterpart accepts in a round (1-based) given the lowest earlier ask."""
    base = p.base_thresholds[round_ - 1]
    if anchor is None:
        return min(p.reservation_value, base)
    mixed = (base * (100 - p.anchoring_percent) + anchor * p.anchoring_percent) // 100
    return min(p.reservation_value, mixed)


def _net(p: NegotiationParams, value: float, rounds: int) -> float:
    """The seller's utility: a deal price or the outside option, minus the cost of the rounds used."""
    return float(value) - p.round_cost * rounds


Round = Annotated[int, Between(1, "deadline"), "round number"]  # a round number, 1..T
# an ask, checked against the grid's step in make_ask
Price = Annotated[int, Between("price_low", "price_high"),
                  "asking price on the price grid"]


class Negotiation(Mechanism[NegotiationParams]):
    id = "negotiation"
    version = 3  # issue 27: the prose is part of the spec
    group = "trained"
    summary = "sell one lot to a counterpart with a hidden, anchoring acceptance rule; backward recursion"
    Params = NegotiationParams
    size_range = (5, 81)  # ask levels on the price grid
    horizon_range = (2, 20)  # rounds before the deadline
    default_size = 21
    default_horizon = 6
    difficulty_grid = [(11, 4), (21, 6), (31, 8), (41, 10), (61, 12)]
    difficulty_tiers = {
        "easy": Tier(((5, 2), (7, 2), (5, 3)), 1.0),
        "medium": Tier(tuple(difficulty_grid), 1.0),
        "hard": Tier(((31, 8), (41, 10), (61, 12)), 0.2),
        "frontier": Tier(((61, 16), (81, 20)), 0.15),
    }
    u0_band = (-0.3, 0.95)

    # --- parameters -----------------------------------------------------------------------
    def sample(self, rng: np.random.Generator, size: int, horizon: int) -> NegotiationParams:
        n, rounds = int(size), int(horizon)
        step = max(1, int(round(rng.uniform(80, 400) / (n - 1))))
        span = step * (n - 1)
        low = step * int(rng.integers(2, max(3, n)))
        reservation = low + int(round(rng.uniform(0.5, 0.85) * span))
        walkoff = reservation + int(round(rng.uniform(0.08, 0.4) * span))
        gap = rng.uniform(0.4, 0.8) * (reservation - low)
        decay = rng.uniform(0.5, 0.9)
        base = [reservation - int(round(gap * decay ** t)) for t in range(rounds)]
        counter_gap = rng.uniform(0.0, 0.12, rounds) * span
        counteroffers = [max(0, b - int(round(d))) for b, d in zip(base, counter_gap, strict=True)]
        if rounds > 1 and rng.random() < 0.3:  # now and then one later round brings a generous counteroffer
            t = int(rng.integers(1, rounds))
            counteroffers[t] = min(reservation, base[t] + int(round(rng.uniform(0.05, 0.3) * span)))
        outside = low + int(round(rng.uniform(-0.2, 0.7) * (base[0] - low)))
        data = {
            "reservation_value": reservation,
            "base_thresholds": base,
            "anchoring_percent": int(rng.integers(15, 66)),
            "walkoff_price": walkoff,
            "counteroffers": counteroffers,
            "deadline": rounds,
            "round_cost": float(rng.integers(max(1, round(0.01 * span)), max(2, round(0.05 * span)) + 1)),
            "outside_option": float(max(0, outside)),
            "price_low": low,
            "price_high": low + span,
            "price_step": step,
        }
        return self.with_misleading_stickers(
            lambda: NegotiationParams(**data, market_report=self._report(rng, reservation, span)),
            lambda u0, u_star, _: u0 < u_star - 1e-9 * max(1.0, abs(u_star)))

    @staticmethod
    def _report(rng: np.random.Generator, reservation: int, span: int) -> int:
        """The market report: the reservation value off by 5-30% of the grid span, either way."""
        sign = 1 if rng.random() < 0.4 else -1
        return max(0, reservation + sign * int(round(rng.uniform(0.05, 0.3) * span)))

    # --- reference ------------------------------------------------------------------------
    def solve(self, params: NegotiationParams) -> Solution:
        p = params
        policy = _Recursion(p)
        actions: list[Action] = []
        state = self.initial_state(p)
        while not state["finished"]:
            action = policy.move(state["round"], state["anchor"])
            actions.append(action)
            self.apply(p, state, action)
        u_star = self.utility(p, state)
        if abs(u_star - policy.value) > 1e-9 * max(1.0, abs(u_star)):
            raise RuntimeError(f"replay of the recursion's policy gives {u_star}, the recursion {policy.value}")
        facts = {"states": p.deadline * (p.levels + 1), "levels": p.levels, "rounds": p.deadline,
                 "outcome": state["status"], "deal_price": state["deal_price"], "rounds_used": self._rounds_used(state)}
        return Solution(u_star, actions, "backward recursion over (round, lowest earlier ask)", facts)

    def default_policy(self, seat: Seat) -> None:
        """Trust the market report: ask it first, then concede in equal steps by the deadline to halfway between the
        lowest grid price and the report (the fallback value is not known to it).

        Asks are rounded to the nearest grid price. The default never verifies a figure, never waits and never
        accepts a counteroffer; it stops when the counterpart accepts (or breaks off).
        """
        seen = seat.call("read_market_report")
        grid = _Grid(seat.known)
        report = seen["posted"] if seen and "posted" in seen else grid.high
        for ask in grid.concession(report, (grid.low + report) / 2):
            if seat.over:
                return
            seat.call("make_ask", price=ask)

    # --- dynamics -------------------------------------------------------------------------
    def initial_state(self, params: NegotiationParams) -> dict[str, Any]:
        return {"round": 1, "anchor": None, "status": "open", "deal_price": None, "deal_round": None,
                "log": [], "finished": False}

    @probe
    def probe_reservation_value(self, p: NegotiationParams, state: State) -> Observation:
        """the most the counterpart would ever pay"""
        return {"reservation": p.reservation_value}

    @probe
    def probe_round_cost(self, p: NegotiationParams, state: State) -> Observation:
        """the cost of every round used"""
        return {"cost": p.round_cost}

    @probe
    def probe_base_threshold(self, p: NegotiationParams, state: State, round: Round) -> Observation:
        """the counterpart's base acceptance threshold in one round"""
        return {"round": round, "threshold": p.base_thresholds[round - 1]}

    @probe
    def probe_anchoring(self, p: NegotiationParams, state: State) -> Observation:
        """how strongly the lowest earlier ask pulls the counterpart's threshold"""
        return {"anchoring": p.anchoring_percent}

    @probe
    def probe_walkoff_price(self, p: NegotiationParams, state: State) -> Observation:
        """the ask above which the counterpart breaks off"""
        return {"walkoff": p.walkoff_price}

    @probe
    def probe_outside_option(self, p: NegotiationParams, state: State) -> Observation:
        """what the seller gets without a deal, before costs"""
        return {"fallback": p.outside_option}

    @probe
    def probe_counteroffer(self, p: NegotiationParams, state: State, round: Round) -> Observation:
        """the counterpart's counteroffer in one round"""
        return {"round": round, "counteroffer": p.counteroffers[round - 1]}

    @info(decoy=True, estimates="reservation")
    def read_market_report(self, p: NegotiationParams, state: State) -> Observation:
        """the market report's estimate of what the counterpart would pay: an outside estimate, not the true figure"""
        return {"posted": p.market_report}

    @info
    def check_status(self, p: NegotiationParams, state: State) -> Observation:
        """round, deadline, price grid, lowest ask so far, counteroffer on the table"""
        open_ = state["status"] == "open"
        return {"round": min(state["round"], p.deadline), "deadline": p.deadline,
                "used": self._rounds_used(state), "status": state["status"],
                "grid": {"lowest": p.price_low, "highest": p.price_high, "step": p.price_step},
                "lowest ask": state["anchor"],
                "table": p.counteroffers[state["round"] - 1] if open_ else None,
                "price": state["deal_price"]}

    @info
    def view_log(self, p: NegotiationParams, state: State) -> Observation:
        """what happened in every round so far"""
        return {"log": [dict(entry) for entry in state["log"]]}

    @decision
    def make_ask(self, p: NegotiationParams, state: State, price: Price) -> Observation:
        """ask a price; this uses the round"""
        if (price - p.price_low) % p.price_step:
            raise ActionError(f"asks must lie on the price grid: {p.price_low} plus a multiple of "
                              f"{p.price_step}, got {price}")
        self._require_open(state)
        r, anchor = state["round"], state["anchor"]
        if price > p.walkoff_price:
            state["log"].append({"round": r, "action": "asked", "price": price, "response": "broke off"})
            state.update(status="broken off", finished=True, round=r + 1)
            return {"round": r, "ask": price, "response": "broke off", "status": "broken off", "finished": True}
        if price <= threshold(p, r, anchor):
            state["log"].append({"round": r, "action": "asked", "price": price, "response": "accepted"})
            state.update(status="deal", deal_price=price, deal_round=r, finished=True)
            return {"round": r, "ask": price, "response": "accepted", "status": "deal", "price": price,
                    "finished": True}
        state["log"].append({"round": r, "action": "asked", "price": price, "response": "rejected"})
        state["anchor"] = price if anchor is None else min(anchor, price)
        return {"round": r, "ask": price, "response": "rejected", **self._next_round(p, state, table=False)}

    @decision
    def accept_counteroffer(self, p: NegotiationParams, state: State) -> Observation:
        """accept this round's counteroffer; this closes the deal"""
        self._require_open(state)
        r = state["round"]
        offer = p.counteroffers[r - 1]
        state["log"].append({"round": r, "action": "accepted counteroffer", "price": offer})
        state.update(status="deal", deal_price=offer, deal_round=r, finished=True)
        return {"round": r, "status": "deal", "finished": True}

    @clock
    def wait_round(self, p: NegotiationParams, state: State) -> Observation:
        """let the round pass without an ask"""
        self._require_open(state)
        r = state["round"]
        state["log"].append({"round": r, "action": "waited"})
        return {"round": r, **self._next_round(p, state)}

    @clock
    def walk_away(self, p: NegotiationParams, state: State) -> Observation:
        """break off and take the outside option"""
        return self._walk(p, state)

    @clock
    def finish(self, p: NegotiationParams, state: State) -> Observation:
        """stop now; without a deal the outside option applies"""
        return self._walk(p, state)

    def _walk(self, p: NegotiationParams, state: State) -> Observation:
        """End the episode: an open negotiation is walked away from (a closed one stays as it ended)."""
        if not state["finished"]:
            if state["status"] == "open":
                state["status"] = "walked away"
                state["log"].append({"round": state["round"], "action": "walked away"})
            state["finished"] = True
        return {"status": state["status"], "finished": True}

    @staticmethod
    def _require_open(state: dict[str, Any]) -> None:
        if state["finished"] or state["status"] != "open":
            raise ActionError("the negotiation is over")

    def _next_round(self, p: NegotiationParams, state: dict[str, Any], table: bool = True) -> dict[str, Any]:
        """On to the next round (the deadline passes after the last); a passed round shows the counteroffer now on
        the table, a rejected ask (a decision) does not."""
        state["round"] += 1
        if state["round"] > p.deadline:
            state.update(status="deadline passed", finished=True)
            return {"status": "deadline passed", "finished": True}
        shown = {"table": p.counteroffers[state["round"] - 1]} if table else {}
        return {"next": state["round"], **shown, "finished": False}

    @staticmethod
    def _rounds_used(state: dict[str, Any]) -> int:
        return state["deal_round"] if state["status"] == "deal" else state["round"] - 1

    def ledger(self, params: NegotiationParams, state: dict[str, Any]) -> dict[str, Any]:
        """The outcome as a ledger states it: how the negotiation ended, the deal price (or the fallback value), the
        rounds used, what they cost and the net result."""
        p = params
        rounds = self._rounds_used(state)
        if state["status"] == "deal":
            ended = {"status": "deal", "price": state["deal_price"]}
        else:  # an open negotiation at the ending (the turns ran out) ends as if walked away from
            ended = {"status": "walked away" if state["status"] == "open" else state["status"],
                     "fallback": p.outside_option}
        return {**ended, "used": rounds, "round costs": round(p.round_cost * rounds, 6),
                "net": round(self.utility(p, state), 6)}

    def utility(self, params: NegotiationParams, state: dict[str, Any]) -> float:
        rounds = self._rounds_used(state)
        if state["status"] == "deal":
            return _net(params, state["deal_price"], rounds)
        return _net(params, params.outside_option, rounds)

    # --- facts, belief, heuristics ----------------------------------------------------------
    def facts(self, params: NegotiationParams, vocab: dict[str, str]) -> list[Fact]:
        p, v = params, vocab
        cur, who, deal = v["currency"], v["counterpart"], v["deal"]
        thresholds = "; ".join(f"round {t + 1}: {b}" for t, b in enumerate(p.base_thresholds))
        counters = "; ".join(f"round {t + 1}: {o}" for t, o in enumerate(p.counteroffers))
        return [
            rule("structure", f"{there_are_numbered(p.deadline, 'round')}. Asks must lie on the "
                 f"price grid from {p.price_low} to {p.price_high} {cur} in steps of {p.price_step}.",
                 p.deadline, p.price_low, p.price_high, p.price_step),
            rule("acceptance", f"In round t the {who} accepts an ask a when a <= min(R, floor((b_t * (100 - "
                 f"alpha) + A * alpha) / 100)), where R is its reservation value, b_t its base threshold of "
                 f"round t, alpha its anchoring percent and A your lowest ask of an earlier round; before your "
                 f"first ask it accepts when a <= min(R, b_t). An accepted ask closes the {deal} at the asked "
                 f"price; a rejected ask uses the round. An ask above its walk-off price makes it break off for "
                 f"good: the round is used and no {deal} follows. Asks are the only way to move its threshold.",
                 100),
            rule("counteroffers", f"In every round the {who} also stands by a counteroffer ({v['offer']}) that "
                 f"you may accept instead of asking: that closes the {deal} at the counteroffer and uses the "
                 "round. Letting a round pass without an ask uses it too."),
            probed("reservation", "probe_reservation_value", f"The {who}'s reservation value R is "
                   f"{p.reservation_value} {cur}.", [p.reservation_value]),
            probed("thresholds", "probe_base_threshold", f"Its base thresholds b_t in {cur}: {thresholds}.",
                   p.base_thresholds),
            probed("anchoring", "probe_anchoring", f"Its anchoring percent alpha is {p.anchoring_percent}.",
                   [p.anchoring_percent]),
            probed("walkoff", "probe_walkoff_price", f"Its walk-off price is {p.walkoff_price} {cur}.",
                   [p.walkoff_price]),
            probed("counteroffer values", "probe_counteroffer", f"Its counteroffers in {cur}: {counters}.",
                   p.counteroffers),
            probed("round cost", "probe_round_cost", f"Every round used costs {v['organization']} "
                   f"{figure(p.round_cost)} {cur}.", [p.round_cost]),
            probed("fallback", "probe_outside_option", f"Without {a(deal)} your fallback value is "
                   f"{figure(p.outside_option)} {cur}, before round costs.", [p.outside_option]),
            probed("report", "read_market_report", f"The {v['source']} estimates the {who}'s reservation value "
                   f"at {figure(p.market_report)} {cur}; it is an outside estimate, not the truth.", [p.market_report]),
            rule(OBJECTIVE, f"Your result in {cur} is the {deal} price, or the fallback value without {a(deal)}, "
                 "minus the round cost times the number of rounds used (every ask, accepted counteroffer or "
                 "passed round uses one; walking away uses none)."),
            rule(END, f"{capital(a(deal))} ends the episode, and so do a break-off, the last round passing without "
                 f"{a(deal)}, and walking away; without {a(deal)} the fallback value minus the round costs spent "
                 "counts."),
            rule(BUDGET_END, f"If the turns run out before the episode ends, it ends as if you walked away then: "
                 f"no {deal}, and the fallback value minus the round costs spent counts."),
        ]

    def public_view(self, params: NegotiationParams) -> dict[str, Any]:
        p = params
        return {"deadline": p.deadline, "price_low": p.price_low, "price_high": p.price_high,
                "price_step": p.price_step}

    def probe_order(self, known: Knowledge) -> list[Action]:
        """The counterpart's reservation value, walk-off price and anchoring first, then the round cost and the
        fallback value, then each round's base threshold and counteroffer, earliest round first."""
        calls = [Action(op=name) for name in ("probe_reservation_value", "probe_walkoff_price", "probe_anchoring",
                                              "probe_round_cost", "probe_outside_option")]
        for r in range(1, known.public["deadline"] + 1):
            calls += [Action(op="probe_base_threshold", args={"round": r}),
                      Action(op="probe_counteroffer", args={"round": r})]
        return calls

    def believed(self, known: Knowledge) -> NegotiationParams:
        """Verified figures are true; a counteroffer seen on the table is known. Unverified: the reservation value is
        the market report (the top of the grid when it was not read); the walk-off price is the reservation value
        believed (never ask above it); the anchoring percent is 40; the round cost one step of the price grid; the
        fallback value the lowest grid price; a base threshold is the latest verified one of an earlier round (the
        lowest grid price when none), lowered below any ask it rejected; a counteroffer not seen is 0 (never
        counted on)."""
        grid, rounds = _Grid(known), known.public["deadline"]
        figures = {op: known.latest(op) for op in ("probe_reservation_value", "probe_walkoff_price",
                                                   "probe_anchoring", "probe_round_cost", "probe_outside_option")}
        report = known.latest("read_market_report")
        if figures["probe_reservation_value"] is not None:
            reservation = int(figures["probe_reservation_value"]["reservation"])
        else:
            reservation = int(report["posted"]) if report is not None else grid.high
        walkoff = figures["probe_walkoff_price"]
        alpha = int(figures["probe_anchoring"]["anchoring"]) if figures["probe_anchoring"] is not None else 40
        cost = figures["probe_round_cost"]
        fallback = figures["probe_outside_option"]
        verified = {seen["round"]: int(seen["threshold"]) for _, seen in known.observations("probe_base_threshold")}
        rejected = _rejections(known)
        base, latest = [], grid.low
        for r in range(1, rounds + 1):
            if r in verified:
                latest = verified[r]
            elif r in rejected:  # the ask a was refused with the earlier lowest ask A: min(R, mix(b_r, A)) < a
                ask, anchor = rejected[r]
                if anchor is None or alpha >= 100:
                    bound = ask - 1
                else:
                    bound = (100 * ask - anchor * alpha - 1) // (100 - alpha)
                latest = min(latest, bound)
            base.append(max(0, min(latest, reservation)))
        counters = [0] * rounds
        for r, offer in _tables(known).items():
            counters[r - 1] = min(offer, reservation)
        return NegotiationParams(
            reservation_value=reservation, base_thresholds=base, anchoring_percent=alpha,
            walkoff_price=max(int(walkoff["walkoff"]) if walkoff is not None else reservation, reservation),
            counteroffers=counters, deadline=rounds,
            round_cost=float(cost["cost"]) if cost is not None else float(grid.step),
            outside_option=float(fallback["fallback"]) if fallback is not None else float(grid.low),
            price_low=grid.low, price_high=grid.high, price_step=grid.step,
            market_report=int(report["posted"]) if report is not None else reservation)

    def act_on_belief(self, seat: Seat, belief: NegotiationParams) -> None:
        """Play the recursion's move for the round and lowest ask reached, over the rounds the turns left can still
        reach (a round past them is as good as the deadline); after a surprise (an ask refused that the belief
        expected accepted) believe again from what it showed, and go on."""
        while not seat.over:
            round_, anchor = _position(seat.known)
            action = _Recursion(_within(belief, round_ + int(min(seat.turns_left, belief.deadline)) - 1)
                                ).move(round_, anchor)
            seen = seat.call(action)
            if seen is None or "error" in seen:
                return
            if seen.get("response") == "rejected" and action.args["price"] <= threshold(belief, round_, anchor):
                belief = self.believed(seat.known)

    def heuristic_policies(self) -> dict[str, Policy]:
        """accept_first: take the first round's counteroffer at once.
        reservation_concede: verify the reservation value, ask it, then concede in equal steps to the lowest grid
        price by the deadline.
        best_unanchored: verify every base threshold and counteroffer, the round cost and the fallback value, then
        take the best plain move, never using the anchoring: wait until the best round and ask its base threshold
        (rounded down to the grid) or accept its counteroffer, or walk away at once.
        best_threshold: the same from the base thresholds and the round cost only (half the probes)."""

        def accept_first(seat: Seat) -> None:
            seat.call("accept_counteroffer")

        def reservation_concede(seat: Seat) -> None:
            seen = seat.call("probe_reservation_value")
            grid = _Grid(seat.known)
            start = seen["reservation"] if seen and "reservation" in seen else grid.high
            for ask in grid.concession(start, grid.low):
                if seat.over:
                    return
                seat.call("make_ask", price=ask)

        def best_plain(counteroffers: bool) -> Policy:
            def policy(seat: Seat) -> None:
                rounds = seat.known.public["deadline"]
                for r in range(1, rounds + 1):
                    seat.call("probe_base_threshold", round=r)
                    if counteroffers:
                        seat.call("probe_counteroffer", round=r)
                seat.call("probe_round_cost")
                if counteroffers:
                    seat.call("probe_outside_option")
                seat.play(_best_plain(self.believed(seat.known), counteroffers))
            return policy

        return {"accept_first": accept_first, "reservation_concede": reservation_concede,
                "best_unanchored": best_plain(True), "best_threshold": best_plain(False)}

    def secret_numbers(self, params: NegotiationParams) -> list[float]:
        p = params
        return [p.reservation_value, *p.base_thresholds, p.anchoring_percent, p.walkoff_price, *p.counteroffers,
                p.round_cost, p.outside_option]

    def public_numbers(self, params: NegotiationParams) -> list[float]:
        p = params
        return [p.deadline, p.levels, p.price_low, p.price_high, p.price_step, 100,
                *range(1, p.deadline + 1)]

    def probe_allowance(self, params: NegotiationParams) -> int:
        return 2 * params.deadline + 5


class _Recursion:
    """The exact policy of an instance: backward recursion over the states (round, lowest earlier ask on the grid or
    none); ``move`` gives the best call in any state, ``value`` the optimum from the start."""

    def __init__(self, p: NegotiationParams):
        grid, rounds, n = p.grid, p.deadline, p.levels
        prices = np.asarray(grid, dtype=float)
        anchors: list[int | None] = [None, *grid]  # state index 0: no ask yet; 1 + k: lowest ask grid[k]
        k = np.arange(n)
        # the state after a rejected ask of grid[k] from state i: the new lowest ask
        after = np.vstack([1 + k[None, :], 1 + np.minimum(k[None, :], k[:, None])])
        self.ops = [Action(op="finish"), Action(op="accept_counteroffer"), Action(op="wait_round"),
                    *(Action(op="make_ask", args={"price": price}) for price in grid)]
        value_next = np.full(n + 1, _net(p, p.outside_option, rounds))
        choice: list[np.ndarray] = []
        for t in reversed(range(rounds)):
            r = t + 1
            limits = np.asarray([threshold(p, r, anchor) for anchor in anchors], dtype=float)
            asks = np.where(prices[None, :] <= limits[:, None], prices[None, :] - p.round_cost * r,
                            value_next[after])
            asks = np.where(prices[None, :] > p.walkoff_price, _net(p, p.outside_option, r), asks)
            table = np.column_stack([np.full(n + 1, _net(p, p.outside_option, t)),
                                     np.full(n + 1, _net(p, p.counteroffers[t], r)), value_next, asks])
            choice.append(np.argmax(table, axis=1))
            value_next = table.max(axis=1)
        choice.reverse()
        self.choice = choice
        self.index = {a: i for i, a in enumerate(anchors)}
        self.value = float(value_next[0])

    def move(self, round_: int, anchor: int | None) -> Action:
        """The best call in a round (1-based) with the lowest earlier ask `anchor` (None: no ask yet)."""
        return self.ops[int(self.choice[round_ - 1][self.index[anchor]])]


class _Grid:
    """The price grid as every mode states it (the public view)."""

    def __init__(self, known: Knowledge):
        self.low, self.high, self.step = (int(known.public[key]) for key in ("price_low", "price_high", "price_step"))
        self.rounds = int(known.public["deadline"])

    def snap(self, price: float) -> int:
        """The grid price nearest to a price (ties go up), clipped to the grid."""
        k = math.floor((price - self.low) / self.step + 0.5)
        return self.low + self.step * min(max(k, 0), (self.high - self.low) // self.step)

    def concession(self, start: float, floor: float) -> list[int]:
        """One ask per round: `start` first, then equal steps down to `floor` by the deadline (on the grid)."""
        start = self.snap(start)
        if self.rounds == 1:
            return [start]
        return [self.snap(start + (floor - start) * t / (self.rounds - 1)) for t in range(self.rounds)]


def _within(p: NegotiationParams, last: int) -> NegotiationParams:
    """The instance cut at round `last` (the last round the turns can reach): past it, as past the deadline, the
    fallback value minus the rounds used counts."""
    if last >= p.deadline:
        return p
    return p.model_copy(update={"deadline": last, "base_thresholds": p.base_thresholds[:last],
                                "counteroffers": p.counteroffers[:last]})


def _position(known: Knowledge) -> tuple[int, int | None]:
    """The round reached and the lowest ask so far, from what the calls showed (each rejected ask and each passed
    round used one round)."""
    round_, anchor = 1, None
    for action, seen in known.seen:
        if "error" in seen:
            continue
        if action.op == "make_ask" and seen.get("response") == "rejected":
            price = int(action.args["price"])
            anchor = price if anchor is None else min(anchor, price)
            round_ += 1
        elif action.op == "wait_round":
            round_ += 1
    return round_, anchor


def _rejections(known: Knowledge) -> dict[int, tuple[int, int | None]]:
    """Every rejected ask by round: (the ask, the lowest ask of the earlier rounds)."""
    refused, anchor = {}, None
    for action, seen in known.observations("make_ask"):
        if seen.get("response") == "rejected":
            price = int(action.args["price"])
            refused[int(seen["round"])] = (price, anchor)
            anchor = price if anchor is None else min(anchor, price)
    return refused


def _tables(known: Knowledge) -> dict[int, int]:
    """The counteroffers known by round: verified, or seen on the table."""
    offers = {}
    for action, seen in known.seen:
        if "error" in seen:
            continue
        if action.op == "probe_counteroffer":
            offers[int(seen["round"])] = int(seen["counteroffer"])
        elif seen.get("table") is not None:
            offers[int(seen.get("next", seen.get("round")))] = int(seen["table"])
    return offers


def _best_plain(p: NegotiationParams, counteroffers: bool) -> list[Action]:
    """The best move that never uses the anchoring: wait until one round and ask its base threshold (rounded down to
    the grid) or, if counteroffers are known, accept its counteroffer; or walk away at once."""
    best, plan = p.outside_option if counteroffers else -math.inf, [Action(op="walk_away")]
    for r in range(1, p.deadline + 1):
        waits = [Action(op="wait_round")] * (r - 1)
        base = p.base_thresholds[r - 1]
        if base >= p.price_low:
            price = p.price_low + (base - p.price_low) // p.price_step * p.price_step
            if price - p.round_cost * r > best:
                best, plan = price - p.round_cost * r, [*waits, Action(op="make_ask", args={"price": price})]
        if counteroffers and p.counteroffers[r - 1] - p.round_cost * r > best:
            best, plan = p.counteroffers[r - 1] - p.round_cost * r, [*waits, Action(op="accept_counteroffer")]
    return plan


register(Negotiation())
