"""
Mass matrix, its time derivative and the Coriolis matrix by composite rigid bodies.

Spatial form over subtree composites: ``M_ab = J_aᵀ M^C_n J_b`` (Müller, Multibody Syst.
Dyn. 42 (2018) 219–248, eq. (81) summed recursively), ``Ṁ`` with ``J̇^s_j = [V^s_j,
J^s_j]`` (ibid. eq. (16)) and ``Ṁ^s = -ad_Vᵀ M^s - M^s ad_V`` (eq. (37)), and the
Christoffel-consistent Coriolis matrix (``Ṁ - 2C`` skew-symmetric; the factorisation of
eq. (84) is not, see docs/theory/recursions.md).  All in the world-aligned frame at the
base origin (:func:`~liemb_ros.core._kernels.tree.local_base`).
"""
import numpy as np
from numba import njit

from .lie import AdT_apply_into, ad_apply_into, adT_apply_into
from .dispatch import LAYOUT, OK, at, check_state, plain, plain_pose, raise_status, sizes
from .inertia import dot6, inertia10_apply, inertia10_rate, spatial_inertias10
from .layout import coriolis_floats, crba_floats, unpack
from .numba_entry import SINGLE_CALL, c_view
from .tree import spatial_columns


@njit(cache=True, inline='always')
def _crba(model, q, qd, base, out, dot, work):
    """
    Mass matrix (``dot`` False) or its time derivative ``Ṁ`` along ``qd`` (``dot`` True).

    Composite rigid bodies in spatial form: ``M_ab = J_aᵀ M^C_n J_b`` for the column ``a``
    at an ancestor of (or the same node as) column ``b``'s node ``n``, ``M^C_n`` the sum of
    the spatial inertias ``M^s_i = Ad_{C_i}^-T M_i Ad_{C_i}^-1`` over ``n``'s subtree; this is
    ``M = Jᵀ M^b J`` ([M18d] (81)) summed recursively.  ``Ṁ_ab = J̇_aᵀ M^C_n J_b
    + J_aᵀ (M^C_n J̇_b + Ṁ^C_n J_b)`` with ``J̇^s_j = [V^s_j, J^s_j]`` ([M18d] (16)) and
    ``Ṁ^s_i = -ad_{V_i}ᵀ M^s_i - M^s_i ad_{V_i}`` ([M18d] (37)).  Spatial inertias and
    their rates are kept as their 10 parameters (:func:`~.inertia.inertia10_to`).
    """
    parent = model.parent
    q_index = model.q_index
    q_mult = model.q_mult
    nbase = model.nbase
    st = check_state(q, qd, base)
    if st != OK:
        return st
    nb = parent.shape[0]
    C, Js, Jd, Vs, Ic, Dc, F, H = work
    spatial_columns(model, q, qd, base, C, Js, Vs, dot)
    spatial_inertias10(model, C, Ic)
    if dot:
        for k in range(nbase):
            ad_apply_into(Vs[0], Js[k], Jd[k])
        for i in range(nb):
            ad_apply_into(Vs[i + 1], Js[nbase + i], Jd[nbase + i])
        for s in range(nb + 1):
            inertia10_rate(Ic[s], Vs[s], Dc[s])
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
            inertia10_apply(Ic[n], Js[b], F, False)
            if dot:
                inertia10_apply(Ic[n], Jd[b], H, False)
                inertia10_apply(Dc[n], Js[b], H, True)
            cb = b if n == 0 else nbase + q_index[n - 1]
            mb = 1.0 if n == 0 else q_mult[n - 1]
            # ancestors (and self) of node n: bodies up the tree (one column each) ...
            j = n - 1
            while j >= 0:
                a = nbase + j
                if dot:
                    val = dot6(Jd[a], F) + dot6(Js[a], H)
                else:
                    val = dot6(Js[a], F)
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
                    val = dot6(Jd[a], F) + dot6(Js[a], H)
                else:
                    val = H[a]
                val *= mb
                out[a, cb] += val
                if a != b:
                    out[cb, a] += val
    return OK


@njit(cache=True, inline='always')
def _crba_work(model, w):
    """Work arrays of :func:`_crba` ``(C, Js, Jd, Vs, Ic, Dc, F, H)``, views of ``w``."""
    nb = model.parent.shape[0]
    ncol = model.nbase + nb
    n1 = nb + 1
    o1 = 16 * n1
    o2 = o1 + 6 * ncol
    o3 = o2 + 6 * ncol
    o4 = o3 + 6 * n1
    o5 = o4 + 10 * n1
    o6 = o5 + 10 * n1
    return (c_view(w[:o1], (n1, 4, 4)), c_view(w[o1:o2], (ncol, 6)), c_view(w[o2:o3], (ncol, 6)),
            c_view(w[o3:o4], (n1, 6)), c_view(w[o4:o5], (n1, 10)), c_view(w[o5:o6], (n1, 10)),
            w[o6:o6 + 6], w[o6 + 6:o6 + 12])


@njit(**SINGLE_CALL)
def crba_into(ki, kf, w, q, qd, base, dot, out):
    """Single configuration :func:`_crba`; ``qd`` is read only for ``Ṁ`` (``dot``)."""
    nq, nv = sizes(ki)
    if not (plain(q, nq) and (not dot or plain(qd, nv)) and plain_pose(base)):
        return LAYOUT
    model = unpack(ki, kf)
    return _crba(model, q, qd, base, out, dot, _crba_work(model, w))


@njit(cache=True, nogil=True)
def crba_batch(model, Q, QD, base, dot, out):
    nb = model.parent.shape[0]
    work = _crba_work(model, np.empty(crba_floats(nb, model.nbase + nb)))
    for k in range(Q.shape[0]):
        st = _crba(model, Q[k], at(QD, k), at(base, k), out[k], dot, work)
        if st != OK:
            raise_status(st)
    return out


@njit(cache=True)
def _coriolis(model, q, qd, base, out, work):
    """
    Christoffel-consistent Coriolis matrix, spatial form over subtree composites.

    ``C = Σ_i J_iᵀ (M^s_i J̇_i + B_i J_i)``, ``J̇`` columns ``[V^s_j, J^s_j]`` ([M18d]
    eq. (16)), ``B_i = ½(-ad_{V_i}ᵀ M^s_i - M^s_i ad_{V_i} - Λ(M^s_i V_i))``; for a column
    ``a`` at an ancestor (or the same node) of column ``b``'s node ``n``:
    ``C_ab = J_aᵀ (M^C_n J̇_b + B^C_n J_b)`` and ``C_ba = J_bᵀ (M^C_n J̇_a + B^C_n J_a)``.

    No 6x6 matrix is formed: ``-ad_Vᵀ M^s - M^s ad_V = Ṁ^s`` is the rate of a rigid-body
    inertia ([M18d] (37), :func:`inertia10_rate`) and ``Λ(h) x = ad_xᵀ h`` is
    antisymmetric and linear in ``h``, so with the subtree sums ``M^C``, ``Ṁ^C`` (10
    parameters each) and the subtree momentum ``H^C``: ``B^C x = ½(Ṁ^C x - ad_xᵀ H^C)`` and
    ``(B^C)ᵀ x = ½(Ṁ^C x + ad_xᵀ H^C)``.  ``work``: at least
    :func:`~.layout.coriolis_floats` floats.
    """
    parent = model.parent
    q_index = model.q_index
    q_mult = model.q_mult
    nbase = model.nbase
    st = check_state(q, qd, base)
    if st != OK:
        return st
    nb = parent.shape[0]
    n1 = nb + 1
    ncol = nbase + nb
    o1 = 16 * n1
    o2 = o1 + 6 * (2 * ncol + 2 * n1 + 5)
    C = c_view(work[:o1], (n1, 4, 4))
    vec = c_view(work[o1:o2], (2 * ncol + 2 * n1 + 5, 6))
    ten = c_view(work[o2:o2 + 20 * n1], (2 * n1, 10))
    Js, Jd = vec[:ncol], vec[ncol:2 * ncol]
    Vs, Hc = vec[2 * ncol:2 * ncol + n1], vec[2 * ncol + n1:2 * ncol + 2 * n1]
    o = 2 * ncol + 2 * n1
    P, u, w, g, y = vec[o], vec[o + 1], vec[o + 2], vec[o + 3], vec[o + 4]
    Ic, Dc = ten[:n1], ten[n1:]
    spatial_columns(model, q, qd, base, C, Js, Vs)
    spatial_inertias10(model, C, Ic)
    for k in range(nbase):
        ad_apply_into(Vs[0], Js[k], Jd[k])
    for i in range(nb):
        ad_apply_into(Vs[i + 1], Js[nbase + i], Jd[nbase + i])
    for s in range(n1):
        inertia10_apply(Ic[s], Vs[s], Hc[s], False)
        inertia10_rate(Ic[s], Vs[s], Dc[s])
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
        inertia10_apply(Dc[n], Js[b], y, False)
        adT_apply_into(Js[b], Hc[n], g)
        inertia10_apply(Ic[n], Jd[b], P, False)
        inertia10_apply(Ic[n], Js[b], u, False)
        for r in range(6):
            P[r] += 0.5 * (y[r] - g[r])
            w[r] = 0.5 * (y[r] + g[r])
        j = i
        while j >= 0:
            a = nbase + j
            ca = nbase + q_index[j]
            f = q_mult[j] * mb
            if j == i:
                out[cb, cb] += f * dot6(Js[b], P)
            else:
                out[ca, cb] += f * dot6(Js[a], P)
                out[cb, ca] += f * (dot6(u, Jd[a]) + dot6(w, Js[a]))
            j = parent[j]
        for a in range(nbase):
            out[a, cb] += mb * dot6(Js[a], P)
            out[cb, a] += mb * (dot6(u, Jd[a]) + dot6(w, Js[a]))
    for b in range(nbase):
        inertia10_apply(Dc[0], Js[b], y, False)
        adT_apply_into(Js[b], Hc[0], g)
        inertia10_apply(Ic[0], Jd[b], P, False)
        for r in range(6):
            P[r] += 0.5 * (y[r] - g[r])
        for a in range(nbase):
            out[a, b] = dot6(Js[a], P)
    return OK


@njit(**SINGLE_CALL)
def coriolis_into(ki, kf, w, q, qd, base, out):
    return _coriolis(unpack(ki, kf), q, qd, base, out, w)


@njit(cache=True)
def coriolis_batch(model, Q, QD, base):
    n = Q.shape[1] + model.nbase
    out = np.empty((Q.shape[0], n, n))
    work = np.empty(coriolis_floats(model.parent.shape[0], n))
    for k in range(Q.shape[0]):
        st = _coriolis(model, Q[k], QD[k], at(base, k), out[k], work)
        if st != OK:
            raise_status(st)
    return out
