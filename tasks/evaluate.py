"""evaluate: select environments, play one episode per (environment, mode) as a task, land the rows, commit."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pandas as pd
from prefect import task
from prefect.cache_policies import NO_CACHE

from envs.catalog import select_specs
from evaluation.episodes import play_episode
from evaluation.llm_agent import AgentConfig
from schemas.envspec import EnvSpec
from tasks.common import retry_transient
from warehouse.landing import commit_run, land
from warehouse.location import resolve_warehouse


@task(name="select-environments", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=1,
      retry_condition_fn=retry_transient)
def select_environments(warehouse: str | None, where: str, limit: int | None, seed: int = 0) -> list[str]:
    """The spec JSON of every environment the predicate selects, or of a seeded sample of `limit` of them
    (stratified by family, the same for one seed; read-only query path)."""
    return [spec.model_dump_json() for spec in select_specs(where, limit, resolve_warehouse(warehouse), seed)]


@task(name="play-episode", cache_policy=NO_CACHE, retries=2, retry_delay_seconds=1,
      retry_condition_fn=retry_transient)
def play_episode_task(spec_json: str, mode: str, agent: str, eval_run_id: str, seed: int,
                      config: dict[str, Any] | None) -> dict[str, Any]:
    """One episode's evaluations row; model errors are retried inside and recorded in the row."""
    spec = EnvSpec.model_validate_json(spec_json)
    return play_episode(spec, mode, agent, eval_run_id, seed, AgentConfig(**config) if config else None)


@task(name="land-evaluations", cache_policy=NO_CACHE, retries=3, retry_delay_seconds=1,
      retry_condition_fn=retry_transient)
def land_evaluations(warehouse: str | None, rows: list[dict[str, Any]], eval_run_id: str, date: str,
                     summary: dict[str, Any]) -> str:
    """Land the run's rows as one file of `evaluations` (date partition: the eval date) and commit it."""
    wh = resolve_warehouse(warehouse)
    path = land(wh, "evaluations", pd.DataFrame(rows), date, eval_run_id)
    commit_run(wh, eval_run_id, date, {"evaluations": [path]}, summary)
    return path


def eval_date() -> str:
    return dt.datetime.now(dt.UTC).date().isoformat()
