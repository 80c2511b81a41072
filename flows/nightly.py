"""nightly: the scheduled generation, then the night's report; the run's date is the night it was scheduled for.

Wiring only. A late run (a missed night, run by hand with `date`) lands exactly what the night would have landed:
seeds derive from the date, and shards that some run of that date already committed are skipped.
"""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from prefect import flow
from prefect.runtime import flow_run
from prefect.states import Completed, Failed

from flows.generate import DEFAULT_WORKERS, run_generate_state, run_summary
from flows.report import report
from schemas.errors import UserError
from tasks.plan import DEFAULT_SHARD_SIZE
from tasks.report import publish_report_link


def night_of(scheduled: dt.datetime, timezone: str = "UTC") -> str:
    """The date a run scheduled at `scheduled` belongs to, in the schedule's time zone (02:00 Paris is 01:00 UTC,
    and 23:00 in Los Angeles is the next day in UTC: the night is the local one)."""
    try:
        zone = ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise UserError(f"unknown time zone {timezone!r}; use an IANA name such as UTC or Europe/Paris") from None
    return scheduled.astimezone(zone).date().isoformat()


@flow(name="nightly", log_prints=False)
def nightly(count: int = 300, families: str | None = None, setter: str = "template", model: str | None = None,
            warehouse: str | None = None, date: str | None = None, timezone: str = "UTC",
            workers: int = DEFAULT_WORKERS, shard_size: int = DEFAULT_SHARD_SIZE, runner: str = "threads",
            dask_address: str | None = None):
    """Generate the night's environments, then write the night's dataset report (flows.report) into the warehouse.

    `date` defaults to the scheduled start date in `timezone` (give the schedule's time zone). The run ends Failed
    (naming the shards and reasons) when a shard failed although the rest landed, or when the report failed; the
    report is written either way once the generation has committed.
    """
    day = date or night_of(flow_run.get_scheduled_start_time(), timezone)
    generated = run_generate_state(workers=workers, runner=runner, dask_address=dask_address, date=day,
                                   count=count, families=families, setter=setter, model=model, warehouse=warehouse,
                                   shard_size=shard_size)
    summary = run_summary(generated)  # raises when the generation crashed before committing anything
    reported = report(warehouse=warehouse, date=day, return_state=True)
    written = reported.result(raise_on_failure=False)
    result = {"generate": summary, "report": written if reported.is_completed() else None}
    if reported.is_completed():
        publish_report_link(written["path"], day)  # the night's report, one click from the run's page
    problems = [generated.message] if generated.is_failed() else []
    if not reported.is_completed():
        problems.append(f"the report of {day} failed: {reported.message}")
    if problems:
        return Failed(message="; ".join(problems)[:2000], data=result)
    path = written["path"] if isinstance(written, dict) else None
    return Completed(name=generated.name, message=f"{generated.message}; report {path}", data=result)
