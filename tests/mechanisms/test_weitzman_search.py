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
from mechanisms.base import ActionError
from mechanisms.canonical import canonical_data
from mechanisms.players import Seat, informed, naive_prober, run_policy
from mechanisms.weitzman_search import (
    WeitzmanParams,
    opening_order,
    reservation_value,
    reservation_values,
    weitzman_expected_value,
    weitzman_plan,
    weitzman_policy,
)
from schemas.envspec import Action
from setter.corpus import BUNDLE_KEYS, VOCAB_KEYS
from setter.phrasebook import vocabulary
from setter.spec import turn_budget

M = mechanisms.get("weitzman_search")
VOCAB = vocabulary({k: k for k in (*VOCAB_KEYS, *BUNDLE_KEYS)})


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
        # the facts as the spec records them: canonical (mechanisms.canonical)
        assert facts["reservation_values"] == canonical_data(sigmas) and facts["opening_order"] == opening_order(sigmas)
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


def test_a_redraw_draws_every_prize_anew_from_its_box_and_keeps_the_rest():
    """envs.difficulty scores the family in expectation over redrawn prizes: a redraw changes only the prizes, draws
    each from its box's distribution (Weitzman's policy's mean over redraws is its exact expected value), and the same
    generator state gives the same redraw."""
    p = _sample(3, 8, 4)
    q = M.redraw(p, np.random.default_rng(5))
    assert q.model_dump(exclude={"prizes"}) == p.model_dump(exclude={"prizes"}) and q.prizes != p.prizes
    assert all(x in values for x, values in zip(q.prizes, p.prize_values, strict=True))
    assert M.redraw(p, np.random.default_rng(5)) == q and M.params_from_data(q.model_dump()) == q
    rng = np.random.default_rng(6)
    paths = [M.redraw(p, rng) for _ in range(3000)]
    for box in range(p.boxes):
        drawn = np.array([path.prizes[box] for path in paths])
        for value, probability in zip(p.prize_values[box], p.prize_probabilities[box], strict=True):
            assert np.mean(drawn == value) == pytest.approx(probability, abs=0.03)
    online = np.array([M.run(path, weitzman_policy(path)) for path in paths])
    expected = weitzman_expected_value(p)
    assert abs(online.mean() - expected) <= 4 * online.std() / np.sqrt(len(online))


def test_the_posted_prizes_default_to_the_expected_prizes():
    """Without posted figures in the data, the family posts its own (determinism and data round trips: conformance)."""
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
    assert [op.name for op in ops if op.decoy] == ["read_posted_prizes"]
    assert not M.operation(p, "read_posted_prizes").args  # one sheet shows every posted figure
    assert "finish" in {op.name for op in ops} and len({op.name for op in ops}) == len(ops)
    for op in ops:
        for name, arg in op.args.items():
            if name == "thresholds":
                assert arg.type == "array" and arg.items == "number" and arg.max_items == p.boxes
                continue
            assert arg.type in ("integer", "array") and arg.minimum == 1 and arg.maximum == p.boxes
    # opening is the clock step that realises a prize; keeping the best is the decision (it reveals nothing new)
    assert [op.name for op in ops if op.kind == "decision"] == ["claim_best"]
    assert [op.name for op in ops if op.kind == "clock"] == ["open_box", "open_boxes", "open_until", "finish"]
    assert [op.name for op in ops if op.kind == "probe"] == ["probe_all_costs", "probe_prize_distribution"]
    assert M.group == "far_ood_structure" and M.version == 4
    assert all(M.size_range[0] <= s <= M.size_range[1] and M.horizon_range[0] <= h <= M.horizon_range[1]
               for s, h in M.difficulty_grid)
    assert 3 <= len(M.difficulty_grid) <= 6
    known = M.knowledge(p)
    assert M.probe_allowance(p) == p.boxes + 1 == len(M.probe_order(known)) == len(M.listing_order(known))
    json.dumps(M.initial_state(p))


def test_describe_states_the_whole_instance_with_the_draws():
    p = M.params_from_data({"costs": [3, 11], "prize_values": [[17, 61], [23, 47, 89]],
                            "prize_probabilities": [[0.35, 0.65], [0.5, 0.3, 0.2]], "prizes": [61, 89],
                            "posted_prizes": [55, 70]})
    text = M.describe(p, VOCAB)
    for number in ("2 options", "1: 3; 2: 11", "17 (0.35), 61 (0.65)", "23 (0.5), 47 (0.3), 89 (0.2)",
                   "1: 55; 2: 70", "when investigated, in currency: 1: 61; 2: 89"):
        assert number in text
    assert "appraisal" not in text and "no value is seen before its investigation" in text
    assert set(M.secret_numbers(p)) >= {3, 11, 17, 61, 23, 47, 89, 0.35}
    assert M.public_numbers(p) == [2, 0, 1, 2]
    facts = {f.key: f for f in M.facts(p, VOCAB)}
    assert {"objective", "end", "budget_end"} <= facts.keys()
    assert facts["fees"].probe == "probe_all_costs" and facts["distributions"].probe == "probe_prize_distribution"
    # the draws are revealed when their time comes: by opening, never by a probe
    assert facts["draws"].draw and facts["draws"].probe == "open_box" and facts["draws"].numbers == (61, 89)
    assert not any(f.draw for key, f in facts.items() if key != "draws")
    assert facts["posted"].probe == "read_posted_prizes"


def _redrawn(p: WeitzmanParams, seed: int) -> WeitzmanParams:
    """The same instance with every prize drawn anew from its box's distribution."""
    rng = np.random.default_rng(seed)
    return _with_prizes(p, [float(rng.choice(v, p=np.asarray(q))) for v, q in
                            zip(p.prize_values, p.prize_probabilities, strict=True)])


def _fresh_observations(p: WeitzmanParams) -> dict[str, list]:
    from envs.completeness import operation_observations

    return operation_observations(M, p, [op for op in M.operations(p) if op.kind in ("probe", "info")])


@pytest.mark.parametrize("knobs", [(3, 3), (6, 3), (12, 9)])
def test_no_tool_reveals_a_prize_before_its_box_is_opened(knobs):
    """Issue 26: uncertainty stays uncertain. Every probe and info call on a fresh state (every box for a per-box
    call) shows the same thing whatever the prizes drawn, so none tells a future draw."""
    for i in range(4):
        p = _sample(700 + i, *knobs)
        seen = _fresh_observations(p)
        assert set(seen) == {"probe_all_costs", "probe_prize_distribution", "read_posted_prizes", "list_boxes",
                             "view_opened", "inspect_box"}
        assert len(seen["probe_prize_distribution"]) == len(seen["inspect_box"]) == p.boxes
        for seed in range(6):
            assert _fresh_observations(_redrawn(p, seed)) == seen
        assert len({tuple(_redrawn(p, seed).prizes) for seed in range(6)}) > 1
    assert not any(op.name in ("probe_draw", "appraise") for op in M.operations(p))


def test_a_prize_is_seen_once_its_box_is_opened():
    p = M.params_from_data({"costs": [3, 11], "prize_values": [[17, 61], [23, 47, 89]],
                            "prize_probabilities": [[0.35, 0.65], [0.5, 0.3, 0.2]], "prizes": [61, 47],
                            "posted_prizes": [55, 70]})
    state = M.initial_state(p)
    replies = [M.apply(p, state, Action(op=op.name, args={"box": 1} if op.args else {}))
               for op in M.operations(p) if op.kind in ("probe", "info") and op.name != "probe_prize_distribution"]
    replies += [M.apply(p, state, Action(op="inspect_box", args={"box": 2}))]
    assert all("61" not in json.dumps(r) and "47" not in json.dumps(r) for r in replies)
    reply = M.apply(p, state, Action(op="open_box", args={"box": 2}))
    assert reply["prize"] == 47 and reply["best prize"] == 47 and reply["fees paid"] == 11
    assert M.apply(p, state, Action(op="inspect_box", args={"box": 2})) == {"box": 2, "open": True, "prize": 47.0}
    assert M.apply(p, state, Action(op="list_boxes"))["closed"] == [1]
    M.apply(p, state, Action(op="open_box", args={"box": 1}))
    assert M.utility(p, state) == 61 - 14
    # keeping the best states what was kept; the result comes with the ending (the environment appends the ledger)
    assert M.apply(p, state, Action(op="claim_best")) == {"kept": 1, "finished": True}
    assert M.finished(state) and state["claimed"]
    assert M.ledger(p, state) == {"opened": [{"box": 2, "prize": 47.0}, {"box": 1, "prize": 61.0}],
                                  "best prize": 61.0, "fees paid": 14.0, "net value": 47.0}


def test_default_trusts_the_sheet_and_opens_the_top_half_by_posted_prize():
    p = M.params_from_data({"costs": [5, 5, 5, 30], "prize_values": [[0, 40], [10, 30], [20, 25], [0, 100]],
                            "prize_probabilities": [[0.5, 0.5]] * 4, "prizes": [40, 10, 25, 100],
                            "posted_prizes": [20, 50, 4, 60]})
    actions = M.default_actions(p)
    assert actions == [Action(op="read_posted_prizes"), Action(op="open_boxes", args={"boxes": [4, 2]}),
                       Action(op="claim_best")]
    assert M.run(p, actions) == 100 - 35 and M.solve(p).u_star == 70.0
    assert not any(M.operation(p, a.op).kind == "probe" for a in actions)
    # two boxes: both are opened (at least two), whatever the sheet says
    two = M.params_from_data({"costs": [1, 2], "prize_values": [[0, 10], [4]], "prize_probabilities": [[0.5, 0.5], [1]],
                              "prizes": [10, 4], "posted_prizes": [1, 9]})
    assert M.default_actions(two)[1] == Action(op="open_boxes", args={"boxes": [2, 1]})


def test_invalid_actions_raise_and_leave_the_state_unchanged():
    p = _sample(2)
    fresh, opened, done = M.initial_state(p), M.initial_state(p), M.initial_state(p)
    M.apply(p, opened, Action(op="open_box", args={"box": 1}))
    M.apply(p, done, Action(op="open_box", args={"box": 2}))
    M.apply(p, done, Action(op="claim_best"))
    bad = [Action(op="no_such_op"), Action(op="open_box"), Action(op="open_box", args={"box": 0}),
           Action(op="open_box", args={"box": p.boxes + 1}), Action(op="open_box", args={"box": "1"}),
           Action(op="open_box", args={"box": 1.5}), Action(op="open_box", args={"box": True}),
           Action(op="probe_prize_distribution", args={"box": None}),
           Action(op="probe_prize_distribution", args={"box": float("nan")}),
           Action(op="inspect_box", args={"box": float("inf")}), Action(op="inspect_box", args={"box": -3})]
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


def _verified(p: WeitzmanParams, boxes=None) -> Seat:
    """A seat that read the sheet, verified every fee and the distributions of `boxes` (default: every box)."""
    seat = Seat(M, p)
    seat.call("read_posted_prizes")
    seat.call("probe_all_costs")
    for j in range(1, p.boxes + 1) if boxes is None else boxes:
        seat.call("probe_prize_distribution", box=j)
    return seat


def test_a_belief_knows_no_draw_and_plans_weitzman_in_one_call():
    p = _sample(11, 6, 3)
    belief = M.believed(_verified(p).known)
    assert belief.prizes is None and belief.costs == p.costs and belief.prize_values == p.prize_values
    assert belief.prize_probabilities == p.prize_probabilities and belief.posted_prizes == p.posted_prizes
    plan = weitzman_plan(belief)
    assert [a.op for a in plan] in (["open_until", "claim_best"], ["finish"])
    assert M.planned_calls(_verified(p).known, belief) == plan
    # played on the truth, the belief's plan is exactly Weitzman's online policy
    assert M.run(p, plan) == M.run(p, weitzman_policy(p))
    with pytest.raises(ValueError, match="belief"):
        M.solve(belief)
    # with only the sheet read the belief uses no hidden value: the draws, fees and distributions may change freely
    changed = M.params_from_data({**p.model_dump(), "costs": [c + 1 for c in p.costs],
                                  "prizes": [row[0] + 1 for row in p.prize_values],
                                  "prize_values": [[x + 1 for x in row] for row in p.prize_values]})
    beliefs = []
    for q in (p, changed):
        seat = Seat(M, q)
        seat.call("read_posted_prizes")
        beliefs.append(M.believed(seat.known))
    assert beliefs[0] == beliefs[1]
    assert beliefs[0].prize_values == [[x] for x in p.posted_prizes] and beliefs[0].costs == [0.0] * p.boxes
    # a box whose distribution was verified is believed as it is, the others as a point mass at the posted prize
    some = M.believed(_verified(p, [2]).known)
    assert some.prize_values[1] == p.prize_values[1] and some.prize_values[0] == [p.posted_prizes[0]]


@pytest.mark.parametrize("knobs", [(3, 3), (6, 3), (10, 6), (12, 9)])
def test_the_informed_agent_plays_weitzmans_online_policy_when_every_probe_fits(knobs):
    """u* is the hindsight ceiling; the reachable reference is Weitzman's online policy: with every fee and
    distribution the informed agent plays it (in one open_until call) and reaches the recorded baseline."""
    from envs.difficulty import reachable

    for i in range(4):
        p = _sample(900 + i, *knobs)
        outcome = M.outcome(p)
        budget = turn_budget(M, p, outcome, 1.0)
        calls, u = run_policy(M, p, informed(M), budget)
        assert len(calls) <= budget and calls[1:2 + p.boxes] == M.probe_order(_verified(p).known)
        assert u == pytest.approx(reachable(outcome), abs=1e-9)
        assert reachable(outcome) == outcome.baselines["online_optimal"] <= outcome.solution.u_star + 1e-9
        assert M.play(p, calls, budget) == (u, len(calls), 0)


def test_the_informed_agent_verifies_the_highest_posted_boxes_when_the_turns_are_short():
    p = _sample(930, 12, 9)
    tier = M.tiers()["frontier"]
    budget = turn_budget(M, p, M.outcome(p), tier.probe_share)
    calls, _ = run_policy(M, p, informed(M), budget)
    verified = [a.args["box"] for a in calls if a.op == "probe_prize_distribution"]
    # by posted prize net of fee (the fees are verified first)
    ranked = sorted(range(1, p.boxes + 1), key=lambda j: (-(p.posted_prizes[j - 1] - p.costs[j - 1]), j))
    assert calls[:2] == [Action(op="read_posted_prizes"), Action(op="probe_all_costs")]
    assert 0 < len(verified) < p.boxes and verified == ranked[:len(verified)]
    naive = [a.args["box"] for a in run_policy(M, p, naive_prober(M), budget)[0]
             if a.op == "probe_prize_distribution"]
    assert naive == list(range(1, len(verified) + 1))


def test_heuristics_play_within_the_idle_and_optimal_utilities():
    for i in range(8):
        p = _sample(950 + i, [3, 6, 10, 14][i % 4], 4)
        outcome = M.outcome(p)
        budget = turn_budget(M, p, outcome, 1.0)
        heuristics = M.heuristic_policies()
        assert set(heuristics) == {"best_posted", "posted_pair"}
        for name, policy in heuristics.items():
            calls, u = run_policy(M, p, policy, budget)
            assert M.play(p, calls, budget) == (u, len(calls), 0), name
            # at most the two boxes with the highest posted margins are opened: at worst both fees are lost
            assert -sum(sorted(p.costs)[-2:]) - 1e-9 <= u <= outcome.solution.u_star + 1e-9, name


def test_every_ending_states_the_outcome():
    """Keeping the best, stopping at once and running out of turns all end with the ledger."""
    from envs.agents import tool_call
    from envs.environment import ENDING_KEY, Environment
    from tests.support import make_spec

    spec = make_spec("weitzman_search", 0)
    endings = {"keep": [Action(op="open_box", args={"box": 1}), Action(op="claim_best")],
               "stop": [Action(op="finish")], "turns": [Action(op="list_boxes")] * spec.turn_budget}
    for name, actions in endings.items():
        env = Environment(spec, "hidden")
        for action in actions:
            last = env.step(*tool_call(env, action))
        assert env.done, name
        outcome = last[ENDING_KEY]
        assert env.utility() in outcome.values(), (name, outcome)
        assert outcome["episode over"] == ("the turns ran out" if name == "turns" else "finished"), name
