"""One checker for every registered family: determinism, exactness, anchors through the tools, fuzzing."""

from __future__ import annotations

import copy
import importlib

import numpy as np
import pytest

import mechanisms
from envs import Environment, play
from envs.admission import admit
from mechanisms.base import ActionError
from schemas.envspec import MODES
from tests.support import make_spec

FAMILIES = [m.id for m in mechanisms.families()]


@pytest.mark.parametrize("family", FAMILIES)
def test_same_seed_gives_the_same_instance(family):
    m = mechanisms.get(family)
    for i in range(5):
        a = m.sample(np.random.default_rng([11, i]), m.default_size, m.default_horizon)
        b = m.sample(np.random.default_rng([11, i]), m.default_size, m.default_horizon)
        assert a == b
    c = m.sample(np.random.default_rng([12, 0]), m.default_size, m.default_horizon)
    assert c != m.sample(np.random.default_rng([11, 0]), m.default_size, m.default_horizon)


def _independent_reference(family: str):
    try:
        return importlib.import_module(f"tests.mechanisms.references.{family}")
    except ModuleNotFoundError:
        pytest.fail(f"add an independent reference for {family} as tests/mechanisms/references/{family}.py")


@pytest.mark.parametrize("family", FAMILIES)
def test_solver_is_optimal_against_an_independent_method(family):
    m = mechanisms.get(family)
    independent = _independent_reference(family)
    size, horizon = independent.SMALL_KNOBS
    for i in range(12):
        params = m.sample(np.random.default_rng([21, i]), size, horizon)
        solution = m.solve(params)
        reference = independent.reference(m, params)
        assert solution.u_star == pytest.approx(reference, rel=1e-6, abs=1e-6)
        assert m.run(params, solution.optimal_actions) == pytest.approx(solution.u_star, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("family", FAMILIES)
def test_the_reference_is_never_below_what_a_policy_achieves(family):
    """u* (the optimum, or the hindsight ceiling) bounds the default, idle, recorded baselines and random play."""
    m = mechanisms.get(family)
    for i in range(10):
        params = m.sample(np.random.default_rng([51, i]), m.default_size, m.default_horizon)
        o = m.outcome(params)
        tolerance = 1e-9 * max(1.0, abs(o.solution.u_star))
        achieved = {"default": o.u0, "idle": o.u_idle, **o.baselines}
        for name, u in achieved.items():
            assert u <= o.solution.u_star + tolerance, f"{name} policy beats u* on instance {i}"
    spec = make_spec(family, 1)
    from envs.agents import play as play_agent

    for seed in range(20):
        env = Environment(spec, "hidden")
        result = play_agent(env, "random", seed=seed)
        assert result.u <= spec.reference.u_star + 1e-9 * max(1.0, abs(spec.reference.u_star))


@pytest.mark.parametrize("family", FAMILIES)
def test_oracle_scores_one_and_default_zero_in_every_mode(family):
    admitted = 0
    for i in range(8):
        spec = make_spec(family, i)
        if not admit(spec).admitted:
            continue
        admitted += 1
        for mode in MODES:
            env = Environment(spec, mode)
            assert play(env, "oracle").score == pytest.approx(1.0, abs=1e-9)
            assert play(env, "default").score == 0.0
            assert play(env, "idle").score <= 1.0
    assert admitted >= 5


@pytest.mark.parametrize("family", FAMILIES)
def test_default_position_is_inside_the_band_on_most_sampled_instances(family):
    m = mechanisms.get(family)
    low, high = m.u0_band
    inside = 0
    for i in range(60):
        o = m.outcome(m.sample(np.random.default_rng([31, i]), m.default_size, m.default_horizon))
        assert o.u0 <= o.solution.u_star + 1e-9 and o.u_idle <= o.solution.u_star + 1e-9
        gap = o.solution.u_star - o.u_idle
        inside += gap > 0 and low <= (o.u0 - o.u_idle) / gap <= high and o.u0 < o.solution.u_star
    assert inside >= 0.85 * 60


@pytest.mark.parametrize("family", FAMILIES)
def test_a_thousand_random_tool_calls_never_raise(family):
    spec = make_spec(family, 0)
    rng = np.random.default_rng(5)
    for mode in MODES:
        env = Environment(spec, mode)
        calls = 0
        while calls < 1000:
            env.reset()
            for name, args in _random_calls(env, rng):
                if env.done or calls >= 1000:
                    break
                before = copy.deepcopy(env.state)
                reply = env.call(name, args)
                calls += 1
                if '"error"' in reply[:10]:
                    assert env.state == before, f"{name}({args}) changed the state and failed"
            assert env.utility() <= spec.reference.u_star + 1e-6 * max(1, abs(spec.reference.u_star))


def _random_calls(env, rng):
    from envs.agents import random_agent

    return random_agent(env, int(rng.integers(1 << 30)))


@pytest.mark.parametrize("family", FAMILIES)
def test_invalid_operations_raise_action_error_without_touching_state(family):
    m = mechanisms.get(family)
    params = m.sample(np.random.default_rng([41, 0]), m.default_size, m.default_horizon)
    state = m.initial_state(params)
    before = copy.deepcopy(state)
    from schemas.envspec import Action

    for op in m.operations(params):
        for bad in ({name: "x" for name in op.args}, {name: 10**9 for name in op.args}):
            if not op.args:
                continue
            with pytest.raises(ActionError):
                m.apply(params, state, Action(op=op.name, args=bad))
            assert state == before
    with pytest.raises(ActionError):
        m.apply(params, state, Action(op="no_such_operation"))


def _calls_to_probe_everything(m, params) -> int:
    """One call per probe operation and argument value (a probe with an integer argument per index)."""
    total = 0
    for op in m.operations(params):
        if op.kind != "probe":
            continue
        calls = 1
        for arg in op.args.values():
            if arg.type == "integer" and arg.minimum is not None and arg.maximum is not None:
                calls *= int(arg.maximum) - int(arg.minimum) + 1
        total += calls
    return total


@pytest.mark.parametrize("family", FAMILIES)
def test_a_frontier_budget_cannot_fit_every_probe_beside_the_plan(family):
    """Full information fits at easy and medium (the informed agent reaches 1.0 there); an admitted frontier
    environment's budget forces a choice of which probes matter."""
    m = mechanisms.get(family)
    admitted = 0
    for i in range(8):
        spec = make_spec(family, i, tier="frontier")
        if not admit(spec).admitted:
            continue
        admitted += 1
        params = m.params_from_data(spec.params)
        spare = spec.turn_budget - len(spec.reference.optimal_actions)
        assert spare < _calls_to_probe_everything(m, params), f"instance {i}: the budget lets an agent probe it all"
        assert spec.difficulty.facts_fit < 1 and spec.difficulty.tier == "frontier"
    assert admitted >= 2, f"{family}: only {admitted} of 8 frontier instances admitted"


@pytest.mark.parametrize("family", FAMILIES)
def test_every_cell_of_the_difficulty_grid_admits_most_instances(family):
    """A plan spreads each family over its grid, so every cell must yield environments (text length, band)."""
    m = mechanisms.get(family)
    for size, horizon in m.grid():
        assert m.size_range[0] <= size <= m.size_range[1] and m.horizon_range[0] <= horizon <= m.horizon_range[1]
        verdicts = [admit(make_spec(family, i, size, horizon)) for i in range(6)]
        admitted = sum(v.admitted for v in verdicts)
        reasons = {v.reason for v in verdicts if not v.admitted}
        assert admitted >= 4, f"cell {size}x{horizon}: {admitted}/6 admitted; {sorted(reasons)[:2]}"


@pytest.mark.parametrize("family", FAMILIES)
def test_parameters_as_data_round_trip_and_bad_shapes_get_a_one_line_error(family):
    from mechanisms.base import ParamsError

    m = mechanisms.get(family)
    params = m.sample(np.random.default_rng([61, 0]), m.default_size, m.default_horizon)
    data = params.model_dump(mode="json")
    assert m.params_from_data(data) == params
    assert m.solve(m.params_from_data(data)).u_star == m.solve(params).u_star
    refused = 0
    for name, value in data.items():
        if isinstance(value, list) and len(value) > 1:
            try:
                m.params_from_data({**data, name: value[:-1]})
            except ParamsError as error:
                refused += 1
                assert "\n" not in str(error) and str(error).startswith(f"bad {family} parameters")
    assert refused >= 1, "dropping an entry of a list field should break a shape check"
    with pytest.raises(ParamsError, match="unexpected|Extra inputs"):
        m.params_from_data({**data, "no_such_field": 1})


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_declares_its_facts_belief_heuristics_and_tiers(family):
    from mechanisms.base import Mechanism
    from mechanisms.facts import REQUIRED_RULES
    from schemas.tiers import TIERS
    from setter.corpus import VOCAB_KEYS

    m = mechanisms.get(family)
    for hook in ("facts", "believed", "heuristic_actions"):
        assert getattr(type(m), hook) is not getattr(Mechanism, hook), f"{family} declares no {hook}"
    assert "describe" not in type(m).__dict__, f"{family} states its facts twice: drop describe()"
    assert list(m.tiers()) == list(TIERS)
    params = m.sample(np.random.default_rng([13, 0]), m.default_size, m.default_horizon)
    facts = m.facts(params, {k: k for k in VOCAB_KEYS})
    assert {f.key for f in facts} >= set(REQUIRED_RULES) and len({f.key for f in facts}) == len(facts)
    assert m.heuristic_actions(params), f"{family} declares no heuristic agent"
    assert m.believed(params, m.probe_order(params)) is not None
