"""Reading an operation's arguments: each checked against its type and bounds, or an ActionError that names the
argument and the problem (raised before any state is changed)."""

from __future__ import annotations

import math
import numbers
from typing import Any

from mechanisms.prose import figure
from schemas.strict_json import LONG_INT_TEXT, is_long_int


class ActionError(ValueError):
    """An agent's action that the dynamics refuse; raised before any state is changed."""


def _shown(value: Any) -> str:
    """A value as an error message quotes it: at most 40 characters (an agent may send a 5,000-digit number)."""
    if is_long_int(value):  # Python refuses the repr of an integer of over 4,300 digits
        return LONG_INT_TEXT
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def require_int(args: dict[str, Any], name: str, low: int, high: int) -> int:
    """Read an integer argument within [low, high] or raise ActionError with a clear message."""
    value = args.get(name)
    if type(value) is not int:  # the common case needs no abstract-class check
        if isinstance(value, float) and value.is_integer():
            value = int(value)  # 3.0 is 3 (NaN and infinities are not integers)
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise ActionError(f"argument {name!r} must be an integer, got {_shown(value)}")
    if not low <= value <= high:
        raise ActionError(f"argument {name!r} must be between {low} and {high}, got {_shown(value)}")
    return int(value)


def require_int_list(args: dict[str, Any], name: str, low: int, high: int, distinct: bool = True) -> list[int]:
    """Read a non-empty list of integers within [low, high] (distinct unless told) or raise ActionError (a bulk
    decision's ids)."""
    value = args.get(name)
    if not isinstance(value, list) or not value:
        raise ActionError(f"argument {name!r} must be a non-empty list of integers, got {_shown(value)}")
    if len(value) > high - low + 1 and distinct:
        raise ActionError(f"argument {name!r} lists {len(value)} entries; there are only {high - low + 1}")
    if set(map(type, value)) == {int} and low <= min(value) and max(value) <= high:  # the common case, in C
        numbers_ = list(value)
    else:
        numbers_ = [require_int({name: v}, name, low, high) for v in value]
    if distinct and len(set(numbers_)) != len(numbers_):
        repeated = next(n for n in numbers_ if numbers_.count(n) > 1)
        raise ActionError(f"argument {name!r} lists {repeated} twice")
    return numbers_


def require_number(args: dict[str, Any], name: str, low: float, high: float) -> float:
    """Read a numeric argument within [low, high] (a tiny relative tolerance) or raise ActionError."""
    value = args.get(name)
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or isinstance(value, float) and not math.isfinite(value)):
        raise ActionError(f"argument {name!r} must be a number, got {_shown(value)}")
    slack = 1e-9 * max([1.0, *(abs(bound) for bound in (low, high) if math.isfinite(bound))])
    if not low - slack <= value <= high + slack:
        if math.isinf(high) or math.isinf(low):  # one-sided: "at least 0", not "between 0 and inf"
            side = f"at least {figure(low)}" if math.isinf(high) else f"at most {figure(high)}"
            raise ActionError(f"argument {name!r} must be {side}, got {_shown(value)}")
        raise ActionError(f"argument {name!r} must be between {figure(low)} and {figure(high)}, got {_shown(value)}")
    return float(min(max(value, low), high))
