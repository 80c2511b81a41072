"""sample: draw the parameters of a shard's instances, one RNG per instance seeded with (shard seed, index).

Many samplers solve to judge a draw (is the default policy far enough from the optimum?): what they solved for the
parameters they return is handed on with them, and the solve stage does not solve it again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from prefect import task
from pydantic import BaseModel

import mechanisms
from mechanisms.base import Solution, remembered_solutions
from schemas.shard import Instance, ShardSpec
from tasks import pool
from tasks.common import STAGE_OPTIONS, StageCounts, Staged, Step, shard_run_name

# Instances drawn per admitted environment requested, beyond the count and SPARES more: spares for rejected
# renderings. The template setter's renderings are rarely rejected (under 1%), and some instances are (1-2%: the
# default policy too good or too bad): its few spares spare most shards a second round (four more task runs, queued
# behind the other shards' work). An LLM setter's renderings are (a third at the first attempt): its spares are
# solved ahead, rendered only when needed. Instance i is seeded by (shard seed, i) and taken in index order either
# way: the same environments land.
OVERSAMPLE = {"template": 0.0}
DEFAULT_OVERSAMPLE = 0.25
SPARES = 2


def initial_count(shard: ShardSpec) -> int:
    """How many instances a shard draws in its first round."""
    return shard.count + int(shard.count * OVERSAMPLE.get(shard.setter, DEFAULT_OVERSAMPLE)) + SPARES


@dataclass
class Drawn:
    """One sampled instance: its parameters as the sampler made them (and as data, in `instance`), the solution the
    sampler computed for them if it solved them (else None), and the seconds the drawing took."""

    instance: Instance
    params: BaseModel
    solution: Solution | None
    seconds: float


def draw(shard: ShardSpec, start: int, n: int) -> list[Drawn]:
    """Instances `start` .. `start + n - 1` of the shard."""
    mechanism = mechanisms.get(shard.family)
    drawn = []
    for index in range(start, start + n):
        started = time.perf_counter()
        seed = [shard.seed, index]
        size, horizon = shard.cell(index)
        with remembered_solutions() as solved:
            params = mechanism.sample(np.random.default_rng(seed), size, horizon)
        instance = Instance(key=shard.instance_key(index), index=index, seed=seed, size=size, horizon=horizon,
                            params=params.model_dump(mode="json"))
        solution = solved.solution(mechanism.id, params) if solved else None
        drawn.append(Drawn(instance, params, solution, time.perf_counter() - started))
    return drawn


def sample_instances(shard: ShardSpec, start: int = 0, n: int | None = None) -> list[Instance]:
    """The instances alone (parameters as data): `n` from index `start` (default: the first round's)."""
    return [item.instance for item in draw(shard, start, initial_count(shard) if n is None else n)]


def draw_round(shard: ShardSpec, step: Step) -> Staged[Drawn]:
    """The round's instances and the seconds they took."""
    drawn = draw(shard, step.start, step.draw)
    return Staged(drawn, StageCounts(seconds=sum(item.seconds for item in drawn)))


def sample_stage(shard: ShardSpec, step: Step) -> Staged[Drawn]:
    """The stage task's body: the round's instances, drawn in a worker process when the pool has any."""
    return pool.call_staged(draw_round, shard, step)


sample_shard = task(name="sample", task_run_name=shard_run_name("sample"), **STAGE_OPTIONS)(sample_stage)
