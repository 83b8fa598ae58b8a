"""
State spaces ``G x R^k`` for Munthe-Kaas Runge-Kutta ([MT14] App. B, [MT13] §2-3).

Theory: docs/theory/integrators.md; references: docs/theory/README.md.

A state is **one flat float64 array**; a space says how it is cut into factors and how the
two maps the RKMK method needs act on it:

* ``exp_mul(y, psi)``: the right update ``y exp(psi)`` with the *exact* group exponential
  ([MT14] eq. (83), ``g_i = g_{i-1} exp Phi``); on a vector factor it is ``y + psi``;
* ``dexpinv_neg(psi, k)``: ``dexp^-1_{-psi} k``, the left-trivialised inverse tangent map
  ([MT14] eq. (82), note the minus sign); the identity on vector factors
  ([MT13] eqs. (14), (28), (33)).

Factors (algebra coordinates angular first):

=============  ==========================  =======================  ================
factor         stored as (flat, row-major)  algebra element          velocity
=============  ==========================  =======================  ================
``SE3()``      4x4 pose, 16 floats          twist ``(omega, v)``      body-fixed twist
``SO3R3()``    4x4 ``[[R, r], [0, 1]]``     ``(xi, u)``               mixed ``(omega^b, r')``
``SO3()``      3x3 rotation, 9 floats       rotation vector           body ``omega``
``Vector(k)``  k floats                     k floats                  ``y'``
=============  ==========================  =======================  ================

``Product(f1, f2, ...)`` concatenates factors (nested products are flattened), e.g. a
floating-base robot ``Product(SE3(), Vector(nq), Vector(6), Vector(nv))``.
Every space has ``size`` (state length), ``dim`` (algebra length), ``split(y)``
(views: 4x4 / 3x3 / vectors), ``join(*parts)``, ``identity()``, ``exp_mul``,
``dexpinv_neg`` and ``error_scale(y0, y1, atol, rtol)`` for step-size control.
The maps are compiled (numba) kernels looping over the factors.
"""
import math

import numpy as np
from numba import njit

from ...core.lie import so3
from ...core._kernels.lie import exp_se3_scalars
from ...core.lie.se3 import dexpinv_coefficients

VECTOR, SE3_KIND, SO3R3_KIND, SO3_KIND = 0, 1, 2, 3
_SIZE = {SE3_KIND: 16, SO3R3_KIND: 16, SO3_KIND: 9}
_DIM = {SE3_KIND: 6, SO3R3_KIND: 6, SO3_KIND: 3}
_NAMES = {VECTOR: 'R^{}', SE3_KIND: 'SE(3)', SO3R3_KIND: 'SO(3)xR^3', SO3_KIND: 'SO(3)'}


# --------------------------------------------------------------------------- kernels
@njit(cache=True)
def exp_mul_kernel(kinds, yoff, aoff, dims, y, psi, out):
    """
    Write ``y exp(psi)`` factor by factor into ``out``; return the largest rotation angle.

    SE(3): ``C exp(X^)``, ``exp`` of [MT14] eqs. (51)-(52); SO(3)xR^3: ``(R exp xi^, r + u)``
    (eq. (65)); SO(3): ``R exp xi^``; vectors: ``y + psi``.
    """
    biggest = 0.0
    for f in range(kinds.shape[0]):
        k = kinds[f]
        o = yoff[f]
        a = aoff[f]
        if k == VECTOR:
            for i in range(dims[f]):
                out[o + i] = y[o + i] + psi[a + i]
            continue
        th = math.sqrt(psi[a] ** 2 + psi[a + 1] ** 2 + psi[a + 2] ** 2)
        biggest = max(biggest, th)
        if k == SE3_KIND:
            e = exp_se3_scalars(psi[a], psi[a + 1], psi[a + 2],
                                psi[a + 3], psi[a + 4], psi[a + 5], 1.0)
        else:
            e = exp_se3_scalars(psi[a], psi[a + 1], psi[a + 2], 0.0, 0.0, 0.0, 1.0)
        if k == SO3_KIND:
            for i in range(3):
                for j in range(3):
                    out[o + 3 * i + j] = (y[o + 3 * i] * e[j] + y[o + 3 * i + 1] * e[3 + j]
                                          + y[o + 3 * i + 2] * e[6 + j])
            continue
        for i in range(3):
            r0 = y[o + 4 * i]
            r1 = y[o + 4 * i + 1]
            r2 = y[o + 4 * i + 2]
            for j in range(3):
                out[o + 4 * i + j] = r0 * e[j] + r1 * e[3 + j] + r2 * e[6 + j]
            if k == SE3_KIND:
                out[o + 4 * i + 3] = y[o + 4 * i + 3] + r0 * e[9] + r1 * e[10] + r2 * e[11]
            else:
                out[o + 4 * i + 3] = y[o + 4 * i + 3] + psi[a + 3 + i]
        out[o + 12] = 0.0
        out[o + 13] = 0.0
        out[o + 14] = 0.0
        out[o + 15] = 1.0
    return biggest


@njit(cache=True)
def _cross(a0, a1, a2, b0, b1, b2):
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


@njit(cache=True)
def dexpinv_neg_kernel(kinds, aoff, dims, psi, k, out):
    """
    Write ``dexp^-1_{-psi} k`` factor by factor into ``out`` ([MT14] eqs. (44), (56)).

    With ``A = I + psi^/2 + k1 psi^2`` (``k1 = (1 - (t/2)cot(t/2))/t^2``) the SO(3) block is
    ``A``; SE(3) is ``[[A, 0], [U, A]]`` with the block ``U`` of [MT14] eq. (57) (misprints
    corrected, docs/theory/errata.md#mt14-eq57) evaluated at ``-psi``:
    ``U k_w = eta x k_w / 2 + k1 (eta x (xi x k_w) + xi x (eta x k_w))
    + (xi.eta) u2 xi x (xi x k_w)``; SO(3)xR^3 leaves the translation part alone
    (eq. (68)); vectors are copied.
    """
    for f in range(kinds.shape[0]):
        kd = kinds[f]
        a = aoff[f]
        if kd == VECTOR:
            for i in range(dims[f]):
                out[a + i] = k[a + i]
            continue
        x0 = psi[a]
        x1 = psi[a + 1]
        x2 = psi[a + 2]
        th = math.sqrt(x0 * x0 + x1 * x1 + x2 * x2)
        k1, u2 = dexpinv_coefficients(th)
        so3.quadratic_apply_into(psi[a:a + 3], 0.5, k1, k[a:a + 3], out[a:a + 3])
        if kd == SO3_KIND:
            continue
        if kd == SO3R3_KIND:
            for i in range(3):
                out[a + 3 + i] = k[a + 3 + i]
            continue
        e0 = psi[a + 3]
        e1 = psi[a + 4]
        e2 = psi[a + 5]
        w0 = k[a]
        w1 = k[a + 1]
        w2 = k[a + 2]
        so3.quadratic_apply_into(psi[a:a + 3], 0.5, k1, k[a + 3:a + 6], out[a + 3:a + 6])
        c0, c1, c2 = _cross(x0, x1, x2, w0, w1, w2)        # xi x k_w
        d0, d1, d2 = _cross(e0, e1, e2, w0, w1, w2)        # eta x k_w
        p0, p1, p2 = _cross(e0, e1, e2, c0, c1, c2)        # eta x (xi x k_w)
        q0, q1, q2 = _cross(x0, x1, x2, d0, d1, d2)        # xi x (eta x k_w)
        s0, s1, s2 = _cross(x0, x1, x2, c0, c1, c2)        # xi x (xi x k_w)
        g = (x0 * e0 + x1 * e1 + x2 * e2) * u2
        out[a + 3] += 0.5 * d0 + k1 * (p0 + q0) + g * s0
        out[a + 4] += 0.5 * d1 + k1 * (p1 + q1) + g * s1
        out[a + 5] += 0.5 * d2 + k1 * (p2 + q2) + g * s2


# --------------------------------------------------------------------------- spaces
class Product:
    """
    Direct product of factors; the state is one flat array, the algebra another.

    ``Product(SE3(), Vector(6))`` is the state space of one rigid body with body-fixed
    twist, ``S = SE(3) x R^6`` of [MT13] §3 (product ``(C1, V1)(C2, V2) = (C1 C2,
    V1 + V2)``).  Nested products are flattened.
    """

    def __init__(self, *factors):
        flat = []
        for f in factors:
            flat.extend(f.factors if isinstance(f, Product) else [f])
        if not flat:
            raise ValueError('Product needs at least one factor')
        self.factors = tuple(flat)
        self.kinds = np.array([f.kind for f in flat], dtype=np.int64)
        sizes = [f.size for f in flat]
        dims = [f.dim for f in flat]
        self.yoff = np.cumsum([0] + sizes[:-1]).astype(np.int64)
        self.aoff = np.cumsum([0] + dims[:-1]).astype(np.int64)
        self.dims = np.array(dims, dtype=np.int64)
        self.size = int(sum(sizes))
        self.dim = int(sum(dims))
        # per algebra coordinate: 0 vector, 1 rotation, 2 translation (for error scales)
        role = []
        for f in flat:
            role.extend([0] * f.dim if f.kind == VECTOR else
                        [1, 1, 1] + ([2, 2, 2] if f.dim == 6 else []))
        self._role = np.array(role, dtype=np.int64)
        self._yidx = np.concatenate([f._yindex() + o for f, o in zip(flat, self.yoff)])

    def __repr__(self):
        return ' x '.join(repr(f) for f in self.factors)

    def identity(self):
        """Return the identity element (identity rotations/poses, zero vectors)."""
        return np.concatenate([f._identity() for f in self.factors])

    def split(self, y):
        """Return views of the factors of ``y``: (4, 4), (3, 3) or (k,) arrays."""
        y = np.asarray(y)
        out = []
        for f, o in zip(self.factors, self.yoff):
            seg = y[..., o:o + f.size]
            out.append(seg.reshape(y.shape[:-1] + f.shape))
        return out

    def split_algebra(self, x):
        """Return views of the algebra (velocity) segments of ``x``, one per factor."""
        x = np.asarray(x)
        return [x[..., o:o + d] for o, d in zip(self.aoff, self.dims)]

    def join(self, *parts):
        """Return the flat state made of one part per factor (poses as 4x4, ...)."""
        if len(parts) != len(self.factors):
            raise ValueError(f'{self!r} has {len(self.factors)} factors, got {len(parts)} parts')
        out = []
        for f, p in zip(self.factors, parts):
            p = np.asarray(p, dtype=float)
            if p.shape != f.shape:
                raise ValueError(f'factor {f!r} needs shape {f.shape}, got {p.shape}')
            out.append(p.reshape(-1))
        return np.concatenate(out)

    def exp_mul(self, y, psi, out=None):
        """Return ``y exp(psi)`` (right update with the exact exponential)."""
        if out is None:
            out = np.empty(self.size)
        exp_mul_kernel(self.kinds, self.yoff, self.aoff, self.dims, y, psi, out)
        return out

    def dexpinv_neg(self, psi, k, out=None):
        """Return ``dexp^-1_{-psi} k`` (left-trivialised, [MT14] eq. (82))."""
        if out is None:
            out = np.empty(self.dim)
        dexpinv_neg_kernel(self.kinds, self.aoff, self.dims, psi, k, out)
        return out

    def error_scale(self, y0, y1, atol, rtol):
        """
        Return per-algebra-coordinate scales ``atol + rtol * size`` for error control.

        ``size`` is ``max(|y0_i|, |y1_i|)`` on vector coordinates, 1 on rotation
        coordinates (radians) and the larger position magnitude ``max(|r0|, |r1|)`` on
        the translation coordinates of SE(3) and SO(3)xR^3 factors.
        """
        a = np.abs(y0[self._yidx])
        b = np.abs(y1[self._yidx])
        size = np.where(self._role == 1, 1.0, np.maximum(a, b))
        return atol + rtol * size


class _Factor:
    kind = VECTOR

    def __repr__(self):
        return _NAMES[self.kind]


class SE3(_Factor, Product):
    """SE(3) with body-fixed twists ``(omega, v)``; state a 4x4 pose ([MT14] eq. (16b))."""

    kind = SE3_KIND
    size, dim, shape = 16, 6, (4, 4)

    def __init__(self):
        Product.__init__(self, _Leaf(self))

    def _identity(self):
        return np.eye(4).reshape(-1)

    def _yindex(self):
        # algebra coordinate -> state entry used for its error scale (translation r_i)
        return np.array([0, 0, 0, 3, 7, 11])


class SO3R3(SE3):
    """SO(3)xR^3 with mixed velocities ``(omega^b, r')``; stored as a 4x4 ``[[R, r], [0, 1]]``."""

    kind = SO3R3_KIND


class SO3(_Factor, Product):
    """SO(3) with body-fixed angular velocity; state a 3x3 rotation matrix."""

    kind = SO3_KIND
    size, dim, shape = 9, 3, (3, 3)

    def __init__(self):
        Product.__init__(self, _Leaf(self))

    def _identity(self):
        return np.eye(3).reshape(-1)

    def _yindex(self):
        return np.array([0, 0, 0])


class Vector(_Factor, Product):
    """The vector space ``R^k`` (additive group: ``exp`` = identity, ``dexp^-1`` = I)."""

    kind = VECTOR

    def __init__(self, k):
        k = int(k)
        if k < 1:
            raise ValueError(f'Vector needs a positive dimension, got {k}')
        self.size = self.dim = k
        self.shape = (k,)
        Product.__init__(self, _Leaf(self))

    def __repr__(self):
        return f'R^{self.dim}'

    def _identity(self):
        return np.zeros(self.dim)

    def _yindex(self):
        return np.arange(self.dim)


class _Leaf:
    """Adapter so that a single factor is also a one-factor :class:`Product`."""

    def __init__(self, factor):
        self._f = factor
        self.kind = factor.kind
        self.size = factor.size
        self.dim = factor.dim
        self.shape = factor.shape

    def __repr__(self):
        return repr(self._f)

    def _identity(self):
        return self._f._identity()

    def _yindex(self):
        return self._f._yindex()
