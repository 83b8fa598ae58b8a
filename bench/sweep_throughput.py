"""
Sweep throughput: runs per second serially and on a Dask LocalCluster, and Dask's cost per task.

``python bench/sweep_throughput.py [--runs 16] [--duration 1.0] [--workers N]`` runs the
same sweep of the shipped arm (computed torque, payload and friction varied; ``--duration``
simulated seconds per run) once in this process (``serial=True``) and once on a
LocalCluster of ``--workers`` single-threaded processes (default: one per core), and
prints runs per second of each and their ratio.  The cluster is started and its workers
prepared (a first small sweep) before the clock starts: the figure is the steady
throughput a long sweep sees.  The cost per task is the wall time of 200 empty tasks
through the same client, divided by 200.  Figures: docs/sweeps.md.
"""
import argparse
import os
import tempfile
import time

import distributed

from liemb_ros.sweep import run_sweep


def sweep_spec(runs, duration):
    """Return a sweep of ``runs`` runs of the shipped arm, ``duration`` s each, one per task."""
    return {'robot': 'liemb_arm7', 'scenario': {'duration': duration}, 'runs_per_task': 1,
            'vary': {'random': {'n': runs, 'seed': 0, 'ranges': {
                'payload': [0.0, 3.0], 'friction_scale': [0.5, 1.5]}}}}


def _noop(x):
    return x


def main():
    """Print serial and cluster runs per second and the cost of a task."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--runs', type=int, default=16)
    parser.add_argument('--duration', type=float, default=1.0)
    parser.add_argument('--workers', type=int, default=os.cpu_count())
    args = parser.parse_args()
    spec = sweep_spec(args.runs, args.duration)
    with tempfile.TemporaryDirectory() as out:
        run_sweep(sweep_spec(1, 0.01), os.path.join(out, 'warm'), serial=True)
        serial = run_sweep(spec, os.path.join(out, 'serial'), serial=True)['seconds']
        with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1,
                                      processes=True, dashboard_address=':0') as cluster, \
                distributed.Client(cluster) as client:
            run_sweep(sweep_spec(2 * args.workers, 0.01), os.path.join(out, 'prep'),
                      client=client)
            dask = run_sweep(spec, os.path.join(out, 'dask'), client=client)['seconds']
            start = time.perf_counter()
            client.gather(client.map(_noop, range(200), pure=False))
            task = (time.perf_counter() - start) / 200
    print(f'{args.runs} runs of {args.duration:g} s simulated (liemb_arm7, computed torque)')
    print(f'serial:       {args.runs / serial:8.2f} runs/s')
    print(f'LocalCluster: {args.runs / dask:8.2f} runs/s  ({args.workers} workers; '
          f'{serial / dask:.2f}x)')
    print(f'cost of an empty task: {1e3 * task:.2f} ms')


if __name__ == '__main__':
    main()
