"""report: build the dataset report over the warehouse and write it under ``_reports/date=D/report.html``."""

from __future__ import annotations

from prefect import task

from reports.build import build_report, report_path, write_text
from reports.summary import summary_lines
from tasks.common import retry_transient
from warehouse.commits import check_date
from warehouse.location import resolve_warehouse


@task(name="report", retries=2, retry_delay_seconds=[2, 10], retry_condition_fn=retry_transient)
def write_report(warehouse: str | None, date: str, since: str | None = None) -> dict:
    """Build the report (rows dated `since` or later; all rows when None) and write it for `date`.

    Returns where it was written, the terminal summary lines and the seconds each part took.
    """
    wh = resolve_warehouse(warehouse)
    report = build_report(wh, since)
    url = write_text(wh, report_path(wh, check_date(date)), report.html)
    return {"path": url, "summary": summary_lines(report), "seconds": report.seconds}
