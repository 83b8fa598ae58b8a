"""
The rotation group SO(3): hat/vee, exp, log, dexp, dexp^-1, Ad, ad ([MT14] App. A.1).

Elements are 3x3 rotation matrices ``R`` mapping body to world coordinates; algebra
elements are rotation vectors ``xi`` (3,) with ``hat(xi) @ y = xi x y``.

``dexp`` is the *right*-trivialised differential ([MT14] App. A.1):
``dexp_xi xi' = ((d/dt exp xi^) (exp xi^)^-1)^v``, so the body-fixed angular velocity
``omega^ = R^T R'`` of ``R = exp xi^`` is ``omega = dexp_{-xi} xi'`` ([MT14] eq. (42)).
In robotics notation ``dexp_xi`` is the left Jacobian and ``dexp_{-xi}`` the right one.

Every public function is batched over leading axes (``[..., 3] -> [..., 3, 3]`` and so
on); the numerics are the compiled single-element ``*_into`` kernels below, which the
SE(3) and SO(3)xR^3 modules reuse.  Closed forms switch to Taylor series near
``theta = |xi| = 0`` (docs/theory/conventions.md) and :func:`log` is exact near
``theta = pi`` (symmetric-part route).
"""
import math

import numpy as np
from numba import njit

from ._batch import as_batch, as_batch2, shape_tuple
from .._kernels.lie import exp_se3_scalars, rodrigues_coefficients

# Below this angle the cancelling closed forms (1 - (t/2) cot(t/2)) / t^2 and the SE(3)
# block coefficients are replaced by their 8-term Taylor series (error < 1e-18 here;
# closed-form round-off above it < 5e-15).
SERIES_ANGLE = 0.5
# below this angle log uses theta / sin(theta) = 1 + t^2/6 + 7 t^4/360 (exact to round-off)
LOG_SERIES_ANGLE = 1e-4

# (1 - (t/2) cot(t/2)) / t^2 = sum_k K1[k] t^(2k)  ([MT14] eq. (44))
_K1 = (1.0 / 12.0, 1.0 / 720.0, 1.0 / 30240.0, 1.0 / 1209600.0, 1.0 / 47900160.0,
       691.0 / 1307674368000.0, 1.0 / 74724249600.0, 3617.0 / 10670622842880000.0)


@njit(cache=True, inline='always')
def even_series(t2, coeffs):
    """Return ``sum_k coeffs[k] * t2**k`` (Horner) for a tuple of Taylor coefficients."""
    acc = 0.0
    for i in range(len(coeffs) - 1, -1, -1):
        acc = acc * t2 + coeffs[i]
    return acc


# --------------------------------------------------------------------------- kernels
@njit(cache=True)
def hat_into(x, out):
    """Write the skew matrix ``x^`` (``x^ y = x x y``, [MT14] §A.1) into ``out`` (3x3)."""
    out[0, 0] = 0.0
    out[0, 1] = -x[2]
    out[0, 2] = x[1]
    out[1, 0] = x[2]
    out[1, 1] = 0.0
    out[1, 2] = -x[0]
    out[2, 0] = -x[1]
    out[2, 1] = x[0]
    out[2, 2] = 0.0


@njit(cache=True)
def vee_into(M, out):
    """Write ``vee`` of the skew part ``(M - M^T) / 2`` of a 3x3 matrix into ``out`` (3,)."""
    out[0] = 0.5 * (M[2, 1] - M[1, 2])
    out[1] = 0.5 * (M[0, 2] - M[2, 0])
    out[2] = 0.5 * (M[1, 0] - M[0, 1])


@njit(cache=True)
def quadratic_into(x, c1, c2, out):
    """Write ``I + c1 x^ + c2 x^2`` into ``out`` (3x3), with ``x^2 = x x^T - |x|^2 I``."""
    t2 = x[0] * x[0] + x[1] * x[1] + x[2] * x[2]
    for i in range(3):
        for j in range(3):
            out[i, j] = c2 * x[i] * x[j]
        out[i, i] += 1.0 - c2 * t2
    out[0, 1] -= c1 * x[2]
    out[0, 2] += c1 * x[1]
    out[1, 0] += c1 * x[2]
    out[1, 2] -= c1 * x[0]
    out[2, 0] -= c1 * x[1]
    out[2, 1] += c1 * x[0]


@njit(cache=True)
def quadratic_apply_into(x, c1, c2, v, out):
    """Write ``(I + c1 x^ + c2 x^2) v = v + c1 x x v + c2 x x (x x v)`` into ``out`` (3,)."""
    a0 = x[1] * v[2] - x[2] * v[1]
    a1 = x[2] * v[0] - x[0] * v[2]
    a2 = x[0] * v[1] - x[1] * v[0]
    b0 = x[1] * a2 - x[2] * a1
    b1 = x[2] * a0 - x[0] * a2
    b2 = x[0] * a1 - x[1] * a0
    out[0] = v[0] + c1 * a0 + c2 * b0
    out[1] = v[1] + c1 * a1 + c2 * b1
    out[2] = v[2] + c1 * a2 + c2 * b2


@njit(cache=True, inline='always')
def dexpinv_coefficient(theta):
    """Return ``(1 - (t/2) cot(t/2)) / t^2`` of [MT14] eq. (44) (series below SERIES_ANGLE)."""
    if theta < SERIES_ANGLE:
        return even_series(theta * theta, _K1)
    h = 0.5 * theta
    return (1.0 - h * math.cos(h) / math.sin(h)) / (theta * theta)


@njit(cache=True)
def exp_into(x, out):
    """
    Write ``exp x^ = I + (sin t/t) x^ + ((1 - cos t)/t^2) x^2`` into ``out`` (3x3).

    Euler-Rodrigues, [MT14] eq. (38); the one implementation is the rotation block of
    :func:`liemb_ros.core._kernels.lie.exp_se3_scalars` (series below its SMALL_ANGLE).
    """
    e = exp_se3_scalars(x[0], x[1], x[2], 0.0, 0.0, 0.0, 1.0)
    for i in range(3):
        for k in range(3):
            out[i, k] = e[3 * i + k]


@njit(cache=True)
def log_into(R, out):
    """
    Write the rotation vector ``xi`` with ``exp xi^ = R``, ``|xi| <= pi``, into ``out`` (3,).

    ``theta = atan2(|a|, (tr R - 1)/2)`` with ``a = vee(R - R^T)/2 = sin(theta) e``.
    For ``cos theta >= 0``: ``xi = theta / sin(theta) a`` (series below LOG_SERIES_ANGLE).
    For ``cos theta < 0`` the axis comes from the symmetric part
    ``(R + R^T)/2 - cos(theta) I = (1 - cos theta) e e^T`` (its largest column,
    normalised), with the sign of ``a``; this is exact up to and at ``theta = pi``, where
    the sign is arbitrary (both vectors are logarithms).
    """
    a0 = 0.5 * (R[2, 1] - R[1, 2])
    a1 = 0.5 * (R[0, 2] - R[2, 0])
    a2 = 0.5 * (R[1, 0] - R[0, 1])
    s = math.sqrt(a0 * a0 + a1 * a1 + a2 * a2)
    c = 0.5 * (R[0, 0] + R[1, 1] + R[2, 2] - 1.0)
    theta = math.atan2(s, c)
    if c >= 0.0:
        if theta < LOG_SERIES_ANGLE:
            t2 = theta * theta
            f = 1.0 + t2 / 6.0 * (1.0 + t2 * 7.0 / 60.0)
        else:
            f = theta / s
        out[0] = f * a0
        out[1] = f * a1
        out[2] = f * a2
        return
    k = 0
    if R[1, 1] > R[k, k]:
        k = 1
    if R[2, 2] > R[k, k]:
        k = 2
    e0 = 0.5 * (R[0, k] + R[k, 0])
    e1 = 0.5 * (R[1, k] + R[k, 1])
    e2 = 0.5 * (R[2, k] + R[k, 2])
    if k == 0:
        e0 = R[0, 0] - c
    elif k == 1:
        e1 = R[1, 1] - c
    else:
        e2 = R[2, 2] - c
    f = theta / math.sqrt(e0 * e0 + e1 * e1 + e2 * e2)
    if e0 * a0 + e1 * a1 + e2 * a2 < 0.0:
        f = -f
    out[0] = f * e0
    out[1] = f * e1
    out[2] = f * e2


@njit(cache=True)
def dexp_into(x, out):
    """Write ``dexp_x = I + ((1 - cos t)/t^2) x^ + ((t - sin t)/t^3) x^2`` ([MT14] eq. (40))."""
    _, b, c = rodrigues_coefficients(math.sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]))
    quadratic_into(x, b, c, out)


@njit(cache=True)
def dexpinv_into(x, out):
    """Write ``dexp_x^-1 = I - x^/2 + ((1 - (t/2) cot(t/2))/t^2) x^2`` ([MT14] eq. (44))."""
    k1 = dexpinv_coefficient(math.sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]))
    quadratic_into(x, -0.5, k1, out)


@njit(cache=True)
def compose_into(R1, R2, out):
    """Write ``R1 @ R2`` into ``out`` (``out`` not an input)."""
    for i in range(3):
        for j in range(3):
            out[i, j] = R1[i, 0] * R2[0, j] + R1[i, 1] * R2[1, j] + R1[i, 2] * R2[2, j]


@njit(cache=True)
def act_into(R, p, out):
    """Write ``R @ p`` into ``out`` (3,) (``out`` not an input)."""
    for i in range(3):
        out[i] = R[i, 0] * p[0] + R[i, 1] * p[1] + R[i, 2] * p[2]


# --------------------------------------------------------------------------- loops
@njit(cache=True)
def _hat_loop(x, out):
    for n in range(x.shape[0]):
        hat_into(x[n], out[n])


@njit(cache=True)
def _vee_loop(M, out):
    for n in range(M.shape[0]):
        vee_into(M[n], out[n])


@njit(cache=True)
def _exp_loop(x, out):
    for n in range(x.shape[0]):
        exp_into(x[n], out[n])


@njit(cache=True)
def _log_loop(R, out):
    for n in range(R.shape[0]):
        log_into(R[n], out[n])


@njit(cache=True)
def _dexp_loop(x, out):
    for n in range(x.shape[0]):
        dexp_into(x[n], out[n])


@njit(cache=True)
def _dexpinv_loop(x, out):
    for n in range(x.shape[0]):
        dexpinv_into(x[n], out[n])


@njit(cache=True)
def _compose_loop(R1, R2, out):
    for n in range(R1.shape[0]):
        compose_into(R1[n], R2[n], out[n])


@njit(cache=True)
def _act_loop(R, p, out):
    for n in range(R.shape[0]):
        act_into(R[n], p[n], out[n])


# --------------------------------------------------------------------------- public API
def hat(x):
    """
    Return the skew matrix of a 3-vector: ``[..., 3] -> [..., 3, 3]``, ``x^ y = x x y``.

    Example: ``hat([1, 2, 3]) = [[0, -3, 2], [3, 0, -1], [-2, 1, 0]]``.
    """
    a, lead = as_batch(x, (3,), 'so3.hat')
    out = np.empty((a.shape[0], 3, 3))
    _hat_loop(a, out)
    return out.reshape(lead + (3, 3))


def vee(M):
    """Inverse of :func:`hat` (of the skew part of ``M``): ``[..., 3, 3] -> [..., 3]``."""
    a, lead = as_batch(M, (3, 3), 'so3.vee', 'M')
    out = np.empty((a.shape[0], 3))
    _vee_loop(a, out)
    return out.reshape(lead + (3,))


def exp(x):
    """
    Rotation matrix of a rotation vector ([MT14] eq. (38)): ``[..., 3] -> [..., 3, 3]``.

    ``x = theta e`` rotates by ``theta`` (rad) about the unit axis ``e`` (right-hand rule).
    Example: ``exp([0, 0, pi/2]) = [[0, -1, 0], [1, 0, 0], [0, 0, 1]]``.
    """
    a, lead = as_batch(x, (3,), 'so3.exp')
    out = np.empty((a.shape[0], 3, 3))
    _exp_loop(a, out)
    return out.reshape(lead + (3, 3))


def log(R):
    """
    Rotation vector of a rotation matrix: ``[..., 3, 3] -> [..., 3]``, ``|log R| <= pi``.

    Inverse of :func:`exp` for ``|x| < pi`` (``log(exp(x)) = x``); at ``|x| = pi`` either
    of ``+-x`` is returned.  No NaN anywhere (see :func:`log_into`).
    """
    a, lead = as_batch(R, (3, 3), 'so3.log', 'R')
    out = np.empty((a.shape[0], 3))
    _log_loop(a, out)
    return out.reshape(lead + (3,))


def dexp(x):
    """
    Right-trivialised differential of exp ([MT14] eqs. (39)-(41)): ``[..., 3] -> [..., 3, 3]``.

    ``dexp_x = sum_k ad_x^k / (k+1)!``; the body angular velocity of ``R = exp x^`` is
    ``omega = dexp(-x) @ x'`` (eq. (42)), the spatial one ``dexp(x) @ x'``.
    Singular at ``|x| = 2 k pi``, ``k >= 1``.
    """
    a, lead = as_batch(x, (3,), 'so3.dexp')
    out = np.empty((a.shape[0], 3, 3))
    _dexp_loop(a, out)
    return out.reshape(lead + (3, 3))


def dexpinv(x):
    """
    Inverse of :func:`dexp` ([MT14] eq. (44)): ``[..., 3] -> [..., 3, 3]``.

    ``dexp_x^-1 = I - x^/2 + (1/12) x^2 + ...`` (Bernoulli series, eq. (43)); so
    ``x' = dexpinv(-x) @ omega`` integrates a body angular velocity.  Valid for
    ``|x| < 2 pi``.
    """
    a, lead = as_batch(x, (3,), 'so3.dexpinv')
    out = np.empty((a.shape[0], 3, 3))
    _dexpinv_loop(a, out)
    return out.reshape(lead + (3, 3))


def Ad(R):
    """Adjoint of SO(3) on so(3) = R^3: the rotation matrix itself, ``[..., 3, 3]`` (a copy)."""
    a, lead = as_batch(R, (3, 3), 'so3.Ad', 'R')
    return a.reshape(lead + (3, 3)).copy()


def ad(x):
    """Adjoint of so(3), ``ad_x y = x x y``: equal to :func:`hat`, ``[..., 3] -> [..., 3, 3]``."""
    a, lead = as_batch(x, (3,), 'so3.ad')
    out = np.empty((a.shape[0], 3, 3))
    _hat_loop(a, out)
    return out.reshape(lead + (3, 3))


def compose(R1, R2):
    """Group product ``R1 @ R2``; leading axes broadcast: ``[..., 3, 3] x [..., 3, 3]``."""
    a, b, lead = as_batch2(R1, (3, 3), R2, (3, 3), 'so3.compose', ('R1', 'R2'))
    out = np.empty((a.shape[0], 3, 3))
    _compose_loop(a, b, out)
    return out.reshape(lead + (3, 3))


def inverse(R):
    """Group inverse ``R^T``: ``[..., 3, 3] -> [..., 3, 3]``."""
    a, lead = as_batch(R, (3, 3), 'so3.inverse', 'R')
    return np.ascontiguousarray(np.swapaxes(a, -1, -2)).reshape(lead + (3, 3))


def act(R, p):
    """Rotate points/vectors, ``R @ p``: ``[..., 3, 3] x [..., 3] -> [..., 3]`` (broadcast)."""
    a, b, lead = as_batch2(R, (3, 3), p, (3,), 'so3.act', ('R', 'p'))
    out = np.empty((a.shape[0], 3))
    _act_loop(a, b, out)
    return out.reshape(lead + (3,))


def random(rng, shape=()):
    """
    Uniformly distributed (Haar) random rotations, ``shape + (3, 3)`` (a test helper).

    ``rng`` is a :class:`numpy.random.Generator`; the rotation of a normalised Gaussian
    quaternion is uniform on SO(3).
    """
    from . import quaternion
    q = rng.standard_normal(shape_tuple(shape) + (4,))
    return quaternion.to_matrix(q)
