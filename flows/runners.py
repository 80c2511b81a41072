"""Task runners for the generate flow: a bounded thread pool (the default) or a Dask cluster through prefect-dask.

The flow code is the same for both; only where the stage tasks execute changes. With `dask` and no address a
local cluster of worker processes is started for the run and torn down after it; with an address the run
connects to a running scheduler (`dask scheduler` / `dask worker`, see the README's "Scaling out on Dask").
"""

from __future__ import annotations

import asyncio
import logging
import re
import socket
from urllib.parse import urlsplit

from prefect.task_runners import ThreadPoolTaskRunner

from schemas.errors import UserError
from schemas.shard import RUNNERS

DEFAULT_DASK_WORKERS = 2
CONNECT_TIMEOUT_S = 10.0
_ADDRESS = re.compile(r"^(tcp|tls)://[^\s/:]+:\d{1,5}$")


class RunnerError(UserError):
    """A bad runner choice or an unreachable cluster: shown to the user as one line."""


def check_dask_address(address: str) -> str:
    """Validate a scheduler address (tcp://HOST:PORT or tls://HOST:PORT) and check that something listens there."""
    if not _ADDRESS.match(address or ""):
        raise RunnerError(f"--dask-address must look like tcp://HOST:PORT (a dask scheduler), got {address!r}")
    parts = urlsplit(address)
    port = parts.port
    if not port or port > 65535:
        raise RunnerError(f"--dask-address has an invalid port: {address!r}")
    try:
        with socket.create_connection((parts.hostname, port), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise RunnerError(f"cannot reach the dask scheduler at {address}: {reason} "
                          "(start one with `dask scheduler`, see the README's 'Scaling out on Dask')") from None
    quiet_distributed()
    try:  # something listens there: is it a dask scheduler? (a Client would wait forever on, say, an HTTP port)
        identity = asyncio.run(asyncio.wait_for(_identify(address), CONNECT_TIMEOUT_S))
    except (OSError, TimeoutError, EOFError, ValueError, TypeError) as error:
        identity, reason = None, type(error).__name__
    else:
        reason = "it did not identify as one"
    if not isinstance(identity, dict) or identity.get("type") != "Scheduler":
        raise RunnerError(f"no dask scheduler answers at {address} ({reason}); is it the scheduler's port "
                          "(default 8786)?")
    return address


async def _identify(address: str):
    from distributed.comm import connect

    comm = await connect(address, timeout=CONNECT_TIMEOUT_S)
    try:
        await comm.write({"op": "identity", "reply": True})
        return await comm.read()
    finally:
        comm.abort()


def quiet_distributed() -> None:
    """distributed logs INFO lines on start and ERROR lines/tracebacks on a normal shutdown (closed comms,
    workers told to stop): none of that is a failure of the run, so only CRITICAL reaches the terminal."""
    for name in ("distributed", "distributed.core", "distributed.worker", "distributed.nanny",
                 "distributed.scheduler", "distributed.comm", "distributed.batched", "distributed.client",
                 "tornado", "tornado.application", "bokeh"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    # prefect-dask logs the dashboard link and cluster creation at INFO; Prefect's level is WARNING in the CLI.


def _dask_task_runner_class():
    from prefect.utilities.annotations import opaque
    from prefect_dask import DaskTaskRunner

    class VhdDaskTaskRunner(DaskTaskRunner):
        """prefect-dask 0.3 with `opaque()` inputs: dask rebuilds the annotation (a namedtuple) as a plain tuple,
        so the task would receive `(value,)`. Unwrapped here, dask resolves the future itself and the worker gets
        the value; the flow code stays the same for both runners."""

        def submit(self, task, parameters, wait_for=None, dependencies=None):
            parameters = {name: value.unwrap() if isinstance(value, opaque) else value
                          for name, value in parameters.items()}
            return super().submit(task, parameters, wait_for=wait_for, dependencies=dependencies)

    return VhdDaskTaskRunner


def check_runner(runner: str, dask_address: str | None = None, max_cost_usd: float | None = None) -> None:
    """Refuse, in one line, what cannot run: an unknown runner, an address without dask, a bad or unreachable
    scheduler address, or a cost cap under dask (a run's budget is one counter in the flow's process, shared by the
    stage threads that render; Dask's workers are other processes, and a shared counter across them is not built)."""
    if runner not in RUNNERS:
        raise RunnerError(f"unknown runner {runner!r}; choose one of {', '.join(RUNNERS)}")
    if dask_address and runner != "dask":
        raise RunnerError("--dask-address needs --runner dask")
    if runner == "dask" and max_cost_usd is not None:
        raise RunnerError("--max-cost-usd cannot be enforced with --runner dask (each worker process would keep its "
                          "own budget); use --runner threads to cap the cost")
    if dask_address:
        check_dask_address(dask_address)


def make_task_runner(runner: str = "threads", workers: int = 4, dask_address: str | None = None):
    """The task runner named `runner`: threads bounded to `workers`, or Dask (a local cluster of `workers`
    processes when no address is given, else the scheduler at `dask_address`)."""
    check_runner(runner, dask_address)
    if workers < 1:
        raise RunnerError(f"workers must be at least 1, got {workers}")
    if runner == "threads":
        return ThreadPoolTaskRunner(max_workers=workers)
    DaskTaskRunner = _dask_task_runner_class()  # noqa: N806 - a class
    quiet_distributed()
    if dask_address:
        return DaskTaskRunner(address=dask_address)
    # one thread per worker process: the stages are CPU-bound Python, so processes give the parallelism
    return DaskTaskRunner(cluster_class="distributed.LocalCluster",
                          cluster_kwargs={"n_workers": workers, "threads_per_worker": 1, "processes": True,
                                          "dashboard_address": None, "silence_logs": logging.CRITICAL})
