"""
Sweeps on Dask (issue 34): the runs of a spec, their metrics, the engine's guarantees.

The engine's checks run on a LocalCluster of two single-threaded worker processes: its
results equal the same runs done serially in this process bit for bit, a worker killed
mid-sweep costs only its task (Dask retries it), a restarted sweep runs only the runs no
part file holds, and a diverging run is a row with its reason.  The metrics are checked
against a run of the Simulator written out here.
"""
import math
import os

import numpy as np
import pytest

from liemb_ros.app import cli
from liemb_ros.control import ComputedTorque
from liemb_ros.core.model import load_urdf_string
from liemb_ros.sim import Simulator
from liemb_ros.sim.scenario import ready_configuration, sample_tip
from liemb_ros.sweep import SpecError, check_spec, run_sweep, runs
from liemb_ros.sweep.engine import STEP_SECONDS, TASK_SECONDS, robot_text, task_size

distributed = pytest.importorskip('distributed')

BASE = {'robot': 'liemb_arm7', 'scenario': {'duration': 0.1}, 'gains': {'kp': 100, 'kd': 20}}


def spec(**changes):
    """A short sweep of the shipped arm (0.1 s per run) with ``changes``."""
    return dict(BASE, **changes)


@pytest.fixture(scope='module')
def client():
    """A LocalCluster of two worker processes, one thread each (the issue's test setup)."""
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=':0')
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def test_a_spec_expands_to_its_runs_in_a_fixed_order():
    grid = check_spec(spec(vary={'grid': {'payload': [0, 1], 'kp': [10, 20, 30]}}))
    assert runs(grid) == [{'payload': p, 'kp': k}
                          for p in (0.0, 1.0) for k in (10.0, 20.0, 30.0)]
    rand = check_spec(spec(vary={'random': {'n': 5, 'seed': 3, 'ranges': {
        'payload': [0, 3], 'friction_scale': [0.5, 1.5]}}}))
    draws = np.random.default_rng(3).uniform([0, 0.5], [3, 1.5], size=(5, 2))
    assert [[r['payload'], r['friction_scale']] for r in runs(rand)] == draws.tolist()
    listed = check_spec(spec(vary={'list': [{'payload': 2}, {'kd': 5}]}))
    assert runs(listed) == [{'kd': None, 'payload': 2.0}, {'kd': 5.0, 'payload': 0.0}]
    for bad, word in (({'vary': {'grid': {'mass': [1]}}}, 'mass'),
                      ({'scenario': {'duration': -1}}, 'duration'),
                      ({'controller': 'pid'}, 'controller'), ({'colour': 1}, 'colour')):
        with pytest.raises(SpecError, match=word):
            check_spec(spec(**bad))


def test_tasks_hold_about_a_second_of_work_and_keep_every_worker_busy():
    s = check_spec(spec(scenario={'duration': 0.1}))   # 100 steps a run
    size = task_size(s, 10_000, 2)
    assert size > 1 and size * 100 * STEP_SECONDS == pytest.approx(TASK_SECONDS, rel=0.1)
    assert task_size(s, 8, 2) == 2
    assert task_size(dict(s, runs_per_task=7), 8, 2) == 7


def test_a_run_equals_the_simulator_loop_written_out(tmp_path):
    """The metrics of one run against the same closed loop coded here from the parts."""
    s = spec(scenario={'duration': 0.05, 'sine': {'amplitude': 0.1, 'period': 0.5}},
             vary={'list': [{'payload': 1.5, 'friction_scale': 0.5}]})
    row = run_sweep(s, tmp_path, serial=True)['table'].to_pylist()[0]
    nominal = load_urdf_string(robot_text('liemb_arm7'))
    link = sample_tip(nominal)
    li = nominal.link_index(link)
    inertia = np.array(nominal.inertia)   # a point mass at the link origin: m in the
    mass = np.zeros((6, 6))               # translational block, in the link's frame
    mass[3:, 3:] = 1.5 * np.eye(3)
    X = nominal.link_offset[li]
    Ad_inv = np.zeros((6, 6))   # Ad of the link frame in its body's frame, inverted
    R, p = X[:3, :3].T, -X[:3, :3].T @ X[:3, 3]
    Ad_inv[:3, :3] = Ad_inv[3:, 3:] = R
    Ad_inv[3:, :3] = np.array([[0, -p[2], p[1]], [p[2], 0, -p[0]], [-p[1], p[0], 0]]) @ R
    inertia[nominal.link_body[li]] += Ad_inv.T @ mass @ Ad_inv
    plant = nominal.replace(inertia=inertia)
    s0 = ready_configuration(nominal, link)
    w = 2 * math.pi / 0.5
    sim = Simulator(plant, dt=1e-3, q0=s0, qd0=0.1 * w * np.ones(nominal.nq),
                    friction=0.5 * nominal.friction)
    law = ComputedTorque(nominal, 100.0, 20.0)
    errors, peak = [], 0.0
    for _ in range(50):
        t = sim.t
        q_d = s0 + 0.1 * math.sin(w * t)
        qd_d = 0.1 * w * math.cos(w * t) * np.ones(nominal.nq)
        qdd_d = -0.1 * w * w * math.sin(w * t) * np.ones(nominal.nq)
        errors.append(np.abs(q_d - sim.q))
        tau = law(sim.q, sim.qd, q_d, qd_d, qdd_d)
        peak = max(peak, np.abs(np.clip(tau, -sim.effort_limit, sim.effort_limit)).max())
        sim.step(tau)
    errors = np.array(errors)
    assert row['status'] == 'ok' and row['t_end'] == pytest.approx(0.05)
    assert row['tracking_rms'] == pytest.approx(np.sqrt(np.mean(errors ** 2)), rel=1e-12)
    assert row['tracking_max'] == pytest.approx(errors.max(), rel=1e-12)
    assert row['peak_torque'] == pytest.approx(peak, rel=1e-12)
    assert row['energy_error'] == pytest.approx(
        abs(sim.diagnostics()['energy_balance_error']), rel=1e-9, abs=1e-12)


def test_a_diverging_run_is_a_row_with_its_reason(tmp_path):
    s = spec(scenario={'duration': 0.2, 'max_error': 0.5},
             vary={'list': [{'gain_scale': 1.0}, {'gain_scale': 3000.0}, {'q0_offset': 0.8}]})
    rows = run_sweep(s, tmp_path, serial=True)['table'].to_pylist()
    assert [r['status'] for r in rows] == ['ok', 'diverged', 'lost']
    assert rows[0]['reason'] == ''
    assert 'energy balance' in rows[1]['reason'] and rows[1]['t_end'] < 0.2
    assert rows[2]['reason'].startswith('tracking error 0.8 > max_error 0.5')
    assert os.path.isfile(tmp_path / 'metrics.png')


SWEEP = spec(seed=7, runs_per_task=2, trajectories=True, vary={'random': {
    'n': 6, 'seed': 1, 'ranges': {'payload': [0, 3], 'friction_scale': [0.5, 1.5],
                                  'effort_noise': [0, 0.5]}}})


def test_the_cluster_equals_the_serial_runs_bit_for_bit(client, tmp_path):
    on_dask = run_sweep(SWEEP, tmp_path / 'dask', client=client)
    serial = run_sweep(SWEEP, tmp_path / 'serial', serial=True)
    assert on_dask['table'].num_rows == 6
    assert on_dask['table'].equals(serial['table'])
    for i in range(6):
        a = np.load(tmp_path / 'dask' / 'trajectories' / f'run-{i:06d}.npz')
        b = np.load(tmp_path / 'serial' / 'trajectories' / f'run-{i:06d}.npz')
        for key in ('t', 'q', 'q_d', 'tau'):
            assert np.array_equal(a[key], b[key]), (i, key)


def test_a_restarted_sweep_recomputes_nothing_already_written(client, tmp_path):
    s = dict(SWEEP, trajectories=False)
    first = run_sweep(s, tmp_path, client=client)
    assert first['computed'] == list(range(6))
    again = run_sweep(s, tmp_path, client=client)
    assert again['computed'] == [] and again['skipped'] == 6
    assert again['table'].equals(first['table'])
    # interrupted: the part with runs 2 and 3 never written
    os.remove(tmp_path / 'parts' / 'part-000002-000003.parquet')
    resumed = run_sweep(s, tmp_path, client=client)
    assert resumed['computed'] == [2, 3] and resumed['skipped'] == 4
    assert resumed['table'].equals(first['table'])
    with pytest.raises(SpecError, match='another sweep'):
        run_sweep(dict(s, seed=8), tmp_path, client=client)


KILLER = '''
import os
import numpy as np
from liemb_ros.core.dynamics import gravity_torques


def law(model, t, q, qd, q_d, qd_d, qdd_d, params):
    """Gravity compensation with PD; the first call anywhere kills its process."""
    if not os.path.exists({marker!r}):
        open({marker!r}, 'w').close()
        os._exit(1)
    return gravity_torques(model, q) + 200.0 * (q_d - q) - 20.0 * qd
'''


def test_a_worker_killed_mid_sweep_costs_only_its_task(client, tmp_path):
    marker = tmp_path / 'killed'
    path = tmp_path / 'killer.py'
    path.write_text(KILLER.format(marker=str(marker)))
    s = spec(controller=f'{path}:law', runs_per_task=1,
             vary={'grid': {'payload': [0.0, 1.0, 2.0, 3.0]}})
    on_dask = run_sweep(s, tmp_path / 'dask', client=client)
    assert marker.exists()   # a worker died in a task, and Dask ran that task again
    assert on_dask['table'].column('run').to_pylist() == [0, 1, 2, 3]
    assert set(on_dask['table'].column('status').to_pylist()) == {'ok'}
    serial = run_sweep(s, tmp_path / 'serial', serial=True)
    assert on_dask['table'].equals(serial['table'])


def test_liemb_sweep_reports_bad_input_in_one_line(tmp_path, capsys):
    bad = tmp_path / 'bad.yaml'
    bad.write_text('robot: liemb_arm7\nvary: {grid: {mass: [1, 2]}}\n')
    wrong = tmp_path / 'wrong.yaml'
    wrong.write_text('robot: liemb_arm7\ngains: {kp: [1, 2]}\n')
    nolink = tmp_path / 'nolink.yaml'
    nolink.write_text('robot: liemb_arm7\nlink: nowhere\n')
    for argv in ([str(bad)], [str(tmp_path / 'missing.yaml')], [str(wrong), '--serial'],
                 [str(nolink), '--serial']):
        assert cli.main(['sweep', *argv, '--out', str(tmp_path / 'out')]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith('liemb sweep: ') and '\n' not in err, err
    with pytest.raises(SystemExit) as exc:
        cli.main(['sweep', '--help'])
    assert exc.value.code == 0 and '--scheduler' in capsys.readouterr().out


def test_liemb_sweep_runs_a_spec_file(tmp_path, capsys):
    path = tmp_path / 'spec.yaml'
    path.write_text('robot: liemb_arm7\nscenario: {duration: 0.02}\n'
                    'vary: {grid: {payload: [0, 1]}}\n')
    assert cli.main(['sweep', str(path), '--out', str(tmp_path / 'out'), '--serial']) == 0
    assert '2 runs (2 run now, 0 already done, 0 failed)' in capsys.readouterr().out
    assert (tmp_path / 'out' / 'results.parquet').is_file()


def test_the_packages_laws_hold_the_nominal_robot_and_feel_the_payload(tmp_path):
    """At rest at the setpoint a law that cancels gravity holds the nominal robot exactly."""
    s = spec(controller='gravity_compensation', gains={'kp': 200, 'kd': 20},
             scenario={'duration': 0.05, 'contact': True},
             vary={'grid': {'payload': [0.0, 2.0]}})
    rows = run_sweep(s, tmp_path / 'g', serial=True)['table'].to_pylist()
    assert [r['status'] for r in rows] == ['ok', 'ok']
    assert rows[0]['tracking_max'] < 1e-9 < 1e-3 < rows[1]['tracking_max']
    s = spec(controller='impedance', scenario={'duration': 0.05},
             vary={'grid': {'payload': [0.0, 2.0]}})
    rows = run_sweep(s, tmp_path / 'i', serial=True)['table'].to_pylist()
    assert [r['status'] for r in rows] == ['ok', 'ok']
    assert rows[0]['tracking_max'] < 1e-9 < 1e-3 < rows[1]['tracking_max']
