"""rounds: a shard runs sample -> solve -> render -> validate once per instance, in rounds, until it has its count.

The first round draws the shard's count and a few spares (an LLM setter a quarter more: tasks.sample.initial_count),
so that most shards are done in one round. When validation leaves the shard short (instances whose renderings were
all rejected), the next round takes the spares the last one left unrendered and, if they are too few, draws the next
indices: what is still needed, and two more.
Every round draws after the indices before it and validation takes instances in index order, so the same
environments land whatever the rounds; a shard stops short after MAX_INSTANCES_PER_ADMITTED instances per
environment asked for (MAX_INSTANCES_PER_ADMITTED_AT_TIER for a shard asking for hard or frontier, whose admission
needs a skill gap and a heuristic band that some families meet in one draw of ten; and 10 more), or once the run's
LLM budget is spent.

ShardRounds keeps one shard's account between rounds; the generate flow (flows.generate) submits each round's stages
as Prefect tasks, and `run_shard` runs them one after the other in this process (the tests, the benchmarks).
"""

from __future__ import annotations

from setter.budget import CostBudget
from tasks import pool, progress
from tasks.common import StageCounts, Step
from tasks.render import render_stage
from tasks.sample import initial_count, sample_stage
from tasks.solve import Solved, solve_stage
from tasks.validate import ShardParts, ShardResult, Validated, validate_stage

MAX_INSTANCES_PER_ADMITTED = 5
MAX_INSTANCES_PER_ADMITTED_AT_TIER = 12  # benchmarks/README.md: the lowest hard yields are 0.09-0.17
STAGES = ("sample", "solve", "render", "validate")


def instance_limit(shard) -> int:
    """The instances a shard may take (indices 0 .. limit - 1) before it stops short."""
    per = MAX_INSTANCES_PER_ADMITTED_AT_TIER if shard.difficulty in ("hard", "frontier") else MAX_INSTANCES_PER_ADMITTED
    return shard.count * per + 10


class ShardRounds:
    """One shard's account over its rounds: the admitted environments, attempts and calls so far (`result`), the
    spares the last round left, and the next index to draw."""

    def __init__(self, shard, budget: CostBudget | None = None) -> None:
        self.shard = shard
        self.budget = budget
        self.landing = ShardParts(shard)  # what the rounds found, as the landing takes it
        self.admitted = 0
        self.spares: list[Solved] | pool.Packed = []
        self.next_index = 0
        self.rounds = 0

    @property
    def result(self) -> ShardResult:
        """The shard's admitted environments, attempts and calls so far, and why it stopped short, if it did."""
        return self.landing.unpacked()

    def next_step(self) -> Step | None:
        """The next round, or None when the shard is done: it has its count, or it stops short (`landing.short_by`
        and `landing.budget_exhausted` say so)."""
        need = self.shard.count - self.admitted
        if need <= 0:
            return None
        if self.landing.budget_exhausted or self.budget is not None and self.budget.exhausted:
            return self._short(need, budget_exhausted=True)
        spares = pool.count(self.spares)
        if not self.rounds:
            draw = initial_count(self.shard)
        elif spares >= need:
            draw = 0
        else:
            draw = max(0, min(need - spares + 2, instance_limit(self.shard) - self.next_index))
        if not draw and not spares:
            return self._short(need)
        self.rounds += 1
        step = Step(self.rounds, self.next_index, draw, need)
        self.next_index += draw
        return step

    def add(self, validated: Validated) -> None:
        """A round's validation: its environments, attempts and calls join the shard's; its spares wait for the next."""
        self.landing.parts.append(validated.result)
        self.admitted += validated.admitted
        self.landing.budget_exhausted = self.landing.budget_exhausted or validated.budget_exhausted
        self.spares = validated.spares

    def _short(self, need: int, budget_exhausted: bool = False) -> None:
        self.landing.short_by = need
        self.landing.budget_exhausted = budget_exhausted
        self.spares = []
        return None


class StageTotals:
    """What a run's stages did, added up as they complete (per stage name), each stage's counts also settled into the
    followed progress hub (tasks.progress): the flow's, and run_shard's, one account of a run."""

    def __init__(self) -> None:
        self.by_stage: dict[str, StageCounts] = {}

    def add(self, shard_key: str, step: Step, stage: str, counts: StageCounts) -> None:
        self.by_stage[stage] = self.by_stage.get(stage, StageCounts()) + counts
        progress.settle(progress.stage_key(shard_key, step.number, stage), counts)

    @property
    def total(self) -> StageCounts:
        return sum(self.by_stage.values(), StageCounts())


def run_shard(shard, budget: CostBudget | None = None, totals: StageTotals | None = None) -> ShardResult:
    """The shard's rounds, each stage's body called in turn in this process (no Prefect): what the generate flow
    computes for it, with or without the worker processes of tasks.pool."""
    rounds, totals = ShardRounds(shard, budget), totals or StageTotals()

    def counted(stage: str, output):
        totals.add(shard.key, step, stage, output.counts)
        return output

    while (step := rounds.next_step()) is not None:
        solved = None
        if step.draw:
            sampled = counted("sample", sample_stage(shard, step))
            solved = counted("solve", solve_stage(shard, step, sampled))
        rendered = counted("render", render_stage(shard, step, solved, rounds.spares, budget))
        rounds.add(counted("validate", validate_stage(shard, step, rendered, budget)))
    return rounds.result
