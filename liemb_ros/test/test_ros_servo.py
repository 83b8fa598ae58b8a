"""
The servo node flying the simulated arm, end to end over DDS (issue 15).

Started as a user starts it (``liemb launch servo``'s simulation and servo node, the
simulation's computed-torque velocity drive); the achieved twist is measured from the
simulation's ``joint_states`` by forward kinematics (``link_twist`` of the measured q, q̇),
not from anything the servo computes.  One pair of processes for every check (CI budget):
a constant command in each of the four representations and as ``TwistStamped`` is met
within 1 % after the ramp-up; a stale command stops the arm; bad commands (NaN, unknown
frame, representation, joint) are refused, counted, and the arm decelerates instead of
jumping; a joint jog into a limit stops at the margin; a command toward a singularity
(thresholds and mask changed at run time) slows and halts without a jump.  ``liemb teleop``
in a pseudo-terminal: keys become represented twists on the servo's topic.  The
simulation's position drive reaches a commanded position and holds it against gravity.
"""
import math
import os
import pty
import select
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import URDF_DIR, ros_importorskip

pytestmark = [pytest.mark.ros, pytest.mark.filterwarnings('ignore::DeprecationWarning:lark.*')]
rclpy, _ = ros_importorskip('rclpy', 'liemb_interfaces.msg')

import liemb_ros as lm  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from geometry_msgs.msg import TwistStamped  # noqa: E402
from liemb_interfaces.msg import TwistRepresented  # noqa: E402
from rcl_interfaces.srv import SetParametersAtomically  # noqa: E402
from ros_graph import RELIABLE, Latest, diagnostics, param  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray, String  # noqa: E402
from trajectory_msgs.msg import JointTrajectory  # noqa: E402
from liemb_ros.ros.common import LATCHED  # noqa: E402

Q0 = [0.3, 0.6, -0.2, -1.2, 0.4, 0.8, 2.5]
ACC = 5.0          # the shipped acceleration limit [rad/s²]
PERIOD = 1.0 / 500.0   # the shipped publish_rate
# The servo's outputs obey ACC exactly: two consecutive ones (by publication sequence
# number) differ by at most ACC times two periods, whatever the load (Arm.max_step).  The
# simulated arm follows them through its 20 Hz critically damped drive, whose velocity
# overshoots a ramp: up to 8.4 rad/s² over 10 ms measured quiet.  A jump shows larger: when
# the servo still caught a late cycle up in one step, a CI run measured 39 after the bad
# command, and a machine stalled 30 ms every ~0.3 s (real-time busy loops on both cores,
# plus one busy process) 19-34 in 3 of 4 runs; with the catch-up capped, 0 of 4.
ACC_TOLERANCE = 3.0 * ACC
V = np.array([0.05, -0.03, 0.04, 0.02, 0.02, -0.015])   # rad/s, m/s


def _represented(rep, twist):
    msg = TwistRepresented(representation=rep)
    msg.angular.x, msg.angular.y, msg.angular.z = (float(x) for x in twist[:3])
    msg.linear.x, msg.linear.y, msg.linear.z = (float(x) for x in twist[3:])
    return msg


def _stamped(frame, twist):
    msg = TwistStamped()
    msg.header.frame_id = frame
    t = msg.twist
    t.angular.x, t.angular.y, t.angular.z = (float(x) for x in twist[:3])
    t.linear.x, t.linear.y, t.linear.z = (float(x) for x in twist[3:])
    return msg


class Arm:
    """The client side: publishers, recorded joint states and statuses."""

    def __init__(self, graph):
        self.graph = graph
        self.model = lm.load_urdf(f'{URDF_DIR}/liemb_arm7.urdf')
        self.states = Latest(graph, JointState, '/joint_states')
        self.status = Latest(graph, String, '/liemb_servo/status', LATCHED)
        self.diags = Latest(graph, DiagnosticArray, '/diagnostics')
        node = graph.node
        self.rep = node.create_publisher(TwistRepresented, '/liemb_servo/twist_cmd_represented',
                                         RELIABLE)
        self.stamped = node.create_publisher(TwistStamped, '/liemb_servo/twist_cmd', RELIABLE)
        self.jog = node.create_publisher(JointState, '/liemb_servo/joint_jog', RELIABLE)
        self.commands = []     # (publication sequence number, velocities) the servo sent
        node.create_subscription(
            Float64MultiArray, '/liemb_simulation/velocity_command',
            lambda m, info: self.commands.append((info['publication_sequence_number'],
                                                  np.array(m.data))), RELIABLE)

    def max_step(self, first):
        """Largest change of a joint velocity between consecutive servo outputs from ``first``."""
        seq = np.array([c[0] for c in self.commands[first:]])
        v = np.array([c[1] for c in self.commands[first:]])
        consecutive = np.flatnonzero(np.diff(seq) == 1)
        assert consecutive.size > 0.5 * len(seq) > 10, (consecutive.size, len(seq))
        return float(np.abs(v[consecutive + 1] - v[consecutive]).max())

    def hold(self, pub, msg, seconds, samples=0, settle=0.4, timeout=20.0):
        """
        Publish ``msg`` at 50 Hz for ``seconds``; return the index of the first state.

        With ``samples``, go on (up to ``timeout`` s) until that many joint states stamped
        more than ``settle`` s after the first have arrived: a starved machine may run the
        simulation slower than the wall clock.
        """
        start = len(self.states.msgs)
        clock = self.graph.node.get_clock()
        begin = clock.now().nanoseconds
        end, deadline = begin + seconds * 1e9, begin + timeout * 1e9

        def enough():
            msgs = self.states.msgs[start:]
            return not samples or (msgs and sum(
                _t(m) - _t(msgs[0]) > settle for m in msgs) > samples)
        while (clock.now().nanoseconds < end
               or (not enough() and clock.now().nanoseconds < deadline)):
            pub.publish(msg)
            self.graph.spin_for(0.02)
        return start

    def qd(self, k=-1):
        return np.array(self.states.msgs[k].velocity)

    def wait_status(self, name, timeout=10.0):
        self.graph.spin_until(lambda: self.status.msgs and self.status.msgs[-1].data == name,
                              timeout=timeout)

    def wait_rest(self):
        self.wait_status('stale_command')
        self.graph.spin_until(lambda: np.abs(self.qd()).max() < 1e-3, timeout=5.0)

    def twists(self, first, rep, settle=0.4):
        """Measured twists of tool0 from joint states ``first``.. after ``settle`` seconds."""
        msgs = self.states.msgs[first:]
        t0 = _t(msgs[0])
        return np.array([lm.link_twist(self.model, np.array(m.position),
                                       np.array(m.velocity), 'tool0', rep)
                         for m in msgs if _t(m) - t0 > settle])

    def max_acceleration(self, first, window=0.01):
        """
        Largest joint acceleration over ``window`` seconds of joint states from ``first``.

        Each state is paired with the first later one (in arrival order) stamped at least
        ``window`` after it: stamps are the simulation's wall clock, which nothing
        guarantees to be monotonic.  A failure names the states around the largest.
        """
        msgs = self.states.msgs[first:]
        t = np.array([_t(m) for m in msgs])
        qd = np.array([m.velocity for m in msgs])
        best, where = 0.0, None
        for i in range(len(t)):
            later = np.flatnonzero(t[i + 1:] - t[i] >= window)
            if later.size:
                j = i + 1 + later[0]
                a = np.abs(qd[j] - qd[i]).max() / (t[j] - t[i])
                if a > best:
                    best, where = a, (i, j)
        if best >= ACC_TOLERANCE:
            i, j = where
            rows = '\n'.join(f'{k}: t={t[k] - t[i]:+.4f} qd={np.round(qd[k], 4).tolist()}'
                             for k in range(max(i - 2, 0), min(j + 3, len(t))))
            print(f'largest acceleration {best:.3g} between states {i} and {j}:\n{rows}')
        return best


def _t(msg):
    return msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec


def test_servo_flies_the_simulated_arm(graph):
    # The client publishes the commands: a pause of this process longer than the servo's
    # 0.2 s command timeout stops the arm (correctly) and fails the 1 % check.  Full garbage
    # collections over the suite's heap made such pauses (reproduced: a collection every
    # 3 s over a large heap failed this test; with the heap frozen by the graph fixture,
    # ros_graph.Graph, it passes).
    q0 = '[' + ', '.join(str(x) for x in Q0) + ']'
    graph.start('servo', {'liemb_simulation', 'liemb_servo'},
                params=[f'liemb_simulation:initial_positions:={q0}',
                        'liemb_simulation:publish_tf:=false',   # nobody listens: save CPU
                        'liemb_simulation:diagnostics_period:=0.2',
                        'liemb_servo:diagnostics_period:=0.2',
                        'liemb_servo:outputs:=[velocity, position, trajectory]'])
    arm = Arm(graph)
    position = Latest(graph, Float64MultiArray, '/liemb_servo/position_command')
    trajectory = Latest(graph, JointTrajectory, '/liemb_servo/joint_trajectory')
    arm.wait_status('idle', timeout=180.0)     # state received, zero commands flowing
    graph.spin_until(lambda: len(arm.states.msgs) > 10)

    # every representation, and TwistStamped in the world frame (= hybrid), within 1 %
    cases = [(arm.rep, _represented(r, V), r) for r in lm.REPRESENTATIONS]
    cases.append((arm.stamped, _stamped('world', V), 'hybrid'))
    for pub, msg, rep in cases:
        first = arm.hold(pub, msg, 1.0, samples=40)
        measured = arm.twists(first, rep)
        assert len(measured) > 20, len(measured)
        err = np.abs(measured - V).max(axis=1) / np.abs(V).max()
        assert err.max() < 0.01, (rep, err.max(), measured[np.argmax(err)])
        arm.wait_rest()                          # the command went stale: the arm stops

    # the outputs of one step agree: the trajectory point is the position output moved on
    # by the velocities for the lookahead (0.05 s); matched by content (this client drops)
    positions = np.array([m.data for m in position.msgs])
    moving = [t for t in trajectory.msgs if np.abs(t.points[0].velocities).max() > 0.01]
    assert moving and moving[-1].joint_names == list(arm.model.joint_names)
    for t in moving[-5:]:
        point = t.points[0]
        assert point.time_from_start.nanosec == 50_000_000
        p = np.subtract(point.positions, 0.05 * np.array(point.velocities))
        assert np.abs(positions - p).max(axis=1).min() < 1e-12

    # bad commands: refused, counted; the moving arm decelerates, never jumps
    sent = len(arm.commands)
    first = arm.hold(arm.rep, _represented('hybrid', V), 0.4)
    arm.rep.publish(_represented('hybrid', [math.nan] * 6))
    arm.wait_status('invalid_command')
    graph.spin_until(lambda: np.abs(arm.qd()).max() < 1e-3, timeout=5.0)
    assert arm.max_step(sent) <= 2.0 * ACC * PERIOD + 1e-12
    assert arm.max_acceleration(first) < ACC_TOLERANCE
    bad = _represented('body', V)   # a frame the representation does not name
    bad.angular_frame = 'world'
    for pub, msg, what in (
            (arm.stamped, _stamped('no_such_frame', V), 'no_such_frame'),
            (arm.rep, _represented('screw', V), 'screw'),
            (arm.jog, JointState(name=['joint1', 'gripper'], velocity=[0.1, 0.1]), 'gripper'),
            (arm.rep, bad, 'angular_frame')):
        pub.publish(msg)
        graph.spin_until(lambda: what in diagnostics(arm.diags.msgs, 'liemb_servo')[2].get(
            'last_refused', ''))
    _, _, values = diagnostics(arm.diags.msgs, 'liemb_servo')
    assert int(values['refused_commands']) == 5 and arm.status.msgs[-1].data == \
        'invalid_command'
    assert 'refused ~/twist_cmd_represented: non-finite' in graph.output('liemb_servo')

    # a joint jog into a limit stops at the margin (joint7: limit 3.0, margin 0.1)
    jog = JointState(name=['joint7'], velocity=[1.0])
    first = arm.hold(arm.jog, jog, 1.0)
    assert arm.status.msgs[-1].data == 'halt_for_joint_limit'
    # it settles at the margin; on the way the simulated arm follows its velocity drive
    # (20 Hz computed torque, friction) with a lag measured up to 6 mrad on a loaded CI
    # machine (3 mrad quiet), far from the 100 mrad to the limit itself
    q7 = [m.position[6] for m in arm.states.msgs[first:]]
    assert max(q7) < 2.9 + 1e-2 and abs(q7[-1] - 2.9) < 5e-3, (max(q7), q7[-1])
    assert abs(arm.qd()[6]) < 1e-2
    arm.wait_rest()

    # toward a singularity (translation only; thresholds lowered at run time)
    res = graph.call(SetParametersAtomically, '/liemb_servo/set_parameters_atomically',
                     SetParametersAtomically.Request(parameters=[
                         param('mask', [False, False, False, True, True, True]),
                         param('lower_singularity_threshold', 5.0),
                         param('hard_stop_singularity_threshold', 10.0)])).result
    assert res.successful, res.reason
    up = _represented('hybrid', [0, 0, 0, 0, 0, 0.3])
    first, sent = len(arm.states.msgs), len(arm.commands)
    seen = len(arm.status.msgs)
    end = graph.node.get_clock().now().nanoseconds + 6e9
    while arm.status.msgs[-1].data != 'halt_for_singularity':
        assert graph.node.get_clock().now().nanoseconds < end, graph.output('liemb_servo')
        arm.rep.publish(up)
        graph.spin_for(0.02)
    arm.hold(arm.rep, up, 0.3)
    names = [m.data for m in arm.status.msgs[seen:]]
    assert 'decelerate_for_singularity' in names, names
    assert np.abs(arm.qd()).max() < 1e-2
    assert arm.max_step(sent) <= 2.0 * ACC * PERIOD + 1e-12
    assert arm.max_acceleration(first) < ACC_TOLERANCE
    _, _, values = diagnostics(arm.diags.msgs, 'liemb_servo')
    assert float(values['condition_number']) > 5.0


def test_liemb_teleop_in_a_terminal_sends_represented_twists(graph):
    received = Latest(graph, TwistRepresented, '/liemb_servo/twist_cmd_represented')
    main, child = pty.openpty()          # a terminal, as a user has one
    proc = subprocess.Popen([sys.executable, '-m', 'liemb_ros.app.cli', 'teleop', '--linear',
                             '0.05'], stdin=child, stdout=child, stderr=child, env=graph.env)
    screen = []

    def drain():                          # the terminal must be read, or the writer blocks
        while select.select([main], [], [], 0)[0]:
            screen.append(os.read(main, 65536).decode(errors='replace'))
    try:
        def press(key, until):
            end = time.monotonic() + 30.0
            while not until():
                assert time.monotonic() < end and proc.poll() is None, ''.join(screen)[-300:]
                os.write(main, key.encode())
                graph.spin_for(0.05)
                drain()
        press('w', lambda: any(m.linear.x == 0.05 for m in received.msgs))
        assert received.msgs[-1].representation == 'hybrid'
        os.write(main, b'1')              # body
        press('r', lambda: any(m.linear.z == 0.05 and m.representation == 'body'
                               for m in received.msgs))
        os.write(main, b'q')
        end = time.monotonic() + 10.0
        while proc.poll() is None and time.monotonic() < end:
            drain()
            time.sleep(0.05)
        assert proc.wait(timeout=1) == 0
        text = ''.join(screen)
        assert 'body' in text and '+0.050' in text, text[-500:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(main)
        os.close(child)


def test_simulation_position_drive_reaches_the_commanded_position(graph):
    graph.start('servo', {'liemb_simulation'},
                params=['liemb_simulation:publish_tf:=false',
                        f"liemb_simulation:initial_positions:=[{', '.join(map(str, Q0))}]"])
    states = Latest(graph, JointState, '/joint_states')
    pub = graph.node.create_publisher(Float64MultiArray, '/liemb_simulation/position_command',
                                      RELIABLE)
    graph.spin_until(lambda: len(states.msgs) > 5 and pub.get_subscription_count() > 0)
    target = np.add(Q0, [0.1, -0.1, 0.1, 0.1, -0.1, 0.1, -0.1])
    end = time.monotonic() + 1.0                # 20 Hz drive: 1 s is ~6 time constants
    while time.monotonic() < end:
        pub.publish(Float64MultiArray(data=target.tolist()))
        graph.spin_for(0.02)
    np.testing.assert_allclose(states.msgs[-1].position, target, atol=2e-3)
    # gravity held by the drive: no command for longer than effort_timeout, still there
    graph.spin_for(0.8)
    np.testing.assert_allclose(states.msgs[-1].position, target, atol=2e-3)
    assert np.abs(states.msgs[-1].velocity).max() < 1e-2


def test_a_failing_cycle_commands_a_stop_and_the_node_goes_on():
    """
    A cycle that raises (a defect, not an input: every input is validated) must not kill
    the servo, which would leave a velocity controller on its last command: the node
    commands zero velocity and the measured position, reports ERROR in ``/diagnostics``
    with the error, and serves again once a cycle succeeds.  In-process, the node's own
    callbacks called directly (no DDS timing involved).
    """
    from rclpy.parameter import Parameter
    from rclpy.serialization import serialize_message
    from liemb_ros.ros.servo_node import ServoNode
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        node = ServoNode(context=context, parameter_overrides=[
            Parameter('urdf_path', value=os.path.join(URDF_DIR, 'liemb_arm7.urdf')),
            Parameter('outputs', value=['velocity', 'position'])])
        sent = {'velocity': [], 'position': []}
        for k in sent:
            node.outputs.pub[k].publish = lambda msg, k=k: sent[k].append(np.array(msg.data))
        diags = []
        node.outputs.pub_diag.publish = diags.append
        model = node.servo.model
        state = JointState(name=list(model.joint_names), position=Q0,
                           velocity=[0.0] * model.nq)
        node._on_joint_state(b'\x00\x01\x00\x00 not a joint state')   # dropped, logged
        assert node.state.stamp is None
        node._on_joint_state(serialize_message(state))   # the CDR bytes (a raw subscription)
        node._on_represented(_represented('hybrid', V))
        node._tick()
        assert np.abs(sent['velocity'][-1]).max() > 0         # flying
        good = node.servo.twist_step

        def broken(*a, **k):
            raise FloatingPointError('injected')
        node.servo.twist_step = broken
        for _ in range(3):
            node._tick()                                      # does not raise
        assert np.array_equal(sent['velocity'][-1], np.zeros(model.nq))
        np.testing.assert_array_equal(sent['position'][-1], Q0)
        node._diagnostics()
        st = diags[-1].status[0]
        values = {kv.key: kv.value for kv in st.values}
        assert st.level == DiagnosticStatus.ERROR and 'injected' in st.message
        assert values['failed_cycles'] == '3' and 'FloatingPointError' in values['last_error']
        node.servo.twist_step = good                          # the defect goes away
        node._on_represented(_represented('hybrid', V))
        node._tick()
        node._diagnostics()
        assert diags[-1].status[0].level != DiagnosticStatus.ERROR
        assert np.abs(sent['velocity'][-1]).max() > 0         # it restarted from rest
        node.destroy_node()
    finally:
        rclpy.try_shutdown(context=context)


def test_liemb_launch_servo_starts_where_the_tool_can_be_flown(graph):
    """``liemb launch servo`` as shipped: the arm starts at its ready configuration, not at
    q = 0 (straight up, exactly singular: the first key of ``liemb teleop``, ``r`` = +z,
    halted at once); ``r``'s twist moves the tool up at once, without a singularity status."""
    graph.start('servo', {'liemb_simulation', 'liemb_servo'},
                params=['liemb_simulation:publish_tf:=false'])
    arm = Arm(graph)
    arm.wait_status('idle', timeout=180.0)
    graph.spin_until(lambda: len(arm.states.msgs) > 10)
    q0 = np.array(arm.states.msgs[-1].position)
    assert np.abs(q0).max() > 0.3            # not the neutral pose
    up = _represented('hybrid', [0.0, 0.0, 0.0, 0.0, 0.0, 0.05])   # teleop's 'r'
    first = arm.hold(arm.rep, up, 0.6)
    statuses = {m.data for m in arm.status.msgs}
    assert not statuses & {'halt_for_singularity', 'decelerate_for_singularity'}, statuses
    twists = arm.twists(first, 'hybrid', settle=0.3)
    assert len(twists) > 5 and np.median(twists[:, 5]) > 0.04, twists[-3:]
