"""Typical catalog queries at 1,000,000 environment rows: DuckDB (`vhd query`'s engine) vs pandas, local and S3.

    .venv/bin/python benchmarks/catalog.py [--rows 1000000] [--files 20] [--no-s3]

Builds a catalog of synthetic environment rows (realistic columns, small spec JSON) through the real landing
path (pandera validation, Parquet files sorted by env_id, atomic writes, a commit marker), locally and in a moto
S3 server on 127.0.0.1. Each typical query is timed through `run_query` (what `vhd query` runs: read-only
checks, the markers' listing and the state index, the committed-files views with env_id deduplication):

- cold: the first query of a process (DuckDB opened, the views made, the footers read);
- warm: a later query of the same warehouse state in the same process (a notebook, the HTTP server, vhd eval);

and the same answer through pandas reading the Parquet files (pyarrow engine, the needed columns only, the
env_id deduplication done too), each a median of 5 runs. It also times one `vhd query` command and one pandas
script end to end, Python start included.
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
    informed = rng.uniform(0.4, 1.0, n)
    naive = informed * rng.uniform(0.0, 1.0, n)
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
        "tier": rng.choice(["easy", "medium", "hard", "frontier"], n), "informed_score": informed,
        "heuristic_score": informed * rng.uniform(0.0, 0.6, n), "naive_score": naive, "skill_gap": informed - naive,
        "facts_fit": rng.uniform(0.3, 1.0, n),
        "attempts": rng.integers(1, 4, n), "llm_cost_usd": llm, "compute_seconds": rng.uniform(0.001, 0.05, n),
        "cost_usd": llm + 1e-6, "params_hash": "0" * 16, "tool_interface": "0" * 32,
        "story": "A story.", "spec_json": '{"family": "x"}', "shard_key": "bench",
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


def timed(fn, repeats: int = 5) -> tuple[float, object]:
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


def measure(label: str, wh, paths: list[str]) -> list[tuple[str, float, float, float]]:
    """(query, cold DuckDB s, warm DuckDB s, pandas s) for every typical query; the answers are compared."""
    import pyarrow.parquet as pq

    from warehouse import catalog

    def read(columns):
        return pq.read_table(paths, columns=columns, filesystem=wh.fs).to_pandas()

    def cold(sql):
        catalog._STATES.clear()  # a new process: no shared database of this state yet
        return catalog.run_query(wh, sql)

    results = []
    for name, sql in QUERIES.items():
        cold_s, _ = timed(lambda sql=sql: cold(sql))
        warm_s, table = timed(lambda sql=sql: catalog.run_query(wh, sql))
        pandas_s, answer = timed(lambda name=name: pandas_answer(name, read))
        if name == "filtered selection of 1,000 ids":
            assert table.column("env_id").to_pylist() == answer.env_id.tolist(), "answers differ"
        elif name == "count per family and split":
            assert sum(table.column("n").to_pylist()) == int(answer.sum()), "answers differ"
        else:
            assert abs(sum(table.column("usd").to_pylist()) - float(answer["sum"].sum())) < 1e-6, "answers differ"
        results.append((name, cold_s, warm_s, pandas_s))
        print(f"{label:<6} {name:<34} duckdb cold {cold_s * 1000:7.1f} ms  warm {warm_s * 1000:7.1f} ms   "
              f"pandas {pandas_s * 1000:8.1f} ms   x{pandas_s / cold_s:5.1f} cold  x{pandas_s / warm_s:5.1f} warm",
              flush=True)
    return results


PANDAS_SCRIPT = """
import sys, pandas as pd
paths = sys.argv[1:]
df = pd.read_parquet(paths, columns=["env_id", "family", "split"]).drop_duplicates("env_id")
print(df.groupby(["family", "split"]).size().to_csv())
"""


def pandas_script_seconds(wh, paths: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", PANDAS_SCRIPT, *paths], check=True, capture_output=True)
    return time.perf_counter() - started


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
    command = statistics.median(cli_seconds(local.url) for _ in range(3))
    script = statistics.median(pandas_script_seconds(local, paths) for _ in range(3))
    print(f"local  count per family and split as a command, Python start included: vhd query {command:.2f} s, "
          f"a pandas script {script:.2f} s (x{script / command:.1f})")
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
            results["s3"] = measure("s3", s3, s3_paths)
        finally:
            process.terminate()
            process.wait(timeout=10)
    worst = max(cold for _, cold, _, _ in results["local"])
    cold_ratio = min(pandas / cold for _, cold, _, pandas in results["local"])
    warm_ratio = min(pandas / warm for _, _, warm, pandas in results["local"])
    print(f"\nmark: every local query under 1 s at {args.rows:,} rows (slowest, cold: {worst * 1000:.0f} ms), "
          f"at least 10x faster than pandas (smallest ratio: x{cold_ratio:.1f} cold, x{warm_ratio:.1f} warm)")
    shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
