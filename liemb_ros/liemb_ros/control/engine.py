"""
The computations of the dynamics node, without ROS (nodes are thin adapters over this).

:class:`DynamicsEngine` keeps the last good joint state of a model, validates incoming
joint states (names, lengths, NaN) the way a robust ROS node must, and computes what
the node publishes: joint torques (gravity compensation, full inverse dynamics, computed
torque tracking a joint trajectory, or Cartesian impedance of one link; the laws are
:mod:`liemb_ros.control`),
twists of configured links in a chosen representation, the wrenches the joints
transmit, and Jacobians on request.  It also keeps cycle-time statistics.

Joint states are merged by name, as robot_state_publisher does: a message may carry a
subset of the joints; outputs start once every joint has been seen.  Joints the model does
not know (a gripper finger, a wheel: what joint_state_broadcaster publishes on most real
robots) are ignored and counted.  A message with mismatched array lengths, duplicate names
or a non-finite value of a known joint is rejected as a whole (:class:`StateError`) and the
last good state is kept.  A floating base takes its pose and body-fixed twist from
:meth:`DynamicsEngine.update_base` (the node reads them from ``nav_msgs/Odometry``).
Every output is checked finite before it leaves (:class:`OutputError`): finite but absurd
input (velocities of 1e155) must not become NaN torques on a robot.

A payload (mass, centre of mass, inertia at a link) and the gravity vector rebuild the
model with :meth:`Model.replace` when they change (milliseconds, off the loop): the payload
then enters ``M``, ``C`` and ``g`` exactly, which an external wrench (its weight only) would
not, and every cycle costs what it did without it.

The engine owns two plain parts: its :attr:`~DynamicsEngine.settings`
(:class:`~.engine_settings.EngineSettings`: the torque law, gains, payload, gravity and
selected outputs, whose defaults :data:`~.engine_settings.DEFAULTS` are the dynamics node's
too), changed only through :meth:`~DynamicsEngine.configure`, all or none; and its
:attr:`~DynamicsEngine.state` (:class:`~.engine_state.EngineState`: joint states merged by
name, base odometry).  The engine itself holds the references of the torque laws (desired
accelerations, a joint trajectory, a target pose), the computations, the cycle and its
statistics; everything is importable from here.
"""
import copy
import math
import time
from collections import deque

import numpy as np
from numba import njit

from .. import control
from ..core import dynamics
from ..sim.passive import all_finite
from ..core.kinematics import (body_twists, change_representation, forward_kinematics, jacobian,
                               jacobian_derivative, link_pose, link_twist)
from ..core.model import REPRESENTATIONS
from .engine_settings import (DEFAULTS, FIXED_BASE_MODES, GAIN_LIMITS, MODES, EngineSettings,
                              leaf_links)
from .engine_state import (EngineState, StateError, check_points, checked_accelerations,
                           checked_pose)

__all__ = ['DEFAULTS', 'FRAMES', 'MODES', 'FIXED_BASE_MODES', 'GAIN_LIMITS', 'CycleStats',
           'DynamicsEngine', 'EngineSettings', 'EngineState', 'OutputError', 'StateError',
           'leaf_links']

#: what the linear and angular rows of each representation refer to
FRAMES = {
    # representation: (angular rows resolved in, linear rows resolved in, point)
    'body': ('link', 'link', 'link origin'),
    'spatial': ('world', 'world', 'world origin'),
    'hybrid': ('world', 'world', 'link origin'),
    'mixed': ('link', 'world', 'link origin'),
}


class OutputError(ArithmeticError):
    """A computed output (torque, twist, wrench) that is not finite: refused, never sent."""


class CycleStats:
    """Rolling compute-time statistics (p50, p99, max) over the last ``window`` cycles."""

    def __init__(self, window=5000):
        self.samples = deque(maxlen=window)
        self.count = 0
        self.dropped = 0

    def add(self, seconds):
        """Record one cycle's compute time."""
        self.samples.append(seconds)
        self.count += 1

    def summary(self):
        """Return ``{'p50', 'p99', 'max', 'mean'}`` in microseconds (zeros when empty)."""
        if not self.samples:
            return {'p50': 0.0, 'p99': 0.0, 'max': 0.0, 'mean': 0.0}
        a = np.fromiter(self.samples, dtype=float) * 1e6
        return {'p50': float(np.percentile(a, 50)), 'p99': float(np.percentile(a, 99)),
                'max': float(a.max()), 'mean': float(a.mean())}


def _setting(name):
    """Return a read-only property: the engine's setting ``name`` (:class:`EngineSettings`)."""
    return property(lambda self: getattr(self.settings, name),
                    doc=f'The setting ``{name}`` (:class:`EngineSettings`; change: configure).')


def _measured(name):
    """Return a read-only property: the engine state's ``name`` (:class:`EngineState`)."""
    return property(lambda self: getattr(self.state, name),
                    doc=f'The state\'s ``{name}`` (:class:`EngineState`).')


def _request_values(values, n, what):
    """Return a request's ``values`` (n,) as floats; ValueError naming their count or NaN."""
    x = np.asarray(values, dtype=float)
    if x.shape != (n,):
        raise ValueError(f'{n} joint names but {x.size} {what}')
    if not np.all(np.isfinite(x)):
        raise ValueError(f'{what} with a NaN or an infinity')
    return x


class DynamicsEngine:
    """
    Model + last good state + the computations the dynamics node publishes.

    ``settings``: values of :data:`~.engine_settings.DEFAULTS` (mode, gains, payload, ...;
    the others keep their default); ``base_pose``: :class:`EngineState`'s.  The settings
    and the state are read through the engine (``engine.mode``, ``engine.q``, ...).
    """

    model = _setting('model')
    mode = _setting('mode')
    representation = _setting('representation')
    twist_links = _setting('twist_links')
    wrench_joints = _setting('wrench_joints')
    command_joints = _setting('command_joints')
    command_index = _setting('command_index')
    q = _measured('q')
    qd = _measured('qd')
    base_pose = _measured('base_pose')
    stamp = _measured('stamp')
    ignored = _measured('ignored')
    now = _measured('now')
    ready = _measured('ready')

    def __init__(self, model, *, base_pose=None, **settings):
        self.settings = EngineSettings(model, **settings)
        self.state = EngineState(model, base_pose)
        self.stats = CycleStats()
        self.clamped = 0            # commands limited to the URDF <limit effort>
        self._limit_key = self._limit = None
        self.qdd_desired = np.zeros(model.nv)
        self.trajectory = None      # computed_torque: JointTrajectory (None: hold)
        self.target_pose = None     # cartesian_impedance: 4x4 target (None: where it was)
        self.posture = None         # cartesian_impedance: null-space posture
        self.tracking_error = 0.0   # max |q_d - q| of the last computed-torque cycle
        self.reference = None       # (q_d, q̇_d, q̈_d) of the last computed-torque cycle
        self._law = None   # the control.ComputedTorque of the settings in its .settings
        self._impedance = None   # the control.CartesianImpedance of its .settings

    def configure(self, **settings):
        """
        Apply several settings at once, all or none (``mode=``, ``twist_links=``, ...).

        Every setting is checked first (:meth:`EngineSettings.configured`); when one is
        invalid, ValueError names it and nothing changes.  A new mode forgets the references:
        computed_torque then holds the position of the next cycle (until a trajectory
        arrives), cartesian_impedance the link's pose and the posture of the next cycle
        (until a target pose arrives); so does a new impedance link or representation for
        the target pose.
        """
        old, new = self.settings, self.settings.configured(**settings)
        if new.mode != old.mode:
            self.trajectory = self.target_pose = self.posture = None
        elif (new.impedance_link, new.impedance_representation) != (
                old.impedance_link, old.impedance_representation):
            self.target_pose = None
        self.settings = new

    # -- state (EngineState) ----------------------------------------------------------------
    def update_state(self, names, positions, velocities=(), stamp=None):
        """Merge a joint state (:meth:`EngineState.update_state`); return the names ignored."""
        return self.state.update_state(names, positions, velocities, stamp)

    def update_base(self, pose, twist):
        """Set a floating base's pose and body-fixed twist (:meth:`EngineState.update_base`)."""
        self.state.update_base(pose, twist)

    def missing_joints(self):
        """Return the joints never received so far (``'base odometry'`` for the base)."""
        return self.state.missing_joints()

    def state_snapshot(self):
        """Return ``(q, q̇, time)`` (:meth:`EngineState.state_snapshot`; any thread)."""
        return self.state.state_snapshot()

    # -- references (what the torque laws track) -------------------------------------------
    def set_desired_acceleration(self, accelerations):
        """Desired joint accelerations, in ``command_joints`` order (inverse dynamics mode)."""
        index, m = self.settings.command_index, self.model
        self.qdd_desired[m.nv - m.nq + index] = checked_accelerations(accelerations, len(index))

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
        if not self.state.ready:
            raise StateError('no complete joint state yet: a trajectory starts from it')
        q, qd, now = self.state.state_snapshot() if state is None else state
        check_points(positions, velocities, accelerations)
        s = self.settings
        model, base_pose = s.model, self.state.base_pose
        if base_pose is not None:   # mounted: gravity in the base frame
            model = model.replace(gravity=base_pose[:3, :3].T @ model.gravity)
        try:
            tr = control.JointTrajectory(
                model.joint_names, names, times, positions, velocities, accelerations,
                start=now if start is None else start, q=q, qd=qd, now=now)
            control.check_limits(model, tr, s.friction_compensation, s.armature, part)
        except ValueError as exc:   # LimitError is one
            raise StateError(str(exc)) from None
        return tr

    def hold(self, names=None):
        """
        Hold the current position of ``names`` (None: every joint) from :attr:`now`.

        Not checked: holding where the arm is asks for no motion (a joint beyond its limit,
        or one that gravity pulls harder than its limit, is held where it is all the same).
        """
        x = self.state
        names = self.model.joint_names if names is None else names
        cols = [x.index[n] for n in names]
        self.trajectory = control.JointTrajectory(
            self.model.joint_names, names, [0.0], [x.q[cols]], start=x.now, q=x.q, qd=x.qd)

    def set_target_pose(self, pose):
        """Target pose (4x4, world) of the impedance link; StateError when not a pose."""
        self.target_pose = checked_pose(pose)

    # -- computations ---------------------------------------------------------------------
    def torques(self):
        """Joint torques for the current state, in ``model.joint_names`` order (nq,)."""
        s, x = self.settings, self.state
        m, mode, q, qd, base_pose = s.model, s.mode, x.q, x.qd, x.base_pose
        if mode == 'gravity_compensation':
            tau = dynamics.gravity_torques(m, q, base_pose=base_pose)
        elif mode == 'inverse_dynamics':
            tau = dynamics.inverse_dynamics(m, q, qd, self.qdd_desired, base_pose=base_pose)
            tau[m.nv - m.nq:] += s.armature * self.qdd_desired[m.nv - m.nq:]
        elif mode == 'computed_torque':
            if self.trajectory is None:   # hold where the mode found the robot
                self.hold()
            q_d, qd_d, qdd_d = self.trajectory.sample(x.now)
            self.reference = (q_d, qd_d, qdd_d)
            if base_pose is not None:   # a robot mounted at base_pose
                self.tracking_error = float(np.abs(q_d - q).max())
                return control.computed_torque(
                    m, q, qd, q_d, qd_d, qdd_d, s.kp, s.kd, s.friction_compensation,
                    base_pose=base_pose, armature=s.armature)[m.nv - m.nq:]
            key = (m, s.kp, s.kd, s.friction_compensation, s.armature)
            law = self._law
            if law is None or not _same(law.settings, key):   # gains checked once
                law = self._law = control.ComputedTorque(*key)
                law.settings = key
            tau = law(q, qd, q_d, qd_d, qdd_d)
            self.tracking_error = law.tracking_error
        else:
            if self.target_pose is None:   # hold the pose and posture the mode found
                self.target_pose = self.link_pose(s.impedance_link)
                self.posture = q.copy()
            key = (m, s.impedance_link, s.stiffness, s.impedance_damping,
                   s.impedance_representation, s.null_stiffness, s.null_damping,
                   s.impedance_friction_compensation, base_pose)
            law = self._impedance
            if law is None or not _same(law.settings, key):   # gains checked once
                law = self._impedance = control.CartesianImpedance(
                    *key[:-1], base_pose=base_pose)
                law.settings = key
            tau = law(q, qd, self.target_pose,
                      self.posture if s.null_stiffness or s.null_damping else None)
        return tau[m.nv - m.nq:]

    def command(self, tau):
        """
        Return the effort command: joint torques in ``command_joints`` order.

        With the setting ``clamp_effort``, each is limited to ``±model.effort_limit`` (URDF
        ``<limit effort>``; joints without one are not limited) and :attr:`clamped` counts
        the commands that were.
        """
        s = self.settings
        idx = s.command_index
        key = self._limit_key
        if key is None or key[0] is not idx or key[1] is not s.model:
            self._limit_key = (idx, s.model)   # the limits of these joints
            self._limit = np.ascontiguousarray(s.model.effort_limit[idx])
        cmd = np.empty(idx.size)
        if _command_into(tau, idx, self._limit, bool(s.clamp_effort), cmd):
            self.clamped += 1
        return cmd

    def twists(self):
        """
        Twists of the configured links, (len(twist_links), 6), angular first.

        All at once: the spatial twists of the bodies by one O(n) recursion ([M18k] eq. (15))
        and the link poses by one forward-kinematics pass, then per link the change of
        representation of [M18k] Table 3 (a link has the spatial twist of its body).
        """
        s, x = self.settings, self.state
        m, index, base_pose = s.model, s.twist_index, x.base_pose
        Cs = forward_kinematics(m, x.q, base_pose=base_pose)[index]
        owner = m.link_body[index]
        Vs = np.zeros((len(owner), 6))
        moving = owner >= 0
        if np.any(moving):
            Vb = body_twists(m, x.q, x.qd, 'spatial', base_pose=base_pose)
            Vs[moving] = Vb[owner[moving]]
        if m.floating and not np.all(moving):
            C = np.eye(4) if base_pose is None else base_pose
            Vs[~moving] = change_representation(C, x.qd[:6], 'body', 'spatial')
        return change_representation(Cs, Vs, 'spatial', s.representation)

    def link_pose(self, link):
        """Pose of a link at the current state."""
        return link_pose(self.model, self.state.q, link, base_pose=self.state.base_pose)

    def wrenches(self):
        """Wrenches transmitted by the configured joints, (len(wrench_joints), 6), (m, f)."""
        s, x = self.settings, self.state
        W = dynamics.joint_wrenches(s.model, x.q, x.qd, self.qdd_desired,
                                    base_pose=x.base_pose)
        return np.array([W[s.index[j]] for j in s.wrench_joints]).reshape(-1, 6)

    def jacobian(self, link, representation, derivative=False, names=(), positions=(),
                 velocities=()):
        """
        Jacobian (or ``J̇``) of ``link``; the state comes from the request when given.

        Returns ``(J, column_names)``.  Raises ValueError naming the bad argument.
        """
        if representation not in REPRESENTATIONS:
            raise ValueError(f'unknown representation {representation!r}; expected one of '
                             f"{', '.join(REPRESENTATIONS)}")
        self.model.link_index(link)
        q, qd = self.q, self.qd
        if len(positions):
            q, qd = self.q.copy(), self.qd.copy()
            names = list(names) or list(self.model.joint_names)
            idx, _, unknown, _ = self.state.mapping(names)
            if unknown:
                raise ValueError(f"unknown joint(s) {', '.join(map(repr, unknown))}; the "
                                 f"model has {', '.join(self.model.joint_names)}")
            q[idx] = _request_values(positions, len(idx), 'positions')
            if len(velocities):
                qd[self.model.nv - self.model.nq + idx] = _request_values(
                    velocities, len(idx), 'velocities')
        elif not self.ready:
            raise ValueError('no joint state received yet; pass positions in the request')
        if derivative:
            J = jacobian_derivative(self.model, q, qd, link, representation,
                                    base_pose=self.base_pose)
        else:
            J = jacobian(self.model, q, link, representation, base_pose=self.base_pose)
        if not np.all(np.isfinite(J)):
            raise ValueError('the result is not finite (velocities too large?)')
        cols = (['base_wx', 'base_wy', 'base_wz', 'base_vx', 'base_vy', 'base_vz']
                if self.model.floating else []) + list(self.model.joint_names)
        return J, cols

    def warm_up(self):
        """
        Compile (or load from numba's cache) every kernel the node calls; return seconds.

        Torques in both modes, twists in all four representations, wrenches, link poses
        and twists (markers), and the Jacobian and its derivative of the service, each
        once at the current state.  A node calls this while it starts: on a cold cache
        the kernels compile for tens of seconds, and a single-threaded node that did it in
        its first cycle would answer nothing meanwhile.  Mode, representation, state and
        statistics are unchanged.
        """
        start = time.perf_counter()
        saved = self.settings
        s = self.settings = copy.copy(saved)   # its mode and representation vary here
        m, q, qd = s.model, self.q, self.qd
        link = m.link_names[-1]
        try:
            for mode in ('gravity_compensation', 'inverse_dynamics'):   # every kernel the
                s.mode = mode                                             # other modes call
                self.torques()
            control.pose_error(np.eye(4), np.eye(4), 'body')
            if not m.floating:   # the controller modes' own passes (fixed base)
                control.computed_torque(m, q, qd, q, qd, np.zeros(m.nq), s.kp, s.kd)
                control.cartesian_impedance(m, q, qd, s.impedance_link, np.eye(4),
                                            s.stiffness, s.impedance_damping,
                                            s.impedance_representation, posture=q)
                names = m.joint_names
                tr = control.JointTrajectory(names, names, [1.0], [q], start=0.0, q=q, qd=qd)
                tr.sample(0.5)
                control.slowdown(m, tr)   # and the check's kernels
                try:
                    control.check_limits(m, tr)
                except control.LimitError:   # (the warm-up state need not be within them)
                    pass
            for r in REPRESENTATIONS:
                s.representation = r
                self.twists()
                jacobian(m, q, link, r, base_pose=self.base_pose)
                jacobian_derivative(m, q, qd, link, r, base_pose=self.base_pose)
                link_twist(m, q, qd, link, r, base_pose=self.base_pose)
        finally:
            self.settings = saved
        self.link_pose(link)
        self.wrenches()
        return time.perf_counter() - start

    def cycle(self, secondary=True, now=None):
        """
        One publishing cycle: torques and command, and (``secondary``) twists and wrenches.

        ``now``: the time (s, the clock trajectories are timed by) of this cycle.

        Timed into ``stats``.  Returns a dict with 'tau' (model order), 'command', and
        'twists', 'wrenches' (None when not ``secondary``).  Raises :class:`OutputError`
        when any result is not finite (the state is kept).
        """
        t0 = time.perf_counter()
        if now is not None:
            self.state.now = now
        tau = self.torques()
        out = {'tau': tau, 'command': self.command(tau), 'twists': None, 'wrenches': None}
        if secondary:
            out.update(self._secondary())
        self.stats.add(time.perf_counter() - t0)
        _check_finite(out, self)
        return out

    def secondary_outputs(self):
        """Return ``{'twists', 'wrenches'}`` of the current state (finite, or OutputError)."""
        out = self._secondary()
        _check_finite(out, self)
        return out

    def _secondary(self):
        return {'twists': self.twists(),
                'wrenches': self.wrenches() if self.wrench_joints else np.zeros((0, 6))}


def _same(a, b):
    """Tell whether two tuples hold the same objects (identity: arrays compare cheaply)."""
    for x, y in zip(a, b):
        if x is not y:
            return False
    return True


@njit(cache=True)
def _command_into(tau, idx, limit, clamp, out):
    """
    Write ``tau[idx]`` into ``out``, with ``clamp`` each within ``±limit``.

    Return whether any was limited (NaN is not: :func:`_check_finite` refuses it).
    """
    clamped = False
    for i in range(idx.size):
        x = tau[idx[i]]
        if clamp and x > limit[i]:
            x = limit[i]
            clamped = True
        elif clamp and x < -limit[i]:
            x = -limit[i]
            clamped = True
        out[i] = x
    return clamped


def _check_finite(out, engine):
    """Raise OutputError naming the outputs of ``out`` that are not finite."""
    # a sum is finite when every term is, but for an overflow: then look closer
    if out['twists'] is None and all_finite(out['tau']):
        return   # the cycle's torques alone (every cycle but the secondary outputs')
    bad = [k for k in ('tau', 'twists', 'wrenches')
           if out.get(k) is not None and not math.isfinite(out[k].sum())
           and not np.isfinite(out[k]).all()]
    if bad:
        raise OutputError(
            f"non-finite {' and '.join(bad)} at |q|max = {np.abs(engine.q).max():.3g}, "
            f'|qd|max = {np.abs(engine.qd).max():.3g}: refused (not published)')
