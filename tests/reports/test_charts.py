"""Charts stay readable and cheap as the catalog grows: a year of nights is a few bands and a few labels."""

from __future__ import annotations

import datetime as dt
import re

from reports import charts

FAMILIES = ["knapsack", "lp", "routing"]


def _nights(count: int) -> tuple[list[dict], list[dict]]:
    days = [(dt.date(2026, 1, 1) + dt.timedelta(days=i)).isoformat() for i in range(count)]
    per_family = [{"night": d, "family": f, "environments": 10 + i % 7} for i, d in enumerate(days) for f in FAMILIES]
    nights = [{"night": d, "environments": 30, "cumulative": 30 * (i + 1)} for i, d in enumerate(days)]
    return nights, per_family


def _tick_labels(svg: str) -> list[str]:
    return re.findall(r">(2026-\d\d-\d\d)<", svg)


def test_a_few_nights_are_one_bar_per_family_and_night_with_every_label():
    svg = charts.per_night(*_nights(5))
    assert svg.startswith("<svg") and len(_tick_labels(svg)) == 5
    assert svg.count('id="patch_') >= 5 * len(FAMILIES)  # one bar per family and night


def test_a_year_of_nights_is_one_band_per_family_and_at_most_max_ticks_labels():
    many = charts.per_night(*_nights(365))
    labels = _tick_labels(many)
    assert 2 <= len(labels) <= charts.MAX_TICKS and labels[0] == "2026-01-01"
    assert many.count('id="patch_') < 5 * len(FAMILIES)  # bands, not 365 x 3 bars


def test_vertical_bars_label_at_most_max_ticks_nights():
    rows = [{"night": f"2026-{1 + i // 28:02d}-{1 + i % 28:02d}", "usd": float(i)} for i in range(200)]
    labels = _tick_labels(charts.bars(rows, "night", "usd", "USD per night", horizontal=False))
    assert 2 <= len(labels) <= charts.MAX_TICKS
