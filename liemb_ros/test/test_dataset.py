"""
Dynamics datasets (issue 34): sampled states and their quantities, sharded Parquet or Zarr.

A sample of each dataset's rows is checked against Pinocchio (RNEA, CRBA, ABA, generalized
gravity, the frame Jacobian), the shards' metadata against the model and the package, and
a dataset computed on a two-worker LocalCluster against the same computed serially, Zarr
shards against the Parquet ones.
"""
import json
import os

import numpy as np
import pinocchio as pin
import pytest

import liemb_ros
from liemb_ros.app import cli
from liemb_ros.core.model import load_urdf_string
from liemb_ros.sweep.dataset import make_dataset, model_hash, read_dataset
from liemb_ros.sweep.engine import robot_text

from conftest import SWAP, URDF_DIR

ARM = os.path.join(URDF_DIR, 'liemb_arm7.urdf')


def pinocchio_arm():
    """Pinocchio's model of the shipped arm and ``P``: ``v_pin = P v_ours``."""
    pm = pin.buildModelFromUrdf(ARM)
    model = liemb_ros.load_urdf(ARM)
    P = np.zeros((model.nv, model.nv))
    for k, name in enumerate(model.joint_names):
        P[pm.joints[pm.getJointId(name)].idx_v, k] = 1.0
    return model, pm, pm.createData(), P


@pytest.mark.parametrize('inputs', ['accel', 'torque'])
def test_a_datasets_rows_agree_with_pinocchio(tmp_path, inputs):
    text = robot_text('liemb_arm7')
    model, pm, data, P = pinocchio_arm()
    link = model.link_names[-1]
    make_dataset(text, 40, tmp_path, quantities=('M', 'g', 'J'), inputs=inputs, link=link,
                 shard_rows=15, seed=4, serial=True)
    assert sorted(os.listdir(tmp_path)) == ['dataset.json', 'part-00000.parquet',
                                            'part-00001.parquet', 'part-00002.parquet']
    cols, meta = read_dataset(tmp_path)
    n = model.nv
    assert cols['q'].shape == (40, n) and cols['M'].shape == (40, n * n)
    assert np.all(cols['q'] >= model.lower) and np.all(cols['q'] <= model.upper)
    assert np.all(np.abs(cols['qd']) <= model.velocity_limit)
    frame = pm.getFrameId(link)
    for i in range(0, 40, 7):
        q, qd, qdd, tau = (cols[k][i] for k in ('q', 'qd', 'qdd', 'tau'))
        qp, vp, ap = P @ q, P @ qd, P @ qdd
        if inputs == 'accel':
            np.testing.assert_allclose(P @ tau, pin.rnea(pm, data, qp, vp, ap), atol=1e-9)
        else:
            assert np.all(np.abs(tau) <= model.effort_limit)
            np.testing.assert_allclose(ap, pin.aba(pm, data, qp, vp, P @ tau), rtol=1e-8,
                                       atol=1e-8)
        Mp = pin.crba(pm, data, qp)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        np.testing.assert_allclose(P @ cols['M'][i].reshape(n, n) @ P.T, Mp, atol=1e-10)
        np.testing.assert_allclose(P @ cols['g'][i], pin.computeGeneralizedGravity(
            pm, data, qp), atol=1e-9)
        pin.computeJointJacobians(pm, data, qp)
        pin.updateFramePlacements(pm, data)
        Jp = pin.getFrameJacobian(pm, data, frame, pin.ReferenceFrame.LOCAL)
        np.testing.assert_allclose(cols['J'][i].reshape(6, n), SWAP @ Jp @ P, atol=1e-10)


def test_the_metadata_names_the_model_and_the_package(tmp_path):
    text = robot_text('liemb_arm7')
    model = load_urdf_string(text)
    make_dataset(text, 5, tmp_path, serial=True)
    _, meta = read_dataset(tmp_path)
    assert json.loads(meta['liemb.model_hash']) == model_hash(model)
    assert json.loads(meta['liemb.version']) == liemb_ros.__version__
    assert json.loads(meta['liemb.joint_names']) == list(model.joint_names)
    with open(tmp_path / 'dataset.json') as f:
        assert json.load(f)['model_hash'] == model_hash(model)
    # the hash follows the dynamics, not the text
    assert model_hash(load_urdf_string(text.replace('<robot ', '<!-- c -->\n<robot ', 1))) \
        == model_hash(model)
    heavier = np.array(model.inertia)
    heavier[-1] *= 1.01
    assert model_hash(model.replace(inertia=heavier)) != model_hash(model)


def test_a_dataset_on_a_local_cluster_equals_the_serial_one(tmp_path):
    distributed = pytest.importorskip('distributed')
    text = robot_text('liemb_arm7')
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=':0') as cluster, \
            distributed.Client(cluster) as client:
        make_dataset(text, 30, tmp_path / 'dask', quantities=('M',), shard_rows=10,
                     client=client)
    make_dataset(text, 30, tmp_path / 'serial', quantities=('M',), shard_rows=10, serial=True)
    a, _ = read_dataset(tmp_path / 'dask')
    b, _ = read_dataset(tmp_path / 'serial')
    assert a.keys() == b.keys()
    for k in a:
        assert np.array_equal(a[k], b[k]), k


def test_zarr_shards_hold_the_parquet_shards_numbers(tmp_path, capsys):
    """
    ``liemb dataset --format zarr``: one Zarr group per shard, the same numbers bit for bit
    and the same metadata as the Parquet shards of the same seed; Dask reads a column lazily.
    """
    zarr = pytest.importorskip('zarr')
    da = pytest.importorskip('dask.array')
    for fmt in ('parquet', 'zarr'):
        assert cli.main(['dataset', 'liemb_arm7', '25', '--quantities', 'M', 'J', '--shard-rows',
                         '10', '--seed', '3', '--out', str(tmp_path / fmt), '--format', fmt,
                         '--serial']) == 0
    assert '25 samples of' in capsys.readouterr().out
    assert sorted(os.listdir(tmp_path / 'zarr')) == ['dataset.json', 'part-00000.zarr',
                                                     'part-00001.zarr', 'part-00002.zarr']
    a, meta_a = read_dataset(tmp_path / 'parquet')
    b, meta_b = read_dataset(tmp_path / 'zarr')
    assert list(a) == list(b) == ['q', 'qd', 'qdd', 'tau', 'M', 'J']
    for k in a:
        assert a[k].shape == b[k].shape and np.array_equal(a[k], b[k]), k
    assert json.loads(meta_b['liemb.format']) == 'zarr'
    assert json.loads(meta_a['liemb.format']) == 'parquet'
    same = {k for k in meta_a if k != 'liemb.format' and k in meta_b}
    assert same >= {'liemb.model_hash', 'liemb.version', 'liemb.joint_names', 'liemb.seed'}
    assert all(meta_a[k] == meta_b[k] for k in same)
    lazy = da.concatenate([da.from_zarr(str(tmp_path / 'zarr' / f'part-0000{i}.zarr'),
                                        component='M') for i in range(3)])
    assert lazy.shape == (25, 49) and np.array_equal(lazy.compute(), a['M'])
    assert zarr.open_group(str(tmp_path / 'zarr' / 'part-00001.zarr'), mode='r')['q'].shape \
        == (10, 7)


def test_liemb_dataset_reports_bad_input_in_one_line(tmp_path, capsys):
    for argv in (['no_such_robot', '10'], ['liemb_arm7', '0'],
                 ['liemb_arm7', '5', '--quantities', 'J', '--link', 'nowhere']):
        assert cli.main(['dataset', *argv, '--out', str(tmp_path), '--serial']) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith('liemb dataset: ') and '\n' not in err, err
    assert cli.main(['dataset', 'liemb_arm7', '5', '--out', str(tmp_path / 'd'),
                     '--serial']) == 0
    assert '5 samples of' in capsys.readouterr().out
