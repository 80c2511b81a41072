"""generate: plan -> (sample -> solve -> render -> validate -> land) per shard -> commit. Wiring only."""

from __future__ import annotations

import datetime as dt
import uuid

from prefect import flow
from prefect.runtime import flow_run
from prefect.task_runners import ThreadPoolTaskRunner
from prefect.utilities.annotations import opaque

from setter.budget import BUDGET
from tasks.commit import commit_shards, find_finished_shards
from tasks.land import land_shard
from tasks.plan import DEFAULT_SHARD_SIZE, plan, plan_total
from tasks.render import render_shard
from tasks.sample import sample_shard
from tasks.solve import solve_shard
from tasks.validate import validate_shard

DEFAULT_WORKERS = 4


@flow(name="generate", task_runner=ThreadPoolTaskRunner(max_workers=DEFAULT_WORKERS), log_prints=False)
def generate(date: str | None = None, count: int | None = None, families: str | None = None, split: str = "train",
             setter: str = "template", model: str | None = None, warehouse: str | None = None,
             shard_size: int = DEFAULT_SHARD_SIZE, plan_name: str | None = None, fallback_model: str | None = None,
             max_cost_usd: float | None = None) -> dict:
    """Generate `count` admitted environments (or a named plan such as "paper") and land them in the warehouse.

    With `max_cost_usd` the run stops asking the model once that much is spent and lands what was admitted.
    """
    started = dt.datetime.now(dt.UTC)
    parameters = {"date": date, "count": plan_total(plan_name, count), "families": families, "split": split,
                  "setter": setter, "model": model, "fallback_model": fallback_model, "shard_size": shard_size,
                  "plan": plan_name, "max_cost_usd": max_cost_usd}
    flow_run_id = flow_run.get_id()
    run_id = flow_run_id or uuid.uuid4().hex
    BUDGET.start(max_cost_usd)
    shards = plan(date, count, families, split, setter, model, shard_size, plan_name, fallback_model)
    day = shards[0].date
    finished = find_finished_shards(warehouse, day)
    todo = [s for s in shards if s.key not in finished]
    futures = []
    for shard in todo:
        # opaque(): resolve the upstream result but do not walk into it; Prefect's default traversal of
        # a shard's hundreds of specs costs more than solving them.
        sampled = sample_shard.submit(shard)
        solved = solve_shard.submit(shard, opaque(sampled))
        rendered = render_shard.submit(shard, opaque(solved))
        validated = validate_shard.submit(shard, opaque(rendered))
        futures.append((shard, land_shard.submit(warehouse, opaque(validated), run_id)))
    landed, failures = [], []
    for shard, future in futures:
        future.wait()
        if future.state.is_completed():
            landed.append(future.result())
        else:
            failures.append(f"{shard.key}: {future.state.message}")
    skipped = sum(s.count for s in shards if s.key in finished)
    return commit_shards(warehouse, run_id, flow_run_id, day, {**parameters, "date": day}, landed, skipped,
                         failures, started)


def run_generate(workers: int | None = None, runner: str = "threads", dask_address: str | None = None,
                 **parameters) -> dict:
    """Run the flow on `runner`: threads bounded to `workers` (default 4), or Dask (flows.runners): a local
    cluster of `workers` processes (default 2), or the scheduler at `dask_address`."""
    from flows.runners import DEFAULT_DASK_WORKERS, check_runner, make_task_runner

    check_runner(runner, dask_address, parameters.get("max_cost_usd"))
    if workers is None:
        workers = DEFAULT_DASK_WORKERS if runner == "dask" else DEFAULT_WORKERS
    summary = generate.with_options(task_runner=make_task_runner(runner, workers, dask_address))(**parameters)
    if runner == "dask":  # the stages counted progress in the worker processes; bring this process's bar up to date
        from tasks.progress import HUB

        HUB.add(admitted=max(0, summary["admitted"] - HUB.counters.admitted),
                rejected=max(0, summary["rejected"] - HUB.counters.rejected),
                cost_usd=max(0.0, (summary["llm_cost_usd"] or 0.0) - HUB.counters.cost_usd))
    return summary
