"""
The three Newton–Euler forms side by side: the paper's operation counts and measured cost.

Run: ``.venv/bin/python bench/bench_forms.py [--calls N] [--batch B]``.  For chains of
n = 6, 12, 24, 48 random R/P/H joints and for the UR5 and the Panda it prints, per form
('body', 'spatial', 'hybrid' of ``liemb_ros.inverse_dynamics``): the counts of the
instrumented recursion (:mod:`liemb_ros.core.operation_counts`, equal to [M18d] §4.5's on a
chain without gravity), the median time of one compiled single call [µs] and of one
configuration of a batch of B on one thread [µs], and each time over the body-fixed form's.
The compiled kernels are not the instrumented recursion: they fuse the transformations
into scalar code, so the paper's counts and the timings measure different things (see
docs/theory/operation-counts.md).  Timings are not asserted anywhere; on a shared machine
run it twice.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'liemb_ros', 'test'))

import liemb_ros as lm  # noqa: E402
from _timing import median_us  # noqa: E402
from liemb_ros.core import operation_counts as OC  # noqa: E402
from liemb_ros.core.model.synthetic import random_model  # noqa: E402
from conftest import erd_path  # noqa: E402

SHORT = {'frame transformations': 'frame', 'screw transformations': 'screw',
         'inertia transformations': 'inertia', 'translational transformations': 'transl',
         'rotational transformations': 'rot', 'rotational inertia transformations': 'rot-inertia',
         'Lie brackets': 'brackets'}


def models():
    """(label, model) of the chains and the two robots."""
    out = [(f'chain n={n}', random_model(n, n, branching=0.0)) for n in (6, 12, 24, 48)]
    out += [(name, lm.load_urdf(erd_path(name))) for name in ('ur5', 'panda')]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--calls', type=int, default=2000, help='timed single calls per row')
    ap.add_argument('--batch', type=int, default=1000, help='configurations per batch')
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    print(f"{'model':12} {'form':8} {'counts (no gravity)':58} {'single':>8} {'ratio':>6} "
          f"{'batch/cfg':>9} {'ratio':>6}")
    for label, model in models():
        q = model.random_configuration(rng)
        qd, qdd = rng.standard_normal((2, model.nv))
        Q = np.stack([model.random_configuration(rng) for _ in range(args.batch)])
        Qd, Qdd = rng.standard_normal((2, args.batch, model.nv))
        base = None
        for form in OC.FORMS:
            counts = OC.newton_euler_counts(model, q, qd, qdd, form, gravity=False)[1]
            text = ', '.join(f'{SHORT[k]} {v}' for k, v in counts.items() if k in SHORT)
            single = median_us(lambda: lm.inverse_dynamics(model, q, qd, qdd, form=form),
                               args.calls, warmup=200)
            batch = median_us(lambda: lm.inverse_dynamics(model, Q, Qd, Qdd, form=form,
                                                          threads=1),
                              max(5, args.calls // 200), warmup=200) / args.batch
            if base is None:
                base = (single, batch)
            print(f'{label:12} {form:8} {text:58} {single:8.2f} {single / base[0]:6.2f} '
                  f'{batch:9.3f} {batch / base[1]:6.2f}')


if __name__ == '__main__':
    main()
