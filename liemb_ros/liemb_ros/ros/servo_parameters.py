"""
The servo node's parameters: their declarations, the law they make, the checks of values.

:func:`parameter_table` lists every parameter of ``config/servo.yaml`` (name, default,
description, type, range and whether it is read-only) for
:func:`liemb_ros.ros.common.declare`; :func:`servo_law` builds the
:class:`~liemb_ros.control.servo.Servo` the law's parameters (:data:`LAW`,
:data:`SINGULARITY`) describe, and :func:`check_other` and :func:`command_order` check the
others, each raising ValueError naming the parameter (the node refuses a run-time change
with it, or exits with it at the start).
"""
import math

import numpy as np
from rcl_interfaces.msg import ParameterType

from ..control.engine import leaf_links
from ..control.servo import Servo
from .conversions import shown

OUTPUTS = ('velocity', 'position', 'trajectory')
#: node parameter -> Servo keyword (the law's settings; all changeable at run time)
LAW = {'link': 'link', 'base_frame': 'base_frame', 'mask': 'mask', 'damping': 'damping',
       'damping_threshold': 'damping_threshold', 'joint_limit_margin': 'margin',
       'velocity_limits': 'velocity_limits', 'velocity_scale': 'velocity_scale',
       'acceleration_limits': 'acceleration_limits', 'smoothing_time_constant': 'smoothing'}
SINGULARITY = ('lower_singularity_threshold', 'hard_stop_singularity_threshold')
OTHER = ('command_timeout', 'state_timeout', 'trajectory_lookahead', 'outputs',
         'command_joints')


def parameter_table():
    """Return the ``(name, default, description, type, extra)`` of every parameter."""
    S, SA = ParameterType.PARAMETER_STRING, ParameterType.PARAMETER_STRING_ARRAY
    D, DA = ParameterType.PARAMETER_DOUBLE, ParameterType.PARAMETER_DOUBLE_ARRAY
    BA = ParameterType.PARAMETER_BOOL_ARRAY
    ro = {'read_only': True}
    return (
        # frames
        ('link', '', 'controlled link (empty: the first leaf link, e.g. a tool frame)', S, {}),
        ('base_frame', '', "the 'world' of spatial / hybrid / mixed commands: a link fixed "
         'to the root (empty: the root link)', S, {}),
        ('world_frame', 'world', 'name of the world frame in commands (the root link)', S,
         ro),
        ('mask', [], 'commanded axes (wx, wy, wz, vx, vy, vz) as 6 booleans; empty: all',
         BA, {}),
        # loop and outputs
        ('publish_rate', 500.0, 'servo steps and joint commands per second', D,
         dict(ro, lo=1.0, hi=1000.0)),
        ('outputs', ['velocity'], 'joint commands to publish: velocity | position | '
         'trajectory', SA, {}),
        ('command_joints', [], 'joint order of the command arrays and the trajectory '
         '(empty: model order)', SA, {}),
        ('trajectory_lookahead', 0.05, 'time_from_start [s] of the trajectory point', D,
         dict(lo=1e-3, hi=10.0)),
        ('command_timeout', 0.2, 'seconds after which a command is stale (smooth stop)',
         D, dict(lo=1e-3, hi=3600.0)),
        ('state_timeout', 0.5, 'seconds without joint_states after which the node stops '
         'commanding (0: never)', D, dict(lo=0.0, hi=3600.0)),
        # damped least squares and singularities
        ('damping', 0.05, 'largest damping of damped least squares', D,
         dict(lo=0.0, hi=10.0)),
        ('damping_threshold', 0.02, 'smallest singular value of the Jacobian below which '
         'the damping acts', D, dict(lo=0.0, hi=10.0)),
        ('lower_singularity_threshold', 17.0, 'condition number where the speed toward a '
         'singularity starts to fall', D, dict(lo=1.0, hi=1e6)),
        ('hard_stop_singularity_threshold', 30.0, 'condition number where motion toward a '
         'singularity halts', D, dict(lo=1.0, hi=1e6)),
        # limits and smoothing
        ('joint_limit_margin', 0.1, 'distance [rad or m] before a position limit where '
         'joints stop', D, dict(lo=0.0, hi=10.0)),
        ('velocity_limits', [], 'joint velocity limits (empty: the URDF; one value: '
         'every joint)', DA, {}),
        ('velocity_scale', 1.0, 'fraction of the velocity limits used', D,
         dict(lo=1e-3, hi=1.0)),
        ('acceleration_limits', [5.0], 'joint acceleration limits [rad/s^2] (one value: '
         'every joint)', DA, {}),
        ('smoothing_time_constant', 0.0, 'low-pass time constant [s] of the joint '
         'velocity target (0: off)', D, dict(lo=0.0, hi=10.0)),
        ('diagnostics_period', 1.0, 'seconds between /diagnostics messages', D,
         dict(ro, lo=0.05, hi=60.0)))


def servo_law(model, values, period):
    """
    Return a new Servo for ``model`` with parameter ``values`` (ValueError if bad).

    ``values``: parameter name -> value, for every name of :data:`LAW` and
    :data:`SINGULARITY`; ``period``: the step (s), ``1 / publish_rate``.
    """
    kw = {LAW[k]: values[k] for k in LAW}
    kw['link'] = kw['link'] or leaf_links(model)[0]
    kw['base_frame'] = kw['base_frame'] or None
    kw['velocity_limits'] = kw['velocity_limits'] if len(kw['velocity_limits']) else None
    kw['mask'] = list(kw['mask']) or None
    return Servo(model, period=period,
                 singularity_thresholds=tuple(values[k] for k in SINGULARITY), **kw)


def check_other(values, error=ValueError):
    """Raise ``error`` unless the :data:`OTHER` parameters' ``values`` can work."""
    bad = [o for o in values['outputs'] if o not in OUTPUTS]
    if bad:
        raise error(f"outputs: unknown {bad}; expected some of {', '.join(OUTPUTS)}")
    for k in ('command_timeout', 'state_timeout', 'trajectory_lookahead'):
        if not math.isfinite(values[k]):
            raise error(f'{k} must be finite')


def command_order(model, joints):
    """Return ``command_joints`` (all when empty) and their model indexes; ValueError if bad."""
    joints = list(joints) or list(model.joint_names)
    unknown = [j for j in joints if j not in model.joint_names]
    if unknown:
        raise ValueError(f"command_joints: unknown joints {shown(', '.join(unknown))}; "
                         f'the robot has {model.joint_names}')
    return joints, np.array([model.joint_index(j) for j in joints], dtype=np.int64)
