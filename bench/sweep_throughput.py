"""
Sweep throughput: runs per second serially, side by side without Dask, and on a LocalCluster.

``python bench/sweep_throughput.py [--runs 16] [--duration 10.0] [--workers N] [--repeat 3]``
runs the same sweep of the shipped arm (computed torque, payload and friction varied;
``--duration`` simulated seconds per run) three ways, ``--repeat`` times interleaved:

* **serial**: every run in this process (``serial=True``);
* **side by side**: ``--workers`` plain processes (no Dask), each running its share of the
  runs serially, released together by a barrier once each has warmed up; the throughput
  is all runs over the slowest process's time.  This is the machine's own ceiling for
  the cluster: what ``--workers`` cores give to independent copies of the same work, with
  no scheduler at all;
* **LocalCluster**: ``--workers`` single-threaded Dask worker processes, started and
  prepared (a first small sweep) before the clock starts: the steady throughput a long
  sweep sees.

It prints the median runs per second of each, the ratios to serial, the cluster's share of
the side-by-side ceiling, and Dask's cost per task (the wall time of 200 empty tasks through
the same client, divided by 200).  Figures: docs/sweeps.md.
"""
import argparse
import multiprocessing
import os
import statistics
import tempfile
import time

import distributed

from liemb_ros.sweep import run_sweep


def sweep_spec(runs, duration, seed=0):
    """Return a sweep of ``runs`` runs of the shipped arm, ``duration`` s each, one per task."""
    return {'robot': 'liemb_arm7', 'scenario': {'duration': duration}, 'runs_per_task': 1,
            'vary': {'random': {'n': runs, 'seed': seed, 'ranges': {
                'payload': [0.0, 3.0], 'friction_scale': [0.5, 1.5]}}}}


def _noop(x):
    return x


def _serial(spec, out):
    return run_sweep(spec, out, serial=True)['seconds']


def _side_worker(runs, duration, seed, barrier, queue):
    """One plain process: warm up, wait for the others, run a serial sweep, report its time."""
    with tempfile.TemporaryDirectory() as out:
        run_sweep(sweep_spec(1, 0.01), os.path.join(out, 'warm'), serial=True)
        barrier.wait()
        queue.put(_serial(sweep_spec(runs, duration, seed), os.path.join(out, 'side')))


def side_by_side(runs, duration, workers):
    """Return the mean wall time of ``workers`` plain processes sharing ``runs`` runs."""
    ctx = multiprocessing.get_context('spawn')
    barrier, queue = ctx.Barrier(workers), ctx.Queue()
    shares = [runs // workers + (i < runs % workers) for i in range(workers)]
    procs = [ctx.Process(target=_side_worker, args=(n, duration, i + 1, barrier, queue))
             for i, n in enumerate(shares)]
    for p in procs:
        p.start()
    times = [queue.get() for _ in procs]
    for p in procs:
        p.join()
    return statistics.fmean(times)


def main():
    """Print serial, side-by-side and cluster runs per second and the cost of a task."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--runs', type=int, default=16)
    parser.add_argument('--duration', type=float, default=10.0)
    parser.add_argument('--workers', type=int, default=os.cpu_count())
    parser.add_argument('--repeat', type=int, default=3)
    args = parser.parse_args()
    spec = sweep_spec(args.runs, args.duration)
    serial, side, dask = [], [], []
    with tempfile.TemporaryDirectory() as out, \
            distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1,
                                     processes=True, dashboard_address=':0') as cluster, \
            distributed.Client(cluster) as client:
        run_sweep(sweep_spec(1, 0.01), os.path.join(out, 'warm'), serial=True)
        run_sweep(sweep_spec(2 * args.workers, 0.01), os.path.join(out, 'prep'), client=client)
        for r in range(args.repeat):
            serial.append(args.runs / _serial(spec, os.path.join(out, f'serial{r}')))
            side.append(args.runs / side_by_side(args.runs, args.duration, args.workers))
            dask.append(args.runs / run_sweep(spec, os.path.join(out, f'dask{r}'),
                                              client=client)['seconds'])
            print(f'  round {r + 1}: serial {serial[-1]:.2f}, side by side {side[-1]:.2f}, '
                  f'LocalCluster {dask[-1]:.2f} runs/s', flush=True)
        start = time.perf_counter()
        client.gather(client.map(_noop, range(200), pure=False))
        task = (time.perf_counter() - start) / 200
    s, c, d = (statistics.median(x) for x in (serial, side, dask))
    print(f'{args.runs} runs of {args.duration:g} s simulated (liemb_arm7, computed torque), '
          f'medians of {args.repeat}')
    print(f'serial:        {s:8.2f} runs/s')
    print(f'side by side:  {c:8.2f} runs/s  ({args.workers} plain processes; {c / s:.2f}x: '
          "this machine's ceiling)")
    print(f'LocalCluster:  {d:8.2f} runs/s  ({args.workers} workers; {d / s:.2f}x; '
          f'{d / c:.0%} of the ceiling)')
    print(f'cost of an empty task: {1e3 * task:.2f} ms')


if __name__ == '__main__':
    main()
