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
"""
import copy
import time
from collections import deque

import numpy as np

from .. import control
from ..kinematics import (body_twists, forward_kinematics, jacobian, jacobian_derivative,
                          link_pose, link_twist)
from ..model import REPRESENTATIONS
from ..model.model import spatial_inertia, transform_inertia

MODES = ('gravity_compensation', 'inverse_dynamics', 'computed_torque', 'cartesian_impedance')
#: the modes that need a fixed base (all joints actuated)
FIXED_BASE_MODES = ('computed_torque', 'cartesian_impedance')
#: the gains' upper bounds: beyond these a 1 kHz loop with a few ms of delay is unstable
GAIN_LIMITS = {'kp': 1e6, 'kd': 1e4, 'stiffness': 1e7, 'impedance_damping': 1e5,
               'null_stiffness': 1e4, 'null_damping': 1e3}

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
        """Return ``{'p50', 'p99', 'max', 'mean'}`` in microseconds (zeros when empty)."""
        if not self.samples:
            return {'p50': 0.0, 'p99': 0.0, 'max': 0.0, 'mean': 0.0}
        a = np.fromiter(self.samples, dtype=float) * 1e6
        return {'p50': float(np.percentile(a, 50)), 'p99': float(np.percentile(a, 99)),
                'max': float(a.max()), 'mean': float(a.mean())}


class DynamicsEngine:
    """Model + last good state + the computations the dynamics node publishes."""

    def __init__(self, model, *, mode='gravity_compensation', representation='hybrid',
                 twist_links=(), wrench_joints=(), command_joints=None, base_pose=None,
                 clamp_effort=True, kp=(400.0,), kd=(40.0,), friction_compensation=True,
                 impedance_link='', impedance_friction_compensation=False,
                 impedance_representation='hybrid',
                 stiffness=(5.0, 5.0, 5.0, 1000.0, 1000.0, 1000.0),
                 impedance_damping=(0.1, 0.1, 0.1, 60.0, 60.0, 60.0), null_stiffness=0.0,
                 null_damping=0.0, payload=('', 0.0, (), ()), gravity=()):
        self.base_model = self.model = model
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
        self.now = 0.0              # the caller's clock (s): trajectories are timed by it
        self.trajectory = None      # computed_torque: JointTrajectory (None: hold)
        self.target_pose = None     # cartesian_impedance: 4x4 target (None: where it was)
        self.posture = None         # cartesian_impedance: null-space posture
        self.tracking_error = 0.0   # max |q_d - q| of the last computed-torque cycle
        self.reference = None       # (q_d, q̇_d, q̈_d) of the last computed-torque cycle
        self._gravity = None
        self._payload = None
        self.set_kp(kp)
        self.set_kd(kd)
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
        """
        Select the torque law (:data:`MODES`).

        Entering computed_torque holds the position of the next cycle (until a trajectory
        arrives); entering cartesian_impedance holds the link's pose and the posture of the
        next cycle (until a target pose arrives).
        """
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
        if mode in FIXED_BASE_MODES and self.model.floating:
            raise ValueError(f'mode {mode} needs a fixed-base robot (every joint actuated); '
                             f"'{self.model.name}' has a floating base")
        if mode != getattr(self, 'mode', None):
            self.trajectory = self.target_pose = self.posture = None
        self.mode = mode

    def _gains(self, name, values, n):
        """Validate ``n`` (or 1) finite gains in ``[0, GAIN_LIMITS[name]]``; return an array."""
        g = np.asarray(values, dtype=float).ravel()
        if g.size not in (1, n) or not np.all(np.isfinite(g)) or np.any(g < 0) \
                or np.any(g > GAIN_LIMITS[name]):
            raise ValueError(f'{name} must be 1 or {n} finite values in [0, '
                             f'{GAIN_LIMITS[name]:g}]; got {g.tolist()}')
        return g if g.size == n else np.full(n, g[0])

    def set_kp(self, kp):
        """Set the computed torque position gains K_p (1/s^2): one value or one per joint."""
        self.kp = self._gains('kp', kp, self.model.nq)

    def set_kd(self, kd):
        """Set the computed torque velocity gains K_d (1/s): one value or one per joint."""
        self.kd = self._gains('kd', kd, self.model.nq)

    def set_friction_compensation(self, on):
        """Add the URDF Coulomb friction as a computed torque feed-forward (or not)."""
        self.friction_compensation = bool(on)

    def set_impedance_friction_compensation(self, on):
        """Add the URDF Coulomb friction to the impedance law along where the springs pull."""
        self.impedance_friction_compensation = bool(on)

    def set_stiffness(self, k):
        """Impedance stiffness: 6 diagonal values (or one), angular (N m/rad) then linear (N/m)."""
        self.stiffness = self._gains('stiffness', k, 6)

    def set_impedance_damping(self, d):
        """Impedance damping: 6 diagonal values, angular (N m s/rad) then linear (N s/m)."""
        self.impedance_damping = self._gains('impedance_damping', d, 6)

    def set_null_stiffness(self, k):
        """Null-space posture stiffness (N m/rad; 0: no posture term)."""
        self.null_stiffness = float(self._gains('null_stiffness', k, 1)[0])

    def set_null_damping(self, d):
        """Null-space joint damping (N m s/rad)."""
        self.null_damping = float(self._gains('null_damping', d, 1)[0])

    def set_impedance_representation(self, representation):
        """Rows of the impedance gains and wrench: 'body' or 'hybrid' (control module doc)."""
        if representation not in control.IMPEDANCE_REPRESENTATIONS:
            raise ValueError(f'impedance_representation {representation!r}: expected one of '
                             f"{', '.join(control.IMPEDANCE_REPRESENTATIONS)}")
        if representation != getattr(self, 'impedance_representation', representation):
            self.target_pose = None
        self.impedance_representation = representation

    def set_impedance_link(self, link):
        """Set the link the impedance law controls ('': the last leaf link)."""
        m = self.model
        if not link:
            moving = [n for n in leaf_links(m) if m.floating or m.link_body[m.link_index(n)] >= 0]
            link = (moving or leaf_links(m))[-1]
        elif m.link_body[m.link_index(link)] < 0 and not m.floating:
            raise ValueError(f'impedance_link {link!r} is fixed to the base: it cannot move')
        if link != getattr(self, 'impedance_link', link):
            self.target_pose = None
        self.impedance_link = link

    def set_payload(self, payload):
        """
        Set a payload ``(link, mass, com, inertia)`` rigidly attached to ``link`` ('': none).

        ``com`` (3,): centre of mass in the link frame (m); ``inertia``: (ixx, ixy, ixz,
        iyy, iyz, izz) about the centre of mass in link axes (kg m^2; empty: a point mass).
        The model is rebuilt with the payload's spatial inertia added to the link's body.
        """
        link, mass, com, inertia = payload
        if not link:
            self._payload = None
            self._rebuild()
            return
        li = self.base_model.link_index(link)
        if self.base_model.link_body[li] < 0:
            raise ValueError(f'payload_link {link!r} is fixed to the base: a payload there '
                             'changes nothing')
        com = np.asarray(com, dtype=float).ravel()
        com = np.zeros(3) if com.size == 0 else com
        i6 = np.asarray(inertia, dtype=float).ravel()
        i6 = np.zeros(6) if i6.size == 0 else i6
        if com.shape != (3,) or i6.shape != (6,):
            raise ValueError('payload_com takes 3 values and payload_inertia 6 (ixx, ixy, ixz, '
                             f'iyy, iyz, izz); got {com.size} and {i6.size}')
        if not (np.isfinite(mass) and np.all(np.isfinite(com)) and np.all(np.isfinite(i6))):
            raise ValueError('non-finite payload mass, centre of mass or inertia')
        ixx, ixy, ixz, iyy, iyz, izz = i6
        Ic = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
        ev = np.linalg.eigvalsh(Ic)
        if mass < 0 or ev[0] < -1e-12 or ev[2] > ev[0] + ev[1] + 1e-12:
            raise ValueError(f'payload: mass {mass} must be >= 0 and the inertia positive '
                             'semi-definite with the triangle inequality (principal moments '
                             f'{ev.tolist()})')
        pose = np.eye(4)
        pose[:3, 3] = com
        self._payload = (li, spatial_inertia(float(mass), pose, Ic))
        self._rebuild()

    def set_gravity(self, gravity):
        """Gravity vector in the world frame (m/s^2; empty: the robot model's)."""
        g = np.asarray(gravity, dtype=float).ravel()
        if g.size == 0:
            self._gravity = None
        elif g.shape != (3,) or not np.all(np.isfinite(g)):
            raise ValueError(f'gravity takes 3 finite values (or none); got {g.tolist()}')
        else:
            self._gravity = g
        self._rebuild()

    def _rebuild(self):
        """Build the model with payload and gravity (the loaded one when neither is set)."""
        if not hasattr(self, '_gravity') or not hasattr(self, '_payload'):
            return
        m = self.base_model
        changes = {}
        if self._gravity is not None:
            changes['gravity'] = self._gravity
        if self._payload is not None:
            li, M_link = self._payload
            inertia = np.array(m.inertia)
            body = m.link_body[li]
            inertia[body] += transform_inertia(M_link, m.link_offset[li])
            changes['inertia'] = inertia
        self.model = m.replace(**changes) if changes else m

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

    def set_trajectory(self, names, times, positions, velocities=(), accelerations=(),
                       start=None):
        """
        Track a new joint trajectory (computed_torque) from ``start`` (the clock of ``now``).

        It replaces the one before, starting from the current state (see
        :class:`liemb_ros.control.JointTrajectory`).  ``start`` None: :attr:`now`.  Raises
        :class:`StateError` (nothing changes) for unknown joints, non-increasing times,
        wrong lengths, non-finite values, or before the state is known.
        """
        if not self.ready:
            raise StateError('no complete joint state yet: a trajectory starts from it')
        start = self.now if start is None else start
        try:
            self.trajectory = control.JointTrajectory(
                self.model.joint_names, names, times, positions, velocities, accelerations,
                start=start, q=self.q, qd=self.qd)
        except ValueError as exc:
            raise StateError(str(exc)) from None

    def set_target_pose(self, pose):
        """Target pose (4x4, world) of :attr:`impedance_link`; StateError when not a pose."""
        C = np.asarray(pose, dtype=float)
        if C.shape != (4, 4) or not np.all(np.isfinite(C)):
            raise StateError('non-finite target pose (a finite 4x4 matrix expected)')
        R = C[:3, :3]
        if np.abs(R.T @ R - np.eye(3)).max() > 1e-6 or np.linalg.det(R) < 0:
            raise StateError('the target orientation is not a rotation')
        self.target_pose = C

    # -- computations ---------------------------------------------------------------------
    def torques(self):
        """Joint torques for the current state, in ``model.joint_names`` order (nq,)."""
        from .. import dynamics
        m = self.model
        if self.mode == 'gravity_compensation':
            tau = dynamics.gravity_torques(m, self.q, base_pose=self.base_pose)
        elif self.mode == 'inverse_dynamics':
            tau = dynamics.inverse_dynamics(m, self.q, self.qd, self.qdd_desired,
                                            base_pose=self.base_pose)
        elif self.mode == 'computed_torque':
            if self.trajectory is None:   # hold where the mode found the robot
                self.trajectory = control.JointTrajectory(
                    m.joint_names, m.joint_names, [0.0], [self.q], start=self.now, q=self.q,
                    qd=self.qd)
            q_d, qd_d, qdd_d = self.trajectory.sample(self.now)
            self.reference = (q_d, qd_d, qdd_d)
            self.tracking_error = float(np.abs(q_d - self.q).max())
            tau = control.computed_torque(m, self.q, self.qd, q_d, qd_d, qdd_d, self.kp,
                                          self.kd, self.friction_compensation,
                                          base_pose=self.base_pose)
        else:
            if self.target_pose is None:   # hold the pose and posture the mode found
                self.target_pose = self.link_pose(self.impedance_link)
                self.posture = self.q.copy()
            tau = control.cartesian_impedance(
                m, self.q, self.qd, self.impedance_link, self.target_pose, self.stiffness,
                self.impedance_damping, self.impedance_representation,
                self.posture if self.null_stiffness or self.null_damping else None,
                self.null_stiffness, self.null_damping, base_pose=self.base_pose,
                friction=self.impedance_friction_compensation)
        return tau[m.nv - m.nq:]

    def set_clamp_effort(self, clamp):
        """Limit the effort command to the URDF ``<limit effort>`` of each joint (or not)."""
        self.clamp_effort = bool(clamp)

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
            for m in ('gravity_compensation', 'inverse_dynamics'):   # every kernel the
                self.mode = m                                         # other modes call too
                self.torques()
            control.pose_error(np.eye(4), np.eye(4), 'body')
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


def _check_finite(out, engine):
    """Raise OutputError naming the outputs of ``out`` that are not finite."""
    bad = [k for k in ('tau', 'twists', 'wrenches')
           if out.get(k) is not None and not np.all(np.isfinite(out[k]))]
    if bad:
        raise OutputError(
            f"non-finite {' and '.join(bad)} at |q|max = {np.abs(engine.q).max():.3g}, "
            f'|qd|max = {np.abs(engine.qd).max():.3g}: refused (not published)')
