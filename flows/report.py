"""report: the dataset report of a night, written into the warehouse after landing. Wiring only."""

from __future__ import annotations

import datetime as dt

from prefect import flow

from tasks.report import write_report


@flow(name="report", log_prints=False)
def report(warehouse: str | None = None, date: str | None = None, since: str | None = None) -> dict:
    """Write ``{warehouse}/_reports/date={date}/report.html`` (date defaults to today, UTC) over rows dated
    `since` or later (all rows when None); returns its path, the summary lines and timings."""
    day = date or dt.datetime.now(dt.UTC).date().isoformat()
    return write_report(warehouse, day, since)
