"""Difficulty: the informed agent's ceiling, the heuristics, the tier calibration, and a tier asked for end to end."""

from __future__ import annotations

import json

import numpy as np
import pytest

import mechanisms
from envs import Environment, play
from envs.admission import admit
from envs.difficulty import (
    INFORMED,
    MIN_INFORMED_SCORE,
    MIN_SKILL_GAP,
    NAIVE_PROBER,
    REDRAWS,
    measure,
    reachable,
    reachable_u,
    redrawn_paths,
    tier_of,
)
from envs.scoring import score
from mechanisms import players
from mechanisms.base import ONLINE_BASELINE
from setter.spec import turn_budget
from tests.cli.test_cli import vhd
from tests.support import make_spec

DECLARING = [m.id for m in mechanisms.families()]


@pytest.mark.parametrize(("heuristic", "informed", "fit", "gap", "tier"), [
    (0.95, 1.0, 1.0, 0.0, "easy"),
    (0.85, 1.0, 1.0, 0.0, "medium"),
    (0.95, 0.9, 0.6, 0.3, "medium"),
    (0.45, 1.0, 1.0, 0.3, "hard"),
    (0.7, 0.6, 0.5, 0.3, "hard"),
    (0.45, 0.6, 0.5, 0.3, "frontier"),
    (0.45, 0.1, 0.5, 0.3, "hard"),  # the informed agent is not well above the default: not frontier
    (0.45, 0.6, 0.5, 0.05, "medium"),  # verifying in listing order does as well: choosing does not matter
    (0.45, 1.0, 1.0, 0.0, "medium"),
])
def test_tiers_are_calibrated_from_the_measures(heuristic, informed, fit, gap, tier):
    assert tier_of(heuristic, informed, fit, gap) == tier


def test_a_smaller_probe_share_gives_a_smaller_budget():
    m = mechanisms.get("knapsack")
    spec = make_spec("knapsack", 0)
    params = m.params_from_data(spec.params)
    outcome = m.outcome(params)
    full, half = turn_budget(m, params, outcome, 1.0), turn_budget(m, params, outcome, 0.5)
    assert full == spec.turn_budget and half == full - m.probe_allowance(params) // 2


def _tier_instance(family: str, index: int, tier: str = "frontier"):
    m = mechanisms.get(family)
    cell = m.tiers()[tier]
    params = m.sample(np.random.default_rng([99, index]), *cell.grid[index % len(cell.grid)])
    outcome = m.outcome(params)
    return m, params, outcome, turn_budget(m, params, outcome, cell.probe_share)


@pytest.mark.parametrize("family", ["sequential_stopping", "weitzman_search"])
def test_expected_measures_of_a_family_with_draws_are_deterministic_and_not_one_paths(family):
    """A family with random draws is scored over its drawn path and REDRAWS redraws seeded from the instance: the same
    instance (even rebuilt from its data) measures the same; the scores are the means' scores, not the drawn path's;
    the recorded calls and utilities stay the drawn path's (admission replays them)."""
    differs = 0
    for index in range(4):
        m, params, outcome, budget = _tier_instance(family, index)
        measured = measure(m, params, outcome, budget)
        again = measure(m, m.params_from_data(params.model_dump()), outcome, budget)
        assert again.difficulty == measured.difficulty
        one_path = measure(m, params, outcome, budget, redraws=0)
        assert measured.utilities == one_path.utilities  # the drawn path's, as recorded
        assert (measured.informed_actions, measured.naive_actions) == (one_path.informed_actions,
                                                                         one_path.naive_actions)
        mine, theirs = measured.difficulty, one_path.difficulty
        differs += (mine.informed_score, mine.naive_score, mine.heuristic_score) != (
            theirs.informed_score, theirs.naive_score, theirs.heuristic_score)
        # the scores, recomputed by hand from the redrawn paths
        paths = redrawn_paths(m, params)
        assert len(paths) == REDRAWS and paths == redrawn_paths(m, params) and params not in paths
        assert all(path.model_dump(exclude={"offers", "prizes"}) == params.model_dump(exclude={"offers", "prizes"})
                   for path in paths)
        u0 = np.mean([outcome.u0, *(players.run_policy(m, q, m.default_policy)[1] for q in paths)])
        top = np.mean([reachable(outcome), *(m.run(q, m.baseline_actions(q)[ONLINE_BASELINE]) for q in paths)])
        for name, policy, recorded in ((INFORMED, players.informed(m), mine.informed_score),
                                       (NAIVE_PROBER, players.naive_prober(m), mine.naive_score)):
            u = np.mean([measured.utilities[name], *(players.run_policy(m, q, policy, budget)[1] for q in paths)])
            assert recorded == pytest.approx(score(u, u0, top), abs=1e-6)
    assert differs >= 2, "the expected scores should not be the drawn path's"


def test_expected_measures_leave_a_family_without_draws_as_before():
    m, params, outcome, budget = _tier_instance("knapsack", 0)
    assert m.redraw(params, np.random.default_rng(0)) is None and redrawn_paths(m, params) == []
    measured = measure(m, params, outcome, budget)
    assert measured.difficulty == measure(m, params, outcome, budget, redraws=0).difficulty
    u_star = outcome.solution.u_star
    assert measured.difficulty.informed_score == pytest.approx(score(measured.utilities[INFORMED], outcome.u0, u_star),
                                                               abs=1e-6)
    assert measured.difficulty.naive_score == pytest.approx(
        score(measured.utilities[NAIVE_PROBER], outcome.u0, u_star), abs=1e-6)


@pytest.mark.parametrize("family", DECLARING)
def test_the_informed_agent_reaches_one_whenever_full_information_fits(family):
    m = mechanisms.get(family)
    checked = 0
    for index in range(6):
        spec = make_spec(family, index)
        if spec.difficulty.facts_fit < 1.0:
            continue
        checked += 1
        params = m.params_from_data(spec.params)
        u, _, _ = m.play(params, spec.reference.informed_actions, spec.turn_budget)
        assert score(u, spec.reference.u0, reachable_u(spec.reference)) == pytest.approx(1.0)
        assert spec.difficulty.informed_score == pytest.approx(1.0)
    assert checked >= 3, "the default cells should fit full information on most instances"


# families of which few draws land at hard or frontier (see their difficulty_tiers): more draws to find two
TIGHT_DRAWS = {"weitzman_search": 16}


@pytest.mark.parametrize("family", DECLARING)
def test_the_informed_agent_beats_the_default_on_every_admitted_tight_budget_instance(family):
    m = mechanisms.get(family)
    admitted = 0
    for tier in ("hard", "frontier"):
        for index in range(TIGHT_DRAWS.get(family, 6)):
            spec = make_spec(family, index, tier=tier)
            verdict = admit(spec)
            if not verdict.admitted:
                continue
            admitted += 1
            result = play(Environment(spec, "hidden"), "informed")  # through the tools, within the budget
            assert result.turns <= spec.turn_budget
            assert result.u == pytest.approx(spec.reference.baselines[INFORMED])
            assert spec.difficulty.informed_score >= MIN_INFORMED_SCORE
            if not redrawn_paths(m, m.params_from_data(spec.params)):  # else it beats the default in expectation
                assert result.u > spec.reference.u0
            assert spec.difficulty.skill_gap >= MIN_SKILL_GAP  # choosing what to verify matters at hard and frontier
            naive = play(Environment(spec, "hidden"), "naive")
            assert naive.u == pytest.approx(spec.reference.baselines["naive_prober"])
    assert admitted >= 2, f"{family}: too few admitted at hard/frontier to check"


@pytest.mark.parametrize("family", DECLARING)
def test_heuristics_are_recorded_and_never_beat_the_reference(family):
    spec = make_spec(family, 3)
    ref = spec.reference
    names = set(mechanisms.get(family).heuristic_policies())
    assert names and names <= set(ref.baselines)
    for name in names:
        assert ref.baselines[name] <= ref.u_star + 1e-6 * max(1.0, abs(ref.u_star))


def test_a_budget_the_informed_agent_cannot_use_is_refused_at_admission():
    spec = make_spec("knapsack", 0)
    broken = spec.model_copy(deep=True)
    broken.difficulty.informed_score = 0.0  # as if the budget left the informed agent no better than the default
    verdict = admit(broken)
    assert not verdict.admitted and verdict.check == "ceiling" and "not skill" in verdict.reason
    broken = spec.model_copy(deep=True)
    broken.reference.baselines["informed"] = spec.reference.u_star + 1  # a recorded ceiling the tools do not reach
    verdict = admit(broken)
    assert not verdict.admitted and verdict.check == "ceiling" and "through the tools" in verdict.reason


def test_generate_with_a_tier_lands_only_that_tier(prefect_server, tmp_path):
    warehouse = str(tmp_path / "wh")
    vhd("generate", "--count", "6", "--families", "knapsack", "--tier", "frontier", "--date", "2026-05-02",
        "--warehouse", warehouse, "--no-progress", check=True)
    out = vhd("query", "SELECT tier, informed_score, heuristic_score, naive_score, skill_gap, facts_fit, size, "
              "spec_json "
              "FROM environments", "--format", "json", "--warehouse", warehouse, check=True)
    rows = json.loads(out.stdout)
    assert len(rows) == 6
    cells = {size for size, _ in mechanisms.get("knapsack").tiers()["frontier"].grid}
    for row in rows:
        assert row["tier"] == "frontier" and row["size"] in cells
        assert row["facts_fit"] < 1 and row["heuristic_score"] <= 0.5 and row["informed_score"] >= 0.25
        assert row["skill_gap"] >= MIN_SKILL_GAP
        assert row["skill_gap"] == pytest.approx(row["informed_score"] - row["naive_score"], abs=1e-5)
        assert json.loads(row["spec_json"])["difficulty"]["requested"] == "frontier"
    bad = vhd("generate", "--count", "6", "--tier", "impossible", "--warehouse", warehouse)
    assert bad.returncode == 2 and "invalid choice: 'impossible'" in bad.stderr
