"""
Compiled right-hand side of the index-1 constrained Newton-Euler equations ([MT14] §3).

Per body ``i`` (frame P anywhere on the body, COM at ``c`` in P-coordinates, ``Theta_P`` the
rotational inertia about P):

* SE(3), body-fixed twist ``V = (omega, v)``: ``M_P V' = W_P + ad_V^T M_P V`` with the
  constant ``M_P = [[Theta_P, m c~], [-m c~, m I]]`` ([MT14] eq. (23) corrected:
  docs/theory/errata.md#mt14-eq23);
* SO(3)xR^3, mixed velocity ``(omega, r')``: ``[[Theta_P, m c~ R^T], [-m R c~, m I]] V' =
  (M_P - omega x Theta_P omega, F^s - m R omega x (omega x c))`` ([MT14] eq. (24) corrected:
  docs/theory/errata.md#mt14-eq24), the wrench being the body-frame moment about P and the
  world force.

Theory: docs/theory/integrators.md#constrained-bodies-in-absolute-coordinates.

Constraint primitives (rows of ``h(g) = 0``; ``j = -1`` is the ground, whose vectors are
world coordinates): POINT ``x_i(p1) - x_j(p2)`` (3 rows), DOT ``(R_i p1).(R_j p2) - val``
(1 row), LINE ``(R_j p3).(x_i(p1) - x_j(p2)) - val`` (1 row).  With ``J V' = eta =
-gamma - 2 alpha h' - beta^2 h`` (``alpha = beta = 0``: the papers' index-1 form without
stabilisation, [MT14] eq. (13)) the system ``[[M, J^T], [J, 0]] (V', lambda) = (Q, eta)`` is
solved through the Schur complement ``J M^-1 J^T`` (block-diagonal ``M``).
"""
import math

import numpy as np
from numba import njit

from ...core._kernels.lie import adT_apply_into

SE3_KIND, SO3R3_KIND = 1, 2
POINT, DOT, LINE = 0, 1, 2
PIVOT_TOL = 1e-12


@njit(cache=True)
def _point(kind, C, V, a, x, Jw, Jv, g, xd):
    """World position ``x`` of body point ``a``, its Jacobian rows, ``gamma`` and velocity."""
    w0, w1, w2 = V[0], V[1], V[2]
    # omega x a
    b0 = w1 * a[2] - w2 * a[1]
    b1 = w2 * a[0] - w0 * a[2]
    b2 = w0 * a[1] - w1 * a[0]
    if kind == SE3_KIND:
        s0, s1, s2 = V[3] + b0, V[4] + b1, V[5] + b2
    else:
        s0, s1, s2 = b0, b1, b2
    # omega x s
    e0 = w1 * s2 - w2 * s1
    e1 = w2 * s0 - w0 * s2
    e2 = w0 * s1 - w1 * s0
    for i in range(3):
        R0, R1, R2 = C[i, 0], C[i, 1], C[i, 2]
        x[i] = R0 * a[0] + R1 * a[1] + R2 * a[2] + C[i, 3]
        # -R a~ : column k is R (e_k x a)
        Jw[i, 0] = R2 * a[1] - R1 * a[2]
        Jw[i, 1] = R0 * a[2] - R2 * a[0]
        Jw[i, 2] = R1 * a[0] - R0 * a[1]
        g[i] = R0 * e0 + R1 * e1 + R2 * e2
        if kind == SE3_KIND:
            Jv[i, 0], Jv[i, 1], Jv[i, 2] = R0, R1, R2
            xd[i] = R0 * s0 + R1 * s1 + R2 * s2
        else:
            Jv[i, 0], Jv[i, 1], Jv[i, 2] = 0.0, 0.0, 0.0
            Jv[i, i] = 1.0
            xd[i] = R0 * s0 + R1 * s1 + R2 * s2 + V[3 + i]


@njit(cache=True)
def _direction(C, V, u, d, Jw, g, dd):
    """World direction ``d = R u``, ``d' = Jw omega``, ``gamma = R omega x (omega x u)``."""
    w0, w1, w2 = V[0], V[1], V[2]
    b0 = w1 * u[2] - w2 * u[1]
    b1 = w2 * u[0] - w0 * u[2]
    b2 = w0 * u[1] - w1 * u[0]
    e0 = w1 * b2 - w2 * b1
    e1 = w2 * b0 - w0 * b2
    e2 = w0 * b1 - w1 * b0
    for i in range(3):
        R0, R1, R2 = C[i, 0], C[i, 1], C[i, 2]
        d[i] = R0 * u[0] + R1 * u[1] + R2 * u[2]
        Jw[i, 0] = R2 * u[1] - R1 * u[2]
        Jw[i, 1] = R0 * u[2] - R2 * u[0]
        Jw[i, 2] = R1 * u[0] - R0 * u[1]
        g[i] = R0 * e0 + R1 * e1 + R2 * e2
        dd[i] = R0 * b0 + R1 * b1 + R2 * b2


@njit(cache=True)
def _fixed(a, x, Jw, Jv, g, xd):
    """Write a fixed world vector ``a``: ``x = a``, no Jacobian, velocity or acceleration."""
    for i in range(3):
        x[i] = a[i]
        g[i] = 0.0
        xd[i] = 0.0
        for k in range(3):
            Jw[i, k] = 0.0
            Jv[i, k] = 0.0


@njit(cache=True)
def _attach_point(kinds, C, V, body, a, x, Jw, Jv, g, xd):
    """Point ``a`` of ``body`` (``-1``: the fixed world point ``a``): :func:`_point`."""
    if body < 0:
        _fixed(a, x, Jw, Jv, g, xd)
    else:
        _point(kinds[body], C[body], V[body], a, x, Jw, Jv, g, xd)


@njit(cache=True)
def _attach_direction(C, V, body, a, x, Jw, Jv, g, xd):
    """Direction ``a`` of ``body`` (``-1``: the fixed world direction): :func:`_direction`."""
    if body < 0:
        _fixed(a, x, Jw, Jv, g, xd)
        return
    _direction(C[body], V[body], a, x, Jw, g, xd)
    for i in range(3):
        for k in range(3):
            Jv[i, k] = 0.0


@njit(cache=True)
def constraints(kinds, C, V, prims, pvec, pval, m, h, J, gamma, hd):
    """
    Evaluate ``h`` (m,), ``J`` (m, 6 nb), ``gamma = J' V`` (m,) and ``h' = J V`` (m,).

    ``prims[k] = (type, i, j, row)``; ``pvec[k] = (p1, p2, p3)`` (3x3).
    """
    J[:, :] = 0.0
    xi = np.empty(3)
    xj = np.empty(3)
    di = np.empty(3)
    Jwi = np.empty((3, 3))
    Jvi = np.empty((3, 3))
    Jwj = np.empty((3, 3))
    Jvj = np.empty((3, 3))
    Jwn = np.empty((3, 3))
    Jvn = np.empty((3, 3))
    gi = np.empty(3)
    gj = np.empty(3)
    gn = np.empty(3)
    xdi = np.empty(3)
    xdj = np.empty(3)
    nd = np.empty(3)
    n = np.empty(3)
    for k in range(prims.shape[0]):
        typ, i, j, row = prims[k, 0], prims[k, 1], prims[k, 2], prims[k, 3]
        if typ == POINT or typ == LINE:
            _attach_point(kinds, C, V, i, pvec[k, 0], xi, Jwi, Jvi, gi, xdi)
            _attach_point(kinds, C, V, j, pvec[k, 1], xj, Jwj, Jvj, gj, xdj)
        if typ == POINT:
            for r in range(3):
                h[row + r] = xi[r] - xj[r]
                gamma[row + r] = gi[r] - gj[r]
                hd[row + r] = xdi[r] - xdj[r]
                for c in range(3):
                    if i >= 0:
                        J[row + r, 6 * i + c] += Jwi[r, c]
                        J[row + r, 6 * i + 3 + c] += Jvi[r, c]
                    if j >= 0:
                        J[row + r, 6 * j + c] -= Jwj[r, c]
                        J[row + r, 6 * j + 3 + c] -= Jvj[r, c]
        elif typ == DOT:
            _attach_direction(C, V, i, pvec[k, 0], xi, Jwi, Jvi, gi, xdi)
            _attach_direction(C, V, j, pvec[k, 1], xj, Jwj, Jvj, gj, xdj)
            val = 0.0
            ga = 0.0
            vel = 0.0
            for r in range(3):
                val += xi[r] * xj[r]
                ga += gi[r] * xj[r] + 2.0 * xdi[r] * xdj[r] + xi[r] * gj[r]
                vel += xdi[r] * xj[r] + xi[r] * xdj[r]
            h[row] = val - pval[k]
            gamma[row] = ga
            hd[row] = vel
            for c in range(3):
                si = 0.0
                sj = 0.0
                for r in range(3):
                    si += xj[r] * Jwi[r, c]
                    sj += xi[r] * Jwj[r, c]
                if i >= 0:
                    J[row, 6 * i + c] += si
                if j >= 0:
                    J[row, 6 * j + c] += sj
        else:  # LINE: n . (x_i - x_j), n = R_j p3
            _attach_direction(C, V, j, pvec[k, 2], n, Jwn, Jvn, gn, nd)
            val = 0.0
            ga = 0.0
            vel = 0.0
            for r in range(3):
                dr = xi[r] - xj[r]
                val += n[r] * dr
                ga += gn[r] * dr + 2.0 * nd[r] * (xdi[r] - xdj[r]) + n[r] * (gi[r] - gj[r])
                vel += nd[r] * dr + n[r] * (xdi[r] - xdj[r])
                di[r] = dr
            h[row] = val - pval[k]
            gamma[row] = ga
            hd[row] = vel
            for c in range(3):
                swi = 0.0
                svi = 0.0
                swj = 0.0
                svj = 0.0
                swn = 0.0
                for r in range(3):
                    swi += n[r] * Jwi[r, c]
                    svi += n[r] * Jvi[r, c]
                    swj += n[r] * Jwj[r, c]
                    svj += n[r] * Jvj[r, c]
                    swn += di[r] * Jwn[r, c]
                if i >= 0:
                    J[row, 6 * i + c] += swi
                    J[row, 6 * i + 3 + c] += svi
                if j >= 0:
                    J[row, 6 * j + c] += swn - swj
                    J[row, 6 * j + 3 + c] -= svj


@njit(cache=True)
def _add_world_wrench(kind, C, mom, f, x, Q):
    """Add a world moment ``mom`` and world force ``f`` acting at world point ``x`` to ``Q``."""
    d0 = x[0] - C[0, 3]
    d1 = x[1] - C[1, 3]
    d2 = x[2] - C[2, 3]
    t0 = mom[0] + d1 * f[2] - d2 * f[1]
    t1 = mom[1] + d2 * f[0] - d0 * f[2]
    t2 = mom[2] + d0 * f[1] - d1 * f[0]
    for k in range(3):
        Q[k] += C[0, k] * t0 + C[1, k] * t1 + C[2, k] * t2
        if kind == SE3_KIND:
            Q[3 + k] += C[0, k] * f[0] + C[1, k] * f[1] + C[2, k] * f[2]
        else:
            Q[3 + k] += f[k]


@njit(cache=True)
def mass_and_bias(kinds, mass, com, theta, C, V, grav, Mb, Q):
    """Per-body mass matrices ``Mb`` (nb, 6, 6) and ``Q = W - bias`` (nb, 6) with gravity."""
    nb = kinds.shape[0]
    tmp = np.empty(6)
    MV = np.empty(6)
    f = np.empty(3)
    zero = np.zeros(3)
    xc = np.empty(3)
    for b in range(nb):
        m = mass[b]
        c = com[b]
        R = C[b]
        M = Mb[b]
        M[:, :] = 0.0
        for r in range(3):
            for s in range(3):
                M[r, s] = theta[b, r, s]
            M[3 + r, 3 + r] = m
        # m c~
        mc = np.zeros((3, 3))
        mc[0, 1] = -m * c[2]
        mc[0, 2] = m * c[1]
        mc[1, 0] = m * c[2]
        mc[1, 2] = -m * c[0]
        mc[2, 0] = -m * c[1]
        mc[2, 1] = m * c[0]
        w = V[b]
        for r in range(6):
            Q[b, r] = 0.0
        if kinds[b] == SE3_KIND:
            for r in range(3):
                for s in range(3):
                    M[r, 3 + s] = mc[r, s]
                    M[3 + r, s] = -mc[r, s]
            for r in range(6):
                acc = 0.0
                for s in range(6):
                    acc += M[r, s] * w[s]
                MV[r] = acc
            adT_apply_into(w, MV, tmp)
            for r in range(6):
                Q[b, r] = tmp[r]
        else:
            # blocks m c~ R^T (upper right) and -m R c~ (lower left)
            for r in range(3):
                for s in range(3):
                    ur = 0.0
                    ll = 0.0
                    for k in range(3):
                        ur += mc[r, k] * R[s, k]
                        ll += R[r, k] * mc[k, s]
                    M[r, 3 + s] = ur
                    M[3 + r, s] = -ll
            # -omega x Theta_P omega
            tw0 = theta[b, 0, 0] * w[0] + theta[b, 0, 1] * w[1] + theta[b, 0, 2] * w[2]
            tw1 = theta[b, 1, 0] * w[0] + theta[b, 1, 1] * w[1] + theta[b, 1, 2] * w[2]
            tw2 = theta[b, 2, 0] * w[0] + theta[b, 2, 1] * w[1] + theta[b, 2, 2] * w[2]
            Q[b, 0] = -(w[1] * tw2 - w[2] * tw1)
            Q[b, 1] = -(w[2] * tw0 - w[0] * tw2)
            Q[b, 2] = -(w[0] * tw1 - w[1] * tw0)
            # -m R omega x (omega x c)
            a0 = w[1] * c[2] - w[2] * c[1]
            a1 = w[2] * c[0] - w[0] * c[2]
            a2 = w[0] * c[1] - w[1] * c[0]
            e0 = w[1] * a2 - w[2] * a1
            e1 = w[2] * a0 - w[0] * a2
            e2 = w[0] * a1 - w[1] * a0
            for r in range(3):
                Q[b, 3 + r] = -m * (R[r, 0] * e0 + R[r, 1] * e1 + R[r, 2] * e2)
        # gravity m g at the COM
        for r in range(3):
            f[r] = m * grav[r]
            xc[r] = R[r, 0] * c[0] + R[r, 1] * c[1] + R[r, 2] * c[2] + R[r, 3]
        _add_world_wrench(kinds[b], R, zero, f, xc, Q[b])


@njit(cache=True)
def springs_apply(kinds, C, V, sp_idx, sp_vec, sp_par, Q):
    """Point-to-point springs ``k (|d| - L0) d/|d| + c d'.e e`` between body points."""
    x1 = np.empty(3)
    x2 = np.empty(3)
    xd1 = np.empty(3)
    xd2 = np.empty(3)
    Jw = np.empty((3, 3))
    Jv = np.empty((3, 3))
    g = np.empty(3)
    f = np.empty(3)
    zero = np.zeros(3)
    for s in range(sp_idx.shape[0]):
        i, j = sp_idx[s, 0], sp_idx[s, 1]
        _attach_point(kinds, C, V, i, sp_vec[s, 0], x1, Jw, Jv, g, xd1)
        _attach_point(kinds, C, V, j, sp_vec[s, 1], x2, Jw, Jv, g, xd2)
        k, L0, damp = sp_par[s, 0], sp_par[s, 1], sp_par[s, 2]
        d0, d1, d2 = x2[0] - x1[0], x2[1] - x1[1], x2[2] - x1[2]
        L = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
        if L0 == 0.0 and damp == 0.0:
            f[0], f[1], f[2] = k * d0, k * d1, k * d2
        else:
            if L == 0.0:
                continue
            e0, e1, e2 = d0 / L, d1 / L, d2 / L
            rate = ((xd2[0] - xd1[0]) * e0 + (xd2[1] - xd1[1]) * e1
                    + (xd2[2] - xd1[2]) * e2)
            mag = k * (L - L0) + damp * rate
            f[0], f[1], f[2] = mag * e0, mag * e1, mag * e2
        if i >= 0:
            _add_world_wrench(kinds[i], C[i], zero, f, x1, Q[i])
        if j >= 0:
            f[0], f[1], f[2] = -f[0], -f[1], -f[2]
            _add_world_wrench(kinds[j], C[j], zero, f, x2, Q[j])


@njit(cache=True)
def actuators_apply(kinds, C, act_idx, act_screw, tau, Q):
    """
    Joint torques/forces as wrench pairs: ``tau_k`` times the unit screw on the child.

    ``act_screw[k] = (moment axis, force axis)`` in the child frame; the child gets the pure
    moment ``tau R_c u`` and the force ``tau R_c s`` at its origin, the parent the opposite.
    """
    mom = np.empty(3)
    f = np.empty(3)
    x = np.empty(3)
    for k in range(act_idx.shape[0]):
        c, p = act_idx[k, 0], act_idx[k, 1]
        Cc = C[c]
        for r in range(3):
            mom[r] = tau[k] * (Cc[r, 0] * act_screw[k, 0] + Cc[r, 1] * act_screw[k, 1]
                               + Cc[r, 2] * act_screw[k, 2])
            f[r] = tau[k] * (Cc[r, 0] * act_screw[k, 3] + Cc[r, 1] * act_screw[k, 4]
                             + Cc[r, 2] * act_screw[k, 5])
            x[r] = Cc[r, 3]
        _add_world_wrench(kinds[c], Cc, mom, f, x, Q[c])
        if p >= 0:
            for r in range(3):
                mom[r] = -mom[r]
                f[r] = -f[r]
            _add_world_wrench(kinds[p], C[p], mom, f, x, Q[p])


@njit(cache=True)
def chol_solve(A, B):
    """
    Solve ``A X = B`` in place (``A`` symmetric positive semi-definite, ``B`` (n, k)).

    Cholesky with skipped pivots: a pivot below ``PIVOT_TOL`` times the largest diagonal
    entry marks a redundant constraint; its multiplier is set to 0 (consistent redundant
    constraints, e.g. a planar loop closed by revolute joints).
    """
    n = A.shape[0]
    dmax = 0.0
    for i in range(n):
        dmax = max(dmax, A[i, i])
    tol = PIVOT_TOL * max(dmax, 1e-300)
    skip = np.zeros(n, dtype=np.bool_)
    for j in range(n):
        s = A[j, j]
        for k in range(j):
            s -= A[j, k] * A[j, k]
        if s <= tol:
            skip[j] = True
            for i in range(j, n):
                A[i, j] = 0.0
            continue
        L = math.sqrt(s)
        A[j, j] = L
        for i in range(j + 1, n):
            t = A[i, j]
            for k in range(j):
                t -= A[i, k] * A[j, k]
            A[i, j] = t / L
    for c in range(B.shape[1]):
        for i in range(n):
            if skip[i]:
                B[i, c] = 0.0
                continue
            t = B[i, c]
            for k in range(i):
                t -= A[i, k] * B[k, c]
            B[i, c] = t / A[i, i]
        for i in range(n - 1, -1, -1):
            if skip[i]:
                B[i, c] = 0.0
                continue
            t = B[i, c]
            for k in range(i + 1, n):
                t -= A[k, i] * B[k, c]
            B[i, c] = t / A[i, i]


@njit(cache=True)
def rhs(y, nb, kinds, mass, com, theta, grav, prims, pvec, pval, m, sp_idx, sp_vec, sp_par,
        act_idx, act_screw, tau, alpha, beta, out, lam):
    """
    Write ``(V, V')`` (12 nb) for the state ``y = (C_1..C_nb, V)`` into ``out``; ``lam`` (m,).

    Raises nothing: a singular mass matrix gives non-finite output, caught by the integrator.
    """
    C = y[:16 * nb].reshape((nb, 4, 4))
    V = y[16 * nb:].reshape((nb, 6))
    Mb = np.empty((nb, 6, 6))
    Q = np.empty((nb, 6))
    mass_and_bias(kinds, mass, com, theta, C, V, grav, Mb, Q)
    springs_apply(kinds, C, V, sp_idx, sp_vec, sp_par, Q)
    actuators_apply(kinds, C, act_idx, act_screw, tau, Q)
    n6 = 6 * nb
    Minv = np.empty((nb, 6, 6))
    acc = np.empty(n6)
    for b in range(nb):
        Minv[b] = np.linalg.inv(Mb[b])
        for r in range(6):
            t = 0.0
            for s in range(6):
                t += Minv[b, r, s] * Q[b, s]
            acc[6 * b + r] = t
    if m > 0:
        h = np.empty(m)
        J = np.empty((m, n6))
        gamma = np.empty(m)
        hd = np.empty(m)
        constraints(kinds, C, V, prims, pvec, pval, m, h, J, gamma, hd)
        # MJ = M^-1 J^T (n6, m), blockwise
        MJ = np.zeros((n6, m))
        for b in range(nb):
            for r in range(6):
                for c in range(m):
                    t = 0.0
                    for s in range(6):
                        t += Minv[b, r, s] * J[c, 6 * b + s]
                    MJ[6 * b + r, c] = t
        A = np.zeros((m, m))
        rhs_l = np.empty((m, 1))
        for r in range(m):
            t = 0.0
            for s in range(n6):
                t += J[r, s] * acc[s]
            rhs_l[r, 0] = t + gamma[r] + 2.0 * alpha * hd[r] + beta * beta * h[r]
            for c in range(r + 1):
                t = 0.0
                for s in range(n6):
                    js = J[r, s]
                    if js != 0.0:
                        t += js * MJ[s, c]
                A[r, c] = t
                A[c, r] = t
        chol_solve(A, rhs_l)
        for r in range(m):
            lam[r] = rhs_l[r, 0]
        for s in range(n6):
            t = 0.0
            for c in range(m):
                t += MJ[s, c] * rhs_l[c, 0]
            acc[s] -= t
    for s in range(n6):
        out[s] = y[16 * nb + s]
        out[n6 + s] = acc[s]
