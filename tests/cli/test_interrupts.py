"""Ctrl-C and SIGTERM stop a command within seconds (issue 14): exit code 130 (SIGINT) or 143 (SIGTERM), one line
on stderr saying what landed and how to finish, no traceback, no child process left running, nothing committed by
the interrupted run, and the same command run again finishes it. Real signals to real `vhd` processes (to the
process group, as a terminal's Ctrl-C sends it), against the test Prefect server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.cli.test_cli import VHD, assert_one_line_error, vhd

STOPPED_WITHIN_S = 10.0
LONG_SQL = "SELECT sum(a.range * b.range) AS s FROM range(100000000) a, range(100000) b"


def _start(*args: str) -> subprocess.Popen:
    return subprocess.Popen([VHD, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def _interrupt(process: subprocess.Popen, signum: int) -> tuple[int, str, str, float, list[psutil.Process]]:
    """Send `signum` to the process group; (exit code, stdout, stderr, seconds to exit, its descendants then)."""
    children = psutil.Process(process.pid).children(recursive=True)
    sent = time.monotonic()
    os.killpg(process.pid, signum)
    try:
        out, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        raise
    return process.returncode, out, err, time.monotonic() - sent, children


def _alive(processes: list[psutil.Process]) -> list[psutil.Process]:
    gone_by = time.monotonic() + 5
    while time.monotonic() < gone_by:
        alive = [p for p in processes if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        if not alive:
            return []
        time.sleep(0.2)
    return alive


def _query_warehouse(tmp_path) -> str:
    from tests.warehouse.test_landing import DATE, environments_frame
    from warehouse.landing import commit_run, land
    from warehouse.location import resolve_warehouse

    wh = resolve_warehouse(str(tmp_path / "wh"))
    commit_run(wh, "run-1", DATE, {"environments": [land(wh, "environments", environments_frame(["e-1"]), DATE,
                                                                "s1")]}, {})
    return wh.url


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_generate_stops_within_seconds_leaves_no_child_and_commits_nothing(prefect_server, tmp_path, signum, code):
    warehouse = tmp_path / "wh"
    argv = ["generate", "--count", "3000", "--families", "knapsack,lp", "--date", "2026-08-01", "--processes", "2",
            "--warehouse", str(warehouse), "--no-progress"]
    process = _start(*argv)
    deadline = time.monotonic() + 240
    while not list(warehouse.glob("environments/date=*/part-*.parquet")):  # a shard landed: the pool is working
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "no shard landed in 240 s"
        time.sleep(0.1)
    returncode, out, err, seconds, children = _interrupt(process, signum)
    assert returncode == code, (out, err)
    assert seconds < STOPPED_WITHIN_S
    assert err.splitlines() == ["interrupted: nothing of this run is committed (what it wrote stays invisible); run "
                                "the same command again to finish (committed shards are skipped)"], err
    assert len(children) >= 3  # the fork server and the two stage workers
    assert _alive(children) == []
    assert not list(warehouse.glob("_commits/date=*/*.json"))  # the interrupted run committed nothing
    check = vhd("warehouse", "check", "--warehouse", str(warehouse))
    assert check.returncode == 0 and "leftover file(s) no query sees" in check.stdout  # its shards: leftovers
    if signum == signal.SIGINT:  # the same command again finishes the run (smaller: the same date's first shards)
        rerun = vhd("generate", "--count", "200", "--families", "knapsack,lp", "--date", "2026-08-01",
                    "--processes", "0", "--warehouse", str(warehouse), "--no-progress", check=True)
        assert "200 admitted" in rerun.stdout


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_long_query_stops_on_a_signal(tmp_path, signum, code):
    warehouse = _query_warehouse(tmp_path)
    process = _start("query", LONG_SQL, "--warehouse", warehouse)
    time.sleep(3)  # the query is running in DuckDB
    assert process.poll() is None
    returncode, out, err, seconds, _ = _interrupt(process, signum)
    assert returncode == code and seconds < STOPPED_WITHIN_S
    assert err == "interrupted: the query was stopped; it changes nothing, so nothing needs finishing\n"
    assert out == ""


def test_query_timeout_stops_a_long_query_with_one_line(tmp_path):
    warehouse = _query_warehouse(tmp_path)
    started = time.monotonic()
    result = vhd("query", LONG_SQL, "--timeout", "2", "--warehouse", warehouse)
    assert time.monotonic() - started < 2 + STOPPED_WITHIN_S
    assert result.returncode == 2
    assert_one_line_error(result, "the query ran longer than --timeout 2 s and was stopped")
    fast = vhd("query", "SELECT count(*) AS n FROM environments", "--timeout", "30", "--format", "csv",
               "--warehouse", warehouse)
    assert fast.returncode == 0 and fast.stdout.split() == ["n", "1"]
    assert_one_line_error(vhd("query", "SELECT 1", "--timeout", "0", "--warehouse", warehouse),
                          "--timeout must be a positive number of seconds, got 0")


def test_the_stage_workers_ignore_ctrl_c_so_only_one_line_is_printed():
    """A worker of the pool gets the terminal's SIGINT too: it must not die printing its own traceback."""
    from tasks import pool

    pool.configure(2)
    try:
        worker = pool.submit(os.getpid).result(timeout=60)
        os.kill(worker, signal.SIGINT)
        time.sleep(0.5)
        assert psutil.Process(worker).is_running()
        assert pool.call(os.getpid) in {p.pid for p in psutil.Process().children(recursive=True)}
    finally:
        pool.shutdown()


STOPPER = """
import subprocess, sys
from cli.interrupts import stop_children
quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
detached = subprocess.Popen(["sleep", "60"], start_new_session=True, **quiet)
attached = subprocess.Popen(["sleep", "60"], **quiet)
print(detached.pid, attached.pid, flush=True)
stop_children(grace_s=2)
"""


def test_stopping_children_spares_a_detached_server():
    """stop_children (in a process of its own: here it would stop the test session's servers) terminates its
    children and spares processes in a session of their own, as the local Prefect server is started."""
    result = subprocess.run([sys.executable, "-c", STOPPER], capture_output=True, text=True, timeout=60,
                            cwd=Path(__file__).resolve().parents[2])
    assert result.returncode == 0, result.stderr
    detached, attached = (int(pid) for pid in result.stdout.split())
    try:
        assert not psutil.pid_exists(attached) or psutil.Process(attached).status() == psutil.STATUS_ZOMBIE
        assert psutil.Process(detached).is_running()
    finally:
        if psutil.pid_exists(detached):
            os.kill(detached, signal.SIGKILL)


def test_eval_waiting_on_a_silent_model_stops_on_ctrl_c(prefect_server, tmp_path):
    import socket

    warehouse = str(tmp_path / "wh")
    vhd("generate", "--count", "2", "--families", "knapsack", "--date", "2026-08-02", "--warehouse", warehouse,
        "--no-progress", check=True)
    with socket.socket() as silent:  # accepts connections (the backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        api_base = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        process = _start("eval", "--agent", "litellm", "--model", "openai/silent", "--api-base", api_base,
                         "--mode", "hidden", "--warehouse", warehouse)
        time.sleep(12)  # the flow has started and its episodes wait on the model
        assert process.poll() is None, process.communicate()
        returncode, out, err, seconds, children = _interrupt(process, signal.SIGINT)
    assert returncode == 130 and seconds < STOPPED_WITHIN_S, (out, err)
    assert err.splitlines() == ["interrupted: nothing of this eval run is committed (what it wrote stays invisible); "
                                "run the same command again"], err
    assert _alive(children) == []
    count = vhd("query", "SELECT count(*) AS n FROM evaluations", "--format", "csv", "--warehouse", warehouse)
    assert count.stdout.split() == ["n", "0"], count.stderr  # nothing landed
