"""Shared by the integration tests: the trainers' own packages where they install, and running their client code.

verifiers 0.4 pins mcp==2.0.0 and OpenEnv 0.10's fastmcp needs mcp<2, while vhdplay's serve-mcp needs mcp 2.3: each
lives in its own virtual environment under .venv/sidecars/ (made by `make test`), and the tests run those packages'
own code there. The tests never skip: a missing sidecar fails with the command that makes it.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SIDECARS = ROOT / ".venv" / "sidecars"


def sidecar_python(name: str) -> Path:
    python = SIDECARS / name / "bin" / "python"
    assert python.exists(), f"{python} is missing: run `make sidecars` (the {name} package's own code runs there)"
    return python


def run_in_sidecar(name: str, script: str, payload: dict, timeout: float = 300, env: dict | None = None) -> dict:
    """Run `script` (Python source) with the sidecar's interpreter, the payload as JSON on stdin; its last stdout line
    is its JSON answer."""
    with tempfile.TemporaryDirectory() as elsewhere:  # not the checkout: vhdplay is imported as installed there
        completed = subprocess.run([str(sidecar_python(name)), "-c", script], input=json.dumps(payload), text=True,
                                   capture_output=True, timeout=timeout, cwd=elsewhere,
                                   env={**os.environ, **(env or {})})
    assert completed.returncode == 0, f"{name} client failed:\n{completed.stderr[-4000:]}"
    return json.loads(completed.stdout.strip().splitlines()[-1])
