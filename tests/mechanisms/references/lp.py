"""Independent reference for lp on small instances (the conformance suite requires one per family)."""

from __future__ import annotations

import numpy as np
from scipy.optimize import linprog

SMALL_KNOBS = (3, 2)

def reference(mechanism, params) -> float:
    """The dual LP by interior point: strong duality gives the primal optimum independently of the simplex."""
    c = np.asarray(params.c, dtype=float)
    a = np.asarray(params.A_ub, dtype=float)
    b = np.asarray(params.b_ub, dtype=float)
    dual = linprog(b, A_ub=-a.T, b_ub=-c, bounds=[(0, None)] * len(b), method="highs-ipm")
    assert dual.status == 0, dual.message
    return float(dual.fun)
