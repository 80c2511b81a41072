"""No benchmark can rot: every script under benchmarks/ runs in a tiny mode and must exit 0 without a traceback.

The figures themselves are measured by running the scripts in full (benchmarks/README.md); here only that they run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_cli import vhd

ROOT = Path(__file__).resolve().parents[2]

# each script's tiny mode: arguments that keep it to seconds (the names of the figures it must print)
TINY = {
    "catalog.py": (["--rows", "3000", "--files", "2", "--no-s3"], "rows"),
    "difficulty.py": (["--count", "1", "--families", "knapsack", "--tiers", "easy,frontier", "--processes", "1"],
                      "knapsack"),
    "generate.py": (["--count", "26", "--repeat", "1", "--small", "0", "--processes", "1"], "ratio"),
    "prose.py": (["--families", "knapsack,routing", "--sample", "2"], "defects: 0"),
    "report.py": (["--rows", "3000", "--nights", "2"], "rows"),
    "runtime.py": (["--seconds", "0.5", "--clients", "1"], "calls/s"),
    "scale.py": (["--count", "26", "--workers", "1", "--shard-size", "13", "--small-shards", "13"], "env/s"),
    "setter.py": (["--count", "1", "--families", "knapsack"], "knapsack"),
    "soak.py": (["--minutes", "0.1", "--sample-seconds", "2"], "wrong scores: 0"),
    "solve.py": (["--instances", "1", "--families", "knapsack"], "knapsack"),
}


def test_every_benchmark_script_has_a_tiny_mode():
    assert sorted(p.name for p in (ROOT / "benchmarks").glob("*.py")) == sorted(TINY)


@pytest.fixture(scope="module")
def small_warehouse(prefect_server, tmp_path_factory):
    warehouse = str(tmp_path_factory.mktemp("bench") / "wh")
    vhd("generate", "--count", "13", "--date", "2026-06-01", "--warehouse", warehouse, "--no-progress", check=True)
    return warehouse


@pytest.mark.parametrize("script", sorted(TINY))
def test_the_benchmark_runs_in_its_tiny_mode(script, request, prefect_server, tmp_path):
    arguments, expected = TINY[script]
    if script == "prose.py":
        arguments = [*arguments, "--out", str(tmp_path / "sample.md")]
    if script in ("runtime.py", "soak.py"):
        arguments = [*arguments, "--warehouse", request.getfixturevalue("small_warehouse")]
    if script == "setter.py":
        request.getfixturevalue("local_llm")  # the local model is installed (it starts its own server)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PREFECT_API_URL": prefect_server}
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), *arguments], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=900)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    assert "Traceback" not in output and "error:" not in result.stdout, output[-3000:]
    assert expected in result.stdout, output[-3000:]
