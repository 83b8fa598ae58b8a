"""
Passive joint torques of the Simulator: damping, friction, joint limits (:mod:`.simulation`).

Compiled kernels evaluated at every stage (the torques and their power), the ROS2 step's
diagonal Jacobian of them, which joints are near a limit, the limits' impedance from the
inertia where they engage, and the fastest damping rate for the explicit-or-implicit test.
"""
import numpy as np
from numba import njit

from ._dense import damped_cholesky as _damped_cholesky
from .dynamics import mass_matrix


def damping_rate_max(model, damping, q, base_pose=None, armature=None):
    """
    Return the fastest damping rate ``λ_max(M⁻¹D)`` [1/s] at ``q`` (``inf``: M singular).

    ``D = diag(0_6, damping)``; with ``W = (M⁻¹)_PP`` on the damped joints ``P``,
    ``λ(M⁻¹D) = λ(d^½ W d^½)`` (a symmetric matrix).  An explicit tableau is stable on the
    damping alone while ``dt · λ_max`` stays below its :data:`STABILITY_LIMIT`.
    """
    d = np.asarray(damping, dtype=float)
    damped = np.flatnonzero(d > 0)
    if not len(damped):
        return 0.0
    M = mass_matrix(model, q, base_pose=base_pose, armature=armature)
    P = model.nv - model.nq + damped
    sd = np.sqrt(d[damped])
    E = np.zeros((M.shape[0], len(P)))
    E[P, np.arange(len(P))] = sd
    try:
        Y = np.linalg.solve(M, E)
    except np.linalg.LinAlgError:
        return np.inf
    S = Y[P] * sd[:, None]
    return float(np.linalg.eigvalsh(0.5 * (S + S.T))[-1])


@njit(cache=True)
def _joint_torques(q, qd, tau, passive, out):
    """
    Joint torques ``out = τ - D q̇ - F tanh(q̇ / v_s) + τ_limit``; return the power ``q̇ᵀτ_nc``.

    ``passive = (D, F, v_s, lower, upper, K, B)``.  A joint past its limit by
    ``p > 0`` is pushed back by ``max(0, K p + B ṗ)`` (one-sided: the damper never pulls
    it into the limit).  The returned power excludes the springs ``K p`` (their energy is
    stored, :meth:`Simulator._limit_spring`): it is the work rate of the applied torque,
    the damping, the friction and the limit dampers.
    """
    d, F, vs, lo, hi, K, B = passive
    power = 0.0
    for j in range(q.shape[0]):
        t = tau[j] - d[j] * qd[j]
        if F[j] > 0.0:
            t -= F[j] * np.tanh(qd[j] / vs)
        nc = t
        if q[j] < lo[j]:
            p = lo[j] - q[j]
            f = K[j] * p - B[j] * qd[j]
            if f > 0.0:
                t += f
                nc += f - K[j] * p
            else:
                nc -= K[j] * p
        elif q[j] > hi[j]:
            p = q[j] - hi[j]
            f = K[j] * p + B[j] * qd[j]
            if f > 0.0:
                t -= f
                nc -= f - K[j] * p
            else:
                nc += K[j] * p
        out[j] = t
        power += qd[j] * nc
    return power


@njit(cache=True)
def _finite(y):
    """Whether every entry of ``y`` is finite."""
    for i in range(y.shape[0]):
        if not np.isfinite(y[i]):
            return False
    return True


@njit(cache=True)
def _limit_state(q, qd, lo, hi, h, reaching):
    """
    Return 0, 1 or 2: no joint near a limit, some in a limit, some reaching one.

    0: every joint within its range at ``q`` and ``q + h q̇``; 1: some in a limit; 2: some
    within their range reach a limit at ``q + h q̇`` (those get ``reaching[j]`` set).
    """
    state = 0
    for j in range(q.shape[0]):
        reaching[j] = False
        if q[j] < lo[j] or q[j] > hi[j]:
            state = max(state, 1)
        else:
            r = q[j] + h * qd[j]
            if r < lo[j] or r > hi[j]:
                reaching[j] = True
                state = 2
    return state


@njit(cache=True)
def _jacobian_diagonals(q, qd, passive, g, h):
    """
    Return ``c = diag(B + g K)``, ``kq = diag(K)`` of the ROS2 Jacobian at the step's start.

    ``B``: the damping, the friction's slope ``F/v_s sech²(q̇/v_s)`` and, for joints in
    their limits or reaching them within the step (``q + h q̇``), the limit damper; ``K``:
    the limit spring of those joints (a spring that engages within the step is stiff for
    that step already).
    """
    d, F, vs, lo, hi, K, B = passive
    n = q.shape[0]
    c = np.empty(n)
    kq = np.zeros(n)
    for j in range(n):
        c[j] = d[j]
        if F[j] > 0.0:
            x = abs(qd[j]) / vs
            if x < 300.0:
                s = 1.0 / np.cosh(x)
                c[j] += F[j] / vs * s * s
        r = q[j] + h * qd[j]
        if q[j] < lo[j] or q[j] > hi[j]:
            w = 1.0
        elif r < lo[j]:
            w = (lo[j] - r) / (q[j] - r)      # the share of the step past the limit
        elif r > hi[j]:
            w = (r - hi[j]) / (r - q[j])
        else:
            w = 0.0
        if w > 0.0:
            kq[j] = w * K[j]
            c[j] += w * (B[j] + g * K[j])
    return c, kq


@njit(cache=True)
def _engage(M, a, joints, tmin, zeta, K0, B0, K, B):
    """
    Set ``K_j, B_j`` of ``joints``: ``K0_j, B0_j``, unless stiffer than ``tmin`` allows.

    With ``m_j = 1 / (M⁻¹)_jj`` now: ``K_j = m_j / (tmin zeta)²``, ``B_j = 2 m_j / tmin``
    where ``K0_j > m_j / (tmin zeta)²`` (the joint's oscillator in its limit would be faster
    than the time constant ``tmin``), else ``K0_j, B0_j``.  ``(M⁻¹)_jj = |L⁻¹ e_j|²`` (``M =
    L Lᵀ``; entry ``a + j`` of M for joint j), one triangular solve per joint; ``m_j =
    M_jj`` if M is not positive definite.
    """
    if not np.any(joints):
        return
    n = M.shape[0]
    L = _damped_cholesky(M, np.zeros(0, np.int64), np.zeros(0), 0.0)
    x = np.empty(n)
    for j in range(joints.shape[0]):
        if not joints[j]:
            continue
        c = a + j
        if L is None:
            mj = M[c, c]
        else:
            s = 0.0
            for r in range(c, n):
                sm = 1.0 if r == c else 0.0
                for k in range(c, r):
                    sm -= L[r, k] * x[k]
                x[r] = sm / L[r, r]
                s += x[r] * x[r]
            mj = 1.0 / s
        cap = mj / (tmin * zeta) ** 2
        if K0[j] > cap:
            K[j] = cap
            B[j] = 2.0 * mj / tmin
        else:
            K[j] = K0[j]
            B[j] = B0[j]
