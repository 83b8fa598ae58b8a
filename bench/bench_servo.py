"""
The servo loop on the Panda: compute time of one step, and command -> joint command latency.

1. Compute (in this process, no ROS): one servo step as the node runs it, the state
   prediction (:class:`liemb_ros.control.servo.CommandHistory`) and :meth:`Servo.twist_step` of
   ``panda_hand_tcp`` in each representation and for a TwistStamped frame, over
   ``--steps`` steps along a slow motion (1 s from the ready pose, repeated); p50/p99/max
   per kind; and with the singularity look-ahead (condition number above the lower
   threshold: a second Jacobian and SVD).
2. Latency over DDS, at each ``--rates`` servo rate: ``servo_node`` as its own process (the
   Panda from its URDF, velocity output, acceleration limits lifted so that one step
   reflects a new command) on a private localhost ROS domain; this process publishes the
   Panda's joint states at 250 Hz and a twist that flips sign every 20 ms, and times each
   flip from its publication to the first ``~/velocity_command`` with the new sign, as
   received here: two DDS hops and the servo's step (a new command is served at once).
   Also from the servo's ``/diagnostics``: its compute p50/p99 and, inside the node, the
   time from a command's arrival (callback) to the publication of the output it shaped.

Usage: ``python bench/bench_servo.py [--steps 20000] [--duration 8] [--rates 500 1000]
[--json]``.  Targets (issue 15): compute p99 <= 200 us on the Panda, latency p99 <= 2 ms
at 500 Hz.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'liemb_ros', 'test'))

Q_READY = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02, 0.02]
LINK = 'panda_hand_tcp'


def _stats(samples_us):
    a = np.asarray(samples_us, dtype=float)
    return {'p50': float(np.percentile(a, 50)), 'p99': float(np.percentile(a, 99)),
            'max': float(a.max()), 'n': int(a.size)}


def bench_compute(steps):
    """Time one node step (prediction + law) per command kind, in microseconds."""
    from conftest import erd_path

    import liemb_ros as lm
    from liemb_ros.control.servo import CommandHistory, Servo
    model = lm.load_urdf(erd_path('panda'))
    V = np.array([0.05, -0.03, 0.04, 0.02, 0.02, -0.015])
    out = {}
    kinds = [(rep, {'representation': rep}, {}) for rep in lm.REPRESENTATIONS]
    kinds.append(('stamped panda_link0', {'frame': 'panda_link0'}, {}))
    # condition number above the lower threshold: the look-ahead Jacobian and SVD too
    kinds.append(('hybrid, look-ahead', {'representation': 'hybrid'},
                  {'singularity_thresholds': (1.0, 1e6)}))
    for name, kw, law in kinds:
        servo = Servo(model, LINK, period=0.002, **law)
        history = CommandHistory()
        q = np.array(Q_READY)
        servo.twist_step(q, V, **kw)            # compile / warm
        times = np.empty(steps)
        for k in range(steps):
            if k % 500 == 0:                     # 1 s of motion, then back to the start
                q = np.array(Q_READY)
            t_now = k * 0.002
            t0 = time.perf_counter()
            qp = history.predict(q, t_now - 0.003, t_now)
            res = servo.twist_step(qp, V, **kw)
            history.add(t_now, res.velocities)
            times[k] = time.perf_counter() - t0
            q = q + res.velocities * 0.002
        out[name] = _stats(times * 1e6)
    return out


def bench_latency(rate, duration, urdf):
    """Start servo_node at ``rate`` Hz; return the flip latencies and its diagnostics."""
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    from geometry_msgs.msg import TwistStamped
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    from ros_graph import claim_domain   # held against the tests' graphs and other runs
    domain = claim_domain()
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain), ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST')
    argv = [sys.executable, '-m', 'liemb_ros.ros.servo_node', '--ros-args',
            '-p', f'urdf_path:={urdf}', '-p', f'link:={LINK}',
            '-p', f'publish_rate:={float(rate)}', '-p', 'acceleration_limits:=[1000000.0]',
            '-p', 'command_timeout:=0.5', '-p', 'diagnostics_period:=0.5']
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.STDOUT)
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain)
    node = rclpy.create_node('liemb_bench_servo', context=context)
    ex = SingleThreadedExecutor(context=context)
    ex.add_node(node)
    reliable = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
    pub_js = node.create_publisher(JointState, '/joint_states', qos_profile_sensor_data)
    pub_cmd = node.create_publisher(TwistStamped, '/liemb_servo/twist_cmd', reliable)
    state = JointState(name=[f'panda_joint{i}' for i in range(1, 8)]
                       + ['panda_finger_joint1', 'panda_finger_joint2'], position=Q_READY)
    flips = {'sign': 1.0, 't': None, 'lat': [], 'diag': {}}

    def on_output(msg):
        # joint 1 follows the sign of the commanded x velocity of the hand at this pose
        if flips['t'] is not None and np.sign(msg.data[0]) == flips['sign'] * flips['ref']:
            flips['lat'].append(time.perf_counter() - flips['t'])
            flips['t'] = None

    def on_diag(msg):
        for s in msg.status:
            if s.name == 'liemb_servo':
                flips['diag'] = {kv.key: kv.value for kv in s.values}

    newest = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE)   # no backlog here
    node.create_subscription(Float64MultiArray, '/liemb_servo/velocity_command', on_output,
                             newest)
    node.create_subscription(DiagnosticArray, '/diagnostics', on_diag, reliable)
    node.create_timer(0.004, lambda: pub_js.publish(state))
    twist = TwistStamped()
    twist.header.frame_id = 'panda_link0'

    def send(sign):
        flips['sign'] = sign
        twist.twist.linear.y = 0.05 * sign
        flips['t'] = time.perf_counter()
        pub_cmd.publish(twist)

    try:
        # the sign of joint 1's velocity for +y (calibrated once the servo answers)
        first = []
        sub_first = node.create_subscription(
            Float64MultiArray, '/liemb_servo/velocity_command',
            lambda m: first.append(m.data[0]) if abs(m.data[0]) > 1e-6 else None, reliable)
        end = time.monotonic() + 180.0
        while not first:
            assert time.monotonic() < end and proc.poll() is None, 'servo_node did not answer'
            twist.twist.linear.y = 0.05
            pub_cmd.publish(twist)
            ex.spin_once(timeout_sec=0.01)
        node.destroy_subscription(sub_first)
        flips['ref'] = float(np.sign(first[-1]))
        end = time.monotonic() + duration
        next_flip, sign = time.monotonic(), 1.0
        while time.monotonic() < end:
            if time.monotonic() >= next_flip:
                sign = -sign
                send(sign)
                next_flip += 0.02
            ex.spin_once(timeout_sec=0.0005)
        t = time.monotonic() + 1.2          # one more diagnostics message
        while time.monotonic() < t:
            ex.spin_once(timeout_sec=0.01)
    finally:
        proc.send_signal(2)
        proc.wait(timeout=10)
        ex.shutdown(timeout_sec=1)
        node.destroy_node()
        context.try_shutdown()
    d = flips['diag']
    return {'latency_us': _stats(np.array(flips['lat']) * 1e6),
            'node_rate_hz': float(d.get('rate_hz', 'nan')),
            'node_compute_p50_us': float(d.get('compute_p50_us', 'nan')),
            'node_compute_p99_us': float(d.get('compute_p99_us', 'nan')),
            'node_command_to_output_p50_us': float(d.get('command_to_output_p50_us', 'nan')),
            'node_command_to_output_p99_us': float(d.get('command_to_output_p99_us', 'nan'))}


def main():
    """Run both parts; print a table (or JSON)."""
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--steps', type=int, default=20000)
    ap.add_argument('--duration', type=float, default=8.0)
    ap.add_argument('--rates', type=float, nargs='*', default=[500.0, 1000.0])
    ap.add_argument('--json', action='store_true')
    args = ap.parse_args()
    from conftest import erd_path
    res = {'compute_us': bench_compute(args.steps), 'latency': {}}
    for rate in args.rates:
        res['latency'][f'{rate:g}'] = bench_latency(rate, args.duration, erd_path('panda'))
    if args.json:
        print(json.dumps(res, indent=2))
        return
    print(f'servo step on the Panda ({args.steps} steps; prediction + law), us:')
    for name, s in res['compute_us'].items():
        print(f"  {name:22s} p50 {s['p50']:7.1f}  p99 {s['p99']:7.1f}  max {s['max']:8.1f}")
    for rate, r in res['latency'].items():
        lat = r['latency_us']
        print(f"servo_node at {rate} Hz: command -> joint command (two DDS hops) p50 "
              f"{lat['p50'] / 1e3:.2f} ms, p99 {lat['p99'] / 1e3:.2f} ms, max "
              f"{lat['max'] / 1e3:.2f} ms over {lat['n']} flips; node rate "
              f"{r['node_rate_hz']:.0f} Hz, compute p50 {r['node_compute_p50_us']:.0f} us, "
              f"p99 {r['node_compute_p99_us']:.0f} us; in the node, command arrival -> "
              f"published output p50 {r['node_command_to_output_p50_us']:.0f} us, p99 "
              f"{r['node_command_to_output_p99_us']:.0f} us")


if __name__ == '__main__':
    main()
