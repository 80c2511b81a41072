"""What the production families lp and qp share: a plan x >= 0 under resource rows A_ub x <= b_ub, one quantity per
product, set one at a time or all at once with ``set_plan``."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from mechanisms.base import ActionError, Mechanism, P
from mechanisms.operations import resolve
from mechanisms.params import one_entry_each, rows_of
from schemas.envspec import Action


def scipy_optimize(name: str) -> Callable[..., Any]:
    """``scipy.optimize.<name>``, imported when first called (importing scipy.optimize takes about a second)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        import scipy.optimize

        return getattr(scipy.optimize, name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"scipy.optimize.{name}, imported when first called (importing scipy.optimize takes about a second)."
    return call


def resource_shapes(c: Sequence[float], a_ub: Sequence[Sequence[float]], b_ub: Sequence[float], sticker: str,
                    posted: Sequence[float], per: str) -> None:
    """b_ub holds one limit per row of A_ub, every row of A_ub and the sticker one entry per `per` (one per entry
    of c)."""
    n = len(c)
    one_entry_each("b_ub", b_ub, len(a_ub), "row of A_ub")
    rows_of("A_ub", a_ub, n, per)
    one_entry_each(sticker, posted, n, per)


def limits(p: Any) -> tuple[np.ndarray, np.ndarray]:
    """The resource rows A_ub and their limits b_ub as arrays."""
    return np.asarray(p.A_ub, dtype=float), np.asarray(p.b_ub, dtype=float)


def room(a: np.ndarray, b: np.ndarray, x: np.ndarray, j: int, bound: float) -> float:
    """The most of variable j (0-based) that fits beside the other quantities of plan x under a x <= b (its own
    current quantity left out; only rows with positive use of j limit it), at most `bound`."""
    rest = x.copy()
    rest[j] = 0.0
    free = b - a @ rest
    ratios = [max(float(free[i]), 0.0) / a[i, j] for i in range(len(b)) if a[i, j] > 0]
    return float(min([bound, *ratios]))


def planned(quantities: Sequence[float]) -> dict[str, float]:
    """A plan's quantities as an observation shows them, by product."""
    return {f"product {k + 1}": q for k, q in enumerate(quantities)}


def require_number_list(args: dict[str, Any], name: str, length: int, high: float) -> list[float]:
    """A list of exactly `length` numbers, each at least 0 (above `high` it is lowered to `high`)."""
    value = args.get(name)
    if not isinstance(value, list) or len(value) != length:
        shown = f"a list of {len(value)}" if isinstance(value, list) else type(value).__name__
        raise ActionError(f"argument {name!r} must list {length} numbers, one per product in order; got {shown}")
    numbers = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise ActionError(f"argument {name!r} must list numbers of at least 0, got {str(v)[:40]!r}")
        numbers.append(min(float(v), high))
    return numbers


class BulkPlanning(Mechanism[P]):
    """A family whose ``set_plan`` operation takes one quantity per product. Its schema comes from the method's
    annotation like any other; its list is read here, as the family always read it: exactly one number per product
    (the annotation's max_items), none below 0, one above the annotation's maximum lowered to it. (The generic list
    check would refuse a number above the maximum and accept a shorter list.)"""

    def apply(self, params: P, state: dict[str, Any], action: Action) -> dict[str, Any]:
        operation = self.operation_table().get(action.op) if action.op == "set_plan" else None
        if operation is None:
            return super().apply(params, state, action)
        (plan,) = operation.arguments
        high = resolve(plan.between.maximum, params)
        wanted = require_number_list(action.args, plan.name, resolve(plan.between.max_items, params),
                                     math.inf if high is None else high)
        return operation.method(self, params, state, wanted)
