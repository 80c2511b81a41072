"""The prose audit: every family rendered in every domain's passages, linted, each defect kind counted, and a
sample of full hidden-mode texts written to a file for a person to read.

    .venv/bin/python benchmarks/prose.py [--families all] [--passages all|first] [--sample 30]
                                         [--out benchmarks/prose_sample.md]

For each family and each corpus passage tagged for it (`--passages first`: the first such passage of each domain: every
family x domain pair) it
samples one instance at the family's default size, renders it with the template setter and runs the prose lint
(envs.lint.defects) over its texts, tools and the observations of the probes and of the oracle's, the default's and
the informed agent's plays. It prints one row per family (pairs, defects of each kind) and a total row; the sample
file holds `--sample` environments chosen by a fixed seed, each with its hidden instructions, its tools and the
first observations of an informed play.
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def readable(spec) -> str:
    """The environment as an agent in hidden mode meets it: instructions, tools, the first calls of a good play."""
    from envs.agents import play
    from envs.environment import Environment

    r = spec.rendering
    lines = [f"## {spec.family} in {r.passage_id}: {r.title}", "", r.instructions["hidden"], "", "Tools:"]
    lines += [f"- `{t.name}`: {t.description}" for t in r.tools if t.operation not in ("calculator", "turns_left")]
    lines += ["", "An informed play (first calls, then the last):"]
    trajectory = play(Environment(spec, "hidden"), "informed").trajectory
    for step in [*trajectory[:5], *trajectory[-1:]]:
        lines.append(f"- `{step['tool']}({json.dumps(step['arguments'])})` -> {json.dumps(step['result'])[:600]}")
    return "\n".join(lines) + "\n"


def passages_of(family: str, every: bool):
    """The passages a family is told in: every one tagged for it, or the first of each domain."""
    from setter.corpus import passages_for

    chosen, domains = [], set()
    for passage in passages_for(family):
        if every or passage.domain not in domains:
            chosen.append(passage)
            domains.add(passage.domain)
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", default="all")
    parser.add_argument("--passages", choices=["all", "first"], default="first")
    parser.add_argument("--sample", type=int, default=30)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "prose_sample.md"))
    args = parser.parse_args()

    import mechanisms
    from envs.conformance import render_in
    from envs.lint import DEFECT_KINDS, defects

    families = mechanisms.resolve_families(None if args.families == "all" else args.families)
    started = time.perf_counter()
    totals: collections.Counter = collections.Counter()
    examples: dict[str, str] = {}
    specs = []
    print(f"{'family':<20} {'pairs':>5} " + " ".join(f"{k:>14}" for k in DEFECT_KINDS))
    for family in families:
        counts: collections.Counter = collections.Counter()
        pairs = 0
        for n, passage in enumerate(passages_of(family, args.passages == "all")):
            spec = render_in(family, passage, n)
            specs.append(spec)
            pairs += 1
            for kind, message in defects(spec):
                counts[kind] += 1
                examples.setdefault(kind, f"{family} in {passage.id}: {message}")
        totals.update(counts)
        totals["pairs"] += pairs
        print(f"{family:<20} {pairs:>5} " + " ".join(f"{counts[k]:>14}" for k in DEFECT_KINDS), flush=True)
    print(f"{'total':<20} {totals['pairs']:>5} " + " ".join(f"{totals[k]:>14}" for k in DEFECT_KINDS))
    for kind, example in examples.items():
        print(f"first {kind}: {example}")
    sample = random.Random(27).sample(specs, min(args.sample, len(specs)))
    Path(args.out).write_text("# A sample of hidden-mode environments, as an agent reads them\n\n"
                              + "\n".join(readable(spec) for spec in sample))
    print(f"defects: {sum(totals[k] for k in DEFECT_KINDS)} over {totals['pairs']} pairs in "
          f"{time.perf_counter() - started:.1f} s; sample of {len(sample)} texts: {args.out}")


if __name__ == "__main__":
    main()
