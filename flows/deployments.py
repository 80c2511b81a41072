"""Register and serve the nightly deployment on a persistent Prefect server."""

from __future__ import annotations

import datetime as dt

from prefect.client.schemas.objects import ConcurrencyLimitConfig, ConcurrencyLimitStrategy
from prefect.schedules import Cron
from prefect.settings import PREFECT_API_URL

from flows.generate import DEFAULT_WORKERS
from flows.nightly import night_of, nightly
from schemas.errors import UserError

START_SERVER = ("start one with `prefect server start` (it listens on http://127.0.0.1:4200) and "
                "export PREFECT_API_URL=http://127.0.0.1:4200/api")


class ServerUnavailable(UserError):
    """No persistent Prefect server: the ephemeral one cannot keep a schedule."""


def check_server() -> str:
    """The API URL of a reachable Prefect server, or a clear error saying how to start one."""
    url = PREFECT_API_URL.value()
    if not url:
        raise ServerUnavailable(f"no Prefect server is configured (PREFECT_API_URL is unset); {START_SERVER}")
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        failure = client.api_healthcheck()
    if failure is not None:
        raise ServerUnavailable(f"the Prefect server at {url} is not reachable ({type(failure).__name__}); "
                                f"{START_SERVER}")
    return url


def nightly_parameters(count: int = 300, families: str | None = None, setter: str = "template",
                       model: str | None = None, warehouse: str | None = None, timezone: str = "UTC",
                       workers: int = DEFAULT_WORKERS) -> dict:
    """The nightly deployment's parameters (the same names as in infra/prefect.yaml)."""
    return {"count": count, "families": families, "setter": setter, "model": model, "warehouse": warehouse,
            "timezone": timezone, "workers": workers}


# two nightlies never overlap: a run that comes due while one is still running waits for it
ONE_AT_A_TIME = ConcurrencyLimitConfig(limit=1, collision_strategy=ConcurrencyLimitStrategy.ENQUEUE)


def serve_nightly(name: str = "nightly", cron: str = "0 2 * * *", timezone: str = "UTC", count: int = 300,
                  families: str | None = None, warehouse: str | None = None, setter: str = "template",
                  model: str | None = None, workers: int = DEFAULT_WORKERS) -> None:
    """Register the nightly deployment with its schedule and serve its runs in this process until interrupted.

    The production way is a work pool and worker (infra/prefect.yaml); serving needs neither.
    """
    check_server()
    try:
        schedule = Cron(cron, timezone=timezone)
    except Exception as error:  # croniter / zoneinfo reject bad input with various types
        raise UserError(f"bad schedule {cron!r} in time zone {timezone!r}: {error}") from None
    night_of(dt.datetime.now(dt.UTC), timezone)  # an unknown zone is refused here, not on the first night
    nightly.serve(name=name, schedules=[schedule],
                  parameters=nightly_parameters(count, families, setter, model, warehouse, timezone, workers),
                  global_limit=ONE_AT_A_TIME, print_starting_message=True)
