"""Build the report: answer the named queries, compute the narrative measures, write HTML, print a summary."""

from __future__ import annotations

import datetime as dt
import functools
import posixpath
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import jinja2

from reports import content
from reports.collect import Collected, collect
from reports.named import SECTIONS, named_queries
from reports.narrative import narrative_measures
from warehouse.location import Warehouse

REPORTS_DIR = "_reports"


@dataclass
class Report:
    """A built report: its HTML, the collected answers, the narrative measures and where time went."""

    html: str
    collected: Collected
    narrative: dict
    seconds: dict[str, float] = field(default_factory=dict)


@functools.cache
def _template() -> jinja2.Template:
    loader = jinja2.FileSystemLoader(str(Path(__file__).resolve().parent / "templates"))
    return jinja2.Environment(loader=loader, autoescape=True).get_template("report.html.j2")


def build_report(wh: Warehouse, since: str | dt.date | None = None) -> Report:
    """The report over the warehouse (rows dated `since` or later when given)."""
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    collected = collect(wh, since)
    seconds["queries"] = time.perf_counter() - started
    mark = time.perf_counter()
    narrative = narrative_measures(collected.rows("diversity_narrative_sample"))
    seconds["narrative"] = time.perf_counter() - mark
    mark = time.perf_counter()
    cards, charts, tables = content.cards(collected), content.section_charts(collected, narrative), \
        content.tables(collected)
    seconds["charts"] = time.perf_counter() - mark
    sections = [{"id": s, "heading": content.HEADINGS[s], "cards": cards[s], "charts": charts[s],
                 "tables": tables[s], "note": content.narrative_note(narrative) if s == "diversity" else ""}
                for s in SECTIONS]
    mark = time.perf_counter()
    html = _template().render(
        warehouse=wh.url, generated=dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        selection=f"rows dated {collected.since} or later" if collected.since else "all rows",
        sections=sections, chart_count=sum(len(s["charts"]) for s in sections),
        queries=[{"name": q.name, "section": q.section, "file": q.file, "title": q.title,
                  "rows": collected.results[q.name].num_rows} for q in named_queries()],
        embedding_model=narrative["embeddings"].get("model", "all-MiniLM-L6-v2"))
    seconds["html"] = time.perf_counter() - mark
    seconds["total"] = time.perf_counter() - started
    return Report(html=html, collected=collected, narrative=narrative, seconds=seconds)


def report_path(wh: Warehouse, date: str) -> str:
    """Where the nightly report of a date lives: ``{warehouse}/_reports/date={date}/report.html``."""
    return wh.path(f"{REPORTS_DIR}/date={dt.date.fromisoformat(date).isoformat()}/report.html")


def write_text(wh: Warehouse, path: str, text: str) -> str:
    """Write a text file through fsspec, atomically (a rename locally, one PUT on S3); returns its URL."""
    data = text.encode()
    if wh.is_local:
        wh.fs.makedirs(posixpath.dirname(path), exist_ok=True)
        temporary = f"{path}.tmp-{uuid.uuid4().hex}"
        with wh.fs.open(temporary, "wb") as handle:
            handle.write(data)
        wh.fs.mv(temporary, path)
    else:
        wh.fs.pipe_file(path, data)
    return wh.url_of(path)
