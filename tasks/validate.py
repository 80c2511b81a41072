"""validate: admit rendered environments through the real runtime, in index order; re-render rejected ones (bounded).

A stage validates one round's renderings of a shard (tasks.rounds) and never draws instances itself: when the
round's renderings run out before the shard has what it needs, the flow runs another round. A rejected rendering
is re-rendered here, with the rejection as feedback, before the next instance is looked at: the instances are
taken in index order, so that the same environments land whatever the rounds.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field

from prefect import task

from envs.admission import Admission, admit
from schemas.envspec import EnvSpec
from schemas.shard import CallRecord, ShardSpec
from setter.budget import CostBudget
from tasks import pool, progress
from tasks.common import STAGE_OPTIONS, StageCounts, Staged, Step, shard_run_name
from tasks.render import Candidate, model_calls, render_one, renders_in_pool
from tasks.solve import Solved

# rejections no rendering can fix (they depend on the instance and its budget only): the next instance is taken instead
INSTANCE_CHECKS = {"C2", "ceiling", "difficulty"}


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


@dataclass
class ShardParts:
    """A shard's rounds' results as its landing takes them (a round validated in a worker process still packed), and
    why it stopped short, if it did."""

    shard: ShardSpec
    parts: list[ShardResult | pool.Packed] = field(default_factory=list)
    short_by: int = 0
    budget_exhausted: bool = False

    def unpacked(self) -> ShardResult:
        """The shard's result: every round's environments, attempts and calls, in round order."""
        merged = ShardResult(self.shard, short_by=self.short_by, budget_exhausted=self.budget_exhausted)
        for part in self.parts:
            found = pool.unpack(part)
            merged.admitted.extend(found.admitted)
            merged.attempts.extend(found.attempts)
            merged.calls.extend(found.calls)
        return merged

    def packs(self) -> list[pool.Packed]:
        return [packed for part in self.parts for packed in pool.packs(part)]


@dataclass
class Validated:
    """A validate stage's result: the round's admitted environments, attempts and calls (`result`), the solved
    instances it did not reach that were never rendered (spares for the next round, in index order), and its counts;
    what the rounds need to know of them (environments admitted, the budget spent) is told beside them, since a
    worker process hands both on packed."""

    result: ShardResult | pool.Packed
    spares: list[Solved] | pool.Packed
    counts: StageCounts
    admitted: int = 0
    budget_exhausted: bool = False

    def packed(self) -> Validated:
        return Validated(pool.pack(self.result, 1), pool.pack(self.spares), self.counts, self.admitted,
                         self.budget_exhausted)


def admit_timed(spec: EnvSpec) -> tuple[Admission, str | None, float]:
    """The admission verdict, the environment's id when admitted, and the seconds they took where they ran (time
    queued for a worker is not compute)."""
    started = time.perf_counter()
    verdict = admit(spec)
    return verdict, verdict.env_id, time.perf_counter() - started


def _speculate(candidates: list[Candidate]) -> dict[int, Future]:
    """Start the admission of these candidates at once: the pool's processes check them side by side, and the
    verdicts are still taken in index order."""
    return {id(c): pool.submit(admit_timed, c.spec) for c in candidates}


def validate_candidates(shard: ShardSpec, candidates: list[Candidate], need: int | None = None,
                        report: Callable[[StageCounts], None] | None = None) -> Validated:
    """Take the rendered candidates in index order until `need` (default the shard's count) are admitted, the
    renderings run out (the pending spares are handed back) or the budget stopped the rendering. Each admission and
    rejection is reported as it is decided (`report`); re-renderings are charged to the budget in force."""
    need = shard.count if need is None else need
    report = report or (lambda counts: None)
    result, counts = ShardResult(shard), StageCounts()
    # the admissions of the first `need` renderings start at once; a rendered spare's when an instance before it
    # is rejected (it will probably be needed), so that its verdict is ready when it is reached
    rendered = [c for c in candidates if c.spec is not None and not c.pending]
    verdicts, ahead = _speculate(rendered[:need]), iter(rendered[need:])
    spares: list[Solved] = []
    taken = 0
    for candidate in candidates:
        if len(result.admitted) >= need:
            break
        if candidate.pending:  # the pending spares follow the rendered candidates: the rest are all spares
            spares = [c.solved for c in candidates[taken:]]
            break
        if candidate.budget_exhausted:
            result.budget_exhausted = True  # stop cleanly: what was admitted lands
            break
        decided = _admit_instance(shard, candidate, result, verdicts.pop(id(candidate), None), report)
        counts += decided
        taken += 1
        if not decided.admitted:
            verdicts.update(_speculate(list(itertools.islice(ahead, 1))))
    for unused in verdicts.values():
        unused.cancel()
    result.calls.extend(call for c in candidates[taken:] for call in c.calls)  # rendered, not needed: still paid for
    return Validated(result, spares, counts, len(result.admitted), result.budget_exhausted)


def _admit_instance(shard: ShardSpec, candidate: Candidate, result: ShardResult, verdict_future: Future | None,
                    report: Callable[[StageCounts], None]) -> StageCounts:
    """Validate one instance: its rendering, then re-renderings with the rejection as feedback while they can help.
    Returns what this did (the first rendering's calls were the render stage's)."""
    solved = candidate.solved
    spent, calls, rejected, admitted = solved.seconds, [], 0, False
    counts = StageCounts()
    while True:
        calls.extend(candidate.calls)
        if candidate.budget_exhausted:  # no call was made: not an attempt, and the shard stops after this round
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
        counts.seconds += admission_seconds
        result.attempts.append(AttemptRecord(solved.instance.key, solved.instance.index, candidate.attempt, admitted,
                                             reason, env_id, checks, seconds))
        if admitted:
            result.admitted.append(AdmittedEnv(candidate.spec, solved.instance.key, candidate.attempt, spent, calls))
            break
        rejected += 1
        if check in INSTANCE_CHECKS or candidate.attempt >= shard.max_attempts:
            break
        candidate = render_one(shard, solved, candidate.attempt + 1, feedback=reason)
        counts += StageCounts.of_calls(candidate.calls)
        counts.seconds += candidate.seconds
    decided = StageCounts(admitted=int(admitted), rejected=rejected)
    if decided.admitted or decided.rejected:
        report(decided)
    result.calls.extend(calls)
    return counts + decided


def validate_round(shard: ShardSpec, step: Step, rendered: Staged[Candidate],
                   report: Callable[[StageCounts], None] | None = None) -> Validated:
    """The round's renderings validated (validate_candidates), each decision reported as it is made."""
    return validate_candidates(shard, rendered.items, step.need, report)


def validate_stage(shard: ShardSpec, step: Step, rendered: Staged[Candidate],
                   budget: CostBudget | None = None) -> Validated:
    """The stage task's body: the round's renderings validated, every admission and rejection counted live
    (tasks.progress). With the template setter, in a worker process when the pool has any (it reports each decision
    back as it is made); with a model, in this thread, where re-renderings are charged to `budget` and every model
    call is counted live too."""
    key = progress.stage_key(shard.key, step.number, "validate")
    if renders_in_pool(shard):
        return pool.call_staged(validate_round, shard, step, rendered, report=progress.live(key))
    with model_calls(key, budget):
        return validate_round(shard, step, rendered.unpacked(), progress.live(key))


validate_shard = task(name="validate", task_run_name=shard_run_name("validate"), **STAGE_OPTIONS)(validate_stage)


def checks_json(checks: dict) -> str:
    """An attempt's checks as the attempts table stores them."""
    return json.dumps(checks, sort_keys=True, default=str)
