"""`vhd report` without a kind: build the whole report, write its HTML to --out, print the summary."""

from __future__ import annotations

import fsspec

from reports.build import build_report
from reports.summary import summary_lines
from warehouse.location import Warehouse


def write_full_report(wh: Warehouse, since: str | None, out: str) -> int:
    """Write the report's HTML to `out` (a path or fsspec URL) and print its terminal summary."""
    report = build_report(wh, since)
    with fsspec.open(out, "w", encoding="utf-8") as handle:
        handle.write(report.html)
    for line in summary_lines(report):
        print(line)
    print(f"wrote {out} ({len(report.html.encode()) / 1024:.0f} KiB, {report.seconds['total']:.1f} s; "
          f"{len(report.collected.results)} named queries, see reports/queries/)")
    return 0
