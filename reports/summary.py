"""The report's terminal summary: a few lines per section, every figure naming its query."""

from __future__ import annotations

from reports.build import Report
from reports.content import share, shown, usd


def summary_lines(report: Report) -> list[str]:
    """Plain lines (no markup) summarising the report."""
    c = report.collected
    size, cost = c.one("size_summary"), c.one("cost_summary")
    rejected, projection = c.one("cost_rejected_share"), c.one("cost_next_night_total")
    diversity = c.one("diversity_summary")
    admission = c.rows("admission_per_family")
    instances = sum(int(r["instances"]) for r in admission)
    admitted = sum(int(r["admitted"]) for r in admission)
    worst = min(admission, key=lambda r: (r["yield"], r["family"]), default=None)
    checks = ", ".join(f"{r['check_name']} {r['rejected_attempts']}" for r in c.rows("admission_rejection_checks"))
    nights = c.rows("size_per_night")
    last = nights[-1] if nights else {}
    difficulty = c.rows("difficulty_per_family")
    grams = {g["n"]: g["distinct_share"] for g in report.narrative["ngrams"]}
    embeddings = report.narrative["embeddings"]
    lines = [
        f"selection: {'rows dated ' + c.since + ' or later' if c.since else 'all rows'}",
        f"size: {shown(size.get('environments'))} environments in {shown(size.get('families'))} families over "
        f"{shown(size.get('nights'))} night(s); last night {shown(last.get('night'))}: "
        f"{shown(last.get('environments'))}; {shown(size.get('rejected_attempts'))} rejected attempts  "
        "[size_summary, size_per_night]",
        f"cost: {usd(cost.get('total_usd'))} in all, {usd(cost.get('usd_per_environment'))} per environment, "
        f"{shown(cost.get('tokens'))} tokens; {share(rejected.get('usd_share_rejected'))} of LLM USD on rejected "
        f"attempts; next night projected {usd(projection.get('projected_usd'))} for "
        f"{shown(projection.get('next_night_environments'))} environments  "
        "[cost_summary, cost_rejected_share, cost_next_night_total]",
        f"admission: {admitted:,} of {instances:,} instances admitted"
        + (f"; lowest yield {worst['family']} {share(worst['yield'])}" if worst else "")
        + (f"; rejections by check: {checks}" if checks else "") + "  [admission_per_family, "
        "admission_rejection_checks]",
        f"diversity: {shown(diversity.get('distinct_instances'))} distinct instances, "
        f"{shown(diversity.get('distinct_tool_interfaces'))} tool interfaces, "
        f"{shown(diversity.get('distinct_titles'))} titles, {shown(diversity.get('domains'))} domains  "
        "[diversity_summary]",
        f"narrative (Python, over diversity_narrative_sample, {report.narrative['texts']} texts): distinct-2 "
        f"{share(grams.get(2))}, distinct-3 {share(grams.get(3))}"
        + (f"; title embedding dispersion {shown(embeddings['dispersion'])}, {embeddings['near_duplicate_pairs']}"
           " near-duplicate title pairs" if embeddings["available"] else f"; {embeddings['why']}"),
        "difficulty: median u0/u* per family: " + ", ".join(
            f"{r['family']} {shown(r['u0_over_u_star_median'])}" for r in difficulty) + "  [difficulty_per_family]",
        "tiers: " + "; ".join(_tier_line(tier, rows) for tier, rows in _by_tier(c.rows("difficulty_tiers")).items())
        + "  [difficulty_tiers]",
    ]
    return lines


def _by_tier(rows: list[dict]) -> dict[str, list[dict]]:
    order = ["easy", "medium", "hard", "frontier", "unmeasured"]
    grouped: dict[str, list[dict]] = {}
    for row in sorted(rows, key=lambda r: order.index(r["tier"]) if r["tier"] in order else 9):
        grouped.setdefault(row["tier"], []).append(row)
    return grouped


def _tier_line(tier: str, rows: list[dict]) -> str:
    """One tier: its environments and their mean informed, naive prober and best heuristic scores and skill gap."""
    n = sum(int(r["environments"]) for r in rows)

    def mean(column: str) -> str:
        weighted = [(float(r[column]), int(r["environments"])) for r in rows if r.get(column) is not None]
        total = sum(w for _, w in weighted)
        return shown(round(sum(v * w for v, w in weighted) / total, 3)) if total else "n/a"

    if tier == "unmeasured":
        return f"unmeasured {n:,}"
    return (f"{tier} {n:,} (informed {mean('mean_informed_score')}, naive prober {mean('mean_naive_score')}, "
            f"skill gap {mean('mean_skill_gap')}, best heuristic {mean('mean_heuristic_score')})")
