"""ecommerce_365: dynamics by hand, bankruptcy, refusals, facts, belief, heuristics and tiers (the solver against
exhaustive search and its plans are in test_lot_sizing; determinism, the data round trip, admission at 365 days and
the fuzzing of random actions in test_conformance); the posted forecasts on one sheet, a belief built from
observations (a bias and a trend read from the verified ranges), the order of verification and the ledger of the
ending (issue 26)."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

import mechanisms
from envs.admission import admit
from envs.environment import MAX_PLAN_STEPS, Environment
from mechanisms import players
from mechanisms.base import ActionError, ParamsError
from mechanisms.ecommerce_365 import MAX_RANGE, EcommerceParams, _num
from mechanisms.players import Seat, run_policy
from schemas.envspec import Action
from setter.corpus import BUNDLE_KEYS, VOCAB_KEYS
from setter.phrasebook import vocabulary
from tests.support import make_spec

M = mechanisms.get("ecommerce_365")
VOCAB = vocabulary({k: k for k in (*VOCAB_KEYS, *BUNDLE_KEYS)})


def _sample(i: int, size: int | None = None, horizon: int | None = None) -> EcommerceParams:
    return M.sample(np.random.default_rng([7, i]), size or M.default_size, horizon or M.default_horizon)


def _data(**changes) -> dict:
    """A hand-made one-product, six-day store; keyword arguments replace fields."""
    data = {
        "base_demand": [[4, 6, 5, 8, 3, 6]],
        "forecast": [[5, 5, 5, 5, 5, 5]],
        "sticker_price_level": [1],
        "prices": [[10.0, 14.0]],
        "price_response": [[120, 80]],
        "ad_costs": [[0.0, 6.0]],
        "ad_response": [[100, 150]],
        "unit_cost": [5.0],
        "fixed_cost": [12.0],
        "holding_cost": [0.5],
        "lead_time": [1],
        "daily_fee": 2.0,
        "initial_cash": 200.0,
        "grace_days": 2,
        "max_order": 100,
    }
    data.update(changes)
    return data


def _params(**changes) -> EcommerceParams:
    return M.params_from_data(_data(**changes))


def _play(p, actions):
    state = M.initial_state(p)
    for action in actions:
        if state["finished"]:
            break
        M.apply(p, state, action)
    return state


def test_contract_shape():
    p = _sample(0)
    ops = M.operations(p)
    assert len(ops) >= 10 and {op.kind for op in ops} == {"probe", "info", "decision", "clock"}
    assert [op.name for op in ops if op.decoy] == ["read_forecasts"]
    assert not next(op for op in ops if op.decoy).args  # one call shows every posted figure
    names = {op.name for op in ops}
    assert {"finish", "advance_day", "advance_days", "set_price", "set_ads", "order_stock", "cancel_order"} <= names
    for op in ops:
        for arg in op.args.values():
            if arg.type == "array":  # a plan: one entry per day from today
                assert arg.items == "integer" and arg.max_items == p.horizon and arg.minimum in (0, 1)
                continue
            assert arg.type == "integer" and arg.minimum == 1 and arg.maximum is not None
    assert M.group == "external" and M.version == 4
    assert M.size_range == (1, 3) and M.horizon_range == (30, 365) and M.default_horizon == 365
    assert 3 <= len(M.grid()) <= 6
    assert p.products == M.default_size and p.horizon == 365
    json.dumps(M.initial_state(p))
    assert M.probe_allowance(p) == p.products * (4 + 4) + 2


def test_solver_facts_say_exact_and_the_replay_reaches_u_star():
    for knobs in [(1, 30), (2, 365), (3, 300)]:
        p = _sample(11, *knobs)
        solution = M.solve(p)
        assert solution.facts["exact"] is True
        assert "Wagner-Whitin" in solution.facts["method"]
        assert solution.facts["relaxation_value"] == pytest.approx(solution.u_star, rel=1e-9)
        assert M.run(p, solution.optimal_actions) == solution.u_star
        state = _play(p, solution.optimal_actions)
        assert state["finished"] and not state["bankrupt"] and state["day"] == p.horizon
        assert len(solution.optimal_actions) <= MAX_PLAN_STEPS
        assert solution.u_star >= 0


def test_one_day_by_hand():
    p = _params()
    state = M.initial_state(p)
    assert state["price"] == [1] and state["ads"] == [0]  # middle price level of two is level 2
    M.apply(p, state, Action(op="order_stock", args={"product": 1, "quantity": 10}))
    obs = M.apply(p, state, Action(op="advance_day"))
    assert obs["sold"] == [0] and state["stock"] == [10]  # arrives at the start of day 2
    assert state["cash"] == pytest.approx(200 - 12 - 5 * 10 - 2)
    M.apply(p, state, Action(op="set_ads", args={"product": 1, "level": 2}))
    obs = M.apply(p, state, Action(op="advance_day"))
    demand = 6 * 80 * 150 // 10000  # day 2 at price level 2 with ads: 7 units
    left = 10 - demand
    assert obs["sold"] == [demand] and state["stock"] == [left]
    assert state["cash"] == pytest.approx(136 + 14 * demand - 6 - 0.5 * left - 2)


def test_finish_runs_an_autopilot_that_still_receives_orders():
    p = _params()
    state = M.initial_state(p)
    M.apply(p, state, Action(op="set_ads", args={"product": 1, "level": 2}))
    M.apply(p, state, Action(op="order_stock", args={"product": 1, "quantity": 20}))
    M.apply(p, state, Action(op="advance_day"))
    M.apply(p, state, Action(op="order_stock", args={"product": 1, "quantity": 5}))  # dropped at finish
    projected = M.utility(p, state)
    obs = M.apply(p, state, Action(op="finish"))
    assert obs["finished"] and obs["autopilot"] and state["finished"]
    assert M.utility(p, state) == pytest.approx(projected)
    # autopilot: price level 2, ads off, no more orders; sells the 20 units over days 2..6
    sold = 0
    cash = 200 - 6 - 12 - 100 - 2
    stock = 20
    for t in range(1, 6):
        s = min(p.base_demand[0][t] * 80 // 100, stock)
        stock -= s
        sold += s
        cash += 14 * s - 0.5 * stock - 2
    assert state["cash"] == pytest.approx(cash)
    with pytest.raises(ActionError, match="over"):
        M.apply(p, state, Action(op="advance_day"))


def test_idle_policy_pays_the_fee_every_day():
    p = _params()
    assert M.run(p, M.idle_actions(p)) == pytest.approx(200 - 6 * 2)


def test_bankruptcy_ends_the_run_after_more_than_grace_days_in_the_red():
    p = _params(initial_cash=10.0, daily_fee=4.0, grace_days=1, base_demand=[[0] * 6])
    state = M.initial_state(p)
    obs = M.apply(p, state, Action(op="advance_days", args={"days": 3}))  # 6, 2, -2
    assert state["cash"] == pytest.approx(-2) and state["negative_days"] == 1 and not state["bankrupt"]
    obs = M.apply(p, state, Action(op="advance_days", args={"days": 3}))  # -6: second day in the red
    assert obs["bankrupt"] and obs["bankrupt_on_day"] == 4 and obs["finished"]
    assert obs["closed_days"] == [4, 4]
    assert state["bankrupt"] and state["finished"] and M.utility(p, state) == pytest.approx(-6)
    view = M.apply(p, state, Action(op="view_account"))
    assert view["bankrupt"] is True
    before = copy.deepcopy(state)
    for action in (Action(op="set_price", args={"product": 1, "level": 1}), Action(op="finish"),
                   Action(op="order_stock", args={"product": 1, "quantity": 1})):
        with pytest.raises(ActionError, match="bankrupt"):
            M.apply(p, state, action)
    assert state == before
    assert M.run(p, M.idle_actions(p)) == pytest.approx(-6)


def test_a_relaxed_optimum_that_goes_bankrupt_is_not_certified():
    p = _params(initial_cash=0.0, fixed_cost=[50.0], grace_days=0)
    with pytest.raises(ValueError, match="not certified"):
        M.solve(p)


def test_sample_raises_a_clear_error_when_no_draw_is_certified(monkeypatch):
    monkeypatch.setattr(M, "_draw", lambda rng, n, T: _params(initial_cash=0.0, fixed_cost=[50.0], grace_days=0))
    with pytest.raises(RuntimeError, match="certified"):
        M.sample(np.random.default_rng(0), 1, 6)


def test_default_reads_the_sheet_trusts_it_and_never_probes():
    for i in range(5):
        p = _sample(i)
        actions = M.default_actions(p)
        kinds = {op.name: op.kind for op in M.operations(p)}
        assert actions[0].op == "read_forecasts"
        assert not any(kinds[a.op] == "probe" for a in actions)
        state = _play(p, actions)
        assert state["price"] == [s - 1 for s in p.sticker_price_level]
        assert state["ads"] == [p.ad_levels // 2] * p.products
        lead = min(7, p.horizon - 1)  # the longest lead there is: it never learns the true one
        for a in actions:
            if a.op == "plan_orders":
                forecast = p.forecast[a.args["product"] - 1]
                quantities = a.args["quantities"]
                assert quantities[0] == sum(forecast[:lead + 7])
                assert all(q == (sum(forecast[d + lead:d + lead + 7]) if d % 7 == 0 else 0)
                           for d, q in enumerate(quantities) if d)
                assert len(quantities) <= p.horizon - lead
        assert len(actions) <= 3 * p.products + 2
        o = M.outcome(p)
        assert o.u0 < o.solution.u_star
        low, high = M.u0_band
        assert low <= (o.u0 - o.u_idle) / (o.solution.u_star - o.u_idle) <= high


def test_invalid_actions_raise_and_leave_the_state_unchanged():
    p = _params(lead_time=[2])
    state = M.initial_state(p)
    M.apply(p, state, Action(op="advance_days", args={"days": 4}))  # today is day 5 of 6
    before = copy.deepcopy(state)
    bad = [
        Action(op="order_stock", args={"product": 1, "quantity": 3}),  # would arrive on day 7
        Action(op="order_stock", args={"product": 2, "quantity": 3}),
        Action(op="order_stock", args={"product": 1, "quantity": 101}),
        Action(op="cancel_order", args={"product": 1}),  # nothing pending
        Action(op="advance_days", args={"days": 3}),  # only 2 left
        Action(op="set_price", args={"product": 1, "level": 3}),
        Action(op="set_ads", args={"product": 1, "level": 0}),
        Action(op="set_ads", args={"product": 1, "level": 1.5}),
        Action(op="probe_base_demand", args={"product": 1, "first_day": 4, "last_day": 2}),
        Action(op="plan_orders", args={"product": 1, "quantities": [0, 3]}),  # day 6's order would arrive on day 8
        Action(op="plan_orders", args={"product": 1, "quantities": [0, 0, 0]}),  # only 2 days left
        Action(op="plan_prices", args={"product": 1, "levels": [3]}),
        Action(op="plan_ads", args={"product": 1, "levels": []}),
        Action(op="probe_costs", args={"product": "1"}),
        Action(op="advance_days", args={"days": float("nan")}),
        Action(op="no_such_operation"),
    ]
    for action in bad:
        with pytest.raises(ActionError):
            M.apply(p, state, action)
        assert state == before
    long = _sample(0)
    with pytest.raises(ActionError, match=f"at most {MAX_RANGE}"):
        M.apply(long, M.initial_state(long),
                Action(op="probe_base_demand", args={"product": 1, "first_day": 1, "last_day": MAX_RANGE + 1}))


def test_orders_accumulate_and_cancel():
    p = _params()
    state = M.initial_state(p)
    M.apply(p, state, Action(op="order_stock", args={"product": 1, "quantity": 30}))
    assert M.apply(p, state, Action(op="order_stock", args={"product": 1, "quantity": 20}))["pending_order"] == 50
    with pytest.raises(ActionError, match="total"):
        M.apply(p, state, Action(op="order_stock", args={"product": 1, "quantity": 51}))
    assert M.apply(p, state, Action(op="cancel_order", args={"product": 1}))["pending_order"] == 0
    M.apply(p, state, Action(op="order_stock", args={"product": 1, "quantity": 7}))
    M.apply(p, state, Action(op="advance_day"))
    view = M.apply(p, state, Action(op="view_pipeline"))
    assert view == {"on_the_way": [], "pending_today": [0]} and state["stock"] == [7]  # lead time 1: arrived


def test_probes_and_views_report_the_instance():
    p = _sample(2, 2, 120)
    state = M.initial_state(p)
    obs = M.apply(p, state, Action(op="probe_base_demand", args={"product": 2, "first_day": 10, "last_day": 20}))
    assert obs["base_demand"] == p.base_demand[1][9:20]
    obs = M.apply(p, state, Action(op="read_forecasts"))["forecasts"]
    assert [row["forecast"] for row in obs] == p.forecast and len(obs[1]["forecast"]) == 120
    assert [row["at_price_level"] for row in obs] == p.sticker_price_level
    assert {row["at_ad_level"] for row in obs} == {p.ad_levels // 2 + 1}
    assert M.apply(p, state, Action(op="probe_lead_time", args={"product": 2}))["lead_time_days"] == p.lead_time[1]
    obs = M.apply(p, state, Action(op="probe_price_response", args={"product": 1}))
    assert [lv["price"] for lv in obs["levels"]] == p.prices[0]
    obs = M.apply(p, state, Action(op="probe_ad_response", args={"product": 1}))
    assert [lv["demand_percent"] for lv in obs["levels"]] == p.ad_response[0]
    obs = M.apply(p, state, Action(op="probe_costs", args={"product": 2}))
    assert obs["fixed_cost_per_order"] == p.fixed_cost[1] and obs["unit_cost"] == p.unit_cost[1]
    obs = M.apply(p, state, Action(op="probe_store_terms"))
    assert obs["daily_fee"] == p.daily_fee and obs["bankrupt_after_negative_days"] == p.grace_days + 1
    obs = M.apply(p, state, Action(op="view_account"))
    assert obs["day"] == 1 and obs["cash"] == p.initial_cash and obs["stock"] == [0, 0]
    assert state == M.initial_state(p)


@pytest.mark.parametrize("changes, message", [
    ({"base_demand": [[1, 2, 3]]}, "forecast must be 1 rows of 3 days"),
    ({"base_demand": [[1, -2, 3, 4, 5, 6]]}, "base_demand entries"),
    ({"prices": [[10.0, 10.0]]}, "strictly increasing"),
    ({"prices": [[10.0]]}, "price_response must be 1 rows"),
    ({"ad_costs": [[1.0, 6.0]]}, "level 1"),
    ({"ad_response": [[100, 1500]]}, "ad_response percentages"),
    ({"unit_cost": [-1.0]}, "unit_cost must be non-negative"),
    ({"holding_cost": [0.5, 0.5]}, "holding_cost must have one entry per product"),
    ({"lead_time": [6]}, "lead_time entries"),
    ({"sticker_price_level": [3]}, "sticker_price_level"),
    ({"daily_fee": -1.0}, "daily_fee"),
    ({"initial_cash": float("nan")}, "finite"),
    ({"grace_days": 99}, "grace_days"),
    ({"max_order": 10}, "max_order must be"),
    ({"extra": 1}, "Extra inputs"),
    ({"base_demand": [[1] * 6] * 4, "forecast": [[1] * 6] * 4}, "1 to 3"),
])
def test_params_from_data_rejects_bad_data(changes, message):
    with pytest.raises(ParamsError, match=message):
        M.params_from_data(_data(**changes))


def test_describe_states_the_whole_instance():
    p = _sample(4, 2, 60)
    text = M.describe(p, VOCAB)
    assert "60 periods" in text and "bankrupt" in text
    for i in range(2):
        assert " ".join(map(str, p.base_demand[i])) in text
        assert ", ".join(f"{_num(x)}/{r}%" for x, r in zip(p.prices[i], p.price_response[i], strict=True)) in text
        assert f"{i + 1}: {_num(p.unit_cost[i])}, {_num(p.fixed_cost[i])}, " in text
        assert f"{i + 1}: {p.lead_time[i]}" in text
    assert f"fee is {_num(p.daily_fee)} currency" in text and f"{_num(p.initial_cash)} currency" in text
    assert set(M.secret_numbers(p)) >= {p.daily_fee, *p.unit_cost, *p.fixed_cost}


# --- bulk plans, facts, belief, heuristics, tiers (issue 15) --------------------------------------------------

def test_plans_take_effect_on_their_days_replace_earlier_ones_and_the_autopilot_drops_them():
    p = _params(lead_time=[1])
    state = M.initial_state(p)
    M.apply(p, state, Action(op="plan_prices", args={"product": 1, "levels": [1, 1, 2]}))
    reply = M.apply(p, state, Action(op="plan_orders", args={"product": 1, "quantities": [9, 0, 7]}))
    assert reply["pending_order"] == 9 and reply["orders_planned"] == 2 and state["price"] == [0]
    M.apply(p, state, Action(op="advance_days", args={"days": 2}))  # day 3 opens: level 2, 7 units pending
    assert state["price"] == [1] and state["pending"] == [7]
    M.apply(p, state, Action(op="plan_orders", args={"product": 1, "quantities": [0, 4]}))  # replaces the 7
    assert state["pending"] == [0] and state["scheduled"] == {"3": [[0, "orders", 4]]}
    stepped = M.initial_state(p)
    for action in [Action(op="set_price", args={"product": 1, "level": 1}),
                   Action(op="order_stock", args={"product": 1, "quantity": 9}), Action(op="advance_days",
                                                                                      args={"days": 2}),
                   Action(op="set_price", args={"product": 1, "level": 2}), Action(op="advance_day"),
                   Action(op="order_stock", args={"product": 1, "quantity": 4})]:
        M.apply(p, stepped, action)
    assert M.utility(p, state) == pytest.approx(M.utility(p, stepped))
    M.apply(p, state, Action(op="finish"))
    assert state["finished"] and state["scheduled"] == {}


def test_the_informed_agent_reaches_one_when_every_probe_fits():
    from envs.difficulty import facts_fit
    from setter.spec import turn_budget

    for knobs in [(1, 30), (2, 180), (3, 270)]:
        p = _sample(40, *knobs)
        o = M.outcome(p)
        budget = turn_budget(M, p, o)
        assert facts_fit(M, p, o, budget) == 1.0
        seat = Seat(M, p, budget)
        players.informed(M)(seat)
        assert seat.errors == 0 and seat._utility() == pytest.approx(o.solution.u_star, rel=1e-9)
        assert M.believed(seat.known) == p


def _knowing(p, calls):
    seat = Seat(M, p)
    seat.play(calls)
    return seat.known


def test_belief_is_built_from_observations_only():
    for i in range(4):
        p = _sample(41 + i, 2, 120)
        every = [Action(op="read_forecasts"), *M.probe_order(M.knowledge(p))]
        assert M.believed(_knowing(p, every)) == p
        blind = M.believed(M.knowledge(p))
        other = M.params_from_data({**p.model_dump(), "base_demand": [[x + 1 for x in row] for row in p.base_demand],
                                    "unit_cost": [x + 1 for x in p.unit_cost], "daily_fee": p.daily_fee + 1,
                                    "initial_cash": p.initial_cash + 10, "lead_time": [2, 3],
                                    "prices": [[x + 1 for x in row] for row in p.prices],
                                    "forecast": [[x + 1 for x in row] for row in p.forecast]})
        assert M.believed(M.knowledge(other)) == blind  # nothing seen: nothing hidden believed
        M.solve(blind)  # a belief always solves (the cash is not in doubt)
        sheet = M.believed(_knowing(p, [Action(op="read_forecasts")]))
        assert sheet.forecast == p.forecast and sheet.sticker_price_level == p.sticker_price_level
        assert sheet.lead_time == [min(7, p.horizon - 1)] * p.products  # the longest lead: no order arrives late


def test_a_verified_range_corrects_the_forecast_by_a_bias_two_by_a_trend():
    from mechanisms.ecommerce_365 import _correction

    guess = [10.0] * 200
    truth = {d: 10.0 * 1.5 * (1 + d / 200) for d in range(200)}
    assert _correction({}, guess, 200) == [1.0] * 200
    one = _correction({d: int(truth[d]) for d in range(20)}, guess, 200)
    assert len(set(one)) == 1 and one[0] == pytest.approx(sum(int(truth[d]) for d in range(20)) / 200)
    two = _correction({d: truth[d] for d in [*range(20), *range(180, 200)]}, guess, 200)
    assert two[0] == pytest.approx(1.5, rel=0.05) and two[-1] == pytest.approx(3.0, rel=0.05)


def test_the_forecast_drifts_further_from_the_truth_far_out():
    near, far = [], []
    for i in range(12):
        p = _sample(60 + i, 1, 300)
        ratio = [(f + 1) / (b * p.price_response[0][p.sticker_price_level[0] - 1] * p.ad_response[0][1] / 10000 + 1)
                 for f, b in zip(p.forecast[0], p.base_demand[0], strict=True)]
        start = np.log(np.mean(ratio[:30]))
        near.append(abs(np.log(np.mean(ratio[30:60])) - start))
        far.append(abs(np.log(np.mean(ratio[-30:])) - start))
    assert np.mean(far) > 3 * np.mean(near)


def test_the_informed_agent_looks_up_each_products_first_and_last_range_before_the_levels():
    p = _sample(3, 3, 270)
    known = _knowing(p, [Action(op="read_forecasts")])
    order = M.probe_order(known)
    assert order[0].op == "probe_store_terms"
    assert [(a.args["product"], a.args["first_day"]) for a in order[1:7]] == [
        (1, 1), (2, 1), (3, 1), (1, 185), (2, 185), (3, 185)]
    listing = M.listing_order(known)
    assert [(a.args["product"], a.args["first_day"]) for a in listing[:4]] == [(1, 1), (1, 93), (1, 185), (2, 1)]
    assert len(listing) == len(order) == 3 * 3 + 4 * 3 + 1


def test_heuristics_play_within_the_budget_and_score_at_most_one():
    from envs.scoring import score
    from setter.spec import turn_budget

    for knobs, share in (((1, 90), 1.0), ((2, 365), 0.45), ((3, 270), 0.6)):
        p = _sample(50, *knobs)
        o = M.outcome(p)
        budget = turn_budget(M, p, o, share)
        for name, policy in M.heuristic_policies().items():
            calls, u = run_policy(M, p, policy, budget)
            assert len(calls) <= budget and M.play(p, calls, budget)[2] == 0, name
            assert u <= o.solution.u_star + 1e-6 * abs(o.solution.u_star), name
            assert score(u, o.u0, o.solution.u_star) <= 1.0


def test_the_ledger_states_the_final_cash_and_its_parts_however_the_run_ends():
    from mechanisms.ecommerce_365 import BOOKS

    p = _sample(5, 2, 90)
    broke = _params(initial_cash=10.0, daily_fee=4.0, grace_days=1, base_demand=[[0] * 6])
    for q, actions in ((p, []), (p, [Action(op="advance_days", args={"days": 30})]), (p, M.solve(p).optimal_actions),
                       (p, [Action(op="finish")]), (broke, [Action(op="advance_days", args={"days": 6})])):
        state = _play(q, actions)
        ledger = M.ledger(q, state)
        assert ledger["final_cash"] == pytest.approx(M.utility(q, state))
        earned = ledger["initial_cash"] + ledger["sales_revenue"] - sum(ledger[k] for k in BOOKS[1:])
        assert earned == pytest.approx(ledger["final_cash"], abs=1e-6)
        assert ledger["bankrupt"] == (q is broke) and ("bankrupt_on_day" in ledger) == (q is broke)
    state = M.initial_state(p)
    M.ledger(p, state)
    assert state == M.initial_state(p)  # the ledger of an open run plays its autopilot on a copy
    spec = make_spec(M.id, 0)
    env = Environment(spec, "hidden")
    outcome = env.step(env.tool_for("finish").name, {})["outcome"]
    assert outcome["episode over"] == "finished"
    assert len(outcome) == len(M.ledger(M.params_from_data(spec.params), env.state)) + 1


def test_the_rules_carry_no_hidden_number_and_the_text_fits_at_the_largest_cell():
    from mechanisms.facts import BUDGET_END, END, OBJECTIVE, rules_text

    p = _sample(6, 2, 60)
    facts = M.facts(p, VOCAB)
    assert {OBJECTIVE, END, BUDGET_END, "bankruptcy", "cash", "demand"} <= {f.key for f in facts}
    rules = " " + rules_text(facts) + " "
    assert f" {_num(p.daily_fee)} " not in rules and f" {_num(p.initial_cash)} " not in rules
    assert all(len(make_spec(M.id, i, 3, 270).rendering.written_prompt) <= 6000 for i in range(4))


@pytest.mark.parametrize("tier", ["easy", "medium", "hard", "frontier"])
def test_rendered_environments_pass_admission_at_every_tier(tier):
    verdicts = [admit(make_spec(M.id, i, tier=tier)) for i in range(5)]
    refused = [v.reason for v in verdicts if not v.admitted]
    refusals = ("completeness", "prose", "executes", "default_replay", "C3", "structure")
    assert not any(r.startswith(refusals) for r in refused), refused
    assert len(refused) < len(verdicts), refused
