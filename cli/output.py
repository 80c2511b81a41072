"""Printing tables in the three formats the commands offer."""

from __future__ import annotations

import csv
import io
import json
import sys
from typing import Any

from rich.console import Console
from rich.table import Table

# Piped output is not wrapped at 80 columns: column names and ids stay whole for grep and less.
console = Console(width=None if sys.stdout.isatty() else 200)
FORMATS = ("table", "csv", "json")


def print_rows(columns: list[str], rows: list[tuple[Any, ...]] | list[list[Any]], fmt: str = "table",
               title: str | None = None) -> None:
    if fmt == "json":
        print(json.dumps([dict(zip(columns, row, strict=True)) for row in rows], default=str, indent=1))
    elif fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)
        sys.stdout.write(buffer.getvalue())
    else:
        table = Table(title=title, show_lines=False)
        for column in columns:
            table.add_column(column, overflow="fold")
        for row in rows:
            table.add_row(*(_cell(v) for v in row))
        console.print(table)


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.6g}"
    text = str(value)
    return text if len(text) <= 120 else text[:117] + "..."


def arrow_rows(table) -> tuple[list[str], list[tuple[Any, ...]]]:
    columns = table.column_names
    data = table.to_pylist()
    return columns, [tuple(row[c] for c in columns) for row in data]
