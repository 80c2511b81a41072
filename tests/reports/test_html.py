"""The HTML report in headless Chromium: no console message, every section and chart rendered, a screenshot."""

from __future__ import annotations

import re
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

from reports.named import SECTIONS, named_queries

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
_CONSOLE = re.compile(r":CONSOLE[:(]\d*\)?\]? ?(.*)")


def _chromium(page, *args: str) -> subprocess.CompletedProcess:
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0",
               "--window-size=1200,2400", *args, page.as_uri()]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)


def console_messages(stderr: str) -> list[str]:
    """Every console message (errors and uncaught exceptions included) that Chromium logged."""
    return [match.group(1) for line in stderr.splitlines() if (match := _CONSOLE.search(line))]


class _Dom(HTMLParser):
    """The ids of sections, the state of every chart figure, and the body's counters, from the dumped DOM."""

    def __init__(self):
        super().__init__()
        self.sections, self.charts, self.body, self.queries_listed = [], {}, {}, set()

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "section" and "report-section" in (attributes.get("class") or ""):
            self.sections.append(attributes["id"])
        if tag == "figure" and attributes.get("data-chart"):
            self.charts[attributes["data-chart"]] = attributes.get("data-rendered")
        if tag == "body":
            self.body = attributes
        if tag == "table" and attributes.get("data-query"):
            self.queries_listed.add(attributes["data-query"])


def test_console_errors_are_detected(tmp_path):
    page = tmp_path / "broken.html"
    page.write_text("<html><body><script>console.error('boom'); notDefined();</script></body></html>")
    messages = console_messages(_chromium(page, "--dump-dom").stderr)
    assert any("boom" in m for m in messages) and any("notDefined" in m for m in messages)


def test_the_report_renders_every_section_and_chart_without_console_errors(built_report, tmp_path):
    page = tmp_path / "report.html"
    page.write_text(built_report.html)
    dumped = _chromium(page, "--dump-dom")
    assert console_messages(dumped.stderr) == []
    dom = _Dom()
    dom.feed(dumped.stdout)
    assert dom.sections == [*SECTIONS, "queries"]
    assert len(dom.charts) == int(dom.body["data-charts"]) >= 14
    assert {chart: state for chart, state in dom.charts.items() if state != "yes"} == {}
    assert dom.body["data-rendered"] == dom.body["data-charts"]  # set by the page's script: it ran
    assert dom.queries_listed == {q.name for q in named_queries()}
    for query in named_queries():  # the query list names every query with its file
        assert query.file in dumped.stdout
    # nothing to fetch: no external script, stylesheet, image or font (XML namespaces are names, not fetches)
    assert re.findall(r"(?:src|href)=[\"'](?:https?:)?//|<link\b|url\(\s*['\"]?(?:https?:)?//",
                      built_report.html) == []

    shot = tmp_path / "report.png"
    _chromium(page, f"--screenshot={shot}")
    assert shot.stat().st_size > 50_000
    if pytest.__version__:  # keep the path in the log for a person to look at
        print(f"screenshot: {shot}")
