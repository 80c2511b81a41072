"""The warehouse's visibility model, which every query uses: which files are visible (committed and not replaced),
which are damaged, and what columns each holds (its schema read from the Parquet footer).

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
same path by a marker written after the compaction is not replaced.

**Schema evolution.** A file may lack columns that were added to its table later (they read as nulls); it must
hold its table's key column, and every column it holds must be one of the table's, with the table's type. A column
renamed since the file was written (``schemas.columns.RENAMED``, e.g. environments.difficulty -> tier) is read
under its current name.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import duckdb
import pyarrow

from schemas.columns import RENAMED, TABLES, arrow_schema
from warehouse.commits import COMMITS_DIR
from warehouse.location import Warehouse, WarehouseError


def literal(text: str) -> str:
    """A string as an SQL literal (quotes doubled)."""
    return "'" + text.replace("'", "''") + "'"


def one_line(error: BaseException) -> str:
    """An error's message on one line (its type when it has none)."""
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
            problems.append(f"commit marker {wh.url_of(path)} is unreadable ({one_line(error)}); remove or rewrite it")
    return markers, problems


def listings(markers: dict[str, dict[str, Any]]) -> tuple[set[tuple[str, str, str]], set[tuple[str, str]]]:
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
    listed, replaced = listings(markers)
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
        f"[{', '.join(literal(url) for url in urls)}])"
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
    con = con or connection(wh)
    damaged: dict[str, dict[str, str]] = {}
    lacking: dict[str, dict[str, list[str]]] = {}
    old_names: dict[str, dict[str, list[str]]] = {}
    try:
        for table, paths in files.items():
            if not paths:
                continue
            existing = present[table] if present is not None else set(table_files_on_disk(wh, table))
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
                        damaged.setdefault(table, {})[path] = f"unreadable: {one_line(error)}"
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


def connection(wh: Warehouse) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection that reads the warehouse's filesystem."""
    con = duckdb.connect(":memory:")
    if not wh.is_local:
        con.register_filesystem(wh.fs)
    return con


def table_files_on_disk(wh: Warehouse, table: str) -> list[str]:
    """Every file under a table's folder, listed or not (relative paths, sorted)."""
    if not wh.fs.exists(wh.path(table)):
        return []
    return sorted(wh.strip(p)[len(wh.root) + 1 :] for p in wh.fs.find(wh.path(table)))
