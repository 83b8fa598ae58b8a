"""
``liemb view`` fed from ROS topics: the RViz stand-in for a PyPI install.

A node ``liemb_view`` takes the robot from a file or shipped name (``liemb view ROBOT``) or
from the ``robot_description`` topic (transient local, as robot_state_publisher and the
simulation node publish it; a new description rebuilds the scene), moves it with
``joint_states`` (merged by name; unknown joints ignored, NaN messages dropped), places a
floating base (``--floating-base`` or a URDF floating joint) where ``/tf`` puts its root link,
and draws the ARROW (two points) and SPHERE markers of ``visualization_msgs/MarkerArray``
topics: the dynamics node's ``~/markers`` (twists, wrenches) and the simulation node's
``~/contact_markers`` (contact forces and points) by default, ``--markers TOPIC`` for others.
Until joint states arrive the page's joint sliders move the robot, as
joint_state_publisher_gui would.

Mesh files are read as :mod:`liemb_ros.view.visuals` allows (their package's folder, the
URDF's folder, ``--package-dir``, installed packages, ``--allow-path``; size-checked) in the
view's own thread, so the callback that takes a description returns at once and
joint states keep moving the robot while they load.  A description from the topic has no
URDF folder: its relative mesh paths are looked up in the ``--package-dir`` folders only,
and its URIs are quoted in the log with :func:`~.conversions.shown`.
"""
import math
import os
import sys
import time

import numpy as np

from ..view import RobotView, ViewError

RATE = 30.0   # scene updates per second at most
MARKERS = ('/liemb_dynamics/markers', '/liemb_simulation/contact_markers')


class _Viewer:
    """The node's state: the robot, the view, the last joint state and the markers."""

    def __init__(self, node, args, log):
        self.node, self.args, self.log = node, args, log
        self.view = None
        self.model = None
        self.text = None
        self.dirty = False
        self.driven = False
        self.markers = {}     # (topic, ns, id) -> ('arrow' | 'sphere', points, colour, scale)
        self.drawn = set()    # (kind, name) drawn in the scene

    def set_robot(self, xml, where, base_dir=None):
        from ..core.model import URDFError, load_urdf_string
        from .conversions import shown
        if xml == self.text:
            return
        self.text = xml
        try:
            model = load_urdf_string(xml, source=where,
                                     floating_base=self.args.floating_base or None)
        except URDFError as exc:
            self.log(f'liemb view: cannot use the robot from {where}: {shown(str(exc), 400)}; '
                     'waiting for another description')
            return
        if self.view is not None:
            self.view.close()
        self.model = model
        self.view = RobotView(model, xml, host=self.args.host, port=self.args.port,
                              base_dir=base_dir,
                              package_dirs=[os.path.abspath(d) for d in self.args.package_dir],
                              allow_paths=[os.path.abspath(d) for d in self.args.allow_path],
                              log=self.log, quote=shown)
        self.view.add_sliders()
        self.q, self.qd = model.neutral(), np.zeros(model.nv)
        self.base_pose = None
        self.index = {n: i for i, n in enumerate(model.joint_names)}
        # a name from the topic quoted (it may be megabytes); a file's as it is
        self.view.announce(f'{model.name if base_dir else shown(model.name)} from {where}')

    def on_joint_state(self, msg):
        if self.model is None or not msg.name:
            return
        pos, vel = list(msg.position), list(msg.velocity)
        if len(pos) != len(msg.name) or (vel and len(vel) != len(msg.name)):
            return
        if not all(map(math.isfinite, pos + vel)):
            return
        off = self.model.nv - self.model.nq
        for k, name in enumerate(msg.name):
            j = self.index.get(name)
            if j is not None:
                self.q[j] = pos[k]
                if vel:
                    self.qd[off + j] = vel[k]
        self.driven = self.dirty = True

    def on_tf(self, msg):
        from .conversions import pose_matrix
        if self.model is None or not self.model.floating:
            return
        for t in msg.transforms:
            if t.child_frame_id == self.model.root_link:
                from geometry_msgs.msg import Point, Pose
                p = t.transform.translation
                pose = Pose(position=Point(x=p.x, y=p.y, z=p.z),
                            orientation=t.transform.rotation)
                try:
                    self.base_pose = pose_matrix(pose)
                except ValueError:   # no rotation: dropped, as other bad input
                    continue
                self.dirty = True

    def on_markers(self, topic, msg):
        from visualization_msgs.msg import Marker
        for m in msg.markers:
            if m.action == Marker.DELETEALL:
                self.markers = {k: v for k, v in self.markers.items() if k[0] != topic}
                continue
            key = (topic, m.ns, m.id)
            if m.action == Marker.DELETE:
                self.markers.pop(key, None)
            elif m.type == Marker.ARROW and len(m.points) == 2:
                self.markers[key] = ('arrow', [[p.x, p.y, p.z] for p in m.points],
                                     [m.color.r, m.color.g, m.color.b],
                                     (m.scale.x, m.scale.y, m.scale.z))
            elif m.type == Marker.SPHERE:
                p = m.pose.position
                self.markers[key] = ('sphere', [p.x, p.y, p.z],
                                     [m.color.r, m.color.g, m.color.b], m.scale.x)
        self.dirty = True

    def refresh(self):
        if self.view is None or not self.dirty:
            return
        self.dirty = False
        if self.driven or self.base_pose is not None:
            self.view.update(self.q, self.qd, base_pose=self.base_pose)
        if self.driven:
            self.view.set_status('driven by joint_states', key='source')
        groups = {}
        for (topic, ns, _), (kind, *item) in sorted(self.markers.items()):
            groups.setdefault((kind, f'{topic.strip("/")}/{ns}'), []).append(item)
        for kind, name in self.drawn - set(groups):
            (self.view.set_arrows if kind == 'arrow' else self.view.set_points)(name, [], [])
        for (kind, name), items in groups.items():
            if kind == 'arrow':
                # RViz's ARROW with points: scale x shaft diameter, y head diameter, z head
                # length
                d, h, length = items[0][2]
                self.view.set_arrows(name, [p for p, _, _ in items], [c for _, c, _ in items],
                                     shaft_radius=d / 2 or 0.004, head_radius=h / 2 or 0.01,
                                     head_length=length or 0.02)
            else:
                self.view.set_points(name, [p for p, _, _ in items], [c for _, c, _ in items],
                                     size=items[0][2] or 0.01)
        self.drawn = set(groups)


def run_view(args):
    """Run ``liemb view`` on ROS topics until Ctrl-C or ``args.duration``; return the code."""
    try:
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import JointState
        from std_msgs.msg import String
        from tf2_msgs.msg import TFMessage
        from visualization_msgs.msg import MarkerArray
    except ImportError as exc:
        print(f'liemb view: ROS 2 is not installed in this Python ({exc}); use --simulate or '
              '--sliders, or run ./dev.sh setup', file=sys.stderr)
        return 2

    def log(line):
        print(line, file=sys.stderr, flush=True)

    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node('liemb_view', context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    viewer = _Viewer(node, args, log)
    code = 0
    try:
        if args.robot:
            from ..core import resources
            try:
                xml, path = resources.read_robot_description(args.robot, args.xacro_args)
            except (OSError, ValueError) as exc:
                log(f'liemb view: {exc}')
                return 2
            viewer.set_robot(xml, path, os.path.dirname(os.path.abspath(path)))
            if viewer.view is None:
                return 2
        else:
            latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                                 durability=DurabilityPolicy.TRANSIENT_LOCAL)
            node.create_subscription(String, 'robot_description',
                                     lambda m: viewer.set_robot(m.data, 'robot_description'),
                                     latched)
            topic = node.resolve_topic_name('robot_description')
            log(f'liemb view: waiting for the robot on {topic}')
        qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        node.create_subscription(JointState, 'joint_states', viewer.on_joint_state, qos)
        for topic in args.markers or MARKERS:
            node.create_subscription(MarkerArray, topic,
                                     lambda msg, t=topic: viewer.on_markers(t, msg), qos)
        # best effort matches every publisher of frames (reliable or not)
        node.create_subscription(TFMessage, '/tf', viewer.on_tf, QoSProfile(
            depth=10, reliability=ReliabilityPolicy.BEST_EFFORT))
        end = math.inf if args.duration is None else time.monotonic() + args.duration
        last = 0.0
        while time.monotonic() < end:
            executor.spin_once(timeout_sec=0.02)
            now = time.monotonic()
            if now - last >= 1.0 / RATE:
                last = now
                viewer.refresh()
    except ViewError as exc:
        log(str(exc))
        code = 2
    except KeyboardInterrupt:
        pass
    finally:
        if viewer.view is not None:
            viewer.view.close()
        executor.shutdown(timeout_sec=1)
        node.destroy_node()
        context.try_shutdown()
    return code
