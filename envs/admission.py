"""Admission of a rendered environment: it is admitted when the environment checker (envs.checks) finds no problem.

The checks, in order (a verdict names the first that fails): structure, completeness, C2 (the default's band),
C3 (the oracle's replay reaches u* and nothing beats it), repeat, default_replay (the default's replay reaches u0),
ceiling, difficulty, prose, leak; and executes (the paper's C1: nothing in the dynamics or the spec crashes).
"""

from __future__ import annotations

from envs.checks import (  # noqa: F401 - the checks admission runs, importable from here as before
    DEFAULT_REPLAY,
    EXECUTES,
    Admission,
    Rejected,
    check_environment,
    check_structure,
    hidden_leaks,
)
from schemas.envspec import EnvSpec


def admit(spec: EnvSpec) -> Admission:
    """Run every check of the environment checker; the first failure is the reason."""
    return check_environment(spec)
