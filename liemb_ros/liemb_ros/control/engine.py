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

The engine is made of three parts: :mod:`.engine_settings` (the torque law, gains,
payload, gravity and selected outputs: every ``set_*``), :mod:`.engine_state` (joint
states, base odometry, references) and this module (the computations, the cycle and its
statistics); everything is importable from here.
"""
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
from .engine_settings import FIXED_BASE_MODES, GAIN_LIMITS, MODES, EngineSettings, leaf_links
from .engine_state import EngineState, StateError

__all__ = ['FRAMES', 'MODES', 'FIXED_BASE_MODES', 'GAIN_LIMITS', 'CycleStats',
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


class DynamicsEngine(EngineSettings, EngineState):
    """Model + last good state + the computations the dynamics node publishes."""

    def __init__(self, model, *, mode='gravity_compensation', representation='hybrid',
                 twist_links=(), wrench_joints=(), command_joints=None, base_pose=None,
                 clamp_effort=True, kp=(400.0,), kd=(40.0,), friction_compensation=True,
                 impedance_link='', impedance_friction_compensation=False,
                 impedance_representation='hybrid',
                 stiffness=(5.0, 5.0, 5.0, 1000.0, 1000.0, 1000.0),
                 impedance_damping=(0.1, 0.1, 0.1, 60.0, 60.0, 60.0), null_stiffness=0.0,
                 null_damping=0.0, payload=('', 0.0, (), ()), gravity=(), armature=()):
        self.base_model = self.model = model
        self.stats = CycleStats()
        self.clamped = 0            # commands limited to the URDF <limit effort>
        self._limit_key = self._limit = None
        self.set_clamp_effort(clamp_effort)
        self._index = {n: i for i, n in enumerate(model.joint_names)}
        self.q = np.zeros(model.nq)
        self.qd = np.zeros(model.nv)
        self.qdd_desired = np.zeros(model.nv)
        self.base_pose = None if base_pose is None else np.asarray(base_pose, dtype=float)
        if model.floating and self.base_pose is None:
            self.base_pose = np.eye(4)
        self._seen = np.zeros(model.nq, dtype=bool)
        self._all_seen = model.nq == 0
        self._base_seen = not model.floating or base_pose is not None
        self._cache = {}
        self.stamp = None
        self.ignored = {}           # joint names the model does not know -> messages with them
        self.now = 0.0              # the caller's clock (s): trajectories are timed by it
        self.trajectory = None      # computed_torque: JointTrajectory (None: hold)
        self.target_pose = None     # cartesian_impedance: 4x4 target (None: where it was)
        self.posture = None         # cartesian_impedance: null-space posture
        self.tracking_error = 0.0   # max |q_d - q| of the last computed-torque cycle
        self.reference = None       # (q_d, q̇_d, q̈_d) of the last computed-torque cycle
        self._gravity = None
        self._payload = None
        self._law = None   # the control.ComputedTorque of the settings in its .settings
        self._impedance = None   # the control.CartesianImpedance of its .settings
        self.set_kp(kp)
        self.set_kd(kd)
        self.set_armature(armature)
        self.set_friction_compensation(friction_compensation)
        self.set_impedance_friction_compensation(impedance_friction_compensation)
        self.set_stiffness(stiffness)
        self.set_impedance_damping(impedance_damping)
        self.set_null_stiffness(null_stiffness)
        self.set_null_damping(null_damping)
        self.set_impedance_representation(impedance_representation)
        self.set_impedance_link(impedance_link)
        self.set_payload(payload)
        self.set_gravity(gravity)
        self.set_mode(mode)
        self.set_representation(representation)
        self.set_twist_links(twist_links)
        self.set_wrench_joints(wrench_joints)
        self.set_command_joints(command_joints)

    # -- computations ---------------------------------------------------------------------
    def torques(self):
        """Joint torques for the current state, in ``model.joint_names`` order (nq,)."""
        m = self.model
        if self.mode == 'gravity_compensation':
            tau = dynamics.gravity_torques(m, self.q, base_pose=self.base_pose)
        elif self.mode == 'inverse_dynamics':
            tau = dynamics.inverse_dynamics(m, self.q, self.qd, self.qdd_desired,
                                            base_pose=self.base_pose)
            tau[m.nv - m.nq:] += self.armature * self.qdd_desired[m.nv - m.nq:]
        elif self.mode == 'computed_torque':
            if self.trajectory is None:   # hold where the mode found the robot
                self.hold()
            q_d, qd_d, qdd_d = self.trajectory.sample(self.now)
            self.reference = (q_d, qd_d, qdd_d)
            if self.base_pose is not None:   # a robot mounted at base_pose
                self.tracking_error = float(np.abs(q_d - self.q).max())
                return control.computed_torque(
                    m, self.q, self.qd, q_d, qd_d, qdd_d, self.kp, self.kd,
                    self.friction_compensation, base_pose=self.base_pose,
                    armature=self.armature)[m.nv - m.nq:]
            key = (m, self.kp, self.kd, self.friction_compensation, self.armature)
            law = self._law
            if law is None or not _same(law.settings, key):   # gains checked once
                law = self._law = control.ComputedTorque(*key)
                law.settings = key
            tau = law(self.q, self.qd, q_d, qd_d, qdd_d)
            self.tracking_error = law.tracking_error
        else:
            if self.target_pose is None:   # hold the pose and posture the mode found
                self.target_pose = self.link_pose(self.impedance_link)
                self.posture = self.q.copy()
            key = (m, self.impedance_link, self.stiffness, self.impedance_damping,
                   self.impedance_representation, self.null_stiffness, self.null_damping,
                   self.impedance_friction_compensation, self.base_pose)
            law = self._impedance
            if law is None or not _same(law.settings, key):   # gains checked once
                law = self._impedance = control.CartesianImpedance(
                    *key[:-1], base_pose=self.base_pose)
                law.settings = key
            tau = law(self.q, self.qd, self.target_pose,
                      self.posture if self.null_stiffness or self.null_damping else None)
        return tau[m.nv - m.nq:]

    @property
    def command_index(self):
        """Model joint index of each of :attr:`command_joints` (the effort command's order)."""
        return self._command_index

    def command(self, tau):
        """
        Return the effort command: joint torques in ``command_joints`` order.

        With :attr:`clamp_effort`, each is limited to ``±model.effort_limit`` (URDF
        ``<limit effort>``; joints without one are not limited) and :attr:`clamped` counts
        the commands that were.
        """
        idx = self._command_index
        key = self._limit_key
        if key is None or key[0] is not idx or key[1] is not self.model:
            self._limit_key = (idx, self.model)   # the limits of these joints
            self._limit = np.ascontiguousarray(self.model.effort_limit[idx])
        cmd = np.empty(idx.size)
        if _command_into(tau, idx, self._limit, bool(self.clamp_effort), cmd):
            self.clamped += 1
        return cmd

    def twists(self):
        """
        Twists of the configured links, (len(twist_links), 6), angular first.

        All at once: the spatial twists of the bodies by one O(n) recursion ([M18k] eq. (15))
        and the link poses by one forward-kinematics pass, then per link the change of
        representation of [M18k] Table 3 (a link has the spatial twist of its body).
        """
        m = self.model
        Cs = forward_kinematics(m, self.q, base_pose=self.base_pose)[self._twist_idx]
        owner = m.link_body[self._twist_idx]
        Vs = np.zeros((len(owner), 6))
        moving = owner >= 0
        if np.any(moving):
            Vb = body_twists(m, self.q, self.qd, 'spatial', base_pose=self.base_pose)
            Vs[moving] = Vb[owner[moving]]
        if m.floating and not np.all(moving):
            C = np.eye(4) if self.base_pose is None else self.base_pose
            Vs[~moving] = change_representation(C, self.qd[:6], 'body', 'spatial')
        return change_representation(Cs, Vs, 'spatial', self.representation)

    def link_pose(self, link):
        """Pose of a link at the current state."""
        return link_pose(self.model, self.q, link, base_pose=self.base_pose)

    def wrenches(self):
        """Wrenches transmitted by the configured joints, (len(wrench_joints), 6), (m, f)."""
        W = dynamics.joint_wrenches(self.model, self.q, self.qd, self.qdd_desired,
                                    base_pose=self.base_pose)
        return np.array([W[self._index[j]] for j in self.wrench_joints]).reshape(-1, 6)

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
            idx, _, unknown, _ = self._mapping(names)
            if unknown:
                raise ValueError(f"unknown joint(s) {', '.join(map(repr, unknown))}; the "
                                 f"model has {', '.join(self.model.joint_names)}")
            pos = np.asarray(positions, dtype=float)
            if pos.shape != (len(idx),) or not np.all(np.isfinite(pos)):
                raise ValueError(f'{len(idx)} joint names but positions {list(pos)}')
            q[idx] = pos
            vel = np.asarray(velocities, dtype=float)
            if vel.size:
                if vel.shape != (len(idx),) or not np.all(np.isfinite(vel)):
                    raise ValueError(f'{len(idx)} joint names but velocities {list(vel)}')
                qd[self.model.nv - self.model.nq + idx] = vel
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
        mode, rep = self.mode, self.representation
        link = self.model.link_names[-1]
        try:
            for m in ('gravity_compensation', 'inverse_dynamics'):   # every kernel the
                self.mode = m                                         # other modes call too
                self.torques()
            control.pose_error(np.eye(4), np.eye(4), 'body')
            if not self.model.floating:   # the controller modes' own passes (fixed base)
                control.computed_torque(self.model, self.q, self.qd, self.q, self.qd,
                                        np.zeros(self.model.nq), self.kp, self.kd)
                control.cartesian_impedance(self.model, self.q, self.qd, self.impedance_link,
                                            np.eye(4), self.stiffness, self.impedance_damping,
                                            self.impedance_representation, posture=self.q)
                names = self.model.joint_names
                tr = control.JointTrajectory(names, names, [1.0], [self.q], start=0.0,
                                             q=self.q, qd=self.qd)
                tr.sample(0.5)
                control.slowdown(self.model, tr)   # and the check's kernels
                try:
                    control.check_limits(self.model, tr)
                except control.LimitError:   # (the warm-up state need not be within them)
                    pass
            for r in REPRESENTATIONS:
                self.representation = r
                self.twists()
                jacobian(self.model, self.q, link, r, base_pose=self.base_pose)
                jacobian_derivative(self.model, self.q, self.qd, link, r,
                                    base_pose=self.base_pose)
                link_twist(self.model, self.q, self.qd, link, r, base_pose=self.base_pose)
        finally:
            self.mode, self.representation = mode, rep
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
            self.now = now
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
