"""A SIGKILLed `vhd query` leaves its DuckDB spill folder (`$TMPDIR/vhd-duckdb-*`: no atexit handler runs), and
the next command's first query removes it (issue 31, item 12); the folder of a query still running is kept, and a
temporary folder that cannot be written is one line, not a traceback. Real `vhd` processes, TMPDIR private to the
test."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import time

from tests.cli.test_cli import VHD, assert_one_line_error, vhd
from tests.cli.test_interrupts import LONG_SQL, _query_warehouse


def _spill_folders(tmp) -> set[str]:
    return {p.name for p in tmp.iterdir() if p.name.startswith("vhd-duckdb-")}


def _query_running(warehouse: str, tmp, existing: set[str] = frozenset()) -> subprocess.Popen:
    """A long `vhd query`, once it has made its spill folder (one not in `existing`)."""
    process = subprocess.Popen([VHD, "query", LONG_SQL, "--warehouse", warehouse], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, env={**os.environ, "TMPDIR": str(tmp)})
    deadline = time.monotonic() + 120
    while not _spill_folders(tmp) - existing:
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.1)
    time.sleep(1)  # the query is running in DuckDB
    return process


def test_a_sigkilled_querys_spill_folder_is_removed_by_the_next_query(tmp_path):
    warehouse = _query_warehouse(tmp_path)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    killed = _query_running(warehouse, tmp)
    killed_folder = _spill_folders(tmp)
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait(timeout=10)
    assert _spill_folders(tmp) == killed_folder  # left behind: nothing ran at its end
    running = _query_running(warehouse, tmp, killed_folder)
    try:
        running_folder = _spill_folders(tmp) - killed_folder
        assert len(running_folder) == 1 and not (killed_folder & _spill_folders(tmp))  # the stale one is gone
        answered = vhd("query", "SELECT count(*) AS n FROM environments", "--format", "csv", "--warehouse",
                       warehouse, env={"TMPDIR": str(tmp)})
        assert answered.returncode == 0 and answered.stdout.split() == ["n", "1"]
        assert running_folder <= _spill_folders(tmp)  # a running query's folder is kept
    finally:
        running.kill()
        running.wait(timeout=10)


def _no_file_size() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))


def test_an_unusable_temporary_folder_is_one_line(tmp_path):
    """No file can be written (a file-size limit of 0: the OS answers EFBIG), so no temporary folder is usable."""
    warehouse = _query_warehouse(tmp_path)
    vhd("query", "SELECT 1 AS one", "--warehouse", warehouse, check=True)  # the catalog's index is written
    result = subprocess.run([VHD, "query", "SELECT 1 AS one", "--warehouse", warehouse], capture_output=True,
                            text=True, timeout=120, preexec_fn=_no_file_size)
    assert result.returncode == 1
    assert_one_line_error(result, "no usable temporary folder for DuckDB's spill files", "set TMPDIR")
