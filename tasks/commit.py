"""commit: land the run's row and the run-level commit marker that makes its shards visible."""

from __future__ import annotations

import datetime as dt
import json
import time

import pandas as pd
from prefect import task
from prefect.states import Completed, Failed, State

from tasks.common import WRITE_OPTIONS, StageCounts, cpu_hour_usd
from tasks.land import LandedShard, sum_cost
from warehouse.commits import commit_lock
from warehouse.landing import commit_run, committed_shards, land
from warehouse.location import resolve_warehouse

TRIES_WAIT_SECONDS = 30.0
RUN_TABLE_KEY = "vhd-generate-run"  # the table artifact of every generate run (the UI keeps its history)


def shard_failure(shard_key: str, stages: list[tuple[str, object]]) -> str:
    """One line for a shard that did not land: the first stage that failed, after how many tries, and why."""
    for stage, future in stages:
        state = future.state
        if state.is_failed() or state.is_crashed():
            error = state.result(raise_on_failure=False)
            reason = f"{type(error).__name__}: {error}" if isinstance(error, BaseException) else state.message
            return f"{shard_key}: {stage} failed{_tries(future)}: {reason}"
    return f"{shard_key}: {stages[-1][0]} ended {stages[-1][1].state.name}: {stages[-1][1].state.message}"


def _tries(future, wait_seconds: float = TRIES_WAIT_SECONDS) -> str:
    """' after N tries', as the API counts them, or '' when it cannot tell.

    Task runs and their states reach the API as events, a moment after the task ends here (on a loaded host the run
    itself can still be unknown to the API): the count is read once the API has the run's final state, so that a
    retry still in flight is not missed.
    """
    try:
        from prefect.client.orchestration import get_client

        deadline = time.monotonic() + wait_seconds
        with get_client(sync_client=True) as client:
            while (run := _finished_task_run(client, future.task_run_id)) is None:
                if time.monotonic() > deadline:
                    return ""
                time.sleep(0.2)
        runs = run.run_count
    except Exception:  # noqa: BLE001 - the count is a detail of the message, never a reason to lose the failure
        return ""
    return f" after {runs} tr{'y' if runs == 1 else 'ies'}"


def _finished_task_run(client, task_run_id):
    """The task run as the API has it once its state there is final; None while the API has not yet heard of the run
    or of its final state (their events are in flight)."""
    from prefect.exceptions import ObjectNotFound

    try:
        run = client.read_task_run(task_run_id)
    except ObjectNotFound:
        return None
    return run if run.state is not None and run.state.is_final() else None


def final_state(summary: dict) -> State:
    """The generate flow's final Prefect state, carrying the run summary as its data.

    A failed shard makes the flow Failed (with the shard and its reason in the message) although the other shards
    landed and were committed: Prefect's notifications and the deployment's run history key on Failed, and a night
    with a broken family needs someone to look. Stopped by the cost cap or short of instances is Completed with the
    name "Partial": nothing is broken, and re-running the date finishes it.
    """
    failed = summary.get("failed_shards") or []
    if failed:
        landed = summary["landed_shards"]
        message = (f"{len(failed)} shard(s) failed after retries ({landed} other shard(s) landed and were committed, "
                   f"run status {summary['status']}): {summary['error']}")
        return Failed(message=message[:2000], data=summary)
    if summary["status"] == "partial":
        return Completed(name="Partial", message=summary["error"], data=summary)
    return Completed(message=f"{summary['admitted']} admitted ({summary['new_environments']} new)", data=summary)


def finished_shard_keys(warehouse: str | None, date: str) -> set[str]:
    """Shard keys of that date already committed by some run: a re-run skips them."""
    return committed_shards(resolve_warehouse(warehouse), date)


def commit(warehouse: str | None, run_id: str, flow_run_id: str | None, date: str, parameters: dict,
           landed: list[LandedShard], skipped_admitted: int, failures: list[str], started_at: dt.datetime,
           stages: dict[str, StageCounts] | None = None) -> dict:
    """Write the runs row and the commit marker; returns the run summary.

    `failures` are one line per shard that did not land, starting with its key ("KEY: stage failed ...").
    `stages`: what the run's stages did, added up per stage (tasks.rounds.StageTotals), in the summary as
    `stage_counts` (the runs row keeps its own figures, from what landed).
    """
    wh = resolve_warehouse(warehouse)
    with commit_lock(wh):
        # what this run itself makes visible: not the shards another run of the date committed meanwhile (two
        # identical runs at once land the same shards; the one that commits second adds nothing new)
        already = committed_shards(wh, date)
        new = sum(s.admitted for s in landed if s.shard_key not in already)
        result = _commit(wh, run_id, flow_run_id, date, parameters, landed, skipped_admitted, failures, started_at,
                         stages, new)
    publish_run_table(result, landed, skipped_admitted)
    return result


def _commit(wh, run_id: str, flow_run_id: str | None, date: str, parameters: dict, landed: list[LandedShard],
            skipped_admitted: int, failures: list[str], started_at: dt.datetime,
            stages: dict[str, StageCounts] | None, new: int) -> dict:
    finished = dt.datetime.now(dt.UTC)
    llm_cost = sum_cost([s.llm_cost_usd for s in landed])
    compute = sum(s.compute_seconds for s in landed)
    # a shard that ran out of instances before reaching its count (every instance rejected): say so
    short = [f"{s.shard_key}: {s.short_by} environment(s) short (see its attempts)" for s in landed
             if s.short_by and not s.budget_exhausted]
    unfunded = sum(s.short_by for s in landed if s.budget_exhausted)
    if unfunded:
        short.insert(0, f"the LLM budget (--max-cost-usd) was reached: {unfunded} environment(s) not generated")
    row = {
        "run_id": run_id, "flow_run_id": flow_run_id, "run_date": date, "started_at": started_at,
        "finished_at": finished, "parameters_json": json.dumps(parameters, sort_keys=True, default=str),
        "requested": int(parameters.get("count", 0)),
        "admitted": sum(s.admitted for s in landed) + skipped_admitted,
        "rejected": sum(s.rejected for s in landed), "new_environments": new, "llm_cost_usd": llm_cost,
        "compute_seconds": compute,
        "cost_usd": None if llm_cost is None else llm_cost + compute * cpu_hour_usd() / 3600.0,
        "wall_seconds": (finished - started_at).total_seconds(),
        "status": "failed" if failures and not landed else ("partial" if failures or short else "completed"),
        "error": "; ".join([*failures, *short])[:2000] or None,
    }
    files: dict[str, list[str]] = {}
    for shard in landed:
        for table, paths in shard.files.items():
            files.setdefault(table, []).extend(paths)
    files["runs"] = [land(wh, "runs", pd.DataFrame([row]), date, f"run-{run_id}")]
    summary = {k: v for k, v in row.items() if k != "parameters_json"}
    summary["incomplete_shards"] = sorted(s.shard_key for s in landed if s.short_by)  # a re-run redoes them
    commit_run(wh, run_id, date, files, summary)
    result = {**row, "warehouse": wh.url, "landed_shards": len(landed),
              "failed_shards": [failure.split(":", 1)[0] for failure in failures],
              "stage_counts": {stage: counts.amounts() for stage, counts in (stages or {}).items()}}
    return result


def family_table(landed: list[LandedShard]) -> list[dict]:
    """What the run landed, per family and in total: admitted environments, rejected attempts, LLM USD (the string
    "unknown" when any call's cost is unknown, never 0) and compute seconds of the admitted environments."""
    by_family: dict[str, list[LandedShard]] = {}
    for shard in landed:
        by_family.setdefault(shard.family or shard.shard_key.split("-", 1)[0], []).append(shard)
    return [_table_row(family, shards) for family, shards in sorted(by_family.items())] + [_table_row("total", landed)]


def _table_row(family: str, shards: list[LandedShard]) -> dict:
    cost = sum_cost([s.llm_cost_usd for s in shards])
    return {"family": family, "admitted": sum(s.admitted for s in shards), "rejected": sum(s.rejected for s in shards),
            "llm_usd": "unknown" if cost is None else round(cost, 8),
            "compute_seconds": round(sum(s.compute_seconds for s in shards), 3)}


def run_table_description(summary: dict, skipped_admitted: int) -> str:
    """The table artifact's description (Markdown): the run, its date and status, and what the rows leave out."""
    cost = summary["llm_cost_usd"]
    lines = [f"Run `{summary['run_id']}` of {summary['run_date']}: **{summary['status']}**, "
             f"{summary['admitted']} admitted ({summary['new_environments']} new), {summary['rejected']} rejected "
             f"attempts, LLM {'unknown' if cost is None else f'${cost:.4f}'}, {summary['wall_seconds']:.1f} s wall; "
             f"warehouse `{summary['warehouse']}`."]
    if skipped_admitted:
        lines.append(f"{skipped_admitted} environment(s) of shards committed by an earlier run of this date were "
                     "skipped (not in the rows).")
    if summary["error"]:
        lines.append(f"Problems: {summary['error']}")
    return "\n\n".join(lines)


def publish_run_table(summary: dict, landed: list[LandedShard], skipped_admitted: int) -> None:
    """The run's per-family table as a Prefect table artifact of the current flow run (key RUN_TABLE_KEY).

    Only inside a Prefect run (a plain call of `commit` has no run to show it on). The run is committed by then, so a
    failure to create it is a warning, never a reason to fail or retry the commit.
    """
    from prefect.context import FlowRunContext, TaskRunContext

    if FlowRunContext.get() is None and TaskRunContext.get() is None:
        return
    from prefect.artifacts import create_table_artifact
    from prefect.logging import get_run_logger

    try:
        create_table_artifact(family_table(landed), key=RUN_TABLE_KEY,
                              description=run_table_description(summary, skipped_admitted))
    except Exception as error:  # noqa: BLE001 - the data is committed; the artifact only shows it
        get_run_logger().warning("the run's table artifact was not created: %s: %s", type(error).__name__, error)


commit_shards = task(name="commit", task_run_name="commit", **WRITE_OPTIONS)(commit)
find_finished_shards = task(name="find-finished-shards", task_run_name="find-finished-shards",
                            **WRITE_OPTIONS)(finished_shard_keys)
