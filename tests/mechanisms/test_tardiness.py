"""tardiness: exactness against enumeration, replay, the left-out charge, the default, refusals, data form."""

from __future__ import annotations

import copy
import itertools
import json

import numpy as np
import pytest

import mechanisms
from envs.admission import admit, hidden_leaks
from mechanisms.base import ActionError
from mechanisms.tardiness import TardinessParams, sequence_cost
from schemas.envspec import Action
from setter.corpus import VOCAB_KEYS
from tests.support import make_spec

M = mechanisms.get("tardiness")
VOCAB = {k: k for k in VOCAB_KEYS}


def _sample(i: int, size: int | None = None, horizon: int | None = None) -> TardinessParams:
    return M.sample(np.random.default_rng([7, i]), size or M.default_size, horizon or M.default_horizon)


def _permutations(p: TardinessParams) -> float:
    """Plain-Python enumeration of every sequence."""
    best = np.inf
    for order in itertools.permutations(range(1, p.jobs + 1)):
        best = min(best, sequence_cost(p, list(order), []))
    return -best


def _branch_and_bound(p: TardinessParams) -> float:
    """Depth-first search building the sequence from the back (a different exact method, medium n)."""
    n, total = p.jobs, p.total_work
    best = [sum(p.weights[j] * max(0.0, total - p.due_dates[j]) for j in range(n)) + 1.0]

    def search(remaining: frozenset, end: float, cost: float) -> None:
        if cost >= best[0]:
            return
        if not remaining:
            best[0] = cost
            return
        for j in sorted(remaining, key=lambda j: p.weights[j] * max(0.0, end - p.due_dates[j])):
            search(remaining - {j}, end - p.processing_times[j],
                   cost + p.weights[j] * max(0.0, end - p.due_dates[j]))

    search(frozenset(range(n)), total, 0.0)
    return -best[0]


def test_same_seed_gives_the_same_params_and_the_data_form_round_trips():
    for i in range(5):
        a, b = _sample(i), _sample(i)
        assert a == b and a.model_dump() == b.model_dump()
        assert M.params_from_data(json.loads(json.dumps(a.model_dump()))) == a
    assert _sample(0) != _sample(1)


def test_contract_shape():
    p = _sample(0)
    ops = M.operations(p)
    assert len(ops) >= 10 and {op.kind for op in ops} == {"probe", "info", "decision", "clock"}
    assert [op.name for op in ops if op.decoy] == ["read_posted_due_date"]
    assert "finish" in {op.name for op in ops} and len({op.name for op in ops}) == len(ops)
    for op in ops:
        for arg in op.args.values():
            assert arg.type == "integer" and arg.minimum == 1 and arg.maximum == p.jobs
    assert M.group == "far_ood_probe" and M.version == 1
    assert M.probe_allowance(p) == (p.jobs + 1) // 2  # tight: about half of the n job probes
    json.dumps(M.initial_state(p))


@pytest.mark.parametrize("i", range(30))
def test_solver_matches_enumeration_of_every_sequence(i):
    rng = np.random.default_rng([8, i])
    p = M.sample(rng, int(rng.integers(4, 8)), int(rng.integers(1, 6)))
    assert M.solve(p).u_star == pytest.approx(_permutations(p), abs=1e-9)


@pytest.mark.parametrize("knobs", [(9, 1), (10, 3), (10, 5), (11, 4)])
def test_solver_matches_branch_and_bound_on_medium_instances(knobs):
    for i in range(2):
        p = _sample(300 + i, *knobs)
        assert M.solve(p).u_star == pytest.approx(_branch_and_bound(p), abs=1e-9)


def test_edge_cases():
    on_time = M.params_from_data({"processing_times": [2, 3, 1], "due_dates": [10, 10, 10], "weights": [1, 2, 3]})
    assert M.solve(on_time).u_star == 0.0
    all_late = M.params_from_data({"processing_times": [2, 3, 1], "due_dates": [0, 0, 0], "weights": [1, 1, 1]})
    assert M.solve(all_late).u_star == -(1 + 3 + 6)  # shortest first: completions 1, 3, 6
    one = M.params_from_data({"processing_times": [4], "due_dates": [1], "weights": [2.5]})
    assert M.solve(one).u_star == -7.5 and M.run(one, M.solve(one).optimal_actions) == -7.5
    floats = M.params_from_data({"processing_times": [0.5, 1.25, 2.0, 0.75, 3.5], "due_dates": [1, 0.2, 3, 2.5, 4],
                                 "weights": [0.3, 2, 1.5, 1, 0.1]})
    assert M.solve(floats).u_star == pytest.approx(_permutations(floats), rel=1e-12)
    assert M.run(floats, M.solve(floats).optimal_actions) == M.solve(floats).u_star


@pytest.mark.parametrize("knobs", M.grid() + [(4, 1), (14, 1), (5, 5)])
def test_replay_of_optimal_actions_gives_u_star_exactly(knobs):
    for i in range(3):
        p = _sample(100 + i, *knobs)
        solution = M.solve(p)
        assert M.run(p, solution.optimal_actions) == solution.u_star
        assert solution.optimal_actions[-1].op == "release_sequence"
        assert sorted(a.args["job"] for a in solution.optimal_actions[:-1]) == list(range(1, p.jobs + 1))
        json.dumps(solution.facts)


def test_left_out_jobs_are_charged_as_finishing_at_the_total_work():
    p = M.params_from_data({"processing_times": [4, 2, 6], "due_dates": [3, 11, 5], "weights": [1, 2, 3]})
    assert M.run(p, M.idle_actions(p)) == -(1 * 9 + 2 * 1 + 3 * 7)
    state = M.initial_state(p)
    M.apply(p, state, Action(op="schedule_next", args={"job": 1}))
    assert M.utility(p, state) == -(1 * 1 + 2 * 1 + 3 * 7)


def test_no_partial_or_complete_state_is_worth_more_than_the_optimum():
    rng = np.random.default_rng(4)
    for i in range(40):
        p = _sample(400 + i, int(rng.integers(4, 9)), int(rng.integers(1, 6)))
        u_star = M.solve(p).u_star
        for _ in range(20):
            state = M.initial_state(p)
            for j in rng.permutation(p.jobs)[: int(rng.integers(0, p.jobs + 1))]:
                k = int(rng.integers(1, len(state["sequence"]) + 2))
                M.apply(p, state, Action(op="insert_job", args={"job": int(j) + 1, "position": k}))
            assert M.utility(p, state) <= u_star + 1e-9


def test_default_is_earliest_posted_due_date_below_the_optimum_inside_the_band():
    low, high = M.u0_band
    inside = 0
    for i in range(100):
        p = _sample(i)
        o = M.outcome(p)
        jobs = [a.args["job"] for a in o.default_actions if a.op == "schedule_next"]
        assert [p.sticker_due_dates[j - 1] for j in jobs] == sorted(p.sticker_due_dates)
        assert o.u_idle < o.u0 < o.solution.u_star
        inside += low <= (o.u0 - o.u_idle) / (o.solution.u_star - o.u_idle) <= high
    assert inside >= 90


def test_the_tightness_level_makes_more_jobs_late():
    means = [float(np.mean([M.solve(_sample(500 + i, 10, level)).facts["late_jobs"] for i in range(20)]))
             for level in range(1, 6)]
    assert np.all(np.diff(means) > 0), means
    assert means[0] < 2 and means[-1] > 6


def test_decisions_insert_undo_remove_and_clear():
    p = M.params_from_data({"processing_times": [1, 2, 3, 4], "due_dates": [1, 2, 3, 4], "weights": [1, 1, 1, 1]})
    state = M.initial_state(p)
    M.apply(p, state, Action(op="schedule_next", args={"job": 2}))
    M.apply(p, state, Action(op="insert_job", args={"job": 4, "position": 1}))
    M.apply(p, state, Action(op="insert_job", args={"job": 1, "position": 3}))
    assert state["sequence"] == [4, 2, 1]
    assert M.apply(p, state, Action(op="undo_last"))["undone"] == 1
    M.apply(p, state, Action(op="remove_job", args={"job": 4}))
    assert state["sequence"] == [2] and state["history"] == [2]
    M.apply(p, state, Action(op="clear_sequence"))
    view = M.apply(p, state, Action(op="view_sequence"))
    assert view == {"sequence": [], "unscheduled": [1, 2, 3, 4]}
    assert M.apply(p, state, Action(op="finish"))["finished"] and M.finished(state)


def test_invalid_actions_raise_and_leave_the_state_unchanged():
    p = _sample(2)
    state = M.initial_state(p)
    M.apply(p, state, Action(op="schedule_next", args={"job": 1}))
    empty = M.initial_state(p)
    bad = [Action(op="no_such_op"), Action(op="insert_job", args={"job": 2}),
           Action(op="insert_job", args={"job": 2, "position": 3}),
           Action(op="insert_job", args={"job": 2, "position": 0}),
           Action(op="schedule_next", args={"job": 0}), Action(op="schedule_next", args={"job": p.jobs + 1}),
           Action(op="schedule_next", args={"job": "2"}), Action(op="schedule_next", args={"job": 1.5}),
           Action(op="schedule_next", args={"job": True}), Action(op="schedule_next", args={"job": float("nan")}),
           Action(op="probe_job", args={"job": None}), Action(op="probe_job", args={"job": float("inf")}),
           Action(op="read_posted_due_date", args={"job": -3}), Action(op="remove_job", args={"job": 2}),
           Action(op="schedule_next", args={"job": 1}), Action(op="insert_job", args={"job": 1, "position": 1})]
    for s in (state, empty):
        for action in bad:
            if s is empty and action.args.get("job") == 1 and action.args.get("position", 1) == 1:
                continue  # adding job 1 to an empty sequence is valid
            before = copy.deepcopy(s)
            with pytest.raises(ActionError):
                M.apply(p, s, action)
            assert s == before
    with pytest.raises(ActionError, match="undo"):
        M.apply(p, empty, Action(op="undo_last"))


@pytest.mark.parametrize("data, message", [
    ({"processing_times": [1, 2], "due_dates": [1], "weights": [1, 1]}, "due_dates"),
    ({"processing_times": [1, 2], "due_dates": [1, 2], "weights": [1]}, "weights"),
    ({"processing_times": [1, 0], "due_dates": [1, 2], "weights": [1, 1]}, "processing_times must be positive"),
    ({"processing_times": [1, 2], "due_dates": [1, -2], "weights": [1, 1]}, "due_dates must be non-negative"),
    ({"processing_times": [1, 2], "due_dates": [1, 2], "weights": [0, 1]}, "weights must be positive"),
    ({"processing_times": [1, 2], "due_dates": [1, float("inf")], "weights": [1, 1]}, "finite"),
    ({"processing_times": [1, 2], "due_dates": [1, 2], "weights": [1, 1], "sticker_due_dates": [1]},
     "sticker_due_dates"),
    ({"processing_times": [1, 2], "due_dates": [1, 2], "weights": [1, 1], "sticker_due_dates": [1, -1]},
     "sticker_due_dates must be non-negative"),
    ({"processing_times": [], "due_dates": [], "weights": []}, "processing_times"),
    ({"processing_times": [1] * 15, "due_dates": [1] * 15, "weights": [1] * 15}, "processing_times"),
    ({"processing_times": [1, 2], "due_dates": [1, 2], "weights": [1, 1], "colour": "red"}, "colour"),
])
def test_params_from_data_rejects_bad_data(data, message):
    with pytest.raises(ValueError, match=message):
        M.params_from_data(data)


def test_the_sticker_defaults_to_the_true_due_dates():
    p = M.params_from_data({"processing_times": [1, 2], "due_dates": [3, 0], "weights": [1, 1]})
    assert p.sticker_due_dates == [3.0, 0.0]


def test_describe_states_the_whole_instance_and_the_hidden_mode_leaks_nothing():
    p = _sample(3)
    text = M.describe(p, VOCAB)
    assert f"There are {p.jobs} jobs for one machine" in text
    for j in range(p.jobs):
        assert (f"job {j + 1}: processing time {p.processing_times[j]:g}, due date {p.due_dates[j]:g}, "
                f"weight {p.weights[j]:g}, sticker {p.sticker_due_dates[j]:g}") in text
    assert set(M.secret_numbers(p)) >= set(p.processing_times) | set(p.weights)
    for i in range(3):
        spec = make_spec("tardiness", i)
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
