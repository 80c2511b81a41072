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

Hidden mode: every figure has a probe, the future offers included: ``scout_offer`` tells the offer a given round
will bring (a market scout; one call per round), so the hindsight ceiling is the full-information optimum an
agent can reach when the budget lets it scout every round. The difficulty tiers give budgets that do not.

The reference: u* is the HINDSIGHT CEILING ``max(fallback, max_t (x_t - waiting_cost * (t - 1)))``, the
best choice knowing every draw; the oracle passes until that round in one ``skip_offers`` call and accepts (or
walks away at once).
The Bellman-optimal ONLINE policy, which knows the distribution and only the offers seen so far, comes
from exact backward induction: W_{n+1} = fallback, tau_t = max(fallback, W_{t+1} - waiting_cost),
W_t = E[max(X, tau_t)]; accept the offer of round t iff x_t >= tau_t, otherwise pass if
W_{t+1} - waiting_cost > fallback and walk away if not. Its thresholds tau_t, the values W_t, its expected
value W_1 and its utility on the drawn offers are recorded in the solver facts and as the baseline
``online_optimal``. The default policy trusts the sticker: it accepts the first offer at or above the
posted typical best offer, and the last offer if none reaches it.
"""

from __future__ import annotations

from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from mechanisms.base import ActionError, Mechanism, Solution, Tier
from mechanisms.facts import BUDGET_END, END, OBJECTIVE, Fact, probed, rule
from mechanisms.operations import Between, Observation, State, clock, decision, info, probe
from mechanisms.params import finite, non_negative, one_entry_each, positive
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
                raise ValueError(f"offers: the offer of round {t} ({x:g}) is not one of offer_values")
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
    n = p.rounds
    values = [0.0] * (n + 2)
    thresholds = [0.0] * (n + 1)
    values[n + 1] = p.fallback
    for t in range(n, 0, -1):
        tau = max(p.fallback, values[t + 1] - p.waiting_cost)
        thresholds[t] = tau
        values[t] = float(sum(q * max(v, tau) for v, q in zip(p.offer_values, p.offer_probabilities, strict=True)))
    return thresholds[1:], values[1:]


def online_policy(p: StoppingParams, offers: list[float] | None = None) -> list[Action]:
    """The Bellman-optimal online policy played on the given offers (default: the drawn ones)."""
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


Round = Annotated[int, Between(1, "rounds")]  # 1..n: a round number, or how many offers to pass


class SequentialStopping(Mechanism[StoppingParams]):
    id = "sequential_stopping"
    version = 1
    group = "far_ood_structure"
    summary = "offers arrive one by one from a known distribution; accept one or pass (no recall); optimal stopping"
    Params = StoppingParams
    size_range = (2, MAX_SUPPORT)  # support size of the offer distribution
    horizon_range = (2, MAX_ROUNDS)  # number of offers (rounds)
    default_size = 5
    default_horizon = 8
    difficulty_grid = [(3, 6), (5, 8), (6, 12), (8, 20), (10, 30)]
    # measured (envs.difficulty): short searches are easy for a naive agent; at medium half the scouting fits; long
    # searches (from LONG_SEARCH rounds) hide a rare jackpot that naive rules miss (hard), and at frontier only
    # part of the rounds can be scouted
    difficulty_tiers = {
        "easy": Tier(((3, 4), (3, 6), (4, 6)), 1.0),
        "medium": Tier(((8, 20), (6, 16)), 0.5),
        "hard": Tier(((10, 40), (10, 50), (10, 60)), 1.0),
        "frontier": Tier(((10, 40), (10, 50), (10, 60)), 0.4),
    }
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

    def default_actions(self, params: StoppingParams) -> list[Action]:
        """Accept the first offer at or above the posted typical best offer, else the last offer."""
        p = params
        t = next((t for t, x in enumerate(p.offers, start=1) if x >= p.posted_best), p.rounds)
        return [Action(op="read_posted_best"), *_skips(t - 1), Action(op="accept_offer")]

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
    def probe_offer_distribution(self, p: StoppingParams, state: State) -> Observation:
        """the possible offer values and the probability of each"""
        return {"distribution": [{"value": x, "probability": q}
                                 for x, q in zip(p.offer_values, p.offer_probabilities, strict=True)]}

    @probe
    def probe_waiting_cost(self, p: StoppingParams, state: State) -> Observation:
        """the cost of passing one offer"""
        return {"waiting cost per pass": p.waiting_cost}

    @probe
    def probe_fallback(self, p: StoppingParams, state: State) -> Observation:
        """the walk-away value"""
        return {"fallback": p.fallback}

    @probe
    def scout_offer(self, p: StoppingParams, state: State, round: Round) -> Observation:
        """the offer a given round will bring

        Args:
            round: round number
        """
        return {"round": round, "offer": p.offers[round - 1]}

    @info(decoy=True, estimates="offer")
    def read_posted_best(self, p: StoppingParams, state: State) -> Observation:
        """the posted typical best offer"""
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
        return {"accepted round": t, "offer": p.offers[t - 1], "waiting cost": p.waiting_cost * (t - 1),
                "total result": self.utility(p, state), "finished": True}

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
    def finish(self, p: StoppingParams, state: State) -> Observation:
        """walk away now and take the fallback"""
        self._still_open(state)
        state["finished"] = True
        return {"walked away": True, "fallback": p.fallback, "waiting cost": p.waiting_cost * (state["round"] - 1),
                "total result": self.utility(p, state), "finished": True}

    def _pass(self, p: StoppingParams, state: State, k: int) -> Observation:
        t = state["round"]
        state["passed"] = [*state["passed"], *range(t, t + k)]
        state["round"] = t + k
        if state["round"] > p.rounds:
            state["finished"] = True
            return {"passed": k, "offers left": 0, "walked away": True, "fallback": p.fallback,
                    "waiting cost": p.waiting_cost * p.rounds, "total result": self.utility(p, state),
                    "finished": True}
        return {"passed": k, "waiting cost of these passes": p.waiting_cost * k, **self._current(p, state)}

    def utility(self, params: StoppingParams, state: dict[str, Any]) -> float:
        p = params
        if state["accepted"] is not None:
            t = state["accepted"]
            return float(p.offers[t - 1] - p.waiting_cost * (t - 1))
        return float(p.fallback - p.waiting_cost * (state["round"] - 1))

    # --- facts, belief, heuristics ----------------------------------------------------------
    def facts(self, params: StoppingParams, vocab: dict[str, str]) -> list[Fact]:
        p, v = params, vocab
        n, per, cur = p.rounds, v["period"], v["currency"]
        odds = "; ".join(f"{x:g} {cur} with probability {q:g}"
                         for x, q in zip(p.offer_values, p.offer_probabilities, strict=True))
        drawn = "; ".join(f"{t}: {x:g}" for t, x in enumerate(p.offers, start=1))
        return [
            rule("structure", f"One {v['deal']} is to be placed. Over {n} {per}s, numbered 1 to {n}, exactly one "
                 f"{v['offer']} arrives per {per}; the {v['offers']} are drawn independently from one distribution "
                 f"with {p.support} possible values.", n, p.support),
            probed("distribution", "probe_offer_distribution", f"The distribution of each {v['offer']}: {odds}.",
                   [*p.offer_values, *p.offer_probabilities]),
            probed("offers", "scout_offer", f"The {v['offers']} drawn, in {cur}, {per} by {per}: {drawn}.",
                   p.offers),
            probed("waiting_cost", "probe_waiting_cost", f"Every pass costs {p.waiting_cost:g} {cur} of waiting.",
                   [p.waiting_cost]),
            probed("fallback", "probe_fallback", f"Walking away leaves a fallback of {p.fallback:g} {cur}.",
                   [p.fallback]),
            probed("posted", "read_posted_best", f"The {v['sticker']} posts a typical best {v['offer']} of "
                   f"{p.posted_best:g} {cur} (an outside estimate, not a promise).", [p.posted_best]),
            rule("no_recall", f"Only the {v['offer']} of the current {per} can be accepted; a passed {v['offer']} is "
                 f"gone for good."),
            rule(OBJECTIVE, f"Your result, in {cur}: accepting the {v['offer']} of {per} t yields its value minus "
                 f"the waiting cost per pass times (t - 1); walking away after p passes yields the fallback minus "
                 f"the waiting cost per pass times p."),
            rule(END, f"Accepting a {v['offer']} ends the episode, and so does walking away; passing the "
                 f"{v['offer']} of the last {per} means walking away after {n} passes."),
            rule(BUDGET_END, "If the turns run out before you accept or walk away, you walk away after the passes "
                 "made so far: the fallback minus the waiting cost per pass times the number of passes."),
        ]

    def probe_order(self, params: StoppingParams) -> list[Action]:
        """The fallback, the waiting cost and the distribution (one call each), then each round's offer, earliest
        first (an early offer costs the least waiting)."""
        return [Action(op="probe_fallback"), Action(op="probe_waiting_cost"), Action(op="probe_offer_distribution"),
                *(Action(op="scout_offer", args={"round": t}) for t in range(1, params.rounds + 1))]

    def believed(self, params: StoppingParams, probed: list[Action]) -> StoppingParams:
        """Probed figures are true; an unscouted round brings the lowest possible offer (the agent plans only on
        what it knows); an unprobed waiting cost is 0, an unprobed fallback 0, an unprobed distribution is even
        over the scouted offers, the posted figure and one value below them all."""
        p = params
        done = {a.op for a in probed}
        scouted = {a.args["round"] for a in probed if a.op == "scout_offer"}
        if "probe_offer_distribution" in done:
            values, probs = list(p.offer_values), list(p.offer_probabilities)
        else:
            known = sorted({p.posted_best, *(p.offers[t - 1] for t in scouted)})
            values = [known[0] - 1.0, *known][:MAX_SUPPORT]
            probs = [1.0 / len(values)] * len(values)
            probs[-1] = 1.0 - sum(probs[:-1])
        low = values[0]
        offers = [p.offers[t - 1] if t in scouted and p.offers[t - 1] in values else low
                  for t in range(1, p.rounds + 1)]
        return StoppingParams(offer_values=values, offer_probabilities=probs, offers=offers,
                              waiting_cost=p.waiting_cost if "probe_waiting_cost" in done else 0.0,
                              fallback=p.fallback if "probe_fallback" in done else 0.0,
                              posted_best=p.posted_best)

    def heuristic_actions(self, params: StoppingParams) -> dict[str, list[Action]]:
        """accept_first: take the first offer. above_average: learn the distribution, then pass until an offer at
        or above its mean arrives (walking away after the last). best_of_three: scout the first three rounds and
        take the highest of them, ignoring the waiting cost, the fallback and every later round."""
        p = params
        mean = sum(x * q for x, q in zip(p.offer_values, p.offer_probabilities, strict=True))
        above = [Action(op="probe_offer_distribution")]
        for x in p.offers:
            if x >= mean:
                above.append(Action(op="accept_offer"))
                break
            above.append(Action(op="pass_offer"))
        early = range(1, min(3, p.rounds) + 1)
        best = max(early, key=lambda t: (p.offers[t - 1], -t))
        three = [*(Action(op="scout_offer", args={"round": t}) for t in early), *_skips(best - 1),
                 Action(op="accept_offer")]
        return {"accept_first": [Action(op="accept_offer")], "above_average": above, "best_of_three": three}

    def secret_numbers(self, params: StoppingParams) -> list[float]:
        p = params
        return [*p.offer_values, *p.offer_probabilities, *p.offers, p.waiting_cost, p.fallback]

    def public_numbers(self, params: StoppingParams) -> list[float]:
        return [params.rounds, params.support, *range(1, params.rounds + 1)]

    def probe_allowance(self, params: StoppingParams) -> int:
        return params.rounds + 3  # the three figures and one scout per round


def _skips(count: int) -> list[Action]:
    """Pass `count` offers in one call (none: no call)."""
    return [Action(op="skip_offers", args={"count": count})] if count > 0 else []


register(SequentialStopping())
