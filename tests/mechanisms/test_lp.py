"""lp: exactness against independent methods, replay, the default's band, refusals, fuzzing."""

from __future__ import annotations

import copy
import itertools
import json

import numpy as np
import pytest
from scipy.optimize import linprog

import mechanisms
from mechanisms import lp as lp_module
from mechanisms.base import ActionError
from mechanisms.lp import LPParams
from schemas.envspec import Action
from setter.corpus import BUNDLE_KEYS, VOCAB_KEYS
from setter.phrasebook import vocabulary
from tests.support import make_spec

M = mechanisms.get("lp")
VOCAB = vocabulary({k: k for k in (*VOCAB_KEYS, *BUNDLE_KEYS)})


def _sample(i: int, size: int | None = None, horizon: int | None = None) -> LPParams:
    return M.sample(np.random.default_rng([7, i]), size or M.default_size, horizon or M.default_horizon)


def _vertices_optimum(p: LPParams) -> float:
    """Enumerate every vertex of {A x <= b, x >= 0} (tiny n only) and take the best."""
    a = np.vstack([np.asarray(p.A_ub, dtype=float), -np.eye(p.n)])
    b = np.concatenate([np.asarray(p.b_ub, dtype=float), np.zeros(p.n)])
    best = -np.inf
    for rows in itertools.combinations(range(len(b)), p.n):
        sub = a[list(rows)]
        if abs(np.linalg.det(sub)) < 1e-12:
            continue
        x = np.linalg.solve(sub, b[list(rows)])
        if np.all(a @ x <= b + 1e-9 * np.maximum(1.0, np.abs(b))):
            best = max(best, float(np.dot(p.c, x)))
    return best


def _dual_and_ipm(p: LPParams) -> tuple[float, float]:
    c = np.asarray(p.c, dtype=float)
    a = np.asarray(p.A_ub, dtype=float)
    b = np.asarray(p.b_ub, dtype=float)
    primal = linprog(-c, A_ub=a, b_ub=b, bounds=(0, None), method="highs-ipm")
    dual = linprog(b, A_ub=-a.T, b_ub=-c, bounds=(0, None), method="highs-ipm")
    assert primal.status == 0 and dual.status == 0
    return float(-primal.fun), float(dual.fun)


def test_sampled_structure_is_block_by_period():
    p = _sample(4, 4, 3)
    assert p.n == 12 and p.n_products == 4 and p.periods == 3
    a = np.asarray(p.A_ub)
    for row in a:
        periods = {j // p.n_products for j in np.flatnonzero(row)}
        assert len(periods) == 1
    caps = [row for row in a if np.count_nonzero(row) == 1]
    assert len(caps) == p.n and all(row.max() == 1.0 for row in caps)
    assert len(a) - len(caps) in range(2 * p.periods, 3 * p.periods + 1)


def test_contract_shape():
    p = _sample(0)
    ops = M.operations(p)
    assert len(ops) >= 11 and {op.kind for op in ops} == {"probe", "info", "decision", "clock"}
    assert any(op.decoy for op in ops) and "finish" in {op.name for op in ops}
    assert len({op.name for op in ops}) == len(ops)
    quantity = next(op for op in ops if op.name == "set_production").args["quantity"]
    assert quantity.type == "number" and quantity.minimum == 0 and quantity.maximum == 100.0
    assert quantity.maximum in M.public_numbers(p)
    for op in ops:
        if "product" in op.args:
            assert op.args["product"].type == "integer" and op.args["product"].maximum == p.n_products
    assert M.group == "near_ood" and M.version == 4
    assert M.size_range == (2, 10) and M.horizon_range == (1, 8)
    plan = next(op for op in ops if op.name == "set_plan").args["quantities"]
    assert plan.type == "array" and plan.items == "number" and plan.max_items == p.n_products
    assert M.probe_allowance(p) == p.periods * (2 * p.n_products + 2)
    text = M.describe(p, VOCAB)
    assert all(f"{v:g}" in text for v in p.b_ub) and all(f"{v:g}" in text for v in p.c)
    json.dumps(M.initial_state(p))


@pytest.mark.parametrize("i", range(30))
def test_solver_matches_independent_methods(i):
    rng = np.random.default_rng([8, i])
    if i < 15:  # tiny: n <= 3, checked against vertex enumeration too
        p = M.sample(rng, int(rng.integers(2, 4)), 1)
        assert M.solve(p).u_star == pytest.approx(_vertices_optimum(p), rel=1e-6, abs=1e-6)
    else:
        p = M.sample(rng, int(rng.integers(2, 6)), int(rng.integers(1, 4)))
    u_star = M.solve(p).u_star
    ipm, dual = _dual_and_ipm(p)
    assert u_star == pytest.approx(ipm, rel=1e-6)
    assert u_star == pytest.approx(dual, rel=1e-6)  # strong duality: b.y = c.x


@pytest.mark.parametrize("knobs", [(3, 2), (2, 1), (8, 6), (5, 3)])
def test_replay_of_optimal_actions_gives_u_star(knobs):
    for i in range(5):
        p = _sample(100 + i, *knobs)
        solution = M.solve(p)
        assert M.run(p, solution.optimal_actions) == pytest.approx(solution.u_star, rel=1e-9)
        assert [a.op for a in solution.optimal_actions].count("advance_period") == p.periods
        assert solution.facts["lp_objective"] == pytest.approx(solution.u_star, rel=1e-6)


def test_default_is_below_optimum_and_inside_the_band():
    low, high = M.u0_band
    inside = 0
    for i in range(100):
        o = M.outcome(_sample(i))
        u_star = o.solution.u_star
        assert o.u_idle == 0.0 and u_star > o.u_idle
        ops = {a.op for a in o.default_actions}
        assert ops <= {"read_profit_stickers", "set_plan", "advance_period"}
        g = (o.u0 - o.u_idle) / (u_star - o.u_idle)
        inside += low <= g <= high and u_star - o.u0 > 1e-6 * max(1.0, abs(u_star))
    assert inside >= 90


def test_explicit_c_a_b_is_a_one_period_lp():
    p = M.params_from_data({"c": [3, 5], "A_ub": [[1, 0], [0, 2], [3, 2]], "b_ub": [4, 12, 18]})
    assert p.periods == 1 and p.n_products == 2 and p.sticker_profit == [3.0, 5.0]
    solution = M.solve(p)
    assert solution.u_star == pytest.approx(36.0)  # the textbook optimum x = (2, 6)
    assert M.run(p, solution.optimal_actions) == pytest.approx(36.0)
    assert M.run(p, M.default_actions(p)) < 36.0


def test_rows_with_negative_entries_are_replayed_in_a_feasible_order():
    p = M.params_from_data({"c": [1, 1], "A_ub": [[1, -1], [1, 0], [0, 1]], "b_ub": [0, 3, 5]})
    solution = M.solve(p)
    assert solution.u_star == pytest.approx(8.0)
    assert solution.optimal_actions[0].args["product"] == 2
    assert M.run(p, solution.optimal_actions) == pytest.approx(8.0)
    blocked = M.params_from_data({"c": [1, 1], "A_ub": [[1, -1], [-1, 1], [1, 0]], "b_ub": [0, 0, 3]})
    with pytest.raises(ValueError, match="one product at a time"):
        M.solve(blocked)


def test_unbounded_data_is_rejected_at_solve():
    p = M.params_from_data({"c": [1, 1], "A_ub": [[1, -1]], "b_ub": [1]})
    with pytest.raises(ValueError, match="unbounded"):
        M.solve(p)


def test_infeasible_settings_are_refused_naming_the_row():
    p = _sample(2)
    state = M.initial_state(p)
    caps = M.apply(p, state, Action(op="probe_demand_caps", args={"period": 1}))["caps"]
    before = copy.deepcopy(state)
    with pytest.raises(ActionError, match="demand cap of product 1 in period 1"):
        M.apply(p, state, Action(op="set_production", args={"product": 1, "quantity": caps["product 1"] + 1}))
    assert state == before
    usage = M.apply(p, state, Action(op="probe_usage", args={"period": 1, "product": 2}))["usage"]
    limits = M.apply(p, state, Action(op="probe_resource_limits", args={"period": 1}))["limits"]
    assert set(usage) == set(limits) and all(name.startswith("resource ") for name in limits)
    tightest = min(limits[name] / use for name, use in usage.items())
    if tightest < caps["product 2"]:
        with pytest.raises(ActionError, match="resource"):
            M.apply(p, state, Action(op="set_production", args={"product": 2, "quantity": tightest * 1.01}))
        assert state == before


def test_probes_reveal_any_period_without_changing_the_state():
    p = _sample(6, 3, 3)
    state = M.initial_state(p)
    sheet = M.apply(p, state, Action(op="read_profit_stickers"))["posted"]
    for t in range(1, p.periods + 1):
        for k in range(1, p.n_products + 1):
            j = p.var(t, k)
            assert M.apply(p, state, Action(op="probe_profit", args={"period": t, "product": k}))["profit"] == p.c[j]
            assert sheet[f"period {t}"][f"product {k}"] == p.sticker_profit[j]
        caps = M.apply(p, state, Action(op="probe_demand_caps", args={"period": t}))["caps"]
        single = [i for i, row in enumerate(p.A_ub) if np.count_nonzero(row) == 1]
        in_period = [i for i in single if np.flatnonzero(p.A_ub[i])[0] // p.n_products == t - 1]
        assert list(caps.values()) == [p.b_ub[i] for i in in_period]
    assert state == M.initial_state(p)


def test_the_bulk_plan_sets_a_period_in_one_call_and_cuts_what_does_not_fit():
    p = _sample(3, 4, 2)
    state = M.initial_state(p)
    reply = M.apply(p, state, Action(op="set_plan", args={"quantities": [100.0] * p.n_products}))
    x = np.asarray([q for period in state["quantities"] for q in period])
    assert np.all(np.asarray(p.A_ub) @ x <= np.asarray(p.b_ub) + 1e-9)
    assert reply["cut"] and "profit" not in reply and "total" not in reply
    limits = M.apply(p, M.initial_state(p), Action(op="probe_resource_limits", args={"period": 1}))["limits"]
    for product, reasons in reply["cut"].items():  # each lowered product names the limits that stopped it
        assert reasons and set(reasons) <= {*limits, "caps"}
        assert product not in reply["planned"]
    assert all(q == 100.0 for q in reply["planned"].values())
    for bad in ([1.0], [-1.0] * p.n_products, ["x"] * p.n_products, [float("nan")] * p.n_products, 3.0):
        before = copy.deepcopy(state)
        with pytest.raises(ActionError):
            M.apply(p, state, Action(op="set_plan", args={"quantities": bad}))
        assert state == before
    solution = M.solve(p)
    assert [a.op for a in solution.optimal_actions].count("set_production") == 0
    assert len(solution.optimal_actions) <= 2 * p.periods


def test_invalid_actions_raise_and_leave_the_state_unchanged():
    p = _sample(2)
    opt = M.solve(p).optimal_actions
    mid = M.initial_state(p)
    for action in opt[: opt.index(Action(op="advance_period")) + 1]:
        M.apply(p, mid, action)
    bad = [Action(op="no_such_op"), Action(op="set_production", args={"product": 1}),
           Action(op="set_production", args={"quantity": 1.0}),
           Action(op="set_production", args={"product": 0, "quantity": 1.0}),
           Action(op="set_production", args={"product": p.n_products + 1, "quantity": 1.0}),
           Action(op="set_production", args={"product": 1, "quantity": -0.5}),
           Action(op="set_production", args={"product": 1, "quantity": float("nan")}),
           Action(op="set_production", args={"product": 1, "quantity": float("inf")}),
           Action(op="set_production", args={"product": 1, "quantity": "3"}),
           Action(op="set_production", args={"product": 1, "quantity": 1e9}),
           Action(op="set_production", args={"product": 1.5, "quantity": 1.0}),
           Action(op="probe_profit", args={"product": True}),
           Action(op="probe_usage", args={"product": None}),
           Action(op="probe_profit", args={"product": float("nan")}),
           Action(op="probe_profit", args={"product": float("inf")}),
           Action(op="read_profit_sticker", args={"period": 1, "product": 1})]
    for state in (M.initial_state(p), mid):
        for action in bad:
            before = copy.deepcopy(state)
            with pytest.raises(ActionError):
                M.apply(p, state, action)
            assert state == before


@pytest.mark.parametrize("data, message", [
    ({"c": [1, 2], "A_ub": [[1, 2, 3]], "b_ub": [4]}, "A_ub row 1"),
    ({"c": [1, 2], "A_ub": [[1, 2]], "b_ub": [4, 5]}, "b_ub"),
    ({"c": [1, 2], "A_ub": [[1, 2]], "b_ub": [-4]}, "non-negative"),
    ({"c": [1, 2], "A_ub": [[1, 2]], "b_ub": [4], "sticker_profit": [1]}, "sticker_profit"),
    ({"c": [1, 2, 3], "A_ub": [[1, 2, 3]], "b_ub": [4], "products": 2}, "products x periods"),
    ({"c": [1, 2, 3], "A_ub": [[1, 2, 3]], "b_ub": [4], "periods": 2}, "products x periods"),
    ({"c": [1, float("inf")], "A_ub": [[1, 2]], "b_ub": [4]}, "finite"),
    ({"c": [1, 2], "A_ub": [[1, 2]], "b_ub": [4], "colour": "red"}, "colour"),
    ({"c": [], "A_ub": [[]], "b_ub": [4]}, "c"),
])
def test_params_from_data_rejects_bad_data(data, message):
    with pytest.raises(ValueError, match=message):
        M.params_from_data(data)


def _random_args(rng: np.random.Generator, op) -> dict:
    args = {}
    for name, spec in op.args.items():
        roll = rng.random()
        if roll < 0.1:
            continue
        high = spec.maximum if spec.maximum is not None else 50
        if spec.type == "array" and roll > 0.3:
            args[name] = [float(v) for v in rng.uniform(-0.5, 30, int(rng.integers(1, 6)))]
            continue
        if roll < 0.2:
            args[name] = ["x", None, True, [1], float("nan")][int(rng.integers(5))] if roll < 0.15 else "7"
        elif spec.type == "number" or roll < 0.3:
            args[name] = float(rng.uniform(-5, high + 5)) if roll < 0.9 else float(rng.integers(0, 40))
        else:
            args[name] = int(rng.integers(int(spec.minimum) - 2, int(high) + 3))
    if rng.random() < 0.05:
        args["extra"] = 1
    return args


def test_a_thousand_random_actions_raise_nothing_but_action_error():
    rng = np.random.default_rng(3)
    p = _sample(5, 4, 3)
    ops = M.operations(p)
    u_star = M.solve(p).u_star
    state = M.initial_state(p)
    errors = 0
    for _ in range(1000):
        if M.finished(state) or rng.random() < 0.01:
            state = M.initial_state(p)
        op = ops[int(rng.integers(len(ops)))] if rng.random() > 0.03 else None
        action = Action(op=op.name if op else "bogus", args=_random_args(rng, op) if op else {})
        before = copy.deepcopy(state)
        try:
            json.dumps(M.apply(p, state, action))
        except ActionError:
            errors += 1
            assert state == before
        json.dumps(state)
        x = np.asarray([q for period in state["quantities"] for q in period])
        assert np.all(x >= 0) and np.all(np.asarray(p.A_ub) @ x <= np.asarray(p.b_ub) + 1e-6)
        assert M.utility(p, state) <= u_star + 1e-6 * max(1.0, abs(u_star))
    assert 0 < errors < 1000


# --- issue 15: facts, belief, informed and heuristic agents, tiers, admission ------------------------------------

def _measured_spec(index: int, size: int, horizon: int, tier: str | None = None):
    return make_spec("lp", index, size, horizon, tier=tier)


@pytest.mark.parametrize("knobs", [(3, 2), (5, 3), (8, 4)])
def test_the_informed_agent_reaches_one_when_every_probe_fits(knobs):
    from mechanisms.players import informed, run_policy
    from setter.spec import turn_budget

    for i in range(4):
        p = _sample(700 + i, *knobs)
        outcome = M.outcome(p)
        budget = turn_budget(M, p, outcome, 1.0)
        assert len(M.probe_order(M.knowledge(p))) == M.probe_allowance(p)
        calls, u = run_policy(M, p, informed(M), budget)
        assert len(calls) <= budget and calls[0] == Action(op="read_profit_stickers")
        assert u == pytest.approx(outcome.solution.u_star, rel=1e-6)


def _seat_after(p: LPParams, calls: list[Action]):
    from mechanisms.players import Seat

    seat = Seat(M, p)
    for call in calls:
        seat.call(call)
    return seat


def test_belief_with_every_probe_solves_to_u_star_and_without_probes_uses_no_hidden_value():
    for i in range(5):
        p = _sample(720 + i, 4, 3)
        sheet = [Action(op="read_profit_stickers")]
        everything = _seat_after(p, sheet + M.probe_order(M.knowledge(p)))
        assert M.solve(M.believed(everything.known)).u_star == pytest.approx(M.solve(p).u_star, rel=1e-9)
        data = p.model_dump()
        other = M.params_from_data({**data, "c": [v + 1.0 for v in data["c"]],
                                    "A_ub": [[a * 1.01 for a in row] if np.count_nonzero(row) > 1 else row
                                             for row in data["A_ub"]],
                                    "b_ub": [b * 0.99 for b in data["b_ub"]]})
        if lp_module._quantity_bound(other) == lp_module._quantity_bound(p):
            assert M.believed(_seat_after(other, sheet).known) == M.believed(_seat_after(p, sheet).known)
        assert M.believed(_seat_after(p, sheet).known).c == list(p.sticker_profit)
        seat = _seat_after(p, sheet)
        half = M.probe_order(seat.known)[: len(M.probe_order(seat.known)) // 2]
        M.solve(M.believed(_seat_after(p, sheet + half).known))  # a partial belief is a valid instance


def test_the_informed_agent_verifies_limits_caps_and_uses_first_and_beats_listing_order_at_frontier():
    from envs.scoring import score
    from mechanisms.players import informed, naive_prober, run_policy
    from setter.spec import turn_budget

    tier = M.tiers()["frontier"]
    known = _seat_after(_sample(0, 8, 4), [Action(op="read_profit_stickers")]).known
    order = M.probe_order(known)
    assert {a.op for a in order[:8]} == {"probe_resource_limits", "probe_demand_caps"}
    assert {a.op for a in order[8:40]} == {"probe_usage"}
    gaps = []
    for i in range(12):  # one instance may go either way (the posted profits mislead the naive prober or not)
        p = _sample(i, *tier.grid[0])
        outcome = M.outcome(p)
        budget = turn_budget(M, p, outcome, tier.probe_share)
        scores = [score(run_policy(M, p, player(M), budget)[1], outcome.u0, outcome.solution.u_star)
                  for player in (informed, naive_prober)]
        gaps.append(scores[0] - scores[1])
    assert np.mean(gaps) >= 0.15


def test_heuristics_play_within_the_budget_and_stay_below_u_star():
    from mechanisms.players import run_policy
    from setter.spec import turn_budget

    for i in range(6):
        p = _sample(740 + i, 5, 3)
        outcome = M.outcome(p)
        budget = turn_budget(M, p, outcome, 0.5)
        heuristics = M.heuristic_policies()
        assert set(heuristics) == {"posted_greedy", "verified_fill"}
        for policy in heuristics.values():
            calls, u = run_policy(M, p, policy, budget)
            assert len(calls) <= budget
            assert u <= outcome.solution.u_star + 1e-6 * max(1.0, abs(outcome.solution.u_star))
            full = run_policy(M, p, policy)[1]
            assert full <= outcome.solution.u_star + 1e-6 * max(1.0, abs(outcome.solution.u_star))


# --- issue 26: set-all sets all; decisions show no profit; the ending states the ledger ---------------------------

def _random_trial(rng: np.random.Generator, p: LPParams, state: dict) -> None:
    """A trial the agent might make before its bulk setting: a bulk plan, one product, or clearing the period."""
    roll = rng.random()
    if roll < 0.5:
        M.apply(p, state, Action(op="set_plan", args={"quantities": [float(v) for v in
                                                                    rng.uniform(0, 60, p.n_products)]}))
    elif roll < 0.85:
        try:
            M.apply(p, state, Action(op="set_production", args={"product": int(rng.integers(1, p.n_products + 1)),
                                                                "quantity": float(rng.uniform(0, 30))}))
        except ActionError:
            pass
    else:
        M.apply(p, state, Action(op="clear_production"))


@pytest.mark.parametrize("knobs", [(8, 4), (4, 2), (3, 1)])
def test_set_all_gives_the_same_plan_in_a_fresh_period_and_after_any_trial_plan(knobs):
    rng = np.random.default_rng([26, *knobs])
    for i in range(6):
        p = _sample(900 + i, *knobs)
        for _ in range(8):
            wanted = [float(v) for v in rng.choice([0.0, 5.0, 18.0, 100.0], p.n_products)]
            call = Action(op="set_plan", args={"quantities": wanted})
            for t in range(1, p.periods + 1):  # in every period, after the same committed periods
                fresh = M.initial_state(p)
                for _ in range(t - 1):
                    M.apply(p, fresh, Action(op="advance_period"))
                tried = copy.deepcopy(fresh)
                for _ in range(int(rng.integers(1, 4))):
                    _random_trial(rng, p, tried)
                assert tried["quantities"][: t - 1] == fresh["quantities"][: t - 1]
                first, second = M.apply(p, fresh, call), M.apply(p, tried, call)
                assert first == second and fresh == tried
    # the issue's case: later products' old amounts no longer count, earlier ones are not held at their old amounts
    p = _sample(3, 8, 4)
    state = M.initial_state(p)
    M.apply(p, state, Action(op="set_plan", args={"quantities": [0.0] * 7 + [100.0]}))
    again = M.apply(p, state, Action(op="set_plan", args={"quantities": [100.0] * 7 + [0.0]}))
    assert state["quantities"][0][7] == 0.0 and "product 8" in again["planned"]
    fresh = M.initial_state(p)
    M.apply(p, fresh, Action(op="set_plan", args={"quantities": [100.0] * 7 + [0.0]}))
    assert fresh == state


def test_the_bulk_plan_lowers_in_number_order_against_the_new_plan_only():
    p = M.params_from_data({"c": [3, 5, 4], "A_ub": [[1, 1, 1], [1, 0, 0], [0, 1, 0], [0, 0, 1]],
                            "b_ub": [10, 8, 8, 8]})
    state = M.initial_state(p)
    M.apply(p, state, Action(op="set_production", args={"product": 3, "quantity": 8.0}))
    reply = M.apply(p, state, Action(op="set_plan", args={"quantities": [6.0, 6.0, 6.0]}))
    assert state["quantities"] == [[6.0, 4.0, 0.0]]  # the old 8 of product 3 does not hold product 2 back
    assert reply == {"period": 1, "planned": {"product 1": 6.0},
                     "cut": {"product 2": ["resource 1"], "product 3": ["resource 1"]}}
    reply = M.apply(p, state, Action(op="set_plan", args={"quantities": [0.0, 9.0, 1.0]}))
    assert state["quantities"] == [[0.0, 8.0, 1.0]] and reply["cut"] == {"product 2": ["caps"]}


def test_decisions_show_no_profit_and_commits_and_the_ending_do():
    from envs.completeness import observed_numbers

    rng = np.random.default_rng(5)
    for i in range(6):
        p = _sample(950 + i, 5, 3)
        secret = set(np.round(M.secret_numbers(p), 6)) - set(np.round(M.public_numbers(p), 6))
        state = M.initial_state(p)
        committed = 0.0
        for t in range(1, p.periods + 1):
            for _ in range(4):
                wanted = [float(v) for v in rng.choice([0.0, 3.0, 12.0, 100.0], p.n_products)]
                reply = M.apply(p, state, Action(op="set_plan", args={"quantities": wanted}))
                assert "profit" not in reply and "total" not in reply
                assert observed_numbers(reply) - set(wanted) <= {float(t)}  # the period, the amounts as asked
                assert not (observed_numbers(reply) - set(wanted)) & secret
                view = M.apply(p, state, Action(op="view_plan"))
                assert view["profit so far"] == pytest.approx(committed)  # a trial plan's profit is not shown
            shown = M.apply(p, state, Action(op="clear_production"))
            assert "profit" not in shown and set(shown["planned"].values()) == {0.0}
            M.apply(p, state, Action(op="set_plan", args={"quantities": wanted}))
            done = M.apply(p, state, Action(op="advance_period"))
            assert done["profit"] == pytest.approx(sum(p.c[p.var(t, k + 1)] * q
                                                       for k, q in enumerate(state["quantities"][t - 1])))
            committed += done["profit"]
            assert done["total"] == pytest.approx(committed)
        ledger = M.ledger(p, state)
        assert ledger["total"] == pytest.approx(M.utility(p, state)) == pytest.approx(committed)
        assert sum(ledger["profit"].values()) == pytest.approx(committed)


def test_the_text_states_how_many_limits_each_period_has_as_the_tools_show_them():
    for i in range(6):
        p = _sample(960 + i, 4, 3)
        structure = next(f.statement for f in M.facts(p, VOCAB) if f.key == "structure")
        counts = []
        for t in range(1, p.periods + 1):
            shown = M.apply(p, M.initial_state(p), Action(op="probe_resource_limits", args={"period": t}))["limits"]
            assert sorted(shown) == [f"resource {r}" for r in range(1, len(shown) + 1)]
            counts.append(f"{len(shown)} limit{'' if len(shown) == 1 else 's'} in period {t}")
        assert ", ".join(counts) in structure
        assert M.public_view(p)["limits per period"] == [int(c.split()[0]) for c in counts]


@pytest.mark.parametrize("knobs", [(6, 4), (8, 5), (10, 8)])
def test_highs_matches_the_dual_by_interior_point_at_the_tier_sizes(knobs):
    for i in range(3):
        p = _sample(760 + i, *knobs)
        ipm, dual = _dual_and_ipm(p)
        assert M.solve(p).u_star == pytest.approx(ipm, rel=1e-6)
        assert M.solve(p).u_star == pytest.approx(dual, rel=1e-6)


def test_the_tiers_cover_their_cells_and_rendered_environments_are_admitted():
    from envs.admission import admit

    tiers = M.tiers()
    assert list(tiers) == ["easy", "medium", "hard", "frontier"]
    for tier in tiers.values():
        for size, horizon in tier.grid:
            assert M.size_range[0] <= size <= M.size_range[1]
            assert M.horizon_range[0] <= horizon <= M.horizon_range[1]
    assert tiers["frontier"].probe_share < 1.0
    admitted = 0
    for i in range(4):
        spec = _measured_spec(i, 4, 2)
        verdict = admit(spec)
        admitted += verdict.admitted
        assert verdict.admitted or verdict.check == "C2", verdict.reason
    assert admitted >= 3
    frontier = _measured_spec(0, *tiers["frontier"].grid[0], tier="frontier")
    assert frontier.difficulty.facts_fit < 1.0
