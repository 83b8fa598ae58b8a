"""
What the servo node publishes from each step of its law: the joint commands and the status.

:class:`ServoOutputs`, a part that :class:`liemb_ros.ros.servo_node.ServoNode` owns, holds
the node's publishers and publishes a step's :class:`~liemb_ros.control.servo.ServoOutput`:
``~/velocity_command``, ``~/position_command`` (``std_msgs/Float64MultiArray`` in
``command_joints`` order) and ``~/joint_trajectory`` (one point ``trajectory_lookahead``
ahead), those named in ``outputs``, each only when finite, and ``~/status`` (latched) when
the status changes, logged.  ``/diagnostics`` goes out on :attr:`ServoOutputs.pub_diag`.
"""
import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.duration import Duration
from rclpy.qos import QoSProfile, ReliabilityPolicy
from std_msgs.msg import Float64MultiArray, MultiArrayDimension, String
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from ..control.servo import Status
from .common import LATCHED

RELIABLE = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)


class ServoOutputs:
    """
    The outputs of a servo node: its publishers and the messages of a step.

    ``node``: the node whose topics these are (``~/velocity_command``,
    ``~/position_command``, ``~/joint_trajectory``, ``~/status``, ``/diagnostics``);
    ``p(name)``: a parameter's value (``outputs``, ``trajectory_lookahead``).
    :attr:`joints` and :attr:`index` are the commands' joints and their model indexes
    (``command_joints``); :attr:`status` the last status published.
    """

    def __init__(self, node, p):
        self.p, self.logger = p, node.get_logger()
        self.pub = {
            'velocity': node.create_publisher(Float64MultiArray, '~/velocity_command',
                                              RELIABLE),
            'position': node.create_publisher(Float64MultiArray, '~/position_command',
                                              RELIABLE),
            'trajectory': node.create_publisher(JointTrajectory, '~/joint_trajectory',
                                                RELIABLE)}
        self.pub_status = node.create_publisher(String, '~/status', LATCHED)
        self.pub_diag = node.create_publisher(DiagnosticArray, '/diagnostics', RELIABLE)
        self.joints = self.index = None
        self.status = None

    def publish(self, out):
        """
        Publish the joint commands of ``out`` (a :class:`ServoOutput`), each only when finite.

        An output that is not finite raises FloatingPointError before it goes out (the
        cycle's error handling then commands a stop); the ones before it went out.
        """
        order = self.index
        outputs = self.p('outputs')
        velocities = _finite(out.velocities[order], 'velocity')
        if 'velocity' in outputs:
            self.pub['velocity'].publish(_array(velocities))
        if 'position' in outputs:
            self.pub['position'].publish(_array(_finite(out.positions[order], 'position')))
        if 'trajectory' in outputs:
            ahead = self.p('trajectory_lookahead')
            traj = JointTrajectory(joint_names=list(self.joints))
            traj.points = [JointTrajectoryPoint(
                positions=_finite(out.positions[order] + ahead * velocities,
                                  'trajectory').tolist(),
                velocities=velocities.tolist(),
                time_from_start=Duration(seconds=ahead).to_msg())]
            self.pub['trajectory'].publish(traj)
        if out.status != self.status:
            self.status = out.status
            self.pub_status.publish(String(data=out.status.label))
            text = f'status: {out.status.label} (condition number {out.condition:.3g})'
            # one call site per severity: rclpy refuses a severity change at one site
            if out.status in (Status.HALT_FOR_SINGULARITY, Status.HALT_FOR_JOINT_LIMIT,
                              Status.INVALID_COMMAND):
                self.logger.warning(text)
            else:
                self.logger.info(text)


def _finite(values, what):
    """Return ``values``; FloatingPointError (nothing published) unless every one is finite."""
    if not np.isfinite(values).all():
        raise FloatingPointError(f'non-finite {what} command {values.tolist()} not published')
    return values


def _array(values):
    msg = Float64MultiArray()
    msg.layout.dim = [MultiArrayDimension(label='joints', size=len(values), stride=len(values))]
    msg.data = values.tolist()
    return msg
