"""inventory_dp: the vectorised Bellman solver against the plain recursion, the bulk close, facts, belief, heuristics
and admission at every difficulty tier (issue 15); the generic checks (enumeration on small instances among them) are
in test_conformance."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import mechanisms
from mechanisms.base import ActionError
from mechanisms.facts import BUDGET_END, END, OBJECTIVE, rules_text
from mechanisms.inventory_dp import InventoryParams, _period_step
from schemas.envspec import Action
from setter.corpus import VOCAB_KEYS
from setter.spec import turn_budget

M = mechanisms.get("inventory_dp")
VOCAB = {k: k for k in VOCAB_KEYS}


def _sample(i: int, size: int | None = None, horizon: int | None = None) -> InventoryParams:
    return M.sample(np.random.default_rng([23, i]), size or M.default_size, horizon or M.default_horizon)


def _loop_solver(p: InventoryParams) -> float:
    """The plain backward recursion, one state and one order at a time (an independent check at larger sizes)."""
    low = -p.max_backlog if p.backlog else 0
    stocks = range(low, p.capacity + 1)
    value = {s: -p.shortage_penalty * max(-s, 0) for s in stocks}
    for t in reversed(range(p.horizon)):
        value = {s: max(profit + value[s_next]
                        for q in range(min(p.max_order, p.capacity - max(s, 0)) + 1)
                        for s_next, profit in [_period_step(p, s, q, p.demand[t])])
                 for s in stocks}
    return value[p.initial_stock]


@pytest.mark.parametrize("cell", [(20, 6), (40, 16), (60, 24)])
def test_solver_matches_the_plain_recursion_at_tier_sizes(cell):
    for i in range(2):
        p = _sample(30 + i, *cell)
        solution = M.solve(p)
        assert solution.u_star == pytest.approx(_loop_solver(p), rel=1e-9, abs=1e-6)
        assert M.run(p, solution.optimal_actions) == pytest.approx(solution.u_star, rel=1e-9, abs=1e-6)
        assert [a.op for a in solution.optimal_actions] == ["close_periods"] * 2


def test_the_largest_tier_cells_solve_fast():
    import time

    cells = [cell for tier in M.tiers().values() for cell in tier.grid]
    assert all(M.size_range[0] <= s <= M.size_range[1] and M.horizon_range[0] <= h <= M.horizon_range[1]
               for s, h in cells)
    size, horizon = max(cells)
    started = time.perf_counter()
    M.outcome(_sample(0, size, horizon))
    assert time.perf_counter() - started < 2.0


def test_close_periods_orders_and_closes_in_one_call_and_cuts_orders_to_fit():
    p = M.params_from_data({"demand": [5, 5, 5], "forecast": [4, 4, 4], "capacity": 8, "max_order": 8,
                            "initial_stock": 2, "price": 10, "unit_cost": 4, "fixed_cost": 3, "holding_cost": 1,
                            "shortage_penalty": 2})
    state = M.initial_state(p)
    M.apply(p, state, Action(op="place_order", args={"quantity": 1}))
    reply = M.apply(p, state, Action(op="close_periods", args={"orders": [2, 8]}))
    # period 1: 2 + 1 + 2 = 5 on hand, all sold; period 2: 8 ordered, 5 sold, 3 left
    assert [line["ordered"] for line in reply["closed"]] == [3, 8]
    assert state["period"] == 2 and state["stock"] == 3 and not reply["finished"]
    reply = M.apply(p, state, Action(op="close_periods", args={"orders": [8]}))  # 3 + 8 > 8: cut to 5
    assert reply["closed"][0]["ordered"] == 5 and reply["finished"] and "total profit" in reply
    assert reply["total profit"] == pytest.approx(M.utility(p, state))
    for bad in ({"orders": []}, {"orders": [1, 1, 1, 1]}, {"orders": [-1]}, {"orders": [9]}, {"orders": "1"}):
        fresh = M.initial_state(p)
        before = copy.deepcopy(fresh)
        with pytest.raises(ActionError):
            M.apply(p, fresh, Action(op="close_periods", args=bad))
        assert fresh == before


def test_facts_state_every_rule_and_the_rules_carry_no_hidden_number():
    for backlog in (False, True):
        p = next(q for i in range(40) if (q := _sample(i)).backlog == backlog)
        facts = M.facts(p, VOCAB)
        keys = {f.key for f in facts}
        assert {OBJECTIVE, END, BUDGET_END, "structure", "end_of_run", "shortage", "demand"} <= keys
        text = M.describe(p, VOCAB)
        assert f"at most {p.capacity}" in text and "still waiting after the last" in text
        rules = rules_text(facts)
        public = {str(x) for x in M.public_numbers(p)}
        hidden = {f"{x:g}" for x in M.secret_numbers(p)} - public
        assert not any(f" {x} " in f" {rules} " for x in hidden if len(x) > 1)


def test_the_informed_agent_reaches_one_when_every_probe_fits():
    from envs.difficulty import facts_fit, informed_actions

    for i in range(8):
        p = _sample(i)
        o = M.outcome(p)
        budget = turn_budget(M, p, o)
        assert facts_fit(M, p, o, budget) == 1.0
        u, _, errors = M.play(p, informed_actions(M, p, budget), budget)
        assert errors == 0 and u == pytest.approx(o.solution.u_star, abs=1e-9)


def test_belief_with_every_probe_is_the_truth_and_without_probes_uses_no_hidden_value():
    for i in range(8):
        p = _sample(i)
        assert M.believed(p, M.probe_order(p)) == p
        blind = M.believed(p, [])
        other = M.params_from_data({**p.model_dump(), "demand": [d + 1 for d in p.demand], "price": p.price + 1,
                                    "unit_cost": p.unit_cost + 1, "fixed_cost": p.fixed_cost + 1,
                                    "holding_cost": p.holding_cost + 1, "shortage_penalty": p.shortage_penalty + 1,
                                    "backlog": True, "max_backlog": 2, "backlog_cost": 1.0})
        assert M.believed(other, []) == blind
        assert blind.demand == p.forecast


def test_heuristics_play_within_the_budget_and_score_between_zero_and_one():
    from envs.scoring import score

    for i in range(6):
        for cell, share in (((20, 6), 1.0), ((60, 24), 0.5)):
            p = _sample(i, *cell)
            o = M.outcome(p)
            budget = turn_budget(M, p, o, share)
            for name, actions in M.heuristic_actions(p).items():
                u, turns, errors = M.play(p, actions, budget)
                assert errors == 0 and turns <= budget, name
                assert u <= o.solution.u_star + 1e-6, name
                assert 0.0 <= score(u, o.u0, o.solution.u_star) <= 1.0


def test_the_default_trusts_the_forecast_in_one_bulk_call():
    p = _sample(1)
    actions = M.default_actions(p)
    assert [a.op for a in actions] == ["read_forecast", "close_periods"]
    assert len(actions[1].args["orders"]) == p.horizon


@pytest.mark.parametrize("tier", ["easy", "medium", "hard", "frontier"])
def test_rendered_environments_pass_admission_at_every_tier(tier):
    from envs.admission import admit
    from tests.support import make_spec

    verdicts = [admit(make_spec("inventory_dp", i, tier=tier)) for i in range(6)]
    refused = [v.reason for v in verdicts if not v.admitted]
    refusals = ("completeness", "prose", "executes", "default_replay", "C3", "structure")
    assert not any(r.startswith(refusals) for r in refused), refused
    assert len(refused) < len(verdicts), refused
