"""What the production families lp and qp share: a plan x >= 0 under resource rows A_ub x <= b_ub, one quantity per
product, set one at a time or all at once with ``set_plan``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from mechanisms.params import one_entry_each, rows_of
from mechanisms.threads import single_threaded


def scipy_optimize(name: str) -> Callable[..., Any]:
    """``scipy.optimize.<name>``, imported when first called (importing scipy.optimize takes about a second)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        import scipy.optimize

        with single_threaded():  # after the import: scipy's own BLAS is loaded with it (mechanisms.threads)
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
