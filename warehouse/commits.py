"""Where landed files live, how they are written and how a run makes them visible: shard paths, the Parquet
layout, atomic writes and commit markers.

Readers (the catalog, visibility) import this module without pandas or pandera; ``warehouse.landing`` validates
frames and writes them as Parquet.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import posixpath
import re
import uuid
from typing import Any

import pyarrow
import pyarrow.parquet as pq

from schemas.columns import SORT_KEYS, TABLES
from schemas.errors import exhausted
from warehouse.location import Warehouse, WarehouseError

COMMITS_DIR = "_commits"
_KEY = re.compile(r"^[A-Za-z0-9_.\-]+$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_SHARD_FILE = re.compile(r"^part-([A-Za-z0-9_.\-]+)\.parquet$")
# Rows per Parquet row group: small enough that a filter on a sorted key skips most of a large file, large enough
# that a full scan is not slowed by per-group overhead (measured by benchmarks/catalog.py).
ROW_GROUP_ROWS = 16384


def check_date(date: str) -> str:
    """The date if it is a real YYYY-MM-DD calendar date, else WarehouseError."""
    if not isinstance(date, str) or not _DATE.match(date):
        raise WarehouseError(f"date {date!r} is not YYYY-MM-DD; pass the partition date as e.g. '2025-01-31'")
    try:
        dt.date.fromisoformat(date)
    except ValueError:
        raise WarehouseError(f"date {date!r} is not a calendar date; pass a real YYYY-MM-DD date") from None
    return date


def check_key(kind: str, key: str) -> str:
    """A shard key or run id if it is safe as a file name, else WarehouseError."""
    if not isinstance(key, str) or not _KEY.match(key) or key in (".", ".."):
        raise WarehouseError(f"{kind} {key!r} may contain only letters, digits, '_', '.' and '-'")
    return key


def check_table(table: str) -> str:
    """The table name if it is known, else WarehouseError."""
    if table not in TABLES:
        raise WarehouseError(f"unknown table {table!r}; known tables: {', '.join(TABLES)}")
    return table


def parquet_bytes(table: str, data: pyarrow.Table) -> bytes:
    """A table's rows as one Parquet file: sorted by the table's sort key, zstd, row groups of ROW_GROUP_ROWS."""
    keys = [name for name in SORT_KEYS.get(table, ()) if name in data.column_names]
    if keys and data.num_rows > 1:
        data = data.sort_by([(name, "ascending") for name in keys])
    buffer = pyarrow.BufferOutputStream()
    pq.write_table(data.replace_schema_metadata(None), buffer, compression="zstd", row_group_size=ROW_GROUP_ROWS)
    return buffer.getvalue().to_pybytes()


def write_atomically(wh: Warehouse, path: str, data: bytes) -> None:
    """Write bytes so that readers see the old object or the new one, never a partial file.

    A full disk (or a quota, or the file-size limit) is a ResourceExhausted line naming the warehouse, the partial
    temporary file removed: what a run has not committed stays invisible, so nothing is committed half."""
    if not wh.is_local:
        wh.fs.pipe_file(path, data)  # one PUT: an object store publishes the object whole
        return
    temporary = f"{path}.tmp-{uuid.uuid4().hex}"
    try:
        wh.fs.makedirs(posixpath.dirname(path), exist_ok=True)
        with wh.fs.open(temporary, "wb") as handle:
            handle.write(data)
        wh.fs.mv(temporary, path)  # a rename: atomic on one filesystem, and it replaces a retried shard
    except OSError as error:
        found = exhausted(error, f"writing the warehouse at {wh.url}",
                          "nothing was committed half (what was not committed stays invisible)")
        if found is None or found is error:
            raise
        raise found from error
    finally:
        if wh.fs.exists(temporary):
            wh.fs.rm(temporary)


def shard_file(wh: Warehouse, table: str, date: str, shard_key: str) -> str:
    """The deterministic path of one shard's file: ``{root}/{table}/date={date}/part-{shard_key}.parquet``."""
    check_table(table)
    return wh.path(f"{table}/date={check_date(date)}/part-{check_key('shard key', shard_key)}.parquet")


def _relative_file(wh: Warehouse, table: str, path: str) -> str:
    """A landed file of a table as a path relative to the root; WarehouseError for anything else."""
    path = wh.strip(path)
    relative = path[len(wh.root) + 1 :] if path.startswith(wh.root + "/") else path
    parts = relative.split("/")
    if (
        len(parts) != 3
        or parts[0] != table
        or not parts[1].startswith("date=")
        or not _DATE.match(parts[1][5:])
        or not _SHARD_FILE.match(parts[2])
    ):
        raise WarehouseError(
            f"file {path!r} is not a landed {table} shard of warehouse {wh.url}; commit paths from land()"
        )
    if not wh.fs.exists(wh.path(relative)):
        raise WarehouseError(f"file {path!r} does not exist; land it before committing the run")
    return relative


def _marker_dir(wh: Warehouse, date: str) -> str:
    """The directory of the commit markers of one date."""
    return wh.path(f"{COMMITS_DIR}/date={check_date(date)}")


def commit_run(
    wh: Warehouse, run_id: str, date: str, files: dict[str, list[str]], summary: dict[str, Any]
) -> str:
    """Write the run's commit marker (its files per table and a summary), making its files visible."""
    check_key("run id", run_id)
    listed = {
        table: sorted({_relative_file(wh, check_table(table), path) for path in paths})
        for table, paths in files.items()
    }
    marker = {
        "run_id": run_id,
        "date": check_date(date),
        "committed_at": dt.datetime.now(dt.UTC).isoformat(),
        "files": listed,
        "summary": summary,
    }
    try:
        data = json.dumps(marker, indent=2, sort_keys=True, default=str).encode()
    except (TypeError, ValueError) as error:
        raise WarehouseError(f"run {run_id}: summary is not JSON-serialisable: {error}") from None
    path = f"{_marker_dir(wh, date)}/{run_id}.json"
    write_atomically(wh, path, data)
    return path


COMMIT_LOCK_NAME = "_commit.lock"
COMMIT_LOCK_WAIT_SECONDS = 300.0  # a commit holds the lock for the seconds it takes to write a file and a marker


@contextlib.contextmanager
def commit_lock(wh: Warehouse, wait_seconds: float = COMMIT_LOCK_WAIT_SECONDS):
    """Hold the warehouse's commit lock: one run at a time reads what is committed and writes its marker, so that
    two runs committing the same shards at once do not both count them as new.

    Local: an exclusive flock on ``_commit.lock`` at the root (released by the kernel when its holder dies, so it
    is never stale); another commit waits for it, up to `wait_seconds`. An object store has no lock here: there
    two commits at the same instant may both count a shard they share (the data itself is never duplicated).
    """
    if not wh.is_local:
        yield
        return
    from pathlib import Path

    from platformkit.processes import held_flock

    wh.fs.makedirs(wh.root, exist_ok=True)
    busy = WarehouseError(f"another run has held the commit lock of {wh.url} for over {wait_seconds:.0f} s; commit "
                          "again when it has finished")
    with held_flock(Path(wh.path(COMMIT_LOCK_NAME)), wait_seconds, busy=lambda: busy):
        yield


def _read_markers(wh: Warehouse, pattern: str) -> list[dict[str, Any]]:
    """Every commit marker matching a glob pattern below the commits directory."""
    wh.fs.invalidate_cache()
    markers = []
    for path in sorted(wh.fs.glob(wh.path(f"{COMMITS_DIR}/{pattern}"))):
        try:
            markers.append(json.loads(wh.fs.cat_file(path)))
        except (OSError, ValueError) as error:
            raise WarehouseError(
                f"commit marker {path!r} is unreadable ({error}); remove or rewrite it"
            ) from None
    return markers


def committed_shards(wh: Warehouse, date: str) -> set[str]:
    """The shard keys finished for a date by any run (from the committed file names).

    A shard that a run committed short of its count (its LLM budget ran out, or every instance was
    rejected) is listed in that marker's summary as incomplete and is not finished by that run.
    """
    shards = set()
    for marker in _read_markers(wh, f"date={check_date(date)}/*.json"):
        incomplete = set(marker.get("summary", {}).get("incomplete_shards", []))
        for paths in marker.get("files", {}).values():
            for relative in paths:
                match = _SHARD_FILE.match(relative.rsplit("/", 1)[-1])
                if match and match.group(1) not in incomplete:
                    shards.add(match.group(1))
    return shards


def committed_files(wh: Warehouse, table: str) -> list[str]:
    """Every committed, still existing file of a table across all dates: sorted fsspec paths."""
    check_table(table)
    listed = {
        wh.path(relative)
        for marker in _read_markers(wh, "date=*/*.json")
        for relative in marker.get("files", {}).get(table, [])
    }
    if not listed:
        return []
    existing = set(wh.fs.find(wh.path(table))) if wh.fs.exists(wh.path(table)) else set()
    return sorted(listed & {wh.strip(path) for path in existing})
