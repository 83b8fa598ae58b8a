"""
Dynamics datasets: sampled states of a robot and their quantities, as sharded Parquet.

``make_dataset(robot, n, out)`` draws ``n`` states of a fixed-base robot inside its limits
and computes, with the package's batch calls, the quantities asked for:

=========  =====================================================================  ========
name       what                                                                   shape
=========  =====================================================================  ========
``tau``    joint torques [N m, N]: by inverse dynamics of the sampled q̈           (nv,)
           (``inputs='accel'``), or sampled within the effort limits
``qdd``    joint accelerations [rad/s², m/s²]: sampled, or by forward dynamics    (nv,)
           of the sampled torque (``inputs='torque'``)
``M``      mass matrix, row-major                                                  (nv·nv,)
``g``      gravity torques                                                         (nv,)
``J``      Jacobian of ``link`` in ``representation``, angular rows first,         (6·nv,)
           row-major
=========  =====================================================================  ========

``q``, ``qd``, ``qdd`` and ``tau`` are always written.  States: ``q`` within the joint
limits (±π where none), ``qd`` within ``±velocity_scale ·`` the velocity limits (±π rad/s
where none), the sampled ``qdd`` within ``±acceleration``, a sampled ``tau`` within the
effort limits (±100 where none); ``distribution='uniform'`` over each box, or ``'normal'``
(mean the middle, standard deviation a sixth of the width, clipped to the box).

The shards, ``OUT/part-SSSSS.parquet`` (``shard_rows`` rows each, one Dask task each),
carry in their schema metadata the model's hash (:func:`model_hash`), the package version,
the robot, the joint names, the quantities and the sampling settings; ``OUT/dataset.json``
holds the same.  With ``fmt='zarr'`` each shard is a Zarr group ``OUT/part-SSSSS.zarr``
instead, one 2-D array ``(rows, k)`` per column and the same metadata in its attributes
(``dask.array.from_zarr(OUT/part-SSSSS.zarr, component='M')`` reads a column lazily);
:func:`read_dataset` reads either.  Shard ``s`` draws from
``numpy.random.default_rng((seed, s))``: a dataset is the same whichever process or
machine computes which shard.
"""
import hashlib
import json
import os
import time

import numpy as np

from .._cache import VERSION
from ..core.dynamics import forward_dynamics, gravity_torques, inverse_dynamics, mass_matrix
from ..core.kinematics import jacobian
from ..core.model import REPRESENTATIONS, load_urdf_string
from .engine import dask_client
from .spec import SpecError

QUANTITIES = ('tau', 'qdd', 'M', 'g', 'J')
#: the shards' file formats: one Parquet file or one Zarr group per shard
FORMATS = ('parquet', 'zarr')
INPUTS = ('accel', 'torque')
DISTRIBUTIONS = ('uniform', 'normal')
#: bounds where the URDF states none: speed [rad/s, m/s], effort [N m, N]
DEFAULT_SPEED, DEFAULT_EFFORT = np.pi, 100.0


def model_hash(model):
    """
    Return 16 hex digits of a hash of everything the dynamics of ``model`` depend on.

    The tree (parents, joint kinds, screws and frames), inertias, limits, damping,
    friction, gravity and the joint names: two models with the same hash give the same
    numbers.  The URDF's formatting, comments and visuals do not enter.
    """
    h = hashlib.sha256()
    for a in (model.parent, model.kind, model.S_parent, model.S_child, model.JX,
              model.inertia, model.base_inertia, model.q_index, model.q_mult, model.q_offset,
              model.lower, model.upper, model.velocity_limit, model.effort_limit,
              model.damping, model.friction, model.gravity, model.link_offset):
        h.update(np.ascontiguousarray(a).tobytes())
    h.update(json.dumps([model.joint_names, model.link_names, bool(model.floating)]).encode())
    return h.hexdigest()[:16]


def _box(rng, lo, hi, size, distribution):
    if distribution == 'uniform':
        return rng.uniform(lo, hi, size=(size, lo.size))
    x = rng.normal((lo + hi) / 2, (hi - lo) / 6, size=(size, lo.size))
    return np.clip(x, lo, hi)


def _bounds(model, velocity_scale):
    lo = np.where(np.isfinite(model.lower), model.lower, -np.pi)
    hi = np.where(np.isfinite(model.upper), model.upper, np.pi)
    v = np.where(np.isfinite(model.velocity_limit) & (model.velocity_limit > 0),
                 model.velocity_limit, DEFAULT_SPEED) * velocity_scale
    e = np.where(np.isfinite(model.effort_limit) & (model.effort_limit > 0),
                 model.effort_limit, DEFAULT_EFFORT)
    return lo, hi, v, e


def shard(settings, robot_text, index, rows, threads=None):
    """
    Compute shard ``index`` (``rows`` samples); return ``{column: (rows, k) array}``.

    ``settings``: the dict :func:`make_dataset` writes to ``dataset.json``.  ``threads``:
    of the batch calls (None: all; 1 in a Dask worker, whose siblings use the others).
    """
    model = load_urdf_string(robot_text, source='dataset')
    rng = np.random.default_rng((settings['seed'], index))
    lo, hi, v, e = _bounds(model, settings['velocity_scale'])
    dist = settings['distribution']
    q = _box(rng, lo, hi, rows, dist)
    qd = _box(rng, -v, v, rows, dist)
    if settings['inputs'] == 'accel':
        a = np.full(model.nv, float(settings['acceleration']))
        qdd = _box(rng, -a, a, rows, dist)
        tau = inverse_dynamics(model, q, qd, qdd, threads=threads)
    else:
        tau = _box(rng, -e, e, rows, dist)
        qdd = forward_dynamics(model, q, qd, tau, threads=threads)
    out = {'q': q, 'qd': qd, 'qdd': qdd, 'tau': tau}
    out.update(quantities_at(model, settings, q, threads))
    return out


def quantities_at(model, settings, q, threads=None):
    """Return the configuration quantities ``M``, ``g``, ``J`` of ``settings`` at ``q`` (B, nq)."""
    wanted, out, rows = settings['quantities'], {}, q.shape[0]
    if 'M' in wanted:
        out['M'] = mass_matrix(model, q, threads=threads).reshape(rows, -1)
    if 'g' in wanted:
        out['g'] = gravity_torques(model, q, threads=threads)
    if 'J' in wanted:
        out['J'] = jacobian(model, q, settings['link'], settings['representation'],
                            threads=threads).reshape(rows, -1)
    return out


def _write_shard(columns, path, metadata):
    import pyarrow as pa
    import pyarrow.parquet as pq
    arrays = [pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), x.shape[1])
              for x in columns.values()]
    table = pa.table(arrays, names=list(columns)).replace_schema_metadata(metadata)
    tmp = f'{path}.{os.getpid()}.tmp'
    pq.write_table(table, tmp)
    os.replace(tmp, path)


def _write_zarr(columns, path, metadata):
    """Write one shard as a Zarr group: an array (rows, k) per column, metadata as attributes."""
    import shutil

    import zarr
    tmp = f'{path}.{os.getpid()}.tmp'
    shutil.rmtree(tmp, ignore_errors=True)
    group = zarr.open_group(tmp, mode='w')
    for name, x in columns.items():
        group.create_array(name, data=np.ascontiguousarray(x))
    group.attrs.update({k.decode(): v.decode() for k, v in metadata.items()})
    shutil.rmtree(path, ignore_errors=True)
    os.replace(tmp, path)


def read_dataset(out):
    """
    Return ``({column: (n, k) array}, metadata dict)`` of a dataset folder, shards in order.

    Parquet shards or Zarr shards (:data:`FORMATS`); the metadata's values are JSON text.
    """
    import glob
    paths = sorted(glob.glob(os.path.join(out, 'part-*.parquet')))
    if not paths:
        zarrs = sorted(glob.glob(os.path.join(out, 'part-*.zarr')))
        if zarrs:
            return _read_zarr(zarrs)
        raise FileNotFoundError(f'no dataset shards (part-*.parquet or part-*.zarr) in {out}')
    import pyarrow.parquet as pq
    tables = [pq.read_table(p) for p in paths]
    columns = {}
    for name in tables[0].column_names:
        columns[name] = np.concatenate([
            np.asarray(t.column(name).combine_chunks().flatten()).reshape(t.num_rows, -1)
            for t in tables])
    meta = {k.decode(): v.decode() for k, v in tables[0].schema.metadata.items()}
    return columns, meta


def _read_zarr(paths):
    import zarr
    groups = [zarr.open_group(p, mode='r') for p in paths]
    names = json.loads(groups[0].attrs['liemb.columns'])
    columns = {n: np.concatenate([g[n][...] for g in groups]) for n in names}
    return columns, dict(groups[0].attrs)


def make_dataset(robot_text, n, out, *, quantities=('M', 'g'), inputs='accel', link=None,
                 representation='body', distribution='uniform', seed=0, shard_rows=100_000,
                 velocity_scale=1.0, acceleration=10.0, fmt='parquet', client=None,
                 scheduler=None, workers=None, serial=False, log=None):
    """
    Write ``n`` samples of a robot (its URDF text) to the folder ``out``; return settings.

    Arguments: the module docstring (``fmt``: one of :data:`FORMATS`).  ``serial=True``
    computes the shards here, one after the other; else each shard is a Dask task
    (``client``, ``scheduler`` / ``DASK_SCHEDULER_ADDRESS``, or a LocalCluster of
    ``workers`` processes, as :func:`~.engine.run_sweep`).  Raises
    :class:`~.spec.SpecError` on bad arguments.
    """
    model = load_urdf_string(robot_text, source='dataset')
    if inputs not in INPUTS or distribution not in DISTRIBUTIONS:
        raise SpecError(f'dataset: inputs from {INPUTS}, distribution from {DISTRIBUTIONS}')
    if int(n) < 1 or int(shard_rows) < 1:
        raise SpecError('dataset: N and shard rows must be at least 1')
    settings = dict(base_settings(model, quantities, link, representation), n=int(n),
                    inputs=inputs, distribution=distribution, seed=int(seed),
                    velocity_scale=float(velocity_scale), acceleration=float(acceleration),
                    shard_rows=int(shard_rows))
    sizes = [min(shard_rows, n - s) for s in range(0, n, shard_rows)]
    jobs = [(settings, robot_text, i, rows, 1) for i, rows in enumerate(sizes)]
    return write_shards(settings, out, shard, jobs, fmt=fmt, client=client,
                        scheduler=scheduler, workers=workers, serial=serial, log=log)


def base_settings(model, quantities, link, representation):
    """
    Return the settings every dataset has: the robot, its hash, the version, the quantities.

    Checks them (SpecError): a fixed base, known quantities and representation, a known
    ``link`` of ``J`` (default: the last link).
    """
    if model.floating:
        raise SpecError(f'dataset: {model.name!r} has a floating base; fixed-base robots only')
    if [x for x in quantities if x not in QUANTITIES] or representation not in REPRESENTATIONS:
        raise SpecError(f'dataset: quantities from {QUANTITIES}, representation from '
                        f'{REPRESENTATIONS}')
    if 'J' in quantities:
        link = link or model.link_names[-1]
        if link not in model.link_names:
            raise SpecError(f'dataset: unknown link {link!r}; links: '
                            f"{', '.join(model.link_names)}")
    return {'robot': model.name, 'model_hash': model_hash(model), 'version': VERSION,
            'joint_names': list(model.joint_names), 'quantities': list(quantities),
            'link': link, 'representation': representation}


def write_shards(settings, out, fn, jobs, *, fmt='parquet', client=None, scheduler=None,
                 workers=None, serial=False, log=None):
    """
    Write shard ``i`` = ``fn(*jobs[i])`` (a dict of (rows, k) columns) to ``out``; return settings.

    ``settings`` (with ``format``: ``fmt``, one of :data:`FORMATS`) go to
    ``OUT/dataset.json`` and into every shard's metadata (``liemb.KEY``: JSON; a Zarr
    shard also has ``liemb.columns``, its columns in order); ``settings['seconds']`` gets
    the time taken.  ``serial``: the jobs here, one after the other; else each is a Dask
    task (:func:`~.engine.dask_client`).  The client writes every shard.
    """
    if fmt not in FORMATS:
        raise SpecError(f'dataset: format from {FORMATS}, got {fmt!r}')
    if fmt == 'zarr':
        try:
            import zarr  # noqa: F401
        except ImportError:
            raise SpecError('dataset: --format zarr needs zarr: pip install zarr (the '
                            "set-up installs it; liemb_ros's 'sweep' extra)") from None
    settings['format'] = fmt
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, 'dataset.json'), 'w', encoding='utf-8') as f:
        json.dump(settings, f, indent=1)
    metadata = {f'liemb.{k}'.encode(): json.dumps(v).encode() for k, v in settings.items()}
    log = log or (lambda line: None)

    def write(i, columns):
        if fmt == 'parquet':
            _write_shard(columns, os.path.join(out, f'part-{i:05d}.parquet'), metadata)
        else:
            names = {b'liemb.columns': json.dumps(list(columns)).encode()}
            _write_zarr(columns, os.path.join(out, f'part-{i:05d}.zarr'), {**metadata, **names})

    start = time.perf_counter()
    if serial:
        for i, job in enumerate(jobs):
            write(i, fn(*job))
    else:
        from distributed import as_completed
        with dask_client(client, scheduler, workers, log) as client:
            futures = {client.submit(fn, *job, pure=False): i for i, job in enumerate(jobs)}
            for future in as_completed(futures):
                write(futures[future], future.result())
    settings['seconds'] = time.perf_counter() - start
    return settings
