"""
Run a sweep's runs on Dask's distributed scheduler, write them to Parquet, skip what is done.

The engine is Dask's (``distributed``): a ``LocalCluster`` with one single-threaded worker
process per core by default, or the scheduler of a cluster someone already runs
(``scheduler='tcp://HOST:PORT'``, or the ``DASK_SCHEDULER_ADDRESS`` environment variable).
The package has no scheduler of its own: retries of the tasks of a lost worker, the
dashboard and the spilling are Dask's.

* **Tasks** hold several runs (``runs_per_task``; default: about :data:`TASK_SECONDS` of
  work, estimated at :data:`STEP_SECONDS` per simulated step, and at least two tasks per
  worker), so Dask's per-task overhead (milliseconds) stays small against the work.
* **Each worker prepares once** (:class:`PrepareWorker`, a worker plugin): it parses the
  robot and loads the kernels of a run from numba's cache before its first task.
* **The robot travels as text**: the client reads (and expands) the URDF and sends its
  text, so the workers of a remote cluster need the package, not the file.
* **Results are written by the client** as tasks finish: ``OUT/parts/part-FIRST-LAST.parquet``
  (a file appears whole or not at all), then ``OUT/results.parquet`` (every run, sorted)
  and ``OUT/metrics.png``.  ``OUT/sweep.json`` holds the spec and its hash; a sweep started
  again on the same folder with the same spec runs only the runs no part holds, and one
  with another spec is refused.  Trajectories, when kept, are ``OUT/trajectories/run-I.npz``.
"""
import contextlib
import glob
import json
import math
import os
import re
import sys
import time

import numpy as np

try:
    from distributed import WorkerPlugin
except ImportError:   # installed without the 'sweep' extra: dask_client says what is missing
    WorkerPlugin = object

from ..core.model.urdf_sources import read_text
from ..core.resources import robot_path
from .runner import METRICS, check_run, prepare, run_chunk
from .spec import PARAMETERS, SpecError, check_spec, runs, spec_hash, varied_names

#: the work a task should hold [s]: Dask's overhead per task is a few milliseconds
TASK_SECONDS = 1.0
#: the wall time of one simulated step with its law, for sizing tasks [s]: the shipped arm's
#: steps (implicit in its stiff damping) took 0.3-1 ms on a loaded two-core machine
STEP_SECONDS = 5e-4
#: what a sweep or a dataset says when Dask or pyarrow is not installed
MISSING = ('sweeps and datasets need Dask and pyarrow: pip install "dask[distributed]" pyarrow '
           "bokeh (liemb_ros's 'sweep' extra; the set-up installs them)")
RESULTS = 'results.parquet'
MANIFEST = 'sweep.json'


def robot_text(robot):
    """Return the URDF text of a robot argument (file, xacro file or shipped name)."""
    return read_text(robot_path(robot))[0]


class PrepareWorker(WorkerPlugin):
    """
    Dask worker plugin: :func:`~.runner.prepare` the sweep's robot and kernels at start-up.

    Registered by :func:`run_sweep` on every worker, present and joining (a worker the
    nanny restarts after a crash prepares again).
    """

    name = 'liemb-sweep-prepare'

    def __init__(self, spec, text):
        self.spec, self.text = spec, text

    def setup(self, worker):
        """Prepare the worker's process (errors surface in the first task instead)."""
        try:
            prepare(self.spec, self.text)
        except Exception:   # noqa: BLE001 - the task that runs the same code reports it
            pass


def _schema(names):
    import pyarrow as pa
    return pa.schema([('run', pa.int64())] + [(n, pa.float64()) for n in names]
                     + [('status', pa.string()), ('reason', pa.string())]
                     + [(m, pa.float64()) for m in METRICS])


def _write_atomic(table, path, metadata):
    import pyarrow.parquet as pq
    table = table.replace_schema_metadata(metadata)
    tmp = f'{path}.{os.getpid()}.tmp'
    pq.write_table(table, tmp)
    os.replace(tmp, path)


def _done_runs(parts):
    """Return the run indices the part files of ``parts`` hold."""
    import pyarrow.parquet as pq
    done = set()
    for path in glob.glob(os.path.join(parts, 'part-*.parquet')):
        done.update(pq.read_table(path, columns=['run']).column('run').to_pylist())
    return done


def _manifest(out, spec, digest, overwrite):
    """Check or write ``OUT/sweep.json``; a different sweep in ``out`` raises SpecError."""
    path = os.path.join(out, MANIFEST)
    if os.path.exists(path) and not overwrite:
        with open(path, encoding='utf-8') as f:
            old = json.load(f).get('hash')
        if old != digest:
            raise SpecError(f'{out} holds another sweep (spec hash {old}, this one {digest}): '
                            'choose another output folder or overwrite it')
        return
    if overwrite:
        for p in glob.glob(os.path.join(out, 'parts', 'part-*.parquet')):
            os.remove(p)
    with open(path, 'w', encoding='utf-8') as f:
        json.dump({'hash': digest, 'spec': spec}, f, indent=1)


def chunks(items, size):
    """Split ``items`` into consecutive lists of at most ``size``."""
    return [items[i:i + size] for i in range(0, len(items), size)]


def task_size(spec, n_runs, n_workers):
    """Return the runs per task: the spec's, else about a second of work, >= 2 per worker."""
    if spec['runs_per_task']:
        return int(spec['runs_per_task'])
    sc = spec['scenario']
    per_run = max(sc['duration'] / sc['dt'], 1.0) * STEP_SECONDS
    size = max(1, math.ceil(TASK_SECONDS / per_run))
    return max(1, min(size, math.ceil(n_runs / (2 * max(n_workers, 1)))))


@contextlib.contextmanager
def dask_client(client=None, scheduler=None, workers=None, log=None):
    """
    Yield a ``distributed.Client``: ``client`` itself, or one this call opens and closes.

    Opened on ``scheduler`` (``tcp://HOST:PORT``) or ``DASK_SCHEDULER_ADDRESS``, else on a
    new ``LocalCluster`` of ``workers`` single-threaded processes (default: one per core).
    ``log`` gets the dashboard's address.
    """
    if client is not None:
        yield client
        return
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise SpecError(MISSING) from None
    address = scheduler or os.environ.get('DASK_SCHEDULER_ADDRESS')
    cluster = None if address else LocalCluster(
        n_workers=workers or os.cpu_count(), threads_per_worker=1, processes=True,
        dashboard_address=':0')
    client = Client(address or cluster)
    try:
        if log is not None:
            log(f"Dask dashboard: {client.dashboard_link or 'none (it needs bokeh installed)'}")
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def run_sweep(spec, out, *, scheduler=None, workers=None, client=None, serial=False,
              overwrite=False, progress=False, log=None):
    """
    Run a sweep (a spec dict, :mod:`.spec`) into the folder ``out``; return a summary dict.

    ``serial=True``: every run in this process, one after the other (the reference the
    distributed results equal bit for bit).  Else on Dask: ``client`` (a
    ``distributed.Client``), or a new one on ``scheduler`` / ``DASK_SCHEDULER_ADDRESS``,
    or a ``LocalCluster`` of ``workers`` processes (default: one per core).  ``progress``:
    a tqdm bar; ``log``: a function taking a line (the dashboard address, what is skipped).
    The summary: ``path`` (the results file), ``table`` (a pyarrow Table, one row per run
    sorted by ``run``), ``computed`` (the run indices this call ran), ``skipped`` (how many
    were already written), ``seconds`` (the wall time of the runs).  Raises
    :class:`~.spec.SpecError` before any run when the spec or its first run cannot start.
    """
    import pyarrow as pa
    spec = check_spec(spec)
    text = robot_text(spec['robot'])
    digest = spec_hash(dict(spec, runs_per_task=None), text)
    all_runs = runs(spec)
    check_run(spec, text, all_runs[0])
    parts = os.path.join(out, 'parts')
    os.makedirs(parts, exist_ok=True)
    _manifest(out, spec, digest, overwrite)
    log = log or (lambda line: None)
    names = varied_names(spec)
    schema = _schema(names)
    metadata = {b'liemb.sweep.hash': digest.encode(),
                b'liemb.sweep.spec': json.dumps(spec, sort_keys=True).encode()}
    done = _done_runs(parts)
    todo = [(i, p) for i, p in enumerate(all_runs) if i not in done]
    if done:
        log(f'{len(all_runs) - len(todo)} of {len(all_runs)} runs already in {parts}: skipped')
    computed = []

    def write(results):
        rows = [row for row, _ in results]
        first, last = rows[0]['run'], rows[-1]['run']
        for row, traj in results:
            if traj is not None:
                tdir = os.path.join(out, 'trajectories')
                os.makedirs(tdir, exist_ok=True)
                np.savez(os.path.join(tdir, f"run-{row['run']:06d}.npz"), **traj)
        _write_atomic(pa.Table.from_pylist(rows, schema=schema),
                      os.path.join(parts, f'part-{first:06d}-{last:06d}.parquet'), metadata)
        computed.extend(r['run'] for r in rows)
        bar.update(len(rows))

    bar = _bar(len(todo), progress)
    start = time.perf_counter()
    try:
        if todo and serial:
            for chunk in chunks(todo, task_size(spec, len(todo), 1)):
                write(run_chunk(spec, text, chunk))
        elif todo:
            _distributed(spec, text, todo, client, scheduler, workers, write, log)
    finally:
        bar.close()
    seconds = time.perf_counter() - start
    table = merge(out, metadata)
    plot(table, names, os.path.join(out, 'metrics.png'))
    return {'path': os.path.join(out, RESULTS), 'table': table, 'computed': sorted(computed),
            'skipped': len(all_runs) - len(todo), 'seconds': seconds}


def _bar(total, show):
    from tqdm import tqdm
    return tqdm(total=total, unit='run', desc='sweep', disable=not show, file=sys.stderr)


def _distributed(spec, text, todo, client, scheduler, workers, write, log):
    """Submit ``todo`` in tasks; write each task's rows as it finishes."""
    from distributed import as_completed
    with dask_client(client, scheduler, workers, log) as client:
        n_workers = max(len(client.scheduler_info(n_workers=-1)['workers']), 1)
        client.register_plugin(PrepareWorker(spec, text))
        futures = [client.submit(run_chunk, spec, text, chunk, pure=False)
                   for chunk in chunks(todo, task_size(spec, len(todo), n_workers))]
        for future in as_completed(futures):
            write(future.result())


def merge(out, metadata=None):
    """Write ``OUT/results.parquet`` from the part files (sorted by run); return the table."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    paths = sorted(glob.glob(os.path.join(out, 'parts', 'part-*.parquet')))
    table = pa.concat_tables([pq.read_table(p) for p in paths])
    table = table.sort_by('run')
    _write_atomic(table, os.path.join(out, RESULTS), metadata or table.schema.metadata)
    return table


#: the plot's axis labels: each metric with its unit (:mod:`.runner`)
METRIC_LABELS = {'tracking_rms': 'tracking RMS [rad, m]', 'tracking_max': 'tracking max [rad, m]',
                 'peak_torque': 'peak torque [N m, N]', 'saturation_time': 'saturated [s]',
                 'energy_error': 'energy error [J]'}


def _parameter_label(name):
    """Return a varied parameter with the unit its description states (``PARAMETERS``)."""
    unit = re.search(r'\[[^\]]*\]', PARAMETERS.get(name, ('',))[0])
    return f'{name} {unit.group(0)}' if unit else name


def plot(table, names, path):
    """Draw each metric against each varied parameter (failed runs as red crosses)."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    names = names or ['run']
    metrics = METRICS[:-1]
    fig, axes = plt.subplots(len(metrics), len(names), squeeze=False,
                             figsize=(3.2 * len(names) + 1, 2.2 * len(metrics)))
    ok = np.array([s == 'ok' for s in table.column('status').to_pylist()], dtype=bool)
    for j, name in enumerate(names):
        x = np.array(table.column(name).to_pylist(), dtype=float)
        for i, m in enumerate(metrics):
            y = np.array(table.column(m).to_pylist(), dtype=float)
            ax = axes[i, j]
            ax.plot(x[ok], y[ok], 'o', ms=3)
            ax.plot(x[~ok], y[~ok], 'x', color='red', ms=4)
            ax.set_xlabel(_parameter_label(name))
            ax.set_ylabel(METRIC_LABELS.get(m, m))
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
