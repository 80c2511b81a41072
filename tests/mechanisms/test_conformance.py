"""Every registered family passes the family conformance suite (envs.conformance.check_family), one check at a time.

The checks: determinism of sampling, the solver against an independent method (tests/mechanisms/references/), the
exact replay of the optimal actions, u* above the default, idle, baselines and random play, the default's band,
admission and the anchors in every mode, tool-call and action fuzzing, the frontier budget, every cell of the grid,
parameters as data, the declarations, the operations' schema, the phrase file and the corpus's domains (at least 20).
A family's own test file keeps only what is particular to the family; a rule every family must satisfy lives here,
in envs.conformance, and nowhere else.
"""

from __future__ import annotations

import importlib

import pytest

import mechanisms
from envs.conformance import FAMILY_CHECKS, check_family

FAMILIES = [m.id for m in mechanisms.families()]


def independent_reference(family: str):
    """tests/mechanisms/references/<family>.py, or None (the checker's `optimal` check then asks for one)."""
    try:
        return importlib.import_module(f"tests.mechanisms.references.{family}")
    except ModuleNotFoundError:
        return None


@pytest.mark.parametrize("check", list(FAMILY_CHECKS))
@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_passes_every_check(family, check):
    problems = check_family(mechanisms.get(family), independent_reference(family), checks=[check])
    assert not problems, "\n".join(map(str, problems))
