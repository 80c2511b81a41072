"""inventory_dp: the vectorised Bellman solver against the plain recursion, the bulk close, facts, belief, heuristics
and admission at every difficulty tier (issue 15); the posted forecasts on one sheet, a belief built from observations,
the choice of which periods to verify, re-planning between closes and the ledger of the ending (issue 26); the generic
checks (enumeration on small instances among them) are in test_conformance."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import mechanisms
from envs.environment import Environment
from mechanisms import players
from mechanisms.base import ActionError
from mechanisms.facts import BUDGET_END, END, OBJECTIVE, rules_text
from mechanisms.inventory_dp import BOOKS, PLAN_CLOSES, InventoryParams, _period_step
from mechanisms.players import Knowledge, Seat, run_policy
from schemas.envspec import Action
from setter.corpus import BUNDLE_KEYS, VOCAB_KEYS
from setter.phrasebook import vocabulary
from setter.spec import turn_budget
from tests.support import make_spec

M = mechanisms.get("inventory_dp")
VOCAB = vocabulary({k: k for k in (*VOCAB_KEYS, *BUNDLE_KEYS)})


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
    from envs.difficulty import facts_fit

    for i in range(8):
        p = _sample(i)
        o = M.outcome(p)
        budget = turn_budget(M, p, o)
        assert facts_fit(M, p, o, budget) == 1.0
        seat = Seat(M, p, budget)
        players.informed(M)(seat)
        assert seat.errors == 0 and seat._utility() == pytest.approx(o.solution.u_star, abs=1e-9)
        assert M.believed(seat.known) == p  # every figure verified, the sheet read: the belief is the truth


def _knowing(p: InventoryParams, calls: list[Action]) -> Knowledge:
    seat = Seat(M, p)
    seat.play(calls)
    return seat.known


def test_belief_is_built_from_observations_only():
    for i in range(8):
        p = _sample(i)
        every = [Action(op="read_forecasts"), *M.probe_order(M.knowledge(p))]
        assert M.believed(_knowing(p, every)) == p
        blind = M.believed(M.knowledge(p))
        other = M.params_from_data({**p.model_dump(), "demand": [d + 1 for d in p.demand], "price": p.price + 1,
                                    "unit_cost": p.unit_cost + 1, "fixed_cost": p.fixed_cost + 1,
                                    "holding_cost": p.holding_cost + 1, "shortage_penalty": p.shortage_penalty + 1,
                                    "backlog": True, "max_backlog": 2, "backlog_cost": 1.0,
                                    "forecast": [f + 1 for f in p.forecast]})
        assert M.believed(M.knowledge(other)) == blind  # nothing seen: nothing hidden believed
        sheet = M.believed(_knowing(p, [Action(op="read_forecasts")]))
        assert sheet.demand == p.forecast and sheet.forecast == p.forecast
        assert M.believed(_knowing(other, [Action(op="read_forecasts")])).demand == other.forecast


def test_an_unverified_demand_is_its_forecast_scaled_by_the_verified_periods_the_nearest_weighing_most():
    p = M.params_from_data({"demand": [20, 10, 30, 40], "forecast": [10, 10, 20, 10], "capacity": 60,
                            "max_order": 60, "initial_stock": 0, "price": 10, "unit_cost": 4, "fixed_cost": 3,
                            "holding_cost": 1, "shortage_penalty": 2})
    known = _knowing(p, [Action(op="read_forecasts"), Action(op="probe_demand", args={"period": 1}),
                         Action(op="probe_demand", args={"period": 2})])
    # weights 1 and 1/4: ratio (20 + 10/4) / (10 + 10/4) = 1.8
    assert M.believed(known).demand == [20, 10, 36, 18]
    # a closed period's demand is seen too
    known = _knowing(p, [Action(op="read_forecasts"), Action(op="close_periods", args={"orders": [20]})])
    assert M.believed(known).demand == [20, 20, 40, 20]


def test_the_informed_agent_verifies_period_one_then_the_farthest_and_the_naive_one_in_order():
    p = _sample(3, 40, 12)
    known = _knowing(p, [Action(op="read_forecasts")])
    informed = [a.args.get("period") for a in M.probe_order(known) if a.op == "probe_demand"]
    assert informed == [1, *range(12, 1, -1)]
    naive = [a.args.get("period") for a in M.listing_order(known) if a.op == "probe_demand"]
    assert naive == list(range(1, 13))


def test_the_forecasts_are_least_reliable_far_out():
    near, far = [], []
    for i in range(30):
        p = _sample(i, 60, 40)
        errors = [abs(np.log((f + 1) / (d + 1))) for f, d in zip(p.forecast, p.demand, strict=True)]
        bias = np.median([np.log((f + 1) / (d + 1)) for f, d in zip(p.forecast[:5], p.demand[:5], strict=True)])
        near += [abs(e - abs(bias)) for e in errors[:10]]
        far += [abs(e - abs(bias)) for e in errors[-10:]]
    assert np.mean(far) > 2 * np.mean(near)


def test_acting_on_a_belief_replans_from_what_each_close_showed():
    p = _sample(5, 60, 24)
    seat = Seat(M, p)
    seat.call("read_forecasts")
    M.act_on_belief(seat, M.believed(seat.known))
    closes = [a for a in seat.calls if a.op == "close_periods"]
    assert len(closes) == PLAN_CLOSES and sum(len(a.args["orders"]) for a in closes) == p.horizon
    assert seat.known.seen[-1][1]["finished"]
    # with a turn left for one call, it closes every period in it
    seat = Seat(M, p, budget=2)
    seat.call("read_forecasts")
    M.act_on_belief(seat, M.believed(seat.known))
    assert len(seat.calls[-1].args["orders"]) == p.horizon


def test_heuristics_play_within_the_budget_and_score_at_most_one():
    from envs.scoring import score

    for i in range(6):
        for cell, share in (((20, 6), 1.0), ((60, 24), 0.4)):
            p = _sample(i, *cell)
            o = M.outcome(p)
            budget = turn_budget(M, p, o, share)
            for name, policy in M.heuristic_policies().items():
                calls, u = run_policy(M, p, policy, budget)
                assert len(calls) <= budget, name
                assert M.play(p, calls, budget)[2] == 0, name
                assert u <= o.solution.u_star + 1e-6, name
                assert score(u, o.u0, o.solution.u_star) <= 1.0


def test_the_default_reads_the_sheet_and_trusts_it_in_one_bulk_call():
    p = _sample(1)
    actions = M.default_actions(p)
    assert [a.op for a in actions] == ["read_forecasts", "close_periods"]
    orders = actions[1].args["orders"]
    assert len(orders) == p.horizon
    # it orders up to the forecasts, as if they were the demand
    stock = p.initial_stock
    for t, q in enumerate(orders):
        assert q == min(max(p.forecast[t] - stock, 0), p.capacity - stock)
        stock = max(stock + q - p.forecast[t], 0)
    assert M.read_forecasts(p, M.initial_state(p)) == {
        "forecasts": {f"period {t + 1}": f for t, f in enumerate(p.forecast)}}


def test_the_ledger_states_the_total_profit_and_its_parts_however_the_run_ends():
    for backlog in (False, True):
        p = next(q for i in range(40) if (q := _sample(i)).backlog == backlog)
        for actions in ([], [Action(op="close_periods", args={"orders": [3, 0]})],
                        M.solve(p).optimal_actions, [Action(op="finish")]):
            state = M.initial_state(p)
            for action in actions:
                M.apply(p, state, action)
            ledger = M.ledger(p, state)
            assert ledger["total profit"] == pytest.approx(M.utility(p, state), abs=1e-9)
            parts = ledger["sales revenue"] - sum(ledger[k] for k in BOOKS[1:])
            assert parts == pytest.approx(ledger["total profit"], abs=1e-6)
    spec = make_spec("inventory_dp", 0)
    env = Environment(spec, "hidden")
    tool = env.tool_for("finish").name
    outcome = env.step(tool, {})["outcome"]
    assert outcome["episode over"] == "finished" and len(outcome) == len(M.ledger(M.params_from_data(spec.params),
                                                                                     env.state)) + 1


@pytest.mark.parametrize("tier", ["easy", "medium", "hard", "frontier"])
def test_rendered_environments_pass_admission_at_every_tier(tier):
    from envs.admission import admit

    verdicts = [admit(make_spec("inventory_dp", i, tier=tier)) for i in range(6)]
    refused = [v.reason for v in verdicts if not v.admitted]
    refusals = ("completeness", "prose", "executes", "default_replay", "C3", "structure")
    assert not any(r.startswith(refusals) for r in refused), refused
    assert len(refused) < len(verdicts), refused
