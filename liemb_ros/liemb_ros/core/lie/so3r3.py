"""
The direct product SO(3)xR^3 ([MT14] App. A.3, eqs. (60)-(68); [M18k] Remark 17).

Elements are stored like SE(3) poses, 4x4 ``C = [[R, r], [0, 1]]``, but the product is
the direct one, ``(R1, r1)(R2, r2) = (R1 R2, r1 + r2)``, and the inverse ``(R^T, -r)``
(so *not* the matrix product; do not mix with :mod:`liemb_ros.core.lie.se3`).
Algebra elements are ``X = (xi, r)`` (rotation vector, translation; not a screw).

* ``exp(xi, r) = (exp xi^, r)`` (eq. (65)), ``log(R, r) = (log R, r)``;
* ``Ad_C = blockdiag(R, I3)``, ``ad_X = [[xi^, 0], [0, 0]]`` (eqs. (62)-(63));
* ``dexp_X = blockdiag(dexp_xi, I3)``, ``dexp_X^-1 = blockdiag(dexp_xi^-1, I3)``
  (eqs. (67)-(68)), so the left-trivialised derivative ``C^-1 C'`` of ``C = exp X`` is the
  *mixed* twist ``V^m = (omega^b, r') = dexp_{-X} X'``.

All functions are batched over leading axes; the numerics are the SO(3) kernels.
"""
import numpy as np
from numba import njit

from . import se3, so3
from ._batch import as_batch2, run_batch


# --------------------------------------------------------------------------- kernels
@njit(cache=True)
def _bottom_row(out):
    out[3, 0] = 0.0
    out[3, 1] = 0.0
    out[3, 2] = 0.0
    out[3, 3] = 1.0


@njit(cache=True)
def compose_into(C1, C2, out):
    """Write the direct product ``(R1 R2, r1 + r2)`` ([MT14] eq. (60)) into ``out`` (4x4)."""
    so3.compose_into(C1[:3, :3], C2[:3, :3], out[:3, :3])
    for i in range(3):
        out[i, 3] = C1[i, 3] + C2[i, 3]
    _bottom_row(out)


@njit(cache=True)
def inverse_into(C, out):
    """Write the direct-product inverse ``(R^T, -r)`` into ``out`` (4x4)."""
    for i in range(3):
        for j in range(3):
            out[i, j] = C[j, i]
        out[i, 3] = -C[i, 3]
    _bottom_row(out)


@njit(cache=True)
def exp_into(X, out):
    """Write ``exp(xi, r) = (exp xi^, r)`` ([MT14] eq. (65)) into ``out`` (4x4)."""
    so3.exp_into(X[:3], out[:3, :3])
    for i in range(3):
        out[i, 3] = X[3 + i]
    _bottom_row(out)


@njit(cache=True)
def log_into(C, out):
    """Write ``(log R, r)`` into ``out`` (6,)."""
    so3.log_into(C[:3, :3], out[:3])
    for i in range(3):
        out[3 + i] = C[i, 3]


@njit(cache=True)
def _blockdiag_identity(out):
    """Zero the off-diagonal 3x3 blocks and set the lower-right block to ``I3``."""
    for i in range(3):
        for j in range(3):
            out[i, j + 3] = 0.0
            out[i + 3, j] = 0.0
            out[i + 3, j + 3] = 1.0 if i == j else 0.0


@njit(cache=True)
def Ad_into(C, out):
    """Write ``Ad_C = blockdiag(R, I3)`` into ``out`` (6x6)."""
    for i in range(3):
        for j in range(3):
            out[i, j] = C[i, j]
    _blockdiag_identity(out)


@njit(cache=True)
def ad_into(X, out):
    """Write ``ad_X = [[xi^, 0], [0, 0]]`` ([MT14] eq. (63)) into ``out`` (6x6)."""
    out[:, :] = 0.0
    so3.hat_into(X[:3], out[:3, :3])


@njit(cache=True)
def dexp_into(X, out):
    """Write ``dexp_X = blockdiag(dexp_xi, I3)`` ([MT14] eq. (67)) into ``out`` (6x6)."""
    so3.dexp_into(X[:3], out[:3, :3])
    _blockdiag_identity(out)


@njit(cache=True)
def dexpinv_into(X, out):
    """Write ``dexp_X^-1 = blockdiag(dexp_xi^-1, I3)`` ([MT14] eq. (68)) into ``out``."""
    so3.dexpinv_into(X[:3], out[:3, :3])
    _blockdiag_identity(out)


# --------------------------------------------------------------------------- loops
@njit(cache=True)
def _compose_loop(C1, C2, out):
    for n in range(C1.shape[0]):
        compose_into(C1[n], C2[n], out[n])


@njit(cache=True)
def _inverse_loop(C, out):
    for n in range(C.shape[0]):
        inverse_into(C[n], out[n])


@njit(cache=True)
def _exp_loop(X, out):
    for n in range(X.shape[0]):
        exp_into(X[n], out[n])


@njit(cache=True)
def _log_loop(C, out):
    for n in range(C.shape[0]):
        log_into(C[n], out[n])


@njit(cache=True)
def _Ad_loop(C, out):
    for n in range(C.shape[0]):
        Ad_into(C[n], out[n])


@njit(cache=True)
def _ad_loop(X, out):
    for n in range(X.shape[0]):
        ad_into(X[n], out[n])


@njit(cache=True)
def _dexp_loop(X, out):
    for n in range(X.shape[0]):
        dexp_into(X[n], out[n])


@njit(cache=True)
def _dexpinv_loop(X, out):
    for n in range(X.shape[0]):
        dexpinv_into(X[n], out[n])


# --------------------------------------------------------------------------- public API
def compose(C1, C2):
    """Return the direct product ``(R1 R2, r1 + r2)``: ``[..., 4, 4]`` (leading axes broadcast)."""
    a, b, lead = as_batch2(C1, (4, 4), C2, (4, 4), 'so3r3.compose', ('C1', 'C2'))
    out = np.empty((a.shape[0], 4, 4))
    _compose_loop(a, b, out)
    return out.reshape(lead + (4, 4))


def inverse(C):
    """Direct-product inverse ``(R^T, -r)``: ``[..., 4, 4] -> [..., 4, 4]``."""
    return run_batch(_inverse_loop, C, (4, 4), (4, 4), 'so3r3.inverse', 'C')


def exp(X):
    """Return ``(exp xi^, r)`` as a 4x4 array ([MT14] eq. (65)): ``[..., 6] -> [..., 4, 4]``."""
    return run_batch(_exp_loop, X, (6,), (4, 4), 'so3r3.exp')


def log(C):
    """``(log R, r)``, ``|log R| <= pi``: ``[..., 4, 4] -> [..., 6]``; inverse of :func:`exp`."""
    return run_batch(_log_loop, C, (4, 4), (6,), 'so3r3.log', 'C')


def Ad(C):
    """``Ad_C = blockdiag(R, I3)``: ``[..., 4, 4] -> [..., 6, 6]``."""
    return run_batch(_Ad_loop, C, (4, 4), (6, 6), 'so3r3.Ad', 'C')


def ad(X):
    """Return ``ad_X = [[xi^, 0], [0, 0]]``, ``[X1, X2] = (xi1 x xi2, 0)``: ``[..., 6, 6]``."""
    return run_batch(_ad_loop, X, (6,), (6, 6), 'so3r3.ad')


def dexp(X):
    """
    ``dexp_X = blockdiag(dexp_xi, I3)`` ([MT14] eq. (67)): ``[..., 6] -> [..., 6, 6]``.

    The mixed twist of ``C = exp X`` is ``V^m = (omega^b, r') = dexp(-X) @ X'`` (eq. (68)).
    """
    return run_batch(_dexp_loop, X, (6,), (6, 6), 'so3r3.dexp')


def dexpinv(X):
    """``dexp_X^-1 = blockdiag(dexp_xi^-1, I3)``: ``[..., 6] -> [..., 6, 6]``."""
    return run_batch(_dexpinv_loop, X, (6,), (6, 6), 'so3r3.dexpinv')


def random(rng, shape=()):
    """Random elements ``shape + (4, 4)``, drawn like :func:`se3.random` (a test helper)."""
    return se3.random(rng, shape)
