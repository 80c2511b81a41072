"""Independent reference for qp on small instances (the conformance suite requires one per family)."""

from __future__ import annotations

import itertools

import numpy as np

SMALL_KNOBS = (3, 2)


def reference(mechanism, params) -> float:
    """Enumerate every active set: solve each equality-constrained QP, keep the KKT points, take the best.

    The constraints are the resource rows A x <= b and the bounds -x <= 0. For each subset W of at most
    n rows, the KKT system [Q W'; W 0] [x; y] = [c; h_W] is solved; the point counts when it satisfies
    every constraint and its multipliers y are non-negative. A strictly concave QP has exactly one such
    point (up to degenerate repeats of the same x).
    """
    c = np.asarray(params.c, dtype=float)
    q = np.asarray(params.Q, dtype=float)
    a = np.asarray(params.A_ub, dtype=float)
    b = np.asarray(params.b_ub, dtype=float)
    n = len(c)
    g = np.vstack([a, -np.eye(n)])
    h = np.concatenate([b, np.zeros(n)])
    best = -np.inf
    for k in range(n + 1):
        for rows in itertools.combinations(range(len(h)), k):
            w = g[list(rows)]
            kkt = np.block([[q, w.T], [w, np.zeros((k, k))]])
            if abs(np.linalg.det(kkt)) < 1e-12:
                continue
            solution = np.linalg.solve(kkt, np.concatenate([c, h[list(rows)]]))
            x, y = solution[:n], solution[n:]
            if np.all(g @ x <= h + 1e-9 * np.maximum(1.0, np.abs(h))) and np.all(y >= -1e-9):
                best = max(best, float(c @ x - 0.5 * x @ q @ x))
    return best
