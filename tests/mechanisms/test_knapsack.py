"""knapsack: determinism, exactness against brute force, replay, the default's band, refusals, fuzzing."""

from __future__ import annotations

import copy
import itertools
import json

import numpy as np
import pytest
from scipy.optimize import Bounds, LinearConstraint, milp

import mechanisms
from mechanisms.base import ActionError
from mechanisms.knapsack import KnapsackParams
from schemas.envspec import Action
from setter.corpus import BUNDLE_KEYS, VOCAB_KEYS
from setter.phrasebook import vocabulary

M = mechanisms.get("knapsack")
VOCAB = vocabulary({k: k for k in (*VOCAB_KEYS, *BUNDLE_KEYS)})


def _sample(i: int, size: int | None = None, horizon: int | None = None) -> KnapsackParams:
    return M.sample(np.random.default_rng([7, i]), size or M.default_size, horizon or M.default_horizon)


def _brute_force(p: KnapsackParams) -> float:
    values = np.asarray(p.values)
    weights = np.asarray(p.weights)
    best = 0.0
    for mask in itertools.product((0, 1), repeat=p.items):
        x = np.asarray(mask, dtype=float)
        if np.all(weights @ x <= np.asarray(p.capacities) + 1e-9):
            best = max(best, float(values @ x))
    return best


def test_same_seed_gives_the_same_params():
    for i in range(5):
        a, b = _sample(i), _sample(i)
        assert a == b and a.model_dump() == b.model_dump()
    assert _sample(0) != _sample(1)
    assert M.params_from_data(_sample(3).model_dump()) == _sample(3)


def test_contract_shape():
    p = _sample(0)
    ops = M.operations(p)
    kinds = {op.kind for op in ops}
    assert len(ops) >= 11 and kinds == {"probe", "info", "decision", "clock"}
    assert any(op.decoy for op in ops) and "finish" in {op.name for op in ops}
    assert len({op.name for op in ops}) == len(ops)
    for op in ops:
        for arg in op.args.values():
            assert arg.type == "integer" and arg.minimum == 1 and arg.maximum == p.items
    assert M.group == "near_ood" and M.version == 3
    assert M.size_range == (4, 20) and M.horizon_range == (1, 11)
    assert M.probe_allowance(p) == 2 * p.items + 1
    text = M.describe(p, VOCAB)
    assert f"{p.items} candidates" in text and all(f"{v:g}" in text for v in p.capacities)
    assert set(M.secret_numbers(p)) >= set(p.values)
    json.dumps(M.initial_state(p))


@pytest.mark.parametrize("i", range(30))
def test_solver_matches_brute_force(i):
    rng = np.random.default_rng([8, i])
    p = M.sample(rng, int(rng.integers(4, 11)), int(rng.integers(1, 5)))
    assert M.solve(p).u_star == pytest.approx(_brute_force(p), abs=1e-9)


@pytest.mark.parametrize("knobs", [(8, 2), (12, 4), (20, 11)])
def test_solver_matches_highs_milp(knobs):
    for i in range(4):
        p = _sample(200 + i, *knobs)
        result = milp(-np.asarray(p.values), integrality=np.ones(p.items), bounds=Bounds(0, 1),
                      constraints=LinearConstraint(np.asarray(p.weights), -np.inf, np.asarray(p.capacities)),
                      options={"mip_rel_gap": 0.0})
        assert result.status == 0
        assert M.solve(p).u_star == pytest.approx(-result.fun, abs=1e-6)


def test_solver_handles_data_where_nothing_fits():
    p = M.params_from_data({"values": [5, 7], "weights": [[3, 4]], "capacities": [2]})
    solution = M.solve(p)
    assert solution.u_star == 0.0 and solution.optimal_actions == [Action(op="submit")]


@pytest.mark.parametrize("knobs", [(8, 2), (4, 1), (6, 5), (11, 11), (20, 11), (20, 1)])
def test_replay_of_optimal_actions_gives_u_star(knobs):
    for i in range(5):
        p = _sample(100 + i, *knobs)
        solution = M.solve(p)
        assert M.run(p, solution.optimal_actions) == pytest.approx(solution.u_star, rel=1e-9)
        assert solution.optimal_actions[-1].op == "submit"


def test_default_is_below_optimum_and_inside_the_band():
    low, high = M.u0_band
    inside = 0
    for i in range(100):
        p = _sample(i)
        o = M.outcome(p)
        u_star = o.solution.u_star
        assert o.u_idle == 0.0 and u_star > o.u_idle
        assert all(a.op in ("read_ratings", "select_item", "submit") for a in o.default_actions)
        g = (o.u0 - o.u_idle) / (u_star - o.u_idle)
        inside += low <= g <= high and u_star - o.u0 > 1e-6 * max(1.0, abs(u_star))
    assert inside >= 90


def _selected_state(p: KnapsackParams) -> dict:
    state = M.initial_state(p)
    for action in M.solve(p).optimal_actions[:-1]:
        M.apply(p, state, action)
    return state


def test_invalid_actions_raise_and_leave_the_state_unchanged():
    p = _sample(2)
    full = _selected_state(p)
    chosen = full["selected"]
    outside = next(j for j in range(1, p.items + 1) if j not in chosen)  # does not fit next to the optimum
    bad = [Action(op="no_such_op"), Action(op="select_item"), Action(op="select_item", args={"item": 0}),
           Action(op="select_item", args={"item": p.items + 1}), Action(op="select_item", args={"item": "1"}),
           Action(op="select_item", args={"item": 1.5}), Action(op="select_item", args={"item": True}),
           Action(op="probe_value", args={"item": None}),
           Action(op="probe_value", args={"item": float("nan")}),
           Action(op="select_item", args={"item": float("inf")}), Action(op="probe_weights", args={"item": -3}),
           Action(op="select_item", args={"item": chosen[0]}), Action(op="drop_item", args={"item": outside})]
    for state in (M.initial_state(p), full):
        for action in bad:
            if action.op == "drop_item" and not state["selected"]:
                continue
            if action.op == "select_item" and action.args.get("item") == chosen[0] and not state["selected"]:
                continue  # selecting an optimal item into an empty selection is valid
            before = copy.deepcopy(state)
            with pytest.raises(ActionError):
                M.apply(p, state, action)
            assert state == before
    fits_none = [j for j in range(1, p.items + 1) if j not in chosen]
    for j in fits_none:
        before = copy.deepcopy(full)
        try:
            M.apply(p, full, Action(op="select_item", args={"item": j}))
        except ActionError as error:
            assert "limit" in str(error)
            assert full == before
        else:  # an optimum with room to spare: adding a zero-value item is still allowed
            M.apply(p, full, Action(op="drop_item", args={"item": j}))


@pytest.mark.parametrize("data, message", [
    ({"values": [1, 2], "weights": [[1, 2, 3]], "capacities": [4]}, "weights row 1"),
    ({"values": [1, 2], "weights": [[1, 2]], "capacities": [4, 5]}, "capacities"),
    ({"values": [1, 2], "weights": [[1, 2]], "capacities": [-4]}, "positive"),
    ({"values": [1, 2], "weights": [[1, 2]], "capacities": [0]}, "positive"),
    ({"values": [1, 2], "weights": [[1, -2]], "capacities": [4]}, "non-negative"),
    ({"values": [1, -2], "weights": [[1, 2]], "capacities": [4]}, "non-negative"),
    ({"values": [1, 2], "weights": [[1, 2]], "capacities": [4], "sticker_values": [1]}, "sticker_values"),
    ({"values": [1, float("nan")], "weights": [[1, 2]], "capacities": [4]}, "finite"),
    ({"values": [1, 2], "weights": [[1, 2]], "capacities": [4], "colour": "red"}, "colour"),
    ({"values": [], "weights": [[]], "capacities": [4]}, "values"),
])
def test_params_from_data_rejects_bad_data(data, message):
    with pytest.raises(ValueError, match=message):
        M.params_from_data(data)


def test_params_from_data_defaults_the_sticker_to_the_values():
    p = M.params_from_data({"values": [1, 2], "weights": [[1, 2]], "capacities": [4]})
    assert p.sticker_values == [1.0, 2.0]


@pytest.mark.parametrize("size, dims", [(12, 3), (16, 5), (20, 11)])
def test_the_enumeration_matches_highs_milp_on_larger_instances(size, dims):
    from scipy.optimize import Bounds, LinearConstraint, milp

    for index in range(3):
        p = M.sample(np.random.default_rng([71, size, index]), size, dims)
        values, weights = np.asarray(p.values, dtype=float), np.asarray(p.weights, dtype=float)
        result = milp(-values, constraints=LinearConstraint(weights, -np.inf, np.asarray(p.capacities)),
                      integrality=np.ones(p.items), bounds=Bounds(0, 1), options={"mip_rel_gap": 0.0})
        assert M.solve(p).u_star == pytest.approx(-result.fun, abs=1e-6)


def test_the_default_and_the_belief_see_the_posted_ratings_not_the_truth():
    p = _sample(4)
    other = p.model_copy(update={"values": [v + 7.0 for v in p.values],
                                 "weights": [[w + 1.0 for w in row] for row in p.weights]})
    ordered = [a for a in M.default_actions(p) if a.op == "select_item"]
    assert ordered == [a for a in M.default_actions(other) if a.op == "select_item"]  # only the sheet decides
    from mechanisms.players import Seat

    seats = [Seat(M, q) for q in (p, other)]
    for seat in seats:
        seat.call("read_ratings")
    assert M.believed(seats[0].known) == M.believed(seats[1].known)
    assert M.believed(seats[0].known).values == list(p.sticker_values)


def test_the_posted_ratings_are_one_call():
    p = _sample(5)
    shown = M.apply(p, M.initial_state(p), Action(op="read_ratings"))
    assert shown == {"ratings": {f"item {j + 1}": p.sticker_values[j] for j in range(p.items)}}
