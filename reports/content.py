"""What each section of the report shows: headline cards, charts and tables, from the collected queries."""

from __future__ import annotations

import datetime as dt
import decimal

from reports import charts
from reports.collect import Collected
from reports.named import SECTIONS, named_queries

HEADINGS = {"size": "Size", "cost": "Cost", "admission": "Admission", "diversity": "Diversity",
            "difficulty": "Difficulty"}
SHOWN_ROWS = 60


def shown(value) -> str:
    """A value as the report prints it: money with significant digits, shares as they are, ints plainly."""
    if value is None:
        return "—"
    if isinstance(value, decimal.Decimal):
        value = int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


def usd(value) -> str:
    return "unknown" if value is None else f"${float(value):.4g}"


def share(value) -> str:
    return "—" if value is None else f"{100 * float(value):.1f}%"


def _card(label: str, value: str, query: str) -> dict:
    return {"label": label, "value": value, "query": query}


def cards(c: Collected) -> dict[str, list[dict]]:
    """The headline figures per section, each naming its query."""
    size, cost = c.one("size_summary"), c.one("cost_summary")
    rejected, projection = c.one("cost_rejected_share"), c.one("cost_next_night_total")
    diversity = c.one("diversity_summary")
    admission = c.rows("admission_per_family")
    instances = sum(int(r["instances"]) for r in admission)
    admitted = sum(int(r["admitted"]) for r in admission)
    return {
        "size": [_card("environments", shown(size.get("environments")), "size_summary"),
                 _card("families", shown(size.get("families")), "size_summary"),
                 _card("nights", shown(size.get("nights")), "size_summary"),
                 _card("rejected attempts", shown(size.get("rejected_attempts")), "size_summary")],
        "cost": [_card("total spent", usd(cost.get("total_usd")), "cost_summary"),
                 _card("per environment", usd(cost.get("usd_per_environment")), "cost_summary"),
                 _card("tokens", shown(cost.get("tokens")), "cost_summary"),
                 _card("USD on rejected attempts", share(rejected.get("usd_share_rejected")), "cost_rejected_share"),
                 _card("next night, projected", usd(projection.get("projected_usd")), "cost_next_night_total")],
        "admission": [_card("instances admitted", f"{admitted:,} of {instances:,}", "admission_per_family")],
        "diversity": [_card("distinct instances", shown(diversity.get("distinct_instances")), "diversity_summary"),
                      _card("tool interfaces", shown(diversity.get("distinct_tool_interfaces")),
                            "diversity_summary"),
                      _card("distinct titles", shown(diversity.get("distinct_titles")), "diversity_summary"),
                      _card("domains", shown(diversity.get("domains")), "diversity_summary")],
        "difficulty": [_card(f"{tier} environments", shown(count), "difficulty_tiers")
                       for tier, count in _per_tier(c.rows("difficulty_tiers")).items()],
    }


def _per_family_tier(rows: list[dict]) -> list[dict]:
    return [{**row, "family_tier": f"{row['family']} {row['tier']}"} for row in rows if row["tier"] != "unmeasured"]


def _per_tier(rows: list[dict]) -> dict[str, int]:
    """Environments per tier, easiest first (an environment without measures is 'unmeasured')."""
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["tier"]] = counts.get(row["tier"], 0) + int(row["environments"])
    order = ["easy", "medium", "hard", "frontier", "unmeasured"]
    return {tier: counts[tier] for tier in sorted(counts, key=lambda t: order.index(t) if t in order else 9)}


def _chart(chart_id: str, svg: str, caption: str, query: str) -> dict:
    return {"id": chart_id, "svg": svg, "caption": caption, "query": query}


def section_charts(c: Collected, narrative: dict) -> dict[str, list[dict]]:
    """Every chart, by section."""
    embeddings = narrative["embeddings"]
    out = {
        "size": [
            _chart("size-per-night", charts.per_night(c.rows("size_per_night"), c.rows("size_per_night_family")),
                   "environments per night, stacked by family; the line is the cumulative total",
                   "size_per_night, size_per_night_family"),
            _chart("size-per-family", charts.bars(c.rows("size_per_family"), "family", "environments",
                                                  "environments per family"), "environments per family",
                   "size_per_family"),
            _chart("size-per-split", charts.bars(c.rows("size_per_split"), "split", "environments",
                                                 "environments per split"), "environments per split",
                   "size_per_split"),
        ],
        "cost": [
            _chart("cost-per-family", charts.bars(c.rows("cost_per_family"), "family", "usd_per_environment",
                                                  "USD per environment, per family"),
                   "USD per admitted environment (its failed attempts included)", "cost_per_family"),
            _chart("cost-per-night", charts.bars(c.rows("cost_per_night"), "night", "usd", "USD per night",
                                                 horizontal=False), "what each night's runs cost", "cost_per_night"),
            _chart("cost-per-stage", charts.bars(c.rows("cost_per_stage"), "stage", "usd", "USD per stage"),
                   "LLM stages and compute", "cost_per_stage"),
            _chart("cost-next-night", charts.bars(c.rows("cost_next_night"), "family", "projected_usd",
                                                  "projected USD of the next night, per family"),
                   "the last night's mix at each family's mean cost per environment", "cost_next_night"),
        ],
        "admission": [
            _chart("admission-yield", charts.bars(c.rows("admission_per_family"), "family", "yield",
                                                  "admission yield per family"),
                   "admitted instances / sampled instances", "admission_per_family"),
            _chart("admission-checks", charts.bars(c.rows("admission_rejection_checks"), "check_name",
                                                   "rejected_attempts", "rejected attempts per check"),
                   "which admission check rejected", "admission_rejection_checks"),
        ],
        "diversity": [
            _chart("family-domain", charts.heatmap(c.rows("diversity_family_domain"), "family", "domain",
                                                   "environments", "family x domain coverage"),
                   "environments per family and domain", "diversity_family_domain"),
            _chart("size-horizon", charts.size_horizon(c.rows("diversity_size_horizon")),
                   "the size x horizon grid per family", "diversity_size_horizon"),
            _chart("coverage", charts.grouped_bars(c.rows("diversity_coverage"), "family",
                                                   ["environments", "distinct_instances", "distinct_titles",
                                                    "distinct_tool_interfaces"], "distinct per family"),
                   "environments, distinct instances, titles and tool interfaces per family", "diversity_coverage"),
            _chart("title-dispersion", charts.bars(embeddings.get("per_family", []), "family", "dispersion",
                                                   "title embedding dispersion per family"),
                   "mean pairwise cosine distance of the titles' embeddings, computed in Python",
                   "diversity_narrative_sample"),
        ],
        "difficulty": [
            _chart("difficulty", charts.difficulty(c.rows("difficulty_histogram")),
                   "u0/u*, the default policy's position and the idle policy's score", "difficulty_histogram"),
            _chart("difficulty-tiers", charts.heatmap(c.rows("difficulty_tiers"), "family", "tier", "environments",
                                                      "environments per family and difficulty tier"),
                   "environments per family and measured tier", "difficulty_tiers"),
            _chart("difficulty-baselines", charts.grouped_bars(_per_family_tier(c.rows("difficulty_tiers")),
                                                               "family_tier", ["mean_informed_score",
                                                                               "mean_naive_score",
                                                                               "mean_heuristic_score"],
                                                               "informed, naive prober and best heuristic score"),
                   "the informed agent's mean score (the reachable ceiling), the naive prober's (their difference is "
                   "the skill gap) and the best heuristic's, per family and tier", "difficulty_tiers"),
        ],
    }
    return out


def tables(c: Collected) -> dict[str, list[dict]]:
    """Every query's answer as a table (first SHOWN_ROWS rows), by section."""
    out: dict[str, list[dict]] = {section: [] for section in SECTIONS}
    for query in named_queries():
        table = c.results[query.name]
        rows = table.slice(0, SHOWN_ROWS).to_pylist()
        out[query.section].append({
            "name": query.name, "title": query.title, "columns": table.column_names,
            "rows": [[shown(row[name]) for name in table.column_names] for row in rows],
            "total": table.num_rows, "hidden": table.num_rows > SHOWN_ROWS, "open": table.num_rows <= 15,
        })
    return out


def narrative_note(narrative: dict) -> str:
    """The Python-computed narrative measures, saying over which SQL selection."""
    grams = ", ".join(f"distinct-{g['n']} {share(g['distinct_share'])}" for g in narrative["ngrams"])
    embeddings = narrative["embeddings"]
    if embeddings["available"]:
        meaning = (f"title embedding dispersion {shown(embeddings['dispersion'])} (mean pairwise cosine distance "
                   f"over {embeddings['embedded']} titles, {embeddings['model']}), "
                   f"{embeddings['near_duplicate_pairs']} near-duplicate title pairs (cosine >= "
                   f"{embeddings['near_duplicate_threshold']})")
    else:
        meaning = f"title embeddings unavailable: {embeddings['why']}"
    return (f"Computed in Python over the {narrative['texts']} rows of query {narrative['source_query']}: "
            f"word n-grams of the stories: {grams}; {meaning}.")
