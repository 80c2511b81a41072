"""scheduling: exactness against brute force and assignment enumeration, replay, the unassigned charge, the ledger,
the posted sheet, the default, the bulk decision, facts, belief, the informed and heuristic agents, tiers and
admission, refusals, data form."""

from __future__ import annotations

import copy
import itertools
import json

import numpy as np
import pytest

import mechanisms
from envs.admission import admit, hidden_leaks
from envs.environment import Environment
from mechanisms import players
from mechanisms.base import ActionError
from mechanisms.players import Seat, run_policy
from mechanisms.scheduling import SchedulingParams, late_completion, schedule_cost, wspt_order
from schemas.envspec import Action
from setter.corpus import BUNDLE_KEYS, VOCAB_KEYS
from setter.phrasebook import vocabulary
from setter.spec import turn_budget
from tests.support import make_spec

M = mechanisms.get("scheduling")
VOCAB = vocabulary({k: k for k in (*VOCAB_KEYS, *BUNDLE_KEYS)})


def _sample(i: int, size: int | None = None, horizon: int | None = None) -> SchedulingParams:
    return M.sample(np.random.default_rng([7, i]), size or M.default_size, horizon or M.default_horizon)


def _brute_force(p: SchedulingParams) -> float:
    """Every assignment and every order on every machine (tiny instances only)."""
    n, m = p.jobs, p.machines
    best = np.inf
    for assignment in itertools.product(range(m), repeat=n):
        total = 0.0
        for k in range(m):
            jobs = [j for j in range(n) if assignment[j] == k]
            best_k = np.inf
            for order in itertools.permutations(jobs):
                clock = cost = 0.0
                for j in order:
                    clock += p.processing_times[j]
                    cost += p.weights[j] * clock
                best_k = min(best_k, cost)
            total += best_k
        best = min(best, total)
    return -best


def _assignment_enumeration(p: SchedulingParams) -> float:
    """Every assignment with Smith's rule on each machine (no subset DP): medium instances."""
    order = wspt_order(p)
    best = np.inf
    for assignment in itertools.product(range(p.machines), repeat=p.jobs):
        if assignment[0] != 0:  # machines are identical: fix the first job's machine
            continue
        queues = [[j + 1 for j in order if assignment[j] == k] for k in range(p.machines)]
        best = min(best, schedule_cost(p, queues, []))
    return -best


def test_contract_shape():
    p = _sample(0)
    ops = M.operations(p)
    kinds = {op.kind for op in ops}
    assert len(ops) >= 10 and kinds == {"probe", "info", "decision", "clock"}
    assert [(op.name, op.estimates, op.args) for op in ops if op.decoy] == [("read_posted_jobs", "processing_time", {})]
    assert "finish" in {op.name for op in ops} and len({op.name for op in ops}) == len(ops)
    for op in ops:
        for name, arg in op.args.items():
            assert arg.type == ("array" if name == "jobs" else "integer") and arg.minimum == 1
            assert arg.maximum == (p.machines if name == "machine" else p.jobs)
    assert M.group == "far_ood_probe" and M.version == 5
    known = M.knowledge(p)
    assert known.public == {"jobs": p.jobs, "machines": p.machines}
    assert M.probe_allowance(p) == p.jobs + 1 == len(M.probe_order(known))  # every probe; the tiers grant a share
    for size, horizon in M.grid():
        assert M.size_range[0] <= size <= M.size_range[1] and M.horizon_range[0] <= horizon <= M.horizon_range[1]
    json.dumps(M.initial_state(p))


@pytest.mark.parametrize("i", range(30))
def test_solver_matches_brute_force(i):
    rng = np.random.default_rng([8, i])
    m = int(rng.integers(1, 5))
    p = M.sample(rng, int(rng.integers(4, 7 if m <= 2 else 6)), m)
    assert M.solve(p).u_star == pytest.approx(_brute_force(p), abs=1e-9)


@pytest.mark.parametrize("knobs", [(8, 2), (8, 3), (9, 3), (8, 4)])
def test_solver_matches_enumeration_of_assignments_on_medium_instances(knobs):
    for i in range(3):
        p = _sample(300 + i, *knobs)
        assert M.solve(p).u_star == pytest.approx(_assignment_enumeration(p), abs=1e-9)


def test_edge_cases_single_machine_more_machines_than_jobs_and_equal_ratios():
    one = M.params_from_data({"processing_times": [3, 1, 2], "weights": [1, 1, 4], "machines": 1})
    # Smith's rule: job 3 (0.5), job 2 (1), job 1 (3): completions 2, 3, 6
    assert M.solve(one).u_star == -(4 * 2 + 1 * 3 + 1 * 6)
    spread = M.params_from_data({"processing_times": [3, 1, 2], "weights": [1, 5, 4], "machines": 4})
    assert M.solve(spread).u_star == -(3 + 5 + 8)  # every job alone at time 0
    assert M.run(spread, M.solve(spread).optimal_actions) == -16
    ties = M.params_from_data({"processing_times": [2, 4, 6, 1], "weights": [1, 2, 3, 1], "machines": 2})
    assert M.solve(ties).u_star == pytest.approx(_brute_force(ties))
    floats = M.params_from_data({"processing_times": [0.5, 1.25, 2.0, 0.75, 3.5], "weights": [0.3, 2, 1.5, 1, 0.1],
                                 "machines": 2})
    assert M.solve(floats).u_star == pytest.approx(_brute_force(floats), rel=1e-12)
    assert M.run(floats, M.solve(floats).optimal_actions) == M.solve(floats).u_star


@pytest.mark.parametrize("knobs", M.grid() + [(4, 1), (12, 1), (5, 4), (14, 3), (20, 2)])
def test_replay_of_optimal_actions_gives_u_star_exactly_in_one_bulk_call_per_machine(knobs):
    for i in range(3 if knobs[0] < 14 else 1):
        p = _sample(100 + i, *knobs)
        solution = M.solve(p)
        assert M.run(p, solution.optimal_actions) == solution.u_star
        assert solution.optimal_actions[-1].op == "start_run" and len(solution.optimal_actions) <= p.machines + 1
        assert sorted(j for a in solution.optimal_actions[:-1] for j in a.args["jobs"]) == list(range(1, p.jobs + 1))
        json.dumps(solution.facts)


def test_unassigned_jobs_are_charged_at_the_list_scheduling_bound():
    p = M.params_from_data({"processing_times": [4, 2, 6], "weights": [1, 2, 3], "machines": 2})
    assert late_completion(p, 1) == (12 - 4) / 2 + 4
    assert M.run(p, M.idle_actions(p)) == -(1 * 8 + 2 * 7 + 3 * 9)
    state = M.initial_state(p)
    M.apply(p, state, Action(op="assign_jobs", args={"jobs": [3], "machine": 1}))
    assert M.utility(p, state) == -(3 * 6 + 1 * 8 + 2 * 7)
    reply = M.apply(p, state, Action(op="start_run"))
    assert reply["finished"] and "total_weighted_completion_time" not in reply  # the outcome comes with the ending
    ledger = M.ledger(p, state)
    assert ledger["total_weighted_completion_time"] == 3 * 6 + 1 * 8 + 2 * 7 and ledger["unassigned_jobs"] == [1, 2]
    assert ledger["unassigned_charge"] == 1 * 8 + 2 * 7 and ledger["weighted_completion_by_machine"] == {
        "machine 1": 18.0, "machine 2": 0.0}
    assert ledger["makespan"] == 6 and ledger["completion_times"] == {"job 3": 6.0}


def test_the_ledger_states_every_part_of_the_total():
    p = M.params_from_data({"processing_times": [4, 2, 6, 1], "weights": [1, 2, 3, 5], "machines": 2})
    state = M.initial_state(p)
    M.apply(p, state, Action(op="assign_jobs", args={"jobs": [4, 3], "machine": 1}))
    M.apply(p, state, Action(op="assign_jobs", args={"jobs": [2, 1], "machine": 2}))
    ledger = M.ledger(p, state)
    assert ledger["completion_times"] == {"job 4": 1, "job 3": 7, "job 2": 2, "job 1": 6}
    assert ledger["machine_finish_times"] == {"machine 1": 7, "machine 2": 6} and ledger["makespan"] == 7
    assert ledger["weighted_completion_by_machine"] == {"machine 1": 5 * 1 + 3 * 7, "machine 2": 2 * 2 + 1 * 6}
    assert ledger["unassigned_charge"] == 0 and ledger["unassigned_jobs"] == []
    assert ledger["total_weighted_completion_time"] == 26 + 10 == -M.utility(p, state)


def test_every_ending_states_the_outcome_in_the_hidden_mode():
    """The closing call and the budget's last turn both end with the ledger, in the passage's words."""
    spec = make_spec("scheduling", 0, tier="frontier")
    for closing in ("start_run", None):
        env = Environment(spec, "hidden")
        names = {tool.operation: tool.name for tool in env.tool_specs()}
        for _ in range(spec.turn_budget - 1):
            env.step(names["read_posted_jobs"], {})
        last = env.step(names[closing] if closing else names["read_posted_jobs"], {})
        assert env.done and last["outcome"]["episode over"] == ("finished" if closing else "the turns ran out")
        total = spec.rendering.observation_names["total_weighted_completion_time"]
        assert last["outcome"][total] == pytest.approx(-env.utility())


def test_the_posted_sheet_shows_every_posted_figure_in_one_call():
    p = _sample(6, 12, 3)
    sheet = M.apply(p, M.initial_state(p), Action(op="read_posted_jobs"))
    assert sheet == {"posted_processing_times": {f"job {j + 1}": p.sticker_processing_times[j] for j in range(p.jobs)},
                     "posted_weights": {f"job {j + 1}": p.sticker_weights[j] for j in range(p.jobs)}}
    assert p.sticker_processing_times != p.processing_times and p.sticker_weights != p.weights


def test_no_partial_or_complete_state_is_worth_more_than_the_optimum():
    rng = np.random.default_rng(4)
    for i in range(40):
        p = _sample(400 + i, int(rng.integers(4, 9)), int(rng.integers(1, 5)))
        u_star = M.solve(p).u_star
        for _ in range(20):
            state = M.initial_state(p)
            for j in rng.permutation(p.jobs)[: int(rng.integers(0, p.jobs + 1))]:
                M.apply(p, state, Action(op="assign_jobs", args={"jobs": [int(j) + 1],
                                                                 "machine": int(rng.integers(1, p.machines + 1))}))
            assert M.utility(p, state) <= u_star + 1e-9


def test_default_reads_the_sheet_trusts_it_and_is_below_the_optimum_inside_the_band():
    low, high = M.u0_band
    inside = 0
    for i in range(100):
        p = _sample(i)
        o = M.outcome(p)
        assert o.default_actions[0].op == "read_posted_jobs"
        assert all(a.op in ("assign_jobs", "start_run") for a in o.default_actions[1:])
        assert len(o.default_actions) <= p.machines + 2
        assert o.u_idle < o.u0 < o.solution.u_star
        g = (o.u0 - o.u_idle) / (o.solution.u_star - o.u_idle)
        inside += low <= g <= high
    assert inside >= 90
    truthful = M.params_from_data({"processing_times": [1, 2, 3, 4], "weights": [1, 3, 1, 2], "machines": 2})
    assert M.run(truthful, M.default_actions(truthful)) == M.solve(truthful).u_star  # a true sheet: the optimum
    posted = M.params_from_data({"processing_times": [1, 2], "weights": [1, 9], "machines": 1,
                                 "sticker_weights": [9, 1]})
    assert M.default_actions(posted)[1].args["jobs"] == [1, 2]  # it follows the posted weights, not the true ones
    assert M.default_actions(posted.model_copy(update={"sticker_weights": [1, 9]}))[1].args["jobs"] == [2, 1]


def test_decisions_undo_remove_and_clear():
    p = M.params_from_data({"processing_times": [1, 2, 3, 4], "weights": [1, 1, 1, 1], "machines": 2})
    state = M.initial_state(p)
    M.apply(p, state, Action(op="assign_jobs", args={"jobs": [1, 2], "machine": 1}))
    for job, machine in ((3, 2), (4, 1)):
        M.apply(p, state, Action(op="assign_jobs", args={"jobs": [job], "machine": machine}))
    assert state["queues"] == [[1, 2, 4], [3]]
    assert M.apply(p, state, Action(op="undo_last"))["undone"] == 4
    M.apply(p, state, Action(op="remove_job", args={"job": 1}))
    assert state["queues"] == [[2], [3]]
    assert M.apply(p, state, Action(op="undo_last"))["undone"] == 3
    M.apply(p, state, Action(op="assign_jobs", args={"jobs": [4], "machine": 1}))
    M.apply(p, state, Action(op="clear_machine", args={"machine": 1}))
    assert state["queues"] == [[], []] and state["history"] == []
    view = M.apply(p, state, Action(op="view_schedule"))
    assert view["unassigned_jobs"] == [1, 2, 3, 4] and "processing_time" not in json.dumps(view)
    assert M.apply(p, state, Action(op="finish"))["finished"] and M.finished(state)


def test_invalid_actions_raise_and_leave_the_state_unchanged():
    p = _sample(2)
    state = M.initial_state(p)
    M.apply(p, state, Action(op="assign_jobs", args={"jobs": [1], "machine": 1}))
    empty = M.initial_state(p)
    bad = [Action(op="no_such_op"), Action(op="assign_jobs", args={"jobs": [2]}),
           Action(op="assign_jobs", args={"jobs": [0], "machine": 1}),
           Action(op="assign_jobs", args={"jobs": [2], "machine": p.machines + 1}),
           Action(op="assign_jobs", args={"jobs": ["2"], "machine": 1}),
           Action(op="assign_jobs", args={"jobs": [1.5], "machine": 1}),
           Action(op="assign_jobs", args={"jobs": [True], "machine": 1}),
           Action(op="assign_jobs", args={"jobs": [float("nan")], "machine": 1}),
           Action(op="assign_jobs", args={"jobs": 2, "machine": 1}),
           Action(op="assign_jobs", args={"jobs": [], "machine": 1}),
           Action(op="assign_jobs", args={"jobs": [2, 2], "machine": 1}),
           Action(op="assign_jobs", args={"jobs": [2, 1], "machine": 1}),
           Action(op="probe_job", args={"job": None}), Action(op="probe_job", args={"job": float("inf")}),
           Action(op="probe_job", args={"job": 0}), Action(op="clear_machine", args={"machine": 0}),
           Action(op="assign_jobs", args={"jobs": [1], "machine": 2 if p.machines > 1 else 1}),
           Action(op="remove_job", args={"job": 2})]
    for s in (state, empty):
        for action in bad:
            if s is empty and action.op == "assign_jobs" and action.args.get("jobs") in ([1], [2, 1]) \
                    and action.args.get("machine", 0) <= p.machines:
                continue  # assigning job 1 to an empty schedule is valid
            before = copy.deepcopy(s)
            with pytest.raises(ActionError):
                M.apply(p, s, action)
            assert s == before
    with pytest.raises(ActionError, match="undo"):
        M.apply(p, empty, Action(op="undo_last"))


@pytest.mark.parametrize("data, message", [
    ({"processing_times": [1, 2], "weights": [1], "machines": 1}, "weights"),
    ({"processing_times": [1, 2], "weights": [1, 2], "machines": 0}, "machines"),
    ({"processing_times": [1, 2], "weights": [1, 2], "machines": 5}, "machines"),
    ({"processing_times": [1, 0], "weights": [1, 2], "machines": 1}, "processing_times must be positive"),
    ({"processing_times": [1, 2], "weights": [-1, 2], "machines": 1}, "weights must be positive"),
    ({"processing_times": [1, float("nan")], "weights": [1, 2], "machines": 1}, "finite"),
    ({"processing_times": [1, 2], "weights": [1, 2], "machines": 1, "sticker_processing_times": [1]},
     "sticker_processing_times"),
    ({"processing_times": [1, 2], "weights": [1, 2], "machines": 1, "sticker_processing_times": [1, -1]},
     "sticker_processing_times must be positive"),
    ({"processing_times": [1, 2], "weights": [1, 2], "machines": 1, "sticker_weights": [1]}, "sticker_weights"),
    ({"processing_times": [1, 2], "weights": [1, 2], "machines": 1, "sticker_weights": [0, 1]},
     "sticker_weights must be positive"),
    ({"processing_times": [], "weights": [], "machines": 1}, "processing_times"),
    ({"processing_times": [1] * 21, "weights": [1] * 21, "machines": 1}, "processing_times"),
    ({"processing_times": [1] * 15, "weights": [1] * 15, "machines": 3}, "at most 14 jobs on three or more"),
    ({"processing_times": [1, 2], "weights": [1, 2], "machines": 1, "colour": "red"}, "colour"),
])
def test_params_from_data_rejects_bad_data(data, message):
    with pytest.raises(ValueError, match=message):
        M.params_from_data(data)


def test_the_stickers_default_to_the_true_figures():
    p = M.params_from_data({"processing_times": [1, 2], "weights": [3, 4], "machines": 1})
    assert p.sticker_processing_times == [1.0, 2.0] and p.sticker_weights == [3.0, 4.0]


def test_facts_state_the_whole_instance_the_unassigned_charge_and_the_hidden_mode_leaks_nothing():
    from mechanisms.facts import REQUIRED_RULES

    p = _sample(3)
    facts = M.facts(p, VOCAB)
    text = M.describe(p, VOCAB)
    assert f"{p.jobs} jobs, numbered 1 to {p.jobs}, and {p.machines} identical machines" in text
    for j in range(p.jobs):
        assert f"{j + 1}: {p.processing_times[j]:g}, {p.weights[j]:g}" in text
        assert f"{j + 1}: {p.sticker_processing_times[j]:g}, {p.sticker_weights[j]:g}" in text
    keys = {fact.key for fact in facts}
    assert set(REQUIRED_RULES) | {"left_out", "total_work", "jobs", "timing"} <= keys
    left_out = next(f for f in facts if f.key == "left_out").statement
    assert f"(P - p) / {p.machines} + p" in left_out  # the charge late_completion applies
    assert late_completion(p, 1) == (p.total_work - p.processing_times[0]) / p.machines + p.processing_times[0]
    public = {round(float(x), 6) for x in M.public_numbers(p)}
    covered = {round(x, 6) for fact in facts for x in fact.numbers}
    assert {round(x, 6) for x in M.secret_numbers(p)} - public <= covered
    assert all({round(x, 6) for x in f.numbers} <= public for f in facts if f.is_rule)
    for i in range(3):
        spec = make_spec("scheduling", i)
        assert hidden_leaks(spec) == [] and admit(spec).admitted


def test_a_thousand_random_actions_raise_nothing_but_action_error():
    """Random calls with valid job lists too: the bulk decision on partial states, which the conformance
    suite's random agent (it sends no valid list) never reaches."""
    rng = np.random.default_rng(3)
    p = _sample(5, 7, 3)
    ops = M.operations(p)
    state = M.initial_state(p)
    u_star = M.solve(p).u_star
    errors = 0
    for _ in range(1000):
        if M.finished(state) or rng.random() < 0.02:
            state = M.initial_state(p)
        op = ops[int(rng.integers(len(ops)))]
        args = {name: (int(rng.integers(0, spec.maximum + 2)) if rng.random() < 0.9 else "x")
                for name, spec in op.args.items()}
        if "jobs" in args and rng.random() < 0.9:
            args["jobs"] = [int(x) for x in rng.integers(0, p.jobs + 2, int(rng.integers(0, 4)))]
        before = copy.deepcopy(state)
        try:
            json.dumps(M.apply(p, state, Action(op=op.name, args=args)))
        except ActionError:
            errors += 1
            assert state == before
        json.dumps(state)
        assert M.utility(p, state) <= u_star + 1e-9
    assert 0 < errors < 1000


@pytest.mark.parametrize("knobs", [(12, 4), (14, 3), (18, 2), (20, 2)])
def test_solver_matches_assignment_enumeration_with_smiths_rule_at_larger_sizes(knobs):
    """Every assignment with machine symmetry broken (the first job on machine 1), Smith's rule on each machine:
    vectorised over all m^(n-1) assignments at once (an independent method at the tiers' sizes)."""
    p = _sample(700, *knobs)
    n, m = p.jobs, p.machines
    order = wspt_order(p)
    codes = np.arange(m ** (n - 1))
    machine_of = np.zeros((len(codes), n), dtype=np.int64)
    rest = codes.copy()
    for j in order[1:]:
        machine_of[:, j] = rest % m
        rest //= m
    machine_of[:, order[0]] = 0
    loads = np.zeros((len(codes), m))
    total = np.zeros(len(codes))
    rows = np.arange(len(codes))
    for j in order:
        loads[rows, machine_of[:, j]] += p.processing_times[j]
        total += p.weights[j] * loads[rows, machine_of[:, j]]
    assert M.solve(p).u_star == pytest.approx(-float(total.min()), rel=1e-12)


def test_the_tiers_grant_a_share_of_every_probe_and_stay_within_the_knobs():
    tiers = M.tiers()
    assert tiers["easy"].probe_share == 1.0  # everything fits; below, the agent must choose what to verify
    assert 0 < tiers["frontier"].probe_share < tiers["hard"].probe_share < tiers["medium"].probe_share < 1.0
    for tier in tiers.values():
        for size, horizon in tier.grid:
            assert M.size_range[0] <= size <= M.size_range[1] and M.horizon_range[0] <= horizon <= M.horizon_range[1]
            M.sample(np.random.default_rng(0), size, horizon)  # the cell is a valid instance


def _budget(p, share: float = 1.0) -> int:
    return turn_budget(M, p, M.outcome(p), share)


@pytest.mark.parametrize("knobs", [(6, 2), (10, 4), (12, 3), (18, 2)])
def test_the_informed_agent_reaches_one_when_every_probe_fits(knobs):
    for i in range(3 if knobs[0] < 14 else 1):
        p = _sample(400 + i, *knobs)
        budget = _budget(p)
        actions, u = run_policy(M, p, players.informed(M), budget)
        assert len(actions) <= budget and actions[0].op == "read_posted_jobs"
        assert M.play(p, actions, budget) == (u, len(actions), 0)
        assert u == pytest.approx(M.solve(p).u_star, abs=1e-9)


def _knowing(p: SchedulingParams, calls: list[Action]):
    """What a player knows after these calls (each on the instance, in order)."""
    seat = Seat(M, p)
    seat.play(calls)
    return seat.known


def test_belief_comes_from_what_was_seen_verified_jobs_true_the_rest_as_posted():
    for i in range(5):
        p = _sample(500 + i, 10, 3)
        sheet = [Action(op="read_posted_jobs")]
        every = _knowing(p, [*sheet, *M.probe_order(M.knowledge(p))])
        assert M.believed(every).processing_times == p.processing_times and M.believed(every).weights == p.weights
        trusting = M.believed(_knowing(p, sheet))
        assert trusting.processing_times == p.sticker_processing_times and trusting.weights == p.sticker_weights
        blind = M.believed(_knowing(p, []))
        assert blind.processing_times == [10.0] * p.jobs and blind.weights == [5.0] * p.jobs
        # another instance with the same posted sheet: the same belief (the belief reads no hidden figure)
        changed = p.model_copy(update={"processing_times": [x + 3 for x in p.processing_times],
                                       "weights": [x * 2 for x in p.weights]})
        assert M.believed(_knowing(changed, sheet)) == trusting
        some = [Action(op="probe_job", args={"job": j}) for j in (2, 5, 7)]
        partly = M.believed(_knowing(p, [*sheet, *some]))
        for j in range(1, p.jobs + 1):
            times, weights = ((p.processing_times, p.weights) if j in (2, 5, 7)
                              else (p.sticker_processing_times, p.sticker_weights))
            assert (partly.processing_times[j - 1], partly.weights[j - 1]) == (times[j - 1], weights[j - 1])
        scaled = M.believed(_knowing(p, [*sheet, Action(op="probe_total_work"), *some]))
        assert sum(scaled.processing_times) == pytest.approx(p.total_work)  # the rest scaled to the work left
        assert scaled.weights == partly.weights


def test_the_informed_agent_verifies_the_most_posted_weighted_work_first():
    p = M.params_from_data({"processing_times": [5, 5, 5, 5], "weights": [1, 1, 1, 1], "machines": 2,
                            "sticker_processing_times": [2, 10, 4, 3], "sticker_weights": [9, 1, 3, 2]})
    known = _knowing(p, [Action(op="read_posted_jobs")])
    assert [a.args.get("job") for a in M.probe_order(known)] == [1, 3, 2, 4, None]  # 18, 12, 10, 6, the total
    assert [a.args.get("job") for a in M.listing_order(known)] == [1, 2, 3, 4, None]


@pytest.mark.parametrize("knobs", [(6, 2), (10, 4), (18, 2)])
def test_heuristics_play_within_idle_and_optimum(knobs):
    for i in range(3):
        p = _sample(600 + i, *knobs)
        o = M.outcome(p)
        heuristics = M.heuristic_policies()
        assert set(heuristics) == {"smith_dealt_posted", "wspt_listed", "spt_listed"}
        for share in (1.0, 0.3):
            budget = _budget(p, share)
            for name, policy in heuristics.items():
                actions, u = run_policy(M, p, policy, budget)
                assert len(actions) <= budget and M.play(p, actions, budget) == (u, len(actions), 0)
                assert o.u_idle - 1e-9 <= u <= o.solution.u_star + 1e-9, name
        listed, _ = run_policy(M, p, heuristics["wspt_listed"], _budget(p, 0.3))
        timed = [a.args["job"] for a in listed if a.op == "probe_job"]
        assert listed[0].op == "read_posted_jobs" and timed == list(range(1, len(timed) + 1))  # in number order
        assert listed[-1].op == "start_run" and len(listed) == _budget(p, 0.3)  # room kept to queue and start


@pytest.mark.parametrize("tier", ["easy", "medium", "hard", "frontier"])
def test_rendered_environments_are_admitted_without_leaks_at_every_tier(tier):
    admitted = 0
    cells = M.tiers()[tier].grid
    for i in range(8):
        spec = make_spec("scheduling", i, *cells[i % len(cells)], tier=tier)
        assert hidden_leaks(spec) == []
        verdict = admit(spec)
        assert verdict.admitted or verdict.check in ("difficulty", "C2", "ceiling"), verdict.reason
        admitted += verdict.admitted
    assert admitted >= 1


@pytest.mark.parametrize("tier", ["hard", "frontier"])
def test_the_turn_budget_never_lets_an_agent_probe_everything_and_still_act(tier):
    assert M.turn_slack == 1
    for size, horizon in M.tiers()[tier].grid:
        spec = make_spec("scheduling", 0, size, horizon, tier=tier)
        p = M.params_from_data(spec.params)
        assert spec.turn_budget - len(spec.reference.optimal_actions) < p.jobs + 1
        assert spec.difficulty.facts_fit < 1


@pytest.mark.parametrize("tier", ["hard", "frontier"])
def test_the_informed_agent_beats_the_default_on_admitted_tight_budget_instances(tier):
    admitted = 0
    cells = M.tiers()[tier].grid
    for i in range(8):
        spec = make_spec("scheduling", i, *cells[i % len(cells)], tier=tier)
        verdict = admit(spec)
        if not (verdict.admitted or verdict.check == "difficulty"):  # the tier check comes after the ceiling
            continue
        admitted += 1
        p = M.params_from_data(spec.params)
        u, _, _ = M.play(p, spec.reference.informed_actions, spec.turn_budget)
        assert u > spec.reference.u0 and spec.difficulty.informed_score >= 0.05
    assert admitted >= 2
