"""Strict JSON out: what every command, observation and server answer writes is valid JSON (RFC 8259).

Python's json writes the non-finite floats as `Infinity`, `-Infinity` and `NaN`, which no strict parser reads
(JavaScript's JSON.parse, jq, Go, serde). Here they are written as null, the way unknown values are.
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Callable
from typing import Any


def finite(value: Any) -> Any:
    """`value` with every non-finite float (nested in dicts, lists and tuples too) replaced by None and every
    integer of LONG_INT_DIGITS or more digits by LONG_INT_TEXT; NumPy scalars and arrays become Python numbers
    and lists. Anything else is returned as is."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):  # Python writes no integer of over 4,300 digits
        return value if abs(value) < LONG_INT else LONG_INT_TEXT
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(item) for item in value]
    if isinstance(value, numbers.Integral):
        return finite(int(value))
    if isinstance(value, numbers.Real):
        return finite(float(value))
    if hasattr(value, "tolist") and hasattr(value, "dtype"):  # a NumPy array
        return finite(value.tolist())
    return value


def dumps(value: Any, default: Callable[[Any], Any] | None = str, **kwargs: Any) -> str:
    """json.dumps that always writes valid JSON: non-finite floats as null (see `finite`), other values that
    JSON has no type for through `default` (str unless told otherwise), its results made finite too."""
    def fallback(item: Any) -> Any:
        if default is None:
            raise TypeError(f"Object of type {type(item).__name__} is not JSON serializable")
        return finite(default(item))

    try:  # the common case: nothing to convert, one pass
        return json.dumps(value, default=fallback, allow_nan=False, **kwargs)
    except ValueError:  # a non-finite float somewhere
        return json.dumps(finite(value), default=fallback, allow_nan=False, **kwargs)


# Strict JSON in: an integer literal of 1,000 or more digits is out of range for every argument and field we
# take, and Python refuses to read one of over 4,300 digits (the parse of a long one costs quadratic time).
# `loads` reads each such literal as LONG_INT (with its sign), which messages show as "an integer of 1,000 or
# more digits" (see is_long_int).
LONG_INT_DIGITS = 1000
LONG_INT = 10 ** (LONG_INT_DIGITS - 1)
LONG_INT_TEXT = f"an integer of {LONG_INT_DIGITS:,} or more digits"


def parse_int(text: str) -> int:
    """An integer literal as json.loads' parse_int: exact below LONG_INT_DIGITS digits, else +-LONG_INT."""
    negative = text.startswith("-")
    if len(text) - negative < LONG_INT_DIGITS:
        return int(text)
    return -LONG_INT if negative else LONG_INT


def loads(text: str | bytes) -> Any:
    """json.loads that reads integers of any length (see parse_int)."""
    return json.loads(text, parse_int=parse_int)


def is_long_int(value: Any) -> bool:
    """Whether `value` is an integer of LONG_INT_DIGITS digits or more (its repr may be refused or huge)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and abs(int(value)) >= LONG_INT
