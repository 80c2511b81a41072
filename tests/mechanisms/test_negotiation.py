"""negotiation: the anchoring rule, exactness against enumeration through the dynamics, data, refusals, the ending's
ledger, belief from observations only, the players at a seat."""

from __future__ import annotations

import copy
import itertools
import json

import numpy as np
import pytest

import mechanisms
from envs.admission import admit, hidden_leaks
from envs.environment import ENDING_KEY, Environment
from mechanisms import players
from mechanisms.base import ActionError
from mechanisms.negotiation import NegotiationParams, threshold
from mechanisms.players import Seat, run_policy
from schemas.envspec import Action
from setter.corpus import BUNDLE_KEYS, VOCAB_KEYS
from setter.phrasebook import vocabulary
from tests.mechanisms.references.negotiation import reference
from tests.support import make_spec

M = mechanisms.get("negotiation")
VOCAB = vocabulary({k: k for k in (*VOCAB_KEYS, *BUNDLE_KEYS)})

# A hand-made instance: asking the top of the grid first anchors the counterpart high.
DATA = {
    "reservation_value": 150,
    "base_thresholds": [100, 120, 130],
    "anchoring_percent": 50,
    "walkoff_price": 170,
    "counteroffers": [90, 110, 125],
    "deadline": 3,
    "round_cost": 5.0,
    "outside_option": 60.0,
    "price_low": 80,
    "price_high": 180,
    "price_step": 10,
    "market_report": 110,
}


def _sample(i: int, size: int | None = None, horizon: int | None = None) -> NegotiationParams:
    return M.sample(np.random.default_rng([17, i]), size or M.default_size, horizon or M.default_horizon)


def _choices(p: NegotiationParams) -> list[Action]:
    return [Action(op="walk_away"), Action(op="accept_counteroffer"), Action(op="wait_round"),
            *(Action(op="make_ask", args={"price": price}) for price in p.grid)]


def _enumerate_through_dynamics(p: NegotiationParams, start: dict | None = None) -> float:
    """The best utility over every choice sequence, played through ``apply`` on copies of the state."""
    best = -np.inf
    stack = [start or M.initial_state(p)]
    while stack:
        state = stack.pop()
        if state["finished"]:
            best = max(best, M.utility(p, state))
            continue
        for action in _choices(p):
            child = copy.deepcopy(state)
            M.apply(p, child, action)
            stack.append(child)
    return float(best)


@pytest.mark.parametrize("knobs", [(5, 2), (11, 4), (21, 6), (41, 10), (61, 12)])
def test_sampled_instances_respect_the_knobs(knobs):
    for i in range(5):
        p = _sample(300 + i, *knobs)
        assert p.levels == knobs[0] and p.deadline == knobs[1]
        assert len(p.base_thresholds) == len(p.counteroffers) == knobs[1]
        assert p.price_low <= min(p.base_thresholds) and p.reservation_value < p.price_high
        assert M.solve(p).u_star > p.outside_option


def test_contract_shape():
    p = _sample(0)
    ops = M.operations(p)
    kinds = {op.kind for op in ops}
    assert len(ops) >= 10 and kinds == {"probe", "info", "decision", "clock"}
    assert [op.name for op in ops if op.decoy] == ["read_market_report"]
    assert "finish" in {op.name for op in ops} and len({op.name for op in ops}) == len(ops)
    for op in ops:
        for arg in op.args.values():
            assert arg.type == "integer" and arg.minimum is not None and arg.maximum is not None
    assert M.group == "trained" and M.version == 3
    assert all(M.size_range[0] <= s <= M.size_range[1] and M.horizon_range[0] <= h <= M.horizon_range[1]
               for s, h in M.difficulty_grid)
    assert M.probe_allowance(p) == 2 * p.deadline + 5 == len(M.probe_order(M.knowledge(p)))
    json.dumps(M.initial_state(p))


def test_the_anchoring_rule():
    p = M.params_from_data(DATA)
    assert threshold(p, 1, None) == 100  # no ask yet: the base threshold
    assert threshold(p, 2, 170) == 145  # (120 * 50 + 170 * 50) // 100
    assert threshold(p, 3, 180) == 150  # capped at the reservation value
    assert threshold(p, 2, 80) == 100  # a low ask pulls the threshold below the base
    q = M.params_from_data({**DATA, "anchoring_percent": 33})
    assert threshold(q, 2, 170) == (120 * 67 + 170 * 33) // 100


def test_hand_made_instance_needs_an_anchor_first():
    p = M.params_from_data(DATA)
    solution = M.solve(p)
    # anchor at 170 (the highest ask that does not make it break off) in round 1 or 2, then ask in round 3:
    # (130 * 50 + 170 * 50) // 100 = 150 -> 150 - 3 * 5 = 135; asking (120 + 170) // 2 = 145 -> 140 in round 2
    # gives 140 - 10 = 130; taking no anchor at best 130 - 15 (round 3) or 100 - 5 (round 1)
    asks = [a.args["price"] for a in solution.optimal_actions if a.op == "make_ask"]
    assert asks == [170, 150]
    assert solution.u_star == 135.0
    assert M.run(p, solution.optimal_actions) == solution.u_star
    assert solution.u_star == pytest.approx(_enumerate_through_dynamics(p))
    # an early low ask cannot be undone: after asking 110 in round 1 the best left is the round-3
    # counteroffer, 125 - 15 = 110 (asks reach at most (120 + 110) // 2 = 115 -> 110 - 10 or 120 - 15)
    state = M.initial_state(p)
    M.apply(p, state, Action(op="make_ask", args={"price": 110}))
    assert state["anchor"] == 110 and not state["finished"]
    assert _enumerate_through_dynamics(p, state) == 110.0


def test_an_ask_above_the_walkoff_price_ends_the_negotiation():
    p = M.params_from_data(DATA)
    state = M.initial_state(p)
    reply = M.apply(p, state, Action(op="make_ask", args={"price": 180}))
    assert state["finished"] and state["status"] == "broken off" and reply["response"] == "broke off"
    assert M.utility(p, state) == 60.0 - 5.0 == M.ledger(p, state)["net"]
    assert M.ledger(p, state) == {"status": "broken off", "fallback": 60.0, "used": 1,
                                  "round costs": 5.0, "net": 55.0}


@pytest.mark.parametrize("i", range(25))
def test_solver_matches_enumeration_through_the_dynamics(i):
    rng = np.random.default_rng([18, i])
    p = M.sample(rng, int(rng.integers(5, 7)), int(rng.integers(2, 4)))
    solution = M.solve(p)
    assert solution.u_star == pytest.approx(_enumerate_through_dynamics(p), abs=1e-9)
    assert M.run(p, solution.optimal_actions) == pytest.approx(solution.u_star, abs=1e-12)


@pytest.mark.parametrize("change", [
    {"anchoring_percent": 0}, {"anchoring_percent": 100}, {"walkoff_price": 150}, {"round_cost": 0.0},
    {"round_cost": 40.0}, {"outside_option": 200.0}, {"counteroffers": [150, 0, 0]},
    {"deadline": 1, "base_thresholds": [100], "counteroffers": [95]}, {"price_low": 0, "price_step": 45},
    {"round_cost": 2.5, "outside_option": 0.0},
])
def test_edge_cases_match_enumeration(change):
    p = M.params_from_data({**DATA, **change})
    solution = M.solve(p)
    assert solution.u_star == pytest.approx(_enumerate_through_dynamics(p), abs=1e-9)
    assert solution.u_star == pytest.approx(reference(M, p), abs=1e-9)
    assert M.run(p, solution.optimal_actions) == pytest.approx(solution.u_star, abs=1e-12)


def test_edge_case_outcomes():
    assert M.solve(M.params_from_data({**DATA, "outside_option": 200.0})).optimal_actions == [Action(op="finish")]
    generous = M.solve(M.params_from_data({**DATA, "counteroffers": [150, 0, 0]}))
    assert generous.optimal_actions == [Action(op="accept_counteroffer")] and generous.u_star == 145.0
    flat = M.solve(M.params_from_data({**DATA, "anchoring_percent": 0, "round_cost": 0.0}))
    assert flat.u_star == 130.0  # no anchoring and free rounds: wait for the last base threshold


@pytest.mark.parametrize("knobs", M.difficulty_grid)
def test_replay_of_optimal_actions_gives_u_star(knobs):
    for i in range(5):
        p = _sample(100 + i, *knobs)
        solution = M.solve(p)
        assert M.run(p, solution.optimal_actions) == solution.u_star
        assert solution.facts["states"] == p.deadline * (p.levels + 1)


def test_the_default_trusts_the_report_and_sits_inside_the_band():
    low, high = M.u0_band
    inside = 0
    for i in range(100):
        p = _sample(i)
        o = M.outcome(p)
        assert o.u_idle == p.outside_option and o.solution.u_star > o.u_idle
        actions = o.default_actions
        assert actions[0].op == "read_market_report"
        assert all(a.op == "make_ask" for a in actions[1:])
        nearest = min(p.grid, key=lambda g: (abs(g - p.market_report), -g))
        assert actions[1].args["price"] == nearest
        prices = [a.args["price"] for a in actions[1:]]
        assert prices == sorted(prices, reverse=True) and prices[-1] >= (p.price_low + nearest) / 2 - p.price_step
        g = (o.u0 - o.u_idle) / (o.solution.u_star - o.u_idle)
        inside += low <= g <= high and o.u0 < o.solution.u_star
    assert inside >= 90


def _open_state(p: NegotiationParams) -> dict:
    """A state after one rejected ask: the highest grid price at or below the walk-off price."""
    state = M.initial_state(p)
    M.apply(p, state, Action(op="make_ask", args={"price": max(g for g in p.grid if g <= p.walkoff_price)}))
    assert not state["finished"] and state["round"] == 2
    return state


def test_invalid_actions_raise_and_leave_the_state_unchanged():
    p = M.params_from_data(DATA)
    bad = [Action(op="no_such_op"), Action(op="make_ask"), Action(op="make_ask", args={"price": 85}),
           Action(op="make_ask", args={"price": 70}), Action(op="make_ask", args={"price": 190}),
           Action(op="make_ask", args={"price": "100"}), Action(op="make_ask", args={"price": 100.5}),
           Action(op="make_ask", args={"price": True}), Action(op="make_ask", args={"price": float("nan")}),
           Action(op="make_ask", args={"price": float("inf")}), Action(op="probe_base_threshold"),
           Action(op="probe_base_threshold", args={"round": 0}),
           Action(op="probe_counteroffer", args={"round": 4}), Action(op="probe_counteroffer", args={"round": None})]
    fresh, anchored = M.initial_state(p), _open_state(p)
    done = M.initial_state(p)
    M.apply(p, done, Action(op="accept_counteroffer"))
    for state in (fresh, anchored, done):
        for action in bad:
            before = copy.deepcopy(state)
            with pytest.raises(ActionError):
                M.apply(p, state, action)
            assert state == before
    for action in (Action(op="make_ask", args={"price": 100}), Action(op="accept_counteroffer"),
                   Action(op="wait_round")):
        before = copy.deepcopy(done)
        with pytest.raises(ActionError, match="over"):
            M.apply(p, done, action)
        assert done == before


def test_probes_and_infos_do_not_change_the_state():
    p = _sample(4)
    state = _open_state(p)
    before = copy.deepcopy(state)
    for op in M.operations(p):
        if op.kind in ("probe", "info"):
            reply = M.apply(p, state, Action(op=op.name, args={name: 1 for name in op.args}))
            json.dumps(reply)
    assert state == before
    assert M.apply(p, state, Action(op="probe_reservation_value")) == {"reservation": p.reservation_value}
    assert M.apply(p, state, Action(op="read_market_report")) == {"posted": p.market_report}
    assert M.apply(p, state, Action(op="probe_base_threshold", args={"round": 2})) == \
        {"round": 2, "threshold": p.base_thresholds[1]}
    assert M.apply(p, state, Action(op="probe_anchoring")) == {"anchoring": p.anchoring_percent}
    status = M.apply(p, state, Action(op="check_status"))
    assert status["round"] == 2 and status["lowest ask"] == state["anchor"]
    assert status["table"] == p.counteroffers[1]


def test_the_deadline_passes_with_the_outside_option_minus_all_costs():
    p = M.params_from_data(DATA)
    state = M.initial_state(p)
    for _ in range(3):
        M.apply(p, state, Action(op="wait_round"))
    assert state["finished"] and state["status"] == "deadline passed"
    assert M.utility(p, state) == 60.0 - 15.0
    walked = M.initial_state(p)
    M.apply(p, walked, Action(op="wait_round"))
    M.apply(p, walked, Action(op="walk_away"))
    assert walked["finished"] and M.utility(p, walked) == 55.0
    assert M.run(p, M.idle_actions(p)) == 60.0


@pytest.mark.parametrize("data, message", [
    ({**DATA, "base_thresholds": [100, 120]}, "base_thresholds must have one entry"),
    ({**DATA, "counteroffers": [1, 2, 3, 4]}, "counteroffers must have one entry"),
    ({**DATA, "base_thresholds": [100, 120, 160]}, "base_thresholds must lie"),
    ({**DATA, "counteroffers": [100, -1, 20]}, "counteroffers must lie"),
    ({**DATA, "counteroffers": [100, 151, 20]}, "counteroffers must lie"),
    ({**DATA, "walkoff_price": 149}, "walkoff_price"),
    ({**DATA, "price_high": 80}, "price_high must be above"),
    ({**DATA, "price_step": 7}, "multiple of price_step"),
    ({**DATA, "price_step": 0}, "price_step"),
    ({**DATA, "round_cost": -1.0}, "round_cost"),
    ({**DATA, "round_cost": float("inf")}, "round_cost"),
    ({**DATA, "outside_option": -5.0}, "outside_option"),
    ({**DATA, "anchoring_percent": 101}, "anchoring_percent"),
    ({**DATA, "deadline": 0}, "deadline"),
    ({**DATA, "reservation_value": 1.5}, "reservation_value"),
    ({**DATA, "price_high": 80 + 10 * 300}, "levels"),
    ({**DATA, "colour": "red"}, "colour"),
    ({k: v for k, v in DATA.items() if k != "market_report"}, "market_report"),
])
def test_params_from_data_rejects_bad_data(data, message):
    with pytest.raises(ValueError, match=message):
        M.params_from_data(data)


def test_describe_states_the_whole_instance():
    p = M.params_from_data(DATA)
    text = M.describe(p, VOCAB)
    for number in (150, 170, 60, 5, 80, 180, 10, 110, 100, 120, 130, 90, 125, 50):
        assert str(number) in text
    assert "counterpart" in text and "source" in text


def test_hidden_mode_shows_no_parameter_and_specs_are_admitted():
    admitted = 0
    for i in range(6):
        spec = make_spec("negotiation", i)
        verdict = admit(spec)
        assert hidden_leaks(spec) == []
        admitted += verdict.admitted
    assert admitted >= 5


def test_every_short_plan_stays_below_u_star():
    p = M.params_from_data({**DATA, "price_step": 20})
    u_star = M.solve(p).u_star
    for plan in itertools.product(_choices(p), repeat=2):
        assert M.run(p, list(plan)) <= u_star + 1e-12


# --- issue 15: facts, belief, informed and heuristic agents, tiers, admission ------------------------------------

def _measured_spec(index: int, size: int, horizon: int, tier: str | None = None):
    return make_spec("negotiation", index, size, horizon, tier=tier)


def test_no_probe_hands_over_the_acceptance_formula():
    """The rule is stated (without numbers); each of its parameters has its own probe and reveals one figure."""
    p = M.params_from_data(DATA)
    facts = {f.key: f for f in M.facts(p, VOCAB)}
    assert facts["acceptance"].is_rule and facts["acceptance"].numbers == (100.0,)
    state = M.initial_state(p)
    for op in M.operations(p):
        if op.kind != "probe":
            continue
        reply = M.apply(p, state, Action(op=op.name, args={name: 1 for name in op.args}))
        assert not any(isinstance(v, str) for v in reply.values())
        assert len([k for k in reply if k != "round"]) == 1, reply
    for key in ("reservation", "thresholds", "anchoring", "walkoff", "counteroffer values", "round cost",
                "fallback"):
        assert facts[key].probe is not None


def test_the_informed_agent_reaches_one_when_every_probe_fits():
    from setter.spec import turn_budget

    for knobs in [(11, 4), (21, 6), (61, 12)]:
        for i in range(4):
            p = _sample(700 + i, *knobs)
            outcome = M.outcome(p)
            budget = turn_budget(M, p, outcome, 1.0)
            assert len(M.probe_order(M.knowledge(p))) == M.probe_allowance(p)
            actions, u = run_policy(M, p, players.informed(M), budget)
            assert M.play(p, actions, budget) == (u, len(actions), 0) and len(actions) <= budget
            assert u == pytest.approx(outcome.solution.u_star, abs=1e-9)


def _seen(p: NegotiationParams, calls: list[Action]) -> Seat:
    seat = Seat(M, p)
    for call in calls:
        seat.call(call)
    return seat


def test_belief_with_every_probe_is_the_truth_and_otherwise_only_what_was_seen():
    for i in range(6):
        p = _sample(720 + i)
        order = [Action(op="read_market_report"), *M.probe_order(M.knowledge(p))]
        assert M.believed(_seen(p, order).known) == p
        data = p.model_dump()
        other = M.params_from_data({**data, "reservation_value": data["reservation_value"] + 1,
                                    "walkoff_price": data["walkoff_price"] + 2,
                                    "anchoring_percent": (data["anchoring_percent"] + 7) % 100,
                                    "base_thresholds": [b - 1 for b in data["base_thresholds"]],
                                    "counteroffers": [max(0, o - 1) for o in data["counteroffers"]],
                                    "round_cost": data["round_cost"] + 1, "outside_option": data["outside_option"] + 3})
        report = [Action(op="read_market_report")]
        assert M.believed(_seen(other, report).known) == M.believed(_seen(p, report).known)
        assert M.believed(M.knowledge(other)) == M.believed(M.knowledge(p))
        blind = M.believed(_seen(p, report).known)
        assert blind.reservation_value == p.market_report and blind.round_cost == p.price_step
        M.solve(M.believed(_seen(p, order[:7]).known))


def test_a_rejected_ask_lowers_the_belief_and_a_passed_round_shows_its_counteroffer():
    p = M.params_from_data(DATA)
    seat = _seen(p, [Action(op="probe_reservation_value"), Action(op="probe_base_threshold", args={"round": 1}),
                     Action(op="probe_anchoring")])
    assert M.believed(seat.known).base_thresholds == [100, 100, 100]
    assert seat.call("make_ask", price=100)["response"] == "accepted"  # the belief held: no surprise
    seat = _seen(p, [Action(op="probe_reservation_value"), Action(op="probe_anchoring")])
    assert seat.call("make_ask", price=110)["response"] == "rejected"  # round 1: b_1 = 100 < 110
    assert seat.call("wait_round") == {"round": 2, "next": 3, "table": 125, "finished": False}
    belief = M.believed(seat.known)
    assert belief.base_thresholds[0] <= 109 and belief.counteroffers == [0, 0, 125]


def test_the_informed_agent_reacts_to_a_refused_ask():
    """A belief that overrates the counterpart (the anchoring guessed at 40, truly 0): the ask it expected accepted
    is refused, it believes the round's threshold below that ask and never repeats it."""
    p = M.params_from_data({**DATA, "anchoring_percent": 0, "base_thresholds": [90, 100, 105],
                            "counteroffers": [80, 90, 100], "market_report": 160})
    seat = Seat(M, p)
    seat.call("read_market_report")
    M.act_on_belief(seat, M.believed(seat.known))
    asks = [(a.args["price"], o["response"]) for a, o in seat.known.seen if a.op == "make_ask"]
    assert seat.over and asks[:2] == [(160, "rejected"), (110, "rejected")]  # anchor, then the believed threshold
    assert all(price < 110 for price, _ in asks[2:])
    belief = M.believed(seat.known)
    assert threshold(belief, 2, 160) < 110 <= threshold(M.believed(_seen(p, [Action(op="read_market_report")]).known),
                                                       2, 160)


def test_heuristics_play_within_the_budget_and_stay_below_u_star():
    from setter.spec import turn_budget

    for i in range(8):
        p = _sample(740 + i)
        outcome = M.outcome(p)
        budget = turn_budget(M, p, outcome, 1.0)
        heuristics = M.heuristic_policies()
        assert set(heuristics) == {"accept_first", "reservation_concede", "best_unanchored", "best_threshold"}
        for name, policy in heuristics.items():
            actions, u = run_policy(M, p, policy, budget)
            assert M.play(p, actions, budget) == (u, len(actions), 0) and len(actions) <= budget
            assert u <= outcome.solution.u_star + 1e-9
            if name == "best_unanchored":  # the best plain move is one the exact solver also considers
                assert u >= outcome.u_idle - 1e-9


def test_decisions_state_what_happened_and_every_ending_states_the_deal():
    p = M.params_from_data(DATA)
    state = M.initial_state(p)
    assert M.apply(p, state, Action(op="make_ask", args={"price": 170})) == {
        "round": 1, "ask": 170, "response": "rejected", "next": 2, "finished": False}  # no counteroffer shown
    assert M.apply(p, state, Action(op="accept_counteroffer")) == {"round": 2, "status": "deal", "finished": True}
    assert M.ledger(p, state) == {"status": "deal", "price": 110, "used": 2, "round costs": 10.0,
                                  "net": 100.0}
    state = M.initial_state(p)
    for _ in range(3):
        M.apply(p, state, Action(op="wait_round"))
    assert M.ledger(p, state) == {"status": "deadline passed", "fallback": 60.0, "used": 3,
                                  "round costs": 15.0, "net": 45.0}


@pytest.mark.parametrize("ending", ["deal", "walk away", "turns run out"])
def test_every_ending_shows_the_outcome_through_the_tools(ending):
    from envs.admission import decision_leaks
    from envs.agents import tool_call

    spec = make_spec("negotiation", 2, tier="frontier")
    p = M.params_from_data(spec.params)
    env = Environment(spec, "hidden")
    anchor = max(g for g in p.grid if g <= p.walkoff_price)  # above the reservation value: refused
    last = env.step(*tool_call(env, Action(op="make_ask", args={"price": anchor})))
    assert not env.done and ENDING_KEY not in last
    if ending == "deal":
        while not env.done:
            last = env.step(*tool_call(env, Action(op="accept_counteroffer")))
    elif ending == "walk away":
        last = env.step(*tool_call(env, Action(op="walk_away")))
    else:
        while not env.done:
            last = env.step(*tool_call(env, Action(op="probe_anchoring")))
    outcome = last[ENDING_KEY]
    ledger = M.ledger(p, env.state)
    assert ledger["net"] == pytest.approx(env.utility())
    assert ledger["round costs"] == pytest.approx(p.round_cost * ledger["used"])
    shown = [v for v in outcome.values() if isinstance(v, (int, float))]
    for key in ("net", "used", "round costs"):
        assert any(v == pytest.approx(ledger[key]) for v in shown), key
    assert ("price" in ledger) == (ledger["status"] == "deal") != ("fallback" in ledger)
    if ending == "turns run out":  # as if walked away then
        assert ledger["status"] == "walked away" and ledger["net"] == p.outside_option - p.round_cost
    assert decision_leaks(spec, [env.trajectory]) is None


@pytest.mark.parametrize("knobs", [(5, 2), (7, 3)])
def test_the_recursion_matches_enumeration_on_small_tier_cells(knobs):
    for i in range(3):
        p = _sample(760 + i, *knobs)
        assert M.solve(p).u_star == pytest.approx(_enumerate_through_dynamics(p), abs=1e-9)


def _memoised_reference(p: NegotiationParams) -> float:
    """The rules re-implemented as a forward recursion over (round, lowest earlier ask), memoised: an independent
    exact method that still runs at frontier sizes (the plain enumeration does not)."""
    import functools

    grid = p.grid

    @functools.cache
    def best(index: int, lowest: int | None) -> float:
        if index == p.deadline:
            return p.outside_option - p.round_cost * p.deadline
        spent = p.round_cost * (index + 1)
        values = [p.outside_option - p.round_cost * index, p.counteroffers[index] - spent, best(index + 1, lowest)]
        for ask in grid:
            base = p.base_thresholds[index]
            limit = base if lowest is None else (base * (100 - p.anchoring_percent)
                                                 + lowest * p.anchoring_percent) // 100
            if ask > p.walkoff_price:
                values.append(p.outside_option - spent)
            elif ask <= min(limit, p.reservation_value):
                values.append(ask - spent)
            else:
                values.append(best(index + 1, ask if lowest is None else min(ask, lowest)))
        return float(max(values))

    return best(0, None)


@pytest.mark.parametrize("knobs", [(41, 10), (61, 16), (81, 20)])
def test_the_recursion_matches_an_independent_recursion_at_the_tier_sizes(knobs):
    import time

    for i in range(2):
        p = _sample(780 + i, *knobs)
        started = time.perf_counter()
        u_star = M.solve(p).u_star
        assert time.perf_counter() - started < 2.0
        assert u_star == pytest.approx(_memoised_reference(p), abs=1e-9)


def test_the_tiers_cover_their_cells_and_rendered_environments_are_admitted():
    tiers = M.tiers()
    assert list(tiers) == ["easy", "medium", "hard", "frontier"]
    for tier in tiers.values():
        for size, horizon in tier.grid:
            assert M.size_range[0] <= size <= M.size_range[1]
            assert M.horizon_range[0] <= horizon <= M.horizon_range[1]
    admitted = sum(admit(_measured_spec(i, 21, 6)).admitted for i in range(5))
    assert admitted >= 4
    frontier = _measured_spec(0, *tiers["frontier"].grid[0], tier="frontier")
    assert frontier.difficulty.facts_fit < 1.0
