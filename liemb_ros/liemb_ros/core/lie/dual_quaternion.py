"""
Unit dual quaternions for rigid-body poses ([MT14] App. A.4; docs/theory/conventions.md).

A dual quaternion is an (8,) array ``D = (Q, Qe)``: real part ``Q = (w, x, y, z)`` (the
rotation, :mod:`liemb_ros.core.lie.quaternion`) and dual part ``Qe = (1/2) (0, r) o Q``
(eq. (74)), so ``r = 2 vec(Qe o Q*)``.  ``D`` and ``-D`` are the same pose (not ``(Q*, Qe)``
as [MT14] App. A.4 prints, docs/theory/errata.md#mt14-a4-double-cover); :func:`from_matrix`
and :func:`log` take ``w >= 0``.

The exponential of a screw ``X = (xi, eta)`` (angular first, as :mod:`liemb_ros.core.lie.se3`)
is the dual-quaternion exponential of ``(xi + eps eta)/2``: the body-fixed kinematics
``Q' = Q o (0, omega)/2``, ``Qe' = (Q o (0, v) + Qe o (0, omega))/2`` ([MT14] eq. (78)
corrected, docs/theory/errata.md#mt14-eq76) integrate a constant twist to it, so
``to_matrix(exp(X)) == se3.exp(X)``.  All functions are batched over leading axes.
"""
import math

import numpy as np
from numba import njit

from . import quaternion
from .._kernels.lie import rodrigues_coefficients
from ._batch import as_batch, as_batch2, run_batch
from .so3 import SERIES_ANGLE, even_series

# (cos t - sin t / t) / t^2
_DQ_T = (-1.0 / 3.0, 1.0 / 30.0, -1.0 / 840.0, 1.0 / 45360.0, -1.0 / 3991680.0,
         1.0 / 518918400.0, -1.0 / 93405312000.0, 1.0 / 22230464256000.0)


# --------------------------------------------------------------------------- kernels
@njit(cache=True)
def from_matrix_into(C, out):
    """Write ``(Q, (1/2)(0, r) o Q)`` (``w >= 0``) of a 4x4 pose into ``out`` (8,)."""
    quaternion.from_matrix_into(C[:3, :3], out[:4])
    m = quaternion.multiply_scalars(0.0, 0.5 * C[0, 3], 0.5 * C[1, 3], 0.5 * C[2, 3],
                                    out[0], out[1], out[2], out[3])
    for i in range(4):
        out[4 + i] = m[i]


@njit(cache=True)
def to_matrix_into(D, out):
    """Write the pose ``[[R(Q), 2 vec(Qe o Q*) / |Q|^2], [0, 1]]`` into ``out`` (4x4)."""
    quaternion.to_matrix_into(D[:4], out[:3, :3])
    m = quaternion.multiply_scalars(D[4], D[5], D[6], D[7], D[0], -D[1], -D[2], -D[3])
    s = 2.0 / (D[0] * D[0] + D[1] * D[1] + D[2] * D[2] + D[3] * D[3])
    for i in range(3):
        out[i, 3] = s * m[1 + i]
        out[3, i] = 0.0
    out[3, 3] = 1.0


@njit(cache=True)
def multiply_into(A, B, out):
    """Write ``A o B = (Q_A Q_B, Q_A Qe_B + Qe_A Q_B)`` ([MT14] eq. (71)) into ``out`` (8,)."""
    r = quaternion.multiply_scalars(A[0], A[1], A[2], A[3], B[0], B[1], B[2], B[3])
    d1 = quaternion.multiply_scalars(A[0], A[1], A[2], A[3], B[4], B[5], B[6], B[7])
    d2 = quaternion.multiply_scalars(A[4], A[5], A[6], A[7], B[0], B[1], B[2], B[3])
    for i in range(4):
        out[i] = r[i]
        out[4 + i] = d1[i] + d2[i]


@njit(cache=True, inline='always')
def exp_coefficients(theta):
    """Return ``(cos t, sin t / t, (cos t - sin t / t) / t^2)`` (series for small ``t``)."""
    s = rodrigues_coefficients(theta)[0]
    co = math.cos(theta)
    if theta < SERIES_ANGLE:
        return co, s, even_series(theta * theta, _DQ_T)
    return co, s, (co - s) / (theta * theta)


@njit(cache=True)
def exp_into(X, out):
    """
    Write the unit dual quaternion of ``exp X^`` (screw ``X = (xi, eta)``) into ``out`` (8,).

    With ``a = xi/2``, ``b = eta/2``, ``t = |a|``: ``exp(a + eps b) = exp a + eps D exp(a)[b]``,
    ``exp a = (cos t, sin t/t a)`` and its derivative
    ``(-sin t/t (a.b), sin t/t b + (cos t - sin t/t)/t^2 (a.b) a)``.
    """
    a0 = 0.5 * X[0]
    a1 = 0.5 * X[1]
    a2 = 0.5 * X[2]
    b0 = 0.5 * X[3]
    b1 = 0.5 * X[4]
    b2 = 0.5 * X[5]
    co, s, t = exp_coefficients(math.sqrt(a0 * a0 + a1 * a1 + a2 * a2))
    ab = a0 * b0 + a1 * b1 + a2 * b2
    out[0] = co
    out[1] = s * a0
    out[2] = s * a1
    out[3] = s * a2
    out[4] = -s * ab
    out[5] = s * b0 + t * ab * a0
    out[6] = s * b1 + t * ab * a1
    out[7] = s * b2 + t * ab * a2


@njit(cache=True)
def log_into(D, out):
    """
    Write the screw ``X = (xi, eta)``, ``|xi| <= pi``, with ``exp(X) = +-D`` into ``out``.

    Inverts :func:`exp_into` for a unit ``D`` flipped to ``w >= 0``: ``xi = log Q``
    (:func:`quaternion.log_into`), then with ``a = xi/2`` (``|a| <= pi/2``, so
    ``sin t/t >= 2/pi``) ``a.b = -Qe_0 / (sin t/t)`` and
    ``b = (vec Qe - c (a.b) a) / (sin t/t)``, ``eta = 2 b``.
    """
    quaternion.log_into(D[:4], out[:3])
    sg = 1.0 if D[0] >= 0.0 else -1.0
    a0 = 0.5 * out[0]
    a1 = 0.5 * out[1]
    a2 = 0.5 * out[2]
    _, s, t = exp_coefficients(math.sqrt(a0 * a0 + a1 * a1 + a2 * a2))
    ab = -sg * D[4] / s
    out[3] = 2.0 * (sg * D[5] - t * ab * a0) / s
    out[4] = 2.0 * (sg * D[6] - t * ab * a1) / s
    out[5] = 2.0 * (sg * D[7] - t * ab * a2) / s


# --------------------------------------------------------------------------- loops
@njit(cache=True)
def _from_matrix_loop(C, out):
    for n in range(C.shape[0]):
        from_matrix_into(C[n], out[n])


@njit(cache=True)
def _to_matrix_loop(D, out):
    for n in range(D.shape[0]):
        to_matrix_into(D[n], out[n])


@njit(cache=True)
def _multiply_loop(A, B, out):
    for n in range(A.shape[0]):
        multiply_into(A[n], B[n], out[n])


@njit(cache=True)
def _exp_loop(X, out):
    for n in range(X.shape[0]):
        exp_into(X[n], out[n])


@njit(cache=True)
def _log_loop(D, out):
    for n in range(D.shape[0]):
        log_into(D[n], out[n])


# --------------------------------------------------------------------------- public API
def from_matrix(C):
    """Return the unit dual quaternion (``w >= 0``) of a pose: ``[..., 4, 4] -> [..., 8]``."""
    return run_batch(_from_matrix_loop, C, (4, 4), (8,), 'dual_quaternion.from_matrix', 'C')


def to_matrix(D):
    """Pose of a dual quaternion: ``[..., 8] -> [..., 4, 4]`` (``+-D`` give the same pose)."""
    return run_batch(_to_matrix_loop, D, (8,), (4, 4), 'dual_quaternion.to_matrix', 'D')


def multiply(A, B):
    """
    Dual-quaternion product ``A o B``: ``[..., 8]`` twice (broadcast) ``-> [..., 8]``.

    Composes like poses: ``to_matrix(multiply(A, B)) == to_matrix(A) @ to_matrix(B)``.
    """
    a, b, lead = as_batch2(A, (8,), B, (8,), 'dual_quaternion.multiply', ('A', 'B'))
    out = np.empty((a.shape[0], 8))
    _multiply_loop(a, b, out)
    return out.reshape(lead + (8,))


def conjugate(D):
    """``(Q*, Qe*)``, the inverse of a unit dual quaternion: ``[..., 8] -> [..., 8]``."""
    a, lead = as_batch(D, (8,), 'dual_quaternion.conjugate', 'D')
    return (a * np.array([1.0, -1.0, -1.0, -1.0, 1.0, -1.0, -1.0, -1.0])).reshape(lead + (8,))


def exp(X):
    """
    Return the unit dual quaternion of the screw motion ``exp X^``: ``[..., 6] -> [..., 8]``.

    ``X = (xi, eta)`` as in :func:`liemb_ros.core.lie.se3.exp`, and
    ``to_matrix(exp(X)) == se3.exp(X)``.
    """
    return run_batch(_exp_loop, X, (6,), (8,), 'dual_quaternion.exp', 'X')


def log(D):
    """
    Return the screw ``(xi, eta)``, ``|xi| <= pi``, of a unit dual quaternion, ``[..., 6]``.

    Equal to ``se3.log(to_matrix(D))``; ``exp(log(D)) = D`` for ``w >= 0`` (``-D`` otherwise).
    """
    return run_batch(_log_loop, D, (8,), (6,), 'dual_quaternion.log', 'D')
