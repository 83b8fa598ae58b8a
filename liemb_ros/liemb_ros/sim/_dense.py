"""
Small dense Cholesky kernels shared by the Simulator's implicit step and the contacts.

Compiled loops for the matrices of one robot (nv up to ~100): below the size where
LAPACK's call overhead pays off, and callable from other compiled kernels.
"""
import numpy as np
from numba import njit


@njit(cache=True)
def cholesky_in_place(L):
    """Overwrite the lower triangle of the SPD ``L`` with its Cholesky factor; False if not PD."""
    n = L.shape[0]
    for c in range(n):
        sm = L[c, c]
        for k in range(c):
            sm -= L[c, k] * L[c, k]
        if not sm > 0.0:
            return False
        L[c, c] = np.sqrt(sm)
        for r in range(c + 1, n):
            sm = L[r, c]
            for k in range(c):
                sm -= L[r, k] * L[c, k]
            L[r, c] = sm / L[c, c]
    return True


@njit(cache=True)
def damped_cholesky(M, P, d, g):
    """Lower Cholesky factor of ``M + g diag_P(d)``, or None if not positive definite."""
    L = M.copy()
    for j in range(P.shape[0]):
        L[P[j], P[j]] += g * d[j]
    if not cholesky_in_place(L):
        return None
    return L


@njit(cache=True)
def cho_solve(L, b):
    """Solve ``L Lᵀ x = b`` in place of ``b`` (only the lower triangle of ``L`` is read)."""
    n = b.shape[0]
    for r in range(n):
        sm = b[r]
        for k in range(r):
            sm -= L[r, k] * b[k]
        b[r] = sm / L[r, r]
    for r in range(n - 1, -1, -1):
        sm = b[r]
        for k in range(r + 1, n):
            sm -= L[k, r] * b[k]
        b[r] = sm / L[r, r]
