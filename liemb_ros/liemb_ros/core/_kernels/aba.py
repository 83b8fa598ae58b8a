"""
Forward dynamics by the articulated-body algorithm in body-fixed form.

Three sweeps over the tree (velocities and bias terms; articulated inertias and bias
wrenches from the leaves to the root; accelerations from the root to the leaves), the
body-fixed twists and wrenches of Müller, Multibody Syst. Dyn. 42 (2018) 219–248, §4
(eqs. (65)-(67)); see docs/theory/recursions.md.  A floating base is solved by a 6x6
Cholesky factorisation of its articulated inertia.  Armature (rotor inertia) adds to each
joint's pivot as in Pinocchio's ``aba``.
"""
import numpy as np
from numba import njit

from .lie import Ad_inv_apply_into, Ad_invT_apply_into, ad_apply_into, adT_apply_into
from .dispatch import (BAD_QDD, BAD_TAU, LAYOUT, OK, SINGULAR, at, check_inputs, plain,
                       plain_pose, raise_status, sizes)
from .inertia import add_inertia_to_parent, dot6, mat6_vec, unit_axis
from .layout import aba_floats, unpack
from .numba_entry import SINGLE_CALL, c_view
from .rnea import body_fext
from .tree import rel_pose


@njit(cache=True)
def _aba(model, q, qd, tau, base, fext, qdd, work, arm):
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
    parent = model.parent
    X = model.X
    q_index = model.q_index
    q_mult = model.q_mult
    nbase = model.nbase
    inertia = model.inertia
    base_inertia = model.base_inertia
    gravity = model.gravity
    nb = parent.shape[0]
    st = check_inputs(q, qd, tau, base, fext)
    if st != OK:
        return BAD_TAU if st == BAD_QDD else st
    G, IA, pA, V, cb, U, Dinv, u, fb, T, Tm, ht = work
    body_fext(model, fext, fb)
    h = ht[0]
    t = ht[1]
    for r in range(6):
        V[0, r] = qd[r] if nbase > 0 else 0.0
        for c in range(6):
            IA[0, r, c] = base_inertia[r, c]
    for i in range(nb):
        s = i + 1
        p = parent[i] + 1
        rel_pose(model, q, i, G[i])
        rate = q_mult[i] * qd[nbase + q_index[i]]
        Ad_inv_apply_into(G[i], V[p], t)
        for r in range(6):
            V[s, r] = t[r] + X[i, r] * rate
            h[r] = X[i, r] * rate
        ad_apply_into(V[s], h, cb[s])
        for r in range(6):
            for c in range(6):
                IA[s, r, c] = inertia[i, r, c]
    for s in range(0 if nbase > 0 else 1, nb + 1):   # a fixed base's bias is never read
        mat6_vec(IA[s], V[s], h)
        adT_apply_into(V[s], h, t)
        for r in range(6):
            pA[s, r] = -t[r] - fb[s, r]
    tol = 1e-12 * max(model.inertia_scale, 1e-300)
    for i in range(nb - 1, -1, -1):
        s = i + 1
        p = parent[i] + 1
        Mi = IA[s]
        m = q_mult[i]
        k = unit_axis(X[i])
        if k >= 0:   # X = ±e_k: U = I^A X is a column, the same numbers as the product
            e = X[i, k]
            for r in range(6):
                U[s, r] = Mi[r, k] * e
            D = m * m * (e * U[s, k])
        else:
            mat6_vec(Mi, X[i], U[s])
            D = m * m * dot6(X[i], U[s])
        if arm.shape[0] > 0:
            D += arm[q_index[i]]
        if not D > tol:
            return SINGULAR + 1 + i
        for r in range(6):
            U[s, r] *= m
        Dinv[s] = 1.0 / D
        u[s] = tau[nbase + q_index[i]] - m * (X[i, k] * pA[s, k] if k >= 0 else
                                              dot6(X[i], pA[s]))
        if p == 0 and nbase == 0:
            continue   # a fixed base: its articulated inertia and bias are never read
        # I^a and p^a, in place
        for r in range(6):
            for c in range(6):
                Mi[r, c] -= U[s, r] * U[s, c] * Dinv[s]
        mat6_vec(Mi, cb[s], h)
        for r in range(6):
            h[r] += pA[s, r] + U[s, r] * u[s] * Dinv[s]
        Ad_invT_apply_into(G[i], h, t)
        for r in range(6):
            pA[p, r] += t[r]
        # I^A_λ += Ad_{G^-1}ᵀ I^a Ad_{G^-1}
        add_inertia_to_parent(G[i], Mi, T, Tm, IA[p])
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
        acc = (u[s] - dot6(U[s], t)) * Dinv[s]
        qdd[nbase + q_index[i]] = acc
        m = q_mult[i]
        k = unit_axis(X[i])
        if k >= 0:
            for r in range(6):
                V[s, r] = t[r]
            V[s, k] = t[k] + X[i, k] * m * acc
        else:
            for r in range(6):
                V[s, r] = t[r] + X[i, r] * m * acc
    return OK


#: :func:`_aba` inlined into its caller (numba's IR inlining: the same source, compiled in
#: place once more), for the compiled simulation step (:mod:`liemb_ros.sim._explicit`),
#: which runs it four times a step: a call passes the structs of its 30 arrays and
#: counts a reference to each, 13-15 % of an RK4 step of a 7-joint arm
#: (docs/performance.md).  Elsewhere ABA stays a call (compile time, tree.py's docstring).
aba_inlined = njit(inline='always')(getattr(_aba, 'py_func', _aba))   # NUMBA_DISABLE_JIT: _aba


@njit(cache=True, inline='always')
def _aba_work(w, nb):
    """ABA work arrays ``(G, IA, pA, V, cb, U, Dinv, u, fb, T, Tm, ht)``, views of ``w``."""
    n1 = nb + 1
    o = 16 * nb
    G = c_view(w[:o], (nb, 4, 4))
    IA = c_view(w[o:o + 36 * n1], (n1, 6, 6))
    o += 36 * n1
    vecs = c_view(w[o:o + 30 * n1], (5, n1, 6))
    o += 30 * n1
    Dinv = w[o:o + n1]
    u = w[o + n1:o + 2 * n1]
    o += 2 * n1
    T = c_view(w[o:o + 36], (6, 6))
    Tm = c_view(w[o + 36:o + 72], (6, 6))
    ht = c_view(w[o + 72:o + 84], (2, 6))
    return G, IA, vecs[0], vecs[1], vecs[2], vecs[3], Dinv, u, vecs[4], T, Tm, ht


@njit(**SINGLE_CALL)
def aba_into(ki, kf, w, q, qd, tau, base, fext, qdd):
    """Single configuration :func:`_aba` without armature; returns a status."""
    nq, nv = sizes(ki)
    if not (plain(q, nq) and plain(qd, nv) and plain(tau, nv) and plain_pose(base)):
        return LAYOUT
    model = unpack(ki, kf)
    work = _aba_work(w, model.parent.shape[0])
    # no armature: an empty slice of the work array, of the type of an armature argument
    # (the global NO_ARM would be a read-only constant: another compilation of _aba)
    return _aba(model, q, qd, tau, base, fext, qdd, work, work[6][:0])


@njit(**SINGLE_CALL)
def aba_arm_into(ki, kf, w, q, qd, tau, base, fext, qdd, arm):
    model = unpack(ki, kf)
    return _aba(model, q, qd, tau, base, fext, qdd, _aba_work(w, model.parent.shape[0]), arm)


@njit(cache=True, nogil=True)
def aba_batch(model, Q, QD, TAU, base, fext, out, arm):
    nb = model.parent.shape[0]
    work = _aba_work(np.empty(aba_floats(nb)), nb)
    for k in range(Q.shape[0]):
        st = _aba(model, Q[k], QD[k], TAU[k], at(base, k), at(fext, k), out[k], work,
                  arm)
        if st != OK:
            if st < SINGULAR:
                raise_status(st)
            return out, st
    return out, OK
