"""Mechanism families: one file per family; importing this package registers them all."""

import importlib
import pkgutil

from mechanisms.base import ActionError, Mechanism, Outcome, Solution
from mechanisms.registry import GROUPS, UnknownFamilyError, families, get, resolve_families

_INFRASTRUCTURE = {"base", "registry"}

for _module in sorted(pkgutil.iter_modules(__path__), key=lambda info: info.name):
    if _module.name not in _INFRASTRUCTURE and not _module.name.startswith("_"):
        importlib.import_module(f"mechanisms.{_module.name}")  # each family file registers itself

__all__ = [
    "GROUPS",
    "ActionError",
    "Mechanism",
    "Outcome",
    "Solution",
    "UnknownFamilyError",
    "families",
    "get",
    "resolve_families",
]
