"""
Unit quaternions (Euler parameters) for rotations, scalar first ``q = (w, x, y, z)``.

Hamilton convention ([MT14] App. A.4): ``q o p`` is the Hamilton product,
and ``R(q) v = q o (0, v) o q*`` with ``R(q)`` mapping body to world coordinates like
:mod:`liemb_ros.core.lie.so3`.  ``q`` and ``-q`` are the same rotation; functions that choose
(:func:`from_matrix`, :func:`log`) take ``w >= 0``.  ROS messages order ``(x, y, z, w)``:
convert with :func:`from_xyzw` / :func:`to_xyzw` at that boundary only.

The exponential maps a rotation vector ``xi`` (so(3)) to the unit quaternion
``exp xi = (cos(t/2), sin(t/2) xi / t)``, ``t = |xi|``, so that
``to_matrix(exp(xi)) == so3.exp(xi)``.  All functions are batched over leading axes.
"""
import math

import numpy as np
from numba import njit

from ._batch import as_batch, as_batch2

# below this half-angle ratio sin(t/2)/t and atan(x)/x use their Taylor series
QUAT_SERIES = 1e-2


# --------------------------------------------------------------------------- kernels
@njit(cache=True)
def to_matrix_into(q, out):
    """
    Write the rotation matrix of ``q`` (3x3) into ``out``.

    ``R = I + s [[-(y2+z2), xy-wz, xz+wy], [xy+wz, -(x2+z2), yz-wx], [xz-wy, yz+wx, -(x2+y2)]]``
    with ``s = 2/|q|^2``, a rotation for any non-zero ``q`` ([MT14] eq. (73), ``R = D E^T``).
    """
    w = q[0]
    x = q[1]
    y = q[2]
    z = q[3]
    s = 2.0 / (w * w + x * x + y * y + z * z)
    out[0, 0] = 1.0 - s * (y * y + z * z)
    out[0, 1] = s * (x * y - w * z)
    out[0, 2] = s * (x * z + w * y)
    out[1, 0] = s * (x * y + w * z)
    out[1, 1] = 1.0 - s * (x * x + z * z)
    out[1, 2] = s * (y * z - w * x)
    out[2, 0] = s * (x * z - w * y)
    out[2, 1] = s * (y * z + w * x)
    out[2, 2] = 1.0 - s * (x * x + y * y)


@njit(cache=True)
def from_matrix_into(R, out):
    """
    Write the unit quaternion (``w >= 0``) of a rotation matrix into ``out`` (4,).

    Shepperd's method: the largest of ``4w^2 = 1 + tr R`` and ``4x^2 = 1 + 2 R_00 - tr R``
    (etc.) is taken by a square root, the others from the off-diagonal sums and
    differences; the result is normalised.
    """
    tr = R[0, 0] + R[1, 1] + R[2, 2]
    k = -1
    big = tr
    for i in range(3):
        if R[i, i] > big:
            big = R[i, i]
            k = i
    if k == -1:
        w = 0.5 * math.sqrt(max(1.0 + tr, 0.0))
        f = 0.25 / w
        x = (R[2, 1] - R[1, 2]) * f
        y = (R[0, 2] - R[2, 0]) * f
        z = (R[1, 0] - R[0, 1]) * f
    elif k == 0:
        x = 0.5 * math.sqrt(max(1.0 + R[0, 0] - R[1, 1] - R[2, 2], 0.0))
        f = 0.25 / x
        w = (R[2, 1] - R[1, 2]) * f
        y = (R[0, 1] + R[1, 0]) * f
        z = (R[0, 2] + R[2, 0]) * f
    elif k == 1:
        y = 0.5 * math.sqrt(max(1.0 - R[0, 0] + R[1, 1] - R[2, 2], 0.0))
        f = 0.25 / y
        w = (R[0, 2] - R[2, 0]) * f
        x = (R[0, 1] + R[1, 0]) * f
        z = (R[1, 2] + R[2, 1]) * f
    else:
        z = 0.5 * math.sqrt(max(1.0 - R[0, 0] - R[1, 1] + R[2, 2], 0.0))
        f = 0.25 / z
        w = (R[1, 0] - R[0, 1]) * f
        x = (R[0, 2] + R[2, 0]) * f
        y = (R[1, 2] + R[2, 1]) * f
    n = math.sqrt(w * w + x * x + y * y + z * z)
    if w < 0.0:
        n = -n
    out[0] = w / n
    out[1] = x / n
    out[2] = y / n
    out[3] = z / n


@njit(cache=True, inline='always')
def multiply_scalars(p0, p1, p2, p3, q0, q1, q2, q3):
    """Return the Hamilton product ``p o q = (p0 q0 - p.q, p0 q + q0 p + p x q)`` (eq. (70))."""
    return (p0 * q0 - p1 * q1 - p2 * q2 - p3 * q3,
            p0 * q1 + q0 * p1 + p2 * q3 - p3 * q2,
            p0 * q2 + q0 * p2 + p3 * q1 - p1 * q3,
            p0 * q3 + q0 * p3 + p1 * q2 - p2 * q1)


@njit(cache=True)
def multiply_into(p, q, out):
    """Write the Hamilton product ``p o q`` into ``out`` (4,); see :func:`multiply_scalars`."""
    m = multiply_scalars(p[0], p[1], p[2], p[3], q[0], q[1], q[2], q[3])
    for i in range(4):
        out[i] = m[i]


@njit(cache=True, inline='always')
def half_sinc(theta):
    """Return ``sin(t/2) / t`` (series below :data:`QUAT_SERIES`)."""
    if theta < QUAT_SERIES:
        t2 = theta * theta
        return 0.5 - t2 / 48.0 * (1.0 - t2 / 80.0)
    return math.sin(0.5 * theta) / theta


@njit(cache=True)
def exp_into(x, out):
    """Write ``exp xi = (cos(t/2), sin(t/2)/t xi)``, ``t = |xi|``, into ``out`` (4,)."""
    theta = math.sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2])
    f = half_sinc(theta)
    out[0] = math.cos(0.5 * theta)
    out[1] = f * x[0]
    out[2] = f * x[1]
    out[3] = f * x[2]


@njit(cache=True)
def log_into(q, out):
    """
    Write the rotation vector of ``q`` (``|xi| <= pi``; the norm of ``q`` is ignored).

    With ``q`` flipped to ``w >= 0`` and ``n = |(x, y, z)|``:
    ``xi = 2 atan2(n, w) / n (x, y, z)``; ``atan(u)/u`` by its series for small ``u = n/w``.
    """
    s = 1.0 if q[0] >= 0.0 else -1.0
    w = s * q[0]
    n = math.sqrt(q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    if n < QUAT_SERIES * w:
        u2 = (n / w) * (n / w)
        f = 2.0 / w * (1.0 - u2 * (1.0 / 3.0 - u2 * (0.2 - u2 / 7.0)))
    else:
        f = 2.0 * math.atan2(n, w) / n
    f *= s
    out[0] = f * q[1]
    out[1] = f * q[2]
    out[2] = f * q[3]


@njit(cache=True)
def act_into(q, p, out):
    """Write ``R(q) p = p + w t + v x t``, ``t = 2 v x p`` (unit ``q = (w, v)``), into ``out``."""
    t0 = 2.0 * (q[2] * p[2] - q[3] * p[1])
    t1 = 2.0 * (q[3] * p[0] - q[1] * p[2])
    t2 = 2.0 * (q[1] * p[1] - q[2] * p[0])
    out[0] = p[0] + q[0] * t0 + q[2] * t2 - q[3] * t1
    out[1] = p[1] + q[0] * t1 + q[3] * t0 - q[1] * t2
    out[2] = p[2] + q[0] * t2 + q[1] * t1 - q[2] * t0


# --------------------------------------------------------------------------- loops
@njit(cache=True)
def _to_matrix_loop(q, out):
    for n in range(q.shape[0]):
        to_matrix_into(q[n], out[n])


@njit(cache=True)
def _from_matrix_loop(R, out):
    for n in range(R.shape[0]):
        from_matrix_into(R[n], out[n])


@njit(cache=True)
def _multiply_loop(p, q, out):
    for n in range(p.shape[0]):
        multiply_into(p[n], q[n], out[n])


@njit(cache=True)
def _exp_loop(x, out):
    for n in range(x.shape[0]):
        exp_into(x[n], out[n])


@njit(cache=True)
def _log_loop(q, out):
    for n in range(q.shape[0]):
        log_into(q[n], out[n])


@njit(cache=True)
def _act_loop(q, p, out):
    for n in range(q.shape[0]):
        act_into(q[n], p[n], out[n])


# --------------------------------------------------------------------------- public API
def to_matrix(q):
    """
    Rotation matrix of a quaternion ``(w, x, y, z)``: ``[..., 4] -> [..., 3, 3]``.

    ``q`` need not be normalised (``q / |q|`` is used).  Example: ``to_matrix([0, 0, 0, 1])
    = diag(-1, -1, 1)`` (half turn about z).
    """
    a, lead = as_batch(q, (4,), 'quaternion.to_matrix', 'q')
    out = np.empty((a.shape[0], 3, 3))
    _to_matrix_loop(a, out)
    return out.reshape(lead + (3, 3))


def from_matrix(R):
    """Return the unit quaternion (``w >= 0``) of a rotation: ``[..., 3, 3] -> [..., 4]``."""
    a, lead = as_batch(R, (3, 3), 'quaternion.from_matrix', 'R')
    out = np.empty((a.shape[0], 4))
    _from_matrix_loop(a, out)
    return out.reshape(lead + (4,))


def multiply(p, q):
    """Hamilton product ``p o q`` (rotation ``q`` first, then ``p``): ``[..., 4]`` (broadcast)."""
    a, b, lead = as_batch2(p, (4,), q, (4,), 'quaternion.multiply', ('p', 'q'))
    out = np.empty((a.shape[0], 4))
    _multiply_loop(a, b, out)
    return out.reshape(lead + (4,))


def conjugate(q):
    """Conjugate ``(w, -x, -y, -z)`` (the inverse of a unit quaternion): ``[..., 4]``."""
    a, lead = as_batch(q, (4,), 'quaternion.conjugate', 'q')
    return (a * np.array([1.0, -1.0, -1.0, -1.0])).reshape(lead + (4,))


def normalize(q):
    """``q / |q|``: ``[..., 4] -> [..., 4]``; raises ``ValueError`` for a zero quaternion."""
    a, lead = as_batch(q, (4,), 'quaternion.normalize', 'q')
    n = np.sqrt(np.einsum('ij,ij->i', a, a))
    if np.any(n == 0.0):
        raise ValueError('quaternion.normalize: zero quaternion')
    return (a / n[:, None]).reshape(lead + (4,))


def exp(x):
    """
    Return the unit quaternion of a rotation vector: ``[..., 3] -> [..., 4]``.

    ``exp(xi) = (cos(t/2), sin(t/2) xi/t)``, consistent with ``so3.exp``:
    ``to_matrix(exp(xi)) == so3.exp(xi)``.
    """
    a, lead = as_batch(x, (3,), 'quaternion.exp')
    out = np.empty((a.shape[0], 4))
    _exp_loop(a, out)
    return out.reshape(lead + (4,))


def log(q):
    """
    Rotation vector (``|xi| <= pi``) of a quaternion: ``[..., 4] -> [..., 3]``.

    Equal to ``so3.log(to_matrix(q))``; ``exp(log(q)) = q`` for unit ``q`` with ``w >= 0``
    (``-q`` otherwise).
    """
    a, lead = as_batch(q, (4,), 'quaternion.log', 'q')
    out = np.empty((a.shape[0], 3))
    _log_loop(a, out)
    return out.reshape(lead + (3,))


def act(q, p):
    """Rotate vectors by unit quaternions, ``R(q) p``: ``[..., 4] x [..., 3] -> [..., 3]``."""
    a, b, lead = as_batch2(q, (4,), p, (3,), 'quaternion.act', ('q', 'p'))
    out = np.empty((a.shape[0], 3))
    _act_loop(a, b, out)
    return out.reshape(lead + (3,))


def from_xyzw(q):
    """Reorder a ROS ``(x, y, z, w)`` quaternion to ``(w, x, y, z)``: ``[..., 4]``."""
    a, lead = as_batch(q, (4,), 'quaternion.from_xyzw', 'q')
    return np.ascontiguousarray(a[:, [3, 0, 1, 2]]).reshape(lead + (4,))


def to_xyzw(q):
    """Reorder a ``(w, x, y, z)`` quaternion to ROS ``(x, y, z, w)``: ``[..., 4]``."""
    a, lead = as_batch(q, (4,), 'quaternion.to_xyzw', 'q')
    return np.ascontiguousarray(a[:, [1, 2, 3, 0]]).reshape(lead + (4,))
