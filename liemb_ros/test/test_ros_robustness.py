"""
What real systems send, to the node processes: nothing may kill them, everything is reported.

Tried as a user would (issue "a user's own robot"): the dynamics node started by
``liemb launch dynamics`` with no robot, the description only on the ``robot_description``
topic (first garbage that names a file, then the UR5),
``joint_states`` with gripper and wheel joints the model does not know,
empty messages, velocities of 1e155, an atomic parameter change with one bad value, input
that stops (stale state), empty list parameters; a solo12 floating base fed by odometry
against Pinocchio; a 1200-link robot and joint names that are no valid topic names;
configurations that cannot work (exit code 1 with the reason); the simulation node with
``use_sim_time``, NaN parameters, held commands cleared by reset, TF without self-transforms
and without the frames robot_state_publisher publishes, and a clean SIGTERM.
"""
import math
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import erd_path, ros_importorskip

pytestmark = [pytest.mark.ros, pytest.mark.filterwarnings('ignore::DeprecationWarning:lark.*')]
rclpy, _, _ = ros_importorskip('rclpy', 'liemb_interfaces.srv', 'tf2_msgs.msg')

import liemb_ros as lm  # noqa: E402
from liemb_ros.core.lie import quaternion, so3  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from geometry_msgs.msg import WrenchStamped  # noqa: E402
from liemb_interfaces.msg import TwistRepresentedArray  # noqa: E402
from liemb_interfaces.srv import GetJacobian  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rcl_interfaces.srv import GetParameters, SetParameters  # noqa: E402
from rcl_interfaces.srv import SetParametersAtomically  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from ros_graph import (RELIABLE, Latest, diagnostics, node_argv, param,  # noqa: E402
                       wait_ready)
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray, String  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402
from tf2_msgs.msg import TFMessage  # noqa: E402
from trajectory_msgs.msg import JointTrajectoryPoint  # noqa: E402
from liemb_ros.ros.common import LATCHED  # noqa: E402

DYN = 'liemb_dynamics: cycle'


def _state(names, q, qd=()):
    msg = JointState()
    msg.name = list(names)
    msg.position = [float(x) for x in q]
    msg.velocity = [float(x) for x in qd]
    return msg


def _diag(diags, graph, until, name=DYN):
    """Spin until the last status ``name`` satisfies ``until(level, message, values)``."""
    graph.spin_until(lambda: until(*diagnostics(diags.msgs, name)))
    return diagnostics(diags.msgs, name)


def test_dynamics_node_description_on_the_topic_survives_what_robots_send(graph, rng):
    import pinocchio as pin
    path = erd_path('ur5')
    model = lm.load_urdf(path)
    # as a user starts it for a real robot: `liemb launch dynamics`, no robot argument
    graph.run('launch', [sys.executable, '-m', 'liemb_ros.app.cli', 'launch', 'dynamics',
                         '-p', 'liemb_dynamics:diagnostics_period:=0.2',
                         '-p', 'liemb_dynamics:twist_links:=[]',
                         '-p', 'liemb_dynamics:wrench_joints:=[]'])
    diags = Latest(graph, DiagnosticArray, '/diagnostics')
    torques = Latest(graph, JointState, '/liemb_dynamics/joint_torques')
    commands = Latest(graph, Float64MultiArray, '/liemb_dynamics/effort_command')
    twists = Latest(graph, TwistRepresentedArray, '/liemb_dynamics/twists')
    desc = graph.node.create_publisher(String, '/robot_description', LATCHED)
    states = graph.node.create_publisher(JointState, '/joint_states', RELIABLE)

    level, text, _ = _diag(diags, graph, lambda lv, m, v: m is not None)
    assert level == DiagnosticStatus.WARN and 'waiting for the robot description' in text
    # Text that names a file is never opened: it is not URDF XML.
    desc.publish(String(data='/proc/self/mem'))
    level, text, _ = _diag(diags, graph, lambda lv, m, v: lv == DiagnosticStatus.ERROR)
    assert 'proc' in text and 'XML' in text, text
    with open(path, encoding='utf-8') as f:
        desc.publish(String(data=f.read()))
    _diag(diags, graph, lambda lv, m, v: v.get('robot') == 'ur5')

    graph.spin_until(lambda: states.get_subscription_count() > 0)
    states.publish(JointState())                       # empty: produces nothing
    # joint_state_broadcaster on a real cell: a gripper and a base's wheels beside the arm
    extra = ['finger_joint', 'left_wheel_joint', 'right_wheel_joint']
    names = list(model.joint_names) + extra
    order = rng.permutation(len(names))
    q = model.random_configuration(rng)
    full = np.r_[q, 0.01, 1.5, -2.5]
    states.publish(_state([names[k] for k in order], full[order], np.zeros(len(names))))
    graph.spin_until(lambda: torques.msgs and twists.msgs)
    pm = pin.buildModelFromUrdf(path)
    qp = np.zeros(pm.nq)
    for k, jn in enumerate(model.joint_names):
        qp[pm.joints[pm.getJointId(jn)].idx_q] = q[k]
    g_pin = pin.computeGeneralizedGravity(pm, pm.createData(), qp)
    g_pin = np.array([g_pin[pm.joints[pm.getJointId(jn)].idx_v] for jn in model.joint_names])
    np.testing.assert_allclose(torques.msgs[-1].effort, g_pin, atol=1e-9)
    np.testing.assert_allclose(commands.msgs[-1].data, g_pin, atol=1e-9)
    import xml.etree.ElementTree as ET
    urdf = ET.parse(path).getroot()
    parents = {j.find('parent').get('link') for j in urdf.findall('joint')}
    leaves = {lk.get('name') for lk in urdf.findall('link')} - parents   # none hangs from them
    assert set(twists.msgs[-1].links) == leaves, (twists.msgs[-1].links, leaves)
    _, _, values = _diag(diags, graph, lambda lv, m, v: 'finger_joint' in
                         v.get('ignored_joints', ''))
    assert all(j in values['ignored_joints'] for j in extra)
    assert graph.output().count("ignoring joint(s)") == 1       # said once, not per message

    # Finite but absurd velocities: inverse dynamics overflows; nothing non-finite leaves.
    res = graph.call(SetParameters, '/liemb_dynamics/set_parameters', SetParameters.Request(
        parameters=[param('mode', 'inverse_dynamics')])).results[0]
    assert res.successful, res.reason
    n = len(torques.msgs)
    states.publish(_state(model.joint_names, q, np.full(model.nq, 1e155)))
    _diag(diags, graph, lambda lv, m, v: int(v.get('refused_outputs', 0)) >= 1)
    assert len(torques.msgs) == n
    assert all(np.all(np.isfinite(m.effort)) for m in torques.msgs)
    qd = rng.normal(size=model.nv)
    states.publish(_state(model.joint_names, q, qd))
    graph.spin_until(lambda: len(torques.msgs) > n)
    np.testing.assert_allclose(torques.msgs[-1].effort,
                               lm.inverse_dynamics(model, q, qd, np.zeros(model.nv)),
                               atol=1e-9)

    # One bad value in an atomic change: nothing is applied.
    res = graph.call(SetParametersAtomically, '/liemb_dynamics/set_parameters_atomically',
                     SetParametersAtomically.Request(parameters=[
                         param('mode', 'gravity_compensation'),
                         param('representation', 'world')])).result
    assert not res.successful and 'world' in res.reason
    got = graph.call(GetParameters, '/liemb_dynamics/get_parameters',
                     GetParameters.Request(names=['mode'])).values[0].string_value
    _, _, values = _diag(diags, graph, lambda lv, m, v: 'mode' in v)
    assert got == values['mode'] == 'inverse_dynamics'
    # the counts add up: every message received was processed, skipped or dropped
    _, _, values = _diag(diags, graph, lambda lv, m, v: int(v.get('received', 0)) >= 4)
    n = {k: int(values[k]) for k in ('received', 'processed', 'skipped', 'dropped')}
    assert n['received'] == n['processed'] + n['skipped'] + n['dropped'], n
    assert n['skipped'] >= 2 and n['processed'] >= 2, n   # empty + refused; two good

    # Input stops: commands stop after state_timeout, diagnostics say so with the age,
    # and the rate is that of the last window, not a frozen number.
    for p in (param('state_timeout', 0.3), param('publish_rate', 50.0)):
        assert graph.call(SetParameters, '/liemb_dynamics/set_parameters',
                          SetParameters.Request(parameters=[p])).results[0].successful
    states.publish(_state(model.joint_names, q, qd))
    level, text, values = _diag(diags, graph, lambda lv, m, v: lv == DiagnosticStatus.WARN
                                and 'no joint_states' in m and float(v['rate_hz']) == 0.0)
    assert float(values['last_state_age_s']) > 0.3, values
    n = len(commands.msgs)
    graph.spin_for(0.5)
    assert len(commands.msgs) == n
    states.publish(_state(model.joint_names, q, qd))
    _diag(diags, graph, lambda lv, m, v: lv == DiagnosticStatus.OK
          and float(v['rate_hz']) > 10.0)
    assert len(commands.msgs) > n
    assert graph.procs[0][2].poll() is None


def test_floating_base_state_from_odometry_against_pinocchio(graph, rng):
    """solo12: base tilted and moving (odometry), inverse dynamics of the joints."""
    import pinocchio as pin
    path = erd_path('solo12')
    model = lm.load_urdf(path, floating_base=True)
    graph.run('dyn', node_argv('dynamics', [f'urdf_path:={path}', 'floating_base:=true',
                                            'mode:=inverse_dynamics']))
    torques = Latest(graph, JointState, '/liemb_dynamics/joint_torques')
    states = graph.node.create_publisher(JointState, '/joint_states', RELIABLE)
    odom = graph.node.create_publisher(Odometry, '/odom', RELIABLE)
    desired = graph.node.create_publisher(JointTrajectoryPoint, '/liemb_dynamics/desired',
                                          RELIABLE)
    wait_ready(graph)   # it compiles while it spins: messages before that are skipped
    q = model.random_configuration(rng)
    qd = rng.normal(size=model.nv)
    qdd = np.r_[np.zeros(6), rng.normal(size=model.nq)]   # the base's twist rate: zero
    C = np.eye(4)
    C[:3, :3] = so3.exp(np.array([0.4, -0.3, 0.8]))
    C[:3, 3] = (1.5, -2.0, 0.35)
    msg = Odometry()
    msg.pose.pose.position.x, msg.pose.pose.position.y, msg.pose.pose.position.z = C[:3, 3]
    w, x, y, z = quaternion.from_matrix(C[:3, :3])
    o = msg.pose.pose.orientation
    o.x, o.y, o.z, o.w = float(x), float(y), float(z), float(w)
    t = msg.twist.twist
    t.angular.x, t.angular.y, t.angular.z = (float(v) for v in qd[:3])
    t.linear.x, t.linear.y, t.linear.z = (float(v) for v in qd[3:6])
    desired.publish(JointTrajectoryPoint(accelerations=qdd[6:].tolist()))
    odom.publish(msg)
    graph.spin_for(0.3)
    states.publish(_state(model.joint_names, q, qd[6:]))
    graph.spin_until(lambda: torques.msgs)
    tau = np.array(torques.msgs[-1].effort)
    np.testing.assert_allclose(tau, lm.inverse_dynamics(model, q, qd, qdd, base_pose=C)[6:],
                               atol=1e-9)
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
    qp, vp, ap = np.zeros(pm.nq), np.zeros(pm.nv), np.zeros(pm.nv)
    qp[:7] = pin.SE3ToXYZQUAT(pin.SE3(C[:3, :3], C[:3, 3]))
    vp[:3], vp[3:6] = qd[3:6], qd[:3]          # Pinocchio: linear first, body frame
    for k, jn in enumerate(model.joint_names):
        j = pm.joints[pm.getJointId(jn)]
        qp[j.idx_q], vp[j.idx_v], ap[j.idx_v] = q[k], qd[6 + k], qdd[6 + k]
    tau_pin = pin.rnea(pm, pm.createData(), qp, vp, ap)
    np.testing.assert_allclose(
        tau, [tau_pin[pm.joints[pm.getJointId(jn)].idx_v] for jn in model.joint_names],
        atol=1e-8)


def _chain_urdf(n, names):
    """A chain of ``n`` revolute joints about z, 0.01 m apart, named by ``names(i)``."""
    parts = ['<robot name="long"><link name="l0"/>']
    for i in range(1, n + 1):
        parts.append(
            f'<link name="l{i}"><inertial><mass value="0.1"/><inertia ixx="1e-4" ixy="0" '
            f'ixz="0" iyy="1e-4" iyz="0" izz="1e-4"/></inertial></link>'
            f'<joint name="{names(i)}" type="revolute"><parent link="l{i - 1}"/>'
            f'<child link="l{i}"/><origin xyz="0.01 0 0"/><axis xyz="0 0 1"/>'
            f'<limit lower="-3" upper="3" effort="10" velocity="1"/></joint>')
    return ''.join(parts) + '</robot>'


def test_long_robot_and_joint_names_that_are_no_topic_names(graph, tmp_path):
    path = tmp_path / 'long.urdf'
    path.write_text(_chain_urdf(1200, lambda i: f'arm.joint-{i}'))
    graph.run('dyn', node_argv('dynamics', [f'urdf_path:={path}',
                                            'wrench_joints:=[arm.joint-1, arm.joint-2]']))
    wrench = Latest(graph, WrenchStamped, '/liemb_dynamics/wrench/arm_joint_1')
    wait_ready(graph)
    resp = graph.call(GetJacobian, '/liemb_dynamics/get_jacobian', GetJacobian.Request(
        link='l1200', representation='hybrid', positions=[0.0] * 1200))
    assert resp.success, resp.message
    J = np.array(resp.data).reshape(resp.rows, resp.cols)
    # q = 0: a straight chain along x; joint i turns about z at x = 0.01 i, the tip is at 12 m
    assert J.shape == (6, 1200)
    np.testing.assert_allclose(J[4], 0.01 * (1199 - np.arange(1200)), atol=1e-9)
    np.testing.assert_allclose(J[2], 1.0, atol=1e-12)
    states = graph.node.create_publisher(JointState, '/joint_states', RELIABLE)
    graph.spin_until(lambda: states.get_subscription_count() > 0)
    state = _state([f'arm.joint-{i}' for i in range(1, 1201)], np.zeros(1200))
    sent = [0.0]

    def answered():
        # the node reads joint_states best effort, as a driver streams them: a 46 kB state
        # sent once and lost on a loaded machine would fail this test for a reason it does
        # not test, so it is sent again every second until the wrench answers
        if time.monotonic() - sent[0] > 1.0:
            states.publish(state)
            sent[0] = time.monotonic()
        return wrench.msgs

    graph.spin_until(answered)
    assert wrench.msgs[-1].header.frame_id == 'l1'


@pytest.mark.parametrize('node,params,words', [
    ('dynamics', ['urdf_path:=/no/such/robot.urdf'], ['/no/such/robot.urdf']),
    ('dynamics', ['urdf_path:=liemb_arm7', 'twist_links:=[no_such_link]'], ['no_such_link']),
    ('dynamics', ['urdf_path:=liemb_arm7', 'wrench_joints:=[no_such_joint]'],
     ['no_such_joint']),
    ('simulation', ['urdf_path:=liemb_arm7', 'test_torque_amplitude:=[.nan]'],
     ['test_torque_amplitude']),
    ('simulation', ['urdf_path:=liemb_arm7', 'initial_positions:=[0.1, 0.2]'],
     ['initial_positions', '2 values']),
    # an override of the wrong type or out of range names the parameter (was a traceback)
    ('dynamics', ['urdf_path:=liemb_arm7', 'publish_rate:=fast'],
     ['parameter publish_rate', "expecting type 'DOUBLE'"]),
    ('dynamics', ['urdf_path:=liemb_arm7', 'publish_rate:=100'],
     ['parameter publish_rate', '100.0, not 100']),
    ('simulation', ['urdf_path:=liemb_arm7', 'dt:=-1.0'], ['parameter dt', 'out of range']),
    ('servo', ['urdf_path:=liemb_arm7', 'publish_rate:=[1.0]'], ['parameter publish_rate']),
])
def test_a_configuration_that_cannot_work_exits_with_the_reason(graph, node, params, words):
    start = time.monotonic()
    res = subprocess.run(node_argv(node, params), env=graph.env, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 1, res.stdout + res.stderr
    # at once: the dynamics node's action thread was joined under rclpy's context lock,
    # which that thread needs to end (the join's 10 s timeout, every time)
    assert time.monotonic() - start < 10.0
    assert all(w in res.stderr for w in words), res.stderr
    assert 'Traceback' not in res.stderr, res.stderr


STOPPED_WHILE_STARTING = """
import sys
from liemb_ros.ros import common, dynamics_node


def interrupted(self):
    raise KeyboardInterrupt   # the launch's SIGINT while the robot loads


common.RobotSource.start = interrupted
sys.exit(common.run(dynamics_node.DynamicsNode, sys.argv))
"""


def test_a_node_stopped_while_starting_exits_0_at_once_without_a_traceback(graph):
    """A launch stops every node when one fails: the others, still starting, end quietly
    (each printed a KeyboardInterrupt traceback over the failed node's reason) and at once
    (the dynamics node's action thread is joined before rclpy's shutdown)."""
    start = time.monotonic()
    res = subprocess.run([sys.executable, '-c', STOPPED_WHILE_STARTING, '--ros-args', '-p',
                          'urdf_path:=liemb_arm7'], env=graph.env, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0 and 'Traceback' not in res.stderr, res.stderr
    assert time.monotonic() - start < 10.0


STOPPED_BY_CTRL_C = """
import os, signal, sys, time
import rclpy
from liemb_ros.ros import common, simulation_node

# the worst case of the race below, every time: rclpy's signal thread has not shut the
# context down yet (without its handler it never does; rclpy.ok() stays True)
rclpy.install_signal_handlers = lambda options: None


def spin(node):
    # Ctrl-C while rclpy converts a message: pybind11 turns the KeyboardInterrupt into a
    # RuntimeError, possibly before rclpy's signal thread has shut the context down
    try:
        os.kill(os.getpid(), signal.SIGINT)   # its handler runs as kill returns
        time.sleep(5)
    except KeyboardInterrupt:
        print('converted', flush=True)
        raise RuntimeError("Unable to convert call argument '0' to Python object") from None


destroy = simulation_node.SimulationNode.destroy_node


def destroy_node(self):
    # a second SIGINT while the node is destroyed: a Ctrl-C in a launch's terminal reaches a
    # node from the terminal and from the launcher
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.2)
    destroy(self)
    print('destroyed', flush=True)


common.spin = spin
simulation_node.SimulationNode.destroy_node = destroy_node
sys.exit(common.run(simulation_node.SimulationNode, sys.argv))
"""


def test_ctrl_c_exits_0_whatever_it_interrupts(graph):
    """
    The SIGINT of a stop raises KeyboardInterrupt wherever the node's main thread is: once,
    inside a message's conversion, pybind11 made a RuntimeError of it and the simulation
    node exited 1 with its traceback (1 launch in 25); a second SIGINT (a Ctrl-C in a
    launch's terminal) while the node is destroyed would leave it half destroyed.  Both:
    exit 0, nothing printed, the node destroyed.
    """
    res = subprocess.run([sys.executable, '-c', STOPPED_BY_CTRL_C, '--ros-args', '-p',
                          'urdf_path:=liemb_arm7'], env=graph.env, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0 and 'Traceback' not in res.stderr, res.stdout + res.stderr
    assert 'converted' in res.stdout and 'destroyed' in res.stdout, res.stdout + res.stderr


def test_simulation_node_sim_time_tf_reset_bad_parameters_and_sigterm(graph):
    proc = graph.run('sim', node_argv('simulation', [
        'urdf_path:=liemb_arm7', 'use_sim_time:=true', 'wait_for_command:=false',
        'effort_timeout:=0.0', 'publish_rate:=100.0']))
    clock = Latest(graph, Clock, '/clock')
    states = Latest(graph, JointState, '/joint_states')
    static = Latest(graph, TFMessage, '/tf_static', LATCHED)
    tf = Latest(graph, TFMessage, '/tf')
    graph.spin_until(lambda: len(clock.msgs) > 20 and len(states.msgs) > 20 and static.msgs)
    stamps = {(m.header.stamp.sec, m.header.stamp.nanosec) for m in states.msgs}
    assert stamps & {(c.clock.sec, c.clock.nanosec) for c in clock.msgs}   # sim time
    t_last = clock.msgs[-1].clock.sec + 1e-9 * clock.msgs[-1].clock.nanosec
    assert t_last > 0.1
    fixed = [(t.header.frame_id, t.child_frame_id) for m in static.msgs for t in m.transforms]
    moving = {(t.header.frame_id, t.child_frame_id) for m in tf.msgs for t in m.transforms}
    assert fixed and moving and all(a != b for a, b in fixed + list(moving))   # no world->world
    children = [c for _, c in fixed] + [c for _, c in moving]
    assert len(children) == len(set(children)), children    # each frame has one parent
    # a held command (effort_timeout 0: forever) is cleared by ~/reset
    cmd = graph.node.create_publisher(Float64MultiArray, '/liemb_simulation/effort_command',
                                      RELIABLE)
    graph.spin_until(lambda: cmd.get_subscription_count() > 0)
    cmd.publish(Float64MultiArray(data=[2.0] * 7))
    graph.spin_until(lambda: states.msgs[-1].effort[0] == 2.0)
    assert graph.call(Trigger, '/liemb_simulation/reset', Trigger.Request()).success
    graph.spin_until(lambda: states.msgs[-1].effort[0] == 0.0)
    # NaN at run time is refused; the node goes on
    bad = param('test_torque_amplitude', [math.nan])
    res = graph.call(SetParameters, '/liemb_simulation/set_parameters',
                     SetParameters.Request(parameters=[bad])).results[0]
    assert not res.successful and 'finite' in res.reason
    n = len(states.msgs)
    graph.spin_until(lambda: len(states.msgs) > n + 5)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=20) == 0
    assert 'Traceback' not in graph.output('sim'), graph.output('sim')


def test_simulation_without_link_frames_when_robot_state_publisher_runs(graph):
    """publish_link_tf false: only world -> root (solo12's floating base), nothing static."""
    path = erd_path('solo12')
    graph.run('sim', node_argv('simulation', [f'urdf_path:={path}', 'floating_base:=true',
                                              'publish_link_tf:=false',
                                              'wait_for_command:=false']))
    static = Latest(graph, TFMessage, '/tf_static', LATCHED)
    tf = Latest(graph, TFMessage, '/tf')
    graph.spin_until(lambda: len(tf.msgs) > 3)
    graph.spin_for(0.3)
    moving = {(t.header.frame_id, t.child_frame_id) for m in tf.msgs for t in m.transforms}
    assert moving == {('world', 'base_link')}, moving
    assert not [t for m in static.msgs for t in m.transforms]


def test_both_nodes_on_simulation_time(graph):
    """`liemb launch sim use_sim_time:=true`: /clock from the simulation drives the loop."""
    graph.start('sim', ['liemb_simulation', 'liemb_dynamics'],
                ['liemb_dynamics:diagnostics_period:=0.2'], {'use_sim_time': 'true'})
    clock = Latest(graph, Clock, '/clock')
    torques = Latest(graph, JointState, '/liemb_dynamics/joint_torques')
    diags = Latest(graph, DiagnosticArray, '/diagnostics')
    graph.spin_until(lambda: len(torques.msgs) > 50 and len(clock.msgs) > 50)
    sim_times = {(c.clock.sec, c.clock.nanosec) for c in clock.msgs}
    assert {(m.header.stamp.sec, m.header.stamp.nanosec) for m in torques.msgs} & sim_times
    t = clock.msgs[-1].clock
    assert t.sec + 1e-9 * t.nanosec > 0.2       # the loop closed: simulated time advanced
    _diag(diags, graph, lambda lv, m, v: lv == DiagnosticStatus.OK and 'robot' in v)


def test_the_node_answers_while_it_compiles(graph, tmp_path):
    """A cold numba cache: the node serves parameters and says 'compiling' meanwhile."""
    graph.env['NUMBA_CACHE_DIR'] = str(tmp_path / 'cold_cache')
    graph.run('dyn', node_argv('dynamics', ['urdf_path:=liemb_arm7',
                                            'diagnostics_period:=0.2']))
    diags = Latest(graph, DiagnosticArray, '/diagnostics')
    level, text, _ = _diag(diags, graph, lambda lv, m, v: m is not None)
    assert level == DiagnosticStatus.WARN and text.startswith('compiling kernels'), text
    res = graph.call(SetParameters, '/liemb_dynamics/set_parameters', SetParameters.Request(
        parameters=[param('mode', 'inverse_dynamics')])).results[0]
    assert res.successful, res.reason
    bad = graph.call(SetParameters, '/liemb_dynamics/set_parameters', SetParameters.Request(
        parameters=[param('representation', 'world')])).results[0]
    assert not bad.successful and 'world' in bad.reason    # checked against the robot
    got = graph.call(GetParameters, '/liemb_dynamics/get_parameters',
                     GetParameters.Request(names=['mode'])).values[0].string_value
    assert got == 'inverse_dynamics'
    resp = graph.call(GetJacobian, '/liemb_dynamics/get_jacobian',
                      GetJacobian.Request(link='tool0', representation='body'))
    assert not resp.success and resp.message.startswith('compiling'), resp.message
    _, text, _ = diagnostics(diags.msgs, DYN)
    assert text.startswith('compiling kernels'), text     # all of it while compiling
