"""SIGKILL of a `vhd generate` with a worker pool leaves no process behind (issue 31, item 5): the stage workers,
the fork server they were forked from and multiprocessing's resource tracker all die with the flow's process,
although nothing of it runs to stop them. A real `vhd generate --processes 2` against the test Prefect server; its
descendants are recorded before the kill."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import psutil

from tests.cli.test_cli import VHD

GONE_WITHIN_S = 10.0


def _alive(processes: list[psutil.Process], within_s: float) -> list[psutil.Process]:
    gone_by = time.monotonic() + within_s
    while True:
        alive = [p for p in processes if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        if not alive or time.monotonic() > gone_by:
            return alive
        time.sleep(0.2)


def test_sigkill_of_generate_leaves_no_worker_fork_server_or_resource_tracker(prefect_server, tmp_path):
    warehouse = tmp_path / "wh"
    process = subprocess.Popen([VHD, "generate", "--count", "3000", "--families", "knapsack,lp", "--date",
                                "2026-08-02", "--processes", "2", "--warehouse", str(warehouse), "--no-progress"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while not list(warehouse.glob("environments/date=*/part-*.parquet")):  # a shard landed: the pool works
            assert process.poll() is None, "generate ended before its pool worked"
            assert time.monotonic() < deadline, "no shard landed in 240 s"
            time.sleep(0.1)
        descendants = psutil.Process(process.pid).children(recursive=True)
        commands = [" ".join(p.cmdline()) for p in descendants]
        assert any("forkserver" in command for command in commands), commands
        assert any("resource_tracker" in command for command in commands), commands
        assert len(descendants) >= 4, commands  # the fork server, two workers, the resource tracker
        os.kill(process.pid, signal.SIGKILL)  # the flow's process alone: nothing of it can stop its children
        process.wait(timeout=10)
        left = _alive(descendants, GONE_WITHIN_S)
        assert left == [], [(p.pid, " ".join(p.cmdline())) for p in left]
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        try:
            os.killpg(process.pid, signal.SIGKILL)  # whatever is left of the group (the test failed)
        except ProcessLookupError:
            pass
