"""
The floor under bench_dynamics_node: a bare rclpy relay, no liemb, in the same 1 kHz set-up.

What the dynamics node's loop cannot go below on this machine: a relay process (plain
rclpy: a raw ``/joint_states`` subscription with the node's QoS, spun by rclpy's executor)
publishes each state's bytes, unchanged, as ``/liemb_dynamics/joint_torques`` (reliable,
one subscriber: this process) and on a second topic nobody reads (as ``~/effort_command``
in the benchmark) — one take and two writes, no conversion, no dynamics.  The publisher is
bench_dynamics_node's (Panda joint states at ``--rate`` Hz, sensor-data QoS, from its own
process); this process listens to the relayed torques as bench_dynamics_node does.

Prints the relay's callback time (its body: the two publishes; p50/p99) and the end-to-end
latency (publisher's stamp -> this process's callback, and -> the middleware's reception
stamp here), the fraction of states relayed, optionally with another process keeping one
core busy (``--busy``).  Usage: ``python bench/bench_rclpy_floor.py [--rate 1000]
[--duration 10] [--busy] [--json]``.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, '..', 'liemb_ros', 'test'))

from bench_dynamics_node import _child, _cpu_s  # noqa: E402 (its children die with this run)


def relay(duration):
    """Relay joint states as torques for ``duration`` s; print the callback times (JSON)."""
    import rclpy
    from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
    from sensor_msgs.msg import JointState
    rclpy.init()
    node = rclpy.create_node('liemb_dynamics')
    reliable = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
    torques = node.create_publisher(JointState, '~/joint_torques', reliable)
    command = node.create_publisher(JointState, '~/effort_command', reliable)
    times = []

    def on_state(data):
        t0 = time.perf_counter()
        torques.publish(data)
        command.publish(data)
        times.append(time.perf_counter() - t0)
    node.create_subscription(JointState, '/joint_states', on_state, qos_profile_sensor_data,
                             raw=True)
    end = time.monotonic() + duration
    try:
        while time.monotonic() < end:   # or until the listener says it is done (SIGINT)
            rclpy.spin_once(node, timeout_sec=0.05)
    except KeyboardInterrupt:
        pass
    t = np.array(times[len(times) // 4:]) * 1e6   # after the warm-up quarter
    print(json.dumps({'relayed': len(times),
                      'callback_p50_us': float(np.percentile(t, 50)) if t.size else None,
                      'callback_p99_us': float(np.percentile(t, 99)) if t.size else None}),
          flush=True)
    node.destroy_node()
    rclpy.try_shutdown()


def main(argv=None):
    """Run the relay, the publisher and the listener; return the figures as a dict."""
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--rate', type=float, default=1000.0)
    ap.add_argument('--duration', type=float, default=10.0)
    ap.add_argument('--busy', action='store_true')
    ap.add_argument('--json', action='store_true')
    ap.add_argument('--relay', type=float, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.relay is not None:
        return relay(args.relay)
    from ros_graph import claim_domain
    os.environ.update(ROS_DOMAIN_ID=str(claim_domain()),
                      ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST')
    import rclpy
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState
    total = args.duration + 60.0
    proc = _child(subprocess.Popen([sys.executable, os.path.abspath(__file__),
                                    '--relay', str(total)], stdout=subprocess.PIPE, text=True))
    rclpy.init()
    node = rclpy.create_node('liemb_bench_floor')
    latency = []

    def on_torque(msg, info):
        sent = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
        latency.append((sent, time.time() - sent, info['received_timestamp'] * 1e-9 - sent))
    node.create_subscription(JointState, '/liemb_dynamics/joint_torques', on_torque,
                             QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE))
    pub = _child(subprocess.Popen([sys.executable, os.path.join(HERE, 'bench_dynamics_node.py'),
                                   '--publisher', '--rate', str(args.rate),
                                   '--duration', str(args.duration + 30.0)]))
    busy = (_child(subprocess.Popen([sys.executable, '-c', 'while True: pass']))
            if args.busy else None)
    deadline = time.monotonic() + 60.0
    while not latency and time.monotonic() < deadline:   # the publisher has started
        rclpy.spin_once(node, timeout_sec=0.01)
    t_warm = time.monotonic() + 2.0
    while time.monotonic() < t_warm:
        rclpy.spin_once(node, timeout_sec=0.01)
    t0, t0_wall, cpu0 = time.monotonic(), time.time(), _cpu_s(proc.pid)
    while time.monotonic() - t0 < args.duration:
        rclpy.spin_once(node, timeout_sec=0.01)
    cpu = _cpu_s(proc.pid) - cpu0
    if busy is not None:
        busy.kill()
    pub.kill()
    proc.send_signal(2)
    relay_out = json.loads(proc.communicate(timeout=total + 30)[0].strip().splitlines()[-1])
    node.destroy_node()
    rclpy.shutdown()
    window = [(lat, rx) for sent, lat, rx in latency if t0_wall <= sent <= t0_wall
              + args.duration]
    lat = np.array([w[0] for w in window]) * 1e6
    rx = np.array([w[1] for w in window]) * 1e6
    out = {'input_rate_hz': args.rate, 'busy_core': args.busy,
           'relayed_fraction': len(window) / (args.rate * args.duration),
           'relay_callback_p50_us': relay_out['callback_p50_us'],
           'relay_callback_p99_us': relay_out['callback_p99_us'],
           'relay_cpu_us_per_state': 1e6 * cpu / max(len(window), 1),
           'latency_p50_us': float(np.percentile(lat, 50)),
           'latency_p99_us': float(np.percentile(lat, 99)),
           'latency_rx_p50_us': float(np.percentile(rx, 50)),
           'latency_rx_p99_us': float(np.percentile(rx, 99))}
    if args.json:
        print(json.dumps(out))
    else:
        print('bare rclpy relay (one take, two writes) at the dynamics node benchmark\'s load')
        for k, v in out.items():
            print(f'  {k:<24} {v:10.1f}' if isinstance(v, float) else f'  {k:<24} {v!s:>10}')
    return out


if __name__ == '__main__':
    main()
