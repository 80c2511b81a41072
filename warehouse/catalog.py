"""The DuckDB catalog: one view per table over the committed files, and read-only SQL queries."""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import itertools
import os
import re
import shutil
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Iterator

import duckdb
import pyarrow

from schemas.columns import RENAMED, TABLES, arrow_schema
from schemas.errors import ResourceExhausted, UserError
from warehouse.index import StateIndex, current_state, state_index, visible_files_cached
from warehouse.location import Warehouse

_DUCKDB_TYPES = {
    pyarrow.string(): "VARCHAR",
    pyarrow.int64(): "BIGINT",
    pyarrow.float64(): "DOUBLE",
    pyarrow.bool_(): "BOOLEAN",
    pyarrow.timestamp("ns", tz="UTC"): "TIMESTAMPTZ",
}
# Columns added to a table after files were written, derived by the views from those files' older columns (the
# same derivation as schemas.envspec.derived_from_spec_json, which landing and compaction write).
_TOOL_NAMES = "list_sort(json_extract_string(spec_json, '$.rendering.tools[*].name'))"
_DERIVED: dict[str, dict[str, str]] = {
    "environments": {
        "tool_interface": f"CASE WHEN json_valid(spec_json) THEN md5(nullif(array_to_string({_TOOL_NAMES}, ','), '')) "
                          "END",
        "story": "CASE WHEN json_valid(spec_json) THEN split_part(json_extract_string(spec_json, "
                 "'$.rendering.written_prompt'), chr(10) || chr(10), 1) END",
    },
}
_EXPLAIN = re.compile(r"^\s*explain(\s+analyze)?\s+(.*)$", re.IGNORECASE | re.DOTALL)


class QueryError(UserError):
    """A refused or failed catalog query (one-line message)."""


def _literal(text: str) -> str:
    """A SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def _columns(table: str) -> list[tuple[str, str]]:
    """The (name, DuckDB type) of every column of a table view, the ``date`` partition last."""
    return [(field.name, _DUCKDB_TYPES[field.type]) for field in arrow_schema(table)] + [("date", "DATE")]


def _refusal(wh: Warehouse, table: str, damaged: dict[str, str]) -> str:
    """One line naming a table's damaged files: what a query over that table fails with."""
    shown = [f"{wh.url_of(wh.path(path))} ({why})" for path, why in sorted(damaged.items())[:3]]
    more = f" and {len(damaged) - 3} more" if len(damaged) > 3 else ""
    return (f"table {table} has {len(damaged)} damaged file(s): {'; '.join(shown)}{more}; an answer without them "
            "would be silently partial, so the query is refused; see vhd warehouse check")


def _read_parquet(wh: Warehouse, paths: list[str], row_ids: bool = False, mixed: bool = False) -> str:
    urls = ", ".join(_literal(wh.url_of(wh.path(path))) for path in paths)
    extra = ", filename=true, file_row_number=true" if row_ids else ""
    extra += ", union_by_name=true" if mixed else ""
    return f"read_parquet([{urls}], hive_partitioning=true, hive_types={{'date': DATE}}{extra})"


def _shadow_table(table: str) -> str:
    return f"_vhd_shadowed_{table}"


def _quoted(name: str) -> str:
    return f'"{name}"'


def _column_source(table: str, name: str, paths: list[str], lacking: dict[str, list[str]],
                   renamed: dict[str, list[str]] | None = None) -> str:
    """How a view reads one column from files: as it is, under its old name, derived from older columns, or null.

    ``lacking`` names the columns each file was written without; a file absent from it has them all. ``renamed``
    names the old names (``schemas.columns.RENAMED``) each file holds: such a file lacks the current name, and
    its old column is read instead (files lacking columns are read together by name, so a file without the old
    column gives nulls there).
    """
    lacked_by = [path for path in paths if name in lacking.get(path, ())]
    if not lacked_by:
        return _quoted(name)
    held = {old for path in lacked_by for old in (renamed or {}).get(path, ())}
    sources = [] if len(lacked_by) == len(paths) else [_quoted(name)]
    sources += [_quoted(old) for old, new in RENAMED.get(table, {}).items() if new == name and old in held]
    if name in _DERIVED.get(table, {}):
        sources.append(_DERIVED[table][name])
    if not sources:
        return "NULL"
    return sources[0] if len(sources) == 1 else f"coalesce({', '.join(sources)})"


def _typed_nulls(table: str) -> str:
    return ", ".join(f'CAST(NULL AS {kind}) AS "{name}"' for name, kind in _columns(table))


def _view_sql(wh: Warehouse, table: str, files: list[str], damaged: dict[str, str] | None = None,
              shadowed: dict[str, list[int]] | None = None, lacking: dict[str, list[str]] | None = None,
              renamed: dict[str, list[str]] | None = None) -> str:
    """The SELECT behind one table's view: its visible files, an empty typed relation, or a refusal if damaged.

    Files with every column of the table are read as they are; files written before columns were added or
    renamed (``lacking``; ``renamed``: the old names each holds) are read apart, reconciled by name, with nulls
    for the columns none of them has. Rows shadowed by an earlier landing of the same key (warehouse.index) are
    left out by an anti-join on (file, row number) with the ``_vhd_shadowed_<table>`` table; files without such
    rows are a plain scan.
    """
    if damaged:
        refusal = _literal(_refusal(wh, table, damaged))
        return f"SELECT {_typed_nulls(table)} FROM (SELECT 1) WHERE error({refusal}) IS NULL"
    if not files:
        return f"SELECT {_typed_nulls(table)} WHERE false"
    shadowed, lacking = shadowed or {}, lacking or {}
    parts = []
    for rows in (False, True):
        for lacks in (False, True):
            paths = [path for path in files if (path in shadowed) == rows and (path in lacking) == lacks]
            if paths:
                parts.append(_files_sql(wh, table, paths, rows, lacks, lacking, renamed or {}))
    return " UNION ALL ".join(parts)


def _files_sql(wh: Warehouse, table: str, paths: list[str], rows: bool, lacks: bool,
               lacking: dict[str, list[str]], renamed: dict[str, list[str]]) -> str:
    """One group of a view's files: the same read options, and an anti-join on shadowed rows when `rows`."""
    select = ", ".join(f"CAST({_column_source(table, name, paths, lacking, renamed)} AS {kind}) AS {_quoted(name)}"
                       for name, kind in _columns(table))
    source = _read_parquet(wh, paths, row_ids=rows, mixed=lacks)
    if not rows:
        return f"SELECT {select} FROM {source}"
    return (f'SELECT {select} FROM {source} AS r ANTI JOIN "{_shadow_table(table)}" AS s '
            "ON r.filename = s.filename AND r.file_row_number = s.file_row_number")


def _create_shadow_table(con: duckdb.DuckDBPyConnection, wh: Warehouse, table: str,
                         shadowed: dict[str, list[int]]) -> None:
    names = [wh.url_of(wh.path(path)) for path, rows in shadowed.items() for _ in rows]
    rows = [row for path in shadowed for row in shadowed[path]]
    data = pyarrow.table({"filename": pyarrow.array(names, pyarrow.string()),
                          "file_row_number": pyarrow.array(rows, pyarrow.int64())})
    con.from_arrow(data).create(_shadow_table(table))


def _referenced_tables(sql: str | None) -> set[str]:
    """The tables a query names (all of them when there is no query): only their views read files."""
    if sql is None:
        return set(TABLES)
    try:
        return {name.split(".")[-1].strip('"') for name in duckdb.get_table_names(sql)} & set(TABLES)
    except duckdb.Error:  # let the query itself report what is wrong with it
        return set(TABLES)


_SPILL: list[str] = []  # this process's private folder for DuckDB's spill files (made on first use)
_SPILL_COUNT = itertools.count()
_SPILL_LOCK = threading.Lock()


SPILL_PREFIX = "vhd-duckdb-"
SPILL_OWNER = ".owner"  # in a spill folder: the file its process holds a shared flock on for as long as it lives
_SPILL_OWNER_FD: list[int] = []


def _spill_directory() -> str:
    """A fresh folder for one connection's spill files, inside a private (0700) folder of this process.

    DuckDB's default temp_directory is `<cwd>/.tmp`, and DuckDB lets queries read its temp directory whatever
    allowed_directories says: a query could read any `.tmp/` file of the working directory. This folder holds
    DuckDB's own spill files only, and is removed when the process exits; a process killed before (SIGKILL) leaves
    it, and the next process's first query removes it (`_remove_stale_spill_folders`).
    """
    with _SPILL_LOCK:
        if not _SPILL:
            _remove_stale_spill_folders()
            try:
                folder = tempfile.mkdtemp(prefix=SPILL_PREFIX)
                owner = os.open(os.path.join(folder, SPILL_OWNER), os.O_CREAT | os.O_RDONLY, 0o600)
            except OSError as error:  # a full or unwritable /tmp: "No usable temporary directory", ENOSPC
                raise ResourceExhausted(f"no usable temporary folder for DuckDB's spill files ({error}): free space "
                                        "in it, or set TMPDIR to a writable folder with space, and run it again",
                                        error.errno) from error
            fcntl.flock(owner, fcntl.LOCK_SH)  # released by the OS however this process ends
            _SPILL_OWNER_FD.append(owner)
            _SPILL.append(folder)
            atexit.register(shutil.rmtree, folder, ignore_errors=True)
        return os.path.join(_SPILL[0], str(next(_SPILL_COUNT)))


def _remove_stale_spill_folders() -> None:
    """Remove the spill folders of processes that are gone (a SIGKILLed `vhd query` leaves its folder): those of
    this user in the temporary folder whose owner file no process holds a lock on any more. A folder without an
    owner file (being made now, or by an older version) is left alone."""
    try:
        root = tempfile.gettempdir()
        names = [name for name in os.listdir(root) if name.startswith(SPILL_PREFIX)]
    except OSError:
        return
    for name in names:
        folder = os.path.join(root, name)
        try:
            if os.lstat(folder).st_uid != os.getuid():
                continue
            fd = os.open(os.path.join(folder, SPILL_OWNER), os.O_RDONLY)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # only when its process is gone
        except OSError:
            continue  # alive
        finally:
            os.close(fd)
        shutil.rmtree(folder, ignore_errors=True)


def _open(wh: Warehouse) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(":memory:", config={"temp_directory": _spill_directory()})
    con.execute("SET TimeZone = 'UTC'")
    con.execute("SET parquet_metadata_cache = true")  # the index build and the queries read each footer once
    if not wh.is_local:
        con.register_filesystem(wh.fs)
    return con


def _create_view(con: duckdb.DuckDBPyConnection, wh: Warehouse, table: str, files: list[str],
                 index: StateIndex) -> None:
    view = _view_sql(wh, table, files, index.damaged.get(table), index.shadowed.get(table), index.lacking.get(table),
                     index.renamed.get(table))
    con.execute(f'CREATE VIEW "{table}" AS {view}')


def connect(wh: Warehouse, sql: str | None = None) -> duckdb.DuckDBPyConnection:
    """A private in-memory DuckDB connection with one view per table over the warehouse's visible files.

    A table with a damaged file (unreadable, missing, foreign columns) gets a view that fails naming the file
    when a query reads it; the other tables answer (see warehouse.visibility for why it refuses). Damage and
    repeated landings come from the state index (warehouse.index), built once per warehouse state. Given the
    query `sql`, only the tables it names get views over their files (the others are empty).
    """
    con = _open(wh)
    files = visible_files_cached(wh)
    index = state_index(wh, files, con)
    wanted = _referenced_tables(sql)
    for table in TABLES:
        if table in wanted and index.shadowed.get(table):
            _create_shadow_table(con, wh, table, index.shadowed[table])
        _create_view(con, wh, table, files[table] if table in wanted else [], index)
    return con


class _StateCatalog:
    """One warehouse state's locked-down database, shared by the queries of this process (one cursor each).

    DuckDB costs ~15 ms to open and re-reads Parquet footers per connection; a process that queries the same
    state again (a notebook, the HTTP server, vhd eval, the report) pays that once. Views are created on first
    use, so a query reads only the footers of the tables it names.
    """

    def __init__(self, wh: Warehouse, files: dict[str, list[str]], con: duckdb.DuckDBPyConnection,
                 index: StateIndex) -> None:
        self.wh, self.files, self.con, self.index = wh, files, con, index
        self.views: set[str] = set()
        self.lock = threading.Lock()
        self.users, self.retired = 0, False
        for table, shadowed in index.shadowed.items():
            _create_shadow_table(con, wh, table, shadowed)
        # the state's key holds every visible file's size and stamp (ETag on S3): within one state the files are
        # known unchanged, so DuckDB's in-memory cache of remote file blocks need not re-check them per query
        con.execute("SET validate_external_file_cache = 'NO_VALIDATION'")
        _lock_down(con, wh)

    @contextlib.contextmanager
    def cursor(self, tables: set[str]) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection to the shared database with the views of `tables` (the tables a query names) made."""
        with self.lock:
            if self.retired:
                raise _Vanished()  # a newer state replaced this one between the lookup and now: look again
            for table in sorted(tables - self.views):
                _create_view(self.con, self.wh, table, self.files[table], self.index)
                self.views.add(table)
            cursor = self.con.cursor()
            self.users += 1
        try:
            yield cursor
        finally:
            cursor.close()
            with self.lock:
                self.users -= 1
                if self.retired and not self.users:
                    self.con.close()

    def retire(self) -> None:
        """Close the database once no query uses it (a query still running on it finishes first)."""
        with self.lock:
            self.retired = True
            if not self.users:
                self.con.close()


_STATES: OrderedDict[tuple[str, str], _StateCatalog] = OrderedDict()
_STATES_LOCK = threading.Lock()
_KEPT_STATES = 2


def _state_catalog(wh: Warehouse) -> _StateCatalog:
    """The shared database of the warehouse's current state (built on first use, the oldest dropped)."""
    files = visible_files_cached(wh)
    state = current_state(wh, files)
    key = (wh.url, state[0])
    with _STATES_LOCK:
        found = _STATES.get(key)
        if found is not None:
            _STATES.move_to_end(key)
            return found
        con = _open(wh)
        try:
            catalog = _StateCatalog(wh, files, con, state_index(wh, files, con, state))
        except BaseException:
            con.close()
            raise
        _STATES[key] = catalog
        while len(_STATES) > _KEPT_STATES:
            _STATES.popitem(last=False)[1].retire()
        return catalog


def _one_line(error: Exception) -> str:
    """The first non-empty line of an error's message."""
    return next((line.strip() for line in str(error).splitlines() if line.strip()), type(error).__name__)


def check_read_only(sql: str) -> None:
    """Accept only SELECT statements (and EXPLAIN of one); QueryError with one line otherwise."""
    if not isinstance(sql, str) or not sql.strip():
        raise QueryError("empty query; give one SELECT statement, e.g. SELECT count(*) FROM environments")
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as error:
        raise QueryError(f"query does not parse: {_one_line(error)}") from None
    if not statements:
        raise QueryError("query holds no statement (only comments?); give one SELECT statement")
    for statement in statements:
        kind = statement.type
        if kind == duckdb.StatementType.EXPLAIN:
            inner = _EXPLAIN.match(_without_leading_comments(statement.query))
            if inner is None:
                raise QueryError(
                    "only read-only SELECT queries are allowed; got EXPLAIN of an unrecognised statement"
                )
            check_read_only(inner.group(2))
        elif kind != duckdb.StatementType.SELECT:
            raise QueryError(f"only read-only SELECT queries are allowed; got {_statement_name(statement)}")
    if len(statements) > 1:  # DuckDB would run them all and answer with the last one's result only
        raise QueryError(f"one statement per query: got {len(statements)} statements separated by ';'; "
                         "run each one as its own query")


_LEADING_COMMENTS = re.compile(r"^(\s+|--[^\n]*(\n|$)|/\*.*?\*/)*", re.DOTALL)
# statements DuckDB parses as another kind: INSTALL as LOAD, IMPORT DATABASE as PRAGMA
_MISNAMED = re.compile(r"^((force\s+)?install|import\s+database)\b", re.IGNORECASE)


def _without_leading_comments(text: str) -> str:
    return text[_LEADING_COMMENTS.match(text).end():]


def _statement_name(statement) -> str:
    """The statement's kind as the user wrote it (DuckDB's type, except where DuckDB files it under another)."""
    misnamed = _MISNAMED.match(_without_leading_comments(statement.query))
    return " ".join(misnamed.group(1).upper().split()) if misnamed else statement.type.name


def _lock_down(con: duckdb.DuckDBPyConnection, wh: Warehouse) -> None:
    """Let queries read the warehouse only: no other files, no settings changes."""
    con.execute(f"SET allowed_directories = [{_literal(wh.url_of(wh.root) + '/')}]")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


def run_query(wh: Warehouse, sql: str) -> pyarrow.Table:
    """Run a read-only SQL query over the warehouse views and return its result as an Arrow table.

    A file that vanishes while the query runs (a compaction replaced and deleted it after the views were made),
    or a state that a newer one replaced while the query waited, makes the query run again over the markers as
    they are then.
    """
    check_read_only(sql)
    for attempt in range(_TRIES):
        try:
            return _run_once(wh, sql, retry=attempt < _TRIES - 1)
        except _Vanished:  # the new views see the compacted file, or name the missing one
            continue
    raise QueryError("the warehouse kept changing while the query ran (compactions or commits); run it again")


_TRIES = 3


class _Vanished(Exception):
    """A file could not be opened: it may have been replaced between listing the markers and reading it."""


_RUNNING: set = set()  # the cursors of the queries running now: interrupt_queries() stops them


def interrupt_queries() -> None:
    """Stop every query running now (Ctrl-C, `vhd query --timeout`): each raises QueryError (INTERRUPT)."""
    for con in list(_RUNNING):
        con.interrupt()


def _run_once(wh: Warehouse, sql: str, retry: bool) -> pyarrow.Table:
    try:
        with _state_catalog(wh).cursor(_referenced_tables(sql)) as con:
            _RUNNING.add(con)
            try:
                relation = con.sql(sql)
                if relation is None:
                    raise QueryError("query returned no result; give a SELECT statement")
                return relation.to_arrow_table()
            finally:
                _RUNNING.discard(con)
    except duckdb.PermissionException as error:
        target = _one_line(error).split(" - ")[0].removeprefix("Permission Error: ").removeprefix("Cannot access ")
        raise QueryError(
            f"Permission denied: the query reads outside the warehouse ({target}); only the views "
            f"{', '.join(TABLES)} and files under {wh.url_of(wh.root)}/ can be read"
        ) from None
    except duckdb.IOException as error:
        if retry:
            raise _Vanished() from None
        raise QueryError(_one_line(error)) from None
    except duckdb.Error as error:
        raise QueryError(_one_line(error)) from None
