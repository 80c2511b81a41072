"""land: a shard's admitted environments, attempts and LLM calls as validated, atomically written Parquet."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass, field

import pandas as pd
from prefect import task

import mechanisms
from envs.scoring import score
from mechanisms.base import ONLINE_BASELINE
from schemas.envspec import Difficulty
from tasks import pool
from tasks.common import WRITE_OPTIONS, cpu_hour_usd, shard_run_name
from tasks.validate import ShardParts, ShardResult, checks_json
from warehouse.landing import land
from warehouse.location import resolve_warehouse


@dataclass
class LandedShard:
    shard_key: str
    files: dict[str, list[str]] = field(default_factory=dict)
    admitted: int = 0
    rejected: int = 0
    short_by: int = 0
    budget_exhausted: bool = False
    llm_cost_usd: float | None = 0.0
    compute_seconds: float = 0.0
    family: str | None = None


def sum_cost(costs: list[float | None]) -> float | None:
    """The sum of known costs; unknown if any call's cost is unknown (never silently 0)."""
    if any(c is None for c in costs):
        return None
    return float(sum(costs))


def difficulty_columns(difficulty: Difficulty | None) -> dict[str, object]:
    """The difficulty measures as columns (null for an environment without them)."""
    if difficulty is None:
        return {"tier": None, "informed_score": None, "heuristic_score": None, "naive_score": None,
                "skill_gap": None, "facts_fit": None}
    return {"tier": difficulty.tier, "informed_score": difficulty.informed_score,
            "heuristic_score": difficulty.heuristic_score, "naive_score": difficulty.naive_score,
            "skill_gap": difficulty.skill_gap, "facts_fit": difficulty.facts_fit}


def environment_rows(result: ShardResult, run_id: str, now: dt.datetime) -> pd.DataFrame:
    rows = []
    for env in result.admitted:
        spec = env.spec
        env_id, spec_json = spec.identified()
        llm_cost = sum_cost([c.cost_usd for c in env.calls])
        compute_cost = env.compute_seconds * cpu_hour_usd() / 3600.0
        params_blob = json.dumps({"family": spec.family, "params": spec.params}, sort_keys=True).encode()
        ref = spec.reference
        online_u = ref.baselines.get(ONLINE_BASELINE)
        rows.append({
            "env_id": env_id, "family": spec.family, "family_group": mechanisms.get(spec.family).group,
            "version": spec.version, "split": spec.split,
            "modes": "written,revealed,hidden", "size": spec.size, "horizon": spec.horizon,
            "domain": spec.rendering.domain, "passage_id": spec.rendering.passage_id, "title": spec.rendering.title,
            "setter": spec.setter, "model": spec.model, "tool_count": len(spec.rendering.tools),
            "turn_budget": spec.turn_budget, "u_star": spec.reference.u_star, "u0": spec.reference.u0,
            "u_idle": spec.reference.u_idle, "online_u": online_u,
            "online_score": None if online_u is None else score(online_u, ref.u0, ref.u_star),
            **difficulty_columns(spec.difficulty),
            "attempts": env.attempts, "llm_cost_usd": llm_cost,
            "compute_seconds": env.compute_seconds,
            "cost_usd": None if llm_cost is None else llm_cost + compute_cost,
            "params_hash": hashlib.sha256(params_blob).hexdigest()[:16],
            "tool_interface": spec.rendering.tool_interface(), "story": spec.rendering.story(),
            "spec_json": spec_json,
            "shard_key": result.shard.key, "run_id": run_id, "created_at": now,
        })
    return pd.DataFrame(rows)


def attempt_rows(result: ShardResult, run_id: str, now: dt.datetime) -> pd.DataFrame:
    shard = result.shard
    return pd.DataFrame([{
        "attempt_id": f"{shard.key}-{a.index}-{a.attempt}", "run_id": run_id, "shard_key": shard.key,
        "family": shard.family, "instance_key": a.instance_key, "attempt": a.attempt, "setter": shard.setter,
        "model": shard.model, "admitted": a.admitted, "reason": a.reason, "env_id": a.env_id,
        "checks_json": checks_json(a.checks), "seconds": a.seconds, "created_at": now,
    } for a in result.attempts])


def call_rows(result: ShardResult, run_id: str, now: dt.datetime) -> pd.DataFrame:
    return pd.DataFrame([{**call.model_dump(), "run_id": run_id, "shard_key": result.shard.key, "created_at": now}
                         for call in result.calls])


def write_shard(warehouse: str, result: ShardResult, run_id: str) -> LandedShard:
    """Validate and write the shard's three tables; file names derive from the shard key, so a retry overwrites."""
    wh = resolve_warehouse(warehouse)
    now = dt.datetime.now(dt.UTC)
    shard = result.shard
    landed = LandedShard(shard.key, admitted=len(result.admitted),
                         rejected=sum(1 for a in result.attempts if not a.admitted), short_by=result.short_by,
                         budget_exhausted=result.budget_exhausted,
                         llm_cost_usd=sum_cost([c.cost_usd for c in result.calls]),
                         compute_seconds=sum(e.compute_seconds for e in result.admitted), family=shard.family)
    frames = {"environments": environment_rows(result, run_id, now), "attempts": attempt_rows(result, run_id, now),
              "llm_calls": call_rows(result, run_id, now)}
    for table, frame in frames.items():
        if len(frame):
            landed.files[table] = [land(wh, table, frame, shard.date, shard.key)]
    return landed


def land_result(warehouse: str, result: ShardResult | ShardParts, run_id: str) -> LandedShard:
    """Write the shard's tables (in a worker process when the pool has any, which reads its rounds' packed parts)."""
    return pool.call_staged(write_shard, warehouse, result, run_id)


land_shard = task(name="land", task_run_name=shard_run_name("land"), **WRITE_OPTIONS)(land_result)
