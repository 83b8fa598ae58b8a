"""
The rigid-body group SE(3) ([MT14] App. A.2, [M18k] App. A, [M18d] App. B).

Elements are 4x4 poses ``C = [[R, r], [0, 1]]`` mapping body to world coordinates
(``p_world = R p_body + r``).  Algebra elements are screws/twists ``X = (xi, eta)``,
angular first, with ``X^ = [[xi^, eta], [0, 0]]``; wrenches are moment first
``W = (m, f)`` so that the power is ``W @ V``.

* ``Ad_C = [[R, 0], [r^ R, R]]`` ([M18k] eq. (88)), ``(Ad_C X)^ = C X^ C^-1`` (eq. (92));
* ``ad_X = [[xi^, 0], [eta^, xi^]]`` ([MT14] eq. (50)), ``ad_X Y = [X, Y]``;
* ``dexp_X`` is right-trivialised, ``dexp_X X' = ((d/dt exp X^)(exp X^)^-1)^v``, so the
  body-fixed twist of ``C = exp X^`` is ``V = dexp_{-X} X'`` ([MT14] eq. (53)).
  ``dexp_X = [[dexp_xi, 0], [P, dexp_xi]]`` and ``dexp_X^-1 = [[dexp_xi^-1, 0],
  [U, dexp_xi^-1]]`` with the blocks ``P`` (eq. (55)) and ``U`` (eq. (57)) *with their
  misprints corrected* (the printed ``xi^``/``xi^2`` coefficients of ``P`` and the ``gamma``
  and ``h/theta^3`` of ``U`` are wrong: docs/theory/errata.md#mt14-eq55, #mt14-eq57).
  Writing ``h xi^ = (xi.eta)/theta^2 xi^`` and absorbing the ``1/theta^2`` into the
  coefficients gives the forms used here, whose coefficients are regular at ``theta = 0``
  and use Taylor series below ``so3.SERIES_ANGLE``; the Selig ``c2, c4`` form (eq. (58)) is
  not used, it cancels catastrophically for small angles (docs/theory/errata.md#mt14-eq58).
  Theory: docs/theory/conventions.md; references: docs/theory/README.md.

All public functions are batched over leading axes; the numerics are compiled
single-element kernels (:mod:`liemb_ros.core._kernels.lie` and those below).
"""
import math

import numpy as np
from numba import njit

from . import so3
from .._kernels.lie import (Ad_matrix_into, ad_matrix_into, compose_into, exp_se3_into,
                            inverse_into, rodrigues_coefficients)
from ._batch import as_batch, as_batch2, run_batch, shape_tuple
from .so3 import SERIES_ANGLE, even_series

# (alpha - beta) / t^2,  alpha = sin t / t,  beta = 2 (1 - cos t) / t^2
_P3 = (-1.0 / 12.0, 1.0 / 180.0, -1.0 / 6720.0, 1.0 / 453600.0, -1.0 / 47900160.0,
       1.0 / 7264857600.0, -1.0 / 1494484992000.0, 1.0 / 400148356608000.0)
# (beta / 2 - 3 (1 - alpha) / t^2) / t^2
_P4 = (-1.0 / 60.0, 1.0 / 1260.0, -1.0 / 60480.0, 1.0 / 4989600.0, -1.0 / 622702080.0,
       1.0 / 108972864000.0, -1.0 / 25406244864000.0, 1.0 / 7602818775552000.0)
# (1 / beta + gamma - 2) / t^4,  gamma = (t/2) cot(t/2)
_U2 = (1.0 / 360.0, 1.0 / 7560.0, 1.0 / 201600.0, 1.0 / 5987520.0, 691.0 / 130767436800.0,
       1.0 / 6227020800.0, 3617.0 / 762187345920000.0, 43867.0 / 319318388573184000.0)


# --------------------------------------------------------------------------- kernels
@njit(cache=True)
def hat_into(X, out):
    """Write ``X^ = [[xi^, eta], [0, 0]]`` (4x4, [MT14] eq. (48)) into ``out``."""
    so3.hat_into(X[:3], out[:3, :3])
    for i in range(3):
        out[i, 3] = X[3 + i]
        out[3, i] = 0.0
    out[3, 3] = 0.0


@njit(cache=True)
def vee_into(M, out):
    """Write ``(vee(skew part of M[:3, :3]), M[:3, 3])`` into ``out`` (6,)."""
    so3.vee_into(M[:3, :3], out[:3])
    for i in range(3):
        out[3 + i] = M[i, 3]


@njit(cache=True)
def block_into(x, y, c0, c1, c2, c3, out):
    """
    Write ``c0 y^ + c1 (y^ x^ + x^ y^) + (x.y) (c2 x^ + c3 x^2)`` into ``out`` (3x3).

    The lower-left blocks ``P`` and ``U`` of dexp and dexp^-1 on SE(3) have this form
    (``y^ x^ + x^ y^ = x y^T + y x^T - 2 (x.y) I``, ``x^2 = x x^T - |x|^2 I``).
    """
    d = x[0] * y[0] + x[1] * y[1] + x[2] * y[2]
    t2 = x[0] * x[0] + x[1] * x[1] + x[2] * x[2]
    e = d * c3
    for i in range(3):
        for j in range(3):
            out[i, j] = c1 * (x[i] * y[j] + y[i] * x[j]) + e * x[i] * x[j]
        out[i, i] -= 2.0 * c1 * d + e * t2
    f = d * c2
    out[0, 1] += -c0 * y[2] - f * x[2]
    out[0, 2] += c0 * y[1] + f * x[1]
    out[1, 0] += c0 * y[2] + f * x[2]
    out[1, 2] += -c0 * y[0] - f * x[0]
    out[2, 0] += -c0 * y[1] - f * x[1]
    out[2, 1] += c0 * y[0] + f * x[0]


@njit(cache=True, inline='always')
def dexp_coefficients(theta):
    """
    Return ``(b, c, p3, p4)`` of the block ``P`` of dexp ([MT14] eq. (55), corrected).

    ``b = (1 - cos t)/t^2 = beta/2``, ``c = (t - sin t)/t^3 = (1 - alpha)/t^2``,
    ``p3 = (alpha - beta)/t^2``, ``p4 = (beta/2 - 3 (1 - alpha)/t^2)/t^2``;
    ``P = b eta^ + c (eta^ xi^ + xi^ eta^) + (xi.eta) (p3 xi^ + p4 xi^2)``.
    """
    _, b, c = rodrigues_coefficients(theta)
    if theta < SERIES_ANGLE:
        t2 = theta * theta
        return b, c, even_series(t2, _P3), even_series(t2, _P4)
    t2 = theta * theta
    alpha = math.sin(theta) / theta
    return b, c, (alpha - 2.0 * b) / t2, (b - 3.0 * c) / t2


@njit(cache=True, inline='always')
def dexpinv_coefficients(theta):
    """
    Return ``(k1, u2)`` of the block ``U`` of dexp^-1 ([MT14] eq. (57), corrected).

    ``k1 = (1 - gamma)/t^2``, ``u2 = (1/beta + gamma - 2)/t^4`` with
    ``gamma = (t/2) cot(t/2)``; ``U = -eta^/2 + k1 (eta^ xi^ + xi^ eta^) + (xi.eta) u2 xi^2``.
    """
    k1 = so3.dexpinv_coefficient(theta)
    if theta < SERIES_ANGLE:
        return k1, even_series(theta * theta, _U2)
    h = 0.5 * theta
    sh = math.sin(h)
    gamma = h * math.cos(h) / sh
    t2 = theta * theta
    return k1, (t2 / (4.0 * sh * sh) + gamma - 2.0) / (t2 * t2)


@njit(cache=True)
def dexp_into(X, out):
    """Write ``dexp_X = [[dexp_xi, 0], [P, dexp_xi]]`` (6x6, [MT14] eq. (54)) into ``out``."""
    xi = X[:3]
    b, c, p3, p4 = dexp_coefficients(math.sqrt(xi[0] * xi[0] + xi[1] * xi[1] + xi[2] * xi[2]))
    so3.quadratic_into(xi, b, c, out[:3, :3])
    block_into(xi, X[3:], b, c, p3, p4, out[3:, :3])
    for i in range(3):
        for j in range(3):
            out[i + 3, j + 3] = out[i, j]
            out[i, j + 3] = 0.0


@njit(cache=True)
def dexpinv_into(X, out):
    """Write ``dexp_X^-1 = [[dexp_xi^-1, 0], [U, dexp_xi^-1]]`` ([MT14] eq. (56))."""
    xi = X[:3]
    k1, u2 = dexpinv_coefficients(math.sqrt(xi[0] * xi[0] + xi[1] * xi[1] + xi[2] * xi[2]))
    so3.quadratic_into(xi, -0.5, k1, out[:3, :3])
    block_into(xi, X[3:], -0.5, k1, 0.0, u2, out[3:, :3])
    for i in range(3):
        for j in range(3):
            out[i + 3, j + 3] = out[i, j]
            out[i, j + 3] = 0.0


@njit(cache=True)
def log_into(C, out):
    """
    Write the screw ``X = (xi, eta)`` with ``exp X^ = C``, ``|xi| <= pi``, into ``out`` (6,).

    Inverse of [MT14] eq. (51): ``xi = log R`` (:func:`so3.log_into`) and
    ``eta = dexp_xi^-1 r`` ([MT14] eq. (44)), regular up to and at ``|xi| = pi``.
    """
    so3.log_into(C[:3, :3], out[:3])
    xi = out[:3]
    k1 = so3.dexpinv_coefficient(math.sqrt(xi[0] * xi[0] + xi[1] * xi[1] + xi[2] * xi[2]))
    so3.quadratic_apply_into(xi, -0.5, k1, C[:3, 3], out[3:])


@njit(cache=True)
def Ad_inv_matrix_into(C, out):
    """Write ``Ad_C^-1 = Ad_{C^-1} = [[R^T, 0], [-R^T r^, R^T]]`` ([M18k] eq. (90))."""
    r0 = C[0, 3]
    r1 = C[1, 3]
    r2 = C[2, 3]
    for i in range(3):
        for j in range(3):
            out[i, j] = C[j, i]
            out[i + 3, j + 3] = C[j, i]
            out[i, j + 3] = 0.0
        # row i of -R^T r^ = -(column i of R)^T r^ = (r x R[:, i])^T
        out[i + 3, 0] = r1 * C[2, i] - r2 * C[1, i]
        out[i + 3, 1] = r2 * C[0, i] - r0 * C[2, i]
        out[i + 3, 2] = r0 * C[1, i] - r1 * C[0, i]


@njit(cache=True)
def act_into(C, p, out):
    """Write ``R p + r`` (a point mapped from body to world coordinates) into ``out`` (3,)."""
    for i in range(3):
        out[i] = C[i, 0] * p[0] + C[i, 1] * p[1] + C[i, 2] * p[2] + C[i, 3]


@njit(cache=True)
def Ad_R_into(R, out):
    """Write ``Ad_R = diag(R, R)`` (change of basis only, [M18k] eq. (91)) into ``out``."""
    for i in range(3):
        for j in range(3):
            out[i, j] = R[i, j]
            out[i + 3, j + 3] = R[i, j]
            out[i, j + 3] = 0.0
            out[i + 3, j] = 0.0


@njit(cache=True)
def Ad_r_into(r, out):
    """Write the shift dyad ``Ad_r = [[I, 0], [r^, I]]`` ([M18k] eq. (91)) into ``out``."""
    for i in range(6):
        for j in range(6):
            out[i, j] = 1.0 if i == j else 0.0
    so3.hat_into(r, out[3:, :3])


# --------------------------------------------------------------------------- loops
@njit(cache=True)
def _hat_loop(X, out):
    for n in range(X.shape[0]):
        hat_into(X[n], out[n])


@njit(cache=True)
def _vee_loop(M, out):
    for n in range(M.shape[0]):
        vee_into(M[n], out[n])


@njit(cache=True)
def _exp_loop(X, out):
    for n in range(X.shape[0]):
        exp_se3_into(X[n], 1.0, out[n])


@njit(cache=True)
def _log_loop(C, out):
    for n in range(C.shape[0]):
        log_into(C[n], out[n])


@njit(cache=True)
def _Ad_loop(C, out):
    for n in range(C.shape[0]):
        Ad_matrix_into(C[n], out[n])


@njit(cache=True)
def _Ad_inv_loop(C, out):
    for n in range(C.shape[0]):
        Ad_inv_matrix_into(C[n], out[n])


@njit(cache=True)
def _ad_loop(X, out):
    for n in range(X.shape[0]):
        ad_matrix_into(X[n], out[n])


@njit(cache=True)
def _dexp_loop(X, out):
    for n in range(X.shape[0]):
        dexp_into(X[n], out[n])


@njit(cache=True)
def _dexpinv_loop(X, out):
    for n in range(X.shape[0]):
        dexpinv_into(X[n], out[n])


@njit(cache=True)
def _compose_loop(C1, C2, out):
    for n in range(C1.shape[0]):
        compose_into(C1[n], C2[n], out[n])


@njit(cache=True)
def _inverse_loop(C, out):
    for n in range(C.shape[0]):
        inverse_into(C[n], out[n])


@njit(cache=True)
def _act_loop(C, p, out):
    for n in range(C.shape[0]):
        act_into(C[n], p[n], out[n])


@njit(cache=True)
def _Ad_R_loop(R, out):
    for n in range(R.shape[0]):
        Ad_R_into(R[n], out[n])


@njit(cache=True)
def _Ad_r_loop(r, out):
    for n in range(r.shape[0]):
        Ad_r_into(r[n], out[n])


# --------------------------------------------------------------------------- public API
def hat(X):
    """
    4x4 matrix of a screw ``X = (xi, eta)``: ``[..., 6] -> [..., 4, 4]`` ([MT14] eq. (48)).

    Example: ``hat([0, 0, 1, 1, 0, 0]) = [[0, -1, 0, 1], [1, 0, 0, 0], [0, 0, 0, 0],
    [0, 0, 0, 0]]``.
    """
    return run_batch(_hat_loop, X, (6,), (4, 4), 'se3.hat')


def vee(M):
    """Inverse of :func:`hat`: ``[..., 4, 4] -> [..., 6]`` (skew part of the 3x3 block)."""
    return run_batch(_vee_loop, M, (4, 4), (6,), 'se3.vee', 'M')


def exp(X):
    """
    Pose of the screw motion ``exp X^``: ``[..., 6] -> [..., 4, 4]``.

    ``exp X^ = [[exp xi^, dexp_xi eta], [0, 1]]`` ([MT14] eqs. (51)-(52), [M18k]
    eq. (85)); for a unit joint screw ``Y`` and coordinate ``q``, ``exp(Y q)`` is the
    relative pose of the joint.  Example: ``exp([0, 0, pi/2, 0, 0, 0])`` rotates a quarter
    turn about z, ``exp([0, 0, 0, 1, 2, 3])`` translates by ``(1, 2, 3)``.
    """
    return run_batch(_exp_loop, X, (6,), (4, 4), 'se3.exp')


def log(C):
    """
    Screw coordinates of a pose: ``[..., 4, 4] -> [..., 6]``, ``|xi| <= pi``.

    ``log(exp(X)) = X`` for ``|xi| < pi``; at ``|xi| = pi`` the sign of ``xi`` is
    arbitrary (see :func:`log_into`).
    """
    return run_batch(_log_loop, C, (4, 4), (6,), 'se3.log', 'C')


def Ad(C):
    """
    Adjoint matrix ``Ad_C = [[R, 0], [r^ R, R]]``: ``[..., 4, 4] -> [..., 6, 6]``.

    Maps a body-fixed twist to the spatial twist, ``V^s = Ad_C V^b`` ([M18k] eqs. (88),
    (99)); ``(Ad_C X)^ = C X^ C^-1``.
    """
    return run_batch(_Ad_loop, C, (4, 4), (6, 6), 'se3.Ad', 'C')


def Ad_inv(C):
    """``Ad_C^-1 = Ad_{C^-1} = [[R^T, 0], [-R^T r^, R^T]]``: ``[..., 4, 4] -> [..., 6, 6]``."""
    return run_batch(_Ad_inv_loop, C, (4, 4), (6, 6), 'se3.Ad_inv', 'C')


def ad(X):
    """``ad_X = [[xi^, 0], [eta^, xi^]]`` ([MT14] eq. (50)): ``[..., 6] -> [..., 6, 6]``."""
    return run_batch(_ad_loop, X, (6,), (6, 6), 'se3.ad')


def ad_star(X):
    """
    Return ``ad_X^T = [[-xi^, -eta^], [0, -xi^]]``, acting on wrenches: ``[..., 6, 6]``.

    Sign convention: ``ad_star(V) = +ad_V^T`` (no minus sign is folded in).  The
    Newton-Euler equations of a body with body-fixed twist ``V`` and inertia ``M`` read
    ``M V' - ad_star(V) @ M @ V = W`` ([MT14] eq. (20), [M18d] eq. (41)), i.e. the
    gyroscopic wrench on the left-hand side is ``-ad_V^T M V``.  A wrench ``W`` transforms
    by ``-ad_star(X) W`` under an infinitesimal motion ``X`` (the co-adjoint action).
    """
    return np.swapaxes(run_batch(_ad_loop, X, (6,), (6, 6), 'se3.ad_star'), -1, -2).copy()


def dexp(X):
    """
    Right-trivialised differential of exp, ``[..., 6] -> [..., 6, 6]`` ([MT14] eq. (54)).

    ``dexp_X = sum_k ad_X^k / (k+1)!`` (eq. (39)); the body-fixed twist of ``C = exp X^``
    is ``V = dexp(-X) @ X'`` (eq. (53)), the spatial twist ``dexp(X) @ X'``.
    Singular at ``|xi| = 2 k pi``, ``k >= 1``.
    """
    return run_batch(_dexp_loop, X, (6,), (6, 6), 'se3.dexp')


def dexpinv(X):
    """
    Inverse of :func:`dexp`, ``[..., 6] -> [..., 6, 6]`` ([MT14] eqs. (56)-(57), corrected).

    ``dexp_X^-1 = I - ad_X/2 + ad_X^2/12 - ad_X^4/720 + ...`` (Bernoulli series, eq. (43));
    ``X' = dexpinv(-X) @ V`` reconstructs screw coordinates from a body-fixed twist.
    Valid for ``|xi| < 2 pi``.
    """
    return run_batch(_dexpinv_loop, X, (6,), (6, 6), 'se3.dexpinv')


def compose(C1, C2):
    """Return the group product ``C1 @ C2`` ([MT14] eq. (47)); leading axes broadcast."""
    a, b, lead = as_batch2(C1, (4, 4), C2, (4, 4), 'se3.compose', ('C1', 'C2'))
    out = np.empty((a.shape[0], 4, 4))
    _compose_loop(a, b, out)
    return out.reshape(lead + (4, 4))


def inverse(C):
    """Group inverse ``[[R^T, -R^T r], [0, 1]]`` ([M18k] eq. (78)): ``[..., 4, 4]``."""
    return run_batch(_inverse_loop, C, (4, 4), (4, 4), 'se3.inverse', 'C')


def act(C, p):
    """Map body points to world points, ``R p + r``: ``[..., 4, 4] x [..., 3] -> [..., 3]``."""
    a, b, lead = as_batch2(C, (4, 4), p, (3,), 'se3.act', ('C', 'p'))
    out = np.empty((a.shape[0], 3))
    _act_loop(a, b, out)
    return out.reshape(lead + (3,))


def Ad_R(R):
    """Return ``Ad_R = diag(R, R)``, change of basis only ([M18k] eq. (91)), ``[..., 6, 6]``."""
    return run_batch(_Ad_R_loop, R, (3, 3), (6, 6), 'se3.Ad_R', 'R')


def Ad_r(r):
    """
    Shift dyad ``Ad_r = [[I, 0], [r^, I]]`` ([M18k] eq. (91)): ``[..., 3] -> [..., 6, 6]``.

    Changes the reference point of a twist: ``V^s = Ad_r V^h``; ``Ad(C) = Ad_r(r) Ad_R(R)``.
    """
    return run_batch(_Ad_r_loop, r, (3,), (6, 6), 'se3.Ad_r', 'r')


def from_Rr(R, r):
    """Return the poses ``[[R, r], [0, 1]]`` of ``R [..., 3, 3]``, ``r [..., 3]`` (broadcast)."""
    a, b, lead = as_batch2(R, (3, 3), r, (3,), 'se3.from_Rr', ('R', 'r'))
    out = np.zeros((a.shape[0], 4, 4))
    out[:, :3, :3] = a
    out[:, :3, 3] = b
    out[:, 3, 3] = 1.0
    return out.reshape(lead + (4, 4))


def to_Rr(C):
    """Split poses into ``(R [..., 3, 3], r [..., 3])`` (copies)."""
    a, lead = as_batch(C, (4, 4), 'se3.to_Rr', 'C')
    return a[:, :3, :3].reshape(lead + (3, 3)).copy(), a[:, :3, 3].reshape(lead + (3,)).copy()


def random(rng, shape=()):
    """
    Random poses, ``shape + (4, 4)`` (a test helper): Haar-uniform ``R``, ``r ~ N(0, I)``.

    ``rng`` is a :class:`numpy.random.Generator`.
    """
    shape = shape_tuple(shape)
    R = so3.random(rng, shape)
    return from_Rr(R, rng.standard_normal(shape + (3,)))
