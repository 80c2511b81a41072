"""validate: admit rendered environments through the real runtime; re-render rejected ones (bounded)."""

from __future__ import annotations

import json
import time
from concurrent.futures import Future
from dataclasses import dataclass, field

from prefect import task

from envs.admission import Admission, admit
from schemas.envspec import EnvSpec
from schemas.shard import CallRecord, ShardSpec
from setter.budget import BUDGET
from tasks import pool
from tasks.common import STAGE_OPTIONS, shard_run_name
from tasks.progress import HUB
from tasks.render import Candidate, render_candidate, render_stage
from tasks.solve import sample_and_solve

# rejections no rendering can fix (they depend on the instance and its budget only): the next instance is drawn instead
INSTANCE_CHECKS = {"C2", "ceiling", "difficulty"}
MAX_INSTANCES_PER_ADMITTED = 5


@dataclass
class AttemptRecord:
    instance_key: str
    index: int
    attempt: int
    admitted: bool
    reason: str | None
    env_id: str | None
    checks: dict
    seconds: float


@dataclass
class AdmittedEnv:
    spec: EnvSpec
    instance_key: str
    attempts: int
    compute_seconds: float
    calls: list[CallRecord]


@dataclass
class ShardResult:
    shard: ShardSpec
    admitted: list[AdmittedEnv] = field(default_factory=list)
    attempts: list[AttemptRecord] = field(default_factory=list)
    calls: list[CallRecord] = field(default_factory=list)
    short_by: int = 0
    budget_exhausted: bool = False


def admit_timed(spec: EnvSpec) -> tuple[Admission, str | None, float]:
    """The admission verdict, the environment's id when admitted, and the seconds they took where they ran (time
    queued for a worker is not compute)."""
    started = time.perf_counter()
    verdict = admit(spec)
    env_id = spec.env_id if verdict.admitted else None
    return verdict, env_id, time.perf_counter() - started


def _draw_candidates(shard: ShardSpec, start: int, n: int) -> list[Candidate]:
    """`n` more instances from index `start`: sampled and solved (in a worker process when the pool has any), then
    rendered by the stage's own rule (see render_stage)."""
    return render_stage(shard, pool.call(sample_and_solve, shard, start, n))


def _speculate(candidates: list[Candidate]) -> dict[int, Future]:
    """Start the admission of every rendered candidate at once: the pool's processes check them side by side, and
    the verdicts are still taken in index order. Every rendered candidate is taken before any spare is rendered, so
    none of this work is wasted."""
    return {id(c): pool.submit(admit_timed, c.spec) for c in candidates if c.spec is not None and not c.pending}


def validate_candidates(shard: ShardSpec, candidates: list[Candidate]) -> ShardResult:
    """Take instances in index order until `shard.count` are admitted (drawing more if needed)."""
    result = ShardResult(shard)
    queue = list(candidates)
    verdicts = _speculate(queue)
    next_index = max((c.solved.instance.index for c in candidates), default=-1) + 1
    limit = shard.count * MAX_INSTANCES_PER_ADMITTED + 10
    while len(result.admitted) < shard.count:
        if queue and queue[0].budget_exhausted or BUDGET.exhausted and not queue:
            result.short_by = shard.count - len(result.admitted)
            result.budget_exhausted = True  # stop cleanly: what was admitted lands
            break
        if not queue:
            if next_index >= limit:
                result.short_by = shard.count - len(result.admitted)
                break
            n = min(shard.count - len(result.admitted) + 2, limit - next_index)
            queue = _draw_candidates(shard, next_index, n)
            verdicts = _speculate(queue)
            next_index += n
        candidate = queue.pop(0)
        if candidate.pending:
            candidate = render_candidate(shard, candidate.solved)
            if candidate.budget_exhausted:
                queue.insert(0, candidate)
                continue
        _admit_instance(shard, candidate, result, verdicts.pop(id(candidate), None))
    for unused in verdicts.values():
        unused.cancel()
    result.calls.extend(call for c in queue for call in c.calls)  # rendered but not needed: still paid for
    return result


def _admit_instance(shard: ShardSpec, candidate: Candidate, result: ShardResult,
                    verdict_future: Future | None = None) -> None:
    solved = candidate.solved
    spent, calls, rejected = solved.seconds, [], 0
    while True:
        calls.extend(candidate.calls)
        if candidate.budget_exhausted:  # no call was made: not an attempt, and the shard stops after this
            if rejected:
                HUB.add(rejected=rejected, shard=shard.key)
            break
        if candidate.spec is None:
            admitted, reason, check, checks, env_id = False, f"setter: {candidate.failure}", "setter", {}, None
            admission_seconds = 0.0
        else:
            verdict_future = verdict_future or pool.submit(admit_timed, candidate.spec)
            verdict, env_id, admission_seconds = verdict_future.result()
            verdict_future = None
            admitted, reason, check, checks = verdict.admitted, verdict.reason, verdict.check, verdict.checks
        seconds = candidate.seconds + admission_seconds
        spent += seconds
        result.attempts.append(AttemptRecord(solved.instance.key, solved.instance.index, candidate.attempt, admitted,
                                             reason, env_id, checks, seconds))
        if admitted:
            result.admitted.append(AdmittedEnv(candidate.spec, solved.instance.key, candidate.attempt, spent, calls))
            HUB.add(admitted=1, rejected=rejected, shard=shard.key)
            break
        rejected += 1
        if check in INSTANCE_CHECKS or candidate.attempt >= shard.max_attempts:
            HUB.add(rejected=rejected, shard=shard.key)
            break
        candidate = render_candidate(shard, solved, candidate.attempt + 1, feedback=reason)
    result.calls.extend(calls)


validate_shard = task(name="validate", task_run_name=shard_run_name("validate"), **STAGE_OPTIONS)(
    validate_candidates)


def checks_json(checks: dict) -> str:
    return json.dumps(checks, sort_keys=True, default=str)
