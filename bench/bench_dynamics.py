"""
Dynamics beside Pinocchio, in one run: inverse and forward dynamics, M, C, g, derivatives.

Run: ``.venv/bin/python bench/bench_dynamics.py [--calls N] [--batch B] [--robot NAME]``.
Prints the median time per call of ours and Pinocchio's equivalent on the Panda (default)
and the ratio ours / Pinocchio (targets: inverse_dynamics, forward_dynamics and mass_matrix
within 5x of ``rnea``, ``aba``, ``crba``), then batches of B configurations (ours: one
batched call on one thread; Pinocchio: a Python loop; target: ours faster per
configuration; bench/run.py has the batches on every core).
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'liemb_ros', 'test'))

import liemb_ros as lm  # noqa: E402
from _timing import median_us  # noqa: E402
import pinocchio as pin  # noqa: E402
from conftest import erd_path  # noqa: E402


def per_config_us(fn, batch):
    """Return the best of three wall times of ``fn()`` divided by ``batch``, in microseconds."""
    best = np.inf
    for _ in range(3):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best / batch * 1e6


def bench_robot(name, calls, batch):
    """Time the dynamics functions of ours against Pinocchio on one fixed-base robot."""
    path = erd_path(name)
    model = lm.load_urdf(path)
    pm = pin.buildModelFromUrdf(path)
    data = pm.createData()
    rng = np.random.default_rng(0)
    q = model.random_configuration(rng)
    qd, qdd, tau = (rng.standard_normal(model.nv) for _ in range(3))
    rows = [
        ('inverse_dynamics (body) / rnea',
         median_us(lambda: lm.inverse_dynamics(model, q, qd, qdd), calls),
         median_us(lambda: pin.rnea(pm, data, q, qd, qdd), calls)),
        ('inverse_dynamics (spatial) / rnea',
         median_us(lambda: lm.inverse_dynamics(model, q, qd, qdd, 'spatial'), calls),
         median_us(lambda: pin.rnea(pm, data, q, qd, qdd), calls)),
        ('inverse_dynamics (hybrid) / rnea',
         median_us(lambda: lm.inverse_dynamics(model, q, qd, qdd, 'hybrid'), calls),
         median_us(lambda: pin.rnea(pm, data, q, qd, qdd), calls)),
        ('forward_dynamics / aba',
         median_us(lambda: lm.forward_dynamics(model, q, qd, tau), calls),
         median_us(lambda: pin.aba(pm, data, q, qd, tau), calls)),
        ('mass_matrix / crba',
         median_us(lambda: lm.mass_matrix(model, q), calls),
         median_us(lambda: pin.crba(pm, data, q), calls)),
        ('gravity_torques / computeGeneralizedGravity',
         median_us(lambda: lm.gravity_torques(model, q), calls),
         median_us(lambda: pin.computeGeneralizedGravity(pm, data, q), calls)),
        ('coriolis_matrix / computeCoriolisMatrix',
         median_us(lambda: lm.coriolis_matrix(model, q, qd), calls),
         median_us(lambda: pin.computeCoriolisMatrix(pm, data, q, qd), calls)),
        ('joint_wrenches / rnea (data.f)',
         median_us(lambda: lm.joint_wrenches(model, q, qd, qdd), calls),
         median_us(lambda: pin.rnea(pm, data, q, qd, qdd), calls)),
        ('inverse_dynamics_derivatives / computeRNEADerivatives',
         median_us(lambda: lm.inverse_dynamics_derivatives(model, q, qd, qdd), calls // 4),
         median_us(lambda: pin.computeRNEADerivatives(pm, data, q, qd, qdd), calls // 4)),
    ]
    Q = model.random_configuration(rng, size=batch)
    QD, QDD, TAU = (rng.standard_normal((batch, model.nv)) for _ in range(3))
    lm.inverse_dynamics(model, Q[:2], QD[:2], QDD[:2])
    lm.forward_dynamics(model, Q[:2], QD[:2], TAU[:2])
    lm.mass_matrix(model, Q[:2])

    def loop(fn, *arrays):
        def run():
            for k in range(batch):
                fn(pm, data, *(a[k] for a in arrays))
        return run
    rows += [
        (f'inverse_dynamics, batch {batch} (per config)',
         per_config_us(lambda: lm.inverse_dynamics(model, Q, QD, QDD), batch),
         per_config_us(loop(pin.rnea, Q, QD, QDD), batch)),
        (f'forward_dynamics, batch {batch} (per config)',
         per_config_us(lambda: lm.forward_dynamics(model, Q, QD, TAU), batch),
         per_config_us(loop(pin.aba, Q, QD, TAU), batch)),
        (f'mass_matrix, batch {batch} (per config)',
         per_config_us(lambda: lm.mass_matrix(model, Q), batch),
         per_config_us(loop(pin.crba, Q), batch)),
    ]
    print(f'\n{name} ({model.nq} DOF)')
    print(f"  {'function (ours / Pinocchio)':<56} {'ours [us]':>10} {'pin [us]':>10} "
          f"{'ratio':>7}")
    for label, a, b in rows:
        print(f'  {label:<56} {a:10.2f} {b:10.2f} {a / b:7.2f}')
    return rows


def main(argv=None):
    """Run the dynamics benchmark and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument('--calls', type=int, default=20000)
    ap.add_argument('--batch', type=int, default=10000)
    ap.add_argument('--robot', default='panda', help='example-robot-data name (default panda)')
    args = ap.parse_args(argv)
    lm.set_num_threads(1)   # Pinocchio's loop runs on one core
    bench_robot(args.robot, args.calls, args.batch)


if __name__ == '__main__':
    main()
