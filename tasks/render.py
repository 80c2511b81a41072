"""render: the setter turns each solved instance and a corpus passage into an EnvSpec."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from prefect import task

import mechanisms
from envs.difficulty import measure
from schemas.envspec import EnvSpec
from schemas.shard import CallRecord, ShardSpec
from setter import make_setter
from setter.base import RenderFailed
from setter.budget import BUDGET, BudgetExhausted
from setter.llm_client import CURRENT_SHARD
from setter.spec import build_spec, turn_budget
from tasks import pool
from tasks.common import STAGE_OPTIONS, shard_run_name
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
    budget_exhausted: bool = False  # the run's LLM budget was spent before this attempt could be rendered
    pending: bool = False  # a spare instance, rendered only if validation needs it


def render_candidate(shard: ShardSpec, solved: Solved, attempt: int = 1, feedback: str | None = None) -> Candidate:
    mechanism = mechanisms.get(shard.family)
    params = mechanism.params_from_data(solved.instance.params)
    share = mechanism.tiers()[shard.difficulty].probe_share if shard.difficulty else 1.0
    budget = turn_budget(mechanism, params, solved.outcome, share)
    started = time.perf_counter()
    setter = make_setter(shard.setter, shard.model, shard.fallback_model)
    token = CURRENT_SHARD.set(shard.key)
    try:
        rendering, calls = setter.render(mechanism, params, solved.outcome, solved.instance.key, attempt, budget,
                                         feedback)
    except RenderFailed as failure:
        return Candidate(solved, attempt, None, failure.calls, str(failure), time.perf_counter() - started)
    except BudgetExhausted as spent:
        return Candidate(solved, attempt, None, [], f"budget: {spent}", time.perf_counter() - started,
                         budget_exhausted=True)
    finally:
        CURRENT_SHARD.reset(token)
    difficulty, informed, measured = measure(mechanism, params, solved.outcome, budget, share, shard.difficulty)
    spec = build_spec(mechanism, params, solved.outcome, rendering, split=shard.split, size=solved.instance.size,
                      horizon=solved.instance.horizon, seed=solved.instance.seed, setter=shard.setter,
                      model=shard.model, budget=budget, difficulty=difficulty, informed=informed,
                      measured=measured)
    return Candidate(solved, attempt, spec, calls, None, time.perf_counter() - started)


def render_candidates(shard: ShardSpec, solved: list[Solved]) -> list[Candidate]:
    """Render the first `shard.count` instances; the spares stay pending until validation needs them (an
    LLM setter is never paid for a rendering nobody validates). Once the run's budget is spent, nothing more
    is sent to the model."""
    candidates = []
    for position, item in enumerate(solved):
        if position >= shard.count:
            candidates.append(Candidate(item, 1, None, pending=True))
        elif BUDGET.exhausted:
            candidates.append(Candidate(item, 1, None, [], "budget: the run's LLM budget is spent",
                                        budget_exhausted=True))
        else:
            candidates.append(render_candidate(shard, item))
    return candidates


def render_stage(shard: ShardSpec, solved: list[Solved]) -> list[Candidate]:
    """The stage task's body. The template setter is a pure function of its inputs and renders in a worker process
    when the pool has any; an LLM setter renders here (its calls are counted live and charged to the run's budget)."""
    if shard.setter == "template":
        return pool.call(render_candidates, shard, solved)
    return render_candidates(shard, solved)


render_shard = task(name="render", task_run_name=shard_run_name("render"), **STAGE_OPTIONS)(render_stage)
