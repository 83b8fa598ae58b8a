"""
The simulation node's output: joint states, transforms, odometry, contacts, diagnostics.

:class:`SimulationOutputs`, a part that :class:`liemb_ros.ros.simulation_node.SimulationNode`
owns, holds the node's publishers and publishes a state its stepping
(:class:`~liemb_ros.ros.simulation_stepping.SimulationStepping`) checked: ``joint_states``
(with the applied effort), ``/tf`` (and once per robot ``/tf_static``), ``~/odom`` for a
floating base, ``/clock`` in simulation time, and with contact ``~/contacts`` and
``~/contact_markers``; on the node's diagnostics timer ``/diagnostics``, which count the
messages the node dropped (:class:`Dropped`).
"""
import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import Point, TransformStamped, WrenchStamped
from nav_msgs.msg import Odometry
from rclpy.duration import Duration
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage
from visualization_msgs.msg import Marker, MarkerArray

from ..core.kinematics import forward_kinematics
from .common import LATCHED
from .conversions import quaternion_xyzw, shown, to_time

RELIABLE = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
TF_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)


class Dropped:
    """The messages (and callback errors) a simulation node dropped: how many, the last."""

    def __init__(self):
        self.count = 0
        self.last = None

    def add(self, what):
        """Count a dropped message; ``what``: why (quoted in ``/diagnostics``)."""
        self.count += 1
        self.last = what


class SimulationOutputs:
    """
    The outputs of a simulation node: its publishers and the messages of a state.

    ``node``: the node whose topics (``joint_states``, ``/tf``, ``/tf_static``,
    ``robot_description``, ``/diagnostics``, ``/clock``, ``~/odom``, ``~/contacts``,
    ``~/contact_markers``), clock and parameters (``publish_tf``, ``publish_link_tf``,
    ``world_frame``, ``contact_marker_scale``, ...) these are; ``p(name)``: a parameter's
    value; ``sim_time``: stamps are simulation time, published on ``/clock``.
    :meth:`serve` gives it the simulator of a new robot.
    """

    def __init__(self, node, p, sim_time):
        self.node, self.p = node, p
        self.sim = self.model = None
        self.pub_js = node.create_publisher(JointState, 'joint_states', RELIABLE)
        self.pub_tf = node.create_publisher(TFMessage, '/tf', TF_QOS)
        self.pub_tf_static = node.create_publisher(TFMessage, '/tf_static', LATCHED)
        self.pub_description = node.create_publisher(String, 'robot_description', LATCHED)
        self.pub_diag = node.create_publisher(DiagnosticArray, '/diagnostics', RELIABLE)
        self.pub_clock = (node.create_publisher(Clock, '/clock', RELIABLE)
                          if sim_time else None)
        self.pub_odom = None
        self.pub_contacts = self.pub_contact_markers = None
        if p('contact'):
            self.pub_contacts = node.create_publisher(WrenchStamped, '~/contacts', RELIABLE)
            self.pub_contact_markers = node.create_publisher(MarkerArray, '~/contact_markers',
                                                             RELIABLE)

    def serve(self, sim, xml=None):
        """
        Publish the states of ``sim`` (a new robot's) from now on; its fixed transforms now.

        ``xml``: the robot's URDF, republished on the latched ``robot_description`` (None:
        it came from that topic).
        """
        self.sim, self.model = sim, sim.model
        if xml is not None:
            self.pub_description.publish(String(data=xml))
        if self.model.floating and self.pub_odom is None:
            self.pub_odom = self.node.create_publisher(Odometry, '~/odom', RELIABLE)
        if self.p('publish_tf'):
            self.pub_tf_static.publish(
                TFMessage(transforms=self._transforms(self._stamp(), moving=False)))

    def _stamp(self, at=None):
        """
        Return the stamp of the present state: simulation time with ``/clock``, else ROS time.

        ``at`` (steady clock): the instant the state describes (a tick integrates up to its
        start), stamped as such even when the publish comes later (a starved machine).
        """
        if self.pub_clock is not None:
            return to_time(self.sim.t)
        now = self.node.get_clock().now()
        if at is None:
            return now.to_msg()
        late = max(time.monotonic() - at, 0.0)
        return (now - Duration(nanoseconds=int(late * 1e9))).to_msg()

    def publish(self, effort, at=None):
        """
        Publish the present state with the applied ``effort`` (nq,), already checked finite.

        ``at`` (steady clock): the instant the state describes (:meth:`_stamp`).
        """
        sim, model = self.sim, self.model
        stamp = self._stamp(at)
        if self.pub_clock is not None:
            self.pub_clock.publish(Clock(clock=stamp))
        js = JointState()
        js.header.stamp = stamp
        js.name = list(model.joint_names)
        js.position = sim.q.tolist()
        js.velocity = sim.qd[model.nv - model.nq:].tolist()
        js.effort = effort.tolist()
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

    def status(self, stepping, dropped):
        """
        Return ``(level, message, values)`` of ``/diagnostics`` for a running simulation.

        ``stepping``: the node's :class:`~liemb_ros.ros.simulation_stepping.SimulationStepping`
        (whether it stopped, is paused or waits, its drive, wrenches, lock-step and pace);
        ``dropped``: the node's :class:`Dropped`.
        """
        sim, lock, drive = self.sim, stepping.lock, stepping.drive
        d = sim.diagnostics()
        w = stepping.rtf_window
        wall = sum(x[2] for x in w)
        rtf = sum(x[1] for x in w) / wall if wall > 0 else 0.0
        if stepping.error is not None:
            level, message = DiagnosticStatus.ERROR, f'stopped: {stepping.error}'
        elif stepping.paused:
            level, message = DiagnosticStatus.OK, 'paused'
        elif stepping.waiting_for_command or (lock is not None and not lock['ever']):
            level, message = DiagnosticStatus.OK, 'waiting for the first command'
        else:
            level, message = DiagnosticStatus.OK, 'running'
        drive = 'effort' if drive is None else (
            f"{drive['queue'][-1][1]} (computed torque, {self.p('drive_frequency'):g} Hz)")
        ignored = stepping.ignored
        values = [('sim_time', f"{d['t']:.4f}"), ('real_time_factor', f'{rtf:.3f}'),
                  ('steps', str(d['steps'])), ('energy', f"{d['energy']:.6g}"),
                  ('energy_balance_error', f"{d['energy_balance_error']:.3e}"),
                  ('contact_work', f"{d['contact_work']:.3e}"),
                  ('integrator', self.p('integrator')), ('dt', str(self.p('dt'))),
                  ('coordinates', self.p('coordinates')), ('drive', drive),
                  ('limit_energy', f"{d['limit_energy']:.3e}"),
                  ('joints_in_limit', ', '.join(
                      n for n, x in zip(self.model.joint_names, d['in_limit']) if x)
                   or 'none'),
                  ('external_wrenches', ', '.join(stepping.wrenches) or 'none'),
                  ('lockstep', 'off' if lock is None else 'on'),
                  ('lockstep_missed', '0' if lock is None else str(lock['missed'])),
                  ('dropped', str(dropped.count)),
                  ('last_dropped', dropped.last or 'none'),
                  ('ignored_joints', shown(', '.join(ignored)) if ignored else 'none')]
        if sim.contact is not None:
            contacts = sim.contacts()
            values += [('contacts', str(len(contacts))),
                       ('links_in_contact', ', '.join(sorted({c.link for c in contacts}))
                        or 'none'),
                       ('contact_energy', f"{d['contact_energy']:.3e}")]
        if 'constraint_violation' in d:
            values.append(('max_constraint_violation',
                           f"{float(np.max(d['constraint_violation'], initial=0.0)):.3e}"))
        return level, message, values

    def publish_diagnostics(self, level, message, values=()):
        """Publish ``/diagnostics``: one status, ``values`` its ``(key, value)`` pairs."""
        st = DiagnosticStatus(name='liemb_simulation', hardware_id='liemb_ros', level=level,
                              message=message,
                              values=[KeyValue(key=k, value=v) for k, v in values])
        msg = DiagnosticArray(status=[st])
        msg.header.stamp = self.node.get_clock().now().to_msg()
        self.pub_diag.publish(msg)


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
