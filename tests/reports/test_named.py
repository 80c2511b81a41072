"""The named queries: one file each with a header, read-only, every section covered, runnable with vhd query."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from reports.named import QUERY_DIR, SECTIONS, _parse, named_queries
from warehouse.catalog import check_read_only

ROOT = Path(__file__).resolve().parents[2]


def test_every_file_is_a_named_read_only_query():
    queries = named_queries()
    assert len(queries) == len(list(QUERY_DIR.glob("*.sql")))
    assert len({q.name for q in queries}) == len(queries)
    for query in queries:
        check_read_only(query.sql)
        assert (ROOT / query.file).read_text() == query.sql
        assert query.title and query.section in SECTIONS
    assert {q.section for q in queries} == set(SECTIONS)


def test_a_file_without_its_header_is_refused(tmp_path):
    bad = tmp_path / "size_other.sql"
    bad.write_text("SELECT 1\n")
    with pytest.raises(ValueError, match="first line must be '-- size_other"):
        _parse(bad)
    bad.write_text("-- size_other (nosuch): a section that does not exist\nSELECT 1\n")
    with pytest.raises(ValueError, match="section among size, cost"):
        _parse(bad)


def test_a_named_query_runs_with_vhd_query_and_gives_the_reports_answer(report_warehouse, built_report):
    url, _ = report_warehouse
    vhd = str(Path(sys.executable).parent / "vhd")
    sql = (QUERY_DIR / "admission_per_family.sql").read_text()
    out = subprocess.run([vhd, "query", sql, "--format", "json", "--warehouse", url], capture_output=True,
                         text=True, check=True).stdout
    import json

    rows = json.loads(out)
    expected = built_report.collected.rows("admission_per_family")
    assert [(r["family"], int(r["admitted"]), int(r["instances"])) for r in rows] == [
        (r["family"], int(r["admitted"]), int(r["instances"])) for r in expected]
