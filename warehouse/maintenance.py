"""Warehouse upkeep: which files are visible, which are damaged, `vhd warehouse check` and `compact`.

**Damaged files refuse, they are not skipped.** A committed file that cannot be read (garbage bytes under a
committed name, a file cut in half), that is missing, or whose columns do not belong to its table makes every
query that reads *that table* fail with one line naming the file(s) and pointing at ``vhd warehouse check``.
Queries over the other tables still answer. Answering from the rest was rejected: a count, a cost sum or a
selection of ids computed without one file's rows is a wrong answer that looks right, and a warning on stderr is
lost the moment the output is piped into a script or a training job. The repair (restore or re-land the file, or
re-run the night) is visible in ``vhd warehouse check``.

**Visibility.** A file is visible when a commit marker (``_commits/date=D/*.json``) lists it and no later
compaction marker replaced that listing. A compaction marker lists its merged files under ``files`` and the
``[marker, path]`` pairs it replaces under ``replaces``: writing that one marker (atomically) switches readers
from the old files to the merged one, so a reader sees one or the other, never both or neither. A listing of the
same path by a marker written after the compaction is not replaced. Old files are deleted after the marker; a
query that listed the markers just before and then misses a deleted file runs once more (``catalog.run_query``).
Compaction may run beside generation runs, but not beside another compaction of the same warehouse: two
compactions that saw different listings would each publish a merged copy of the rows both saw.

**Leftovers.** A process killed while landing (SIGKILL, a lost machine) leaves files no marker lists: shard
files of a run that never committed, ``*.tmp-*`` files of an interrupted atomic write. They are invisible to every
query, so ``check`` reports them as leftovers (a line of their own, exit code 0 when nothing else is wrong), and
``clean`` deletes those older than ``CLEAN_MIN_AGE_HOURS`` (24 h: longer than any run takes to land and commit,
so the files of a run still in progress are never touched), and files a compaction replaced that are still
present. Only one compaction runs at a time: it holds ``_compaction.lock`` (see ``compaction_lock``).

**Schema evolution.** A file may lack columns that were added to its table later (they read as nulls); it must
hold its table's key column, and every column it holds must be one of the table's, with the table's type. A column
renamed since the file was written (``schemas.columns.RENAMED``, e.g. environments.difficulty -> tier) is read
under its current name.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import hashlib
import json
import os
import posixpath
import socket
import time
import uuid
from collections import defaultdict
from typing import Any

import duckdb
import pyarrow
import pyarrow.parquet as pq

from schemas.columns import RENAMED, TABLES, arrow_schema
from warehouse.commits import COMMITS_DIR, committed_shards, parquet_bytes, write_atomically
from warehouse.location import Warehouse, WarehouseError

COMPACTION_PREFIX = "compaction-"
_SHOWN = 20
CLEAN_MIN_AGE_HOURS = 24.0  # `vhd warehouse clean` leaves younger unlisted files alone: a run may still commit them
LOCK_NAME = "_compaction.lock"
S3_LOCK_STALE_SECONDS = 6 * 3600  # an S3 lock older than this is taken over (its compaction died)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__


def read_markers(wh: Warehouse) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Every commit marker by its name relative to the commits directory, and one problem line per bad marker."""
    wh.fs.invalidate_cache()
    markers, problems = {}, []
    for path in sorted(wh.fs.glob(wh.path(f"{COMMITS_DIR}/date=*/*.json"))):
        name = path[len(wh.path(COMMITS_DIR)) + 1 :]
        try:
            marker = json.loads(wh.fs.cat_file(path))
            if not isinstance(marker, dict) or not isinstance(marker.get("files", {}), dict):
                raise ValueError("not a commit marker object")
            markers[name] = marker
        except (OSError, ValueError) as error:
            problems.append(f"commit marker {wh.url_of(path)} is unreadable ({_one_line(error)}); remove or rewrite it")
    return markers, problems


def _listings(markers: dict[str, dict[str, Any]]) -> tuple[set[tuple[str, str, str]], set[tuple[str, str]]]:
    """All (marker, table, relative path) listings, and the (marker, path) pairs replaced by compactions."""
    listed, replaced = set(), set()
    for name, marker in markers.items():
        for table, paths in marker.get("files", {}).items():
            listed.update((name, table, path) for path in paths)
        replaced.update((pair[0], pair[1]) for pair in marker.get("replaces", []))
    return listed, replaced


def visible_files(wh: Warehouse, markers: dict[str, dict[str, Any]] | None = None) -> dict[str, list[str]]:
    """The visible files of every table (relative paths, sorted): listed by a marker and not replaced."""
    if markers is None:
        markers, problems = read_markers(wh)
        if problems:
            raise WarehouseError(problems[0])
    listed, replaced = _listings(markers)
    visible: dict[str, set[str]] = {table: set() for table in TABLES}
    for name, table, path in listed:
        if (name, path) not in replaced and table in visible:
            visible[table].add(path)
    return {table: sorted(paths) for table, paths in visible.items()}


def _kind(physical: str | None, logical: str | None, converted: str | None) -> str:
    """A Parquet column's type as one word comparable with the table schema."""
    logical, converted = logical or "", converted or ""
    if physical == "BYTE_ARRAY" and ("String" in logical or converted == "UTF8"):
        return "string"
    if physical == "INT64" and ("Timestamp" in logical or converted.startswith("TIMESTAMP")):
        return "timestamp"
    return {"INT64": "int64", "DOUBLE": "double", "BOOLEAN": "bool"}.get(physical or "", f"{physical} {logical}")


@functools.cache
def _expected(table: str) -> dict[str, str]:
    kinds = {pyarrow.string(): "string", pyarrow.int64(): "int64", pyarrow.float64(): "double",
             pyarrow.bool_(): "bool"}
    return {f.name: kinds.get(f.type, "timestamp" if pyarrow.types.is_timestamp(f.type) else str(f.type))
            for f in arrow_schema(table)}


def _schema_problem(table: str, columns: dict[str, str]) -> str | None:
    """Why a file's columns do not belong to its table, or None."""
    expected = _expected(table)
    key = next(iter(expected))
    if key not in columns:
        return f"lacks the key column {key} of table {table}"
    renamed = RENAMED.get(table, {})
    for name, kind in columns.items():
        current = renamed.get(name, name)
        if current not in expected:
            return f"has column {name}, which table {table} does not have"
        if kind != expected[current]:
            return f"column {name} is {kind}, table {table} has {expected[current]}"
    return None


def _schemas(con: duckdb.DuckDBPyConnection, urls: list[str]) -> dict[str, dict[str, str]]:
    """Each file's columns and their kinds, read from the Parquet footers in one DuckDB call."""
    rows = con.execute(
        "SELECT file_name, name, type, logical_type, converted_type, num_children FROM parquet_schema("
        f"[{', '.join(_literal(url) for url in urls)}])"
    ).fetchall()
    schemas: dict[str, dict[str, str]] = {url: {} for url in urls}
    for file_name, name, physical, logical, converted, children in rows:
        if physical is None and children:  # the root of the schema tree
            continue
        schemas.setdefault(file_name, {})[name] = _kind(physical, logical, converted)
    return schemas


def inspect_files(
    wh: Warehouse, files: dict[str, list[str]], con: duckdb.DuckDBPyConnection | None = None,
    present: dict[str, set[str]] | None = None,
) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, list[str]]], dict[str, dict[str, list[str]]]]:
    """The damaged files among ``files`` (table -> relative paths) and the sound ones that lack columns.

    Returns (table -> {relative path: reason}, table -> {relative path: the table's columns it lacks}, table ->
    {relative path: the old names of renamed columns it holds}); a file lacks columns when it was written before
    they were added or renamed (``schemas.columns.RENAMED``). ``present`` (table -> relative paths that exist)
    saves listing the table folders again.
    """
    own = con is None
    con = con or _connection(wh)
    damaged: dict[str, dict[str, str]] = {}
    lacking: dict[str, dict[str, list[str]]] = {}
    old_names: dict[str, dict[str, list[str]]] = {}
    try:
        for table, paths in files.items():
            if not paths:
                continue
            existing = present[table] if present is not None else set(_table_files_on_disk(wh, table))
            for path in paths:
                if path not in existing:
                    damaged.setdefault(table, {})[path] = "committed but missing"
            readable = [path for path in paths if path in existing]
            urls = {wh.url_of(wh.path(path)): path for path in readable}
            try:
                schemas = _schemas(con, list(urls))
            except duckdb.Error:  # one or more unreadable footers: find them one by one
                schemas = {}
                for url, path in urls.items():
                    try:
                        schemas.update(_schemas(con, [url]))
                    except duckdb.Error as error:
                        damaged.setdefault(table, {})[path] = f"unreadable: {_one_line(error)}"
            for url, columns in schemas.items():
                if url not in urls:
                    continue
                problem = _schema_problem(table, columns)
                if problem:
                    damaged.setdefault(table, {})[urls[url]] = f"schema mismatch: {problem}"
                elif missing := [name for name in _expected(table) if name not in columns]:
                    lacking.setdefault(table, {})[urls[url]] = missing
                    if held := sorted(old for old in RENAMED.get(table, {}) if old in columns):
                        old_names.setdefault(table, {})[urls[url]] = held
    finally:
        if own:
            con.close()
    return damaged, lacking, old_names


def damaged_files(
    wh: Warehouse, files: dict[str, list[str]], con: duckdb.DuckDBPyConnection | None = None,
    present: dict[str, set[str]] | None = None,
) -> dict[str, dict[str, str]]:
    """The damaged files among ``files`` (table -> relative paths): table -> {relative path: reason}."""
    return inspect_files(wh, files, con, present)[0]


def _connection(wh: Warehouse) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(":memory:")
    if not wh.is_local:
        con.register_filesystem(wh.fs)
    return con


def _table_files_on_disk(wh: Warehouse, table: str) -> list[str]:
    if not wh.fs.exists(wh.path(table)):
        return []
    return sorted(wh.strip(p)[len(wh.root) + 1 :] for p in wh.fs.find(wh.path(table)))


def _duplicate_keys(con: duckdb.DuckDBPyConnection, wh: Warehouse, table: str, paths: list[str]) -> list[str]:
    """One line per key value held by more than one visible file of a table."""
    if len(paths) < 2:
        return []
    key = arrow_schema(table)[0].name
    urls = ", ".join(_literal(wh.url_of(wh.path(p))) for p in paths)
    rows = con.execute(
        f'SELECT "{key}", list(DISTINCT filename ORDER BY filename) FROM read_parquet([{urls}], filename=true, '
        f'union_by_name=true) GROUP BY ALL HAVING count(DISTINCT filename) > 1 ORDER BY 1'
    ).fetchall()
    lines = [f"table {table}: {key} {value} is in {len(names)} files ({', '.join(names)})"
             + ("; the view keeps its first landing" if table == "environments" else "; queries count it twice")
             for value, names in rows[:_SHOWN]]
    if len(rows) > _SHOWN:
        lines.append(f"table {table}: {len(rows) - _SHOWN} more duplicate {key} values")
    return lines


def check(wh: Warehouse) -> list[str]:
    """Every problem of the warehouse, one line each: bad markers, damaged, missing, duplicated (leftovers apart:
    see ``inspect``)."""
    return inspect(wh)[0]


def _age_hours(wh: Warehouse, path: str, now: float) -> float:
    """Hours since a file was last written (0 when the filesystem does not say: never old enough to clean)."""
    try:
        modified = wh.fs.modified(path)
    except (OSError, NotImplementedError, ValueError):
        return 0.0
    if modified.tzinfo is None:
        modified = modified.replace(tzinfo=dt.UTC) if not wh.is_local else modified.astimezone()
    return max(0.0, (now - modified.timestamp()) / 3600)


def leftover_files(wh: Warehouse, markers: dict[str, dict[str, Any]] | None = None) -> dict[str, str]:
    """The files no reader sees that a crash or an interrupted compaction left: fsspec path -> "unlisted",
    "replaced" (by a compaction, still present) or "temporary" (a ``*.tmp-*`` of an interrupted write)."""
    if markers is None:
        markers, _ = read_markers(wh)
    visible = visible_files(wh, markers)
    listed, replaced = _listings(markers)
    listed_paths = {path for _, _, path in listed}
    superseded = {path for _, path in replaced} - {p for paths in visible.values() for p in paths}
    found: dict[str, str] = {}
    for table in TABLES:
        for path in _table_files_on_disk(wh, table):
            if ".tmp-" in posixpath.basename(path):
                found[wh.path(path)] = "temporary"
            elif path in superseded:
                found[wh.path(path)] = "replaced"
            elif path not in listed_paths:
                found[wh.path(path)] = "unlisted"
    for path in wh.fs.glob(wh.path(f"{COMMITS_DIR}/date=*/*.tmp-*")):
        found[wh.strip(path)] = "temporary"
    return found


_LEFTOVER_WHY = {"unlisted": "is not listed by any commit marker (a landing that never committed)",
                 "replaced": "was replaced by a compaction but is still present",
                 "temporary": "is an unfinished write"}


def inspect(wh: Warehouse) -> tuple[list[str], list[str]]:
    """(problems, leftovers), one line each. Problems make answers wrong or refused: bad markers, damaged or
    missing committed files, duplicated keys. Leftovers are invisible to every query: files a crash left
    (``leftover_files``); ``vhd warehouse clean`` removes them."""
    markers, problems = read_markers(wh)
    visible = visible_files(wh, markers)
    leftovers = [f"leftover: file {wh.url_of(path)} {_LEFTOVER_WHY[kind]}"
                 for path, kind in sorted(leftover_files(wh, markers).items())]
    con = _connection(wh)
    try:
        damaged = damaged_files(wh, visible, con)
        for table, files in damaged.items():
            problems += [f"table {table}: file {wh.url_of(wh.path(p))} is {why}" for p, why in sorted(files.items())]
        broken = {p for files in damaged.values() for p in files}
        for table in TABLES:
            problems += _duplicate_keys(con, wh, table, [p for p in visible[table] if p not in broken])
    finally:
        con.close()
    return problems, leftovers


def clean(wh: Warehouse, min_age_hours: float = CLEAN_MIN_AGE_HOURS) -> tuple[list[str], list[str]]:
    """Delete the leftovers: unlisted and temporary files older than ``min_age_hours`` (younger ones may belong to
    a run still landing), and files a compaction replaced. Returns (lines of files removed, lines of files kept)."""
    if min_age_hours < 0:
        raise WarehouseError(f"--min-age-hours must be 0 or more, got {min_age_hours}")
    markers, problems = read_markers(wh)
    if problems:  # an unreadable marker may list files: deleting what it lists would lose committed data
        raise WarehouseError(problems[0] + "; clean refused until it is fixed")
    removed, kept = [], []
    now = time.time()
    for path, kind in sorted(leftover_files(wh, markers).items()):
        age = _age_hours(wh, path, now)
        if kind != "replaced" and age < min_age_hours:
            kept.append(f"kept {wh.url_of(path)}: {age:.1f} h old, younger than {min_age_hours:g} h "
                        "(a run may still commit it)")
            continue
        with contextlib.suppress(FileNotFoundError):
            wh.fs.rm(path)
        removed.append(f"removed {wh.url_of(path)} ({kind})")
    return removed, kept


class CompactionRunning(WarehouseError):
    """Another compaction of the same warehouse holds the lock."""


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def compaction_lock(wh: Warehouse):
    """Hold the warehouse's compaction lock, or raise CompactionRunning (one line) when another compaction holds it.

    Local: ``_compaction.lock`` created exclusively (O_EXCL), holding the owner's host and pid; a lock whose process
    on this host is gone is stale and taken over. S3 has no exclusive create here: the lock object is written, read
    back to confirm the token is ours, and taken over when older than S3_LOCK_STALE_SECONDS.
    """
    token = {"host": socket.gethostname(), "pid": os.getpid(), "token": uuid.uuid4().hex, "since": time.time()}
    path = wh.path(LOCK_NAME)
    data = json.dumps(token).encode()
    if wh.is_local:
        wh.fs.makedirs(wh.root, exist_ok=True)
        for _ in range(2):
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                holder = _read_lock(wh)
                stale = holder is not None and holder.get("host") == token["host"] and isinstance(
                    holder.get("pid"), int) and not _pid_alive(holder["pid"])
                if stale:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(path)
                    continue
                raise CompactionRunning(_running_line(wh, holder)) from None
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            break
        else:
            raise CompactionRunning(_running_line(wh, _read_lock(wh)))
    else:
        holder = _read_lock(wh) if wh.fs.exists(path) else None
        if holder is not None and time.time() - float(holder.get("since", 0)) < S3_LOCK_STALE_SECONDS:
            raise CompactionRunning(_running_line(wh, holder))
        wh.fs.pipe_file(path, data)
        time.sleep(0.2)  # a concurrent writer's PUT lands now or never: the last one wins, the other backs off
        if (_read_lock(wh) or {}).get("token") != token["token"]:
            raise CompactionRunning(_running_line(wh, _read_lock(wh)))
    try:
        yield
    finally:
        if (_read_lock(wh) or {}).get("token") == token["token"]:
            with contextlib.suppress(FileNotFoundError):
                wh.fs.rm(path)


def _read_lock(wh: Warehouse) -> dict[str, Any] | None:
    try:
        holder = json.loads(wh.fs.cat_file(wh.path(LOCK_NAME)))
    except (OSError, ValueError):
        return None
    return holder if isinstance(holder, dict) else None


def _running_line(wh: Warehouse, holder: dict[str, Any] | None) -> str:
    who = ""
    if holder:
        since = dt.datetime.fromtimestamp(float(holder.get("since", 0)), dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        who = f" (pid {holder.get('pid')} on {holder.get('host')}, since {since})"
    return (f"another compaction of {wh.url} is running{who}; run compact again when it has finished "
            f"(a lock left by a dead compaction: remove {wh.url_of(wh.path(LOCK_NAME))})")


def _derivable(table: str, data: pyarrow.Table) -> dict[str, pyarrow.Array]:
    """The columns added since `data` was written that its older columns give (the catalog's views agree)."""
    if table != "environments" or "spec_json" not in data.column_names:
        return {}
    from schemas.envspec import derived_from_spec_json

    pairs = [derived_from_spec_json(text) for text in data.column("spec_json").to_pylist()]
    return {"tool_interface": pyarrow.array([pair[0] for pair in pairs], pyarrow.string()),
            "story": pyarrow.array([pair[1] for pair in pairs], pyarrow.string())}


def _read_as_table(wh: Warehouse, table: str, path: str) -> pyarrow.Table:
    """One file's rows in the table's current schema (columns added since it was written are derived, or null;
    columns renamed since are read under their current names)."""
    schema = arrow_schema(table)
    data = pq.read_table(wh.path(path), filesystem=wh.fs)
    renamed = RENAMED.get(table, {})
    data = data.rename_columns([renamed[name] if name in renamed and renamed[name] not in data.column_names
                                else name for name in data.column_names])
    derived = _derivable(table, data) if any(f.name not in data.column_names for f in schema) else {}
    columns = [data.column(f.name).cast(f.type) if f.name in data.column_names
               else derived.get(f.name, pyarrow.nulls(data.num_rows, f.type)) for f in schema]
    # a column added after the file was written is null there, even where the table's model requires a value
    fields = [f.with_nullable(f.nullable or column.null_count > 0) for f, column in zip(schema, columns, strict=True)]
    return pyarrow.Table.from_arrays(columns, schema=pyarrow.schema(fields))


def compact(wh: Warehouse, min_files: int = 2) -> list[str]:
    """Merge the visible files of each table and date partition into one file; one line per merge done.

    Only files of finished shards are merged (a shard committed short of its count is re-landed under the same
    name by a later run). A damaged committed file refuses the compaction, naming it: compacting the rest would
    hide it in a merged partition (repair or re-land it first). Files replaced by an earlier compaction that are
    still present (it stopped before deleting them) are deleted. One compaction at a time: a second one is
    refused with CompactionRunning (see ``compaction_lock``).
    """
    with compaction_lock(wh):
        return _compact(wh, min_files)


def _compact(wh: Warehouse, min_files: int) -> list[str]:
    markers, problems = read_markers(wh)
    if problems:
        raise WarehouseError(problems[0])
    visible = visible_files(wh, markers)
    listed, _ = _listings(markers)
    damaged = damaged_files(wh, visible)
    if damaged:
        lines = [f"{wh.url_of(wh.path(p))} ({why})" for files in damaged.values() for p, why in sorted(files.items())]
        raise WarehouseError(f"compaction refused: {len(lines)} damaged committed file(s): {'; '.join(lines[:3])}"
                             f"{'; ...' if len(lines) > 3 else ''}; restore or re-land them (vhd warehouse check "
                             "lists them)")
    broken: set[str] = set()
    done = []
    partitions: dict[str, dict[str, list[str]]] = defaultdict(dict)
    for table, paths in visible.items():
        for path in paths:
            date = path.split("/")[1][len("date="):]
            partitions[date].setdefault(table, []).append(path)
    for date, tables in sorted(partitions.items()):
        finished = committed_shards(wh, date)
        merged_files: dict[str, list[str]] = {}
        replaces: list[list[str]] = []
        for table, paths in sorted(tables.items()):
            inputs = [p for p in paths if p not in broken
                      and posixpath.basename(p)[len("part-"):-len(".parquet")] in finished]
            if len(inputs) < min_files:
                continue
            digest = hashlib.sha256("\n".join(inputs).encode()).hexdigest()[:16]
            target = f"{table}/date={date}/part-compact-{digest}.parquet"
            parts = [_read_as_table(wh, table, p) for p in inputs]
            fields = [f.with_nullable(any(part.schema.field(f.name).nullable for part in parts))
                      for f in arrow_schema(table)]
            merged = pyarrow.concat_tables([part.cast(pyarrow.schema(fields)) for part in parts])
            write_atomically(wh, wh.path(target), parquet_bytes(table, merged))
            merged_files[table] = [target]
            replaces += sorted([name, path] for name, t, path in listed if t == table and path in inputs)
            done.append(f"table {table}, date {date}: {len(inputs)} files, {merged.num_rows} rows -> {target}")
        if not merged_files:
            continue
        name = COMPACTION_PREFIX + hashlib.sha256(json.dumps(replaces).encode()).hexdigest()[:16]
        marker = {"run_id": name, "date": date, "kind": "compaction", "files": merged_files, "replaces": replaces,
                  "committed_at": dt.datetime.now(dt.UTC).isoformat(), "summary": {}}
        write_atomically(wh, wh.path(f"{COMMITS_DIR}/date={date}/{name}.json"),
                          json.dumps(marker, indent=2, sort_keys=True).encode())
    # delete every replaced file that no marker shows any more (this run's inputs, or an interrupted run's)
    markers, _ = read_markers(wh)
    still = {p for paths in visible_files(wh, markers).values() for p in paths}
    _, replaced = _listings(markers)
    for path in sorted({p for _, p in replaced} - still):
        if wh.fs.exists(wh.path(path)):
            wh.fs.rm(wh.path(path))
    return done
