"""facility_location: determinism, exactness against assignment brute force and a plain subset enumeration,
replay, the default's band, the probe budget, validation of data, refusals, fuzzing."""

from __future__ import annotations

import copy
import itertools
import json

import numpy as np
import pytest

import mechanisms
from mechanisms.base import ActionError
from mechanisms.facility_location import FacilityParams
from schemas.envspec import Action
from setter.corpus import VOCAB_KEYS
from tests.mechanisms.references.facility_location import reference as brute_force
from tests.support import make_spec

M = mechanisms.get("facility_location")
VOCAB = {k: k for k in VOCAB_KEYS}


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


def test_same_seed_gives_the_same_params_and_data_round_trips():
    for i in range(5):
        a, b = _sample(i), _sample(i)
        assert a == b and a.model_dump() == b.model_dump()
        assert M.params_from_data(json.loads(json.dumps(a.model_dump()))) == a
    assert _sample(0) != _sample(1)


def test_contract_shape():
    p = _sample(0)
    ops = M.operations(p)
    names = {op.name for op in ops}
    assert len(ops) >= 10 and {op.kind for op in ops} == {"probe", "info", "decision", "clock"}
    assert {op.name for op in ops if op.decoy} == {"read_posted_opening_cost", "read_posted_rates"}
    assert "finish" in names and len(names) == len(ops)
    for op in ops:
        for name, arg in op.args.items():
            assert arg.type == "integer" and arg.minimum == 1
            assert arg.maximum == (p.sites if name == "site" else p.customers)
    assert M.group == "far_ood_probe" and M.version == 1
    assert 3 <= len(M.grid()) <= 6
    for size, horizon in M.grid():
        assert M.size_range[0] <= size <= M.size_range[1] and M.horizon_range[0] <= horizon <= M.horizon_range[1]
    json.dumps(M.initial_state(p))


def test_the_probe_budget_is_about_half_of_probing_everything():
    for knobs in M.grid():
        p = _sample(1, *knobs)
        everything = p.sites + p.customers  # one probe per site, one per customer
        assert everything / 2 - 1 < M.probe_allowance(p) <= everything / 2
        assert sum(op.kind == "probe" for op in M.operations(p)) == 2


def test_describe_states_the_whole_instance():
    p = _sample(2)
    text = M.describe(p, VOCAB)
    assert f"{p.sites} candidate sites" in text and f"{p.customers} customers" in text
    for value in [*p.demand, *p.open_cost, *p.posted_open_cost, p.unserved_penalty,
                  *(x for row in p.service_cost for x in row)]:
        assert f"{value:g}" in text
    assert set(M.secret_numbers(p)) >= set(p.open_cost) - {0.0}


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


@pytest.mark.parametrize("knobs", [(10, 6), (4, 2), (6, 3), (15, 8), (20, 10), (30, 12)])
def test_replay_of_optimal_actions_gives_u_star_exactly(knobs):
    for i in range(4):
        p = _sample(100 + i, *knobs)
        solution = M.solve(p)
        assert M.run(p, solution.optimal_actions) == solution.u_star
        assert solution.optimal_actions[-1].op == "commit_plan"
        assert -solution.u_star == pytest.approx(solution.facts["total_cost"])


def test_default_trusts_the_posted_figures_and_sits_inside_the_band():
    low, high = M.u0_band
    inside = 0
    for i in range(100):
        p = _sample(i)
        o = M.outcome(p)
        assert o.u_idle == pytest.approx(-p.unserved_penalty * sum(p.demand), rel=1e-12)
        ops = [a.op for a in o.default_actions]
        assert ops[0] == "read_posted_opening_cost" and not any(op.startswith("probe") for op in ops)
        opened = [a.args["site"] for a in o.default_actions if a.op == "open_site"]
        for action in o.default_actions:
            if action.op == "assign_customer":  # nearest open site by the posted rate
                j = action.args["customer"] - 1
                assert p.posted_service_cost[action.args["site"] - 1][j] == min(
                    p.posted_service_cost[s - 1][j] for s in opened)
        g = (o.u0 - o.u_idle) / (o.solution.u_star - o.u_idle)
        inside += low <= g <= high and o.u0 < o.solution.u_star
    assert inside >= 85


def test_dynamics_open_assign_move_close_and_costs():
    p = M.params_from_data(_data())
    state = M.initial_state(p)
    assert M.utility(p, state) == -8.0 * 6
    M.apply(p, state, Action(op="open_site", args={"site": 2}))
    assert M.utility(p, state) == -(4 + 8 * 6)
    M.apply(p, state, Action(op="assign_customer", args={"customer": 1, "site": 2}))
    assert M.utility(p, state) == -(4 + 2 * 5 + 8 * 4)
    M.apply(p, state, Action(op="open_site", args={"site": 1}))
    M.apply(p, state, Action(op="assign_customer", args={"customer": 1, "site": 1}))  # moved
    assert state["assignment"] == [1, None, None]
    M.apply(p, state, Action(op="assign_customer", args={"customer": 2, "site": 2}))
    plan = M.apply(p, state, Action(op="view_plan"))
    assert plan == {"open_sites": [1, 2], "served_from": {"customer 1": 1, "customer 2": 2}, "unserved": [3]}
    closed = M.apply(p, state, Action(op="close_site", args={"site": 1}))
    assert closed["now_unserved"] == [1] and state["assignment"] == [None, 2, None]
    M.apply(p, state, Action(op="unassign_customer", args={"customer": 2}))
    assert M.utility(p, state) == -(4 + 8 * 6)
    M.apply(p, state, Action(op="clear_plan"))
    assert state == M.initial_state(p)
    M.apply(p, state, Action(op="commit_plan"))
    assert M.finished(state)


def test_probes_reveal_the_hidden_groups_and_the_decoys_the_posted_ones():
    p = _sample(3)
    state = M.initial_state(p)
    assert M.apply(p, state, Action(op="probe_opening_cost", args={"site": 2}))["opening_cost"] == p.open_cost[1]
    row = M.apply(p, state, Action(op="probe_service_costs", args={"customer": 3}))["cost_per_unit_from"]
    assert list(row.values()) == [p.service_cost[i][2] for i in range(p.sites)]
    quote = M.apply(p, state, Action(op="read_posted_opening_cost", args={"site": 2}))["posted_opening_cost"]
    assert quote == p.posted_open_cost[1]
    posted = M.apply(p, state, Action(op="read_posted_rates", args={"customer": 3}))["posted_rate_per_unit_from"]
    assert list(posted.values()) == [p.posted_service_cost[i][2] for i in range(p.sites)]
    assert M.apply(p, state, Action(op="service_terms"))["unserved_penalty_per_unit"] == p.unserved_penalty
    assert list(M.apply(p, state, Action(op="list_customers"))["demand"].values()) == p.demand
    assert state == M.initial_state(p)


def test_invalid_actions_raise_and_leave_the_state_unchanged():
    p = _sample(4)
    planned = M.initial_state(p)
    for action in M.solve(p).optimal_actions[:-1]:
        M.apply(p, planned, action)
    open_site = planned["open"][0]
    closed_site = next(i for i in range(1, p.sites + 1) if i not in planned["open"])
    served = next(j for j, s in enumerate(planned["assignment"], start=1) if s is not None)
    bad = [Action(op="no_such_op"), Action(op="open_site"), Action(op="open_site", args={"site": 0}),
           Action(op="open_site", args={"site": p.sites + 1}), Action(op="open_site", args={"site": "1"}),
           Action(op="open_site", args={"site": 1.5}), Action(op="open_site", args={"site": True}),
           Action(op="probe_service_costs", args={"customer": float("nan")}),
           Action(op="read_posted_rates", args={"customer": None}),
           Action(op="assign_customer", args={"customer": 1}),
           Action(op="assign_customer", args={"customer": 1, "site": closed_site}),
           Action(op="close_site", args={"site": closed_site})]
    for state in (M.initial_state(p), planned):
        for action in [*bad, Action(op="open_site", args={"site": open_site}) if state["open"] else None,
                       Action(op="unassign_customer", args={"customer": served}) if not state["open"] else None,
                       Action(op="assign_customer", args={"customer": served,
                                                          "site": planned["assignment"][served - 1]})
                       if state["open"] else None]:
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
    (_data(open_cost=[1.0] * 13, service_cost=[[1.0, 1.0, 1.0]] * 13), "open_cost"),
])
def test_params_from_data_rejects_bad_data(data, message):
    with pytest.raises(ValueError, match=message):
        M.params_from_data(data)


def test_params_from_data_defaults_the_posted_figures_to_the_truth():
    p = M.params_from_data(_data())
    assert p.posted_open_cost == p.open_cost and p.posted_service_cost == p.service_cost


def _random_args(rng: np.random.Generator, op) -> dict:
    args = {}
    for name, spec in op.args.items():
        roll = rng.random()
        if roll < 0.08:
            continue
        if roll < 0.15:
            odd = ["x", None, True, [1], {"a": 1}, float("nan"), 2.5]
            args[name] = odd[int(rng.integers(len(odd)))]
        else:
            args[name] = int(rng.integers(int(spec.minimum) - 1, int(spec.maximum) + 2))
    return args


def test_a_thousand_random_actions_raise_nothing_but_action_error():
    rng = np.random.default_rng(3)
    p = _sample(5, 8, 4)
    ops = M.operations(p)
    weighted = [*ops, *[op for op in ops if op.name in ("open_site", "assign_customer")] * 4]
    state = M.initial_state(p)
    u_star = M.solve(p).u_star
    errors = 0
    for _ in range(1000):
        if M.finished(state) or rng.random() < 0.01:
            state = M.initial_state(p)
        op = weighted[int(rng.integers(len(weighted)))] if rng.random() > 0.03 else None
        action = Action(op=op.name if op else "bogus", args=_random_args(rng, op) if op else {})
        before = copy.deepcopy(state)
        try:
            json.dumps(M.apply(p, state, action))
        except ActionError:
            errors += 1
            assert state == before
        json.dumps(state)
        assert M.utility(p, state) <= u_star + 1e-9 * abs(u_star)
    assert 0 < errors < 1000


def test_rendered_environments_are_admitted_without_leaks():
    from envs.admission import admit, hidden_leaks

    admitted = 0
    for i in range(4):
        spec = make_spec("facility_location", i)
        assert hidden_leaks(spec) == []
        admitted += admit(spec).admitted
    assert admitted >= 3


@pytest.mark.parametrize("knobs", M.grid())
def test_the_turn_budget_never_lets_an_agent_probe_everything_and_still_act(knobs):
    assert M.turn_slack == 1
    for i in range(10):
        spec = make_spec("facility_location", i, *knobs)
        p = M.params_from_data(spec.params)
        spare = spec.turn_budget - len(spec.reference.optimal_actions)
        assert spare < p.sites + p.customers
