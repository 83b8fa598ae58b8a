"""
The dynamics node's parameters: their declarations, and the engine settings they make.

:func:`parameter_table` lists every parameter of ``config/dynamics.yaml`` (name, default,
description, type, range and whether it is read-only) for
:func:`liemb_ros.ros.common.declare`; :func:`engine_settings` turns parameters (all of them,
or those a run-time change sets) into the settings of
:class:`liemb_ros.control.engine.DynamicsEngine`.  A parameter that is an engine setting
takes its default from the engine's (:data:`liemb_ros.control.engine.DEFAULTS`, via
:func:`default`): one source for both.
"""
from rcl_interfaces.msg import ParameterType

from ..control.engine import DEFAULTS, MODES

#: the settings of the engine that can change at run time (parameter name = setting)
SETTINGS = ('mode', 'representation', 'twist_links', 'wrench_joints', 'command_joints',
            'clamp_effort')
#: controller parameters -> engine settings of another name
RENAMED = {'computed_torque.kp': 'kp', 'computed_torque.kd': 'kd',
           'computed_torque.friction_compensation': 'friction_compensation',
           'impedance.link': 'impedance_link',
           'impedance.representation': 'impedance_representation',
           'impedance.stiffness': 'stiffness', 'impedance.damping': 'impedance_damping',
           'impedance.null_stiffness': 'null_stiffness',
           'impedance.null_damping': 'null_damping',
           'impedance.friction_compensation': 'impedance_friction_compensation',
           'gravity': 'gravity', 'armature': 'armature'}
#: the payload parameters, one engine setting ``payload = (link, mass, com, inertia)``
PAYLOAD = ('payload.link', 'payload.mass', 'payload.com', 'payload.inertia')
#: the default of a parameter in :func:`parameter_table` that is the engine's (:func:`default`)
ENGINE = object()


def default(name):
    """
    Return the default of parameter ``name``, an engine setting, as a parameter value.

    The engine's (:data:`~liemb_ros.control.engine.DEFAULTS`) under the setting's name
    (:data:`RENAMED`; a ``payload.*`` parameter: its part of the ``payload`` setting), a
    sequence as a list (what a parameter of an array type holds).
    """
    if name in PAYLOAD:
        value = DEFAULTS['payload'][PAYLOAD.index(name)]
    else:
        value = DEFAULTS[RENAMED.get(name, name)]
    return list(value) if isinstance(value, tuple) else value


def parameter_table():
    """
    Return the ``(name, default, description, type, extra)`` of every parameter.

    The default of an engine setting is the engine's (:func:`default`).
    """
    S, SA = ParameterType.PARAMETER_STRING, ParameterType.PARAMETER_STRING_ARRAY
    D, B = ParameterType.PARAMETER_DOUBLE, ParameterType.PARAMETER_BOOL
    DA = ParameterType.PARAMETER_DOUBLE_ARRAY
    table = (
        ('mode', ENGINE, f"torques to publish: {' | '.join(MODES)}", S,
         {}),
        ('representation', ENGINE, 'twist representation: body | spatial | hybrid | '
         'mixed', S, {}),
        ('twist_links', ENGINE, 'links whose twists are published (empty: the leaf links)',
         SA, {}),
        ('wrench_joints', ENGINE, 'joints whose transmitted wrenches are published', SA, {}),
        ('command_joints', ENGINE, 'joint order of ~/effort_command (empty: model order)', SA,
         {}),
        ('computed_torque.kp', ENGINE, 'computed_torque position gains K_p [1/s^2]: '
         'one value or one per joint', DA, {}),
        ('computed_torque.kd', ENGINE, 'computed_torque velocity gains K_d [1/s]: one '
         'value or one per joint', DA, {}),
        ('computed_torque.friction_compensation', ENGINE, 'computed_torque: add the URDF '
         'Coulomb friction F tanh(qd_r / 0.003) as a feed-forward (qd_r = qd_desired + '
         'kp/kd e)', B, {}),
        ('computed_torque.goal_tolerance', [0.01], 'computed_torque: a '
         '~/follow_joint_trajectory goal succeeds once each joint is this close to its '
         'last point (rad or m; one value or one per joint) where the goal gives no '
         'goal_tolerance (JointTolerance position 0)', DA, {}),
        ('computed_torque.stopped_velocity_tolerance', 0.01, 'computed_torque: ... and '
         'this slow (rad/s or m/s; JointTolerance velocity 0)', D, dict(lo=0.0, hi=1e3)),
        ('computed_torque.goal_time', 1.0, 'computed_torque: a goal whose joints are not '
         'within their goal tolerances this long after its end (s; where the goal gives '
         'no goal_time_tolerance) aborts with GOAL_TOLERANCE_VIOLATED', D,
         dict(lo=0.0, hi=3600.0)),
        ('computed_torque.trajectory_file', '', 'a joint trajectory (YAML: joint_names, '
         'points) tracked once the state is known, as if sent on ~/joint_trajectory; a '
         "file name in config/ or a path ('': none)", S, dict(read_only=True)),
        ('computed_torque.repeat', False, 'start the trajectory file again 1 s after it '
         'ends', B, {}),
        ('impedance.link', ENGINE, "cartesian_impedance: the controlled link ('': the last "
         'leaf link)', S, {}),
        ('impedance.representation', ENGINE, 'rows of the impedance gains: body (about '
         '/ along the link axes) | hybrid (world axes, at the link origin)', S, {}),
        ('impedance.stiffness', ENGINE, 'stiffness: '
         'angular [N m/rad] x3 then linear [N/m] x3 (or one value)', DA, {}),
        ('impedance.damping', ENGINE, 'damping: angular '
         '[N m s/rad] x3 then linear [N s/m] x3 (or one value)', DA, {}),
        ('impedance.null_stiffness', ENGINE, 'null-space stiffness towards the posture where '
         'the mode started [N m/rad] (0: none)', D, dict(lo=0.0, hi=1e4)),
        ('impedance.null_damping', ENGINE, 'null-space joint damping [N m s/rad]', D,
         dict(lo=0.0, hi=1e3)),
        ('impedance.friction_compensation', ENGINE, 'cartesian_impedance: add the URDF '
         'Coulomb friction F tanh(qd_r / 0.003) along qd_r = J+ D^-1 K e (the spring '
         'pull); shifts the static stiffness by up to the friction torque', B, {}),
        ('payload.link', ENGINE, "link carrying a payload ('': none)", S, {}),
        ('payload.mass', ENGINE, 'payload mass [kg]', D, dict(lo=0.0, hi=1e4)),
        ('payload.com', ENGINE, 'payload centre of mass in the link frame [m] (empty: the '
         'link origin)', DA, {}),
        ('payload.inertia', ENGINE, 'payload inertia about its centre of mass in link axes: '
         'ixx ixy ixz iyy iyz izz [kg m^2] (empty: a point mass)', DA, {}),
        ('payload_estimation.link', '', 'link whose payload is estimated online from '
         "joint_states efforts, on ~/payload_estimate ('': off); applied only by "
         '~/payload_estimate/apply', S, dict(read_only=True)),
        ('payload_estimation.cutoff', 2.0, 'payload estimation: cut-off of the first-order '
         'filter of both the torques and the regressor [Hz]; a gap between joint states '
         'longer than 1 / (4 pi cutoff) s restarts it', D,
         dict(lo=0.01, hi=100.0, read_only=True)),
        ('payload_estimation.memory', 0.0, 'payload estimation: forgetting time constant '
         '[s] (0: never forget); the forgotten information is replaced by the prior\'s',
         D, dict(lo=0.0, hi=1e6, read_only=True)),
        ('payload_estimation.min_excitation', 1e-3, 'payload estimation: the excitation '
         '[N^2 m^2] ~/payload_estimate/apply needs (the mean square torque of the '
         'least-seen parameter direction, per prior standard deviation)', D,
         dict(lo=0.0, hi=1e6, read_only=True)),
        ('payload_estimation.friction', False, 'payload estimation: subtract the URDF joint '
         'damping and Coulomb friction from the efforts', B, dict(read_only=True)),
        ('payload_estimation.publish_rate', 10.0, 'payload estimation: estimates per second '
         'on ~/payload_estimate', D, dict(lo=0.1, hi=100.0, read_only=True)),
        ('gravity', ENGINE, 'gravity in the world frame [m/s^2] (empty: the model, 0 0 -9.81)',
         DA, {}),
        ('armature', ENGINE, 'rotor inertia reflected to each joint [kg m^2 or kg]: one value '
         'or one per joint (empty: none); computed_torque and inverse_dynamics use '
         'M + diag(armature), as the simulation node does with its armature', DA, {}),
        ('clamp_effort', ENGINE, 'limit ~/effort_command to the URDF <limit effort> of each '
         'joint (~/joint_torques stays the computed torque)', B, {}),
        ('publish_rate', 0.0, 'outputs per second; 0 publishes on every joint_states '
         'message', D, dict(lo=0.0, hi=5000.0)),
        ('controller_state_rate', 100.0, 'computed_torque: ~/controller_state messages '
         '(control_msgs/JointTrajectoryControllerState) per second at most, of the latest '
         'state; 0: none', D, dict(lo=0.0, hi=5000.0)),
        ('secondary_rate', 100.0, 'twists and wrenches per second at most, of the latest '
         'state (computed only then); 0: with every torque', D, dict(lo=0.0, hi=5000.0)),
        ('state_timeout', 0.5, 'seconds without joint_states after which the node stops '
         'commanding (0: never)', D, dict(lo=0.0, hi=3600.0)),
        ('world_frame', 'world', 'frame of world-resolved quantities and markers', S, {}),
        ('markers', True, 'publish RViz arrows for twists and wrenches', B, {}),
        ('marker_rate', 30.0, 'marker messages per second at most (RViz needs no more; '
         'they cost time)', D, dict(lo=0.1, hi=1000.0)),
        ('marker_scale', 0.2, 'arrow length per unit of velocity (m per m/s, m per '
         'rad/s) and per 10 N', D, dict(lo=0.0, hi=100.0)),
        ('realtime_priority', 0, 'SCHED_FIFO priority (1-99) of the node threads (its '
         'loop and the middleware ones) once the kernels are ready, as ros2_control '
         'gives its loop; needs the right (rtprio limit or CAP_SYS_NICE), else a '
         'warning; 0: normal', ParameterType.PARAMETER_INTEGER, dict(read_only=True)),
        ('diagnostics_period', 1.0, 'seconds between /diagnostics messages', D,
         dict(lo=0.05, hi=60.0)))
    return tuple((name, default(name) if value is ENGINE else value, text, kind, extra)
                 for name, value, text, kind, extra in table)


def engine_settings(changes, current):
    """
    Return engine settings from parameters: all (``changes`` empty) or those changed.

    ``changes``: parameter name -> new value; ``current(name)``: a parameter's value now.  A
    changed payload parameter yields the whole payload (the others' current values).
    """
    every = not changes
    value = (lambda k: changes[k] if k in changes else current(k))
    out = {k: value(k) for k in SETTINGS if every or k in changes}
    out.update({v: value(k) for k, v in RENAMED.items() if every or k in changes})
    if every or any(k in changes for k in PAYLOAD):
        out['payload'] = tuple(value(k) for k in PAYLOAD)
    return out
