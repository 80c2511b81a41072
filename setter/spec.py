"""Assemble the EnvSpec of one solved, rendered instance."""

from __future__ import annotations

import math

from mechanisms.base import Mechanism, Outcome
from schemas.envspec import EnvSpec, Measured, Reference, Rendering


def turn_budget(mechanism: Mechanism, params, outcome: Outcome, probe_share: float = 1.0) -> int:
    """The longer of the two reference plans, plus the tier's share of the family's probe allowance, plus slack."""
    plan = max(len(outcome.solution.optimal_actions), len(outcome.default_actions))
    return plan + math.ceil(probe_share * mechanism.probe_allowance(params) - 1e-9) + mechanism.turn_slack


def reference(outcome: Outcome, measured: Measured | None = None) -> Reference:
    return Reference(
        u_star=outcome.solution.u_star,
        u0=outcome.u0,
        u_idle=outcome.u_idle,
        optimal_actions=outcome.solution.optimal_actions,
        default_actions=outcome.default_actions,
        solver=outcome.solution.solver,
        solver_facts=outcome.solution.facts,
        baselines={**outcome.baselines, **(measured.utilities if measured else {})},
        informed_actions=measured.informed_actions if measured else [],
        naive_actions=measured.naive_actions if measured else [],
    )


def build_spec(mechanism: Mechanism, params, outcome: Outcome, rendering: Rendering, *, split: str, size: int,
               horizon: int, seed: list[int], setter: str, model: str | None, budget: int,
               measured: Measured | None = None) -> EnvSpec:
    return EnvSpec(
        family=mechanism.id,
        version=mechanism.version,
        params=params.model_dump(mode="json"),
        reference=reference(outcome, measured),
        split=split,
        size=size,
        horizon=horizon,
        seed=seed,
        turn_budget=budget,
        setter=setter,
        model=model,
        rendering=rendering,
        difficulty=measured.difficulty if measured else None,
    )
