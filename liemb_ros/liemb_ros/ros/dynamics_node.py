"""
``dynamics_node``: real-time inverse dynamics, twists, joint wrenches and Jacobians.

Reads the robot from the ``robot_description`` parameter, a URDF file / shipped robot
name (``urdf_path``), or else the transient-local ``robot_description`` topic (as
robot_state_publisher publishes it).  Subscribes to ``joint_states`` (SensorDataQoS)
and optionally ``~/desired`` (``trajectory_msgs/JointTrajectoryPoint``: desired
accelerations in ``command_joints`` order for full inverse dynamics).  On every joint
state (``publish_rate = 0``) or at a fixed rate it publishes:

* ``~/joint_torques`` (``sensor_msgs/JointState``, effort = torque) and
  ``~/effort_command`` (``std_msgs/Float64MultiArray`` in ``command_joints`` order, for a
  ros2_control effort / forward-command controller: remap it to
  ``/<controller>/commands``);
* ``~/twists`` (``liemb_interfaces/TwistRepresentedArray``: every twist states its
  representation and the frames its rows are resolved in);
* ``~/wrench/<joint>`` (``geometry_msgs/WrenchStamped`` in the child link frame);
* ``~/markers`` (``visualization_msgs/MarkerArray``: arrows for twists and wrenches);
* ``/diagnostics`` (cycle-time p50/p99/max, rate, dropped messages).

Serves ``~/get_jacobian`` (``liemb_interfaces/GetJacobian``, J or J̇).  ``mode``,
``representation``, ``twist_links``, ``wrench_joints`` and ``command_joints`` can be
changed at run time; invalid values are refused with a reason.  A bad message is
logged (throttled) and dropped; the node keeps its last good state.
"""
import sys
import time

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import Point, WrenchStamped
from liemb_interfaces.msg import TwistRepresented, TwistRepresentedArray
from liemb_interfaces.srv import GetJacobian
from rcl_interfaces.msg import ParameterType, SetParametersResult
from rclpy.node import Node
from rclpy.qos import (DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy,
                       qos_profile_sensor_data)
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension, String
from trajectory_msgs.msg import JointTrajectoryPoint
from visualization_msgs.msg import Marker, MarkerArray

from .. import resources
from ..kinematics import link_twist
from ..model import URDFError, load_urdf
from .conversions import descriptor
from .engine import FRAMES, MODES, DynamicsEngine, StateError

RELIABLE = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL,
                     history=HistoryPolicy.KEEP_LAST)


class DynamicsNode(Node):
    """Thin ROS adapter over :class:`liemb_ros.ros.engine.DynamicsEngine`."""

    def __init__(self, **kwargs):
        super().__init__('liemb_dynamics', **kwargs)
        S, SA = ParameterType.PARAMETER_STRING, ParameterType.PARAMETER_STRING_ARRAY
        D, B = ParameterType.PARAMETER_DOUBLE, ParameterType.PARAMETER_BOOL
        self.declare_parameter('robot_description', '', descriptor(
            'URDF XML of the robot (empty: use urdf_path, else the robot_description topic)',
            S, read_only=True))
        self.declare_parameter('urdf_path', '', descriptor(
            'URDF file or shipped robot name, used when robot_description is empty', S,
            read_only=True))
        self.declare_parameter('floating_base', False, descriptor(
            'treat the root link as a floating SE(3) base', B, read_only=True))
        self.declare_parameter('mode', 'gravity_compensation', descriptor(
            f"torques to publish: {' | '.join(MODES)}", S))
        self.declare_parameter('representation', 'hybrid', descriptor(
            'twist representation: body | spatial | hybrid | mixed', S))
        self.declare_parameter('twist_links', [''], descriptor(
            'links whose twists are published (empty: the last link)', SA))
        self.declare_parameter('wrench_joints', [''], descriptor(
            'joints whose transmitted wrenches are published', SA))
        self.declare_parameter('command_joints', [''], descriptor(
            'joint order of ~/effort_command (empty: model order)', SA))
        self.declare_parameter('publish_rate', 0.0, descriptor(
            'outputs per second; 0 publishes on every joint_states message', D, 0.0, 5000.0))
        self.declare_parameter('world_frame', 'world', descriptor(
            'frame of world-resolved quantities and markers', S))
        self.declare_parameter('markers', True, descriptor(
            'publish RViz arrows for twists and wrenches', B))
        self.declare_parameter('marker_rate', 30.0, descriptor(
            'marker messages per second at most (RViz needs no more; they cost time)', D,
            0.1, 1000.0))
        self.declare_parameter('marker_scale', 0.2, descriptor(
            'arrow length per unit of velocity (m per m/s, m per rad/s) and per 10 N', D,
            0.0, 100.0))
        self.declare_parameter('diagnostics_period', 1.0, descriptor(
            'seconds between /diagnostics messages', D, 0.05, 60.0))
        self.engine = None
        self._pending_desired = None
        self._rejected = 0
        self._last_cycle = None
        self._last_markers = -1e9
        self._twist_key = self._twist_msg = None
        self._wrench_msgs = {}
        self._rate_window = []
        self.pub_torque = self.create_publisher(JointState, '~/joint_torques', RELIABLE)
        self.pub_command = self.create_publisher(Float64MultiArray, '~/effort_command',
                                                 RELIABLE)
        self.pub_twists = self.create_publisher(TwistRepresentedArray, '~/twists', RELIABLE)
        self.pub_markers = self.create_publisher(MarkerArray, '~/markers', RELIABLE)
        self.pub_diag = self.create_publisher(DiagnosticArray, '/diagnostics', RELIABLE)
        self.pub_wrench = {}
        self.create_subscription(JointState, 'joint_states', self._on_joint_state,
                                 qos_profile_sensor_data)
        self.create_subscription(JointTrajectoryPoint, '~/desired', self._on_desired, RELIABLE)
        self.create_service(GetJacobian, '~/get_jacobian', self._on_get_jacobian)
        self.add_on_set_parameters_callback(self._on_parameters)
        self._timer = None
        self.create_timer(self.get_parameter('diagnostics_period').value, self._diagnostics)
        self._load_robot()

    # -- robot ------------------------------------------------------------------------------
    def _load_robot(self):
        xml = self.get_parameter('robot_description').value
        path = self.get_parameter('urdf_path').value
        if xml:
            self._build(xml, 'robot_description parameter')
        elif path:
            try:
                path = resources.robot_path(path)
            except FileNotFoundError as exc:
                self.get_logger().error(str(exc))
                return
            self._build(path, path)
        else:
            self.get_logger().info('waiting for the robot_description topic')
            self.create_subscription(String, 'robot_description',
                                     lambda m: self._build(m.data, 'robot_description topic'),
                                     LATCHED)

    def _build(self, source, where):
        try:
            model = load_urdf(source, floating_base=self.get_parameter('floating_base').value
                              or None)
            engine = DynamicsEngine(
                model, mode=self.get_parameter('mode').value,
                representation=self.get_parameter('representation').value,
                twist_links=self._names('twist_links') or [model.link_names[-1]],
                wrench_joints=self._names('wrench_joints'),
                command_joints=self._names('command_joints'))
        except (URDFError, ValueError) as exc:
            self.get_logger().error(f'cannot use the robot from the {where}: {exc}')
            return
        warm = engine.warm_up()   # compile now, not in the first cycle
        self.engine = engine
        if self._pending_desired is not None:
            self._apply_desired(self._pending_desired)
            self._pending_desired = None
        self._make_wrench_publishers()
        self._set_rate(self.get_parameter('publish_rate').value)
        self.get_logger().info(f"robot '{model.name}' ({model.nq} joints) from the {where}; "
                               f'mode {engine.mode}, twists in {engine.representation}; '
                               f'kernels ready in {warm:.1f} s')

    def _names(self, param):
        return [n for n in self.get_parameter(param).value if n]

    def _make_wrench_publishers(self):
        for joint in self.engine.wrench_joints:
            if joint not in self.pub_wrench:
                topic = '~/wrench/' + joint.replace('-', '_')
                self.pub_wrench[joint] = self.create_publisher(WrenchStamped, topic, RELIABLE)

    def _set_rate(self, rate):
        if self._timer is not None:
            self.destroy_timer(self._timer)
            self._timer = None
        if rate > 0:
            self._timer = self.create_timer(1.0 / rate, self._publish)

    # -- parameters -------------------------------------------------------------------------
    def _on_parameters(self, params):
        if self.engine is None:
            return SetParametersResult(successful=True)
        e = self.engine
        try:
            for p in params:
                v = p.value
                if p.name == 'mode':
                    e.set_mode(v)
                elif p.name == 'representation':
                    e.set_representation(v)
                elif p.name == 'twist_links':
                    e.set_twist_links([n for n in v if n])
                elif p.name == 'wrench_joints':
                    e.set_wrench_joints([n for n in v if n])
                elif p.name == 'command_joints':
                    e.set_command_joints([n for n in v if n])
                elif p.name == 'publish_rate':
                    self._set_rate(v)
        except ValueError as exc:
            return SetParametersResult(successful=False, reason=str(exc))
        self._make_wrench_publishers()
        return SetParametersResult(successful=True)

    # -- input ------------------------------------------------------------------------------
    def _reject(self, what):
        self._rejected += 1
        if self.engine is not None:
            self.engine.stats.dropped += 1
        self.get_logger().error(f'dropped {what}', throttle_duration_sec=1.0)

    def _on_joint_state(self, msg):
        if self.engine is None:
            return
        try:
            self.engine.update_state(msg.name, msg.position, msg.velocity, msg.header.stamp)
        except StateError as exc:
            self._reject(f'joint_states message: {exc}')
            return
        if self._timer is None:
            self._publish()

    def _on_desired(self, msg):
        if self.engine is None:
            # Kept until the robot is known (robot_description may come later).
            self._pending_desired = list(msg.accelerations)
            return
        self._apply_desired(msg.accelerations)

    def _apply_desired(self, accelerations):
        try:
            self.engine.set_desired_acceleration(accelerations)
        except StateError as exc:
            self._reject(f'~/desired point: {exc}')

    # -- output -----------------------------------------------------------------------------
    def _publish(self):
        e = self.engine
        if e is None or not e.ready:
            if e is not None:
                self.get_logger().warn(f'no state yet for {", ".join(e.missing_joints())}',
                                       throttle_duration_sec=5.0)
            return
        out = e.cycle()
        now = time.monotonic()
        self._rate_window.append(now)
        if len(self._rate_window) > 200:
            del self._rate_window[:-200]
        stamp = e.stamp if e.stamp is not None else self.get_clock().now().to_msg()
        js = JointState()
        js.header.stamp = stamp
        js.name = list(e.model.joint_names)
        js.position = e.q.tolist()
        js.velocity = e.qd[e.model.nv - e.model.nq:].tolist()
        js.effort = out['tau'].tolist()
        self.pub_torque.publish(js)
        cmd = Float64MultiArray()
        cmd.layout.dim = [MultiArrayDimension(label='joints', size=len(e.command_joints),
                                              stride=len(e.command_joints))]
        cmd.data = out['command'].tolist()
        self.pub_command.publish(cmd)
        world = self.get_parameter('world_frame').value
        arr = self._twist_message(world)
        arr.header.stamp = stamp
        for t, V in zip(arr.twists, out['twists']):
            t.header.stamp = stamp
            a, v = t.angular, t.linear
            a.x, a.y, a.z, v.x, v.y, v.z = V.tolist()
        self.pub_twists.publish(arr)
        for joint, W in zip(e.wrench_joints, out['wrenches']):
            msg = self._wrench_msgs.get(joint)
            if msg is None:
                msg = self._wrench_msgs[joint] = WrenchStamped()
                msg.header.frame_id = e.model.body_names[self._body_of(joint)]
            msg.header.stamp = stamp
            m, f = msg.wrench.torque, msg.wrench.force
            m.x, m.y, m.z, f.x, f.y, f.z = W.tolist()
            self.pub_wrench[joint].publish(msg)
        if (self.get_parameter('markers').value
                and now - self._last_markers >= 1.0 / self.get_parameter('marker_rate').value):
            self._last_markers = now
            self.pub_markers.publish(self._markers(out, stamp, world))

    def _twist_message(self, world):
        """Return the twist message for the current links/representation (built once, reused)."""
        e = self.engine
        key = (tuple(e.twist_links), e.representation, world)
        if self._twist_key != key:
            arr = TwistRepresentedArray()
            arr.header.frame_id = world
            arr.links = list(e.twist_links)
            ang_frame, lin_frame, point = FRAMES[e.representation]
            for link in e.twist_links:
                t = TwistRepresented()
                t.header.frame_id = world
                t.representation = e.representation
                t.angular_frame = link if ang_frame == 'link' else world
                t.linear_frame = link if lin_frame == 'link' else world
                t.reference_point = (f'origin of {link}' if point == 'link origin'
                                     else f'origin of {world}')
                arr.twists.append(t)
            self._twist_key, self._twist_msg = key, arr
        return self._twist_msg

    def _body_of(self, joint):
        j = self.engine.model.joint_index(joint)
        return int(np.nonzero(self.engine.model.q_index == j)[0][-1])

    def _markers(self, out, stamp, world):
        e = self.engine
        scale = self.get_parameter('marker_scale').value
        arr = MarkerArray()
        for k, link in enumerate(e.twist_links):
            C = e.link_pose(link)
            V = link_twist(e.model, e.q, e.qd, link, 'hybrid', base_pose=e.base_pose)
            for n, (vec, color) in enumerate(((V[3:], (0.1, 0.4, 1.0)),
                                              (V[:3], (1.0, 0.6, 0.0)))):
                arr.markers.append(_arrow(world, stamp, 'twists', 2 * k + n, C[:3, 3],
                                          C[:3, 3] + scale * vec, color))
        for k, joint in enumerate(e.wrench_joints):
            body = self._body_of(joint)
            C = e.link_pose(e.model.body_names[body]) if (
                e.model.body_names[body] in e.model.link_frames) else np.eye(4)
            f = C[:3, :3] @ out['wrenches'][k][3:]
            arr.markers.append(_arrow(world, stamp, 'wrenches', k, C[:3, 3],
                                      C[:3, 3] + 0.1 * scale * f, (0.9, 0.1, 0.1)))
        return arr

    def _diagnostics(self):
        st = DiagnosticStatus(name='liemb_dynamics: cycle', hardware_id='liemb_ros')
        if self.engine is None:
            st.level = DiagnosticStatus.WARN
            st.message = 'no robot model yet'
        else:
            s = self.engine.stats.summary()
            w = self._rate_window
            rate = (len(w) - 1) / (w[-1] - w[0]) if len(w) > 1 and w[-1] > w[0] else 0.0
            st.level = DiagnosticStatus.OK if self.engine.ready else DiagnosticStatus.WARN
            st.message = 'running' if self.engine.ready else 'waiting for joint states'
            st.values = [KeyValue(key=k, value=v) for k, v in (
                ('rate_hz', f'{rate:.1f}'), ('compute_p50_us', f"{s['p50']:.1f}"),
                ('compute_p99_us', f"{s['p99']:.1f}"), ('compute_max_us', f"{s['max']:.1f}"),
                ('cycles', str(self.engine.stats.count)), ('dropped', str(self._rejected)),
                ('mode', self.engine.mode), ('representation', self.engine.representation))]
        msg = DiagnosticArray(status=[st])
        msg.header.stamp = self.get_clock().now().to_msg()
        self.pub_diag.publish(msg)

    # -- service ------------------------------------------------------------------------------
    def _on_get_jacobian(self, req, resp):
        e = self.engine
        if e is None:
            resp.success = False
            resp.message = 'no robot model loaded yet'
            return resp
        try:
            J, cols = e.jacobian(req.link, req.representation or 'body', req.derivative,
                                 req.joint_names, req.positions, req.velocities)
        except (ValueError, StateError) as exc:
            resp.success = False
            resp.message = str(exc)
            return resp
        world = self.get_parameter('world_frame').value
        ang, lin, point = FRAMES[req.representation or 'body']
        resp.success = True
        resp.message = ''
        resp.rows, resp.cols = J.shape
        resp.data = J.ravel().tolist()
        resp.joint_names = cols
        resp.angular_frame = req.link if ang == 'link' else world
        resp.linear_frame = req.link if lin == 'link' else world
        resp.reference_point = f'origin of {req.link if point == "link origin" else world}'
        return resp


def _arrow(frame, stamp, ns, ident, start, end, color):
    m = Marker()
    m.header.frame_id = frame
    m.header.stamp = stamp
    m.ns = ns
    m.id = ident
    m.type = Marker.ARROW
    m.action = Marker.ADD
    m.points = [Point(x=float(start[0]), y=float(start[1]), z=float(start[2])),
                Point(x=float(end[0]), y=float(end[1]), z=float(end[2]))]
    m.scale.x, m.scale.y, m.scale.z = 0.01, 0.02, 0.03
    m.color.r, m.color.g, m.color.b, m.color.a = color[0], color[1], color[2], 1.0
    m.pose.orientation.w = 1.0
    return m


def main(args=None):
    """Run the dynamics node until Ctrl-C."""
    rclpy.init(args=args if args is not None else sys.argv)
    node = DynamicsNode()
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, rclpy.executors.ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == '__main__':
    main()
