"""Atomic Parquet landing of validated tables, and run commit markers that make landed files visible."""

from __future__ import annotations

import datetime as dt
import json
import posixpath
import re
import uuid
from typing import Any

import pandas as pd
import pandera.errors
import pyarrow
import pyarrow.parquet as pq

from schemas.tables import TABLE_MODELS, TABLES, arrow_schema
from warehouse.location import Warehouse, WarehouseError

COMMITS_DIR = "_commits"
_KEY = re.compile(r"^[A-Za-z0-9_.\-]+$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_SHARD_FILE = re.compile(r"^part-([A-Za-z0-9_.\-]+)\.parquet$")
_SHOWN_FAILURES = 3
_COLUMN_SET_CHECKS = {
    "column_in_schema": "columns not in the model",
    "column_in_dataframe": "missing columns",
}


def check_date(date: str) -> str:
    """The date if it is a real YYYY-MM-DD calendar date, else WarehouseError."""
    if not isinstance(date, str) or not _DATE.match(date):
        raise WarehouseError(f"date {date!r} is not YYYY-MM-DD; pass the partition date as e.g. '2025-01-31'")
    try:
        dt.date.fromisoformat(date)
    except ValueError:
        raise WarehouseError(f"date {date!r} is not a calendar date; pass a real YYYY-MM-DD date") from None
    return date


def _check_key(kind: str, key: str) -> str:
    """A shard key or run id if it is safe as a file name, else WarehouseError."""
    if not isinstance(key, str) or not _KEY.match(key) or key in (".", ".."):
        raise WarehouseError(f"{kind} {key!r} may contain only letters, digits, '_', '.' and '-'")
    return key


def _check_table(table: str) -> str:
    """The table name if it is known, else WarehouseError."""
    if table not in TABLE_MODELS:
        raise WarehouseError(f"unknown table {table!r}; known tables: {', '.join(TABLES)}")
    return table


def _shown(values: pd.Series) -> str:
    """The first few distinct failing values, as plain Python reprs."""
    distinct = list(dict.fromkeys(value.item() if hasattr(value, "item") else value for value in values))
    shown = ", ".join(repr(value) for value in distinct[:_SHOWN_FAILURES])
    return shown + (", ..." if len(distinct) > _SHOWN_FAILURES else "")


def _summarise(table: str, error: pandera.errors.SchemaErrors) -> str:
    """One line naming the first failing column or check and its first failing values."""
    cases = error.failure_cases
    first = cases.iloc[0]
    check = str(first["check"])
    same = cases[cases["check"].astype(str) == check]
    if check in _COLUMN_SET_CHECKS:
        line = f"table {table}: {_COLUMN_SET_CHECKS[check]}: {_shown(same['failure_case'])}"
    elif first["schema_context"] == "DataFrameSchema":
        line = f"table {table}: frame check failed ({check}) at rows {_shown(same['index'])}"
    else:
        column = str(first["column"])
        same = same[same["column"].astype(str) == column]
        line = f"table {table}: column {column} failed check {check}: {_shown(same['failure_case'])}"
    others = cases["check"].astype(str).nunique() - 1
    line += f" (and {others} other failing check(s))" if others else ""
    return " ".join(line.split())  # one line, whatever the values hold


def _refuse_naive_timestamps(table: str, df: pd.DataFrame) -> None:
    """Refuse timezone-naive datetime columns: coercion would silently read them as UTC."""
    for name in df.columns:
        if pd.api.types.is_datetime64_dtype(df[name].dtype) and getattr(df[name].dtype, "tz", None) is None:
            raise WarehouseError(
                f"table {table}: column {name} holds timezone-naive datetimes; make them UTC-aware"
            )


def validate(table: str, df: pd.DataFrame) -> pd.DataFrame:
    """The frame validated and coerced by its table model; WarehouseError with one line otherwise."""
    model = TABLE_MODELS[_check_table(table)]
    if not isinstance(df, pd.DataFrame):
        raise WarehouseError(f"table {table}: expected a pandas DataFrame, got {type(df).__name__}")
    _refuse_naive_timestamps(table, df)
    try:
        return model.validate(df, lazy=True)
    except pandera.errors.SchemaErrors as error:
        raise WarehouseError(_summarise(table, error)) from None
    except pandera.errors.SchemaError as error:
        raise WarehouseError(f"table {table}: {' '.join(str(error).split())}") from None


def shard_file(wh: Warehouse, table: str, date: str, shard_key: str) -> str:
    """The deterministic path of one shard's file: ``{root}/{table}/date={date}/part-{shard_key}.parquet``."""
    _check_table(table)
    return wh.path(f"{table}/date={check_date(date)}/part-{_check_key('shard key', shard_key)}.parquet")


def _write_atomically(wh: Warehouse, path: str, data: bytes) -> None:
    """Write bytes so that readers see the old object or the new one, never a partial file."""
    if not wh.is_local:
        wh.fs.pipe_file(path, data)  # one PUT: an object store publishes the object whole
        return
    wh.fs.makedirs(posixpath.dirname(path), exist_ok=True)
    temporary = f"{path}.tmp-{uuid.uuid4().hex}"
    try:
        with wh.fs.open(temporary, "wb") as handle:
            handle.write(data)
        wh.fs.mv(temporary, path)  # a rename: atomic on one filesystem, and it replaces a retried shard
    finally:
        if wh.fs.exists(temporary):
            wh.fs.rm(temporary)


def land(wh: Warehouse, table: str, df: pd.DataFrame, date: str, shard_key: str) -> str:
    """Validate a shard's frame and write it atomically as Parquet; returns the file's path."""
    path = shard_file(wh, table, date, shard_key)
    frame = validate(table, df)
    arrow = pyarrow.Table.from_pandas(frame, schema=arrow_schema(table), preserve_index=False)
    buffer = pyarrow.BufferOutputStream()
    pq.write_table(arrow.replace_schema_metadata(None), buffer, compression="zstd")
    _write_atomically(wh, path, buffer.getvalue().to_pybytes())
    return path


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
    _check_key("run id", run_id)
    listed = {
        table: sorted({_relative_file(wh, _check_table(table), path) for path in paths})
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
    _write_atomically(wh, path, data)
    return path


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
    _check_table(table)
    listed = {
        wh.path(relative)
        for marker in _read_markers(wh, "date=*/*.json")
        for relative in marker.get("files", {}).get(table, [])
    }
    if not listed:
        return []
    existing = set(wh.fs.find(wh.path(table))) if wh.fs.exists(wh.path(table)) else set()
    return sorted(listed & {wh.strip(path) for path in existing})
