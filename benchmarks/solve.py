"""Exact-solve time per family: the median at the default knobs, and how it grows over the difficulty grid.

    .venv/bin/python benchmarks/solve.py [--instances 15] [--families knapsack,lp] [--json out.json]

For every family and every (size, horizon) cell of its difficulty grid (plus the default cell) the script
samples `--instances` instances with fixed seeds, times `solve()` alone (sampling excluded) and prints the
median and the 90th percentile in milliseconds, and each cell's median as a ratio to the default cell's.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def time_cell(mechanism, size: int, horizon: int, instances: int) -> list[float]:
    seconds = []
    for i in range(instances):
        params = mechanism.sample(np.random.default_rng([2026, size, horizon, i]), size, horizon)
        started = time.perf_counter()
        mechanism.solve(params)
        seconds.append(time.perf_counter() - started)
    return seconds


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--instances", type=int, default=15, help="instances per cell (default 15)")
    parser.add_argument("--families", help="comma-separated ids or groups (default: every family)")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()

    import mechanisms

    rows = []
    print(f"{'family':<20} {'size x horizon':>14} {'median ms':>10} {'p90 ms':>9} {'x default':>9}")
    for family in mechanisms.resolve_families(args.families):
        m = mechanisms.get(family)
        default_cell = (m.default_size, m.default_horizon)
        cells = [default_cell, *(c for c in m.grid() if c != default_cell)]
        base = None
        for size, horizon in cells:
            seconds = time_cell(m, size, horizon, args.instances)
            median = statistics.median(seconds)
            base = base or median
            label = f"{size} x {horizon}" + (" *" if (size, horizon) == default_cell else "")
            print(f"{family:<20} {label:>14} {median * 1e3:>10.2f} {percentile(seconds, 90) * 1e3:>9.2f} "
                  f"{median / base:>9.1f}", flush=True)
            rows.append({"family": family, "size": size, "horizon": horizon, "default": (size, horizon) == default_cell,
                         "median_ms": median * 1e3, "p90_ms": percentile(seconds, 90) * 1e3,
                         "ratio_to_default": median / base})
    defaults = [r for r in rows if r["default"]]
    slowest = max(defaults, key=lambda r: r["median_ms"])
    print(f"\n{len(defaults)} families; median solve at default knobs: "
          f"{statistics.median(r['median_ms'] for r in defaults):.2f} ms (slowest {slowest['family']}: "
          f"{slowest['median_ms']:.2f} ms); hardest grid cell: "
          f"{max(rows, key=lambda r: r['median_ms'])['family']} "
          f"{max(r['median_ms'] for r in rows):.1f} ms (* = default cell)")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
