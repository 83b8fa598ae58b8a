"""
Kinematics beside Pinocchio, in one run: link_pose, jacobian (each representation), J̇.

Run: ``.venv/bin/python bench/bench_kinematics.py [--calls N] [--batch B]``.  Prints the
median time per call of ours and Pinocchio's equivalent on the Panda and UR5 and the
ratio ours / Pinocchio, then a batch of B configurations (ours: one batched call on one
thread; Pinocchio: a Python loop; bench/run.py has the batches on every core).
Pinocchio equivalents: ``framesForwardKinematics`` (pose), ``computeFrameJacobian`` (J,
LOCAL / WORLD / LOCAL_WORLD_ALIGNED; mixed has no Pinocchio counterpart and is compared
with LOCAL_WORLD_ALIGNED),
``computeJointJacobiansTimeVariation`` + ``getFrameJacobianTimeVariation`` (J̇).
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

PIN_REF = {'body': pin.LOCAL, 'spatial': pin.WORLD, 'hybrid': pin.LOCAL_WORLD_ALIGNED,
           'mixed': pin.LOCAL_WORLD_ALIGNED}


def bench_robot(name, link, calls, batch):
    """Time every kinematics function of ours against Pinocchio on one robot."""
    path = erd_path(name)
    model = lm.load_urdf(path)
    pm = pin.buildModelFromUrdf(path)
    data = pm.createData()
    fid = pm.getFrameId(link)
    rng = np.random.default_rng(0)
    q = model.random_configuration(rng)
    qd = rng.standard_normal(model.nv)
    rows = []

    def pin_jdot(ref):
        pin.computeJointJacobiansTimeVariation(pm, data, q, qd)
        return pin.getFrameJacobianTimeVariation(pm, data, fid, ref)

    rows.append(('link_pose', median_us(lambda: lm.link_pose(model, q, link), calls),
                 median_us(lambda: pin.framesForwardKinematics(pm, data, q), calls)))
    for rep, ref in PIN_REF.items():
        rows.append((f'jacobian {rep}',
                     median_us(lambda: lm.jacobian(model, q, link, rep), calls),
                     median_us(lambda: pin.computeFrameJacobian(pm, data, q, fid, ref), calls)))
    for rep in ('body', 'hybrid'):
        rows.append((f'jacobian_derivative {rep}',
                     median_us(lambda: lm.jacobian_derivative(model, q, qd, link, rep), calls),
                     median_us(lambda: pin_jdot(PIN_REF[rep]), calls)))
    Q = model.random_configuration(rng, size=batch)
    lm.jacobian(model, Q[:2], link, 'hybrid')
    t0 = time.perf_counter()
    lm.jacobian(model, Q, link, 'hybrid')
    ours = (time.perf_counter() - t0) / batch * 1e6
    t0 = time.perf_counter()
    for k in range(batch):
        pin.computeFrameJacobian(pm, data, Q[k], fid, pin.LOCAL_WORLD_ALIGNED)
    theirs = (time.perf_counter() - t0) / batch * 1e6
    rows.append((f'jacobian hybrid, batch {batch} (per config)', ours, theirs))
    print(f'\n{name} ({model.nq} DOF), link {link}')
    print(f"  {'function':<44} {'ours [us]':>10} {'pin [us]':>10} {'ratio':>7}")
    for label, a, b in rows:
        print(f'  {label:<44} {a:10.2f} {b:10.2f} {a / b:7.2f}')
    return rows


def main(argv=None):
    """Run the kinematics benchmark and print the tables."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument('--calls', type=int, default=20000)
    ap.add_argument('--batch', type=int, default=10000)
    args = ap.parse_args(argv)
    lm.set_num_threads(1)   # Pinocchio's loop runs on one core
    bench_robot('panda', 'panda_hand', args.calls, args.batch)
    bench_robot('ur5', 'tool0', args.calls, args.batch)


if __name__ == '__main__':
    main()
