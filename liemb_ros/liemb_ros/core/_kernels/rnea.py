"""
Recursive Newton-Euler inverse dynamics in body-fixed, spatial and hybrid form.

Müller, Multibody Syst. Dyn. 42 (2018) 219–248, §4: body-fixed eqs. (65)-(67)
(:func:`rnea_body`), spatial eqs. (69)-(71) (:func:`rnea_spatial`), hybrid eqs. (75)-(76)
(:func:`rnea_hybrid`, with the corrections of misprints in the paper listed in
docs/theory/errata.md); the three forms agree to round-off.  The backward loops start at
the last body and subtract the applied wrenches (misprints in the paper, see
docs/theory/errata.md).  Gravity enters as the base acceleration ``V̇_0 = (0, -g)``.  The
equations are stated in docs/theory/recursions.md and in the docstring of
:mod:`liemb_ros.core.dynamics`.

The spatial and hybrid forms work in the world-aligned frame at the base origin
(:func:`~liemb_ros.core._kernels.tree.local_base`), invariant to where the robot stands.
"""
import numpy as np
from numba import njit

from .lie import (Ad_apply_into, Ad_inv_apply_into, Ad_invT_add_into, Ad_invT_apply_into,
                  AdT_apply_into, ad_apply_into, adT_apply_into, compose_into)
from .dispatch import (EYE4, LAYOUT, NO_FEXT, OK, at, check_inputs, plain, plain_pose,
                       raise_status, sizes)
from .inertia import dot6, inertia10_apply, inertia10_to, mat6_vec
from .layout import id_floats, id_frame_floats, unpack
from .numba_entry import SINGLE_CALL, c_view
from .tree import local_base, rel_pose


@njit(cache=True, inline='always')
def body_fext(model, fext, out):
    """Write the applied wrenches of every body (slot 0: base) in body frames, ``Ad_T^-T W``."""
    out[:, :] = 0.0
    if fext.shape[0] == 0:
        return
    link_body = model.link_body
    link_offset = model.link_offset
    for li in range(fext.shape[0]):
        Ad_invT_add_into(link_offset[li], fext[li], out[link_body[li] + 1])


@njit(cache=True, inline='always')
def rnea_body(model, q, qd, qdd, base, fb, grav, tau, G, V, A, W):
    """
    Body-fixed RNEA ([M18d] (66)-(67)); slot 0 of V, A, W is the base.

    ``fb`` (nb + 1, 6): applied wrenches in body frames; ``grav`` scales gravity (0 or 1).
    Fills ``G`` (relative poses), ``V``, ``A`` (= V̇ incl. the gravity offset), ``W``
    (wrench each joint transmits to its body, body frame) and ``tau``.
    """
    parent = model.parent
    X = model.X
    q_index = model.q_index
    q_mult = model.q_mult
    nbase = model.nbase
    inertia = model.inertia
    base_inertia = model.base_inertia
    gravity = model.gravity
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
        rel_pose(model, q, i, G[i])
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
        mat6_vec(base_inertia, V[0], h)
        adT_apply_into(V[0], h, t)
        mat6_vec(base_inertia, A[0], h)
        for r in range(6):
            W[0, r] = h[r] - t[r] - fb[0, r]
    else:  # a fixed base's wrench is never used
        for r in range(6):
            W[0, r] = 0.0
    for s in range(1, nb + 1):
        M = inertia[s - 1]
        mat6_vec(M, V[s], h)
        adT_apply_into(V[s], h, t)
        mat6_vec(M, A[s], h)
        for r in range(6):
            W[s, r] = h[r] - t[r] - fb[s, r]
    for r in range(tau.shape[0]):
        tau[r] = 0.0
    for i in range(nb - 1, -1, -1):
        s = i + 1
        tau[nbase + q_index[i]] += q_mult[i] * dot6(X[i], W[s])
        Ad_invT_apply_into(G[i], W[s], t)
        p = parent[i] + 1
        for r in range(6):
            W[p, r] += t[r]
    if nbase > 0:
        for r in range(6):
            tau[r] = W[0, r]


@njit(cache=True)
def rnea_spatial(model, q, qd, qdd, base, fb, grav, tau, w):
    """
    Spatial RNEA ([M18d] (70)-(71)): everything in one inertial frame, world axes.

    The frame's origin is the base origin (:func:`local_base`), not the world origin:
    the same equations in an inertial frame translated by the base position, exact and
    free of the ``|r|² eps`` round-off of a robot far from the world origin.
    """
    parent = model.parent
    X = model.X
    q_index = model.q_index
    q_mult = model.q_mult
    nbase = model.nbase
    inertia = model.inertia
    base_inertia = model.base_inertia
    gravity = model.gravity
    nb = parent.shape[0]
    C, V, A, W, Js, G, In, h, t, _, _ = _frame_work(w, nb)
    local_base(base, C[0])
    if nbase > 0:
        Ad_apply_into(C[0], qd[:6], V[0])
        Ad_apply_into(C[0], qdd[:6], A[0])   # V̇^s = Ad_C V̇^b (docs/theory/representations.md)
    for r in range(3):
        A[0, 3 + r] -= grav * gravity[r]
    for i in range(nb):
        s = i + 1
        p = parent[i] + 1
        rel_pose(model, q, i, G)
        compose_into(C[p], G, C[s])
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
        inertia10_to(C[s], base_inertia if s == 0 else inertia[s - 1], False, In)
        inertia10_apply(In, V[s], h, False)
        adT_apply_into(V[s], h, t)
        inertia10_apply(In, A[s], h, False)
        for r in range(6):
            W[s, r] = h[r] - t[r]
        Ad_invT_apply_into(C[s], fb[s], h)    # W^s_app = Ad_C^-T W^b_app
        for r in range(6):
            W[s, r] -= h[r]
    for r in range(tau.shape[0]):
        tau[r] = 0.0
    for i in range(nb - 1, -1, -1):
        s = i + 1
        tau[nbase + q_index[i]] += q_mult[i] * dot6(Js[i], W[s])
        p = parent[i] + 1
        for r in range(6):
            W[p, r] += W[s, r]
    if nbase > 0:
        AdT_apply_into(C[0], W[0], t)   # base wrench in the base frame
        for r in range(6):
            tau[r] = t[r]


@njit(cache=True, inline='always')
def _cross_add(a, b, out, o, sign):
    """``out[o:o+3] += sign * (a x b)`` for 3-vectors given as length-3 sequences."""
    out[o] += sign * (a[1] * b[2] - a[2] * b[1])
    out[o + 1] += sign * (a[2] * b[0] - a[0] * b[2])
    out[o + 2] += sign * (a[0] * b[1] - a[1] * b[0])


@njit(cache=True)
def rnea_hybrid(model, q, qd, qdd, base, fb, grav, tau, w):
    """Hybrid RNEA ([M18d] (75)-(76)); the paper's misprints corrected: docs/theory/errata.md."""
    parent = model.parent
    X = model.X
    q_index = model.q_index
    q_mult = model.q_mult
    nbase = model.nbase
    inertia = model.inertia
    base_inertia = model.base_inertia
    gravity = model.gravity
    nb = parent.shape[0]
    C, V, A, W, Z, G, In, h, t, d, x = _frame_work(w, nb)
    local_base(base, C[0])   # positions relative to the base origin: differences stay exact
    if nbase > 0:
        for r in range(3):
            V[0, r] = base[r, 0] * qd[0] + base[r, 1] * qd[1] + base[r, 2] * qd[2]
            V[0, 3 + r] = base[r, 0] * qd[3] + base[r, 1] * qd[4] + base[r, 2] * qd[5]
            A[0, r] = base[r, 0] * qdd[0] + base[r, 1] * qdd[1] + base[r, 2] * qdd[2]
            A[0, 3 + r] = base[r, 0] * qdd[3] + base[r, 1] * qdd[4] + base[r, 2] * qdd[5]
        # V̇^h = Ad_R V̇^b + (0, ω^s x ṙ)  (docs/theory/representations.md)
        _cross_add(V[0, :3], V[0, 3:], A[0], 3, 1.0)
    for r in range(3):
        A[0, 3 + r] -= grav * gravity[r]
    for i in range(nb):
        s = i + 1
        p = parent[i] + 1
        rel_pose(model, q, i, G)
        compose_into(C[p], G, C[s])
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
        inertia10_to(C[s], base_inertia if s == 0 else inertia[s - 1], True, In)  # (76a)
        for r in range(3):
            t[r] = V[s, r]
            t[3 + r] = 0.0
        inertia10_apply(In, t, h, False)
        inertia10_apply(In, A[s], t, False)
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
        tau[nbase + q_index[i]] += q_mult[i] * dot6(Z[i], W[s])
        for r in range(3):
            d[r] = C[s, r, 3] - C[p, r, 3]
        for r in range(6):
            W[p, r] += W[s, r]
        _cross_add(d, W[s, 3:], W[p], 0, 1.0)   # moment shift to r_λ (76b)
    if nbase > 0:
        for r in range(3):
            tau[r] = base[0, r] * W[0, 0] + base[1, r] * W[0, 1] + base[2, r] * W[0, 2]
            tau[3 + r] = base[0, r] * W[0, 3] + base[1, r] * W[0, 4] + base[2, r] * W[0, 5]


@njit(cache=True, inline='always')
def _frame_work(w, nb):
    """
    Work arrays of the spatial and hybrid RNEA, views of ``w`` (``V``, ``A`` zeroed).

    ``(C, V, A, W, Js, G, In, h, t, d, x)``: poses (nb + 1, 4, 4), twists, accelerations,
    wrenches (nb + 1, 6), columns (nb, 6), a pose, a 10-parameter inertia, scratch.
    """
    n1 = nb + 1
    o = 16 * n1
    C = c_view(w[:o], (n1, 4, 4))
    vec = c_view(w[o:o + 18 * n1], (3, n1, 6))
    o += 18 * n1
    cols = c_view(w[o:o + 6 * nb], (nb, 6))
    o += 6 * nb
    G = c_view(w[o:o + 16], (4, 4))
    In = w[o + 16:o + 26]
    o += 26
    V, A = vec[0], vec[1]
    V[:, :] = 0.0
    A[:, :] = 0.0
    return (C, V, A, vec[2], cols, G, In, w[o:o + 6], w[o + 6:o + 12], w[o + 12:o + 15],
            w[o + 15:o + 18])


@njit(cache=True, inline='always')
def _id_work(w, nb):
    """
    The body-fixed RNEA's work arrays ``(fb, G, V, A, W)``, views of ``w``.

    ``fb`` has two scratch rows past the ``nb + 1`` bodies; the rest of ``w`` past
    :func:`~.layout.id_floats` is free (the spatial and hybrid forms work there).
    """
    n6 = 6 * (nb + 1)
    fb = c_view(w[:n6 + 12], (nb + 3, 6))
    V = c_view(w[n6 + 12:2 * n6 + 12], (nb + 1, 6))
    A = c_view(w[2 * n6 + 12:3 * n6 + 12], (nb + 1, 6))
    W = c_view(w[3 * n6 + 12:4 * n6 + 12], (nb + 1, 6))
    o = 4 * n6 + 12
    G = c_view(w[o:o + 16 * nb], (nb, 4, 4))
    return fb, G, V, A, W


@njit(cache=True, inline='always')
def _id_one(model, q, qd, qdd, base, fext, form, grav, tau, fb, G, V, A, W, rest):
    """
    Inverse dynamics of one configuration in ``form`` into ``tau``; returns a status.

    Work arrays: ``fb, G, V, A, W`` (:func:`_id_work`) for the body-fixed form, ``fb``
    and ``rest`` (the workspace past ``fb``: :func:`_frame_work`) for the others.
    """
    st = check_inputs(q, qd, qdd, base, fext)
    if st != OK:
        return st
    body_fext(model, fext, fb)
    if form == 0:
        rnea_body(model, q, qd, qdd, base, fb, grav, tau, G, V, A, W)
    elif form == 1:
        rnea_spatial(model, q, qd, qdd, base, fb, grav, tau, rest)
    else:
        rnea_hybrid(model, q, qd, qdd, base, fb, grav, tau, rest)
    return OK


@njit(cache=True, inline='always')
def _id_w(model, q, qd, qdd, base, fext, form, grav, tau, w):
    """:func:`_id_one` working in the workspace ``w`` (sliced here: one call)."""
    nb = model.parent.shape[0]
    fb, G, V, A, W = _id_work(w, nb)
    return _id_one(model, q, qd, qdd, base, fext, form, grav, tau, fb, G, V, A, W,
                   w[6 * (nb + 3):])


@njit(**SINGLE_CALL)
def id_into(ki, kf, w, q, qd, qdd, base, fext, form, grav, tau):
    """Single configuration inverse dynamics into ``tau``; returns a status."""
    nq, nv = sizes(ki)
    if not (plain(q, nq) and plain(qd, nv) and plain(qdd, nv) and plain_pose(base)):
        return LAYOUT
    return _id_w(unpack(ki, kf), q, qd, qdd, base, fext, form, grav, tau, w)


@njit(**SINGLE_CALL)
def id_plain(ki, kf, w, q, qd, qdd, form, grav, tau):
    """:func:`id_into` without base pose or applied wrenches (fewer arguments to unbox)."""
    nq, nv = sizes(ki)
    if not (plain(q, nq) and plain(qd, nv) and plain(qdd, nv)):
        return LAYOUT
    return _id_w(unpack(ki, kf), q, qd, qdd, EYE4, NO_FEXT, form, grav, tau, w)


@njit(cache=True, nogil=True)
def id_batch(model, Q, QD, QDD, base, fext, form, grav, out):
    nb = model.parent.shape[0]
    w = np.empty(max(id_floats(nb), 6 * (nb + 3) + id_frame_floats(nb)))
    fb, G, V, A, W = _id_work(w, nb)      # the views once for the whole batch
    rest = w[6 * (nb + 3):]
    for k in range(Q.shape[0]):
        st = _id_one(model, Q[k], QD[k], QDD[k], at(base, k), at(fext, k), form, grav, out[k],
                     fb, G, V, A, W, rest)
        if st != OK:
            raise_status(st)
    return out


@njit(cache=True, inline='always')
def _wrenches(model, q, qd, qdd, base, fext, grav, w, out):
    """Body-fixed RNEA; the transmitted wrenches of all bodies into ``out`` (nb, 6)."""
    nb = model.parent.shape[0]
    fb, G, V, A, W = _id_work(w, nb)
    st = _id_one(model, q, qd, qdd, base, fext, 0, grav, w[id_floats(nb):], fb, G, V, A, W,
                 w[6 * (nb + 3):])
    if st == OK:
        for i in range(nb):
            for r in range(6):
                out[i, r] = W[i + 1, r]
    return st


@njit(**SINGLE_CALL)
def wrench_entry(ki, kf, w, q, qd, qdd, base, fext, grav, out):
    """Single configuration: :func:`_wrenches` into ``out``; returns a status."""
    return _wrenches(unpack(ki, kf), q, qd, qdd, base, fext, grav, w, out)


@njit(cache=True)
def wrench_batch(model, Q, QD, QDD, base, fext, grav, out):
    nb = model.parent.shape[0]
    w = np.empty(id_floats(nb) + Q.shape[1] + model.nbase)
    for k in range(Q.shape[0]):
        st = _wrenches(model, Q[k], QD[k], QDD[k], at(base, k), at(fext, k), grav, w, out[k])
        if st != OK:
            raise_status(st)
    return out
