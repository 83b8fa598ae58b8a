"""
Analytic derivatives ``∂τ/∂q``, ``∂τ/∂q̇`` of the inverse dynamics, spatial form.

One pass over the bodies for the subtree composites, then one product per joint pair on
a common path: O(n·d) for depth d (the structure of Carpentier and Mansard's analytical
derivatives), in the world-aligned frame at the base origin
(:func:`~liemb_ros.core._kernels.tree.local_base`).  The equations are in the docstring of
:func:`_derivatives` and in docs/theory/recursions.md; spatial twists and screws as in
Müller, Multibody Syst. Dyn. 43 (2018) 37–70, eq. (29), inertia rates as in Müller,
Multibody Syst. Dyn. 42 (2018) 219–248, eq. (37).
"""
import numpy as np
from numba import njit

from .lie import Ad_apply_into, Ad_invT_apply_into, ad_apply_into, adT_apply_into
from .dispatch import OK, at, check_inputs, raise_status
from .inertia import dot6, inertia10_apply, inertia10_rate, spatial_inertias10
from .layout import derivatives_floats, unpack
from .numba_entry import SINGLE_CALL, c_view
from .rnea import body_fext
from .tree import spatial_columns


@njit(cache=True, inline='always')
def _derivatives_work(w, nb, ncol):
    """
    Return the work arrays of :func:`_derivatives`, views of ``w``.

    Poses ``C``, node 6-vectors ``(Vs, As, Fc, Hc, fb, aw/t/g/y)``, 10-parameter inertias
    ``(Ic, Dc)`` and column 6-vectors ``(Js, U, W, Z, PHI, PSI, P, Q)``.
    """
    n1 = nb + 1
    o1 = 16 * n1
    o2 = o1 + 30 * n1 + 24
    o3 = o2 + 20 * n1
    return (c_view(w[:o1], (n1, 4, 4)), c_view(w[o1:o2], (5 * n1 + 4, 6)),
            c_view(w[o2:o3], (2 * n1, 10)), c_view(w[o3:o3 + 48 * ncol], (8, ncol, 6)))


@njit(cache=True, inline='always')
def _derivatives(model, q, qd, qdd, base, fext, dq, dqd, w):
    """
    ``dq = ∂τ/∂q``, ``dqd = ∂τ/∂q̇`` (each (nv, nv)) in spatial form; returns a status code.

    All quantities in world axes at the base origin (an inertial frame translated by the
    base position, :func:`~liemb_ros.core._kernels.tree.local_base`: exact, and free of the
    ``|r|² eps`` round-off far from the world origin).  ``S_k`` are the spatial columns
    ``Ad_{C_k} X_k`` ([M18k] (29)), ``v``, ``a`` the spatial twists and accelerations
    (gravity as a base acceleration ``a_w``), ``I_i`` the spatial inertias, ``f_i = I_i a_i
    - ad_{v_i}ᵀ I_i v_i - f^ext_i`` the body wrenches and ``F``, ``I^C``, ``B^C`` their
    subtree sums, with ``B_i = -I_i ad_{v_i} - ad_{v_i}ᵀ I_i - Λ(I_i v_i)``.  A joint angle
    ``θ_k`` moves its subtree rigidly (``∂S_j/∂θ_k = ad_{S_k} S_j``, ``∂I_i = -ad_{S_k}ᵀ I_i
    - I_i ad_{S_k}``) and changes the subtree's twists and accelerations by
    ``∂v_i = ad_{S_k}(v_i - v_λ)``, ``∂a_i = ad_{S_k}(a_i - a_λ) - ad_{ad_{S_k} v_λ}(v_i -
    v_λ)`` (``λ`` = the joint's parent); ``τ_j = S_jᵀ F_j`` is invariant under the rigid
    part, which leaves, with ``u_k = ad_{v_λ} S_k``, ``w_k = ad_{a_λ} S_k - ad_{u_k} v_λ``:

    * ``j`` at or below ``k``: ``∂τ_j/∂θ_k = S_jᵀ (I^C_j w_k + B^C_j u_k)``,
      ``∂τ_j/∂θ̇_k = S_jᵀ (B^C_j S_k + I^C_j z_k)``, ``z_k = ad_{v_k} S_k - ad_{S_k} v_λ
      = 2 u_k``;
    * ``j`` above ``k``: ``∂τ_j/∂θ_k = S_jᵀ (-ad_{S_k}ᵀ F_k + I^C_k w_k + B^C_k u_k)``,
      ``∂τ_j/∂θ̇_k = S_jᵀ (B^C_k S_k + I^C_k z_k)``;
    * other pairs: 0.

    No 6x6 matrix is formed: ``-I_i ad_{v_i} - ad_{v_i}ᵀ I_i = İ_i`` is the rate of a
    rigid-body inertia ([M18d] (37)), so it and ``I_i`` keep the 10-parameter form
    (:func:`~.inertia.inertia10_rate`), and ``Λ(h)`` (``Λ(h) x = ad_xᵀ h``) is
    antisymmetric and linear in ``h``: ``B^C = İ^C - Λ(H^C)``, ``B^C x = İ^C x - ad_xᵀ H^C``
    and ``(B^C)ᵀ x = İ^C x + ad_xᵀ H^C`` with ``H^C`` the subtree's spatial momentum.

    So one pass for the vectors of each column and one product per related pair: O(n·d)
    (d the depth), the structure of Carpentier and Mansard's analytical derivatives.  The
    floating base's six columns ``Ad_{C_base} e_k`` sit at the base node with ``v_λ = 0``,
    ``a_λ = a_w`` (so ``u = 0``) and ``z_k = ad_{v_0} S_k``: its right perturbation
    ``C_base exp(δ^)`` moves everything rigidly (module docstring).  Applied wrenches are
    fixed in their links, so they move rigidly as well.  Mimic joints: ``θ_k = m_k q_c +
    o_k`` and ``τ_c = Σ m_j S_jᵀ F_j``.  Checked against Pinocchio and finite differences
    (tests), and the per-column body-fixed sweeps that it replaced.
    """
    parent = model.parent
    q_index = model.q_index
    q_mult = model.q_mult
    nbase = model.nbase
    gravity = model.gravity
    st = check_inputs(q, qd, qdd, base, fext)
    if st != OK:
        return st
    nb = parent.shape[0]
    n1 = nb + 1
    ncol = nbase + nb
    C, vec, ten, cols = _derivatives_work(w, nb, ncol)
    Vs, As, Fc, Hc, fb = (vec[:n1], vec[n1:2 * n1], vec[2 * n1:3 * n1], vec[3 * n1:4 * n1],
                          vec[4 * n1:5 * n1])
    aw, t, g, y = vec[5 * n1], vec[5 * n1 + 1], vec[5 * n1 + 2], vec[5 * n1 + 3]
    Ic, Dc = ten[:n1], ten[n1:]
    Js, U, Wk, Z, PHI, PSI, P, Q = (cols[0], cols[1], cols[2], cols[3], cols[4], cols[5],
                                    cols[6], cols[7])
    for r in range(3):
        aw[r] = 0.0
        aw[3 + r] = -gravity[r]
    spatial_columns(model, q, qd, base, C, Js, Vs)
    body_fext(model, fext, fb)
    spatial_inertias10(model, C, Ic)
    if nbase > 0:
        Ad_apply_into(C[0], qdd[:6], As[0])   # V̇^s = Ad_C V̇^b (docs/theory/representations.md)
    else:
        for r in range(6):
            As[0, r] = 0.0
    for r in range(6):
        As[0, r] += aw[r]
    for i in range(nb):
        s = i + 1
        p = parent[i] + 1
        col = nbase + i
        c = nbase + q_index[i]
        m = q_mult[i]
        ad_apply_into(Vs[s], Js[col], t)     # J̇^s = ad_{V^s} J^s ([M18d] (16))
        for r in range(6):
            As[s, r] = As[p, r] + m * (Js[col, r] * qdd[c] + t[r] * qd[c])
    for s in range(n1):
        inertia10_apply(Ic[s], Vs[s], Hc[s], False)   # h = I v
        inertia10_rate(Ic[s], Vs[s], Dc[s])
        inertia10_apply(Ic[s], As[s], y, False)
        adT_apply_into(Vs[s], Hc[s], t)
        Ad_invT_apply_into(C[s], fb[s], Fc[s])
        for r in range(6):
            Fc[s, r] = y[r] - t[r] - Fc[s, r]
    for s in range(nb, 0, -1):
        p = parent[s - 1] + 1
        for r in range(6):
            Fc[p, r] += Fc[s, r]
            Hc[p, r] += Hc[s, r]
        for r in range(10):
            Ic[p, r] += Ic[s, r]
            Dc[p, r] += Dc[s, r]
    for k in range(ncol):
        S = Js[k]
        if k < nbase:   # the base's columns: v_λ = 0, a_λ = a_w
            n = 0
            for r in range(6):
                U[k, r] = 0.0
            ad_apply_into(aw, S, Wk[k])
            ad_apply_into(Vs[0], S, Z[k])
        else:
            n = k - nbase + 1
            vl = Vs[parent[k - nbase] + 1]
            al = As[parent[k - nbase] + 1]
            ad_apply_into(vl, S, U[k])
            ad_apply_into(al, S, Wk[k])
            ad_apply_into(U[k], vl, t)
            for r in range(6):
                Wk[k, r] -= t[r]
                Z[k, r] = 2.0 * U[k, r]
        # Q = (B^C)ᵀ S, PSI = B^C S + I^C z, P = I^C S
        adT_apply_into(S, Hc[n], g)
        inertia10_apply(Dc[n], S, y, False)
        for r in range(6):
            Q[k, r] = y[r] + g[r]
            PSI[k, r] = y[r] - g[r]
        inertia10_apply(Ic[n], Z[k], PSI[k], True)
        inertia10_apply(Ic[n], S, P[k], False)
        # PHI = I^C w + B^C u - ad_Sᵀ F
        inertia10_apply(Ic[n], Wk[k], y, False)
        if k >= nbase:
            inertia10_apply(Dc[n], U[k], y, True)
            adT_apply_into(U[k], Hc[n], g)
            for r in range(6):
                y[r] -= g[r]
        adT_apply_into(S, Fc[n], t)
        for r in range(6):
            PHI[k, r] = y[r] - t[r]
    dq[:, :] = 0.0
    dqd[:, :] = 0.0
    for j in range(ncol):
        base_row = j < nbase
        cj = j if base_row else nbase + q_index[j - nbase]
        mj = 1.0 if base_row else q_mult[j - nbase]
        # columns k at j's node or above it: j's own (all six at the base), its ancestors'
        # and the base's; for k strictly above j also the pair (k, j)
        k = 0 if base_row else j
        while k >= 0:
            above = k < nbase and not base_row or k >= nbase and k != j
            ck = k if k < nbase else nbase + q_index[k - nbase]
            f = mj * (1.0 if k < nbase else q_mult[k - nbase])
            dq[cj, ck] += f * (dot6(P[j], Wk[k]) + dot6(Q[j], U[k]))
            dqd[cj, ck] += f * (dot6(Q[j], Js[k]) + dot6(P[j], Z[k]))
            if above:
                dq[ck, cj] += f * dot6(Js[k], PHI[j])
                dqd[ck, cj] += f * dot6(Js[k], PSI[j])
            if k >= nbase:
                pb = parent[k - nbase]
                k = nbase + pb if pb >= 0 else (0 if nbase > 0 else -1)
            else:
                k = k + 1 if k + 1 < nbase else -1
    return OK


@njit(**SINGLE_CALL)
def derivatives_into(ki, kf, w, q, qd, qdd, base, fext, dq, dqd):
    """Single configuration :func:`_derivatives` on the packed model; returns a status."""
    return _derivatives(unpack(ki, kf), q, qd, qdd, base, fext, dq, dqd, w)


@njit(cache=True, nogil=True)
def derivatives_batch(model, Q, QD, QDD, base, fext, dq, dqd):
    nb = model.parent.shape[0]
    w = np.empty(derivatives_floats(nb, model.nbase + nb))
    for k in range(Q.shape[0]):
        st = _derivatives(model, Q[k], QD[k], QDD[k], at(base, k), at(fext, k), dq[k],
                          dqd[k], w)
        if st != OK:
            raise_status(st)
