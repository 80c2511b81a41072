"""weitzman_search: Weitzman's policy against an exact DP over (opened set, best prize so far), reservation
values against bisection, the hindsight ceiling against every opening sequence on every draw, data form,
refusals, policies, rendering."""

from __future__ import annotations

import copy
import itertools
import json
from functools import cache

import numpy as np
import pytest

import mechanisms
from envs.difficulty import informed_actions
from mechanisms.base import ActionError
from mechanisms.weitzman_search import (
    WeitzmanParams,
    opening_order,
    reservation_value,
    reservation_values,
    weitzman_expected_value,
    weitzman_policy,
)
from schemas.envspec import Action
from setter.corpus import VOCAB_KEYS
from setter.spec import turn_budget

M = mechanisms.get("weitzman_search")
VOCAB = {k: k for k in VOCAB_KEYS}


def _sample(i: int, size: int | None = None, horizon: int | None = None) -> WeitzmanParams:
    return M.sample(np.random.default_rng([23, i]), size or M.default_size, horizon or M.default_horizon)


def _with_prizes(p: WeitzmanParams, prizes) -> WeitzmanParams:
    return M.params_from_data({**p.model_dump(), "prizes": [float(x) for x in prizes]})


def _draws(p: WeitzmanParams):
    """Every prize vector and its probability."""
    for combo in itertools.product(*(range(len(v)) for v in p.prize_values)):
        prizes = [p.prize_values[i][k] for i, k in enumerate(combo)]
        yield prizes, float(np.prod([p.prize_probabilities[i][k] for i, k in enumerate(combo)]))


def _dp_optimum(p: WeitzmanParams) -> float:
    """The best expected value over all online policies: exact DP over (opened set, best prize so far)."""
    n = p.boxes

    @cache
    def value(opened: int, best: float) -> float:
        options = [best]  # stop and keep the best prize found (0 if nothing was opened)
        for i in range(n):
            if not opened >> i & 1:
                options.append(-p.costs[i] + sum(q * value(opened | 1 << i, max(best, x))
                                                 for x, q in zip(p.prize_values[i], p.prize_probabilities[i],
                                                                 strict=True)))
        return max(options)

    return value(0, 0.0)


def _expected_online(p: WeitzmanParams) -> float:
    """The recorded online policy played through the dynamics on every prize vector, weighted."""
    total = 0.0
    for prizes, prob in _draws(p):
        q = _with_prizes(p, prizes)
        total += prob * M.run(q, M.baseline_actions(q)["online_optimal"])
    return total


def _bisect_reservation(values, probs, cost) -> float:
    def f(sigma):
        return sum(q * max(x - sigma, 0.0) for x, q in zip(values, probs, strict=True))

    low, high = min(values) - cost - 1.0, max(values)
    for _ in range(200):
        mid = (low + high) / 2
        low, high = (mid, high) if f(mid) > cost else (low, mid)
    return (low + high) / 2


TINY = [(2, 2), (3, 2), (3, 3), (4, 2), (4, 3), (5, 2)]


@pytest.mark.parametrize("knobs", TINY)
@pytest.mark.parametrize("i", range(5))
def test_weitzman_policy_equals_the_exact_dp_optimum(knobs, i):
    p = M.sample(np.random.default_rng([24, *knobs, i]), *knobs)
    optimum = _dp_optimum(p)
    assert weitzman_expected_value(p) == pytest.approx(optimum, abs=1e-9)
    assert _expected_online(p) == pytest.approx(optimum, abs=1e-9)
    assert M.solve(p).facts["online_expected_value"] == pytest.approx(optimum, abs=1e-9)


@pytest.mark.parametrize("data", [
    # a free box, a box not worth opening (negative reservation value), a certain prize
    {"costs": [0, 30, 4], "prize_values": [[5, 9], [0, 40], [12]], "prize_probabilities": [[0.5, 0.5], [0.5, 0.5], [1]],
     "prizes": [5, 40, 12]},
    # equal reservation values (ties broken by the lower number)
    {"costs": [10, 10], "prize_values": [[0, 100], [0, 100]], "prize_probabilities": [[0.5, 0.5], [0.5, 0.5]],
     "prizes": [0, 100]},
    # a risky box with the lower mean but the higher reservation value
    {"costs": [2, 2, 6], "prize_values": [[0, 90], [40, 50], [10, 20, 30]],
     "prize_probabilities": [[0.85, 0.15], [0.5, 0.5], [0.2, 0.3, 0.5]], "prizes": [90, 40, 30]},
])
def test_weitzman_policy_equals_the_dp_on_edge_cases(data):
    p = M.params_from_data(data)
    assert weitzman_expected_value(p) == pytest.approx(_dp_optimum(p), abs=1e-9)
    assert _expected_online(p) == pytest.approx(_dp_optimum(p), abs=1e-9)


def test_reservation_values_solve_the_indifference_equation():
    assert reservation_value([0, 100], [0.5, 0.5], 10) == 80.0
    assert reservation_value([10, 20, 30], [0.2, 0.3, 0.5], 20) == pytest.approx(3.0, abs=1e-12)
    assert reservation_value([10, 20, 30], [0.2, 0.3, 0.5], 0) == 30.0
    assert reservation_value([7], [1.0], 3) == 4.0
    for i in range(40):
        p = _sample(400 + i, int(2 + i % 8), int(2 + i % 5))
        for j in range(p.boxes):
            values, probs, cost = p.prize_values[j], p.prize_probabilities[j], p.costs[j]
            sigma = reservation_value(values, probs, cost)
            assert sum(q * max(x - sigma, 0) for x, q in zip(values, probs, strict=True)) == pytest.approx(cost)
            assert sigma == pytest.approx(_bisect_reservation(values, probs, cost), abs=1e-7)
    assert opening_order([3.0, 5.0, 3.0, -1.0]) == [2, 1, 3, 4]


@pytest.mark.parametrize("knobs", [(2, 2), (3, 2), (3, 3), (4, 2)])
@pytest.mark.parametrize("i", range(3))
def test_the_hindsight_ceiling_bounds_every_opening_sequence_on_every_draw(knobs, i):
    p = M.sample(np.random.default_rng([25, *knobs, i]), *knobs)
    sequences = [seq for r in range(p.boxes + 1) for seq in itertools.permutations(range(1, p.boxes + 1), r)]
    for prizes, _ in _draws(p):
        q = _with_prizes(p, prizes)
        u_star = M.solve(q).u_star
        payoffs = [M.run(q, [*(Action(op="open_box", args={"box": b}) for b in seq), Action(op="claim_best")])
                   for seq in sequences]
        assert max(payoffs) == pytest.approx(u_star, abs=1e-9)  # some policy reaches it on this draw
        assert all(u <= u_star + 1e-9 for u in payoffs)
        assert M.run(q, M.solve(q).optimal_actions) == u_star


def test_solver_facts_and_baseline():
    for i in range(10):
        p = _sample(i)
        o = M.outcome(p)
        facts = o.solution.facts
        sigmas = reservation_values(p)
        assert facts["reservation_values"] == sigmas and facts["opening_order"] == opening_order(sigmas)
        assert facts["online_utility"] == o.baselines["online_optimal"] <= o.solution.u_star
        assert facts["online_opened"] == [a.args["box"] for a in weitzman_policy(p) if a.op == "open_box"]
        json.dumps(facts)
        box = facts["hindsight_box"]
        assert o.solution.u_star == (p.prizes[box - 1] - p.costs[box - 1] if box else 0.0)
        assert o.u_idle == 0.0


def test_weitzman_policy_stops_once_the_best_prize_reaches_the_next_reservation_value():
    p = M.params_from_data({"costs": [2, 2, 6], "prize_values": [[0, 90], [40, 50], [10, 20, 30]],
                            "prize_probabilities": [[0.85, 0.15], [0.5, 0.5], [0.2, 0.3, 0.5]],
                            "prizes": [0, 50, 30]})
    sigmas = reservation_values(p)
    assert sigmas == pytest.approx([90 - 2 / 0.15, 46.0, 18.75])
    assert opening_order(sigmas) == [1, 2, 3]
    assert weitzman_policy(p) == [Action(op="open_box", args={"box": 1}), Action(op="open_box", args={"box": 2}),
                                  Action(op="claim_best")]
    assert M.run(p, weitzman_policy(p)) == 46.0 and M.solve(p).u_star == 48.0
    lucky = _with_prizes(p, [90, 50, 30])
    assert weitzman_policy(lucky) == [Action(op="open_box", args={"box": 1}), Action(op="claim_best")]
    nothing = M.params_from_data({"costs": [50], "prize_values": [[0, 40]], "prize_probabilities": [[0.5, 0.5]],
                                  "prizes": [40]})
    assert weitzman_policy(nothing) == [Action(op="claim_best")] and M.run(nothing, weitzman_policy(nothing)) == 0.0
    assert M.solve(nothing).u_star == 0.0 and M.solve(nothing).optimal_actions == [Action(op="finish")]


def test_same_seed_and_data_round_trip():
    for i in range(5):
        assert _sample(i) == _sample(i)
        assert M.params_from_data(_sample(i).model_dump()) == _sample(i)
        assert M.params_from_data(json.loads(json.dumps(_sample(i).model_dump()))) == _sample(i)
    assert _sample(0) != _sample(1)
    p = M.params_from_data({"costs": [1, 2], "prize_values": [[0, 10], [4]], "prize_probabilities": [[0.5, 0.5], [1]],
                            "prizes": [10, 4]})
    assert p.posted_prizes == [5.0, 4.0]


CORNERS = [(M.size_range[0], M.horizon_range[0]), (M.size_range[1], M.horizon_range[1])]


@pytest.mark.parametrize("knobs", [*M.difficulty_grid, *CORNERS])
def test_sampling_is_valid_across_the_knobs(knobs):
    size, horizon = knobs
    for i in range(5):
        p = _sample(60 + i, size, horizon)
        assert p.boxes == size and all(len(v) == horizon for v in p.prize_values)
        assert min(p.costs) >= 1
        solution = M.solve(p)
        assert M.run(p, solution.optimal_actions) == solution.u_star


def test_contract_shape():
    p = _sample(0)
    ops = M.operations(p)
    assert len(ops) >= 10 and {op.kind for op in ops} == {"probe", "info", "decision", "clock"}
    assert [op.name for op in ops if op.decoy] == ["read_posted_prize"]
    assert "finish" in {op.name for op in ops} and len({op.name for op in ops}) == len(ops)
    for op in ops:
        for name, arg in op.args.items():
            if name == "thresholds":
                assert arg.type == "array" and arg.items == "number" and arg.max_items == p.boxes
                continue
            assert arg.type in ("integer", "array") and arg.minimum == 1 and arg.maximum == p.boxes
    assert [op.name for op in ops if op.kind == "decision"] == ["open_box", "open_boxes", "open_until"]
    assert M.group == "far_ood_structure" and M.version == 1
    assert all(M.size_range[0] <= s <= M.size_range[1] and M.horizon_range[0] <= h <= M.horizon_range[1]
               for s, h in M.difficulty_grid)
    assert 3 <= len(M.difficulty_grid) <= 6
    assert M.probe_allowance(p) == p.boxes + 2 == len(M.probe_order(p))
    json.dumps(M.initial_state(p))


def test_describe_states_the_whole_instance_with_the_draws_as_an_appraisal_would():
    p = M.params_from_data({"costs": [3, 11], "prize_values": [[17, 61], [23, 47, 89]],
                            "prize_probabilities": [[0.35, 0.65], [0.5, 0.3, 0.2]], "prizes": [61, 89],
                            "posted_prizes": [55, 70]})
    text = M.describe(p, VOCAB)
    for number in ("2 options", "1: 3; 2: 11", "17 (0.35), 61 (0.65)", "23 (0.5), 47 (0.3), 89 (0.2)",
                   "1: 55; 2: 70", "if investigated, in currency: 1: 61; 2: 89"):
        assert number in text
    assert "an appraisal tells what value one option would turn out to have" in text
    assert set(M.secret_numbers(p)) >= {3, 11, 17, 61, 23, 47, 89, 0.35}
    assert M.public_numbers(p) == [2, 0, 1, 2]
    facts = {f.key: f for f in M.facts(p, VOCAB)}
    assert {"objective", "end", "budget_end"} <= facts.keys()
    assert facts["fees"].probe == "probe_all_costs" and facts["distributions"].probe == "probe_all_distributions"
    assert facts["draws"].probe == "probe_draw" and facts["draws"].numbers == (61, 89)
    assert facts["posted"].probe == "read_posted_prize"


def test_probes_and_views_never_show_an_unopened_prize_except_an_appraisal():
    p = M.params_from_data({"costs": [3, 11], "prize_values": [[17, 61], [23, 47, 89]],
                            "prize_probabilities": [[0.35, 0.65], [0.5, 0.3, 0.2]], "prizes": [61, 47],
                            "posted_prizes": [55, 70]})
    state = M.initial_state(p)
    replies = [M.apply(p, state, Action(op=op.name, args={"box": 1} if op.args else {}))
               for op in M.operations(p) if op.kind in ("probe", "info")
               and op.name not in ("probe_prize_distribution", "probe_all_distributions", "probe_draw")]
    replies += [M.apply(p, state, Action(op="inspect_box", args={"box": 2}))]
    assert all("61" not in json.dumps(r) and "47" not in json.dumps(r) for r in replies)
    assert M.apply(p, state, Action(op="probe_draw", args={"box": 2})) == {"box": 2, "value if investigated": 47}
    reply = M.apply(p, state, Action(op="open_box", args={"box": 2}))
    assert reply["prize"] == 47 and reply["best prize"] == 47 and reply["fees paid"] == 11
    assert M.apply(p, state, Action(op="inspect_box", args={"box": 2})) == {"box": 2, "open": True, "prize": 47.0}
    assert M.apply(p, state, Action(op="list_boxes"))["closed"] == [1]
    M.apply(p, state, Action(op="open_box", args={"box": 1}))
    assert M.utility(p, state) == 61 - 14
    M.apply(p, state, Action(op="claim_best"))
    assert M.finished(state) and state["claimed"]


def test_default_trusts_the_sticker_and_opens_every_box_with_a_positive_posted_margin():
    p = M.params_from_data({"costs": [5, 5, 5, 30], "prize_values": [[0, 40], [10, 30], [20, 25], [0, 100]],
                            "prize_probabilities": [[0.5, 0.5]] * 4, "prizes": [40, 10, 25, 100],
                            "posted_prizes": [20, 50, 4, 60]})
    actions = M.default_actions(p)
    assert actions == [Action(op="open_boxes", args={"boxes": [2, 4, 1]}),  # margins 45, 30, 15; box 3 is -1
                       Action(op="claim_best")]
    assert M.run(p, actions) == 100 - 40 and M.solve(p).u_star == 70.0
    assert not any(M.operation(p, a.op).kind == "probe" for a in actions)


def test_invalid_actions_raise_and_leave_the_state_unchanged():
    p = _sample(2)
    fresh, opened, done = M.initial_state(p), M.initial_state(p), M.initial_state(p)
    M.apply(p, opened, Action(op="open_box", args={"box": 1}))
    M.apply(p, done, Action(op="open_box", args={"box": 2}))
    M.apply(p, done, Action(op="claim_best"))
    bad = [Action(op="no_such_op"), Action(op="open_box"), Action(op="open_box", args={"box": 0}),
           Action(op="open_box", args={"box": p.boxes + 1}), Action(op="open_box", args={"box": "1"}),
           Action(op="open_box", args={"box": 1.5}), Action(op="open_box", args={"box": True}),
           Action(op="probe_cost", args={"box": None}), Action(op="probe_cost", args={"box": float("nan")}),
           Action(op="inspect_box", args={"box": float("inf")}), Action(op="read_posted_prize", args={"box": -3})]
    for state in (fresh, opened, done):
        extra = {id(opened): [Action(op="open_box", args={"box": 1})],
                 id(done): [Action(op="open_box", args={"box": 3}), Action(op="claim_best"), Action(op="finish")]}
        for action in [*bad, *extra.get(id(state), [])]:
            before = copy.deepcopy(state)
            with pytest.raises(ActionError):
                M.apply(p, state, action)
            assert state == before


@pytest.mark.parametrize("data, message", [
    ({"costs": [1, 2], "prize_values": [[1, 2]], "prize_probabilities": [[0.5, 0.5]], "prizes": [1]},
     "prize_values must have one entry per box"),
    ({"costs": [1], "prize_values": [[1, 2]], "prize_probabilities": [[0.5, 0.5]], "prizes": [1, 2]},
     "prizes must have one entry per box"),
    ({"costs": [-1], "prize_values": [[1, 2]], "prize_probabilities": [[0.5, 0.5]], "prizes": [1]},
     "costs must be non-negative"),
    ({"costs": [1], "prize_values": [[2, 1]], "prize_probabilities": [[0.5, 0.5]], "prizes": [1]},
     "box 1 must be strictly increasing"),
    ({"costs": [1], "prize_values": [[-1, 2]], "prize_probabilities": [[0.5, 0.5]], "prizes": [2]},
     "box 1 must be non-negative"),
    ({"costs": [1], "prize_values": [[1, 2]], "prize_probabilities": [[0.5, 0.4]], "prizes": [1]}, "sum to 1"),
    ({"costs": [1], "prize_values": [[1, 2]], "prize_probabilities": [[1.0, 0.0]], "prizes": [1]}, "positive"),
    ({"costs": [1], "prize_values": [[1, 2]], "prize_probabilities": [[1.0]], "prizes": [1]},
     "one entry per prize value"),
    ({"costs": [1], "prize_values": [[1, 2]], "prize_probabilities": [[0.5, 0.5]], "prizes": [3]},
     "prize of box 1"),
    ({"costs": [1], "prize_values": [[]], "prize_probabilities": [[]], "prizes": [1]}, "1 to 10 values"),
    ({"costs": [1], "prize_values": [[1, 2]], "prize_probabilities": [[0.5, 0.5]], "prizes": [1],
      "posted_prizes": [float("nan")]}, "finite"),
    ({"costs": [], "prize_values": [], "prize_probabilities": [], "prizes": []}, "costs"),
    ({"costs": [1] * 25, "prize_values": [[1]] * 25, "prize_probabilities": [[1]] * 25, "prizes": [1] * 25},
     "costs"),
    ({"costs": [1], "prize_values": [[1, 2]], "prize_probabilities": [[0.5, 0.5]], "prizes": [1], "colour": 1},
     "colour"),
    ({"costs": [1], "prize_values": "x", "prize_probabilities": [[0.5, 0.5]], "prizes": [1]}, "prize_values"),
])
def test_params_from_data_rejects_bad_data(data, message):
    with pytest.raises(ValueError, match=message):
        M.params_from_data(data)


# --- bulk opening, belief, the informed agent, heuristics, admission --------------------------


def _hand_made(**changes) -> WeitzmanParams:
    data = {"costs": [2, 2, 6], "prize_values": [[0, 90], [40, 50], [10, 20, 30]],
            "prize_probabilities": [[0.85, 0.15], [0.5, 0.5], [0.2, 0.3, 0.5]], "prizes": [0, 50, 30]}
    data.update(changes)
    return M.params_from_data(data)


def test_open_boxes_and_open_until_open_in_order_and_refuse_as_a_whole():
    p = _hand_made()
    state = M.initial_state(p)
    reply = M.apply(p, state, Action(op="open_boxes", args={"boxes": [3, 1]}))
    assert state["opened"] == [3, 1] and reply["best prize"] == 30 and reply["fees paid"] == 8
    before = copy.deepcopy(state)
    for bad in ([1], [2, 2], [], [4], "2"):
        with pytest.raises(ActionError):
            M.apply(p, state, Action(op="open_boxes", args={"boxes": bad}))
        assert state == before
    # open_until is Weitzman's policy in one call: it stops before box 3 once the best prize (50) reaches 18.75
    sigmas = reservation_values(p)
    state = M.initial_state(p)
    M.apply(p, state, Action(op="open_until", args={"boxes": [1, 2, 3], "thresholds": sigmas}))
    assert state["opened"] == [1, 2]
    assert M.utility(p, state) == M.run(p, weitzman_policy(p))
    for bad in ([1.0], [1.0, "x", 2.0], None, [1.0, float("nan"), 2.0]):
        with pytest.raises(ActionError, match="thresholds"):
            M.apply(p, M.initial_state(p), Action(op="open_until", args={"boxes": [1, 2, 3], "thresholds": bad}))
    done = M.initial_state(p)
    M.apply(p, done, Action(op="claim_best"))
    with pytest.raises(ActionError, match="over"):
        M.apply(p, done, Action(op="open_boxes", args={"boxes": [1]}))


def test_a_belief_knows_no_draw_and_solves_to_weitzman_in_one_call():
    p = _sample(11, 6, 3)
    distributions = [Action(op="probe_all_costs"), Action(op="probe_all_distributions")]
    belief = M.believed(p, distributions)
    assert belief.prizes is None and belief.costs == p.costs and belief.prize_values == p.prize_values
    solution = M.solve(belief)
    assert solution.u_star == pytest.approx(weitzman_expected_value(p))
    assert [a.op for a in solution.optimal_actions] in (["open_until", "claim_best"], ["finish"])
    # played on the truth, the belief's plan is exactly Weitzman's online policy
    assert M.run(p, solution.optimal_actions) == M.run(p, weitzman_policy(p))
    # with no probe the belief uses no hidden value: the draws, fees and distributions may change freely
    changed = M.params_from_data({**p.model_dump(), "costs": [c + 1 for c in p.costs],
                                  "prizes": [row[0] + 1 for row in p.prize_values],
                                  "prize_values": [[x + 1 for x in row] for row in p.prize_values]})
    assert M.believed(p, []) == M.believed(changed, [])
    assert M.believed(p, []).prize_values == [[x] for x in p.posted_prizes]
    # with every probe (appraisals too) the belief is certain of every draw and solves to u*
    everything = M.believed(p, M.probe_order(p))
    assert everything.prize_values == [[x] for x in p.prizes] and everything.prizes is None
    assert M.run(p, M.solve(everything).optimal_actions) == M.solve(p).u_star
    assert M.solve(everything).u_star == pytest.approx(M.solve(p).u_star)


@pytest.mark.parametrize("knobs", [(3, 3), (6, 3), (10, 6), (12, 9)])
def test_the_informed_agent_reaches_u_star_when_every_probe_fits(knobs):
    """u* is the hindsight ceiling; the appraisals make it reachable: with every probe the informed agent knows
    every draw and opens exactly the best box."""
    for i in range(4):
        p = _sample(900 + i, *knobs)
        outcome = M.outcome(p)
        budget = turn_budget(M, p, outcome, 1.0)
        actions = informed_actions(M, p, budget)
        assert len(actions) <= budget and actions[:len(M.probe_order(p))] == M.probe_order(p)
        u, turns, errors = M.play(p, actions, budget)
        assert errors == 0 and u == pytest.approx(outcome.solution.u_star, abs=1e-9)


def test_without_appraisals_the_informed_agent_plays_weitzmans_online_policy():
    """Knowing the fees and distributions only, the belief's plan is Weitzman's online-optimal policy (the best
    any agent that has not seen the draws can do in expectation)."""
    for i in range(6):
        p = _sample(920 + i, 8, 4)
        plan = M.solve(M.believed(p, M.probe_order(p)[:2])).optimal_actions
        assert M.run(p, plan) == M.outcome(p).baselines["online_optimal"] <= M.solve(p).u_star


def test_heuristics_play_within_the_idle_and_optimal_utilities():
    for i in range(8):
        p = _sample(950 + i, [3, 6, 10, 14][i % 4], 4)
        outcome = M.outcome(p)
        budget = turn_budget(M, p, outcome, 1.0)
        heuristics = M.heuristic_actions(p)
        assert set(heuristics) == {"best_posted", "posted_pair"}
        for name, actions in heuristics.items():
            u, turns, errors = M.play(p, actions, budget)
            assert errors == 0
            assert min(outcome.u_idle, outcome.u0) - 1e-9 <= u <= outcome.solution.u_star + 1e-9, name
