"""
The state of the dynamics engine: joint states merged by name, the base, the references.

:class:`EngineState`, a part of :class:`liemb_ros.control.engine.DynamicsEngine`, validates
incoming joint states (names, lengths, NaN; :class:`StateError` keeps the last good state),
a floating base's odometry, and the references of the torque laws (desired accelerations,
a joint trajectory, a target pose).
"""
import math

import numpy as np

from .. import control


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
    """The input side of :class:`~liemb_ros.control.engine.DynamicsEngine`."""

    # -- input ----------------------------------------------------------------------------
    @property
    def ready(self):
        """Tell whether every joint's position (and a floating base's state) has arrived."""
        return self._all_seen and self._base_seen

    def missing_joints(self):
        """Return the joints never received so far (``'base odometry'`` for the base)."""
        missing = [n for n, s in zip(self.model.joint_names, self._seen) if not s]
        return missing + ([] if self._base_seen else ['base odometry'])

    def _mapping(self, names):
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
            known = [k for k, n in enumerate(names) if n in self._index]
            idx = np.array([self._index[names[k]] for k in known], dtype=np.int64)
            sel = None if len(known) == len(names) else np.array(known, dtype=np.int64)
            whole = sel is None and np.array_equal(idx, np.arange(self.model.nq))
            hit = idx, sel, tuple(n for n in names if n not in self._index), whole
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
        idx, sel, unknown, whole = self._mapping(names)
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

    def set_desired_acceleration(self, accelerations):
        """Desired joint accelerations, in ``command_joints`` order (inverse dynamics mode)."""
        a = np.asarray(accelerations, dtype=float)
        if a.shape != (len(self.command_joints),):
            raise StateError(f'{len(self.command_joints)} command joints but {a.size} '
                             'accelerations')
        if not np.all(np.isfinite(a)):
            raise StateError('non-finite desired acceleration')
        _within(np.abs(a).max() if a.size else 0.0, MAX_ACCELERATION, 'desired acceleration',
                'rad/s² or m/s²')
        off = self.model.nv - self.model.nq
        self.qdd_desired[off + self._command_index] = a

    def set_trajectory(self, names, times, positions, velocities=(), accelerations=(),
                       start=None):
        """
        Track a new joint trajectory (computed_torque) from ``start`` (the clock of ``now``).

        It replaces the one before, starting from the current state at :attr:`now` (see
        :class:`liemb_ros.control.JointTrajectory`); ``start`` None: :attr:`now`.  Raises
        :class:`StateError` (nothing changes) for unknown joints, non-increasing times,
        wrong lengths, non-finite values, before the state is known, or beyond the robot's
        limits (:func:`liemb_ros.control.check_limits`).
        """
        self.trajectory = self.checked_trajectory(names, times, positions, velocities,
                                                  accelerations, start=start)

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

    def checked_trajectory(self, names, times, positions, velocities=(), accelerations=(),
                           *, start=None, state=None, part='all'):
        """
        Return a :class:`liemb_ros.control.JointTrajectory` checked against the limits.

        ``state``: ``(q, q̇, now)`` it begins from (None: the current state and
        :attr:`now`); ``start``: the time of ``time_from_start = 0`` (None: ``now``);
        ``part``: what :func:`liemb_ros.control.check_limits` checks.  The feed-forward is
        the computed-torque law's with this engine's model (payload and gravity
        included), armature and friction compensation.  Raises :class:`StateError`.
        """
        if not self.ready:
            raise StateError('no complete joint state yet: a trajectory starts from it')
        q, qd, now = self.state_snapshot() if state is None else state
        for values, bound, what, unit in (
                (positions, MAX_POSITION, 'position', 'rad or m'),
                (velocities, MAX_VELOCITY, 'velocity', 'rad/s or m/s'),
                (accelerations, MAX_ACCELERATION, 'acceleration', 'rad/s² or m/s²')):
            _bounded_points(values, bound, what, unit)
        model = self.model
        if self.base_pose is not None:   # mounted: gravity in the base frame
            model = model.replace(gravity=self.base_pose[:3, :3].T @ model.gravity)
        try:
            tr = control.JointTrajectory(
                model.joint_names, names, times, positions, velocities, accelerations,
                start=now if start is None else start, q=q, qd=qd, now=now)
            control.check_limits(model, tr, self.friction_compensation, self.armature,
                                 part)
        except ValueError as exc:   # LimitError is one
            raise StateError(str(exc)) from None
        return tr

    def hold(self, names=None):
        """
        Hold the current position of ``names`` (None: every joint) from :attr:`now`.

        Not checked: holding where the arm is asks for no motion (a joint beyond its limit,
        or one that gravity pulls harder than its limit, is held where it is all the same).
        """
        names = self.model.joint_names if names is None else names
        cols = [self._index[n] for n in names]
        self.trajectory = control.JointTrajectory(
            self.model.joint_names, names, [0.0], [self.q[cols]], start=self.now, q=self.q,
            qd=self.qd)

    def set_target_pose(self, pose):
        """Target pose (4x4, world) of :attr:`impedance_link`; StateError when not a pose."""
        C = np.asarray(pose, dtype=float)
        if C.shape != (4, 4) or not np.all(np.isfinite(C)):
            raise StateError('non-finite target pose (a finite 4x4 matrix expected)')
        R = C[:3, :3]
        if np.abs(R.T @ R - np.eye(3)).max() > 1e-6 or np.linalg.det(R) < 0:
            raise StateError('the target orientation is not a rotation')
        _within(np.abs(C[:3, 3]).max(), MAX_DISTANCE, 'target position', 'm')
        self.target_pose = C


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
