"""What every stage task shares: the counts it returns with its result, its retry policy, and a cache keyed by
shard, round and code version."""

from __future__ import annotations

import base64
import hashlib
import os
import pickle
from dataclasses import dataclass, fields
from typing import Any, Generic, TypeVar

from prefect.cache_policies import NO_CACHE, CachePolicy
from prefect.context import TaskRunContext
from prefect.serializers import Serializer
from prefect.tasks import exponential_backoff
from pydantic import Field

import mechanisms
from schemas.shard import CallRecord, ShardSpec
from tasks import pool

CODE_VERSION = "0.3.0"  # 0.3.0: a worker's stage items are packed (tasks.pool.Packed); 0.2.0: StageCounts, rounds
TRANSIENT = (TimeoutError, ConnectionError, OSError)
T = TypeVar("T")


@dataclass
class StageCounts:
    """What one stage did, returned with its result (as datatrove's pipeline blocks keep their stats): environments
    admitted and rejected attempts (validate), model requests, cached and failed ones, fresh tokens and known USD
    (render, validate), and the compute seconds the stage's work took where it ran. The flow adds them up."""

    admitted: int = 0
    rejected: int = 0
    llm_calls: int = 0  # model requests made, cached answers included
    llm_cached: int = 0
    llm_failed: int = 0
    tokens: int = 0  # of fresh answers (a cached answer costs none)
    cost_usd: float = 0.0  # of the calls whose cost is known (the landed rows keep unknown as null)
    seconds: float = 0.0

    def __add__(self, other: StageCounts) -> StageCounts:
        return StageCounts(**{name: getattr(self, name) + getattr(other, name) for name in COUNT_FIELDS})

    @classmethod
    def of_call(cls, call: CallRecord) -> StageCounts:
        """One model request's counts."""
        tokens = 0 if call.cache_hit else (call.prompt_tokens or 0) + (call.completion_tokens or 0)
        return cls(llm_calls=1, llm_cached=int(call.cache_hit), llm_failed=int(call.error is not None),
                   tokens=tokens, cost_usd=call.cost_usd or 0.0)

    @classmethod
    def of_calls(cls, calls: list[CallRecord]) -> StageCounts:
        return sum((cls.of_call(call) for call in calls), cls())

    def amounts(self) -> dict[str, float]:
        return {name: getattr(self, name) for name in COUNT_FIELDS}


COUNT_FIELDS = [f.name for f in fields(StageCounts)]


@dataclass
class Staged(Generic[T]):
    """A stage's result: its items, one per instance, in index order (pickled where they were made, when a worker
    process made them: tasks.pool.Packed), and what the stage did (StageCounts)."""

    items: list[T] | pool.Packed
    counts: StageCounts

    def packed(self) -> Staged[T]:
        return Staged(pool.pack(self.items), self.counts)

    def unpacked(self) -> Staged[T]:
        return Staged(pool.unpack(self.items), self.counts)

    def packs(self) -> list[pool.Packed]:
        return pool.packs(self.items)


@dataclass(frozen=True)
class Step:
    """One round of a shard's stages (tasks.rounds): instances `start` .. `start + draw - 1` are drawn (draw 0: the
    spares the previous round left suffice), and `need` more environments are to be admitted."""

    number: int
    start: int
    draw: int
    need: int


def is_transient(error: BaseException | None) -> bool:
    """Network, storage and rate-limit errors are retried; bugs and bad data are not."""
    if error is None:
        return False
    if isinstance(error, TRANSIENT):
        return True
    return type(error).__name__ in {"RateLimitError", "Timeout", "APIConnectionError", "ServiceUnavailableError",
                                    "InternalServerError"}


# A stage that failed with a transient error is tried up to 1 + STAGE_RETRIES times (backoff with jitter); any
# other error is tried once more (OTHER_ERROR_TRIES in all): a flaky host (a killed worker, a full disk that
# cleared) gets a second chance, while a deterministic bug is not run four times before it is reported.
STAGE_RETRIES = 3
OTHER_ERROR_TRIES = 2


def _task_error(state) -> BaseException | None:
    try:
        state.result()
    except Exception as error:  # the state carries the task's exception
        return error
    return None


def retry_transient(task, task_run, state) -> bool:
    """Retry condition of the landing and commit tasks: transient errors only (they write the warehouse)."""
    return is_transient(_task_error(state))


def retry_stage(task, task_run, state) -> bool:
    """Retry condition of the shard stages: transient errors always (up to the task's retries), others once."""
    error = _task_error(state)
    if error is None:
        return False
    return is_transient(error) or task_run.run_count < OTHER_ERROR_TRIES


class ShardStagePolicy(CachePolicy):
    """Cache a stage's result by (stage, shard content, round, family version, code version) and nothing else.

    Prefect's default policy includes the flow run id and so caches nothing across runs; this one lets
    a re-run of the same night skip every stage that already finished. A round's inputs follow from the shard and
    the rounds before it, so (shard, round: its first index, draw and need) names them.
    """

    def compute_key(self, task_ctx: TaskRunContext, inputs: dict[str, Any], flow_parameters: dict[str, Any],
                    **kwargs: Any) -> str | None:
        shard = inputs.get("shard")
        if not isinstance(shard, ShardSpec):
            return None
        if inputs.get("budget") is not None:
            return None  # a budget can cut a stage short: never cache such results (model answers are cached)
        version = mechanisms.get(shard.family).version
        # per warehouse: the cache resumes a run into the same warehouse; another warehouse starts afresh
        # (its model answers still come from the LLM disk cache, at no cost)
        warehouse = hashlib.sha256(str(flow_parameters.get("warehouse")).encode()).hexdigest()[:8]
        step = inputs.get("step")
        round_key = "" if step is None else f"-r{step.number}-{step.start}-{step.draw}-{step.need}"
        return f"vhd-{task_ctx.task.name}-{shard.key}{round_key}-{warehouse}-v{version}-{CODE_VERSION}"


def shard_run_name(stage: str):
    """The task-run name of a shard stage, as Prefect's UI lists it: `render-knapsack-train-0003`.

    Prefect calls it with the task's resolved parameters: the shard itself (sample, solve, render, validate) or the
    validated result that carries it (land). A shard's second and later rounds add theirs: `sample-lp-train-0002-r2`.
    A name is never a reason to fail a stage: without a shard, the stage.
    """

    def name(parameters: dict[str, Any]) -> str:
        shard = parameters.get("shard", getattr(parameters.get("result"), "shard", None))
        if not isinstance(shard, ShardSpec):
            return stage
        number = getattr(parameters.get("step"), "number", 1)
        return f"{stage}-{shard.family}-{shard.split}-{shard.index:04d}" + (f"-r{number}" if number > 1 else "")

    name.__name__ = f"{stage}_run_name"
    return name


class StageResultSerializer(Serializer):
    """How Prefect persists a stage's result for the shard cache: the standard pickler (several times faster than
    cloudpickle, Prefect's default, whose per-object hook runs in Python), in base64 of one line. Prefect's
    PickleSerializer breaks its base64 into 76-character lines in a Python loop, which for a shard's packed items
    cost more than pickling them."""

    type: str = Field(default="vhd-stage-pickle", frozen=True)

    def dumps(self, obj: Any) -> bytes:
        return base64.b64encode(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))

    def loads(self, blob: bytes) -> Any:
        return pickle.loads(base64.b64decode(blob))


STAGE_OPTIONS: dict[str, Any] = {
    "retries": STAGE_RETRIES,
    "retry_delay_seconds": exponential_backoff(backoff_factor=1),
    "retry_jitter_factor": 0.5,
    "retry_condition_fn": retry_stage,
    "cache_policy": ShardStagePolicy(),
    "persist_result": True,
    # the stage results are plain dataclasses, pydantic models and packed bytes: see StageResultSerializer
    "result_serializer": StageResultSerializer(),
}

# Landing and committing write the warehouse and are never cached: Prefect's default policy would hash a shard's
# whole result to compute a key nobody reads.
WRITE_OPTIONS: dict[str, Any] = {"retries": 3, "retry_delay_seconds": 1, "retry_condition_fn": retry_transient,
                                 "cache_policy": NO_CACHE}


def cpu_hour_usd() -> float:
    """The price of compute per CPU-hour used for per-environment cost (env VHD_CPU_HOUR_USD)."""
    return float(os.environ.get("VHD_CPU_HOUR_USD", "0.05"))
