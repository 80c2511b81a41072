"""The DuckDB catalog: one view per table over the committed files, and read-only SQL queries."""

from __future__ import annotations

import re

import duckdb
import pyarrow

from schemas.columns import TABLES, arrow_schema
from warehouse.index import StateIndex, state_index
from warehouse.location import Warehouse
from warehouse.maintenance import visible_files

_DUCKDB_TYPES = {
    pyarrow.string(): "VARCHAR",
    pyarrow.int64(): "BIGINT",
    pyarrow.float64(): "DOUBLE",
    pyarrow.bool_(): "BOOLEAN",
    pyarrow.timestamp("ns", tz="UTC"): "TIMESTAMPTZ",
}
_EXPLAIN = re.compile(r"^\s*explain(\s+analyze)?\s+(.*)$", re.IGNORECASE | re.DOTALL)


class QueryError(ValueError):
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


def _read_parquet(wh: Warehouse, paths: list[str], row_ids: bool = False) -> str:
    urls = ", ".join(_literal(wh.url_of(wh.path(path))) for path in paths)
    extra = ", filename=true, file_row_number=true" if row_ids else ""
    return f"read_parquet([{urls}], hive_partitioning=true, union_by_name=true, hive_types={{'date': DATE}}{extra})"


def _shadow_table(table: str) -> str:
    return f"_vhd_shadowed_{table}"


def _view_sql(wh: Warehouse, table: str, files: list[str], damaged: dict[str, str] | None = None,
              shadowed: dict[str, list[int]] | None = None) -> str:
    """The SELECT behind one table's view: its visible files, an empty typed relation, or a refusal if damaged.

    Rows shadowed by an earlier landing of the same key (warehouse.index) are left out by an anti-join on
    (file, row number) with the ``_vhd_shadowed_<table>`` table; files without such rows are a plain scan.
    """
    columns = _columns(table)
    if damaged:
        select = ", ".join(f'CAST(NULL AS {kind}) AS "{name}"' for name, kind in columns)
        return f"SELECT {select} FROM (SELECT 1) WHERE error({_literal(_refusal(wh, table, damaged))}) IS NULL"
    if not files:
        select = ", ".join(f'CAST(NULL AS {kind}) AS "{name}"' for name, kind in columns)
        return f"SELECT {select} WHERE false"
    select = ", ".join(f'CAST("{name}" AS {kind}) AS "{name}"' for name, kind in columns)
    shadowed = shadowed or {}
    clean = [path for path in files if path not in shadowed]
    parts = [f"SELECT {select} FROM {_read_parquet(wh, clean)}"] if clean else []
    if shadowed:
        parts.append(f"SELECT {select} FROM {_read_parquet(wh, sorted(shadowed), row_ids=True)} AS r ANTI JOIN "
                     f'"{_shadow_table(table)}" AS s ON r.filename = s.filename AND '
                     "r.file_row_number = s.file_row_number")
    return " UNION ALL ".join(parts)


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


def connect(wh: Warehouse, sql: str | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with one view per table over the warehouse's visible files.

    A table with a damaged file (unreadable, missing, foreign columns) gets a view that fails naming the file
    when a query reads it; the other tables answer (see warehouse.maintenance for why it refuses). Damage and
    repeated landings come from the state index (warehouse.index), built once per warehouse state. Given the
    query `sql`, only the tables it names get views over their files (the others are empty).
    """
    con = duckdb.connect(":memory:")
    con.execute("SET TimeZone = 'UTC'")
    con.execute("SET parquet_metadata_cache = true")  # the index build and the query read each footer once
    if not wh.is_local:
        con.register_filesystem(wh.fs)
    files = visible_files(wh)
    index: StateIndex = state_index(wh, files, con)
    wanted = _referenced_tables(sql)
    for table in TABLES:
        shadowed = index.shadowed.get(table)
        if shadowed and table in wanted:
            _create_shadow_table(con, wh, table, shadowed)
        listed = files[table] if table in wanted else []
        view = _view_sql(wh, table, listed, index.damaged.get(table), shadowed if table in wanted else None)
        con.execute(f'CREATE VIEW "{table}" AS {view}')
    return con


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
            inner = _EXPLAIN.match(statement.query)
            if inner is None:
                raise QueryError(
                    "only read-only SELECT queries are allowed; got EXPLAIN of an unrecognised statement"
                )
            check_read_only(inner.group(2))
        elif kind != duckdb.StatementType.SELECT:
            raise QueryError(f"only read-only SELECT queries are allowed; got {kind.name}")


def _lock_down(con: duckdb.DuckDBPyConnection, wh: Warehouse) -> None:
    """Let queries read the warehouse only: no other files, no settings changes."""
    con.execute(f"SET allowed_directories = [{_literal(wh.url_of(wh.root) + '/')}]")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


def run_query(wh: Warehouse, sql: str) -> pyarrow.Table:
    """Run a read-only SQL query over the warehouse views and return its result as an Arrow table.

    A file that vanishes while the query runs (a compaction replaced and deleted it after the views were made)
    makes the query run once more over the markers as they are then.
    """
    check_read_only(sql)
    try:
        return _run_once(wh, sql, retry=True)
    except _Vanished:  # the new views see the compacted file, or name the missing one
        return _run_once(wh, sql, retry=False)


class _Vanished(Exception):
    """A file could not be opened: it may have been replaced between listing the markers and reading it."""


def _run_once(wh: Warehouse, sql: str, retry: bool) -> pyarrow.Table:
    con = connect(wh, sql)
    try:
        _lock_down(con, wh)
        relation = con.sql(sql)
        if relation is None:
            raise QueryError("query returned no result; give a SELECT statement")
        return relation.to_arrow_table()
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
    finally:
        con.close()
