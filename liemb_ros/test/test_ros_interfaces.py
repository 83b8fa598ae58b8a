"""
Generated ROS 2 interfaces: liemb_interfaces and the local tf2_msgs, across processes.

Needs a venv prepared by ``tools/ros/setup_ros.sh VENV`` (skipped otherwise).  Each
cross-process test starts a tiny server (this file run as a script) on a random
``ROS_DOMAIN_ID`` with ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``, so parallel runs and
other ROS graphs on the network do not interfere.
"""
import array
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import ros_importorskip

# lark (pulled in by rosidl at run time) imports the deprecated sre_parse.
pytestmark = [pytest.mark.ros, pytest.mark.filterwarnings('ignore::DeprecationWarning:lark.*')]
rclpy, _, _ = ros_importorskip('rclpy', 'liemb_interfaces.srv', 'tf2_msgs.msg')

from geometry_msgs.msg import TransformStamped, Vector3, Wrench  # noqa: E402
from liemb_interfaces.msg import (JointWrench, JointWrenchArray,  # noqa: E402
                                  TwistRepresented, TwistRepresentedArray)
from liemb_interfaces.srv import GetJacobian  # noqa: E402
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.qos import (DurabilityPolicy, HistoryPolicy, QoSProfile,  # noqa: E402
                       ReliabilityPolicy)
from tf2_msgs.msg import TF2Error, TFMessage  # noqa: E402
from ros_graph import call_service, claim_domain  # noqa: E402

# Official type hashes of tf2_msgs (ros2/geometry2, Jazzy and later): our local build must match
# them, or RViz / tf2_ros on a real ROS install would not talk to our /tf publisher.
TFMESSAGE_HASH = 'RIHS01_e369d0f05a23ae52508854b66f6aa0437f3449d652e8cbf22d5abe85d020f087'
# QoS of tf2_ros TransformBroadcaster / StaticTransformBroadcaster.
TF_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE,
                    durability=DurabilityPolicy.VOLATILE)
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL,
                     history=HistoryPolicy.KEEP_LAST)
# (angular rows in, linear rows in, reference point) per representation (design.md).
FRAMES = {'body': ('link', 'link', 'link'), 'spatial': ('world', 'world', 'world'),
          'hybrid': ('world', 'world', 'link'), 'mixed': ('link', 'world', 'link')}
SERVICE = '/liemb_test/get_jacobian'
TIMEOUT = 10.0


# -- servers (run in a subprocess: python test_ros_interfaces.py jacobian|tf) ---------------------
def _frame(which, link):
    return link if which == 'link' else 'world'


def _on_get_jacobian(req, resp):
    """Answer with a made-up 6 x n matrix whose entries encode (row, column, input)."""
    rep = req.representation or 'body'
    if rep not in FRAMES:
        resp.success, resp.message = False, f'unknown representation {rep!r}'
        return resp
    if req.derivative and not req.velocities:
        resp.success, resp.message = False, 'derivative=true needs velocities'
        return resp
    names = list(req.joint_names) or ['j1', 'j2', 'j3']
    q = np.asarray(req.positions, float) if req.positions else np.zeros(len(names))
    J = np.arange(6)[:, None] * 10.0 + np.arange(len(names))[None, :] + q[None, :]
    if req.derivative:
        J = J * np.asarray(req.velocities, float)[None, :]
    ang, lin, point = FRAMES[rep]
    resp.success, resp.message = True, ''
    resp.rows, resp.cols = J.shape
    resp.data = J.ravel().tolist()
    resp.joint_names = names
    resp.angular_frame = _frame(ang, req.link)
    resp.linear_frame = _frame(lin, req.link)
    resp.reference_point = f'origin of {_frame(point, req.link)}'
    return resp


def _transform(node, parent, child, z, qz=0.0):
    t = TransformStamped()
    t.header.stamp = node.get_clock().now().to_msg()
    t.header.frame_id = parent
    t.child_frame_id = child
    t.transform.translation.z = z
    t.transform.rotation.z = qz
    t.transform.rotation.w = float(np.sqrt(1.0 - qz * qz))
    return t


def serve(kind):
    """Run one test server until SIGINT / SIGTERM."""
    rclpy.init()
    node = Node('liemb_test_' + kind)
    if kind == 'jacobian':
        node.create_service(GetJacobian, SERVICE, _on_get_jacobian)
        arr = TwistRepresentedArray(links=['tool0'])
        arr.header.frame_id = 'world'
        arr.twists = [TwistRepresented(
            header=arr.header, representation='mixed', angular_frame='tool0',
            linear_frame='world', reference_point='origin of tool0',
            angular=Vector3(x=1.0, y=2.0, z=3.0), linear=Vector3(x=4.0, y=5.0, z=6.0))]
        node.create_publisher(TwistRepresentedArray, '/liemb_test/twists', LATCHED).publish(arr)
    else:
        node.create_publisher(TFMessage, '/tf_static', LATCHED).publish(TFMessage(transforms=[
            _transform(node, 'world', 'base_link', 0.5),
            _transform(node, 'link7', 'tool0', 0.107)]))
        pub = node.create_publisher(TFMessage, '/tf', TF_QOS)
        tick = [0]

        def publish():
            tick[0] += 1
            pub.publish(TFMessage(transforms=[
                _transform(node, 'base_link', 'link1', 0.333, np.sin(0.005 * tick[0]))]))
        node.create_timer(0.01, publish)
    print('ready', flush=True)
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


# -- client side ----------------------------------------------------------------------------------
class RosPeer:
    """A server subprocess and an in-process node on a private, localhost-only ROS domain."""

    def __init__(self, kind, tmp_path):
        self.domain = claim_domain()  # 1..101: safe with the default DDS port mapping
        env = dict(os.environ, ROS_DOMAIN_ID=str(self.domain),
                   ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST')
        env.pop('ROS_STATIC_PEERS', None)
        self.log = tmp_path / f'{kind}_server.log'
        self._log_file = open(self.log, 'w')
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), kind],
                                     stdout=self._log_file, stderr=subprocess.STDOUT, env=env)
        self.context = rclpy.Context()
        self.node = self.executor = None
        try:
            rclpy.init(context=self.context, domain_id=self.domain)
            self.node = Node('liemb_test_client', context=self.context)
            self.executor = SingleThreadedExecutor(context=self.context)
            self.executor.add_node(self.node)
        except BaseException:
            self.close()
            raise

    def server_output(self):
        """Return what the server printed so far (for assertion messages)."""
        self._log_file.flush()
        return self.log.read_text()

    def spin_until(self, done, timeout=TIMEOUT):
        """Spin until ``done()`` is true; fail if the server died or time ran out."""
        deadline = time.monotonic() + timeout
        while not done():
            assert self.proc.poll() is None, f'server exited:\n{self.server_output()}'
            assert time.monotonic() < deadline, f'timed out; server said:\n{self.server_output()}'
            self.executor.spin_once(timeout_sec=0.05)

    def close(self):
        """Stop the server (SIGINT, then kill) and shut the client context down."""
        try:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGINT)
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=5)
        finally:
            self._log_file.close()
            if self.executor is not None:
                self.executor.shutdown(timeout_sec=1)
            if self.node is not None:
                self.node.destroy_node()
            self.context.try_shutdown()


@pytest.fixture
def peer(request, tmp_path, monkeypatch):
    """``RosPeer`` for the server kind given by indirect parametrisation."""
    monkeypatch.setenv('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    p = RosPeer(request.param, tmp_path)
    try:
        yield p
    finally:
        p.close()


def test_generated_types():
    """Messages and the service build, with the field types the node relies on."""
    req = GetJacobian.Request(link='tool0', representation='mixed', derivative=True,
                              joint_names=['a', 'b'], positions=[0.1, 0.2],
                              velocities=[1.0, -1.0])
    assert isinstance(req.positions, array.array) and list(req.velocities) == [1.0, -1.0]
    assert set(GetJacobian.Response.get_fields_and_field_types()) == {
        'success', 'message', 'data', 'rows', 'cols', 'joint_names', 'angular_frame',
        'linear_frame', 'reference_point'}
    resp = _on_get_jacobian(req, GetJacobian.Response())
    assert resp.success and (resp.rows, resp.cols) == (6, 2)
    J = np.asarray(resp.data).reshape(resp.rows, resp.cols)  # row-major
    assert J[3, 1] == pytest.approx((30.0 + 1.0 + 0.2) * -1.0)
    assert (resp.angular_frame, resp.linear_frame, resp.reference_point) == (
        'tool0', 'world', 'origin of tool0')
    w = JointWrenchArray(wrenches=[JointWrench(joint='j1', frame='link1', wrench=Wrench())])
    assert w.wrenches[0].wrench.force.x == 0.0
    t = TwistRepresented(representation='body', angular=Vector3(z=1.0))
    assert t.angular.z == 1.0 and t.linear.x == 0.0
    assert TF2Error.NO_ERROR == 0 and TF2Error.TRANSFORM_ERROR == 6


@pytest.mark.parametrize('peer', ['jacobian'], indirect=True)
def test_get_jacobian_round_trip(peer):
    """Call GetJacobian and receive a latched TwistRepresentedArray across processes."""
    client = peer.node.create_client(GetJacobian, SERVICE)

    def call(**fields):
        return call_service(peer.spin_until, client, GetJacobian.Request(**fields))

    for rep, expected in (('body', ('tool0', 'tool0', 'origin of tool0')),
                          ('spatial', ('world', 'world', 'origin of world')),
                          ('hybrid', ('world', 'world', 'origin of tool0')),
                          ('mixed', ('tool0', 'world', 'origin of tool0'))):
        r = call(link='tool0', representation=rep, joint_names=['a', 'b', 'c', 'd'],
                 positions=[0.0, 0.5, 0.0, 0.0])
        assert r.success, r.message
        assert (r.rows, r.cols, list(r.joint_names)) == (6, 4, ['a', 'b', 'c', 'd'])
        assert (r.angular_frame, r.linear_frame, r.reference_point) == expected
        J = np.asarray(r.data).reshape(r.rows, r.cols)
        assert J[5, 1] == 51.5 and J[0, 3] == 3.0
    r = call(link='tool0', representation='hybrid', derivative=True)
    assert not r.success and 'velocities' in r.message and len(r.data) == 0
    r = call(link='tool0', derivative=True, positions=[1.0, 2.0, 3.0], velocities=[2.0, 0.0, 1.0])
    assert r.success and r.data[3 * 3 + 0] == (30.0 + 1.0) * 2.0

    got = []
    peer.node.create_subscription(TwistRepresentedArray, '/liemb_test/twists', got.append,
                                  LATCHED)
    peer.spin_until(lambda: got)
    tw = got[0].twists[0]
    assert list(got[0].links) == ['tool0'] and tw.representation == 'mixed'
    assert (tw.angular_frame, tw.linear_frame) == ('tool0', 'world')
    assert (tw.angular.z, tw.linear.x) == (3.0, 4.0)


@pytest.mark.parametrize('peer', ['tf'], indirect=True)
def test_tf_round_trip(peer):
    """/tf_static (transient local, late joiner) and /tf with the local tf2_msgs."""
    # Join late: the static transforms were published before this subscriber existed.
    peer.spin_until(lambda: 'ready' in peer.server_output())
    time.sleep(0.3)
    static, dynamic = [], []
    peer.node.create_subscription(TFMessage, '/tf_static', static.append, LATCHED)
    peer.node.create_subscription(TFMessage, '/tf', dynamic.append, TF_QOS)
    peer.spin_until(lambda: static and len(dynamic) >= 3)
    assert [(t.header.frame_id, t.child_frame_id, t.transform.translation.z)
            for t in static[0].transforms] == [('world', 'base_link', 0.5),
                                               ('link7', 'tool0', 0.107)]
    t = dynamic[-1].transforms[0]
    assert (t.header.frame_id, t.child_frame_id) == ('base_link', 'link1')
    assert t.transform.rotation.z ** 2 + t.transform.rotation.w ** 2 == pytest.approx(1.0)
    for topic in ('/tf', '/tf_static'):
        types = {(i.topic_type, str(i.topic_type_hash))
                 for i in peer.node.get_publishers_info_by_topic(topic)}
        assert types == {('tf2_msgs/msg/TFMessage', TFMESSAGE_HASH)}, topic


if __name__ == '__main__':
    serve(sys.argv[1])
