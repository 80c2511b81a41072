"""Ids that do not depend on where they were computed (issue 30): the same plan lands the same environment ids with one
and with four BLAS threads.

Before solver output was canonical (mechanisms.canonical) and solvers ran single-threaded (mechanisms.threads), qp's
SLSQP took another number of iterations with another thread count, its spec recorded them, and 16 of 20 qp ids
differed between OPENBLAS_NUM_THREADS=1 and 4 on this 2-core machine. Each plan runs in a fresh process whose thread
variables are set before numpy loads its BLAS, the way a host's settings reach it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# 40 qp and 40 lp (the two families that call scipy's solvers), the stage functions one after the other in the
# subprocess (no Prefect, no pool): what tasks.rounds.run_shard admits
PLAN = {"date": "2026-01-01", "count": 80, "families": "qp,lp"}
LANDED = """
import json, sys
from tasks.plan import plan_shards
from tasks.rounds import run_shard
plan = json.loads(sys.argv[1])
ids = {shard.key: [env.spec.env_id for env in run_shard(shard).admitted]
       for shard in plan_shards(plan["date"], plan["count"], plan["families"])}
print(json.dumps(ids))
"""


def landed_with_threads(threads: int) -> dict[str, list[str]]:
    """The plan's admitted ids per shard, generated in a fresh process with `threads` BLAS and OpenMP threads."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": str(threads),
           "OPENBLAS_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    done = subprocess.run([sys.executable, "-c", LANDED, json.dumps(PLAN)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_same_plan_lands_the_same_ids_with_one_and_four_blas_threads():
    with ThreadPoolExecutor(2) as both:
        one, four = both.map(landed_with_threads, (1, 4))
    assert set(one) == set(four) and sum(len(ids) for ids in one.values()) == PLAN["count"]
    assert any(key.startswith("qp-") for key in one)
    differ = {key: len(set(one[key]) ^ set(four[key])) // 2 for key in one if one[key] != four[key]}
    assert not differ, f"ids that differ with the BLAS thread count, per shard: {differ}"
