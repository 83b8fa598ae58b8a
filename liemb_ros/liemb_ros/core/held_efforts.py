"""
Identification from efforts held over sample intervals: the momentum form, integrated exactly.

A digital controller, and a lock-step simulation, hold each effort constant over a sample
interval; the recording gives ``q`` and ``q̇`` at the interval's ends and the effort
``τ_k`` held over ``(t_{k-1}, t_k]`` (the convention of
:mod:`liemb_ros.core.signals`).  The acceleration then jumps at every sample, and any
``q̈`` taken from the samples (a difference, a filter) pairs an interval's effort with a
state to second order in the interval ``h`` only: ``1e-5`` of the parameters at 500 Hz
on the shipped arm.  Integrated over the interval instead, the equations of motion need
no acceleration at all, and the data give them to fourth order.

**The momentum form.**  With the generalised momentum ``p = M(q) q̇`` the equations of
motion ``τ = M q̈ + C q̇ + g + τ_friction`` read ([M18d] (79),
:mod:`liemb_ros.core.momentum`)

    ``ṗ = τ + w(q, q̇) - τ_friction``,   ``w = Cᵀ q̇ - g``,

and, integrated over one interval of length ``h`` under the held ``τ_k``,

    ``τ_k = (p(t_k) - p(t_{k-1})) / h - (1/h) ∫ w dt + (1/h) ∫ τ_friction dt``.

Both ``p`` and ``w`` are linear in the inertial parameters: with the spatial screws
``J^s_a`` of the bodies' joints, their spatial twists ``V^s_a`` and every body's spatial
momentum ``Π^s_i = Ad_{C_i}^{-T} M_i Ad_{C_i}^{-1} V^s_i`` (linear in body ``i``'s ten
parameters), joint ``a``'s rows are

    ``p_a = (J^s_a)ᵀ Σ_{i ⪰ a} Π^s_i``,   ``w_a = ([V^s_a, J^s_a])ᵀ Σ_{i ⪰ a} Π^s_i - g_a``,

(``[V^s_a, J^s_a] = ad_{V^s_a} J^s_a`` is ``J̇^s_a``, [M18d] (16); the sums run over the
subtree of ``a``; ``g`` is the gravity column of
:func:`~liemb_ros.core.identification.regressor`), :func:`momentum_regressor` and
:func:`momentum_rate_regressor`.  A rotor inertia adds ``a_k q̇_k`` to ``p_k``.

**The interval's row** (:func:`interval_regressor`):

- ``Δp / h``: exact, from the samples at the interval's ends;
- ``(1/h) ∫ w dt``: Simpson's rule, ``(w_a + 4 w_m + w_b) / 6`` (error ``h⁴ w⁽⁴⁾ / 2880``);
  the midpoint state from the cubic Hermite interpolant of the ends' ``q`` and ``q̇``,
  ``q_m = (q_a + q_b)/2 - h (q̇_b - q̇_a)/8`` (error ``h⁴ q⁽⁴⁾ / 384``) and
  ``q̇_m = 3 (q_b - q_a) / (2h) - (q̇_a + q̇_b) / 4`` (error ``h⁴ q⁽⁵⁾ / 1920``);
- viscous friction: ``(1/h) ∫ q̇ dt = (q_b - q_a) / h``, exact;
- Coulomb friction: ``sign(q̇_m)``, exact while the velocity keeps its sign over the
  interval (:func:`interval_regressor` returns the smallest speed over each interval, from
  the Hermite interpolant, for the caller to leave out intervals near a reversal).

So ``τ_k = A_k π`` holds to ``O(h⁴)`` of the torques, and a fit of the intervals' rows
recovers the parameters a lock-step simulation used to its own integrator's accuracy.
Fixed-base models (a floating base's momentum would need its pose's group structure);
mimic-coupled joints add ``μ`` times their rows to their leader's, as the regressor.

Units: as :func:`~liemb_ros.core.identification.regressor` (``p`` in N m s or N s; the
rows in N m or N).  Shapes: samples first.
"""
import numpy as np

from .identification import parameter_count, regressor
from .kinematics import body_poses, forward_kinematics
from .lie import se3

#: the spatial inertia ``M = [[Θ, h~], [-h~, m 1]]`` of each unit inertial parameter, in the
#: columns' order of :func:`~liemb_ros.core.identification.regressor` (m, m c, I about the
#: body frame's origin), (10, 6, 6): ``M(π) = Σ_c π_c BASIS[c]``
BASIS = np.zeros((10, 6, 6))
BASIS[0, 3:, 3:] = np.eye(3)
for _c, _h in ((1, (1.0, 0.0, 0.0)), (2, (0.0, 1.0, 0.0)), (3, (0.0, 0.0, 1.0))):
    _hat = np.array([[0.0, -_h[2], _h[1]], [_h[2], 0.0, -_h[0]], [-_h[1], _h[0], 0.0]])
    BASIS[_c, :3, 3:], BASIS[_c, 3:, :3] = _hat, -_hat
for _c, (_i, _j) in zip(range(4, 10), ((0, 0), (0, 1), (1, 1), (0, 2), (1, 2), (2, 2))):
    BASIS[_c, _i, _j] = BASIS[_c, _j, _i] = 1.0


def _states(model, q, qd, what):
    """Check ``q`` (N, nq), ``qd`` (N, nv) of a fixed-base model; return them as float arrays."""
    if model.floating:
        raise ValueError(f'{what} covers fixed-base models')
    q = np.asarray(q, dtype=float)
    qd = np.asarray(qd, dtype=float)
    if q.ndim != 2 or q.shape[1] != model.nq or qd.shape != (q.shape[0], model.nv):
        raise ValueError(f'q and qd must have shapes (N, {model.nq}) and (N, {model.nv}), got '
                         f'{q.shape} and {qd.shape}')
    if not (np.all(np.isfinite(q)) and np.all(np.isfinite(qd))):
        raise ValueError('q or qd contains NaN or inf')
    return q, qd


def _poses(model, q):
    """Body poses (N, nb, 4, 4): the links that are bodies, else body by body, sample by sample."""
    links = [model.link_frames.get(b) for b in model.body_names]
    if all(f is not None and f[0] == i and np.array_equal(f[1], np.eye(4))
           for i, f in enumerate(links)):
        idx = [model.link_ids[b] for b in model.body_names]
        return forward_kinematics(model, np.ascontiguousarray(q))[:, idx]
    return np.stack([body_poses(model, x) for x in q])


def _momentum_columns(model, q, qd):
    """
    Return ``(J, Jd, P)``: each body's screw, its rate and its spatial momentum's regressor.

    ``J`` (N, nb, 6): the spatial screw ``J^s`` of the body's joint; ``Jd``: ``[V^s, J^s]``;
    ``P`` (N, nb, 6, 10): ``Π^s_i = P_i π_i``.
    """
    C = _poses(model, q)
    N, nb = q.shape[0], model.nb
    J = np.einsum('nbij,bj->nbi', se3.Ad(C), model.X)
    rate = model.q_mult * qd[:, model.nv - model.nq + model.q_index]          # (N, nb)
    V = np.zeros((N, nb, 6))
    for i in range(nb):
        p = model.parent[i]
        V[:, i] = (V[:, p] if p >= 0 else 0.0) + J[:, i] * rate[:, i, None]
    Ai = se3.Ad_inv(C)                                                     # (N, nb, 6, 6)
    Vb = np.einsum('nbij,nbj->nbi', Ai, V)
    Phi = np.einsum('cij,nbj->nbic', BASIS, Vb)                            # M_i(e_c) V^b_i
    P = np.einsum('nbji,nbjc->nbic', Ai, Phi)                              # Ad^-T Φ
    Jd = np.einsum('nbij,nbj->nbi', se3.ad(V), J)
    return J, Jd, P


def _project(model, S, P, p):
    """Rows ``Σ_{a: k(a) = k} μ_a S_aᵀ Σ_{i ⪰ a} P_i`` (N, nv, p): the inertial columns filled."""
    N = S.shape[0]
    Y = np.zeros((N, model.nv, p))
    off = model.nv - model.nq
    for i in range(model.nb):
        for a in np.flatnonzero(model.support[i]):
            k = off + model.q_index[a]
            Y[:, k, 10 * i:10 * i + 10] += model.q_mult[a] * np.einsum('ni,nic->nc', S[:, a],
                                                                       P[:, i])
    return Y


def _p_rows(model, J, P, qd, friction, armature):
    """``Y_p`` (N, nv, p) from :func:`_momentum_columns`' ``J`` and ``P`` at velocities ``qd``."""
    Y = _project(model, J, P, parameter_count(model, friction, armature))
    if armature:
        Y[:, np.arange(model.nv), Y.shape[2] - model.nq + np.arange(model.nq)] = qd
    return Y


def _w_rows(model, Jd, P, q, friction, armature):
    """``Y_w`` (N, nv, p) from :func:`_momentum_columns`' ``Jd`` and ``P`` at positions ``q``."""
    zero = np.zeros((q.shape[0], model.nv))
    return (_project(model, Jd, P, parameter_count(model, friction, armature))
            - regressor(model, q, zero, zero, friction=friction, armature=armature))


def momentum_regressor(model, q, qd, friction=False, armature=False):
    """
    Generalised momentum's regressor ``Y_p`` (N, nv, p): ``p = M(q) q̇ = Y_p π``.

    Columns as :func:`~liemb_ros.core.identification.regressor` with the same ``friction``
    and ``armature`` (friction's columns are zero: friction stores no momentum; a rotor
    inertia's column is ``q̇_k``).  ``q`` (N, nq), ``qd`` (N, nv); fixed base.
    """
    q, qd = _states(model, q, qd, 'momentum_regressor')
    J, _, P = _momentum_columns(model, q, qd)
    return _p_rows(model, J, P, qd, friction, armature)


def momentum_rate_regressor(model, q, qd, friction=False, armature=False):
    """
    Regressor ``Y_w`` (N, nv, p) of ``w = Cᵀ q̇ - g = ṗ - τ_inertial``: ``w = Y_w π``.

    ``ṗ = τ + w`` for a robot without friction (module docstring); friction's and the rotor
    inertias' columns are zero (a constant rotor inertia adds nothing to ``w``).  ``q`` (N,
    nq), ``qd`` (N, nv); fixed base.
    """
    q, qd = _states(model, q, qd, 'momentum_rate_regressor')
    _, Jd, P = _momentum_columns(model, q, qd)
    return _w_rows(model, Jd, P, q, friction, armature)


def interval_regressor(model, h, q, qd, friction=False, armature=False):
    """
    Return ``(A, speed)``: the rows of efforts held over the sample intervals, and their speeds.

    ``q`` (N, nq), ``qd`` (N, nv): samples ``h`` seconds apart; ``A`` (N - 1, nv, p), row
    ``k`` the interval from sample ``k`` to ``k + 1``, with ``τ = A[k] π`` for the effort
    held over it (module docstring: exact to ``O(h⁴)``); columns as
    :func:`~liemb_ros.core.identification.regressor`.  ``speed`` (N - 1, nv): the smallest
    ``|q̇|`` over each interval (of the Hermite interpolant): Coulomb friction's column is
    exact where it is above zero with room to spare (``sign(q̇)`` constant over the interval).
    """
    q, qd = _states(model, q, qd, 'interval_regressor')
    if not (np.isfinite(h) and h > 0):
        raise ValueError(f'h must be a positive number of seconds, got {h!r}')
    if q.shape[0] < 2:
        raise ValueError(f'need at least two samples, got {q.shape[0]}')
    qa, qb, va, vb = q[:-1], q[1:], qd[:-1], qd[1:]
    qm = 0.5 * (qa + qb) - 0.125 * h * (vb - va)
    vm = 1.5 * (qb - qa) / h - 0.25 * (va + vb)
    n = q.shape[0]
    qs, vs = np.concatenate((q, qm)), np.concatenate((qd, vm))   # ends, then midpoints
    J, Jd, P = _momentum_columns(model, qs, vs)                   # one pass for p and w
    Yp = _p_rows(model, J[:n], P[:n], qd, friction, armature)
    Yw = _w_rows(model, Jd, P, qs, friction, armature)
    A = (Yp[1:] - Yp[:-1]) / h - (Yw[:n - 1] + 4.0 * Yw[n:] + Yw[1:n]) / 6.0
    if friction:
        first = 10 * model.nb
        rows = np.arange(model.nv)
        A[:, rows, first + np.arange(model.nq)] = (qb - qa) / h
        A[:, rows, first + model.nq + np.arange(model.nq)] = np.sign(vm)
    return A, _min_speed(h, qa, qb, va, vb)


def _min_speed(h, qa, qb, va, vb):
    """Return the smallest ``|q̇|`` over each interval of the cubic Hermite interpolant."""
    # q̇(s) = c2 s² + c1 s + c0, s in [0, 1]
    d = (qb - qa) / h
    c2 = 3.0 * (va + vb) - 6.0 * d
    c1 = 6.0 * d - 4.0 * va - 2.0 * vb
    speed = np.minimum(np.abs(va), np.abs(vb))
    with np.errstate(divide='ignore', invalid='ignore'):
        s = np.where(c2 != 0.0, -c1 / (2.0 * c2), -1.0)
    inside = (s > 0.0) & (s < 1.0)
    vs = c2 * s * s + c1 * s + va
    speed = np.where(inside, np.where(np.sign(vs) == np.sign(va),
                                      np.minimum(speed, np.abs(vs)), 0.0), speed)
    # a sign change at a root inside the interval: speed zero
    return np.where(np.sign(va) != np.sign(vb), 0.0, speed)


__all__ = ['momentum_regressor', 'momentum_rate_regressor', 'interval_regressor', 'BASIS']
