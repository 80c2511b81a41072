"""Register and serve the nightly deployment on a persistent Prefect server."""

from __future__ import annotations

from prefect.schedules import Cron
from prefect.settings import PREFECT_API_URL

from flows.nightly import nightly

START_SERVER = ("start one with `prefect server start` (it listens on http://127.0.0.1:4200) and "
                "export PREFECT_API_URL=http://127.0.0.1:4200/api")


class ServerUnavailable(ValueError):
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


def serve_nightly(name: str = "nightly", cron: str = "0 2 * * *", timezone: str = "UTC", count: int = 300,
                  families: str | None = None, warehouse: str | None = None) -> None:
    """Register the nightly deployment with its schedule and serve its runs until interrupted."""
    check_server()
    try:
        schedule = Cron(cron, timezone=timezone)
    except Exception as error:  # croniter / zoneinfo reject bad input with various types
        raise ValueError(f"bad schedule {cron!r} in time zone {timezone!r}: {error}") from None
    nightly.serve(name=name, schedules=[schedule], parameters={"count": count, "families": families,
                                                               "warehouse": warehouse},
                  global_limit=1, print_starting_message=True)
