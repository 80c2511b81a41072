"""solve: exact reference u*, the default policy's u0 and the idle policy's u_idle for every instance."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from prefect import task

import mechanisms
from mechanisms.base import Outcome, remembered_solutions
from schemas.shard import Instance, ShardSpec
from tasks import pool
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


def sample_and_solve(shard: ShardSpec, start: int = 0, n: int | None = None) -> list[Solved]:
    """Draw instances and solve them in one go; a solution the sampler computed is not computed again. Each
    instance's seconds count its drawing too (its compute cost includes the sampler's solving)."""
    from tasks.sample import initial_count, sample_instances

    solved = []
    for index in range(start, start + (initial_count(shard) if n is None else n)):
        started = time.perf_counter()
        with remembered_solutions():
            [instance] = sample_instances(shard, index, 1)
            [item] = solve_instances(shard, [instance])
        solved.append(Solved(instance, item.outcome, time.perf_counter() - started))
    return solved


def sample_ahead(shard: ShardSpec) -> tuple[list[Instance], list[Solved] | None]:
    """The sample stage's work: the shard's instances and, solved ahead, their references (None when solving failed:
    that failure is the solve stage's to report, with its own retries)."""
    from tasks.sample import sample_instances

    try:
        solved = sample_and_solve(shard)
    except Exception:  # noqa: BLE001 - solved again, and reported, by the solve stage
        return sample_instances(shard), None
    return [item.instance for item in solved], solved


# solutions computed while sampling, by shard key, until this process's solve stage of that shard takes them
_set_aside: dict[str, list[Solved]] = {}
_set_aside_lock = threading.Lock()


def set_aside(shard: ShardSpec, solved: list[Solved]) -> None:
    with _set_aside_lock:
        _set_aside[shard.key] = solved


def forget_set_aside() -> None:
    """Drop what no solve stage took (its result came from Prefect's cache): called when a run ends."""
    with _set_aside_lock:
        _set_aside.clear()


def solve_stage(shard: ShardSpec, instances: list[Instance]) -> list[Solved]:
    """The stage task's body: the solutions set aside while sampling these very instances, else the instances
    solved in a worker process when the pool has any (a sample result from Prefect's cache comes alone)."""
    with _set_aside_lock:
        solved = _set_aside.pop(shard.key, None)
    if solved is not None and [s.instance for s in solved] == instances:
        return solved
    return pool.call(solve_instances, shard, instances)


solve_shard = task(name="solve", task_run_name=shard_run_name("solve"), **STAGE_OPTIONS)(solve_stage)
