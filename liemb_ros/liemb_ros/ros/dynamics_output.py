"""
What the dynamics node publishes from each cycle of its engine.

:class:`DynamicsOutputs`, a part that :class:`liemb_ros.ros.dynamics_node.DynamicsNode`
owns, publishes what one cycle of the engine computed: the torques and the effort command
with every state (checked finite before anything goes out), ``~/controller_state`` at its
rate of the states' time, the twists, wrenches and markers at ``secondary_rate`` (or with
every torque), each only to its listeners.  The node's ``/diagnostics`` are
:mod:`liemb_ros.ros.dynamics_diagnostics`.
"""
import time

import numpy as np
from builtin_interfaces.msg import Duration, Time
from control_msgs.msg import JointTrajectoryControllerState
from geometry_msgs.msg import Point, WrenchStamped
from liemb_interfaces.msg import TwistRepresented, TwistRepresentedArray
from rclpy.event_handler import PublisherEventCallbacks
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension
from visualization_msgs.msg import Marker, MarkerArray

from ..sim.passive import all_finite
from ..core.kinematics import link_twist
from .common import ERROR_CHARS, STEADY, topic_token
from .conversions import shown
from ..control.engine import FRAMES, OutputError
from .wire import Template

RELIABLE = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)


class DynamicsOutputs:
    """
    The outputs of a dynamics node: its publishers, their messages and when they go out.

    ``node``: the node whose topics (``~/controller_state``, ``~/twists``, ``~/markers``,
    ``~/wrench/<joint>``), parameters (``world_frame``, ``markers``, ``marker_rate``,
    ``marker_scale``), timers and log these are; ``io_node``: the node of the 1 kHz path,
    which publishes ``~/joint_torques`` and ``~/effort_command`` (names resolved by
    ``node``); ``counters``: where refused outputs are counted
    (:class:`~liemb_ros.ros.dynamics_diagnostics.Counters`); ``guard(callback, where)``:
    the node's error handling, around the ``secondary_rate`` timer; ``state_rate``:
    ``controller_state_rate``.  :meth:`serve` gives it the engine of a new robot.
    """

    def __init__(self, node, io_node, counters, guard, state_rate):
        self.node, self.counters, self.guard = node, counters, guard
        self.engine = None
        # no QoS event handlers on the io node but the lost-message count: each is one more
        # entity to wait on (an incompatible subscriber is still told so on its side)
        lean = PublisherEventCallbacks(use_default_callbacks=False)
        self.pub_torque = io_node.create_publisher(
            JointState, node.resolve_topic_name('~/joint_torques'), RELIABLE,
            event_callbacks=lean)
        self.pub_command = io_node.create_publisher(
            Float64MultiArray, node.resolve_topic_name('~/effort_command'), RELIABLE,
            event_callbacks=lean)
        self.pub_state = node.create_publisher(JointTrajectoryControllerState,
                                               '~/controller_state', RELIABLE)
        self.pub_twists = node.create_publisher(TwistRepresentedArray, '~/twists', RELIABLE)
        self.pub_markers = node.create_publisher(MarkerArray, '~/markers', RELIABLE)
        self.pub_wrench = {}
        self._secondary_due = None   # stamp of a state whose twists and wrenches are due
        self._secondary_timer = None
        self._last_markers = -1e9
        self._state_due = -1e9           # state time the next ~/controller_state is due
        self.set_state_rate(state_rate)
        self._state_msg = None           # the ~/controller_state message (reused)
        self._twist_key = self._twist_cache = None
        self._marker_key = self._marker_template = self._marker_points = None   # arrows
        self._wrench_templates = {}
        self._template_key = self._template = None   # wire.Template of the outputs

    def serve(self, engine):
        """Publish the outputs of ``engine`` (a new robot's) from now on."""
        self.engine = engine
        self._twist_key = None
        self._wrench_templates = {}

    def set_state_rate(self, rate):
        """Publish ``~/controller_state`` at most ``rate`` times per second (0: never)."""
        self._state_period = 1.0 / rate if rate > 0 else 0.0   # 0: none

    def inline(self):
        """Return whether the twists and wrenches go out with every torque (and are wanted)."""
        # secondary_rate 0: with every torque (when anyone listens)
        return self._secondary_timer is None and self._secondary_wanted()

    def publish(self, out, stamp, t_state):
        """
        Publish the torques, the effort command and the controller state of a cycle.

        ``out``: what the engine's cycle computed; ``stamp``: ``(sec, nanosec)`` of the
        state; ``t_state``: its time in seconds.  Returns whether ``~/controller_state`` was
        due (the action's feedback goes with it).
        """
        e = self.engine
        # the two messages of every cycle from serialised templates (wire.py: 45 µs less)
        torque, command = self._templates()
        self.pub_torque.publish(torque.fill(stamp[0], stamp[1], e.q,
                                            e.qd[e.model.nv - e.model.nq:], out['tau']))
        self.pub_command.publish(command.fill(0, 0, out['command']))
        period = self._state_period
        # paced by the states' time (simulated time on /clock), as a controller manager
        # paces a JointTrajectoryController's state
        back = t_state < self._state_due - period     # time went back (a reset)
        due = (period and (t_state >= self._state_due or back)
               and e.mode == 'computed_torque' and e.reference is not None)
        if due:   # on a grid of 1/rate; after a gap (or time going back: a reset), anew
            self._state_due = (self._state_due if 0.0 <= t_state - self._state_due < period
                               else t_state) + period
            if self.pub_state.get_subscription_count():   # built only when listened to
                self._publish_controller_state(out, stamp)
        return due

    def secondary(self, out, stamp, now, inline):
        """Publish the twists and wrenches of a cycle (``inline``), else mark them due."""
        if inline:
            self._publish_secondary(out, stamp, now)
        else:
            self._secondary_due = stamp

    def make_wrench_publishers(self):
        """Create a ``~/wrench/<joint>`` publisher for each new joint of ``wrench_joints``."""
        node = self.node
        used = {}
        for joint in self.engine.wrench_joints:
            if joint in self.pub_wrench:
                continue
            token = topic_token(joint)
            taken = {self.pub_wrench[j].topic_name for j in self.pub_wrench}
            topic, k = '~/wrench/' + token, 1
            while node.resolve_topic_name(topic) in taken or topic in used:
                k += 1
                topic = f'~/wrench/{token}_{k}'
            used[topic] = joint
            self.pub_wrench[joint] = node.create_publisher(WrenchStamped, topic, RELIABLE)

    def _publish_controller_state(self, out, stamp):
        """``~/controller_state`` of this cycle, as a JointTrajectoryController's."""
        e = self.engine
        m = e.model
        msg = self._state_msg
        if msg is None or len(msg.joint_names) != m.nq:
            msg = self._state_msg = JointTrajectoryControllerState()
            msg.joint_names = list(m.joint_names)
            msg.speed_scaling_factor = 1.0
        q_d, qd_d, qdd_d = e.reference
        q, qd = e.q, e.qd[m.nv - m.nq:]
        if not (all_finite(q_d) and all_finite(qd_d) and all_finite(qdd_d)):
            self.counters.refused += 1   # (a finite trajectory samples finite: never seen)
            return
        effort = out['tau'].copy()
        effort[e.command_index] = out['command']
        msg.header.stamp = Time(sec=stamp[0], nanosec=stamp[1])
        ref, fb, err = msg.reference, msg.feedback, msg.error
        ref.positions, ref.velocities, ref.accelerations = (
            q_d.tolist(), qd_d.tolist(), qdd_d.tolist())
        ns = round(max(e.now - e.trajectory.start, 0.0) * 1e9)
        ref.time_from_start = Duration(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)
        fb.positions, fb.velocities = q.tolist(), qd.tolist()
        err.positions, err.velocities = (q_d - q).tolist(), (qd_d - qd).tolist()
        msg.output.effort = effort.tolist()
        self.pub_state.publish(msg)

    def _templates(self):
        """Return the serialised templates of ``~/joint_torques`` and ``~/effort_command``."""
        e = self.engine
        key = (e.model.joint_names, tuple(e.command_joints))
        if self._template_key != key:
            n, k = e.model.nq, len(e.command_joints)
            torque = JointState(name=list(e.model.joint_names), position=[0.0] * n,
                                velocity=[0.0] * n, effort=[0.0] * n)
            command = Float64MultiArray(data=[0.0] * k)
            command.layout.dim = [MultiArrayDimension(label='joints', size=k, stride=k)]
            self._template = (Template(torque, ('position', 'velocity', 'effort')),
                              Template(command, ('data',), stamp=False))
            self._template_key = key
        return self._template

    def set_secondary_rate(self, rate):
        """Publish the twists and wrenches at most ``rate`` times per second (0: inline)."""
        if self._secondary_timer is not None:
            self.node.destroy_timer(self._secondary_timer)
            self._secondary_timer = None
        if rate > 0:
            self._secondary_timer = self.node.create_timer(
                1.0 / rate, self.guard(self._on_secondary, 'secondary_rate timer'),
                clock=STEADY)

    def _on_secondary(self):
        """Twists and wrenches of the latest published state, at most secondary_rate."""
        if self._secondary_due is None or self.engine is None:
            return
        stamp, self._secondary_due = self._secondary_due, None
        if not self._secondary_wanted():
            return
        try:
            out = self.engine.secondary_outputs()
        except OutputError as exc:
            self.counters.refused += 1
            self.node.get_logger().error(str(exc), throttle_duration_sec=1.0)
            return
        self._publish_secondary(out, stamp, time.monotonic())

    def _secondary_wanted(self):
        """
        Whether anyone listens to the twists, the wrenches or the markers.

        Without a subscriber they are neither computed nor sent: the work (tens of µs, and
        a write per topic) would keep joint states waiting for no one.  A subscriber gets
        them from its match on (as before: what is published before the match reaches no
        one).
        """
        return bool(self.pub_twists.get_subscription_count()
                    or self.pub_markers.get_subscription_count()
                    or any(p.get_subscription_count() for p in self.pub_wrench.values()))

    def _publish_secondary(self, out, stamp, now):
        """Twists, wrenches and (at marker_rate) markers, each to its listeners only."""
        e = self.engine
        world = self.node.get_parameter('world_frame').value
        sec, nanosec = stamp
        # all from serialised templates (wire.py): the Panda's 13 twists built field by
        # field and serialised by rclpy took 56 µs in process, refilled 1.8 µs
        if self.pub_twists.get_subscription_count():
            self.pub_twists.publish(self._twist_template(world).fill(sec, nanosec,
                                                                     out['twists']))
        for joint, W in zip(e.wrench_joints, out['wrenches']):
            if not self.pub_wrench[joint].get_subscription_count():
                continue
            template = self._wrench_templates.get(joint)
            if template is None:
                msg = WrenchStamped()
                msg.header.frame_id = e.model.body_names[self._body_of(joint)]
                template = self._wrench_templates[joint] = Template(
                    msg, [[f'wrench.{v}.{c}' for v in ('torque', 'force') for c in 'xyz']])
            self.pub_wrench[joint].publish(template.fill(sec, nanosec, W))
        param = self.node.get_parameter
        if (param('markers').value and self.pub_markers.get_subscription_count()
                and now - self._last_markers >= 1.0 / param('marker_rate').value):
            self._last_markers = now
            markers = self._markers(out, sec, nanosec, world)
            if markers is None:   # an arrow beyond float range (finite twists x scale)
                self.counters.refused += 1
            else:
                self.pub_markers.publish(markers)

    def _twist_template(self, world):
        """Return the twist array's template for the links and representation (built once)."""
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
            n = len(e.twist_links)
            self._twist_cache = Template(
                arr, [[f'twists[{k}].{v}.{c}' for k in range(n) for v in ('angular', 'linear')
                       for c in 'xyz']],
                stamp=['header.stamp'] + [f'twists[{k}].header.stamp' for k in range(n)])
            self._twist_key = key
        return self._twist_cache

    def _body_of(self, joint):
        j = self.engine.model.joint_index(joint)
        return int(np.nonzero(self.engine.model.q_index == j)[0][-1])

    def _markers(self, out, sec, nanosec, world):
        """
        Return the twist and wrench arrows: a MarkerArray's bytes, from a template.

        The arrows are built once per link set (a Marker costs ~80 µs to construct) and
        serialised once; each call writes their points and stamps into the template (rclpy
        took 0.5 ms to serialise the Panda's 28 arrows, up to 2.5 ms in a loaded node).
        """
        e = self.engine
        scale = self.node.get_parameter('marker_scale').value
        key = (tuple(e.twist_links), tuple(e.wrench_joints), world, id(e.model))
        if self._marker_key != key:
            arr = MarkerArray()
            for k in range(len(e.twist_links)):
                for n, color in enumerate(((0.1, 0.4, 1.0), (1.0, 0.6, 0.0))):
                    arr.markers.append(_arrow(world, 'twists', 2 * k + n, color))
            for k in range(len(e.wrench_joints)):
                arr.markers.append(_arrow(world, 'wrenches', k, (0.9, 0.1, 0.1)))
            n = len(arr.markers)
            self._marker_template = Template(
                arr, [[f'markers[{i}].points[{p}].{c}' for i in range(n) for p in (0, 1)
                       for c in 'xyz']],
                stamp=[f'markers[{i}].header.stamp' for i in range(n)])
            self._marker_points = np.empty((n, 2, 3))   # (arrow, start/end, xyz)
            self._marker_key = key
        P = self._marker_points
        i = 0
        for link in e.twist_links:   # linear (blue) then angular (orange), hybrid
            C = e.link_pose(link)
            V = link_twist(e.model, e.q, e.qd, link, 'hybrid', base_pose=e.base_pose)
            for vec in (V[3:], V[:3]):
                P[i, 0] = C[:3, 3]
                P[i, 1] = C[:3, 3] + scale * vec
                i += 1
        for k, joint in enumerate(e.wrench_joints):   # the force, at the child body
            body = self._body_of(joint)
            C = e.link_pose(e.model.body_names[body]) if (
                e.model.body_names[body] in e.model.link_frames) else np.eye(4)
            P[i, 0] = C[:3, 3]
            P[i, 1] = C[:3, 3] + 0.1 * scale * (C[:3, :3] @ out['wrenches'][k][3:])
            i += 1
        return self._marker_template.fill(sec, nanosec, P) if all_finite(P.reshape(-1)) else None


def bounded(text, limit=ERROR_CHARS):
    """Return ``text`` for a log line or ``/diagnostics``: as it is, or quoted and cut."""
    return text if len(text) <= limit else shown(text, limit)


def _arrow(frame, ns, ident, color):
    m = Marker()
    m.header.frame_id = frame
    m.ns = ns
    m.id = ident
    m.type = Marker.ARROW
    m.action = Marker.ADD
    m.points = [Point(), Point()]
    m.scale.x, m.scale.y, m.scale.z = 0.01, 0.02, 0.03
    m.color.r, m.color.g, m.color.b, m.color.a = color[0], color[1], color[2], 1.0
    m.pose.orientation.w = 1.0
    return m
