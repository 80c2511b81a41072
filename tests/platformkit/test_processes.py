"""platformkit.processes: the process, port and lock-file toolkit of the Prefect server, the local model server and
the warehouse's compaction lock."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading

import pytest

from platformkit.processes import (
    create_exclusive,
    free_port,
    group_alive,
    held_flock,
    holder_gone,
    pid_alive,
    port_free,
)


def _gone_pid() -> int:
    """The id of a process that has exited and been reaped."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_a_live_process_and_group_are_alive_and_a_reaped_one_is_not():
    assert pid_alive(os.getpid()) and group_alive(os.getpgid(0))
    gone = _gone_pid()
    assert not pid_alive(gone) and not group_alive(gone)


def test_a_bound_port_is_not_free_and_a_picked_one_is():
    port = free_port()
    assert port_free(port) and port_free(port, reuse=True)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
        sock.listen()
        assert not port_free(port) and not port_free(port, reuse=True)


def test_a_held_flock_makes_the_next_one_wait_then_raise_what_busy_returns(tmp_path):
    lock = tmp_path / "start.lock"
    ticks = []
    with held_flock(lock, 1.0):
        with pytest.raises(TimeoutError):
            with held_flock(lock, 0.0):
                pass
        result: list[BaseException] = []

        def other() -> None:  # flock is per open file: another open in another thread waits as another process would
            try:
                with held_flock(lock, 0.5, lambda: ticks.append(1), lambda: LookupError("busy")):
                    pass
            except LookupError as error:
                result.append(error)

        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
        assert [str(e) for e in result] == ["busy"] and ticks
    with held_flock(lock, 0.0):  # released
        pass


def test_an_exclusive_lock_file_is_created_once_and_a_dead_holder_is_gone(tmp_path):
    path = str(tmp_path / "_compaction.lock")
    assert create_exclusive(path, b"first")
    assert not create_exclusive(path, b"second")
    assert open(path, "rb").read() == b"first"
    host = socket.gethostname()
    assert holder_gone({"host": host, "pid": _gone_pid()}, host)
    assert not holder_gone({"host": host, "pid": os.getpid()}, host)
    assert not holder_gone({"host": "elsewhere", "pid": _gone_pid()}, host)
    assert not holder_gone({"host": host, "pid": "12"}, host) and not holder_gone(None, host)
