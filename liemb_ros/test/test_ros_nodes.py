"""
The nodes as separate processes over DDS on loopback (simulation_node, dynamics_node).

Each test gets a private ``ROS_DOMAIN_ID`` with ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``;
the nodes are started with the same command lines as ``liemb launch`` (one process per
node, parameters from ``config/``) and talk to an in-process client node.  Checked:
torques against the library and Pinocchio, Jacobians for every representation, bad
input dropped without killing the node, /tf against forward kinematics, and the
simulated arm held still by the dynamics node's gravity compensation (falling without).
"""
import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import erd_path, ros_importorskip

pytestmark = [pytest.mark.ros, pytest.mark.filterwarnings('ignore::DeprecationWarning:lark.*')]
rclpy, _, _ = ros_importorskip('rclpy', 'liemb_interfaces.srv', 'tf2_msgs.msg')

import liemb_ros as lm  # noqa: E402
from liemb_ros.core import resources  # noqa: E402
from liemb_ros.core.dynamics import inverse_dynamics  # noqa: E402
from liemb_ros.core.lie import quaternion  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from liemb_interfaces.srv import GetJacobian  # noqa: E402
from ros_graph import RELIABLE, Latest, claim_domain, diagnostics, node_argv  # noqa: E402
from ros_graph import wait_ready  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_srvs.srv import SetBool, Trigger  # noqa: E402
from tf2_msgs.msg import TFMessage  # noqa: E402
from trajectory_msgs.msg import JointTrajectoryPoint  # noqa: E402
from visualization_msgs.msg import MarkerArray  # noqa: E402


def _joint_state(model, q, qd, names=None):
    msg = JointState()
    msg.name = list(names or model.joint_names)
    msg.position = [float(x) for x in q]
    msg.velocity = [float(x) for x in qd]
    return msg


def test_dynamics_node_torques_jacobians_and_bad_input(graph, rng):
    import pinocchio as pin
    path = erd_path('panda')
    model = lm.load_urdf(path)
    graph.start('dynamics', ['liemb_dynamics'], [
        f'liemb_dynamics:urdf_path:={path}', 'liemb_dynamics:mode:=inverse_dynamics',
        'liemb_dynamics:twist_links:=[panda_hand]',
        'liemb_dynamics:wrench_joints:=[panda_joint2]',
        'liemb_dynamics:diagnostics_period:=0.2'])
    torques = Latest(graph, JointState, '/liemb_dynamics/joint_torques')
    diags = Latest(graph, DiagnosticArray, '/diagnostics')
    pub = graph.node.create_publisher(JointState, '/joint_states', RELIABLE)
    pub_des = graph.node.create_publisher(JointTrajectoryPoint, '/liemb_dynamics/desired',
                                          RELIABLE)
    q = model.random_configuration(rng)
    qd, qdd = rng.normal(size=model.nv), rng.normal(size=model.nv)
    # The desired accelerations must arrive before the state they go with. Subscriptions
    # match before the node's executor spins (it loads the robot first), and queued messages
    # are taken in subscription order, not arrival order: so first wait until the node
    # answers a service call (it is spinning), then publish.
    graph.spin_until(lambda: pub.get_subscription_count() > 0
                     and pub_des.get_subscription_count() > 0)
    wait_ready(graph)
    resp = graph.call(GetJacobian, '/liemb_dynamics/get_jacobian',
                      GetJacobian.Request(link='panda_hand', representation='body'))
    assert not resp.success and 'state' in resp.message, resp.message
    pub_des.publish(JointTrajectoryPoint(accelerations=qdd.tolist()))
    graph.spin_for(0.3)
    pub.publish(_joint_state(model, q, qd))
    graph.spin_until(lambda: torques.msgs)
    tau = np.array(torques.msgs[-1].effort)
    np.testing.assert_allclose(tau, inverse_dynamics(model, q, qd, qdd), atol=1e-9)
    pm = pin.buildModelFromUrdf(path)
    np.testing.assert_allclose(tau, pin.rnea(pm, pm.createData(), q, qd, qdd), atol=1e-8)

    for rep in lm.REPRESENTATIONS:
        resp = graph.call(GetJacobian, '/liemb_dynamics/get_jacobian',
                          GetJacobian.Request(link='panda_hand', representation=rep))
        assert resp.success, resp.message
        J = np.array(resp.data).reshape(resp.rows, resp.cols)
        np.testing.assert_allclose(J, lm.jacobian(model, q, 'panda_hand', rep), atol=1e-12)
    for req, words in ((GetJacobian.Request(link='no_such_link', representation='body'),
                        'no_such_link'),
                       (GetJacobian.Request(link='panda_hand', representation='twisted'),
                        'twisted')):
        resp = graph.call(GetJacobian, '/liemb_dynamics/get_jacobian', req)
        assert not resp.success and words in resp.message

    # Bad joint states are dropped; the node keeps its last good state and keeps running.
    n_before = len(torques.msgs)
    bad = [_joint_state(model, q, qd, names=model.joint_names[:1] + model.joint_names[:-1]),
           _joint_state(model, q[:-1], qd[:-1]),
           _joint_state(model, np.full(model.nq, np.nan), qd)]
    for msg in bad:
        pub.publish(msg)
    graph.spin_until(lambda: any(kv.key == 'dropped' and int(kv.value) >= 3
                                 for m in diags.msgs for s in m.status for kv in s.values))
    assert len(torques.msgs) == n_before
    q2 = model.random_configuration(rng)
    pub.publish(_joint_state(model, q2, qd))
    graph.spin_until(lambda: len(torques.msgs) > n_before)
    np.testing.assert_allclose(torques.msgs[-1].effort,
                               inverse_dynamics(model, q2, qd, qdd), atol=1e-9)
    assert 'dropped joint_states' in graph.output()

    # the rotor inertia set at run time: M + diag(armature) in the torques (Pinocchio's
    # model.armature); a negative one is refused with the reason
    from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters

    def set_armature(values):
        p = Parameter(name='armature', value=ParameterValue(
            type=ParameterType.PARAMETER_DOUBLE_ARRAY, double_array_value=values))
        return graph.call(SetParameters, '/liemb_dynamics/set_parameters',
                          SetParameters.Request(parameters=[p])).results[0]
    refused = set_armature([-0.1])
    assert not refused.successful and 'armature' in refused.reason, refused.reason
    assert set_armature([0.25]).successful
    n_before = len(torques.msgs)
    pub.publish(_joint_state(model, q2, qd))
    graph.spin_until(lambda: len(torques.msgs) > n_before)
    pa = pin.Model(pm)
    pa.armature[:] = 0.25
    np.testing.assert_allclose(torques.msgs[-1].effort,
                               pin.rnea(pa, pa.createData(), q2, qd, qdd), atol=1e-8)


@pytest.mark.parametrize('priority', [10, 100])
def test_realtime_priority_applied_or_refused_with_the_reason(graph, rng, priority):
    """
    ``realtime_priority``: every thread of the node at SCHED_FIFO where the machine grants it.

    Whether it does is asked of a separate process first (root or CAP_SYS_NICE: yes; an
    ordinary user without an rtprio limit: no; priority 100 is out of Linux's 1-99: never);
    either way the node computes, and says what it got in ``/diagnostics`` (and, refused,
    why, in its log).
    """
    probe = subprocess.run([sys.executable, '-c', 'import os; os.sched_setscheduler(0, '
                            f'os.SCHED_FIFO, os.sched_param({priority}))'], capture_output=True)
    granted = probe.returncode == 0
    assert not (granted and priority == 100)
    path = erd_path('panda')
    model = lm.load_urdf(path)
    proc = graph.run('liemb_dynamics', node_argv('dynamics', [
        f'urdf_path:={path}', f'realtime_priority:={priority}', 'diagnostics_period:=0.2']))
    torques = Latest(graph, JointState, '/liemb_dynamics/joint_torques')
    diags = Latest(graph, DiagnosticArray, '/diagnostics')
    pub = graph.node.create_publisher(JointState, '/joint_states', RELIABLE)
    wait_ready(graph)
    q = model.random_configuration(rng)
    graph.spin_until(lambda: pub.publish(_joint_state(model, q, np.zeros(9))) or torques.msgs)
    np.testing.assert_allclose(torques.msgs[-1].effort, lm.gravity_torques(model, q),
                               atol=1e-9)
    graph.spin_until(lambda: diagnostics(diags.msgs, 'liemb_dynamics: cycle')[2]
                     .get('scheduling'))
    scheduling = diagnostics(diags.msgs, 'liemb_dynamics: cycle')[2]['scheduling']
    policies = {os.sched_getscheduler(int(t)) for t in os.listdir(f'/proc/{proc.pid}/task')}
    print(f'realtime_priority {priority}: {scheduling}')
    if granted:
        assert scheduling == f'SCHED_FIFO {priority}' and policies == {os.SCHED_FIFO}, \
            (scheduling, policies)
    else:
        assert scheduling.startswith(f'normal (SCHED_FIFO {priority} refused') and \
            policies == {os.SCHED_OTHER}, (scheduling, policies)
        assert 'refused' in graph.output('liemb_dynamics')


def test_a_compile_thread_of_a_realtime_node_runs_at_normal_priority():
    # a later robot's kernels compile in a thread the real-time loop thread creates (which
    # inherits its policy): for a minute that would hold a core from every normal process
    code = (
        'import os, threading, types\n'
        'from liemb_ros.ros.common import Preparation, realtime_priority\n'
        "assert realtime_priority(5) == 'SCHED_FIFO 5'\n"
        'seen = []\n'
        'node = types.SimpleNamespace(get_logger=lambda: types.SimpleNamespace(info=print),\n'
        '                             create_timer=lambda *a, **k: None)\n'
        'p = Preparation(node, lambda: seen.append(os.sched_getscheduler(0)), None, "x")\n'
        'p._thread.join()\n'
        'inherited = []\n'
        't = threading.Thread(target=lambda: inherited.append(os.sched_getscheduler(0)))\n'
        't.start(); t.join()\n'
        'print(seen == [os.SCHED_OTHER], inherited == [os.SCHED_FIFO])\n')
    probe = subprocess.run([sys.executable, '-c', 'import os; os.sched_setscheduler(0, '
                            'os.SCHED_FIFO, os.sched_param(5))'], capture_output=True)
    if probe.returncode != 0:
        pytest.skip('SCHED_FIFO is not granted to this user (the test needs it)')
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.split()[-2:] == ['True', 'True'], \
        out.stdout + out.stderr


def test_invalid_robot_description_is_reported(graph):
    """A description given as a parameter that cannot work: exit 1 naming the culprit."""
    graph.start('dynamics', ['liemb_dynamics'], [
        'liemb_dynamics:robot_description:=<robot name="r"><link name="a"/>'
        '<joint name="j" type="revolute"><parent link="a"/><child link="b"/></joint></robot>'])
    proc = graph.procs[0][2]
    assert proc.wait(timeout=120) == 1
    out = graph.output()
    assert 'cannot use the robot' in out and "child link 'b'" in out, out
    assert 'Traceback' not in out


def _sim_params(wait=False):
    return ['liemb_simulation:real_time_factor:=1.0', 'liemb_simulation:publish_rate:=100.0',
            f'liemb_simulation:wait_for_command:={str(wait).lower()}',
            'liemb_simulation:test_torque_amplitude:=[0.0]']


def _watch_drift(graph, seconds):
    states = Latest(graph, JointState, '/joint_states')
    graph.spin_until(lambda: states.msgs)
    q0 = np.array(states.msgs[0].position)
    graph.spin_for(seconds)
    q1 = np.array(states.msgs[-1].position)
    return np.max(np.abs(q1 - q0))


def test_gravity_compensation_holds_the_simulated_arm(graph):
    graph.start('sim', ['liemb_simulation', 'liemb_dynamics'], _sim_params(wait=True))
    drift = _watch_drift(graph, 3.0)
    # one publish period of torque latency and joint damping: the arm creeps, it does not fall
    assert drift < 0.02, drift


def test_simulated_arm_falls_without_compensation(graph):
    graph.start('sim', ['liemb_simulation'], _sim_params())
    drift = _watch_drift(graph, 1.5)
    assert drift > 0.2, drift


def test_tf_matches_forward_kinematics_and_services(graph):
    model = lm.load_urdf(resources.robot_path('liemb_arm7'))
    graph.start('sim', ['liemb_simulation'], _sim_params())
    states = Latest(graph, JointState, '/joint_states')
    tfs = Latest(graph, TFMessage, '/tf')
    graph.spin_until(lambda: len(states.msgs) > 5 and len(tfs.msgs) > 5)
    by_stamp = {(m.header.stamp.sec, m.header.stamp.nanosec): m for m in states.msgs}
    checked = 0
    for tf in tfs.msgs:
        t = tf.transforms[0].header.stamp
        js = by_stamp.get((t.sec, t.nanosec))
        if js is None:
            continue
        Cs = dict(zip(model.link_names, lm.forward_kinematics(model, np.array(js.position))))
        for tr in tf.transforms:
            C = np.linalg.solve(Cs[tr.header.frame_id], Cs[tr.child_frame_id])
            p = tr.transform.translation
            np.testing.assert_allclose([p.x, p.y, p.z], C[:3, 3], atol=1e-9)
            o = tr.transform.rotation
            R = quaternion.to_matrix(np.array([o.w, o.x, o.y, o.z]))
            np.testing.assert_allclose(R, C[:3, :3], atol=1e-9)
            checked += 1
    assert checked > 0
    # pause, step one publish period, reset
    assert graph.call(SetBool, '/liemb_simulation/pause', SetBool.Request(data=True)).success
    graph.spin_for(0.3)
    n = len(states.msgs)
    graph.spin_for(0.3)
    held = {tuple(m.position) for m in states.msgs[n:]}
    assert len(held) == 1  # still published, not moving
    resp = graph.call(Trigger, '/liemb_simulation/step', Trigger.Request())
    assert resp.success and resp.message.startswith('t = ')
    resp = graph.call(Trigger, '/liemb_simulation/reset', Trigger.Request())
    assert resp.success


def _rss_kib(pid):
    with open(f'/proc/{pid}/status', encoding='ascii') as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1])
    raise RuntimeError(f'no VmRSS for pid {pid}')


@pytest.mark.soak
def test_soak_dynamics_node_ten_minutes_at_1khz(graph, rng):
    """10 minutes (LIEMB_SOAK_SECONDS) of 1 kHz joint states: no crash, no memory growth."""
    import gc
    path = erd_path('panda')
    model = lm.load_urdf(path)
    graph.start('dynamics', ['liemb_dynamics'], [
        f'liemb_dynamics:urdf_path:={path}', 'liemb_dynamics:mode:=inverse_dynamics',
        'liemb_dynamics:twist_links:=[panda_hand, panda_link4]'])
    torques = Latest(graph, JointState, '/liemb_dynamics/joint_torques')
    pub = graph.node.create_publisher(JointState, '/joint_states', RELIABLE)
    msgs = [_joint_state(model, model.random_configuration(rng), rng.normal(size=model.nv))
            for _ in range(50)]
    graph.spin_until(lambda: pub.get_subscription_count() > 0)
    pid = graph.procs[0][2].pid
    rss, t0, k = [], time.monotonic(), 0
    while time.monotonic() - t0 < float(os.environ.get('LIEMB_SOAK_SECONDS', '600')):
        pub.publish(msgs[k % len(msgs)])
        k += 1
        graph.executor.spin_once(timeout_sec=0.0005)
        if k % 1000 == 0:
            del torques.msgs[:]
            gc.collect()
            rss.append(_rss_kib(pid))
    graph.spin_for(1.0)
    assert graph.procs[0][2].poll() is None
    settled = rss[len(rss) // 5:]  # after caches and DDS buffers have filled
    growth = settled[-1] - settled[0]
    assert growth < 10 * 1024, f'RSS grew by {growth} KiB over the soak: {rss[::60]}'


def test_simulation_node_absolute_coordinates_and_bad_commands(graph):
    """Absolute coordinates publish the same kind of state; bad commands are dropped."""
    from std_msgs.msg import Float64MultiArray
    graph.start('sim', ['liemb_simulation'], _sim_params() + [
        'liemb_simulation:coordinates:=absolute', 'liemb_simulation:diagnostics_period:=0.2'])
    states = Latest(graph, JointState, '/joint_states')
    diags = Latest(graph, DiagnosticArray, '/diagnostics')
    pub = graph.node.create_publisher(Float64MultiArray, '/liemb_simulation/effort_command',
                                      RELIABLE)
    graph.spin_until(lambda: len(states.msgs) > 3 and pub.get_subscription_count() > 0)
    pub.publish(Float64MultiArray(data=[1.0, 2.0]))              # wrong length
    pub.publish(Float64MultiArray(data=[float('nan')] * 7))      # NaN

    def values():
        return {kv.key: kv.value for m in diags.msgs for s in m.status
                if s.name == 'liemb_simulation' for kv in s.values}
    graph.spin_until(lambda: int(values().get('dropped', 0)) >= 2)
    v = values()
    assert v['coordinates'] == 'absolute'
    assert float(v['max_constraint_violation']) < 1e-6
    assert len(states.msgs[-1].position) == 7
    assert 'dropped ~/effort_command' in graph.output()


def test_demo_runs_and_writes_its_plots(tmp_path, monkeypatch):
    """The README's main job, shortened: nodes start, status lines print, files appear."""
    monkeypatch.setenv('ROS_DOMAIN_ID', str(claim_domain()))
    out = tmp_path / 'demo'
    proc = subprocess.run([sys.executable, '-m', 'liemb_ros.app.cli', 'demo', '--duration', '3',
                           '--out', str(out)],
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert 'sim t' in proc.stdout and 'dynamics node' in proc.stdout
    # the loop was closed: the simulation advanced under the dynamics node's torques
    last = [ln for ln in proc.stdout.splitlines() if ln.lstrip('\r').startswith('sim t')][-1]
    m = re.search(r'sim t\s+([-\d.naN]+) s .* dynamics node\s+([-\d.naN]+) Hz', last)
    assert m and float(m.group(1)) > 0.5 and float(m.group(2)) > 10.0, last
    assert (out / 'simulation.png').stat().st_size > 10_000
    assert (out / 'liemb_arm7.png').stat().st_size > 10_000


def test_representation_changes_at_run_time(graph, rng):
    """set_parameters: a valid representation is taken at once, an invalid one refused."""
    from liemb_interfaces.msg import TwistRepresentedArray
    from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters
    model = lm.load_urdf(resources.robot_path('liemb_arm7'))
    graph.start('dynamics', ['liemb_dynamics'], ['liemb_dynamics:twist_links:=[tool0]'],
                {'robot': 'liemb_arm7'})
    twists = Latest(graph, TwistRepresentedArray, '/liemb_dynamics/twists')
    markers = Latest(graph, MarkerArray, '/liemb_dynamics/markers')
    pub = graph.node.create_publisher(JointState, '/joint_states', RELIABLE)
    q, qd = model.random_configuration(rng), rng.normal(size=model.nv)

    def set_rep(value):
        p = Parameter(name='representation', value=ParameterValue(
            type=ParameterType.PARAMETER_STRING, string_value=value))
        return graph.call(SetParameters, '/liemb_dynamics/set_parameters',
                          SetParameters.Request(parameters=[p])).results[0]
    wait_ready(graph)
    for rep in ('body', 'mixed'):
        assert set_rep(rep).successful
        n = len(twists.msgs)
        graph.spin_until(lambda: pub.get_subscription_count() > 0)
        pub.publish(_joint_state(model, q, qd))
        graph.spin_until(lambda: len(twists.msgs) > n)
        t = twists.msgs[-1].twists[0]
        assert t.representation == rep
        V = [t.angular.x, t.angular.y, t.angular.z, t.linear.x, t.linear.y, t.linear.z]
        np.testing.assert_allclose(V, lm.link_twist(model, q, qd, 'tool0', rep), atol=1e-12)
    refused = set_rep('world')
    assert not refused.successful and 'world' in refused.reason
    # the arrows (from their template): at tool0, 0.2 m per m/s (rad/s) along the hybrid
    # twist's linear then angular part, whatever the twists' representation; stamped
    graph.spin_until(lambda: markers.msgs)
    arrows = markers.msgs[-1].markers
    assert [(a.ns, a.id) for a in arrows] == [('twists', 0), ('twists', 1)]
    p = lm.link_pose(model, q, 'tool0')[:3, 3]
    V = lm.link_twist(model, q, qd, 'tool0', 'hybrid')
    for arrow, vec in zip(arrows, (V[3:], V[:3])):
        a, b = arrow.points
        np.testing.assert_allclose([a.x, a.y, a.z], p, atol=1e-12)
        np.testing.assert_allclose([b.x, b.y, b.z], p + 0.2 * vec, atol=1e-12)
        assert arrow.header.stamp in [t.header.stamp for t in twists.msgs]   # a state's


def test_dynamics_node_resident_memory_in_every_mode(graph, rng):
    """
    A dynamics node on the Panda, serving joint states in every mode in turn (switched at
    run time), stays below 300 MB resident: the kernels load from the prepared cache
    (``liemb prepare``); compiling them in the process instead took 450-600 MB.
    """
    from rcl_interfaces.srv import SetParameters
    from ros_graph import param
    path = erd_path('panda')
    model = lm.load_urdf(path)
    graph.start('dynamics', ['liemb_dynamics'], [f'liemb_dynamics:urdf_path:={path}'])
    torques = Latest(graph, JointState, '/liemb_dynamics/joint_torques')
    pub = graph.node.create_publisher(JointState, '/joint_states', RELIABLE)
    wait_ready(graph)
    graph.spin_until(lambda: pub.get_subscription_count() > 0)
    for mode in ('gravity_compensation', 'inverse_dynamics', 'computed_torque',
                 'cartesian_impedance'):
        res = graph.call(SetParameters, '/liemb_dynamics/set_parameters',
                         SetParameters.Request(parameters=[param('mode', mode)])).results[0]
        assert res.successful, res.reason
        n = len(torques.msgs)
        for _ in range(20):
            pub.publish(_joint_state(model, model.random_configuration(rng) * 0.1,
                                     rng.normal(size=model.nv)))
            graph.spin_for(0.01)
        graph.spin_until(lambda: len(torques.msgs) >= n + 10)
    rss = _rss_kib(graph.procs[0][2].pid) / 1024
    print(f'dynamics node (Panda, every mode): {rss:.0f} MB resident')
    assert rss < 300, (f'{rss:.0f} MB resident (is the kernel cache prepared? '
                       f'`liemb prepare`)')


_HEAP_PROBE = '''
import gc, time
import liemb_ros as lm
from liemb_ros.ros import dynamics_node, servo_node, simulation_node  # what a node imports
from liemb_ros.ros.common import settle_heap
from liemb_ros.core import resources
model = lm.load_urdf(resources.robot_path('liemb_arm7'))
q = model.neutral()
lm.inverse_dynamics(model, q, q, q)
def full_gc():
    t = time.perf_counter()
    gc.collect()
    return time.perf_counter() - t
before = min(full_gc() for _ in range(3))
settle_heap()
after = max(full_gc() for _ in range(3))
print(gc.get_freeze_count(), before, after)
'''


def test_nodes_settle_the_heap_before_serving():
    """
    After ``settle_heap`` (called when a node starts serving), a full garbage collection
    no longer scans the libraries: it took tens of ms in a node process before, which a
    1 kHz loop cannot absorb; now well under a millisecond.
    """
    out = subprocess.run([sys.executable, '-c', _HEAP_PROBE], capture_output=True,
                         text=True, timeout=600, check=True).stdout.split()
    frozen, before, after = int(out[0]), float(out[1]), float(out[2])
    assert frozen > 100_000 and before > 0.005, (frozen, before)
    assert after < 1e-3, (before, after)
