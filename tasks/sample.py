"""sample: draw the parameters of a shard's instances, one RNG per instance seeded with (shard seed, index)."""

from __future__ import annotations

import numpy as np
from prefect import task

import mechanisms
from schemas.shard import Instance, ShardSpec
from tasks import pool
from tasks.common import STAGE_OPTIONS, shard_run_name

# Instances drawn per admitted environment requested, beyond the count: spares for rejected renderings. The template
# setter's renderings are rarely rejected (under 1%), so it draws none and the validator draws more when it must;
# an LLM setter's are (a third at the first attempt), and its spares are solved ahead, rendered only when needed.
# Instance i is seeded by (shard seed, i) and taken in index order either way: the same environments land.
OVERSAMPLE = {"template": 0.0}
DEFAULT_OVERSAMPLE = 0.25


def initial_count(shard: ShardSpec) -> int:
    """How many instances a shard draws up front."""
    extra = OVERSAMPLE.get(shard.setter, DEFAULT_OVERSAMPLE)
    return shard.count + (int(shard.count * extra) + 2 if extra else 0)


def sample_instances(shard: ShardSpec, start: int = 0, n: int | None = None) -> list[Instance]:
    mechanism = mechanisms.get(shard.family)
    n = initial_count(shard) if n is None else n
    instances = []
    for index in range(start, start + n):
        seed = [shard.seed, index]
        size, horizon = shard.cell(index)
        params = mechanism.sample(np.random.default_rng(seed), size, horizon)
        instances.append(Instance(key=shard.instance_key(index), index=index, seed=seed, size=size,
                                  horizon=horizon, params=params.model_dump(mode="json")))
    return instances


def sample_stage(shard: ShardSpec) -> list[Instance]:
    """The stage task's body: the shard's instances, drawn in a worker process when the pool has any.

    Samplers that solve to judge a draw would solve each instance twice, once here and once in the solve stage: the
    worker also solves what it drew, with the sampler's solutions remembered, and leaves the result to the solve
    stage of this process (tasks.solve.solve_stage), which takes it instead of solving again.
    """
    from tasks.solve import sample_ahead, set_aside

    instances, solved = pool.call(sample_ahead, shard)
    if solved is not None:
        set_aside(shard, solved)
    return instances


sample_shard = task(name="sample", task_run_name=shard_run_name("sample"), **STAGE_OPTIONS)(sample_stage)
