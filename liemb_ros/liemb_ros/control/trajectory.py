"""
Joint trajectories as ros2_control's JointTrajectoryController interpolates them.

:class:`JointTrajectory` interpolates joint waypoints: piecewise quintic between points
that carry positions, velocities and accelerations, cubic (Hermite) between points with
positions and velocities, linear with positions only.  It begins at the state it is given
(position, velocity, zero acceleration) at the time of that state and goes from there to
its first point still ahead; points whose time has passed are left out (the replacement
rule of JointTrajectoryController's documentation: the setpoint never jumps to a point of
the past).  After its last point it holds that point's position at rest.  Joints it does
not name hold the position they had when it started.  Sampling is one compiled call
(:func:`_sample_into`), as is :func:`segment`.
"""
import numpy as np
from numba import njit

#: the most points a :class:`JointTrajectory` takes (a 10 s trajectory at 1 kHz; its check
#: against the limits costs about 1 µs per point and 4 µs per millisecond of motion)
MAX_POINTS = 10_000


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
    points; -1: the state) of the points it interpolates; :attr:`start`, :attr:`duration`;
    :attr:`columns` (the model index of each of :attr:`names`) and :attr:`hold` (the state's
    positions, model order: what the joints it does not name hold); :attr:`packed` (what
    the compiled samplers read).
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
        self.columns = np.array([index[n] for n in names], dtype=np.int64)
        self.hold = q.copy()
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
            P = np.vstack([q[self.columns], P])
            V = None if V is None else np.vstack([qd[self.columns], V])
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
        return [self.joint_names[c] for c in self.columns]

    @property
    def packed(self):
        """
        Return the trajectory as the compiled samplers read it (:func:`_sample_into`).

        ``(times, positions, V, A, kind, columns, hold)``: ``V``, ``A`` the velocities and
        accelerations, (0, len(names)) when not given; ``kind`` 0 linear, 1 cubic, 2 quintic.
        The limit checks (:mod:`liemb_ros.control.limits`) scan the same arrays.
        """
        return (self.times, self.positions, self._V, self._A, self._kind, self.columns,
                self.hold)

    def sample(self, now):
        """Return desired ``(q, q̇, q̈)`` (model order) at time ``now`` (the start's clock)."""
        n = self.hold.size
        q, qd, qdd = np.empty(n), np.empty(n), np.empty(n)
        _sample_into(self.times, self.positions, self._V, self._A, self._kind, self.columns,
                     self.hold, float(now - self.origin), q, qd, qdd)
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
