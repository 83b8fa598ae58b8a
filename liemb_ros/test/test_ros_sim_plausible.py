"""
The simulation node refuses the absurd and names what stopped it (issue 28), over DDS.

Each probe is the exact input a careless or hostile client sends, to the node started as
a process: a 1e12 N wrench, a wrench whose ``frame_id`` is a megabyte, an effort of
1e300, a velocity command of 1e308, 10 000 unknown joint names, a test torque of 1e300
set at run time, and a contact plane whose normal has length 2.  The node drops or refuses
each with the bound, says so in ``/diagnostics`` and in lines of bounded length, keeps
running, and never publishes an absurd state: driven until its integration diverges (a
step of 0.05 s), it stops with the reason, naming the effort command, and every joint
state it sent is finite and slow.
"""
import pytest

from conftest import ros_importorskip

pytestmark = [pytest.mark.ros, pytest.mark.filterwarnings('ignore::DeprecationWarning:lark.*')]
rclpy, _ = ros_importorskip('rclpy', 'geometry_msgs.msg')

import numpy as np  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from geometry_msgs.msg import WrenchStamped  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rcl_interfaces.srv import SetParameters  # noqa: E402
from ros_graph import RELIABLE, Latest, diagnostics, node_argv, param  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402

SIM = 'liemb_simulation'
BALL = ('<robot name="ball"><link name="ball"><inertial><mass value="1.0"/><inertia '
        'ixx="0.004" iyy="0.004" izz="0.004" ixy="0" ixz="0" iyz="0"/></inertial><collision>'
        '<geometry><sphere radius="0.1"/></geometry></collision></link></robot>')
#: 100 times the 1 kg ball's weight under standard gravity [N]
BALL_FORCE_BOUND = 100 * 9.80665


def _t(msg):
    return msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec


def _longest_line(text):
    return max((len(line) for line in text.splitlines()), default=0)


def test_wrenches_beyond_plausible_are_dropped_on_a_ball_on_a_scaled_plane(graph, tmp_path):
    """
    The ground ``2 z = -0.6`` is ``z = -0.3``: the ball rests with its centre at
    ``-0.2 - g τ_c²``.  A 1e12 N wrench, a NaN one and one with a 1 MB ``frame_id`` are
    dropped (``/diagnostics``: the count and the last reason, with the bound), the ball
    stays at rest, the log's lines stay short.
    """
    urdf = tmp_path / 'ball.urdf'
    urdf.write_text(BALL)
    graph.run('sim', node_argv('simulation', [
        f'urdf_path:={urdf}', 'floating_base:=true', 'wait_for_command:=false',
        'publish_clock:=true', 'contact:=true', 'contact_planes:=[0.0, 0.0, 2.0, -0.6]',
        'publish_rate:=100.0', 'diagnostics_period:=0.2', 'real_time_factor:=2.0']))
    odom = Latest(graph, Odometry, f'/{SIM}/odom')
    diags = Latest(graph, DiagnosticArray, '/diagnostics')
    graph.spin_until(lambda: odom.msgs and _t(odom.msgs[-1]) > 1.0)
    rest = -0.2 - 9.81 * 0.005 ** 2
    assert odom.msgs[-1].pose.pose.position.z == pytest.approx(rest, abs=1e-5)

    pub = graph.node.create_publisher(WrenchStamped, f'/{SIM}/external_wrench/ball', RELIABLE)
    graph.spin_until(lambda: pub.get_subscription_count() > 0)

    def dropped():
        return diagnostics(diags.msgs, SIM)[2].get('dropped')

    def send(force_x, frame=''):
        before = int(dropped())
        msg = WrenchStamped()
        msg.header.frame_id = frame
        msg.wrench.force.x = force_x
        pub.publish(msg)
        graph.spin_until(lambda: int(dropped()) > before)
        return diagnostics(diags.msgs, SIM)[2]['last_dropped']

    graph.spin_until(lambda: dropped() is not None)
    why = send(1e12)
    assert f'force 1e+12 N beyond the plausible {BALL_FORCE_BOUND:.4g} N' in why, why
    assert 'a wrench with a NaN or an infinity' in send(float('nan'))
    why = send(1.0, frame='x' * 1_000_000)
    assert '(1000000 chars)' in why and len(why) < 1000, why[:300]
    n = len(odom.msgs)
    graph.spin_until(lambda: len(odom.msgs) > n + 50)
    for m in odom.msgs[n:]:
        p, v = m.pose.pose.position, m.twist.twist.linear
        assert p.z == pytest.approx(rest, abs=1e-5) and abs(v.x) < 1e-6, (p, v)
    out = graph.output('sim')
    assert 'Traceback' not in out and _longest_line(out) < 2000, _longest_line(out)


def test_the_absurd_is_dropped_and_no_absurd_state_goes_out(graph):
    """
    The arm at a step of 0.05 s (explicit Euler) waits for its first command while every
    absurd one is dropped with its bound; a plausible effort command then makes the step
    diverge: the node stops, naming the effort command and the applied torques, and every
    joint state it published is finite and slower than 1000 rad/s.
    """
    graph.run('sim', node_argv('simulation', [
        'urdf_path:=liemb_arm7', 'dt:=0.05', 'integrator:=euler', 'wait_for_command:=true',
        'publish_rate:=50.0', 'diagnostics_period:=0.2']))
    states = Latest(graph, JointState, '/joint_states')
    diags = Latest(graph, DiagnosticArray, '/diagnostics')
    graph.spin_until(lambda: diagnostics(diags.msgs, SIM)[2].get('dropped') is not None)
    effort = graph.node.create_publisher(Float64MultiArray, f'/{SIM}/effort_command', RELIABLE)
    velocity = graph.node.create_publisher(Float64MultiArray, f'/{SIM}/velocity_command',
                                           RELIABLE)
    named = graph.node.create_publisher(JointState, f'/{SIM}/effort', RELIABLE)
    graph.spin_until(lambda: effort.get_subscription_count() and velocity.get_subscription_count()
                     and named.get_subscription_count())

    def values():
        return diagnostics(diags.msgs, SIM)[2]

    def probe(publish, words):
        before = int(values()['dropped'])
        publish()
        graph.spin_until(lambda: int(values()['dropped']) > before)
        assert words in values()['last_dropped'], values()['last_dropped']

    probe(lambda: effort.publish(Float64MultiArray(data=[1e300] * 7)),
          "effort 1e+300 of joint 'joint1' is beyond the plausible")
    probe(lambda: velocity.publish(Float64MultiArray(data=[1e308] * 7)),
          "velocity 1e+308 of joint 'joint1' is beyond the plausible")
    probe(lambda: named.publish(JointState(name=['joint1'], effort=[-1e300])),
          "joint torque -1e+300 on 'joint1' beyond the plausible")
    names = [f'nope{i}' for i in range(10000)]
    named.publish(JointState(name=names, effort=[0.0] * len(names)))
    graph.spin_until(lambda: values().get('ignored_joints', 'none') != 'none')
    assert len(values()['ignored_joints']) < 400
    res = graph.call(SetParameters, f'/{SIM}/set_parameters', SetParameters.Request(
        parameters=[param('test_torque_amplitude', [1e300])])).results[0]
    assert not res.successful and 'beyond the plausible' in res.reason, res.reason
    assert not states.msgs or all(not any(m.velocity) for m in states.msgs)   # still waiting

    effort.publish(Float64MultiArray(data=[130.0, -130.0, 65.0, -65.0, 9.0, -9.0, 9.0]))
    graph.spin_until(lambda: diagnostics(diags.msgs, SIM)[0] == DiagnosticStatus.ERROR)
    level, message, _ = diagnostics(diags.msgs, SIM)
    assert message.startswith('stopped: '), message
    assert 'the applied joint torques' in message and '~/effort_command' in message, message
    assert states.msgs, 'no joint state before the stop'
    for m in states.msgs:
        assert np.all(np.isfinite(m.position)) and np.all(np.isfinite(m.velocity))
        assert np.max(np.abs(m.velocity)) < 1000.0, m.velocity
    out = graph.output('sim')
    assert 'Traceback' not in out and _longest_line(out) < 2000, _longest_line(out)
