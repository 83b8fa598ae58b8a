"""
Control laws of the dynamics node, without ROS: trajectories, computed torque, impedance.

* :class:`JointTrajectory` interpolates joint waypoints the way ros2_control's
  JointTrajectoryController does: piecewise quintic between points that carry positions,
  velocities and accelerations, cubic (Hermite) between points with positions and
  velocities, linear with positions only.  It begins at the state it is given (position,
  velocity, zero acceleration) at the time of that state and goes from there to its first
  point still ahead; points whose time has passed are left out (the replacement rule of
  JointTrajectoryController's documentation: the setpoint never jumps to a point of the
  past).  After its last point it holds that point's position at rest.  Joints it does not
  name hold the position they had when it started.
* :func:`check_limits` samples a trajectory as the control loop will and refuses it
  (:class:`LimitError`) when, at any sample, a moved joint's position lies beyond its URDF
  ``<limit lower upper>`` by more than :data:`POSITION_MARGIN` (the segment from the
  state it begins at may stay as far out as that state is: a joint beyond its limit may be
  brought back, and as fast: one beyond its velocity limit may be slowed down; a point
  given beyond a limit is named first), a moved joint's velocity exceeds ``<limit
  velocity>`` or a joint's feed-forward torque exceeds ``<limit effort>`` by more than the
  fraction :data:`RATE_MARGIN`; or when its last point has a velocity
  (JointTrajectoryController's default, ``allow_nonzero_velocity_at_trajectory_end:
  false``), or it holds a point due now that is not the state (a jump).  The feed-forward
  torque is what the computed-torque law commands on the trajectory (``e = 0``):
  ``ID(q_d, q̇_d, q̈_d)`` with the rotor inertia, the joint damping and the compensated
  friction, before any feedback.  Samples: every
  segment at its start and at least every :data:`CHECK_STEP` (the 1 kHz loop's period;
  a trajectory longer than ``CHECK_SAMPLES * CHECK_STEP`` at ``duration / CHECK_SAMPLES``),
  at least :data:`MIN_INTERVALS` intervals per segment, and the last point as it is
  reached.  Between two samples ``h`` apart a position can pass the sampled ones by at
  most ``h² max|q̈| / 8`` (12.5 µrad at 100 rad/s² for 1 ms, well within the margin), a
  velocity by ``h² max|q⃛| / 8``.  A refusal names the joint, the point (its index among
  the points given and its ``time_from_start``, or the segment and the time within it), the
  value and the limit; for a velocity or an effort, also the factor by which the trajectory
  slowed down uniformly would fit (:func:`slowdown`), or that no timing helps.  The
  sampling and the dynamics are compiled and run without the GIL: a check in a thread does
  not hold up a control loop in another.
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

from ._kernels.dispatch import F64, REP_INDEX, canonical, check, fast, states
from ._kernels.jacobian import jacobian_link
from ._kernels.rnea import id_plain
from ._kernels.tree import link_pose_link
from .dynamics import gravity_torques, inverse_dynamics
from .kinematics import jacobian, link_pose
from .lie import so3

#: velocity [rad/s, m/s] over which the friction feed-forward changes sign (smoothly)
FRICTION_VELOCITY = 0.003
#: the most points a :class:`JointTrajectory` takes (a 10 s trajectory at 1 kHz; its check
#: against the limits costs about 1 µs per point and 4 µs per millisecond of motion)
MAX_POINTS = 10_000
#: a position may pass its joint's limit by this much (rad or m): a point planned on the
#: limit and rounded, and what a 1 kHz sampling can miss
POSITION_MARGIN = 1e-3
#: a velocity or a feed-forward torque may pass its limit by this fraction of it
RATE_MARGIN = 1e-3
#: the spacing of the samples [s]: the control loop's period at 1 kHz
CHECK_STEP = 1e-3
#: the most samples of one trajectory (a longer one is sampled more coarsely)
CHECK_SAMPLES = 200_000
#: every segment is sampled at this many intervals at least
MIN_INTERVALS = 4
#: a last point's velocity above this is not at rest (JointTrajectoryController's float
#: epsilon)
END_VELOCITY = float(np.finfo(np.float32).eps)
#: representations in which the impedance law accepts gains
IMPEDANCE_REPRESENTATIONS = ('body', 'hybrid')


class JointTrajectory:
    """
    Joint waypoints interpolated as a JointTrajectoryController does; see the module doc.

    ``joint_names``: the model's joints (the order of every sample); ``names``: the joints
    the trajectory moves (a subset, any order); ``times``: ``time_from_start`` of each
    point (s, strictly increasing, the first >= 0); ``positions`` (points, len(names));
    ``velocities``, ``accelerations``: the same shape, or empty (every point without);
    ``start``: the time of ``time_from_start = 0`` (the caller's clock, s); ``q``, ``qd``:
    the state (model order) at ``now`` (the same clock; None: ``start``), where the
    trajectory begins: it goes from the state to the first point due after ``now``
    (earlier points are left out).  When no point is due after ``now`` it holds its last
    point from ``now`` on; it must not be due before ``now`` (the trajectory would end in
    the past).  At most :data:`MAX_POINTS` points.  Raises ValueError naming what is wrong.

    After construction: :attr:`time_from_start` (the given times); :attr:`times` (s after
    :attr:`origin` = ``now``, the first 0), :attr:`positions`, :attr:`velocities`,
    :attr:`accelerations` (None when not given) and :attr:`index` (index among the given
    points; -1: the state) of the points it interpolates; :attr:`start`, :attr:`duration`.
    """

    def __init__(self, joint_names, names, times, positions, velocities=(), accelerations=(),
                 *, start, q, qd, now=None):
        index = {n: i for i, n in enumerate(joint_names)}
        names = list(names)
        unknown = [n for n in names if n not in index]
        if unknown:
            raise ValueError(f"unknown joint(s) {', '.join(map(repr, unknown))}; the model "
                             f"has {', '.join(joint_names)}")
        if not names or len(set(names)) != len(names):
            raise ValueError(f'joint names must be distinct and not empty: {names}')
        t = np.asarray(times, dtype=float)
        npts = t.size
        if npts == 0:
            raise ValueError('a trajectory needs at least one point')
        if npts > MAX_POINTS:
            raise ValueError(f'{npts} points: at most {MAX_POINTS} (MAX_POINTS)')
        _check_times(t)
        shape = (npts, len(names))
        P = _points(positions, shape, 'positions', required=True)
        V = _points(velocities, shape, 'velocities')
        A = _points(accelerations, shape, 'accelerations')
        if A is not None and V is None:
            raise ValueError('accelerations without velocities')
        q = np.asarray(q, dtype=float)
        qd = np.asarray(qd, dtype=float)
        now = start if now is None else now
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(qd)) and np.isfinite(start)
                and np.isfinite(now)):
            raise ValueError('non-finite start state or time')
        self.joint_names = list(joint_names)
        self.time_from_start = t
        self.start, self.origin = float(start), float(now)
        self._cols = np.array([index[n] for n in names], dtype=np.int64)
        self._hold = q.copy()
        due = t + (self.start - self.origin)     # each point's time after now
        first = int(np.searchsorted(due, 0.0, side='right'))   # the first due after now
        if first == npts:                        # none ahead: hold the last one from now
            if due[-1] < 0.0:
                raise ValueError(f'the trajectory ends in the past: its last point (point '
                                 f'{npts - 1}) was due {-due[-1]:.6g} s ago')
            first = npts - 1
            due = np.zeros(npts)
            keep = slice(first, npts)
            self.index = np.array([first], dtype=np.int64)
        else:                                    # from the state at now
            keep = slice(first, npts)
            self.index = np.arange(first - 1, npts, dtype=np.int64)
            self.index[0] = -1
        t = due[keep]
        P, V, A = P[keep], None if V is None else V[keep], None if A is None else A[keep]
        if self.index[0] == -1:
            t = np.r_[0.0, t]
            P = np.vstack([q[self._cols], P])
            V = None if V is None else np.vstack([qd[self._cols], V])
            A = None if A is None else np.vstack([np.zeros(len(names)), A])
        self.times, self.positions, self.velocities, self.accelerations = t, P, V, A
        self.duration = float(t[-1])
        # for the compiled sampler: linear (0), cubic (1) or quintic (2), and no None
        self._kind = 0 if V is None else 1 if A is None else 2
        self._V = np.zeros((0, len(names))) if V is None else V
        self._A = np.zeros((0, len(names))) if A is None else A

    @property
    def names(self):
        """Return the joints the trajectory moves, in the order of its points' columns."""
        return [self.joint_names[c] for c in self._cols]

    def sample(self, now):
        """Return desired ``(q, q̇, q̈)`` (model order) at time ``now`` (the start's clock)."""
        n = self._hold.size
        q, qd, qdd = np.empty(n), np.empty(n), np.empty(n)
        _sample_into(self.times, self.positions, self._V, self._A, self._kind, self._cols,
                     self._hold, float(now - self.origin), q, qd, qdd)
        return q, qd, qdd


def _check_times(t):
    """Raise ValueError naming the first ``time_from_start`` that is not valid."""
    bad = np.flatnonzero(~np.isfinite(t))
    if bad.size:
        raise ValueError(f'time_from_start of point {bad[0]} is not finite')
    if t[0] < 0:
        raise ValueError(f'time_from_start of point 0 is {t[0]:.6g} s: it must be >= 0')
    bad = np.flatnonzero(np.diff(t) <= 0)
    if bad.size:
        k = int(bad[0]) + 1
        raise ValueError(f'time_from_start must be strictly increasing: point {k} at '
                         f'{t[k]:.9g} s is not after point {k - 1} at {t[k - 1]:.9g} s')


def load_trajectory(path):
    """
    Read a joint trajectory from a YAML file; return the :class:`JointTrajectory` arguments.

    The file holds ``joint_names`` (a list) and ``points``, each with ``time_from_start``
    (s) and ``positions``, optionally ``velocities`` and ``accelerations``: what
    ``trajectory_msgs/JointTrajectory`` carries.  Returns ``(names, times, positions,
    velocities, accelerations)``; raises ValueError naming the file when a key is missing.
    """
    import yaml
    with open(path, encoding='utf-8') as f:
        data = yaml.safe_load(f)
    try:
        pts = data['points']
        return (list(data['joint_names']), [float(p['time_from_start']) for p in pts],
                [p['positions'] for p in pts], [p.get('velocities', []) for p in pts],
                [p.get('accelerations', []) for p in pts])
    except (KeyError, TypeError) as exc:
        raise ValueError(f'{path}: a trajectory file needs joint_names and points with '
                         f'time_from_start and positions ({exc!r} missing)') from None


def _points(values, shape, what, required=False):
    """
    Stack per-point arrays into ``shape``; None when every point has none.

    ``values``: one sequence per point, or an array of ``shape`` (or with 0 columns: none).
    """
    if values.__class__ is np.ndarray and values.ndim == 2:
        arr = values.astype(float)
        if arr.shape[1] == 0 and arr.shape[0] in (0, shape[0]):
            arr = None
    else:
        rows = [np.asarray(r, dtype=float).ravel() for r in values]
        arr = None
        if rows and any(r.size for r in rows):
            sizes = np.array([r.size for r in rows])
            bad = np.flatnonzero(sizes != shape[1])
            if len(rows) != shape[0] or bad.size:
                got = (f'{len(rows)} points for {shape[0]} times' if len(rows) != shape[0]
                       else f'{sizes[bad[0]]} at point {bad[0]}')
                raise ValueError(f'{what}: every point needs {shape[1]} values (one per '
                                 'joint) or, for velocities and accelerations, every point '
                                 f'none; got {got}')
            arr = np.array(rows)
    if arr is None:
        if required:
            raise ValueError(f'no {what}')
        return None
    if arr.shape != shape:
        raise ValueError(f'{what}: expected {shape[0]} points of {shape[1]} values, got '
                         f'{arr.shape}')
    bad = np.argwhere(~np.isfinite(arr))
    if bad.size:
        raise ValueError(f'non-finite {what} at point {bad[0][0]}')
    return arr


def segment(T, s, p0, p1, V=None, A=None):
    """
    Position, velocity and acceleration at ``s`` in ``[0, T]`` between two points.

    ``V``, ``A``: the end velocities / accelerations stacked (2, n), or None.  Quintic
    when both are given (matches p, v, a at both ends), cubic Hermite with ``V`` only
    (p, v), else linear.  ``p0``, ``p1``: (n,) (or scalars); returns three (n,) arrays.
    """
    p0 = np.asarray(p0, dtype=float)
    shape = p0.shape
    p0 = np.ascontiguousarray(p0).reshape(-1)
    p1 = np.ascontiguousarray(p1, dtype=float).reshape(-1)
    n = p0.size
    kind = 0 if V is None else 1 if A is None else 2
    V = np.zeros((0, n)) if V is None else np.ascontiguousarray(V, dtype=float).reshape(2, n)
    A = np.zeros((0, n)) if A is None else np.ascontiguousarray(A, dtype=float).reshape(2, n)
    P = np.stack([p0, p1])
    p, v, a = np.empty(n), np.empty(n), np.empty(n)
    _segment_into(P, V, A, kind, 0, float(T), float(s), np.arange(n), p, v, a)
    return p.reshape(shape), v.reshape(shape), a.reshape(shape)


@njit(cache=True)
def _segment_into(P, V, A, kind, k, T, s, cols, p, v, a):
    """
    Write the segment from point ``k`` to ``k + 1`` at ``s`` into ``p[cols]`` etc.

    ``P``, ``V``, ``A``: positions, velocities, accelerations (points, n) of the joints
    ``cols`` name (V, A are used as ``kind`` says: 0 linear, 1 cubic Hermite, 2 quintic).
    """
    for j in range(cols.size):
        p0 = P[k, j]
        h = P[k + 1, j] - p0
        c = cols[j]
        if kind == 0:
            v[c] = h / T
            p[c] = p0 + v[c] * s
            a[c] = 0.0
            continue
        v0, v1 = V[k, j], V[k + 1, j]
        if kind == 1:
            c2 = (3 * h - (2 * v0 + v1) * T) / T**2
            c3 = (-2 * h + (v0 + v1) * T) / T**3
            p[c] = p0 + s * (v0 + s * (c2 + s * c3))
            v[c] = v0 + s * (2 * c2 + 3 * s * c3)
            a[c] = 2 * c2 + 6 * s * c3
            continue
        a0, a1 = A[k, j], A[k + 1, j]
        c2 = a0 / 2
        c3 = (20 * h - (8 * v1 + 12 * v0) * T - (3 * a0 - a1) * T**2) / (2 * T**3)
        c4 = (-30 * h + (14 * v1 + 16 * v0) * T + (3 * a0 - 2 * a1) * T**2) / (2 * T**4)
        c5 = (12 * h - 6 * (v1 + v0) * T + (a1 - a0) * T**2) / (2 * T**5)
        p[c] = p0 + s * (v0 + s * (c2 + s * (c3 + s * (c4 + s * c5))))
        v[c] = v0 + s * (2 * c2 + s * (3 * c3 + s * (4 * c4 + s * 5 * c5)))
        a[c] = 2 * c2 + s * (6 * c3 + s * (12 * c4 + s * 20 * c5))


@njit(cache=True)
def _sample_into(t, P, V, A, kind, cols, hold, s, q, qd, qdd):
    """
    :meth:`JointTrajectory.sample` at ``s`` s from its start into ``q``, ``qd``, ``qdd``.

    Joints not in ``cols`` hold ``hold`` at rest; before the start the first point and
    after the end the last point are held at rest.
    """
    q[:] = hold
    qd[:] = 0.0
    qdd[:] = 0.0
    last = t.size - 1
    if s >= t[last] or last == 0 or s < 0:
        k = last if s >= t[last] or (last == 0 and s >= 0) else 0
        for j in range(cols.size):
            q[cols[j]] = P[k, j]
        return
    k = np.searchsorted(t, s, side='right') - 1
    _segment_into(P, V, A, kind, k, t[k + 1] - t[k], s - t[k], cols, q, qd, qdd)


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
        self._args = (model.packed_int, model.packed_float)
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
def _computed_torque_pass(ki, kf, q, qd, q_d, qd_d, qdd_d, kp, kd, damping, friction,
                          with_friction, armature, a, ff, tau):
    """
    :func:`computed_torque` of a fixed-base model in one pass; return the RNEA's status.

    Leaves ``max |q_d - q|`` in ``ff[-1]`` (the scratch is not needed after the pass).
    """
    _computed_torque_terms(q, qd, q_d, qd_d, qdd_d, kp, kd, damping, friction, with_friction,
                           armature, a, ff)
    st = id_plain(ki, kf, q, qd, a, 0, 1.0, tau)     # M a + C q̇ + g
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
                      (model.packed_int, model.packed_float, q, qd, self._li,
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
def _impedance_link(ki, kf, q, qd, li, rep, C_d, K, D, body, C, J, e, posture, k_null,
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
        st = id_plain(ki, kf, q, z, z, 0, 1.0, tau)     # g(q)
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
_WHAT = ('', 'position', 'velocity', 'effort')


class LimitError(ValueError):
    """
    A trajectory beyond a limit of the robot (the message says where and by how much).

    :attr:`joint` (name), :attr:`point` (index among the points given; -1: the state the
    trajectory begins at), :attr:`time` (``time_from_start`` of the sample, s),
    :attr:`quantity` ('position', 'velocity', 'effort', 'end velocity', 'jump'),
    :attr:`value`, :attr:`limit`, :attr:`slowdown` (the uniform slow-down factor that
    would fit, inf when none does, nan when timing does not matter).
    """

    def __init__(self, text, joint, point, time, quantity, value, limit, slowdown):
        super().__init__(text)
        self.joint, self.point, self.time, self.quantity = joint, point, time, quantity
        self.value, self.limit, self.slowdown = value, limit, slowdown


def check_limits(model, trajectory, friction=True, armature=0.0, part='all'):
    """
    Raise :class:`LimitError` unless ``trajectory`` stays within ``model``'s limits.

    ``trajectory``: a :class:`JointTrajectory` of ``model``'s joints; ``friction``,
    ``armature``: as the computed-torque law that will track it (:func:`computed_torque`).
    Fixed-base models (the computed-torque law's).  The samples, the limits and the
    margins: the module docstring.  ``part``: 'all'; 'points': all but the segment from the
    state (which depends on the state alone: a big trajectory is checked with one state,
    then its first segment with the latest); 'start': that segment, a jump and the end.
    """
    tr = trajectory
    cols, P = tr._cols, tr.positions
    lo, hi = model.lower[cols], model.upper[cols]
    given = P[int(tr.index[0] == -1):]   # the points given (a waypoint beyond: named first)
    out = (given < lo - POSITION_MARGIN) | (given > hi + POSITION_MARGIN)
    if out.any():
        k, j = np.argwhere(out)[0]
        k += int(tr.index[0] == -1)
        x = P[k, j]
        raise _error(model, tr, 'position', cols[j], tr.times[k], x,
                     lo[j] if x < lo[j] else hi[j], math.nan, segment=max(k - 1, 0))
    if part == 'points' and tr.index[0] == -1 and tr.times.size == 2:
        return   # the one segment starts at the state
    if part != 'points' and tr.velocities is not None:
        moving = np.abs(tr.velocities[-1]) > END_VELOCITY
        if moving.any():
            j = int(np.flatnonzero(moving)[0])
            raise _error(model, tr, 'end velocity', cols[j], tr.times[-1],
                         tr.velocities[-1, j], 0.0, math.nan)
    if part != 'points' and tr.index[0] >= 0:   # a point due now, held: it must be the state
        far = np.abs(P[0] - tr._hold[cols]) > POSITION_MARGIN
        if far.any():
            j = int(np.flatnonzero(far)[0])
            raise _error(model, tr, 'jump', cols[j], 0.0, P[0, j], tr._hold[cols[j]],
                         _jump_time(model, tr, friction, armature))
    lo0, hi0, vmax0 = lo, hi, model.velocity_limit.copy()   # (one compiled signature)
    if tr.index[0] == -1:   # the segment from the state may stay as far out as it is
        lo0, hi0 = np.minimum(lo, P[0]), np.maximum(hi, P[0])
        if tr.velocities is not None:   # ... and as fast
            vmax0[cols] = np.maximum(vmax0[cols], np.abs(tr.velocities[0]))
    last = tr.times.size - 1
    first, stop = {'all': (0, last), 'points': (int(tr.index[0] == -1), last),
                   'start': (0, int(tr.index[0] == -1))}[part]
    if part == 'start' and not stop:
        return   # no segment from the state (a held point, checked above)
    found = np.zeros(5)
    code = _first_violation(*_law_args(model, friction, armature), tr.times, P, tr._V,
                            tr._A, tr._kind, cols, tr._hold, lo, hi, lo0, hi0,
                            model.velocity_limit, vmax0, model.effort_limit, _step(tr.times),
                            first, stop, found)
    if code == 4:
        check(model, int(found[4]))   # a kernel status: non-finite, singular
    if code:
        s, j, value, limit, k = found
        quantity = _WHAT[code]
        factor = (math.nan if quantity == 'position'
                  else slowdown(model, tr, friction, armature))
        raise _error(model, tr, quantity, int(j), s, value, limit, factor, segment=int(k))


def slowdown(model, trajectory, friction=True, armature=0.0):
    """
    Return the least factor ``s`` by which ``trajectory``, slowed down uniformly, fits.

    Slowed down by ``s`` (every time ``× s``, velocities ``/ s``, accelerations ``/ s²``)
    the path is the same and each sample's torque is ``a / s² + b / s + c``, with ``a`` the
    inertial and Coriolis part (and the rotor inertia), ``b`` the damping, ``c`` gravity and
    the friction feed-forward (taken as fixed: an upper bound of its size); each velocity
    is ``q̇ / s``.  The least ``s`` meeting every velocity and effort limit (with
    :data:`RATE_MARGIN`) over the samples; below 1: it could go faster; inf: gravity and
    friction alone are beyond a limit somewhere.  Exact for the given points' timing; the
    segment from the state it begins at (whose velocity is the state's) does not scale so,
    and is counted as if it did.
    """
    tr = trajectory
    law = _law_args(model, friction, armature)
    return float(_slowdown(*law, tr.times, tr.positions, tr._V, tr._A, tr._kind, tr._cols,
                           tr._hold, model.velocity_limit, model.effort_limit,
                           _step(tr.times), 0, tr.times.size - 1))


def _law_args(model, friction, armature):
    """Return the computed-torque pass's model and law arguments (e = 0: any gains)."""
    n = model.nq
    if model.floating:
        raise ValueError(f"check_limits needs a fixed-base robot; '{model.name}' has a "
                         'floating base')
    return (model.packed_int, model.packed_float, np.ones(n), np.ones(n), model.damping,
            model.friction, bool(friction), _per_joint(armature, n))


def _step(times):
    """Return the sample spacing of a trajectory of these point times (module docstring)."""
    return max(CHECK_STEP, float(times[-1] - times[0]) / CHECK_SAMPLES)


def _tfs(tr, s):
    """``time_from_start`` of the trajectory's time ``s`` (s after its origin)."""
    return float(s + tr.origin - tr.start)


def _jump_time(model, tr, friction, armature):
    """
    Return the least ``time_from_start`` in which the held point could be reached.

    The slow-down factor of the same interpolation from the state (at rest) to the point in
    1 s.
    """
    V = () if tr.velocities is None else tr.velocities
    A = () if tr.accelerations is None else tr.accelerations
    trial = JointTrajectory(tr.joint_names, tr.names, [1.0], tr.positions, V, A, start=0.0,
                            q=tr._hold, qd=np.zeros(model.nq))
    return slowdown(model, trial, friction, armature)


def _unit(model, joint, quantity):
    """Return the unit of ``quantity`` of model joint index ``joint``."""
    prismatic = any(t == 'prismatic' for b, t in enumerate(model.body_joint_type)
                    if model.q_index[b] == joint)
    base = 'm' if prismatic else 'rad'
    return {'position': base, 'jump': base, 'velocity': f'{base}/s',
            'end velocity': f'{base}/s', 'effort': 'N' if prismatic else 'N m'}[quantity]


def _error(model, tr, quantity, joint, s, value, limit, factor, segment=None):
    """
    Return the :class:`LimitError` of one violation at the trajectory's time ``s``, in words.

    ``segment``: the segment of the sample (None: the sample is a point).
    """
    name = model.joint_names[joint]
    unit = _unit(model, joint, quantity)
    tfs = _tfs(tr, s)
    at = np.flatnonzero(tr.times == s)
    if at.size or segment is None:   # at a point (the held point: its own time)
        point = int(tr.index[at[0] if at.size else 0])
        where = 'at ' + _point(tr, point)
    else:
        a, b = tr.index[segment], tr.index[segment + 1]
        point = int(b)
        where = (f'at time_from_start {tfs:.4g} s, between {_point(tr, a)} and '
                 f'{_point(tr, b)}')
    if quantity == 'position':
        text = (f'{name} position {value:.6g} {unit} {where} is beyond its limits '
                f'[{model.lower[joint]:.6g}, {model.upper[joint]:.6g}] {unit} (margin '
                f'{POSITION_MARGIN:g})')
    elif quantity in ('velocity', 'effort'):
        text = (f'{name} {"velocity" if quantity == "velocity" else "feed-forward torque"} '
                f'{value:.4g} {unit} {where} is beyond its limit {limit:.4g} {unit}')
        text += (f'; slowed down by a factor of {factor:.3g} or more (every time_from_start '
                 f'x {factor:.3g}) it would be within every limit' if math.isfinite(factor)
                 else '; no timing helps: gravity and friction alone are beyond an effort '
                 'limit on this path')
    elif quantity == 'end velocity':
        text = (f'{name} velocity {value:.6g} {unit} {where}: a trajectory must end at rest '
                '(as JointTrajectoryController requires by default)')
    else:
        text = (f'{name} at {limit:.6g} {unit} would jump to {value:.6g} {unit}: '
                f'{_point(tr, point)} is due now and is not the current state; '
                + (f'reaching it from there at rest needs time_from_start >= {factor:.3g} s'
                   if math.isfinite(factor) else 'no timing reaches it: gravity and '
                   'friction alone are beyond an effort limit there'))
    return LimitError(text, name, point, tfs, quantity, value, limit, factor)


def _point(tr, index):
    """Name a point: ``point 3 (time_from_start 1.5 s)``, or the state it begins from."""
    if index < 0:
        return f'the current state (time_from_start {_tfs(tr, 0.0):.4g} s)'
    return f'point {index} (time_from_start {tr.time_from_start[index]:.4g} s)'


@njit(cache=True)
def _grid(t, step, first, stop):
    """
    Return the sample times (s after the origin) and their segments.

    Of segments ``first`` to ``stop - 1`` (the module docstring), and the last point when
    ``stop`` is the last.
    """
    last = t.size - 1
    count = int(stop == last)
    for k in range(first, stop):
        count += max(MIN_INTERVALS, int(math.ceil((t[k + 1] - t[k]) / step)))
    s = np.empty(count)
    seg = np.empty(count, dtype=np.int64)
    i = 0
    for k in range(first, stop):
        m = max(MIN_INTERVALS, int(math.ceil((t[k + 1] - t[k]) / step)))
        for j in range(m):
            s[i] = t[k] + (t[k + 1] - t[k]) * j / m
            seg[i] = k
            i += 1
    if stop == last:
        s[i] = t[last]
        seg[i] = max(last - 1, 0)
    return s, seg


@njit(cache=True, inline='always')
def _at(t, P, V, A, kind, cols, hold, s, k, q, qd, qdd):
    """Write the trajectory at ``s`` in segment ``k`` (a lone point: held) into q, qd, qdd."""
    for c in range(hold.size):
        q[c] = hold[c]
        qd[c] = 0.0
        qdd[c] = 0.0
    if t.size == 1:
        for j in range(cols.size):
            q[cols[j]] = P[0, j]
        return
    _segment_into(P, V, A, kind, k, t[k + 1] - t[k], min(s - t[k], t[k + 1] - t[k]), cols,
                  q, qd, qdd)


@njit(cache=True, nogil=True)
def _first_violation(ki, kf, kp, kd, damping, friction, with_friction, armature, t, P, V, A,
                     kind, cols, hold, lo, hi, lo0, hi0, vmax, vmax0, emax, step, first, stop,
                     found):
    """
    Return the kind of the first violation (0 none, 1 position, 2 velocity, 3 effort, 4).

    4: a kernel status, left in ``found[4]``; ``found``: (s, joint, value, limit, segment).

    A position beyond a limit comes first wherever it is (no timing helps), then the
    earliest velocity or effort.  Segments ``first`` to ``stop - 1`` (:func:`_grid`);
    segment 0 within ``lo0``, ``hi0``, ``vmax0`` (the state's segment: as far out as the
    state).
    """
    s_all, seg = _grid(t, step, first, stop)
    n = hold.size
    q, qd, qdd = np.empty(n), np.empty(n), np.empty(n)
    a, ff, tau = np.empty(n), np.empty(n), np.empty(n)
    rate = 0
    for i in range(s_all.size):
        s, k = s_all[i], seg[i]
        _at(t, P, V, A, kind, cols, hold, s, k, q, qd, qdd)
        for j in range(cols.size):
            c = cols[j]
            low, high, fast = ((lo0[j], hi0[j], vmax0[c]) if k == 0
                               else (lo[j], hi[j], vmax[c]))
            x = q[c]
            if x < low - POSITION_MARGIN or x > high + POSITION_MARGIN:
                found[0], found[1], found[2], found[4] = s, c, x, k
                found[3] = low if x < low else high
                return 1
            if not rate and abs(qd[c]) > fast * (1.0 + RATE_MARGIN):
                found[0], found[1], found[2], found[3], found[4] = s, c, qd[c], fast, k
                rate = 2
        if rate:
            continue   # the positions still to look at
        st = _computed_torque_pass(ki, kf, q, qd, q, qd, qdd, kp, kd, damping, friction,
                                   with_friction, armature, a, ff, tau)
        if st:
            found[4] = st
            return 4
        for c in range(n):
            if abs(tau[c]) > emax[c] * (1.0 + RATE_MARGIN):
                found[0], found[1], found[2], found[3], found[4] = s, c, tau[c], emax[c], k
                rate = 3
                break
    return rate


@njit(cache=True, inline='always')
def _least_root(a, b, c):
    """Return the least positive root of ``a u² + b u + c`` (inf when none)."""
    best = np.inf
    if a == 0.0:
        if b != 0.0 and -c / b > 0.0:
            best = -c / b
        return best
    d = b * b - 4.0 * a * c
    if d < 0.0:
        return best
    r = math.sqrt(d)
    for u in ((-b - r) / (2.0 * a), (-b + r) / (2.0 * a)):
        if 0.0 < u < best:
            best = u
    return best


@njit(cache=True, nogil=True)
def _slowdown(ki, kf, kp, kd, damping, friction, with_friction, armature, t, P, V, A, kind,
              cols, hold, vmax, emax, step, first, stop):
    """:func:`slowdown` of the samples (the largest factor any sample needs)."""
    s_all, seg = _grid(t, step, first, stop)
    n = hold.size
    q, qd, qdd = np.empty(n), np.empty(n), np.empty(n)
    zero = np.zeros(n)
    dyn, grav = np.empty(n), np.empty(n)
    need = 0.0
    for i in range(s_all.size):
        _at(t, P, V, A, kind, cols, hold, s_all[i], seg[i], q, qd, qdd)
        for j in range(cols.size):
            c = cols[j]
            need = max(need, abs(qd[c]) / (vmax[c] * (1.0 + RATE_MARGIN)))
        st = id_plain(ki, kf, q, qd, qdd, 0, 0.0, dyn)      # M q̈ + C q̇
        st = st or id_plain(ki, kf, q, zero, zero, 0, 1.0, grav)   # g
        if st:
            return np.inf
        for c in range(n):
            limit = emax[c] * (1.0 + RATE_MARGIN)
            if not math.isfinite(limit):
                continue
            a = dyn[c] + armature[c] * qdd[c]
            b = damping[c] * qd[c]
            g = grav[c]
            if with_friction:
                g += friction[c] * math.tanh(qd[c] / FRICTION_VELOCITY)
            if abs(g) > limit:
                return np.inf
            u = min(_least_root(a, b, g - limit), _least_root(a, b, g + limit))
            if u < np.inf:
                need = max(need, 1.0 / u)
    return need
