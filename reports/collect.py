"""Run every named query on one DuckDB connection over the warehouse views (optionally from a date on)."""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass, field

import duckdb
import pyarrow

from reports.named import NamedQuery, named_queries
from schemas.columns import TABLES
from warehouse.catalog import QueryError, check_read_only, connect
from warehouse.location import Warehouse


@dataclass
class Collected:
    """The answers of the named queries (by name), how long each took, and the selection they ran over."""

    since: str | None
    results: dict[str, pyarrow.Table] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def rows(self, name: str) -> list[dict]:
        """A query's answer as a list of row dicts."""
        return self.results[name].to_pylist()

    def one(self, name: str) -> dict:
        """The single row of a one-row query (an empty dict when it has none)."""
        rows = self.rows(name)
        return rows[0] if rows else {}


def parse_since(since: str | dt.date | None) -> str | None:
    """A --since value as an ISO date, or a one-line error naming the expected form."""
    if since is None or since == "":
        return None
    if isinstance(since, dt.date):
        return since.isoformat()
    try:
        return dt.date.fromisoformat(str(since)).isoformat()
    except ValueError:
        raise QueryError(f"--since {since!r} is not a date; give it as YYYY-MM-DD, e.g. 2026-12-01") from None


def _restrict(con: duckdb.DuckDBPyConnection, since: str) -> None:
    """Replace each table view by its rows of `since` and later (the date partition), under the same name."""
    for table in TABLES:
        con.execute(f'ALTER VIEW "{table}" RENAME TO "_vhd_all_{table}"')
        con.execute(f'CREATE VIEW "{table}" AS SELECT * FROM "_vhd_all_{table}" WHERE date >= DATE \'{since}\'')


def _lock_down(con: duckdb.DuckDBPyConnection, wh: Warehouse) -> None:
    """The same limits as `vhd query`: only files under the warehouse, no settings changes."""
    root = wh.url_of(wh.root).replace("'", "''") + "/"
    con.execute(f"SET allowed_directories = ['{root}']")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


def collect(wh: Warehouse, since: str | dt.date | None = None,
            queries: tuple[NamedQuery, ...] | None = None) -> Collected:
    """Answer every named query (each checked read-only first) on one connection with the warehouse views."""
    chosen = queries if queries is not None else named_queries()
    for query in chosen:
        check_read_only(query.sql)
    day = parse_since(since)
    collected = Collected(since=day)
    con = connect(wh)
    try:
        if day is not None:
            _restrict(con, day)
        _lock_down(con, wh)
        for query in chosen:
            started = time.perf_counter()
            try:
                collected.results[query.name] = con.sql(query.sql).to_arrow_table()
            except duckdb.Error as error:
                first = next((line for line in str(error).splitlines() if line.strip()), type(error).__name__)
                raise QueryError(f"report query {query.name} ({query.file}) failed: {first.strip()}") from None
            collected.seconds[query.name] = time.perf_counter() - started
    finally:
        con.close()
    return collected
