"""lp: explicit data, exactness against vertex enumeration, bad data refused, dynamics refuse infeasible plans."""

from __future__ import annotations

import copy
import itertools

import numpy as np
import pytest

import mechanisms
from mechanisms.base import ActionError
from schemas.envspec import Action

M = mechanisms.get("lp")


def _vertex_optimum(c, a, b) -> float:
    """Enumerate every basic solution of {A x <= b, x >= 0} (tiny instances) and keep the best feasible one."""
    c, a, b = map(lambda v: np.asarray(v, dtype=float), (c, a, b))
    n = len(c)
    rows = np.vstack([a, -np.eye(n)])
    rhs = np.concatenate([b, np.zeros(n)])
    best = -np.inf
    for basis in itertools.combinations(range(len(rows)), n):
        sub = rows[list(basis)]
        if abs(np.linalg.det(sub)) < 1e-12:
            continue
        x = np.linalg.solve(sub, rhs[list(basis)])
        if np.all(rows @ x <= rhs + 1e-7):
            best = max(best, float(c @ x))
    return best


def test_a_plain_lp_from_data_is_solved_exactly():
    data = {"c": [3.0, 5.0], "A_ub": [[1.0, 0.0], [0.0, 2.0], [3.0, 2.0]], "b_ub": [4.0, 12.0, 18.0]}
    params = M.params_from_data(data)
    solution = M.solve(params)
    assert solution.u_star == pytest.approx(36.0)  # the textbook Wyndor Glass optimum, x = (2, 6)
    assert M.run(params, solution.optimal_actions) == pytest.approx(36.0)


@pytest.mark.parametrize("index", range(15))
def test_sampled_single_period_instances_match_vertex_enumeration(index):
    params = M.sample(np.random.default_rng([61, index]), 2, 1)
    assert M.solve(params).u_star == pytest.approx(_vertex_optimum(params.c, params.A_ub, params.b_ub), rel=1e-7)


@pytest.mark.parametrize("data, message", [
    ({"c": [1.0, 2.0], "A_ub": [[1.0, 1.0]], "b_ub": [1.0, 2.0]}, "b_ub must have one entry"),
    ({"c": [1.0, 2.0], "A_ub": [[1.0]], "b_ub": [1.0]}, "one entry per variable"),
    ({"c": [1.0], "A_ub": [[1.0]], "b_ub": [-1.0]}, "non-negative"),
])
def test_bad_data_is_refused_with_a_clear_message(data, message):
    with pytest.raises(ValueError, match=message):
        M.params_from_data(data)


def test_an_unbounded_lp_is_refused():
    params = M.params_from_data({"c": [1.0, 1.0], "A_ub": [[1.0, 0.0]], "b_ub": [3.0]})
    with pytest.raises(ValueError, match="unbounded"):
        M.solve(params)


def test_an_infeasible_setting_is_refused_and_leaves_the_state_unchanged():
    params = M.params_from_data({"c": [3.0, 5.0], "A_ub": [[1.0, 0.0], [0.0, 2.0], [3.0, 2.0]],
                                 "b_ub": [4.0, 12.0, 18.0]})
    state = M.initial_state(params)
    M.apply(params, state, Action(op="set_production", args={"product": 1, "quantity": 4.0}))
    before = copy.deepcopy(state)
    with pytest.raises(ActionError):
        M.apply(params, state, Action(op="set_production", args={"product": 2, "quantity": 6.0}))
    assert state == before
    assert M.utility(params, state) == pytest.approx(12.0)


def test_the_default_plan_is_feasible_and_below_the_optimum():
    for index in range(30):
        params = M.sample(np.random.default_rng([62, index]), M.default_size, M.default_horizon)
        outcome = M.outcome(params)
        assert outcome.u0 < outcome.solution.u_star
