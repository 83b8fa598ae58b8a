"""
The dynamics node's online payload estimate, the node as a process over DDS on loopback.

The client streams joint states of the 7-joint arm moving smoothly, with the efforts
Pinocchio's RNEA gives for the arm holding a payload (and a few unusable states); the node
estimates the payload (``~/payload_estimate``), applies it only when asked
(``~/payload_estimate/apply``), and its gravity-compensation torques then are Pinocchio's
with the payload.  Measured on a loaded machine: 2800 states used in 20 s (the node's
turns), mass within 2e-5 relative, centre of mass within 0.03 mm (asked: 1 %, 1 mm).
"""
import subprocess
import time

import numpy as np
import pytest

from conftest import ros_importorskip

pytestmark = [pytest.mark.ros, pytest.mark.filterwarnings('ignore::DeprecationWarning:lark.*')]
rclpy, _, _ = ros_importorskip('rclpy', 'std_srvs.srv', 'geometry_msgs.msg')

import pinocchio as pin  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from geometry_msgs.msg import InertiaStamped  # noqa: E402
from ros_graph import RELIABLE, Latest, diagnostics, node_argv, wait_ready  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402
from test_payload_estimation import PATH, PAYLOAD, motion, pinocchio_model  # noqa: E402

STATUS = 'liemb_dynamics: payload estimate'
NAMES = [f'joint{k}' for k in range(1, 8)]


def stream(graph, pub, seconds, start, pm, bad=()):
    """Publish joint states with Pinocchio's efforts every ~2 ms for ``seconds``; then ``bad``."""
    data = pm.createData()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        now = graph.node.get_clock().now()
        _, q, qd, qdd = (x[0] for x in motion(0.0, t=now.nanoseconds * 1e-9 - start))
        msg = JointState(name=NAMES, position=q.tolist(), velocity=qd.tolist(),
                         effort=pin.rnea(pm, data, q, qd, qdd).tolist())
        msg.header.stamp = now.to_msg()
        pub.publish(msg)
        graph.executor.spin_once(timeout_sec=0.002)
    for msg in bad:
        pub.publish(msg)
        graph.spin_for(0.05)
    return q


def test_the_node_estimates_the_payload_and_applies_it_when_asked(graph):
    graph.run('dynamics', node_argv('dynamics', [
        f'urdf_path:={PATH}', 'mode:=gravity_compensation',
        'payload_estimation.link:=tool0', 'payload_estimation.publish_rate:=5.0',
        'diagnostics_period:=0.3']))
    estimates = Latest(graph, InertiaStamped, '/liemb_dynamics/payload_estimate')
    covariances = Latest(graph, Float64MultiArray, '/liemb_dynamics/payload_estimate/covariance')
    torques = Latest(graph, JointState, '/liemb_dynamics/joint_torques')
    diags = Latest(graph, DiagnosticArray, '/diagnostics')
    pub = graph.node.create_publisher(JointState, '/joint_states', RELIABLE)
    wait_ready(graph)
    apply = '/liemb_dynamics/payload_estimate/apply'
    resp = graph.call(Trigger, apply, Trigger.Request())
    assert not resp.success and 'not applied' in resp.message, resp.message

    held = pinocchio_model(PAYLOAD)
    start = graph.node.get_clock().now().nanoseconds * 1e-9
    nan = JointState(name=NAMES, position=[0.1] * 7, velocity=[0.0] * 7,
                     effort=[float('nan')] * 7)
    bad = (JointState(name=NAMES, position=[0.1] * 7, velocity=[0.0] * 7),   # no efforts
           JointState(name=NAMES[:6] + ['gripper'], position=[0.1] * 7, velocity=[0.0] * 7,
                      effort=[0.0] * 7), nan)
    stream(graph, pub, 12.0, start, held, bad)
    graph.spin_until(lambda: diagnostics(diags.msgs, STATUS)[0] is not None and int(
        diagnostics(diags.msgs, STATUS)[2]['skipped']) >= 3)
    q = stream(graph, pub, 8.0, start, held)
    graph.spin_until(lambda: diagnostics(diags.msgs, STATUS)[0] == DiagnosticStatus.OK)
    level, message, values = diagnostics(diags.msgs, STATUS)
    assert 'kg at tool0' in message and int(values['samples']) > 1000, values
    for why in ('efforts not one per name', 'not every joint of the model', 'not finite'):
        assert why in values['skipped_why'], values['skipped_why']

    graph.spin_for(0.5)
    est = estimates.msgs[-1]
    assert est.header.frame_id == 'tool0'
    i = est.inertia
    assert abs(i.m - PAYLOAD[1]) < 0.01 * PAYLOAD[1]
    assert np.abs(np.array([i.com.x, i.com.y, i.com.z]) - PAYLOAD[2]).max() < 1e-3
    cov = np.array(covariances.msgs[-1].data).reshape(10, 10)
    assert np.allclose(cov, cov.T) and np.all(np.diag(cov) >= 0.0)

    # applied only when asked: the gravity torques are the unloaded arm's until then
    def gravity_torques():
        n = len(torques.msgs)
        pub.publish(JointState(name=NAMES, position=q.tolist(), velocity=[0.0] * 7))
        graph.spin_until(lambda: len(torques.msgs) > n)
        return np.array(torques.msgs[-1].effort)
    g_held = pin.computeGeneralizedGravity(held, held.createData(), q)
    assert np.abs(gravity_torques() - g_held).max() > 1.0   # the 1.5 kg at the tool
    resp = graph.call(Trigger, apply, Trigger.Request())
    assert resp.success and 'applied' in resp.message, resp.message
    error = np.abs(gravity_torques() - g_held).max()
    assert error < 0.01, error   # measured: 4e-5 N m
    resp = graph.call(Trigger, '/liemb_dynamics/payload_estimate/reset', Trigger.Request())
    assert resp.success
    assert graph.procs[0][2].poll() is None


@pytest.mark.parametrize('params,words', [
    (['payload_estimation.link:=base_link'], ["link 'base_link' is fixed to the base"]),
    (['payload_estimation.link:=no_such_link'], ['no_such_link']),
    (['payload_estimation.link:=tool0', 'payload_estimation.cutoff:=0.0'],
     ['parameter payload_estimation.cutoff', 'out of range']),
])
def test_estimation_parameters_that_cannot_work_end_the_node(graph, params, words):
    """Exit 1 with the reason, no traceback: as every parameter that cannot work."""
    res = subprocess.run(node_argv('dynamics', ['urdf_path:=liemb_arm7', *params]),
                         env=graph.env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 1, res.stdout + res.stderr
    assert all(w in res.stderr for w in words), res.stderr
    assert 'Traceback' not in res.stderr, res.stderr
