"""Difficulty: the informed agent's ceiling, the heuristics, the tier calibration, and a tier asked for end to end."""

from __future__ import annotations

import json

import pytest

import mechanisms
from envs import Environment, play
from envs.admission import admit
from envs.difficulty import MIN_INFORMED_SCORE, MIN_SKILL_GAP, tier_of
from envs.scoring import score
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
        assert score(u, spec.reference.u0, spec.reference.u_star) == pytest.approx(1.0)
        assert spec.difficulty.informed_score == pytest.approx(1.0)
    assert checked >= 3, "the default cells should fit full information on most instances"


@pytest.mark.parametrize("family", DECLARING)
def test_the_informed_agent_beats_the_default_on_every_admitted_tight_budget_instance(family):
    admitted = 0
    for tier in ("hard", "frontier"):
        for index in range(6):
            spec = make_spec(family, index, tier=tier)
            verdict = admit(spec)
            if not verdict.admitted:
                continue
            admitted += 1
            result = play(Environment(spec, "hidden"), "informed")  # through the tools, within the budget
            assert result.turns <= spec.turn_budget
            assert result.u > spec.reference.u0 and spec.difficulty.informed_score >= MIN_INFORMED_SCORE
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


def test_generate_with_a_difficulty_lands_only_that_tier(prefect_server, tmp_path):
    warehouse = str(tmp_path / "wh")
    vhd("generate", "--count", "6", "--families", "knapsack", "--difficulty", "frontier", "--date", "2026-05-02",
        "--warehouse", warehouse, "--no-progress", check=True)
    out = vhd("query", "SELECT difficulty, informed_score, heuristic_score, naive_score, skill_gap, facts_fit, size, "
              "spec_json "
              "FROM environments", "--format", "json", "--warehouse", warehouse, check=True)
    rows = json.loads(out.stdout)
    assert len(rows) == 6
    cells = {size for size, _ in mechanisms.get("knapsack").tiers()["frontier"].grid}
    for row in rows:
        assert row["difficulty"] == "frontier" and row["size"] in cells
        assert row["facts_fit"] < 1 and row["heuristic_score"] <= 0.5 and row["informed_score"] >= 0.25
        assert row["skill_gap"] >= MIN_SKILL_GAP
        assert row["skill_gap"] == pytest.approx(row["informed_score"] - row["naive_score"], abs=1e-5)
        assert json.loads(row["spec_json"])["difficulty"]["requested"] == "frontier"
    bad = vhd("generate", "--count", "6", "--difficulty", "impossible", "--warehouse", warehouse)
    assert bad.returncode == 2 and "invalid choice: 'impossible'" in bad.stderr
