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
* :func:`inverse_dynamics_derivatives`: ``∂τ/∂q`` and ``∂τ/∂q̇`` of the inverse dynamics by
  the body-fixed recursions of digest §7.2 (one forward and one backward sweep per
  column over the bodies that coordinate moves and their ancestors, O(n·nv) at most,
  compiled); :func:`inverse_dynamics_time_derivative` gives
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
from .dynamics import (_EYE4, _NO_FEXT, OK, _base, _dyn, _fext, _id_one, _id_work, _lk, _raise,
                       _states)
from .kinematics import body_poses, jacobian_factors
from .lie._core import (Ad_inv_apply_into, Ad_invT_apply_into, ad_apply_into, Ad_matrix_into,
                        ad_matrix_into, adT_apply_into)


# --------------------------------------------------------------------------- kernels
@njit(cache=True)
def _sweep(dyn, qd, base, G, V, A, W, AV, AA, MV, k, wrt_q, dtau, dV, dA, dW, live, t, h,
           y):
    """
    One column ``k`` of ``∂τ/∂q`` (``wrt_q``) or ``∂τ/∂q̇`` (digest §7.2, trees).

    Only the bodies coordinate ``k`` moves (the subtrees of the bodies it drives, ``live``)
    have non-zero ``δV``, ``δA`` and own ``δW``; the backward pass visits them and their
    ancestors.  ``MV``: the momenta ``M_i V_i`` (they do not depend on ``k``); ``t``,
    ``h``, ``y``: 6-vectors of work space.
    """
    parent, X, _, q_index, q_mult, _, nbase, inertia, base_inertia, gravity = dyn
    nb = parent.shape[0]
    for r in range(6):
        dV[0, r] = 0.0
        dA[0, r] = 0.0
    live[0] = k < nbase
    if nbase > 0:
        if wrt_q:
            if k < 3:   # V̇_0 ∋ -Rᵀ g, R -> R exp(δω~): ∂ = e_k x (Rᵀ g)
                for r in range(3):
                    y[r] = base[0, r] * gravity[0] + base[1, r] * gravity[1] \
                        + base[2, r] * gravity[2]
                e0 = 1.0 if k == 0 else 0.0
                e1 = 1.0 if k == 1 else 0.0
                e2 = 1.0 if k == 2 else 0.0
                dA[0, 3] = e1 * y[2] - e2 * y[1]
                dA[0, 4] = e2 * y[0] - e0 * y[2]
                dA[0, 5] = e0 * y[1] - e1 * y[0]
        elif k < 6:
            dV[0, k] = 1.0
    for i in range(nb):
        s = i + 1
        p = parent[i] + 1
        dl = q_mult[i] if nbase + q_index[i] == k else 0.0
        if not live[p] and dl == 0.0:
            live[s] = False
            continue
        live[s] = True
        rate = q_mult[i] * qd[nbase + q_index[i]]
        if live[p]:
            Ad_inv_apply_into(G[i], dV[p], dV[s])
            Ad_inv_apply_into(G[i], dA[p], dA[s])
        else:
            for r in range(6):
                dV[s, r] = 0.0
                dA[s, r] = 0.0
        if wrt_q:
            if dl != 0.0:
                ad_apply_into(X[i], AV[s], t)
                ad_apply_into(X[i], AA[s], h)
                for r in range(6):
                    dV[s, r] -= dl * t[r]
                    dA[s, r] -= dl * h[r]
            for r in range(6):
                y[r] = X[i, r] * rate
            ad_apply_into(dV[s], y, t)
            for r in range(6):
                dA[s, r] += t[r]
        else:
            for r in range(6):
                dV[s, r] += dl * X[i, r]
                y[r] = X[i, r] * rate
            ad_apply_into(dV[s], y, t)
            for r in range(6):
                dA[s, r] += t[r]
            if dl != 0.0:
                ad_apply_into(V[s], X[i], t)
                for r in range(6):
                    dA[s, r] += dl * t[r]
    for s in range(nb + 1):
        if not live[s]:
            for r in range(6):
                dW[s, r] = 0.0
            continue
        M = base_inertia if s == 0 else inertia[s - 1]
        # dF = M dA - ad_{dV}ᵀ M V - ad_Vᵀ M dV
        for r in range(6):
            sa = 0.0
            sd = 0.0
            for c in range(6):
                sa += M[r, c] * dA[s, c]
                sd += M[r, c] * dV[s, c]
            dW[s, r] = sa
            y[r] = sd
        adT_apply_into(dV[s], MV[s], t)
        for r in range(6):
            dW[s, r] -= t[r]
        adT_apply_into(V[s], y, t)
        for r in range(6):
            dW[s, r] -= t[r]
    for i in range(nb - 1, -1, -1):
        s = i + 1
        if not live[s]:  # nothing moved in this subtree: δW = 0
            continue
        p = parent[i] + 1
        live[p] = True   # from here on: "δW may be non-zero"
        m = q_mult[i]
        dtau[nbase + q_index[i]] += m * (X[i, 0] * dW[s, 0] + X[i, 1] * dW[s, 1]
                                         + X[i, 2] * dW[s, 2] + X[i, 3] * dW[s, 3]
                                         + X[i, 4] * dW[s, 4] + X[i, 5] * dW[s, 5])
        for r in range(6):
            y[r] = dW[s, r]
        if wrt_q and nbase + q_index[i] == k:   # ∂(Ad_{C_{i,λ}})ᵀ = -Ad_{C_{i,λ}}ᵀ ad_Xᵀ θ'
            adT_apply_into(X[i], W[s], t)
            for r in range(6):
                y[r] -= m * t[r]
        Ad_invT_apply_into(G[i], y, t)
        for r in range(6):
            dW[p, r] += t[r]
    if nbase > 0:
        for r in range(6):
            dtau[r] = dW[0, r]


@njit(cache=True)
def _derivatives(dyn, q, qd, qdd, base, fext, lk, dq, dqd):
    """``dq = ∂τ/∂q``, ``dqd = ∂τ/∂q̇`` (each (nv, nv)); returns a status code."""
    parent = dyn[0]
    nb = parent.shape[0]
    nv = qd.shape[0]
    fb, G, V, A, W = _id_work(nb)
    tau = np.empty(nv)
    st = _id_one(dyn, q, qd, qdd, base, fext, lk, 0, 1.0, tau, fb, G, V, A, W)
    if st != OK:
        return st
    AV = np.zeros((nb + 1, 6))
    AA = np.zeros((nb + 1, 6))
    for i in range(nb):
        p = parent[i] + 1
        Ad_inv_apply_into(G[i], V[p], AV[i + 1])
        Ad_inv_apply_into(G[i], A[p], AA[i + 1])
    MV = np.empty((nb + 1, 6))
    inertia, base_inertia = dyn[7], dyn[8]
    for s in range(nb + 1):
        M = base_inertia if s == 0 else inertia[s - 1]
        for r in range(6):
            acc = 0.0
            for c in range(6):
                acc += M[r, c] * V[s, c]
            MV[s, r] = acc
    dV = np.empty((nb + 1, 6))
    dA = np.empty((nb + 1, 6))
    dW = np.empty((nb + 1, 6))
    col = np.empty(nv)
    live = np.empty(nb + 1, dtype=np.bool_)
    tmp = np.empty((3, 6))
    for k in range(nv):
        for w in range(2):
            col[:] = 0.0
            _sweep(dyn, qd, base, G, V, A, W, AV, AA, MV, k, w == 0, col, dV, dA, dW, live,
                   tmp[0], tmp[1], tmp[2])
            if w == 0:
                dq[:, k] = col
            else:
                dqd[:, k] = col
    return OK


@njit(cache=True)
def _derivatives_entry(dyn, q, qd, qdd, base, fext, lk):
    nv = qd.shape[0]
    out = np.empty((2, nv, nv))
    st = _derivatives(dyn, q, qd, qdd, base, fext, lk, out[0], out[1])
    if st != OK:
        _raise(st)
    return out


@njit(cache=True)
def _derivatives_batch(dyn, Q, QD, QDD, base, fext, lk, out):
    for k in range(Q.shape[0]):
        st = _derivatives(dyn, Q[k], QD[k], QDD[k], base[k], fext[k], lk, out[k, 0],
                          out[k, 1])
        if st != OK:
            _raise(st)
    return out


# --------------------------------------------------------------------------- wrappers
def inverse_dynamics_derivatives(model, q, qd, qdd, f_ext=None, base_pose=None):
    """
    Return ``(∂τ/∂q, ∂τ/∂q̇)`` of :func:`~liemb_ros.dynamics.inverse_dynamics`, each (nv, nv).

    Analytic body-fixed recursions (digest §7.2, extended to trees, mimic coupling and the
    floating base), not finite differences.  Batched input gives (B, nv, nv) each.  The
    floating-base configuration derivative is along ``C_base exp(δ^)`` (module docstring);
    ``∂τ/∂q̇ = 2 C_Γ`` for a fixed base.  ``f_ext`` is held fixed in the link frames.
    """
    (q, qd, qdd), B = _states(model, q, (('qd', qd), ('qdd', qdd)))
    if B is None:
        out = _derivatives_entry(_dyn(model), q, qd, qdd,
                                 _EYE4 if base_pose is None else _base(model, base_pose, None),
                                 _NO_FEXT if f_ext is None else _fext(model, f_ext, None),
                                 _lk(model))
        return out[0], out[1]
    out = _derivatives_batch(_dyn(model), q, qd, qdd, _base(model, base_pose, B),
                             _fext(model, f_ext, B), _lk(model),
                             np.empty((B, 2, model.nv, model.nv)))
    return out[:, 0], out[:, 1]


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
