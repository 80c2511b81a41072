"""`vhd query` is read-only: no writes, no ATTACH/COPY/INSTALL/LOAD, no settings, no files outside the warehouse."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.test_cli import assert_one_line_error, vhd
from tests.warehouse.test_landing import DATE, environments_frame
from warehouse.catalog import QueryError, run_query
from warehouse.landing import commit_run, land
from warehouse.location import resolve_warehouse


@pytest.fixture
def wh(tmp_path):
    """A warehouse with one committed environment, and a secret file beside it."""
    wh = resolve_warehouse(str(tmp_path / "wh"))
    path = land(wh, "environments", environments_frame(["e1"]), DATE, "s1")
    commit_run(wh, "run-a", DATE, {"environments": [path]}, {})
    (tmp_path / "secret.csv").write_text("a,b\n1,2\n")
    return wh


REFUSED_STATEMENTS = [
    ("INSERT INTO environments SELECT * FROM environments", "INSERT"),
    ("UPDATE runs SET status = 'failed'", "UPDATE"),
    ("DELETE FROM runs", "DELETE"),
    ("CREATE TABLE x AS SELECT * FROM environments", "CREATE"),
    ("CREATE OR REPLACE VIEW environments AS SELECT 1", "CREATE"),
    ("DROP VIEW environments", "DROP"),
    ("ALTER VIEW environments RENAME TO e", "ALTER"),
    ("WITH a AS (SELECT 1) INSERT INTO t SELECT * FROM a", "INSERT"),
    ("SELECT 1; DROP VIEW environments", "DROP"),
    ("ATTACH '/tmp/other.duckdb' AS other", "ATTACH"),
    ("DETACH other", "DETACH"),
    ("COPY environments TO '/tmp/out.csv'", "COPY"),
    ("COPY (SELECT * FROM environments) TO '/tmp/out.parquet' (FORMAT parquet)", "COPY"),
    ("COPY environments FROM '/tmp/in.csv'", "COPY"),
    ("EXPORT DATABASE '/tmp/db'", "EXPORT"),
    ("IMPORT DATABASE '/tmp/db'", "IMPORT DATABASE"),  # DuckDB parses IMPORT DATABASE as a PRAGMA
    ("INSTALL httpfs", "INSTALL"),  # DuckDB parses INSTALL as a LOAD statement: named as written
    ("LOAD httpfs", "LOAD"),
    ("FORCE INSTALL httpfs FROM core_nightly", "FORCE INSTALL"),
    ("-- a comment\n/* another */ install httpfs", "INSTALL"),
    ("SET enable_external_access = true", "SET"),
    ("SET allowed_directories = ['/']", "SET"),
    ("SET lock_configuration = false", "SET"),
    ("RESET enable_external_access", "SET"),
    ("PRAGMA enable_profiling", "PRAGMA"),
    ("CALL pragma_version()", "CALL"),
    ("CHECKPOINT", ""),
    ("VACUUM", ""),
    ("BEGIN TRANSACTION", "TRANSACTION"),
    ("CREATE SECRET s (TYPE s3, KEY_ID 'k', SECRET 'v')", "CREATE"),
    ("EXPLAIN ANALYZE COPY environments TO '/tmp/x.csv'", "COPY"),
]


@pytest.mark.parametrize(("sql", "kind"), REFUSED_STATEMENTS)
def test_statements_other_than_select_are_refused(wh, sql, kind):
    with pytest.raises(QueryError, match=f"^only read-only SELECT queries are allowed; got [A-Z_]*{kind}") as caught:
        run_query(wh, sql)
    assert "\n" not in str(caught.value)
    assert run_query(wh, "SELECT count(*) AS n FROM environments").column("n").to_pylist() == [1]


@pytest.mark.parametrize(
    "reader",
    [
        "read_parquet('/etc/passwd')",
        "read_csv('{secret}')",
        "read_csv_auto('{secret}')",
        "read_json('{secret}')",
        "read_text('/etc/hostname')",
        "read_blob('/etc/hostname')",
        "glob('/etc/*')",
        "glob('{root}/../*')",
        "read_csv('{root}/../secret.csv')",
        "read_parquet('/etc/*.parquet')",
        "read_csv('file:///etc/hostname')",
        "read_csv('s3://other-bucket/x.csv')",
        "read_csv('http://127.0.0.1:9/x.csv')",
    ],
)
def test_files_outside_the_warehouse_are_refused(wh, tmp_path, reader):
    source = reader.format(secret=tmp_path / "secret.csv", root=wh.root)
    with pytest.raises(QueryError, match="^Permission denied: the query reads outside the warehouse") as caught:
        run_query(wh, f"SELECT * FROM {source}")
    assert "\n" not in str(caught.value) and wh.root in str(caught.value)


def test_settings_cannot_be_changed_from_inside_a_select(wh):
    with pytest.raises(QueryError, match="Expected a single SELECT statement"):
        run_query(wh, "SELECT * FROM query('SET enable_external_access = true')")
    assert run_query(wh, "SELECT current_setting('enable_external_access') AS v").column("v").to_pylist() == [False]


def test_files_inside_the_warehouse_can_be_read(wh):
    rows = run_query(wh, f"SELECT count(*) AS n FROM read_parquet('{wh.root}/environments/*/*.parquet')")
    assert rows.column("n").to_pylist() == [1]


@pytest.mark.parametrize(
    ("sql", "needle"),
    [
        ("COPY environments TO '/tmp/x.csv'", "got COPY"),
        ("ATTACH '/tmp/x.duckdb'", "got ATTACH"),
        ("INSTALL httpfs", "got INSTALL"),
        ("SELECT 1; SELECT 2", "one statement per query"),
        ("SET enable_external_access = true", "got SET"),
        ("SELECT * FROM read_csv('/etc/hostname')", "reads outside the warehouse (file \"/etc/hostname\")"),
    ],
)
def test_cli_refusals_are_one_line(wh, sql, needle):
    assert_one_line_error(vhd("query", sql, "--warehouse", wh.url), needle)


@pytest.mark.parametrize("sql", ["SELECT 1; SELECT 2", "SELECT count(*) FROM environments;SELECT 2;",
                                 "SELECT 1; -- first\nSELECT 2"])
def test_several_statements_are_refused(wh, sql):
    with pytest.raises(QueryError, match="^one statement per query: got 2 statements") as caught:
        run_query(wh, sql)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("sql", ["SELECT 1;", "SELECT 1; -- a trailing comment", "SELECT 1;;"])
def test_one_statement_with_a_trailing_semicolon_runs(wh, sql):
    assert run_query(wh, sql).num_rows == 1


@pytest.mark.parametrize("reader", ["read_csv('.tmp/leak.csv')", "glob('.tmp/*')", "read_text('.tmp/leak.csv')",
                                    "read_csv('{cwd}/.tmp/leak.csv')"])
def test_no_file_of_the_working_directory_is_readable(wh, tmp_path, reader):
    """DuckDB reads its temp directory whatever allowed_directories says, and its default is <cwd>/.tmp."""
    cwd = tmp_path / "elsewhere"
    (cwd / ".tmp").mkdir(parents=True)
    (cwd / ".tmp" / "leak.csv").write_text("secret\nhunter2\n")
    result = vhd("query", f"SELECT * FROM {reader.format(cwd=cwd)}", "--warehouse", wh.url, cwd=cwd)
    assert_one_line_error(result, "Permission denied: the query reads outside the warehouse")
    assert "hunter2" not in result.stdout + result.stderr
    spill = vhd("query", "SELECT current_setting('temp_directory') AS t", "--format", "csv", "--warehouse", wh.url,
                cwd=cwd, check=True).stdout.splitlines()[1]
    assert not spill.startswith(str(cwd)) and "vhd-duckdb-" in spill
    assert not Path(spill).exists()  # the private spill folder is gone with the process
