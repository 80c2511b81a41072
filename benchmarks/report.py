"""The dataset report over a catalog of 1,000,000 environment rows: how long `vhd report` takes, and where.

    .venv/bin/python benchmarks/report.py [--rows 1000000] [--nights 100]

First a seed: 130 real environments (10 per family) through the stage functions with the template setter, so
that titles, stories, tool interfaces, reference values and spec JSON (about 20 KB each) are real. Then the
catalog: `--nights` nights of synthetic rows resampled from the seed, each row a new environment (its own id and
instance hash, jittered values) landed through the real landing path (pandera validation, sorted Parquet,
atomic files, one commit marker per night), with what a litellm setter would leave beside it: about 1.4
attempts per environment (the rejected ones with the checks' reasons) and one priced `llm_calls` row per
attempt, plus a `runs` row per night. Then the whole report (every named query on one DuckDB connection, the
narrative measures with the sentence model, the charts and the HTML) is built in process, and once more as the
`vhd report` command end to end. The mark: under 10 seconds at 1,000,000 environment rows.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")

MODELS = ["openai/gpt-4o-mini", "anthropic/claude-haiku-4-5"]
REASONS = ["C2: u0 outside the family band (position 0.97 > 0.9)", "C3: replay gave u = 412.5, u* = 431.0",
           "leak: the hidden-mode text shows the parameter 37", "default_replay: the default reached 80, u0 is 85",
           "executes: TypeError: tool submit_plan raised on its arguments"]


def seed_rows(root: Path) -> pd.DataFrame:
    """Real environment rows: 10 per family through the stage functions (template setter, no network)."""
    from tasks.commit import commit
    from tasks.land import land_result
    from tasks.plan import plan_shards
    from tasks.rounds import run_shard
    from warehouse.catalog import run_query
    from warehouse.location import resolve_warehouse

    warehouse = str(root / "seed")
    shards = plan_shards("2026-01-01", 130, None)
    begun = dt.datetime.now(dt.UTC)
    landed = [land_result(warehouse, run_shard(shard), "seed") for shard in shards]
    commit(warehouse, "seed", None, "2026-01-01", {"count": 130}, landed, 0, [], begun)
    return run_query(resolve_warehouse(warehouse), "SELECT * EXCLUDE (date) FROM environments").to_pandas()


def night_frames(seed: pd.DataFrame, rows: int, night: str, rng: np.random.Generator) -> dict[str, pd.DataFrame]:
    """One night's synthetic environments, attempts, llm_calls and runs rows, resampled from the seed."""
    run_id = f"night-{night}"
    now = pd.Timestamp(f"{night}T02:00:00Z")
    envs = seed.iloc[rng.integers(0, len(seed), rows)].reset_index(drop=True)
    hashes = [f"{h:016x}" for h in rng.integers(0, 2**63, rows, dtype=np.int64)]
    jitter = rng.uniform(0.9, 1.1, rows)
    tries = rng.choice([1, 2, 3], rows, p=[0.7, 0.2, 0.1])  # 1.4 attempts per admitted environment
    llm_per_try = rng.uniform(0.0004, 0.004, rows)
    envs = envs.assign(
        env_id=[f"{f}-{h}" for f, h in zip(envs.family, hashes, strict=True)], params_hash=hashes,
        u_star=envs.u_star * jitter, u0=envs.u0 * jitter, u_idle=envs.u_idle * jitter, setter="litellm",
        model=rng.choice(MODELS, rows), attempts=tries, llm_cost_usd=llm_per_try * tries,
        cost_usd=llm_per_try * tries + envs.compute_seconds * 0.05 / 3600, shard_key=run_id, run_id=run_id,
        created_at=now)
    instance = np.repeat(np.arange(rows), tries)
    attempt = np.concatenate([np.arange(1, k + 1) for k in tries])
    admitted = attempt == np.repeat(tries, tries)
    attempts = pd.DataFrame({
        "attempt_id": [f"{run_id}-{i}-{a}" for i, a in zip(instance, attempt, strict=True)], "run_id": run_id,
        "shard_key": run_id, "family": envs.family.to_numpy()[instance],
        "instance_key": [f"{run_id}-{i}" for i in instance], "attempt": attempt, "setter": "litellm",
        "model": envs.model.to_numpy()[instance], "admitted": admitted,
        "reason": np.where(admitted, None, rng.choice(REASONS, len(instance))),
        "env_id": np.where(admitted, envs.env_id.to_numpy()[instance], None),
        "checks_json": '{"structure": "ok"}', "seconds": rng.uniform(0.01, 0.3, len(instance)), "created_at": now})
    prompt = rng.integers(600, 1200, len(instance))
    completion = rng.integers(300, 700, len(instance))
    calls = pd.DataFrame({
        "call_id": attempts.attempt_id + "-render", "run_id": run_id, "shard_key": run_id,
        "instance_key": attempts.instance_key, "attempt": attempt, "stage": "render", "model": attempts.model,
        "prompt_tokens": prompt, "completion_tokens": completion, "cost_usd": (prompt * 0.2 + completion * 0.8) / 1e6,
        "cost_source": "provider", "latency_s": rng.uniform(0.5, 3.0, len(instance)), "cache_hit": False,
        "error": None, "created_at": now})
    runs = pd.DataFrame([{
        "run_id": run_id, "flow_run_id": None, "run_date": night, "started_at": now,
        "finished_at": now + pd.Timedelta(minutes=30), "parameters_json": json.dumps({"count": rows}),
        "requested": rows, "admitted": rows, "rejected": int((~admitted).sum()), "new_environments": rows,
        "llm_cost_usd": float(calls.cost_usd.sum()), "compute_seconds": float(envs.compute_seconds.sum()),
        "cost_usd": float(envs.cost_usd.sum()), "wall_seconds": 1800.0, "status": "completed", "error": None}])
    return {"environments": envs, "attempts": attempts, "llm_calls": calls, "runs": runs}


def build_catalog(wh, seed: pd.DataFrame, rows: int, nights: int) -> dict[str, int]:
    from warehouse.landing import commit_run, land

    rng = np.random.default_rng(7)
    counts: dict[str, int] = {}
    per_night = rows // nights
    for n in range(nights):
        night = (dt.date(2026, 1, 1) + dt.timedelta(days=n)).isoformat()
        frames = night_frames(seed, per_night + (rows % nights if n == nights - 1 else 0), night, rng)
        files = {table: [land(wh, table, frame, night, f"night-{night}")] for table, frame in frames.items()}
        commit_run(wh, f"night-{night}", night, files, {"benchmark": True})
        for table, frame in frames.items():
            counts[table] = counts.get(table, 0) + len(frame)
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000, help="environment rows (default 1,000,000)")
    parser.add_argument("--nights", type=int, default=100, help="nights they are spread over (default 100)")
    args = parser.parse_args()

    from reports.build import build_report
    from warehouse.location import resolve_warehouse

    root = Path(tempfile.mkdtemp(prefix="vhd-report-bench-"))
    try:
        started = time.perf_counter()
        seed = seed_rows(root)
        print(f"seed: {len(seed)} real environments of {seed.family.nunique()} families in "
              f"{time.perf_counter() - started:.1f} s (spec JSON {seed.spec_json.str.len().mean() / 1024:.1f} KiB "
              "each on average)", flush=True)
        wh = resolve_warehouse(str(root / "wh"))
        started = time.perf_counter()
        counts = build_catalog(wh, seed, args.rows, args.nights)
        size = sum(f.stat().st_size for f in Path(wh.root).rglob("*.parquet"))
        print(f"catalog: {', '.join(f'{n:,} {t}' for t, n in counts.items())} rows over {args.nights} nights, "
              f"{size / 2**20:,.0f} MiB of Parquet, built in {time.perf_counter() - started:.1f} s", flush=True)

        report = build_report(wh)
        slowest = sorted(report.collected.seconds.items(), key=lambda item: -item[1])[:5]
        print(f"report in process: {report.seconds['total']:.2f} s (queries {report.seconds['queries']:.2f} s, "
              f"narrative {report.seconds['narrative']:.2f} s, charts {report.seconds['charts']:.2f} s, "
              f"html {report.seconds['html']:.2f} s; {len(report.html) / 1024:.0f} KiB)")
        print("slowest named queries: " + ", ".join(f"{name} {s:.2f} s" for name, s in slowest))
        environments = report.collected.one("size_summary").get("environments")
        assert environments == counts["environments"], f"the report counts {environments} environments"

        vhd = str(Path(sys.executable).parent / "vhd")
        started = time.perf_counter()
        subprocess.run([vhd, "report", "--warehouse", wh.url, "--out", str(root / "report.html")], check=True,
                       capture_output=True)
        command = time.perf_counter() - started
        print(f"`vhd report` end to end (Python start, HTML written, summary printed): {command:.2f} s")
        print(f"\nmark: under 10 s at {args.rows:,} environment rows: in process {report.seconds['total']:.2f} s, "
              f"command {command:.2f} s")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
