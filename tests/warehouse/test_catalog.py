"""Catalog: DuckDB views over committed files, environments dedup, read-only query guard, S3 round trip."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pandas as pd
import pytest

from schemas.tables import TABLES, arrow_schema
from tests.warehouse.test_landing import DATE, NOW, environments_frame, llm_calls_frame
from warehouse.catalog import QueryError, check_read_only, connect, run_query
from warehouse.landing import commit_run, land
from warehouse.location import resolve_warehouse


@pytest.fixture
def wh(tmp_path):
    """A fresh local warehouse."""
    return resolve_warehouse(str(tmp_path / "wh"))


def _land_run(wh, run_id, date, frames):
    """Land each (table, shard_key, frame) and commit them as one run."""
    files: dict[str, list[str]] = {}
    for table, shard_key, frame in frames:
        files.setdefault(table, []).append(land(wh, table, frame, date, shard_key))
    return commit_run(wh, run_id, date, files, {"shards": len(frames)})


@pytest.mark.parametrize("table", TABLES)
def test_empty_warehouse_has_typed_empty_views(wh, table):
    result = run_query(wh, f"SELECT * FROM {table}")
    assert result.num_rows == 0
    assert result.column_names == [field.name for field in arrow_schema(table)] + ["date"]
    assert run_query(wh, f"SELECT count(*) AS n FROM {table}").column("n").to_pylist() == [0]
    assert not Path(wh.root).exists()  # querying creates nothing


def test_round_trip_with_date_partition(wh):
    _land_run(
        wh,
        "run-a",
        DATE,
        [("llm_calls", "s1", llm_calls_frame(3)), ("environments", "s1", environments_frame(["e1"]))],
    )
    calls = run_query(
        wh, "SELECT call_id, cost_usd, cost_source, prompt_tokens, date FROM llm_calls ORDER BY call_id"
    )
    rows = calls.to_pylist()
    assert [row["call_id"] for row in rows] == ["c0", "c1", "c2"]
    assert [row["cost_usd"] for row in rows] == [0.002, None, None]
    assert [row["prompt_tokens"] for row in rows] == [100, None, None]
    assert {str(row["date"]) for row in rows} == {DATE}
    con = connect(wh)
    types = dict(
        con.execute(
            "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'llm_calls'"
        ).fetchall()
    )
    assert types["date"] == "DATE" and types["created_at"] == "TIMESTAMP WITH TIME ZONE"
    assert con.execute("SELECT count(*) FROM environments").fetchone() == (1,)
    assert con.execute("SELECT created_at FROM environments").fetchone()[0] == NOW.to_pydatetime()


def test_uncommitted_run_is_invisible(wh):
    land(wh, "llm_calls", llm_calls_frame(3), DATE, "s1")
    assert run_query(wh, "SELECT count(*) AS n FROM llm_calls").column("n").to_pylist() == [0]
    _land_run(wh, "run-a", DATE, [("llm_calls", "s1", llm_calls_frame(2))])
    assert run_query(wh, "SELECT count(*) AS n FROM llm_calls").column("n").to_pylist() == [2]


def test_retried_shard_is_not_duplicated(wh):
    land(wh, "llm_calls", llm_calls_frame(3), DATE, "s1")
    _land_run(wh, "run-a", DATE, [("llm_calls", "s1", llm_calls_frame(3))])
    _land_run(wh, "run-a", DATE, [("llm_calls", "s1", llm_calls_frame(3))])
    assert run_query(wh, "SELECT count(*) AS n FROM llm_calls").column("n").to_pylist() == [3]


def test_environments_deduplicated_across_runs(wh):
    early, late = NOW, NOW + pd.Timedelta(hours=1)
    _land_run(wh, "run-b", DATE, [("environments", "b1", environments_frame(["e1", "e2"], "run-b", late))])
    _land_run(wh, "run-a", "2025-02-28", [("environments", "a1", environments_frame(["e1"], "run-a", early))])
    rows = run_query(wh, "SELECT env_id, run_id, date FROM environments ORDER BY env_id").to_pylist()
    assert [(row["env_id"], row["run_id"], str(row["date"])) for row in rows] == [
        ("e1", "run-a", "2025-02-28"),
        ("e2", "run-b", DATE),
    ]


def test_several_dates_and_shards_union(wh):
    _land_run(
        wh, "run-a", DATE, [("llm_calls", "s1", llm_calls_frame(2)), ("llm_calls", "s2", llm_calls_frame(1))]
    )
    _land_run(wh, "run-b", "2025-03-02", [("llm_calls", "s1", llm_calls_frame(4))])
    rows = run_query(
        wh, "SELECT CAST(date AS VARCHAR) AS d, count(*) AS n FROM llm_calls GROUP BY d ORDER BY d"
    ).to_pylist()
    assert rows == [{"d": DATE, "n": 3}, {"d": "2025-03-02", "n": 4}]


@pytest.mark.parametrize(
    "sql",
    [
        "INSERT INTO environments VALUES (1)",
        "CREATE TABLE x AS SELECT * FROM environments",
        "COPY environments TO '/tmp/out.csv'",
        "ATTACH '/tmp/other.duckdb'",
        "DROP VIEW environments",
        "SELECT 1; DROP VIEW environments",
        "SELECT 1; INSERT INTO t VALUES (1)",
        "UPDATE runs SET status = 'failed'",
        "DELETE FROM runs",
        "INSTALL httpfs",
        "LOAD httpfs",
        "SET threads = 1",
        "PRAGMA version",
        "EXPLAIN ANALYZE COPY environments TO '/tmp/x.csv'",
        "EXPORT DATABASE '/tmp/db'",
    ],
)
def test_write_statements_refused(sql):
    with pytest.raises(QueryError, match="^only read-only SELECT queries are allowed; got [A-Z_]+") as caught:
        check_read_only(sql)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 1",
        "FROM environments",
        "WITH a AS (SELECT 1 AS x) SELECT x FROM a",
        "EXPLAIN SELECT 1",
        "DESCRIBE runs",
    ],
)
def test_selects_accepted(sql):
    check_read_only(sql)


@pytest.mark.parametrize(
    ("sql", "needle"),
    [("", "empty"), ("  \n", "empty"), ("-- only a comment", "no statement"), ("SELEC 1", "does not parse")],
)
def test_empty_or_unparsable_sql(sql, needle):
    with pytest.raises(QueryError, match=needle) as caught:
        check_read_only(sql)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("sql", "needle"),
    [
        ("SELECT no_such_column FROM environments", "no_such_column"),
        ("SELECT * FROM no_such_table", "no_such_table"),
    ],
)
def test_unknown_names_give_query_error(wh, sql, needle):
    with pytest.raises(QueryError, match=needle) as caught:
        run_query(wh, sql)
    assert "\n" not in str(caught.value)


def test_queries_cannot_read_outside_the_warehouse(wh, tmp_path):
    secret = tmp_path / "secret.csv"
    secret.write_text("a,b\n1,2\n")
    with pytest.raises(QueryError, match="Permission"):
        run_query(wh, f"SELECT * FROM read_csv('{secret}')")


def test_dates_are_consistent_between_empty_and_landed_views(wh):
    empty = run_query(wh, "SELECT * FROM llm_calls").schema
    _land_run(wh, "run-a", DATE, [("llm_calls", "s1", llm_calls_frame(2))])
    assert run_query(wh, "SELECT * FROM llm_calls").schema == empty


# S3: a real moto server on loopback as the object store, as in CI.


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def moto_server(**environment: str):
    """A moto S3 server on a free loopback port (with extra environment variables, e.g. to authenticate requests)."""
    binary = shutil.which("moto_server", path=str(Path(sys.executable).parent)) or shutil.which("moto_server")
    if binary is None:
        raise RuntimeError("moto_server is not installed: make test installs it with the dev extras")
    port = _free_port()
    process = subprocess.Popen([binary, "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, env={**os.environ, **environment})
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(f"{url}/moto-api/", timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                raise RuntimeError("moto_server did not start") from None
            time.sleep(0.2)
    try:
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture(scope="module")
def moto_endpoint():
    """A moto S3 server on a free loopback port."""
    with moto_server() as url:
        yield url


@pytest.fixture
def s3_wh(moto_endpoint, monkeypatch, request):
    """A warehouse under a fresh bucket of the moto server."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_DEFAULT_REGION": "us-east-1",
        "VHD_S3_ENDPOINT_URL": moto_endpoint,
    }.items():
        monkeypatch.setenv(name, value)
    bucket = "vhd-" + request.node.name.lower().replace("_", "-")[:40]
    wh = resolve_warehouse(f"s3://{bucket}/warehouse")
    wh.fs.mkdir(bucket)
    return wh


def test_s3_round_trip(s3_wh):
    assert run_query(s3_wh, "SELECT count(*) AS n FROM environments").column("n").to_pylist() == [0]
    land(s3_wh, "llm_calls", llm_calls_frame(2), DATE, "s0")  # never committed
    _land_run(
        s3_wh,
        "run-a",
        DATE,
        [("environments", "s1", environments_frame(["e1", "e2"])), ("llm_calls", "s1", llm_calls_frame(3))],
    )
    _land_run(s3_wh, "run-b", DATE, [("environments", "s2", environments_frame(["e2", "e3"], "run-b"))])
    assert run_query(s3_wh, "SELECT count(*) AS n FROM environments").column("n").to_pylist() == [3]
    rows = run_query(s3_wh, "SELECT call_id, date FROM llm_calls ORDER BY call_id").to_pylist()
    assert [row["call_id"] for row in rows] == ["c0", "c1", "c2"] and str(rows[0]["date"]) == DATE
    assert s3_wh.fs.exists(f"{s3_wh.root}/_commits/date={DATE}/run-a.json")
