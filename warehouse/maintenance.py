"""Warehouse upkeep: `vhd warehouse check`, `clean` and `compact`, and the compaction lock. Which files a query sees
and which are damaged is the visibility model (warehouse.visibility), which every query uses.

**Compaction.** A compaction merges a partition's visible files into one and publishes it with one compaction
marker, which replaces the merged files' listings (warehouse.visibility). Old files are deleted after the marker; a
query that listed the markers just before and then misses a deleted file runs once more (``catalog.run_query``).
Compaction may run beside generation runs, but not beside another compaction of the same warehouse: two
compactions that saw different listings would each publish a merged copy of the rows both saw.

**Leftovers.** A process killed while landing (SIGKILL, a lost machine) leaves files no marker lists: shard
files of a run that never committed, ``*.tmp-*`` files of an interrupted atomic write. They are invisible to every
query, so ``check`` reports them as leftovers (a line of their own, exit code 0 when nothing else is wrong), and
``clean`` deletes those older than ``CLEAN_MIN_AGE_HOURS`` (24 h: longer than any run takes to land and commit,
so the files of a run still in progress are never touched), and files a compaction replaced that are still
present. Only one compaction runs at a time: it holds ``_compaction.lock`` (see ``compaction_lock``).
"""

from __future__ import annotations

import contextlib
import datetime as dt
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

from platformkit.processes import create_exclusive, holder_gone
from schemas.columns import RENAMED, TABLES, arrow_schema
from schemas.errors import exhausted
from warehouse.commits import COMMITS_DIR, committed_shards, parquet_bytes, write_atomically
from warehouse.location import Warehouse, WarehouseError
from warehouse.visibility import (
    connection,
    damaged_files,
    listings,
    literal,
    read_markers,
    table_files_on_disk,
    visible_files,
)

COMPACTION_PREFIX = "compaction-"
_SHOWN = 20
CLEAN_MIN_AGE_HOURS = 24.0  # `vhd warehouse clean` leaves younger unlisted files alone: a run may still commit them
LOCK_NAME = "_compaction.lock"
S3_LOCK_STALE_SECONDS = 6 * 3600  # an S3 lock older than this is taken over (its compaction died)


def _duplicate_keys(con: duckdb.DuckDBPyConnection, wh: Warehouse, table: str, paths: list[str]) -> list[str]:
    """One line per key value held by more than one visible file of a table."""
    if len(paths) < 2:
        return []
    key = arrow_schema(table)[0].name
    urls = ", ".join(literal(wh.url_of(wh.path(p))) for p in paths)
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


def _tampered_rows(con: duckdb.DuckDBPyConnection, wh: Warehouse, paths: list[str]) -> list[str]:
    """One line per environment whose spec_json no longer hashes to its env_id (edited after landing): a reader
    would serve the edited spec under the landed id. Landing writes the spec's canonical JSON, so the hash of the
    stored text is checked in SQL; a row that differs is parsed and its canonical form hashed (a spec stored in
    another key order before that), and only a row that differs both ways, or does not parse, is reported. Rows
    whose env_id is not of the form `<family>-<16 hex digits>` are not environments this project landed.

    A spec longer than MAX_SPEC_JSON_CHARS is reported from its length, measured in SQL (its text is never read
    out), and so is a row of a family this vhd does not know (every reader refuses both); each row is reported once,
    for the first of these it fails."""
    if not paths:
        return []
    import mechanisms
    from schemas.envspec import MAX_SPEC_JSON_CHARS, EnvSpec

    urls = ", ".join(literal(wh.url_of(wh.path(p))) for p in paths)
    landed = (f"FROM read_parquet([{urls}], union_by_name=true) "
              "WHERE regexp_matches(env_id, '^[a-z0-9_]+-[0-9a-f]{16}$')")
    lines = [f"table environments: env_id {env_id} holds a spec_json of {chars:,} characters, over the limit of "
             f"{MAX_SPEC_JSON_CHARS:,} (no real environment comes near it; readers refuse it); fix: restore the file "
             "from its source, or land the run again"
             for env_id, chars in con.execute(f"SELECT env_id, length(spec_json) {landed} AND length(spec_json) > "
                                              f"{MAX_SPEC_JSON_CHARS} ORDER BY env_id").fetchall()]
    known = sorted(m.id for m in mechanisms.families())
    known_sql = ", ".join(literal(family) for family in known)
    lines += [f"table environments: env_id {env_id} is of family {family!r}, which this vhd does not know (it "
              f"knows {', '.join(known)}); fix: upgrade vhd if a newer one landed it, else restore the file from its "
              "source" for env_id, family in con.execute(
                  f"SELECT env_id, regexp_replace(env_id, '-[0-9a-f]{{16}}$', '') AS prefix {landed} "
                  f"AND regexp_replace(env_id, '-[0-9a-f]{{16}}$', '') NOT IN ({known_sql}) "
                  "ORDER BY env_id").fetchall()]
    rows = con.execute(
        f"SELECT env_id, spec_json {landed} AND length(spec_json) <= {MAX_SPEC_JSON_CHARS} "
        f"AND regexp_replace(env_id, '-[0-9a-f]{{16}}$', '') IN ({known_sql}) AND env_id IS DISTINCT "
        "FROM regexp_replace(env_id, '-[0-9a-f]{16}$', '') || '-' || left(sha256(spec_json), 16) "
        "ORDER BY env_id"
    ).fetchall()
    for env_id, spec_json in rows:
        try:
            recomputed = EnvSpec.model_validate_json(spec_json).env_id
        except ValueError:
            lines.append(f"table environments: env_id {env_id} holds a spec_json that does not parse as a spec "
                         "(edited after landing); fix: restore the file from its source, or land the run again")
            continue
        if recomputed != env_id:
            lines.append(f"table environments: env_id {env_id} holds a spec that hashes to {recomputed} (edited "
                         "after landing); fix: restore the file from its source, or land the run again")
    if len(lines) > _SHOWN:
        lines = [*lines[:_SHOWN], f"table environments: {len(lines) - _SHOWN} more edited specs"]
    return lines


def check(wh: Warehouse) -> list[str]:
    """Every problem of the warehouse, one line each: bad markers, damaged, missing, duplicated, edited specs
    (leftovers apart: see ``inspect``)."""
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
    listed, replaced = listings(markers)
    listed_paths = {path for _, _, path in listed}
    superseded = {path for _, path in replaced} - {p for paths in visible.values() for p in paths}
    found: dict[str, str] = {}
    for table in TABLES:
        for path in table_files_on_disk(wh, table):
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
    con = connection(wh)
    try:
        damaged = damaged_files(wh, visible, con)
        for table, files in damaged.items():
            problems += [f"table {table}: file {wh.url_of(wh.path(p))} is {why}" for p, why in sorted(files.items())]
        broken = {p for files in damaged.values() for p in files}
        for table in TABLES:
            problems += _duplicate_keys(con, wh, table, [p for p in visible[table] if p not in broken])
        problems += _tampered_rows(con, wh, [p for p in visible["environments"] if p not in broken])
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


def _created_lock(wh: Warehouse, path: str, data: bytes) -> bool:
    """create_exclusive, except that a lock file that could not be written whole (a full disk) is removed, not left
    empty to refuse every later compaction, and is one ResourceExhausted line naming the warehouse."""
    try:
        return create_exclusive(path, data)
    except OSError as error:
        with contextlib.suppress(FileNotFoundError):
            if os.path.getsize(path) == 0:  # ours, created but not written (another's holds its token)
                os.unlink(path)
        found = exhausted(error, f"writing the warehouse's compaction lock at {wh.url}",
                          "nothing was compacted")
        if found is None or found is error:
            raise
        raise found from error


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
            if _created_lock(wh, path, data):
                break
            holder = _read_lock(wh)
            if holder_gone(holder, token["host"]):  # its process on this host is gone: take the lock over
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
                continue
            raise CompactionRunning(_running_line(wh, holder))
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
    listed, _ = listings(markers)
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
    _, replaced = listings(markers)
    for path in sorted({p for _, p in replaced} - still):
        if wh.fs.exists(wh.path(path)):
            wh.fs.rm(wh.path(path))
    return done
