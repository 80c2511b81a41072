"""The BLAS and OpenMP thread pools held to one thread while a solver runs.

A multi-threaded BLAS splits a product or a factorisation over its threads and adds the parts in an order that
depends on their number, so a solver's iterates (SLSQP's steps, a LAPACK solve) differ in the last bits with the
thread count, and an iterative solver may even take another path. Held to one thread, the same host computes the
same bits whatever OMP_NUM_THREADS / OPENBLAS_NUM_THREADS / MKL_NUM_THREADS say; mechanisms.canonical rounds away
what still differs between hosts. The limit holds only while a solver runs (the process's own setting is restored
after it), and the solvers here work on matrices of at most a few dozen rows, for which one thread is as fast.

The pools are those of the libraries loaded when the block starts (threadpoolctl finds them); a library that a solver
loads on its first call (scipy.optimize's BLAS is imported when first used) is limited by a block opened after that
import: a nested block re-limits when modules were imported since the outer one began.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from threadpoolctl import ThreadpoolController

_lock = threading.Lock()
_holders = 0  # blocks open in any thread: the pools are process-wide, the first block limits, the last restores
_limiters: list = []  # the limits in force, restored in reverse order by the last block to close
_controller: ThreadpoolController | None = None
_modules_seen = -1  # len(sys.modules) when the controller looked for libraries, and when the limits were last set
_limited_at = -1


def _current_controller() -> ThreadpoolController:
    """The thread pools of the loaded libraries, looked up again after new modules were imported (a new shared
    library comes with a new module; looking up takes milliseconds, limiting microseconds)."""
    global _controller, _modules_seen
    if _controller is None or len(sys.modules) != _modules_seen:
        _modules_seen = len(sys.modules)
        _controller = ThreadpoolController()
    return _controller


@contextmanager
def single_threaded() -> Iterator[None]:
    """Within the block, every BLAS and OpenMP pool loaded in the process runs one thread."""
    global _holders, _limited_at
    with _lock:
        if _holders == 0 or len(sys.modules) != _limited_at:
            _limiters.append(_current_controller().limit(limits=1))
            _limited_at = len(sys.modules)
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0:
                while _limiters:
                    _limiters.pop().restore_original_limits()
                _limited_at = -1


def pool_threads() -> dict[str, int]:
    """The thread count of each loaded BLAS / OpenMP pool, by library file (for tests and diagnostics)."""
    return {info["filepath"]: info["num_threads"] for info in ThreadpoolController().info()}
