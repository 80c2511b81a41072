"""Helpers shared by tests: real specs built through the real stages."""

from __future__ import annotations

import numpy as np

import mechanisms
from envs.difficulty import measure
from schemas.envspec import EnvSpec
from setter.spec import build_spec, turn_budget
from setter.template import TemplateSetter


def make_spec(family: str, index: int, size: int | None = None, horizon: int | None = None,
              attempt: int = 1, tier: str | None = None) -> EnvSpec:
    """One environment as the render stage builds it (with its difficulty measures); with `tier`, drawn from that
    tier's first cell (unless size and horizon are given) with that tier's turn budget."""
    m = mechanisms.get(family)
    share = 1.0
    if tier is not None:
        cell = m.tiers()[tier]
        share = cell.probe_share
        size, horizon = size or cell.grid[0][0], horizon or cell.grid[0][1]
    size = size or m.default_size
    horizon = horizon or m.default_horizon
    seed = [99, index]
    params = m.sample(np.random.default_rng(seed), size, horizon)
    outcome = m.outcome(params)
    budget = turn_budget(m, params, outcome, share)
    rendering, _ = TemplateSetter().render(m, params, outcome, f"test/{family}/{index}", attempt, budget)
    difficulty, informed, measured = measure(m, params, outcome, budget, share, tier)
    return build_spec(m, params, outcome, rendering, split="train", size=size, horizon=horizon, seed=seed,
                      setter="template", model=None, budget=budget, difficulty=difficulty, informed=informed,
                      measured=measured)
