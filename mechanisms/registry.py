"""The family registry: versioned ids, refusing duplicates and wrong types."""

from __future__ import annotations

from mechanisms.base import Mechanism
from schemas.errors import UserError

_FAMILIES: dict[str, Mechanism] = {}

# The paper's split of the families (PAPER.md), plus the long-horizon external-style settings.
GROUPS = {
    "trained": "trained on",
    "near_ood": "near out-of-distribution",
    "far_ood_structure": "far out-of-distribution, other decision structure",
    "far_ood_probe": "far out-of-distribution, tight probe budgets",
    "external": "long-horizon external-style settings",
}


class UnknownFamilyError(UserError):
    """A family id that is not registered."""


def register(mechanism: Mechanism) -> Mechanism:
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"{mechanism!r} is not a Mechanism")
    if mechanism.group not in GROUPS:
        raise ValueError(f"family {mechanism.id!r} has unknown group {mechanism.group!r}; use one of {sorted(GROUPS)}")
    if mechanism.id in _FAMILIES:
        raise ValueError(f"family {mechanism.id!r} is already registered")
    _FAMILIES[mechanism.id] = mechanism
    return mechanism


def get(family: str) -> Mechanism:
    try:
        return _FAMILIES[family]
    except KeyError:
        known = ", ".join(sorted(_FAMILIES))
        raise UnknownFamilyError(f"unknown family {family!r}; known families: {known}") from None


def families() -> list[Mechanism]:
    return [_FAMILIES[name] for name in sorted(_FAMILIES)]


DIAGNOSTIC = ("inventory_dp", "knapsack", "lp", "qp", "routing")


def resolve_families(selection: str | None) -> list[str]:
    """Parse a --families value: ids, group names or 'diagnostic'; None means every family."""
    if not selection:
        return [m.id for m in families()]
    chosen: list[str] = []
    for token in (t.strip() for t in selection.split(",")):
        if not token:
            continue
        if token == "diagnostic":
            names = [n for n in DIAGNOSTIC if n in _FAMILIES]
        elif token in _FAMILIES:
            names = [token]
        else:
            names = [m.id for m in families() if m.group == token]
            if not names and token in GROUPS:
                raise UnknownFamilyError(f"group {token!r} has no registered family yet")
            if not names:
                get(token)  # raises UnknownFamilyError with the list of known ids
        chosen.extend(n for n in names if n not in chosen)
    if not chosen:
        raise UnknownFamilyError("no family selected; pass ids such as inventory_dp,knapsack")
    return chosen
