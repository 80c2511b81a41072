"""render: the setter turns each solved instance and a corpus passage into an EnvSpec."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from prefect import task

import mechanisms
from schemas.envspec import EnvSpec
from schemas.shard import CallRecord, ShardSpec
from setter import make_setter
from setter.base import RenderFailed
from setter.spec import build_spec, turn_budget
from tasks.common import STAGE_OPTIONS
from tasks.solve import Solved


@dataclass
class Candidate:
    """One render attempt of one instance: the spec (None if the setter failed) and what it cost."""

    solved: Solved
    attempt: int
    spec: EnvSpec | None
    calls: list[CallRecord] = field(default_factory=list)
    failure: str | None = None
    seconds: float = 0.0


def render_candidate(shard: ShardSpec, solved: Solved, attempt: int = 1, feedback: str | None = None) -> Candidate:
    mechanism = mechanisms.get(shard.family)
    params = mechanism.params_from_data(solved.instance.params)
    budget = turn_budget(mechanism, params, solved.outcome)
    started = time.perf_counter()
    setter = make_setter(shard.setter, shard.model)
    try:
        rendering, calls = setter.render(mechanism, params, solved.outcome, solved.instance.key, attempt, budget,
                                         feedback)
    except RenderFailed as failure:
        return Candidate(solved, attempt, None, failure.calls, str(failure), time.perf_counter() - started)
    spec = build_spec(mechanism, params, solved.outcome, rendering, split=shard.split, size=solved.instance.size,
                      horizon=solved.instance.horizon, seed=solved.instance.seed, setter=shard.setter,
                      model=shard.model, budget=budget)
    return Candidate(solved, attempt, spec, calls, None, time.perf_counter() - started)


def render_candidates(shard: ShardSpec, solved: list[Solved]) -> list[Candidate]:
    return [render_candidate(shard, item) for item in solved]


render_shard = task(name="render", **STAGE_OPTIONS)(render_candidates)
