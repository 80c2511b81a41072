"""facility_location: exactness against assignment brute force, a plain subset enumeration and HiGHS, replay in bulk
calls, the default's band, the probe budget, the bulk decisions, the posted sheets, the ending's ledger, facts,
belief from observations only, the informed and heuristic agents at a seat, tiers and admission, validation of data,
refusals, fuzzing of the bulk decisions (determinism, the data round trip, the players' replay and admission on the
default grid are in test_conformance)."""

from __future__ import annotations

import copy
import itertools
import json

import numpy as np
import pytest

import mechanisms
from envs.environment import ENDING_KEY, Environment
from mechanisms import players
from mechanisms.base import ActionError
from mechanisms.facility_location import FacilityParams
from mechanisms.players import Seat, run_policy
from schemas.envspec import Action
from setter.corpus import BUNDLE_KEYS, VOCAB_KEYS
from setter.phrasebook import vocabulary
from setter.spec import turn_budget
from tests.mechanisms.references.facility_location import reference as brute_force
from tests.support import make_spec

M = mechanisms.get("facility_location")
VOCAB = vocabulary({k: k for k in (*VOCAB_KEYS, *BUNDLE_KEYS)})


def _sample(i: int, size: int | None = None, horizon: int | None = None) -> FacilityParams:
    return M.sample(np.random.default_rng([7, i]), size or M.default_size, horizon or M.default_horizon)


def _data(**changes) -> dict:
    data = {"demand": [2.0, 3.0, 1.0], "open_cost": [10.0, 4.0],
            "service_cost": [[1.0, 2.0, 6.0], [5.0, 1.0, 1.0]], "unserved_penalty": 8.0}
    data.update(changes)
    return data


def _subset_optimum(p: FacilityParams) -> float:
    """Plain Python: every non-empty subset by itertools.combinations, plus the empty one; min over customers."""
    best = p.unserved_penalty * sum(p.demand)
    for k in range(1, p.sites + 1):
        for sites in itertools.combinations(range(p.sites), k):
            cost = sum(p.open_cost[i] for i in sites)
            for j in range(p.customers):
                cost += p.demand[j] * min(p.unserved_penalty, *(p.service_cost[i][j] for i in sites))
            best = min(best, cost)
    return -best


def test_contract_shape():
    p = _sample(0)
    ops = M.operations(p)
    names = {op.name for op in ops}
    assert len(ops) >= 10 and {op.kind for op in ops} == {"probe", "info", "decision", "clock"}
    assert {op.name for op in ops if op.decoy} == {"read_posted_opening_costs", "read_posted_rates"}
    assert all(not op.args for op in ops if op.decoy)  # each kind of posted figure is one sheet
    assert "finish" in names and len(names) == len(ops)
    for op in ops:
        for name, arg in op.args.items():
            assert arg.minimum == 1 and arg.type == ("array" if name.endswith("s") else "integer")
            assert arg.maximum == (p.sites if name.startswith("site") else p.customers)
            if arg.type == "array":
                assert arg.items == "integer" and arg.max_items == arg.maximum
    assert {op.name: op.estimates for op in ops if op.decoy} == {"read_posted_opening_costs": "opening_cost",
                                                                "read_posted_rates": "cost_per_unit_from"}
    assert M.group == "far_ood_probe" and M.version == 5
    assert 3 <= len(M.grid()) <= 6
    for size, horizon in M.grid():
        assert M.size_range[0] <= size <= M.size_range[1] and M.horizon_range[0] <= horizon <= M.horizon_range[1]
    json.dumps(M.initial_state(p))


def test_the_probe_allowance_is_every_probe_and_the_tiers_grant_a_share_of_it():
    for knobs in M.grid():
        p = _sample(1, *knobs)
        assert M.probe_allowance(p) == p.sites + p.customers == len(M.probe_order(M.knowledge(p)))
        assert sum(op.kind == "probe" for op in M.operations(p)) == 2
    tiers = M.tiers()
    assert tiers["easy"].probe_share == tiers["medium"].probe_share == 1.0
    assert 0 < tiers["frontier"].probe_share < tiers["hard"].probe_share < 1.0
    for tier in tiers.values():
        for size, horizon in tier.grid:
            assert M.size_range[0] <= size <= M.size_range[1] and M.horizon_range[0] <= horizon <= M.horizon_range[1]


def test_facts_state_the_whole_instance_and_the_rules():
    from mechanisms.facts import REQUIRED_RULES

    p = _sample(2)
    facts = M.facts(p, VOCAB)
    text = M.describe(p, VOCAB)
    assert f"{p.sites} sites" in text and f"{p.customers} customers" in text
    for value in [*p.demand, *p.open_cost, *p.posted_open_cost, p.unserved_penalty,
                  *(x for row in p.service_cost for x in row)]:
        assert f"{value:g}" in text
    keys = {fact.key for fact in facts}
    assert set(REQUIRED_RULES) <= keys and {"opening_costs", "service_costs", "penalty", "demand"} <= keys
    public = {round(x, 6) for x in M.public_numbers(p)}
    covered = {round(x, 6) for fact in facts for x in fact.numbers}
    assert {round(x, 6) for x in M.secret_numbers(p)} - public <= covered
    for fact in facts:
        if fact.is_rule:
            assert {round(x, 6) for x in fact.numbers} <= public
    objective = next(f for f in facts if f.key == "objective").statement
    assert "minus the total cost" in objective and f"{p.unserved_penalty:g}" in objective


@pytest.mark.parametrize("knobs", [(4, 2), (5, 3), (6, 3), (4, 4), (7, 2)])
def test_solver_matches_brute_force_over_assignments(knobs):
    for i in range(8):
        p = M.sample(np.random.default_rng([8, *knobs, i]), *knobs)
        assert M.solve(p).u_star == pytest.approx(brute_force(M, p), rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("knobs", [(10, 6), (15, 8), (12, 10)])
def test_solver_matches_a_plain_subset_enumeration(knobs):
    for i in range(4):
        p = _sample(200 + i, *knobs)
        assert M.solve(p).u_star == pytest.approx(_subset_optimum(p), rel=1e-9)


def test_edge_cases_penalty_cheaper_than_service_and_free_sites():
    cheap = M.params_from_data(_data(unserved_penalty=0.5))  # leaving everyone unserved is optimal
    solution = M.solve(cheap)
    assert solution.u_star == -0.5 * 6 and solution.optimal_actions == [Action(op="commit_plan")]
    free = M.params_from_data(_data(open_cost=[0.0, 0.0]))  # open both, each customer to its cheapest
    solution = M.solve(free)
    assert solution.u_star == -(2 * 1 + 3 * 1 + 1 * 1) and solution.facts["open_sites"] == [1, 2]
    mixed = M.params_from_data(_data(unserved_penalty=3.0, open_cost=[1.0, 100.0]))  # customer 3 unserved
    solution = M.solve(mixed)
    assert solution.u_star == -(1 + 2 * 1 + 3 * 2 + 1 * 3) and solution.facts["unserved"] == 1
    assert solution.u_star == pytest.approx(brute_force(M, mixed))


@pytest.mark.parametrize("knobs", [(10, 6), (4, 2), (6, 3), (15, 8), (20, 10), (30, 12), (30, 14), (32, 16)])
def test_replay_of_optimal_actions_gives_u_star_exactly_in_bulk_calls(knobs):
    for i in range(4 if knobs[1] < 14 else 2):
        p = _sample(100 + i, *knobs)
        solution = M.solve(p)
        assert M.run(p, solution.optimal_actions) == solution.u_star
        ops = [a.op for a in solution.optimal_actions]
        assert ops[-1] == "commit_plan" and ops.count("open_sites") <= 1
        assert len(ops) <= len(solution.facts["open_sites"]) + 2  # one open, one serve per open site, commit
        assert -solution.u_star == pytest.approx(solution.facts["total_cost"])


def _highs_optimum(p: FacilityParams) -> float:
    """The optimum by HiGHS: open y_i, serve x_ij or leave unserved z_j (an independent method at large sizes)."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    m, n = p.sites, p.customers
    cost = np.concatenate([p.open_cost, (np.asarray(p.service_cost) * np.asarray(p.demand)[None, :]).ravel(),
                           p.unserved_penalty * np.asarray(p.demand)])
    rows, low, high = [], [], []
    for j in range(n):  # each customer served once or unserved
        row = np.zeros(m + m * n + n)
        row[[m + i * n + j for i in range(m)]] = 1
        row[m + m * n + j] = 1
        rows.append(row), low.append(1), high.append(1)
    for i in range(m):
        for j in range(n):  # served only from an open site
            row = np.zeros(m + m * n + n)
            row[m + i * n + j], row[i] = 1, -1
            rows.append(row), low.append(-np.inf), high.append(0)
    result = milp(cost, constraints=LinearConstraint(np.array(rows), low, high), integrality=np.ones(len(cost)),
                  bounds=Bounds(0, 1))
    return -float(result.fun)


@pytest.mark.parametrize("knobs", [(30, 14), (32, 16), (44, 10)])
def test_solver_matches_highs_at_the_frontier_sizes(knobs):
    for i in range(2):
        p = _sample(300 + i, *knobs)
        assert M.solve(p).u_star == pytest.approx(_highs_optimum(p), rel=1e-7)


def test_default_trusts_the_posted_figures_and_sits_inside_the_band():
    low, high = M.u0_band
    inside = 0
    for i in range(100):
        p = _sample(i)
        o = M.outcome(p)
        assert o.u_idle == pytest.approx(-p.unserved_penalty * sum(p.demand), rel=1e-12)
        ops = [a.op for a in o.default_actions]
        assert not any(op.startswith("probe") for op in ops) and ops[-1] == "commit_plan"
        assert ops[:2] == ["read_posted_opening_costs", "read_posted_rates"]  # it pays a call for each sheet
        opened = [s for a in o.default_actions if a.op == "open_sites" for s in a.args["sites"]]
        served = set()
        for action in o.default_actions:
            if action.op == "serve_customers":  # nearest open site by the posted rate
                for customer in action.args["customers"]:
                    served.add(customer)
                    assert p.posted_service_cost[action.args["site"] - 1][customer - 1] == min(
                        p.posted_service_cost[s - 1][customer - 1] for s in opened)
        assert not opened or served == set(range(1, p.customers + 1))
        g = (o.u0 - o.u_idle) / (o.solution.u_star - o.u_idle)
        inside += low <= g <= high and o.u0 < o.solution.u_star
    assert inside >= 85


def test_dynamics_open_serve_move_close_and_costs():
    p = M.params_from_data(_data())
    state = M.initial_state(p)
    assert M.utility(p, state) == -8.0 * 6
    assert M.apply(p, state, Action(op="open_sites", args={"sites": [2]}))["open_sites"] == [2]
    assert M.utility(p, state) == -(4 + 8 * 6)
    M.apply(p, state, Action(op="serve_customers", args={"customers": [1], "site": 2}))
    assert M.utility(p, state) == -(4 + 2 * 5 + 8 * 4)
    M.apply(p, state, Action(op="open_sites", args={"sites": [1]}))
    M.apply(p, state, Action(op="serve_customers", args={"customers": [1], "site": 1}))  # moved
    assert state["assignment"] == [1, None, None]
    M.apply(p, state, Action(op="serve_customers", args={"customers": [2], "site": 2}))
    plan = M.apply(p, state, Action(op="view_plan"))
    assert plan == {"open_sites": [1, 2], "served_from": {"customer 1": 1, "customer 2": 2}, "unserved_list": [3]}
    closed = M.apply(p, state, Action(op="close_site", args={"site": 1}))
    assert closed["now_unserved"] == [1] and state["assignment"] == [None, 2, None]
    M.apply(p, state, Action(op="unassign_customer", args={"customer": 2}))
    assert M.utility(p, state) == -(4 + 8 * 6)
    M.apply(p, state, Action(op="clear_plan"))
    assert state == M.initial_state(p)
    assert M.apply(p, state, Action(op="commit_plan")) == {"open_sites": [], "finished": True}
    ledger = M.ledger(p, state)
    assert M.finished(state) and ledger["total_cost"] == 8.0 * 6 and ledger["unserved_list"] == [1, 2, 3]
    assert (ledger["opening_total"], ledger["service_total"], ledger["penalty_total"]) == (0, 0, 8.0 * 6)


def test_bulk_decisions_open_many_sites_and_serve_many_customers_in_one_call():
    p = M.params_from_data(_data())
    state = M.initial_state(p)
    assert M.apply(p, state, Action(op="open_sites", args={"sites": [2, 1]})) == {"opened": [1, 2],
                                                                                  "open_sites": [1, 2]}
    M.apply(p, state, Action(op="serve_customers", args={"customers": [3, 2], "site": 2}))
    M.apply(p, state, Action(op="serve_customers", args={"customers": [1], "site": 1}))
    assert state["assignment"] == [1, 2, 2]
    assert M.utility(p, state) == -(10 + 4 + 2 * 1 + 3 * 1 + 1 * 1)
    for bad in ({"sites": []}, {"sites": [1, 1]}, {"sites": [3]}, {"sites": 1}, {"sites": [1]}):  # [1]: open
        before = copy.deepcopy(state)
        with pytest.raises(ActionError):
            M.apply(p, state, Action(op="open_sites", args=bad))
        assert state == before
    closed = M.initial_state(p)
    for bad in ({"customers": [1, 2], "site": 1}, {"customers": [4], "site": 1}, {"customers": [], "site": 1}):
        with pytest.raises(ActionError):
            M.apply(p, closed, Action(op="serve_customers", args=bad))
        assert closed == M.initial_state(p)


def test_probes_reveal_the_hidden_groups_and_the_decoys_the_posted_ones():
    p = _sample(3)
    state = M.initial_state(p)
    assert M.apply(p, state, Action(op="probe_opening_cost", args={"site": 2}))["opening_cost"] == p.open_cost[1]
    row = M.apply(p, state, Action(op="probe_service_costs", args={"customer": 3}))["cost_per_unit_from"]
    assert list(row.values()) == [p.service_cost[i][2] for i in range(p.sites)]
    quotes = M.apply(p, state, Action(op="read_posted_opening_costs"))["posted_opening_cost"]
    assert quotes == {f"site {i + 1}": p.posted_open_cost[i] for i in range(p.sites)}
    posted = M.apply(p, state, Action(op="read_posted_rates"))["posted_rate_per_unit_from"]
    assert list(posted) == [f"customer {j + 1}" for j in range(p.customers)]
    assert list(posted["customer 3"].values()) == [p.posted_service_cost[i][2] for i in range(p.sites)]
    assert all(list(posted[f"customer {j + 1}"].values()) == [row[j] for row in p.posted_service_cost]
               for j in range(p.customers))
    assert M.apply(p, state, Action(op="service_terms"))["unserved_penalty_per_unit"] == p.unserved_penalty
    assert list(M.apply(p, state, Action(op="list_customers"))["demand_of"].values()) == p.demand
    assert state == M.initial_state(p)


def test_invalid_actions_raise_and_leave_the_state_unchanged():
    p = _sample(4)
    planned = M.initial_state(p)
    for action in M.solve(p).optimal_actions[:-1]:
        M.apply(p, planned, action)
    open_site = planned["open"][0]
    closed_site = next(i for i in range(1, p.sites + 1) if i not in planned["open"])
    served = next(j for j, s in enumerate(planned["assignment"], start=1) if s is not None)
    bad = [Action(op="no_such_op"), Action(op="open_sites"), Action(op="open_sites", args={"sites": [0]}),
           Action(op="open_sites", args={"sites": [p.sites + 1]}), Action(op="open_sites", args={"sites": ["1"]}),
           Action(op="open_sites", args={"sites": [1.5]}), Action(op="open_sites", args={"sites": [True]}),
           Action(op="open_sites", args={"sites": 1}),
           Action(op="probe_service_costs", args={"customer": float("nan")}),
           Action(op="probe_opening_cost", args={"site": None}),
           Action(op="serve_customers", args={"customers": [1]}),
           Action(op="serve_customers", args={"customers": [1], "site": closed_site}),
           Action(op="close_site", args={"site": closed_site})]
    for state in (M.initial_state(p), planned):
        for action in [*bad, Action(op="open_sites", args={"sites": [open_site]}) if state["open"] else None,
                       Action(op="unassign_customer", args={"customer": served}) if not state["open"] else None]:
            if action is None:
                continue
            before = copy.deepcopy(state)
            with pytest.raises(ActionError):
                M.apply(p, state, action)
            assert state == before


@pytest.mark.parametrize("data, message", [
    (_data(service_cost=[[1.0, 2.0, 6.0]]), "service_cost must have one row per site"),
    (_data(service_cost=[[1.0, 2.0], [5.0, 1.0, 1.0]]), "service_cost row 1"),
    (_data(posted_service_cost=[[1.0, 2.0, 6.0]]), "posted_service_cost"),
    (_data(posted_open_cost=[1.0]), "posted_open_cost"),
    (_data(open_cost=[-1.0, 4.0]), "open_cost must be non-negative"),
    (_data(service_cost=[[1.0, -2.0, 6.0], [5.0, 1.0, 1.0]]), "service_cost must be non-negative"),
    (_data(demand=[2.0, 0.0, 1.0]), "demand must be positive"),
    (_data(unserved_penalty=0.0), "unserved_penalty must be positive"),
    (_data(unserved_penalty=float("inf")), "finite"),
    (_data(colour="red"), "colour"),
    ({"demand": [1.0], "open_cost": [1.0], "service_cost": [[1.0]]}, "unserved_penalty"),
    (_data(open_cost=[1.0] * 17, service_cost=[[1.0, 1.0, 1.0]] * 17), "open_cost"),
])
def test_params_from_data_rejects_bad_data(data, message):
    with pytest.raises(ValueError, match=message):
        M.params_from_data(data)


def test_params_from_data_defaults_the_posted_figures_to_the_truth():
    p = M.params_from_data(_data())
    assert p.posted_open_cost == p.open_cost and p.posted_service_cost == p.service_cost


@pytest.mark.parametrize("tier", ["easy", "medium", "hard", "frontier"])
def test_rendered_environments_are_admitted_without_leaks_at_every_tier(tier):
    from envs.admission import admit, hidden_leaks

    admitted = 0
    cells = M.tiers()[tier].grid
    for i in range(8):
        spec = make_spec("facility_location", i, *cells[i % len(cells)], tier=tier)
        assert hidden_leaks(spec) == []
        verdict = admit(spec)
        assert verdict.admitted or verdict.check in ("difficulty", "C2"), verdict.reason  # tier or band only
        admitted += verdict.admitted
    assert admitted >= 1


@pytest.mark.parametrize("tier", ["hard", "frontier"])
def test_the_turn_budget_never_lets_an_agent_probe_everything_and_still_act(tier):
    assert M.turn_slack == 1
    for size, horizon in M.tiers()[tier].grid:
        for i in range(3):
            spec = make_spec("facility_location", i, size, horizon, tier=tier)
            p = M.params_from_data(spec.params)
            spare = spec.turn_budget - len(spec.reference.optimal_actions)
            assert spare < p.sites + p.customers
            assert spec.difficulty.facts_fit < 1


def _budget(p, share: float = 1.0) -> int:
    return turn_budget(M, p, M.outcome(p), share)


@pytest.mark.parametrize("knobs", [(6, 3), (8, 3), (14, 6), (20, 8)])
def test_the_informed_agent_reaches_one_when_every_probe_fits(knobs):
    for i in range(4):
        p = _sample(400 + i, *knobs)
        budget = _budget(p)
        actions, u = run_policy(M, p, players.informed(M), budget)
        assert len(actions) <= budget and actions[:2] == [Action(op="read_posted_opening_costs"),
                                                          Action(op="read_posted_rates")]
        assert M.play(p, actions, budget) == (u, len(actions), 0)
        assert u == pytest.approx(M.solve(p).u_star, rel=1e-9)


def _seen(p: FacilityParams, calls: list[Action]) -> Seat:
    seat = Seat(M, p)
    for call in calls:
        seat.call(call)
    return seat


SHEETS = [Action(op="read_posted_opening_costs"), Action(op="read_posted_rates")]


def test_belief_with_every_probe_is_the_truth_and_otherwise_only_what_was_seen():
    for i in range(5):
        p = _sample(500 + i)
        everything = _seen(p, [*SHEETS, *M.probe_order(M.knowledge(p))]).known
        assert M.solve(M.believed(everything)).u_star == pytest.approx(M.solve(p).u_star, rel=1e-12)
        blind = M.believed(_seen(p, SHEETS).known)
        assert blind.open_cost == p.posted_open_cost and blind.service_cost == p.posted_service_cost
        changed = p.model_copy(update={"open_cost": [x + 7 for x in p.open_cost],
                                       "service_cost": [[x * 2 for x in row] for row in p.service_cost]})
        assert M.believed(_seen(changed, SHEETS).known) == blind  # the hidden figures are never read
        some = M.probe_order(M.knowledge(p))[:4]
        partly = M.believed(_seen(p, [*SHEETS, *some]).known)
        for action in some:  # what was verified is believed as it is
            if action.op == "probe_opening_cost":
                assert partly.open_cost[action.args["site"] - 1] == p.open_cost[action.args["site"] - 1]
            else:
                j = action.args["customer"] - 1
                assert [row[j] for row in partly.service_cost] == [row[j] for row in p.service_cost]
        nothing = M.believed(M.knowledge(p))  # no sheet read: no posted figure either
        assert nothing.open_cost == [0.0] * p.sites
        assert nothing.service_cost == [[p.unserved_penalty] * p.customers] * p.sites


def test_a_verified_row_shows_each_sites_road_factor():
    p = _sample(7, 20, 8)
    row = M.probe_order(M.knowledge(p))[0]
    assert row.op == "probe_service_costs" and p.demand[row.args["customer"] - 1] == max(p.demand)
    blind = np.asarray(M.believed(_seen(p, SHEETS).known).service_cost)
    scaled = np.asarray(M.believed(_seen(p, [*SHEETS, row]).known).service_cost)
    truth = np.asarray(p.service_cost)
    assert np.abs(scaled - truth).sum() < np.abs(blind - truth).sum()


def test_the_probe_order_lists_every_probe_once():
    p = _sample(6, 20, 8)
    for known in (M.knowledge(p), _seen(p, SHEETS).known):
        order = M.probe_order(known)
        assert sorted((a.op, tuple(a.args.items())) for a in order) == sorted(
            [("probe_opening_cost", (("site", i),)) for i in range(1, p.sites + 1)]
            + [("probe_service_costs", (("customer", j),)) for j in range(1, p.customers + 1)])


@pytest.mark.parametrize("knobs", [(6, 3), (16, 8), (30, 14)])
def test_heuristics_play_within_idle_and_optimum(knobs):
    for i in range(3):
        p = _sample(600 + i, *knobs)
        o = M.outcome(p)
        heuristics = M.heuristic_policies()
        assert set(heuristics) == {"nearest_surveyed", "one_site_surveyed", "greedy_quotes_surveyed",
                                   "greedy_big_surveyed"}
        for share in (1.0, 0.3):
            budget = _budget(p, share)
            for name, policy in heuristics.items():
                actions, u = run_policy(M, p, policy, budget)
                assert M.play(p, actions, budget) == (u, len(actions), 0) and len(actions) <= budget
                assert u <= o.solution.u_star + 1e-9, name
                if share == 1.0:  # with every survey and the plan in the budget, never worse than doing nothing
                    assert o.u_idle - 1e-9 <= u, name


@pytest.mark.parametrize("tier", ["hard", "frontier"])
def test_the_informed_agent_beats_the_default_on_admitted_tight_budget_instances(tier):
    from envs.admission import admit

    admitted = 0
    cells = M.tiers()[tier].grid
    for i in range(8):
        spec = make_spec("facility_location", i, *cells[i % len(cells)], tier=tier)
        verdict = admit(spec)
        if not (verdict.admitted or verdict.check == "difficulty"):  # the tier check comes after the ceiling
            continue
        admitted += 1
        p = M.params_from_data(spec.params)
        u, _, _ = M.play(p, spec.reference.informed_actions, spec.turn_budget)
        assert u > spec.reference.u0 and spec.difficulty.informed_score >= 0.05
    assert admitted >= 2


def test_the_posted_figures_are_one_sheet_each():
    p = _sample(8, 12, 5)
    state = M.initial_state(p)
    assert M.apply(p, state, Action(op="read_posted_opening_costs")) == {
        "posted_opening_cost": {f"site {i + 1}": p.posted_open_cost[i] for i in range(p.sites)}}
    rates = M.apply(p, state, Action(op="read_posted_rates"))["posted_rate_per_unit_from"]
    assert [[rates[f"customer {j + 1}"][f"site {i + 1}"] for j in range(p.customers)] for i in range(p.sites)] \
        == p.posted_service_cost
    assert state == M.initial_state(p)
    facts = {f.key: f for f in M.facts(p, VOCAB)}
    assert facts["quotes"].probe == "read_posted_opening_costs"


@pytest.mark.parametrize("ending", ["commit", "walk away", "turns run out"])
def test_every_ending_states_the_total_cost_and_its_parts(ending):
    from envs.admission import decision_leaks
    from envs.agents import tool_call

    spec = make_spec("facility_location", 1, tier="medium")
    p = M.params_from_data(spec.params)
    env = Environment(spec, "hidden")
    plan = spec.reference.optimal_actions[:-1]  # open, then serve each open site's customers
    for action in plan:
        last = env.step(*tool_call(env, action))
        assert not env.done and ENDING_KEY not in last
    if ending == "turns run out":  # the budget's last call is a serve call
        while not env.done:
            last = env.step(*tool_call(env, plan[-1]))
        assert env.turns == spec.turn_budget
    else:
        last = env.step(*tool_call(env, Action(op="commit_plan" if ending == "commit" else "finish")))
    ledger = M.ledger(p, env.state)
    assert ledger["total_cost"] == pytest.approx(-spec.reference.u_star)
    assert ledger["opening_total"] + ledger["service_total"] + ledger["penalty_total"] == pytest.approx(
        ledger["total_cost"])
    assert ledger["opening_total"] > 0 and ledger["service_total"] > 0
    outcome = last[ENDING_KEY]
    assert outcome["episode over"] == ("the turns ran out" if ending == "turns run out" else "finished")
    shown = [v for v in outcome.values() if isinstance(v, (int, float))]
    for key in ("total_cost", "opening_total", "service_total", "penalty_total"):
        assert any(v == pytest.approx(ledger[key]) for v in shown), key
    assert decision_leaks(spec, [env.trajectory]) is None  # no decision showed a cost before the ending
