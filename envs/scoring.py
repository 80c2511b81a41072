"""The paper's terminal reward."""

from __future__ import annotations

from mechanisms.canonical import canonical_number


def score(u: float, u0: float, u_star: float) -> float:
    """r = clip((u - u0) / (u* - u0), 0, 1); an instance without a gap scores 1 only at u*.

    `u` is taken as the spec records utilities (mechanisms.canonical: 10 significant digits), so that a play that
    reaches the recorded u0 scores exactly 0 and one that reaches u* exactly 1, on any host."""
    u = canonical_number(u)
    gap = u_star - u0
    if gap <= 0:
        return 1.0 if u >= u_star else 0.0
    return min(max((u - u0) / gap, 0.0), 1.0)
