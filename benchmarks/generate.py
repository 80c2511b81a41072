"""Wall time of N admitted environments: a plain single-process loop, then the `generate` flow as `vhd generate` runs
it (the default runner: threads, the stages' CPU work in one worker process per core), and the ratio.

    .venv/bin/python benchmarks/generate.py [--count 3300] [--families all] [--processes N] [--small 10] [--repeat 3]
    .venv/bin/python benchmarks/generate.py --runner dask [--dask-address tcp://HOST:PORT] [--count 3300] [--repeat 3]

With `--runner dask` the comparison is the default runner against `--runner dask` on a multi-process cluster: the
one at --dask-address, else one this script starts as a user would (`dask scheduler`, `dask worker --nworkers 2
--nthreads 1` with the workers' profiler off as the README says, separate commands, kept for all the runs: a
cluster outlives the runs it serves). It prints both
sides' medians, their ratio, whether they landed the same ids, and the CPU seconds of the flow's process, the
workers, the Dask scheduler and the Prefect server.

Each side runs in a fresh process of its own, `--repeat` times, loop and flow alternating; the medians are reported
(this 2-core machine's speed drifts by 5-10% over minutes). Every run uses the same plan (same date, families,
shards) and lands into a fresh warehouse; the script checks that both sides land the same environment ids. The flow
reports to $PREFECT_API_URL when set, else to vhd's local Prefect server (started once and reused, as the CLI does;
its start is not in the figures; nor are Prefect's imports and the fork server's, done by a small run first). It
also prints the CPU seconds each side used (the flow's process, its worker processes, the Prefect server) and, with
--small N, the wall time of `vhd generate --count N` as a command, with the server already running.
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


def plain_loop(warehouse: str, date: str, count: int, families: str | None) -> float:
    """The stage functions one after the other in this process (each shard's rounds, tasks.rounds.run_shard): no
    Prefect, no worker processes."""
    import datetime as dt

    from tasks.commit import commit
    from tasks.land import land_result
    from tasks.plan import plan_shards
    from tasks.pool import tune_gc
    from tasks.rounds import run_shard

    tune_gc()  # the collector as the flow's processes set it (tasks.pool.STAGE_GC_THRESHOLDS)
    started = time.perf_counter()
    begun = dt.datetime.now(dt.UTC)
    shards = plan_shards(date, count, families)
    landed = []
    for shard in shards:
        landed.append(land_result(warehouse, run_shard(shard), "plain-loop"))
    plan = {"date": date, "count": count, "families": families}
    commit(warehouse, "plain-loop", None, shards[0].date, plan, landed, 0, [], begun)
    return time.perf_counter() - started


def env_ids(warehouse: str) -> set[str]:
    from warehouse.catalog import run_query
    from warehouse.location import resolve_warehouse

    table = run_query(resolve_warehouse(warehouse), "SELECT env_id FROM environments")
    return set(table.column("env_id").to_pylist())


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process and its reaped children (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return sum(int(fields[i]) for i in (11, 12, 13, 14)) / ticks


def server_pid(url: str) -> int | None:
    """The pid of the local Prefect server answering at `url`, when it is vhd's (else None: not measured)."""
    from cli.prefect_server import running

    record = running()
    return record.pid if record is not None and record.url == url else None


def run_side(side: str, warehouse: str, date: str, count: int, families: str | None,
             processes: int | None) -> dict:
    """One side of the comparison in this (fresh) process: its wall seconds and CPU seconds."""
    if side == "loop":
        cpu = time.process_time()
        seconds = plain_loop(warehouse, date, count, families)
        return {"seconds": seconds, "cpu": time.process_time() - cpu}
    from flows.generate import run_generate
    from tasks import pool

    processes = pool.processes_for(processes, count)
    if processes > 1:
        pool.start_fork_server()  # as `vhd generate` does when it starts
    run_generate(warehouse=str(Path(warehouse).parent / "warm"), date=date, count=3, families="knapsack")  # imports
    pool.configure(processes)  # the fork server has imported the stage code (a command does that while it starts)
    pool.shutdown()
    server = server_pid(os.environ["PREFECT_API_URL"])
    server_cpu = process_cpu_seconds(server) if server else None
    own_cpu = time.process_time()
    started = time.perf_counter()
    summary = run_generate(warehouse=warehouse, date=date, count=count, families=families, processes=processes)
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "cpu": time.process_time() - own_cpu, "processes": processes,
            "workers_cpu": pool.last_run_worker_cpu_seconds(),
            "server_cpu": process_cpu_seconds(server) - server_cpu if server else None,
            "admitted": summary["admitted"], "rejected": summary["rejected"]}


def dask_side(warehouse: str, date: str, count: int, families: str | None, address: str) -> dict:
    """The flow with --runner dask on the cluster at `address` (a fresh process, a small run first for the imports,
    as for the default side), and the CPU seconds of the flow's process, the workers and the scheduler."""
    from distributed import Client

    from flows.generate import run_generate

    run_generate(runner="dask", dask_address=address, warehouse=str(Path(warehouse).parent / "warm"), date=date,
                 count=3, families="knapsack")
    with Client(address, set_as_default=False) as client:
        workers = list(client.run(os.getpid).values())
        scheduler = client.run_on_scheduler(os.getpid)
    others = {"workers_cpu": workers, "scheduler_cpu": [scheduler]}
    before = {name: sum(process_cpu_seconds(pid) for pid in pids) for name, pids in others.items()}
    server = server_pid(os.environ["PREFECT_API_URL"])
    server_cpu = process_cpu_seconds(server) if server else None
    own_cpu = time.process_time()
    started = time.perf_counter()
    summary = run_generate(runner="dask", dask_address=address, warehouse=warehouse, date=date, count=count,
                           families=families)
    seconds = time.perf_counter() - started
    after = {name: sum(process_cpu_seconds(pid) for pid in pids) for name, pids in others.items()}
    return {"seconds": seconds, "cpu": time.process_time() - own_cpu, "processes": len(workers),
            **{name: after[name] - before[name] for name in others},
            "server_cpu": process_cpu_seconds(server) - server_cpu if server else None,
            "admitted": summary["admitted"], "rejected": summary["rejected"]}


def start_cluster(workers: int = 2) -> tuple[str, list[subprocess.Popen]]:
    """`dask scheduler` and `dask worker --nworkers N --nthreads 1` as separate commands; the scheduler's address."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    bin_dir = Path(sys.executable).parent
    from flows.runners import WORKER_PROFILER_OFF_ENV

    env = {**os.environ, "PYTHONPATH": str(ROOT), **WORKER_PROFILER_OFF_ENV}  # as the README starts workers
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "env": env, "cwd": ROOT}
    started = [subprocess.Popen([str(bin_dir / "dask"), "scheduler", "--host", "127.0.0.1", "--port", str(port),
                                 "--no-dashboard"], **quiet)]
    started.append(subprocess.Popen([str(bin_dir / "dask"), "worker", address, "--nworkers", str(workers),
                                     "--nthreads", "1", "--no-dashboard"], **quiet))
    from distributed import Client

    with Client(address, timeout=60, set_as_default=False) as client:
        client.wait_for_workers(workers, timeout=120)
    return address, started


def compare_dask(args: argparse.Namespace) -> None:
    """The default runner against --runner dask on a multi-process cluster, alternating; medians and ratio."""
    # a Dask nanny starts its workers with one BLAS thread; the default side gets the same (ids do not depend on it)
    os.environ.update({name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")})
    started: list[subprocess.Popen] = []
    address = args.dask_address
    if not address:
        address, started = start_cluster()
    try:
        with tempfile.TemporaryDirectory() as root:
            defaults, dasks, same = [], [], True
            for attempt in range(args.repeat):
                pair = Path(root) / f"pair-{attempt}"
                flow_wh, dask_wh = str(pair / "flow" / "wh"), str(pair / "dask" / "wh")
                defaults.append(side_in_child("flow", flow_wh, args))
                dasks.append(side_in_child("dask", dask_wh, args, address))
                same = same and env_ids(flow_wh) == env_ids(dask_wh)
                print(f"pair {attempt + 1}: default {defaults[-1]['seconds']:.2f} s, "
                      f"dask {dasks[-1]['seconds']:.2f} s, "
                      f"ratio {dasks[-1]['seconds'] / defaults[-1]['seconds']:.3f}", flush=True)
    finally:
        for process in reversed(started):
            process.terminate()
            process.wait(timeout=30)
    default, dask = median_run(defaults), median_run(dasks)
    print(f"plan: {args.count} environments of {args.families or 'all 13 families'}, date {args.date}; medians of "
          f"{args.repeat} alternating runs of each side")
    print(f"default runner ({default['processes']} worker processes): {default['seconds']:8.2f} s  "
          f"({args.count / default['seconds']:6.1f} env/s); CPU s: flow {default['cpu']:.1f}, workers "
          f"{default['workers_cpu'] or 0:.1f}, Prefect server {default['server_cpu'] or 0:.1f}")
    print(f"dask runner ({dask['processes']} workers at {address}): {dask['seconds']:8.2f} s  "
          f"({args.count / dask['seconds']:6.1f} env/s); CPU s: flow {dask['cpu']:.1f}, workers "
          f"{dask['workers_cpu']:.1f}, scheduler {dask['scheduler_cpu']:.1f}, Prefect server "
          f"{dask['server_cpu'] or 0:.1f}")
    ratios = ", ".join(f"{d['seconds'] / f['seconds']:.3f}" for f, d in zip(defaults, dasks, strict=True))
    print(f"pairs' ratios: {ratios}")
    print(f"ratio (dask / default, medians): {dask['seconds'] / default['seconds']:.3f}")
    print(f"same environment ids in both: {same}")


def median_run(runs: list[dict]) -> dict:
    """The run whose wall time is the median (the lower middle one of an even number)."""
    return sorted(runs, key=lambda run: run["seconds"])[(len(runs) - 1) // 2]


def side_in_child(side: str, warehouse: str, args: argparse.Namespace, address: str | None = None) -> dict:
    """`run_side` in a child process of its own: each side starts as a command would, with nothing the other side
    left behind in its heap."""
    command = [sys.executable, __file__, "--side", side, "--warehouse", warehouse, "--count", str(args.count),
               "--date", args.date]
    if address:
        command += ["--dask-address", address]
    if args.families:
        command += ["--families", args.families]
    if args.processes is not None:
        command += ["--processes", str(args.processes)]
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=3300)
    parser.add_argument("--families", default=None, help="family ids or groups (default: all 13)")
    parser.add_argument("--processes", type=int, default=None, help="worker processes (default: one per core)")
    parser.add_argument("--date", default="2026-01-01")
    parser.add_argument("--small", type=int, default=10, help="also time `vhd generate --count N` (0: skip)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each side, alternating (medians reported)")
    parser.add_argument("--runner", choices=["threads", "dask"], default="threads",
                        help="dask: compare the default runner with --runner dask (instead of the loop with the flow)")
    parser.add_argument("--dask-address", help="the cluster for --runner dask (default: one started here)")
    parser.add_argument("--side", choices=["loop", "flow", "dask"], help=argparse.SUPPRESS)  # one side, in a child
    parser.add_argument("--warehouse", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if not os.environ.get("PREFECT_API_URL"):
        from cli.prefect_server import use_local_server

        use_local_server(start=True)  # exports PREFECT_API_URL; its start is not measured
    if args.side == "dask":
        print(json.dumps(dask_side(args.warehouse, args.date, args.count, args.families, args.dask_address)))
        return
    if args.runner == "dask":
        compare_dask(args)
        return
    if args.side:
        print(json.dumps(run_side(args.side, args.warehouse, args.date, args.count, args.families, args.processes)))
        return
    with tempfile.TemporaryDirectory() as root:
        small_s = None
        if args.small:  # first, while the server is idle (after the big run it still digests that run's events)
            vhd = str(Path(sys.executable).parent / "vhd")
            runs = []
            for attempt in range(3):
                started = time.perf_counter()
                subprocess.run([vhd, "generate", "--count", str(args.small), "--warehouse",
                                str(Path(root) / f"small-{attempt}"), "--date", args.date, "--no-progress"],
                               check=True, capture_output=True)
                runs.append(time.perf_counter() - started)
            small_s = sorted(runs)[1]
        loops, flows, same = [], [], True
        for attempt in range(args.repeat):  # loop and flow alternate, so that a slower spell of the machine
            pair = Path(root) / f"pair-{attempt}"  # weighs on both sides alike
            loop_wh, flow_wh = str(pair / "loop" / "wh"), str(pair / "flow" / "wh")
            loops.append(side_in_child("loop", loop_wh, args))
            flows.append(side_in_child("flow", flow_wh, args))
            same = same and env_ids(loop_wh) == env_ids(flow_wh)
            print(f"pair {attempt + 1}: loop {loops[-1]['seconds']:.2f} s, flow {flows[-1]['seconds']:.2f} s, "
                  f"ratio {flows[-1]['seconds'] / loops[-1]['seconds']:.3f}", flush=True)

    families = args.families or "all 13 families"
    loop, flow = median_run(loops), median_run(flows)
    workers_cpu, server_cpu = flow["workers_cpu"], flow["server_cpu"]
    print(f"plan: {args.count} environments of {families}, date {args.date}; medians of {args.repeat} alternating "
          "runs of each side")
    print(f"environments admitted (flow): {flow['admitted']} of {args.count}, rejected attempts "
          f"{flow['rejected']}")
    print(f"plain single-process loop: {loop['seconds']:8.2f} s  ({args.count / loop['seconds']:6.1f} env/s, "
          f"{loop['cpu']:.1f} s CPU)")
    print(f"flow, default runner ({flow['processes']} worker processes): {flow['seconds']:8.2f} s  "
          f"({args.count / flow['seconds']:6.1f} env/s)")
    print(f"  CPU seconds: flow process {flow['cpu']:.1f}, worker processes "
          f"{'n/a' if workers_cpu is None else f'{workers_cpu:.1f}'}, Prefect server "
          f"{'n/a (not vhd local server)' if server_cpu is None else f'{server_cpu:.1f}'}")
    print(f"ratio (flow / loop, medians): {flow['seconds'] / loop['seconds']:.3f}")
    print(f"same environment ids in both: {same}")
    if small_s is not None:
        print(f"`vhd generate --count {args.small}` with the server running (median of 3): {small_s:.2f} s")


if __name__ == "__main__":
    main()
