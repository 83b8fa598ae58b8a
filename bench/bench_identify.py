"""
``liemb identify`` on a long recording: time and memory (issue 32 item 5).

A synthetic recording of the default 7-joint arm (liemb_arm7): a sum-of-sines motion
(harmonics 1-5 of 0.1 Hz) sampled at ``--rate`` Hz for ``--minutes``, the efforts its
inverse dynamics with friction and armature, written to MCAP with the mcap library and
rclpy's serializer (not timed).  Then ``liemb identify`` as a user runs it, in this
process: reading every message, filtering and differentiating, the least-squares and
consistent fits of 91 standard parameters (70 inertial, 21 joint terms), the URDF, the
parameter file and the validation plot.  Prints the wall time of each stage and the peak
resident memory of the process (``getrusage``), which the regressor of the fitted samples
dominates (``8 nv p`` bytes a sample: 5.1 kB here).
Run: ``python bench/bench_identify.py [--minutes 10] [--rate 500] [--out DIR]``.
"""
import argparse
import os
import resource
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'liemb_ros', 'test'))


def write_recording(path, minutes, rate):
    """Write the synthetic run; return its number of messages."""
    from test_identify_cli import (Recording, joint_state, sum_of_sines, true_parameters,
                                   true_robot)

    from liemb_ros.core.identification import regressor
    from liemb_ros.core.model import load_urdf_string
    xml, armature = true_robot()
    model = load_urdf_string(xml)
    t = np.arange(0.0, 60.0 * minutes, 1.0 / rate)
    rec = Recording(path)
    pi = true_parameters(model, armature)
    for start in range(0, t.size, 10000):
        s = slice(start, start + 10000)
        q, qd, qdd = sum_of_sines(model, t[s])
        tau = regressor(model, q, qd, qdd, friction=True, armature=True) @ pi
        for k in range(q.shape[0]):
            rec.add('/joint_states', joint_state(t[s][k], model.joint_names, q[k], qd[k],
                                                 tau[k]))
    rec.finish()
    return t.size


def main():
    """Write the recording, identify from it, print time and memory."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[1])
    parser.add_argument('--minutes', type=float, default=10.0)
    parser.add_argument('--rate', type=float, default=500.0, help='samples per second')
    parser.add_argument('--out', help='folder of the recording and results (default: a '
                                      'temporary one)')
    args = parser.parse_args()
    from liemb_ros.app import cli, identify_cli
    out = args.out or tempfile.mkdtemp(prefix='bench_identify_')
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, 'run.mcap')
    t0 = time.perf_counter()
    n = write_recording(path, args.minutes, args.rate)
    written = time.perf_counter() - t0
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    ident = cli.build_parser().parse_args(['identify', path, '--robot', 'liemb_arm7',
                                           '--out', out, '--quiet'])
    t0 = time.perf_counter()
    res = identify_cli.identify_run(ident)
    wall = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f'{n} joint_states ({args.minutes:g} min at {args.rate:g} Hz, '
          f'{os.path.getsize(path) / 2 ** 20:.0f} MiB MCAP, written in {written:.0f} s)')
    print(f'liemb identify: {wall:.1f} s wall, peak resident memory {rss:.0f} MiB '
          f'(before identifying: {rss0:.0f} MiB); {res["ls"].samples} samples fitted, '
          f"held-out torque error {100 * res['errors']['identified'].max():.2g} % of RMS")


if __name__ == '__main__':
    main()
