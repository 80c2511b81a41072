"""`vhd report <kind> --format csv` is one CSV document (issue 31, item 12): one header, a first column naming
each row's section, not a header per section back to back. A real `vhd report` process."""

from __future__ import annotations

import csv
import io

import pytest

from tests.cli.test_bad_input import clean_env, stored, vhd  # noqa: F401 - fixture
from warehouse.reports import REPORTS


@pytest.mark.parametrize("kind", ["cost", "setter", "diversity"])
def test_a_report_of_several_sections_in_csv_is_one_document(stored, tmp_path, kind):  # noqa: F811
    root, _ = stored
    result = vhd("report", kind, "--format", "csv", "--warehouse", str(root), env=clean_env(tmp_path))
    assert result.returncode == 0, result.stderr
    rows = list(csv.DictReader(io.StringIO(result.stdout)))  # one header: the first line
    header = result.stdout.splitlines()[0].split(",")
    assert header[0] == "section" and result.stdout.splitlines().count(result.stdout.splitlines()[0]) == 1
    assert all(len(row) == len(header) and None not in row for row in rows)  # every row as wide as the header
    titles = [title for title, _ in REPORTS[kind]]
    assert len(titles) >= 2 and {row["section"] for row in rows} <= set(titles)
    if kind == "diversity":
        coverage = [row for row in rows if row["section"] == "family x domain coverage"]
        assert {row["family"]: row["environments"] for row in coverage} == {"knapsack": "1", "lp": "1"}
