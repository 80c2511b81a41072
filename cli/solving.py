"""`vhd solve`: read an instance given as data, solve it exactly, and report the reference."""

from __future__ import annotations

import json
import math
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
    where = "standard input" if source == "-" else source
    try:
        data = json.loads(text, parse_constant=_refuse_constant)
        _check_magnitudes(data, where)
    except json.JSONDecodeError as error:
        raise ParamsError(f"{where} is not valid JSON ({error.msg} at line {error.lineno}, column {error.colno})"
                          ) from None
    except RecursionError:
        raise ParamsError(f"{where} nests lists or objects too deeply to be parameters") from None
    except ValueError as error:  # Python reads integers of at most 4,300 digits
        if isinstance(error, ParamsError):
            raise
        raise ParamsError(f"{where} holds a number too long to read ({str(error).split(':')[0]}); numbers in "
                          f"parameters must be at most {MAX_MAGNITUDE:.0e} in magnitude") from None
    return mechanism.params_from_data(data)


# Larger numbers overflow the solvers' sums and products (1e308 is infinity after one addition) or lose every
# digit of precision that tells two plans apart; no family samples numbers anywhere near this.
MAX_MAGNITUDE = 1e12


def _refuse_constant(name: str):
    raise ParamsError(f"{name} is not a number that JSON allows; parameters must be finite numbers")


def _check_magnitudes(data: Any, where: str, path: str = "") -> None:
    if isinstance(data, dict):
        for key, value in data.items():
            _check_magnitudes(value, where, f"{path}.{key}" if path else str(key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            _check_magnitudes(value, where, f"{path}[{index}]")
    elif isinstance(data, (int, float)) and not isinstance(data, bool) and abs(data) > MAX_MAGNITUDE:
        shown = f"{data:.6g}" if isinstance(data, float) or abs(data) < 1e300 else "an integer of over 300 digits"
        raise ParamsError(f"{path or 'the value'} in {where} is {shown}; numbers in parameters must be at most "
                          f"{MAX_MAGNITUDE:.0e} in magnitude (larger ones overflow the solvers)")


def example_params(mechanism: Mechanism, seed: int = 0) -> dict[str, Any]:
    params = mechanism.sample(np.random.default_rng([seed, 0]), mechanism.default_size, mechanism.default_horizon)
    return params.model_dump(mode="json")


def solve_report(mechanism: Mechanism, params) -> dict[str, Any]:
    """u*, the optimal plan, the solver and its facts, and the default and idle anchors."""
    started = time.perf_counter()
    solution = mechanism.solve(params)
    seconds = time.perf_counter() - started
    outcome = mechanism.outcome(params)
    anchors = {"u*": solution.u_star, "u0": outcome.u0, "u_idle": outcome.u_idle,
               **{f"baseline {name}": u for name, u in outcome.baselines.items()}}
    for name, value in anchors.items():
        if not math.isfinite(value):
            raise ParamsError(f"the instance's {name} is {value} (not a finite number): its numbers overflow "
                              f"double precision; give smaller values")
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
