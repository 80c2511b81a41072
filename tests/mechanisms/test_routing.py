"""routing: Held-Karp against brute force and a plain recursive DP, the data form, refusals, policies, text (the
conformance suite covers determinism, random play and admission)."""

from __future__ import annotations

import copy
import itertools
import json
from functools import cache

import numpy as np
import pytest

import mechanisms
from envs.agents import tool_call
from envs.conformance import sample_spec
from envs.environment import ENDING_KEY, Environment
from mechanisms import players
from mechanisms.base import ActionError
from mechanisms.players import Seat
from mechanisms.routing import (
    HELD_KARP_STOPS,
    NN_CLOSURES,
    RoutingParams,
    _held_karp,
    _milp_route,
    _nearest_neighbour,
    _tour_cost,
    posted_tour,
)
from schemas.envspec import Action
from setter.corpus import BUNDLE_KEYS, VOCAB_KEYS
from setter.phrasebook import vocabulary
from setter.spec import turn_budget

M = mechanisms.get("routing")
VOCAB = vocabulary({k: k for k in (*VOCAB_KEYS, *BUNDLE_KEYS)})


def _sample(i: int, size: int | None = None, horizon: int | None = None) -> RoutingParams:
    return M.sample(np.random.default_rng([17, i]), size or M.default_size, horizon or M.default_horizon)


def _brute_force(p: RoutingParams) -> float:
    d, n = p.distances, p.stops
    best = n * p.unvisited_penalty
    for k in range(1, n + 1):
        for order in itertools.permutations(range(1, n + 1), k):
            path = (0, *order, 0)
            driven = sum(d[a][b] for a, b in zip(path[:-1], path[1:], strict=True))
            best = min(best, driven + p.unvisited_penalty * (n - k))
    return -float(best)


def _recursive_dp(p: RoutingParams) -> float:
    """A plain memoised DP over (visited set, position): the cheapest way to finish from there."""
    d, n, pen = p.distances, p.stops, p.unvisited_penalty

    @cache
    def rest(visited: frozenset, here: int) -> float:
        best = d[here][0] + pen * (n - len(visited))
        for s in range(1, n + 1):
            if s not in visited:
                best = min(best, d[here][s] + rest(visited | {s}, s))
        return best

    return -float(rest(frozenset(), 0))


def _drive(p: RoutingParams, stops: list[int]) -> dict:
    state = M.initial_state(p)
    for s in stops:
        M.apply(p, state, Action(op="drive_to", args={"stop": s}))
    return state


def test_contract_shape():
    p = _sample(0)
    ops = M.operations(p)
    assert len(ops) >= 10 and {op.kind for op in ops} == {"probe", "info", "decision", "clock"}
    assert len({op.name for op in ops}) == len(ops)
    assert "finish" in {op.name for op in ops} and any(op.decoy for op in ops)
    assert all(op.kind == "info" for op in ops if op.decoy)
    for op in ops:
        for arg in op.args.values():
            assert arg.type in ("integer", "array") and arg.minimum in (0, 1) and arg.maximum == p.stops
    assert [op.name for op in ops if any(a.type == "array" for a in op.args.values())] == ["drive_route"]
    assert M.group == "trained" and M.version == 3
    assert all(M.size_range[0] <= s <= M.size_range[1] and M.horizon_range[0] <= h <= M.horizon_range[1]
               for s, h in M.grid())
    assert 3 <= len(M.grid()) <= 6
    assert M.probe_allowance(p) == p.stops * (p.stops + 1) + 1 == len(M.listing_order(M.knowledge(p)))
    decoys = [op for op in ops if op.decoy]
    assert [op.name for op in decoys] == ["read_posted_map"] and not decoys[0].args  # one sheet, every leg
    json.dumps(M.initial_state(p))
    json.dumps(M.solve(p).facts)


@pytest.mark.parametrize("i", range(30))
def test_held_karp_matches_brute_force(i):
    rng = np.random.default_rng([18, i])
    p = M.sample(rng, int(rng.integers(4, 8)), int(rng.integers(1, 9)))
    solution = M.solve(p)
    assert solution.u_star == pytest.approx(_brute_force(p), abs=1e-9)
    assert M.run(p, solution.optimal_actions) == solution.u_star


@pytest.mark.parametrize("size", [9, 10, 11])
def test_held_karp_matches_a_recursive_dp_on_larger_instances(size):
    for i in range(2):
        p = _sample(300 + i, size, 4)
        assert M.solve(p).u_star == pytest.approx(_recursive_dp(p), abs=1e-9)


def test_held_karp_on_random_asymmetric_and_non_metric_data():
    rng = np.random.default_rng(5)
    for _ in range(15):
        n = int(rng.integers(1, 8))
        d = rng.integers(0, 60, (n + 1, n + 1)).astype(float)
        np.fill_diagonal(d, 0)
        p = M.params_from_data({"distances": d.tolist(), "unvisited_penalty": float(rng.integers(0, 80))})
        assert M.solve(p).u_star == pytest.approx(_brute_force(p), abs=1e-9)


def test_direction_matters_on_an_asymmetric_matrix():
    d = [[0, 1, 10], [10, 0, 1], [1, 10, 0]]  # 0 -> 1 -> 2 -> 0 costs 3, the other way round 30
    p = M.params_from_data({"distances": d, "unvisited_penalty": 100})
    solution = M.solve(p)
    assert solution.u_star == -3.0 and solution.facts["route"] == [1, 2]


def test_a_far_stop_is_skipped_when_its_charge_is_cheaper():
    d = [[0, 5, 100], [5, 0, 100], [100, 100, 0]]
    p = M.params_from_data({"distances": d, "unvisited_penalty": 30})
    solution = M.solve(p)
    assert solution.facts["route"] == [1] and solution.facts["skipped"] == [2]
    assert solution.u_star == -(10 + 30)


def test_a_zero_penalty_makes_staying_home_optimal():
    p = M.params_from_data({"distances": [[0, 4, 4], [4, 0, 4], [4, 4, 0]], "unvisited_penalty": 0})
    solution = M.solve(p)
    assert solution.u_star == 0.0 and solution.optimal_actions == [Action(op="return_to_depot")]
    assert M.run(p, M.idle_actions(p)) == 0.0


@pytest.mark.parametrize("knobs", M.difficulty_grid + [(4, 1), (4, 8), (15, 1)])
def test_replay_of_optimal_actions_gives_u_star(knobs):
    for i in range(3):
        p = _sample(100 + i, *knobs)
        solution = M.solve(p)
        assert M.run(p, solution.optimal_actions) == solution.u_star
        assert solution.optimal_actions[-1].op == "return_to_depot"


def test_the_sampler_understates_exactly_horizon_legs_of_the_posted_tour():
    for size, horizon in [(4, 1), (4, 8), (8, 3), (10, 5), (10, 6), (16, 12)]:
        for i in range(5):
            p = _sample(400 + i, size, horizon)
            true, posted = np.asarray(p.distances), np.asarray(p.posted_distances)
            tour = posted_tour(posted)
            legs = list(zip([0, *tour], [*tour, 0], strict=True))
            if horizon >= NN_CLOSURES:  # the map's nearest-neighbour route may run into closures too
                order = _nearest_neighbour(posted)
                seen = {frozenset(leg) for leg in legs}
                legs += [leg for leg in zip([0, *order], [*order, 0], strict=True) if frozenset(leg) not in seen]
            bad = sum(true[a, b] >= 2 * posted[a, b] for a, b in legs)
            assert bad == min(horizon, len(legs))
            off = [(a, b) for a in range(size + 1) for b in range(size + 1)
                   if a != b and (a, b) not in legs and (b, a) not in legs]
            assert all(true[a, b] < 2 * posted[a, b] for a, b in off)


def test_default_reads_the_map_and_drives_its_shortest_tour():
    p = _sample(3)
    actions = M.default_actions(p)
    assert [a.op for a in actions] == ["read_posted_map", "drive_route", "return_to_depot"]
    drives = actions[1].args["stops"]
    assert sorted(drives) == list(range(1, p.stops + 1))
    posted = np.asarray(p.posted_distances)
    assert _tour_cost(posted, 0, drives) == pytest.approx(-_brute_force(
        M.params_from_data({"distances": p.posted_distances, "unvisited_penalty": 1e9})), abs=1e-9)
    assert not any(M.operation(p, a.op).kind == "probe" for a in actions)


def test_default_is_below_optimum_and_inside_the_band():
    low, high = M.u0_band
    inside = 0
    for i in range(60):
        o = M.outcome(_sample(i))
        assert o.u_idle == -M.default_size * _sample(i).unvisited_penalty
        g = (o.u0 - o.u_idle) / (o.solution.u_star - o.u_idle)
        inside += low <= g <= high and o.u0 < o.solution.u_star
    assert inside >= 57


def test_utility_is_as_if_the_vehicle_went_home_now():
    p = M.params_from_data({"distances": [[0, 2, 9], [3, 0, 4], [7, 5, 0]], "unvisited_penalty": 20})
    assert M.utility(p, M.initial_state(p)) == -40
    assert M.utility(p, _drive(p, [1])) == -(2 + 3 + 20)
    assert M.utility(p, _drive(p, [1, 2])) == -(2 + 4 + 7)
    state = _drive(p, [2])
    assert M.ledger(p, state) == {"route": [0, 2, 0], "distance driven": 9, "return leg": 7, "distance total": 16,
                                  "unvisited stops": 1, "charges": 20, "total cost": 9 + 7 + 20}
    reply = M.apply(p, state, Action(op="finish"))
    assert reply == {"route": [0, 2, 0], "finished": True} and M.finished(state)  # the ledger comes with the ending
    assert M.utility(p, state) == -(9 + 7 + 20) == -M.ledger(p, state)["total cost"]


def test_undo_and_clear_edit_the_route():
    p = _sample(1)
    state = _drive(p, [3, 1, 2])
    M.apply(p, state, Action(op="undo_last_leg"))
    assert state["route"] == [3, 1]
    assert M.apply(p, state, Action(op="view_route"))["position"] == 1
    M.apply(p, state, Action(op="clear_route"))
    assert state["route"] == [] and M.utility(p, state) == -p.stops * p.unvisited_penalty


def test_probes_and_the_posted_map_report_the_right_numbers():
    p = _sample(2)
    state = M.initial_state(p)
    assert M.apply(p, state, Action(op="probe_leg", args={"origin": 2, "destination": 5}))["distance"] \
        == p.distances[2][5]
    posted = M.apply(p, state, Action(op="read_posted_map"))["posted distances"]
    assert posted == {str(i): {str(j): p.posted_distances[i][j] for j in range(p.stops + 1) if j != i}
                      for i in range(p.stops + 1)}
    assert M.apply(p, state, Action(op="probe_penalty"))["penalty"] == p.unvisited_penalty
    assert M.apply(p, state, Action(op="list_stops"))["stops"] == list(range(1, p.stops + 1))
    assert state == M.initial_state(p)


def test_invalid_actions_raise_and_leave_the_state_unchanged():
    p = _sample(4)
    n = p.stops
    bad = [Action(op="no_such_op"), Action(op="drive_to"), Action(op="drive_to", args={"stop": 0}),
           Action(op="drive_to", args={"stop": n + 1}), Action(op="drive_to", args={"stop": "1"}),
           Action(op="drive_to", args={"stop": 1.5}), Action(op="drive_to", args={"stop": True}),
           Action(op="drive_to", args={"stop": float("nan")}), Action(op="drive_to", args={"stop": 2}),
           Action(op="probe_leg", args={"origin": 0}), Action(op="probe_leg", args={"origin": -1, "destination": 1}),
           Action(op="probe_leg", args={"origin": 1, "destination": n + 1}),
           Action(op="probe_leg", args={"origin": 3, "destination": 3}),
           Action(op="probe_leg", args={"origin": float("inf"), "destination": 1})]
    for state in (M.initial_state(p), _drive(p, [2, 5])):
        for action in bad:
            if action.args == {"stop": 2} and not state["route"]:
                continue  # driving to an unvisited stop is valid
            before = copy.deepcopy(state)
            with pytest.raises(ActionError):
                M.apply(p, state, action)
            assert state == before
    with pytest.raises(ActionError, match="empty"):
        M.apply(p, M.initial_state(p), Action(op="undo_last_leg"))


@pytest.mark.parametrize("data, message", [
    ({"distances": [[0, 1], [1, 0], [1, 1]], "unvisited_penalty": 5}, "square"),
    ({"distances": [[0, 1], [1, 0, 2]], "unvisited_penalty": 5}, "distances row 1"),
    ({"distances": [[0, -1], [1, 0]], "unvisited_penalty": 5}, "non-negative"),
    ({"distances": [[0, 1], [1, 3]], "unvisited_penalty": 5}, "diagonal"),
    ({"distances": [[0, float("nan")], [1, 0]], "unvisited_penalty": 5}, "finite"),
    ({"distances": [[0, 1], [1, 0]], "posted_distances": [[0, 1, 1], [1, 0, 1], [1, 1, 0]],
      "unvisited_penalty": 5}, "posted_distances must have 2 rows"),
    ({"distances": [[0, 1], [1, 0]], "posted_distances": [[0, -2], [1, 0]], "unvisited_penalty": 5},
     "posted_distances"),
    ({"distances": [[0, 1], [1, 0]], "unvisited_penalty": -5}, "unvisited_penalty"),
    ({"distances": [[0, 1], [1, 0]], "unvisited_penalty": float("inf")}, "unvisited_penalty"),
    ({"distances": [[0, 1], [1, 0]]}, "unvisited_penalty"),
    ({"distances": [[0]], "unvisited_penalty": 5}, "distances"),
    ({"distances": np.ones((17, 17)).tolist(), "unvisited_penalty": 5}, "distances"),
    ({"distances": [[0, 1], [1, 0]], "unvisited_penalty": 5, "colour": "red"}, "colour"),
])
def test_params_from_data_rejects_bad_data(data, message):
    with pytest.raises(ValueError, match=message):
        M.params_from_data(data)


def test_posted_map_defaults_to_the_true_distances_and_then_the_default_is_optimal():
    d = [[0, 1, 5, 9], [1, 0, 2, 5], [5, 2, 0, 1], [9, 5, 1, 0]]
    p = M.params_from_data({"distances": d, "unvisited_penalty": 50})
    assert p.posted_distances == p.distances
    assert M.default_actions(p)[1].args["stops"] == [2, 3, 1] == M.solve(p).facts["route"]  # 5 + 1 + 5 + 1
    assert M.outcome(p).u0 == M.solve(p).u_star == -12


def test_describe_states_the_whole_instance():
    p = _sample(6)
    text = M.describe(p, VOCAB)
    assert f"{p.stops} customer sites" in text and f"{p.unvisited_penalty:g}" in text
    for i in range(p.stops + 1):
        assert f"from {i}: {' '.join(f'{x:g}' for x in p.distances[i])}" in text
        assert f"from {i}: {' '.join(f'{x:g}' for x in p.posted_distances[i])}" in text
    facts = {f.key: f for f in M.facts(p, VOCAB)}
    assert {"objective", "end", "budget_end"} <= facts.keys()
    assert facts["legs_surveyed"].probe == "probe_leg" and facts["penalty"].probe == "probe_penalty"
    assert facts["posted"].probe == "read_posted_map"
    assert all(f.numbers == () or f.key == "structure" for f in facts.values() if f.is_rule)
    # the structure an agent could be misled by is a rule, stated in every mode
    assert facts["legs"].is_rule and "one-way" in facts["legs"].statement
    assert "triangle inequality" in facts["legs"].statement
    assert "source" in text
    assert set(M.secret_numbers(p)) >= {p.unvisited_penalty, p.distances[0][1]}
    assert set(M.public_numbers(p)) >= set(range(p.stops + 1))


# --- the MILP beyond Held-Karp --------------------------------------------------------------


@pytest.mark.parametrize("i", range(12))
def test_the_milp_matches_held_karp_and_brute_force(i):
    rng = np.random.default_rng([19, i])
    n = int(rng.integers(4, 9)) if i < 6 else int(rng.integers(9, HELD_KARP_STOPS + 1))
    p = M.sample(rng, n, int(rng.integers(1, 9)))
    dist = np.asarray(p.distances, dtype=float)
    route = _milp_route(dist, p.unvisited_penalty)
    assert sorted(route) == sorted(set(route))
    expected = -M.solve(p).u_star  # Held-Karp at these sizes
    assert _tour_cost(dist, p.unvisited_penalty, route) == pytest.approx(expected, abs=1e-9)
    if n <= 7:
        assert -_brute_force(p) == pytest.approx(expected, abs=1e-9)


def test_the_milp_skips_stops_whose_charge_is_cheaper_on_non_metric_data():
    rng = np.random.default_rng(7)
    for _ in range(10):
        n = int(rng.integers(3, 7))
        d = rng.integers(1, 80, (n + 1, n + 1)).astype(float)
        np.fill_diagonal(d, 0)
        penalty = float(rng.integers(5, 60))
        p = M.params_from_data({"distances": d.tolist(), "unvisited_penalty": penalty})
        route = _milp_route(d, penalty)
        assert min(_tour_cost(d, penalty, route), n * penalty) == pytest.approx(-_brute_force(p), abs=1e-9)


@pytest.mark.parametrize("size", [16, 18])
def test_the_milp_solves_the_large_tiers_exactly_and_fast(size):
    import time

    for i in range(2):
        p = _sample(500 + i, size, 8)
        started = time.perf_counter()
        solution = M.solve(p)
        assert time.perf_counter() - started < 5
        assert "MILP" in solution.solver
        assert M.run(p, solution.optimal_actions) == solution.u_star
        assert sorted(solution.facts["route"]) == list(range(1, size + 1))
        # no single 2-opt move or relocation improves the tour: a cheap necessary check of optimality
        dist = np.asarray(p.distances, dtype=float)
        route = solution.facts["route"]
        best = _tour_cost(dist, p.unvisited_penalty, route)
        for a in range(len(route)):
            for b in range(a + 1, len(route)):
                flipped = route[:a] + route[a:b + 1][::-1] + route[b + 1:]
                assert _tour_cost(dist, p.unvisited_penalty, flipped) >= best - 1e-9
    # the Held-Karp table itself still agrees at its largest size
    p = _sample(600, HELD_KARP_STOPS, 4)
    cost, _ = _held_karp(np.asarray(p.distances, dtype=float))
    assert np.isfinite(cost[-1]).all()  # the full set of stops ends anywhere


# --- bulk driving, the informed agent, belief, heuristics, admission --------------------------


def test_drive_route_drives_a_whole_list_and_refuses_a_visited_stop_as_a_whole():
    p = M.params_from_data({"distances": [[0, 2, 9], [3, 0, 4], [7, 5, 0]], "unvisited_penalty": 20})
    state = M.initial_state(p)
    reply = M.apply(p, state, Action(op="drive_route", args={"stops": [1, 2]}))
    assert reply == {"route": [0, 1, 2], "position": 2, "stops left": []}  # no length before the round ends
    assert M.ledger(p, state)["distance driven"] == 6
    state = _drive(p, [2])
    before = copy.deepcopy(state)
    for bad in ([1, 2], [1, 1], [], [3], "1", [0]):
        with pytest.raises(ActionError):
            M.apply(p, state, Action(op="drive_route", args={"stops": bad}))
        assert state == before
    M.apply(p, state, Action(op="return_to_depot"))
    with pytest.raises(ActionError, match="over"):
        M.apply(p, state, Action(op="drive_route", args={"stops": [1]}))


@pytest.mark.parametrize("knobs", [(5, 1), (8, 3), (12, 6)])
def test_the_informed_agent_reaches_u_star_when_every_probe_fits(knobs):
    for i in range(3):
        p = _sample(700 + i, *knobs)
        outcome = M.outcome(p)
        budget = turn_budget(M, p, outcome, 1.0)
        seat = Seat(M, p, budget)
        players.informed(M)(seat)
        assert seat.turns <= budget and seat.errors == 0
        assert seat._utility() == pytest.approx(outcome.solution.u_star, abs=1e-9)


def _known(p: RoutingParams, actions: list[Action]) -> players.Knowledge:
    seat = Seat(M, p)
    seat.play(actions)
    return seat.known


def test_belief_with_every_probe_is_the_truth_and_without_probes_uses_no_hidden_value():
    p = _sample(8, 9, 4)
    sheet = [Action(op="read_posted_map")]
    everything = M.believed(_known(p, [*sheet, *M.probe_order(_known(p, sheet))]))
    assert everything.distances == p.distances and everything.unvisited_penalty == p.unvisited_penalty
    assert M.solve(everything).u_star == M.solve(p).u_star
    changed = M.params_from_data({**p.model_dump(), "distances": (np.asarray(p.distances) * 2).tolist(),
                                  "unvisited_penalty": p.unvisited_penalty + 100})
    assert M.believed(_known(p, sheet)) == M.believed(_known(changed, sheet))
    assert M.believed(_known(p, sheet)).distances == p.posted_distances  # nothing surveyed: the map as it is
    # a surveyed leg is believed exactly, and its reverse leg comes from it
    leg = M.believed(_known(p, [*sheet, Action(op="probe_leg", args={"origin": 3, "destination": 5})]))
    assert leg.distances[3][5] == leg.distances[5][3] == p.distances[3][5]


def test_a_plan_s_badly_understated_legs_do_not_inflate_the_belief_in_the_other_legs():
    p = M.params_from_data({"distances": [[0, 40, 10, 10], [40, 0, 10, 10], [11, 11, 0, 10], [11, 11, 10, 0]],
                            "posted_distances": [[0, 10, 10, 10], [10, 0, 10, 10], [10, 10, 0, 10],
                                                 [10, 10, 10, 0]], "unvisited_penalty": 100})
    known = _known(p, [Action(op="read_posted_map"), *(Action(op="probe_leg", args={"origin": i, "destination": j})
                                                       for i, j in [(0, 1), (1, 0), (2, 0)])])
    belief = M.believed(known)
    assert belief.distances[0][1] == 40 and belief.distances[2][0] == 11
    assert belief.distances[2][3] == pytest.approx(10 * 1.1)  # the typical ratio, not the closures' 4


def test_the_informed_order_surveys_the_map_s_tour_first_and_every_leg_once():
    p = _sample(9, 10, 6)
    known = _known(p, [Action(op="read_posted_map")])
    order = M.probe_order(known)
    tour = [0, *posted_tour(np.asarray(p.posted_distances)), 0]
    legs = list(zip(tour[:-1], tour[1:], strict=True))
    assert [(a.args["origin"], a.args["destination"]) for a in order[:len(legs)]] == legs
    assert sorted(map(str, order)) == sorted(map(str, M.listing_order(known)))


def test_heuristics_play_within_the_idle_and_optimal_utilities():
    for i in range(6):
        p = _sample(800 + i, [5, 8, 12][i % 3], 3)
        outcome = M.outcome(p)
        for share in (1.0, 0.1):
            budget = turn_budget(M, p, outcome, share)
            heuristics = M.heuristic_policies()
            assert set(heuristics) == {"map_nearest", "nearest_surveyed", "survey_all"}
            for name, policy in heuristics.items():
                seat = Seat(M, p, budget)
                policy(seat)
                assert seat.errors == 0 and seat.turns <= budget, name
                assert outcome.u_idle - 1e-9 <= seat._utility() <= outcome.solution.u_star + 1e-9, name


def test_decisions_show_no_length_and_every_ending_states_the_route_length_with_the_way_back():
    spec = sample_spec("routing", 2)
    p = M.params_from_data(spec.params)
    names = spec.rendering.observation_names
    env = Environment(spec, "hidden")
    drive = next(a for a in spec.reference.optimal_actions if a.op == "drive_route")
    reply = env.step(*tool_call(env, drive))
    assert set(reply) == {names["route"], names["position"], names["stops left"]}
    assert not env.done
    while not env.done:  # the turns run out on a look at the route
        last = env.step(env.tool_for("view_route").name, {})
    outcome = last[ENDING_KEY]
    assert outcome["episode over"] == "the turns ran out"
    route = [0, *drive.args["stops"], 0]
    assert outcome[names["route"]] == route
    assert outcome[names["return leg"]] == p.distances[route[-2]][0]
    legs = zip(route[:-1], route[1:], strict=True)
    assert outcome[names["distance total"]] == sum(p.distances[a][b] for a, b in legs)
    assert -outcome[names["total cost"]] == spec.reference.u_star == env.utility()
