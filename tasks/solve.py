"""solve: exact reference u*, the default policy's u0 and the idle policy's u_idle for every instance.

An instance the sampler already solved (tasks.sample.Drawn.solution) keeps that solution: only the policies' and
baselines' utilities are computed here.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from prefect import task
from pydantic import BaseModel

import mechanisms
from mechanisms.base import Outcome
from schemas.shard import Instance, ShardSpec
from tasks import pool
from tasks.common import STAGE_OPTIONS, StageCounts, Staged, Step, shard_run_name
from tasks.sample import Drawn, draw, initial_count


@dataclass
class Solved:
    instance: Instance
    params: BaseModel  # the parameters as the sampler made them (the later stages do not parse them again)
    outcome: Outcome
    seconds: float  # drawing and solving the instance


def solve_drawn(shard: ShardSpec, drawn: list[Drawn]) -> list[Solved]:
    mechanism = mechanisms.get(shard.family)
    solved = []
    for item in drawn:
        started = time.perf_counter()
        outcome = mechanism.outcome(item.params, item.solution)
        solved.append(Solved(item.instance, item.params, outcome, item.seconds + time.perf_counter() - started))
    return solved


def sample_and_solve(shard: ShardSpec, start: int = 0, n: int | None = None) -> list[Solved]:
    """Draw instances and solve them (no Prefect, no pool): `n` from index `start` (default: the first round's)."""
    return solve_drawn(shard, draw(shard, start, initial_count(shard) if n is None else n))


def solve_round(shard: ShardSpec, sampled: Staged[Drawn]) -> Staged[Solved]:
    """The sampled instances solved, and the seconds the solving took."""
    solved = solve_drawn(shard, sampled.items)
    seconds = sum(item.seconds for item in solved) - sum(item.seconds for item in sampled.items)
    return Staged(solved, StageCounts(seconds=seconds))


def solve_stage(shard: ShardSpec, step: Step, sampled: Staged[Drawn]) -> Staged[Solved]:
    """The stage task's body: the sampled instances solved, in a worker process when the pool has any."""
    return pool.call_staged(solve_round, shard, sampled)


solve_shard = task(name="solve", task_run_name=shard_run_name("solve"), **STAGE_OPTIONS)(solve_stage)
