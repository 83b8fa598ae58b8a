"""
Passive joint torques of the Simulator: damping, friction, joint limits (:mod:`.simulator`).

Compiled kernels evaluated at every stage (the torques and their power), the ROS2 step's
diagonal Jacobian of them, which joints are near a limit, the limits' impedance from the
inertia where they engage, and the fastest damping rate for the explicit-or-implicit test.
:class:`JointLimits` holds the limits' spring-dampers, a part the Simulator owns.
"""
import warnings

import numpy as np
from numba import njit

from ._armature import SimulationWarning, _names
from ._dense import damped_cholesky as _damped_cholesky
from ..core.dynamics import mass_matrix

#: joint limits: a limit engages no faster than a time constant of this many steps, with
#: the joint's inertia at the time (MuJoCo's ``refsafe``: ``timeconst >= 2 timestep``)
LIMIT_MIN_STEPS = 2.0


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
def passive_torques(q, qd, tau, passive, out):
    """
    Joint torques ``out = τ - D q̇ - F tanh(q̇ / v_s) + τ_limit``; return the power ``q̇ᵀτ_nc``.

    ``passive = (D, F, v_s, lower, upper, K, B)``.  A joint past its limit by
    ``p > 0`` is pushed back by ``max(0, K p + B ṗ)`` (one-sided: the damper never pulls
    it into the limit).  The returned power excludes the springs ``K p`` (their energy is
    stored, :meth:`JointLimits.spring`): it is the work rate of the applied torque,
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
def all_finite(y):
    """Whether every entry of ``y`` is finite."""
    for i in range(y.shape[0]):
        if not np.isfinite(y[i]):
            return False
    return True


@njit(cache=True)
def limit_state(q, qd, lo, hi, h, reaching):
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
def jacobian_diagonals(q, qd, passive, g, h):
    """
    Return ``c = diag(B + g K)``, ``kq = diag(K)`` of the ROS2 Jacobian at the step's start.

    ``B``: the damping, the friction's slope ``F/v_s sech²(q̇/v_s)`` and, for joints in
    their limits or reaching them within the step (``q + h q̇``), the limit damper; ``K``:
    the limit spring of those joints (a spring that engages within the step is stiff for
    that step already).
    """
    n = q.shape[0]
    c = np.empty(n)
    kq = np.zeros(n)
    jacobian_diagonals_into(q, qd, passive, g, h, c, kq)
    return c, kq


@njit(cache=True, inline='always')
def jacobian_diagonals_into(q, qd, passive, g, h, c, kq):
    """:func:`jacobian_diagonals` into ``c`` and ``kq`` (nq,) (a step's loop allocates none)."""
    d, F, vs, lo, hi, K, B = passive
    for j in range(q.shape[0]):
        c[j] = d[j]
        kq[j] = 0.0
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


def _ranges(model, q, idx, most=3):
    """``q_j`` and the range ``[lower, upper]`` of the joints ``idx``, for a message."""
    return ', '.join(f'{q[j]:.4g} not in [{model.lower[j]:.4g}, {model.upper[j]:.4g}]'
                     for j in idx[:most]) + (', ...' if len(idx) > most else '')


class JointLimits:
    """
    The joint limits of a :class:`~liemb_ros.sim.simulator.Simulator`: a part it owns.

    One one-sided spring-damper per limited joint, set up at ``q0`` (the constructor) and
    stiffened no faster than the joint's inertia allows where a joint engages
    (:meth:`engage`); :meth:`spring` gives the springs' torques and energy.  ``lower``,
    ``upper`` (nq,) [rad or m; ±inf: none], ``limited`` (nq,) bool, ``stiffness``,
    ``damping`` (nq,) [N m/rad, N m s/rad or N/m, N s/m]: arrays changed in place only (the
    Simulator's backends hold them); ``time_constant`` ``τ_c`` [s], ``damping_ratio`` ``ζ``.

    ``k_j = m_j / (τ_c ζ)²``, ``b_j = 2 m_j / τ_c`` with ``m_j = 1 / (M⁻¹)_jj(q0)`` (the
    inertia the joint feels with all others free; ``M`` with the ``armature``), so one
    joint in its limit is a critically damped (``ζ = 1``) oscillator of time constant
    ``τ_c`` (MuJoCo's ``solref``).  ``limits`` False: no joint is limited.  ``dt``: the
    Simulator's step [s] (:meth:`engage`).  A ``q0`` beyond a limit is simulated as given
    (its spring pushes the joint in at the start) with a :class:`SimulationWarning` naming
    the joints.
    """

    def __init__(self, model, q0, base0, armature, dt, limits, time_constant, damping_ratio):
        if not (np.isfinite(time_constant) and time_constant > 0
                and np.isfinite(damping_ratio) and damping_ratio > 0):
            raise ValueError('limit_time_constant and limit_damping_ratio must be positive')
        m = self.model = model
        self.armature = armature
        self.dt = dt
        self.time_constant = float(time_constant)
        self.damping_ratio = float(damping_ratio)
        on = (np.isfinite(m.lower) | np.isfinite(m.upper)) & bool(limits)
        self.lower = np.where(on, m.lower, -np.inf)
        self.upper = np.where(on, m.upper, np.inf)
        self.limited = on
        self.stiffness = np.zeros(m.nq)
        self.damping = np.zeros(m.nq)
        self.impedance0 = None
        if not np.any(on):
            return
        beyond = np.flatnonzero((q0 < self.lower) | (q0 > self.upper))
        if len(beyond):
            warnings.warn(f'{m.name}: q0 is beyond the joint limits of {_names(m, beyond)} '
                          f'({_ranges(m, q0, beyond)}); their limit springs push them in at '
                          'the start', SimulationWarning, stacklevel=3)
        M = mass_matrix(m, q0, base_pose=base0, armature=armature)
        a = m.nv - m.nq
        try:
            mj = 1.0 / np.diag(np.linalg.inv(M))[a:]
        except np.linalg.LinAlgError:
            mj = np.diag(M)[a:]
        self.stiffness = np.where(on, mj / (time_constant * damping_ratio) ** 2, 0.0)
        self.damping = np.where(on, 2.0 * mj / time_constant, 0.0)
        self.impedance0 = (self.stiffness.copy(), self.damping.copy())

    def reset(self):
        """Put the spring-dampers back to those at ``q0`` (in place)."""
        if self.impedance0 is not None:
            self.stiffness[:], self.damping[:] = self.impedance0

    def engage(self, joints, q, base=None, M=None):
        """
        Set the limit spring-dampers of ``joints`` (bool (nq,)) for engaging at ``q``.

        Those at ``q0`` (the constructor), unless the joint's effective inertia ``m_j = 1 /
        (M⁻¹)_jj(q)`` has fallen so far that its oscillator in the limit would be faster
        than ``τ_min = 2 dt`` (:data:`LIMIT_MIN_STEPS` steps; MuJoCo's ``refsafe``): then
        ``k_j = m_j / (τ_min ζ)²``, ``b_j = 2 m_j / τ_min``.  Called for joints within
        their range only (their springs hold no energy), so a joint in its limit keeps the
        impedance it engaged with.  ``M``: the mass matrix with the armature at ``q`` when
        known.  Updates ``stiffness``, ``damping`` in place.
        """
        m = self.model
        if M is None:
            M = mass_matrix(m, q, base_pose=base, armature=self.armature)
        _engage(M, m.nv - m.nq, joints & self.limited, LIMIT_MIN_STEPS * self.dt,
                self.damping_ratio, self.impedance0[0], self.impedance0[1],
                self.stiffness, self.damping)

    def spring(self, q):
        """Return the limit springs' torques (nq,) and stored energy ``Σ ½ k_j p_j²`` [J] at q."""
        below = np.minimum(q - self.lower, 0.0)
        above = np.maximum(q - self.upper, 0.0)
        pen = below + above
        return -self.stiffness * pen, 0.5 * float(self.stiffness @ pen ** 2)
