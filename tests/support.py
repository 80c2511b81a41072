"""Helpers shared by tests: real specs built through the real stages."""

from __future__ import annotations

import numpy as np

import mechanisms
from schemas.envspec import EnvSpec
from setter.spec import build_spec, turn_budget
from setter.template import TemplateSetter


def make_spec(family: str, index: int, size: int | None = None, horizon: int | None = None,
              attempt: int = 1) -> EnvSpec:
    m = mechanisms.get(family)
    size = size or m.default_size
    horizon = horizon or m.default_horizon
    seed = [99, index]
    params = m.sample(np.random.default_rng(seed), size, horizon)
    outcome = m.outcome(params)
    budget = turn_budget(m, params, outcome)
    rendering, _ = TemplateSetter().render(m, params, outcome, f"test/{family}/{index}", attempt, budget)
    return build_spec(m, params, outcome, rendering, split="train", size=size, horizon=horizon, seed=seed,
                      setter="template", model=None, budget=budget)
