"""Processes, ports and lock files on this machine: what the local Prefect server (cli.prefect_server), the local
model server (setter.local_server) and the warehouse's compaction lock (warehouse.maintenance) share.

- ``pid_alive``, ``group_alive``: whether a process (group) exists; one we may not signal exists.
- ``port_free``, ``free_port``: whether a port of the loopback can be bound; one the system picks.
- ``held_flock``: an exclusive ``fcntl.flock`` on a file, waited for (released by the OS if its holder dies).
- ``create_exclusive``, ``holder_gone``: a lock file created with O_EXCL that names its holder (host and pid), and
  whether that holder is a process of this host that is gone (the lock is stale).
- ``die_with_parent``, ``die_when_readable``, ``die_when_orphaned``: a helper process (a stage worker, the fork server)
  that is killed when the process that made it dies, SIGKILL included: Linux's parent-death signal, a thread that
  waits on a pipe only that process holds open (multiprocessing's parent sentinel), for a grandparent that the
  parent-death signal cannot watch, or a thread that watches for this process being re-parented.

Standard library only, and ``socket`` imported where used: every vhd command imports cli.prefect_server.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

LOOPBACK = "127.0.0.1"


def _answers_signal_zero(send: Any, target: int) -> bool:
    """Whether `send(target, 0)` reaches something (one owned by another user counts)."""
    try:
        send(target, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists (signal 0; one owned by another user exists too)."""
    return _answers_signal_zero(os.kill, pid)


def group_alive(pgid: int) -> bool:
    """Whether a process group with this id has a member left."""
    return _answers_signal_zero(os.killpg, pgid)
    return True


def port_free(port: int, host: str = LOOPBACK, reuse: bool = False) -> bool:
    """Whether host:port can be bound; with `reuse`, as a server binds it (SO_REUSEADDR, as uvicorn does:
    connections of a server stopped a moment ago, in TIME_WAIT, do not hold the port)."""
    import socket

    with socket.socket() as sock:
        if reuse:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = LOOPBACK) -> int:
    """A port of host that nothing listens on now (the system picks it)."""
    import socket

    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def held_flock(path: Path, wait_s: float, waiting: Callable[[], None] | None = None,
               busy: Callable[[], BaseException] | None = None) -> Iterator[None]:
    """Hold an exclusive flock on `path` (created if missing): tried every 0.2 s, `waiting()` called between tries;
    after `wait_s` the exception `busy()` returns is raised (TimeoutError by default). The OS releases the lock when
    its holder dies, so a lock left behind is never stale."""
    with open(path, "a+") as handle:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise (busy() if busy else TimeoutError(f"{path} is locked by another process")) from None
                if waiting is not None:
                    waiting()
                time.sleep(0.2)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def create_exclusive(path: str, data: bytes) -> bool:
    """Create the file `path` holding `data`, only if it does not exist (O_EXCL: one of two creators wins); False
    when it exists."""
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    return True


def holder_gone(holder: dict[str, Any] | None, host: str) -> bool:
    """Whether a lock's holder (its "host" and "pid", as read from the lock) is a process of `host`, this machine,
    that no longer exists: its lock is stale. A holder on another host, or one that does not say, is not gone."""
    return (holder is not None and holder.get("host") == host and isinstance(holder.get("pid"), int)
            and not pid_alive(holder["pid"]))


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent(signum: int = 9) -> bool:
    """Have the kernel send `signum` (SIGKILL) to this process when its parent dies (Linux PR_SET_PDEATHSIG, through
    libc's prctl); True when set. The "parent" is the thread that forked this process, so call it only in a process
    forked by a thread that lives as long as its process (a fork server's main loop). A parent that died before the
    call is noticed too (this process was re-parented): then the signal is sent at once. False where prctl is not
    available (not Linux): nothing is set."""
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        return False
    parent = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)  # this process's own symbols: libc's prctl among them
        if libc.prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0) != 0:
            return False
    except (OSError, AttributeError):
        return False
    if parent == 1 or os.getppid() != parent:  # it died before prctl (re-parented): the signal will never come
        os.kill(os.getpid(), signum)
    return True


def die_when_readable(fd: int, signum: int = 9) -> None:
    """Send `signum` (SIGKILL) to this process as soon as `fd` becomes readable, from a daemon thread that waits on
    it. For a pipe whose write end only one process holds (multiprocessing's parent sentinel), that is when that
    process dies, however it dies: the thread wakes on end of file and never polls."""
    import select
    import threading

    def wait() -> None:
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLHUP)
        try:
            events = []
            while not events:
                events = poller.poll()
        except OSError:
            return
        if any(event & select.POLLNVAL for _, event in events):  # not an open fd: nothing to watch
            return
        os.kill(os.getpid(), signum)

    threading.Thread(target=wait, name="vhd-die-with-owner", daemon=True).start()


def die_when_orphaned(poll_s: float = 0.5) -> None:
    """Send SIGKILL to this process once its parent is gone (it was re-parented: getppid changed), checked every
    `poll_s` by a daemon thread. For a process whose parent may have forked it from any thread (the parent-death
    signal follows the thread, not the process) and that holds no pipe only its parent writes to."""
    import threading

    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_s)
        os.kill(os.getpid(), 9)

    threading.Thread(target=watch, name="vhd-die-when-orphaned", daemon=True).start()
