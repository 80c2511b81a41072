"""qp: exactness against active-set enumeration, the KKT verification and its fallback, replay,
the default's band, validation of data, refusals, fuzzing."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

import mechanisms
from envs.scoring import score
from mechanisms import qp as qp_module
from mechanisms.base import ActionError
from mechanisms.canonical import canonical_number
from mechanisms.qp import QPParams
from schemas.envspec import Action
from setter.corpus import BUNDLE_KEYS, VOCAB_KEYS
from setter.phrasebook import vocabulary
from tests.mechanisms.references.qp import reference as enumerate_active_sets
from tests.support import make_spec

M = mechanisms.get("qp")
VOCAB = vocabulary({k: k for k in (*VOCAB_KEYS, *BUNDLE_KEYS)})


def _sample(i: int, size: int | None = None, horizon: int | None = None) -> QPParams:
    return M.sample(np.random.default_rng([7, i]), size or M.default_size, horizon or M.default_horizon)


def _data(**changes) -> dict:
    data = {"c": [10.0, 8.0], "Q": [[1.0, 0.2], [0.2, 0.5]], "A_ub": [[1.0, 2.0]], "b_ub": [12.0]}
    data.update(changes)
    return data


def test_contract_shape():
    p = _sample(0)
    ops = M.operations(p)
    kinds = {op.kind for op in ops}
    names = {op.name for op in ops}
    assert len(ops) >= 10 and kinds == {"probe", "info", "decision", "clock"}
    assert [op.name for op in ops if op.decoy] == ["read_posted_margins"] and "finish" in names
    assert len(names) == len(ops)
    for op in ops:
        for arg in op.args.values():
            assert arg.minimum is not None and arg.maximum is not None
            assert arg.type in ("integer", "number", "array")
    assert M.group == "near_ood" and M.version == 4
    for size, horizon in M.grid():
        assert M.size_range[0] <= size <= M.size_range[1] and M.horizon_range[0] <= horizon <= M.horizon_range[1]
    assert 3 <= len(M.grid()) <= 6
    assert M.probe_allowance(p) == 3 * p.n + 1
    assert set(M.secret_numbers(p)) >= set(p.c) | set(p.b_ub)
    json.dumps(M.initial_state(p))


def test_describe_states_the_whole_instance():
    p = _sample(1)
    text = M.describe(p, VOCAB)
    assert f"There are {p.n} products" in text and f"{p.m} limits on resources" in text
    assert "1/2" in text and "Q_kl x_k x_l" in text
    for value in [*p.c, *p.b_ub, *p.sticker_margin, *(q for row in p.Q for q in row),
                  *(a for row in p.A_ub for a in row)]:
        assert f"{value:g}" in text


@pytest.mark.parametrize("knobs", [(2, 1), (3, 2), (4, 3), (5, 2), (3, 5), (6, 1)])
def test_solver_matches_active_set_enumeration(knobs):
    for i in range(12):
        p = M.sample(np.random.default_rng([8, *knobs, i]), *knobs)
        solution = M.solve(p)
        assert solution.u_star == pytest.approx(enumerate_active_sets(M, p), rel=1e-6, abs=1e-6)


@pytest.mark.parametrize("knobs", [(4, 2), (8, 4), (10, 6)])
def test_kkt_residuals_are_recorded_and_tiny(knobs):
    for i in range(8):
        p = _sample(300 + i, *knobs)
        solution = M.solve(p)
        facts, diagnostics = solution.facts, solution.diagnostics
        assert diagnostics["method"] in ("slsqp_active_set", "active_set_search")
        assert set(diagnostics["kkt_residuals"]) == {"primal", "dual", "stationarity", "complementarity"}
        assert all(0.0 <= r <= 1e-9 for r in diagnostics["kkt_residuals"].values())
        assert all(price >= -1e-9 for price in facts["resource_prices"])
        # the spec records the answer, not the path (mechanisms.canonical): no iterations, statuses or residuals
        assert not {"slsqp_status", "slsqp_iterations", "method", "kkt_residuals"} & set(facts)
        assert facts["kkt_tolerance"] == 1e-9
        json.dumps(facts)


def test_the_active_set_search_agrees_with_the_slsqp_route():
    for i in range(20):
        p = _sample(400 + i, 6, 3)
        c, q, _, _ = qp_module._arrays(p)
        g, h = qp_module._constraints(p)
        x, active, multipliers, _ = qp_module.active_set_search(q, c, g, h)
        assert qp_module._verified(qp_module.kkt_residuals(q, c, g, h, x, active, multipliers))
        assert qp_module._profit(p, x) == pytest.approx(M.solve(p).u_star, rel=1e-9, abs=1e-9)


def test_a_wrong_slsqp_answer_falls_back_to_the_active_set_search(monkeypatch):
    class Garbage:
        def __init__(self, n):
            self.x, self.status, self.nit = np.full(n, 3.0), 9, 1

    monkeypatch.setattr(qp_module, "minimize", lambda fun, x0, **kw: Garbage(len(x0)))
    for i in range(10):
        p = M.sample(np.random.default_rng([9, i]), 3, 2)
        solution = M.solve(p)
        assert solution.diagnostics["method"] == "active_set_search"
        assert solution.u_star == pytest.approx(enumerate_active_sets(M, p), rel=1e-6, abs=1e-6)
        assert canonical_number(M.run(p, solution.optimal_actions)) == solution.u_star


def test_edge_cases_zero_limits_losses_and_an_interior_optimum():
    zero = M.params_from_data(_data(b_ub=[0.0]))
    assert M.solve(zero).u_star == 0.0 and M.solve(zero).optimal_actions == [Action(op="commit_plan")]
    losses = M.params_from_data(_data(c=[-1.0, -2.0]))
    assert M.solve(losses).u_star == 0.0
    loose = M.params_from_data(_data(b_ub=[1000.0]))
    x = np.linalg.solve(np.asarray(loose.Q), np.asarray(loose.c))
    solution = M.solve(loose)
    # u* as the spec records it: 10 significant digits (mechanisms.canonical)
    assert solution.u_star == pytest.approx(float(loose.c @ x - 0.5 * x @ np.asarray(loose.Q) @ x), rel=1e-10)
    assert solution.facts["active_resources"] == [] and solution.facts["zero_products"] == []
    free = M.params_from_data(_data(A_ub=[[0.0, 2.0]]))  # product 1 uses no resource: bounded by curvature
    assert M.solve(free).u_star == pytest.approx(enumerate_active_sets(M, free), rel=1e-9)


@pytest.mark.parametrize("knobs", [(4, 2), (2, 1), (3, 1), (6, 3), (8, 4), (10, 6)])
def test_replay_of_optimal_actions_gives_u_star_exactly(knobs):
    for i in range(5):
        p = _sample(100 + i, *knobs)
        solution = M.solve(p)
        assert canonical_number(M.run(p, solution.optimal_actions)) == solution.u_star
        assert solution.optimal_actions[-1].op == "commit_plan"


def test_no_feasible_plan_beats_the_optimum():
    rng = np.random.default_rng(4)
    for i in range(10):
        p = _sample(500 + i, 5, 3)
        u_star = M.solve(p).u_star
        a, b = np.asarray(p.A_ub), np.asarray(p.b_ub)
        for _ in range(200):
            x = rng.uniform(0, 1, p.n) * rng.uniform(0, 40)
            use = a @ x
            if np.any(use > b):
                x *= float(np.min(b / np.maximum(use, 1e-12)))
            assert qp_module._profit(p, x) <= u_star + 1e-9


def test_default_trusts_the_posted_margins_and_sits_inside_the_band():
    low, high = M.u0_band
    inside = 0
    for i in range(100):
        p = _sample(i)
        o = M.outcome(p)
        assert o.u_idle == 0.0 and o.solution.u_star > 0
        ops = [a.op for a in o.default_actions]
        # it reads the posted margins and trusts them: it never verifies a margin or a decline, only reads the
        # limits and the uses it splits the resources by
        assert ops[0] == "read_posted_margins" and not {"probe_margin", "probe_curvature"} & set(ops)
        made = {k + 1 for a in o.default_actions if a.op == "set_plan"
                for k, q in enumerate(a.args["quantities"]) if q > 0}
        assert made <= {k + 1 for k in range(p.n) if p.sticker_margin[k] > 0}
        g = o.u0 / o.solution.u_star
        inside += low <= g <= high and o.u0 < o.solution.u_star
    assert inside >= 90


def _planned_state(p: QPParams) -> dict:
    state = M.initial_state(p)
    for action in M.solve(p).optimal_actions[:-1]:
        M.apply(p, state, action)
    return state


def test_invalid_actions_raise_and_leave_the_state_unchanged():
    p = _sample(2)
    bound = qp_module._quantity_bound(p)
    bad = [Action(op="no_such_op"), Action(op="set_quantity", args={"product": 1}),
           Action(op="set_quantity", args={"product": 0, "quantity": 1.0}),
           Action(op="set_quantity", args={"product": p.n + 1, "quantity": 1.0}),
           Action(op="set_quantity", args={"product": 1, "quantity": -1.0}),
           Action(op="set_quantity", args={"product": 1, "quantity": bound * 2}),
           Action(op="set_quantity", args={"product": 1, "quantity": "3"}),
           Action(op="set_quantity", args={"product": 1, "quantity": float("nan")}),
           Action(op="set_quantity", args={"product": True, "quantity": 1.0}),
           Action(op="probe_margin", args={"product": 1.5}),
           Action(op="probe_curvature", args={"product": float("inf")}),
           Action(op="read_posted_margin", args={"product": 1})]
    for state in (M.initial_state(p), _planned_state(p)):
        for action in bad:
            before = copy.deepcopy(state)
            with pytest.raises(ActionError):
                M.apply(p, state, action)
            assert state == before


def test_a_setting_over_a_limit_is_refused_and_lowering_is_always_allowed():
    p = M.params_from_data(_data())
    state = M.initial_state(p)
    M.apply(p, state, Action(op="set_quantity", args={"product": 2, "quantity": 6.0}))  # uses all 12
    before = copy.deepcopy(state)
    with pytest.raises(ActionError, match="resource 1"):
        M.apply(p, state, Action(op="set_quantity", args={"product": 1, "quantity": 0.5}))
    assert state == before
    M.apply(p, state, Action(op="set_quantity", args={"product": 2, "quantity": 2.0}))
    assert M.apply(p, state, Action(op="resource_slack"))["free"] == {"resource 1": 8.0}
    M.apply(p, state, Action(op="set_quantity", args={"product": 1, "quantity": 8.0}))
    assert M.utility(p, state) == pytest.approx(10 * 8 + 8 * 2 - 0.5 * (64 + 2 * 0.2 * 16 + 0.5 * 4))
    M.apply(p, state, Action(op="clear_plan"))
    assert M.utility(p, state) == 0.0 and not M.finished(state)
    M.apply(p, state, Action(op="finish"))
    assert M.finished(state)


def test_probes_reveal_the_hidden_groups():
    p = _sample(3)
    state = M.initial_state(p)
    assert M.apply(p, state, Action(op="probe_margin", args={"product": 2}))["margin"] == p.c[1]
    row = M.apply(p, state, Action(op="probe_curvature", args={"product": 2}))["decline"]
    assert list(row.values()) == p.Q[1]
    usage = M.apply(p, state, Action(op="probe_usage", args={"product": 2}))["usage"]
    assert list(usage.values()) == [p.A_ub[i][1] for i in range(p.m)]
    assert list(M.apply(p, state, Action(op="probe_limits"))["limits"].values()) == p.b_ub
    assert M.apply(p, state, Action(op="read_posted_margins"))["posted"] == \
        {f"product {k + 1}": p.sticker_margin[k] for k in range(p.n)}
    assert state == M.initial_state(p)


@pytest.mark.parametrize("data, message", [
    (_data(c=[1.0]), "Q must have one row"),
    (_data(Q=[[1.0, 0.2], [0.2]]), "Q row 2"),
    (_data(Q=[[1.0, 0.3], [0.2, 0.5]]), "symmetric"),
    (_data(Q=[[1.0, 2.0], [2.0, 0.5]]), "positive definite"),
    (_data(Q=[[0.0, 0.0], [0.0, 0.5]]), "positive definite"),
    (_data(A_ub=[[1.0, -2.0]]), "A_ub .*non-negative"),
    (_data(b_ub=[-1.0]), "b_ub .*non-negative"),
    (_data(b_ub=[1.0, 2.0]), "b_ub must have one entry"),
    (_data(A_ub=[[1.0, 2.0, 3.0]]), "A_ub row 1"),
    (_data(sticker_margin=[1.0]), "sticker_margin"),
    (_data(c=[1.0, float("nan")]), "finite"),
    (_data(colour="red"), "colour"),
    ({"Q": [[1.0]], "A_ub": [[1.0]], "b_ub": [1.0]}, "c"),
])
def test_params_from_data_rejects_bad_data(data, message):
    with pytest.raises(ValueError, match=message):
        M.params_from_data(data)


def test_params_from_data_defaults_the_sticker_to_the_margins():
    assert M.params_from_data(_data()).sticker_margin == [10.0, 8.0]


def test_a_rendered_environment_is_admitted_without_leaks():
    admitted = 0
    for i in range(4):
        from envs.admission import admit, hidden_leaks

        spec = make_spec("qp", i)
        assert hidden_leaks(spec) == []
        admitted += admit(spec).admitted
    assert admitted >= 3


@pytest.mark.parametrize("data", [
    _data(A_ub=[[1.0, 2.0], [1.0, 2.0]], b_ub=[12.0, 12.0]),  # a repeated row: the tight rows are dependent
    _data(A_ub=[[1.0, 2.0], [2.0, 4.0], [1.0, 0.0]], b_ub=[12.0, 24.0, 4.0]),
    {"c": [10.0, 8.0, 5.0], "Q": [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
     "A_ub": [[1.0, 1.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], "b_ub": [2.0, 1.0, 1.0]},  # degenerate vertex
    _data(A_ub=[[1.0, 0.0], [0.0, 1.0]], b_ub=[0.0, 3.0]),
])
def test_degenerate_instances_are_solved_exactly(data):
    p = M.params_from_data(data)
    solution = M.solve(p)
    assert solution.u_star == pytest.approx(enumerate_active_sets(M, p), rel=1e-9)
    assert M.run(p, solution.optimal_actions) == solution.u_star
    assert all(r <= 1e-9 for r in solution.diagnostics["kkt_residuals"].values())


# --- issue 15: facts, belief, informed and heuristic agents, tiers, admission ------------------------------------

def _measured_spec(index: int, size: int, horizon: int, tier: str | None = None):
    return make_spec("qp", index, size, horizon, tier=tier)


def test_the_objective_rule_matches_the_utility_with_the_half():
    p = M.params_from_data(_data())
    text = " ".join(f.statement for f in M.facts(p, VOCAB) if f.key == "objective")
    assert "1/2" in text and "k = l" in text
    state = M.initial_state(p)
    reply = M.apply(p, state, Action(op="set_plan", args={"quantities": [2.0, 3.0]}))
    x, q, c = np.array([2.0, 3.0]), np.asarray(p.Q), np.asarray(p.c)
    assert "profit" not in reply and "profit" not in M.apply(p, state, Action(op="view_plan"))
    ledger = M.ledger(p, state)
    assert ledger["total"] == pytest.approx(float(c @ x - 0.5 * x @ q @ x)) == pytest.approx(M.utility(p, state))
    assert ledger["first unit income"] - ledger["decline cost"] == pytest.approx(ledger["total"])
    assert M.apply(p, state, Action(op="commit_plan"))["total"] == pytest.approx(ledger["total"])


def test_the_bulk_plan_cuts_in_number_order_and_refuses_bad_lists():
    p = M.params_from_data(_data())  # one limit: x1 + 2 x2 <= 12
    state = M.initial_state(p)
    reply = M.apply(p, state, Action(op="set_plan", args={"quantities": [10.0, 5.0]}))
    assert state["quantities"] == [10.0, 1.0]
    assert reply == {"quantities": {"product 1": 10.0}, "cut": {"product 2": ["resource 1"]}}
    for bad in ([1.0], [1.0, -1.0], [1.0, "2"], [1.0, float("inf")], [True, 1.0], 3.0, None):
        before = copy.deepcopy(state)
        with pytest.raises(ActionError):
            M.apply(p, state, Action(op="set_plan", args={"quantities": bad}))
        assert state == before
    done = M.apply(p, state, Action(op="commit_plan"))
    assert done["total"] == pytest.approx(M.utility(p, state)) and M.finished(state)


@pytest.mark.parametrize("knobs", [(3, 1), (6, 3), (14, 6)])
def test_the_informed_agent_reaches_one_when_every_probe_fits(knobs):
    from mechanisms.players import informed, run_policy
    from setter.spec import turn_budget

    for i in range(4):
        p = _sample(700 + i, *knobs)
        outcome = M.outcome(p)
        budget = turn_budget(M, p, outcome, 1.0)
        assert len(M.probe_order(M.knowledge(p))) == M.probe_allowance(p)
        calls, u = run_policy(M, p, informed(M), budget)
        assert len(calls) <= budget and calls[0] == Action(op="read_posted_margins")
        assert u == pytest.approx(outcome.solution.u_star, rel=1e-9)


def _seat_after(p: QPParams, calls: list[Action]):
    from mechanisms.players import Seat

    seat = Seat(M, p)
    for call in calls:
        seat.call(call)
    return seat


def test_belief_with_every_probe_solves_to_u_star_and_without_probes_uses_no_hidden_value():
    sheet = [Action(op="read_posted_margins")]
    for i in range(5):
        p = _sample(720 + i, 5, 3)
        everything = _seat_after(p, sheet + M.probe_order(M.knowledge(p)))
        assert M.solve(M.believed(everything.known)).u_star == pytest.approx(M.solve(p).u_star, rel=1e-9)
        data = p.model_dump()
        other = M.params_from_data({**data, "c": [v + 1.0 for v in data["c"]],
                                    "Q": [[q * 1.1 for q in row] for row in data["Q"]],
                                    "A_ub": [[a + 0.5 for a in row] for row in data["A_ub"]],
                                    "b_ub": [b + 3.0 for b in data["b_ub"]]})
        if qp_module._quantity_bound(other) == qp_module._quantity_bound(p):
            assert M.believed(_seat_after(other, sheet).known) == M.believed(_seat_after(p, sheet).known)
        assert M.believed(_seat_after(p, sheet).known).c == list(p.sticker_margin)
        M.solve(M.believed(_seat_after(p, sheet + M.probe_order(M.knowledge(p))[:4]).known))  # a valid instance


def test_heuristics_play_within_the_budget_and_stay_between_idle_and_u_star():
    from mechanisms.players import run_policy
    from setter.spec import turn_budget

    for i in range(6):
        p = _sample(740 + i, 6, 3)
        outcome = M.outcome(p)
        budget = turn_budget(M, p, outcome, 1.0)
        heuristics = M.heuristic_policies()
        assert set(heuristics) == {"posted_greedy", "own_optimum", "own_optimum_scaled", "posted_scaled"}
        for policy in heuristics.values():
            calls, u = run_policy(M, p, policy, budget)
            assert len(calls) <= budget
            # a naive plan may lose money (overproduction under the decline): below the idle 0, never above u*
            assert u <= outcome.solution.u_star + 1e-9 * max(1.0, abs(outcome.solution.u_star))
            assert 0.0 <= score(u, outcome.u0, outcome.solution.u_star) <= 1.0
        assert run_policy(M, p, heuristics["own_optimum_scaled"])[1] >= outcome.u_idle - 1e-9  # scaled: no loss


def test_the_informed_agent_beats_listing_order_at_frontier():
    from mechanisms.players import informed, naive_prober, run_policy
    from setter.spec import turn_budget

    tier = M.tiers()["frontier"]
    gaps = []
    for i in range(8):
        p = _sample(i, *tier.grid[0])
        outcome = M.outcome(p)
        budget = turn_budget(M, p, outcome, tier.probe_share)
        informed_u, naive_u = (run_policy(M, p, player(M), budget)[1] for player in (informed, naive_prober))
        gaps.append(score(informed_u, outcome.u0, outcome.solution.u_star)
                    - score(naive_u, outcome.u0, outcome.solution.u_star))
    assert np.mean(gaps) >= 0.15


# --- issue 26: set-all sets all; decisions show no profit ----------------------------------------------------------

@pytest.mark.parametrize("knobs", [(4, 2), (14, 6)])
def test_set_all_gives_the_same_plan_from_scratch_and_after_any_trial_plan(knobs):
    rng = np.random.default_rng([26, *knobs])
    for i in range(6):
        p = _sample(900 + i, *knobs)
        bound = qp_module._quantity_bound(p)
        for _ in range(8):
            call = Action(op="set_plan", args={"quantities": [float(v) for v in
                                                             rng.choice([0.0, 2.0, 9.0, bound], p.n)]})
            fresh, tried = M.initial_state(p), M.initial_state(p)
            for _ in range(int(rng.integers(1, 4))):
                roll = rng.random()
                if roll < 0.5:
                    M.apply(p, tried, Action(op="set_plan", args={"quantities": [float(v) for v in
                                                                                rng.uniform(0, 30, p.n)]}))
                elif roll < 0.85:
                    try:
                        M.apply(p, tried, Action(op="set_quantity", args={"product": int(rng.integers(1, p.n + 1)),
                                                                          "quantity": float(rng.uniform(0, 20))}))
                    except ActionError:
                        pass
                else:
                    M.apply(p, tried, Action(op="clear_plan"))
            assert M.apply(p, fresh, call) == M.apply(p, tried, call) and fresh == tried


def test_decisions_show_no_profit_nor_hidden_figure():
    from envs.completeness import observed_numbers

    rng = np.random.default_rng(6)
    for i in range(6):
        p = _sample(950 + i, 6, 3)
        secret = set(np.round(M.secret_numbers(p), 6)) - set(np.round(M.public_numbers(p), 6))
        state = M.initial_state(p)
        for _ in range(6):
            wanted = [float(v) for v in rng.choice([0.0, 1.5, 7.0, 40.0], p.n)]
            for reply in (M.apply(p, state, Action(op="set_plan", args={"quantities": wanted})),
                          M.apply(p, state, Action(op="view_plan"))):
                assert "profit" not in reply and "total" not in reply
            typed = M.apply(p, state, Action(op="set_plan", args={"quantities": wanted}))
            assert not (observed_numbers(typed) - set(wanted)) & secret
        assert set(M.apply(p, state, Action(op="clear_plan"))["quantities"].values()) == {0.0}


@pytest.mark.parametrize("knobs", [(12, 5), (16, 8)])
def test_the_solver_is_exact_at_the_tier_sizes(knobs):
    """At frontier sizes the enumeration is out of reach: the SLSQP route and the active-set search (two methods)
    agree, and the KKT residuals verify the optimum."""
    for i in range(3):
        p = _sample(780 + i, *knobs)
        solution = M.solve(p)
        assert all(r <= 1e-9 for r in solution.diagnostics["kkt_residuals"].values())
        c, q, _, _ = qp_module._arrays(p)
        g, h = qp_module._constraints(p)
        x, active, multipliers, _ = qp_module.active_set_search(q, c, g, h)
        assert qp_module._profit(p, x) == pytest.approx(solution.u_star, rel=1e-9, abs=1e-9)


def test_the_tiers_cover_their_cells_and_rendered_environments_are_admitted():
    from envs.admission import admit

    tiers = M.tiers()
    assert list(tiers) == ["easy", "medium", "hard", "frontier"]
    for tier in tiers.values():
        for size, horizon in tier.grid:
            assert M.size_range[0] <= size <= M.size_range[1]
            assert M.horizon_range[0] <= horizon <= M.horizon_range[1]
    admitted = sum(admit(_measured_spec(i, 4, 2)).admitted for i in range(4))
    assert admitted >= 3
    frontier = _measured_spec(0, *tiers["frontier"].grid[0], tier="frontier")
    assert frontier.difficulty.facts_fit < 1.0
