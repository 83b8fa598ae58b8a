"""
The dynamics node refuses trajectories it cannot track safely, over DDS, as a user sends them.

Each probe of issue 28 with its exact input, against the simulation and dynamics nodes of
``liemb launch sim mode:=computed_torque`` in lock-step on simulated time (the shipped
liemb_arm7; example-robot-data's Panda): a goal or ``~/joint_trajectory`` beyond a position
limit (joint2 to 5 rad, limit ±2: it was tracked into the stop at 7.6 rad/s), too fast for a
velocity or effort limit, stamped in the past (1 s after the epoch: the setpoint jumped to
the last point, as a JointTrajectoryController refuses it), a single point due at once 1 rad
away (19-27 rad/s), moving at its end, with efforts, with 10 001 points or 10 000 joint names
is refused, and the node's log names the joint, the point and the limit (for a timing, the
factor by which the trajectory slowed down would fit: the Panda's, slowed down by it, is
then tracked to success).  A goal without ``goal_tolerance`` succeeds only at its end point
(it succeeded with the arm elsewhere); a stamp in the past never makes the setpoint jump.
Nothing is commanded from a refused trajectory: the arm stays where it was.  The last test:
magnitudes and strings from messages (a 1 MB frame_id, a target 1e12 m away, a desired
acceleration of 1e300, 10 000 joint names) are refused with a bounded log line, and the
node keeps running.
"""
import numpy as np
import pytest

from conftest import erd_path, ros_importorskip

pytestmark = [pytest.mark.ros, pytest.mark.filterwarnings('ignore::DeprecationWarning:lark.*')]
rclpy, _ = ros_importorskip('rclpy', 'liemb_interfaces.srv')

import liemb_ros as lm  # noqa: E402
from action_msgs.msg import GoalStatus  # noqa: E402
from builtin_interfaces.msg import Duration, Time  # noqa: E402
from control_msgs.action import FollowJointTrajectory  # noqa: E402
from control_msgs.msg import JointTolerance, JointTrajectoryControllerState  # noqa: E402
from geometry_msgs.msg import PoseStamped  # noqa: E402
from rclpy.action import ActionClient  # noqa: E402
from ros_graph import RELIABLE, Latest, node_argv, wait_ready  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Header  # noqa: E402
from test_ros_control import (ARM, LOCKSTEP_NODE, Q0, _now, _spin_sim, _stamp,  # noqa: E402
                              _start, _trajectory_publisher)
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402

Result = FollowJointTrajectory.Result
#: every line the node logs stays this short, whatever the input
SHORT = 1000


def _duration(seconds):
    return Duration(sec=int(seconds), nanosec=int(round(seconds % 1 * 1e9)))


def _point(q, seconds, rest=True):
    """A point at ``seconds``: at rest (quintic to it) or with positions only (linear)."""
    q = list(map(float, q))
    zero = [0.0] * len(q) if rest else []
    return JointTrajectoryPoint(positions=q, velocities=zero, accelerations=zero,
                                time_from_start=_duration(seconds))


def _goal(names, points, stamp=None):
    traj = JointTrajectory(joint_names=list(names), points=points)
    if stamp is not None:
        traj.header.stamp = Time(sec=int(stamp), nanosec=int(round(stamp % 1 * 1e9)))
    return FollowJointTrajectory.Goal(trajectory=traj)


def _nodes(graph, params=(), kp=900.0, kd=60.0):
    """The arm in lock-step (computed_torque, config/control.yaml's gains); the client."""
    states, diags = _start(graph, 'computed_torque', [
        f'liemb_dynamics:computed_torque.kp:=[{kp}]',
        f'liemb_dynamics:computed_torque.kd:=[{kd}]', *params], lockstep=True)
    client = ActionClient(graph.node, FollowJointTrajectory,
                          '/liemb_dynamics/follow_joint_trajectory')
    graph.spin_until(client.server_is_ready)
    return states, client


def _send(graph, client, goal):
    """Send a goal; return its handle once answered."""
    future = client.send_goal_async(goal)
    graph.spin_until(future.done, timeout=60)
    return future.result()


def _log_after(graph, mark, *needles, node='liemb_dynamics'):
    """Wait until the node's log past ``mark`` characters holds every needle; return it."""
    def text():
        return graph.output(node)[mark:]
    graph.spin_until(lambda: all(n in text() for n in needles), timeout=20)
    graph.spin_for(0.15)   # the node throttles its refusals to one per 0.1 s
    return text()


def _refused(graph, client, goal, *needles):
    """Send ``goal``; it must be rejected, the log saying why (``needles``); return the line."""
    mark = len(graph.output('liemb_dynamics'))
    assert not _send(graph, client, goal).accepted
    new = _log_after(graph, mark, *needles)
    line = next(x for x in new.splitlines() if 'refused' in x and needles[0] in x)
    print(line[line.index('refused'):])
    return line


def test_the_compiled_reader_reads_what_rclpy_reads(rng):
    """
    ``~/joint_trajectory`` is read from its CDR bytes (compiled, without the GIL): the same
    names, stamp, times and arrays as rclpy's deserialisation for messages of every shape
    (empty velocities, a subset of joints, long frame ids, names of every length, a
    negative stamp), and bytes cut anywhere are refused, never misread.
    """
    from rclpy.serialization import serialize_message
    from liemb_ros.ros import trajectory_intake as intake
    for case in range(40):
        k = int(rng.integers(1, 8))
        names = list(rng.permutation(ARM.joint_names)[:k])
        fields = rng.integers(0, 3)   # positions; + velocities; + accelerations
        msg = JointTrajectory(joint_names=names)
        msg.header.frame_id = 'f' * int(rng.integers(0, 40))
        msg.header.stamp = Time(sec=int(rng.integers(-5, 2**31 - 1)),
                                nanosec=int(rng.integers(0, 10**9)))
        for i in range(int(rng.integers(1, 30))):
            p = JointTrajectoryPoint(positions=rng.normal(size=k).tolist(),
                                     time_from_start=_duration(i * 0.1 + rng.uniform()))
            if fields >= 1:
                p.velocities = rng.normal(size=k).tolist()
            if fields >= 2:
                p.accelerations = rng.normal(size=k).tolist()
            msg.points.append(p)
        data = serialize_message(msg)
        ours = intake.read_trajectory_cdr(data, ARM)
        ref = intake.read_trajectory_msg(msg, ARM)   # rclpy's message, read field by field
        assert ours.names == ref.names == names and ours.stamp == ref.stamp
        np.testing.assert_array_equal(ours.times, ref.times)
        for a, b in ((ours.positions, ref.positions), (ours.velocities, ref.velocities),
                     (ours.accelerations, ref.accelerations)):
            np.testing.assert_array_equal(np.reshape(a, (len(msg.points), -1)),
                                          np.reshape(b, (len(msg.points), -1)))
        # rclpy's buffer runs on past the message: its end is where a cut starts to read
        lo, hi = 0, len(data)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            try:
                intake.read_trajectory_cdr(data[:mid], ARM)
                hi = mid
            except ValueError:
                lo = mid
        assert hi >= 0.5 * len(data)
        for cut in rng.integers(0, hi, 5):
            with pytest.raises(ValueError, match='malformed or cut|cannot be read'):
                intake.read_trajectory_cdr(data[:cut], ARM)
    with pytest.raises(ValueError, match='bytes: at most'):
        intake.read_trajectory_cdr(b'\x00\x01' + bytes(intake.MAX_BYTES), ARM)


def test_goals_and_trajectories_beyond_the_limits_are_refused(graph):
    states, client = _nodes(graph)
    graph.spin_until(lambda: _now(states) > 1.5, timeout=60)   # 1 s after the epoch: past
    names = ARM.joint_names
    q_far = Q0.copy()
    q_far[1] = 5.0                                       # joint2: limit ±2 rad
    _refused(graph, client, _goal(names, [_point(q_far, 2.0)]),
             'joint2 position 5 rad at point 0 (time_from_start 2 s)', '[-2, 2] rad')
    q1 = Q0.copy()
    q1[0] += 1.0
    # stamped 1 s after the epoch, its point 0.2 s later: it ended before now
    _refused(graph, client, _goal(names, [_point(q1, 0.2)], stamp=1.0),
             'ends in the past', 'point 0')
    # one point due at once, 1 rad away (it was a step: 19-27 rad/s)
    line = _refused(graph, client, _goal(names, [_point(q1, 0.0, rest=False)]),
                    'would jump to 1 rad', 'point 0 (time_from_start 0 s)',
                    'needs time_from_start >=')
    need = float(line.split('time_from_start >= ')[1].split(' s')[0])
    assert 0.45 < need < 0.55   # linear, 1 rad at the joint's 2 rad/s
    # 1 rad in 0.3 s at rest at both ends (quintic): 1.875 / 0.3 = 6.25 rad/s at the middle
    line = _refused(graph, client, _goal(names, [_point(q1, 0.3)]),
                    'joint1 velocity', 'beyond its limit 2 rad/s',
                    'between the current state', 'slowed down by a factor of')
    factor = float(line.split('factor of ')[1].split(' ')[0])
    assert 3.1 < factor < 3.2   # 6.25 / 2 (+0.1 % margin)
    moving = _point(q1, 3.0)
    moving.velocities = [0.1] * 7
    _refused(graph, client, _goal(names, [moving]), 'joint1 velocity 0.1 rad/s at point 0',
             'must end at rest')
    pushing = _point(q1, 3.0)
    pushing.effort = [1.0] * 7
    _refused(graph, client, _goal(names, [pushing]), 'efforts in the points')
    many = [_point(Q0, 1.0 + k * 1e-3) for k in range(10_001)]
    _refused(graph, client, _goal(names, many), '10001 points: at most 10000')
    _refused(graph, client, _goal([f'j{k}' for k in range(10_000)], [_point(Q0, 1.0)]),
             '10000 joint names: the robot has 7 joints')
    # the same on ~/joint_trajectory: refused, nothing commanded
    pub = _trajectory_publisher(graph)
    for traj, needles in (
            (_goal(names, [_point(q_far, 2.0)]).trajectory, ('joint2 position 5 rad',)),
            (_goal(names, [_point(q1, 0.0, rest=False)]).trajectory, ('would jump',)),
            (_goal(names, [_point(q1, 0.2)], stamp=1.0).trajectory, ('ends in the past',))):
        mark = len(graph.output('liemb_dynamics'))
        pub.publish(traj)
        _log_after(graph, mark, 'refused ~/joint_trajectory', *needles)
    _spin_sim(graph, states, 0.5)
    moved = np.abs(np.array(states.msgs[-1].position) - Q0).max()
    print(f'after the refusals the arm is {moved:.1e} rad from where it was')
    assert moved < 1e-3
    log = graph.output('liemb_dynamics')
    assert max(len(x) for x in log.splitlines()) < SHORT
    # a goal within the limits, without tolerances: tracked to its end point
    res = _send(graph, client, _goal(names, [_point(q1, 1.2)]))
    assert res.accepted
    result = res.get_result_async()
    graph.spin_until(result.done, timeout=60)
    q = np.array(states.msgs[-1].position)
    print(f'the goal within the limits: status {result.result().status}, '
          f'{np.abs(q - q1).max():.1e} rad from its end')
    assert result.result().status == GoalStatus.STATUS_SUCCEEDED
    assert np.abs(q - q1).max() < 0.01


def test_a_goal_without_tolerances_succeeds_only_at_its_end(graph):
    """
    Soft gains (K_p 100/s²) without the friction feed-forward: the simulated joint1's
    Coulomb friction (2.6 N m) holds it about F / (M K_p) = 0.02 rad short of where a goal
    ends, and it creeps on only slowly (the friction is regularised).  Without
    goal_tolerance the default (computed_torque.goal_tolerance, 0.01 rad) applies:
    GOAL_TOLERANCE_VIOLATED one goal_time (1 s) after the end, naming the joint (it
    succeeded, the arm elsewhere); with the tolerances erased (-1, as
    JointTrajectoryController reads them) the same kind of goal succeeds.
    """
    states, client = _nodes(graph, [
        'liemb_dynamics:computed_torque.friction_compensation:=false'], kp=100.0, kd=20.0)
    _spin_sim(graph, states, 0.5)
    q1 = Q0.copy()
    q1[0] += 0.2
    start = _now(states)
    res = _send(graph, client, _goal(ARM.joint_names, [_point(q1, 1.0)]))
    assert res.accepted
    result = res.get_result_async()
    graph.spin_until(result.done, timeout=60)
    r = result.result()
    off = np.abs(np.array(states.msgs[-1].position) - q1)
    print(f'no goal_tolerance: status {r.status}, {r.result.error_string!r} after '
          f'{_now(states) - start:.2f} s; the arm {off.round(4).tolist()} rad from the end')
    assert r.status == GoalStatus.STATUS_ABORTED
    assert r.result.error_code == Result.GOAL_TOLERANCE_VIOLATED
    worst = ARM.joint_names[int(np.flatnonzero(off > 0.01)[0])]
    assert r.result.error_string.startswith(f'{worst} position error')
    assert 'goal tolerance 0.01' in r.result.error_string
    assert _now(states) - start > 1.9   # 1 s of motion, then the goal time
    goal = _goal(ARM.joint_names, [_point(Q0, 1.0)])
    goal.goal_tolerance = [JointTolerance(name=n, position=-1.0, velocity=-1.0)
                           for n in ARM.joint_names]
    res = _send(graph, client, goal)
    result = res.get_result_async()
    graph.spin_until(result.done, timeout=60)
    assert result.result().status == GoalStatus.STATUS_SUCCEEDED


def test_a_trajectory_whose_start_is_past_never_jumps(graph):
    """
    Stamped 1 s before now with points at 0.5 s (past), 2 s and 3 s: the point already due
    is left out, the reference goes from the state to the point at 2 s (JointTrajectory-
    Controller's replacement rule) without a jump; ~/controller_state shows it.
    """
    states, client = _nodes(graph)
    cstates = Latest(graph, JointTrajectoryControllerState, '/liemb_dynamics/controller_state')
    pub = _trajectory_publisher(graph)
    graph.spin_until(lambda: _now(states) > 1.5, timeout=60)
    q1, q2 = Q0.copy(), Q0.copy()
    q1[0], q2[0] = 0.5, 0.3
    t0 = _now(states)
    pub.publish(_goal(ARM.joint_names, [_point(q1, 0.5), _point(q2, 2.0), _point(Q0, 3.0)],
                      stamp=t0 - 1.0).trajectory)
    graph.spin_until(lambda: _now(states) > t0 + 2.5, timeout=60)
    msgs = [m for m in cstates.msgs if _stamp(m) > t0 - 0.05]
    ref = np.array([m.reference.positions[0] for m in msgs])
    t = np.array([_stamp(m) for m in msgs])
    steps = np.abs(np.diff(ref)) / np.diff(t)
    moved = np.flatnonzero(ref != ref[0])
    at = t[moved[0]]
    print(f'reference of joint1 from {ref[0]:.4f} rad; moves from {at - t0:.3f} s on; '
          f'fastest {steps.max():.3f} rad/s; at t0 + 1 s: {np.interp(t0 + 1.0, t, ref):.4f}')
    # from the state to 0.3 rad in about 1 s, quintic: 0.56 rad/s at most (more if the check
    # took long); the jump into the segment from 0.5 rad, half-way, was 0.47 rad in one
    # 10 ms step (47 rad/s)
    assert steps.max() < 5.0
    assert ref.max() < q2[0] + 1e-6   # never towards the point already due (0.5 rad)
    if at < t0 + 0.9:   # installed in time for the point at 2 s (always, but on a starved
        assert abs(np.interp(t0 + 1.0, t, ref) - q2[0]) < 1e-3   # machine): it is reached
    assert 'refused' not in graph.output('liemb_dynamics')


def test_the_panda_s_limits_and_its_slower_timing(graph):
    """
    example-robot-data's Panda: panda_joint4 beyond its upper limit (-0.0698 rad) is
    refused; 0.03 rad of panda_joint1 in 40 ms is beyond panda_joint3's 87 N m (the coupling)
    and the refusal's factor, applied, gives a goal that is tracked to success.
    """
    path = erd_path('panda')
    panda = lm.load_urdf(path)
    q0 = np.array([0.0, -0.3, 0.0, -2.0, 0.0, 1.6, 0.8, 0.02, 0.02])
    graph.run('liemb_simulation', node_argv('simulation', [
        f'urdf_path:={path}', 'publish_rate:=500.0', 'wait_for_command:=true',
        'test_torque_amplitude:=[0.0]', f"initial_positions:=[{', '.join(map(str, q0))}]",
        *LOCKSTEP_NODE]))
    graph.run('liemb_dynamics', node_argv('dynamics', [
        f'urdf_path:={path}', 'mode:=computed_torque', 'computed_torque.kp:=[900.0]',
        'computed_torque.kd:=[60.0]', 'use_sim_time:=true', 'twist_links:=[panda_hand]'])
        + ['-r', '~/effort_command:=/liemb_simulation/effort_command'])
    states = Latest(graph, JointState, '/joint_states')
    wait_ready(graph)
    graph.spin_until(lambda: len(states.msgs) > 10)
    graph.spin_until(lambda: _now(states) > _stamp(states.msgs[0]), timeout=60)
    client = ActionClient(graph.node, FollowJointTrajectory,
                          '/liemb_dynamics/follow_joint_trajectory')
    graph.spin_until(client.server_is_ready)
    _refused(graph, client, _goal(['panda_joint4'], [_point([0.5], 2.0)]),
             'panda_joint4 position 0.5 rad', '[-3.0718, -0.0698] rad')
    line = _refused(graph, client, _goal(['panda_joint1'], [_point([0.03], 0.04)]),
                    'feed-forward torque', 'beyond its limit 87 N m', 'factor of')
    factor = float(line.split('factor of ')[1].split(' ')[0])
    res = _send(graph, client, _goal(['panda_joint1'], [_point([0.03], 0.04 * factor * 1.02)]))
    assert res.accepted
    result = res.get_result_async()
    graph.spin_until(result.done, timeout=60)
    q = np.array(states.msgs[-1].position)
    print(f'slowed down by {factor * 1.02:.3f}: status {result.result().status}, panda_joint1 '
          f'at {q[0]:.4f} rad')
    assert result.result().status == GoalStatus.STATUS_SUCCEEDED and abs(q[0] - 0.03) < 0.01
    _spin_sim(graph, states, 0.5)   # the other joints, shaken by the fast motion, are held
    q = np.array(states.msgs[-1].position)
    print(f'half a second later the other joints are {np.abs(q[1:] - q0[1:]).max():.1e} rad '
          'from where they were')
    assert np.abs(q[1:] - q0[1:]).max() < 5e-3 and panda.nq == 9


def test_bad_magnitudes_and_long_strings_are_refused_in_short_lines(graph):
    """
    The dynamics node alone (computed_torque, then cartesian_impedance), fed by the test: a
    target pose with a 1 MB frame_id and one 1e12 m away, a desired acceleration of 1e300,
    a trajectory naming 10 000 joints, joint states naming 10 000 joints the robot lacks:
    each refused or ignored with a log line under 1000 characters that names the bound or
    the count; the node answers its next state with finite torques and exits 0 on SIGINT.
    """
    graph.run('liemb_dynamics', node_argv('dynamics', ['urdf_path:=liemb_arm7',
                                                       'mode:=cartesian_impedance']))
    torques = Latest(graph, JointState, '/liemb_dynamics/joint_torques')
    wait_ready(graph)
    js = graph.node.create_publisher(JointState, '/joint_states', RELIABLE)
    pose = graph.node.create_publisher(PoseStamped, '/liemb_dynamics/target_pose', RELIABLE)
    desired = graph.node.create_publisher(JointTrajectoryPoint, '/liemb_dynamics/desired',
                                          RELIABLE)
    for p in (js, pose, desired):
        graph.spin_until(lambda: p.get_subscription_count() > 0)
    traj = _trajectory_publisher(graph)

    def state(names=ARM.joint_names, q=Q0):
        n = len(torques.msgs)
        js.publish(JointState(header=Header(stamp=Time(sec=100)), name=list(names),
                              position=list(map(float, q))))
        graph.spin_until(lambda: len(torques.msgs) > n, timeout=20)
    state()
    mark = len(graph.output('liemb_dynamics'))
    far = PoseStamped(header=Header(frame_id='x' * 1_000_000))
    far.pose.orientation.w = 1.0
    pose.publish(far)
    _log_after(graph, mark, '(1000000 chars)')
    far.header.frame_id = 'world'
    far.pose.position.x = 1e12
    pose.publish(far)
    _log_after(graph, mark, 'target position 1e+12 m beyond the plausibility bound 1e+07 m')
    desired.publish(JointTrajectoryPoint(accelerations=[1e300] + [0.0] * 6))
    _log_after(graph, mark, 'desired acceleration 1e+300', 'plausibility bound 1e+06')
    traj.publish(JointTrajectory(joint_names=[f'j{k}' for k in range(10_000)],
                                 points=[_point([0.0] * 10_000, 1.0)]))
    _log_after(graph, mark, '10000 joint names')
    state(ARM.joint_names + [f'wheel_{k}' for k in range(10_000)], list(Q0) + [0.0] * 10_000)
    _log_after(graph, mark, 'ignoring joint(s)', 'chars)')
    state()
    assert np.all(np.isfinite(torques.msgs[-1].effort))
    log = graph.output('liemb_dynamics')
    longest = max(len(x) for x in log.splitlines())
    print(f'{len(log.splitlines())} log lines, the longest {longest} characters')
    assert longest < SHORT
    proc = next(p for label, _, p in graph.procs if label == 'liemb_dynamics')
    proc.send_signal(2)
    assert proc.wait(timeout=20) == 0, graph.output('liemb_dynamics')[-4000:]
