"""Solver output in a canonical form, so that an environment's id does not depend on where it was computed.

An env id hashes every bit of the spec (schemas.envspec.EnvSpec.env_id), and the last bits of a float a solver or a
replay computes depend on the host: the number of BLAS threads (a sum split over threads adds in another order),
the CPU (another SIMD kernel), the BLAS build. So every float a solver or a policy's replay computes is rounded to
SIGNIFICANT_DIGITS significant digits before it enters a spec, and a magnitude below ZERO is 0 (the noise of a zero).
Two hosts then disagree only where a value lies within its noise (about one part in 10^15) of a rounding boundary:
about one chance in 10^5 per number.

10 digits, because: the quantum (1e-10 relative) is about 10^4 to 10^5 times the last-bit noise of the solvers here
(a double holds 16 digits; the small, well-conditioned KKT, LP and Bellman solves lose one or two of them), 10 times
finer than the 1e-9 relative tolerance the conformance checks hold a replay of the optimal actions to, and 10^4 times
finer than the 1e-6 that admission and scoring compare utilities at (scores are kept to 6 decimals). On the same host
one BLAS thread (mechanisms.threads) makes the bits equal; across CPUs two values part only when one falls within its
noise of a rounding boundary.

Numbers an action carries (a plan's quantities, a threshold) are rounded toward zero instead, so that a plan that
fits its limits still fits them; the value of the rounded plan is then replayed, not assumed.
Solver diagnostics that describe the path rather than the answer (iteration counts, statuses, residuals, which
method got there) are never rounded into the spec: they stay in ``Solution.diagnostics``.
"""

from __future__ import annotations

import math
from decimal import ROUND_DOWN, Decimal
from typing import Any

from schemas.envspec import Action

SIGNIFICANT_DIGITS = 10
ZERO = 1e-12  # a computed magnitude below this is the rounding noise of a zero


def canonical_number(value: float) -> float:
    """`value` rounded to SIGNIFICANT_DIGITS significant digits (to nearest); 0.0 for a magnitude below ZERO (and for
    -0.0). Idempotent: a canonical number is its own canonical form. Non-finite values are returned as they are."""
    if not math.isfinite(value) or abs(value) < ZERO:
        return 0.0 if math.isfinite(value) else value
    return float(f"{value:.{SIGNIFICANT_DIGITS - 1}e}")


def canonical_argument(value: float) -> float:
    """`value` rounded to SIGNIFICANT_DIGITS significant digits toward zero (never larger in magnitude): a quantity
    that fits a limit still fits it. Idempotent, like canonical_number."""
    nearest = canonical_number(value)
    if abs(nearest) <= abs(value) or not math.isfinite(value):
        return nearest
    exact = Decimal(value)  # the double's exact value: its decade decides where the digits stop
    unit = Decimal(1).scaleb(exact.adjusted() - SIGNIFICANT_DIGITS + 1)
    return float(exact.quantize(unit, rounding=ROUND_DOWN))


def canonical_data(data: Any) -> Any:
    """Every float in nested dicts, lists and tuples made canonical (canonical_number); other values unchanged."""
    if isinstance(data, float):
        return canonical_number(data)
    if isinstance(data, dict):
        return {key: canonical_data(value) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [canonical_data(value) for value in data]
    return data


def _argument(value: Any) -> Any:
    if isinstance(value, float):
        return canonical_argument(value)
    if isinstance(value, list):
        return [_argument(item) for item in value]
    return value


def canonical_actions(actions: list[Action]) -> list[Action]:
    """The actions with every float argument made canonical (canonical_argument); the same list when they all are
    already (most families' arguments are integers), so that callers can tell by identity."""
    out: list[Action] | None = None
    for position, action in enumerate(actions):
        args = {name: _argument(value) for name, value in action.args.items()}
        if args != action.args:
            if out is None:
                out = list(actions)
            out[position] = Action(op=action.op, args=args)
    return actions if out is None else out
