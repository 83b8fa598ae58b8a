"""
The simulation node's parameters: their declarations and the checks of their values.

:func:`parameter_table` lists every parameter of ``config/simulation.yaml`` (name, default,
description, type, range and whether it is read-only) for
:func:`liemb_ros.ros.common.declare`.  The functions below read them through ``p(name)``
(the node's parameter value, :meth:`~liemb_ros.ros.simulation_node.SimulationNode.p`),
refuse values that cannot work (NaN, a wrong number of initial positions, unknown joints
or links) with :class:`~liemb_ros.ros.common.ConfigError` or ``ValueError`` naming the
parameter, build the :class:`~liemb_ros.sim.Simulator` they describe (contact model and
initial state included) and check run-time changes as a whole before any is applied.
"""
import os
import warnings

import numpy as np
from rcl_interfaces.msg import ParameterType

from ..sim.contact import MESH_MODES, ContactModel, rpy_matrix
from ..sim.scenario import ready_configuration
from ..sim.simulator import COORDINATES, INTEGRATORS, UPDATES, SimulationWarning, Simulator
from .common import ConfigError
from .conversions import shown

#: the numeric parameters that must be finite (checked when the node starts)
FINITE = (
    'dt', 'real_time_factor', 'publish_rate', 'effort_timeout', 'drive_frequency',
    'lockstep_timeout',
    'limit_time_constant', 'friction', 'friction_velocity', 'wrench_timeout',
    'contact_planes', 'contact_time_constant', 'contact_damping_ratio', 'contact_stiffness',
    'contact_damping', 'contact_friction', 'contact_friction_velocity',
    'contact_marker_scale', 'test_torque_amplitude', 'test_torque_frequency',
    'initial_positions', 'initial_velocities', 'damping', 'initial_base_pose',
    'joint_hold_stiffness', 'joint_hold_damping')


def parameter_table():
    """Return the ``(name, default, description, type, extra)`` of every parameter."""
    S, SA = ParameterType.PARAMETER_STRING, ParameterType.PARAMETER_STRING_ARRAY
    D, DA = ParameterType.PARAMETER_DOUBLE, ParameterType.PARAMETER_DOUBLE_ARRAY
    B = ParameterType.PARAMETER_BOOL
    ro = {'read_only': True}
    return (
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
         'per plane (normal, offset [m]; a normal of length |n| scales the equation: the '
         'plane (n/|n|).x = d/|n|)', DA, ro),
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
         '[0.0] = initial_configuration)', DA, ro),
        ('initial_configuration', 'neutral', "without initial_positions: 'neutral' (q = 0) or "
         "'ready' (inside the limits, the tool's Jacobian best conditioned: a servo can fly "
         'it at once)', S, ro),
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
        ('lockstep', False, 'lock-step with the controller: step one publish period only '
         'after a command answered the last published state (the closed loop then does '
         'not depend on DDS or CPU timing; the simulation waits for a slow controller)',
         B, ro),
        ('lockstep_timeout', 1.0, 'lock-step: seconds to wait for the answer to a state; '
         'then step with the held command and count a missed answer (before the first '
         'answer: re-publish the state this often and wait)', D,
         dict(ro, lo=0.001, hi=3600.0)),
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
         dict(ro, lo=0.05, hi=60.0)))


#: the parameters that may change at run time and must then be finite
FINITE_CHANGES = ('real_time_factor', 'effort_timeout', 'test_torque_amplitude',
                  'test_torque_frequency', 'drive_frequency')


def check_numbers(p, names):
    """Raise ConfigError when a numeric parameter of ``names`` holds NaN or infinity."""
    for name in names:
        value = np.asarray(p(name), dtype=float)
        if not np.all(np.isfinite(value)):
            raise ConfigError(f'parameter {name} must be finite, got {value.tolist()}')


def simulator(p, model, xml, where, warn):
    """
    Return the :class:`~liemb_ros.sim.Simulator` of the parameters for a robot.

    ``model``, ``xml``: the robot and its URDF text, from ``where`` (a file's path, or what
    else gave it: contact meshes are found beside a file); ``warn(text)``: where the
    simulator's :class:`~liemb_ros.sim.simulator.SimulationWarning` go (the log).  Raises
    ValueError naming the parameter that does not fit the robot.
    """
    damping, armature, friction = p('damping'), p('armature'), p('friction')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always', SimulationWarning)
        sim = Simulator(
            model, dt=p('dt'), integrator=p('integrator'), coordinates=p('coordinates'),
            update=p('update'), damping=None if damping < 0 else damping,
            damping_method=p('damping_method'),
            armature='auto' if armature < 0 else armature, limits=p('joint_limits'),
            limit_time_constant=p('limit_time_constant'), effort_limits=p('effort_limits'),
            friction=None if friction < 0 else friction,
            friction_velocity=p('friction_velocity'),
            contact=contact_model(p, model, xml, where), **initial_state(p, model))
    for w in caught:
        warn(str(w.message))
    return sim


def contact_model(p, model, xml, where):
    """Return the parameters' :class:`~liemb_ros.sim.contact.ContactModel` (None: none)."""
    if not p('contact'):
        return None
    planes = np.asarray(p('contact_planes'), dtype=float)
    if planes.size == 0 or planes.size % 4:
        raise ValueError(f'contact_planes needs four numbers per plane (normal, offset), '
                         f'got {planes.size}')
    planes = [(row[:3], row[3]) for row in planes.reshape(-1, 4)]
    k, b, mu = p('contact_stiffness'), p('contact_damping'), p('contact_friction')
    return ContactModel(     # -1: the default; other negative values are refused there
        model, xml, planes=planes, links=p('contact_links') or None,
        time_constant=p('contact_time_constant'),
        damping_ratio=p('contact_damping_ratio'),
        stiffness=None if k == -1 else k, damping=None if b == -1 else b,
        friction=None if mu == -1 else mu,
        friction_velocity=p('contact_friction_velocity'),
        mesh=p('contact_mesh'), mesh_points=p('contact_mesh_points'),
        urdf_path=where if os.path.isfile(where) else None)


def wrench_links(model, names):
    """Links that take external wrenches: ``names`` (checked) or every moving link."""
    if not names:
        return [n for i, n in enumerate(model.link_names)
                if model.floating or model.link_body[i] >= 0]
    unknown = [n for n in names if n not in model.link_ids]
    if unknown:
        raise ValueError(f"wrench_links: no link {shown(', '.join(unknown))} in "
                         f'{shown(model.name)}')
    return list(names)


def initial_state(p, model):
    """Return the Simulator's ``q0``, ``qd0``, ``base_pose`` keywords the parameters set."""
    q0 = np.asarray(p('initial_positions'), dtype=float)
    qd0 = np.asarray(p('initial_velocities'), dtype=float)
    out = {}
    if q0.size and not (q0.size == 1 and q0[0] == 0.0):
        if q0.size != model.nq:
            raise ValueError(f'initial_positions has {q0.size} values; the robot has '
                             f'{model.nq} joints {model.joint_names}')
        out['q0'] = q0
    elif p('initial_configuration') == 'ready':
        out['q0'] = ready_configuration(model)
    elif p('initial_configuration') != 'neutral':
        raise ValueError(f"initial_configuration is {shown(p('initial_configuration'))};"
                         " expected 'neutral' or 'ready'")
    if qd0.size and not (qd0.size == 1 and qd0[0] == 0.0):
        if qd0.size != model.nq:
            raise ValueError(f'initial_velocities has {qd0.size} values; the robot has '
                             f'{model.nq} joints')
        out['qd0'] = np.concatenate([np.zeros(model.nv - model.nq), qd0])
    pose = np.asarray(p('initial_base_pose'), dtype=float)
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


def joint_order(model, names):
    """Return the model index of each of ``command_joints`` (all joints when empty)."""
    names = [n for n in names if n]
    if not names:
        return np.arange(model.nq)
    unknown = [n for n in names if n not in model.joint_names]
    if unknown:
        raise ValueError(f'command_joints: unknown joints {unknown}; the robot has '
                         f'{model.joint_names}')
    return np.array([model.joint_index(n) for n in names])


def check_amplitude(sim, amp):
    """Raise ValueError unless ``amp`` is 1 or nq plausible test torques (with the bound)."""
    nq = sim.model.nq
    if amp.size not in (1, nq):
        raise ValueError(f'test_torque_amplitude has {amp.size} values; the robot has '
                         f'{nq} joints (or give one for all)')
    try:
        sim.plausible.torques(np.broadcast_to(np.abs(amp), (nq,)))
    except ValueError as exc:
        raise ValueError(f'test_torque_amplitude: {exc}') from None


def refused_change(params, sim):
    """
    Return why a run-time change of ``params`` cannot be applied, or None when it can.

    ``sim``: the simulator running (None: none yet), whose plausibility bounds a new
    ``test_torque_amplitude`` must keep.
    """
    for prm in params:
        if prm.name not in FINITE_CHANGES:
            continue
        value = np.asarray(prm.value, dtype=float)
        if not np.all(np.isfinite(value)):
            return f'{prm.name} must be finite'
        if prm.name == 'test_torque_amplitude' and sim is not None:
            try:
                check_amplitude(sim, value)
            except ValueError as exc:
                return str(exc)
    return None
