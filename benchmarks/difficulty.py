"""Difficulty per family and tier: what the informed agent, the naive prober and the heuristic agents score, the
skill gap (informed - naive prober), how much of the information fits the budget, and how many sampled instances
are admitted at the tier asked for.

    .venv/bin/python benchmarks/difficulty.py [--families all] [--tiers easy,medium,hard,frontier] [--count 30]
                                              [--processes 2] [--date 2026-12-03]

For each family and tier it samples instances from the tier's cells (as `vhd generate --tier TIER` does),
renders them with the template setter and runs admission, until `--count` are admitted or 4 x count were drawn.
Scores are means over the admitted environments, against the reachable reference (u*, or the optimal online policy
of a sequential family; `heuristic:NAME` per heuristic agent); `yield` is admitted / drawn; `refused` names the
commonest reason. Every player acts through the hidden mode's tools and knows only what its calls showed. For the
sequential families the tier scores (informed, naive, gap, best_heur) are expectations over redrawn paths
(envs.difficulty.REDRAWS) while `heuristic:NAME` is the score on the drawn path the environment records.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DRAWS_PER_ADMITTED = 4


def measure_tier(family: str, tier: str, count: int, date: str) -> dict:
    import mechanisms
    from envs.admission import admit
    from envs.difficulty import INFORMED, NAIVE_PROBER, reachable_u
    from envs.scoring import score
    from mechanisms.base import ONLINE_BASELINE
    from schemas.shard import ShardSpec
    from tasks.render import render_candidate
    from tasks.solve import sample_and_solve

    mechanism = mechanisms.get(family)
    cells = mechanism.tiers()[tier].grid
    admitted, drawn, reasons = [], 0, collections.Counter()
    heuristics: dict[str, list[float]] = collections.defaultdict(list)
    index = 0
    while len(admitted) < count and drawn < DRAWS_PER_ADMITTED * count:
        size, horizon = cells[index % len(cells)]
        shard = ShardSpec(date=date, family=family, family_version=mechanism.version, split="bench",
                          index=index // len(cells), count=1, size=size, horizon=horizon, difficulty=tier)
        index += 1
        drawn += 1
        try:
            solved = sample_and_solve(shard, n=1)[0]  # the first round over-samples: one instance per draw here
            candidate = render_candidate(shard, solved)
        except Exception as error:  # noqa: BLE001 - a benchmark reports failures, it does not stop on them
            reasons[f"error: {type(error).__name__}"] += 1
            continue
        spec = candidate.spec
        verdict = admit(spec)
        if not verdict.admitted:
            reasons[f"{verdict.check}: {(verdict.reason or '')[:60]}" if verdict.check != "difficulty"
                    else f"difficulty: measured {spec.difficulty.tier}"] += 1
            continue
        admitted.append(spec)
        ref = spec.reference
        for name, u in ref.baselines.items():
            if name not in (INFORMED, NAIVE_PROBER, ONLINE_BASELINE):
                heuristics[name].append(score(u, ref.u0, reachable_u(ref)))
    n = len(admitted)

    def mean(values: list[float]) -> float | None:
        return round(sum(values) / len(values), 3) if values else None

    return {
        "family": family, "tier": tier, "admitted": n, "drawn": drawn, "yield": round(n / drawn, 2) if drawn else 0,
        "informed": mean([s.difficulty.informed_score for s in admitted]),
        "naive": mean([s.difficulty.naive_score for s in admitted]),
        "skill_gap": mean([s.difficulty.skill_gap for s in admitted]),
        "facts_fit": mean([s.difficulty.facts_fit for s in admitted]),
        "best_heuristic": mean([s.difficulty.heuristic_score for s in admitted]),
        **{f"heuristic:{name}": mean(values) for name, values in sorted(heuristics.items())},
        "refused": reasons.most_common(1)[0][0] if reasons else "",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", default="all")
    parser.add_argument("--tiers", default="easy,medium,hard,frontier")
    parser.add_argument("--count", type=int, default=30)
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--date", default="2026-12-03")
    args = parser.parse_args()
    import mechanisms

    families = mechanisms.resolve_families(None if args.families == "all" else args.families)
    tiers = [t.strip() for t in args.tiers.split(",") if t.strip()]
    jobs = [(family, tier) for family in families for tier in tiers]
    with ProcessPoolExecutor(max_workers=max(1, args.processes)) as pool:
        rows = list(pool.map(measure_tier, *zip(*jobs, strict=True), [args.count] * len(jobs),
                             [args.date] * len(jobs)))
    print(f"{'family':<20} {'tier':<9} {'admitted':>8} {'yield':>6} {'informed':>8} {'naive':>6} {'gap':>6} "
          f"{'best_heur':>9} {'facts_fit':>9}  heuristics / commonest refusal")
    for row in rows:
        heur = ", ".join(f"{k.split(':', 1)[1]} {v}" for k, v in row.items() if k.startswith("heuristic:"))
        print(f"{row['family']:<20} {row['tier']:<9} {row['admitted']:>4}/{row['drawn']:<3} {row['yield']:>6} "
              f"{row['informed']!s:>8} {row['naive']!s:>6} {row['skill_gap']!s:>6} {row['best_heuristic']!s:>9} "
              f"{row['facts_fit']!s:>9}  {heur}" + (f" | {row['refused']}" if row["refused"] else ""))


if __name__ == "__main__":
    main()
