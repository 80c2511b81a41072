"""generate: plan -> (sample -> solve -> render -> validate -> land) per shard -> commit. Wiring only."""

from __future__ import annotations

import datetime as dt
import uuid

from prefect import flow
from prefect.runtime import flow_run
from prefect.task_runners import ThreadPoolTaskRunner
from prefect.utilities.annotations import opaque

from setter.budget import BUDGET
from tasks import pool
from tasks.commit import commit_shards, final_state, find_finished_shards, shard_failure
from tasks.land import land_shard
from tasks.plan import DEFAULT_SHARD_SIZE, plan, plan_total
from tasks.render import render_shard
from tasks.sample import sample_shard
from tasks.solve import forget_set_aside, solve_shard
from tasks.validate import validate_shard

DEFAULT_WORKERS = 4
POOL_MIN_ENVIRONMENTS = 200


@flow(name="generate", task_runner=ThreadPoolTaskRunner(max_workers=DEFAULT_WORKERS), log_prints=False)
def generate(date: str | None = None, count: int | None = None, families: str | None = None, split: str = "train",
             setter: str = "template", model: str | None = None, warehouse: str | None = None,
             shard_size: int = DEFAULT_SHARD_SIZE, plan_name: str | None = None, fallback_model: str | None = None,
             max_cost_usd: float | None = None, difficulty: str | None = None):
    """Generate `count` admitted environments (or a named plan such as "paper") and land them in the warehouse.

    With `max_cost_usd` the run stops asking the model once that much is spent and lands what was admitted.
    A shard that still fails after its retries is left out; the others land and are committed, and the flow
    ends Failed with a message naming the shard and its reason (tasks.commit.final_state); its data is the
    run summary either way.
    """
    started = dt.datetime.now(dt.UTC)
    parameters = {"date": date, "count": plan_total(plan_name, count), "families": families, "split": split,
                  "setter": setter, "model": model, "fallback_model": fallback_model, "shard_size": shard_size,
                  "plan": plan_name, "max_cost_usd": max_cost_usd, "difficulty": difficulty}
    flow_run_id = flow_run.get_id()
    run_id = flow_run_id or uuid.uuid4().hex
    BUDGET.start(max_cost_usd)
    shards = plan(date, count, families, split, setter, model, shard_size, plan_name, fallback_model, difficulty)
    day = shards[0].date
    finished = find_finished_shards(warehouse, day)
    todo = [s for s in shards if s.key not in finished]
    chains = []
    for shard in todo:
        # opaque(): resolve the upstream result but do not walk into it; Prefect's default traversal of
        # a shard's hundreds of specs costs more than solving them.
        sampled = sample_shard.submit(shard)
        solved = solve_shard.submit(shard, opaque(sampled))
        rendered = render_shard.submit(shard, opaque(solved))
        validated = validate_shard.submit(shard, opaque(rendered))
        landed_future = land_shard.submit(warehouse, opaque(validated), run_id)
        chains.append((shard, [("sample", sampled), ("solve", solved), ("render", rendered),
                               ("validate", validated), ("land", landed_future)]))
    landed, failures = [], []
    for shard, stages in chains:
        stages[-1][1].wait()
        if stages[-1][1].state.is_completed():
            landed.append(stages[-1][1].result())
        else:  # the other shards still land; this one is named in the runs row and the flow's final state
            failures.append(shard_failure(shard.key, stages))
    skipped = sum(s.count for s in shards if s.key in finished)
    summary = commit_shards(warehouse, run_id, flow_run_id, day, {**parameters, "date": day}, landed, skipped,
                            failures, started)
    return final_state(summary)


def run_summary(state) -> dict:
    """The run summary a finished generate flow carries, also when its state is Failed because a shard failed
    (the rest landed and was committed); a flow that crashed before its commit raises its error."""
    summary = state.result(raise_on_failure=False)
    if not isinstance(summary, dict):
        state.result()  # raises the flow's own error
        raise RuntimeError(f"the generate flow ended {state.name} without a run summary: {state.message}")
    return summary


def stage_processes(processes: int | None, total: int) -> int:
    """Worker processes for the stages' CPU work: `processes` if given, else one per core for a run of at least
    POOL_MIN_ENVIRONMENTS environments (a smaller run is done before the workers would have started)."""
    if processes is not None:
        return processes
    return pool.default_processes() if total >= POOL_MIN_ENVIRONMENTS else 0


def run_generate_state(workers: int | None = None, runner: str = "threads", dask_address: str | None = None,
                       processes: int | None = None, **parameters):
    """Run the flow on `runner` and return its final state: threads bounded to `workers` (default 4), their CPU work
    spread over `processes` worker processes (tasks.pool; default: see stage_processes), or Dask (flows.runners): a
    local cluster of `workers` processes (default 2), or the scheduler at `dask_address`."""
    from flows.runners import DEFAULT_DASK_WORKERS, check_runner, make_task_runner
    from warehouse.preflight import check_writable

    check_writable(parameters.get("warehouse"))  # a bad warehouse fails now in one line, not at landing
    from setter import make_setter  # --model with the template setter is refused, not written into the rows

    make_setter(parameters.get("setter", "template"), parameters.get("model"), parameters.get("fallback_model"))
    check_runner(runner, dask_address, parameters.get("max_cost_usd"))
    if workers is None:
        workers = DEFAULT_DASK_WORKERS if runner == "dask" else DEFAULT_WORKERS
    task_runner = make_task_runner(runner, workers, dask_address)
    total = plan_total(parameters.get("plan_name"), parameters.get("count"))
    pool.configure(stage_processes(processes, total) if runner == "threads" else 0)
    try:
        return generate.with_options(task_runner=task_runner)(**parameters, return_state=True)
    finally:
        pool.shutdown()
        forget_set_aside()


def run_generate(workers: int | None = None, runner: str = "threads", dask_address: str | None = None,
                 processes: int | None = None, **parameters) -> dict:
    """Run the flow (see run_generate_state) and return the run summary."""
    summary = run_summary(run_generate_state(workers, runner, dask_address, processes, **parameters))
    if runner == "dask":  # the stages counted progress in the worker processes; bring this process's bar up to date
        from tasks.progress import HUB

        HUB.add(admitted=max(0, summary["admitted"] - HUB.counters.admitted),
                rejected=max(0, summary["rejected"] - HUB.counters.rejected),
                cost_usd=max(0.0, (summary["llm_cost_usd"] or 0.0) - HUB.counters.cost_usd))
    return summary
