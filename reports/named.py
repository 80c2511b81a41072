"""The report's named SQL queries: one file per query in reports/queries, runnable with `vhd query`."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

QUERY_DIR = Path(__file__).resolve().parent / "queries"
SECTIONS: tuple[str, ...] = ("size", "cost", "admission", "diversity", "difficulty")
# the first line of every file: "-- <name> (<section>): <what it answers>"
_HEADER = re.compile(r"^--\s*(?P<name>[a-z0-9_]+)\s*\((?P<section>[a-z]+)\):\s*(?P<title>.+)$")


@dataclass(frozen=True)
class NamedQuery:
    """One query of the report: its name, section, what it answers, its file (relative to the repo) and SQL."""

    name: str
    section: str
    title: str
    file: str
    sql: str


def _parse(path: Path) -> NamedQuery:
    text = path.read_text()
    lines = text.splitlines()
    header = _HEADER.match(lines[0]) if lines else None
    if header is None or header["name"] != path.stem or header["section"] not in SECTIONS:
        raise ValueError(f"{path}: the first line must be '-- {path.stem} (<section>): <what it answers>' "
                         f"with a section among {', '.join(SECTIONS)}")
    described = [header["title"].strip()]
    for line in lines[1:]:
        if not line.startswith("--"):
            break
        described.append(line.removeprefix("--").strip())
    return NamedQuery(name=path.stem, section=header["section"], title=" ".join(described),
                      file=f"reports/queries/{path.name}", sql=text)


@functools.cache
def named_queries() -> tuple[NamedQuery, ...]:
    """Every named query, in section order then by file name."""
    queries = [_parse(path) for path in sorted(QUERY_DIR.glob("*.sql"))]
    return tuple(sorted(queries, key=lambda q: (SECTIONS.index(q.section), q.name)))


def named_query(name: str) -> NamedQuery:
    """One named query; KeyError naming the known ones."""
    for query in named_queries():
        if query.name == name:
            return query
    raise KeyError(f"no report query named {name!r}; known: {', '.join(q.name for q in named_queries())}")
