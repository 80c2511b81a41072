"""A helper process dies with the process that made it, SIGKILL included (issue 31, item 5): each of
platformkit.processes' three ways, with real processes (a parent that starts a child, then is SIGKILLed)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# the parent: starts a child running CHILD, prints the child's pid, then waits to be killed
PARENT = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", sys.argv[1]], pass_fds=[int(sys.argv[2])] if sys.argv[2] else [])
print(child.pid, flush=True)
time.sleep(600)
"""
CHILDREN = {
    "die_with_parent": "from platformkit.processes import die_with_parent\nassert die_with_parent()\n",
    "die_when_orphaned": "from platformkit.processes import die_when_orphaned\ndie_when_orphaned(0.1)\n",
    "die_when_readable": "import sys\nfrom platformkit.processes import die_when_readable\n"
                         "die_when_readable(int(sys.argv[1]))\n",
}


@pytest.mark.parametrize("way", sorted(CHILDREN))
def test_a_helper_dies_when_its_parent_is_sigkilled(way):
    read_end, write_end = os.pipe()  # die_when_readable: the parent alone holds the write end
    os.set_inheritable(write_end, True)
    child_code = CHILDREN[way] + "import time\nprint('ready', flush=True)\ntime.sleep(600)\n"
    if way == "die_when_readable":
        child_code = child_code.replace("int(sys.argv[1])", str(read_end))
    parent = subprocess.Popen([sys.executable, "-c", PARENT, child_code, str(read_end) if way == "die_when_readable"
                               else ""], stdout=subprocess.PIPE, text=True, cwd=ROOT, pass_fds=[read_end, write_end],
                              env={**os.environ, "PYTHONPATH": ROOT})
    os.close(read_end)
    os.close(write_end)
    child = psutil.Process(int(parent.stdout.readline()))
    try:
        time.sleep(1.5)  # the child has imported and set itself up
        assert child.is_running()
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(10)
        gone_by = time.monotonic() + 5
        while child.is_running() and child.status() != psutil.STATUS_ZOMBIE and time.monotonic() < gone_by:
            time.sleep(0.1)
        assert not child.is_running() or child.status() == psutil.STATUS_ZOMBIE, f"{way}: the child outlived it"
    finally:
        if child.is_running():
            child.kill()
