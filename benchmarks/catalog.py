"""Typical catalog queries at 1,000,000 environment rows: DuckDB (`vhd query`'s engine) vs pandas, local and S3.

    .venv/bin/python benchmarks/catalog.py [--rows 1000000] [--files 20] [--no-s3]

Builds a catalog of synthetic environment rows (realistic columns, small spec JSON) through the real landing
path (pandera validation, atomic Parquet files, a commit marker), locally and in a moto S3 server on
127.0.0.1, then times each typical query through `run_query` (what `vhd query` runs: read-only checks,
the committed-files views with env_id deduplication) and the same answer through pandas reading the Parquet
files, as medians of 3 runs. It also times one `vhd query` command end to end (Python start included).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

FAMILIES = ["inventory_dp", "routing", "negotiation", "knapsack", "lp", "qp", "sequential_stopping",
            "weitzman_search", "facility_location", "scheduling", "tardiness", "ecommerce_365", "travel_planning"]
SPLITS = ["train", "held_out", "ood"]
QUERIES = {
    "count per family and split": "SELECT family, split, count(*) AS n FROM environments GROUP BY ALL ORDER BY ALL",
    "cost per environment per family": "SELECT family, avg(cost_usd) AS usd_per_env, sum(cost_usd) AS usd "
                                       "FROM environments GROUP BY family ORDER BY family",
    "filtered selection of 1,000 ids": "SELECT env_id FROM environments WHERE family = 'knapsack' AND size >= 8 "
                                       "AND split = 'train' ORDER BY env_id LIMIT 1000",
}


def synthetic_rows(n: int, seed: int, run_id: str) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    family = rng.choice(FAMILIES, n)
    u_star = rng.uniform(10, 1000, n)
    llm = rng.uniform(0.0005, 0.02, n)
    now = pd.Timestamp("2026-12-02T02:00:00Z")
    ids = [f"{f}-{h:016x}" for f, h in zip(family, rng.integers(0, 2**63, n, dtype=np.int64), strict=True)]
    return pd.DataFrame({
        "env_id": ids, "family": family, "family_group": "trained", "version": 1,
        "split": rng.choice(SPLITS, n, p=[0.67, 0.09, 0.24]), "modes": "written,revealed,hidden",
        "size": rng.integers(4, 21, n), "horizon": rng.integers(1, 12, n), "domain": rng.choice(["agriculture",
                                                                                               "banking"], n),
        "passage_id": "agriculture-1", "title": "A title", "setter": "litellm", "model": "openai/gpt-4o-mini",
        "tool_count": rng.integers(10, 18, n), "turn_budget": rng.integers(20, 80, n), "u_star": u_star,
        "u0": u_star * rng.uniform(0.2, 0.9, n), "u_idle": 0.0, "online_u": None, "online_score": None,
        "attempts": rng.integers(1, 4, n), "llm_cost_usd": llm, "compute_seconds": rng.uniform(0.001, 0.05, n),
        "cost_usd": llm + 1e-6, "params_hash": "0" * 16, "spec_json": '{"family": "x"}', "shard_key": "bench",
        "run_id": run_id, "created_at": now,
    })


def build(wh, rows: int, files: int) -> list[str]:
    from warehouse.landing import commit_run, land

    per_file = rows // files
    paths = []
    for i in range(files):
        date = (dt.date(2026, 11, 1) + dt.timedelta(days=i % 30)).isoformat()
        paths.append(land(wh, "environments", synthetic_rows(per_file, i, "bench"), date, f"bench-{i:04d}"))
    commit_run(wh, "bench", "2026-11-01", {"environments": paths}, {"bench": True})
    return paths


def timed(fn, repeats: int = 3) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def pandas_answer(name: str, read):
    if name == "filtered selection of 1,000 ids":
        df = read(["env_id", "family", "size", "split"])
        chosen = df[(df.family == "knapsack") & (df["size"] >= 8) & (df.split == "train")]
        return chosen.drop_duplicates("env_id").sort_values("env_id").head(1000)
    if name == "count per family and split":
        df = read(["env_id", "family", "split"]).drop_duplicates("env_id")
        return df.groupby(["family", "split"]).size()
    df = read(["env_id", "family", "cost_usd"]).drop_duplicates("env_id")
    return df.groupby("family").cost_usd.agg(["mean", "sum"])


def measure(label: str, wh, paths: list[str], storage_options=None) -> list[tuple[str, float, float]]:
    from warehouse.catalog import run_query

    def read(columns):
        return pd.read_parquet([wh.url_of(p) for p in paths], columns=columns, storage_options=storage_options)

    results = []
    for name, sql in QUERIES.items():
        duck_s, table = timed(lambda sql=sql: run_query(wh, sql))
        pandas_s, answer = timed(lambda name=name: pandas_answer(name, read))
        if name == "filtered selection of 1,000 ids":
            assert table.column("env_id").to_pylist() == answer.env_id.tolist(), "answers differ"
        elif name == "count per family and split":
            assert sum(table.column("n").to_pylist()) == int(answer.sum()), "answers differ"
        results.append((name, duck_s, pandas_s))
        print(f"{label:<6} {name:<34} duckdb {duck_s * 1000:8.1f} ms   pandas {pandas_s * 1000:8.1f} ms   "
              f"x{pandas_s / duck_s:6.1f}", flush=True)
    return results


def cli_seconds(warehouse: str, env: dict | None = None) -> float:
    vhd = str(Path(sys.executable).parent / "vhd")
    started = time.perf_counter()
    subprocess.run([vhd, "query", QUERIES["count per family and split"], "--format", "csv", "--warehouse",
                    warehouse], check=True, capture_output=True, env={**os.environ, **(env or {})})
    return time.perf_counter() - started


def start_moto() -> tuple[subprocess.Popen, str]:
    binary = shutil.which("moto_server", path=str(Path(sys.executable).parent)) or shutil.which("moto_server")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen([binary, "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(150):
        try:
            urllib.request.urlopen(f"{url}/moto-api/", timeout=1).close()
            return process, url
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise RuntimeError("moto_server did not start")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--files", type=int, default=20, help="Parquet files the rows are landed in (default 20)")
    parser.add_argument("--no-s3", action="store_true", help="skip the moto S3 half")
    args = parser.parse_args()

    from warehouse.location import resolve_warehouse

    root = Path(tempfile.mkdtemp(prefix="vhd-catalog-bench-"))
    local = resolve_warehouse(str(root / "wh"))
    started = time.perf_counter()
    paths = build(local, args.rows, args.files)
    print(f"built {args.rows:,} rows in {len(paths)} files locally in {time.perf_counter() - started:.1f} s")
    results = {"local": measure("local", local, paths)}
    print(f"local  one `vhd query` command end to end (Python start included): {cli_seconds(local.url):.2f} s")
    if not args.no_s3:
        process, endpoint = start_moto()
        try:
            os.environ.update({"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
                               "AWS_DEFAULT_REGION": "us-east-1", "VHD_S3_ENDPOINT_URL": endpoint})
            s3 = resolve_warehouse("s3://vhd-bench/warehouse")
            s3.fs.mkdir("vhd-bench")
            started = time.perf_counter()
            s3_paths = build(s3, args.rows, args.files)
            print(f"built the same on moto S3 in {time.perf_counter() - started:.1f} s")
            options = {"client_kwargs": {"endpoint_url": endpoint}}
            results["s3"] = measure("s3", s3, s3_paths, storage_options=options)
        finally:
            process.terminate()
            process.wait(timeout=10)
    worst = max(duck for rows in results.values() for _, duck, _ in rows[:3] if rows is results["local"])
    slowest_ratio = min(pandas / duck for _, duck, pandas in results["local"])
    print(f"\nmark: every local query under 1 s at {args.rows:,} rows (slowest {worst * 1000:.0f} ms), "
          f"at least 10x faster than pandas (smallest ratio x{slowest_ratio:.1f})")
    shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
