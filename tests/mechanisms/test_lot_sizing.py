"""mechanisms._lot_sizing, the exact solver of ecommerce_365: its optimum against exhaustive search, products that
share only the cash, the intervals it orders for, the optimal plan as bulk calls and as day-by-day steps, and plans
that try to beat it (the family's dynamics, belief and policies are in test_ecommerce_365)."""

from __future__ import annotations

import numpy as np
import pytest

import mechanisms
from mechanisms._lot_sizing import plan_actions, product_plan, trimmed
from mechanisms.base import ActionError
from schemas.envspec import Action
from tests.mechanisms.references.ecommerce_365 import reference
from tests.mechanisms.test_ecommerce_365 import _data, _params, _sample

M = mechanisms.get("ecommerce_365")


@pytest.mark.parametrize("i", range(16))
def test_solver_matches_exhaustive_search_on_tiny_instances(i):
    rng = np.random.default_rng([8, i])
    p = M.sample(rng, int(rng.integers(1, 3)), int(rng.integers(3, 8)))
    assert M.solve(p).u_star == pytest.approx(reference(M, p), rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("changes", [
    {},
    {"holding_cost": [3.0]},  # old units are expensive: shorter intervals, dearer prices late in an interval
    {"fixed_cost": [60.0]},  # one big order
    {"fixed_cost": [0.0], "holding_cost": [0.0]},
    {"lead_time": [3]},
    {"base_demand": [[0, 0, 9, 0, 9, 0]]},  # idle days in between
    {"prices": [[5.5, 14.0]], "holding_cost": [1.2]},  # the cheap level loses money on old units
    {"ad_costs": [[0.0, 40.0]]},  # advertising never pays
    {"price_response": [[300, 10]], "ad_response": [[100, 300]], "max_order": 1000},
])
def test_solver_matches_exhaustive_search_on_hand_made_instances(changes):
    p = _params(**changes)
    solution = M.solve(p)
    assert solution.u_star == pytest.approx(reference(M, p), rel=1e-9, abs=1e-9)
    assert M.run(p, solution.optimal_actions) == solution.u_star


def test_two_products_share_cash_and_the_optimum_is_the_sum():
    one = _params()
    other = _params(base_demand=[[7, 2, 9, 1, 6, 5]], unit_cost=[3.0], lead_time=[2])
    both = M.params_from_data({
        **_data(), **{k: one.model_dump()[k] + other.model_dump()[k] for k in (
            "base_demand", "forecast", "sticker_price_level", "prices", "price_response", "ad_costs",
            "ad_response", "unit_cost", "fixed_cost", "holding_cost", "lead_time")}})
    fee_and_cash = both.initial_cash - both.daily_fee * both.horizon
    expected = M.solve(one).u_star + M.solve(other).u_star - fee_and_cash
    assert M.solve(both).u_star == pytest.approx(expected, rel=1e-9)
    assert M.solve(both).u_star == pytest.approx(reference(M, both), rel=1e-9)


def _step_plan(p):
    """The relaxed optimum as day-by-day calls (the step form of the bulk plan)."""
    return plan_actions(p, [product_plan(p, i)[1] for i in range(p.products)])


def test_the_optimal_plan_is_a_few_bulk_calls_and_its_step_form_reaches_the_same():
    for knobs in [(1, 30), (2, 180), (3, 300)]:
        p = _sample(3, *knobs)
        solution = M.solve(p)
        assert len(solution.optimal_actions) <= 3 * p.products + 1
        assert {a.op for a in solution.optimal_actions} <= {"plan_prices", "plan_ads", "plan_orders", "advance_days"}
        assert M.run(p, _step_plan(p)) == pytest.approx(solution.u_star, rel=1e-9)


def test_optimal_plan_changes_settings_only_when_they_differ_and_merges_clock_steps():
    p = _sample(3)
    actions = _step_plan(p)
    current = {("set_price", i): p.price_levels // 2 + 1 for i in range(1, p.products + 1)}
    current |= {("set_ads", i): 1 for i in range(1, p.products + 1)}
    for a in actions:
        if a.op in ("set_price", "set_ads"):
            key = (a.op, a.args["product"])
            assert a.args["level"] != current[key]
            current[key] = a.args["level"]
    for a, b in zip(actions, actions[1:], strict=False):
        assert not (a.op.startswith("advance") and b.op.startswith("advance"))
    assert sum(a.op == "advance_days" for a in actions) > 0


def test_no_random_plan_beats_the_optimum():
    rng = np.random.default_rng(3)
    for i in range(6):
        p = _sample(20 + i, 2, 60)
        u_star = M.solve(p).u_star
        for _ in range(15):
            actions = []
            for _ in range(p.horizon):
                for product in range(1, p.products + 1):
                    if rng.random() < 0.3:
                        actions.append(Action(op="set_price", args={"product": product,
                                                                    "level": int(rng.integers(1, 5))}))
                    if rng.random() < 0.3:
                        actions.append(Action(op="set_ads", args={"product": product,
                                                                  "level": int(rng.integers(1, 4))}))
                    if rng.random() < 0.25 and len(actions) < 10**6:
                        actions.append(Action(op="order_stock", args={"product": product,
                                                                      "quantity": int(rng.integers(1, 400))}))
                actions.append(Action(op="advance_day"))
            state = M.initial_state(p)
            for a in actions:
                if state["finished"]:
                    break
                try:
                    M.apply(p, state, a)
                except ActionError:
                    continue
            assert M.utility(p, state) <= u_star + 1e-9 * abs(u_star)


def test_perturbing_the_optimal_plan_never_helps():
    p = _sample(5, 1, 90)
    solution = M.solve(p)
    steps = _step_plan(p)
    rng = np.random.default_rng(1)
    orders = [k for k, a in enumerate(steps) if a.op == "order_stock"]
    settings = [k for k, a in enumerate(steps) if a.op in ("set_price", "set_ads")]
    for _ in range(40):
        actions = list(steps)
        k = int(rng.choice(orders))
        q = actions[k].args["quantity"] + int(rng.choice([-3, -1, 1, 3]))
        if q >= 1:
            actions[k] = Action(op="order_stock", args={**actions[k].args, "quantity": q})
        if settings and rng.random() < 0.5:
            s = int(rng.choice(settings))
            top = p.price_levels if actions[s].op == "set_price" else p.ad_levels
            actions[s] = Action(op=actions[s].op, args={**actions[s].args, "level": int(rng.integers(1, top + 1))})
        assert M.run(p, actions) <= solution.u_star + 1e-9 * solution.u_star


def test_intervals_are_disjoint_in_order_and_start_after_the_lead_time():
    for knobs in [(1, 30), (3, 180)]:
        p = _sample(4, *knobs)
        for i in range(p.products):
            value, intervals = product_plan(p, i)
            assert value > 0 and intervals
            assert all(p.lead_time[i] <= j <= k < p.horizon for j, k in intervals)
            assert all(k < j for (_, k), (j, _) in zip(intervals, intervals[1:], strict=False))
        bound = p.initial_cash - p.daily_fee * p.horizon + sum(product_plan(p, i)[0] for i in range(p.products))
        assert M.solve(p).facts["relaxation_value"] == pytest.approx(bound, rel=1e-9)


def test_plans_leave_out_their_tails():
    assert trimmed([2, 3, 3, 3]) == [2, 3]
    assert trimmed([4, 4]) == [4]
    assert trimmed([5, 0, 4, 0, 0], zeros=True) == [5, 0, 4]
    assert trimmed([0, 0], zeros=True) == [0]
