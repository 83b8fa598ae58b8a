"""
The benchmark's smoke mode runs and its results agree with the peers (so bench/run.py never rots).

Runs ``bench/run.py --smoke --json -`` in a subprocess and checks that the JSON has every
row (each algorithm on each smoke robot, single call and batch; the scaling fits; the
start-up time; the rows beside MuJoCo where it is installed) and that every peer's result
agreed with ours before it was timed.
Timings are not asserted: the machine is shared and the numbers are noisy.
"""
import json
import math
import os
import subprocess
import sys

import pytest

from conftest import REPO as ROOT
sys.path.insert(0, os.path.join(ROOT, 'bench'))

pytest.importorskip('pinocchio')
_peers = pytest.importorskip('_peers')
_mujoco = pytest.importorskip('_mujoco')
run = pytest.importorskip('run')


@pytest.fixture(scope='module')
def smoke(tmp_path_factory):
    """The JSON of one smoke run."""
    out = tmp_path_factory.mktemp('bench')
    res = subprocess.run([sys.executable, os.path.join(ROOT, 'bench', 'run.py'), '--smoke',
                          '--json', '-', '--out', str(out)], cwd=ROOT, capture_output=True,
                         text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-4000:]
    data = json.loads(res.stdout)
    data['_out'] = str(out)
    return data


def test_every_row_is_there(smoke):
    robots = smoke['meta']['robots']
    assert smoke['meta']['smoke'] and robots
    algos = [a.key for a in _peers.algorithms()]
    takes_out = {a.key for a in _peers.algorithms() if a.out_shape is not None}
    assert {'forward_kinematics', 'mass_matrix', 'dtau_dq'} <= takes_out
    for table in ('single', 'batch'):
        rows = {(r['robot'], r['algo']) for r in smoke[table]}
        assert rows == {(r, a) for r in robots for a in algos}, table
    for r in smoke['single']:
        for key in ('ours_us', 'pin_us', 'ratio_pin'):
            assert r[key] > 0 and math.isfinite(r[key]), (r['robot'], r['algo'], key)
    for b in smoke['batch']:
        assert b['ours_us_per_config'] > 0 and b['pin_loop_us_per_config'] > 0
        if b['algo'] in takes_out:
            assert b['ours_out_us_per_config'] > 0 and b['ratio_pin_best'] > 0
        else:
            assert b['ours_out_us_per_config'] is None
    rows = {(p['robot'], p['algo']) for p in smoke['parallel']}
    assert rows == {(r, a) for r in robots for a in algos}, 'parallel'
    for p in smoke['parallel']:
        assert p['threads'] >= 2 and p['speedup'] > 0, (p['robot'], p['algo'])
    for algo in run.SCALING_ALGOS:
        d = smoke['scaling'][algo]
        assert len(d['n']) == len(d['us']) >= 2 and math.isfinite(d['exponent'])
    assert smoke['start']['warm_first_result_s'] > 0
    assert {t['target'] for t in smoke['targets']}
    for path in smoke['charts']:
        assert path.startswith(smoke['_out']) and os.path.getsize(path) > 0


def test_results_agree_with_the_peers(smoke):
    tol = smoke['meta']['tol']
    assert tol <= 1e-8
    assert smoke['all_agree']
    for p in smoke['parallel']:   # threads give the serial batch's result bit for bit
        assert p['identical'], (p['robot'], p['algo'])
    for r in smoke['single']:
        assert r['err_pin'] <= tol, (r['robot'], r['algo'])
        if r.get('err_mr') is not None:
            assert r['err_mr'] <= tol, (r['robot'], r['algo'])
    # Modern Robotics, where installed, was checked on the fixed-base serial chain
    if _peers.import_mr() is not None and 'panda' in smoke['meta']['robots']:
        mr_rows = {r['algo'] for r in smoke['single'] if r['robot'] == 'panda'
                   and r.get('err_mr') is not None}
        assert {'inverse_dynamics', 'mass_matrix', 'forward_dynamics', 'link_pose'} <= mr_rows


def test_rows_beside_mujoco(smoke):
    if _mujoco.import_mujoco() is None:
        assert smoke['mujoco'] is None
        pytest.skip('mujoco is not installed (requirements-test.txt installs it)')
    mj = smoke['mujoco']
    robots = mj['robots']
    stand = ('solo12', 'standing, ground contact')
    assert {(r['robot'], r['case']) for r in mj['sim']} == (
        {(r, c) for r in robots for c in ('rk4', 'euler', 'best')} | {stand})
    assert {(r['robot'], r['algo']) for r in mj['single']} == {
        (r, a) for r in robots for a in ('inverse_dynamics', 'forward_dynamics')}
    for r in mj['sim']:
        for key in ('ours_steps_per_s', 'mujoco_steps_per_s', 'ratio'):
            assert r[key] > 0 and math.isfinite(r[key]), (r['robot'], r['case'], key)
    for r in mj['single']:
        for key in ('ours_us', 'mujoco_us', 'ratio'):
            assert r[key] > 0 and math.isfinite(r[key]), (r['robot'], r['algo'], key)
    # the same physics, the same numbers: RK4 and semi-implicit Euler trajectories and single
    # calls agree with MuJoCo
    tol = smoke['meta']['tol']
    assert mj['all_agree']
    assert all(r['max_dq'] <= tol for r in mj['sim'] if r['case'] in ('rk4', 'euler'))
    assert all(r['err'] <= tol for r in mj['single'])
    stand = [r for r in mj['sim'] if r['robot'] == 'solo12'][0]
    assert 0.2 < stand['ours_base_z'] < 0.25 and 0.2 < stand['mujoco_base_z'] < 0.25
