"""Assemble the EnvSpec of one solved, rendered instance."""

from __future__ import annotations

from mechanisms.base import Mechanism, Outcome
from schemas.envspec import EnvSpec, Reference, Rendering


def turn_budget(mechanism: Mechanism, params, outcome: Outcome) -> int:
    """The longer of the two reference plans, plus the family's probe allowance and slack."""
    plan = max(len(outcome.solution.optimal_actions), len(outcome.default_actions))
    return plan + mechanism.probe_allowance(params) + mechanism.turn_slack


def reference(outcome: Outcome) -> Reference:
    return Reference(
        u_star=outcome.solution.u_star,
        u0=outcome.u0,
        u_idle=outcome.u_idle,
        optimal_actions=outcome.solution.optimal_actions,
        default_actions=outcome.default_actions,
        solver=outcome.solution.solver,
        solver_facts=outcome.solution.facts,
        baselines=outcome.baselines,
    )


def build_spec(mechanism: Mechanism, params, outcome: Outcome, rendering: Rendering, *, split: str, size: int,
               horizon: int, seed: list[int], setter: str, model: str | None, budget: int) -> EnvSpec:
    return EnvSpec(
        family=mechanism.id,
        version=mechanism.version,
        params=params.model_dump(mode="json"),
        reference=reference(outcome),
        split=split,
        size=size,
        horizon=horizon,
        seed=seed,
        turn_budget=budget,
        setter=setter,
        model=model,
        rendering=rendering,
    )
