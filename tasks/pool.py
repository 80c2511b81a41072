"""The CPU-bound part of the stages runs in a pool of worker processes, so that one machine's cores all work.

The stage tasks themselves stay Prefect tasks in the flow's threads: Prefect's bookkeeping, the progress counters
and the LLM budget stay in the flow's process, and only pure functions of their arguments (sampling, solving,
template rendering, admission, writing a shard's files) are sent to the pool. Their results do not depend on where
they run, so a run lands the same environment ids with or without the pool.

`configure(processes)` sets the pool's size for the runs that follow (0 or 1: everything in this process); it is
started on first use, from a fork server that has imported the stage code once, and stopped with `shutdown()`.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

# what the fork server imports once, so that each worker it forks starts with the stage code loaded
PRELOAD = ["envs.admission", "tasks.land", "tasks.render", "tasks.sample", "tasks.solve", "setter.template"]

_lock = threading.Lock()
_processes = 0
_pool: ProcessPoolExecutor | None = None


def default_processes() -> int:
    """One worker process per core this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def configure(processes: int | None) -> None:
    """Use `processes` worker processes from now on (None: one per core; 0 or 1: run everything in this process).

    The workers start at once, in the background, so that they are ready when the first stage needs them.
    """
    global _processes
    wanted = default_processes() if processes is None else int(processes)
    if wanted < 0:
        raise ValueError(f"processes must be 0 or more, got {processes}")
    with _lock:
        _stop_locked()  # a new pool adopts the environment as it is now
        _processes = wanted if wanted > 1 else 0
        if _processes:
            pool = _pool_locked()
            for _ in range(_processes):
                pool.submit(os.getpid)


def processes() -> int:
    """The pool's configured size (0: no pool, work runs in the calling thread)."""
    return _processes


def _pool_locked() -> ProcessPoolExecutor:
    global _pool
    if _pool is None:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(PRELOAD)
        _pool = ProcessPoolExecutor(max_workers=_processes, mp_context=context, initializer=_adopt_environment,
                                    initargs=(dict(os.environ),))
    return _pool


def _adopt_environment(environment: dict[str, str]) -> None:
    """A worker's environment variables are this process's when the pool started (settings such as the S3 endpoint
    or the CPU-hour price are read from them), not the fork server's, which started with the first pool.

    Ctrl-C reaches the whole process group: a worker ignores it (no KeyboardInterrupt traceback from each one),
    and the flow's process stops the workers itself (cli.interrupts)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ.clear()
    os.environ.update(environment)


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


_last_cpu_seconds: float | None = None


def _stop_locked() -> None:
    global _pool, _last_cpu_seconds
    if _pool is not None:
        _last_cpu_seconds = _workers_cpu_seconds(_pool)
        _pool.shutdown(wait=True, cancel_futures=True)
        _pool = None


def _workers_cpu_seconds(pool: ProcessPoolExecutor) -> float | None:
    """CPU seconds the pool's live worker processes used so far (Linux /proc; None elsewhere)."""
    try:
        ticks = os.sysconf("SC_CLK_TCK")
        total = 0
        for pid in list(getattr(pool, "_processes", None) or {}):
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
