"""A generation killed with SIGKILL at random moments, then run again, ends exact: every requested environment
once, no partial row visible in between; two runs of overlapping plans at the same time end the same way."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

VHD = str(Path(sys.executable).parent / "vhd")
PLAN = ["--count", "24", "--families", "inventory_dp,knapsack,lp", "--shard-size", "4", "--workers", "2",
        "--no-progress"]
TRIALS = 10


def generate(warehouse: str, date: str, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([VHD, "generate", *PLAN, "--date", date, "--warehouse", warehouse, *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "VHD_LLM_CACHE": "off"}, start_new_session=True)


def query(warehouse: str, sql: str) -> list[dict]:
    out = subprocess.run([VHD, "query", sql, "--format", "json", "--warehouse", warehouse], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def counts(warehouse: str) -> dict:
    return query(warehouse, "SELECT count(*) AS rows, count(DISTINCT env_id) AS ids, "
                            "count(DISTINCT params_hash) AS instances FROM environments")[0]


@pytest.fixture(scope="module")
def full_run_seconds(prefect_server, tmp_path_factory):
    """How long an uninterrupted run takes here (kill points are drawn inside it), and its environment ids."""
    warehouse = str(tmp_path_factory.mktemp("reference") / "wh")
    started = time.monotonic()
    process = generate(warehouse, "2026-09-01")
    _, err = process.communicate(timeout=600)
    assert process.returncode == 0, err
    ids = {r["env_id"] for r in query(warehouse, "SELECT env_id FROM environments")}
    assert len(ids) == 24
    return time.monotonic() - started, ids


def test_sigkill_at_random_moments_then_a_rerun_is_exact(full_run_seconds, tmp_path):
    seconds, reference_ids = full_run_seconds
    rng = random.Random(2026)
    for trial in range(TRIALS):
        warehouse = str(tmp_path / f"wh-{trial}")
        process = generate(warehouse, "2026-09-01")
        time.sleep(rng.uniform(0.5, seconds))
        os.killpg(process.pid, signal.SIGKILL)  # the CLI and anything it started, mid-whatever
        process.communicate(timeout=60)
        # what a reader sees right after the crash: committed runs only (a run killed before it wrote anything leaves
        # no warehouse, which a query names as missing)
        if os.path.isdir(warehouse):
            visible = counts(warehouse)
            assert visible["rows"] == visible["ids"] == visible["instances"] and visible["rows"] in (0, 24)
        rerun = generate(warehouse, "2026-09-01")
        _, err = rerun.communicate(timeout=600)
        assert rerun.returncode == 0, f"trial {trial}: {err[-2000:]}"
        assert "Traceback" not in err
        after = counts(warehouse)
        assert after == {"rows": 24, "ids": 24, "instances": 24}, f"trial {trial}: {after}"
        ids = {r["env_id"] for r in query(warehouse, "SELECT env_id FROM environments")}
        assert ids == reference_ids, f"trial {trial}: the re-run landed other environments"


def test_two_concurrent_runs_of_overlapping_plans_lose_and_duplicate_nothing(full_run_seconds, tmp_path):
    _, reference_ids = full_run_seconds
    warehouse = str(tmp_path / "wh")
    first = generate(warehouse, "2026-09-01")
    second = subprocess.Popen([VHD, "generate", "--count", "12", "--families", "knapsack,lp", "--shard-size", "4",
                               "--workers", "2", "--no-progress", "--date", "2026-09-01", "--warehouse", warehouse],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for process in (first, second):
        _, err = process.communicate(timeout=600)
        assert process.returncode == 0, err[-2000:]
    ids = {r["env_id"] for r in query(warehouse, "SELECT env_id FROM environments")}
    assert reference_ids <= ids
    assert counts(warehouse)["rows"] == len(ids)
    runs = query(warehouse, "SELECT count(*) AS n, sum(admitted) AS admitted FROM runs")[0]
    assert runs["n"] == 2 and int(runs["admitted"]) == 24 + 12
