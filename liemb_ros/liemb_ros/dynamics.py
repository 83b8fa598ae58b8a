"""
Recursive O(n) dynamics of a tree of 1-DOF screw joints (seed 002 §4-§6).

Conventions (design.md): twists ``V = (ω, v)`` angular first, wrenches ``W = (m, f)``
moment first, power ``Wᵀ V``.  Bodies are the 1-DOF joints of the :class:`Model` in
topological order; ``parent[i]`` is the predecessor, ``X[i]`` the body-fixed joint screw,
``inertia[i]`` the 6x6 body-fixed spatial inertia (seed 002 eq. (40)).  Joint ``i`` moves
by ``θ_i = q_mult[i] q[q_index[i]] + q_offset[i]``, so mimic-coupled bodies add
``q_mult[i] X_iᵀ W_i`` to the torque of their leader's coordinate.

Inverse dynamics, three forms selected by ``form=`` (they agree to round-off):

* ``'body'``    seed 002 (66)-(67): ``V_i = Ad_{C_{i,λ}} V_λ + X_i θ̇_i``,
  ``V̇_i = Ad_{C_{i,λ}} V̇_λ + [V_i, X_i θ̇_i] + X_i θ̈_i`` (65c),
  ``W_i = Σ_c Ad_{C_{c,i}}ᵀ W_c + M_i V̇_i - ad_{V_i}ᵀ M_i V_i - W_i^app``, ``Q_i = X_iᵀ W_i``;
* ``'spatial'`` seed 002 (70)-(71): ``J_i = Ad_{C_i} X_i``, ``V_i = V_λ + J_i θ̇_i``,
  ``V̇_i = V̇_λ + J_i θ̈_i + [V_i, J_i θ̇_i]`` (69), ``M^s_i = Ad_{C_i}^-T M_i Ad_{C_i}^-1``,
  ``W_i = Σ_c W_c + M^s_i V̇_i - ad_{V_i}ᵀ M^s_i V_i - W_i^app``, ``Q_i = J_iᵀ W_i``;
* ``'hybrid'``  seed 002 (75)-(76) with errata E1, E18: ``Z_i = Ad_{R_i} X_i``,
  ``V_i = Ad_{r_λ - r_i} V_λ + Z_i θ̇_i``, ``V̇_i = Ad_{r_λ - r_i} V̇_λ
  + ad_v(ṙ_λ - ṙ_i) V_λ + ad_ω(ω_i) Z_i θ̇_i + Z_i θ̈_i``, ``M^h_i = Ad_{R_i} M_i Ad_{R_i}ᵀ``,
  ``W_i = Σ_c Adr(r_i - r_c)ᵀ W_c + M^h_i V̇_i + ad_ω(ω_i) M^h_i (ω_i, 0) - W_i^app``.

The spatial and hybrid forms and every spatial kernel below (mass matrix, ``Ṁ``, Coriolis
matrix, and the RNEA derivatives of :mod:`liemb_ros.eom`) work in a world-aligned frame at
the base origin rather than at the world origin (:func:`_local_base`): exact, since every
joint-space result pairs screws with wrenches or inertias expressed in one inertial frame,
and invariant to where the robot stands (at the world origin the lever arms grow with the
distance ``|r|`` and the round-off with ``|r|² eps``: 1e-6 relative at 100 km).

All backward loops start at the last body (erratum E15) and subtract the applied wrench
(erratum E16).  Gravity enters by the base-acceleration trick ``V̇_0 = (0, -g)`` in the
world frame (``model.gravity``, default (0, 0, -9.81)).

External wrenches ``f_ext``: an ``(len(link_names), 6)`` array, or a ``{link: wrench}``
dict, of wrenches ``(m, f)`` acting *on* each link, applied at the link frame origin and
expressed in the link frame (body-fixed).  Wrenches on links fixed to a fixed base have no
effect.

Floating base (``model.floating``): ``base_pose`` is the base pose ``C_base`` (identity if
omitted), ``qd[:6]`` the base body-fixed twist ``(ω^b, v^b)``, ``qdd[:6]`` its time
derivative, ``tau[:6]`` the wrench ``(m, f)`` applied to the base in the base frame (zero
for an unactuated base).  For a fixed base ``base_pose`` places the root in the world.

Mass matrix and its time derivative ``Ṁ``: composite rigid bodies in spatial form,
``M_ab = J_aᵀ M^C_b J_b`` for ``a`` an ancestor of ``b`` (``M^C`` the composite spatial
inertia of ``b``'s subtree), which is ``M = Jᵀ M^b J`` of seed 002 (81) summed
recursively, and its derivative with ``J̇^s_j = [V^s_j, J^s_j]`` (16) and (37).
Coriolis matrix: the Christoffel-consistent factorisation
``C = Σ_i J_iᵀ (M^s_i J̇_i + B_i J_i)`` with
``B_i = ½(-ad_{V_i}ᵀ M^s_i - M^s_i ad_{V_i} - Λ(M^s_i V_i))``, ``Λ(h) V' = ad_{V'}ᵀ h``
(spatial form, composite over subtrees), for which ``Ṁ - 2C`` is skew-symmetric; the
factorisation (84) of seed 002 is not (digest §6.3).  Forward dynamics: the
articulated-body algorithm in body-fixed form.

Every function accepts ``q`` of shape ``(nq,)`` or ``(B, nq)`` and ``qd``, ``qdd``,
``tau`` of shape ``(nv,)`` or ``(B, nv)``; batched input gives a leading batch axis.
"""
import weakref

import numpy as np
from numba import njit

from .kinematics import (_as_batch, _base, _canonical, _fast, _finite, _joint_pose,
                         _out, _pose_step, _unpack_kin, _unpack_links)
from .lie._core import (Ad_apply_into, Ad_inv_apply_into, Ad_invT_apply_into, ad_apply_into,
                        AdT_apply_into, adT_apply_into)

FORMS = ('body', 'spatial', 'hybrid')
_FORM = {name: i for i, name in enumerate(FORMS)}
_EYE4 = np.eye(4)
_EYE4.setflags(write=False)
_F64 = np.dtype(np.float64)
_NO_FEXT = np.zeros((0, 6))
_NO_FEXT.setflags(write=False)
_NO_ARM = np.zeros(0)
_NO_ARM.setflags(write=False)

OK = 0
BAD_Q = 1
BAD_QD = 2
BAD_BASE = 3
BAD_QDD = 4
BAD_TAU = 5
BAD_FEXT = 6
SINGULAR = 7
_STATUS = {BAD_Q: 'q', BAD_QD: 'qd', BAD_BASE: 'base_pose', BAD_QDD: 'qdd', BAD_TAU: 'tau',
           BAD_FEXT: 'f_ext'}


# --------------------------------------------------------------------------- small kernels
@njit(cache=True, inline='always')
def _unpack_dyn(ki, kf):
    """``(model.dyn, model.lk)`` as views of ``model.packed_int`` and ``model.packed_float``."""
    nb = ki[0]
    o = 24 * nb
    return (_unpack_kin(ki, kf) + (kf[o:o + 36 * nb].reshape((nb, 6, 6)),
                                   kf[o + 36 * nb:o + 36 * nb + 36].reshape((6, 6)),
                                   kf[o + 36 * nb + 36:o + 36 * nb + 39]),
            _unpack_links(ki, kf))


@njit(cache=True, inline='always')
def _rel_pose(dyn, q, i, G):
    """``G = C_{λ(i),i} = A_{λ(i),i} exp(^i X_i θ_i)`` (seed 004 eq. (8)); G is 4x4."""
    e = _joint_pose(dyn[:7], q, i)
    for r in range(3):
        G[r, 0] = e[4 * r]
        G[r, 1] = e[4 * r + 1]
        G[r, 2] = e[4 * r + 2]
        G[r, 3] = e[4 * r + 3]
    G[3, 0] = 0.0
    G[3, 1] = 0.0
    G[3, 2] = 0.0
    G[3, 3] = 1.0


@njit(cache=True, inline='always')
def _compose(C1, C2, out):
    for r in range(3):
        c0 = C1[r, 0]
        c1 = C1[r, 1]
        c2 = C1[r, 2]
        for k in range(4):
            out[r, k] = c0 * C2[0, k] + c1 * C2[1, k] + c2 * C2[2, k]
        out[r, 3] += C1[r, 3]
    out[3, 0] = 0.0
    out[3, 1] = 0.0
    out[3, 2] = 0.0
    out[3, 3] = 1.0


@njit(cache=True, inline='always')
def _local_base(base, out):
    """
    Write the base pose seen from a world-aligned frame at the base origin: ``(R, 0)``.

    The spatial kernels (spatial/hybrid RNEA, mass matrix, ``Ṁ``, Coriolis matrix, RNEA
    derivatives) express twists, wrenches and inertias in this inertial frame instead of
    the world frame.  That is exact (every joint-space result is a pairing ``J_aᵀ W`` or
    ``J_aᵀ M J_b``, unchanged by a fixed change of frame; gravity ``(0, -g)`` is a pure
    translation, the same in both) and keeps lever arms of the robot's size: at the world
    origin they grow with the distance ``|r|`` and the round-off with ``|r|² eps``.
    """
    for r in range(3):
        out[r, 0] = base[r, 0]
        out[r, 1] = base[r, 1]
        out[r, 2] = base[r, 2]
        out[r, 3] = 0.0
        out[3, r] = 0.0
    out[3, 3] = 1.0


@njit(cache=True, inline='always')
def _mat6_vec(M, x, out):
    for r in range(6):
        out[r] = (M[r, 0] * x[0] + M[r, 1] * x[1] + M[r, 2] * x[2]
                  + M[r, 3] * x[3] + M[r, 4] * x[4] + M[r, 5] * x[5])


@njit(cache=True, inline='always')
def _dot6(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5]


@njit(cache=True, inline='always')
def _add_inertia_to_parent(G, M, T, Tm, out):
    """
    ``out += Ad_{G^-1}ᵀ M Ad_{G^-1}`` for a symmetric 6x6 ``M`` (an articulated inertia).

    Block form instead of a 6x6 congruence (432 products): with ``G = (R, r)``,
    ``M' = diag(R, R) M diag(Rᵀ, Rᵀ) = [[A, B], [Bᵀ, C]]`` and then the shift to the
    parent origin ``[[A + S + Sᵀ - r~ C r~, B + r~ C], [(B + r~ C)ᵀ, C]]``, ``S = r~ Bᵀ``
    (about 240 products).  ``T``, ``Tm``: 6x6 work arrays.
    """
    r0 = G[0, 3]
    r1 = G[1, 3]
    r2 = G[2, 3]
    # T = diag(R, R) M
    for i in range(6):
        o = 0 if i < 3 else 3
        a = i - o
        for c in range(6):
            T[i, c] = G[a, 0] * M[o, c] + G[a, 1] * M[o + 1, c] + G[a, 2] * M[o + 2, c]
    # Tm = T diag(Rᵀ, Rᵀ): blocks A (rows 0-2, cols 0-2), B (rows 0-2, cols 3-5), C
    for i in range(6):
        for c in range(6):
            if i >= 3 and c < 3:
                continue
            o = 0 if c < 3 else 3
            b = c - o
            Tm[i, c] = T[i, o] * G[b, 0] + T[i, o + 1] * G[b, 1] + T[i, o + 2] * G[b, 2]
    # B'' = B + r~ C (column j: r x C[:, j]); C'' = C
    for j in range(3):
        c0 = Tm[3, 3 + j]
        c1 = Tm[4, 3 + j]
        c2 = Tm[5, 3 + j]
        b0 = Tm[0, 3 + j] + r1 * c2 - r2 * c1
        b1 = Tm[1, 3 + j] + r2 * c0 - r0 * c2
        b2 = Tm[2, 3 + j] + r0 * c1 - r1 * c0
        out[0, 3 + j] += b0
        out[1, 3 + j] += b1
        out[2, 3 + j] += b2
        out[3 + j, 0] += b0
        out[3 + j, 1] += b1
        out[3 + j, 2] += b2
        for i in range(3):
            out[3 + i, 3 + j] += Tm[3 + i, 3 + j] if i <= j else Tm[3 + j, 3 + i]
    # Y = C r~ (row i: -(r x C[i, :])), stored in T[3:6, 0:3]; S = r~ Bᵀ in T[0:3, 0:3]
    for i in range(3):
        # C is symmetric: read its upper triangle, so that the result stays symmetric
        c0 = Tm[3, 3 + i]
        c1 = Tm[3 + min(i, 1), 3 + max(i, 1)]
        c2 = Tm[3 + i, 5]
        T[3 + i, 0] = -(r1 * c2 - r2 * c1)
        T[3 + i, 1] = -(r2 * c0 - r0 * c2)
        T[3 + i, 2] = -(r0 * c1 - r1 * c0)
        # column i of S: r x (row i of B)
        y0 = Tm[i, 3]
        y1 = Tm[i, 4]
        y2 = Tm[i, 5]
        T[0, i] = r1 * y2 - r2 * y1
        T[1, i] = r2 * y0 - r0 * y2
        T[2, i] = r0 * y1 - r1 * y0
    # A'' = A + S + Sᵀ - r~ Y (column j of r~ Y: r x Y[:, j])
    for j in range(3):
        y0 = T[3, j]
        y1 = T[4, j]
        y2 = T[5, j]
        z0 = r1 * y2 - r2 * y1
        z1 = r2 * y0 - r0 * y2
        z2 = r0 * y1 - r1 * y0
        for i in range(3):
            a = Tm[i, j] if i <= j else Tm[j, i]
            z = z0 if i == 0 else (z1 if i == 1 else z2)
            out[i, j] += a + T[i, j] + T[j, i] - z


@njit(cache=True, inline='always')
def _check_inputs(q, qd, qdd, base, fext):
    if not _finite(q):
        return BAD_Q
    if not _finite(qd):
        return BAD_QD
    if not _finite(qdd):
        return BAD_QDD
    if not _finite(base):
        return BAD_BASE
    if not _finite(fext):
        return BAD_FEXT
    return OK


@njit(cache=True, inline='always')
def _body_fext(dyn, fext, lk, out):
    """Write the applied wrenches of every body (slot 0: base) in body frames, ``Ad_T^-T W``."""
    out[:, :] = 0.0
    if fext.shape[0] == 0:
        return
    link_body, link_offset = lk
    w = np.empty(6)
    for li in range(fext.shape[0]):
        Ad_invT_apply_into(link_offset[li], fext[li], w)
        b = link_body[li] + 1
        for r in range(6):
            out[b, r] += w[r]


@njit(cache=True)
def _raise(st):
    if st == BAD_Q:
        raise ValueError('q contains NaN or inf')
    if st == BAD_QD:
        raise ValueError('qd contains NaN or inf')
    if st == BAD_QDD:
        raise ValueError('qdd contains NaN or inf')
    if st == BAD_BASE:
        raise ValueError('base_pose contains NaN or inf')
    if st == BAD_TAU:
        raise ValueError('tau contains NaN or inf')
    if st == BAD_FEXT:
        raise ValueError('f_ext contains NaN or inf')


# --------------------------------------------------------------------------- RNEA, body
@njit(cache=True, inline='always')
def _rnea_body(dyn, q, qd, qdd, base, fb, grav, tau, G, V, A, W):
    """
    Body-fixed RNEA (seed 002 (66)-(67)); slot 0 of V, A, W is the base.

    ``fb`` (nb + 1, 6): applied wrenches in body frames; ``grav`` scales gravity (0 or 1).
    Fills ``G`` (relative poses), ``V``, ``A`` (= V̇ incl. the gravity offset), ``W``
    (wrench each joint transmits to its body, body frame) and ``tau``.
    """
    parent, X, _, q_index, q_mult, _, nbase, inertia, base_inertia, gravity = dyn
    nb = parent.shape[0]
    h = fb[nb + 1]  # two scratch rows past the bodies (see _id_work)
    t = fb[nb + 2]
    g0 = grav * gravity[0]
    g1 = grav * gravity[1]
    g2 = grav * gravity[2]
    # V̇_0 = (0, -Rᵀ g) (+ the base's own acceleration)
    for r in range(6):
        V[0, r] = 0.0
        A[0, r] = 0.0
    for r in range(3):
        A[0, 3 + r] = -(base[0, r] * g0 + base[1, r] * g1 + base[2, r] * g2)
    if nbase > 0:
        for r in range(6):
            V[0, r] = qd[r]
            A[0, r] += qdd[r]
    for i in range(nb):
        s = i + 1
        p = parent[i] + 1
        _rel_pose(dyn, q, i, G[i])
        c = nbase + q_index[i]
        m = q_mult[i]
        rate = m * qd[c]
        acc = m * qdd[c]
        Ad_inv_apply_into(G[i], V[p], t)
        for r in range(6):
            V[s, r] = t[r] + X[i, r] * rate
            h[r] = X[i, r] * rate
        Ad_inv_apply_into(G[i], A[p], t)
        ad_apply_into(V[s], h, A[s])
        for r in range(6):
            A[s, r] += t[r] + X[i, r] * acc
    if nbase > 0:
        _mat6_vec(base_inertia, V[0], h)
        adT_apply_into(V[0], h, t)
        _mat6_vec(base_inertia, A[0], h)
        for r in range(6):
            W[0, r] = h[r] - t[r] - fb[0, r]
    else:  # a fixed base's wrench is never used
        for r in range(6):
            W[0, r] = 0.0
    for s in range(1, nb + 1):
        M = inertia[s - 1]
        _mat6_vec(M, V[s], h)
        adT_apply_into(V[s], h, t)
        _mat6_vec(M, A[s], h)
        for r in range(6):
            W[s, r] = h[r] - t[r] - fb[s, r]
    for r in range(tau.shape[0]):
        tau[r] = 0.0
    for i in range(nb - 1, -1, -1):
        s = i + 1
        tau[nbase + q_index[i]] += q_mult[i] * _dot6(X[i], W[s])
        Ad_invT_apply_into(G[i], W[s], t)
        p = parent[i] + 1
        for r in range(6):
            W[p, r] += t[r]
    if nbase > 0:
        for r in range(6):
            tau[r] = W[0, r]


# --------------------------------------------------------------------------- RNEA, spatial
@njit(cache=True)
def _rnea_spatial(dyn, q, qd, qdd, base, fb, grav, tau):
    """
    Spatial RNEA (seed 002 (70)-(71)): everything in one inertial frame, world axes.

    The frame's origin is the base origin (:func:`_local_base`), not the world origin:
    the same equations in an inertial frame translated by the base position, exact and
    free of the ``|r|² eps`` round-off of a robot far from the world origin.
    """
    parent, X, _, q_index, q_mult, _, nbase, inertia, base_inertia, gravity = dyn
    nb = parent.shape[0]
    C = np.empty((nb + 1, 4, 4))
    V = np.zeros((nb + 1, 6))
    A = np.zeros((nb + 1, 6))
    W = np.empty((nb + 1, 6))
    Js = np.empty((nb, 6))
    G = np.empty((4, 4))
    In = np.empty(10)
    h = np.empty(6)
    t = np.empty(6)
    _local_base(base, C[0])
    if nbase > 0:
        Ad_apply_into(C[0], qd[:6], V[0])
        Ad_apply_into(C[0], qdd[:6], A[0])   # V̇^s = Ad_C V̇^b (digest §1.4)
    for r in range(3):
        A[0, 3 + r] -= grav * gravity[r]
    for i in range(nb):
        s = i + 1
        p = parent[i] + 1
        _rel_pose(dyn, q, i, G)
        _compose(C[p], G, C[s])
        Ad_apply_into(C[s], X[i], Js[i])
        c = nbase + q_index[i]
        rate = q_mult[i] * qd[c]
        acc = q_mult[i] * qdd[c]
        for r in range(6):
            V[s, r] = V[p, r] + Js[i, r] * rate
            h[r] = Js[i, r] * rate
        ad_apply_into(V[s], h, t)
        for r in range(6):
            A[s, r] = A[p, r] + Js[i, r] * acc + t[r]
    for s in range(nb + 1):
        _inertia10_to(C[s], base_inertia if s == 0 else inertia[s - 1], False, In)
        _inertia10_apply(In, V[s], h, False)
        adT_apply_into(V[s], h, t)
        _inertia10_apply(In, A[s], h, False)
        for r in range(6):
            W[s, r] = h[r] - t[r]
        Ad_invT_apply_into(C[s], fb[s], h)    # W^s_app = Ad_C^-T W^b_app
        for r in range(6):
            W[s, r] -= h[r]
    for r in range(tau.shape[0]):
        tau[r] = 0.0
    for i in range(nb - 1, -1, -1):
        s = i + 1
        tau[nbase + q_index[i]] += q_mult[i] * _dot6(Js[i], W[s])
        p = parent[i] + 1
        for r in range(6):
            W[p, r] += W[s, r]
    if nbase > 0:
        AdT_apply_into(C[0], W[0], t)   # base wrench in the base frame
        for r in range(6):
            tau[r] = t[r]


# --------------------------------------------------------------------------- RNEA, hybrid
@njit(cache=True, inline='always')
def _cross_add(a, b, out, o, sign):
    """``out[o:o+3] += sign * (a x b)`` for 3-vectors given as length-3 sequences."""
    out[o] += sign * (a[1] * b[2] - a[2] * b[1])
    out[o + 1] += sign * (a[2] * b[0] - a[0] * b[2])
    out[o + 2] += sign * (a[0] * b[1] - a[1] * b[0])


@njit(cache=True)
def _rnea_hybrid(dyn, q, qd, qdd, base, fb, grav, tau):
    """Hybrid RNEA (seed 002 (75)-(76), errata E1, E15, E16, E18)."""
    parent, X, _, q_index, q_mult, _, nbase, inertia, base_inertia, gravity = dyn
    nb = parent.shape[0]
    C = np.empty((nb + 1, 4, 4))
    V = np.zeros((nb + 1, 6))
    A = np.zeros((nb + 1, 6))
    W = np.empty((nb + 1, 6))
    Z = np.empty((nb, 6))
    G = np.empty((4, 4))
    In = np.empty(10)
    h = np.empty(6)
    t = np.empty(6)
    d = np.empty(3)
    x = np.empty(3)
    _local_base(base, C[0])   # positions relative to the base origin: differences stay exact
    if nbase > 0:
        for r in range(3):
            V[0, r] = base[r, 0] * qd[0] + base[r, 1] * qd[1] + base[r, 2] * qd[2]
            V[0, 3 + r] = base[r, 0] * qd[3] + base[r, 1] * qd[4] + base[r, 2] * qd[5]
            A[0, r] = base[r, 0] * qdd[0] + base[r, 1] * qdd[1] + base[r, 2] * qdd[2]
            A[0, 3 + r] = base[r, 0] * qdd[3] + base[r, 1] * qdd[4] + base[r, 2] * qdd[5]
        # V̇^h = Ad_R V̇^b + (0, ω^s x ṙ)  (digest §1.4)
        _cross_add(V[0, :3], V[0, 3:], A[0], 3, 1.0)
    for r in range(3):
        A[0, 3 + r] -= grav * gravity[r]
    for i in range(nb):
        s = i + 1
        p = parent[i] + 1
        _rel_pose(dyn, q, i, G)
        _compose(C[p], G, C[s])
        for r in range(3):   # Z_i = Ad_{R_i} X_i  (75b)
            Z[i, r] = C[s, r, 0] * X[i, 0] + C[s, r, 1] * X[i, 1] + C[s, r, 2] * X[i, 2]
            Z[i, 3 + r] = C[s, r, 0] * X[i, 3] + C[s, r, 1] * X[i, 4] + C[s, r, 2] * X[i, 5]
            d[r] = C[p, r, 3] - C[s, r, 3]
        c = nbase + q_index[i]
        rate = q_mult[i] * qd[c]
        acc = q_mult[i] * qdd[c]
        # (75c): ω_i = ω_λ + z_ω θ̇, ṙ_i = ṙ_λ + d x ω_λ + z_v θ̇
        for r in range(6):
            V[s, r] = V[p, r] + Z[i, r] * rate
        _cross_add(d, V[p, :3], V[s], 3, 1.0)
        # (75d)
        for r in range(6):
            A[s, r] = A[p, r] + Z[i, r] * acc
        _cross_add(d, A[p, :3], A[s], 3, 1.0)
        for r in range(3):
            x[r] = V[p, 3 + r] - V[s, 3 + r]
        _cross_add(x, V[p, :3], A[s], 3, 1.0)
        for r in range(6):
            h[r] = Z[i, r] * rate
        _cross_add(V[s, :3], h[:3], A[s], 0, 1.0)
        _cross_add(V[s, :3], h[3:], A[s], 3, 1.0)
    for s in range(nb + 1):
        _inertia10_to(C[s], base_inertia if s == 0 else inertia[s - 1], True, In)  # (76a)
        for r in range(3):
            t[r] = V[s, r]
            t[3 + r] = 0.0
        _inertia10_apply(In, t, h, False)
        _inertia10_apply(In, A[s], t, False)
        for r in range(6):
            W[s, r] = t[r]
        _cross_add(V[s, :3], h[:3], W[s], 0, 1.0)   # ad_ω(ω) M^h (ω, 0)
        _cross_add(V[s, :3], h[3:], W[s], 3, 1.0)
        for r in range(3):   # W^h_app = diag(R, R) W^b_app
            W[s, r] -= C[s, r, 0] * fb[s, 0] + C[s, r, 1] * fb[s, 1] + C[s, r, 2] * fb[s, 2]
            W[s, 3 + r] -= (C[s, r, 0] * fb[s, 3] + C[s, r, 1] * fb[s, 4]
                            + C[s, r, 2] * fb[s, 5])
    for r in range(tau.shape[0]):
        tau[r] = 0.0
    for i in range(nb - 1, -1, -1):
        s = i + 1
        p = parent[i] + 1
        tau[nbase + q_index[i]] += q_mult[i] * _dot6(Z[i], W[s])
        for r in range(3):
            d[r] = C[s, r, 3] - C[p, r, 3]
        for r in range(6):
            W[p, r] += W[s, r]
        _cross_add(d, W[s, 3:], W[p], 0, 1.0)   # moment shift to r_λ (76b)
    if nbase > 0:
        for r in range(3):
            tau[r] = base[0, r] * W[0, 0] + base[1, r] * W[0, 1] + base[2, r] * W[0, 2]
            tau[3 + r] = base[0, r] * W[0, 3] + base[1, r] * W[0, 4] + base[2, r] * W[0, 5]


# --------------------------------------------------------------------------- entries
@njit(cache=True, inline='always')
def _id_one(dyn, q, qd, qdd, base, fext, lk, form, grav, tau, fb, G, V, A, W):
    st = _check_inputs(q, qd, qdd, base, fext)
    if st != OK:
        return st
    _body_fext(dyn, fext, lk, fb)
    if form == 0:
        _rnea_body(dyn, q, qd, qdd, base, fb, grav, tau, G, V, A, W)
    elif form == 1:
        _rnea_spatial(dyn, q, qd, qdd, base, fb, grav, tau)
    else:
        _rnea_hybrid(dyn, q, qd, qdd, base, fb, grav, tau)
    return OK


@njit(cache=True, inline='always')
def _id_work(nb):
    """
    One allocation for the RNEA work arrays ``(fb, G, V, A, W)``.

    ``fb`` has two scratch rows past the ``nb + 1`` bodies.
    """
    n6 = 6 * (nb + 1)
    work = np.empty(4 * n6 + 12 + 16 * nb)
    fb = work[:n6 + 12].reshape((nb + 3, 6))
    V = work[n6 + 12:2 * n6 + 12].reshape((nb + 1, 6))
    A = work[2 * n6 + 12:3 * n6 + 12].reshape((nb + 1, 6))
    W = work[3 * n6 + 12:4 * n6 + 12].reshape((nb + 1, 6))
    o = 4 * n6 + 12
    G = work[o:o + 16 * nb].reshape((nb, 4, 4))
    return fb, G, V, A, W


@njit(cache=True)
def _id_into(ki, kf, q, qd, qdd, base, fext, form, grav, tau):
    """Single configuration inverse dynamics into ``tau``; returns a status."""
    dyn, lk = _unpack_dyn(ki, kf)
    fb, G, V, A, W = _id_work(dyn[0].shape[0])
    return _id_one(dyn, q, qd, qdd, base, fext, lk, form, grav, tau, fb, G, V, A, W)


@njit(cache=True)
def _id_plain(ki, kf, q, qd, qdd, form, grav, tau):
    """:func:`_id_into` without base pose or applied wrenches (fewer arguments to unbox)."""
    dyn, lk = _unpack_dyn(ki, kf)
    fb, G, V, A, W = _id_work(dyn[0].shape[0])
    return _id_one(dyn, q, qd, qdd, _EYE4, _NO_FEXT, lk, form, grav, tau, fb, G, V, A, W)


@njit(cache=True)
def _id_batch(dyn, Q, QD, QDD, base, fext, lk, form, grav, out):
    fb, G, V, A, W = _id_work(dyn[0].shape[0])
    for k in range(Q.shape[0]):
        st = _id_one(dyn, Q[k], QD[k], QDD[k], base[k], fext[k], lk, form, grav, out[k], fb,
                     G, V, A, W)
        if st != OK:
            _raise(st)
    return out


@njit(cache=True)
def _wrench_entry(dyn, q, qd, qdd, base, fext, lk, grav):
    """Body-fixed RNEA; return the transmitted wrenches of all bodies (nb, 6)."""
    tau = np.empty(q.shape[0] + dyn[6])
    fb, G, V, A, W = _id_work(dyn[0].shape[0])
    st = _id_one(dyn, q, qd, qdd, base, fext, lk, 0, grav, tau, fb, G, V, A, W)
    if st != OK:
        _raise(st)
    return W[1:].copy()


@njit(cache=True)
def _wrench_batch(dyn, Q, QD, QDD, base, fext, lk, grav):
    nb = dyn[0].shape[0]
    out = np.empty((Q.shape[0], nb, 6))
    for k in range(Q.shape[0]):
        out[k] = _wrench_entry(dyn, Q[k], QD[k], QDD[k], base[k], fext[k], lk, grav)
    return out


# --------------------------------------------------------------------------- spatial pass
@njit(cache=True, inline='always')
def _inertia10_to(C, M, rotate_only, out):
    """
    Move a rigid-body inertia by the pose ``C``; write its 10 parameters into ``out``.

    ``M = [[Θ, h~], [-h~, m I]]`` (6x6, body frame, ``h = m c``); ``out`` (10,) receives
    ``(m, h', Θ'00, Θ'11, Θ'22, Θ'01, Θ'02, Θ'12)`` of ``Ad_C^-T M Ad_C^-1`` (seed 002 (34)),
    the spatial inertia at the origin of ``C``'s frame, or with ``rotate_only`` of ``Ad_R M Ad_Rᵀ``
    (76a), the hybrid one at the body origin:
    ``Θ' = R Θ Rᵀ - (h_o~ r~ + r~ h_o~ + m r~²)``, ``h' = h_o + m r``, ``h_o = R h``
    (parallel axes without dividing by ``m``; Θ symmetric: 6 numbers, not 36).
    """
    m = M[3, 3]
    h0 = M[2, 4]
    h1 = M[0, 5]
    h2 = M[1, 3]
    if rotate_only:
        r0 = 0.0
        r1 = 0.0
        r2 = 0.0
    else:
        r0 = C[0, 3]
        r1 = C[1, 3]
        r2 = C[2, 3]
    # T = R Θ (rows), then the upper triangle of T Rᵀ
    t00 = C[0, 0] * M[0, 0] + C[0, 1] * M[1, 0] + C[0, 2] * M[2, 0]
    t01 = C[0, 0] * M[0, 1] + C[0, 1] * M[1, 1] + C[0, 2] * M[2, 1]
    t02 = C[0, 0] * M[0, 2] + C[0, 1] * M[1, 2] + C[0, 2] * M[2, 2]
    t10 = C[1, 0] * M[0, 0] + C[1, 1] * M[1, 0] + C[1, 2] * M[2, 0]
    t11 = C[1, 0] * M[0, 1] + C[1, 1] * M[1, 1] + C[1, 2] * M[2, 1]
    t12 = C[1, 0] * M[0, 2] + C[1, 1] * M[1, 2] + C[1, 2] * M[2, 2]
    t20 = C[2, 0] * M[0, 0] + C[2, 1] * M[1, 0] + C[2, 2] * M[2, 0]
    t21 = C[2, 0] * M[0, 1] + C[2, 1] * M[1, 1] + C[2, 2] * M[2, 1]
    t22 = C[2, 0] * M[0, 2] + C[2, 1] * M[1, 2] + C[2, 2] * M[2, 2]
    a0 = C[0, 0] * h0 + C[0, 1] * h1 + C[0, 2] * h2
    a1 = C[1, 0] * h0 + C[1, 1] * h1 + C[1, 2] * h2
    a2 = C[2, 0] * h0 + C[2, 1] * h1 + C[2, 2] * h2
    hr2 = 2.0 * (a0 * r0 + a1 * r1 + a2 * r2)
    mrr = m * (r0 * r0 + r1 * r1 + r2 * r2)
    out[0] = m
    out[1] = a0 + m * r0
    out[2] = a1 + m * r1
    out[3] = a2 + m * r2
    # Θ' = R Θ Rᵀ - (h_o rᵀ + r h_oᵀ - 2 (h_o·r) I) - m (r rᵀ - |r|² I)
    out[4] = (t00 * C[0, 0] + t01 * C[0, 1] + t02 * C[0, 2]
              - 2.0 * a0 * r0 + hr2 - m * r0 * r0 + mrr)
    out[5] = (t10 * C[1, 0] + t11 * C[1, 1] + t12 * C[1, 2]
              - 2.0 * a1 * r1 + hr2 - m * r1 * r1 + mrr)
    out[6] = (t20 * C[2, 0] + t21 * C[2, 1] + t22 * C[2, 2]
              - 2.0 * a2 * r2 + hr2 - m * r2 * r2 + mrr)
    out[7] = t00 * C[1, 0] + t01 * C[1, 1] + t02 * C[1, 2] - (a0 * r1 + r0 * a1 + m * r0 * r1)
    out[8] = t00 * C[2, 0] + t01 * C[2, 1] + t02 * C[2, 2] - (a0 * r2 + r0 * a2 + m * r0 * r2)
    out[9] = t10 * C[2, 0] + t11 * C[2, 1] + t12 * C[2, 2] - (a1 * r2 + r1 * a2 + m * r1 * r2)


@njit(cache=True, inline='always')
def _spatial_inertias10(dyn, C, Ic):
    """``Ic[s]`` (10,): spatial inertia of node ``s`` in the frame of ``C`` (zero: fixed base)."""
    parent, _, _, _, _, _, nbase, inertia, base_inertia, _ = dyn
    if nbase > 0:
        _inertia10_to(C[0], base_inertia, False, Ic[0])
    else:   # a fixed base's inertia never enters M, Ṁ, C or the derivatives
        for r in range(10):
            Ic[0, r] = 0.0
    for s in range(1, parent.shape[0] + 1):
        _inertia10_to(C[s], inertia[s - 1], False, Ic[s])


@njit(cache=True, inline='always')
def _inertia10_apply(In, x, out, add):
    """
    ``out (+)= In x`` for a 10-parameter inertia ``In`` (see :func:`_inertia10_to`).

    ``[[Θ, h~], [-h~, m]] (ω, v) = (Θ ω + h × v, m v - h × ω)``: 24 products, not 36.
    """
    w0 = x[0]
    w1 = x[1]
    w2 = x[2]
    v0 = x[3]
    v1 = x[4]
    v2 = x[5]
    m = In[0]
    h0 = In[1]
    h1 = In[2]
    h2 = In[3]
    f0 = In[4] * w0 + In[7] * w1 + In[8] * w2 + h1 * v2 - h2 * v1
    f1 = In[7] * w0 + In[5] * w1 + In[9] * w2 + h2 * v0 - h0 * v2
    f2 = In[8] * w0 + In[9] * w1 + In[6] * w2 + h0 * v1 - h1 * v0
    f3 = m * v0 - (h1 * w2 - h2 * w1)
    f4 = m * v1 - (h2 * w0 - h0 * w2)
    f5 = m * v2 - (h0 * w1 - h1 * w0)
    if add:
        out[0] += f0
        out[1] += f1
        out[2] += f2
        out[3] += f3
        out[4] += f4
        out[5] += f5
    else:
        out[0] = f0
        out[1] = f1
        out[2] = f2
        out[3] = f3
        out[4] = f4
        out[5] = f5


@njit(cache=True, inline='always')
def _inertia10_rate(In, V, out):
    """
    Write the time derivative of a spatial inertia carried by the spatial twist ``V = (ω, v)``.

    ``Ṁ^s = -ad_Vᵀ M^s - M^s ad_V`` (seed 002 (37)) keeps the 10-parameter form:
    ``ṁ = 0``, ``ḣ = ω × h + m v``, ``Θ̇ = ω~Θ - Θω~ - (v hᵀ + h vᵀ - 2 (v·h) I)``.
    """
    w0 = V[0]
    w1 = V[1]
    w2 = V[2]
    v0 = V[3]
    v1 = V[4]
    v2 = V[5]
    m = In[0]
    h0 = In[1]
    h1 = In[2]
    h2 = In[3]
    # columns of Θ; S = ω~Θ, column j = ω × Θ[:, j]; Θ̇ = S + Sᵀ - ...
    c00 = In[4]
    c11 = In[5]
    c22 = In[6]
    c01 = In[7]
    c02 = In[8]
    c12 = In[9]
    s00 = w1 * c02 - w2 * c01
    s10 = w2 * c00 - w0 * c02
    s20 = w0 * c01 - w1 * c00
    s01 = w1 * c12 - w2 * c11
    s11 = w2 * c01 - w0 * c12
    s21 = w0 * c11 - w1 * c01
    s02 = w1 * c22 - w2 * c12
    s12 = w2 * c02 - w0 * c22
    s22 = w0 * c12 - w1 * c02
    vh2 = 2.0 * (v0 * h0 + v1 * h1 + v2 * h2)
    out[0] = 0.0
    out[1] = w1 * h2 - w2 * h1 + m * v0
    out[2] = w2 * h0 - w0 * h2 + m * v1
    out[3] = w0 * h1 - w1 * h0 + m * v2
    out[4] = 2.0 * s00 - 2.0 * v0 * h0 + vh2
    out[5] = 2.0 * s11 - 2.0 * v1 * h1 + vh2
    out[6] = 2.0 * s22 - 2.0 * v2 * h2 + vh2
    out[7] = s01 + s10 - (v0 * h1 + h0 * v1)
    out[8] = s02 + s20 - (v0 * h2 + h0 * v2)
    out[9] = s12 + s21 - (v1 * h2 + h1 * v2)


@njit(cache=True, inline='always')
def _spatial_columns(dyn, q, qd, base, C, Js, Vs):
    """
    Poses, spatial joint screws and spatial twists of all nodes.

    Node 0 is the base, node ``i + 1`` body ``i``.  ``Js`` (nbase + nb, 6): the spatial
    columns (unscaled by ``q_mult``): the base columns ``Ad_{C_base} e_k`` then
    ``J^s_i = Ad_{C_i} X_i`` (seed 004 eq. (29)).  ``Vs`` (nb + 1, 6) the spatial twists.
    "Spatial" here means in the world-aligned frame at the base origin
    (:func:`_local_base`): ``C`` are the poses in that frame, ``C[0] = (R_base, 0)``.
    """
    parent, X, _, q_index, q_mult, _, nbase, _, _, _ = dyn
    nb = parent.shape[0]
    kin = dyn[:7]
    _local_base(base, C[0])
    for r in range(6):
        Vs[0, r] = 0.0
    for k in range(nbase):
        # Ad_{C[0]} e_k: (R e_k, 0) for k < 3, (0, R e_{k-3}) otherwise
        for r in range(3):
            a = base[r, k % 3]
            Js[k, r] = a if k < 3 else 0.0
            Js[k, 3 + r] = 0.0 if k < 3 else a
        for r in range(6):
            Vs[0, r] += Js[k, r] * qd[k]
    for i in range(nb):
        s = i + 1
        p = parent[i] + 1
        _pose_step(kin, q, i, C)
        col = nbase + i
        Ad_apply_into(C[s], X[i], Js[col])
        rate = q_mult[i] * qd[nbase + q_index[i]]
        for r in range(6):
            Vs[s, r] = Vs[p, r] + Js[col, r] * rate


@njit(cache=True, inline='always')
def _crba(dyn, q, qd, base, out, dot, work):
    """
    Mass matrix (``dot`` False) or its time derivative ``Ṁ`` along ``qd`` (``dot`` True).

    Composite rigid bodies in spatial form: ``M_ab = J_aᵀ M^C_n J_b`` for the column ``a``
    at an ancestor of (or the same node as) column ``b``'s node ``n``, ``M^C_n`` the sum of
    the spatial inertias ``M^s_i = Ad_{C_i}^-T M_i Ad_{C_i}^-1`` over ``n``'s subtree; this is
    ``M = Jᵀ M^b J`` (seed 002 (81)) summed recursively.  ``Ṁ_ab = J̇_aᵀ M^C_n J_b
    + J_aᵀ (M^C_n J̇_b + Ṁ^C_n J_b)`` with ``J̇^s_j = [V^s_j, J^s_j]`` (seed 002 (16)) and
    ``Ṁ^s_i = -ad_{V_i}ᵀ M^s_i - M^s_i ad_{V_i}`` (seed 002 (37)).  Spatial inertias and
    their rates are kept as their 10 parameters (:func:`_inertia10_to`).
    """
    parent, _, _, q_index, q_mult, _, nbase, _, _, _ = dyn
    if not _finite(q):
        return BAD_Q
    if not _finite(qd):
        return BAD_QD
    if not _finite(base):
        return BAD_BASE
    nb = parent.shape[0]
    C, Js, Jd, Vs, Ic, Dc, F, H = work
    _spatial_columns(dyn, q, qd, base, C, Js, Vs)
    _spatial_inertias10(dyn, C, Ic)
    if dot:
        for k in range(nbase):
            ad_apply_into(Vs[0], Js[k], Jd[k])
        for i in range(nb):
            ad_apply_into(Vs[i + 1], Js[nbase + i], Jd[nbase + i])
        for s in range(nb + 1):
            _inertia10_rate(Ic[s], Vs[s], Dc[s])
    for s in range(nb, 0, -1):
        p = parent[s - 1] + 1
        for r in range(10):
            Ic[p, r] += Ic[s, r]
        if dot:
            for r in range(10):
                Dc[p, r] += Dc[s, r]
    out[:, :] = 0.0
    for n in range(nb + 1):
        # columns b owned by node n: the base columns at n = 0, body n - 1's otherwise
        b0 = 0 if n == 0 else nbase + n - 1
        b1 = nbase if n == 0 else nbase + n
        for b in range(b0, b1):
            _inertia10_apply(Ic[n], Js[b], F, False)
            if dot:
                _inertia10_apply(Ic[n], Jd[b], H, False)
                _inertia10_apply(Dc[n], Js[b], H, True)
            cb = b if n == 0 else nbase + q_index[n - 1]
            mb = 1.0 if n == 0 else q_mult[n - 1]
            # ancestors (and self) of node n: bodies up the tree (one column each) ...
            j = n - 1
            while j >= 0:
                a = nbase + j
                if dot:
                    val = _dot6(Jd[a], F) + _dot6(Js[a], H)
                else:
                    val = _dot6(Js[a], F)
                ca = nbase + q_index[j]
                val *= mb * q_mult[j]
                out[ca, cb] += val
                if a != b:
                    out[cb, ca] += val
                j = parent[j]
            # ... then the base columns (all six, or up to b itself at the base node);
            # without Ṁ all six at once: J_aᵀ F = (Ad_{C_base}ᵀ F)_a, J_a = Ad_{C_base} e_a
            if nbase > 0 and not dot:
                AdT_apply_into(C[0], F, H)
            for a in range(b + 1 if n == 0 else nbase):
                if dot:
                    val = _dot6(Jd[a], F) + _dot6(Js[a], H)
                else:
                    val = H[a]
                val *= mb
                out[a, cb] += val
                if a != b:
                    out[cb, a] += val
    return OK


@njit(cache=True, inline='always')
def _crba_work(dyn):
    """Work arrays of :func:`_crba` ``(C, Js, Jd, Vs, Ic, Dc, F, H)``, one allocation."""
    nb = dyn[0].shape[0]
    ncol = dyn[6] + nb
    n1 = nb + 1
    w = np.empty(16 * n1 + 12 * ncol + 6 * n1 + 20 * n1 + 12)
    o1 = 16 * n1
    o2 = o1 + 6 * ncol
    o3 = o2 + 6 * ncol
    o4 = o3 + 6 * n1
    o5 = o4 + 10 * n1
    o6 = o5 + 10 * n1
    return (w[:o1].reshape((n1, 4, 4)), w[o1:o2].reshape((ncol, 6)), w[o2:o3].reshape((ncol, 6)),
            w[o3:o4].reshape((n1, 6)), w[o4:o5].reshape((n1, 10)), w[o5:o6].reshape((n1, 10)),
            w[o6:o6 + 6], w[o6 + 6:o6 + 12])


@njit(cache=True)
def _crba_into(ki, kf, q, qd, base, dot, out):
    dyn = _unpack_dyn(ki, kf)[0]
    return _crba(dyn, q, qd, base, out, dot, _crba_work(dyn))


@njit(cache=True)
def _crba_batch(dyn, Q, QD, base, dot, out):
    work = _crba_work(dyn)
    for k in range(Q.shape[0]):
        st = _crba(dyn, Q[k], QD[k], base[k], out[k], dot, work)
        if st != OK:
            _raise(st)
    return out


@njit(cache=True)
def _coriolis(dyn, q, qd, base, out):
    """
    Christoffel-consistent Coriolis matrix, spatial form over subtree composites.

    ``C = Σ_i J_iᵀ (M^s_i J̇_i + B_i J_i)``, ``J̇`` columns ``[V^s_j, J^s_j]`` (seed 002
    eq. (16)), ``B_i = ½(-ad_{V_i}ᵀ M^s_i - M^s_i ad_{V_i} - Λ(M^s_i V_i))``; for a column
    ``a`` at an ancestor (or the same node) of column ``b``'s node ``n``:
    ``C_ab = J_aᵀ (M^C_n J̇_b + B^C_n J_b)`` and ``C_ba = J_bᵀ (M^C_n J̇_a + B^C_n J_a)``.

    No 6x6 matrix is formed: ``-ad_Vᵀ M^s - M^s ad_V = Ṁ^s`` is the rate of a rigid-body
    inertia (seed 002 (37), :func:`_inertia10_rate`) and ``Λ(h) x = ad_xᵀ h`` is
    antisymmetric and linear in ``h``, so with the subtree sums ``M^C``, ``Ṁ^C`` (10
    parameters each) and the subtree momentum ``H^C``: ``B^C x = ½(Ṁ^C x - ad_xᵀ H^C)`` and
    ``(B^C)ᵀ x = ½(Ṁ^C x + ad_xᵀ H^C)``.
    """
    parent, _, _, q_index, q_mult, _, nbase, _, _, _ = dyn
    if not _finite(q):
        return BAD_Q
    if not _finite(qd):
        return BAD_QD
    if not _finite(base):
        return BAD_BASE
    nb = parent.shape[0]
    n1 = nb + 1
    ncol = nbase + nb
    o1 = 16 * n1
    o2 = o1 + 6 * (2 * ncol + 2 * n1 + 5)
    work = np.empty(o2 + 20 * n1)
    C = work[:o1].reshape((n1, 4, 4))
    vec = work[o1:o2].reshape((2 * ncol + 2 * n1 + 5, 6))
    ten = work[o2:].reshape((2 * n1, 10))
    Js, Jd = vec[:ncol], vec[ncol:2 * ncol]
    Vs, Hc = vec[2 * ncol:2 * ncol + n1], vec[2 * ncol + n1:2 * ncol + 2 * n1]
    o = 2 * ncol + 2 * n1
    P, u, w, g, y = vec[o], vec[o + 1], vec[o + 2], vec[o + 3], vec[o + 4]
    Ic, Dc = ten[:n1], ten[n1:]
    _spatial_columns(dyn, q, qd, base, C, Js, Vs)
    _spatial_inertias10(dyn, C, Ic)
    for k in range(nbase):
        ad_apply_into(Vs[0], Js[k], Jd[k])
    for i in range(nb):
        ad_apply_into(Vs[i + 1], Js[nbase + i], Jd[nbase + i])
    for s in range(n1):
        _inertia10_apply(Ic[s], Vs[s], Hc[s], False)
        _inertia10_rate(Ic[s], Vs[s], Dc[s])
    for s in range(nb, 0, -1):
        p = parent[s - 1] + 1
        for r in range(6):
            Hc[p, r] += Hc[s, r]
        for r in range(10):
            Ic[p, r] += Ic[s, r]
            Dc[p, r] += Dc[s, r]
    out[:, :] = 0.0
    for i in range(nb):
        n = i + 1
        b = nbase + i
        cb = nbase + q_index[i]
        mb = q_mult[i]
        # P = M^C J̇_b + B^C J_b, u = M^C J_b, w = (B^C)ᵀ J_b
        _inertia10_apply(Dc[n], Js[b], y, False)
        adT_apply_into(Js[b], Hc[n], g)
        _inertia10_apply(Ic[n], Jd[b], P, False)
        _inertia10_apply(Ic[n], Js[b], u, False)
        for r in range(6):
            P[r] += 0.5 * (y[r] - g[r])
            w[r] = 0.5 * (y[r] + g[r])
        j = i
        while j >= 0:
            a = nbase + j
            ca = nbase + q_index[j]
            f = q_mult[j] * mb
            if j == i:
                out[cb, cb] += f * _dot6(Js[b], P)
            else:
                out[ca, cb] += f * _dot6(Js[a], P)
                out[cb, ca] += f * (_dot6(u, Jd[a]) + _dot6(w, Js[a]))
            j = parent[j]
        for a in range(nbase):
            out[a, cb] += mb * _dot6(Js[a], P)
            out[cb, a] += mb * (_dot6(u, Jd[a]) + _dot6(w, Js[a]))
    for b in range(nbase):
        _inertia10_apply(Dc[0], Js[b], y, False)
        adT_apply_into(Js[b], Hc[0], g)
        _inertia10_apply(Ic[0], Jd[b], P, False)
        for r in range(6):
            P[r] += 0.5 * (y[r] - g[r])
        for a in range(nbase):
            out[a, b] = _dot6(Js[a], P)
    return OK


@njit(cache=True)
def _coriolis_into(ki, kf, q, qd, base, out):
    return _coriolis(_unpack_dyn(ki, kf)[0], q, qd, base, out)


@njit(cache=True)
def _coriolis_batch(dyn, Q, QD, base):
    n = Q.shape[1] + dyn[6]
    out = np.empty((Q.shape[0], n, n))
    for k in range(Q.shape[0]):
        st = _coriolis(dyn, Q[k], QD[k], base[k], out[k])
        if st != OK:
            _raise(st)
    return out


# --------------------------------------------------------------------------- ABA
@njit(cache=True)
def _aba(dyn, q, qd, tau, base, fext, lk, qdd, work, arm):
    """
    Articulated-body forward dynamics in body-fixed form; return a status code.

    A status ``SINGULAR + 1 + b`` names the body ``b`` whose articulated inertia is
    singular (``SINGULAR``: the floating base).  ``arm``: armature (rotor inertia) per
    joint coordinate (nq,) added to each pivot ``D`` (``M + diag(arm)``), or empty: none.

    Pass 1: ``V_i``, bias acceleration ``c_i = [V_i, X_i θ̇_i]``, bias wrench
    ``p_i = -ad_{V_i}ᵀ M_i V_i - W_i^app``.  Pass 2 (leaves to root):
    ``U = I^A X``, ``D = Xᵀ U``, ``u = τ - Xᵀ p``, ``I^a = I^A - U Uᵀ / D``,
    ``p^a = p + I^a c + U u / D``, moved to the parent by ``Ad_{C_{i,λ}}ᵀ``.  Pass 3
    (root to leaves): ``a' = Ad_{C_{i,λ}} a_λ + c``, ``θ̈ = (u - Uᵀ a') / D``,
    ``a_i = a' + X θ̈``; gravity by ``a_0 = (0, -Rᵀ g)``.
    """
    parent, X, _, q_index, q_mult, _, nbase, inertia, base_inertia, gravity = dyn
    nb = parent.shape[0]
    st = _check_inputs(q, qd, tau, base, fext)
    if st != OK:
        return BAD_TAU if st == BAD_QDD else st
    G, IA, pA, V, cb, U, Dinv, u, fb, T, Tm, ht = work
    _body_fext(dyn, fext, lk, fb)
    h = ht[0]
    t = ht[1]
    scale = 0.0
    for r in range(6):
        V[0, r] = qd[r] if nbase > 0 else 0.0
        for c in range(6):
            IA[0, r, c] = base_inertia[r, c]
    for i in range(nb):
        s = i + 1
        p = parent[i] + 1
        _rel_pose(dyn, q, i, G[i])
        rate = q_mult[i] * qd[nbase + q_index[i]]
        Ad_inv_apply_into(G[i], V[p], t)
        for r in range(6):
            V[s, r] = t[r] + X[i, r] * rate
            h[r] = X[i, r] * rate
        ad_apply_into(V[s], h, cb[s])
        for r in range(6):
            for c in range(6):
                IA[s, r, c] = inertia[i, r, c]
                scale = max(scale, abs(inertia[i, r, c]))
    for s in range(nb + 1):
        _mat6_vec(IA[s], V[s], h)
        adT_apply_into(V[s], h, t)
        for r in range(6):
            pA[s, r] = -t[r] - fb[s, r]
    tol = 1e-12 * max(scale, 1e-300)
    for i in range(nb - 1, -1, -1):
        s = i + 1
        p = parent[i] + 1
        Mi = IA[s]
        _mat6_vec(Mi, X[i], U[s])
        m = q_mult[i]
        D = m * m * _dot6(X[i], U[s])
        if arm.shape[0] > 0:
            D += arm[q_index[i]]
        if not D > tol:
            return SINGULAR + 1 + i
        for r in range(6):
            U[s, r] *= m
        Dinv[s] = 1.0 / D
        u[s] = tau[nbase + q_index[i]] - m * _dot6(X[i], pA[s])
        # I^a and p^a, in place
        for r in range(6):
            for c in range(6):
                Mi[r, c] -= U[s, r] * U[s, c] * Dinv[s]
        _mat6_vec(Mi, cb[s], h)
        for r in range(6):
            h[r] += pA[s, r] + U[s, r] * u[s] * Dinv[s]
        Ad_invT_apply_into(G[i], h, t)
        for r in range(6):
            pA[p, r] += t[r]
        # I^A_λ += Ad_{G^-1}ᵀ I^a Ad_{G^-1}
        _add_inertia_to_parent(G[i], Mi, T, Tm, IA[p])
    # root acceleration
    for r in range(6):
        h[r] = 0.0
    g0 = gravity[0]
    g1 = gravity[1]
    g2 = gravity[2]
    for r in range(3):
        h[3 + r] = -(base[0, r] * g0 + base[1, r] * g1 + base[2, r] * g2)
    if nbase > 0:
        for r in range(6):
            t[r] = tau[r] - pA[0, r]
        for r in range(6):
            for c in range(6):
                Tm[r, c] = IA[0, r, c]
        # solve I^A_0 a_0 = τ_0 - p_0 (Cholesky)
        for c in range(6):
            sm = Tm[c, c]
            for k in range(c):
                sm -= Tm[c, k] * Tm[c, k]
            if not sm > tol:
                return SINGULAR
            Tm[c, c] = np.sqrt(sm)
            for r in range(c + 1, 6):
                sm = Tm[r, c]
                for k in range(c):
                    sm -= Tm[r, k] * Tm[c, k]
                Tm[r, c] = sm / Tm[c, c]
        for r in range(6):
            sm = t[r]
            for k in range(r):
                sm -= Tm[r, k] * t[k]
            t[r] = sm / Tm[r, r]
        for r in range(5, -1, -1):
            sm = t[r]
            for k in range(r + 1, 6):
                sm -= Tm[k, r] * t[k]
            t[r] = sm / Tm[r, r]
        for r in range(6):
            qdd[r] = t[r] - h[r]
            V[0, r] = t[r]     # V is reused for accelerations from here on
    else:
        for r in range(6):
            V[0, r] = h[r]
    for c in range(nbase, qdd.shape[0]):
        qdd[c] = 0.0
    for i in range(nb):
        s = i + 1
        p = parent[i] + 1
        Ad_inv_apply_into(G[i], V[p], t)
        for r in range(6):
            t[r] += cb[s, r]
        acc = (u[s] - _dot6(U[s], t)) * Dinv[s]
        qdd[nbase + q_index[i]] = acc
        m = q_mult[i]
        for r in range(6):
            V[s, r] = t[r] + X[i, r] * m * acc
    return OK


@njit(cache=True)
def _aba_work(nb):
    """ABA work arrays ``(G, IA, pA, V, cb, U, Dinv, u, fb, T, Tm, ht)``, one allocation."""
    n1 = nb + 1
    w = np.empty(16 * nb + 36 * n1 + 5 * 6 * n1 + 2 * n1 + 72 + 12)
    o = 16 * nb
    G = w[:o].reshape((nb, 4, 4))
    IA = w[o:o + 36 * n1].reshape((n1, 6, 6))
    o += 36 * n1
    vecs = w[o:o + 30 * n1].reshape((5, n1, 6))
    o += 30 * n1
    Dinv = w[o:o + n1]
    u = w[o + n1:o + 2 * n1]
    o += 2 * n1
    T = w[o:o + 36].reshape((6, 6))
    Tm = w[o + 36:o + 72].reshape((6, 6))
    ht = w[o + 72:o + 84].reshape((2, 6))
    return G, IA, vecs[0], vecs[1], vecs[2], vecs[3], Dinv, u, vecs[4], T, Tm, ht


@njit(cache=True)
def _aba_into(ki, kf, q, qd, tau, base, fext, qdd):
    dyn, lk = _unpack_dyn(ki, kf)
    return _aba(dyn, q, qd, tau, base, fext, lk, qdd, _aba_work(ki[0]), _NO_ARM)


@njit(cache=True)
def _aba_arm_into(ki, kf, q, qd, tau, base, fext, qdd, arm):
    dyn, lk = _unpack_dyn(ki, kf)
    return _aba(dyn, q, qd, tau, base, fext, lk, qdd, _aba_work(ki[0]), arm)


@njit(cache=True)
def _aba_batch(dyn, Q, QD, TAU, base, fext, lk, out, arm):
    work = _aba_work(dyn[0].shape[0])
    for k in range(Q.shape[0]):
        st = _aba(dyn, Q[k], QD[k], TAU[k], base[k], fext[k], lk, out[k], work, arm)
        if st != OK:
            if st < SINGULAR:
                _raise(st)
            return out, st
    return out, OK


# --------------------------------------------------------------------------- wrappers
def _dyn(model):
    """Return the kernel tuple: ``model.kin`` + inertias and gravity."""
    return model.dyn


def _check(model, st):
    """Raise the ValueError of a kernel status (non-finite input, singular inertia)."""
    if st >= SINGULAR:
        raise _singular(model, st)
    if st != OK:
        raise ValueError(f'{_STATUS[st]} contains NaN or inf')


def _form(form):
    try:
        return _FORM[form]
    except (KeyError, TypeError):
        raise ValueError(f"unknown form {form!r}; expected one of {', '.join(FORMS)}") from None


def _fext(model, f_ext, B):
    """``f_ext`` as an (nl, 6) (or (B, nl, 6)) array of link-frame wrenches."""
    if f_ext is None:
        return _NO_FEXT if B is None else np.broadcast_to(_NO_FEXT, (B, 0, 6))
    nl = len(model.link_names)
    if isinstance(f_ext, dict):
        arr = np.zeros((nl, 6))
        for link, w in f_ext.items():
            w = np.asarray(w, dtype=float)
            if w.shape != (6,):
                raise ValueError(f'f_ext[{link!r}] must be a wrench (m, f) of shape (6,), '
                                 f'got {w.shape}')
            arr[model.link_index(link)] += w
    else:
        arr = _canonical(f_ext)
    if B is None:
        if arr.shape != (nl, 6):
            raise ValueError(f'f_ext must have shape ({nl}, 6) (one wrench per link of '
                             f"model '{model.name}') or be a {{link: wrench}} dict, "
                             f'got {arr.shape}')
        return arr
    if arr.shape == (nl, 6):
        return np.broadcast_to(arr, (B, nl, 6))
    if arr.shape != (B, nl, 6):
        raise ValueError(f'f_ext must have shape ({nl}, 6) or ({B}, {nl}, 6), got {arr.shape}')
    return arr


def _lk(model):
    return model.lk


def _states(model, q, vectors):
    """Check shapes: ``q`` (nq,)/(B, nq) and each of ``vectors`` (nv,)/(B, nv), same B."""
    q, batched = _as_batch(model, q, model.nq, 'q')
    out = [q]
    for name, v in vectors:
        v, vb = _as_batch(model, v, model.nv, name)
        if vb != batched or (batched and v.shape[0] != q.shape[0]):
            raise ValueError(f'q and {name} batch shapes differ: {q.shape} vs {v.shape}')
        out.append(v)
    return out, (q.shape[0] if batched else None)


def inverse_dynamics(model, q, qd, qdd, form='body', f_ext=None, base_pose=None):
    """
    Joint forces ``τ = M(q) q̈ + C(q, q̇) q̇ + g(q) - Σ J_lᵀ f_l``, shape (nv,) or (B, nv).

    Recursive Newton-Euler, O(n), in ``form`` 'body' | 'spatial' | 'hybrid' (module
    docstring; seed 002 §4).  ``f_ext``: wrenches on links (module docstring).  For a
    floating base ``tau[:6]`` is the base wrench in the base frame.  Raises ValueError on
    wrong shapes, NaN/inf or unknown names.
    """
    fm = _FORM.get(form, -1) if form.__class__ is str else -1
    if fm < 0:
        fm = _form(form)
    (q, qd, qdd), B = _states(model, q, (('qd', qd), ('qdd', qdd)))
    if B is None:
        tau = np.empty(model.nv)
        if base_pose is None and f_ext is None:
            st = _fast(model, 'id plain', _id_plain, (model.packed_int, model.packed_float, q,
                                                      qd, qdd, fm, 1.0, tau))
        else:
            st = _fast(model, ('id', base_pose is None, f_ext is None), _id_into,
                       (model.packed_int, model.packed_float, q, qd, qdd,
                        _EYE4 if base_pose is None else _base(model, base_pose, None),
                        _NO_FEXT if f_ext is None else _fext(model, f_ext, None),
                        fm, 1.0, tau))
        if st:
            _check(model, st)
        return tau
    return _id_batch(_dyn(model), q, qd, qdd, _base(model, base_pose, B), _fext(model, f_ext, B),
                     _lk(model), fm, 1.0, np.empty((B, model.nv)))


def gravity_torques(model, q, base_pose=None):
    """
    Gravity torques ``g(q)`` = inverse dynamics at rest, shape (nv,) or (B, nv).

    For a floating base the first six entries are the base wrench that holds the robot
    against gravity (base frame).  Equals ``∂U/∂q`` of the potential energy.
    """
    q, batched = _as_batch(model, q, model.nq, 'q')
    if not batched:
        z = np.zeros(model.nv)
        tau = np.empty(model.nv)
        if base_pose is None:
            st = _fast(model, 'id plain', _id_plain, (model.packed_int, model.packed_float, q,
                                                      z, z, 0, 1.0, tau))
        else:
            st = _fast(model, ('id', False, True), _id_into,
                       (model.packed_int, model.packed_float, q, z, z,
                        _base(model, base_pose, None), _NO_FEXT, 0, 1.0, tau))
        if st:
            _check(model, st)
        return tau
    z = np.zeros((q.shape[0], model.nv))
    return _id_batch(_dyn(model), q, z, z, _base(model, base_pose, q.shape[0]),
                     _fext(model, None, q.shape[0]), _lk(model), 0, 1.0, np.empty(z.shape))


def joint_wrenches(model, q, qd, qdd, f_ext=None, base_pose=None, per_body=False):
    """
    Wrench each joint transmits to its child body, in the child body frame, moment first.

    Returns (nq, 6) (or (B, nq, 6)): row ``k`` belongs to coordinate ``joint_names[k]``
    and is the wrench that joint's 1-DOF joint transmits from its parent onto its child
    body (and everything beyond), in the child body frame: for URDF joints that is the
    child link frame; for the components of a planar joint it is the massless virtual
    body frame (its last component's row is the wrench in the child link frame).  Mimic
    followers have no coordinate and no row; ``per_body=True`` returns all bodies
    ``(nb, 6)`` in ``model.body_names`` order instead.  ``X_iᵀ W_i`` is the joint force.
    For a floating base the base wrench is ``inverse_dynamics(...)[:6]``.
    """
    (q, qd, qdd), B = _states(model, q, (('qd', qd), ('qdd', qdd)))
    if B is None:
        W = _wrench_entry(_dyn(model), q, qd, qdd,
                          _EYE4 if base_pose is None else _base(model, base_pose, None),
                          _fext(model, f_ext, None), _lk(model), 1.0)
    else:
        W = _wrench_batch(_dyn(model), q, qd, qdd, _base(model, base_pose, B),
                          _fext(model, f_ext, B), _lk(model), 1.0)
    if per_body:
        return W
    return W[..., _owner_bodies(model), :]


_OWNERS = weakref.WeakKeyDictionary()


def _owner_bodies(model):
    """Index of the body whose 1-DOF joint owns each coordinate (its first, unscaled body)."""
    owner = _OWNERS.get(model)
    if owner is not None:
        return owner
    owner = np.full(model.nq, -1)
    for b in range(model.nb):
        k = model.q_index[b]
        if owner[k] < 0 and model.q_mult[b] == 1.0 and model.q_offset[b] == 0.0:
            owner[k] = b
    for b in range(model.nb):
        if owner[model.q_index[b]] < 0:
            owner[model.q_index[b]] = b
    _OWNERS[model] = owner
    return owner


def mass_matrix(model, q, base_pose=None, out=None, armature=None):
    """
    Joint-space mass matrix ``M(q) = Jᵀ M^b J`` (seed 002 (81)), (nv, nv) or (B, nv, nv).

    Composite rigid bodies in spatial form; symmetric positive definite unless the model
    has massless leaves.  Floating base: rows/columns 0-5 are the base body twist.
    ``out``: an array of the result's shape to write into instead of a new one (repeated
    large batches; see :func:`~liemb_ros.kinematics.forward_kinematics`).
    ``armature``: (nq,) rotor inertias [kg m² or kg] added to the joints' diagonal,
    ``M + diag(0_6, armature)`` (Pinocchio's ``model.armature``; see :func:`singular_joints`).
    """
    if armature is not None:
        arm = _armature(model, armature)
        M = mass_matrix(model, q, base_pose=base_pose, out=out)
        a = model.nv - model.nq
        idx = np.arange(a, model.nv)
        M[..., idx, idx] += arm
        return M
    q, batched = _as_batch(model, q, model.nq, 'q')
    if not batched:
        out = _out(out, (model.nv, model.nv), (('q', q), ('base_pose', base_pose)))
        st = _fast(model, ('crba', base_pose is None), _crba_into,
                   (model.packed_int, model.packed_float, q, np.zeros(model.nv),
                    _EYE4 if base_pose is None else _base(model, base_pose, None), False, out))
        if st:
            _check(model, st)
        return out
    B = q.shape[0]
    # a new output is allocated by numpy (large arrays get huge pages: ~5x less first-touch
    # time than numba's allocator for talos' 115 MB at B = 10 000)
    return _crba_batch(_dyn(model), q, np.broadcast_to(np.zeros(model.nv), (B, model.nv)),
                       _base(model, base_pose, B), False,
                       _out(out, (B, model.nv, model.nv), (('q', q), ('base_pose', base_pose))))


def mass_matrix_derivative(model, q, qd, base_pose=None):
    """
    Time derivative ``Ṁ = dM/dt`` along the velocity ``qd``, (nv, nv) or (B, nv, nv).

    ``Ṁ = J̇ᵀ M^b J + Jᵀ M^b J̇`` evaluated recursively over composite bodies (the kernel of
    :func:`mass_matrix`, module docstring), independent of the Coriolis matrix; with it
    ``Ṁ - 2C`` is skew-symmetric.  Floating base: the base moves by ``Ċ = C V̂_base``.
    """
    (q, qd), B = _states(model, q, (('qd', qd),))
    if B is None:
        out = np.empty((model.nv, model.nv))
        st = _fast(model, ('crba', base_pose is None), _crba_into,
                   (model.packed_int, model.packed_float, q, qd,
                    _EYE4 if base_pose is None else _base(model, base_pose, None), True, out))
        if st:
            _check(model, st)
        return out
    return _crba_batch(_dyn(model), q, qd, _base(model, base_pose, B), True,
                       np.empty((B, model.nv, model.nv)))


def coriolis_matrix(model, q, qd, base_pose=None):
    """
    Christoffel-consistent Coriolis/centrifugal matrix ``C(q, q̇)``, (nv, nv) or (B, nv, nv).

    ``M q̈ + C q̇ + g = τ`` and ``Ṁ - 2C`` is skew-symmetric (module docstring); for a
    fixed base ``C_ij = Σ_k Γ_ijk q̇_k`` with the Christoffel symbols (85) of seed 002.
    """
    (q, qd), B = _states(model, q, (('qd', qd),))
    if B is None:
        out = np.empty((model.nv, model.nv))
        st = _fast(model, ('coriolis', base_pose is None), _coriolis_into,
                   (model.packed_int, model.packed_float, q, qd,
                    _EYE4 if base_pose is None else _base(model, base_pose, None), out))
        if st:
            _check(model, st)
        return out
    return _coriolis_batch(_dyn(model), q, qd, _base(model, base_pose, B))


def _singular(model, st):
    b = st - SINGULAR - 1
    what = (f"body '{model.body_names[b]}'" if b >= 0 else 'the floating base')
    return ValueError(f"forward dynamics of model '{model.name}': the articulated inertia of "
                      f'{what} is singular (a massless leaf or a body without inertia about '
                      'its joint); the mass matrix is not invertible')


def forward_dynamics(model, q, qd, tau, f_ext=None, base_pose=None, method='aba',
                     armature=None):
    """
    Joint accelerations ``q̈ = M^-1 (τ - C q̇ - g + Σ J_lᵀ f_l)``, shape (nv,) or (B, nv).

    ``method='aba'``: the O(n) articulated-body algorithm in body-fixed form (module
    docstring); ``'cholesky'``: solve ``M q̈ = τ - ID(q, q̇, 0)`` with the mass matrix
    (used automatically when mimic coupling makes two bodies share a coordinate).
    Floating base: ``qdd[:6]`` is the derivative of the base body twist, ``tau[:6]``
    the base wrench (zero for an unactuated base).  Raises ValueError for a singular
    mass matrix (massless leaf), wrong shapes or NaN/inf.  ``armature``: (nq,) rotor
    inertias added to the joints' diagonal, ``(M + diag(0_6, armature)) q̈ = …``, in the
    ABA as an addition to each joint's pivot ``D_i = S_iᵀ I^A_i S_i + armature_i`` (as
    Pinocchio's ``aba`` with ``model.armature``); it regularises massless leaves.
    """
    if method not in ('aba', 'cholesky'):
        raise ValueError(f"unknown method {method!r}; expected 'aba' or 'cholesky'")
    (q, qd, tau), B = _states(model, q, (('qd', qd), ('tau', tau)))
    arm = None if armature is None else _armature(model, armature)
    if method == 'cholesky' or model.shared_coordinates:
        return _fd_cholesky(model, q, qd, tau, f_ext, base_pose, B, arm)
    if B is None:
        qdd = np.empty(model.nv)
        base = _EYE4 if base_pose is None else _base(model, base_pose, None)
        fext = _NO_FEXT if f_ext is None else _fext(model, f_ext, None)
        if arm is None:
            st = _fast(model, ('aba', base_pose is None, f_ext is None), _aba_into,
                       (model.packed_int, model.packed_float, q, qd, tau, base, fext, qdd))
        else:
            st = _fast(model, ('aba_arm', base_pose is None, f_ext is None), _aba_arm_into,
                       (model.packed_int, model.packed_float, q, qd, tau, base, fext, qdd,
                        arm))
    else:
        qdd, st = _aba_batch(_dyn(model), q, qd, tau, _base(model, base_pose, B),
                             _fext(model, f_ext, B), _lk(model), np.empty((B, model.nv)),
                             _NO_ARM if arm is None else arm)
    if st:
        _check(model, st)
    return qdd


def forward_dynamics_function(model, armature=None):
    """
    Return ``fd(q, qd, tau, base_pose=None) -> qdd`` bound to ``model``, for inner loops.

    The same ABA kernel as :func:`forward_dynamics` without its per-call shape checks and
    argument packing (what a simulator's right-hand side calls thousands of times per
    second): ``q`` (nq,), ``qd`` and ``tau`` (nv,) must be float64 arrays of those shapes,
    ``base_pose`` a (4, 4) float64 pose or None.  NaN/inf input and a singular
    articulated inertia still raise ValueError (checked inside the kernel).  Models whose
    bodies share coordinates (coupled mimic joints) get :func:`forward_dynamics` itself.
    ``armature``: (nq,) rotor inertias, as in :func:`forward_dynamics`.
    """
    arm = None if armature is None else _armature(model, armature)
    if model.shared_coordinates:
        return lambda q, qd, tau, base_pose=None: forward_dynamics(model, q, qd, tau,
                                                                   base_pose=base_pose,
                                                                   armature=arm)
    ki, kf, nv = model.packed_int, model.packed_float, model.nv
    if arm is not None:
        def fd_arm(q, qd, tau, base_pose=None):
            qdd = np.empty(nv)
            st = _aba_arm_into(ki, kf, q, qd, tau, _EYE4 if base_pose is None else base_pose,
                               _NO_FEXT, qdd, arm)
            if st:
                _check(model, st)
            return qdd
        return fd_arm

    def fd(q, qd, tau, base_pose=None):
        qdd = np.empty(nv)
        st = _aba_into(ki, kf, q, qd, tau, _EYE4 if base_pose is None else base_pose, _NO_FEXT,
                       qdd)
        if st:
            _check(model, st)
        return qdd
    return fd


def _fd_cholesky(model, q, qd, tau, f_ext, base_pose, B, arm=None):
    if not np.all(np.isfinite(tau)):
        raise ValueError('tau contains NaN or inf')
    bias = inverse_dynamics(model, q, qd, np.zeros_like(tau), f_ext=f_ext, base_pose=base_pose)
    M = mass_matrix(model, q, base_pose=base_pose, armature=arm)
    try:
        L = np.linalg.cholesky(M)
    except np.linalg.LinAlgError:
        raise ValueError(f"forward dynamics of model '{model.name}': the mass matrix is "
                         'singular (a massless leaf or a body without inertia about its '
                         'joint)') from None
    rhs = (tau - bias)[..., None]
    y = np.linalg.solve(L, rhs)
    return np.linalg.solve(np.swapaxes(L, -1, -2), y)[..., 0]


def _armature(model, armature):
    """``armature`` (scalar or (nq,)) as a canonical, finite, non-negative (nq,) array."""
    arm = np.array(np.broadcast_to(np.asarray(armature, dtype=float), (model.nq,)),
                   dtype=_F64, order='C')
    if not (np.all(np.isfinite(arm)) and np.all(arm >= 0)):
        raise ValueError('armature must be finite and non-negative')
    return arm


def singular_joints(model, q, base_pose=None, armature=None, rtol=1e-9):
    """
    Return the indices of the joints whose articulated inertia vanishes at ``q``.

    The pivots of ``M + diag(armature)`` eliminated from the last coordinate to the first
    (leaves first, the ``U D Uᵀ`` factorisation whose pivots are the ABA's
    ``D_i = S_iᵀ I^A_i S_i``) are compared with ``rtol · max_i M_ii``: a joint at or below
    it carries no inertia (a massless leaf, or a subtree without inertia about the joint
    axis) and makes ``M`` singular or numerically so.  Each is given its armature in turn
    (elimination continues with the regularised pivot), so the result is the set of
    joints that :func:`forward_dynamics` needs an armature at.  ``armature`` here is only
    what is already there.  Returns an int array (joint indices 0..nq-1).
    """
    M = mass_matrix(model, q, base_pose=base_pose, armature=armature).copy()
    a = model.nv - model.nq
    tol = rtol * max(float(np.max(np.diag(M)[a:], initial=0.0)), 1e-300)
    found = []
    for k in range(model.nv - 1, -1, -1):
        d = M[k, k]
        if k >= a and not d > tol:
            found.append(k - a)
            d = M[k, k] = max(d, 0.0) + tol if tol > 0 else 1.0
        if d > 0:
            M[:k, :k] -= np.outer(M[:k, k], M[k, :k]) / d
    return np.array(sorted(found), dtype=np.int64)


__all__ = ['FORMS', 'inverse_dynamics', 'gravity_torques', 'joint_wrenches', 'mass_matrix',
           'mass_matrix_derivative', 'coriolis_matrix', 'forward_dynamics', 'singular_joints']
