"""The LLM setter's yield and cost with the real local model (gemma-3-270m behind llama.cpp's server).

    .venv/bin/python benchmarks/setter.py [--count 20] [--families tardiness,routing,inventory_dp]
        [--price-in 0.20] [--price-out 0.80] [--draft compact|full]

Starts the local model on a free loopback port, renders `--count` admitted environments through the
litellm setter (fresh answer cache, plain stage functions: no Prefect overhead in the figures), and prints
first-attempt admission, attempts per admitted environment, the share of tool interfaces rewritten after
feedback, tokens and USD per admitted environment at the reference price (USD per million prompt /
completion tokens), next to the paper's marks: 65.6% first-attempt admission, 1.41 attempts, $0.01.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PAPER = {"first_attempt_admission": 0.656, "attempts_per_admitted": 1.41, "usd_per_admitted": 0.01}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=20, help="admitted environments to render (default 20)")
    parser.add_argument("--families", default="tardiness,routing,inventory_dp")
    parser.add_argument("--price-in", type=float, default=0.20, help="USD per million prompt tokens (default 0.20)")
    parser.add_argument("--price-out", type=float, default=0.80, help="USD per million completion tokens (0.80)")
    parser.add_argument("--draft", choices=("compact", "full"), default="compact")
    parser.add_argument("--date", default="2026-08-01")
    args = parser.parse_args()

    from setter.local_server import LITELLM_MODEL, LocalModelServer

    workdir = Path(tempfile.mkdtemp(prefix="vhd-setter-bench-"))
    os.environ.update({"VHD_LLM_RESPONSE_FORMAT": "json_object", "VHD_LLM_DRAFT": args.draft,
                       "VHD_LLM_CACHE": str(workdir / "cache"),
                       "VHD_LLM_PRICES": json.dumps({LITELLM_MODEL: [args.price_in, args.price_out]})})
    with LocalModelServer(log_path=workdir / "server.log") as server:
        os.environ["VHD_LLM_OPTIONS"] = json.dumps({"api_base": server.api_base, "api_key": "local"})
        started = time.perf_counter()
        warehouse = str(workdir / "wh")
        run(warehouse, args)
        seconds = time.perf_counter() - started
    report(warehouse, args, seconds)
    return 0


def run(warehouse: str, args) -> None:
    from tasks.commit import commit
    from tasks.land import land_result
    from tasks.plan import plan_shards
    from tasks.rounds import run_shard

    begun = dt.datetime.now(dt.UTC)
    shards = plan_shards(args.date, args.count, args.families, setter="litellm", model="openai/gemma-3-270m")
    landed = []
    for shard in shards:
        result = run_shard(shard)
        landed.append(land_result(warehouse, result, "setter-bench"))
        print(f"  {shard.family} {shard.size}x{shard.horizon}: {len(result.admitted)} admitted, "
              f"{sum(not a.admitted for a in result.attempts)} rejected attempts", flush=True)
    commit(warehouse, "setter-bench", None, shards[0].date, {"count": args.count}, landed, 0, [], begun)


def report(warehouse: str, args, seconds: float) -> None:
    from warehouse.catalog import run_query
    from warehouse.location import resolve_warehouse
    from warehouse.reports import REPORTS

    wh = resolve_warehouse(warehouse)
    for title, sql in REPORTS["setter"]:
        rows = run_query(wh, sql).to_pylist()
        print(f"\n{title}:")
        for row in rows:
            print("  " + ", ".join(f"{k}={_fmt(v)}" for k, v in row.items()))
    (total,) = run_query(wh, REPORTS["setter"][1][1]).to_pylist()
    calls = run_query(wh, "SELECT count(*) AS n, avg(latency_s) AS latency, sum(prompt_tokens) AS p, "
                          "sum(completion_tokens) AS c FROM llm_calls WHERE error IS NULL").to_pylist()[0]
    reasons = run_query(wh, "SELECT reason, count(*) AS n FROM attempts WHERE NOT admitted GROUP BY 1 "
                            "ORDER BY n DESC LIMIT 5").to_pylist()
    print(f"\nlocal model, {args.draft} drafts, reference price ${args.price_in}/${args.price_out} per M tokens; "
          f"{total['admitted']} admitted in {seconds:.0f} s ({calls['n']} answered calls, "
          f"{calls['latency']:.1f} s each, {calls['p'] / max(calls['n'], 1):.0f} prompt + "
          f"{calls['c'] / max(calls['n'], 1):.0f} completion tokens per call)")
    for key, mark in PAPER.items():
        value = float(total[key]) if total[key] is not None else float("nan")
        better = value >= mark if key == "first_attempt_admission" else value <= mark
        print(f"  {key:<24} {value:>10.4g}   paper {mark:<6}  {'better' if better else 'worse'} "
              f"(ratio {value / mark:.2f})")
    print(f"  {'tokens_per_admitted':<24} {float(total['tokens_per_admitted']):>10.1f}")
    print(f"  {'rewritten_share':<24} {float(total['rewritten_share'] or 0):>10.3f}   paper 0.316")
    if reasons:
        print("  most common rejections: " + "; ".join(f"{r['n']}x {r['reason'][:80]}" for r in reasons))


def _fmt(value):
    return f"{float(value):.4g}" if isinstance(value, (float, int)) and not isinstance(value, bool) else value


if __name__ == "__main__":
    sys.exit(main())
