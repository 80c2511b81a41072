"""sequential_stopping: offers arrive one by one from a known distribution; accept one, pass, or walk away.

One lot is for sale. In each round t = 1..n exactly one offer x_t arrives, drawn independently from the
same known discrete distribution; the current offer can be accepted (the episode ends) or passed (it is
gone for good: no recall). Every pass costs ``waiting_cost``. Walking away (``finish``) takes the
``fallback`` (an outside value, e.g. a clearance buyer) instead; so does running out of offers.

Utility (higher is better):
- accepting the offer of round t: ``x_t - waiting_cost * (t - 1)``;
- walking away after p passes: ``fallback - waiting_cost * p`` (p = n after passing every offer).

Parameters (all can be given as data):
- ``offer_values``: the support of the offer distribution, strictly increasing (known in advance)
- ``offer_probabilities``: the probability of each support value (positive, summing to 1)
- ``offers``: the drawn offer of every round, each one of ``offer_values`` (hidden: an agent sees an
  offer only when its round arrives); its length is the number of rounds n
- ``waiting_cost``: the cost of one pass (non-negative)
- ``fallback``: the walk-away value (finite)
- ``posted_best``: the posted "typical best offer" (a decoy sticker: an exaggerated figure that the
  default policy trusts; when omitted from data it equals the highest support value)

The knobs: ``size`` is the support size of the offer distribution (2..10 values) and ``horizon`` the
number of offers n (2..60 rounds).

Hidden mode: the distribution, the waiting cost and the fallback each have a probe; no tool tells a future offer
(an offer is seen when its round arrives: ``view_offer`` and every pass show the offer then on the table). Passing
round by round takes a turn per round, so ``hold_out`` passes offers until one reaches the threshold the agent lists
for its round: the optimal online policy in one call, then one call to accept or walk away.

The reference: u* is the HINDSIGHT CEILING ``max(fallback, max_t (x_t - waiting_cost * (t - 1)))``, the
best choice knowing every draw (what the revealed and written modes, which state the draws, can reach); the oracle
passes until that round in one ``skip_offers`` call and accepts (or walks away at once).
The Bellman-optimal ONLINE policy, which knows the distribution and only the offers seen so far, comes
from exact backward induction: W_{n+1} = fallback, tau_t = max(fallback, W_{t+1} - waiting_cost),
W_t = E[max(X, tau_t)]; accept the offer of round t iff x_t >= tau_t, otherwise pass if
W_{t+1} - waiting_cost > fallback and walk away if not. Its thresholds tau_t, the values W_t, its expected
value W_1 and its utility on the drawn offers are recorded in the solver facts and as the baseline
``online_optimal``: the reference a hidden-mode agent can reach (envs.difficulty.reachable). The informed agent and
the naive prober play that rule on what they believe (a guessed distribution, waiting cost or fallback where they
did not verify it). The default policy trusts the sticker: it holds out for the posted typical best offer and
accepts the first offer at or above it, or the last offer if none reaches it.
"""

from __future__ import annotations

import functools
from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from mechanisms.base import ActionError, Mechanism, Solution, Tier
from mechanisms.facts import BUDGET_END, END, OBJECTIVE, Fact, drawn, probed, rule
from mechanisms.operations import Between, Observation, State, clock, decision, info, probe
from mechanisms.params import finite, non_negative, one_entry_each, positive
from mechanisms.players import Knowledge, Policy, Seat
from mechanisms.prose import a, figure, numbered
from mechanisms.registry import register
from schemas.envspec import Action

MAX_SUPPORT = 10
MAX_ROUNDS = 60
PROBABILITY_TOLERANCE = 1e-9
TWENTIETHS = 20  # sampled probabilities are multiples of 1/20
HUNDREDTHS = 100  # in a long search, of 1/100
LONG_SEARCH = 31  # rounds from which a search is long


class StoppingParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    offer_values: list[float] = Field(min_length=2, max_length=MAX_SUPPORT)
    offer_probabilities: list[float] = Field(min_length=2, max_length=MAX_SUPPORT)
    offers: list[float] = Field(min_length=1, max_length=MAX_ROUNDS)
    waiting_cost: float
    fallback: float
    posted_best: float

    @model_validator(mode="before")
    @classmethod
    def _default_sticker(cls, data: Any) -> Any:
        if (isinstance(data, dict) and "posted_best" not in data and isinstance(data.get("offer_values"), list)
                and data["offer_values"]):
            data = {**data, "posted_best": max(data["offer_values"])}
        return data

    @model_validator(mode="after")
    def _check(self) -> StoppingParams:
        values, probs = self.offer_values, self.offer_probabilities
        finite("offer_values, offer_probabilities, offers, waiting_cost, fallback and posted_best", values, probs,
               self.offers, [self.waiting_cost, self.fallback, self.posted_best])
        one_entry_each("offer_probabilities", probs, len(values), "offer value")
        if any(b <= a for a, b in zip(values, values[1:], strict=False)):
            raise ValueError("offer_values must be strictly increasing")
        positive("offer_probabilities", probs)
        if abs(sum(probs) - 1.0) > PROBABILITY_TOLERANCE:
            raise ValueError(f"offer_probabilities must sum to 1, got {sum(probs):.12g}")
        support = set(values)
        for t, x in enumerate(self.offers, start=1):
            if x not in support:
                raise ValueError(f"offers: the offer of round {t} ({figure(x)}) is not one of offer_values")
        non_negative("waiting_cost", [self.waiting_cost])
        return self

    @property
    def rounds(self) -> int:
        return len(self.offers)

    @property
    def support(self) -> int:
        return len(self.offer_values)


def backward_induction(p: StoppingParams) -> tuple[list[float], list[float]]:
    """Exact expected-value DP: (tau_1..tau_n acceptance thresholds, W_1..W_{n+1} continuation values)."""
    thresholds, values = _induction(tuple(p.offer_values), tuple(p.offer_probabilities), p.rounds, p.waiting_cost,
                                    p.fallback)
    return list(thresholds), list(values)


@functools.lru_cache(maxsize=1024)  # a search's players and its redrawn paths share the distribution
def _induction(offer_values: tuple[float, ...], offer_probabilities: tuple[float, ...], n: int, waiting_cost: float,
               fallback: float) -> tuple[tuple[float, ...], tuple[float, ...]]:
    values = [0.0] * (n + 2)
    thresholds = [0.0] * (n + 1)
    values[n + 1] = fallback
    odds = list(zip(offer_values, offer_probabilities, strict=True))
    for t in range(n, 0, -1):
        tau = max(fallback, values[t + 1] - waiting_cost)
        thresholds[t] = tau
        values[t] = float(sum(q * max(v, tau) for v, q in odds))
    return tuple(thresholds[1:]), tuple(values[1:])


def stop_round(p: StoppingParams, thresholds: list[float], values: list[float]) -> int:
    """The round at which the online policy stops passing: the last round, or the first where waiting another round
    is worth no more than the fallback (from there the threshold is the fallback: accept at or above it, else walk)."""
    return next(t for t in range(1, p.rounds + 1) if t == p.rounds or values[t] - p.waiting_cost <= p.fallback)


def online_policy(p: StoppingParams, offers: list[float] | None = None) -> list[Action]:
    """The Bellman-optimal online policy played on the given offers (default: the drawn ones), round by round."""
    offers = p.offers if offers is None else offers
    thresholds, values = backward_induction(p)
    actions: list[Action] = []
    for t, x in enumerate(offers, start=1):
        if x >= thresholds[t - 1]:
            actions.append(Action(op="accept_offer"))
            return actions
        if t == p.rounds or values[t] - p.waiting_cost <= p.fallback:
            actions.append(Action(op="finish"))
            return actions
        actions.append(Action(op="pass_offer"))
    actions.append(Action(op="finish"))
    return actions


Round = Annotated[int, Between(1, "rounds")]  # 1..n: how many offers to pass
Thresholds = Annotated[list[float], Between(max_items="rounds")]


class SequentialStopping(Mechanism[StoppingParams]):
    id = "sequential_stopping"
    version = 4  # issue 30: canonical solver output (mechanisms.canonical); 3: issue 27, the prose is part of the spec
    group = "far_ood_structure"
    summary = "offers arrive one by one from a known distribution; accept one or pass (no recall); optimal stopping"
    Params = StoppingParams
    size_range = (2, MAX_SUPPORT)  # support size of the offer distribution
    horizon_range = (2, MAX_ROUNDS)  # number of offers (rounds)
    default_size = 5
    default_horizon = 8
    difficulty_grid = [(3, 6), (5, 8), (6, 12), (8, 20), (10, 30)]
    # measured (envs.difficulty: in expectation over the drawn offers and redraws of them, against the optimal online
    # policy): short searches are easy for a naive agent; long searches (from LONG_SEARCH rounds) hide a rare jackpot
    # that naive rules often miss. At hard two of the three figures fit beside the posted sheet and the plan, at
    # frontier one; from about 36 rounds a naive rule (hold out for the mean) gets half of the online policy's edge,
    # which puts hard's long searches in its band (a heuristic between 0.5 and 0.75) and frontier's below it
    difficulty_tiers = {
        "easy": Tier(((3, 4), (3, 6), (4, 6)), 1.0),
        "medium": Tier(((8, 32), (10, 36), (6, 31)), 1.0),
        "hard": Tier(((8, 40), (10, 45), (9, 40)), 0.66),
        "frontier": Tier(((10, 40), (10, 50), (10, 60)), 0.33),
    }
    # acting takes two calls (hold out, then accept or walk away): no slack, so that a tier's probe share decides how
    # many of the three figures fit
    turn_slack = 0
    u0_band = (-1.5, 0.95)

    def sample(self, rng: np.random.Generator, size: int, horizon: int) -> StoppingParams:
        k, n = int(size), int(horizon)
        base = int(rng.integers(40, 121))
        if n < LONG_SEARCH:
            values = (base + np.concatenate([[0], np.cumsum(rng.integers(6, 31, k - 1))])).astype(float)
            # high offers are rare: the weights fall with the value, then the counts of twentieths are drawn
            weights = rng.dirichlet(np.linspace(2.0, 0.6, k))
            counts = 1 + rng.multinomial(TWENTIETHS - k, weights) if k < TWENTIETHS else np.ones(k, dtype=int)
            probs = (counts / TWENTIETHS).tolist()
        else:
            # a long search: the gaps widen towards the top, the top offer is a rare jackpot (2 to 5 in 100) far above
            # the rest, and waiting is cheap (a twentieth to a fifth of the spread in all)
            gaps = 2 * np.sort(rng.integers(6, 31, k - 1))
            gaps[-1] *= int(rng.integers(3, 6))
            values = (base + np.concatenate([[0], np.cumsum(gaps)])).astype(float)
            top = int(rng.integers(2, 6))
            weights = rng.dirichlet(np.linspace(2.0, 0.6, k - 1))
            counts = np.append(1 + rng.multinomial(HUNDREDTHS - top - (k - 1), weights), top)
            probs = (counts / HUNDREDTHS).tolist()
        spread = float(values[-1] - values[0])
        offers = rng.choice(values, size=n, p=np.asarray(probs) / np.sum(probs)).tolist()
        # waiting every round costs between a fifth and two thirds of the spread in all
        share = rng.uniform(0.2, 0.66) if n < LONG_SEARCH else rng.uniform(0.05, 0.2)
        waiting_cost = float(max(1, round(spread * share / n)))
        fallback = float(max(0, round(values[0] - spread * rng.uniform(-0.15, 0.4))))
        # exaggerated: above every possible offer, so the default holds out to the last round
        posted_best = float(round(values[-1] + spread * rng.uniform(0.04, 0.35)))
        return StoppingParams(offer_values=values.tolist(), offer_probabilities=probs, offers=offers,
                              waiting_cost=waiting_cost, fallback=fallback, posted_best=posted_best)

    def redraw(self, params: StoppingParams, rng: np.random.Generator) -> StoppingParams:
        """The same search with every round's offer drawn anew from the offer distribution."""
        p = params
        probs = np.asarray(p.offer_probabilities)
        offers = rng.choice(p.offer_values, size=p.rounds, p=probs / probs.sum()).tolist()
        return p.model_copy(update={"offers": [float(x) for x in offers]})

    # --- reference ------------------------------------------------------------------------
    def solve(self, params: StoppingParams) -> Solution:
        p = params
        best_round, best = 0, p.fallback
        for t, x in enumerate(p.offers, start=1):
            if x - p.waiting_cost * (t - 1) > best:
                best_round, best = t, x - p.waiting_cost * (t - 1)
        if best_round == 0:
            actions = [Action(op="finish")]
        else:
            actions = [*_skips(best_round - 1), Action(op="accept_offer")]
        u_star = self.run(p, actions)
        thresholds, values = backward_induction(p)
        online = online_policy(p)
        facts = {
            "rounds": p.rounds,
            "support": p.support,
            "hindsight_round": best_round,
            "accept_thresholds": thresholds,
            "continuation_values": values,
            "online_expected_value": values[0],
            "online_utility": self.run(p, online),
            "online_stop_round": len(online),
            "ceiling": "hindsight: the best choice knowing every offer",
        }
        return Solution(u_star, actions, "hindsight maximum over rounds; backward induction for the online policy",
                        facts)

    def default_policy(self, seat: Seat) -> None:
        """Reads the posted typical best offer and holds out for it: accepts the first offer at or above it, or the
        last offer if none reaches it."""
        sheet = seat.call("read_posted_best")
        n = seat.known.public["rounds"]
        if n > 1 and sheet and "posted typical best" in sheet:
            seat.call("hold_out", thresholds=[float(sheet["posted typical best"])] * (n - 1))
        seat.call("accept_offer")

    def baseline_actions(self, params: StoppingParams) -> dict[str, list[Action]]:
        return {"online_optimal": online_policy(params)}

    # --- dynamics -------------------------------------------------------------------------
    def initial_state(self, params: StoppingParams) -> dict[str, Any]:
        return {"round": 1, "passed": [], "accepted": None, "finished": False}

    def _current(self, p: StoppingParams, state: State) -> Observation:
        t = state["round"]
        waited = p.waiting_cost * (t - 1)
        if t > p.rounds:
            return {"round": None, "offer": None, "offers left": 0, "waiting cost so far": waited}
        return {"round": t, "offer": p.offers[t - 1], "offers left": p.rounds - t, "waiting cost so far": waited}

    def _still_open(self, state: State) -> None:
        if self.finished(state):
            raise ActionError("the episode is over")

    # --- operations -------------------------------------------------------------------------
    @probe
    def probe_fallback(self, p: StoppingParams, state: State) -> Observation:
        """the walk-away value"""
        return {"fallback": p.fallback}

    @probe
    def probe_waiting_cost(self, p: StoppingParams, state: State) -> Observation:
        """the cost of passing one offer"""
        return {"waiting cost per pass": p.waiting_cost}

    @probe
    def probe_offer_distribution(self, p: StoppingParams, state: State) -> Observation:
        """the possible offer values and the probability of each"""
        return {"distribution": [{"value": x, "probability": q}
                                 for x, q in zip(p.offer_values, p.offer_probabilities, strict=True)]}

    @info(decoy=True, estimates="offer")
    def read_posted_best(self, p: StoppingParams, state: State) -> Observation:
        """the posted typical best offer: an outside estimate, not a promise"""
        return {"posted typical best": p.posted_best}

    @info
    def view_offer(self, p: StoppingParams, state: State) -> Observation:
        """the current round, its offer and the waiting cost so far"""
        return self._current(p, state)

    @info
    def view_history(self, p: StoppingParams, state: State) -> Observation:
        """the offers passed so far"""
        return {"passed offers": [{"round": t, "offer": p.offers[t - 1]} for t in state["passed"]]}

    @info
    def view_calendar(self, p: StoppingParams, state: State) -> Observation:
        """how many rounds there are and remain"""
        return {"rounds": p.rounds, "current round": min(state["round"], p.rounds),
                "rounds left": max(p.rounds - state["round"] + 1, 0)}

    @decision
    def accept_offer(self, p: StoppingParams, state: State) -> Observation:
        """accept the current offer; this ends the episode"""
        self._still_open(state)
        t = state["round"]
        state.update(accepted=t, finished=True)
        return {"accepted round": t, "finished": True}

    @clock
    def pass_offer(self, p: StoppingParams, state: State) -> Observation:
        """pass the current offer for good and wait for the next one"""
        self._still_open(state)
        return self._pass(p, state, 1)

    @clock
    def skip_offers(self, p: StoppingParams, state: State, count: Round) -> Observation:
        """pass several offers in a row, unseen after the current one

        Args:
            count: number of offers to pass
        """
        self._still_open(state)
        left = p.rounds - state["round"] + 1
        if count > left:
            raise ActionError(f"only {left} round(s) remain, cannot pass {count}")
        return self._pass(p, state, count)

    @clock
    def hold_out(self, p: StoppingParams, state: State, thresholds: Thresholds) -> Observation:
        """pass offers, the current one first, until one reaches the threshold listed for its round

        Args:
            thresholds: one threshold per round, the current one first: an offer below its round's threshold is
                passed; the first offer at or above it (or the offer after the last listed round) stays on the table
        """
        self._still_open(state)
        t = state["round"]
        left = p.rounds - t + 1
        if len(thresholds) > left:
            raise ActionError(f"only {left} round(s) remain, cannot list {len(thresholds)} thresholds")
        count = next((k for k, limit in enumerate(thresholds) if p.offers[t + k - 1] >= limit), len(thresholds))
        reached = count < len(thresholds)
        if count == 0:
            return {"passed": 0, "threshold reached": True, **self._current(p, state)}
        return {**self._pass(p, state, count), **({} if self.finished(state) else {"threshold reached": reached})}

    @clock
    def finish(self, p: StoppingParams, state: State) -> Observation:
        """walk away now and take the fallback"""
        self._still_open(state)
        state["finished"] = True
        return {"walked away": True, "finished": True}

    def _pass(self, p: StoppingParams, state: State, k: int) -> Observation:
        t = state["round"]
        state["passed"] = [*state["passed"], *range(t, t + k)]
        state["round"] = t + k
        if state["round"] > p.rounds:
            state["finished"] = True
            return {"passed": k, "offers left": 0, "walked away": True, "finished": True}
        return {"passed": k, "waiting cost of these passes": p.waiting_cost * k, **self._current(p, state)}

    def utility(self, params: StoppingParams, state: dict[str, Any]) -> float:
        p = params
        if state["accepted"] is not None:
            t = state["accepted"]
            return float(p.offers[t - 1] - p.waiting_cost * (t - 1))
        return float(p.fallback - p.waiting_cost * (state["round"] - 1))

    def ledger(self, params: StoppingParams, state: dict[str, Any]) -> dict[str, Any]:
        p, t = params, state["accepted"]
        if t is not None:
            return {"accepted round": t, "offer": p.offers[t - 1], "waiting cost": p.waiting_cost * (t - 1),
                    "total result": self.utility(p, state)}
        return {"walked away": True, "fallback": p.fallback, "waiting cost": p.waiting_cost * (state["round"] - 1),
                "total result": self.utility(p, state)}

    # --- facts, belief, players ---------------------------------------------------------------
    def facts(self, params: StoppingParams, vocab: dict[str, str]) -> list[Fact]:
        p, v = params, vocab
        n, per, cur = p.rounds, v["period"], v["currency"]
        odds = "; ".join(f"{figure(x)} {cur} with probability {figure(q)}"
                         for x, q in zip(p.offer_values, p.offer_probabilities, strict=True))
        drawn_offers = "; ".join(f"{t}: {figure(x)}" for t, x in enumerate(p.offers, start=1))
        return [
            rule("structure", f"One {v['deal']} is to be placed. Over {numbered(n, per)}, exactly one "
                 f"{v['offer']} arrives per {per}; the {v['offers']} are drawn independently from one distribution "
                 f"with {p.support} possible values, and each is seen only when its {per} arrives.", n, p.support),
            probed("distribution", "probe_offer_distribution", f"The distribution of each {v['offer']}: {odds}.",
                   [*p.offer_values, *p.offer_probabilities]),
            drawn("offers", "view_offer", f"The {v['offers']} drawn, in {cur}, {per} by {per}: {drawn_offers}.",
                  p.offers),
            probed("waiting_cost", "probe_waiting_cost", f"Every pass costs {figure(p.waiting_cost)} {cur} of waiting.",
                   [p.waiting_cost]),
            probed("fallback", "probe_fallback", f"Walking away leaves a fallback of {figure(p.fallback)} {cur}.",
                   [p.fallback]),
            probed("posted", "read_posted_best", f"The {v['source']} posts a typical best {v['offer']} of "
                   f"{figure(p.posted_best)} {cur} (an outside estimate, not a promise).", [p.posted_best]),
            rule("no_recall", f"Only the {v['offer']} of the current {per} can be accepted; a passed {v['offer']} is "
                 f"gone for good."),
            rule(OBJECTIVE, f"Your result, in {cur}: accepting the {v['offer']} of {per} t yields its value minus "
                 f"the waiting cost per pass times (t - 1); walking away after p passes yields the fallback minus "
                 f"the waiting cost per pass times p."),
            rule(END, f"Accepting {a(v['offer'])} ends the episode, and so does walking away; passing the "
                 f"{v['offer']} of the last {per} means walking away after {n} passes."),
            rule(BUDGET_END, "If the turns run out before you accept or walk away, you walk away after the passes "
                 "made so far: the fallback minus the waiting cost per pass times the number of passes."),
        ]

    def public_view(self, params: StoppingParams) -> dict[str, Any]:
        return {"rounds": params.rounds, "possible offers": params.support}

    def probe_order(self, known: Knowledge) -> list[Action]:
        """The distribution first (it sets every threshold), then the waiting cost (it lowers them round by round),
        then the fallback (it matters only near the end, and only when it is above the low offers)."""
        return [Action(op="probe_offer_distribution"), Action(op="probe_waiting_cost"), Action(op="probe_fallback")]

    def believed(self, known: Knowledge) -> StoppingParams:
        """Verified figures are true. An unverified distribution is even over the possible number of values, spread
        from half the posted typical best offer up to it (1, 2, ... when the sheet was not read); an unverified
        waiting cost is 0 and an unverified fallback 0. The draws are not known: the offers are placeholders (the
        lowest value), never solved for."""
        n, k = known.public["rounds"], known.public["possible offers"]
        sheet = known.latest("read_posted_best")
        posted = float(sheet["posted typical best"]) if sheet else None
        odds = known.latest("probe_offer_distribution")
        if odds is not None:
            values = [float(row["value"]) for row in odds["distribution"]]
            probs = [float(row["probability"]) for row in odds["distribution"]]
        else:
            if posted is not None and posted > 0:
                values = [posted / 2 + posted / 2 * j / max(k - 1, 1) for j in range(k)]
            else:
                values = [float(j) for j in range(1, k + 1)]
            probs = [1.0 / k] * k
            probs[-1] = 1.0 - sum(probs[:-1])
        cost = known.latest("probe_waiting_cost")
        fallback = known.latest("probe_fallback")
        return StoppingParams(offer_values=values, offer_probabilities=probs, offers=[values[0]] * n,
                              waiting_cost=float(cost["waiting cost per pass"]) if cost else 0.0,
                              fallback=float(fallback["fallback"]) if fallback else 0.0,
                              posted_best=posted if posted is not None else max(values))

    def planned_calls(self, known: Knowledge, belief: StoppingParams) -> list[Action]:
        """Hold out for the believed thresholds up to the stop round (one call), then accept or walk away; when the
        current round is the stop round, look at its offer first."""
        thresholds, values = backward_induction(belief)
        now = _current_round(known)
        last = stop_round(belief, thresholds, values)
        look = (Action(op="hold_out", args={"thresholds": thresholds[now - 1:last - 1]}) if now < last
                else Action(op="view_offer"))
        return [look, Action(op="accept_offer")]

    def act_on_belief(self, seat: Seat, belief: StoppingParams) -> None:
        """The optimal online rule for the believed distribution, waiting cost and fallback: hold out for each round's
        threshold until the stop round, then accept the offer on the table if it reaches that round's threshold and
        walk away if not."""
        thresholds, _ = backward_induction(belief)
        look = self.planned_calls(seat.known, belief)[0]
        seen = seat.call(look)
        if not seen or "error" in seen or seat.over or not isinstance(seen.get("round"), int):
            return
        if seen["offer"] >= thresholds[seen["round"] - 1]:
            seat.call("accept_offer")
        else:
            seat.call("finish")

    def heuristic_policies(self) -> dict[str, Policy]:
        """accept_first: take the first offer. above_average: verify the distribution, then hold out for an offer
        at or above its mean (walking away after the last). best_of_three: pass the first three offers, look at them,
        then take the first offer at least as high as the best of them (the last offer if none is), ignoring the
        waiting cost and the fallback."""

        def accept_first(seat: Seat) -> None:
            seat.call("accept_offer")

        def above_average(seat: Seat) -> None:
            odds = seat.call("probe_offer_distribution")
            rows = odds.get("distribution", []) if odds else []
            mean = sum(row["value"] * row["probability"] for row in rows)
            seen = seat.call("hold_out", thresholds=[float(mean)] * seat.known.public["rounds"])
            if seen and seen.get("threshold reached"):
                seat.call("accept_offer")

        def best_of_three(seat: Seat) -> None:
            n = seat.known.public["rounds"]
            look = min(3, n - 1)
            seat.call("skip_offers", count=look)
            history = seat.call("view_history")
            best = max((row["offer"] for row in history.get("passed offers", [])), default=0.0) if history else 0.0
            if n - look > 1:
                seat.call("hold_out", thresholds=[float(best)] * (n - look - 1))
            seat.call("accept_offer")

        return {"accept_first": accept_first, "above_average": above_average, "best_of_three": best_of_three}

    def secret_numbers(self, params: StoppingParams) -> list[float]:
        p = params
        return [*p.offer_values, *p.offer_probabilities, *p.offers, p.waiting_cost, p.fallback]

    def public_numbers(self, params: StoppingParams) -> list[float]:
        return [params.rounds, params.support, *range(1, params.rounds + 1)]

    def probe_allowance(self, params: StoppingParams) -> int:
        return 3  # the distribution, the waiting cost and the fallback


def _current_round(known: Knowledge) -> int:
    """The round whose offer is on the table, from the newest observation that names it (1 before any)."""
    now = 1
    for _, seen in known.seen:
        if isinstance(seen, dict) and isinstance(seen.get("round"), int):
            now = seen["round"]
    return now


def _skips(count: int) -> list[Action]:
    """Pass `count` offers in one call (none: no call)."""
    return [Action(op="skip_offers", args={"count": count})] if count > 0 else []


register(SequentialStopping())
