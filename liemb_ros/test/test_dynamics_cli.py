"""``liemb dynamics``: the printed table holds τ, M q̈, C q̇, g and M of the library."""
import subprocess
import sys

import numpy as np
import pytest

import liemb_ros as lm
from liemb_ros.app.cli import main
from liemb_ros.core.resources import robot_path
from conftest import erd_path


def table(text, names):
    """Return the numbers of the rows named ``names`` in the order they are printed."""
    rows = {}
    for line in text.splitlines():
        for n in names:
            if line.startswith(n + ' ') and n not in rows:
                rows[n] = [np.nan if x == '-' else float(x) for x in line[len(n):].split()]
    return np.array([rows[n] for n in names])


def test_dynamics_table_matches_the_library(capsys):
    path = erd_path('ur5')
    model = lm.load_urdf(path)
    rng = np.random.default_rng(1)
    q, qd, qdd = (np.round(rng.uniform(-1, 1, model.nv), 3) for _ in range(3))
    argv = ['dynamics', path, '--precision', '6']
    for flag, v in (('--q', q), ('--qd', qd), ('--qdd', qdd)):
        argv += [flag] + [str(x) for x in v]
    assert main(argv) == 0
    out = capsys.readouterr().out
    rows = table(out, model.joint_names)
    np.testing.assert_allclose(rows[:, 0], q, atol=1e-6)
    tau = lm.inverse_dynamics(model, q, qd, qdd)
    M = lm.mass_matrix(model, q)
    np.testing.assert_allclose(rows[:, 3], tau, atol=1e-6)
    np.testing.assert_allclose(rows[:, 4], M @ qdd, atol=1e-6)
    np.testing.assert_allclose(rows[:, 5], lm.coriolis_matrix(model, q, qd) @ qd, atol=1e-6)
    np.testing.assert_allclose(rows[:, 6], lm.gravity_torques(model, q), atol=1e-6)
    mass = out[out.index('mass matrix'):]
    np.testing.assert_allclose(table(mass, model.joint_names), M, atol=1e-6)


def test_dynamics_shipped_robot_floating_base(capsys):
    assert main(['dynamics', 'liemb_arm7', '--floating-base', '--form', 'hybrid']) == 0
    out = capsys.readouterr().out
    model = lm.load_urdf(robot_path('liemb_arm7'), floating_base=True)
    assert 'nv = 13' in out and 'form = hybrid' in out
    rows = table(out, ['base vz'] + model.joint_names)
    g = lm.gravity_torques(model, model.neutral())
    np.testing.assert_allclose(rows[:, 3], g[5:], atol=1e-4)


@pytest.mark.parametrize('argv, message', [
    (['--q', '1', '2'], '--q needs 6 values'),
    (['--qd', 'nan', '0', '0', '0', '0', '0'], 'qd contains NaN'),
])
def test_dynamics_bad_input_is_a_clean_error(argv, message):
    with pytest.raises(SystemExit, match=message):
        main(['dynamics', erd_path('ur5')] + argv)


def test_dynamics_unknown_robot_is_a_clean_error():
    proc = subprocess.run([sys.executable, '-m', 'liemb_ros.app.cli', 'dynamics', 'no_such_robot'],
                          capture_output=True, text=True)
    assert proc.returncode != 0
    assert 'liemb: ' in proc.stderr and 'no_such_robot' in proc.stderr
    assert 'Traceback' not in proc.stderr
