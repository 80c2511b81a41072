"""scheduling: exactness against brute force, replay, the unassigned charge, the default, refusals, data form."""

from __future__ import annotations

import copy
import itertools
import json

import numpy as np
import pytest

import mechanisms
from envs.admission import admit, hidden_leaks
from mechanisms.base import ActionError
from mechanisms.scheduling import SchedulingParams, late_completion, schedule_cost, wspt_order
from schemas.envspec import Action
from setter.corpus import VOCAB_KEYS
from tests.support import make_spec

M = mechanisms.get("scheduling")
VOCAB = {k: k for k in VOCAB_KEYS}


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


def test_same_seed_gives_the_same_params_and_the_data_form_round_trips():
    for i in range(5):
        a, b = _sample(i), _sample(i)
        assert a == b and a.model_dump() == b.model_dump()
        assert M.params_from_data(json.loads(json.dumps(a.model_dump()))) == a
    assert _sample(0) != _sample(1)


def test_contract_shape():
    p = _sample(0)
    ops = M.operations(p)
    kinds = {op.kind for op in ops}
    assert len(ops) >= 10 and kinds == {"probe", "info", "decision", "clock"}
    assert [op.name for op in ops if op.decoy] == ["read_sticker"]
    assert "finish" in {op.name for op in ops} and len({op.name for op in ops}) == len(ops)
    for op in ops:
        for name, arg in op.args.items():
            assert arg.type == "integer" and arg.minimum == 1
            assert arg.maximum == (p.jobs if name == "job" else p.machines)
    assert M.group == "far_ood_probe" and M.version == 1
    assert M.probe_allowance(p) == (p.jobs + 1) // 2  # tight: about half of the n job probes
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


@pytest.mark.parametrize("knobs", M.grid() + [(4, 1), (12, 1), (5, 4)])
def test_replay_of_optimal_actions_gives_u_star_exactly(knobs):
    for i in range(3):
        p = _sample(100 + i, *knobs)
        solution = M.solve(p)
        assert M.run(p, solution.optimal_actions) == solution.u_star
        assert solution.optimal_actions[-1].op == "start_run"
        assert sorted(a.args["job"] for a in solution.optimal_actions[:-1]) == list(range(1, p.jobs + 1))
        json.dumps(solution.facts)


def test_unassigned_jobs_are_charged_at_the_list_scheduling_bound():
    p = M.params_from_data({"processing_times": [4, 2, 6], "weights": [1, 2, 3], "machines": 2})
    assert late_completion(p, 1) == (12 - 4) / 2 + 4
    assert M.run(p, M.idle_actions(p)) == -(1 * 8 + 2 * 7 + 3 * 9)
    state = M.initial_state(p)
    M.apply(p, state, Action(op="assign_job", args={"job": 3, "machine": 1}))
    assert M.utility(p, state) == -(3 * 6 + 1 * 8 + 2 * 7)


def test_no_partial_or_complete_state_is_worth_more_than_the_optimum():
    rng = np.random.default_rng(4)
    for i in range(40):
        p = _sample(400 + i, int(rng.integers(4, 9)), int(rng.integers(1, 5)))
        u_star = M.solve(p).u_star
        for _ in range(20):
            state = M.initial_state(p)
            for j in rng.permutation(p.jobs)[: int(rng.integers(0, p.jobs + 1))]:
                M.apply(p, state, Action(op="assign_job", args={"job": int(j) + 1,
                                                                "machine": int(rng.integers(1, p.machines + 1))}))
            assert M.utility(p, state) <= u_star + 1e-9


def test_default_trusts_the_sticker_and_is_below_the_optimum_inside_the_band():
    low, high = M.u0_band
    inside = 0
    for i in range(100):
        p = _sample(i)
        o = M.outcome(p)
        assert all(a.op in ("assign_job", "start_run") for a in o.default_actions)
        assert o.u_idle < o.u0 < o.solution.u_star
        g = (o.u0 - o.u_idle) / (o.solution.u_star - o.u_idle)
        inside += low <= g <= high
    assert inside >= 90
    truthful = M.params_from_data({"processing_times": [1, 2, 3, 4], "weights": [1, 1, 1, 1], "machines": 1})
    assert M.run(truthful, M.default_actions(truthful)) == M.solve(truthful).u_star  # exact estimates: WSPT


def test_decisions_undo_remove_and_clear():
    p = M.params_from_data({"processing_times": [1, 2, 3, 4], "weights": [1, 1, 1, 1], "machines": 2})
    state = M.initial_state(p)
    for job, machine in ((1, 1), (2, 1), (3, 2), (4, 1)):
        M.apply(p, state, Action(op="assign_job", args={"job": job, "machine": machine}))
    assert state["queues"] == [[1, 2, 4], [3]]
    assert M.apply(p, state, Action(op="undo_last"))["undone"] == 4
    M.apply(p, state, Action(op="remove_job", args={"job": 1}))
    assert state["queues"] == [[2], [3]]
    assert M.apply(p, state, Action(op="undo_last"))["undone"] == 3
    M.apply(p, state, Action(op="assign_job", args={"job": 4, "machine": 1}))
    M.apply(p, state, Action(op="clear_machine", args={"machine": 1}))
    assert state["queues"] == [[], []] and state["history"] == []
    view = M.apply(p, state, Action(op="view_schedule"))
    assert view["unassigned"] == [1, 2, 3, 4] and "processing_time" not in json.dumps(view)
    assert M.apply(p, state, Action(op="finish"))["finished"] and M.finished(state)


def test_invalid_actions_raise_and_leave_the_state_unchanged():
    p = _sample(2)
    state = M.initial_state(p)
    M.apply(p, state, Action(op="assign_job", args={"job": 1, "machine": 1}))
    empty = M.initial_state(p)
    bad = [Action(op="no_such_op"), Action(op="assign_job", args={"job": 2}),
           Action(op="assign_job", args={"job": 0, "machine": 1}),
           Action(op="assign_job", args={"job": 2, "machine": p.machines + 1}),
           Action(op="assign_job", args={"job": "2", "machine": 1}),
           Action(op="assign_job", args={"job": 1.5, "machine": 1}),
           Action(op="assign_job", args={"job": True, "machine": 1}),
           Action(op="assign_job", args={"job": float("nan"), "machine": 1}),
           Action(op="probe_job", args={"job": None}), Action(op="probe_job", args={"job": float("inf")}),
           Action(op="read_sticker", args={"job": -3}), Action(op="clear_machine", args={"machine": 0}),
           Action(op="assign_job", args={"job": 1, "machine": 2 if p.machines > 1 else 1}),
           Action(op="remove_job", args={"job": 2})]
    for s in (state, empty):
        for action in bad:
            if s is empty and action.args.get("job") == 1 and action.op == "assign_job":
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
    ({"processing_times": [], "weights": [], "machines": 1}, "processing_times"),
    ({"processing_times": [1] * 13, "weights": [1] * 13, "machines": 1}, "processing_times"),
    ({"processing_times": [1, 2], "weights": [1, 2], "machines": 1, "colour": "red"}, "colour"),
])
def test_params_from_data_rejects_bad_data(data, message):
    with pytest.raises(ValueError, match=message):
        M.params_from_data(data)


def test_the_sticker_defaults_to_the_true_processing_times():
    p = M.params_from_data({"processing_times": [1, 2], "weights": [1, 2], "machines": 1})
    assert p.sticker_processing_times == [1.0, 2.0]


def test_describe_states_the_whole_instance_and_the_hidden_mode_leaks_nothing():
    p = _sample(3)
    text = M.describe(p, VOCAB)
    assert f"{p.jobs} jobs and {p.machines} identical machines" in text
    for j in range(p.jobs):
        assert (f"job {j + 1}: processing time {p.processing_times[j]:g}, weight {p.weights[j]:g}, "
                f"sticker {p.sticker_processing_times[j]:g}") in text
    assert set(M.secret_numbers(p)) >= set(p.processing_times) | set(p.weights)
    for i in range(3):
        spec = make_spec("scheduling", i)
        assert hidden_leaks(spec) == [] and admit(spec).admitted


def test_a_thousand_random_actions_raise_nothing_but_action_error():
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
        before = copy.deepcopy(state)
        try:
            json.dumps(M.apply(p, state, Action(op=op.name, args=args)))
        except ActionError:
            errors += 1
            assert state == before
        json.dumps(state)
        assert M.utility(p, state) <= u_star + 1e-9
    assert 0 < errors < 1000
