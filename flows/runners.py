"""Where the generate flow's stages run: their CPU work in local worker processes (the default) or on a Dask cluster.

The flow is the same for both: its stage tasks are Prefect tasks on a bounded thread pool of the flow's process,
where Prefect's bookkeeping, the progress counts and the LLM budget stay, and each stage sends its pure CPU work
(sampling, solving, template rendering, admission, writing a shard's files) to tasks.pool. With `dask` that pool is
the cluster (`DaskWorkers`): a local cluster of worker processes started for the run and torn down after it, or,
with an address, a running scheduler (`dask scheduler` / `dask worker`, see the README's "Scaling out on Dask").
A worker runs Dask tasks only, never a Prefect task run: a Prefect engine per task on each worker (prefect-dask)
cost four times the CPU of the work itself on this project's stages.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import socket
import threading
import time
from concurrent.futures import Future
from urllib.parse import urlsplit

from prefect.task_runners import ThreadPoolTaskRunner

from schemas.errors import UserError
from schemas.shard import RUNNERS
from tasks.pool import QUEUED_PER_WORKER, Packed, packs

DEFAULT_DASK_WORKERS = 2
DEFAULT_STAGE_THREADS = 4  # the flow's stage threads with dask, at least (as the default runner's)
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
    # distributed logs the dashboard link and cluster creation at INFO; Prefect's level is WARNING in the CLI.


def check_runner(runner: str, dask_address: str | None = None, max_cost_usd: float | None = None) -> None:
    """Refuse, in one line, what cannot run: an unknown runner, an address without dask, a bad or unreachable
    scheduler address. A cost cap holds on both runners: the LLM setter renders in the flow's stage threads either
    way (only pure CPU work goes to a Dask worker), so the run's budget stays one counter in the flow's process."""
    if runner not in RUNNERS:
        raise RunnerError(f"unknown runner {runner!r}; choose one of {', '.join(RUNNERS)}")
    if dask_address and runner != "dask":
        raise RunnerError("--dask-address needs --runner dask")
    if dask_address:
        check_dask_address(dask_address)


def make_task_runner(runner: str = "threads", workers: int = 4, dask_address: str | None = None):
    """The flow's task runner: threads bounded to `workers` with --runner threads; with dask, threads too (a thread
    per stage in flight, two per Dask worker, at least DEFAULT_STAGE_THREADS), the stages' CPU work going to the
    cluster (`connect_dask`)."""
    check_runner(runner, dask_address)
    if workers < 1:
        raise RunnerError(f"workers must be at least 1, got {workers}")
    return ThreadPoolTaskRunner(max_workers=workers)


def stage_threads(dask_workers: int) -> int:
    """Stages in flight for a cluster of `dask_workers` workers: QUEUED_PER_WORKER per worker (a worker never waits
    for its next stage to be submitted), and at least DEFAULT_STAGE_THREADS."""
    return max(DEFAULT_STAGE_THREADS, QUEUED_PER_WORKER * dask_workers)


def connect_dask(workers: int = DEFAULT_DASK_WORKERS, dask_address: str | None = None) -> DaskWorkers:
    """The stages' pool on Dask: the scheduler at `dask_address`, or a local cluster of `workers` single-thread worker
    processes started now (and stopped with the pool)."""
    from distributed import Client, LocalCluster

    quiet_distributed()
    cluster = None
    if dask_address:
        client = Client(dask_address, set_as_default=False, direct_to_workers=True, timeout=CONNECT_TIMEOUT_S)
    else:  # one thread per worker process: the stages are CPU-bound Python, so processes give the parallelism
        import dask

        with dask.config.set(WORKER_CONFIG):  # a nanny hands its worker the config it was made with
            # no dashboard; the scheduler's HTTP server (health, metrics) on a free port, not on 8787 (a second
            # run at once would warn "Port 8787 is already in use")
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                                   scheduler_kwargs={"dashboard_address": ":0"}, silence_logs=logging.CRITICAL)
        client = Client(cluster, set_as_default=False, direct_to_workers=True)
    return DaskWorkers(client, cluster)


# A worker's statistical profiler (for the dashboard) samples the running stage's stack every 10 ms: 13% more worker
# CPU than the local pool for the same stages (benchmarks/README.md, generate.py --runner dask). The local cluster
# runs without it; for a cluster of your own, start the workers with DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED=False.
WORKER_CONFIG = {"distributed.worker.profile.enabled": False}
WORKER_PROFILER_OFF_ENV = {"DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED": "False"}

# the flow's settings a worker adopts (tasks.pool.prepare_worker): the S3 endpoint and credentials, the CPU-hour price
WORKER_ENVIRONMENT_PREFIXES = ("VHD_", "AWS_")
WORKERS_REFRESH_S = 1.0
last_moved: dict[str, int] = {}  # the bytes the last run's DaskWorkers moved (benchmarks/scale.py)


def packed_bytes(value) -> int:
    """The bytes of the packed items in a stage's argument or result (a Packed, a result with packs(), or a dataclass
    holding Packed fields, as a validate stage's result does)."""
    found = packs(value) or [field for field in getattr(value, "__dict__", {}).values() if isinstance(field, Packed)]
    return sum(len(packed.blob) for packed in found)


class DaskWorkers:
    """tasks.pool's executor on a Dask cluster: each call is one Dask task of a pure function (bytes and small values
    in, bytes and counts out), sent to the worker that packed its input while that one has fewer than
    QUEUED_PER_WORKER of our calls, else to the least busy worker; `allow_other_workers` lets the scheduler run it
    elsewhere when that worker dies (it reschedules a lost worker's tasks, and every stage is a pure function of its
    arguments, so a re-run gives the same result). Prefect's task runs, the progress counts and the LLM budget stay in
    the flow's process, as with the local pool."""

    reports_with_result = True

    def __init__(self, client, cluster=None) -> None:
        self._client, self._cluster = client, cluster
        self._environment = {name: value for name, value in os.environ.items()
                             if name.startswith(WORKER_ENVIRONMENT_PREFIXES)}
        self._lock = threading.Lock()
        self._calls: dict[str, int] = {}
        self._by_pid: dict[int, str] = {}
        self._refreshed = 0.0
        self.moved = {"to_workers": 0, "from_workers": 0}  # the packed items' bytes each way (benchmarks/scale.py)
        from tasks.pool import prepare_worker

        try:  # import the stage code on every worker now, beside the flow's own start
            client.run(prepare_worker, self._environment, wait=False)
        except Exception:  # noqa: BLE001 - an optimisation only: each call prepares its worker anyway
            pass

    def worker_count(self) -> int:
        self._refresh(force=True)
        return len(self._calls)

    def _refresh(self, force: bool = False) -> None:
        """The cluster's workers as the scheduler knows them (at most once a WORKERS_REFRESH_S; workers come and go)."""
        now = time.monotonic()
        if not force and now - self._refreshed < WORKERS_REFRESH_S:
            return
        self._refreshed = now
        try:
            known = set(self._client.scheduler_info(n_workers=-1).get("workers", {}))
        except Exception:  # noqa: BLE001 - keep the last list; the scheduler places the call anyway
            return
        with self._lock:
            self._calls = {address: self._calls.get(address, 0) for address in known}

    def _place(self, near: int | None) -> str | None:
        self._refresh()
        with self._lock:
            if not self._calls:
                return None
            address = self._by_pid.get(near) if near is not None else None
            if address not in self._calls or self._calls[address] >= QUEUED_PER_WORKER:
                address = min(self._calls, key=self._calls.__getitem__)
            self._calls[address] += 1
            return address

    def _finished(self, address: str | None) -> None:
        if address is not None:
            with self._lock:
                if address in self._calls:
                    self._calls[address] -= 1

    def _send(self, function, args: tuple, near: int | None, on_result) -> Future:
        address = self._place(near)
        placed = {} if address is None else {"workers": [address], "allow_other_workers": True}
        done: Future = Future()
        try:
            remote = self._client.submit(function, *args, pure=False, **placed)
        except BaseException:
            self._finished(address)
            raise

        def settle(finished) -> None:
            self._finished(address)
            try:
                done.set_result(on_result(finished.result()))
            except BaseException as error:  # noqa: BLE001 - handed to the caller through the future
                done.set_exception(error)

        remote.add_done_callback(settle)
        return done

    def submit(self, function, *args, near: int | None = None) -> Future:
        from tasks.pool import run_prepared

        return self._send(run_prepared, (self._environment, function, *args), near, lambda result: result)

    def submit_staged(self, runner, function, args: tuple, reported: bool, near: int | None = None) -> Future:
        """A stage (tasks.pool.run_staged_reporting): its packed result and its reports, the worker that packed it
        remembered for the next stage whose input it is."""
        def learned(outcome):
            result, reports, (pid, address) = outcome
            self._by_pid[pid] = address
            self.moved["from_workers"] += packed_bytes(result)
            return result, reports

        self.moved["to_workers"] += sum(packed_bytes(arg) for arg in args)
        return self._send(runner, (self._environment, function, args, reported), near, learned)

    def pids(self) -> list[int]:
        """The worker processes' pids when the cluster is this run's own (a local cluster), else none."""
        if self._cluster is None:
            return []
        try:
            return list(self._client.run(os.getpid).values())
        except Exception:  # noqa: BLE001 - a cluster already closing has no pids to count
            return []

    def shutdown(self) -> None:
        global last_moved
        last_moved = dict(self.moved)
        try:
            self._client.close()
        finally:
            if self._cluster is not None:
                self._cluster.close()
