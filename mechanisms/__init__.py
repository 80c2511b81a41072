"""Mechanism families: one file per family; importing this package registers them all."""

from mechanisms import inventory_dp, knapsack, lp  # noqa: F401  (registration side effect)
from mechanisms.base import ActionError, Mechanism, Outcome, Solution
from mechanisms.registry import UnknownFamilyError, families, get, resolve_families

__all__ = [
    "ActionError",
    "Mechanism",
    "Outcome",
    "Solution",
    "UnknownFamilyError",
    "families",
    "get",
    "resolve_families",
]
