"""Printing tables in the three formats the commands offer.

Values are printed as they are stored, whatever they hold (titles and stories come from an LLM): never read as
Rich markup or emoji codes; JSON is strict (non-finite numbers as null, schemas.strict_json). The table shows
control characters (a terminal's escape sequences) as \\xNN instead of sending them to the terminal.
"""

from __future__ import annotations

import csv
import io
import re
import sys
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from schemas.strict_json import dumps

# Piped output is not wrapped at 80 columns: column names and ids stay whole for grep and less. Markup is for
# the commands' own words only: a stored value goes in through literal() or escape().
console = Console(width=None if sys.stdout.isatty() else 200, emoji=False)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def literal(value: Any, style: str = "") -> Text:
    """A stored value as Rich text shown exactly (no markup, no emoji codes; control characters as \\xNN)."""
    return Text(_CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(value)), style=style)


def print_literal(*parts: str | Text) -> None:
    """Print parts side by side: a str is the command's own markup, a Text (from literal()) a stored value."""
    line = Text()
    for part in parts:
        line.append_text(Text.from_markup(part) if isinstance(part, str) else part)
    console.print(line)


__all__ = ["DOCUMENT_FORMATS", "FORMATS", "arrow_rows", "console", "escape", "literal", "print_literal", "print_rows",
           "print_sections"]
FORMATS = ("table", "csv", "json")  # rows: a table (the default), CSV or JSON
DOCUMENT_FORMATS = ("table", "json")  # one document (an environment, a family list, a report of checks)


def print_rows(columns: list[str], rows: list[tuple[Any, ...]] | list[list[Any]], fmt: str = "table",
               title: str | None = None) -> None:
    if fmt == "json":
        print(dumps([dict(zip(columns, row, strict=True)) for row in rows], indent=1))
    elif fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)
        sys.stdout.write(buffer.getvalue())
    else:
        table = Table(title=None if title is None else literal(title), show_lines=False)
        for column in columns:
            table.add_column(literal(column), overflow="fold")
        for row in rows:
            table.add_row(*(_cell(v) for v in row))
        console.print(table)


def print_sections(sections: list[tuple[str, tuple[list[str], list[tuple[Any, ...]]]]], fmt: str = "table") -> None:
    """Several titled tables (a report's sections): one table each, or with --format json one JSON document, an
    object of each section's title and its rows (a JSON reader takes it whole, not a stream of arrays); with
    --format csv one CSV document too, a first column `section` naming each row's section and the sections' columns
    after it, in order of appearance (empty where a section has no such column), not one header per section."""
    if fmt == "json":
        print(dumps({title: [dict(zip(columns, row, strict=True)) for row in rows]
                     for title, (columns, rows) in sections}, indent=1))
        return
    if fmt == "csv" and len(sections) > 1:
        every = list(dict.fromkeys(column for _, (columns, _) in sections for column in columns))
        header = ["section", *every] if "section" not in every else ["report_section", *every]
        print_rows(header, [(title, *(dict(zip(columns, row, strict=True)).get(c) for c in every))
                            for title, (columns, rows) in sections for row in rows], fmt="csv")
        return
    for title, (columns, rows) in sections:
        print_rows(columns, rows, fmt=fmt, title=title)


def _cell(value: Any) -> Text:
    if value is None:
        return Text("—")
    if isinstance(value, float):
        return Text(f"{value:.6g}")
    text = str(value)
    return literal(text if len(text) <= 120 else text[:117] + "...")


def arrow_rows(table) -> tuple[list[str], list[tuple[Any, ...]]]:
    columns = table.column_names
    data = table.to_pylist()
    return columns, [tuple(row[c] for c in columns) for row in data]
