"""
Datasets from recordings: many recorded runs processed alike, one Dask task each.

``liemb dataset ROBOT --recordings RUN.mcap ...`` reads every ``joint_states`` sample of
each MCAP file (:func:`~liemb_ros.app.identify_cli.read_joint_states`, no
down-sampling), takes the accelerations as ``liemb identify`` does
(:func:`~liemb_ros.core.signals.joint_signals`: the zero-phase filter of ``cutoff`` Hz,
0: none; efforts held over the interval before their stamps with ``effort_held``), keeps
the samples inside the filter's edges and writes, per recording, one shard of
(:mod:`liemb_ros.sweep.dataset`):

=========  ==============================================================  =========
column     what                                                            shape
=========  ==============================================================  =========
``t``      the sample's time [s] (the interval's midpoint with held        (1,)
           efforts)
``q``      positions, ``qd`` velocities, ``qdd`` accelerations             (nv,) each
``effort`` the recorded joint efforts [N m, N]                             (nv,)
``tau``    the model's inverse dynamics at ``(q, qd, qdd)``: ``effort -    (nv,)
           tau`` is what the URDF does not explain
``M``,     the configuration quantities asked for, as in a sampled         ...
``g``,     dataset
``J``
=========  ==============================================================  =========

The settings (``dataset.json`` and every shard's metadata) hold the model's hash, the
package version, the recordings in shard order and the processing: every run is treated
the same way, and a dataset says how.
"""
import os

import numpy as np

from ..core.dynamics import inverse_dynamics
from ..core.model import load_urdf_string
from ..core.signals import interval_midpoints, joint_signals
from ..sweep.dataset import base_settings, quantities_at, write_shards
from ..sweep.spec import SpecError
from .identify_cli import IdentifyError, read_joint_states, recording_arrays


def recording_shard(settings, robot_text, path, threads=1):
    """
    Return the columns of one recording (module docstring); SpecError when it cannot be used.

    ``settings``: :func:`make_recording_dataset`'s; ``robot_text``: the URDF.
    """
    model = load_urdf_string(robot_text, source='dataset')
    topic = settings['topic']
    try:
        rec = read_joint_states(path, topic, log=lambda line: None)
        t, q, qd, effort = recording_arrays(rec, model, path, topic)
        q, qd, qdd, inner = joint_signals(t, q, qd, settings['cutoff'],
                                          held=settings['effort_held'])
    except (IdentifyError, ValueError, OSError) as exc:
        raise SpecError(f'dataset: {path}: {exc}') from None
    if settings['effort_held']:
        t = interval_midpoints(t[:, None])[:, 0]
    q, qd, qdd, effort = (np.ascontiguousarray(a[inner]) for a in (q, qd, qdd, effort))
    out = {'t': t[inner, None], 'q': q, 'qd': qd, 'qdd': qdd, 'effort': effort,
           'tau': inverse_dynamics(model, q, qd, qdd, threads=threads)}
    out.update(quantities_at(model, settings, q, threads))
    return out


def make_recording_dataset(robot_text, paths, out, *, quantities=('M', 'g'), link=None,
                           representation='body', topic='/joint_states', cutoff=20.0,
                           effort_held=False, fmt='parquet', client=None, scheduler=None,
                           workers=None, serial=False, log=None):
    """
    Write one shard per recording of ``paths`` to the folder ``out``; return the settings.

    The engine's arguments as :func:`liemb_ros.sweep.dataset.make_dataset`.  Raises
    SpecError for bad arguments, a missing file or a recording that cannot be used.
    """
    model = load_urdf_string(robot_text, source='dataset')
    if not paths:
        raise SpecError('dataset: give N samples or --recordings RUN.mcap ...')
    missing = [p for p in paths if not os.path.isfile(p)]
    if missing:
        raise SpecError(f"dataset: no such recording: {', '.join(missing)}")
    if not cutoff >= 0.0:
        raise SpecError(f'dataset: the cut-off must be 0 (no filter) or more, got {cutoff:g}')
    settings = dict(base_settings(model, quantities, link, representation),
                    recordings=[os.path.abspath(p) for p in paths], topic=topic,
                    cutoff=float(cutoff), effort_held=bool(effort_held))
    settings = write_shards(settings, out, recording_shard,
                            [(settings, robot_text, p) for p in settings['recordings']],
                            fmt=fmt, client=client, scheduler=scheduler, workers=workers,
                            serial=serial, log=log)
    return settings
