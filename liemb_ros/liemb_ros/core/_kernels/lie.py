"""
Compiled single-element kernels of SE(3) used by the recursive algorithms.

These are the *one* implementation of the small SE(3) operations: the public,
batched functions of :mod:`liemb_ros.core.lie.se3` call them over the batch axis, and
the O(n) kinematics/dynamics kernels call them body by body.  They never allocate:
every result is written into an ``out`` array given by the caller, and ``out`` may be one
of the inputs (``Ad_apply_into(C, X, X)`` maps ``X`` in place): each kernel reads its
inputs into locals before it writes.

Conventions (fixed for the whole project; docs/theory/conventions.md):

* twists/screws are angular first, ``X = (xi, eta) = (omega, v)``;
* wrenches are moment first, ``W = (m, f)``, so that power is ``W @ V``;
* poses are 4x4 homogeneous matrices ``C = [[R, r], [0, 1]]`` mapping body to
  world coordinates;
* ``Ad_C = [[R, 0], [r~ R, R]]`` ([M18k] eq. (88)), ``(Ad_C X)^ = C X^ C^-1``;
* ``ad_X = [[xi~, 0], [eta~, xi~]]`` ([M18d] eq. (115)), ``ad_X Y = [X, Y]``.

Small-angle branches use Taylor series (docs/theory/conventions.md), so results are
smooth through ``theta = 0``.
"""
import math

import numpy as np
from numba import njit

# below this angle the closed forms of sin(t)/t, (1-cos t)/t^2, (t-sin t)/t^3 lose
# digits to cancellation and their Taylor series are exact to round-off
SMALL_ANGLE = 1e-2


@njit(cache=True, inline='always')
def rodrigues_coefficients(theta):
    """
    Return ``(sin t / t, (1 - cos t) / t^2, (t - sin t) / t^3)`` for ``t = theta >= 0``.

    Series below :data:`SMALL_ANGLE` (errors below 1e-16 there).
    """
    if theta < SMALL_ANGLE:
        t2 = theta * theta
        a = 1.0 - t2 / 6.0 * (1.0 - t2 / 20.0 * (1.0 - t2 / 42.0))
        b = 0.5 - t2 / 24.0 * (1.0 - t2 / 30.0 * (1.0 - t2 / 56.0))
        c = 1.0 / 6.0 - t2 / 120.0 * (1.0 - t2 / 42.0 * (1.0 - t2 / 72.0))
        return a, b, c
    s = math.sin(theta)
    co = math.cos(theta)
    return s / theta, (1.0 - co) / (theta * theta), (theta - s) / (theta * theta * theta)


@njit(cache=True, inline='always')
def exp_se3_scalars(x0, x1, x2, x3, x4, x5, t):
    """
    Return ``exp((X t)^)`` as the 12 scalars ``(R00..R22 row-major, p0, p1, p2)``.

    ``X = (xi, eta)`` is any element of se(3) (not necessarily a unit screw); ``t``
    scales it ([M18k] eqs. (85), (86)).  The translation is ``dexp_xi eta`` with the
    closed form of [MT14] eq. (40), valid for any pitch and any point on the axis.
    Scalars in, scalars out, so the recursive kernels keep everything in registers.

    Joint screws are mostly pure rotations about a unit axis through the origin (R
    joints in their own frame) or pure translations (P joints): those take short cuts
    (no square root, no division; same numbers to round-off), the rest the general form.
    """
    if x3 == 0.0 and x4 == 0.0 and x5 == 0.0 and abs(x0 * x0 + x1 * x1 + x2 * x2 - 1.0) < 1e-15:
        s = math.sin(t)
        b = 1.0 - math.cos(t)  # R = I + s W + (1 - cos t) W^2, W^2 = x x^T - I
        return (1.0 + b * (x0 * x0 - 1.0), -s * x2 + b * x0 * x1, s * x1 + b * x0 * x2,
                s * x2 + b * x0 * x1, 1.0 + b * (x1 * x1 - 1.0), -s * x0 + b * x1 * x2,
                -s * x1 + b * x0 * x2, s * x0 + b * x1 * x2, 1.0 + b * (x2 * x2 - 1.0),
                0.0, 0.0, 0.0)
    if x0 == 0.0 and x1 == 0.0 and x2 == 0.0:
        return (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, x3 * t, x4 * t, x5 * t)
    w0 = x0 * t
    w1 = x1 * t
    w2 = x2 * t
    v0 = x3 * t
    v1 = x4 * t
    v2 = x5 * t
    th2 = w0 * w0 + w1 * w1 + w2 * w2
    a, b, c = rodrigues_coefficients(math.sqrt(th2))
    # W = w~ ; W^2 = w w^T - theta^2 I
    ww00 = w0 * w0 - th2
    ww11 = w1 * w1 - th2
    ww22 = w2 * w2 - th2
    ww01 = w0 * w1
    ww02 = w0 * w2
    ww12 = w1 * w2
    wxv0 = w1 * v2 - w2 * v1
    wxv1 = w2 * v0 - w0 * v2
    wxv2 = w0 * v1 - w1 * v0
    # R = I + a W + b W^2 ;  p = (I + b W + c W^2) v
    return (1.0 + b * ww00, -a * w2 + b * ww01, a * w1 + b * ww02,
            a * w2 + b * ww01, 1.0 + b * ww11, -a * w0 + b * ww12,
            -a * w1 + b * ww02, a * w0 + b * ww12, 1.0 + b * ww22,
            v0 + b * wxv0 + c * (ww00 * v0 + ww01 * v1 + ww02 * v2),
            v1 + b * wxv1 + c * (ww01 * v0 + ww11 * v1 + ww12 * v2),
            v2 + b * wxv2 + c * (ww02 * v0 + ww12 * v1 + ww22 * v2))


@njit(cache=True, inline='always')
def exp_se3_into(X, t, out):
    """Write ``exp((X t)^)`` (4x4) into ``out``; see :func:`exp_se3_scalars`."""
    e = exp_se3_scalars(X[0], X[1], X[2], X[3], X[4], X[5], t)
    for i in range(3):
        for k in range(3):
            out[i, k] = e[3 * i + k]
        out[i, 3] = e[9 + i]
    out[3, 0] = 0.0
    out[3, 1] = 0.0
    out[3, 2] = 0.0
    out[3, 3] = 1.0


@njit(cache=True, inline='always')
def compose_into(C1, C2, out):
    """Write ``C1 @ C2`` of two homogeneous 4x4 poses into ``out`` (may be ``C1`` or ``C2``)."""
    b00, b01, b02, b03 = C2[0, 0], C2[0, 1], C2[0, 2], C2[0, 3]
    b10, b11, b12, b13 = C2[1, 0], C2[1, 1], C2[1, 2], C2[1, 3]
    b20, b21, b22, b23 = C2[2, 0], C2[2, 1], C2[2, 2], C2[2, 3]
    for i in range(3):   # row i of C1 is read before row i of out is written
        a0, a1, a2, a3 = C1[i, 0], C1[i, 1], C1[i, 2], C1[i, 3]
        out[i, 0] = a0 * b00 + a1 * b10 + a2 * b20
        out[i, 1] = a0 * b01 + a1 * b11 + a2 * b21
        out[i, 2] = a0 * b02 + a1 * b12 + a2 * b22
        out[i, 3] = a0 * b03 + a1 * b13 + a2 * b23 + a3
    out[3, 0] = 0.0
    out[3, 1] = 0.0
    out[3, 2] = 0.0
    out[3, 3] = 1.0


@njit(cache=True, inline='always')
def inverse_into(C, out):
    """Write ``C^-1 = [[R^T, -R^T r], [0, 1]]`` ([M18k] eq. (78)) into ``out`` (may be ``C``)."""
    r00, r01, r02, r0 = C[0, 0], C[0, 1], C[0, 2], C[0, 3]
    r10, r11, r12, r1 = C[1, 0], C[1, 1], C[1, 2], C[1, 3]
    r20, r21, r22, r2 = C[2, 0], C[2, 1], C[2, 2], C[2, 3]
    out[0, 0] = r00
    out[0, 1] = r10
    out[0, 2] = r20
    out[1, 0] = r01
    out[1, 1] = r11
    out[1, 2] = r21
    out[2, 0] = r02
    out[2, 1] = r12
    out[2, 2] = r22
    out[0, 3] = -(r00 * r0 + r10 * r1 + r20 * r2)
    out[1, 3] = -(r01 * r0 + r11 * r1 + r21 * r2)
    out[2, 3] = -(r02 * r0 + r12 * r1 + r22 * r2)
    out[3, 0] = 0.0
    out[3, 1] = 0.0
    out[3, 2] = 0.0
    out[3, 3] = 1.0


@njit(cache=True, inline='always')
def Ad_apply_into(C, X, out):
    """Write ``Ad_C X = (R xi, r x (R xi) + R eta)`` into ``out`` ([M18k] eq. (88))."""
    x0 = X[0]
    x1 = X[1]
    x2 = X[2]
    y0 = X[3]
    y1 = X[4]
    y2 = X[5]
    a0 = C[0, 0] * x0 + C[0, 1] * x1 + C[0, 2] * x2
    a1 = C[1, 0] * x0 + C[1, 1] * x1 + C[1, 2] * x2
    a2 = C[2, 0] * x0 + C[2, 1] * x1 + C[2, 2] * x2
    r0 = C[0, 3]
    r1 = C[1, 3]
    r2 = C[2, 3]
    out[3] = r1 * a2 - r2 * a1 + C[0, 0] * y0 + C[0, 1] * y1 + C[0, 2] * y2
    out[4] = r2 * a0 - r0 * a2 + C[1, 0] * y0 + C[1, 1] * y1 + C[1, 2] * y2
    out[5] = r0 * a1 - r1 * a0 + C[2, 0] * y0 + C[2, 1] * y1 + C[2, 2] * y2
    out[0] = a0
    out[1] = a1
    out[2] = a2


@njit(cache=True, inline='always')
def Ad_inv_apply_into(C, X, out):
    """Write ``Ad_C^-1 X = (R^T xi, R^T (eta - r x xi))`` into ``out`` ([M18k] eq. (90))."""
    r0 = C[0, 3]
    r1 = C[1, 3]
    r2 = C[2, 3]
    e0 = X[3] - (r1 * X[2] - r2 * X[1])
    e1 = X[4] - (r2 * X[0] - r0 * X[2])
    e2 = X[5] - (r0 * X[1] - r1 * X[0])
    x0 = X[0]
    x1 = X[1]
    x2 = X[2]
    out[0] = C[0, 0] * x0 + C[1, 0] * x1 + C[2, 0] * x2
    out[1] = C[0, 1] * x0 + C[1, 1] * x1 + C[2, 1] * x2
    out[2] = C[0, 2] * x0 + C[1, 2] * x1 + C[2, 2] * x2
    out[3] = C[0, 0] * e0 + C[1, 0] * e1 + C[2, 0] * e2
    out[4] = C[0, 1] * e0 + C[1, 1] * e1 + C[2, 1] * e2
    out[5] = C[0, 2] * e0 + C[1, 2] * e1 + C[2, 2] * e2


@njit(cache=True, inline='always')
def pose_tuples(C):
    """Return ``(R, r)`` of a pose: its rotation row-major as a 9-tuple, its position a 3-tuple."""
    return ((C[0, 0], C[0, 1], C[0, 2], C[1, 0], C[1, 1], C[1, 2], C[2, 0], C[2, 1], C[2, 2]),
            (C[0, 3], C[1, 3], C[2, 3]))


@njit(cache=True, inline='always')
def put_column(A, c, y):
    """Write the 6-tuple ``y`` into column ``c`` of ``A`` (6, n) (constant indexes: no switch)."""
    A[0, c] = y[0]
    A[1, c] = y[1]
    A[2, c] = y[2]
    A[3, c] = y[3]
    A[4, c] = y[4]
    A[5, c] = y[5]


@njit(cache=True, inline='always')
def spatial_to(rep, R, r, V):
    """
    Return the spatial twist ``V`` of a frame with pose ``(R, r)`` in representation ``rep``.

    The one change of twist representation from the spatial one ([M18k] Table 3, §4.5),
    for a twist or a Jacobian column alike.  ``V = (ω, v)`` in the world frame at the world
    origin; ``rep`` 0..3 (:data:`~.layout.REPRESENTATIONS`): body ``Ad_C^-1 V =
    (Rᵀω, Rᵀ(v - r × ω))`` ([M18k] eq. (90)), spatial ``V``, hybrid ``(ω, v - r × ω)``
    (the velocity of the frame's origin, world axes), mixed ``(Rᵀω, v - r × ω)``.
    ``R`` row-major 9-tuple, ``r`` 3-tuple, ``V`` and the result 6-tuples
    (:func:`pose_tuples`): scalars in registers, no array.
    """
    w0, w1, w2, v0, v1, v2 = V
    if rep == 1:
        return V
    r0, r1, r2 = r
    e0 = v0 - (r1 * w2 - r2 * w1)
    e1 = v1 - (r2 * w0 - r0 * w2)
    e2 = v2 - (r0 * w1 - r1 * w0)
    if rep == 2:
        return (w0, w1, w2, e0, e1, e2)
    R00, R01, R02, R10, R11, R12, R20, R21, R22 = R
    b0 = R00 * w0 + R10 * w1 + R20 * w2
    b1 = R01 * w0 + R11 * w1 + R21 * w2
    b2 = R02 * w0 + R12 * w1 + R22 * w2
    if rep == 3:
        return (b0, b1, b2, e0, e1, e2)
    return (b0, b1, b2, R00 * e0 + R10 * e1 + R20 * e2, R01 * e0 + R11 * e1 + R21 * e2,
            R02 * e0 + R12 * e1 + R22 * e2)


@njit(cache=True, inline='always')
def body_to(rep, R, r, V):
    """
    Return the body-fixed twist ``V`` of a frame with pose ``(R, r)`` in representation ``rep``.

    The change of representation from the body-fixed one ([M18k] Table 3): body ``V``,
    mixed ``(ω, R v)``, hybrid ``(R ω, R v)``, spatial ``Ad_C V = (R ω, R v + r × R ω)``
    ([M18k] eq. (90)).  Arguments as :func:`spatial_to`.
    """
    if rep == 0:
        return V
    x0, x1, x2, y0, y1, y2 = V
    R00, R01, R02, R10, R11, R12, R20, R21, R22 = R
    v0 = R00 * y0 + R01 * y1 + R02 * y2
    v1 = R10 * y0 + R11 * y1 + R12 * y2
    v2 = R20 * y0 + R21 * y1 + R22 * y2
    if rep == 3:
        return (x0, x1, x2, v0, v1, v2)
    w0 = R00 * x0 + R01 * x1 + R02 * x2
    w1 = R10 * x0 + R11 * x1 + R12 * x2
    w2 = R20 * x0 + R21 * x1 + R22 * x2
    if rep == 2:
        return (w0, w1, w2, v0, v1, v2)
    r0, r1, r2 = r
    return (w0, w1, w2, v0 + r1 * w2 - r2 * w1, v1 + r2 * w0 - r0 * w2, v2 + r0 * w1 - r1 * w0)


@njit(cache=True, inline='always')
def to_spatial(rep, R, r, V):
    """
    Return a twist of a frame with pose ``(R, r)`` given in representation ``rep``, as spatial.

    The inverse of :func:`spatial_to`: body ``Ad_C V`` (:func:`body_to`), hybrid
    ``(ω, v + r × ω)``, mixed ``(R ω, v + r × R ω)``.
    """
    if rep == 0 or rep == 1:
        return body_to(1 if rep == 0 else 0, R, r, V)
    w0, w1, w2, v0, v1, v2 = V
    if rep == 3:
        R00, R01, R02, R10, R11, R12, R20, R21, R22 = R
        a0 = R00 * w0 + R01 * w1 + R02 * w2
        a1 = R10 * w0 + R11 * w1 + R12 * w2
        a2 = R20 * w0 + R21 * w1 + R22 * w2
        w0 = a0
        w1 = a1
        w2 = a2
    r0, r1, r2 = r
    return (w0, w1, w2, v0 + (r1 * w2 - r2 * w1), v1 + (r2 * w0 - r0 * w2),
            v2 + (r0 * w1 - r1 * w0))


@njit(cache=True, nogil=True)
def change_representation_into(C, V, source, target, out):
    """
    ``out[k]`` = the twist ``V[k]`` of a frame with pose ``C[k]`` from ``source`` to ``target``.

    ``C`` (n, 4, 4) or (1, 4, 4) (one pose for all), ``V`` and ``out`` (n, 6); ``source``,
    ``target`` representation indices.  Body and spatial sources map directly
    (:func:`body_to`, :func:`spatial_to`), the others through the spatial one.
    """
    for k in range(V.shape[0]):
        R, r = pose_tuples(C[k if C.shape[0] != 1 else 0])
        x = (V[k, 0], V[k, 1], V[k, 2], V[k, 3], V[k, 4], V[k, 5])
        if source == target:
            y = x
        elif source == 0:
            y = body_to(target, R, r, x)
        else:
            y = spatial_to(target, R, r, x if source == 1 else to_spatial(source, R, r, x))
        out[k, 0] = y[0]
        out[k, 1] = y[1]
        out[k, 2] = y[2]
        out[k, 3] = y[3]
        out[k, 4] = y[4]
        out[k, 5] = y[5]


@njit(cache=True, inline='always')
def AdT_apply_into(C, W, out):
    """
    Write ``Ad_C^T W`` into ``out`` (pull a wrench back through ``C``).

    A wrench ``W = (m, f)`` given in the frame reached through ``C`` is expressed in
    the frame ``C`` starts from: ``W_1 = Ad_C^T W_0`` ([M18d] eq. (120)).
    """
    r0 = C[0, 3]
    r1 = C[1, 3]
    r2 = C[2, 3]
    f0 = W[3]
    f1 = W[4]
    f2 = W[5]
    # m' = R^T (m + f x r) ... Ad^T = [[R^T, -R^T r~], [0, R^T]] -> m' = R^T (m - r x f)
    m0 = W[0] - (r1 * f2 - r2 * f1)
    m1 = W[1] - (r2 * f0 - r0 * f2)
    m2 = W[2] - (r0 * f1 - r1 * f0)
    out[0] = C[0, 0] * m0 + C[1, 0] * m1 + C[2, 0] * m2
    out[1] = C[0, 1] * m0 + C[1, 1] * m1 + C[2, 1] * m2
    out[2] = C[0, 2] * m0 + C[1, 2] * m1 + C[2, 2] * m2
    out[3] = C[0, 0] * f0 + C[1, 0] * f1 + C[2, 0] * f2
    out[4] = C[0, 1] * f0 + C[1, 1] * f1 + C[2, 1] * f2
    out[5] = C[0, 2] * f0 + C[1, 2] * f1 + C[2, 2] * f2


@njit(cache=True, inline='always')
def Ad_invT_scalars(C, W):
    """Return ``Ad_C^-T W = (R m + r x (R f), R f)`` as six scalars (wrench pushed forward)."""
    m0 = W[0]
    m1 = W[1]
    m2 = W[2]
    f0 = C[0, 0] * W[3] + C[0, 1] * W[4] + C[0, 2] * W[5]
    f1 = C[1, 0] * W[3] + C[1, 1] * W[4] + C[1, 2] * W[5]
    f2 = C[2, 0] * W[3] + C[2, 1] * W[4] + C[2, 2] * W[5]
    r0 = C[0, 3]
    r1 = C[1, 3]
    r2 = C[2, 3]
    return (C[0, 0] * m0 + C[0, 1] * m1 + C[0, 2] * m2 + r1 * f2 - r2 * f1,
            C[1, 0] * m0 + C[1, 1] * m1 + C[1, 2] * m2 + r2 * f0 - r0 * f2,
            C[2, 0] * m0 + C[2, 1] * m1 + C[2, 2] * m2 + r0 * f1 - r1 * f0,
            f0, f1, f2)


@njit(cache=True, inline='always')
def Ad_invT_apply_into(C, W, out):
    """Write ``Ad_C^-T W`` (:func:`Ad_invT_scalars`) into ``out`` (6,)."""
    out[0], out[1], out[2], out[3], out[4], out[5] = Ad_invT_scalars(C, W)


@njit(cache=True, inline='always')
def Ad_invT_add_into(C, W, out):
    """Add ``Ad_C^-T W`` (:func:`Ad_invT_scalars`) to ``out`` (6,): no scratch vector."""
    a0, a1, a2, a3, a4, a5 = Ad_invT_scalars(C, W)
    out[0] += a0
    out[1] += a1
    out[2] += a2
    out[3] += a3
    out[4] += a4
    out[5] += a5


@njit(cache=True, inline='always')
def ad_apply_into(X, Y, out):
    """Write the Lie bracket ``[X, Y] = ad_X Y = (xi1 x xi2, eta1 x xi2 + xi1 x eta2)``."""
    a0 = X[1] * Y[2] - X[2] * Y[1]
    a1 = X[2] * Y[0] - X[0] * Y[2]
    a2 = X[0] * Y[1] - X[1] * Y[0]
    b0 = X[4] * Y[2] - X[5] * Y[1] + X[1] * Y[5] - X[2] * Y[4]
    b1 = X[5] * Y[0] - X[3] * Y[2] + X[2] * Y[3] - X[0] * Y[5]
    b2 = X[3] * Y[1] - X[4] * Y[0] + X[0] * Y[4] - X[1] * Y[3]
    out[0] = a0
    out[1] = a1
    out[2] = a2
    out[3] = b0
    out[4] = b1
    out[5] = b2


@njit(cache=True, inline='always')
def adT_apply_into(X, W, out):
    """
    Write ``ad_X^T W`` for a twist ``X = (w, v)`` and wrench ``W = (m, f)``.

    ``ad_X^T = [[-w~, -v~], [0, -w~]]`` so ``ad_X^T W = (m x w + f x v, f x w)``;
    the Euler-Poincare equation reads ``M V' - ad_V^T M V = W`` ([MT14] eq. (20)).
    """
    m0 = W[1] * X[2] - W[2] * X[1] + W[4] * X[5] - W[5] * X[4]
    m1 = W[2] * X[0] - W[0] * X[2] + W[5] * X[3] - W[3] * X[5]
    m2 = W[0] * X[1] - W[1] * X[0] + W[3] * X[4] - W[4] * X[3]
    f0 = W[4] * X[2] - W[5] * X[1]
    f1 = W[5] * X[0] - W[3] * X[2]
    f2 = W[3] * X[1] - W[4] * X[0]
    out[0] = m0
    out[1] = m1
    out[2] = m2
    out[3] = f0
    out[4] = f1
    out[5] = f2


@njit(cache=True, inline='always')
def Ad_matrix_into(C, out):
    """Write the 6x6 matrix ``Ad_C = [[R, 0], [r~ R, R]]`` into ``out``."""
    r0 = C[0, 3]
    r1 = C[1, 3]
    r2 = C[2, 3]
    for i in range(3):
        for j in range(3):
            out[i, j] = C[i, j]
            out[i + 3, j + 3] = C[i, j]
            out[i, j + 3] = 0.0
    for j in range(3):
        out[3, j] = r1 * C[2, j] - r2 * C[1, j]
        out[4, j] = r2 * C[0, j] - r0 * C[2, j]
        out[5, j] = r0 * C[1, j] - r1 * C[0, j]


@njit(cache=True, inline='always')
def ad_matrix_into(X, out):
    """Write the 6x6 matrix ``ad_X = [[xi~, 0], [eta~, xi~]]`` into ``out``."""
    out[:, :] = 0.0
    for k in range(2):
        o = 3 * k
        out[o + 0, o + 1] = -X[2]
        out[o + 0, o + 2] = X[1]
        out[o + 1, o + 0] = X[2]
        out[o + 1, o + 2] = -X[0]
        out[o + 2, o + 0] = -X[1]
        out[o + 2, o + 1] = X[0]
    out[3, 1] = -X[5]
    out[3, 2] = X[4]
    out[4, 0] = X[5]
    out[4, 2] = -X[3]
    out[5, 0] = -X[4]
    out[5, 1] = X[3]


def empty_pose():
    """Return a fresh 4x4 identity pose (for callers of the ``*_into`` kernels)."""
    return np.eye(4)
