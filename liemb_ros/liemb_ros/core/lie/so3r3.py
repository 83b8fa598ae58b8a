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

All functions are batched over leading axes; the numerics are the SO(3) kernels: the
``*_into`` kernels here (for the integrators) call them on the rotation block, and the
batched functions are :mod:`~liemb_ros.core.lie.so3`'s on the rotations, the translations
(and the identity blocks) set around them.
"""
import numpy as np
from numba import njit

from . import se3, so3
from ._batch import as_batch, as_batch2


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


# --------------------------------------------------------------------------- public API
def _pose(R, r, lead):
    """Return the elements ``[[R, r], [0, 1]]`` of rotations (N, 3, 3), translations (N, 3)."""
    out = np.zeros((R.shape[0], 4, 4))
    out[:, :3, :3] = R
    out[:, :3, 3] = r
    out[:, 3, 3] = 1.0
    return out.reshape(lead + (4, 4))


def _blockdiag(A, lead):
    """Return ``blockdiag(A, I3)`` of the 3x3 blocks ``A`` (N, 3, 3): ``lead + (6, 6)``."""
    out = np.zeros((A.shape[0], 6, 6))
    out[:, :3, :3] = A
    out[:, 3:, 3:] = np.eye(3)
    return out.reshape(lead + (6, 6))


def compose(C1, C2):
    """Return the direct product ``(R1 R2, r1 + r2)``: ``[..., 4, 4]`` (leading axes broadcast)."""
    a, b, lead = as_batch2(C1, (4, 4), C2, (4, 4), 'so3r3.compose', ('C1', 'C2'))
    return _pose(so3.compose(a[:, :3, :3], b[:, :3, :3]), a[:, :3, 3] + b[:, :3, 3], lead)


def inverse(C):
    """Direct-product inverse ``(R^T, -r)``: ``[..., 4, 4] -> [..., 4, 4]``."""
    a, lead = as_batch(C, (4, 4), 'so3r3.inverse', 'C')
    return _pose(np.swapaxes(a[:, :3, :3], 1, 2), -a[:, :3, 3], lead)


def exp(X):
    """Return ``(exp xi^, r)`` as a 4x4 array ([MT14] eq. (65)): ``[..., 6] -> [..., 4, 4]``."""
    a, lead = as_batch(X, (6,), 'so3r3.exp')
    return _pose(so3.exp(a[:, :3]), a[:, 3:], lead)


def log(C):
    """``(log R, r)``, ``|log R| <= pi``: ``[..., 4, 4] -> [..., 6]``; inverse of :func:`exp`."""
    a, lead = as_batch(C, (4, 4), 'so3r3.log', 'C')
    out = np.empty((a.shape[0], 6))
    out[:, :3] = so3.log(a[:, :3, :3])
    out[:, 3:] = a[:, :3, 3]
    return out.reshape(lead + (6,))


def Ad(C):
    """``Ad_C = blockdiag(R, I3)``: ``[..., 4, 4] -> [..., 6, 6]``."""
    a, lead = as_batch(C, (4, 4), 'so3r3.Ad', 'C')
    return _blockdiag(a[:, :3, :3], lead)


def ad(X):
    """Return ``ad_X = [[xi^, 0], [0, 0]]``, ``[X1, X2] = (xi1 x xi2, 0)``: ``[..., 6, 6]``."""
    a, lead = as_batch(X, (6,), 'so3r3.ad')
    out = np.zeros((a.shape[0], 6, 6))
    out[:, :3, :3] = so3.hat(a[:, :3])
    return out.reshape(lead + (6, 6))


def dexp(X):
    """
    ``dexp_X = blockdiag(dexp_xi, I3)`` ([MT14] eq. (67)): ``[..., 6] -> [..., 6, 6]``.

    The mixed twist of ``C = exp X`` is ``V^m = (omega^b, r') = dexp(-X) @ X'`` (eq. (68)).
    """
    a, lead = as_batch(X, (6,), 'so3r3.dexp')
    return _blockdiag(so3.dexp(a[:, :3]), lead)


def dexpinv(X):
    """``dexp_X^-1 = blockdiag(dexp_xi^-1, I3)``: ``[..., 6] -> [..., 6, 6]``."""
    a, lead = as_batch(X, (6,), 'so3r3.dexpinv')
    return _blockdiag(so3.dexpinv(a[:, :3]), lead)


def random(rng, shape=()):
    """Random elements ``shape + (4, 4)``, drawn like :func:`se3.random` (a test helper)."""
    return se3.random(rng, shape)
