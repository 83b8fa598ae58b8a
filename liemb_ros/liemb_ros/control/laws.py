"""
The control laws of the dynamics node, without ROS: computed torque and impedance.

* :func:`computed_torque`:
  ``τ = M(q)(q̈_d + K_d ė + K_p e) + C q̇ + g + D q̇_d + F tanh(q̇_r / v_f)``
  with ``e = q_d - q``; the joint damping ``D`` and Coulomb friction ``F`` of the
  model (URDF ``<dynamics damping friction>``) enter as feed-forwards, the friction
  along the reference velocity ``q̇_r = q̇_d + K_d⁻¹ K_p e`` (:func:`reference_velocity`;
  ``v_f`` = :data:`FRICTION_VELOCITY`; it can be left out).  ``M a + C q̇ + g`` is
  one inverse dynamics call ([M18d] §4), never the matrices.  A joint's rotor inertia
  (``armature``, which no URDF states) adds ``armature · a``: on a light joint with
  large friction it is what keeps the friction's reversals from jerking the link (the
  shipped arm's wrist: ``F / M_jj`` ≈ 300 rad/s² without it; see the README).
* :func:`pose_error` and :func:`cartesian_impedance`:
  ``τ = Jᵀ(K e - D V) + g + N(K_n (q_n - q) - D_n q̇)`` for one link, with ``J``, ``V``,
  ``K``, ``D`` and the wrench in one representation (``body`` or ``hybrid``), angular rows
  first:

  - ``body``: rows 0-2 are rotations about the link's axes (N m/rad, N m s/rad), rows 3-5
    translations of the link origin along the link's axes (N/m, N s/m);
  - ``hybrid``: rows 0-2 rotations about world axes, rows 3-5 translations of the link
    origin along world axes.

  The pose error ``e`` is the rotation vector of ``Rᵀ R_d`` (resolved in the link frame for
  body, rotated into the world for hybrid) and the origin offset ``p_d - p`` resolved in the
  same frame as the rows (:func:`pose_error`), so a wrench ``F`` (same rows) on the
  link holds it, to first order, displaced by ``K⁻¹ F`` from the target.
  ``N = I - Jᵀ J⁺ᵀ`` keeps the posture term out of the task wrench.
  Optionally (``friction=True``) ``+ F tanh(q̇_r / v_f)`` with the reference velocity
  ``q̇_r = J⁺ D⁻¹ K e + N' K_n/D_n (q_n - q)`` (``N' = I - J⁺J``): the joint velocity at
  which the dampers would balance the springs, the task analogue of computed torque's
  Slotine-Li reference.  It pushes each joint through its Coulomb friction towards the
  target, so the link ends near it instead of where the spring torques fall below the
  friction; it is zero at the target.  Under a steady external wrench it shifts the
  equilibrium by up to the friction torque (``F`` is a feed-forward, not a measurement):
  use it on a robot whose friction the URDF states, leave it off (the default) when the
  static stiffness ``K⁻¹ F`` must hold exactly.

Conventions: twists and wrenches angular first, poses 4x4 link -> world, SI units.
"""
import math

import numpy as np
from numba import njit

from ..core._kernels.dispatch import F64, REP_INDEX, canonical, check, fast, states
from ..core._kernels.jacobian import jacobian_link
from ..core._kernels.rnea import id_plain
from ..core._kernels.tree import link_pose_link
from ..core.dynamics import gravity_torques, inverse_dynamics
from ..core.kinematics import jacobian, link_pose
from ..core.lie import so3

#: velocity [rad/s, m/s] over which the friction feed-forward changes sign (smoothly)
FRICTION_VELOCITY = 0.003
#: representations in which the impedance law accepts gains
IMPEDANCE_REPRESENTATIONS = ('body', 'hybrid')


def computed_torque(model, q, qd, q_d, qd_d, qdd_d, kp, kd, friction=True, base_pose=None,
                    armature=0.0):
    """
    Return ``τ = M(q̈_d + K_d ė + K_p e) + C q̇ + g + D q̇_d + F tanh(q̇_r/v_f)``, (nv,).

    ``e = q_d - q``, ``ė = q̇_d - q̇`` (fixed base).  ``kp``, ``kd``: scalars or per-joint
    arrays (1/s², 1/s); ``D = model.damping``, ``F = model.friction`` (left out when
    ``friction`` is false), ``v_f`` = :data:`FRICTION_VELOCITY`, ``q̇_r`` =
    :func:`reference_velocity`.  ``armature``: rotor inertia reflected to each joint
    (kg m² or kg; a scalar or per joint; Pinocchio's ``model.armature``, the simulation's
    ``armature``): ``M`` is then ``M(q) + diag(armature)``.  One inverse dynamics call
    (``M a + C q̇ + g``) plus the feed-forwards, which one compiled pass computes with ``a``
    (a 1 kHz loop calls this).
    """
    if base_pose is None and not model.floating:   # one compiled pass with the RNEA
        return ComputedTorque(model, kp, kd, friction, armature)(q, qd, q_d, qd_d, qdd_d)
    n = model.nq
    q, qd, q_d, qd_d, qdd_d = _states(model, (q, qd, q_d, qd_d, qdd_d))
    a, ff = np.empty(n), np.empty(n)
    _computed_torque_terms(q, qd, q_d, qd_d, qdd_d, _per_joint(kp, n), _per_joint(kd, n),
                           model.damping, model.friction, bool(friction),
                           _per_joint(armature, n), a, ff)
    tau = inverse_dynamics(model, q, qd, a, base_pose=base_pose)
    tau += ff
    return tau


_STATE_NAMES = ('q', 'qd', 'q_d', 'qd_d', 'qdd_d')


def _states(model, xs):
    """Return the five joint vectors canonical (float64, contiguous); check their shapes."""
    n = model.nq
    out = []
    for name, x in zip(_STATE_NAMES, xs):
        x = canonical(x)
        if x.shape != (n,):
            raise ValueError(f"computed_torque: {name} must have shape ({n},) for model "
                             f"'{model.name}', got {x.shape}")
        out.append(x)
    return out


class ComputedTorque:
    """
    :func:`computed_torque` of one fixed-base model with set gains, for a control loop.

    The gains (``kp``, ``kd``, ``friction``, ``armature``: as :func:`computed_torque`)
    are checked once; each call checks the five joint vectors and runs one compiled pass
    (the law's terms and the RNEA).  ``tau = law(q, q̇, q_d, q̇_d, q̈_d)`` (nq,); after
    a call, :attr:`tracking_error` is ``max |q_d - q|`` (rad or m).
    """

    def __init__(self, model, kp, kd, friction=True, armature=0.0):
        if model.floating:
            raise ValueError(f"ComputedTorque needs a fixed-base robot; '{model.name}' has a "
                             'floating base (computed_torque takes base_pose)')
        n = model.nq
        self.model = model
        self._args = (model.packed_int, model.packed_float, model.data.work)
        self._gains = (_per_joint(kp, n), _per_joint(kd, n), model.damping, model.friction,
                       bool(friction), _per_joint(armature, n))
        self._a, self._ff = np.empty(n), np.empty(n)
        self.tracking_error = 0.0

    def __call__(self, q, qd, q_d, qd_d, qdd_d):
        """Return the joint torques (nq,) for the state and the desired motion."""
        xs = (q, qd, q_d, qd_d, qdd_d)
        n = self.model.nq
        for x in xs:   # the canonical arrays a loop passes go straight through
            if not (x.__class__ is np.ndarray and x.dtype is F64 and x.flags.carray
                    and x.shape == (n,)):
                xs = _states(self.model, xs)
                break
        tau = np.empty(n)
        st = fast(self.model, 'computed torque', _computed_torque_pass,
                  (*self._args, *xs, *self._gains, self._a, self._ff, tau))
        if st:
            check(self.model, st)
        self.tracking_error = float(self._ff[-1]) if n else 0.0   # (see the pass)
        return tau


@njit(cache=True)
def _computed_torque_pass(ki, kf, w, q, qd, q_d, qd_d, qdd_d, kp, kd, damping, friction,
                          with_friction, armature, a, ff, tau):
    """
    :func:`computed_torque` of a fixed-base model in one pass; return the RNEA's status.

    Leaves ``max |q_d - q|`` in ``ff[-1]`` (the scratch is not needed after the pass).
    """
    _computed_torque_terms(q, qd, q_d, qd_d, qdd_d, kp, kd, damping, friction, with_friction,
                           armature, a, ff)
    st = id_plain(ki, kf, w, q, qd, a, 0, 1.0, tau)     # M a + C q̇ + g
    error = 0.0
    for j in range(tau.shape[0]):
        tau[j] += ff[j]
        error = max(error, abs(q_d[j] - q[j]))
    if tau.shape[0] > 0:
        ff[-1] = error
    return st


def _per_joint(gain, n):
    """Return ``gain`` (a scalar or ``n`` values) as a float array of ``n`` values."""
    g = np.asarray(gain, dtype=float)
    # writeable and contiguous, as the engine's gains are: one compiled specialisation
    if g.ndim == 0:
        return np.full(n, float(g))
    return g if g.shape == (n,) and g.flags.writeable else np.array(np.broadcast_to(g, (n,)))


@njit(cache=True, inline='always')
def _reference_velocity(q, q_d, qd_d, kp, kd, j):
    """``q̇_r`` of joint ``j`` (:func:`reference_velocity`)."""
    ratio = kp[j] / kd[j] if kd[j] > 0.0 else 0.0
    return qd_d[j] + ratio * (q_d[j] - q[j])


@njit(cache=True)
def _computed_torque_terms(q, qd, q_d, qd_d, qdd_d, kp, kd, damping, friction, with_friction,
                           armature, a, ff):
    """Write ``a = q̈_d + K_d ė + K_p e``, ``ff = armature a + D q̇_d (+ F tanh(q̇_r / v_f))``."""
    for j in range(q.shape[0]):
        a[j] = qdd_d[j] + kd[j] * (qd_d[j] - qd[j]) + kp[j] * (q_d[j] - q[j])
        ff[j] = armature[j] * a[j] + damping[j] * qd_d[j]
        if with_friction:
            ff[j] += friction[j] * math.tanh(_reference_velocity(q, q_d, qd_d, kp, kd, j)
                                             / FRICTION_VELOCITY)


@njit(cache=True)
def _reference_velocity_into(q, q_d, qd_d, kp, kd, out):
    for j in range(q.shape[0]):
        out[j] = _reference_velocity(q, q_d, qd_d, kp, kd, j)


def reference_velocity(q, q_d, qd_d, kp, kd):
    """
    ``q̇_r = q̇_d + K_d⁻¹ K_p (q_d - q)``: the velocity the PD terms ask for (Slotine and Li).

    Its sign is the direction the friction feed-forward pushes: along the desired motion,
    and towards the target when the joint sticks off it (``K_d = 0``: ``q̇_d`` alone).
    """
    q, q_d, qd_d = (np.asarray(x, dtype=float) for x in (q, q_d, qd_d))
    n = q.shape[0]
    out = np.empty(n)
    _reference_velocity_into(q, q_d, qd_d, _per_joint(kp, n), _per_joint(kd, n), out)
    return out


def pose_error(C, C_d, representation):
    """
    Pose error ``e = (rotation, translation)`` (6,) taking ``C`` towards ``C_d``.

    ``body``: ``(log(Rᵀ R_d), Rᵀ (p_d - p))`` resolved in the link frame; ``hybrid``:
    ``(R log(Rᵀ R_d), p_d - p)`` resolved in the world frame.
    """
    _check_representation(representation)
    C, C_d = (np.ascontiguousarray(x, dtype=float) for x in (C, C_d))
    if C.shape != (4, 4) or C_d.shape != (4, 4):
        raise ValueError(f'pose_error takes two 4x4 poses, got {C.shape} and {C_d.shape}')
    e = np.empty(6)
    _pose_error_into(C, C_d, representation == 'body', e)
    return e


def _check_representation(representation):
    """Raise ValueError unless ``representation`` is one the impedance law takes."""
    if representation not in IMPEDANCE_REPRESENTATIONS:
        raise ValueError(f'impedance representation {representation!r}: expected one of '
                         f"{', '.join(IMPEDANCE_REPRESENTATIONS)}")


@njit(cache=True)
def _pose_error_into(C, C_d, body, e):
    """Write :func:`pose_error` into ``e`` (6,); one compiled pass (a 1 kHz loop calls it)."""
    R_rel = np.empty((3, 3))   # Rᵀ R_d
    for i in range(3):
        for j in range(3):
            R_rel[i, j] = C[0, i] * C_d[0, j] + C[1, i] * C_d[1, j] + C[2, i] * C_d[2, j]
    w = np.empty(3)
    so3.log_into(R_rel, w)
    d0, d1, d2 = C_d[0, 3] - C[0, 3], C_d[1, 3] - C[1, 3], C_d[2, 3] - C[2, 3]
    for i in range(3):
        if body:     # (log(Rᵀ R_d), Rᵀ (p_d - p))
            e[i] = w[i]
            e[3 + i] = C[0, i] * d0 + C[1, i] * d1 + C[2, i] * d2
        else:        # (R log(Rᵀ R_d), p_d - p)
            e[i] = C[i, 0] * w[0] + C[i, 1] * w[1] + C[i, 2] * w[2]
    if not body:
        e[3], e[4], e[5] = d0, d1, d2


def cartesian_impedance(model, q, qd, link, C_d, K, D, representation='hybrid',
                        posture=None, k_null=0.0, d_null=0.0, base_pose=None,
                        friction=False):
    """
    ``τ = Jᵀ(K e - D J q̇) + g(q) + (I - Jᵀ J⁺ᵀ)(K_n (q_n - q) - D_n q̇)`` (nv,).

    ``link``: the controlled link; ``C_d``: its target pose (4x4, world); ``K``, ``D``: the
    6 diagonal stiffness and damping values or 6x6 matrices, angular rows first, in
    ``representation`` (module docstring); ``posture``: the null-space posture ``q_n``
    (None: no posture term) with gains ``k_null`` (N m/rad), ``d_null`` (N m s/rad).
    ``friction``: add the Coulomb friction feed-forward ``F tanh(q̇_r / v_f)`` along
    :func:`impedance_reference_velocity` (module docstring: when to use it).  A loop that
    calls it with the same link and gains each cycle: :class:`CartesianImpedance`.
    """
    law = CartesianImpedance(model, link, K, D, representation, k_null, d_null, friction,
                             base_pose=base_pose)
    return law(q, qd, C_d, posture)


class CartesianImpedance:
    """
    :func:`cartesian_impedance` of one link with fixed gains, checked once (a 1 kHz loop).

    ``tau = law(q, q̇, C_d, posture=None)`` (nv,).  For a link of a robot that is not
    mounted at ``base_pose``, the pose, Jacobian, gravity, the law and the posture term are
    one compiled pass.  After a call, :attr:`J` and :attr:`e` hold the Jacobian (6, nv)
    and the pose error (6,) of that state.
    """

    def __init__(self, model, link, K, D, representation='hybrid', k_null=0.0, d_null=0.0,
                 friction=False, *, base_pose=None):
        K, D = canonical(K), canonical(D)
        if K.shape not in ((6,), (6, 6)) or D.shape not in ((6,), (6, 6)):
            raise ValueError(f'cartesian_impedance: K, D must be 6 values or 6x6, got '
                             f'{K.shape}, {D.shape}')
        _check_representation(representation)
        self.model, self.link, self.representation = model, link, representation
        self.K, self.D = K, D
        # the compiled law takes gains as 2-D: a diagonal as its one row (1, 6), else (6, 6)
        self._K6 = K.reshape(1, 6) if K.ndim == 1 else K
        self._D6 = D.reshape(1, 6) if D.ndim == 1 else D
        self.k_null, self.d_null = float(k_null), float(d_null)
        self.friction = bool(friction)
        self.base_pose = base_pose
        self._body = representation == 'body'
        self._li = model.link_ids.get(link) if link.__class__ is str else None
        self.J, self.e = np.empty((6, model.nv)), np.empty(6)
        self._C = np.empty((4, 4))
        self._none = np.empty(0)

    def __call__(self, q, qd, C_d, posture=None):
        """Return the joint torques (nv,) for the state, the target pose and posture."""
        model = self.model
        (q, qd), batch = states(model, q, (('qd', qd),))
        if batch is not None:
            raise ValueError('cartesian_impedance takes one state (q of shape (nq,))')
        C_d = canonical(C_d)
        if C_d.shape != (4, 4):
            raise ValueError(f'cartesian_impedance: C_d must be 4x4, got {C_d.shape}')
        if posture is None:
            q_n = self._none
        else:
            q_n = np.ascontiguousarray(posture, dtype=float)
            if q_n.shape != q.shape:
                raise ValueError(f'cartesian_impedance: posture must be {q.shape}, got '
                                 f'{q_n.shape}')
        J, e, tau = self.J, self.e, np.empty(model.nv)
        if self._li is not None and self.base_pose is None:   # one compiled pass
            st = fast(model, 'impedance', _impedance_link,
                      (model.packed_int, model.packed_float, model.data.work, q, qd, self._li,
                       REP_INDEX[self.representation], C_d, self._K6, self._D6, self._body,
                       self._C, J, e, q_n, self.k_null, self.d_null, tau))
            if st:
                check(model, st)
        else:                                  # a frame, or a robot mounted at base_pose
            bp = self.base_pose
            J[:] = jacobian(model, q, self.link, self.representation, base_pose=bp)
            _pose_error_into(link_pose(model, q, self.link, base_pose=bp), C_d, self._body,
                             e)
            _impedance_law(J, e, self._K6, self._D6, qd,
                           gravity_torques(model, q, base_pose=bp), tau)
            if q_n.size:
                _posture_into(J, q, qd, q_n, self.k_null, self.d_null, tau)
        if self.friction:
            qd_r = impedance_reference_velocity(J, np.linalg.pinv(J), e, self.K, self.D, q,
                                                posture, self.k_null, self.d_null)
            tau += model.friction * np.tanh(qd_r / FRICTION_VELOCITY)
        return tau


@njit(cache=True)
def _posture_into(J, q, qd, posture, k_null, d_null, tau):
    """
    Add the null-space posture term ``(I - Jᵀ J⁺ᵀ)(K_n (q_n - q) - D_n q̇)`` to ``tau``.

    ``I - Jᵀ J⁺ᵀ = I - J⁺ J`` is the orthogonal projector onto the null space of ``J``:
    :func:`_null_space_project` applies it without forming ``J⁺``.
    """
    t0 = k_null * (posture - q) - d_null * qd
    _null_space_project(J, t0)
    for c in range(tau.size):
        tau[c] += t0[c]


@njit(cache=True)
def _null_space_project(J, x):
    """
    Replace ``x`` (n,) by its projection onto the null space of ``J`` (m, n): ``(I - J⁺J) x``.

    One-sided Jacobi (Hestenes) orthogonalises the columns of ``B = Jᵀ`` by plane
    rotations until every pair is orthogonal to machine precision: then ``B = U Σ`` spans
    the row space of ``J`` and ``J⁺J x = Σ_i b_i (b_iᵀ x) / σ_i²`` over the columns with
    ``σ_i > 1e-15 σ_max`` (numpy's ``pinv`` cut-off).  The same projector as
    ``I - pinv(J) @ J`` to rounding (tested), in a few µs without LAPACK's calls and
    allocations (a 1 kHz impedance loop calls it).
    """
    m, n = J.shape
    B = np.empty((m, n))   # row i: column b_i of Jᵀ
    for i in range(m):
        for k in range(n):
            B[i, k] = J[i, k]
    for _ in range(60):   # sweeps; quadratic convergence: 5-8 for a 6x7 Jacobian
        rotated = False
        for i in range(m - 1):
            for j in range(i + 1, m):
                a = b = g = 0.0
                for k in range(n):
                    a += B[i, k] * B[i, k]
                    b += B[j, k] * B[j, k]
                    g += B[i, k] * B[j, k]
                if g == 0.0 or abs(g) <= 1e-15 * np.sqrt(a * b):
                    continue
                rotated = True
                zeta = (b - a) / (2.0 * g)
                t = (1.0 if zeta >= 0 else -1.0) / (abs(zeta) + np.sqrt(1.0 + zeta * zeta))
                c = 1.0 / np.sqrt(1.0 + t * t)
                s = c * t
                for k in range(n):
                    bi, bj = B[i, k], B[j, k]
                    B[i, k] = c * bi - s * bj
                    B[j, k] = s * bi + c * bj
        if not rotated:
            break
    smax2 = 0.0
    for i in range(m):
        s2 = 0.0
        for k in range(n):
            s2 += B[i, k] * B[i, k]
        smax2 = max(smax2, s2)
    for i in range(m):
        s2 = bx = 0.0
        for k in range(n):
            s2 += B[i, k] * B[i, k]
            bx += B[i, k] * x[k]
        if s2 > 1e-30 * smax2 and s2 > 0.0:
            f = bx / s2
            for k in range(n):
                x[k] -= f * B[i, k]


@njit(cache=True)
def _impedance_law(J, e, K, D, qd, g, tau):
    """
    Write ``τ = Jᵀ(K e - D J q̇) + g`` into ``tau`` (``g`` may be ``tau``).

    ``K``, ``D``: (6, 6), or (1, 6) for a diagonal given by its six values.
    """
    n = qd.shape[0]
    V = np.zeros(6)
    for r in range(6):
        for c in range(n):
            V[r] += J[r, c] * qd[c]
    W = np.empty(6)
    for r in range(6):
        if K.shape[0] == 1:
            w = K[0, r] * e[r]
        else:
            w = 0.0
            for c in range(6):
                w += K[r, c] * e[c]
        if D.shape[0] == 1:
            w -= D[0, r] * V[r]
        else:
            for c in range(6):
                w -= D[r, c] * V[c]
        W[r] = w
    for c in range(n):
        t = g[c]
        for r in range(6):
            t += J[r, c] * W[r]
        tau[c] = t


@njit(cache=True)
def _impedance_link(ki, kf, w, q, qd, li, rep, C_d, K, D, body, C, J, e, posture, k_null,
                    d_null, tau):
    """
    Compute the impedance law for model link ``li`` (no base pose); return a status.

    With a ``posture`` (not empty), its null-space term too.
    """
    st = link_pose_link(ki, kf, q, li, C)
    if st == 0:
        st = jacobian_link(ki, kf, q, li, rep, J)
    if st == 0:
        z = np.zeros(qd.shape[0])
        st = id_plain(ki, kf, w, q, z, z, 0, 1.0, tau)     # g(q)
    if st == 0:
        _pose_error_into(C, C_d, body, e)
        _impedance_law(J, e, K, D, qd, tau, tau)
        if posture.size:
            _posture_into(J, q, qd, posture, k_null, d_null, tau)
    return st


def impedance_reference_velocity(J, J_pinv, e, K, D, q, posture=None, k_null=0.0,
                                 d_null=0.0):
    """
    ``q̇_r = J⁺ D⁻¹ K e + (I - J⁺ J) K_n/D_n (q_n - q)`` (nv,): where the springs pull.

    The joint velocity at which the task dampers ``D`` (and the posture damper ``D_n``)
    would balance the springs ``K e`` (``K_n (q_n - q)``); rows whose damping is zero
    contribute nothing.  ``J_pinv``: ``J⁺`` (nv, 6).
    """
    Ke = K @ e if K.ndim == 2 else K * e
    if D.ndim == 2:
        V_r = np.linalg.lstsq(D, Ke, rcond=None)[0]
    else:
        V_r = np.divide(Ke, D, out=np.zeros(6), where=D > 0)
    qd_r = J_pinv @ V_r
    if posture is not None and d_null > 0:
        n = (k_null / d_null) * (posture - q)
        qd_r += n - J_pinv @ (J @ n)
    return qd_r


# -- trajectories against the robot's limits ----------------------------------------
