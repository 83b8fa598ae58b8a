"""
Equations of motion in closed form, their derivatives and the linearised model (seed 002 §5-§6).

* :func:`kane_eom`: the Euler-Jourdain / projection (Kane) equations (78),
  ``τ = (J^b)ᵀ [M_i V̇_i - ad_{V_i}ᵀ M_i V_i - W_i^app]_i`` with the system Jacobian
  ``J^b = A^b X^b`` and ``V̇ = J q̈ - A^b a^b V`` (seed 002 (10));
* :func:`lagrange_eom`: the Lagrange form (80)-(84), ``M = (J^b)ᵀ M^b J^b`` (81) and
  ``C = -(J^b)ᵀ (M^b A^b a^b + (b^b)ᵀ M^b) J^b`` (84), plus the gravity torques.  This ``C``
  satisfies ``q̇ᵀ(Ṁ - 2C) q̇ = 0`` but ``Ṁ - 2C`` is *not* skew-symmetric (digest §6.3);
  :func:`liemb_ros.dynamics.coriolis_matrix` is the Christoffel-consistent one.
  These two are matrix formulas over the stacked system (fixed base, O(n²) memory): a
  readable statement of the paper's equations and a cross-check of the O(n) recursions.
* ``Ṁ`` is :func:`liemb_ros.dynamics.mass_matrix_derivative` (recursive, compiled).
* :func:`inverse_dynamics_derivatives`: ``∂τ/∂q`` and ``∂τ/∂q̇`` of the inverse dynamics,
  analytic, in spatial form over subtree composites (one pass over the bodies, then one
  product per joint pair on a common path, O(n·d) for depth d; see :func:`_derivatives`),
  compiled; :func:`inverse_dynamics_time_derivative` gives
  ``τ̇ = ∂τ/∂q q̇ + ∂τ/∂q̇ q̈ + M q⃛``.
* :func:`linearize`: ``A, B`` of ``δẋ = A δx + B δτ`` about a state and torque.

Floating base: the configuration derivative is taken along a right (body-fixed) tangent
perturbation of the base, ``C_base exp(δ^)`` with ``δ = (δω, δv)`` angular first (as
Pinocchio's ``integrate`` for its free flyer, whose tangent is linear first), followed by
``q + δq``; so ``∂τ/∂q`` is (nv, nv).  The linearised base kinematics is
``δ̇_base = δV_base - ad_{V_base} δ_base``.
"""
import numpy as np
from numba import njit

from . import dynamics as dyn_
from .dynamics import (_EYE4, _NO_FEXT, OK, _base, _body_fext, _check, _check_inputs, _dot6,
                       _dyn, _fext, _inertia10_apply, _inertia10_rate, _lk,
                       _raise, _spatial_columns, _spatial_inertias10, _states,
                       _unpack_dyn)
from .kinematics import _fast, _out, body_poses, jacobian_factors
from .lie._core import (Ad_apply_into, Ad_invT_apply_into, ad_apply_into, Ad_matrix_into,
                        ad_matrix_into, adT_apply_into)


# --------------------------------------------------------------------------- kernels
@njit(cache=True, inline='always')
def _derivatives_work(nb, ncol):
    """
    Return the work arrays of :func:`_derivatives`, one allocation.

    Poses ``C``, node 6-vectors ``(Vs, As, Fc, Hc, fb, aw/t/g/y)``, 10-parameter inertias
    ``(Ic, Dc)`` and column 6-vectors ``(Js, U, W, Z, PHI, PSI, P, Q)``.
    """
    n1 = nb + 1
    o1 = 16 * n1
    o2 = o1 + 30 * n1 + 24
    o3 = o2 + 20 * n1
    w = np.empty(o3 + 48 * ncol)
    return (w[:o1].reshape((n1, 4, 4)), w[o1:o2].reshape((5 * n1 + 4, 6)),
            w[o2:o3].reshape((2 * n1, 10)), w[o3:].reshape((8, ncol, 6)))


@njit(cache=True, inline='always')
def _derivatives(dyn, q, qd, qdd, base, fext, lk, dq, dqd):
    """
    ``dq = ∂τ/∂q``, ``dqd = ∂τ/∂q̇`` (each (nv, nv)) in spatial form; returns a status code.

    All quantities in world axes at the base origin (an inertial frame translated by the
    base position, :func:`~liemb_ros.dynamics._local_base`: exact, and free of the
    ``|r|² eps`` round-off far from the world origin).  ``S_k`` are the spatial columns
    ``Ad_{C_k} X_k`` (seed 004 (29)), ``v``, ``a`` the spatial twists and accelerations
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
    rigid-body inertia (seed 002 (37)), so it and ``I_i`` keep the 10-parameter form
    (:func:`~liemb_ros.dynamics._inertia10_rate`), and ``Λ(h)`` (``Λ(h) x = ad_xᵀ h``) is
    antisymmetric and linear in ``h``: ``B^C = İ^C - Λ(H^C)``, ``B^C x = İ^C x - ad_xᵀ H^C``
    and ``(B^C)ᵀ x = İ^C x + ad_xᵀ H^C`` with ``H^C`` the subtree's spatial momentum.

    So one pass for the vectors of each column and one product per related pair: O(n·d)
    (d the depth), the structure of Carpentier and Mansard's analytical derivatives.  The
    floating base's six columns ``Ad_{C_base} e_k`` sit at the base node with ``v_λ = 0``,
    ``a_λ = a_w`` (so ``u = 0``) and ``z_k = ad_{v_0} S_k``: its right perturbation
    ``C_base exp(δ^)`` moves everything rigidly (module docstring).  Applied wrenches are
    fixed in their links, so they move rigidly as well.  Mimic joints: ``θ_k = m_k q_c +
    o_k`` and ``τ_c = Σ m_j S_jᵀ F_j``.  Checked against Pinocchio and finite differences
    (tests), and the per-column body-fixed sweeps (digest §7.2) that it replaced.
    """
    parent, _, _, q_index, q_mult, _, nbase, _, _, gravity = dyn
    st = _check_inputs(q, qd, qdd, base, fext)
    if st != OK:
        return st
    nb = parent.shape[0]
    n1 = nb + 1
    ncol = nbase + nb
    C, vec, ten, cols = _derivatives_work(nb, ncol)
    Vs, As, Fc, Hc, fb = (vec[:n1], vec[n1:2 * n1], vec[2 * n1:3 * n1], vec[3 * n1:4 * n1],
                          vec[4 * n1:5 * n1])
    aw, t, g, y = vec[5 * n1], vec[5 * n1 + 1], vec[5 * n1 + 2], vec[5 * n1 + 3]
    Ic, Dc = ten[:n1], ten[n1:]
    Js, U, Wk, Z, PHI, PSI, P, Q = (cols[0], cols[1], cols[2], cols[3], cols[4], cols[5],
                                    cols[6], cols[7])
    for r in range(3):
        aw[r] = 0.0
        aw[3 + r] = -gravity[r]
    _spatial_columns(dyn, q, qd, base, C, Js, Vs)
    _body_fext(dyn, fext, lk, fb)
    _spatial_inertias10(dyn, C, Ic)
    if nbase > 0:
        Ad_apply_into(C[0], qdd[:6], As[0])   # V̇^s = Ad_C V̇^b (digest §1.4)
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
        ad_apply_into(Vs[s], Js[col], t)     # J̇^s = ad_{V^s} J^s (seed 002 (16))
        for r in range(6):
            As[s, r] = As[p, r] + m * (Js[col, r] * qdd[c] + t[r] * qd[c])
    for s in range(n1):
        _inertia10_apply(Ic[s], Vs[s], Hc[s], False)   # h = I v
        _inertia10_rate(Ic[s], Vs[s], Dc[s])
        _inertia10_apply(Ic[s], As[s], y, False)
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
        _inertia10_apply(Dc[n], S, y, False)
        for r in range(6):
            Q[k, r] = y[r] + g[r]
            PSI[k, r] = y[r] - g[r]
        _inertia10_apply(Ic[n], Z[k], PSI[k], True)
        _inertia10_apply(Ic[n], S, P[k], False)
        # PHI = I^C w + B^C u - ad_Sᵀ F
        _inertia10_apply(Ic[n], Wk[k], y, False)
        if k >= nbase:
            _inertia10_apply(Dc[n], U[k], y, True)
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
            dq[cj, ck] += f * (_dot6(P[j], Wk[k]) + _dot6(Q[j], U[k]))
            dqd[cj, ck] += f * (_dot6(Q[j], Js[k]) + _dot6(P[j], Z[k]))
            if above:
                dq[ck, cj] += f * _dot6(Js[k], PHI[j])
                dqd[ck, cj] += f * _dot6(Js[k], PSI[j])
            if k >= nbase:
                pb = parent[k - nbase]
                k = nbase + pb if pb >= 0 else (0 if nbase > 0 else -1)
            else:
                k = k + 1 if k + 1 < nbase else -1
    return OK


@njit(cache=True)
def _derivatives_into(ki, kf, q, qd, qdd, base, fext, dq, dqd):
    """Single configuration :func:`_derivatives` on the packed model; returns a status."""
    dyn, lk = _unpack_dyn(ki, kf)
    return _derivatives(dyn, q, qd, qdd, base, fext, lk, dq, dqd)


@njit(cache=True)
def _derivatives_batch(dyn, Q, QD, QDD, base, fext, lk, dq, dqd):
    for k in range(Q.shape[0]):
        st = _derivatives(dyn, Q[k], QD[k], QDD[k], base[k], fext[k], lk, dq[k], dqd[k])
        if st != OK:
            _raise(st)


# --------------------------------------------------------------------------- wrappers
def inverse_dynamics_derivatives(model, q, qd, qdd, f_ext=None, base_pose=None, out=None):
    """
    Return ``(∂τ/∂q, ∂τ/∂q̇)`` of :func:`~liemb_ros.dynamics.inverse_dynamics`, each (nv, nv).

    Analytic, in spatial form over subtree composites (:func:`_derivatives`: trees, mimic
    coupling, the floating base), not finite differences.  Batched input gives (B, nv, nv)
    each.  The floating-base configuration derivative is along ``C_base exp(δ^)`` (module
    docstring); ``∂τ/∂q̇ = 2 C_Γ`` for a fixed base.  ``f_ext`` is held fixed in the link frames.
    ``out``: a pair of arrays of the results' shape to write into instead of new ones
    (repeated large batches; see :func:`~liemb_ros.kinematics.forward_kinematics`).
    """
    (q, qd, qdd), B = _states(model, q, (('qd', qd), ('qdd', qdd)))
    shape = (model.nv, model.nv) if B is None else (B, model.nv, model.nv)
    if out is None:
        dq, dqd = np.empty(shape), np.empty(shape)
    else:
        if not (isinstance(out, tuple) and len(out) == 2):
            raise ValueError(f'out must be a pair (dtau_dq, dtau_dqd) of arrays of shape '
                             f'{shape}; got {type(out).__name__}')
        args = (('q', q), ('qd', qd), ('qdd', qdd), ('base_pose', base_pose),
                ('f_ext', f_ext))
        dq, dqd = _out(out[0], shape, args), _out(out[1], shape, args)
        if np.shares_memory(dq, dqd):
            raise ValueError('the two arrays of out must not overlap')
    if B is None:
        st = _fast(model, ('dtau', base_pose is None, f_ext is None), _derivatives_into,
                   (model.packed_int, model.packed_float, q, qd, qdd,
                    _EYE4 if base_pose is None else _base(model, base_pose, None),
                    _NO_FEXT if f_ext is None else _fext(model, f_ext, None), dq, dqd))
        if st:
            _check(model, st)
        return dq, dqd
    _derivatives_batch(_dyn(model), q, qd, qdd, _base(model, base_pose, B),
                       _fext(model, f_ext, B), _lk(model), dq, dqd)
    return dq, dqd


def inverse_dynamics_time_derivative(model, q, qd, qdd, qddd, f_ext=None, base_pose=None):
    """
    ``τ̇ = d/dt τ(q, q̇, q̈)`` along a trajectory with jerk ``qddd``, shape (nv,) or (B, nv).

    Exact chain rule with the analytic partials: ``τ̇ = ∂τ/∂q q̇ + ∂τ/∂q̇ q̈ + M q⃛``
    (``f_ext`` constant in the link frames); needed for flatness-based control of
    series-elastic robots (seed 002 §6).
    """
    (q, qd, qdd, qddd), B = _states(model, q, (('qd', qd), ('qdd', qdd), ('qddd', qddd)))
    if not np.all(np.isfinite(qddd)):
        raise ValueError('qddd contains NaN or inf')
    dq, dqd = inverse_dynamics_derivatives(model, q, qd, qdd, f_ext=f_ext, base_pose=base_pose)
    M = dyn_.mass_matrix(model, q, base_pose=base_pose)
    mv = lambda A, x: np.einsum('...ij,...j->...i', A, x)  # noqa: E731
    return mv(dq, qd) + mv(dqd, qdd) + mv(M, qddd)


def linearize(model, q, qd, tau, f_ext=None, base_pose=None):
    """
    Linearised state-space model ``δẋ = A δx + B δτ`` about ``(q, q̇, τ)``.

    State ``x = (q, q̇)`` (tangent ``δx`` of size 2 nv); ``A`` (2nv, 2nv) and ``B``
    (2nv, nv): ``A = [[K, I], [-M⁻¹ ∂τ/∂q, -M⁻¹ ∂τ/∂q̇]]``, ``B = [[0], [M⁻¹]]`` at
    ``q̈ = forward_dynamics(q, q̇, τ)``; ``K = 0`` except ``K[:6, :6] = -ad_{V_base}`` for a
    floating base.  Returns ``(A, B)``; single configurations only.
    """
    (q, qd, tau), B = _states(model, q, (('qd', qd), ('tau', tau)))
    if B is not None:
        raise ValueError('linearize takes a single configuration')
    qdd = dyn_.forward_dynamics(model, q, qd, tau, f_ext=f_ext, base_pose=base_pose)
    dq, dqd = inverse_dynamics_derivatives(model, q, qd, qdd, f_ext=f_ext, base_pose=base_pose)
    M = dyn_.mass_matrix(model, q, base_pose=base_pose)
    Minv = np.linalg.inv(M)
    nv = model.nv
    A = np.zeros((2 * nv, 2 * nv))
    A[:nv, nv:] = np.eye(nv)
    if model.floating:
        ad_matrix_into(np.ascontiguousarray(qd[:6]), A[:6, :6])
        A[:6, :6] *= -1.0
    A[nv:, :nv] = -Minv @ dq
    A[nv:, nv:] = -Minv @ dqd
    Bm = np.zeros((2 * nv, nv))
    Bm[nv:] = Minv
    return A, Bm


# --------------------------------------------------------------------------- closed forms
def _ad(X):
    out = np.empty((6, 6))
    ad_matrix_into(np.ascontiguousarray(X, dtype=float), out)
    return out


def system_matrices(model, q, qd):
    """
    Return the stacked-system matrices of seed 002 §5 for a fixed-base model (dict of arrays).

    ``J`` (6nb, nq) = ``A X`` body-fixed system Jacobian (112), ``A`` (6nb, 6nb), ``X``,
    ``Mb`` = blockdiag(M_i^b), ``a`` = blockdiag(θ̇_i ad_{X_i}) (9), ``b`` =
    blockdiag(ad_{V_i}) (82), ``V`` = J q̇ (6nb,), ``poses`` (nb, 4, 4).
    """
    if model.floating:
        raise ValueError('the closed-form system matrices cover fixed-base models')
    q = np.asarray(q, dtype=float)
    qd = np.asarray(qd, dtype=float)
    if q.shape != (model.nq,) or qd.shape != (model.nv,):
        raise ValueError(f'q and qd must have shapes ({model.nq},), ({model.nv},); got '
                         f'{q.shape}, {qd.shape}')
    if not (np.all(np.isfinite(q)) and np.all(np.isfinite(qd))):
        raise ValueError('q or qd contains NaN or inf')
    J, A, Xs, _ = jacobian_factors(model, q, 'body')
    nb = model.nb
    V = J @ qd
    Mb = np.zeros((6 * nb, 6 * nb))
    a = np.zeros((6 * nb, 6 * nb))
    b = np.zeros((6 * nb, 6 * nb))
    for i in range(nb):
        sl = slice(6 * i, 6 * i + 6)
        Mb[sl, sl] = model.inertia[i]
        a[sl, sl] = model.q_mult[i] * qd[model.q_index[i]] * _ad(model.X[i])
        b[sl, sl] = _ad(V[sl])
    return {'J': J, 'A': A, 'X': Xs, 'Mb': Mb, 'a': a, 'b': b, 'V': V,
            'poses': body_poses(model, q)}


def _applied(model, poses, f_ext):
    """Stacked applied wrenches (gravity + f_ext) on the bodies, body frames (6nb,)."""
    nb = model.nb
    W = np.zeros(6 * nb)
    for i in range(nb):
        W[6 * i + 3:6 * i + 6] = poses[i][:3, :3].T @ model.gravity
        W[6 * i:6 * i + 6] = model.inertia[i] @ W[6 * i:6 * i + 6]   # (0, Rᵀ g) as wrench
    if f_ext is not None:
        fx = _fext(model, f_ext, None)
        for li, w in enumerate(fx):
            body = model.link_body[li]
            if body >= 0:
                Ad = np.empty((6, 6))   # Ad_T^-T w = Ad_{T^-1}ᵀ w
                Ad_matrix_into(np.linalg.inv(model.link_offset[li]), Ad)
                W[6 * body:6 * body + 6] += Ad.T @ w
    return W


def kane_eom(model, q, qd, qdd, f_ext=None):
    """
    Joint forces by the Euler-Jourdain / Kane projection (seed 002 (78)), fixed base.

    ``τ = Jᵀ [M_i V̇_i - ad_{V_i}ᵀ M_i V_i - W_i^app]``, ``V = J q̇``,
    ``V̇ = J q̈ - A a V`` (10); ``W^app`` = gravity ``M_i (0, R_iᵀ g)`` + ``f_ext``.  The
    columns of ``J`` are Kane's partial velocities.  Equals the O(n) inverse dynamics.
    """
    S = system_matrices(model, q, qd)
    qdd = np.asarray(qdd, dtype=float)
    if qdd.shape != (model.nv,) or not np.all(np.isfinite(qdd)):
        raise ValueError(f'qdd must be a finite vector of shape ({model.nv},)')
    V = S['V']
    Vd = S['J'] @ qdd - S['A'] @ S['a'] @ V
    F = S['Mb'] @ Vd - S['b'].T @ S['Mb'] @ V - _applied(model, S['poses'], f_ext)
    return S['J'].T @ F


def lagrange_eom(model, q, qd):
    """
    Lagrange form ``M q̈ + C q̇ + g = τ`` in system matrices (seed 002 (80)-(84)), fixed base.

    Returns ``(M, C, g)``: ``M = Jᵀ M^b J`` (81), ``C = -Jᵀ (M^b A a + bᵀ M^b) J`` (84)
    (not the Christoffel factorisation: only ``q̇ᵀ(Ṁ - 2C)q̇ = 0`` holds) and
    ``g = -Jᵀ W^grav``.
    """
    S = system_matrices(model, q, qd)
    J, Mb = S['J'], S['Mb']
    M = J.T @ Mb @ J
    C = -J.T @ (Mb @ S['A'] @ S['a'] + S['b'].T @ Mb) @ J
    g = -J.T @ _applied(model, S['poses'], None)
    return M, C, g


__all__ = ['inverse_dynamics_derivatives', 'inverse_dynamics_time_derivative', 'linearize',
           'system_matrices', 'kane_eom', 'lagrange_eom']
