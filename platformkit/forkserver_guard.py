"""Imported first by the stage pool's fork server (tasks.pool PRELOAD): the fork server dies with the process that
started it, SIGKILL included, within half a second (issue 31).

The fork server exits by itself when the "alive" pipe from its parent closes, but only once its preloading is done
(seconds, the solvers' imports) and only when no worker holds that pipe too; the workers die with the fork server
(tasks.pool._adopt_environment). Its parent may have started it from any thread, so the parent-death signal, which
follows the thread, cannot be used: a thread watches for the fork server being re-parented. Imported anywhere else
(not inside multiprocessing.forkserver.main), this module does nothing.
"""

from __future__ import annotations

import sys

from platformkit.processes import die_when_orphaned


def _in_fork_server() -> bool:
    """Whether this import runs inside multiprocessing.forkserver.main (the fork server's preloading)."""
    forkserver = sys.modules.get("multiprocessing.forkserver")
    main = getattr(forkserver, "main", None)
    frame = sys._getframe()
    while frame is not None and main is not None:
        if frame.f_code is main.__code__:
            return True
        frame = frame.f_back
    return False


if _in_fork_server():
    die_when_orphaned()
