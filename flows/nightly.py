"""nightly: the scheduled generation, then the nightly reports; the run's date is the night it was scheduled for.

Wiring only. A late run (a missed night, run by hand with `date`) lands exactly what the night would have landed:
seeds derive from the date, and shards that some run of that date already committed are skipped.
"""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from prefect import flow, task
from prefect.runtime import flow_run
from prefect.states import Completed, Failed

from flows.generate import DEFAULT_WORKERS, run_generate_state, run_summary
from tasks.plan import DEFAULT_SHARD_SIZE


def night_of(scheduled: dt.datetime, timezone: str = "UTC") -> str:
    """The date a run scheduled at `scheduled` belongs to, in the schedule's time zone (02:00 Paris is 01:00 UTC,
    and 23:00 in Los Angeles is the next day in UTC: the night is the local one)."""
    try:
        zone = ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {timezone!r}; use an IANA name such as UTC or Europe/Paris") from None
    return scheduled.astimezone(zone).date().isoformat()


@task(name="nightly-reports", retries=2, retry_delay_seconds=5)
def nightly_reports(warehouse: str | None, date: str) -> list[str]:
    """The nightly reports after the generation: every `vhd report` query, published as a Prefect artifact.

    (Stand-in until the HTML report flow of flows/report.py exists; see the issue-6 notes.)
    """
    from prefect.artifacts import create_markdown_artifact

    from warehouse.catalog import run_query
    from warehouse.location import resolve_warehouse
    from warehouse.reports import REPORTS

    wh = resolve_warehouse(warehouse)
    sections, titles = [f"# vhd nightly report, {date}\n\nwarehouse `{wh.url}`\n"], []
    for kind, queries in REPORTS.items():
        for title, sql in queries:
            table = run_query(wh, sql)
            header = "| " + " | ".join(table.column_names) + " |"
            rows = ["| " + " | ".join("" if v is None else str(v) for v in row.values()) + " |"
                    for row in table.to_pylist()]
            sections.append(f"## {kind}: {title}\n\n{header}\n|{'---|' * len(table.column_names)}\n"
                            + "\n".join(rows) + "\n")
            titles.append(f"{kind}: {title}")
    create_markdown_artifact(key=f"vhd-nightly-report-{date}", markdown="\n".join(sections),
                             description=f"vhd nightly report for {date}")
    return titles


@flow(name="nightly", log_prints=False)
def nightly(count: int = 300, families: str | None = None, setter: str = "template", model: str | None = None,
            warehouse: str | None = None, date: str | None = None, timezone: str = "UTC",
            workers: int = DEFAULT_WORKERS, shard_size: int = DEFAULT_SHARD_SIZE, runner: str = "threads",
            dask_address: str | None = None):
    """Generate the night's environments, then run the nightly reports.

    `date` defaults to the scheduled start date in `timezone` (give the schedule's time zone). The final state is
    the generation's: Failed (naming the shards and reasons) when a shard failed although the rest landed.
    """
    day = date or night_of(flow_run.get_scheduled_start_time(), timezone)
    generated = run_generate_state(workers=workers, runner=runner, dask_address=dask_address, date=day,
                                   count=count, families=families, setter=setter, model=model, warehouse=warehouse,
                                   shard_size=shard_size)
    summary = run_summary(generated)  # raises when the generation crashed before committing anything
    reports = nightly_reports(warehouse, day)
    result = {"generate": summary, "reports": reports}
    if generated.is_failed():
        return Failed(message=generated.message, data=result)
    return Completed(name=generated.name, message=generated.message, data=result)
