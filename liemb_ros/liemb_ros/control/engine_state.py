"""
The state of the dynamics engine: joint states merged by name, the base's odometry.

:class:`EngineState`, a part that :class:`liemb_ros.control.engine.DynamicsEngine` owns,
validates incoming joint states (names, lengths, NaN; :class:`StateError` keeps the last
good state) and a floating base's odometry, and keeps the last good state; the functions
below check what messages bring for the engine's references (desired accelerations, a
trajectory's points, a target pose) against the same plausibility bounds.
"""
import math

import numpy as np


#: plausibility bounds of what messages bring: beyond them an input is refused, with the
#: bound, before any computation (finite absurd values overflow into NaN or drive a law to
#: its limits): a joint position (rad or m; a continuous joint may turn many times)
MAX_POSITION = 1e6
#: ... a joint or base velocity (rad/s or m/s)
MAX_VELOCITY = 1e4
#: ... a joint acceleration (rad/s² or m/s²)
MAX_ACCELERATION = 1e6
#: ... a position in the world (m): a target pose, a floating base
MAX_DISTANCE = 1e7
#: the most names of unknown joints remembered in :attr:`EngineState.ignored` (a stream
#: of new names must not grow the node's memory without bound)
MAX_IGNORED = 65_536


class StateError(ValueError):
    """A joint-state message that cannot be used (the message says why)."""


class EngineState:
    """
    The last good state of ``model``'s joints (and floating base): what a cycle starts from.

    ``base_pose`` (4, 4): a fixed base's mounting or a floating base's first pose (None:
    the world origin; a floating base then waits for odometry before it is :attr:`ready`).
    :attr:`now`: the caller's clock (s) of the last cycle: trajectories are timed by it.
    """

    def __init__(self, model, base_pose=None):
        self.model = model
        self.index = {n: i for i, n in enumerate(model.joint_names)}   # joint -> model index
        self.q = np.zeros(model.nq)
        self.qd = np.zeros(model.nv)
        self.base_pose = None if base_pose is None else np.asarray(base_pose, dtype=float)
        if model.floating and self.base_pose is None:
            self.base_pose = np.eye(4)
        self._seen = np.zeros(model.nq, dtype=bool)
        self._all_seen = model.nq == 0
        self._base_seen = not model.floating or base_pose is not None
        self._cache = {}
        self.stamp = None
        self.ignored = {}           # joint names the model does not know -> messages with them
        self.now = 0.0

    @property
    def ready(self):
        """Tell whether every joint's position (and a floating base's state) has arrived."""
        return self._all_seen and self._base_seen

    def missing_joints(self):
        """Return the joints never received so far (``'base odometry'`` for the base)."""
        missing = [n for n, s in zip(self.model.joint_names, self._seen) if not s]
        return missing + ([] if self._base_seen else ['base odometry'])

    def mapping(self, names):
        """
        Return ``(index, sel, unknown, whole)`` for the names of a message.

        ``index``: model index of each known name, ``sel``: their positions in the message
        (None: all), ``unknown``: the names the model does not know, ``whole``: whether the
        message holds exactly the model's joints in the model's order.
        """
        key = names if names.__class__ is tuple else tuple(names)
        hit = self._cache.get(key)
        if hit is None:
            if len(set(names)) != len(names):
                raise StateError(f'duplicate joint names ({len(names)} names, '
                                 f'{len(set(names))} distinct)')
            known = [k for k, n in enumerate(names) if n in self.index]
            idx = np.array([self.index[names[k]] for k in known], dtype=np.int64)
            sel = None if len(known) == len(names) else np.array(known, dtype=np.int64)
            whole = sel is None and np.array_equal(idx, np.arange(self.model.nq))
            hit = idx, sel, tuple(n for n in names if n not in self.index), whole
            if len(self._cache) < 64:
                self._cache[key] = hit
        return hit

    def update_state(self, names, positions, velocities=(), stamp=None):
        """
        Merge a joint state into the current state; return the names it ignored.

        Joints the model does not know are ignored (counted in :attr:`ignored`, the first
        :data:`MAX_IGNORED` names).
        ``velocities`` may be empty (then they are taken as zero).  ``stamp``: the state's
        time as ``(sec, nanosec)`` (kept in :attr:`stamp`).  Raises :class:`StateError`
        (state unchanged) for mismatched lengths, duplicate names or a non-finite value of
        a known joint.
        """
        idx, sel, unknown, whole = self.mapping(names)
        n = len(names)
        if len(positions) != n:
            raise StateError(f'{n} joint names but {len(positions)} positions')
        nvel = len(velocities)
        if nvel not in (0, n):
            raise StateError(f'{n} joint names but {nvel} velocities')
        if sel is not None:
            positions = np.asarray(positions, dtype=float)[sel]
            velocities = np.asarray(velocities, dtype=float)[sel] if nvel else ()
        # a sum is finite when every term is, except for an overflow: then look closer
        if not math.isfinite(_total(positions) + _total(velocities)):
            pos = np.asarray(positions, dtype=float)
            vel = np.asarray(velocities, dtype=float)
            if not (np.all(np.isfinite(pos)) and np.all(np.isfinite(vel))):
                known = [names[k] for k in (range(n) if sel is None else sel)]
                bad = [known[i] for i in range(len(known)) if not np.isfinite(pos[i])
                       or (nvel and not np.isfinite(vel[i]))]
                raise StateError(f"non-finite position or velocity for {', '.join(bad)}")
        off = self.model.nv - self.model.nq
        if whole:
            self.q[:] = positions
            self.qd[off:] = velocities if nvel else 0.0
            if not self._all_seen:
                self._seen[:] = True
                self._all_seen = True
        else:
            self.q[idx] = positions
            self.qd[off + idx] = velocities if nvel else 0.0
            if not self._all_seen:
                self._seen[idx] = True
                self._all_seen = bool(self._seen.all())
        self.stamp = stamp
        ignored = self.ignored
        for name in unknown:
            if name in ignored:
                ignored[name] += 1
            elif len(ignored) < MAX_IGNORED:   # (beyond: ignored, not remembered)
                ignored[name] = 1
        return unknown

    def update_base(self, pose, twist):
        """
        Set a floating base's pose ``C`` (4, 4, base -> world) and body-fixed twist (6,).

        The twist is ``(ω, v)`` of the base frame resolved in the base frame (what
        ``nav_msgs/Odometry`` carries in ``child_frame_id``, REP 105).  Raises
        :class:`StateError` (state unchanged) for a fixed-base model or non-finite values.
        """
        if not self.model.floating:
            raise StateError(f"'{self.model.name}' has a fixed base: base odometry does not "
                             'apply (set floating_base to use it)')
        C = np.asarray(pose, dtype=float)
        V = np.asarray(twist, dtype=float)
        if C.shape != (4, 4) or V.shape != (6,):
            raise StateError('base pose must be 4x4 and the twist 6 values')
        if not (np.all(np.isfinite(C)) and np.all(np.isfinite(V))):
            raise StateError('non-finite base pose or twist')
        _within(np.abs(C[:3, 3]).max(), MAX_DISTANCE, 'base position', 'm')
        _within(np.abs(V).max(), MAX_VELOCITY, 'base twist component', 'rad/s or m/s')
        self.base_pose = C
        self.qd[:6] = V
        self._base_seen = True

    def state_snapshot(self):
        """
        Return ``(q, q̇, time)``: copies of the state and the time it is of.

        The time: the state's stamp, else :attr:`now`.  Another thread may call this while
        the loop merges states: it retries until no state came in between.
        """
        while True:
            stamp = self.stamp
            q, qd, now = self.q.copy(), self.qd.copy(), self.now
            if self.stamp is stamp:
                break
        if stamp is not None and (stamp[0] or stamp[1]):
            now = stamp[0] + stamp[1] * 1e-9
        return q, qd, now


def checked_accelerations(accelerations, n):
    """Return ``n`` desired accelerations as an array; StateError when they do not fit."""
    a = np.asarray(accelerations, dtype=float)
    if a.shape != (n,):
        raise StateError(f'{n} command joints but {a.size} accelerations')
    if not np.all(np.isfinite(a)):
        raise StateError('non-finite desired acceleration')
    _within(np.abs(a).max() if a.size else 0.0, MAX_ACCELERATION, 'desired acceleration',
            'rad/s² or m/s²')
    return a


def checked_pose(pose):
    """Return a target pose (4, 4) as an array; StateError unless a pose within bounds."""
    C = np.asarray(pose, dtype=float)
    if C.shape != (4, 4) or not np.all(np.isfinite(C)):
        raise StateError('non-finite target pose (a finite 4x4 matrix expected)')
    R = C[:3, :3]
    if np.abs(R.T @ R - np.eye(3)).max() > 1e-6 or np.linalg.det(R) < 0:
        raise StateError('the target orientation is not a rotation')
    _within(np.abs(C[:3, 3]).max(), MAX_DISTANCE, 'target position', 'm')
    return C


def check_points(positions, velocities, accelerations):
    """Raise StateError naming the first trajectory point beyond a plausibility bound."""
    for values, bound, what, unit in (
            (positions, MAX_POSITION, 'position', 'rad or m'),
            (velocities, MAX_VELOCITY, 'velocity', 'rad/s or m/s'),
            (accelerations, MAX_ACCELERATION, 'acceleration', 'rad/s² or m/s²')):
        _bounded_points(values, bound, what, unit)


def _bounded_points(values, bound, what, unit):
    """Raise StateError naming the first point with a value beyond ``bound``."""
    try:
        arr = np.abs(np.asarray(values, dtype=float))
    except ValueError:   # rows of different lengths: the trajectory says which
        return
    if arr.ndim == 2 and arr.size:
        big = np.flatnonzero(~(arr <= bound).all(axis=1))   # NaN too: refused later anyway
        big = [k for k in big if np.isfinite(arr[k]).all()]
        if big:
            raise StateError(f'{what} {arr[big[0]].max():.3g} {unit} at point {big[0]} beyond '
                             f'the plausibility bound {bound:g} {unit}')


def _within(value, bound, what, unit):
    """Raise StateError naming ``what`` and the bound unless ``value <= bound``."""
    if not value <= bound:
        raise StateError(f'{what} {value:.3g} {unit} beyond the plausibility bound {bound:g} '
                         f'{unit}')


def _total(values):
    """Sum of a sequence of numbers (an array's with numpy)."""
    return values.sum() if values.__class__ is np.ndarray else sum(values)
