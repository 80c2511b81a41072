"""The CPU-bound part of the stages runs in a pool of worker processes, so that one machine's cores all work.

The stage tasks themselves stay Prefect tasks in the flow's threads: Prefect's bookkeeping, the progress counters
and the LLM budget stay in the flow's process, and only pure functions of their arguments (sampling, solving,
template rendering, admission, writing a shard's files) are sent to the pool. Their results do not depend on where
they run, so a run lands the same environment ids with or without the pool.

What a stage makes in a worker stays pickled until a worker reads it (`Packed`): the flow's process hands a stage's
items from one worker to the next as bytes, and Prefect persists those bytes for the shard cache, so that the
process that runs Prefect never pickles or unpickles an environment (`call_staged`). A worker keeps the last items it
packed, and a stage whose input a worker made is sent to that worker when it is free enough: it takes them as they
are, without unpickling them (once; elsewhere, or a second time, they are read from their bytes). A worker reports
counts as they happen (each admission) through a queue that a thread of the flow's process hands to the stage's
listener, so a progress bar moves per environment whichever process admits it.

`configure(processes)` sets the pool's size for the runs that follow (0 or 1: everything in this process); it is
started on first use, from a fork server that has imported the stage code once, and stopped with `shutdown()`.
"""

from __future__ import annotations

import gc
import itertools
import multiprocessing
import os
import pickle
import signal
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from schemas.errors import UserError

T = TypeVar("T")

# what the fork server imports once, so that each worker it forks starts with the stage code loaded
# (platformkit.forkserver_guard first: the fork server dies with the process that started it, from its first second)
PRELOAD = ["platformkit.forkserver_guard", "envs.admission", "tasks.land", "tasks.render", "tasks.sample",
           "tasks.solve", "setter.template", "scipy.optimize", "scipy.sparse"]  # the solvers import these on first use

_lock = threading.Lock()
_processes = 0
_pool: Workers | None = None
_reports: Any = None  # the queue a worker reports on (set in each worker; in the flow's process, the pool's)
_listeners: dict[int, tuple[Callable[[Any], None], threading.Event]] = {}
_listener_ids = itertools.count(1)
_drain: threading.Thread | None = None
POOL_MIN_ENVIRONMENTS = 200
REPORT_WAIT_SECONDS = 10.0  # how long a stage waits for its last reports after its worker returned
# the cyclic garbage collector's thresholds while stages run: the stages allocate millions of short-lived dicts and
# lists (states, observations, unpickled items), and at Python's default (700, 10, 10) a full collection walks the
# whole heap every few thousand surviving objects (about 8% of a run's CPU, half of an unpickling's)
STAGE_GC_THRESHOLDS = (20_000, 50, 50)


KEPT_PACKS = 8  # the items a worker keeps of those it packed last, for the next stage sent to it
QUEUED_PER_WORKER = 2  # a stage goes to the worker that made its input while that has fewer calls than this
_kept: OrderedDict[bytes, Any] = OrderedDict()  # in a worker: the items it packed last, by token
_in_worker = False


@dataclass(frozen=True)
class Packed:
    """Items pickled in the process that made them, with their number: read only where they are used. `pid` and
    `token` name the process that packed them and this packing: that process may still hold the items themselves."""

    blob: bytes
    count: int
    pid: int = 0
    token: bytes = b""


def pack(items: Any, count: int | None = None) -> Packed:
    """`items` pickled, with their number (default: len(items)). A worker keeps the items as they are too (the last
    KEPT_PACKS of them), for a next stage sent to it."""
    packed = Packed(pickle.dumps(items, protocol=pickle.HIGHEST_PROTOCOL), len(items) if count is None else count,
                    os.getpid(), os.urandom(12))
    if _in_worker:
        _kept[packed.token] = items
        while len(_kept) > KEPT_PACKS:
            _kept.popitem(last=False)
    return packed


def unpack(items: list | Packed) -> list:
    """The items themselves (a list that was never packed is returned as it is): those this worker packed and still
    keeps are taken as they are, once; any other from their bytes."""
    if not isinstance(items, Packed):
        return items
    kept = _kept.pop(items.token, None)
    return pickle.loads(items.blob) if kept is None else kept


def packs(value: Any) -> list[Packed]:
    """The packed items in a stage's argument: itself, or what its `packs()` names (a stage result, a shard's parts)."""
    if isinstance(value, Packed):
        return [value]
    found = getattr(value, "packs", None)
    return found() if callable(found) else []


def count(items: list | Packed) -> int:
    return items.count if isinstance(items, Packed) else len(items)


def tune_gc() -> None:
    """Set the collector for stage work in this process: what is loaded so far (the code, its tables) is frozen out
    of every collection, and collections run less often (STAGE_GC_THRESHOLDS). Cycles are still collected."""
    gc.freeze()
    gc.set_threshold(*STAGE_GC_THRESHOLDS)


def default_processes() -> int:
    """One worker process per core this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def processes_for(processes: int | None, total: int) -> int:
    """Worker processes for a run of `total` environments: `processes` if given, else one per core for a run of at
    least POOL_MIN_ENVIRONMENTS (a smaller run is done before the workers would have started)."""
    if processes is not None:
        return processes
    return default_processes() if total >= POOL_MIN_ENVIRONMENTS else 0


def start_fork_server() -> None:
    """Start the fork server now: it imports the stage code (PRELOAD) in the background while this process goes on
    with its own start, and the pool's workers fork from it ready to work."""
    from multiprocessing import forkserver

    multiprocessing.get_context("forkserver").set_forkserver_preload(PRELOAD)
    forkserver.ensure_running()


def configure(processes: int | None) -> None:
    """Use `processes` worker processes from now on (None: one per core; 0 or 1: run everything in this process).

    The workers start at once, in the background, so that they are ready when the first stage needs them.
    """
    global _processes
    wanted = default_processes() if processes is None else int(processes)
    if wanted < 0:
        raise UserError(f"processes must be 0 or more, got {processes}")
    tune_gc()  # the flow's process runs stages too (all of them without a pool)
    with _lock:
        _stop_locked()  # a new pool adopts the environment as it is now
        _processes = wanted if wanted > 1 else 0
        if _processes:
            _pool_locked()  # its workers start now


def processes() -> int:
    """The pool's configured size (0: no pool, work runs in the calling thread)."""
    return _processes


class Workers:
    """The worker processes, each behind an executor of its own, so that a call can be sent to the process that made
    its input (`submit(..., near=pid)`): there while it has fewer than QUEUED_PER_WORKER calls, else to the worker
    with the fewest (a worker never waits while another has calls queued that it could take)."""

    def __init__(self, processes: int, context, initargs: tuple) -> None:
        self._executors = [ProcessPoolExecutor(max_workers=1, mp_context=context, initializer=_adopt_environment,
                                               initargs=initargs) for _ in range(processes)]
        self._calls = [0] * processes
        self._by_pid: dict[int, int] = {}
        self._lock = threading.Lock()
        for position, executor in enumerate(self._executors):  # start each now, and learn its pid
            executor.submit(os.getpid).add_done_callback(
                lambda started, position=position: self._started(started, position))

    def _started(self, started: Future[int], position: int) -> None:
        if started.exception() is None:  # a worker that failed to start is never preferred
            self._by_pid[started.result()] = position

    def submit(self, function: Callable[..., T], *args: Any, near: int | None = None) -> Future[T]:
        with self._lock:
            position = self._by_pid.get(near) if near is not None else None
            if position is None or self._calls[position] >= QUEUED_PER_WORKER:
                position = min(range(len(self._calls)), key=self._calls.__getitem__)
            self._calls[position] += 1
        future = self._executors[position].submit(function, *args)
        future.add_done_callback(lambda done: self._finished(position))
        return future

    def _finished(self, position: int) -> None:
        with self._lock:
            self._calls[position] -= 1

    def pids(self) -> list[int]:
        return [pid for executor in self._executors for pid in (getattr(executor, "_processes", None) or {})]

    def shutdown(self) -> None:
        for executor in self._executors:
            executor.shutdown(wait=False, cancel_futures=True)
        for executor in self._executors:
            executor.shutdown(wait=True)


def _pool_locked() -> Workers:
    global _pool, _reports, _drain
    if _pool is None:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(PRELOAD)
        _reports = context.SimpleQueue()  # a put is written at once (no feeder thread): it precedes the result
        _drain = threading.Thread(target=_drain_reports, args=(_reports,), name="vhd-pool-reports", daemon=True)
        _drain.start()
        _pool = Workers(_processes, context, (dict(os.environ), _reports))
    return _pool


def _drain_reports(reports) -> None:
    """The flow's side of the report queue: each report to its stage's listener, each stage's end to its waiter."""
    while True:
        listener_id, counts = reports.get()
        if listener_id is None:
            return
        entry = _listeners.get(listener_id)
        if entry is None:
            continue
        listener, finished = entry
        if counts is None:
            finished.set()
        else:
            listener(counts)


def _adopt_environment(environment: dict[str, str], reports=None) -> None:
    """A worker's environment variables are this process's when the pool started (settings such as the S3 endpoint
    or the CPU-hour price are read from them), not the fork server's, which started with the first pool.

    Ctrl-C reaches the whole process group: a worker ignores it (no KeyboardInterrupt traceback from each one),
    and the flow's process stops the workers itself (cli.interrupts).

    A worker dies with the flow's process, SIGKILL included (issue 31): it waits on its parent sentinel, a pipe only
    the flow's process holds open, and dies with the fork server that forked it (parent-death signal). Left alive,
    workers would hold the fork server's "alive" pipe and the resource tracker's pipe open, and all of them would
    outlive the command; with the workers gone, both see end of file and exit."""
    global _reports, _in_worker
    from platformkit.processes import die_when_readable, die_with_parent

    die_with_parent()
    owner = multiprocessing.parent_process()
    if owner is not None and owner.sentinel is not None:
        die_when_readable(owner.sentinel)
    _in_worker = True
    tune_gc()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ.clear()
    os.environ.update(environment)
    _reports = reports


def use_workers(workers: Any) -> None:
    """Send the stages' work to `workers` from now on instead of local processes: an executor with `submit(function,
    *args, near=pid)` returning a future, `pids()` and `shutdown()` (flows.runners.DaskWorkers, a Dask cluster's
    workers). Such an executor returns a stage's reports with its result (`reports_with_result`): there is no queue
    from its workers to this process, so a stage's counts reach its listener when the stage completes."""
    global _processes, _pool
    with _lock:
        _stop_locked()
        _pool, _processes = workers, 2


def prepare_worker(environment: dict[str, str]) -> None:
    """Make a process that is not one of this module's forks (a Dask worker) a stage worker: it keeps what it packs
    for the next stage sent to it, collects garbage as the forks do, has the stage code imported, and reads the
    settings in `environment` (the flow's VHD_/AWS_ variables: the S3 endpoint, the CPU-hour price). Runs once per
    worker and environment; what a worker had before in its own environment is kept."""
    global _in_worker, _prepared_for
    key = tuple(sorted(environment.items()))
    if _prepared_for == key:
        return
    if not _in_worker:
        import importlib

        for module in PRELOAD:
            importlib.import_module(module)
        tune_gc()
    _in_worker = True
    os.environ.update(environment)
    _prepared_for = key


_prepared_for: tuple | None = None


def run_prepared(environment: dict[str, str], function: Callable[..., T], *args: Any) -> T:
    """In a worker that is not a fork of this module (a Dask worker): `function(*args)`, the worker prepared first."""
    prepare_worker(environment)
    return function(*args)


def run_staged_reporting(environment: dict[str, str], function: Callable[..., Any], args: tuple,
                         reported: bool) -> tuple[Any, list]:
    """In a Dask worker: the stage as `_run_staged` runs it, its counts collected (when `reported`) and returned with
    its packed result, for the flow's process to hand to the stage's listener, and the worker's pid and address
    (the worker a stage whose input this is goes to)."""
    from distributed import get_worker

    prepare_worker(environment)
    reports: list = []
    kwargs = {"report": reports.append} if reported else {}
    result = function(*(_unpacked(arg) for arg in args), **kwargs)
    return (result.packed() if hasattr(result, "packed") else result), reports, (os.getpid(), get_worker().address)


def submit(function: Callable[..., T], *args: Any) -> Future[T]:
    """Run `function(*args)` in a worker process (or at once in this thread when there is no pool)."""
    with _lock:
        pool = _pool_locked() if _processes else None
    if pool is None:
        future: Future[T] = Future()
        try:
            future.set_result(function(*args))
        except BaseException as error:  # noqa: BLE001 - handed to the caller through the future, as the pool does
            future.set_exception(error)
        return future
    return pool.submit(function, *args)


def call(function: Callable[..., T], *args: Any) -> T:
    """`function(*args)`, computed in a worker process when there is a pool."""
    return submit(function, *args).result()


def _unpacked(value: Any) -> Any:
    """An argument as the stage function takes it: packed items read, a stage result's packed items read."""
    if isinstance(value, Packed):
        return unpack(value)
    if hasattr(value, "unpacked"):
        return value.unpacked()
    return value


def _run_staged(function: Callable[..., Any], args: tuple, listener_id: int | None) -> Any:
    """In a worker: the stage function on its arguments as it takes them, its counts reported on the queue as they
    happen, its result's items packed (`packed()`). The stage's end is reported last, before the result is sent."""
    kwargs: dict[str, Any] = {}
    if listener_id is not None:
        kwargs["report"] = lambda counts: _reports.put((listener_id, counts))
    try:
        result = function(*(_unpacked(arg) for arg in args), **kwargs)
    finally:
        if listener_id is not None:
            _reports.put((listener_id, None))
    return result.packed() if hasattr(result, "packed") else result


def _maker(args: tuple) -> int | None:
    """The process that packed the most of these arguments' bytes (None: none was packed)."""
    found = [packed for arg in args for packed in packs(arg)]
    return max(found, key=lambda packed: len(packed.blob)).pid if found else None


def call_staged(function: Callable[..., T], *args: Any, report: Callable[[Any], None] | None = None) -> T:
    """`function(*args)` for a stage: in a worker process when there is a pool, where packed arguments (Packed, or a
    result with `unpacked()`) are read and the result's items are packed (`packed()`); else here, as it is.

    With `report`, the function is called with `report=`, a callable that hands counts to `report` as they happen,
    in this process, before this returns."""
    with _lock:
        pool = _pool_locked() if _processes else None
    if pool is None:
        return function(*(_unpacked(arg) for arg in args), **({} if report is None else {"report": report}))
    near = _maker(args)
    if getattr(pool, "reports_with_result", False):  # a Dask cluster's worker: its counts come with its result
        result, reports = pool.submit_staged(run_staged_reporting, function, args, report is not None,
                                             near=near).result()
        for counts in reports:
            report(counts)
        return result
    if report is None:
        return pool.submit(_run_staged, function, args, None, near=near).result()
    listener_id, finished = next(_listener_ids), threading.Event()
    _listeners[listener_id] = (report, finished)
    try:
        result = pool.submit(_run_staged, function, args, listener_id, near=near).result()
        finished.wait(REPORT_WAIT_SECONDS)  # the reports are in the queue ahead of the result: read them all
        return result
    finally:
        _listeners.pop(listener_id, None)


_last_cpu_seconds: float | None = None


def _stop_locked() -> None:
    global _pool, _last_cpu_seconds, _reports, _drain
    if _pool is not None:
        _last_cpu_seconds = _workers_cpu_seconds(_pool)
        _pool.shutdown()
        _pool = None
        if _reports is not None:  # a pool of this module's forks (a Dask cluster has no report queue)
            _reports.put((None, None))
            _drain.join(timeout=REPORT_WAIT_SECONDS)
        _reports, _drain = None, None


def _workers_cpu_seconds(pool: Workers) -> float | None:
    """CPU seconds the pool's live worker processes used so far (Linux /proc; None elsewhere)."""
    try:
        ticks = os.sysconf("SC_CLK_TCK")
        total = 0
        for pid in pool.pids():
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        return total / ticks
    except (OSError, ValueError, IndexError):
        return None


def last_run_worker_cpu_seconds() -> float | None:
    """The CPU seconds the worker processes of the pool stopped last had used (for benchmarks)."""
    return _last_cpu_seconds


def shutdown() -> None:
    """Stop the worker processes (the next submit starts them again)."""
    with _lock:
        _stop_locked()
