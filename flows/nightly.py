"""nightly: the scheduled generation; the run's date is the date it was scheduled for. Wiring only."""

from __future__ import annotations

from prefect import flow
from prefect.runtime import flow_run

from flows.generate import DEFAULT_WORKERS, run_generate


@flow(name="nightly", log_prints=False)
def nightly(count: int = 300, families: str | None = None, setter: str = "template", model: str | None = None,
            warehouse: str | None = None, date: str | None = None, workers: int = DEFAULT_WORKERS) -> dict:
    """Generate the night's environments; `date` defaults to the scheduled start date (so a late run is exact)."""
    scheduled = flow_run.get_scheduled_start_time()
    day = date or scheduled.date().isoformat()
    return run_generate(workers=workers, date=day, count=count, families=families, setter=setter, model=model,
                        warehouse=warehouse)
