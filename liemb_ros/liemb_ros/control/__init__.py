"""
Control: the laws that turn a robot's state into torques or joint commands, without ROS.

* :mod:`.trajectory`: joint trajectories interpolated as ros2_control's
  JointTrajectoryController interpolates them (:class:`JointTrajectory`).
* :mod:`.limits`: a trajectory checked against the URDF's position, velocity and effort
  limits before it is tracked (:func:`check_limits`, :func:`slowdown`).
* :mod:`.laws`: computed torque and Cartesian impedance (:class:`ComputedTorque`,
  :class:`CartesianImpedance` hold a law's gains for a loop).
* :mod:`.servo`: the servo law of teleoperation (damped least squares, singularity and
  joint-limit scaling).
* :mod:`.engine` (with :mod:`.engine_settings`, :mod:`.engine_state`): the dynamics
  node's engine (state intake, modes, outputs), ROS-free.

The names below are the public API (``from liemb_ros import control``).
"""
from .laws import (CartesianImpedance, ComputedTorque, FRICTION_VELOCITY,
                   IMPEDANCE_REPRESENTATIONS, cartesian_impedance, computed_torque,
                   impedance_reference_velocity, pose_error, reference_velocity)
from .limits import CHECK_STEP, LimitError, POSITION_MARGIN, RATE_MARGIN, check_limits, slowdown
from .servo import MAX_SPEED, Servo, ServoOutput, Status
from .trajectory import MAX_POINTS, JointTrajectory, load_trajectory, segment

__all__ = ['JointTrajectory', 'load_trajectory', 'segment', 'MAX_POINTS', 'check_limits',
           'slowdown', 'LimitError', 'POSITION_MARGIN', 'RATE_MARGIN', 'CHECK_STEP',
           'computed_torque', 'ComputedTorque', 'reference_velocity', 'cartesian_impedance',
           'CartesianImpedance', 'pose_error', 'impedance_reference_velocity',
           'FRICTION_VELOCITY', 'IMPEDANCE_REPRESENTATIONS', 'Servo', 'ServoOutput', 'Status',
           'MAX_SPEED']
