"""
Tree sweeps: poses and twists of the bodies, root to leaves or one link to the root.

Body ``j``'s pose follows from its parent's by the body-fixed product of exponentials
``C_j = C_λ(j) A_{λ(j),j} exp(^j X_j θ_j)`` (Müller, Multibody Syst. Dyn. 43 (2018) 37–70,
eq. (8); :func:`pose_step`), or, multiplied from the tip, a link frame's pose in the frame
of each body on its way to the root (:func:`to_parent`, :func:`link_pose_into`).  The
spatial joint screws ``J^s_j = Ad_{C_j} ^j X_j`` (ibid. eq. (29)) and the spatial twists
``V^s_j = V^s_λ(j) + J^s_j θ̇_j`` (eq. (31)) are :func:`spatial_columns`; the twists of all
bodies in each of the four representations (eqs. (15), (31), (58), (68)) are
:func:`body_twists_into`.  See docs/theory/recursions.md and docs/theory/representations.md.

Kernels take the model as the :class:`~.layout.Tree` ``model``; entry points ending in
``_into``/``_plain``/``_link`` take the packed arrays ``(ki, kf)`` of a single call and
unpack them (:func:`~.layout.unpack_kinematics`), those ending in ``_batch`` take ``model``
and loop over a leading batch axis.  Each returns a status
code of :mod:`.dispatch`.

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

from .lie import Ad_apply_into, compose_into, exp_se3_scalars
from .dispatch import (BAD_BASE, BAD_Q, EYE4, LAYOUT, OK, at, check_state, finite, plain,
                       plain_pose, sizes)
from .layout import unpack_kinematics, unpack_links
from .numba_entry import SINGLE_CALL, c_view


@njit(cache=True)
def support_path(parent, body, path):
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
def joint_pose(model, q, j):
    """
    ``C_{λ(j),j} = A_{λ(j),j} exp(^j X_j θ_j)`` ([M18k] eq. (8)) as 12 scalars.

    Row-major top 3x4 of the relative pose, ``θ_j = q_mult[j] q[q_index[j]] + q_offset[j]``;
    the short cuts for the usual joint screws are in :func:`exp_se3_scalars`.
    """
    X = model.X
    A = model.A_rel
    e = exp_se3_scalars(X[j, 0], X[j, 1], X[j, 2], X[j, 3], X[j, 4], X[j, 5],
                        model.q_mult[j] * q[model.q_index[j]] + model.q_offset[j])
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
def rel_pose(model, q, i, G):
    """``G = C_{λ(i),i} = A_{λ(i),i} exp(^i X_i θ_i)`` ([M18k] eq. (8)); G is 4x4."""
    e = joint_pose(model, q, i)
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
def pose_step(model, q, j, C):
    """
    ``C[j+1] = C[λ(j)+1] A_{λ(j),j} exp(^j X_j θ_j)`` ([M18k] eq. (8)).

    ``C`` holds the base pose in slot 0 and body ``j`` in slot ``j + 1``; the relative
    pose (:func:`joint_pose`) stays in registers.
    """
    g00, g01, g02, g03, g10, g11, g12, g13, g20, g21, g22, g23 = joint_pose(model, q, j)
    p = model.parent[j] + 1
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


@njit(cache=True, inline='always')
def to_parent(model, q, b, p00, p01, p02, p03, p10, p11, p12, p13, p20, p21, p22, p23):
    """
    Move a pose from the frame of body ``b`` into its parent's: ``P <- A_{λ(b),b} exp(X θ) P``.

    [M18k] eq. (8) multiplied from the tip.  ``P`` is the top 3x4 of a pose as 12
    scalars, row-major, in and out, so the tip-to-root sweeps keep it in registers.
    """
    g00, g01, g02, g03, g10, g11, g12, g13, g20, g21, g22, g23 = joint_pose(model, q, b)
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
def local_base(base, out):
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


@njit(cache=True)
def poses_with_base(model, q, base):
    """Return ``C`` of shape (nb + 1, 4, 4): the base pose, then every body's pose."""
    nb = model.parent.shape[0]
    C = np.empty((nb + 1, 4, 4))
    C[0] = base
    for j in range(nb):
        pose_step(model, q, j, C)
    return C


@njit(cache=True, inline='always')
def _forward_kinematics(model, link_body, link_offset, q, base, out, C):
    """
    All link poses (world frame) into ``out[l]``; returns a status code.

    ``link_body``, ``link_offset``: the model's link fields (:class:`~.layout.Tree`);
    ``C`` (nb + 1, 4, 4) is work space: the base pose, then the body poses.
    """
    if not finite(q):
        return BAD_Q
    if not finite(base):
        return BAD_BASE
    for r in range(4):
        for c in range(4):
            C[0, r, c] = base[r, c]
    for j in range(C.shape[0] - 1):
        pose_step(model, q, j, C)
    for li in range(link_body.shape[0]):
        compose_into(C[link_body[li] + 1], link_offset[li], out[li])
    return OK


@njit(cache=True, inline='always')
def _poses_work(w, nb):
    """The base and body poses ``C`` (nb + 1, 4, 4), a view of the workspace ``w``."""
    return c_view(w[:16 * (nb + 1)], (nb + 1, 4, 4))


@njit(**SINGLE_CALL)
def forward_kinematics_into(ki, kf, w, q, base, out):
    if not (plain(q, sizes(ki)[0]) and plain_pose(base)):
        return LAYOUT
    model = unpack_kinematics(ki, kf)
    link_body, link_offset = unpack_links(ki, kf)
    return _forward_kinematics(model, link_body, link_offset, q, base, out,
                               _poses_work(w, model.parent.shape[0]))


@njit(**SINGLE_CALL)
def forward_kinematics_plain(ki, kf, w, q, out):
    """Single call without base pose (fewer arguments to unbox)."""
    if not plain(q, sizes(ki)[0]):
        return LAYOUT
    model = unpack_kinematics(ki, kf)
    link_body, link_offset = unpack_links(ki, kf)
    return _forward_kinematics(model, link_body, link_offset, q, EYE4, out,
                               _poses_work(w, model.parent.shape[0]))


@njit(cache=True, nogil=True)
def forward_kinematics_batch(model, link_body, link_offset, Q, base, out):
    C = np.empty((model.parent.shape[0] + 1, 4, 4))
    for k in range(Q.shape[0]):
        st = _forward_kinematics(model, link_body, link_offset, Q[k], at(base, k), out[k], C)
        if st != OK:
            return st
    return OK


@njit(cache=True, inline='always')
def _link_pose(model, q, base, body, T, out):
    """
    Pose of the link frame ``C_body T`` into ``out``; returns a status code.

    One sweep from the link to the root, ``P <- A_{λ(j),j} exp(^j X_j q_j) P`` from
    ``P = T`` (the same body-fixed POE, [M18k] eq. (8), multiplied from the tip), the
    3x4 pose in registers; then ``C = base P``.
    """
    parent = model.parent
    if not finite(q):
        return BAD_Q
    if not finite(base):
        return BAD_BASE
    (p00, p01, p02, p03, p10, p11, p12, p13,
     p20, p21, p22, p23) = (T[0, 0], T[0, 1], T[0, 2], T[0, 3], T[1, 0], T[1, 1], T[1, 2],
                            T[1, 3], T[2, 0], T[2, 1], T[2, 2], T[2, 3])
    b = body
    while b >= 0:
        (p00, p01, p02, p03, p10, p11, p12, p13,
         p20, p21, p22, p23) = to_parent(model, q, b, p00, p01, p02, p03, p10, p11, p12,
                                         p13, p20, p21, p22, p23)
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


@njit(**SINGLE_CALL)
def link_pose_into(ki, kf, q, base, body, T, out):
    """Single configuration: the pose of the link frame ``C_body T`` (no work arrays)."""
    if not (plain(q, sizes(ki)[0]) and plain_pose(base)):
        return LAYOUT
    return _link_pose(unpack_kinematics(ki, kf), q, base, body, T, out)


@njit(**SINGLE_CALL)
def link_pose_link(ki, kf, q, li, out):
    """:func:`link_pose_into` for link index ``li``, no base pose (fewer arguments to unbox)."""
    if not plain(q, sizes(ki)[0]):
        return LAYOUT
    link_body, link_offset = unpack_links(ki, kf)
    return _link_pose(unpack_kinematics(ki, kf), q, EYE4, link_body[li], link_offset[li], out)


@njit(cache=True, nogil=True)
def link_pose_batch(model, Q, base, body, T, out):
    for k in range(Q.shape[0]):
        st = _link_pose(model, Q[k], at(base, k), body, T, out[k])
        if st != OK:
            return st
    return OK


@njit(cache=True, inline='always')
def spatial_columns(model, q, qd, base, C, Js, Vs, twists=True):
    """
    Poses, spatial joint screws and spatial twists of all nodes.

    Node 0 is the base, node ``i + 1`` body ``i``.  ``Js`` (nbase + nb, 6): the spatial
    columns (unscaled by ``q_mult``): the base columns ``Ad_{C_base} e_k`` then
    ``J^s_i = Ad_{C_i} X_i`` ([M18k] eq. (29)).  ``Vs`` (nb + 1, 6) the spatial twists;
    without ``twists`` neither ``Vs`` nor ``qd`` is touched (the mass matrix: ``qd`` may
    then be any vector, ``q`` itself).
    "Spatial" here means in the world-aligned frame at the base origin
    (:func:`local_base`): ``C`` are the poses in that frame, ``C[0] = (R_base, 0)``.
    """
    parent = model.parent
    X = model.X
    q_index = model.q_index
    q_mult = model.q_mult
    nbase = model.nbase
    nb = parent.shape[0]
    local_base(base, C[0])
    for r in range(6):
        Vs[0, r] = 0.0
    for k in range(nbase):
        # Ad_{C[0]} e_k: (R e_k, 0) for k < 3, (0, R e_{k-3}) otherwise
        for r in range(3):
            a = base[r, k % 3]
            Js[k, r] = a if k < 3 else 0.0
            Js[k, 3 + r] = 0.0 if k < 3 else a
        if twists:
            for r in range(6):
                Vs[0, r] += Js[k, r] * qd[k]
    for i in range(nb):
        s = i + 1
        p = parent[i] + 1
        pose_step(model, q, i, C)
        col = nbase + i
        Ad_apply_into(C[s], X[i], Js[col])
        if twists:
            rate = q_mult[i] * qd[nbase + q_index[i]]
            for r in range(6):
                Vs[s, r] = Vs[p, r] + Js[col, r] * rate


@njit(cache=True)
def body_twists_into(model, q, qd, base, rep, C, V):
    """
    Twists of all bodies by the recursion of their own representation ([M18k]).

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
    parent = model.parent
    X = model.X
    q_index = model.q_index
    q_mult = model.q_mult
    nbase = model.nbase
    st = check_state(q, qd, base)
    if st != OK:
        return st
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
        pose_step(model, q, j, C)
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
