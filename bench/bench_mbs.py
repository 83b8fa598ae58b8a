"""
Steps per second of the absolute-coordinate simulation of the default arm (liemb_arm7).

MK-RK4 at h = 1 ms on the index-1 equations (liemb_ros.sim.mbs.from_model), SE(3) and
SO(3)xR^3 updates; the real-time factor is steps/s divided by 1000.
Run: ``python bench/bench_mbs.py [--seconds S]``.
"""
import argparse
import os
import time

import numpy as np

import liemb_ros as lm
from liemb_ros.sim.integrators import RK4, Stepper
from liemb_ros.sim.mbs import from_model

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def bench(update, seconds):
    """Return (steps/s, us per rhs) for ``seconds`` of simulated time."""
    model = lm.load_urdf(os.path.join(ROOT, 'liemb_ros', 'urdf', 'liemb_arm7.urdf'))
    q = np.linspace(-0.5, 0.5, model.nq)
    s, y = from_model(model, q, np.zeros(model.nq), update=update)
    stepper = Stepper(s.space, s.rhs, RK4)
    y = stepper.step(0.0, y, 1e-3)          # compile
    n = int(seconds / 1e-3)
    t0 = time.perf_counter()
    for k in range(n):
        y = stepper.step(k * 1e-3, y, 1e-3)
    dt = time.perf_counter() - t0
    t1 = time.perf_counter()
    for _ in range(1000):
        s.rhs(0.0, y)
    return n / dt, (time.perf_counter() - t1) * 1e3


def main():
    """Print steps/s and the real-time factor for both updates."""
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument('--seconds', type=float, default=2.0)
    a = p.parse_args()
    for update in ('se3', 'so3r3'):
        sps, us = bench(update, a.seconds)
        print(f'liemb_arm7 absolute coordinates, {update:5s}: {sps:8.0f} steps/s '
              f'(h = 1 ms: {sps / 1000:.1f}x real time), rhs {us:.1f} us')


if __name__ == '__main__':
    main()
