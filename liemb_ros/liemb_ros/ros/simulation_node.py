"""
``simulation_node``: a URDF robot simulated with the Lie group integrators.

Reads the robot like the dynamics node (``robot_description`` parameter, ``urdf_path``
URDF / xacro file / shipped robot name, or the transient-local ``robot_description``
topic) and republishes its URDF on the latched ``robot_description`` topic, so RViz and the
dynamics node need nothing else.  Steps :class:`liemb_ros.simulation.Simulator` (integrator, step,
joint or absolute coordinates, SE(3) / SO(3)xR3 / tailored update, damping, initial state:
all parameters of ``config/simulation.yaml``) at ``real_time_factor`` times wall-clock
speed, and publishes:

* ``joint_states`` (``sensor_msgs/JointState``: position, velocity, applied effort, after
  the effort limits);
* ``/tf`` (every link, parent link -> child link, and ``world_frame`` -> root link: the
  floating base pose) and ``/tf_static`` (links fixed to their parent); with
  ``publish_link_tf: false`` (robot_state_publisher runs) only the world -> root transform,
  so no frame is published twice, and never a frame to itself;
* ``~/odom`` (``nav_msgs/Odometry``, floating base only: pose, body-fixed twist);
* ``/clock`` (``rosgraph_msgs/Clock``) when ``publish_clock`` or ``use_sim_time`` is true:
  stamps are then simulation time, else wall-clock time.  The node's own timers run on the
  steady clock, so with ``use_sim_time`` it drives everyone else's time and never waits
  for its own ``/clock``;
* ``/diagnostics``: simulation time, real-time factor, energy, energy balance residual,
  constraint violation (absolute coordinates), integrator and step.

Applied torques: ``~/effort_command`` (``std_msgs/Float64MultiArray`` in
``command_joints`` order, what a ros2_control effort controller takes) and ``~/effort``
(``sensor_msgs/JointState`` effort by name, joints the model does not know ignored);
both are held until ``effort_timeout`` seconds pass without a new command, then drop to
zero; ``~/reset`` clears them.

The simulated robot keeps its URDF joint position limits (stiff one-sided spring-dampers,
``joint_limits``, ``limit_time_constant``), clamps the applied torque to ``<limit effort>``
(``effort_limits``) and has viscous and regularised Coulomb friction from ``<dynamics
damping friction>`` (``damping``, ``friction``, ``friction_velocity``): see
:mod:`liemb_ros.simulation`.  External wrenches: ``~/external_wrench/<link>``
(``geometry_msgs/WrenchStamped``, the link name made a topic token: ``topic_token``) for
every moving link (or ``wrench_links``); ``header.frame_id`` empty or the link: moment and
force in the link frame, the force at its origin; the ``world_frame``: world axes, about
the link frame's origin.  Each is held for ``wrench_timeout`` seconds (0: until the next
message), so a controller can be pushed and tested; ``~/reset`` removes them.

Ground contact (``contact: true``; issue 21, :mod:`liemb_ros.contact`): the URDF's
``<collision>`` geometry (of ``contact_links``, default every moving link that has some)
against the planes ``contact_planes`` (four numbers per plane: unit normal and offset,
``n·x = d``; default the ground ``z = 0``), a compliant normal force from
``contact_time_constant`` and ``contact_damping_ratio`` (or ``contact_stiffness`` /
``contact_damping`` in N/m, N s/m), regularised Coulomb friction ``contact_friction``
(negative: the URDF's ``<gazebo><mu1>``, else 1) with ``contact_friction_velocity``;
meshes per ``contact_mesh`` (``points`` | ``box`` | ``sphere``, ``contact_mesh_points``).
Published with every joint state: ``~/contacts`` (``geometry_msgs/WrenchStamped``, one
message per link in contact: ``header.frame_id`` the link, the total contact wrench on
it in the link frame about its origin, as a force-torque sensor there would read it) and
``~/contact_markers`` (``visualization_msgs/MarkerArray`` in the world frame: an arrow
per contact along its force, 1 cm per ``contact_marker_scale`` N, and a sphere at the
contact point); ``/diagnostics`` counts the contacts and their springs' energy.  Geometry
or parameters that cannot work (a missing mesh, a NaN ``<mu1>``) end the process with
the link named, like any other bad parameter.  A floating base starts at
``initial_base_pose`` (x, y, z and optionally roll, pitch, yaw).  ``joint_hold_stiffness``
and ``joint_hold_damping`` add a PD posture hold towards the initial positions to every
joint at every step (the motor drivers of a legged robot: ``liemb launch stand``, where
the dynamics node adds the gravity compensation); ``joint_states`` reports it in the effort.

Velocity and position commands (fixed-base robots): ``~/velocity_command`` and
``~/position_command`` (``std_msgs/Float64MultiArray`` in ``command_joints`` order, what
ros2_control's JointGroupVelocityController / JointGroupPositionController take) engage a
joint drive that the simulated robot obeys through its dynamics: computed torque
``τ = ID(q, q̇, K_p (q_ref - q) + K_d (q̇_ref - q̇)) + D q̇ + F tanh(q̇/v_s)`` (inverse dynamics
of the model, gravity and Coriolis terms included, plus the joint damping and friction the
simulation applies; clamped by the effort limits like any torque), with
``K_p = ω²``, ``K_d = 2ω``, ``ω = 2π drive_frequency`` (critically damped).  A velocity
command sets ``q̇_ref`` and integrates ``q_ref`` from the state where the drive engaged
(joint velocities then follow the command exactly once the transient of ``1/ω`` has
passed); a position command sets ``q_ref`` with ``q̇_ref = 0`` (a PD drive).  A command
older than ``effort_timeout`` holds the reference where it is (the robot stops and stays);
an effort command hands the robot back to the efforts, ``~/reset`` clears the drive.  The
drive torque is what ``joint_states`` reports as effort.  A test torque
``amplitude * sin(2 pi f t)`` per joint (``test_torque_*``) is added on top.  Services
(``std_srvs``): ``~/reset`` (Trigger), ``~/pause`` (SetBool), ``~/step`` (Trigger: one
publish period while paused).  A diverging simulation stops stepping and says why in the
log and in ``/diagnostics``; ``~/reset`` starts it again.  A parameter or file that cannot
work (missing file, wrong number of initial positions, NaN) ends the process with exit
code 1 and the reason; run-time parameter changes are checked as a whole before any is
applied.
"""
import math
import os
import sys
import time
import warnings

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import Point, TransformStamped, WrenchStamped
from nav_msgs.msg import Odometry
from rcl_interfaces.msg import ParameterType, SetParametersResult
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from std_srvs.srv import SetBool, Trigger
from tf2_msgs.msg import TFMessage
from visualization_msgs.msg import Marker, MarkerArray

from ..contact import MESH_MODES, ContactModel, rpy_matrix
from ..dynamics import inverse_dynamics
from ..kinematics import forward_kinematics
from ..simulation import (COORDINATES, INTEGRATORS, UPDATES, SimulationError, Simulator,
                          SimulationWarning)
from .common import (LATCHED, STEADY, ConfigError, Preparation, RobotSource, declare, run,
                     settle_heap, topic_token)
from .conversions import quaternion_xyzw, to_time

RELIABLE = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
TF_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
#: streamed commands: a queue of old ones would only delay the newest
LATEST = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE)


class SimulationNode(Node):
    """Thin ROS adapter over :class:`liemb_ros.simulation.Simulator`."""

    NAME = 'liemb_simulation'

    def __init__(self, **kwargs):
        super().__init__(self.NAME, **kwargs)
        S, SA = ParameterType.PARAMETER_STRING, ParameterType.PARAMETER_STRING_ARRAY
        D, DA = ParameterType.PARAMETER_DOUBLE, ParameterType.PARAMETER_DOUBLE_ARRAY
        B = ParameterType.PARAMETER_BOOL
        ro = {'read_only': True}
        self.source = RobotSource(self, self._on_robot)
        declare(self, (
            ('integrator', 'rk4', f"RKMK tableau: {' | '.join(INTEGRATORS)}", S, ro),
            ('dt', 0.001, 'integration step [s]', D, dict(ro, lo=1e-6, hi=0.1)),
            ('coordinates', 'joint', f"{' | '.join(COORDINATES)}", S, ro),
            ('update', 'tailored',
             f"body configuration update in absolute coordinates: {' | '.join(UPDATES)}",
             S, ro),
            ('damping', -1.0,
             'viscous joint damping [N m s/rad]; negative: the URDF <dynamics> values', D,
             dict(ro, lo=-1.0, hi=1e4)),
            ('damping_method', 'auto', 'auto | explicit | implicit: stiff damping (URDF '
             'damping on light links) stepped implicitly when the step needs it', S, ro),
            ('armature', -1.0, 'rotor inertia added to each joint [kg m^2 or kg]; negative: '
             'only where a massless body makes the mass matrix singular (auto)', D,
             dict(ro, lo=-1.0, hi=1e3)),
            ('joint_limits', True, 'URDF joint position limits as stiff one-sided '
             'spring-dampers (false: ignored)', B, ro),
            ('limit_time_constant', 0.01, 'time constant [s] of the critically damped limit '
             'spring-damper', D, dict(ro, lo=1e-5, hi=10.0)),
            ('effort_limits', True, 'clamp the applied torque to the URDF <limit effort>',
             B, ro),
            ('friction', -1.0, 'Coulomb joint friction [N m]; negative: the URDF <dynamics '
             'friction> values', D, dict(ro, lo=-1.0, hi=1e4)),
            ('friction_velocity', 1e-3, 'regularisation velocity v_s of the Coulomb '
             'friction -F tanh(qd / v_s) [rad/s]', D, dict(ro, lo=1e-7, hi=10.0)),
            ('contact', False, 'ground contact of the URDF <collision> geometry with '
             'contact_planes', B, ro),
            ('contact_planes', [0.0, 0.0, 1.0, 0.0], 'contact planes n.x = d: four numbers '
             'per plane (unit normal, offset [m])', DA, ro),
            ('contact_links', [], 'links that touch the planes (empty: every moving link '
             'with <collision> geometry)', SA, ro),
            ('contact_time_constant', 0.005, 'time constant [s] of the contact spring-damper '
             '(k = m / (tau zeta)^2, b = 2 m / tau, m the robot mass)', D,
             dict(ro, lo=1e-5, hi=10.0)),
            ('contact_damping_ratio', 1.0, 'damping ratio of the contact spring-damper', D,
             dict(ro, lo=1e-3, hi=100.0)),
            ('contact_stiffness', -1.0, 'contact stiffness [N/m] per contact; -1: from '
             'contact_time_constant', D, ro),
            ('contact_damping', -1.0, 'contact damping [N s/m] per contact; -1: from '
             'contact_time_constant and contact_damping_ratio', D, ro),
            ('contact_friction', -1.0, 'Coulomb friction coefficient of every link; -1: '
             'the URDF <gazebo><mu1>, else 1', D, ro),
            ('contact_friction_velocity', 1e-3, 'regularisation velocity [m/s] of the contact '
             'friction', D, dict(ro, lo=1e-7, hi=10.0)),
            ('contact_mesh', 'points', f"collision meshes as {' | '.join(MESH_MODES)}", S, ro),
            ('contact_mesh_points', 32, 'contact points per mesh (contact_mesh: points)',
             ParameterType.PARAMETER_INTEGER, ro),
            ('contact_marker_scale', 100.0, 'newtons per 1 cm of contact force arrow', D,
             dict(ro, lo=1e-6, hi=1e9)),
            ('wrench_links', [], 'links that take ~/external_wrench/<link> '
             '(geometry_msgs/WrenchStamped); empty: every moving link', SA, ro),
            ('wrench_timeout', 0.5, 'seconds an external wrench is held; then removed '
             '(0: until the next message)', D, dict(lo=0.0, hi=3600.0)),
            ('initial_positions', [], 'q at start and on reset (one per joint; empty or '
             '[0.0] = neutral)', DA, ro),
            ('initial_velocities', [], 'joint velocities at start (empty or [0.0] = zero)',
             DA, ro),
            ('initial_base_pose', [], 'floating base pose at start and on reset: [x, y, z] '
             'or [x, y, z, roll, pitch, yaw] (m, rad; empty: the world origin)', DA, ro),
            ('joint_hold_stiffness', 0.0, 'PD posture hold of every joint towards '
             'initial_positions, as a legged robot\'s motor drivers: stiffness [N m/rad] '
             '(0: none)', D, dict(ro, lo=0.0, hi=1e6)),
            ('joint_hold_damping', 0.0, 'damping [N m s/rad] of the joint PD posture hold', D,
             dict(ro, lo=0.0, hi=1e6)),
            ('real_time_factor', 1.0, 'simulated seconds per wall-clock second; 0 = as '
             'fast as possible', D, dict(lo=0.0, hi=1000.0)),
            ('publish_rate', 100.0, 'joint_states and /tf messages per wall-clock second',
             D, dict(ro, lo=1.0, hi=2000.0)),
            ('publish_clock', False, 'publish /clock and stamp messages with sim time '
             '(implied by use_sim_time)', B, ro),
            ('publish_tf', True, 'publish /tf and /tf_static', B, ro),
            ('publish_link_tf', True, 'publish the link frames (false when '
             'robot_state_publisher does it: then only world -> root)', B, ro),
            ('world_frame', 'world', 'frame of the world (parent of the root link)', S, ro),
            ('command_joints', [], 'joint order of ~/effort_command (empty: model order)',
             SA, ro),
            ('wait_for_command', False, 'hold the robot still until the first effort '
             'command arrives (a controller that starts later)', B, ro),
            ('effort_timeout', 0.5, 'seconds a command is held; then zero torque (velocity '
             'or position drive: the robot holds still)', D, dict(lo=0.0, hi=3600.0)),
            ('drive_frequency', 20.0, 'natural frequency [Hz] of the computed-torque joint '
             'drive of ~/velocity_command and ~/position_command', D,
             dict(lo=0.1, hi=200.0)),
            ('test_torque_amplitude', [0.0], 'test torque amplitude per joint [N m] '
             '(one value: every joint)', DA, {}),
            ('test_torque_frequency', 0.5, 'test torque frequency [Hz]', D,
             dict(lo=0.0, hi=1000.0)),
            ('diagnostics_period', 1.0, 'seconds between /diagnostics messages', D,
             dict(ro, lo=0.05, hi=60.0))))
        self.sim = None
        self.model = None
        self._hold = None
        self._candidate = self._preparing = None
        self.paused = False
        self.error = None
        self._command = None
        self._command_time = None
        self._drive = None
        self._wall = None
        self._rtf_window = []
        self._rejected = 0
        self._ignored = {}
        self._wrench_subs = []
        self._wrenches = {}
        self._wrench_on = False
        self._check_numbers(['dt', 'real_time_factor', 'publish_rate', 'effort_timeout',
                             'drive_frequency', 'limit_time_constant', 'friction',
                             'friction_velocity', 'wrench_timeout', 'contact_planes',
                             'contact_time_constant', 'contact_damping_ratio',
                             'contact_stiffness', 'contact_damping', 'contact_friction',
                             'contact_friction_velocity', 'contact_marker_scale',
                             'test_torque_amplitude', 'test_torque_frequency',
                             'initial_positions', 'initial_velocities', 'damping',
                             'initial_base_pose', 'joint_hold_stiffness',
                             'joint_hold_damping'])
        self.sim_time = self.p('publish_clock') or self.p('use_sim_time')
        if self.p('use_sim_time') and not self.p('publish_clock'):
            self.get_logger().info('use_sim_time: this node publishes /clock')
        self.pub_js = self.create_publisher(JointState, 'joint_states', RELIABLE)
        self.pub_tf = self.create_publisher(TFMessage, '/tf', TF_QOS)
        self.pub_tf_static = self.create_publisher(TFMessage, '/tf_static', LATCHED)
        self.pub_description = self.create_publisher(String, 'robot_description', LATCHED)
        self.pub_diag = self.create_publisher(DiagnosticArray, '/diagnostics', RELIABLE)
        self.pub_clock = (self.create_publisher(Clock, '/clock', RELIABLE)
                          if self.sim_time else None)
        self.pub_odom = None
        self.pub_contacts = self.pub_contact_markers = None
        if self.p('contact'):
            self.pub_contacts = self.create_publisher(WrenchStamped, '~/contacts', RELIABLE)
            self.pub_contact_markers = self.create_publisher(MarkerArray, '~/contact_markers',
                                                             RELIABLE)
        self.create_subscription(Float64MultiArray, '~/effort_command', self._on_command,
                                 RELIABLE)
        self.create_subscription(JointState, '~/effort', self._on_effort,
                                 qos_profile_sensor_data)
        for kind in ('velocity', 'position'):   # only the newest matters: no backlog
            self.create_subscription(Float64MultiArray, f'~/{kind}_command',
                                     lambda msg, kind=kind: self._on_drive(kind, msg),
                                     LATEST)
        self.create_service(Trigger, '~/reset', self._on_reset)
        self.create_service(SetBool, '~/pause', self._on_pause)
        self.create_service(Trigger, '~/step', self._on_step)
        # the steady clock: with use_sim_time, ROS-time timers would wait for our own /clock
        self.create_timer(self.p('diagnostics_period'), self._diagnostics, clock=STEADY)
        self._timer = None
        self.source.start()
        self.add_on_set_parameters_callback(self._on_parameters)

    def p(self, name):
        """Return the value of parameter ``name``."""
        return self.get_parameter(name).value

    def _check_numbers(self, names):
        """Raise ConfigError when a numeric parameter holds NaN or infinity."""
        for name in names:
            value = np.asarray(self.p(name), dtype=float)
            if not np.all(np.isfinite(value)):
                raise ConfigError(f'parameter {name} must be finite, got {value.tolist()}')

    # -- robot ------------------------------------------------------------------------------
    def _on_robot(self, model, xml, where):
        """Build the simulator for a robot (a new description replaces the old one)."""
        try:
            damping, armature = self.p('damping'), self.p('armature')
            friction = self.p('friction')
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter('always', SimulationWarning)
                sim = Simulator(
                    model, dt=self.p('dt'), integrator=self.p('integrator'),
                    coordinates=self.p('coordinates'), update=self.p('update'),
                    damping=None if damping < 0 else damping,
                    damping_method=self.p('damping_method'),
                    armature='auto' if armature < 0 else armature,
                    limits=self.p('joint_limits'),
                    limit_time_constant=self.p('limit_time_constant'),
                    effort_limits=self.p('effort_limits'),
                    friction=None if friction < 0 else friction,
                    friction_velocity=self.p('friction_velocity'),
                    contact=self._contact_model(model, xml, where),
                    **self._initial_state(model))
            for w in caught:
                self.get_logger().warning(str(w.message))
            command_order = self._joint_order(model, self.p('command_joints'))
            wrench_links = self._wrench_links(model, self.p('wrench_links'))
            amp = np.asarray(self.p('test_torque_amplitude'), dtype=float)
            if amp.size not in (1, model.nq):
                raise ValueError(f'test_torque_amplitude has {amp.size} values; the robot has '
                                 f'{model.nq} joints')
        except ValueError as exc:
            raise ConfigError(f"cannot simulate robot '{model.name}' from {where}: "
                              f'{exc}') from None
        # compile now, not in the first step: in a thread, so that the node answers meanwhile
        self._candidate = sim
        self._preparing = Preparation(
            self, lambda: self._warm_up(sim),
            lambda warm: self._install(sim, command_order, wrench_links, xml, where, warm),
            f"robot '{model.name}'")

    def _contact_model(self, model, xml, where):
        """Return the parameters' :class:`~liemb_ros.contact.ContactModel` (None: none)."""
        if not self.p('contact'):
            return None
        planes = np.asarray(self.p('contact_planes'), dtype=float)
        if planes.size == 0 or planes.size % 4:
            raise ValueError(f'contact_planes needs four numbers per plane (normal, offset), '
                             f'got {planes.size}')
        planes = [(row[:3], row[3]) for row in planes.reshape(-1, 4)]
        k, b, mu = (self.p('contact_stiffness'), self.p('contact_damping'),
                    self.p('contact_friction'))
        return ContactModel(     # -1: the default; other negative values are refused there
            model, xml, planes=planes, links=self.p('contact_links') or None,
            time_constant=self.p('contact_time_constant'),
            damping_ratio=self.p('contact_damping_ratio'),
            stiffness=None if k == -1 else k, damping=None if b == -1 else b,
            friction=None if mu == -1 else mu,
            friction_velocity=self.p('contact_friction_velocity'),
            mesh=self.p('contact_mesh'), mesh_points=self.p('contact_mesh_points'),
            urdf_path=where if os.path.isfile(where) else None)

    @staticmethod
    def _warm_up(sim):
        """Compile every kernel a step and a publish use; return the seconds taken."""
        start = time.perf_counter()
        model = sim.model
        sim.warm_up()
        forward_kinematics(model, sim.q, base_pose=sim.base_pose)
        if not model.floating:    # the joint drive's inverse dynamics
            inverse_dynamics(model, sim.q, sim.qd, np.zeros(model.nv))
        return time.perf_counter() - start

    @staticmethod
    def _wrench_links(model, names):
        """Links that take external wrenches: ``names`` (checked) or every moving link."""
        if not names:
            return [n for i, n in enumerate(model.link_names)
                    if model.floating or model.link_body[i] >= 0]
        unknown = [n for n in names if n not in model.link_ids]
        if unknown:
            raise ValueError(f"wrench_links: no link {', '.join(unknown)} in '{model.name}'")
        return list(names)

    def _install(self, sim, command_order, wrench_links, xml, where, warm):
        """Start simulating a prepared robot (in the executor thread)."""
        if sim is not self._candidate:
            return   # a newer description replaced it while it compiled
        self._candidate = self._preparing = None
        model = sim.model
        if self._timer is not None:
            self.destroy_timer(self._timer)
        self.sim, self.model, self._command_order = sim, model, command_order
        K, D = self.p('joint_hold_stiffness'), self.p('joint_hold_damping')
        self._hold = (K, D, sim.q.copy()) if K > 0 or D > 0 else None
        self._hold_tau = np.zeros(model.nq)
        self.error, self._command, self._command_time = None, None, None
        self._drive = None
        for sub in self._wrench_subs:
            self.destroy_subscription(sub)
        self._wrenches = {}
        self._wrench_subs = [
            self.create_subscription(
                WrenchStamped, f'~/external_wrench/{topic_token(link)}',
                lambda msg, link=link: self._on_wrench(link, msg), LATEST)
            for link in wrench_links]
        if where != 'the robot_description topic':
            self.pub_description.publish(String(data=xml))
        if model.floating and self.pub_odom is None:
            self.pub_odom = self.create_publisher(Odometry, '~/odom', RELIABLE)
        self._publish_static()
        self._wall = time.monotonic()
        self._timer = self.create_timer(1.0 / self.p('publish_rate'), self._tick,
                                        clock=STEADY)
        base = ', floating base' if model.floating else ''
        settle_heap()   # no full garbage collection over the libraries in the loop
        self.get_logger().info(
            f"simulating '{model.name}' ({model.nq} joints{base}) from {where} with "
            f"{self.p('integrator')} at dt = {self.p('dt')} s in {self.p('coordinates')} "
            f'coordinates (damping {sim.damping_method}), '
            f"{self.p('real_time_factor')}x real time; kernels ready in "
            f"{warm:.1f} s")

    def _initial_state(self, model):
        q0 = np.asarray(self.p('initial_positions'), dtype=float)
        qd0 = np.asarray(self.p('initial_velocities'), dtype=float)
        out = {}
        if q0.size and not (q0.size == 1 and q0[0] == 0.0):
            if q0.size != model.nq:
                raise ValueError(f'initial_positions has {q0.size} values; the robot has '
                                 f'{model.nq} joints {model.joint_names}')
            out['q0'] = q0
        if qd0.size and not (qd0.size == 1 and qd0[0] == 0.0):
            if qd0.size != model.nq:
                raise ValueError(f'initial_velocities has {qd0.size} values; the robot has '
                                 f'{model.nq} joints')
            out['qd0'] = np.concatenate([np.zeros(model.nv - model.nq), qd0])
        pose = np.asarray(self.p('initial_base_pose'), dtype=float)
        if pose.size:
            if not model.floating:
                raise ValueError('initial_base_pose needs a floating base (floating_base: true)')
            if pose.size not in (3, 6):
                raise ValueError(f'initial_base_pose has {pose.size} values; expected 3 (x y z) '
                                 'or 6 (x y z roll pitch yaw)')
            C = np.eye(4)
            C[:3, 3] = pose[:3]
            if pose.size == 6:
                C[:3, :3] = rpy_matrix(pose[3:])
            out['base_pose'] = C
        return out

    @staticmethod
    def _joint_order(model, names):
        names = [n for n in names if n]
        if not names:
            return np.arange(model.nq)
        unknown = [n for n in names if n not in model.joint_names]
        if unknown:
            raise ValueError(f'command_joints: unknown joints {unknown}; the robot has '
                             f'{model.joint_names}')
        return np.array([model.joint_index(n) for n in names])

    # -- input ------------------------------------------------------------------------------
    def _reject(self, what):
        self._rejected += 1
        self.get_logger().error(f'dropped {what}', throttle_duration_sec=1.0)

    def _joint_array(self, msg, topic):
        """Return a command array in model order, or None (rejected) when it does not fit."""
        data = np.asarray(msg.data, dtype=float)
        if data.size != self._command_order.size or not np.all(np.isfinite(data)):
            self._reject(f'{topic}: expected {self._command_order.size} finite values, got '
                         f'{data.size}')
            return None
        out = np.zeros(self.model.nq)
        out[self._command_order] = data
        return out

    def _on_command(self, msg):
        if self.sim is None:
            return
        tau = self._joint_array(msg, '~/effort_command')
        if tau is not None:
            self._command, self._command_time = tau, time.monotonic()
            self._drive = None

    def _on_drive(self, kind, msg):
        """Engage (or feed) the computed-torque drive with a velocity or position command."""
        if self.sim is None:
            return
        if self.model.floating:
            self._reject(f'~/{kind}_command: the joint drive needs a fixed-base robot')
            return
        target = self._joint_array(msg, f'~/{kind}_command')
        if target is None:
            return
        if self._drive is None:
            self._drive = {'q_ref': self.sim.q.copy(), 'tau': np.zeros(self.model.nq),
                           'queue': []}
        # by arrival time: each step of the next tick obeys the command of its own moment
        queue = self._drive['queue']
        queue.append((time.monotonic(), kind, target))
        del queue[:-64]
        self._command = self._command_time = None

    def _on_wrench(self, link, msg):
        """
        Take an external wrench on ``link`` (held for ``wrench_timeout``).

        ``header.frame_id`` empty or the link: moment and force in the link frame; the
        ``world_frame``: world axes, about the link frame's origin.  Others are rejected.
        """
        if self.sim is None:
            return
        frame = msg.header.frame_id
        kind = ('link' if frame in ('', link) else
                'world' if frame == self.p('world_frame') else None)
        t, f = msg.wrench.torque, msg.wrench.force
        w = np.array([t.x, t.y, t.z, f.x, f.y, f.z], dtype=float)
        if kind is None or not np.all(np.isfinite(w)):
            self._reject(f'~/external_wrench/{topic_token(link)}: '
                         + ('non-finite wrench' if kind else
                            f"frame_id {frame!r} is neither '{link}' nor "
                            f"'{self.p('world_frame')}'"))
            return
        self._wrenches[link] = (w, kind, time.monotonic())

    def _apply_wrenches(self):
        """Hand the fresh external wrenches to the simulator; drop the stale ones."""
        timeout = self.p('wrench_timeout')
        now = time.monotonic()
        self.sim.clear_wrenches()
        for link, (w, kind, arrived) in list(self._wrenches.items()):
            if timeout == 0 or now - arrived <= timeout:
                self.sim.set_wrench(link, w, frame=kind)
            else:
                del self._wrenches[link]
        self._wrench_on = bool(self._wrenches)

    def _on_effort(self, msg):
        """Efforts by name; joints the model does not know are ignored (and counted)."""
        if self.sim is None or not msg.name:
            return
        if len(msg.effort) != len(msg.name) or len(set(msg.name)) != len(msg.name):
            self._reject(f'~/effort: {len(msg.name)} names (unique: {len(set(msg.name))}) '
                         f'but {len(msg.effort)} efforts')
            return
        index = self.model._joint_index
        pairs = [(index[n], e) for n, e in zip(msg.name, msg.effort) if n in index]
        for n in msg.name:
            if n not in index:
                if n not in self._ignored:
                    self.get_logger().info(f"~/effort: ignoring joint {n!r}: not in robot "
                                           f"'{self.model.name}'")
                self._ignored[n] = self._ignored.get(n, 0) + 1
        effort = np.array([e for _, e in pairs], dtype=float)
        if not np.all(np.isfinite(effort)):
            self._reject('~/effort: non-finite effort')
            return
        if not pairs:
            return
        tau = np.zeros(self.model.nq) if self._command is None else self._command.copy()
        tau[[i for i, _ in pairs]] = effort
        self._command, self._command_time = tau, time.monotonic()

    def _on_parameters(self, params):
        """Check every changed parameter first, then apply them all (or none)."""
        for prm in params:
            value = np.asarray(prm.value, dtype=float) if prm.name in (
                'real_time_factor', 'effort_timeout', 'test_torque_amplitude',
                'test_torque_frequency', 'drive_frequency') else None
            if value is not None and not np.all(np.isfinite(value)):
                return SetParametersResult(successful=False,
                                           reason=f'{prm.name} must be finite')
            if prm.name == 'test_torque_amplitude' and self.model is not None:
                if value.size not in (1, self.model.nq):
                    return SetParametersResult(
                        successful=False,
                        reason=f'test_torque_amplitude needs 1 or {self.model.nq} values')
        if any(prm.name == 'real_time_factor' for prm in params):
            self._wall = time.monotonic()
        return SetParametersResult(successful=True)

    # -- stepping ---------------------------------------------------------------------------
    def applied_torque(self, t):
        """Return the joint torques applied at sim time ``t``: command + test torque."""
        tau = np.zeros(self.model.nq)
        if self._command is not None:
            timeout = self.p('effort_timeout')
            if timeout == 0 or time.monotonic() - self._command_time <= timeout:
                tau += self._command
        amp = np.asarray(self.p('test_torque_amplitude'), dtype=float)
        if np.any(amp):
            tau += amp * math.sin(2.0 * math.pi * self.p('test_torque_frequency') * t)
        return tau

    def drive_torque(self, wall):
        """
        Return the joint drive's torque for the current state; advance its reference one dt.

        Computed torque (module docstring) with the command that had arrived by the
        wall-clock time ``wall`` of the step (a tick integrates several steps at once:
        each obeys the command of its own moment, as a real arm would); the velocity
        reference is zero once that command is older than ``effort_timeout``; a position
        command has zero velocity.
        """
        sim, d = self.sim, self._drive
        queue = d['queue']
        k = 0
        while k + 1 < len(queue) and queue[k + 1][0] <= wall:
            k += 1
        del queue[:k]                      # the steps go forward in time
        arrived, kind, target = queue[0]
        timeout = self.p('effort_timeout')
        fresh = timeout == 0 or wall - arrived <= timeout
        if kind == 'position':
            if fresh:
                d['q_ref'] = target
            qd_ref = np.zeros(self.model.nq)
        else:
            qd_ref = target if fresh else np.zeros(self.model.nq)
        w = 2.0 * math.pi * self.p('drive_frequency')
        qdd = w * w * (d['q_ref'] - sim.q) + 2.0 * w * (qd_ref - sim.qd)
        d['tau'] = (inverse_dynamics(self.model, sim.q, sim.qd, qdd) + sim.damping * sim.qd
                    + sim.friction * np.tanh(sim.qd / sim.friction_velocity))
        d['q_ref'] = d['q_ref'] + qd_ref * sim.dt
        return d['tau']

    def hold_torque(self):
        """Return the joint PD posture hold's torque ``K (q_0 - q) - D q̇`` now."""
        K, D, q_ref = self._hold
        sim = self.sim
        self._hold_tau = K * (q_ref - sim.q) - D * sim.qd[self.model.nv - self.model.nq:]
        return self._hold_tau

    def _advance(self, seconds, span=0.0):
        """Advance ``seconds`` of simulation time over the last ``span`` wall-clock seconds."""
        sim = self.sim
        n = max(1, int(round(seconds / sim.dt)))
        if self._wrenches or self._wrench_on:
            self._apply_wrenches()
        hold = self._hold is not None
        try:
            if self._drive is None and not hold:
                sim.step(self.applied_torque(sim.t), n=n)
            now = time.monotonic()
            for k in range(n if self._drive is not None or hold else 0):
                wall = now - span * (n - 1 - k) / n
                tau = self.applied_torque(sim.t)
                if self._drive is not None:
                    tau = tau + self.drive_torque(wall)
                if hold:
                    tau = tau + self.hold_torque()
                sim.step(tau)
        except SimulationError as exc:
            self.error = str(exc)
            self.get_logger().error(f'simulation stopped: {exc} (call ~/reset to restart)')

    def _tick(self):
        now = time.monotonic()
        elapsed, self._wall = now - self._wall, now
        if self.sim is None or self.error is not None:
            return
        waiting = (self.p('wait_for_command') and self._command is None
                   and self._drive is None)
        if not self.paused and not waiting:
            rtf = self.p('real_time_factor')
            t0 = self.sim.t
            # Never fall behind by more than a few periods (e.g. after a pause or a stall).
            budget = min(elapsed, 5.0 / self.p('publish_rate'))
            if rtf == 0.0:
                deadline = now + 0.8 / self.p('publish_rate')
                while time.monotonic() < deadline and self.error is None:
                    self._advance(10 * self.sim.dt)
            else:
                self._advance(rtf * budget, budget)
            self._rtf_window.append((now, self.sim.t - t0, elapsed))
            del self._rtf_window[:-100]
        self._publish()

    # -- output -----------------------------------------------------------------------------
    def _stamp(self):
        if self.pub_clock is not None:
            return to_time(self.sim.t)
        return self.get_clock().now().to_msg()

    def _publish(self):
        sim, model = self.sim, self.model
        stamp = self._stamp()
        if self.pub_clock is not None:
            self.pub_clock.publish(Clock(clock=stamp))
        js = JointState()
        js.header.stamp = stamp
        js.name = list(model.joint_names)
        js.position = sim.q.tolist()
        js.velocity = sim.qd[model.nv - model.nq:].tolist()
        effort = self.applied_torque(sim.t)
        if self._drive is not None:
            effort = effort + self._drive['tau']
        if self._hold is not None:
            effort = effort + self._hold_tau
        js.effort = np.clip(effort, -sim.effort_limit, sim.effort_limit).tolist()   # applied
        self.pub_js.publish(js)
        if self.p('publish_tf'):
            self.pub_tf.publish(TFMessage(transforms=self._transforms(stamp, moving=True)))
        if self.pub_odom is not None:
            self.pub_odom.publish(self._odometry(stamp))
        if self.pub_contacts is not None and sim.contact is not None:
            self._publish_contacts(stamp)

    def _publish_contacts(self, stamp):
        """``~/contacts`` (a wrench per link in contact) and ``~/contact_markers``."""
        sim = self.sim
        contacts = sim.contacts()
        Cs = forward_kinematics(self.model, sim.q, base_pose=sim.base_pose) if contacts else None
        per_link = {}
        for c in contacts:
            C = Cs[self.model.link_ids[c.link]]
            m = np.cross(c.point - C[:3, 3], c.force)
            w = per_link.setdefault(c.link, np.zeros(6))
            w[:3] += C[:3, :3].T @ m
            w[3:] += C[:3, :3].T @ c.force
        for link, w in per_link.items():
            msg = WrenchStamped()
            msg.header.stamp = stamp
            msg.header.frame_id = link
            t, f = msg.wrench.torque, msg.wrench.force
            t.x, t.y, t.z, f.x, f.y, f.z = (float(x) for x in w)
            self.pub_contacts.publish(msg)
        markers = MarkerArray(markers=[Marker(action=Marker.DELETEALL)])
        world, scale = self.p('world_frame'), 0.01 / self.p('contact_marker_scale')
        for i, c in enumerate(contacts):
            for kind in (Marker.ARROW, Marker.SPHERE):
                mk = Marker(type=kind, action=Marker.ADD, ns=f'contacts/{c.link}',
                            id=2 * i + (kind == Marker.SPHERE))
                mk.header.stamp = stamp
                mk.header.frame_id = world
                mk.pose.orientation.w = 1.0
                if kind == Marker.ARROW:
                    mk.points = [_point(c.point), _point(c.point + scale * c.force)]
                    mk.scale.x, mk.scale.y, mk.scale.z = 0.004, 0.008, 0.01
                    mk.color.r, mk.color.g, mk.color.a = 1.0, 0.4, 1.0
                else:
                    mk.pose.position = _point(c.point)
                    mk.scale.x = mk.scale.y = mk.scale.z = 0.01
                    mk.color.r, mk.color.b, mk.color.a = 1.0, 1.0, 1.0
                markers.markers.append(mk)
        self.pub_contact_markers.publish(markers)

    def _transforms(self, stamp, moving):
        """
        Return the transforms that move with the state (``moving``) or never do.

        ``world_frame`` -> root link (the floating base's pose, else the identity; nothing
        when the root link is the world frame), the root link -> base link of a URDF
        ``floating`` joint, and, with ``publish_link_tf``, every link from its parent link.
        """
        model, sim = self.model, self.sim
        world = self.p('world_frame')
        root, base = model.root_link, model.base_link
        joint_floats = model.floating and root != base   # a URDF floating joint root -> base
        out = []
        if root != world:
            if model.floating and not joint_floats:
                if moving:
                    out.append(_transform(stamp, world, root, sim.base_pose))
            elif not moving:
                out.append(_transform(stamp, world, root, np.eye(4)))
        if joint_floats and moving:
            out.append(_transform(stamp, root, base, sim.base_pose))
        if not self.p('publish_link_tf'):
            return out
        Cs = forward_kinematics(model, sim.q, base_pose=sim.base_pose)
        index = model.link_ids
        for i, name in enumerate(model.link_names):
            parent = model.link_parent[i]
            if parent is None or (joint_floats and name == base):
                continue
            if (model.link_body[i] == model.link_body[index[parent]]) == moving:
                continue
            out.append(_transform(stamp, parent, name,
                                  np.linalg.solve(Cs[index[parent]], Cs[i])))
        return out

    def _publish_static(self):
        if self.p('publish_tf'):
            self.pub_tf_static.publish(
                TFMessage(transforms=self._transforms(self._stamp(), moving=False)))

    def _odometry(self, stamp):
        C, V = self.sim.base_pose, self.sim.qd[:6]
        msg = Odometry()
        msg.header.stamp = stamp
        msg.header.frame_id = self.p('world_frame')
        msg.child_frame_id = self.model.root_link
        p = msg.pose.pose.position
        p.x, p.y, p.z = (float(x) for x in C[:3, 3])
        o = msg.pose.pose.orientation
        o.x, o.y, o.z, o.w = quaternion_xyzw(C[:3, :3])
        # nav_msgs/Odometry: the twist is expressed in child_frame_id (body-fixed, REP 105).
        a, v = msg.twist.twist.angular, msg.twist.twist.linear
        a.x, a.y, a.z = (float(x) for x in V[:3])
        v.x, v.y, v.z = (float(x) for x in V[3:])
        return msg

    def _diagnostics(self):
        st = DiagnosticStatus(name='liemb_simulation', hardware_id='liemb_ros')
        if self.sim is None:
            err = self.source.error
            st.level = DiagnosticStatus.ERROR if err else DiagnosticStatus.WARN
            if self._preparing is not None:
                st.message = (f"compiling kernels for robot '{self._candidate.model.name}' "
                              f'({self._preparing.seconds:.0f} s so far)')
            else:
                st.message = (f'unusable robot description: {err}' if err else
                              'waiting for the robot description on '
                              + self.resolve_topic_name('robot_description'))
        else:
            d = self.sim.diagnostics()
            w = self._rtf_window
            wall = sum(x[2] for x in w)
            rtf = sum(x[1] for x in w) / wall if wall > 0 else 0.0
            if self.error is not None:
                st.level, st.message = DiagnosticStatus.ERROR, f'stopped: {self.error}'
            elif self.paused:
                st.level, st.message = DiagnosticStatus.OK, 'paused'
            elif (self.p('wait_for_command') and self._command is None
                  and self._drive is None):
                st.level, st.message = DiagnosticStatus.OK, 'waiting for the first command'
            else:
                st.level, st.message = DiagnosticStatus.OK, 'running'
            drive = 'effort' if self._drive is None else (
                f"{self._drive['queue'][-1][1]} (computed torque, "
                f"{self.p('drive_frequency'):g} Hz)")
            values = [('sim_time', f"{d['t']:.4f}"), ('real_time_factor', f'{rtf:.3f}'),
                      ('steps', str(d['steps'])), ('energy', f"{d['energy']:.6g}"),
                      ('energy_balance_error', f"{d['energy_balance_error']:.3e}"),
                      ('integrator', self.p('integrator')), ('dt', str(self.p('dt'))),
                      ('coordinates', self.p('coordinates')), ('drive', drive),
                      ('limit_energy', f"{d['limit_energy']:.3e}"),
                      ('joints_in_limit', ', '.join(
                          n for n, x in zip(self.model.joint_names, d['in_limit']) if x)
                       or 'none'),
                      ('external_wrenches', ', '.join(self._wrenches) or 'none'),
                      ('dropped', str(self._rejected)),
                      ('ignored_joints', ', '.join(self._ignored) or 'none')]
            if self.sim.contact is not None:
                contacts = self.sim.contacts()
                values += [('contacts', str(len(contacts))),
                           ('links_in_contact', ', '.join(sorted({c.link for c in contacts}))
                            or 'none'),
                           ('contact_energy', f"{d['contact_energy']:.3e}")]
            if 'constraint_violation' in d:
                values.append(('max_constraint_violation',
                               f"{float(np.max(d['constraint_violation'], initial=0.0)):.3e}"))
            st.values = [KeyValue(key=k, value=v) for k, v in values]
        msg = DiagnosticArray(status=[st])
        msg.header.stamp = self.get_clock().now().to_msg()
        self.pub_diag.publish(msg)

    # -- services ---------------------------------------------------------------------------
    def _on_reset(self, req, resp):
        if self.sim is None:
            resp.success, resp.message = False, 'no robot model loaded yet'
            return resp
        self.sim.reset()
        self.error = None
        self._command = self._command_time = None   # a held command must not act again
        self._drive = None
        self._wrenches = {}
        self.sim.clear_wrenches()
        self._wall = time.monotonic()
        resp.success, resp.message = True, ('simulation reset to the initial state; held '
                                            'commands cleared')
        return resp

    def _on_pause(self, req, resp):
        self.paused = bool(req.data)
        self._wall = time.monotonic()
        resp.success, resp.message = True, 'paused' if self.paused else 'running'
        return resp

    def _on_step(self, req, resp):
        if self.sim is None or self.error is not None:
            resp.success = False
            resp.message = 'no robot model loaded yet' if self.sim is None else self.error
            return resp
        if not self.paused:
            resp.success, resp.message = False, 'pause the simulation first (~/pause)'
            return resp
        self._advance(1.0 / self.p('publish_rate'))
        self._publish()
        resp.success = self.error is None
        resp.message = f't = {self.sim.t:.6f} s' if resp.success else self.error
        return resp


def _point(x):
    p = Point()
    p.x, p.y, p.z = (float(v) for v in x)
    return p


def _transform(stamp, parent, child, C):
    t = TransformStamped()
    t.header.stamp = stamp
    t.header.frame_id = parent
    t.child_frame_id = child
    tr, r = t.transform.translation, t.transform.rotation
    tr.x, tr.y, tr.z = (float(x) for x in C[:3, 3])
    r.x, r.y, r.z, r.w = quaternion_xyzw(C[:3, :3])
    return t


def main(args=None):
    """Run the simulation node until Ctrl-C or SIGTERM; exit 1 when it cannot work."""
    return run(SimulationNode, args)


if __name__ == '__main__':
    sys.exit(main())
