"""
Forward kinematics, twists, Jacobians and their time derivatives (seeds 004, 002 §2-3).

Four twist representations of a link with pose ``C = (R, r)`` (design.md):

=========  =====================  ===========================================
name       twist                  meaning
=========  =====================  ===========================================
body       V^b = (ω^b, v^b)       C^-1 Ċ: both in the link frame, v of the link origin
spatial    V^s = (ω^s, v^s)       Ċ C^-1: both in the world frame, v of the link point
                                  at the world origin
hybrid     V^h = (ω^s, ṙ)         world frame, velocity of the link origin
mixed      V^m = (ω^b, ṙ)         ω in the link frame, ṙ in the world frame
=========  =====================  ===========================================

Pinocchio names: LOCAL = body, WORLD = spatial, LOCAL_WORLD_ALIGNED = hybrid (its
vectors are linear first).

Algorithm (compiled kernels, O(path length)): the poses ``C_j`` of the bodies on the
link's support path come from the body-fixed POE recursion ``C_j = C_λ(j) A_{λ(j),j}
exp(^j X_j q_j)`` (seed 004 eq. (8)); the spatial Jacobian columns are the current joint
screws ``J^s_j = Ad_{C_j} ^j X_j`` (eq. (29)), the spatial twist accumulates as
``V^s_j = V^s_λ(j) + J^s_j q̇_j`` (eq. (31)) and the column derivatives are
``J̇^s_j = [V^s_j, J^s_j]`` (seed 002 eq. (16)).  The other representations follow by the
maps of seed 004 Table 3 and their time derivatives:

* body:   ``J^b = Ad_C^-1 J^s``,                 ``J̇^b = Ad_C^-1 (J̇^s - ad_{V^s} J^s)``
* hybrid: ``J^h = Ad_{-r} J^s``,                 ``J̇^h = Ad_{-r} J̇^s - (0, ṙ × ω_J)``
* mixed:  ``J^m = diag(Rᵀ, I) J^h``,             ``J̇^m = diag(Rᵀ, I) J̇^h - (Rᵀ(ω^s × ω_J), 0)``

:func:`jacobian` alone (no ``J̇``) takes a second, independent route that is cheaper: one
sweep from the link to the root builds the link's pose in each body frame on the way,
``P_λ(j) = A_{λ(j),j} exp(^j X_j q_j) P_j``, and the body-fixed columns are
``J^b_j = Ad_{P_j}^-1 ^j X_j`` (seed 004 eqs. (17), (20)); no support path is stored
and no world poses of the intermediate bodies are formed.  Tests compare both routes
with Pinocchio.

Floating base: the first six columns belong to the base body-fixed twist; their spatial
columns are ``Ad_{C_base}`` and their derivatives ``ad_{V^s_base} Ad_{C_base}``.

Every function accepts ``q`` of shape ``(nq,)`` or ``(B, nq)`` (and ``qd``/``qdd`` of
shape ``(nv,)`` / ``(B, nv)``) and returns a leading batch axis for batched input.

Compiled-call cost: a call between two numba functions passes each array argument as a
reference-counted struct, about 25 ns per array (a kernel with the model's arrays and
its work arrays takes 10 to 20).  The per-configuration kernels are therefore inlined
(``inline='always'``) into their single-call entry points and batch loops, which halves
a batched forward kinematics; kernels that are large or compiled at many call sites
(the derivative sweep, ABA, the spatial/hybrid RNEA forms) stay calls, because inlining
them tripled the compile time of a cold cache for a few percent.
"""
import numpy as np
from numba import njit

from .lie._core import compose_into, exp_se3_scalars
from .model.model import REPRESENTATIONS

_REP = {name: i for i, name in enumerate(REPRESENTATIONS)}
_EYE4 = np.eye(4)
_EYE4.setflags(write=False)
_F64 = np.dtype(np.float64)

OK = 0
BAD_Q = 1
BAD_QD = 2
BAD_BASE = 3
BAD_QDD = 4
_STATUS = {BAD_Q: 'q', BAD_QD: 'qd', BAD_BASE: 'base_pose', BAD_QDD: 'qdd'}


# --------------------------------------------------------------------------- kernels
@njit(cache=True, inline='always')
def _finite(a):
    """Tell whether every element of ``a`` is finite (``x * 0`` is NaN exactly for NaN/inf)."""
    acc = 0.0
    for x in a.flat:  # no branch per element: vectorizes (5 ns for 25 numbers, not 90)
        acc += x * 0.0
    return acc == 0.0


@njit(cache=True, inline='always')
def _unpack_kin(ki, kf):
    """``model.kin`` as views of the packed ``model.packed_int`` and ``model.packed_float``."""
    nb = ki[0]
    return (ki[3:3 + nb], kf[:6 * nb].reshape((nb, 6)),
            kf[6 * nb:22 * nb].reshape((nb, 4, 4)), ki[3 + nb:3 + 2 * nb],
            kf[22 * nb:23 * nb], kf[23 * nb:24 * nb], ki[1])


@njit(cache=True, inline='always')
def _unpack_links(ki, kf):
    """``(link_body, link_offset)`` as views of the packed model arrays."""
    nb = ki[0]
    nl = ki[2]
    o = 60 * nb + 39
    return ki[3 + 2 * nb:3 + 2 * nb + nl], kf[o:o + 16 * nl].reshape((nl, 4, 4))


@njit(cache=True)
def _support_path(parent, body, path):
    """Fill ``path[:n]`` with the bodies root -> ``body``; return ``n``."""
    n = 0
    b = body
    while b >= 0:
        path[n] = b
        n += 1
        b = parent[b]
    for i in range(n // 2):
        t = path[i]
        path[i] = path[n - 1 - i]
        path[n - 1 - i] = t
    return n


@njit(cache=True, inline='always')
def _joint_pose(kin, q, j):
    """
    ``C_{λ(j),j} = A_{λ(j),j} exp(^j X_j θ_j)`` (seed 004 eq. (8)) as 12 scalars.

    Row-major top 3x4 of the relative pose, ``θ_j = q_mult[j] q[q_index[j]] + q_offset[j]``;
    the short cuts for the usual joint screws are in :func:`exp_se3_scalars`.
    """
    _, X, A, q_index, q_mult, q_offset, _ = kin
    e = exp_se3_scalars(X[j, 0], X[j, 1], X[j, 2], X[j, 3], X[j, 4], X[j, 5],
                        q_mult[j] * q[q_index[j]] + q_offset[j])
    a00 = A[j, 0, 0]
    a01 = A[j, 0, 1]
    a02 = A[j, 0, 2]
    a10 = A[j, 1, 0]
    a11 = A[j, 1, 1]
    a12 = A[j, 1, 2]
    a20 = A[j, 2, 0]
    a21 = A[j, 2, 1]
    a22 = A[j, 2, 2]
    return (a00 * e[0] + a01 * e[3] + a02 * e[6],
            a00 * e[1] + a01 * e[4] + a02 * e[7],
            a00 * e[2] + a01 * e[5] + a02 * e[8],
            a00 * e[9] + a01 * e[10] + a02 * e[11] + A[j, 0, 3],
            a10 * e[0] + a11 * e[3] + a12 * e[6],
            a10 * e[1] + a11 * e[4] + a12 * e[7],
            a10 * e[2] + a11 * e[5] + a12 * e[8],
            a10 * e[9] + a11 * e[10] + a12 * e[11] + A[j, 1, 3],
            a20 * e[0] + a21 * e[3] + a22 * e[6],
            a20 * e[1] + a21 * e[4] + a22 * e[7],
            a20 * e[2] + a21 * e[5] + a22 * e[8],
            a20 * e[9] + a21 * e[10] + a22 * e[11] + A[j, 2, 3])


@njit(cache=True, inline='always')
def _pose_step(kin, q, j, C):
    """
    ``C[j+1] = C[λ(j)+1] A_{λ(j),j} exp(^j X_j θ_j)`` (seed 004 eq. (8)).

    ``C`` holds the base pose in slot 0 and body ``j`` in slot ``j + 1``; the relative
    pose (:func:`_joint_pose`) stays in registers.
    """
    g00, g01, g02, g03, g10, g11, g12, g13, g20, g21, g22, g23 = _joint_pose(kin, q, j)
    p = kin[0][j] + 1
    s = j + 1
    for i in range(3):
        c0 = C[p, i, 0]
        c1 = C[p, i, 1]
        c2 = C[p, i, 2]
        C[s, i, 0] = c0 * g00 + c1 * g10 + c2 * g20
        C[s, i, 1] = c0 * g01 + c1 * g11 + c2 * g21
        C[s, i, 2] = c0 * g02 + c1 * g12 + c2 * g22
        C[s, i, 3] = c0 * g03 + c1 * g13 + c2 * g23 + C[p, i, 3]
    C[s, 3, 0] = 0.0
    C[s, 3, 1] = 0.0
    C[s, 3, 2] = 0.0
    C[s, 3, 3] = 1.0


@njit(cache=True)
def _poses_with_base(kin, q, base):
    """Return ``C`` of shape (nb + 1, 4, 4): the base pose, then every body's pose."""
    nb = kin[0].shape[0]
    C = np.empty((nb + 1, 4, 4))
    C[0] = base
    for j in range(nb):
        _pose_step(kin, q, j, C)
    return C


@njit(cache=True, inline='always')
def _forward_kinematics(kin, q, base, link_body, link_offset, out, C):
    """
    All link poses (world frame) into ``out[l]``; returns a status code.

    ``C`` (nb + 1, 4, 4) is work space: the base pose, then the body poses.
    """
    if not _finite(q):
        return BAD_Q
    if not _finite(base):
        return BAD_BASE
    C[0] = base
    for j in range(C.shape[0] - 1):
        _pose_step(kin, q, j, C)
    for li in range(link_body.shape[0]):
        compose_into(C[link_body[li] + 1], link_offset[li], out[li])
    return OK


@njit(cache=True)
def _forward_kinematics_into(ki, kf, q, base, out):
    link_body, link_offset = _unpack_links(ki, kf)
    return _forward_kinematics(_unpack_kin(ki, kf), q, base, link_body, link_offset, out,
                               np.empty((ki[0] + 1, 4, 4)))


@njit(cache=True)
def _forward_kinematics_plain(ki, kf, q, out):
    """Single call without base pose (fewer arguments to unbox)."""
    link_body, link_offset = _unpack_links(ki, kf)
    return _forward_kinematics(_unpack_kin(ki, kf), q, _EYE4, link_body, link_offset, out,
                               np.empty((ki[0] + 1, 4, 4)))


@njit(cache=True)
def _forward_kinematics_batch(kin, Q, base, link_body, link_offset, out):
    C = np.empty((kin[0].shape[0] + 1, 4, 4))
    for k in range(Q.shape[0]):
        st = _forward_kinematics(kin, Q[k], base[k], link_body, link_offset, out[k], C)
        if st != OK:
            return st
    return OK


@njit(cache=True, inline='always')
def _to_parent(kin, q, b, p00, p01, p02, p03, p10, p11, p12, p13, p20, p21, p22, p23):
    """
    Move a pose from the frame of body ``b`` into its parent's: ``P <- A_{λ(b),b} exp(X θ) P``.

    Seed 004 eq. (8) multiplied from the tip.  ``P`` is the top 3x4 of a pose as 12
    scalars, row-major, in and out, so the tip-to-root sweeps keep it in registers.
    """
    g00, g01, g02, g03, g10, g11, g12, g13, g20, g21, g22, g23 = _joint_pose(kin, q, b)
    n00 = g00 * p00 + g01 * p10 + g02 * p20
    n01 = g00 * p01 + g01 * p11 + g02 * p21
    n02 = g00 * p02 + g01 * p12 + g02 * p22
    n03 = g00 * p03 + g01 * p13 + g02 * p23 + g03
    n10 = g10 * p00 + g11 * p10 + g12 * p20
    n11 = g10 * p01 + g11 * p11 + g12 * p21
    n12 = g10 * p02 + g11 * p12 + g12 * p22
    n13 = g10 * p03 + g11 * p13 + g12 * p23 + g13
    n20 = g20 * p00 + g21 * p10 + g22 * p20
    n21 = g20 * p01 + g21 * p11 + g22 * p21
    n22 = g20 * p02 + g21 * p12 + g22 * p22
    n23 = g20 * p03 + g21 * p13 + g22 * p23 + g23
    return n00, n01, n02, n03, n10, n11, n12, n13, n20, n21, n22, n23


@njit(cache=True, inline='always')
def _link_pose(kin, q, base, body, T, out):
    """
    Pose of the link frame ``C_body T`` into ``out``; returns a status code.

    One sweep from the link to the root, ``P <- A_{λ(j),j} exp(^j X_j q_j) P`` from
    ``P = T`` (the same body-fixed POE, seed 004 eq. (8), multiplied from the tip), the
    3x4 pose in registers; then ``C = base P``.
    """
    parent = kin[0]
    if not _finite(q):
        return BAD_Q
    if not _finite(base):
        return BAD_BASE
    (p00, p01, p02, p03, p10, p11, p12, p13,
     p20, p21, p22, p23) = (T[0, 0], T[0, 1], T[0, 2], T[0, 3], T[1, 0], T[1, 1], T[1, 2],
                            T[1, 3], T[2, 0], T[2, 1], T[2, 2], T[2, 3])
    b = body
    while b >= 0:
        (p00, p01, p02, p03, p10, p11, p12, p13,
         p20, p21, p22, p23) = _to_parent(kin, q, b, p00, p01, p02, p03, p10, p11, p12, p13,
                                          p20, p21, p22, p23)
        b = parent[b]
    for i in range(3):
        c0 = base[i, 0]
        c1 = base[i, 1]
        c2 = base[i, 2]
        out[i, 0] = c0 * p00 + c1 * p10 + c2 * p20
        out[i, 1] = c0 * p01 + c1 * p11 + c2 * p21
        out[i, 2] = c0 * p02 + c1 * p12 + c2 * p22
        out[i, 3] = c0 * p03 + c1 * p13 + c2 * p23 + base[i, 3]
    out[3, 0] = 0.0
    out[3, 1] = 0.0
    out[3, 2] = 0.0
    out[3, 3] = 1.0
    return OK


@njit(cache=True)
def _link_pose_into(ki, kf, q, base, body, T, out):
    return _link_pose(_unpack_kin(ki, kf), q, base, body, T, out)


@njit(cache=True)
def _link_pose_link(ki, kf, q, li, out):
    """:func:`_link_pose_into` for link index ``li``, no base pose (fewer arguments to unbox)."""
    link_body, link_offset = _unpack_links(ki, kf)
    return _link_pose(_unpack_kin(ki, kf), q, _EYE4, link_body[li], link_offset[li], out)


@njit(cache=True)
def _link_pose_batch(kin, Q, base, body, T, out):
    for k in range(Q.shape[0]):
        st = _link_pose(kin, Q[k], base[k], body, T, out[k])
        if st != OK:
            return st
    return OK


@njit(cache=True, inline='always')
def _bracket_col(V, J, c, out):
    """``out = [V, J[:, c]]`` (seed 002 eq. (114)), scalars only."""
    x0 = J[0, c]
    x1 = J[1, c]
    x2 = J[2, c]
    y0 = J[3, c]
    y1 = J[4, c]
    y2 = J[5, c]
    out[0] = V[1] * x2 - V[2] * x1
    out[1] = V[2] * x0 - V[0] * x2
    out[2] = V[0] * x1 - V[1] * x0
    out[3] = V[4] * x2 - V[5] * x1 + V[1] * y2 - V[2] * y1
    out[4] = V[5] * x0 - V[3] * x2 + V[2] * y0 - V[0] * y2
    out[5] = V[3] * x1 - V[4] * x0 + V[0] * y1 - V[1] * y0


@njit(cache=True, inline='always')
def _jacobian(kin, q, qd, base, body, T, rep, deriv, J, Jd):
    """
    Jacobian (and with ``deriv`` its time derivative) of the link frame ``C_body T``.

    Writes ``J``, ``Jd`` (6, nv) in representation ``rep``.
    Returns a status code (non-finite input).  The sweep works in the world-aligned frame at
    the base origin (poses, spatial columns and twists relative to it), so the body, hybrid
    and mixed results do not lose ``|r| eps`` to a base far from the world origin; the
    spatial ones are shifted to the world origin at the end (``v += r_base × ω``).
    """
    parent, X, A_rel, q_index, q_mult, q_offset, nbase = kin
    if not _finite(q):
        return BAD_Q
    if deriv and not _finite(qd):
        return BAD_QD
    if not _finite(base):
        return BAD_BASE
    nb = parent.shape[0]
    nv = J.shape[1]
    path = np.empty(nb, dtype=np.int64)
    n = _support_path(parent, body, path)
    work = np.empty(16 * nb + 44)  # one allocation: C, tmp, Vs, CL (the link pose)
    C = work[:16 * nb + 16].reshape((nb + 1, 4, 4))
    for r in range(3):   # the base pose in the world-aligned frame at its own origin
        C[0, r, 0] = base[r, 0]
        C[0, r, 1] = base[r, 1]
        C[0, r, 2] = base[r, 2]
        C[0, r, 3] = 0.0
        C[0, 3, r] = 0.0
    C[0, 3, 3] = 1.0
    tmp = work[16 * nb + 16:16 * nb + 22]
    Vs = work[16 * nb + 22:16 * nb + 28]
    CL = work[16 * nb + 28:].reshape((4, 4))
    Vs[:] = 0.0
    J[:, :] = 0.0
    if deriv:
        Jd[:, :] = 0.0
    # floating base columns: Ad_{C[0]} e_k = (R e_k, 0), (0, R e_k); derivative [V^s_base, .]
    if nbase > 0:
        for k in range(3):
            for r in range(3):
                J[r, k] = base[r, k]
                J[r + 3, k + 3] = base[r, k]
        if deriv:
            for k in range(6):
                for r in range(6):
                    Vs[r] += J[r, k] * qd[k]
            for k in range(6):
                _bracket_col(Vs, J, k, tmp)
                for r in range(6):
                    Jd[r, k] = tmp[r]
    for k in range(n):
        j = path[k]
        _pose_step(kin, q, j, C)
        s = j + 1
        # J^s_j = Ad_{C_j} ^j X_j (seed 004 eq. (29)): (R e, r x (R e) + R eta)
        a0 = C[s, 0, 0] * X[j, 0] + C[s, 0, 1] * X[j, 1] + C[s, 0, 2] * X[j, 2]
        a1 = C[s, 1, 0] * X[j, 0] + C[s, 1, 1] * X[j, 1] + C[s, 1, 2] * X[j, 2]
        a2 = C[s, 2, 0] * X[j, 0] + C[s, 2, 1] * X[j, 1] + C[s, 2, 2] * X[j, 2]
        b0 = C[s, 0, 0] * X[j, 3] + C[s, 0, 1] * X[j, 4] + C[s, 0, 2] * X[j, 5]
        b1 = C[s, 1, 0] * X[j, 3] + C[s, 1, 1] * X[j, 4] + C[s, 1, 2] * X[j, 5]
        b2 = C[s, 2, 0] * X[j, 3] + C[s, 2, 1] * X[j, 4] + C[s, 2, 2] * X[j, 5]
        r0 = C[s, 0, 3]
        r1 = C[s, 1, 3]
        r2 = C[s, 2, 3]
        c = nbase + q_index[j]
        m = q_mult[j]
        J[0, c] += m * a0
        J[1, c] += m * a1
        J[2, c] += m * a2
        J[3, c] += m * (r1 * a2 - r2 * a1 + b0)
        J[4, c] += m * (r2 * a0 - r0 * a2 + b1)
        J[5, c] += m * (r0 * a1 - r1 * a0 + b2)
        if deriv:
            rate = m * qd[c]
            Vs[0] += rate * a0
            Vs[1] += rate * a1
            Vs[2] += rate * a2
            Vs[3] += rate * (r1 * a2 - r2 * a1 + b0)      # eq. (31)
            Vs[4] += rate * (r2 * a0 - r0 * a2 + b1)
            Vs[5] += rate * (r0 * a1 - r1 * a0 + b2)
            # J̇^s_j = [V^s_j, J^s_j] (seed 002 eq. (16)); J^s_j = m * (a, r x a + b)
            tmp[0] = a0
            tmp[1] = a1
            tmp[2] = a2
            tmp[3] = r1 * a2 - r2 * a1 + b0
            tmp[4] = r2 * a0 - r0 * a2 + b1
            tmp[5] = r0 * a1 - r1 * a0 + b2
            Jd[0, c] += m * (Vs[1] * tmp[2] - Vs[2] * tmp[1])
            Jd[1, c] += m * (Vs[2] * tmp[0] - Vs[0] * tmp[2])
            Jd[2, c] += m * (Vs[0] * tmp[1] - Vs[1] * tmp[0])
            Jd[3, c] += m * (Vs[4] * tmp[2] - Vs[5] * tmp[1] + Vs[1] * tmp[5] - Vs[2] * tmp[4])
            Jd[4, c] += m * (Vs[5] * tmp[0] - Vs[3] * tmp[2] + Vs[2] * tmp[3] - Vs[0] * tmp[5])
            Jd[5, c] += m * (Vs[3] * tmp[1] - Vs[4] * tmp[0] + Vs[0] * tmp[4] - Vs[1] * tmp[3])
    compose_into(C[body + 1], T, CL)
    if rep == 1:   # from the base origin o to the world origin: Ad_{(I, o)}, v += o × ω
        o0 = base[0, 3]
        o1 = base[1, 3]
        o2 = base[2, 3]
        for c in range(nv):
            J[3, c] += o1 * J[2, c] - o2 * J[1, c]
            J[4, c] += o2 * J[0, c] - o0 * J[2, c]
            J[5, c] += o0 * J[1, c] - o1 * J[0, c]
            if deriv:
                Jd[3, c] += o1 * Jd[2, c] - o2 * Jd[1, c]
                Jd[4, c] += o2 * Jd[0, c] - o0 * Jd[2, c]
                Jd[5, c] += o0 * Jd[1, c] - o1 * Jd[0, c]
        return OK
    r0 = CL[0, 3]
    r1 = CL[1, 3]
    r2 = CL[2, 3]
    # ṙ = v^s + ω^s × r
    rd0 = Vs[3] + Vs[1] * r2 - Vs[2] * r1
    rd1 = Vs[4] + Vs[2] * r0 - Vs[0] * r2
    rd2 = Vs[5] + Vs[0] * r1 - Vs[1] * r0
    for c in range(nv):
        w0 = J[0, c]
        w1 = J[1, c]
        w2 = J[2, c]
        if rep == 0:
            if deriv:
                # J̇^b = Ad_C^-1 (J̇^s - [V^s, J^s])
                _bracket_col(Vs, J, c, tmp)
                for r in range(6):
                    tmp[r] = Jd[r, c] - tmp[r]
                _ad_inv_col(CL, tmp, Jd, c)
            for r in range(6):
                tmp[r] = J[r, c]
            _ad_inv_col(CL, tmp, J, c)
            continue
        # linear rows: v - r × ω
        J[3, c] -= r1 * w2 - r2 * w1
        J[4, c] -= r2 * w0 - r0 * w2
        J[5, c] -= r0 * w1 - r1 * w0
        if deriv:
            a0 = Jd[0, c]
            a1 = Jd[1, c]
            a2 = Jd[2, c]
            Jd[3, c] -= r1 * a2 - r2 * a1 + rd1 * w2 - rd2 * w1
            Jd[4, c] -= r2 * a0 - r0 * a2 + rd2 * w0 - rd0 * w2
            Jd[5, c] -= r0 * a1 - r1 * a0 + rd0 * w1 - rd1 * w0
        if rep == 3:
            if deriv:
                # Rᵀ(ω̇_J - ω^s × ω_J)
                b0 = Jd[0, c] - (Vs[1] * w2 - Vs[2] * w1)
                b1 = Jd[1, c] - (Vs[2] * w0 - Vs[0] * w2)
                b2 = Jd[2, c] - (Vs[0] * w1 - Vs[1] * w0)
                Jd[0, c] = CL[0, 0] * b0 + CL[1, 0] * b1 + CL[2, 0] * b2
                Jd[1, c] = CL[0, 1] * b0 + CL[1, 1] * b1 + CL[2, 1] * b2
                Jd[2, c] = CL[0, 2] * b0 + CL[1, 2] * b1 + CL[2, 2] * b2
            J[0, c] = CL[0, 0] * w0 + CL[1, 0] * w1 + CL[2, 0] * w2
            J[1, c] = CL[0, 1] * w0 + CL[1, 1] * w1 + CL[2, 1] * w2
            J[2, c] = CL[0, 2] * w0 + CL[1, 2] * w1 + CL[2, 2] * w2
    return OK


@njit(cache=True, inline='always')
def _jacobian_tip(kin, q, base, body, T, rep, J):
    """
    Jacobian of the link frame ``C_body T`` by one sweep from the link to the root.

    The body-fixed columns ``J^b_j = Ad^{-1}_{P_j} X_j`` (seed 004 eqs. (17), (20)), ``P_j`` the
    pose of the link frame in the frame of body ``j``, built on the way down as
    ``P_{λ(j)} = A_{λ(j),j} exp(X_j θ_j) P_j``: no support path and no world poses of
    the intermediate bodies.  Other representations by one map per column at the end:
    hybrid ``(R ω^b, R v^b)``, mixed ``(ω^b, R v^b)``, spatial ``Ad_C J^b``.  The
    independent route :func:`_jacobian` (world poses, spatial columns) also gives ``J̇``.
    Returns a status code (non-finite input).
    """
    parent, X, _, q_index, q_mult, _, nbase = kin
    if not _finite(q):
        return BAD_Q
    if not _finite(base):
        return BAD_BASE
    nv = J.shape[1]
    for r in range(6):
        for c in range(nv):
            J[r, c] = 0.0
    # P = T (rows 0..2), as scalars
    (p00, p01, p02, p03, p10, p11, p12, p13,
     p20, p21, p22, p23) = (T[0, 0], T[0, 1], T[0, 2], T[0, 3], T[1, 0], T[1, 1], T[1, 2],
                            T[1, 3], T[2, 0], T[2, 1], T[2, 2], T[2, 3])
    b = body
    while b >= 0:
        # column: Ad_P^-1 X = (Rᵀ ω, Rᵀ (v - p × ω))
        w0 = X[b, 0]
        w1 = X[b, 1]
        w2 = X[b, 2]
        e0 = X[b, 3] - (p13 * w2 - p23 * w1)
        e1 = X[b, 4] - (p23 * w0 - p03 * w2)
        e2 = X[b, 5] - (p03 * w1 - p13 * w0)
        c = nbase + q_index[b]
        m = q_mult[b]
        J[0, c] += m * (p00 * w0 + p10 * w1 + p20 * w2)
        J[1, c] += m * (p01 * w0 + p11 * w1 + p21 * w2)
        J[2, c] += m * (p02 * w0 + p12 * w1 + p22 * w2)
        J[3, c] += m * (p00 * e0 + p10 * e1 + p20 * e2)
        J[4, c] += m * (p01 * e0 + p11 * e1 + p21 * e2)
        J[5, c] += m * (p02 * e0 + p12 * e1 + p22 * e2)
        (p00, p01, p02, p03, p10, p11, p12, p13,
         p20, p21, p22, p23) = _to_parent(kin, q, b, p00, p01, p02, p03, p10, p11, p12, p13,
                                          p20, p21, p22, p23)
        b = parent[b]
    if nbase > 0:
        # the base's body-fixed twist: columns Ad_P^-1 (P: link frame in the base frame)
        for k in range(3):
            # e_k angular: (Rᵀ e_k, Rᵀ (-p × e_k)); e_k linear: (0, Rᵀ e_k)
            x0 = 1.0 if k == 0 else 0.0
            x1 = 1.0 if k == 1 else 0.0
            x2 = 1.0 if k == 2 else 0.0
            e0 = -(p13 * x2 - p23 * x1)
            e1 = -(p23 * x0 - p03 * x2)
            e2 = -(p03 * x1 - p13 * x0)
            J[0, k] = p00 * x0 + p10 * x1 + p20 * x2
            J[1, k] = p01 * x0 + p11 * x1 + p21 * x2
            J[2, k] = p02 * x0 + p12 * x1 + p22 * x2
            J[3, k] = p00 * e0 + p10 * e1 + p20 * e2
            J[4, k] = p01 * e0 + p11 * e1 + p21 * e2
            J[5, k] = p02 * e0 + p12 * e1 + p22 * e2
            J[0, k + 3] = 0.0
            J[1, k + 3] = 0.0
            J[2, k + 3] = 0.0
            J[3, k + 3] = p00 * x0 + p10 * x1 + p20 * x2
            J[4, k + 3] = p01 * x0 + p11 * x1 + p21 * x2
            J[5, k + 3] = p02 * x0 + p12 * x1 + p22 * x2
    if rep == 0:
        return OK
    # the link pose C = base P: rotation R, position r
    R00 = base[0, 0] * p00 + base[0, 1] * p10 + base[0, 2] * p20
    R01 = base[0, 0] * p01 + base[0, 1] * p11 + base[0, 2] * p21
    R02 = base[0, 0] * p02 + base[0, 1] * p12 + base[0, 2] * p22
    R10 = base[1, 0] * p00 + base[1, 1] * p10 + base[1, 2] * p20
    R11 = base[1, 0] * p01 + base[1, 1] * p11 + base[1, 2] * p21
    R12 = base[1, 0] * p02 + base[1, 1] * p12 + base[1, 2] * p22
    R20 = base[2, 0] * p00 + base[2, 1] * p10 + base[2, 2] * p20
    R21 = base[2, 0] * p01 + base[2, 1] * p11 + base[2, 2] * p21
    R22 = base[2, 0] * p02 + base[2, 1] * p12 + base[2, 2] * p22
    r0 = base[0, 0] * p03 + base[0, 1] * p13 + base[0, 2] * p23 + base[0, 3]
    r1 = base[1, 0] * p03 + base[1, 1] * p13 + base[1, 2] * p23 + base[1, 3]
    r2 = base[2, 0] * p03 + base[2, 1] * p13 + base[2, 2] * p23 + base[2, 3]
    for c in range(nv):
        x0 = J[0, c]
        x1 = J[1, c]
        x2 = J[2, c]
        y0 = J[3, c]
        y1 = J[4, c]
        y2 = J[5, c]
        v0 = R00 * y0 + R01 * y1 + R02 * y2
        v1 = R10 * y0 + R11 * y1 + R12 * y2
        v2 = R20 * y0 + R21 * y1 + R22 * y2
        J[3, c] = v0
        J[4, c] = v1
        J[5, c] = v2
        if rep == 3:  # mixed: (ω^b, R v^b)
            continue
        w0 = R00 * x0 + R01 * x1 + R02 * x2
        w1 = R10 * x0 + R11 * x1 + R12 * x2
        w2 = R20 * x0 + R21 * x1 + R22 * x2
        J[0, c] = w0
        J[1, c] = w1
        J[2, c] = w2
        if rep == 1:  # spatial: v^s = R v^b + r × (R ω^b)
            J[3, c] = v0 + r1 * w2 - r2 * w1
            J[4, c] = v1 + r2 * w0 - r0 * w2
            J[5, c] = v2 + r0 * w1 - r1 * w0
    return OK


@njit(cache=True, inline='always')
def _ad_inv_col(C, x, out, c):
    """``out[:, c] = Ad_C^-1 x = (Rᵀ ω, Rᵀ (v - r × ω))`` (seed 004 eq. (90))."""
    r0 = C[0, 3]
    r1 = C[1, 3]
    r2 = C[2, 3]
    e0 = x[3] - (r1 * x[2] - r2 * x[1])
    e1 = x[4] - (r2 * x[0] - r0 * x[2])
    e2 = x[5] - (r0 * x[1] - r1 * x[0])
    for i in range(3):
        out[i, c] = C[0, i] * x[0] + C[1, i] * x[1] + C[2, i] * x[2]
        out[i + 3, c] = C[0, i] * e0 + C[1, i] * e1 + C[2, i] * e2


@njit(cache=True)
def _body_twists(kin, q, qd, base, rep, C, V):
    """
    Twists of all bodies by the recursion of their own representation (seed 004).

    body (15):   V_i = Ad_{C_i^-1 C_λ} V_λ + X_i θ̇_i
    spatial (31): V_i = V_λ + Ad_{C_i} X_i θ̇_i
    hybrid (58): V_i = Ad_{r_λ - r_i} V_λ + Ad_{R_i} X_i θ̇_i
    mixed (68):  V_i = [[R_i^T R_λ, 0], [(r_λ - r_i)~ R_λ, I]] V_λ
                 + diag(R_i^T, I) Ad_{R_i} X_i θ̇_i
    ``C`` (nb + 1, 4, 4) receives the poses relative to the base origin (world axes; slot 0:
    the base, ``(R_base, 0)``), so that the differences ``r_λ - r_i`` keep their digits far
    from the world origin; ``V`` (nb + 1, 6) the twists (slot 0: base), spatial ones at the
    world origin.
    """
    parent, X, A_rel, q_index, q_mult, q_offset, nbase = kin
    if not _finite(q):
        return BAD_Q
    if not _finite(qd):
        return BAD_QD
    if not _finite(base):
        return BAD_BASE
    nb = parent.shape[0]
    C[0] = base
    C[0, :3, 3] = 0.0
    o = np.ascontiguousarray(base[:3, 3])
    Vb = np.zeros(6)
    if nbase > 0:
        Vb[:] = qd[:6]
    R = np.ascontiguousarray(base[:3, :3])
    if rep == 0:
        V[0] = Vb
    elif rep == 1:
        V[0, :3] = R @ Vb[:3]
        V[0, 3:] = np.cross(base[:3, 3], V[0, :3]) + R @ Vb[3:]
    elif rep == 2:
        V[0, :3] = R @ Vb[:3]
        V[0, 3:] = R @ Vb[3:]
    else:
        V[0, :3] = Vb[:3]
        V[0, 3:] = R @ Vb[3:]
    for j in range(nb):
        _pose_step(kin, q, j, C)
        s = j + 1
        p = parent[j] + 1
        rate = q_mult[j] * qd[nbase + q_index[j]]
        Ri = np.ascontiguousarray(C[s, :3, :3])
        Rp = np.ascontiguousarray(C[p, :3, :3])
        d = C[p, :3, 3] - C[s, :3, 3]        # r_{i,λ} = r_λ - r_i
        wp = V[p, :3].copy()
        vp = V[p, 3:].copy()
        e = X[j, :3].copy()
        eta = X[j, 3:].copy()
        if rep == 0:
            Rrel = np.ascontiguousarray(Ri.T) @ Rp  # C_i^-1 C_λ = (R_i^T R_λ, R_i^T d)
            w = Rrel @ wp
            V[s, :3] = w + e * rate
            V[s, 3:] = np.cross(np.ascontiguousarray(Ri.T) @ d, w) + Rrel @ vp + eta * rate
        elif rep == 1:
            a = Ri @ e
            V[s, :3] = wp + a * rate
            V[s, 3:] = vp + (np.cross(C[s, :3, 3] + o, a) + Ri @ eta) * rate
        elif rep == 2:
            V[s, :3] = wp + Ri @ e * rate
            V[s, 3:] = np.cross(d, wp) + vp + Ri @ eta * rate
        else:
            V[s, :3] = np.ascontiguousarray(Ri.T) @ (Rp @ wp) + e * rate
            V[s, 3:] = np.cross(d, Rp @ wp) + vp + Ri @ eta * rate
    return OK


@njit(cache=True)
def _raise_status(st):
    if st == BAD_Q:
        raise ValueError('q contains NaN or inf')
    if st == BAD_QD:
        raise ValueError('qd contains NaN or inf')
    if st == BAD_BASE:
        raise ValueError('base_pose contains NaN or inf')


@njit(cache=True)
def _jacobian_into(ki, kf, q, qd, base, body, T, rep, deriv, J, Jd):
    """Single configuration: ``J`` (and ``Jd = J̇`` if ``deriv``); returns a status."""
    return _jacobian(_unpack_kin(ki, kf), q, qd, base, body, T, rep, deriv, J, Jd)


@njit(cache=True)
def _jacobian_link(ki, kf, q, li, rep, J):
    """:func:`_jacobian_tip_into` for link index ``li`` and no base pose (fewer arguments)."""
    link_body, link_offset = _unpack_links(ki, kf)
    return _jacobian_tip(_unpack_kin(ki, kf), q, _EYE4, link_body[li], link_offset[li], rep, J)


@njit(cache=True)
def _jacobian_tip_into(ki, kf, q, base, body, T, rep, J):
    """Single configuration: ``J`` of the link frame ``C_body T`` by :func:`_jacobian_tip`."""
    return _jacobian_tip(_unpack_kin(ki, kf), q, base, body, T, rep, J)


@njit(cache=True)
def _jacobian_batch(kin, Q, QD, base, body, T, rep, deriv, out):
    """Batch of configurations: ``out[k, 0] = J_k`` (and ``out[k, 1] = J̇_k``)."""
    for k in range(Q.shape[0]):
        if deriv:
            st = _jacobian(kin, Q[k], QD[k], base[k], body, T, rep, deriv, out[k, 0], out[k, 1])
        else:
            st = _jacobian_tip(kin, Q[k], base[k], body, T, rep, out[k, 0])
        if st != OK:
            _raise_status(st)
    return out


@njit(cache=True)
def _link_twist_into(ki, kf, q, qd, base, body, T, rep, V):
    """Single configuration: the twist ``V = J qd`` (6,) of the link frame in ``rep``."""
    if not _finite(qd):
        return BAD_QD
    J = np.empty((6, qd.shape[0]))
    st = _jacobian(_unpack_kin(ki, kf), q, qd, base, body, T, rep, False, J, J)
    for r in range(6):
        acc = 0.0
        for c in range(J.shape[1]):
            acc += J[r, c] * qd[c]
        V[r] = acc
    return st


# --------------------------------------------------------------------------- wrappers
def _entry_point(kernel, args):
    """Return the compiled entry point of ``kernel`` for the types of ``args``, else ``kernel``."""
    try:
        return kernel.overloads[tuple(kernel.typeof_pyval(a) for a in args)].entry_point
    except (AttributeError, KeyError):  # NUMBA_DISABLE_JIT=1: a plain Python function
        return kernel


def _fast(model, key, kernel, args):
    """
    Return ``kernel(*args)``, after the first call through the entry point cached under ``key``.

    numba's dispatcher resolves the type of every argument (each element of ``model.kin``
    included) on every call; the entry point of the overload the first call compiled or
    loaded from the cache skips that (design.md, "Performance design").  The entry point
    does not check types, so ``key`` and ``model`` must fix the numba type of every
    argument: arrays are the model's own, module constants, or canonical (float64, C
    contiguous, aligned, writeable: :func:`_as_batch`, :func:`_base`), and ``key`` says
    which of the alternatives each argument is.
    """
    entry = model.entry_points.get(key)
    if entry is None:
        out = kernel(*args)
        model.entry_points[key] = _entry_point(kernel, args)
        return out
    return entry(*args)


def _canonical(x):
    """``x`` as a float64, C-contiguous, aligned, writeable ndarray (a copy unless it is one)."""
    if x.__class__ is np.ndarray and x.dtype is _F64 and x.flags.carray:
        return x
    return np.array(x, dtype=_F64, order='C')


def _as_batch(model, x, n, name):
    """``(array, batched)`` with x of shape (n,) or (B, n) as a canonical float64 array."""
    a = x if (x.__class__ is np.ndarray and x.dtype is _F64 and x.flags.carray) else (
        np.array(x, dtype=_F64, order='C'))
    if a.ndim == 1:
        if a.shape[0] == n:
            return a, False
    elif a.ndim == 2 and a.shape[1] == n:
        return a, True
    raise ValueError(f"{name} must have shape ({n},) or (B, {n}) for model '{model.name}', "
                     f'got {a.shape}')


def _base(model, base_pose, B):
    if base_pose is None:
        return _EYE4 if B is None else np.broadcast_to(_EYE4, (B, 4, 4))
    b = _canonical(base_pose)
    if B is None:
        if b.shape != (4, 4):
            raise ValueError(f'base_pose must be a 4x4 pose, got shape {b.shape}')
        return b
    if b.shape == (4, 4):
        return np.broadcast_to(b, (B, 4, 4))
    if b.shape != (B, 4, 4):
        raise ValueError(f'base_pose must have shape (4, 4) or ({B}, 4, 4), got {b.shape}')
    return b


def _rep(representation):
    try:
        return _REP[representation]
    except (KeyError, TypeError):
        raise ValueError(f'unknown representation {representation!r}; expected one of '
                         f"{', '.join(REPRESENTATIONS)}") from None


def _check(status):
    if status != OK:
        raise ValueError(f'{_STATUS[status]} contains NaN or inf')


def _link(model, link):
    """``(body, T)``: the body a link is attached to and the link frame in that body."""
    try:
        return model.link_frames[link]
    except (KeyError, TypeError):
        li = model.link_index(link)  # raises the helpful error, or accepts an index
        return int(model.link_body[li]), model.link_offset[li]


def link_pose(model, q, link, base_pose=None):
    """
    Pose ``C = [[R, r], [0, 1]]`` of ``link`` in the world frame, (4, 4) or (B, 4, 4).

    Body-fixed POE over the link's support path (seed 004 eq. (8), equal to the spatial
    POE (10)); ``base_pose`` is the pose of the base (floating base, or where a fixed
    robot is mounted).
    """
    q, batched = _as_batch(model, q, model.nq, 'q')
    li = model.link_ids.get(link) if link.__class__ is str else None
    if li is not None and base_pose is None and not batched:
        out = np.empty((4, 4))
        st = _fast(model, 'link_pose link', _link_pose_link,
                   (model.packed_int, model.packed_float, q, li, out))
        if st:
            _check(st)
        return out
    body, T = _link(model, link)
    if not batched:
        out = np.empty((4, 4))
        if base_pose is None:
            st = _fast(model, 'link_pose', _link_pose_into,
                       (model.packed_int, model.packed_float, q, _EYE4, body, T, out))
        else:
            st = _fast(model, 'link_pose base', _link_pose_into,
                       (model.packed_int, model.packed_float, q, _base(model, base_pose, None),
                        body, T, out))
        if st:
            _check(st)
        return out
    out = np.empty((q.shape[0], 4, 4))
    _check(_link_pose_batch(model.kin, q, _base(model, base_pose, q.shape[0]), body, T, out))
    return out


def _out(out, shape, inputs=()):
    """
    Return ``out`` for a result of ``shape``: a new array, or the caller's after checks.

    The kernels write into it without further checks, so it must be float64, C-contiguous,
    aligned and writeable, of exactly ``shape``, and must not overlap the inputs: ``inputs``
    are ``(name, array)`` pairs, and an ``out`` sharing memory with one of them is refused
    with a ValueError naming it (a kernel would overwrite its input while reading it).
    """
    if out is None:
        return np.empty(shape)
    if not (isinstance(out, np.ndarray) and out.dtype == _F64 and out.shape == shape
            and out.flags.carray):
        if isinstance(out, np.ndarray):
            got = f'{out.dtype} {out.shape}'
            if not out.flags.carray:
                got += ', not C-contiguous, aligned and writeable'
        else:
            got = type(out).__name__
        raise ValueError(f'out must be a writeable, C-contiguous float64 array of shape '
                         f'{shape}; got {got}')
    for name, a in inputs:
        if np.may_share_memory(out, a) and np.shares_memory(out, a):
            raise ValueError(f'out overlaps {name}: the result would overwrite its own input; '
                             'pass an array that shares no memory with the arguments')
    return out


def forward_kinematics(model, q, base_pose=None, out=None):
    """
    Poses of all links, shape (len(link_names), 4, 4) (or with a leading batch axis).

    ``out``: an array of that shape to write into instead of a new one (for repeated large
    batches: a fresh 100 MB result costs its page faults on every call); one that shares
    memory with ``q`` or ``base_pose`` is refused (ValueError naming the argument).
    """
    if (out is None and base_pose is None and q.__class__ is np.ndarray and q.dtype is _F64
            and q.ndim == 1):
        # the most common call, once its entry point is cached: no further wrapper layers
        entry = model.entry_points.get('forward_kinematics')
        if entry is not None and q.shape[0] == model.nq and q.flags.carray:
            out = np.empty((len(model.link_names), 4, 4))
            st = entry(model.packed_int, model.packed_float, q, out)
            if st:
                _check(st)
            return out
    q, batched = _as_batch(model, q, model.nq, 'q')
    nl = len(model.link_names)
    if not batched:
        out = _out(out, (nl, 4, 4), (('q', q), ('base_pose', base_pose)))
        if base_pose is None:
            st = _fast(model, 'forward_kinematics', _forward_kinematics_plain,
                       (model.packed_int, model.packed_float, q, out))
            if st:
                _check(st)
            return out
        st = _fast(model, 'forward_kinematics base', _forward_kinematics_into,
                   (model.packed_int, model.packed_float, q, _base(model, base_pose, None), out))
        if st:
            _check(st)
        return out
    out = _out(out, (q.shape[0], nl, 4, 4), (('q', q), ('base_pose', base_pose)))
    _check(_forward_kinematics_batch(model.kin, q, _base(model, base_pose, q.shape[0]),
                                     model.link_body, model.link_offset, out))
    return out


def _jacobians(model, q, qd, link, representation, deriv, base_pose, twist=False):
    """
    Return ``(out, qd)``: ``out[..., 0, :, :] = J`` and ``out[..., 1, :, :] = J̇``.

    A single configuration with ``twist`` gives the twist ``out = J qd`` (6,) instead.
    :func:`jacobian` calls the kernel itself.
    """
    body, T = _link(model, link)
    rep = _REP.get(representation, -1) if representation.__class__ is str else -1
    if rep < 0:
        rep = _rep(representation)
    q, batched = _as_batch(model, q, model.nq, 'q')
    if not batched:
        if qd is None:
            qd = q
        else:
            qd, qb = _as_batch(model, qd, model.nv, 'qd')
            if qb:
                raise ValueError(f'q and qd batch shapes differ: {q.shape} vs {qd.shape}')
        if base_pose is None:
            key, base = 'jacobian', _EYE4
        else:
            key, base = 'jacobian base', _base(model, base_pose, None)
        if twist:
            out = np.empty(6)
            st = _fast(model, key + ' twist', _link_twist_into,
                       (model.packed_int, model.packed_float, q, qd, base, body, T, rep, out))
        else:
            out = np.empty((2, 6, model.nv))
            st = _fast(model, key, _jacobian_into, (model.packed_int, model.packed_float, q, qd,
                                                    base, body, T, rep, deriv, out[0], out[1]))
        if st:
            _check(st)
        return out, qd
    if qd is None:
        qd = q
    else:
        qd, qb = _as_batch(model, qd, model.nv, 'qd')
        if not qb or qd.shape[0] != q.shape[0]:
            raise ValueError(f'q and qd batch shapes differ: {q.shape} vs {qd.shape}')
    out = _jacobian_batch(model.kin, q, qd, _base(model, base_pose, q.shape[0]), body, T, rep,
                          deriv, np.empty((q.shape[0], 2 if deriv else 1, 6, model.nv)))
    return out, qd


def jacobian(model, q, link, representation='body', base_pose=None):
    """
    Geometric Jacobian of ``link``: ``V = J qd``, shape (6, nv) or (B, 6, nv).

    ``representation``: 'body' | 'spatial' | 'hybrid' | 'mixed' (module docstring).
    Rows are angular first.  For a floating base the first six columns belong to
    the base's body-fixed twist.
    """
    q, batched = _as_batch(model, q, model.nq, 'q')
    if batched:
        return _jacobians(model, q, None, link, representation, False, base_pose)[0][:, 0]
    li = model.link_ids.get(link) if link.__class__ is str else None
    if li is not None and base_pose is None:
        rep = _REP.get(representation, -1) if representation.__class__ is str else -1
        if rep < 0:
            rep = _rep(representation)
        J = np.empty((6, model.nv))
        st = _fast(model, 'jacobian link', _jacobian_link,
                   (model.packed_int, model.packed_float, q, li, rep, J))
        if st:
            _check(st)
        return J
    try:
        body, T = model.link_frames[link]
    except (KeyError, TypeError):
        body, T = _link(model, link)
    rep = _REP.get(representation, -1) if representation.__class__ is str else -1
    if rep < 0:
        rep = _rep(representation)
    J = np.empty((6, model.nv))
    if base_pose is None:
        st = _fast(model, 'jacobian tip', _jacobian_tip_into,
                   (model.packed_int, model.packed_float, q, _EYE4, body, T, rep, J))
    else:
        st = _fast(model, 'jacobian tip base', _jacobian_tip_into,
                   (model.packed_int, model.packed_float, q, _base(model, base_pose, None),
                    body, T, rep, J))
    if st:
        _check(st)
    return J


def jacobian_derivative(model, q, qd, link, representation='body', base_pose=None):
    """
    Time derivative ``J̇`` of :func:`jacobian` along ``qd``, shape (6, nv) or (B, 6, nv).

    With it the acceleration of the link in that representation is
    ``V̇ = J q̈ + J̇ q̇`` (the plain time derivative of the represented twist).
    """
    out = _jacobians(model, q, qd, link, representation, True, base_pose)[0]
    return out[1] if out.ndim == 3 else out[:, 1]


def link_twist(model, q, qd, link, representation='body', base_pose=None):
    """Twist of ``link`` in the given representation, shape (6,) or (B, 6)."""
    if qd is None:
        raise ValueError('qd is required')
    out, qd = _jacobians(model, q, qd, link, representation, False, base_pose, True)
    if out.ndim == 1:
        return out
    return np.einsum('...ij,...j->...i', out[..., 0, :, :], qd)


def link_acceleration(model, q, qd, qdd, link, representation='body', base_pose=None):
    """
    Time derivative of :func:`link_twist`: ``V̇ = J q̈ + J̇ q̇``, shape (6,) or (B, 6).

    For 'hybrid' and 'mixed' the linear part is the classical acceleration ``r̈`` of the
    link origin (seed 002 digest §1.4); for 'body' it is ``d/dt v^b``.
    """
    out, qd = _jacobians(model, q, qd, link, representation, True, base_pose)
    qdd, _ = _as_batch(model, qdd, model.nv, 'qdd')
    if not np.all(np.isfinite(qdd)):
        raise ValueError('qdd contains NaN or inf')
    return (np.einsum('...ij,...j->...i', out[..., 0, :, :], qdd)
            + np.einsum('...ij,...j->...i', out[..., 1, :, :], qd))


# --------------------------------------------------------------------------- system level
def body_twists(model, q, qd, representation='body', base_pose=None):
    """
    Twists of all bodies by their own recursion (seed 004 eqs. (15), (31), (58), (68)).

    Returns (nb, 6), row ``i`` the twist of body ``i`` (frame ``model.body_names[i]``) in
    the given representation.  An independent route to the same numbers as
    :func:`link_twist`, O(nb).
    """
    rep = _rep(representation)
    q, b1 = _as_batch(model, q, model.nq, 'q')
    qd, b2 = _as_batch(model, qd, model.nv, 'qd')
    if b1 or b2:
        raise ValueError('body_twists takes a single configuration')
    C = np.empty((model.nb + 1, 4, 4))
    V = np.empty((model.nb + 1, 6))
    _check(_body_twists(model.kin, q, qd, _base(model, base_pose, None), rep, C, V))
    return V[1:]


def body_poses(model, q, base_pose=None):
    """Poses of all bodies (not links), shape (nb, 4, 4), order of ``model.body_names``."""
    q, batched = _as_batch(model, q, model.nq, 'q')
    if batched:
        raise ValueError('body_poses takes a single configuration')
    if not (np.all(np.isfinite(q))):
        raise ValueError('q contains NaN or inf')
    return _poses_with_base(model.kin, q, _base(model, base_pose, None))[1:]


def _hat(x):
    return np.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])


def representation_map(C, source, target):
    """
    Return the 6x6 matrix mapping a twist of a frame with pose ``C`` between representations.

    ``V_target = representation_map(C, source, target) @ V_source`` (seed 004 Table 3,
    §4.5); the same matrix maps Jacobian columns.
    """
    a, b = _rep(source), _rep(target)
    R = np.asarray(C, dtype=float)[:3, :3]
    rt = _hat(np.asarray(C, dtype=float)[:3, 3])
    Z, E = np.zeros((3, 3)), np.eye(3)
    to_spatial = [np.block([[R, Z], [rt @ R, R]]), np.eye(6),
                  np.block([[E, Z], [rt, E]]), np.block([[R, Z], [rt @ R, E]])]
    return np.linalg.solve(to_spatial[b], to_spatial[a])


def _block_factor(model, Cs, rep, i, j):
    """Block (i, j) of A^x: the map from body j's twist to body i's twist at j's joint."""
    Ci, Cj = Cs[i], Cs[j]
    Ri, Rj = Ci[:3, :3], Cj[:3, :3]
    d = Cj[:3, 3] - Ci[:3, 3]
    Z, E = np.zeros((3, 3)), np.eye(3)
    if rep == 0:  # Ad_{C_i^-1 C_j}
        Rr = Ri.T @ Rj
        return np.block([[Rr, Z], [_hat(Ri.T @ d) @ Rr, Rr]])
    if rep == 1:
        return np.eye(6)
    if rep == 2:  # Ad_{r_{i,j}}
        return np.block([[E, Z], [_hat(d), E]])
    return np.block([[Ri.T @ Rj, Z], [_hat(d) @ Rj, E]])


def jacobian_factors(model, q, representation='body'):
    """
    System Jacobian and its factorisation ``J = A X``, ``A^-1 = I - D`` (seed 004 §3).

    Returns ``(J, A, X, D)`` for the bodies of a fixed-base model: ``J`` (6 nb, nq) stacks
    the Jacobians of all bodies (block row ``i`` = body ``i``), ``A`` (6 nb, 6 nb) is unit
    lower block-triangular over the support paths, ``X`` (6 nb, nq) block-diagonal with the
    instantaneous joint screws, ``D`` the nilpotent first sub-diagonal (parent blocks).
    """
    if model.floating:
        raise ValueError('jacobian_factors covers fixed-base models')
    rep = _rep(representation)
    Cs = body_poses(model, q)
    nb = model.nb
    A = np.zeros((6 * nb, 6 * nb))
    D = np.zeros((6 * nb, 6 * nb))
    Xs = np.zeros((6 * nb, model.nq))
    for i in range(nb):
        for j in np.nonzero(model.support[i])[0]:
            A[6 * i:6 * i + 6, 6 * j:6 * j + 6] = _block_factor(model, Cs, rep, i, j)
        p = model.parent[i]
        if p >= 0:
            D[6 * i:6 * i + 6, 6 * p:6 * p + 6] = _block_factor(model, Cs, rep, i, p)
        col = representation_map(Cs[i], 'body', representation) @ model.X[i]
        Xs[6 * i:6 * i + 6, model.q_index[i]] += model.q_mult[i] * col
    return A @ Xs, A, Xs, D


__all__ = ['link_pose', 'forward_kinematics', 'link_twist', 'link_acceleration', 'jacobian',
           'jacobian_derivative', 'body_twists', 'body_poses', 'representation_map',
           'jacobian_factors']
