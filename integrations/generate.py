"""Environments on demand from seeds: the same seed always gives the same environment (spec and env id).

`spec_from_seed(seed, families, tier)` draws one environment through the same stages as `vhd generate` (sample,
solve, the template setter's rendering, the difficulty measures, admission), without Prefect or the warehouse: the
family is `families[seed % len(families)]`, the tier the requested one (else the family's tiers in turn), the
instance's random stream `[ENDLESS_SEED, seed, attempt]`, taking the first attempt admission admits.
"""

from __future__ import annotations

import numpy as np

import mechanisms
from envs.admission import admit
from envs.difficulty import measure
from schemas.envspec import EnvSpec
from schemas.errors import UserError
from schemas.tiers import TIERS
from setter.spec import build_spec, turn_budget
from setter.template import TemplateSetter

ENDLESS_SEED = 16  # keeps the on-demand stream apart from the catalog's shard seeds
ENDLESS_SPLIT = "endless"
MAX_ATTEMPTS = 20


def resolve(families: list[str] | str | None) -> list[str]:
    """The family ids of a selection (ids, group names, 'diagnostic'; None: every family)."""
    if isinstance(families, list):
        families = ",".join(families)
    return mechanisms.resolve_families(families)


def spec_from_seed(seed: int, families: list[str] | str | None = None, tier: str | None = None) -> EnvSpec:
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise UserError(f"seed must be a non-negative integer, got {seed!r}")
    if tier is not None and tier not in TIERS:
        raise UserError(f"unknown tier {tier!r}; choose one of {', '.join(TIERS)}")
    names = resolve(families)
    family = names[seed % len(names)]
    mechanism = mechanisms.get(family)
    tiers = mechanism.tiers()
    tier_name = tier or sorted(tiers, key=TIERS.index)[(seed // len(names)) % len(tiers)]
    cell = tiers[tier_name]
    setter = TemplateSetter()
    reasons = []
    for attempt in range(MAX_ATTEMPTS):
        rng_seed = [ENDLESS_SEED, seed, attempt]
        size, horizon = cell.grid[(seed // len(names) + attempt) % len(cell.grid)]
        params = mechanism.sample(np.random.default_rng(rng_seed), size, horizon)
        outcome = mechanism.outcome(params)
        budget = turn_budget(mechanism, params, outcome, cell.probe_share)
        rendering, _ = setter.render(mechanism, params, outcome, f"endless/{family}/{seed}/{attempt}", 1, budget)
        measured = measure(mechanism, params, outcome, budget, cell.probe_share, tier)
        spec = build_spec(mechanism, params, outcome, rendering, split=ENDLESS_SPLIT, size=size, horizon=horizon,
                          seed=rng_seed, setter="template", model=None, budget=budget, measured=measured)
        verdict = admit(spec)
        if verdict.admitted:
            return spec
        reasons.append(verdict.reason)
    raise RuntimeError(f"seed {seed}: no admitted {family} environment in {MAX_ATTEMPTS} attempts "
                       f"(last: {reasons[-1]})")
