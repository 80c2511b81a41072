"""`vhd solve`: read an instance given as data, solve it exactly, and report the reference."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from mechanisms.base import Mechanism, ParamsError


def read_params(mechanism: Mechanism, source: str):
    """Parameters from a JSON file ('-' = standard input), validated by the family's model."""
    if source == "-":
        text = sys.stdin.read()
    else:
        path = Path(source)
        if not path.is_file():
            raise ParamsError(f"parameter file {source!r} does not exist; write one with: "
                              f"vhd solve {mechanism.id} --example > params.json")
        text = path.read_text()
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        where = "standard input" if source == "-" else source
        raise ParamsError(f"{where} is not valid JSON ({error.msg} at line {error.lineno}, column {error.colno})"
                          ) from None
    return mechanism.params_from_data(data)


def example_params(mechanism: Mechanism, seed: int = 0) -> dict[str, Any]:
    params = mechanism.sample(np.random.default_rng([seed, 0]), mechanism.default_size, mechanism.default_horizon)
    return params.model_dump(mode="json")


def solve_report(mechanism: Mechanism, params) -> dict[str, Any]:
    """u*, the optimal plan, the solver and its facts, and the default and idle anchors."""
    started = time.perf_counter()
    solution = mechanism.solve(params)
    seconds = time.perf_counter() - started
    outcome = mechanism.outcome(params)
    return {
        "family": mechanism.id,
        "version": mechanism.version,
        "u_star": solution.u_star,
        "solver": solution.solver,
        "solve_seconds": seconds,
        "optimal_actions": [a.model_dump(mode="json") for a in solution.optimal_actions],
        "facts": solution.facts,
        "u0": outcome.u0,
        "u_idle": outcome.u_idle,
        "baselines": outcome.baselines,
        "default_actions": [a.model_dump(mode="json") for a in outcome.default_actions],
    }
