"""
The computations of the dynamics node, without ROS (nodes are thin adapters over this).

:class:`DynamicsEngine` keeps the last good joint state of a model, validates incoming
joint states (names, lengths, NaN) the way a robust ROS node must, and computes what
the node publishes: joint torques (gravity compensation or full inverse dynamics),
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
"""
import copy
import time
from collections import deque

import numpy as np

from ..kinematics import (body_twists, forward_kinematics, jacobian, jacobian_derivative,
                          link_pose, link_twist)
from ..model import REPRESENTATIONS

MODES = ('gravity_compensation', 'inverse_dynamics')

#: what the linear and angular rows of each representation refer to
FRAMES = {
    # representation: (angular rows resolved in, linear rows resolved in, point)
    'body': ('link', 'link', 'link origin'),
    'spatial': ('world', 'world', 'world origin'),
    'hybrid': ('world', 'world', 'link origin'),
    'mixed': ('link', 'world', 'link origin'),
}


def _cross(a, b):
    """Row-wise cross products of (k, 3) arrays (np.cross costs ~40 us in axis handling)."""
    out = np.empty(a.shape)
    out[:, 0] = a[:, 1] * b[:, 2] - a[:, 2] * b[:, 1]
    out[:, 1] = a[:, 2] * b[:, 0] - a[:, 0] * b[:, 2]
    out[:, 2] = a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0]
    return out


class StateError(ValueError):
    """A joint-state message that cannot be used (the message says why)."""


class OutputError(ArithmeticError):
    """A computed output (torque, twist, wrench) that is not finite: refused, never sent."""


def leaf_links(model):
    """Return the links no other link hangs from (tool flanges, feet), in model order."""
    parents = set(model.link_parent)
    return [n for n in model.link_names if n not in parents]


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
        """Return ``{'p50', 'p99', 'max'}`` in microseconds (NaN-free; zeros when empty)."""
        if not self.samples:
            return {'p50': 0.0, 'p99': 0.0, 'max': 0.0}
        a = np.fromiter(self.samples, dtype=float) * 1e6
        return {'p50': float(np.percentile(a, 50)), 'p99': float(np.percentile(a, 99)),
                'max': float(a.max())}


class DynamicsEngine:
    """Model + last good state + the computations the dynamics node publishes."""

    def __init__(self, model, *, mode='gravity_compensation', representation='hybrid',
                 twist_links=(), wrench_joints=(), command_joints=None, base_pose=None,
                 clamp_effort=True):
        self.model = model
        self.stats = CycleStats()
        self.clamped = 0            # commands limited to the URDF <limit effort>
        self.set_clamp_effort(clamp_effort)
        self._index = {n: i for i, n in enumerate(model.joint_names)}
        self.q = np.zeros(model.nq)
        self.qd = np.zeros(model.nv)
        self.qdd_desired = np.zeros(model.nv)
        self.base_pose = None if base_pose is None else np.asarray(base_pose, dtype=float)
        if model.floating and self.base_pose is None:
            self.base_pose = np.eye(4)
        self._seen = np.zeros(model.nq, dtype=bool)
        self._base_seen = not model.floating or base_pose is not None
        self._cache = {}
        self.stamp = None
        self.ignored = {}           # joint names the model does not know -> messages with them
        self.set_mode(mode)
        self.set_representation(representation)
        self.set_twist_links(twist_links)
        self.set_wrench_joints(wrench_joints)
        self.set_command_joints(command_joints)

    # -- configuration (each validates and raises ValueError naming the culprit) --------
    def configure(self, **settings):
        """
        Apply several settings at once, all or none (``mode=``, ``twist_links=``, ...).

        Every setting is checked on a copy first; when one is invalid, ValueError names it
        and nothing changes (as ``set_parameters_atomically`` promises).
        """
        trial = copy.copy(self)
        for name, value in settings.items():
            setter = getattr(trial, f'set_{name}', None)
            if setter is None:
                raise ValueError(f'unknown setting {name!r}')
            setter(value)
        self.__dict__.update(trial.__dict__)

    def set_mode(self, mode):
        """Select 'gravity_compensation' or 'inverse_dynamics'."""
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
        self.mode = mode

    def set_representation(self, representation):
        """Select the twist representation: body | spatial | hybrid | mixed."""
        if representation not in REPRESENTATIONS:
            raise ValueError(f'unknown representation {representation!r}; expected one of '
                             f"{', '.join(REPRESENTATIONS)}")
        self.representation = representation

    def set_twist_links(self, links):
        """Select the links whose twists are published (the leaf links when empty)."""
        links = list(links) or leaf_links(self.model)
        idx = [self.model.link_index(link) for link in links]
        self.twist_links = list(links)
        self._twist_idx = np.array(idx, dtype=np.int64)

    def set_wrench_joints(self, joints):
        """Select the joints whose transmitted wrenches are published."""
        for j in joints:
            if j not in self._index:
                raise ValueError(f"unknown joint {j!r}; joints: {', '.join(self._index)}")
        self.wrench_joints = list(joints)

    def set_command_joints(self, joints):
        """Joint order of the effort command array (as the ros2_control controller lists)."""
        joints = list(self.model.joint_names if not joints else joints)
        for j in joints:
            if j not in self._index:
                raise ValueError(f"unknown command joint {j!r}; joints: "
                                 f"{', '.join(self._index)}")
        self.command_joints = joints
        self._command_index = np.array([self._index[j] for j in joints], dtype=np.int64)

    # -- input ----------------------------------------------------------------------------
    @property
    def ready(self):
        """Tell whether every joint's position (and a floating base's state) has arrived."""
        return bool(self._seen.all()) and self._base_seen

    def missing_joints(self):
        """Return the joints never received so far (``'base odometry'`` for the base)."""
        missing = [n for n, s in zip(self.model.joint_names, self._seen) if not s]
        return missing + ([] if self._base_seen else ['base odometry'])

    def _mapping(self, names):
        """Return ``(model index of each known name, their positions in the message)``."""
        key = tuple(names)
        hit = self._cache.get(key)
        if hit is None:
            if len(set(names)) != len(names):
                raise StateError(f'duplicate joint names in {list(names)}')
            known = [k for k, n in enumerate(names) if n in self._index]
            idx = np.array([self._index[names[k]] for k in known], dtype=np.int64)
            sel = None if len(known) == len(names) else np.array(known, dtype=np.int64)
            hit = idx, sel, tuple(n for n in names if n not in self._index)
            if len(self._cache) < 64:
                self._cache[key] = hit
        return hit

    def update_state(self, names, positions, velocities=(), stamp=None):
        """
        Merge a joint state into the current state; return the names it ignored.

        Joints the model does not know are ignored (counted in :attr:`ignored`).
        ``velocities`` may be empty (then they are taken as zero).  Raises
        :class:`StateError` (state unchanged) for mismatched lengths, duplicate names or a
        non-finite value of a known joint.
        """
        idx, sel, unknown = self._mapping(names)
        n = len(names)
        pos = np.asarray(positions, dtype=float)
        vel = np.asarray(velocities, dtype=float)
        if pos.shape != (n,):
            raise StateError(f'{n} joint names but {pos.size} positions')
        if vel.size not in (0, n):
            raise StateError(f'{n} joint names but {vel.size} velocities')
        if sel is not None:
            pos = pos[sel]
            vel = vel[sel] if vel.size else vel
        if not np.all(np.isfinite(pos)) or not np.all(np.isfinite(vel)):
            known = [names[k] for k in (range(n) if sel is None else sel)]
            bad = [known[i] for i in range(len(idx)) if not np.isfinite(pos[i])
                   or (vel.size and not np.isfinite(vel[i]))]
            raise StateError(f"non-finite position or velocity for {', '.join(bad)}")
        off = self.model.nv - self.model.nq
        self.q[idx] = pos
        self.qd[off + idx] = vel if vel.size else 0.0
        self._seen[idx] = True
        self.stamp = stamp
        for name in unknown:
            self.ignored[name] = self.ignored.get(name, 0) + 1
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
        off = self.model.nv - self.model.nq
        self.qdd_desired[off + self._command_index] = a

    # -- computations ---------------------------------------------------------------------
    def torques(self):
        """Joint torques for the current state, in ``model.joint_names`` order (nq,)."""
        from .. import dynamics
        if self.mode == 'gravity_compensation':
            tau = dynamics.gravity_torques(self.model, self.q, base_pose=self.base_pose)
        else:
            tau = dynamics.inverse_dynamics(self.model, self.q, self.qd, self.qdd_desired,
                                            base_pose=self.base_pose)
        return tau[self.model.nv - self.model.nq:]

    def set_clamp_effort(self, clamp):
        """Limit the effort command to the URDF ``<limit effort>`` of each joint (or not)."""
        self.clamp_effort = bool(clamp)

    def command(self, tau):
        """
        Return the effort command: joint torques in ``command_joints`` order.

        With :attr:`clamp_effort`, each is limited to ``±model.effort_limit`` (URDF
        ``<limit effort>``; joints without one are not limited) and :attr:`clamped` counts
        the commands that were.
        """
        cmd = tau[self._command_index]
        if self.clamp_effort:
            lim = self.model.effort_limit[self._command_index]
            limited = np.clip(cmd, -lim, lim)
            if np.any(limited != cmd):
                self.clamped += 1
            cmd = limited
        return cmd

    def twists(self):
        """
        Twists of the configured links, (len(twist_links), 6), angular first.

        All at once: the spatial twists of the bodies by one O(n) recursion (seed 004 (15))
        and the link poses by one forward-kinematics pass, then per link the change of
        representation of seed 004 Table 3 (a link has the spatial twist of its body).
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
            w = C[:3, :3] @ self.qd[:3]
            Vs[~moving] = np.concatenate([w, C[:3, :3] @ self.qd[3:6]
                                          - _cross(w[None], C[None, :3, 3])[0]])
        w, v0 = Vs[:, :3], Vs[:, 3:]
        rep = self.representation
        if rep == 'spatial':
            return Vs
        rdot = v0 + _cross(w, Cs[:, :3, 3])        # velocity of the link origin, world frame
        if rep == 'hybrid':
            return np.concatenate([w, rdot], axis=1)
        R = Cs[:, :3, :3]
        wb = np.einsum('kji,kj->ki', R, w)           # Rᵀ ω
        if rep == 'mixed':
            return np.concatenate([wb, rdot], axis=1)
        return np.concatenate([wb, np.einsum('kji,kj->ki', R, rdot)], axis=1)

    def link_pose(self, link):
        """Pose of a link at the current state."""
        return link_pose(self.model, self.q, link, base_pose=self.base_pose)

    def wrenches(self):
        """Wrenches transmitted by the configured joints, (len(wrench_joints), 6), (m, f)."""
        from .. import dynamics
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
            idx, _, unknown = self._mapping(names)
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
            for m in MODES:
                self.mode = m
                self.torques()
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

    def cycle(self, secondary=True):
        """
        One publishing cycle: torques and command, and (``secondary``) twists and wrenches.

        Timed into ``stats``.  Returns a dict with 'tau' (model order), 'command', and
        'twists', 'wrenches' (None when not ``secondary``).  Raises :class:`OutputError`
        when any result is not finite (the state is kept).
        """
        t0 = time.perf_counter()
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


def _check_finite(out, engine):
    """Raise OutputError naming the outputs of ``out`` that are not finite."""
    bad = [k for k in ('tau', 'twists', 'wrenches')
           if out.get(k) is not None and not np.all(np.isfinite(out[k]))]
    if bad:
        raise OutputError(
            f"non-finite {' and '.join(bad)} at |q|max = {np.abs(engine.q).max():.3g}, "
            f'|qd|max = {np.abs(engine.qd).max():.3g}: refused (not published)')
