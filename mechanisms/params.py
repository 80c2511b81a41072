"""Checks that the families' parameter models share: stickers that default to the truth, one entry per item, finite
and signed numbers. Each raises ValueError with the field and the problem (pydantic turns it into a ParamsError)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import model_validator


def stickers_default_to_truth(**stickers: str):
    """A `before` model validator: a sticker field left out of the data equals the true field it estimates, e.g.
    ``_default_sticker = stickers_default_to_truth(sticker_values="values")`` in the class body."""

    def default(cls, data: Any) -> Any:
        if isinstance(data, dict):
            missing = {sticker: data[truth] for sticker, truth in stickers.items()
                       if sticker not in data and truth in data}
            if missing:
                data = {**data, **missing}
        return data

    return model_validator(mode="before")(classmethod(default))


def one_entry_each(name: str, values: Sequence, count: int, per: str) -> None:
    """`name` must hold one entry per `per` (`count` of them)."""
    if len(values) != count:
        raise ValueError(f"{name} must have one entry per {per} ({count}), got {len(values)}")


def rows_of(name: str, matrix: Sequence[Sequence], count: int, per: str) -> None:
    """Every row of the matrix `name` must hold one entry per `per` (`count` of them)."""
    for i, row in enumerate(matrix, start=1):
        if len(row) != count:
            raise ValueError(f"{name} row {i} must have one entry per {per} ({count}), got {len(row)}")


def flat(matrix: Iterable[Iterable[float]]) -> list[float]:
    return [x for row in matrix for x in row]


def finite(names: str, *groups: Iterable[float]) -> None:
    """Every number of the groups must be finite (`names` lists the fields in the message)."""
    if not all(math.isfinite(x) for group in groups for x in group):
        raise ValueError(f"{names} must be finite numbers")


def positive(name: str, values: Iterable[float], what: str = "") -> None:
    if min(values, default=1.0) <= 0:
        raise ValueError(f"{name}{f' ({what})' if what else ''} must be positive")


def non_negative(name: str, values: Iterable[float], what: str = "") -> None:
    if min(values, default=0.0) < 0:
        raise ValueError(f"{name}{f' ({what})' if what else ''} must be non-negative")
