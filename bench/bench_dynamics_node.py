"""
The dynamics node under load: 1 kHz joint states on the Panda, torques + all twists + Jacobians.

Starts ``dynamics_node`` as its own process (``--mode``: full inverse dynamics by default;
``computed_torque`` tracking a quintic trajectory of the seven arm joints, as a
JointTrajectoryController does; ``cartesian_impedance`` of ``panda_hand`` with a null-space
posture term; twists of every link and wrenches of two joints at the node's
``secondary_rate``, to which this process listens) on a private localhost ROS domain,
publishes ``joint_states`` at ``--rate`` Hz from another process for ``--duration`` seconds
while this one receives the torques, twists and wrenches and calls ``~/get_jacobian`` at
``--jacobian-rate`` Hz, then prints:

* achieved output rate: the node's own cycles per second over the measured window (from
  the ``cycles`` count in ``/diagnostics``) and the torque messages this process received
  per second (a lower bound: this one Python subscriber shares the 2 cores with the node
  and the publisher, and falls behind first), and dropped inputs;
* the node's own compute time per cycle, p50/p99/max (from ``/diagnostics``);
* end-to-end latency joint_states -> joint_torques (the torque message carries the state's
  stamp), p50/p99, as seen by this process: it includes this subscriber's own queue;
  ``latency_rx_*``: to the middleware's reception stamp in this process instead (what a
  C++ controller would see: no wait for this Python callback, whose thread shares the GIL
  with the publishing thread);
* Jacobian service round trips, p50/p99.

The node's own counts give the callback time (receive, convert, compute, publish) beside
the dynamics' compute time, and the fraction of the states it received in the window that
it processed (``--busy``: while another process keeps one core busy).

Usage: ``python bench/bench_dynamics_node.py [--rate 1000] [--duration 10] [--busy]
[--secondary-rate HZ] [--mode MODE] [--controller-state-rate HZ] [--realtime-priority N]
[--json]``.  Targets: rate >= 995 Hz, callback p99 <= 150 us, latency p99 <= 1 ms on a
quiet machine, >= 99 % processed with a busy core, node resident memory (``node_rss_mb``)
<= 300 MB.  ``callback_mean_us``: the callback's mean, which shows what a rarer extra
(``~/controller_state`` at 100 Hz of a 1 kHz loop: ``--mode computed_torque
--controller-state-rate 0`` or ``100``) costs on average.
"""
import argparse
import atexit
import json
import math
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'liemb_ros', 'test'))


_CHILDREN = []


def _child(proc):
    """Register a child process: whatever ends this run (an error too) ends it."""
    if not _CHILDREN:
        atexit.register(_reap)
    _CHILDREN.append(proc)
    return proc


def _reap():
    """Kill the children still running (a node left behind answers another run's states)."""
    for proc in _CHILDREN:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _rss_mb(pid):
    """Resident memory of process ``pid`` [MB] (Linux), NaN where it cannot be read."""
    try:
        with open(f'/proc/{pid}/status', encoding='ascii') as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float('nan')


def _cpu_s(pid):
    """CPU time (user + system) process ``pid`` has used [s] (Linux), NaN where unknown."""
    try:
        with open(f'/proc/{pid}/stat', encoding='ascii') as f:
            fields = f.read().rsplit(')', 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')
    except (OSError, IndexError, ValueError):
        return float('nan')


def publish(rate, duration):
    """Publish Panda joint states at ``rate`` Hz for ``duration`` s (its own process)."""
    import rclpy
    from conftest import erd_path
    from rclpy.qos import qos_profile_sensor_data
    from sensor_msgs.msg import JointState

    import liemb_ros as lm
    model = lm.load_urdf(erd_path('panda'))
    rng = np.random.default_rng(0)
    msgs = [JointState(name=list(model.joint_names),
                       position=model.random_configuration(rng).tolist(),
                       velocity=[0.0] * model.nv) for _ in range(100)]
    rclpy.init()
    node = rclpy.create_node('liemb_bench_publisher')
    pub = node.create_publisher(JointState, '/joint_states', qos_profile_sensor_data)
    while pub.get_subscription_count() == 0:
        time.sleep(0.05)
    period = 1.0 / rate
    t_next = time.perf_counter()
    end = t_next + duration
    k = 0
    while t_next < end:
        msg = msgs[k % len(msgs)]
        now = time.time()
        msg.header.stamp.sec = int(now)
        msg.header.stamp.nanosec = int((now - int(now)) * 1e9)
        pub.publish(msg)
        k += 1
        t_next += period
        pause = t_next - time.perf_counter()
        if pause > 2e-4:
            time.sleep(pause - 1.5e-4)
        while time.perf_counter() < t_next:
            pass
    node.destroy_node()
    rclpy.shutdown()


def _trajectory(model, duration):
    """
    Return a ``JointTrajectory`` of the Panda's seven arm joints for ``duration`` s.

    Slow sines (0.2 rad, 0.1-0.25 Hz) about the middle of each joint's range, a point every
    0.5 s with positions, velocities and accelerations: the node interpolates quintics.  The
    first point comes at 8 s and the last one is at rest: the node checks a trajectory
    against the Panda's limits, the segment from the state it holds included (the
    published states are random configurations at rest, up to 5 rad apart).
    """
    from builtin_interfaces.msg import Duration
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
    names = [n for n in model.joint_names if 'finger' not in n]
    idx = [model.joint_names.index(n) for n in names]
    mid = (model.lower[idx] + model.upper[idx]) / 2
    w = 2 * np.pi * np.linspace(0.1, 0.25, len(names))
    msg = JointTrajectory(joint_names=names)
    times = np.arange(8.0, max(duration, 9.0), 0.5)
    for k, t in enumerate(times):
        ns = int(round(t * 1e9))
        rest = 0.0 if k == len(times) - 1 else 1.0
        msg.points.append(JointTrajectoryPoint(
            positions=(mid + 0.2 * np.sin(w * t)).tolist(),
            velocities=(rest * 0.2 * w * np.cos(w * t)).tolist(),
            accelerations=(-rest * 0.2 * w**2 * np.sin(w * t)).tolist(),
            time_from_start=Duration(sec=ns // 10**9, nanosec=ns % 10**9)))
    return msg


def main(argv=None):
    """Run the benchmark; return the figures as a dict."""
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--rate', type=float, default=1000.0)
    ap.add_argument('--duration', type=float, default=10.0)
    ap.add_argument('--jacobian-rate', type=float, default=50.0)
    ap.add_argument('--json', action='store_true')
    ap.add_argument('--secondary-rate', type=float, default=None,
                    help="the node's secondary_rate (twists, wrenches); default: the node's")
    ap.add_argument('--mode', default='inverse_dynamics',
                    choices=['gravity_compensation', 'inverse_dynamics', 'computed_torque',
                             'cartesian_impedance'],
                    help="the node's mode (computed_torque tracks a quintic trajectory of "
                         'the seven arm joints for the whole run, cartesian_impedance holds '
                         'the pose of panda_hand where it started, with a null-space posture '
                         'term: --null-stiffness)')
    ap.add_argument('--null-stiffness', type=float, default=10.0,
                    help='cartesian_impedance: impedance.null_stiffness [N m/rad] (damping '
                         'a tenth of it); 0: no posture term')
    ap.add_argument('--markers', action='store_true',
                    help='listen to ~/markers too (as RViz does): the node then builds them')
    ap.add_argument('--controller-state-rate', type=float, default=None,
                    help="the node's controller_state_rate (computed_torque: "
                         '~/controller_state per second; 0: none); default: the node\'s')
    ap.add_argument('--busy', action='store_true',
                    help='keep one core busy with another process while measuring')
    ap.add_argument('--realtime-priority', type=int, default=0,
                    help="the node's realtime_priority (SCHED_FIFO of its loop thread; 0: "
                         'normal)')
    ap.add_argument('--publisher', action='store_true', help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.publisher:
        return publish(args.rate, args.duration)
    from ros_graph import claim_domain   # held against the tests' graphs and other runs
    os.environ.update(ROS_DOMAIN_ID=str(claim_domain()),
                      ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST')
    import rclpy
    from conftest import erd_path
    from diagnostic_msgs.msg import DiagnosticArray
    from liemb_interfaces.srv import GetJacobian
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from geometry_msgs.msg import WrenchStamped
    from liemb_interfaces.msg import TwistRepresentedArray
    from sensor_msgs.msg import JointState
    from trajectory_msgs.msg import JointTrajectory
    from visualization_msgs.msg import MarkerArray

    import liemb_ros as lm
    path = erd_path('panda')
    model = lm.load_urdf(path)
    links = '[' + ', '.join(model.link_names) + ']'
    argv_node = [sys.executable, '-m', 'liemb_ros.ros.dynamics_node', '--ros-args',
                 '-p', f'urdf_path:={path}', '-p', f'mode:={args.mode}',
                 '-p', 'impedance.link:=panda_hand',
                 '-p', f'twist_links:={links}',
                 '-p', 'wrench_joints:=[panda_joint1, panda_joint2]',
                 '-p', 'diagnostics_period:=0.5']
    if args.mode == 'cartesian_impedance':
        argv_node += ['-p', f'impedance.null_stiffness:={args.null_stiffness}',
                      '-p', f'impedance.null_damping:={args.null_stiffness / 10}']
    if args.secondary_rate is not None:
        argv_node += ['-p', f'secondary_rate:={args.secondary_rate}']
    if args.realtime_priority:
        argv_node += ['-p', f'realtime_priority:={args.realtime_priority}']
    if args.controller_state_rate is not None:
        argv_node += ['-p', f'controller_state_rate:={args.controller_state_rate}']
    log = open(os.path.join(os.environ.get('TMPDIR', '/tmp'), 'bench_dynamics_node.log'), 'w')
    proc = _child(subprocess.Popen(argv_node, stdout=log, stderr=subprocess.STDOUT))
    rclpy.init()
    node = rclpy.create_node('liemb_bench')
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    reliable = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
    latency, diag, cycles = [], {}, []

    def on_torque(msg, info):
        sent = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
        # also to the middleware's reception in this process (its own thread): without the
        # wait for this Python callback, which shares the GIL with the publishing thread
        latency.append((sent, time.time() - sent, info['received_timestamp'] * 1e-9 - sent))

    def on_diag(msg):
        for st in msg.status:
            if st.name.startswith('liemb_dynamics'):
                diag.update({kv.key: kv.value for kv in st.values})
                if 'cycles' in diag:
                    cycles.append((time.monotonic(), int(diag['cycles']),
                                   int(diag.get('received', 0)), int(diag.get('processed', 0))))
    node.create_subscription(JointState, '/liemb_dynamics/joint_torques', on_torque, reliable)
    node.create_subscription(DiagnosticArray, '/diagnostics', on_diag, reliable)
    # the twists and wrenches have a listener (the node computes and sends them only then)
    node.create_subscription(TwistRepresentedArray, '/liemb_dynamics/twists', lambda m: None,
                             reliable)
    for token in ('panda_joint1', 'panda_joint2'):
        node.create_subscription(WrenchStamped, f'/liemb_dynamics/wrench/{token}',
                                 lambda m: None, reliable)
    if args.markers:
        node.create_subscription(MarkerArray, '/liemb_dynamics/markers', lambda m: None,
                                 reliable)
    if args.mode == 'computed_torque':   # a trajectory to track, for the whole run
        pub_trajectory = node.create_publisher(
            JointTrajectory, '/liemb_dynamics/joint_trajectory', reliable)
        trajectory = _trajectory(model, args.duration + 60.0)
    client = node.create_client(GetJacobian, '/liemb_dynamics/get_jacobian')
    deadline = time.monotonic() + 120
    while not client.service_is_ready():
        executor.spin_once(timeout_sec=0.05)
        if time.monotonic() > deadline or proc.poll() is not None:
            raise SystemExit('the dynamics node did not come up; see ' + log.name)
    if args.mode == 'computed_torque':   # once the robot is loaded (a Jacobian comes)
        while True:
            future = client.call_async(GetJacobian.Request(
                link='panda_hand', joint_names=list(model.joint_names),
                positions=[0.0] * model.nq))
            while not future.done():
                executor.spin_once(timeout_sec=0.01)
            if future.result().success and pub_trajectory.get_subscription_count():
                break
            if time.monotonic() > deadline:
                raise SystemExit('the dynamics node did not load the robot; see ' + log.name)
            time.sleep(0.1)
        pub_trajectory.publish(trajectory)   # tracked from the first joint state on
    pub_proc = _child(subprocess.Popen([sys.executable, os.path.abspath(__file__),
                                        '--publisher', '--rate', str(args.rate),
                                        '--duration', str(args.duration + 4.0)]))
    busy = (_child(subprocess.Popen([sys.executable, '-c', 'while True: pass']))
            if args.busy else None)
    # warm-up (numba caches, DDS discovery), then measure
    t_warm = time.monotonic() + 3.0
    while time.monotonic() < t_warm:
        executor.spin_once(timeout_sec=0.01)
    if args.mode == 'computed_torque':   # a refused trajectory would measure a hold
        with open(log.name, encoding='utf-8', errors='replace') as f:
            said = f.read()
        if 'refused ~/joint_trajectory' in said:
            raise SystemExit('the dynamics node refused the trajectory; see ' + log.name)
    latency.clear()
    jac_rtt = []
    t0 = time.monotonic()
    t0_wall = time.time()
    cpu0 = _cpu_s(proc.pid)
    n_cycles0 = len(cycles)
    t_jac = t0 if args.jacobian_rate > 0 else math.inf   # 0: no Jacobian requests
    while time.monotonic() - t0 < args.duration:
        if time.monotonic() >= t_jac:
            t_jac += 1.0 / args.jacobian_rate
            start = time.perf_counter()
            future = client.call_async(GetJacobian.Request(link='panda_hand',
                                                           representation='hybrid'))
            while not future.done():
                executor.spin_once(timeout_sec=0.001)
            jac_rtt.append(time.perf_counter() - start)
        executor.spin_once(timeout_sec=0.001)
    elapsed = time.monotonic() - t0
    cpu = _cpu_s(proc.pid) - cpu0
    received = len(latency)
    # states sent during the warm-up may still be queued when it ends: they are counted as
    # received but left out of the latency, which is that of states sent while measuring
    measured = [lat for sent, lat, _ in latency[:received] if sent >= t0_wall]
    at_rx = np.array([rx for sent, _, rx in latency[:received] if sent >= t0_wall]) * 1e6
    window = cycles[n_cycles0:]
    node_rate = ((window[-1][1] - window[0][1]) / (window[-1][0] - window[0][0])
                 if len(window) > 1 and window[-1][0] > window[0][0] else float('nan'))
    received_in, processed_in = ((window[-1][2] - window[0][2], window[-1][3] - window[0][3])
                                 if len(window) > 1 else (0, 0))
    if busy is not None:
        busy.kill()
        busy.wait()
    pub_proc.wait(timeout=30)
    t_d = time.monotonic() + 1.5
    while time.monotonic() < t_d:
        executor.spin_once(timeout_sec=0.05)
    rss_mb = _rss_mb(proc.pid)
    proc.send_signal(2)
    proc.wait(timeout=10)
    node.destroy_node()
    rclpy.shutdown()
    lat = np.array(measured) * 1e6
    rtt = np.array(jac_rtt) * 1e6
    out = {
        'mode': args.mode, 'input_rate_hz': args.rate, 'node_rate_hz': node_rate,
        'received_rate_hz': received / elapsed,
        'compute_p50_us': float(diag.get('compute_p50_us', 'nan')),
        'compute_p99_us': float(diag.get('compute_p99_us', 'nan')),
        'compute_max_us': float(diag.get('compute_max_us', 'nan')),
        'callback_p50_us': float(diag.get('callback_p50_us', 'nan')),
        'callback_p99_us': float(diag.get('callback_p99_us', 'nan')),
        'callback_mean_us': float(diag.get('callback_mean_us', 'nan')),
        'controller_state_rate_hz': ('node default' if args.controller_state_rate is None
                                     else args.controller_state_rate),
        'processed_fraction': processed_in / received_in if received_in else float('nan'),
        # the node's CPU time per state it received: executor, callback and DDS threads;
        # a figure that other load on the machine changes far less than the times above
        'node_cpu_us_per_state': 1e6 * cpu / received_in if received_in else float('nan'),
        'lost': int(diag.get('lost', -1)),
        'scheduling': diag.get('scheduling', '?'),
        'busy_core': bool(args.busy),
        'dropped': int(diag.get('dropped', -1)),
        'latency_p50_us': float(np.percentile(lat, 50)) if lat.size else float('nan'),
        'latency_p99_us': float(np.percentile(lat, 99)) if lat.size else float('nan'),
        'latency_rx_p50_us': float(np.percentile(at_rx, 50)) if at_rx.size else float('nan'),
        'latency_rx_p99_us': float(np.percentile(at_rx, 99)) if at_rx.size else float('nan'),
        'jacobian_rtt_p50_us': float(np.percentile(rtt, 50)) if rtt.size else float('nan'),
        'jacobian_rtt_p99_us': float(np.percentile(rtt, 99)) if rtt.size else float('nan'),
        'twist_links': len(model.link_names), 'duration_s': elapsed,
        'node_rss_mb': rss_mb,
    }
    if args.json:
        print(json.dumps(out))
    else:
        print(f"dynamics node on the Panda ({model.nv} joints, {args.mode} torques + "
              f"{len(model.link_names)}"
              f" twists + 2 wrenches per state, Jacobian service at {args.jacobian_rate:g} Hz)")
        for k, v in out.items():
            print(f'  {k:<22} {v:10.1f}' if isinstance(v, float) else f'  {k:<22} {v:>10}')
    return out


if __name__ == '__main__':
    main()
