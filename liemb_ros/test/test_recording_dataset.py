"""
Datasets from recordings (issue 34): recorded runs processed alike, one shard each.

Two recordings of the shipped arm moving on a sum of sines (positions, velocities and
efforts at 500 Hz, the efforts the model's inverse dynamics plus a known offset) go
through ``liemb dataset --recordings``: each row's position and velocity are the
recording's, its acceleration the analytic one (five-point differences, to 1e-6 of the
largest), its ``tau`` Pinocchio's RNEA and its ``M`` Pinocchio's CRBA at the row's state,
its ``effort`` the recorded one; the shards' metadata name the model, the package and the
recordings; a two-worker LocalCluster writes the same bits; a recording without efforts
is one line and exit 2.
"""
import json
import os

import numpy as np
import pinocchio as pin
import pytest

from conftest import ros_importorskip

ros_importorskip('rclpy', 'mcap_ros2')
from test_dataset import ARM, pinocchio_arm  # noqa: E402
from test_identify_cli import sum_of_sines, write_run  # noqa: E402

import liemb_ros  # noqa: E402
from liemb_ros.app import cli  # noqa: E402
from liemb_ros.app.recording_dataset import make_recording_dataset  # noqa: E402
from liemb_ros.sweep.dataset import model_hash, read_dataset  # noqa: E402
from liemb_ros.sweep.engine import robot_text  # noqa: E402

RATE, SECONDS, OFFSET = 500.0, 1.5, 0.25


@pytest.fixture(scope='module')
def runs(tmp_path_factory):
    """Two recordings: ``[(path, t, q, qd, qdd, effort)]``."""
    model = liemb_ros.load_urdf(ARM)
    tmp = tmp_path_factory.mktemp('recording_dataset')
    out = []
    for k in range(2):
        t = np.arange(0.0, SECONDS, 1.0 / RATE) + 10.0 * k
        q, qd, qdd = sum_of_sines(model, t, rng=5 + k, peak=0.6)
        effort = liemb_ros.inverse_dynamics(model, q, qd, qdd) + OFFSET
        path = tmp / f'run{k}.mcap'
        write_run(path, model.joint_names, t, q, qd, effort)
        out.append((str(path), t, q, qd, qdd, effort))
    return out


def test_rows_are_the_recordings_and_pinocchio_at_them(runs, tmp_path):
    model, pm, data, P = pinocchio_arm()
    settings = make_recording_dataset(robot_text('liemb_arm7'), [r[0] for r in runs],
                                      tmp_path, quantities=('M', 'g'), cutoff=0.0,
                                      serial=True)
    cols, meta = read_dataset(tmp_path)
    assert sorted(os.listdir(tmp_path)) == ['dataset.json', 'part-00000.parquet',
                                            'part-00001.parquet']
    n_rows = [r[1].size - 4 for r in runs]        # no filter: two edge samples a side
    assert cols['q'].shape == (sum(n_rows), model.nv)
    offsets = np.cumsum([0] + n_rows)
    for (path, t, q, qd, qdd, effort), o, rows in zip(runs, offsets, n_rows):
        part = slice(o, o + rows)
        inner = slice(2, 2 + rows)
        np.testing.assert_allclose(cols['t'][part, 0], t[inner], atol=1e-9)   # stamps: ns
        np.testing.assert_array_equal(cols['q'][part], q[inner])
        np.testing.assert_array_equal(cols['qd'][part], qd[inner])
        np.testing.assert_array_equal(cols['effort'][part], effort[inner])
        err = np.abs(cols['qdd'][part] - qdd[inner]).max() / np.abs(qdd).max()
        assert err < 1e-6, err
    for i in range(0, cols['q'].shape[0], 97):
        q, qd, qdd = (P @ cols[k][i] for k in ('q', 'qd', 'qdd'))
        np.testing.assert_allclose(P @ cols['tau'][i], pin.rnea(pm, data, q, qd, qdd),
                                   atol=1e-9)
        M = pin.crba(pm, data, q)
        M = np.triu(M) + np.triu(M, 1).T
        np.testing.assert_allclose(P @ cols['M'][i].reshape(model.nv, model.nv) @ P.T, M,
                                   atol=1e-12)
    # the efforts are the model's torques plus the offset: what the URDF does not explain
    np.testing.assert_allclose(cols['effort'] - cols['tau'], OFFSET, atol=1e-3)
    assert json.loads(meta['liemb.model_hash']) == model_hash(model)
    assert json.loads(meta['liemb.version']) == liemb_ros.__version__
    assert json.loads(meta['liemb.recordings']) == [os.path.abspath(r[0]) for r in runs]
    assert json.loads(meta['liemb.cutoff']) == 0.0 and settings['recordings'] == json.loads(
        meta['liemb.recordings'])


def test_a_local_cluster_writes_the_same_bits(runs, tmp_path):
    import distributed
    paths = [r[0] for r in runs]
    make_recording_dataset(robot_text('liemb_arm7'), paths, tmp_path / 'serial',
                           quantities=('J',), cutoff=10.0, serial=True)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        make_recording_dataset(robot_text('liemb_arm7'), paths, tmp_path / 'cluster',
                               quantities=('J',), cutoff=10.0, client=client)
    a, _ = read_dataset(tmp_path / 'serial')
    b, _ = read_dataset(tmp_path / 'cluster')
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])


def test_bad_recordings_are_one_line_and_exit_2(runs, tmp_path, capsys):
    model = liemb_ros.load_urdf(ARM)
    t = np.arange(0.0, 0.5, 1.0 / RATE)
    q, qd, _ = sum_of_sines(model, t)
    no_effort = tmp_path / 'no_effort.mcap'
    write_run(no_effort, model.joint_names, t, q, qd, np.full_like(q, np.nan))
    cases = [
        (['liemb_arm7', '--recordings', str(no_effort)], 'carry no efforts'),
        (['liemb_arm7', '--recordings', str(tmp_path / 'missing.mcap')], 'no such recording'),
        (['liemb_arm7', '10', '--recordings', runs[0][0]], 'one of the two'),
        (['liemb_arm7'], 'one of the two'),
    ]
    for argv, text in cases:
        assert cli.main(['dataset', *argv, '--out', str(tmp_path / 'd'), '--serial']) == 2
        err = capsys.readouterr().err.strip()
        assert err.count('\n') == 0 and text in err, err
