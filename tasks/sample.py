"""sample: draw the parameters of a shard's instances, one RNG per instance seeded with (shard seed, index)."""

from __future__ import annotations

import numpy as np
from prefect import task

import mechanisms
from schemas.shard import Instance, ShardSpec
from tasks.common import STAGE_OPTIONS, shard_run_name

OVERSAMPLE = 1.25  # instances drawn per admitted environment requested; the validator tops up if short


def sample_instances(shard: ShardSpec, start: int = 0, n: int | None = None) -> list[Instance]:
    mechanism = mechanisms.get(shard.family)
    n = int(shard.count * OVERSAMPLE) + 2 if n is None else n
    instances = []
    for index in range(start, start + n):
        seed = [shard.seed, index]
        params = mechanism.sample(np.random.default_rng(seed), shard.size, shard.horizon)
        instances.append(Instance(key=shard.instance_key(index), index=index, seed=seed, size=shard.size,
                                  horizon=shard.horizon, params=params.model_dump(mode="json")))
    return instances


sample_shard = task(name="sample", task_run_name=shard_run_name("sample"), **STAGE_OPTIONS)(sample_instances)
