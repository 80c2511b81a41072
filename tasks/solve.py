"""solve: exact reference u*, the default policy's u0 and the idle policy's u_idle for every instance."""

from __future__ import annotations

import time
from dataclasses import dataclass

from prefect import task

import mechanisms
from mechanisms.base import Outcome
from schemas.shard import Instance, ShardSpec
from tasks.common import STAGE_OPTIONS, shard_run_name


@dataclass
class Solved:
    instance: Instance
    outcome: Outcome
    seconds: float


def solve_instances(shard: ShardSpec, instances: list[Instance]) -> list[Solved]:
    mechanism = mechanisms.get(shard.family)
    solved = []
    for instance in instances:
        started = time.perf_counter()
        outcome = mechanism.outcome(mechanism.params_from_data(instance.params))
        solved.append(Solved(instance, outcome, time.perf_counter() - started))
    return solved


solve_shard = task(name="solve", task_run_name=shard_run_name("solve"), **STAGE_OPTIONS)(solve_instances)
