"""
Steps per second of the Simulator on the default arm (liemb_arm7), RK4 at h = 1 ms.

Joint coordinates (ABA + RKMK on R^k; floating base: SE(3) x R^k) and absolute
coordinates (bodies on SE(3) / SO(3)xR3 with joint constraints, tailored update).
Joint coordinates with the defaults (URDF joint limits, effort limits and Coulomb
friction: the ROS2 step, as the friction is stiff) and as the ideal rigid-body robot
(``friction=0, limits=False, effort_limits=False``: explicit RK4).
The real-time factor is simulated seconds per wall-clock second (steps/s / 1000).
Targets (issue 4): joint coordinates >= 20x real time, absolute >= 2x; with limits and
friction >= 25x (issue 16).
Run: ``python bench/bench_simulation.py [--seconds S] [--json]``.
"""
import argparse
import json
import time

import numpy as np

import liemb_ros as lm
from liemb_ros.core import resources
from liemb_ros.sim.simulator import Simulator

Q0 = np.array([0.0, 0.4, 0.0, -1.2, 0.0, 1.0, 0.0])


def steps_per_second(seconds, repeats=3, **kwargs):
    """Best of ``repeats`` runs of ``seconds`` simulated seconds; returns steps per second."""
    floating = kwargs.pop('floating', False)
    model = lm.load_urdf(resources.robot_path('liemb_arm7'), floating_base=floating or None)
    sim = Simulator(model, dt=1e-3, q0=Q0, **kwargs)
    tau = 0.5 * np.ones(model.nq)
    sim.step(tau, n=10)                       # compile / load the numba cache
    n = int(round(seconds / 1e-3))
    best = np.inf
    for _ in range(repeats):
        sim.reset()
        t0 = time.perf_counter()
        sim.step(tau, n=n)
        best = min(best, time.perf_counter() - t0)
    return n / best


def main(argv=None):
    """Print steps/s and real-time factors."""
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--seconds', type=float, default=2.0, help='simulated seconds per run')
    ap.add_argument('--json', action='store_true')
    args = ap.parse_args(argv)
    cases = {
        'joint, fixed base': dict(coordinates='joint'),
        'joint, fixed base, ideal': dict(coordinates='joint', friction=0.0, limits=False,
                                         effort_limits=False),
        'joint, floating base (SE(3))': dict(coordinates='joint', floating=True),
        'absolute, tailored': dict(coordinates='absolute', update='tailored'),
        'absolute, se3': dict(coordinates='absolute', update='se3'),
    }
    out = {}
    for name, kw in cases.items():
        secs = args.seconds if kw['coordinates'] == 'joint' else args.seconds / 4
        out[name] = steps_per_second(secs, **kw)
    if args.json:
        print(json.dumps({k: {'steps_per_s': v, 'real_time_factor': v / 1000.0}
                          for k, v in out.items()}))
        return out
    print('Simulator on liemb_arm7, RK4, h = 1 ms')
    for name, v in out.items():
        print(f'  {name:<32} {v:9.0f} steps/s   {v / 1000:6.1f}x real time')
    return out


if __name__ == '__main__':
    main()
