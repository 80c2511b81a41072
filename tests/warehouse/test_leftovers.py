"""Crash leftovers are reported as leftovers and removed by `vhd warehouse clean`; one compaction at a time
(issue 14). A real `vhd generate` is killed with SIGKILL while it lands; real `vhd warehouse` commands read the
result; the S3 lock runs against a real moto server."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.cli.test_cli import VHD, assert_one_line_error, vhd
from tests.warehouse.test_catalog import moto_endpoint, s3_wh  # noqa: F401 - fixtures
from tests.warehouse.test_landing import DATE, environments_frame
from warehouse.catalog import run_query
from warehouse.landing import commit_run, land
from warehouse.location import resolve_warehouse
from warehouse.maintenance import CompactionRunning, compact, compaction_lock, inspect
from warehouse.visibility import visible_files


def _age(path: Path, hours: float) -> None:
    then = time.time() - hours * 3600
    os.utime(path, (then, then))


def test_a_kill_during_landing_leaves_leftovers_that_check_reports_and_clean_removes(prefect_server, tmp_path):
    warehouse = tmp_path / "wh"
    # 30 shards of 2: the first shard files land long before the run's commit marker is written at its end
    process = subprocess.Popen([VHD, "generate", "--count", "60", "--families", "knapsack,lp", "--shard-size", "2",
                                "--date", "2026-07-01", "--processes", "0", "--warehouse", str(warehouse),
                                "--no-progress"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while not list(warehouse.glob("environments/date=*/part-*.parquet")):
            assert process.poll() is None, "the run ended before it landed a shard"
            assert time.monotonic() < deadline, "no shard landed in 240 s"
            time.sleep(0.05)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert not list(warehouse.glob("_commits/date=*/*.json")), "the run committed before it was killed"
    landed = sorted(warehouse.glob("*/date=*/part-*"))
    assert landed

    result = vhd("warehouse", "check", "--warehouse", str(warehouse))
    assert result.returncode == 0, result.stdout + result.stderr  # only leftovers: nothing is wrong with answers
    lines = result.stdout.strip().splitlines()
    assert all(line.startswith("leftover: file ") for line in lines[:-1]), lines
    assert {line.split()[2] for line in lines[:-1]} == {str(p) for p in landed}
    assert lines[-1] == (f"no problems in {warehouse}; {len(landed)} leftover file(s) no query sees: "
                         "vhd warehouse clean removes those older than 24 h")

    # a fresh leftover may belong to a run still landing: clean keeps it
    kept = vhd("warehouse", "clean", "--warehouse", str(warehouse))
    assert kept.returncode == 0 and not kept.stderr
    assert kept.stdout.strip().splitlines()[-1] == (f"removed 0 leftover file(s) from {warehouse}; "
                                                    f"kept {len(landed)} younger than 24 h")
    assert all(p.exists() for p in landed)
    for path in landed:
        _age(path, 25)
    cleaned = vhd("warehouse", "clean", "--warehouse", str(warehouse))
    assert cleaned.returncode == 0 and not cleaned.stderr
    assert cleaned.stdout.strip().splitlines()[-1] == f"removed {len(landed)} leftover file(s) from {warehouse}"
    assert not any(p.exists() for p in landed)
    assert vhd("warehouse", "check", "--warehouse", str(warehouse)).stdout.strip() == f"no problems in {warehouse}"

    # the same command run again lands everything
    rerun = vhd("generate", "--count", "60", "--families", "knapsack,lp", "--shard-size", "2", "--date", "2026-07-01",
                "--processes", "0", "--warehouse", str(warehouse), "--no-progress", check=True)
    assert "60 admitted" in rerun.stdout


def test_clean_keeps_committed_files_and_removes_old_unlisted_and_temporary_ones(tmp_path):
    wh = resolve_warehouse(str(tmp_path / "wh"))
    committed = land(wh, "environments", environments_frame(["e-1", "e-2"]), DATE, "s1")
    commit_run(wh, "run-1", DATE, {"environments": [committed]}, {})
    _age(Path(committed), 100)
    unlisted = Path(land(wh, "environments", environments_frame(["e-3"]), DATE, "s2"))
    temporary = Path(wh.path(f"_commits/date={DATE}/run-2.json.tmp-0123"))
    temporary.write_text("{")
    young = Path(land(wh, "environments", environments_frame(["e-4"]), DATE, "s3"))
    for path in (unlisted, temporary):
        _age(path, 30)
    problems, leftovers = inspect(wh)
    assert problems == []
    assert len(leftovers) == 3 and any(f"file {temporary} is an unfinished write" in line for line in leftovers)
    result = vhd("warehouse", "clean", "--warehouse", wh.url)
    assert result.returncode == 0, result.stderr
    assert f"removed {unlisted} (unlisted)" in result.stdout and f"removed {temporary} (temporary)" in result.stdout
    assert Path(committed).exists() and young.exists() and not unlisted.exists() and not temporary.exists()
    assert run_query(wh, "SELECT env_id FROM environments ORDER BY 1").column("env_id").to_pylist() == ["e-1", "e-2"]
    assert_one_line_error(vhd("warehouse", "clean", "--min-age-hours", "-1", "--warehouse", wh.url),
                          "--min-age-hours must be 0 or more")


def _many_files(tmp_path, shards: int = 12):
    wh = resolve_warehouse(str(tmp_path / "wh"))
    for i in range(shards):
        commit_run(wh, f"run-{i}", DATE, {"environments": [land(wh, "environments", environments_frame(
            [f"e-{i}-a", f"e-{i}-b"], f"run-{i}"), DATE, f"s{i}")]}, {})
    return wh


def test_a_second_compaction_is_refused_in_one_line_while_one_runs(tmp_path):
    wh = _many_files(tmp_path)
    before = run_query(wh, "SELECT env_id FROM environments ORDER BY 1").to_pylist()
    with compaction_lock(wh):  # a compaction in progress, in this (live) process
        assert_one_line_error(vhd("warehouse", "compact", "--warehouse", wh.url),
                              f"another compaction of {wh.url} is running (pid {os.getpid()}")
        assert len(visible_files(wh)["environments"]) == 12  # nothing was touched
    # two at once, for real: each either compacts or is refused in one line; never a traceback, never a lost row
    procs = [subprocess.Popen([VHD, "warehouse", "compact", "--warehouse", wh.url], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outcomes = [(p.wait(timeout=120), p.stdout.read(), p.stderr.read()) for p in procs]
    for code, out, err in outcomes:
        assert "Traceback" not in err, err
        assert (code == 0 and not err) or (code == 2 and err.startswith("error: another compaction")), (code, out, err)
    assert sum("compacted 1 partition(s)" in out for _, out, _ in outcomes) == 1 or all(c == 0 for c, _, _ in outcomes)
    assert run_query(wh, "SELECT env_id FROM environments ORDER BY 1").to_pylist() == before
    assert inspect(wh) == ([], [])
    assert not Path(wh.path("_compaction.lock")).exists()


def test_a_lock_left_by_a_dead_compaction_is_taken_over(tmp_path):
    wh = _many_files(tmp_path, 3)
    dead = subprocess.Popen(["true"])
    dead.wait()
    Path(wh.path("_compaction.lock")).write_text(json.dumps({"host": socket.gethostname(), "pid": dead.pid,
                                                             "since": 0, "token": "x"}))
    assert len(compact(wh)) == 1
    assert not Path(wh.path("_compaction.lock")).exists()


def test_the_s3_compaction_lock_refuses_a_second_compaction(s3_wh):  # noqa: F811 - the imported fixture
    for key in ("s1", "s2"):
        commit_run(s3_wh, f"run-{key}", DATE, {"environments": [land(s3_wh, "environments", environments_frame(
            [f"e-{key}"], f"run-{key}"), DATE, key)]}, {})
    with compaction_lock(s3_wh):
        with pytest.raises(CompactionRunning, match="another compaction of s3://"):
            compact(s3_wh)
    assert len(compact(s3_wh)) == 1 and not s3_wh.fs.exists(s3_wh.path("_compaction.lock"))


def test_locks_taken_from_threads_at_once_admit_one(tmp_path):
    wh = _many_files(tmp_path, 2)
    won, refused, barrier = [], [], threading.Barrier(4)

    def take():
        barrier.wait()
        try:
            with compaction_lock(wh):
                won.append(1)
                time.sleep(0.3)
        except CompactionRunning:
            refused.append(1)

    threads = [threading.Thread(target=take) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(won) + len(refused) == 4 and len(won) >= 1 and len(refused) >= 1
