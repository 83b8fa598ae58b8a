"""
The settings of the dynamics engine: torque law, gains, payload, gravity, selected outputs.

:data:`DEFAULTS` names every setting and its default, once: the engine takes its
defaults from it, and so does the dynamics node's parameter table
(:mod:`liemb_ros.ros.dynamics_parameters`).  :class:`EngineSettings`, a part that
:class:`liemb_ros.control.engine.DynamicsEngine` owns, holds the values and the model they
make (a payload or a gravity vector rebuilds it: :meth:`Model.replace`); each ``set_*``
validates its value and raises ValueError naming the culprit, and
:meth:`~EngineSettings.configured` applies several at once, all or none.
"""
import copy
from types import MappingProxyType

import numpy as np

from .. import control
from ..core.model import REPRESENTATIONS
from ..core.model.model import spatial_inertia, transform_inertia

MODES = ('gravity_compensation', 'inverse_dynamics', 'computed_torque', 'cartesian_impedance')
#: the modes that need a fixed base (all joints actuated)
FIXED_BASE_MODES = ('computed_torque', 'cartesian_impedance')
#: the gains' upper bounds: beyond these a 1 kHz loop with a few ms of delay is unstable
GAIN_LIMITS = {'kp': 1e6, 'kd': 1e4, 'stiffness': 1e7, 'impedance_damping': 1e5,
               'null_stiffness': 1e4, 'null_damping': 1e3, 'armature': 1e4}

#: plausibility bounds of a payload's centre of mass from its link [m] and inertia [kg m^2]
#: (its mass: the parameter's range, 1e4 kg)
MAX_PAYLOAD_REACH = 100.0
MAX_PAYLOAD_INERTIA = 1e6
#: ... and of gravity [m/s^2] (100 g)
MAX_GRAVITY = 1e3


#: every setting of the engine and its default (what the dynamics node's parameter of the
#: same meaning defaults to), in the order they are applied
DEFAULTS = MappingProxyType({
    'clamp_effort': True, 'kp': (400.0,), 'kd': (40.0,), 'armature': (),
    'friction_compensation': True, 'impedance_friction_compensation': False,
    'stiffness': (5.0, 5.0, 5.0, 1000.0, 1000.0, 1000.0),
    'impedance_damping': (0.1, 0.1, 0.1, 60.0, 60.0, 60.0),
    'null_stiffness': 0.0, 'null_damping': 0.0, 'impedance_representation': 'hybrid',
    'impedance_link': '', 'payload': ('', 0.0, (), ()), 'gravity': (),
    'mode': 'gravity_compensation', 'representation': 'hybrid', 'twist_links': (),
    'wrench_joints': (), 'command_joints': ()})


def leaf_links(model):
    """Return the links no other link hangs from (tool flanges, feet), in model order."""
    parents = set(model.link_parent)
    return [n for n in model.link_names if n not in parents]


class EngineSettings:
    """
    The configuration of a :class:`~liemb_ros.control.engine.DynamicsEngine` for ``model``.

    ``settings``: values of :data:`DEFAULTS` (the others keep their default); an unknown
    name is a TypeError, a bad value a ValueError naming it.  :attr:`model` is ``model``
    with the payload and gravity (:attr:`base_model`: as loaded).
    """

    def __init__(self, model, **settings):
        unknown = sorted(set(settings) - set(DEFAULTS))
        if unknown:
            raise TypeError(f"unknown engine setting(s) {', '.join(unknown)}")
        self.base_model = self.model = model
        self.index = {n: i for i, n in enumerate(model.joint_names)}   # joint -> model index
        self._gravity = self._payload = None
        for name, default in DEFAULTS.items():
            getattr(self, f'set_{name}')(settings.get(name, default))

    def configured(self, **settings):
        """
        Return a copy with several settings changed, all or none (``mode=``, ...).

        Every setting is checked on the copy; when one is invalid, ValueError names it and
        this one is unchanged (as ``set_parameters_atomically`` promises).
        """
        trial = copy.copy(self)
        for name, value in settings.items():
            if name not in DEFAULTS:
                raise ValueError(f'unknown setting {name!r}')
            getattr(trial, f'set_{name}')(value)
        return trial

    # -- each validates and raises ValueError naming the culprit ------------------------

    def set_mode(self, mode):
        """
        Select the torque law (:data:`MODES`).

        (The engine forgets its references when the mode changes: see
        :meth:`liemb_ros.control.engine.DynamicsEngine.configure`.)
        """
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
        if mode in FIXED_BASE_MODES and self.model.floating:
            raise ValueError(f'mode {mode} needs a fixed-base robot (every joint actuated); '
                             f"'{self.model.name}' has a floating base")
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

    def set_armature(self, armature):
        """
        Set the rotor inertia reflected to each joint (kg m² or kg): none, one or one per joint.

        computed_torque's ``M`` is ``M(q) + diag(armature)`` and inverse_dynamics adds
        ``armature q̈_d`` (Pinocchio's ``model.armature``; the simulation node's
        ``armature``): set both nodes to the robot's rotor inertias.
        """
        n = self.model.nq
        values = np.asarray(armature, dtype=float).ravel()
        self.armature = np.zeros(n) if values.size == 0 else self._gains('armature', values, n)

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
        self.impedance_representation = representation

    def set_impedance_link(self, link):
        """Set the link the impedance law controls ('': the last leaf link)."""
        m = self.model
        if not link:
            moving = [n for n in leaf_links(m) if m.floating or m.link_body[m.link_index(n)] >= 0]
            link = (moving or leaf_links(m))[-1]
        elif m.link_body[m.link_index(link)] < 0 and not m.floating:
            raise ValueError(f'impedance_link {link!r} is fixed to the base: it cannot move')
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
        if np.abs(com).max() > MAX_PAYLOAD_REACH or np.abs(i6).max() > MAX_PAYLOAD_INERTIA:
            raise ValueError(f'payload centre of mass {com.tolist()} m or inertia '
                             f'{i6.tolist()} kg m^2 beyond the plausibility bounds '
                             f'{MAX_PAYLOAD_REACH:g} m, {MAX_PAYLOAD_INERTIA:g} kg m^2')
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
        elif np.abs(g).max() > MAX_GRAVITY:
            raise ValueError(f'gravity {g.tolist()} m/s^2 beyond the plausibility bound '
                             f'{MAX_GRAVITY:g} m/s^2')
        else:
            self._gravity = g
        self._rebuild()

    def _rebuild(self):
        """Build the model with payload and gravity (the loaded one when neither is set)."""
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
        self.twist_index = np.array(idx, dtype=np.int64)

    def set_wrench_joints(self, joints):
        """Select the joints whose transmitted wrenches are published."""
        for j in joints:
            if j not in self.index:
                raise ValueError(f"unknown joint {j!r}; joints: {', '.join(self.index)}")
        self.wrench_joints = list(joints)

    def set_command_joints(self, joints):
        """Joint order of the effort command array (as the ros2_control controller lists)."""
        joints = list(self.model.joint_names if not joints else joints)
        for j in joints:
            if j not in self.index:
                raise ValueError(f"unknown command joint {j!r}; joints: "
                                 f"{', '.join(self.index)}")
        self.command_joints = joints
        self.command_index = np.array([self.index[j] for j in joints], dtype=np.int64)

    def set_clamp_effort(self, clamp):
        """Limit the effort command to the URDF ``<limit effort>`` of each joint (or not)."""
        self.clamp_effort = bool(clamp)
