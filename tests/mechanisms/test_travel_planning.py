"""travel_planning: the earliest-finish DP against enumeration, hand-made days, the data form, refusals, policies."""

from __future__ import annotations

import copy
import itertools
import json

import numpy as np
import pytest

import mechanisms
from envs.agents import tool_call
from envs.conformance import sample_spec
from envs.environment import ENDING_KEY, Environment
from mechanisms import players
from mechanisms.base import ActionError
from mechanisms.players import Seat, run_policy
from mechanisms.travel_planning import DAY_MINUTES, TravelParams, clock_text
from schemas.envspec import Action
from setter.corpus import BUNDLE_KEYS, VOCAB_KEYS
from setter.phrasebook import vocabulary
from setter.spec import turn_budget

M = mechanisms.get("travel_planning")
VOCAB = vocabulary({k: k for k in (*VOCAB_KEYS, *BUNDLE_KEYS)})


def _sample(i: int, size: int | None = None, horizon: int | None = None) -> TravelParams:
    return M.sample(np.random.default_rng([23, i]), size or M.default_size, horizon or M.default_horizon)


def _step(p: TravelParams, clock: int, here: int, spent: float, j: int) -> tuple[int, float] | None:
    """Visit j next from (clock, here) or None when that is not allowed."""
    opens, closes = p.opening[j - 1]
    done = max(clock + p.travel[here][j], opens) + p.durations[j - 1]
    spent += p.prices[j - 1]
    if done > closes or done + p.travel[j][0] > p.day_end or spent > p.budget + 1e-9:
        return None
    return done, spent


def _enumerate(p: TravelParams) -> float:
    """Every ordered sequence of distinct places (small n only)."""
    best = 0.0
    for k in range(1, p.places + 1):
        for order in itertools.permutations(range(1, p.places + 1), k):
            clock, here, spent = p.day_start, 0, 0.0
            for j in order:
                step = _step(p, clock, here, spent, j)
                if step is None:
                    break
                (clock, spent), here = step, j
            else:
                best = max(best, float(sum(p.enjoyment[j - 1] for j in order)))
    return best


def _depth_first(p: TravelParams) -> float:
    """Every feasible sequence, grown one place at a time (a feasible day has only feasible prefixes)."""
    best = 0.0

    def grow(clock: int, here: int, spent: float, visited: tuple[int, ...], value: float) -> None:
        nonlocal best
        best = max(best, value)
        for j in range(1, p.places + 1):
            if j not in visited:
                step = _step(p, clock, here, spent, j)
                if step is not None:
                    grow(step[0], j, step[1], (*visited, j), value + p.enjoyment[j - 1])

    grow(p.day_start, 0, 0.0, (), 0.0)
    return best


def _day(**changes) -> TravelParams:
    """A small hand-made day: three places around a hotel, 09:00 to 17:00."""
    data = {"enjoyment": [10, 20, 30], "prices": [5, 5, 5], "durations": [60, 60, 60],
            "opening": [[540, 1020], [540, 1020], [540, 1020]],
            "travel": [[0, 10, 10, 10], [10, 0, 10, 10], [10, 10, 0, 10], [10, 10, 10, 0]],
            "day_start": 540, "day_end": 1020, "budget": 100}
    data.update(changes)
    return M.params_from_data(data)


def _visit(p: TravelParams, places: list[int]) -> dict:
    state = M.initial_state(p)
    for j in places:
        M.apply(p, state, Action(op="visit", args={"place": j}))
    return state


def test_contract_shape():
    p = _sample(0)
    ops = M.operations(p)
    assert len(ops) >= 10 and {op.kind for op in ops} == {"probe", "info", "decision", "clock"}
    assert len({op.name for op in ops}) == len(ops)
    assert "finish" in {op.name for op in ops} and [op.name for op in ops if op.decoy] == ["read_guidebook"]
    assert not M.operation(p, "read_guidebook").args  # the posted guidebook: one call shows every rating
    assert [op.name for op in ops if any(a.type == "array" for a in op.args.values())] == ["visit_places"]
    for op in ops:
        for arg in op.args.values():
            assert arg.type in ("integer", "array") and arg.minimum in (0, 1)
            assert arg.maximum == (DAY_MINUTES if op.name == "wait" else p.places)
    assert M.group == "external" and M.version == 3
    assert all(M.size_range[0] <= s <= M.size_range[1] and M.horizon_range[0] <= h <= M.horizon_range[1]
               for s, h in M.grid())
    assert 3 <= len(M.grid()) <= 6
    assert M.probe_allowance(p) == 3 * p.places + 1 == len(M.probe_order(M.knowledge(p)))
    json.dumps(M.initial_state(p))
    json.dumps(M.solve(p).facts)


@pytest.mark.parametrize("i", range(30))
def test_dp_matches_enumeration_of_every_sequence(i):
    rng = np.random.default_rng([24, i])
    p = M.sample(rng, int(rng.integers(4, 7)), int(rng.integers(4, 15)))
    solution = M.solve(p)
    assert solution.u_star == pytest.approx(_enumerate(p), abs=1e-9)
    assert M.run(p, solution.optimal_actions) == solution.u_star


@pytest.mark.parametrize("knobs", [(8, 8), (9, 10), (10, 8)])
def test_dp_matches_a_depth_first_search_on_larger_instances(knobs):
    for i in range(3):
        p = _sample(300 + i, *knobs)
        assert M.solve(p).u_star == pytest.approx(_depth_first(p), abs=1e-9)


def test_dp_on_random_asymmetric_non_metric_data():
    rng = np.random.default_rng(4)
    for _ in range(20):
        n = int(rng.integers(1, 6))
        travel = rng.integers(0, 200, (n + 1, n + 1))
        np.fill_diagonal(travel, 0)
        opens = rng.integers(400, 900, n)
        data = {"enjoyment": rng.integers(0, 50, n).tolist(), "prices": rng.integers(0, 30, n).tolist(),
                "durations": rng.integers(1, 150, n).tolist(),
                "opening": [[int(o), int(o + rng.integers(0, 400))] for o in opens], "travel": travel.tolist(),
                "day_start": 480, "day_end": int(rng.integers(600, 1300)), "budget": float(rng.integers(0, 60))}
        p = M.params_from_data(data)
        assert M.solve(p).u_star == pytest.approx(_enumerate(p), abs=1e-9)


def test_waiting_for_a_late_opening_and_the_order_of_closing_times():
    # place 1 opens at 13:00; place 2 closes at 11:00; place 3 opens at 10:00 and closes at 12:30
    p = _day(opening=[[780, 1020], [540, 660], [600, 750]])
    solution = M.solve(p)
    assert solution.u_star == 60 and solution.facts["visited"] == [2, 3, 1]
    state = M.initial_state(p)
    reply = M.apply(p, state, Action(op="visit", args={"place": 1}))
    assert reply == {"place": 1, "visited places": [1], "position": 1}  # a decision shows no time or money
    assert state["clock"] == 840  # arrived 09:10, waited for 13:00, left at 14:00
    assert M.apply(p, state, Action(op="view_itinerary"))["clock"] == "14:00"


def test_the_budget_limits_the_set():
    p = _day(prices=[10, 30, 40], budget=50)
    solution = M.solve(p)
    assert solution.u_star == 40 and sorted(solution.facts["visited"]) == [1, 3]
    state = _visit(p, [3, 1])
    before = copy.deepcopy(state)
    with pytest.raises(ActionError, match="budget"):
        M.apply(p, state, Action(op="visit", args={"place": 2}))
    assert state == before


def test_the_day_end_limits_how_many_visits_fit():
    p = _day(day_end=540 + 150)  # two hours thirty: two visits of an hour with three 10-minute trips
    assert M.solve(p).u_star == 50
    assert M.run(p, M.default_actions(p)) <= 50


def test_a_visit_that_leaves_no_way_home_in_time_is_refused_even_if_a_later_leg_would_be_short():
    travel = [[0, 10, 10], [10, 0, 10], [300, 10, 0]]  # from place 2 the way home is long, via place 1 short
    p = M.params_from_data({"enjoyment": [5, 50], "prices": [0, 0], "durations": [30, 30],
                            "opening": [[540, 1020], [540, 1020]], "travel": travel,
                            "day_start": 540, "day_end": 720, "budget": 0})
    state = M.initial_state(p)
    with pytest.raises(ActionError, match="hotel"):
        M.apply(p, state, Action(op="visit", args={"place": 2}))
    assert M.solve(p).u_star == 5 == _enumerate(p)


def test_nothing_feasible_means_staying_at_the_hotel():
    p = _day(day_end=560)
    solution = M.solve(p)
    assert solution.u_star == 0.0 and solution.optimal_actions == [Action(op="return_to_hotel")]
    calls, u = run_policy(M, p, M.default_policy)  # the default's list is refused as a whole: nothing fits
    assert [a.op for a in calls] == ["read_guidebook", "visit_places", "return_to_hotel"] and u == 0.0


@pytest.mark.parametrize("knobs", M.difficulty_grid + [(4, 4), (4, 14), (13, 4)])
def test_replay_of_optimal_actions_gives_u_star(knobs):
    for i in range(3):
        p = _sample(100 + i, *knobs)
        solution = M.solve(p)
        assert M.run(p, solution.optimal_actions) == solution.u_star
        assert solution.optimal_actions[-1].op == "return_to_hotel"
        assert p.day_end - p.day_start == 60 * knobs[1]


def test_default_reads_the_guidebook_and_visits_by_rating_in_one_call():
    p = _sample(3)
    actions = M.default_actions(p)
    assert [a.op for a in actions] == ["read_guidebook", "visit_places", "return_to_hotel"]
    by_rating = sorted(range(1, p.places + 1), key=lambda j: (-p.guidebook_ratings[j - 1], j))
    assert actions[1].args["places"] == by_rating
    state = M.initial_state(p)
    M.apply(p, state, actions[1])
    for j in range(1, p.places + 1):  # the list leaves out only what cannot be visited at its turn
        with pytest.raises(ActionError):
            M.apply(p, copy.deepcopy(state), Action(op="visit", args={"place": j}))


def test_default_is_below_optimum_and_inside_the_band():
    low, high = M.u0_band
    inside = 0
    for i in range(60):
        o = M.outcome(_sample(i))
        assert o.u_idle == 0.0 and o.u0 <= o.solution.u_star
        g = o.u0 / o.solution.u_star
        inside += low <= g <= high and o.u0 < o.solution.u_star
    assert inside >= 54


def test_wait_and_undo():
    p = _day()
    state = _visit(p, [2])
    assert state["clock"] == 540 + 10 + 60 and state["at"] == 2
    M.apply(p, state, Action(op="wait", args={"minutes": 45}))
    assert state["clock"] == 655
    M.apply(p, state, Action(op="undo_last_step"))
    assert state["clock"] == 610
    M.apply(p, state, Action(op="undo_last_step"))
    assert state == M.initial_state(p)
    with pytest.raises(ActionError, match="nothing to undo"):
        M.apply(p, state, Action(op="undo_last_step"))
    before = copy.deepcopy(state)
    with pytest.raises(ActionError, match="hotel"):
        M.apply(p, state, Action(op="wait", args={"minutes": 481}))
    assert state == before
    M.apply(p, state, Action(op="wait", args={"minutes": 480}))  # at the hotel until exactly 17:00 is allowed


def test_probes_report_the_right_numbers_and_change_nothing():
    p = _sample(2)
    state = M.initial_state(p)
    assert M.apply(p, state, Action(op="probe_enjoyment", args={"place": 3}))["enjoyment"] == p.enjoyment[2]
    details = M.apply(p, state, Action(op="probe_place_details", args={"place": 2}))
    assert details["ticket price"] == p.prices[1] and details["visit minutes"] == p.durations[1]
    assert [details["opens minute"], details["closes minute"]] == p.opening[1]
    row = M.apply(p, state, Action(op="probe_travel_from", args={"origin": 0}))["travel minutes"]
    assert row == {str(j): p.travel[0][j] for j in range(1, p.places + 1)}
    sheet = M.apply(p, state, Action(op="read_guidebook"))["guidebook ratings"]
    assert sheet == {f"place {j}": p.guidebook_ratings[j - 1] for j in range(1, p.places + 1)}
    assert M.apply(p, state, Action(op="list_places"))["places"] == list(range(1, p.places + 1))
    assert M.apply(p, state, Action(op="view_itinerary"))["clock"] == clock_text(p.day_start)
    assert state == M.initial_state(p)


def test_invalid_actions_raise_and_leave_the_state_unchanged():
    p = _day(opening=[[540, 1020], [540, 600], [540, 1020]])
    bad = [Action(op="no_such_op"), Action(op="visit"), Action(op="visit", args={"place": 0}),
           Action(op="visit", args={"place": 4}), Action(op="visit", args={"place": "1"}),
           Action(op="visit", args={"place": 1.5}), Action(op="visit", args={"place": True}),
           Action(op="visit", args={"place": float("nan")}), Action(op="wait", args={"minutes": 0}),
           Action(op="wait", args={"minutes": DAY_MINUTES + 1}), Action(op="probe_travel_from", args={"origin": -1}),
           Action(op="visit", args={"place": 1})]
    for state in (M.initial_state(p), _visit(p, [1])):
        for action in bad:
            if action.args == {"place": 1} and not state["visited"]:
                continue  # a first visit to place 1 is valid
            before = copy.deepcopy(state)
            with pytest.raises(ActionError):
                M.apply(p, state, action)
            assert state == before
    state = _visit(p, [1])
    with pytest.raises(ActionError, match="closing"):
        M.apply(p, state, Action(op="visit", args={"place": 2}))


@pytest.mark.parametrize("changes, message", [
    ({"prices": [1, 2]}, "prices"),
    ({"durations": [60, 60, 0]}, "durations"),
    ({"opening": [[540, 1020], [540, 1020]]}, "opening"),
    ({"opening": [[540, 1020], [700, 600], [540, 1020]]}, "opening of place 2"),
    ({"opening": [[540, 1020], [540, 1500], [540, 1020]]}, "opening of place 2"),
    ({"opening": [[540, 1020], [540], [540, 1020]]}, "opening of place 2"),
    ({"travel": [[0, 1, 1], [1, 0, 1], [1, 1, 0]]}, "travel must have 4 rows"),
    ({"travel": [[0, 1, 1, 1], [1, 0, 1], [1, 1, 0, 1], [1, 1, 1, 0]]}, "travel row 1"),
    ({"travel": [[0, 1, 1, 1], [1, 0, -1, 1], [1, 1, 0, 1], [1, 1, 1, 0]]}, "non-negative"),
    ({"travel": [[0, 1, 1, 1], [1, 5, 1, 1], [1, 1, 0, 1], [1, 1, 1, 0]]}, "diagonal"),
    ({"enjoyment": [1, -2, 3]}, "enjoyment must be non-negative"),
    ({"enjoyment": [1, float("nan"), 3]}, "finite"),
    ({"prices": [1, -2, 3]}, "prices must be non-negative"),
    ({"budget": -1}, "budget"),
    ({"day_start": 900, "day_end": 800}, "day_start"),
    ({"day_end": 2000}, "day_end"),
    ({"guidebook_ratings": [1]}, "guidebook_ratings"),
    ({"colour": "red"}, "colour"),
    ({"enjoyment": [], "prices": [], "durations": [], "opening": [], "travel": [[0]]}, "enjoyment"),
])
def test_params_from_data_rejects_bad_data(changes, message):
    with pytest.raises(ValueError, match=message):
        _day(**changes)


def test_the_guidebook_defaults_to_the_enjoyment():
    p = _day()
    assert p.guidebook_ratings == p.enjoyment
    assert M.default_actions(p)[1].args["places"][0] == 3


def test_describe_states_the_whole_instance():
    p = _sample(6)
    text = M.describe(p, VOCAB)
    assert clock_text(p.day_start) in text and clock_text(p.day_end) in text and f"{p.budget:g}" in text
    for j in range(p.places):
        assert f"{j + 1}: {p.enjoyment[j]:g}" in text and f"{j + 1}: ticket {p.prices[j]:g}, visit" in text
        assert f"open {clock_text(p.opening[j][0])} (minute {p.opening[j][0]}) to {clock_text(p.opening[j][1])}" in text
    for i, row in enumerate(p.travel):
        assert f"from {i}: [{', '.join(str(x) for x in row)}]" in text
    assert set(M.secret_numbers(p)) >= {*p.enjoyment}
    # the day's terms are the traveller's own: stated as rules in every mode
    assert {p.budget, p.day_start, p.day_end} <= set(M.public_numbers(p))
    facts = {f.key: f for f in M.facts(p, VOCAB)}
    assert {"objective", "end", "budget_end"} <= facts.keys() and facts["structure"].is_rule
    assert facts["points"].probe == "probe_enjoyment" and facts["travel"].probe == "probe_travel_from"
    assert set(M.public_numbers(p)) >= set(range(p.places + 1))


# --- bulk visits, the informed agent, belief, heuristics, admission ----------------------------


def test_visit_places_visits_in_order_and_skips_what_cannot_be_visited():
    p = _day(opening=[[540, 1020], [540, 600], [540, 1020]])
    state = M.initial_state(p)
    reply = M.apply(p, state, Action(op="visit_places", args={"places": [1, 2, 3]}))
    assert state["visited"] == [1, 3] and reply["skipped"] == [2] and reply["position"] == 3
    assert reply["why skipped"] == {"place 2": "the visit would end after its closing time"}
    assert "clock" not in reply and "spent" not in reply  # a decision shows no time or money
    M.apply(p, state, Action(op="undo_last_step"))
    assert state["visited"] == [1]
    before = copy.deepcopy(state)
    for bad in ([1], [2], [1, 1], [], [4], "3"):
        with pytest.raises(ActionError):
            M.apply(p, state, Action(op="visit_places", args={"places": bad}))
        assert state == before
    M.apply(p, state, Action(op="return_to_hotel"))
    with pytest.raises(ActionError, match="over"):
        M.apply(p, state, Action(op="visit_places", args={"places": [3]}))


@pytest.mark.parametrize("knobs", [(4, 4), (6, 7), (10, 10), (13, 12)])
def test_the_informed_agent_reaches_u_star_when_every_probe_fits(knobs):
    for i in range(3):
        p = _sample(700 + i, *knobs)
        outcome = M.outcome(p)
        budget = turn_budget(M, p, outcome, 1.0)
        seat = Seat(M, p, budget)
        players.informed(M)(seat)
        assert seat.turns <= budget and seat.errors == 0
        assert seat._utility() == pytest.approx(outcome.solution.u_star, abs=1e-9)


def _known(p: TravelParams, actions: list[Action]) -> players.Knowledge:
    seat = Seat(M, p)
    seat.play(actions)
    return seat.known


def test_belief_with_every_probe_is_the_truth_and_without_probes_uses_no_hidden_value():
    p = _sample(8, 8, 8)
    order = M.probe_order(_known(p, [Action(op="read_guidebook")]))
    everything = M.believed(_known(p, [Action(op="read_guidebook"), *order]))
    assert everything == p and M.solve(everything).u_star == M.solve(p).u_star
    changed = M.params_from_data({**p.model_dump(), "enjoyment": [x + 1 for x in p.enjoyment],
                                  "prices": [x + 1 for x in p.prices], "durations": [x + 5 for x in p.durations],
                                  "travel": [[x + (i != j) for j, x in enumerate(row)]
                                             for i, row in enumerate(p.travel)]})
    sheet = [Action(op="read_guidebook")]
    assert M.believed(_known(p, sheet)) == M.believed(_known(changed, sheet))
    assert M.believed(_known(p, sheet)).enjoyment == p.guidebook_ratings
    assert M.believed(M.knowledge(p)).enjoyment == [1.0] * p.places  # the guidebook unread: no rating is known
    # a verified reverse trip stands in for an unverified trip
    row = M.believed(_known(p, [Action(op="probe_travel_from", args={"origin": 2})]))
    assert [row.travel[j][2] for j in range(p.places + 1)] == p.travel[2]


def test_the_informed_order_verifies_points_and_details_of_the_best_rated_places_first():
    p = _sample(9, 8, 8)
    order = M.probe_order(_known(p, [Action(op="read_guidebook")]))
    best = max(range(1, p.places + 1), key=lambda j: (p.guidebook_ratings[j - 1], -j))
    assert order[:3] == [Action(op="probe_travel_from", args={"origin": 0}),
                         Action(op="probe_enjoyment", args={"place": best}),
                         Action(op="probe_place_details", args={"place": best})]
    assert sorted(map(str, order)) == sorted(map(str, M.listing_order(M.knowledge(p))))  # every probe, once


def test_heuristics_play_within_the_idle_and_optimal_utilities():
    for i in range(6):
        p = _sample(800 + i, [4, 8, 12][i % 3], 8)
        outcome = M.outcome(p)
        budget = turn_budget(M, p, outcome, 1.0)
        heuristics = M.heuristic_policies()
        assert set(heuristics) == {"assessed_first", "rated_per_hour"}
        for name, policy in heuristics.items():
            seat = Seat(M, p, budget)
            policy(seat)
            assert seat.errors <= 1 and seat.turns <= budget, name  # a list of places that all fail is refused
            assert outcome.u_idle <= seat._utility() <= outcome.solution.u_star + 1e-9, name


def test_every_ending_states_the_points_of_each_visit_their_total_and_the_money():
    spec = sample_spec("travel_planning", 2)
    p = M.params_from_data(spec.params)
    names = spec.rendering.observation_names
    env = Environment(spec, "hidden")
    for action in spec.reference.optimal_actions:
        if M.operation(p, action.op).kind == "decision":
            reply = env.step(*tool_call(env, action))
            assert names["clock"] not in reply and names["spent"] not in reply  # a plan shows no time or money
    assert not env.done
    while not env.done:  # the turns run out on a look at the itinerary
        last = env.step(env.tool_for("view_itinerary").name, {})
    outcome = last[ENDING_KEY]
    assert outcome["episode over"] == "the turns ran out"
    assert outcome[names["total points"]] == spec.reference.u_star == env.utility()
    visited = M.solve(p).facts["visited"]
    assert outcome[names["visited places"]] == visited
    assert sum(outcome[names["points of each visit"]].values()) == spec.reference.u_star
    assert outcome[names["spent"]] == sum(p.prices[j - 1] for j in visited)


def test_the_trips_rule_is_stated_in_every_mode():
    facts = {f.key: f for f in M.facts(_sample(1), VOCAB)}
    assert facts["trips"].is_rule and "one-way" in facts["trips"].statement
