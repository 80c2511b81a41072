"""report: build the dataset report over the warehouse and write it under ``_reports/date=D/report.html``."""

from __future__ import annotations

from pathlib import Path

from prefect import task

from reports.build import build_report, report_path, write_text
from reports.summary import summary_lines
from tasks.common import retry_transient
from warehouse.commits import check_date
from warehouse.location import resolve_warehouse


@task(name="report", task_run_name="report", retries=2, retry_delay_seconds=[2, 10], retry_condition_fn=retry_transient)
def write_report(warehouse: str | None, date: str, since: str | None = None) -> dict:
    """Build the report (rows dated `since` or later; all rows when None) and write it for `date`.

    Returns where it was written, the terminal summary lines and the seconds each part took.
    """
    wh = resolve_warehouse(warehouse)
    report = build_report(wh, since)
    url = write_text(wh, report_path(wh, check_date(date)), report.html)
    return {"path": url, "summary": summary_lines(report), "seconds": report.seconds}


REPORT_LINK_KEY = "vhd-nightly-report"  # the link artifact of every nightly run (the UI keeps its history)


def report_link(url: str) -> str:
    """The report's location as a link: a file:// URL for a local path, the URL itself otherwise (s3://...)."""
    return url if "://" in url else Path(url).resolve().as_uri()


def publish_report_link(url: str, date: str) -> None:
    """A link artifact of the current flow run to the night's report (key REPORT_LINK_KEY). The report is written by
    then, so a failure to create the link is a warning, never a reason to fail the night."""
    from prefect.artifacts import create_link_artifact
    from prefect.logging import get_run_logger

    try:
        create_link_artifact(report_link(url), link_text=f"dataset report of {date}", key=REPORT_LINK_KEY,
                             description=f"The dataset report of the night of {date}: `{url}`")
    except Exception as error:  # noqa: BLE001 - the report is written; the artifact only links to it
        get_run_logger().warning("the report's link artifact was not created: %s: %s", type(error).__name__, error)
