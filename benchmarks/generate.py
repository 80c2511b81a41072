"""Wall time of N admitted environments end to end through Prefect, and the ratio to a plain in-process loop.

    .venv/bin/python benchmarks/generate.py [--count 3300] [--workers 4]

Both runs use the same plan (same date, families, shards) and land into fresh warehouses; the script checks
that both land the same environment ids. The Prefect run uses $PREFECT_API_URL when set, else Prefect's
ephemeral server.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")


def plain_loop(warehouse: str, **plan) -> float:
    import datetime as dt

    from tasks.commit import commit
    from tasks.land import land_result
    from tasks.plan import plan_shards
    from tasks.render import render_candidates
    from tasks.sample import sample_instances
    from tasks.solve import solve_instances
    from tasks.validate import validate_candidates

    started = time.perf_counter()
    begun = dt.datetime.now(dt.UTC)
    shards = plan_shards(plan["date"], plan["count"], plan["families"])
    landed = []
    for shard in shards:
        candidates = render_candidates(shard, solve_instances(shard, sample_instances(shard)))
        landed.append(land_result(warehouse, validate_candidates(shard, candidates), "plain-loop"))
    commit(warehouse, "plain-loop", None, shards[0].date, plan, landed, 0, [], begun)
    return time.perf_counter() - started


def env_ids(warehouse: str) -> set[str]:
    from warehouse.catalog import run_query
    from warehouse.location import resolve_warehouse

    table = run_query(resolve_warehouse(warehouse), "SELECT env_id FROM environments")
    return set(table.column("env_id").to_pylist())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=3300)
    parser.add_argument("--families", default="inventory_dp,knapsack,lp")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--date", default="2026-01-01")
    args = parser.parse_args()
    plan = {"date": args.date, "count": args.count, "families": args.families}
    with tempfile.TemporaryDirectory() as root:
        os.environ.setdefault("PREFECT_HOME", str(Path(root) / "prefect"))
        loop_wh, flow_wh = str(Path(root) / "loop"), str(Path(root) / "flow")
        loop_s = plain_loop(loop_wh, **plan)
        from flows.generate import run_generate

        started = time.perf_counter()
        run_generate(workers=args.workers, warehouse=str(Path(root) / "warm"), date=args.date, count=3,
                     families="lp")
        warm_s = time.perf_counter() - started  # the API server's start (ephemeral unless $PREFECT_API_URL)
        started = time.perf_counter()
        summary = run_generate(workers=args.workers, warehouse=flow_wh, **plan)
        flow_s = time.perf_counter() - started
        same = env_ids(loop_wh) == env_ids(flow_wh)
    print(f"environments admitted (prefect): {summary['admitted']} of {args.count}, rejected attempts "
          f"{summary['rejected']}")
    print(f"plain in-process loop: {loop_s:8.2f} s  ({args.count / loop_s:7.1f} env/s)")
    print(f"prefect flow ({args.workers} threads): {flow_s:8.2f} s  ({args.count / flow_s:7.1f} env/s)")
    print(f"prefect API start + a 3-environment warm-up run: {warm_s:.2f} s (not in the flow figure)")
    print(f"orchestration ratio (prefect / loop): {flow_s / loop_s:.3f}")
    print(f"same environment ids in both: {same}")


if __name__ == "__main__":
    main()
