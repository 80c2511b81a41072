"""Solver output in a canonical form (mechanisms.canonical) and solvers held to one BLAS thread (mechanisms.threads):
what makes an env id independent of the host (issue 30; tests/envs/test_canonical_ids.py lands a plan with 1 and 4
BLAS threads)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mechanisms
from mechanisms.canonical import (
    SIGNIFICANT_DIGITS,
    canonical_actions,
    canonical_argument,
    canonical_data,
    canonical_number,
)
from schemas.envspec import Action

ROOT = Path(__file__).resolve().parents[2]


def _values(seed: int = 5, count: int = 4000) -> list[float]:
    rng = np.random.default_rng(seed)
    return [float(v) for v in rng.normal(0, 1, count) * 10.0 ** rng.integers(-8, 9, count)]


def test_a_number_keeps_ten_significant_digits_and_is_its_own_canonical_form():
    assert SIGNIFICANT_DIGITS == 10
    assert canonical_number(115.16472105871868) == 115.1647211
    assert canonical_number(29387.960000000003) == 29387.96
    assert canonical_number(-143.25999999999993) == -143.26
    assert canonical_number(3.6e-17) == 0.0 and math.copysign(1.0, canonical_number(-0.0)) == 1.0
    assert canonical_number(float("inf")) == float("inf")
    for value in _values():
        rounded = canonical_number(value)
        assert canonical_number(rounded) == rounded
        assert abs(rounded - value) <= 5.0001e-10 * abs(value)


def test_an_argument_is_rounded_toward_zero_so_that_a_plan_that_fits_still_fits():
    assert canonical_argument(0.99999999996) == 0.9999999999  # the nearest would carry to 1.0
    assert canonical_argument(-0.99999999996) == -0.9999999999
    assert canonical_argument(12.736626801913978) == 12.7366268
    assert canonical_argument(1.3507961051865052) == 1.350796105
    for value in _values(6):
        rounded = canonical_argument(value)
        assert abs(rounded) <= abs(value) and canonical_argument(rounded) == rounded
        assert abs(rounded - value) <= 1.0001e-9 * abs(value)


def test_actions_keep_their_identity_when_no_float_changes():
    integers = [Action(op="open_box", args={"box": 3}), Action(op="plan", args={"levels": [1, 2]}), Action(op="finish")]
    assert canonical_actions(integers) is integers
    floats = [Action(op="set_plan", args={"quantities": [1.3507961051865052, 0.0, 4]}), Action(op="commit_plan")]
    made = canonical_actions(floats)
    assert made is not floats and made[0].args["quantities"] == [1.350796105, 0.0, 4] and made[1] is floats[1]
    assert canonical_actions(made) is made
    assert canonical_data({"a": [0.1 + 0.2, 3, "x"], "b": (2.0000000000000004,)}) == {"a": [0.3, 3, "x"], "b": [2.0]}


def _floats(data, found):
    if isinstance(data, float):
        found.append(data)
    elif isinstance(data, dict):
        for value in data.values():
            _floats(value, found)
    elif isinstance(data, (list, tuple)):
        for value in data:
            _floats(value, found)
    return found


@pytest.mark.parametrize("family", [m.id for m in mechanisms.families()])
def test_every_family_records_canonical_solver_output(family):
    """u*, u0, u_idle, the baselines, the facts and the optimal actions' arguments are canonical, and the optimal
    actions replay to u* exactly."""
    m = mechanisms.get(family)
    for i in range(3):
        p = m.sample(np.random.default_rng([31, i]), m.default_size, m.default_horizon)
        o = m.outcome(p)
        numbers = [o.solution.u_star, o.u0, o.u_idle, *o.baselines.values(), *_floats(o.solution.facts, [])]
        assert all(canonical_number(v) == v for v in numbers), family
        arguments = _floats([a.args for a in o.solution.optimal_actions], [])
        assert all(canonical_argument(v) == v for v in arguments), family
        assert m.run(p, o.solution.optimal_actions) == o.solution.u_star


THREADS = """
import json
import numpy as np
from mechanisms.qp import QP
from mechanisms.threads import pool_threads, single_threaded

seen = {}

class Watched(QP):  # the qp family, recording its pools' threads while its solver runs
    def solve(self, params):
        seen["solving"] = pool_threads()
        return super().solve(params)

m = Watched()
before = pool_threads()  # numpy's BLAS only: scipy is imported by the first solve
with single_threaded():
    import scipy.optimize  # a library loaded inside a block: a nested block limits it too
    with single_threaded():
        seen["nested"] = pool_threads()
seen["restored"] = pool_threads()
m.solve(m.sample(np.random.default_rng(3), 4, 2))
seen["before"], seen["after"] = before, pool_threads()
print(json.dumps(seen))
"""


def test_solvers_run_with_one_blas_thread_and_the_process_keeps_its_own_setting():
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "2", "OMP_NUM_THREADS": "2"}
    done = subprocess.run([sys.executable, "-c", THREADS], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    own = min(2, os.cpu_count() or 1)  # OpenBLAS takes at most one thread per core
    assert len(seen["nested"]) >= 2 and set(seen["nested"].values()) == {1}  # numpy's and scipy's BLAS
    assert set(seen["solving"].values()) == {1}
    assert set(seen["before"].values()) == {own} and set(seen["restored"].values()) == {own}
    assert set(seen["after"].values()) == {own} and len(seen["after"]) >= 2
