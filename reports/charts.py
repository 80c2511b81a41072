"""The report's charts as inline SVG (matplotlib, no pyplot: safe in worker threads), one function per chart."""

from __future__ import annotations

import io
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402

matplotlib.rcParams.update({"svg.fonttype": "none", "font.size": 9, "axes.spines.top": False,
                            "axes.spines.right": False, "svg.hashsalt": "vhdplay"})
_WIDE = (8.0, 3.2)
MAX_BARS = 45  # more x positions than this are drawn as bands, not bars
MAX_TICKS = 15


def _svg(figure: Figure) -> str:
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    text = buffer.getvalue()
    return text[text.index("<svg"):]  # inline: no XML prolog or doctype


def _empty(figure: Figure, axes) -> str:
    axes.text(0.5, 0.5, "no rows in this selection", ha="center", va="center", transform=axes.transAxes)
    axes.set_axis_off()
    return _svg(figure)


def _number(value) -> float:
    return float(value) if value is not None else 0.0


def bars(rows: list[dict], label: str, value: str, title: str, horizontal: bool = True) -> str:
    """One bar per row."""
    figure = Figure(figsize=(8.0, max(2.2, 0.24 * len(rows) + 0.8)) if horizontal else _WIDE)
    axes = figure.subplots()
    axes.set_title(title, loc="left")
    if not rows:
        return _empty(figure, axes)
    labels = [str(row[label]) for row in rows]
    values = [_number(row[value]) for row in rows]
    if horizontal:
        axes.barh(labels[::-1], values[::-1], color="#3b7dd8")
        axes.set_xlabel(value)
    else:
        axes.bar(range(len(labels)), values, color="#3b7dd8", width=0.8 if len(labels) <= MAX_BARS else 1.0)
        axes.set_ylabel(value)
        _night_ticks(axes, labels)
    return _svg(figure)


def _night_ticks(axes, labels: list[str]) -> None:
    """At most MAX_TICKS labels along x, evenly spaced (a year of nights stays readable)."""
    step = max(1, -(-len(labels) // MAX_TICKS))
    axes.set_xticks(range(0, len(labels), step), labels[::step], rotation=30, ha="right")


def per_night(nights: list[dict], per_family: list[dict]) -> str:
    """Environments per night stacked by family, and the cumulative total."""
    figure = Figure(figsize=_WIDE)
    axes = figure.subplots()
    axes.set_title("environments per night (by family) and cumulative", loc="left")
    if not nights:
        return _empty(figure, axes)
    labels = [str(row["night"]) for row in nights]
    position = {night: i for i, night in enumerate(labels)}
    counts: dict[str, list[float]] = defaultdict(lambda: [0.0] * len(labels))
    for row in per_family:
        counts[row["family"]][position[str(row["night"])]] = _number(row["environments"])
    colors = matplotlib.colormaps["tab20"]
    families = sorted(counts.items())
    if len(labels) <= MAX_BARS:
        bottom = [0.0] * len(labels)
        for i, (family, values) in enumerate(families):
            axes.bar(range(len(labels)), values, bottom=bottom, label=family, color=colors(i % 20))
            bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    else:  # months of nights: one stacked band per family instead of a bar per family and night
        axes.stackplot(range(len(labels)), *[values for _, values in families], labels=[f for f, _ in families],
                       colors=[colors(i % 20) for i in range(len(families))], step="mid")
    _night_ticks(axes, labels)
    axes.set_ylabel("environments")
    total = axes.twinx()
    total.plot(range(len(labels)), [_number(row["cumulative"]) for row in nights], color="black",
               marker="o" if len(labels) <= MAX_BARS else None)
    total.set_ylabel("cumulative")
    total.set_ylim(bottom=0)
    axes.legend(fontsize=7, ncol=2, loc="upper left", bbox_to_anchor=(1.08, 1.0), frameon=False)
    return _svg(figure)


def heatmap(rows: list[dict], row_key: str, column_key: str, value: str, title: str) -> str:
    """A (row_key x column_key) grid coloured by value."""
    row_labels = sorted({str(r[row_key]) for r in rows})
    column_labels = sorted({r[column_key] for r in rows})
    figure = Figure(figsize=(8.0, max(2.4, 0.26 * len(row_labels) + 1.4)))
    axes = figure.subplots()
    axes.set_title(title, loc="left")
    if not rows:
        return _empty(figure, axes)
    grid = [[0.0] * len(column_labels) for _ in row_labels]
    rows_at = {label: i for i, label in enumerate(row_labels)}
    columns_at = {label: i for i, label in enumerate(column_labels)}
    for r in rows:
        grid[rows_at[str(r[row_key])]][columns_at[r[column_key]]] = _number(r[value])
    image = axes.imshow(grid, aspect="auto", cmap="Blues", interpolation="nearest")
    axes.set_yticks(range(len(row_labels)), row_labels)
    axes.set_xticks(range(len(column_labels)), [str(c) for c in column_labels], rotation=90, fontsize=7)
    figure.colorbar(image, ax=axes, label=value, fraction=0.03)
    return _svg(figure)


def size_horizon(rows: list[dict]) -> str:
    """Small multiples: each family's (size, horizon) cells, the marker area proportional to environments."""
    by_family: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_family[row["family"]].append(row)
    families = sorted(by_family)
    columns = 5
    lines = max(1, -(-len(families) // columns))
    figure = Figure(figsize=(9.0, 1.9 * lines))
    grid = figure.subplots(lines, columns, squeeze=False)
    figure.suptitle("size x horizon cells per family (marker area = environments)", x=0.02, ha="left")
    for axes in grid.flat[len(families):]:
        axes.set_axis_off()
    if not families:
        return _empty(figure, grid.flat[0])
    for axes, family in zip(grid.flat, families, strict=False):
        cells = by_family[family]
        top = max(_number(c["environments"]) for c in cells)
        axes.scatter([c["size"] for c in cells], [c["horizon"] for c in cells],
                     s=[12 + 120 * _number(c["environments"]) / top for c in cells], color="#3b7dd8", alpha=0.7)
        axes.set_title(family, fontsize=8)
        axes.tick_params(labelsize=6)
    figure.supxlabel("size", fontsize=8)
    figure.supylabel("horizon", fontsize=8)
    figure.tight_layout()
    return _svg(figure)


def grouped_bars(rows: list[dict], label: str, values: list[str], title: str) -> str:
    """Several bars per row (one per value column)."""
    figure = Figure(figsize=_WIDE)
    axes = figure.subplots()
    axes.set_title(title, loc="left")
    if not rows:
        return _empty(figure, axes)
    width = 0.8 / len(values)
    for i, value in enumerate(values):
        axes.bar([x + i * width for x in range(len(rows))], [_number(r[value]) for r in rows], width, label=value)
    axes.set_xticks([x + 0.4 - width / 2 for x in range(len(rows))], [str(r[label]) for r in rows], rotation=30,
                    ha="right")
    axes.legend(frameon=False, fontsize=7)
    return _svg(figure)


def difficulty(rows: list[dict]) -> str:
    """One heatmap per measure: families x bins of 0.1, coloured by the share of the family's environments."""
    measures = sorted({r["measure"] for r in rows})
    figure = Figure(figsize=(9.0, 3.6))
    grid = figure.subplots(1, max(1, len(measures)), squeeze=False)
    figure.suptitle("difficulty: share of each family's environments per bin", x=0.02, ha="left")
    if not rows:
        return _empty(figure, grid.flat[0])
    families = sorted({r["family"] for r in rows})
    for axes, measure in zip(grid.flat, measures, strict=True):
        chosen = [r for r in rows if r["measure"] == measure]
        bins = sorted({float(r["bin"]) for r in chosen})
        cells = [[0.0] * len(bins) for _ in families]
        totals: dict[str, float] = defaultdict(float)
        for r in chosen:
            totals[r["family"]] += _number(r["environments"])
        for r in chosen:
            cells[families.index(r["family"])][bins.index(float(r["bin"]))] = (
                _number(r["environments"]) / totals[r["family"]])
        axes.imshow(cells, aspect="auto", cmap="Purples", interpolation="nearest", vmin=0, vmax=1)
        axes.set_title(measure, fontsize=8)
        step = max(1, len(bins) // 6)
        axes.set_xticks(range(0, len(bins), step), [f"{b:g}" for b in bins[::step]], fontsize=6)
        axes.set_yticks(range(len(families)), families if axes is grid.flat[0] else [""] * len(families),
                        fontsize=6)
    figure.tight_layout()
    return _svg(figure)
