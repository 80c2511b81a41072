"""A full disk is one line per command (issue 31, item 6): `vhd generate`, `vhd warehouse compact` and `vhd export`
name what ran out and where, say what to do, exit 1, print no traceback and no ERROR log line, and leave nothing
half: no partial export file or hf folder, no compaction half-committed, nothing of the run committed.

The disk is really full: a small tmpfs, filled up, where the tests run as root; elsewhere the commands run under a
file-size limit of 16 KiB (RLIMIT_FSIZE, SIGXFSZ ignored), where the OS answers a write past 16 KiB with EFBIG."""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import signal
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.cli.test_cli import VHD, assert_one_line_error, vhd
from tests.warehouse.test_maintenance import SELECTIONS, generated  # noqa: F401 - fixture
from warehouse.catalog import run_query
from warehouse.location import resolve_warehouse


def _mount_tmpfs(folder: Path, size: str) -> bool:
    if os.geteuid() != 0 or not shutil.which("mount"):
        return False
    folder.mkdir(parents=True, exist_ok=True)
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                          capture_output=True).returncode == 0


def _fill(folder: Path, left: int = 0) -> None:
    """Write a filler file until the filesystem refuses (ENOSPC), then give back `left` bytes."""
    with contextlib.suppress(OSError), open(folder / "filler", "wb", buffering=0) as handle:
        while True:
            handle.write(b"\0" * 4096)
    filler = folder / "filler"
    filler.write_bytes(b"") if left >= filler.stat().st_size else os.truncate(filler, filler.stat().st_size - left)


FILE_SIZE_LIMIT = 16384  # bytes: room for a lock file and the temporary folder's probe, not for an export


def _small_files_only() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the limit is EFBIG, not a signal that kills
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_LIMIT, FILE_SIZE_LIMIT))


class FullDisk:
    """A folder whose filesystem is full (`limit` None), or where commands run under a small file-size limit."""

    def __init__(self, folder: Path, mounted: bool) -> None:
        self.folder, self.mounted = folder, mounted
        self.limit = None if mounted else _small_files_only

    def fill(self, left: int = 0) -> None:
        if self.mounted:
            _fill(self.folder, left)

    def vhd(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([VHD, *args], capture_output=True, text=True, timeout=300, preexec_fn=self.limit)


@pytest.fixture
def full_disk(tmp_path):
    folder = Path("/tmp") / f"vhd-full-disk-{uuid.uuid4().hex[:8]}"
    # VHD_TEST_FILE_SIZE_LIMIT=1: the file-size limit even as root (how the tests run where mount is refused)
    mounted = not os.environ.get("VHD_TEST_FILE_SIZE_LIMIT") and _mount_tmpfs(folder, "16m")
    if not mounted:
        folder = tmp_path / "disk"
        folder.mkdir()
    try:
        yield FullDisk(folder, mounted)
    finally:
        if mounted:
            subprocess.run(["umount", str(folder)], check=False)
            folder.rmdir()


def _no_error_log_line(result) -> None:
    assert "Traceback" not in result.stderr and "ERROR" not in result.stderr, result.stderr


@pytest.mark.parametrize(("left", "writing"), [(0, "writing the warehouse's compaction lock"),
                                                  (8192, "writing the warehouse at")])
def test_compact_on_a_full_disk_is_one_line_and_changes_nothing(generated, full_disk, left,  # noqa: F811
                                                                 writing):
    """No space at all (the lock file cannot be written), or room for the lock but not for a merged file."""
    warehouse = full_disk.folder / "wh"
    shutil.copytree(generated, warehouse)
    wh = resolve_warehouse(str(warehouse))
    before = [run_query(wh, sql).to_pylist() for sql in SELECTIONS]
    markers = sorted(p.name for p in warehouse.glob("_commits/date=*/*.json"))
    full_disk.fill(left)
    result = full_disk.vhd("warehouse", "compact", "--warehouse", str(warehouse))
    assert result.returncode == 1
    assert_one_line_error(result, f"at {warehouse}", "run the same command again")
    assert "nothing was compacted" in result.stderr or "nothing was committed half" in result.stderr
    if full_disk.mounted:  # no room for the lock; room for the lock, not for a merged file
        assert writing in result.stderr
    assert not (warehouse / "_compaction.lock").exists()  # not left behind to refuse the next compaction
    assert "no space left on device" in result.stderr or "file-size limit" in result.stderr
    _no_error_log_line(result)
    assert sorted(p.name for p in warehouse.glob("_commits/date=*/*.json")) == markers  # no compaction marker
    assert not list(warehouse.rglob("*.tmp-*"))  # no partial merged file
    assert [run_query(wh, sql).to_pylist() for sql in SELECTIONS] == before


@pytest.mark.parametrize(("fmt", "name"), [("jsonl", "rows.jsonl"), ("hf", "dataset"), ("trl", "rows.parquet")])
def test_export_on_a_full_disk_is_one_line_and_leaves_nothing(generated, full_disk, fmt, name):  # noqa: F811
    full_disk.fill()
    out = full_disk.folder / name
    result = full_disk.vhd("export", "--format", fmt, "--out", str(out), "--warehouse", str(generated))
    assert result.returncode == 1
    assert_one_line_error(result, f"writing the export to {out}", "nothing was written")
    _no_error_log_line(result)
    assert sorted(p.name for p in full_disk.folder.iterdir()) == (["filler"] if full_disk.mounted else [])


def test_generate_on_a_full_disk_is_one_line_and_commits_nothing(prefect_server, full_disk):
    if not full_disk.mounted:
        pytest.skip("needs a full filesystem (a tmpfs: root); a file-size limit would stop Prefect's own files too")
    full_disk.fill()
    warehouse = full_disk.folder / "wh"
    result = vhd("generate", "--count", "12", "--families", "knapsack", "--date", "2026-08-04", "--shard-size", "4",
                 "--processes", "0", "--warehouse", str(warehouse), "--no-progress")
    assert result.returncode == 1
    assert_one_line_error(result, f"no space left on device writing the warehouse at {warehouse}",
                          "free space there and run the same command again", "nothing was committed half")
    _no_error_log_line(result)
    assert not list(warehouse.glob("_commits/date=*/*.json"))
    assert not list(warehouse.rglob("*.tmp-*"))
