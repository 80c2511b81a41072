"""A scaling model of `vhd generate --runner dask`, measured with 1 and 2 single-thread Dask workers, then projected.

    .venv/bin/python benchmarks/scale.py [--count 300] [--shard-size 50] [--small-shards 10] [--workers 1,2]

For each worker count a cluster is started as a user starts one (`dask scheduler`, `dask worker --nworkers N
--nthreads 1`), and a fresh process runs a small warm-up and then the plan (`--count` environments of all families
in shards of `--shard-size`), reporting to a Prefect server of the benchmark's own. Measured per run: environments
per second; the CPU seconds of the flow's process, the Prefect server (with its children), the Dask scheduler and
the workers, per task run and per shard, less what the server and the scheduler spend idle over as long (measured
over 3 s before each run); the packed bytes the flow's process hands to and takes from the workers per shard
(flows.runners.DaskWorkers), and the warehouse files and bytes a shard writes. A last run with the largest worker
count and `--small-shards` separates each serial process's cost per shard from its cost per environment.

The projection: each process that serves every shard (the flow's, the Prefect server, the scheduler) is one
serial resource of one core, whose capacity in environments per second is 1 / (its CPU per shard / shard size +
its CPU per environment); the workers give N / (worker CPU per environment). Throughput at N workers is the least of
these; the first bottleneck is the serial resource with the least capacity, and the shard size that keeps it away
from N workers is the one where its capacity is still above the workers'. The warehouse commit is one per run
(not per shard); S3 sees the files each shard writes (a prefix takes about 3,500 writes a second). On this 2-core
machine, shared with other work, the wall figures are noisy; the CPU figures the model rests on much less.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
# a Dask nanny starts its workers with one BLAS thread (OMP_NUM_THREADS=1); so does everything here
os.environ.update({name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")})

PROJECTED = (4, 16, 64)
SERVER_PID = "VHD_BENCH_SERVER_PID"
IDLE_SECONDS = 3.0
S3_WRITES_PER_SECOND = 3500  # per prefix, AWS's documented rate before throttling


def task_runs(flow_run_id: str) -> int:
    """The task runs the Prefect server recorded for the flow run."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    found, page = 0, 200
    with get_client(sync_client=True) as client:
        while True:
            runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])),
                                         limit=page, offset=found)
            found += len(runs)
            if len(runs) < page:
                return found


def tree_cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds of these processes and their live descendants (psutil)."""
    import psutil

    total = 0.0
    for pid in pids:
        try:
            root = psutil.Process(pid)
            for process in [root, *root.children(recursive=True)]:
                times = process.cpu_times()
                total += times.user + times.system
        except psutil.Error:
            continue
    return total


def private_server(home: Path) -> subprocess.Popen:
    """A Prefect server of this benchmark's own (no other run's writes in its CPU), exported as PREFECT_API_URL."""
    import socket
    import urllib.request

    from cli.prefect_server import SERVER_BATCHING

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**SERVER_BATCHING, **os.environ, "PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
           "PREFECT_SERVER_UI_ENABLED": "false"}
    process = subprocess.Popen([str(Path(sys.executable).parent / "prefect"), "server", "start", "--host",
                                "127.0.0.1", "--port", str(port)], env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/api"
    for _ in range(240):
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2):
                break
        except OSError:
            time.sleep(0.5)
    os.environ.update({"PREFECT_API_URL": url, SERVER_PID: str(process.pid)})
    return process


def folder_size(path: Path) -> tuple[int, int]:
    files = [f for f in path.rglob("*") if f.is_file()]
    return len(files), sum(f.stat().st_size for f in files)


def measure(address: str, warehouse: str, count: int, shard_size: int, date: str) -> dict:
    """In a fresh process: a warm-up run, then the plan on the cluster at `address`, with every process's CPU."""
    from distributed import Client
    from generate import server_pid

    import flows.runners as runners
    from flows.generate import run_generate
    from tasks.plan import plan_shards

    run_generate(runner="dask", dask_address=address, warehouse=str(Path(warehouse).parent / "warm"), date=date,
                 count=3, families="knapsack")
    with Client(address, set_as_default=False) as client:
        others = {"workers": list(client.run(os.getpid).values()), "scheduler": [client.run_on_scheduler(os.getpid)]}
    server = int(os.environ.get(SERVER_PID, 0)) or server_pid(os.environ["PREFECT_API_URL"])
    if server:
        others["server"] = [server]
    idle = {name: tree_cpu_seconds(pids) for name, pids in others.items()}
    time.sleep(IDLE_SECONDS)  # what the scheduler and the server spend idle (heartbeats, services) per second
    before = {name: tree_cpu_seconds(pids) for name, pids in others.items()}
    idle_rate = {name: (before[name] - idle[name]) / IDLE_SECONDS for name in others}
    own = time.process_time()
    started = time.perf_counter()
    summary = run_generate(runner="dask", dask_address=address, warehouse=warehouse, date=date, count=count,
                           shard_size=shard_size)
    seconds = time.perf_counter() - started
    cpu = {"flow": time.process_time() - own}
    cpu.update({name: max(0.0, tree_cpu_seconds(pids) - before[name] - (0 if name == "workers" else
                                                                       idle_rate[name] * seconds))
                for name, pids in others.items()})
    files, size = folder_size(Path(warehouse))
    return {"workers": len(others["workers"]), "count": count, "shard_size": shard_size, "seconds": seconds,
            "admitted": summary["admitted"], "shards": len(plan_shards(date, count, None, shard_size=shard_size)),
            "task_runs": task_runs(summary["run_id"]), "cpu": cpu, "moved": dict(runners.last_moved),
            "warehouse_files": files, "warehouse_bytes": size}


def start_cluster(workers: int) -> tuple[str, list[subprocess.Popen]]:
    from generate import start_cluster as start

    return start(workers)


def stop(started: list[subprocess.Popen]) -> None:
    for process in reversed(started):
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


def run_in_child(address: str, warehouse: str, count: int, shard_size: int, date: str) -> dict:
    command = [sys.executable, __file__, "--measure", address, "--warehouse", warehouse, "--count", str(count),
               "--shard-size", str(shard_size), "--date", date]
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def per(run: dict, key: str, unit: str) -> float:
    return run["cpu"].get(key, 0.0) / run[unit]


def mean_shard(run: dict) -> float:
    """The run's environments per shard (a plan splits a count over its families: shards are often smaller than
    --shard-size)."""
    return run["admitted"] / run["shards"]


def fit(large: dict, small: dict, key: str) -> tuple[float, float]:
    """A serial process's CPU per shard (fixed) and per environment, from runs with two shard sizes: cpu/env =
    fixed / size + per_env."""
    y1, y2 = per(large, key, "admitted"), per(small, key, "admitted")
    s1, s2 = mean_shard(large), mean_shard(small)
    if s1 == s2:  # one shard size (a tiny plan: every family's shard holds its whole count): no per-shard part
        return 0.0, y1
    fixed = max(0.0, (y2 - y1) / (1 / s2 - 1 / s1))
    return fixed, max(0.0, y1 - fixed / s1)


def project(runs: list[dict], large: dict, small: dict) -> list[str]:
    """The projection table: at each worker count, the throughput, what limits it, and the shard size that keeps
    every serial process below its core."""
    worker_env = sum(per(run, "workers", "admitted") for run in runs) / len(runs)  # CPU s per environment
    serial = {name: fit(large, small, key) for name, key in
              (("flow process", "flow"), ("Prefect server writes", "server"), ("Dask scheduler", "scheduler"))}
    files_per_env = large["warehouse_files"] / large["admitted"]
    size = mean_shard(large)
    capacity = {name: 1 / (fixed / size + per_env) for name, (fixed, per_env) in serial.items()}
    capacity["S3 writes"] = S3_WRITES_PER_SECOND / files_per_env
    first = min(capacity, key=capacity.get)
    lines = ["", f"model: worker CPU {worker_env * 1000:.1f} ms per environment; per serial process (one core each), "
                 "CPU per shard (fixed) + per environment:"]
    for name, (fixed, per_env) in serial.items():
        lines.append(f"  {name:22s} {fixed * 1000:8.1f} ms/shard + {per_env * 1000:6.2f} ms/env  -> "
                     f"{capacity[name]:7.1f} env/s at {size:.0f} env/shard")
    lines.append(f"  warehouse: {files_per_env:.3f} files per environment -> S3 writes {capacity['S3 writes']:.0f} "
                 f"env/s (about {S3_WRITES_PER_SECOND}/s per prefix); commit: one per run")
    lines.append(f"first bottleneck at {size:.0f} environments per shard: {first}, at "
                 f"{capacity[first] * worker_env:.0f} workers")
    lines += ["", f"| workers | env/s at {size:.0f} env/shard | limited by | shard size keeping every serial process "
                  "below its core |", "|---|---|---|---|"]
    for n in (*[run["workers"] for run in runs], *PROJECTED):
        demand = n / worker_env
        rate = min(demand, capacity[first])
        needed = []
        for fixed, per_env in serial.values():
            spare = 1 / demand - per_env  # CPU seconds per environment a serial process may spend at n workers
            needed.append(float("inf") if spare <= 0 else fixed / spare)
        keep = max(needed)
        keep_text = "none (a per-environment cost alone fills a core)" if keep == float("inf") else f">= {keep:.0f}"
        lines.append(f"| {n} | {rate:.1f} | {'workers (CPU)' if demand <= capacity[first] else first} | {keep_text} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--shard-size", type=int, default=50)
    parser.add_argument("--small-shards", type=int, default=10, help="the shard size of the last run (the fit)")
    parser.add_argument("--workers", default="1,2", help="worker counts to measure")
    parser.add_argument("--date", default="2026-02-01")
    parser.add_argument("--save", help="write the measured runs to this JSON file")
    parser.add_argument("--measure", help=argparse.SUPPRESS)  # one run, in a child, on this cluster
    parser.add_argument("--warehouse", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:  # in a child: the parent's server
        print(json.dumps(measure(args.measure, args.warehouse, args.count, args.shard_size, args.date)))
        return
    runs = []
    with tempfile.TemporaryDirectory() as root:
        server = private_server(Path(root) / "prefect-home")  # its start is not measured
        counts = [int(n) for n in args.workers.split(",")]
        for position, n in enumerate(counts):
            address, started = start_cluster(n)
            try:
                runs.append(run_in_child(address, str(Path(root) / f"w{n}" / "wh"), args.count, args.shard_size,
                                         args.date))
                if position == len(counts) - 1:
                    small = run_in_child(address, str(Path(root) / f"w{n}-small" / "wh"), args.count,
                                         args.small_shards, args.date)
            finally:
                stop(started)
        stop([server])
    print(f"plan: {args.count} environments of all families, date {args.date}; single-thread Dask workers")
    print("| workers | shard size | env/s | task runs | flow CPU ms/task run | flow CPU ms/shard | server CPU ms/task "
          "run | server CPU ms/shard | scheduler CPU ms/shard | worker CPU ms/env | KiB to/from workers per shard | "
          "warehouse files, KiB per shard |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")  # shard size: the mean, environments per shard
    for run in [*runs, small]:
        shards, taskruns = run["shards"], run["task_runs"]
        print(f"| {run['workers']} | {mean_shard(run):.1f} | {run['admitted'] / run['seconds']:.1f} | {taskruns} | "
              f"{per(run, 'flow', 'task_runs') * 1000:.1f} | {per(run, 'flow', 'shards') * 1000:.0f} | "
              f"{per(run, 'server', 'task_runs') * 1000:.1f} | {per(run, 'server', 'shards') * 1000:.0f} | "
              f"{per(run, 'scheduler', 'shards') * 1000:.0f} | {per(run, 'workers', 'admitted') * 1000:.1f} | "
              f"{run['moved'].get('to_workers', 0) / shards / 1024:.0f} / "
              f"{run['moved'].get('from_workers', 0) / shards / 1024:.0f} | "
              f"{run['warehouse_files'] / shards:.1f}, {run['warehouse_bytes'] / shards / 1024:.0f} |")
    print("\n".join(project(runs, runs[-1], small)))
    if args.save:
        Path(args.save).write_text(json.dumps({"runs": runs, "small": small}, indent=1))


if __name__ == "__main__":
    main()
