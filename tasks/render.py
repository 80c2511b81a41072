"""render: the setter turns each solved instance and a corpus passage into an EnvSpec."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from prefect import task

import mechanisms
from envs.difficulty import measure
from mechanisms.base import parsed_once, remembered_solutions
from schemas.envspec import EnvSpec
from schemas.shard import CallRecord, ShardSpec
from setter import make_setter
from setter.base import RenderFailed
from setter.budget import BudgetExhausted, CostBudget, spending
from setter.llm_client import reporting_calls
from setter.spec import build_spec, turn_budget
from tasks import pool, progress
from tasks.common import STAGE_OPTIONS, StageCounts, Staged, Step, shard_run_name
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
    pending: bool = False  # a spare instance, rendered in a later round only if the shard needs it


def render_candidate(shard: ShardSpec, solved: Solved, attempt: int = 1, feedback: str | None = None) -> Candidate:
    """One rendering. A model's calls are charged to the budget in force (setter.budget.spending) and reported to
    the listener in force (setter.llm_client.reporting_calls): see model_calls."""
    mechanism = mechanisms.get(shard.family)
    params = solved.params
    share = mechanism.tiers()[shard.difficulty].probe_share if shard.difficulty else 1.0
    budget = turn_budget(mechanism, params, solved.outcome, share)
    started = time.perf_counter()
    setter = make_setter(shard.setter, shard.model, shard.fallback_model)
    try:
        rendering, calls = setter.render(mechanism, params, solved.outcome, solved.instance.key, attempt, budget,
                                         feedback)
    except RenderFailed as failure:
        return Candidate(solved, attempt, None, failure.calls, str(failure), time.perf_counter() - started)
    except BudgetExhausted as spent:
        return Candidate(solved, attempt, None, [], f"budget: {spent}", time.perf_counter() - started,
                         budget_exhausted=True)
    with remembered_solutions(), parsed_once():  # the informed agent solves its belief where the belief is judged
        measured = measure(mechanism, params, solved.outcome, budget, share, shard.difficulty)
    spec = build_spec(mechanism, params, solved.outcome, rendering, split=shard.split, size=solved.instance.size,
                      horizon=solved.instance.horizon, seed=solved.instance.seed, setter=shard.setter,
                      model=shard.model, budget=budget, measured=measured)
    return Candidate(solved, attempt, spec, calls, None, time.perf_counter() - started)


def renders_in_pool(shard: ShardSpec) -> bool:
    """The template setter is a pure function of its inputs and renders in a worker process when the pool has any;
    an LLM setter renders in the stage's thread (its calls are counted live and charged to the run's budget)."""
    return shard.setter == "template"


def render_one(shard: ShardSpec, solved: Solved, attempt: int = 1, feedback: str | None = None) -> Candidate:
    """One rendering, where the setter renders (see renders_in_pool)."""
    if renders_in_pool(shard):
        return pool.call(render_candidate, shard, solved, attempt, feedback)
    return render_candidate(shard, solved, attempt, feedback)


def render_candidates(shard: ShardSpec, solved: list[Solved], need: int | None = None,
                      budget: CostBudget | None = None) -> list[Candidate]:
    """Render what the shard still needs (`need`, default its count): the first `need` instances with an LLM setter,
    the rest staying pending spares (a model is never paid for a rendering nobody validates); every instance with the
    template setter (free: a spare rendered now saves a round). Once `budget` is spent, nothing more is sent to the
    model."""
    ahead = len(solved) if shard.setter == "template" else (shard.count if need is None else need)
    candidates = []
    for position, item in enumerate(solved):
        if position >= ahead:
            candidates.append(Candidate(item, 1, None, pending=True))
        elif budget is not None and budget.exhausted:
            candidates.append(Candidate(item, 1, None, [], "budget: the run's LLM budget is spent",
                                        budget_exhausted=True))
        else:
            candidates.append(render_candidate(shard, item))
    return candidates


@contextmanager
def model_calls(key: str, budget: CostBudget | None) -> Iterator[None]:
    """Within the block, model calls are charged to `budget` and counted live under the progress key `key`."""
    report = progress.live(key)
    with spending(budget), reporting_calls(lambda call: report(StageCounts.of_call(call))):
        yield


def render_stage(shard: ShardSpec, step: Step, solved: Staged[Solved] | None, spares: list[Solved] | pool.Packed,
                 budget: CostBudget | None = None) -> Staged[Candidate]:
    """The stage task's body: the spares the previous round left, then this round's solved instances, rendered
    where the setter renders (see renders_in_pool and render_candidates)."""
    if renders_in_pool(shard):
        return pool.call_staged(render_round, shard, step, solved, spares)
    with model_calls(progress.stage_key(shard.key, step.number, "render"), budget):  # a model renders here
        return render_round(shard, step, None if solved is None else solved.unpacked(), pool.unpack(spares), budget)


def render_round(shard: ShardSpec, step: Step, solved: Staged[Solved] | None, spares: list[Solved],
                 budget: CostBudget | None = None) -> Staged[Candidate]:
    """The spares, then the round's solved instances, rendered (render_candidates), with the calls and seconds."""
    batch = [*spares, *(solved.items if solved is not None else [])]
    candidates = render_candidates(shard, batch, step.need, budget)
    counts = StageCounts.of_calls([call for c in candidates for call in c.calls])
    counts.seconds = sum(c.seconds for c in candidates)
    return Staged(candidates, counts)


render_shard = task(name="render", task_run_name=shard_run_name("render"), **STAGE_OPTIONS)(render_stage)
