"""
The simulation node with a push on the arm's tool link: it moves, the joint limits hold.

The default arm falls from its neutral pose under gravity for 1.5 s; then
``~/external_wrench/tool0`` (60 N along world x, held: ``wrench_timeout 0``) swings it
around, into joint2's limit at speed.  Every published joint position stays within its
limits by the limit spring's tolerance, 0.1 rad: the soft limit of ``τ_c = 10 ms`` lets
an impact at ``v`` rad/s in by about ``v τ_c / e`` and a load ``τ`` by ``τ / k``
(measured 0.087 rad in the Simulator, 0.12 rad with 100 N).
"""
import numpy as np
import pytest

from conftest import ros_importorskip

pytestmark = [pytest.mark.ros, pytest.mark.filterwarnings('ignore::DeprecationWarning:lark.*')]
rclpy, _ = ros_importorskip('rclpy', 'geometry_msgs.msg')

import liemb_ros as lm  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from geometry_msgs.msg import WrenchStamped  # noqa: E402
from liemb_ros import resources  # noqa: E402
from ros_graph import RELIABLE, Latest, diagnostics, node_argv  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402


def _t(msg):
    return msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec


def test_external_wrench_moves_the_arm_limits_hold_efforts_clamped(graph):
    arm = lm.load_urdf(resources.robot_path('liemb_arm7'))
    graph.run('sim', node_argv('simulation', [
        'urdf_path:=liemb_arm7', 'wait_for_command:=false', 'publish_clock:=true',
        'wrench_timeout:=0.0', 'publish_rate:=100.0', 'diagnostics_period:=0.2']))
    states = Latest(graph, JointState, '/joint_states')
    diags = Latest(graph, DiagnosticArray, '/diagnostics')
    graph.spin_until(lambda: states.msgs and _t(states.msgs[-1]) > 1.5)
    q_rest = np.array(states.msgs[-1].position)
    push = graph.node.create_publisher(WrenchStamped,
                                       '/liemb_simulation/external_wrench/tool0', RELIABLE)
    graph.spin_until(lambda: push.get_subscription_count() > 0)
    msg = WrenchStamped()
    msg.header.frame_id = 'world'
    msg.wrench.force.x = 60.0
    push.publish(msg)
    t_push = _t(states.msgs[-1])
    graph.spin_until(lambda: _t(states.msgs[-1]) > t_push + 1.5)
    q = np.array([m.position for m in states.msgs])
    assert np.abs(q[-1] - q_rest).max() > 0.5                       # pushed: it moved
    below, above = (arm.lower - q).max(axis=0), (q - arm.upper).max(axis=0)
    assert below.max() < 0.1 and above.max() < 0.1, (below, above)
    graph.spin_until(lambda: diagnostics(diags.msgs, 'liemb_simulation')[2].get(
        'external_wrenches') == 'tool0')
    # an effort command past the URDF <limit effort> is applied (and reported) clamped
    cmd = graph.node.create_publisher(Float64MultiArray, '/liemb_simulation/effort_command',
                                      RELIABLE)
    graph.spin_until(lambda: cmd.get_subscription_count() > 0)
    cmd.publish(Float64MultiArray(data=[1e3] * 7))
    graph.spin_until(lambda: states.msgs[-1].effort[0] == arm.effort_limit[0])
    np.testing.assert_array_equal(states.msgs[-1].effort, arm.effort_limit)
    assert 'Traceback' not in graph.output('sim'), graph.output('sim')
