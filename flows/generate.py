"""generate: plan -> rounds of (sample -> solve -> render -> validate) per shard -> land -> commit. Wiring only.

Each round's stages are Prefect tasks; when a shard's validation completes short of its count, the flow submits
the shard's next round (tasks.rounds decides what it draws), and once the shard is done, its landing. Every stage
returns its counts with its result (tasks.common.StageCounts): the flow adds them up and settles them into the
progress bar's hub as the stages complete. The LLM budget is made here, once per run, and handed to the stages
that render.
"""

from __future__ import annotations

import datetime as dt
import queue
import uuid

from prefect import flow
from prefect.context import FlowRunContext
from prefect.runtime import flow_run
from prefect.task_runners import ThreadPoolTaskRunner
from prefect.utilities.annotations import opaque

from schemas.shard import DEFAULT_SPLIT
from setter.budget import CostBudget
from tasks import pool, progress
from tasks.commit import commit_shards, final_state, find_finished_shards, shard_failure
from tasks.land import land_shard
from tasks.plan import DEFAULT_SHARD_SIZE, plan, plan_total
from tasks.render import render_shard
from tasks.rounds import ShardRounds, StageTotals
from tasks.sample import sample_shard
from tasks.solve import solve_shard
from tasks.stage_cache import open_stage_cache
from tasks.validate import validate_shard

DEFAULT_WORKERS = 4
LANDING_THREADS = 2


@flow(name="generate", task_runner=ThreadPoolTaskRunner(max_workers=DEFAULT_WORKERS), log_prints=False)
def generate(date: str | None = None, count: int | None = None, families: str | None = None, split: str = DEFAULT_SPLIT,
             setter: str = "template", model: str | None = None, warehouse: str | None = None,
             shard_size: int = DEFAULT_SHARD_SIZE, plan_name: str | None = None, fallback_model: str | None = None,
             max_cost_usd: float | None = None, tier: str | None = None):
    """Generate `count` admitted environments (or a named plan such as "paper") and land them in the warehouse.

    With `max_cost_usd` the run stops asking the model once that much is spent and lands what was admitted. With
    `tier` (easy, medium, hard, frontier) every family draws from that tier's cells and only environments measured
    at it are admitted.
    A shard that still fails after its retries is left out; the others land and are committed, and the flow
    ends Failed with a message naming the shard and its reason (tasks.commit.final_state); its data is the
    run summary either way.
    """
    started = dt.datetime.now(dt.UTC)
    parameters = {"date": date, "count": plan_total(plan_name, count), "families": families, "split": split,
                  "setter": setter, "model": model, "fallback_model": fallback_model, "shard_size": shard_size,
                  "plan": plan_name, "max_cost_usd": max_cost_usd, "tier": tier}
    flow_run_id = flow_run.get_id()
    run_id = flow_run_id or uuid.uuid4().hex
    budget = None if max_cost_usd is None else CostBudget(max_cost_usd)  # this run's, never sent to a worker
    shards = plan(date, count, families, split, setter, model, shard_size, plan_name, fallback_model, tier)
    day = shards[0].date
    finished = find_finished_shards(warehouse, day)
    todo = [s for s in shards if s.key not in finished]
    skipped = sum(s.count for s in shards if s.key in finished)
    hub = progress.followed()
    if hub is not None and skipped:
        hub.add(admitted=skipped)  # shards committed by an earlier run count as delivered
    totals = StageTotals()
    # a shard lands as soon as it is done, on threads of its own: queued behind every other shard's stages on the
    # flow's runner, the first landing would come near the end of the run, and an interrupted run would keep nothing
    in_flight = shards_in_flight(FlowRunContext.get().task_runner)
    with ThreadPoolTaskRunner(max_workers=LANDING_THREADS) as landing_runner:
        landings, failures = run_rounds(todo, budget, warehouse, run_id, totals, landing_runner, in_flight)
        landed = _landed(todo, landings, failures)
    summary = commit_shards(warehouse, run_id, flow_run_id, day, {**parameters, "date": day}, landed, skipped,
                            [failures[s.key] for s in todo if s.key in failures], started, totals.by_stage)
    return final_state(summary)


def _landed(todo, landings: dict, failures: dict) -> list:
    """The landed shards in plan order; a landing that failed after its retries is added to `failures`."""
    landed = []
    for shard in todo:
        if shard.key in landings:
            future = landings[shard.key]
            future.wait()
            if future.state.is_completed():
                landed.append(future.result())
            else:  # the other shards still land; this one is named in the runs row and the flow's final state
                failures[shard.key] = shard_failure(shard.key, [("land", future)])
    return landed


def shards_in_flight(task_runner) -> int | None:
    """How many shards have a stage on the runner at once: one per thread of a thread runner, so that every thread
    has a stage whose inputs are ready (a stage submitted before its upstream finished would hold a thread waiting
    for it, and at the start one shard's chain held all four while one worker process worked); all of them on Dask,
    whose scheduler waits for inputs without holding a worker."""
    return task_runner._max_workers if isinstance(task_runner, ThreadPoolTaskRunner) else None


def largest_first(todo: list) -> list:
    """The shards in the order they start: the largest first (plan order among equals), so that the last to finish
    are small ones and the workers finish together rather than one waiting on a big shard's last stage."""
    return sorted(todo, key=lambda shard: -shard.count)


def run_rounds(todo, budget: CostBudget | None, warehouse: str | None, run_id: str, totals: StageTotals,
               landing_runner: ThreadPoolTaskRunner, in_flight: int | None = None):
    """Run every shard's rounds, at most `in_flight` shards at a time (None: all), each stage submitted once the
    stage before it completed: as a shard's validation completes, its next round or its landing, and when a shard
    is done, the next shard's first round.

    Returns the landing futures and the failures (one line each), by shard key. A stage's counts are added to
    `totals` (and the progress hub) as it completes; a round whose stage failed after its retries fails its shard.
    """
    completed: queue.SimpleQueue = queue.SimpleQueue()
    landings, failures, running = {}, {}, 0
    waiting = iter(largest_first(todo))

    def submit(rounds: ShardRounds, step, stage: str, stages: list, future) -> None:
        nonlocal running
        running += 1
        stages.append((stage, future))
        future.add_done_callback(lambda done: completed.put((rounds, step, stage, done, stages)))

    def start_round(rounds: ShardRounds) -> bool:
        """The shard's next round's first stage; or, when the shard is done, its landing (False)."""
        shard, step = rounds.shard, rounds.next_step()
        if step is None:  # done: it has its count, or stops short (the result says why)
            parameters = {"warehouse": warehouse, "result": opaque(rounds.landing), "run_id": run_id}
            landings[shard.key] = landing_runner.submit(land_shard, parameters)
            return False
        if step.draw:
            submit(rounds, step, "sample", [], sample_shard.submit(shard, step))
        else:  # the spares the last round left suffice
            submit(rounds, step, "render", [], render_shard.submit(shard, step, None, opaque(rounds.spares), budget))
        return True

    def start_next_shard() -> None:
        for shard in waiting:
            if start_round(ShardRounds(shard, budget)):
                return

    for _ in range(len(todo) if in_flight is None else in_flight):
        start_next_shard()
    while running:
        rounds, step, stage, future, stages = completed.get()
        running -= 1
        future.wait()
        if not future.state.is_completed():  # failed after its retries: the shard's round stops here
            failures[rounds.shard.key] = shard_failure(rounds.shard.key, stages)
            start_next_shard()
            continue
        shard, output = rounds.shard, future.result()
        totals.add(shard.key, step, stage, output.counts)
        # opaque(): resolve the upstream result but do not walk into it; Prefect's default traversal of a shard's
        # hundreds of specs costs more than solving them
        if stage == "sample":
            submit(rounds, step, "solve", stages, solve_shard.submit(shard, step, opaque(future)))
        elif stage == "solve":
            submit(rounds, step, "render", stages,
                   render_shard.submit(shard, step, opaque(future), opaque(rounds.spares), budget))
        elif stage == "render":
            submit(rounds, step, "validate", stages, validate_shard.submit(shard, step, opaque(future), budget))
        else:
            rounds.add(output)
            if not start_round(rounds):
                start_next_shard()
    return landings, failures


def run_summary(state) -> dict:
    """The run summary a finished generate flow carries, also when its state is Failed because a shard failed
    (the rest landed and was committed); a flow that crashed before its commit raises its error."""
    summary = state.result(raise_on_failure=False)
    if not isinstance(summary, dict):
        state.result()  # raises the flow's own error
        raise RuntimeError(f"the generate flow ended {state.name} without a run summary: {state.message}")
    return summary


def run_generate_state(workers: int | None = None, runner: str = "threads", dask_address: str | None = None,
                       processes: int | None = None, stage_cache: str | None = None, **parameters):
    """Run the flow on `runner` and return its final state: threads bounded to `workers` (default 4), their CPU work
    spread over `processes` worker processes (tasks.pool; default: pool.processes_for), or with Dask
    (flows.runners) the same threads, two per Dask worker, their CPU work sent to a local cluster of `workers`
    processes (default 2) or to the scheduler at `dask_address`.

    The stage results are kept in Prefect's local result storage, or in `stage_cache` (else $VHD_STAGE_CACHE): an
    s3://bucket/prefix, a folder or a storage block that another process or host names to take the finished stages
    from (tasks.stage_cache.open_stage_cache).

    The progress hub followed here (tasks.progress.following, e.g. cli.progress's bar) counts the run as it goes."""
    from flows.runners import DEFAULT_DASK_WORKERS, check_runner, connect_dask, make_task_runner, stage_threads
    from warehouse.preflight import check_writable

    check_writable(parameters.get("warehouse"))  # a bad warehouse fails now in one line, not at landing
    from setter import make_setter  # --model with the template setter is refused, not written into the rows

    make_setter(parameters.get("setter", "template"), parameters.get("model"), parameters.get("fallback_model"))
    check_runner(runner, dask_address, parameters.get("max_cost_usd"))
    cache_options = open_stage_cache(stage_cache)  # and results older than $VHD_STAGE_CACHE_DAYS pruned
    total = plan_total(parameters.get("plan_name"), parameters.get("count"))
    if runner == "dask":  # the pool is the cluster; the stage threads, two per Dask worker, stay here
        dask_workers = connect_dask(workers or DEFAULT_DASK_WORKERS, dask_address)
        pool.use_workers(dask_workers)
        task_runner = make_task_runner("threads", stage_threads(dask_workers.worker_count()))
    else:
        task_runner = make_task_runner(runner, workers or DEFAULT_WORKERS)
        pool.configure(pool.processes_for(processes, total))
    try:
        return generate.with_options(task_runner=task_runner, **cache_options)(**parameters, return_state=True)
    finally:
        pool.shutdown()


def run_generate(workers: int | None = None, runner: str = "threads", dask_address: str | None = None,
                 processes: int | None = None, stage_cache: str | None = None, **parameters) -> dict:
    """Run the flow (see run_generate_state) and return the run summary."""
    return run_summary(run_generate_state(workers, runner, dask_address, processes, stage_cache, **parameters))
