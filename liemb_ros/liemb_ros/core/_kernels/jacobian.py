"""
Jacobians of a link frame and their time derivatives, in the four representations.

Two routes, compared with each other and with Pinocchio in the tests:

* :func:`_jacobian` (with ``J̇``): one sweep root to link along the support path, the
  spatial columns ``J^s_j = Ad_{C_j} ^j X_j`` (Müller, Multibody Syst. Dyn. 43 (2018)
  37–70, eq. (29)), the spatial twist ``V^s_j = V^s_λ(j) + J^s_j q̇_j`` (eq. (31)) and the
  column derivatives ``J̇^s_j = [V^s_j, J^s_j]`` (Müller, Multibody Syst. Dyn. 42 (2018)
  219–248, eq. (16)); the other representations by the maps of Table 3 ([M18k];
  :func:`~.lie.spatial_to`, the one change of representation) and
  their time derivatives (docstring of :mod:`liemb_ros.core.kinematics`).
* :func:`_jacobian_tip` (``J`` alone, cheaper): one sweep link to root builds the link's
  pose ``P_j`` in each body frame on the way and the body-fixed columns
  ``J^b_j = Ad_{P_j}^-1 ^j X_j`` ([M18k] eqs. (17), (20)).

See docs/theory/representations.md and docs/theory/recursions.md.
"""
import numpy as np
from numba import njit

from .lie import ad_apply_into, body_to, compose_into, pose_tuples, put_column, spatial_to
from .dispatch import (BAD_BASE, BAD_Q, BAD_QD, EYE4, LAYOUT, OK, at, finite, plain, plain_pose,
                       raise_status, sizes)
from .layout import jacobian_floats, unpack_kinematics, unpack_links
from .numba_entry import SINGLE_CALL, c_view
from .tree import pose_step, support_path, to_parent


@njit(cache=True, inline='always')
def _jacobian(model, q, qd, base, body, T, rep, deriv, J, Jd, work):
    """
    Jacobian (and with ``deriv`` its time derivative) of the link frame ``C_body T``.

    Writes ``J``, ``Jd`` (6, nv) in representation ``rep``; works in ``work`` (at least
    :func:`~.layout.jacobian_floats` floats).
    Returns a status code (non-finite input).  The sweep works in the world-aligned frame at
    the base origin (poses, spatial columns and twists relative to it), so the body, hybrid
    and mixed results do not lose ``|r| eps`` to a base far from the world origin; the
    spatial ones are shifted to the world origin at the end (``v += r_base × ω``).
    """
    parent = model.parent
    X = model.X
    q_index = model.q_index
    q_mult = model.q_mult
    nbase = model.nbase
    if not finite(q):
        return BAD_Q
    if deriv and not finite(qd):
        return BAD_QD
    if not finite(base):
        return BAD_BASE
    nb = parent.shape[0]
    nv = J.shape[1]
    # the support path: int64 in the float64 workspace, past C, tmp, Vs, CL (the link pose)
    path = work[16 * nb + 44:17 * nb + 44].view(np.int64)
    n = support_path(parent, body, path)
    C = c_view(work[:16 * nb + 16], (nb + 1, 4, 4))
    for r in range(3):   # the base pose in the world-aligned frame at its own origin
        C[0, r, 0] = base[r, 0]
        C[0, r, 1] = base[r, 1]
        C[0, r, 2] = base[r, 2]
        C[0, r, 3] = 0.0
        C[0, 3, r] = 0.0
    C[0, 3, 3] = 1.0
    tmp = work[16 * nb + 16:16 * nb + 22]
    Vs = work[16 * nb + 22:16 * nb + 28]
    CL = c_view(work[16 * nb + 28:16 * nb + 44], (4, 4))
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
                ad_apply_into(Vs, J[:, k], Jd[:, k])   # [M18d] eq. (114)
    for k in range(n):
        j = path[k]
        pose_step(model, q, j, C)
        s = j + 1
        # J^s_j = Ad_{C_j} ^j X_j ([M18k] eq. (29)): (R e, r x (R e) + R eta)
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
            # J̇^s_j = [V^s_j, J^s_j] ([M18d] eq. (16)); J^s_j = m * (a, r x a + b)
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
    R, r = pose_tuples(CL)
    r0, r1, r2 = r
    # ṙ = v^s + ω^s × r
    rd0 = Vs[3] + Vs[1] * r2 - Vs[2] * r1
    rd1 = Vs[4] + Vs[2] * r0 - Vs[0] * r2
    rd2 = Vs[5] + Vs[0] * r1 - Vs[1] * r0
    for c in range(nv):
        w0 = J[0, c]
        w1 = J[1, c]
        w2 = J[2, c]
        if deriv and rep == 0:
            # J̇^b = Ad_C^-1 (J̇^s - [V^s, J^s]) ([M18k] eq. (90))
            ad_apply_into(Vs, J[:, c], tmp)
            y = spatial_to(0, R, r, (Jd[0, c] - tmp[0], Jd[1, c] - tmp[1], Jd[2, c] - tmp[2],
                                     Jd[3, c] - tmp[3], Jd[4, c] - tmp[4], Jd[5, c] - tmp[5]))
            put_column(Jd, c, y)
        elif deriv:
            # linear rows: d/dt (v - r × ω)
            a0 = Jd[0, c]
            a1 = Jd[1, c]
            a2 = Jd[2, c]
            Jd[3, c] -= r1 * a2 - r2 * a1 + rd1 * w2 - rd2 * w1
            Jd[4, c] -= r2 * a0 - r0 * a2 + rd2 * w0 - rd0 * w2
            Jd[5, c] -= r0 * a1 - r1 * a0 + rd0 * w1 - rd1 * w0
            if rep == 3:
                # Rᵀ(ω̇_J - ω^s × ω_J)
                b0 = Jd[0, c] - (Vs[1] * w2 - Vs[2] * w1)
                b1 = Jd[1, c] - (Vs[2] * w0 - Vs[0] * w2)
                b2 = Jd[2, c] - (Vs[0] * w1 - Vs[1] * w0)
                Jd[0, c] = CL[0, 0] * b0 + CL[1, 0] * b1 + CL[2, 0] * b2
                Jd[1, c] = CL[0, 1] * b0 + CL[1, 1] * b1 + CL[2, 1] * b2
                Jd[2, c] = CL[0, 2] * b0 + CL[1, 2] * b1 + CL[2, 2] * b2
        y = spatial_to(rep, R, r, (w0, w1, w2, J[3, c], J[4, c], J[5, c]))
        put_column(J, c, y)
    return OK


@njit(cache=True, inline='always')
def _jacobian_tip(model, q, base, body, T, rep, J):
    """
    Jacobian of the link frame ``C_body T`` by one sweep from the link to the root.

    The body-fixed columns ``J^b_j = Ad^{-1}_{P_j} X_j`` ([M18k] eqs. (17), (20)), ``P_j`` the
    pose of the link frame in the frame of body ``j``, built on the way down as
    ``P_{λ(j)} = A_{λ(j),j} exp(X_j θ_j) P_j``: no support path and no world poses of
    the intermediate bodies.  Other representations by one map per column at the end
    (:func:`~.lie.body_to`):
    hybrid ``(R ω^b, R v^b)``, mixed ``(ω^b, R v^b)``, spatial ``Ad_C J^b``.  The
    independent route :func:`_jacobian` (world poses, spatial columns) also gives ``J̇``.
    Returns a status code (non-finite input).
    """
    parent = model.parent
    X = model.X
    q_index = model.q_index
    q_mult = model.q_mult
    nbase = model.nbase
    if not finite(q):
        return BAD_Q
    if not finite(base):
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
         p20, p21, p22, p23) = to_parent(model, q, b, p00, p01, p02, p03, p10, p11, p12, p13,
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
    R = (R00, R01, R02, R10, R11, R12, R20, R21, R22)
    r = (r0, r1, r2)
    for c in range(nv):
        y = body_to(rep, R, r, (J[0, c], J[1, c], J[2, c], J[3, c], J[4, c], J[5, c]))
        put_column(J, c, y)
    return OK


@njit(**SINGLE_CALL)
def jacobian_into(ki, kf, w, q, qd, base, body, T, rep, deriv, J, Jd):
    """Single configuration: ``J`` (and ``Jd = J̇`` if ``deriv``); returns a status."""
    nq, nv = sizes(ki)
    if not (plain(q, nq) and (not deriv or plain(qd, nv)) and plain_pose(base)):
        return LAYOUT
    return _jacobian(unpack_kinematics(ki, kf), q, qd, base, body, T, rep, deriv, J, Jd, w)


@njit(**SINGLE_CALL)
def jacobian_link(ki, kf, q, li, rep, J):
    """:func:`jacobian_tip_into` for link index ``li`` and no base pose (fewer arguments)."""
    if not plain(q, sizes(ki)[0]):
        return LAYOUT
    link_body, link_offset = unpack_links(ki, kf)
    return _jacobian_tip(unpack_kinematics(ki, kf), q, EYE4, link_body[li], link_offset[li],
                         rep, J)


@njit(**SINGLE_CALL)
def jacobian_tip_into(ki, kf, q, base, body, T, rep, J):
    """Single configuration: ``J`` of the link frame ``C_body T`` by :func:`_jacobian_tip`."""
    if not (plain(q, sizes(ki)[0]) and plain_pose(base)):
        return LAYOUT
    return _jacobian_tip(unpack_kinematics(ki, kf), q, base, body, T, rep, J)


@njit(cache=True, nogil=True)
def jacobian_batch(model, Q, QD, base, body, T, rep, deriv, out):
    """Batch of configurations: ``out[k, 0] = J_k`` (and ``out[k, 1] = J̇_k``)."""
    nb = model.parent.shape[0]
    work = np.empty(jacobian_floats(nb, model.nbase + nb) if deriv else 0)
    for k in range(Q.shape[0]):
        if deriv:
            st = _jacobian(model, Q[k], QD[k], at(base, k), body, T, rep, deriv, out[k, 0],
                           out[k, 1], work)
        else:
            st = _jacobian_tip(model, Q[k], at(base, k), body, T, rep, out[k, 0])
        if st != OK:
            raise_status(st)
    return out


@njit(**SINGLE_CALL)
def link_twist_into(ki, kf, w, q, qd, base, body, T, rep, V):
    """Single configuration: the twist ``V = J qd`` (6,) of the link frame in ``rep``."""
    nq, nv = sizes(ki)
    if not (plain(q, nq) and plain(qd, nv) and plain_pose(base)):
        return LAYOUT
    if not finite(qd):
        return BAD_QD
    model = unpack_kinematics(ki, kf)
    nb = model.parent.shape[0]
    o = 17 * nb + 44                 # past the sweep's work (layout.jacobian_floats)
    J = c_view(w[o:o + 6 * qd.shape[0]], (6, qd.shape[0]))
    st = _jacobian(model, q, qd, base, body, T, rep, False, J, J, w)
    for r in range(6):
        acc = 0.0
        for c in range(J.shape[1]):
            acc += J[r, c] * qd[c]
        V[r] = acc
    return st
