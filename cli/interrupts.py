"""Ctrl-C and SIGTERM stop a command within a few seconds: one line, no traceback, no child process left running.

A command runs in a worker thread while the main thread waits for it (`run`): Python only runs a signal handler in
the main thread, between bytecodes, so a command busy in C code (a DuckDB query, Prefect's engine waiting on its
tasks) could otherwise delay an interrupt for minutes, and Prefect's own SIGTERM bridge, which is installed only in
the main thread, would turn a SIGTERM into a crash-handling path that waits for the running tasks.

On SIGINT or SIGTERM the handler (`_on_signal`): stops the running DuckDB queries, terminates this command's child
processes (the stage worker pool and its fork server, a local Dask cluster, a local model server: every
descendant in this process's session; the local Prefect server runs in a session of its own on purpose, shared by
later commands, and keeps running), prints one line on stderr saying what landed and how to finish (the command's
note, `set_note`), and leaves with os._exit: exit code 130 for SIGINT, 143 (128 + 15) for SIGTERM. Skipping the
interpreter's exit skips Prefect's atexit drains, whose event worker would otherwise retry a server that may be
gone, printing tracebacks for minutes; nothing of ours is lost by it: a run's data becomes visible only through
its commit marker, written at its end, and what a killed run wrote before is invisible (`vhd warehouse check`
lists it as leftovers; the same command run again finishes the run, skipping committed shards).
"""

from __future__ import annotations

import contextvars
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

EXIT_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}
DEFAULT_NOTE = "interrupted: nothing of this command was committed; committed data is intact"
CHILD_GRACE_S = 3.0  # seconds a child process gets to exit after SIGTERM before SIGKILL

_note: Callable[[], str] | str = DEFAULT_NOTE


def set_note(note: Callable[[], str] | str) -> None:
    """What the interrupt line says for the running command (a callable is asked when the interrupt comes)."""
    global _note
    _note = note


def run(function: Callable[..., Any], *args: Any) -> Any:
    """`function(*args)` in a worker thread, interruptible by SIGINT and SIGTERM (see the module's docstring)."""
    if threading.current_thread() is not threading.main_thread():  # signals are the main thread's: run it here
        return function(*args)
    result: dict[str, Any] = {}

    def target() -> None:
        try:
            result["value"] = function(*args)
        except BaseException as error:  # noqa: BLE001 - re-raised in the main thread
            result["error"] = error

    previous = {signum: signal.signal(signum, _on_signal) for signum in EXIT_CODES}
    worker = threading.Thread(target=contextvars.copy_context().run, args=(target,), name="vhd-command", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.2)  # a signal's handler runs between these waits
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if "error" in result:
        raise result["error"]
    return result.get("value")


def _on_signal(signum: int, frame) -> None:
    for other in EXIT_CODES:  # a second Ctrl-C while cleaning up must not start over
        signal.signal(other, signal.SIG_IGN)
    saved = _silence()
    try:
        _stop_queries()
        stop_children()
        note = _note() if callable(_note) else _note
    except Exception as error:  # noqa: BLE001 - the exit below must happen whatever went wrong here
        note = f"{DEFAULT_NOTE} (cleanup: {type(error).__name__}: {error})"
    _leave(note, EXIT_CODES.get(signum, 130), saved)


def _silence() -> tuple[int, int]:
    """Flush what the command printed, then send whatever the other threads print while this process winds down
    (a task failing because its worker process was stopped, a log line) to /dev/null; returns the saved
    (stdout, stderr) descriptors."""
    try:
        sys.stdout.flush()
    except Exception:  # noqa: BLE001 - a closed pipe: nothing more to write there
        pass
    saved = os.dup(1), os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    return saved


def _leave(note: str, code: int, saved: tuple[int, int]) -> None:
    out, err = saved
    prefix = b""
    if os.isatty(out):  # the progress bar hid the cursor and may be mid-line
        os.write(out, b"\x1b[?25h")
        prefix = b"\n"
    os.write(err, prefix + " ".join(note.split()).encode() + b"\n")
    os._exit(code)


def _stop_queries() -> None:
    catalog = sys.modules.get("warehouse.catalog")
    if catalog is not None and hasattr(catalog, "interrupt_queries"):
        catalog.interrupt_queries()


def stop_children(grace_s: float = CHILD_GRACE_S) -> None:
    """Terminate every descendant of this process in its session (SIGTERM, then SIGKILL after `grace_s`)."""
    import psutil

    session = os.getsid(0)
    try:
        children = psutil.Process().children(recursive=True)
    except psutil.Error:
        return
    ours = []
    for child in children:
        try:
            if os.getsid(child.pid) == session:  # the detached Prefect server has a session of its own
                ours.append(child)
        except OSError:
            continue
    for child in ours:
        try:
            # multiprocessing's fork server and resource tracker ignore SIGTERM and hold nothing of ours
            helper = any("multiprocessing." in part for part in child.cmdline())
            child.kill() if helper else child.terminate()
        except psutil.Error:
            pass
    _, alive = psutil.wait_procs(ours, timeout=grace_s)
    for child in alive:
        try:
            child.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(alive, timeout=grace_s)


def run_note(wh, date: str, what: str = "run",
             finish: str = "run the same command again to finish (committed shards are skipped)") -> Callable[[], str]:
    """The interrupt line of a command that commits one run of `date` at its end (generate, eval): whether that
    commit happened before the interrupt, and how to finish."""

    def markers() -> set[str]:
        wh.fs.invalidate_cache()
        return set(wh.fs.glob(wh.path(f"_commits/date={date}/*.json")))

    before = markers()

    def note() -> str:
        if markers() - before:
            return (f"interrupted after this {what} committed: what it made is in {wh.url}; nothing needs "
                    "finishing")
        return f"interrupted: nothing of this {what} is committed (what it wrote stays invisible); {finish}"

    return note
