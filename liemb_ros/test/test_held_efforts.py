"""
The momentum form of held efforts (core/held_efforts.py): p = M q̇ and w = Cᵀq̇ - g against the
mass and Coriolis matrices, and the interval rows against the equations of motion integrated
finely (fourth order in the interval); a simulated arm identified to 1e-6 through them.
"""
import numpy as np
import pytest

import liemb_ros as lm
from conftest import erd_path
from liemb_ros.core.held_efforts import (interval_regressor, momentum_rate_regressor,
                                         momentum_regressor)
from liemb_ros.core.identification import inertial_parameters, parameter_count
from test_dynamics import make_tree


def _robots():
    rng = np.random.default_rng(11)
    return {'tree': make_tree(rng, 7), 'panda (coupled fingers)':
            lm.load_urdf(erd_path('panda'), mimic='couple'), 'ur5': lm.load_urdf(erd_path('ur5'))}


ROBOTS = _robots()


@pytest.mark.parametrize('name', list(ROBOTS))
def test_momentum_and_its_rate_against_the_mass_and_coriolis_matrices(name):
    """Y_p π = M(q) q̇ (plus a q̇ of armature) and Y_w π = C(q, q̇)ᵀ q̇ - g(q), to round-off."""
    model = ROBOTS[name]
    rng = np.random.default_rng(1)
    q = np.stack([model.random_configuration(rng) for _ in range(4)])
    qd = rng.uniform(-2.0, 2.0, (4, model.nv))
    a = rng.uniform(0.01, 0.1, model.nq)
    pi = np.concatenate([inertial_parameters(model), np.zeros(2 * model.nq), a])
    Yp = momentum_regressor(model, q, qd, friction=True, armature=True)
    Yw = momentum_rate_regressor(model, q, qd, friction=True, armature=True)
    assert Yp.shape == Yw.shape == (4, model.nv, parameter_count(model, True, True))
    for n in range(4):
        M = lm.mass_matrix(model, q[n], armature=a)
        p = M @ qd[n]
        w = lm.coriolis_matrix(model, q[n], qd[n]).T @ qd[n] - lm.gravity_torques(model, q[n])
        np.testing.assert_allclose(Yp[n] @ pi, p, rtol=0, atol=1e-12 * max(np.abs(p).max(), 1))
        np.testing.assert_allclose(Yw[n] @ pi, w, rtol=0, atol=1e-12 * max(np.abs(w).max(), 1))


def _interval(model, q0, v0, tau, h, a, fv, fc, substeps=400):
    """Integrate M q̈ = τ - C q̇ - g - fv q̇ - fc sign(q̇) over h (RK4, fine); return q, q̇."""
    def f(x, v):
        return np.linalg.solve(lm.mass_matrix(model, x, armature=a),
                               tau - fv * v - fc * np.sign(v)
                               - lm.inverse_dynamics(model, x, v, np.zeros_like(v)))
    dt = h / substeps
    x, v = q0.copy(), v0.copy()
    for _ in range(substeps):
        k1x, k1v = v, f(x, v)
        k2x, k2v = v + dt / 2 * k1v, f(x + dt / 2 * k1x, v + dt / 2 * k1v)
        k3x, k3v = v + dt / 2 * k2v, f(x + dt / 2 * k2x, v + dt / 2 * k2v)
        k4x, k4v = v + dt * k3v, f(x + dt * k3x, v + dt * k3v)
        x = x + dt / 6 * (k1x + 2 * k2x + 2 * k3x + k4x)
        v = v + dt / 6 * (k1v + 2 * k2v + 2 * k3v + k4v)
    return x, v


def test_interval_rows_are_the_held_effort_to_fourth_order():
    """
    A held effort over one interval, integrated finely: A π = τ to 1e-8 of τ at 2 ms and the
    error falls 16-fold each time h halves (fourth order); Coulomb and viscous friction and
    armature included, the velocity keeping its sign (reported speed above zero).
    """
    model = lm.load_urdf(erd_path('ur5'))
    rng = np.random.default_rng(2)
    n = model.nq
    q0 = model.random_configuration(rng)
    v0 = rng.choice([-1.0, 1.0], n) * rng.uniform(0.5, 1.5, n)
    tau = rng.uniform(-20.0, 20.0, n)
    a, fv, fc = rng.uniform(0.01, 0.1, n), rng.uniform(0.1, 1.0, n), rng.uniform(0.1, 2.0, n)
    pi = np.concatenate([inertial_parameters(model), fv, fc, a])
    errors = []
    for h in (0.008, 0.004, 0.002):
        x, v = _interval(model, q0, v0, tau, h, a, fv, fc)
        A, speed = interval_regressor(model, h, np.stack([q0, x]), np.stack([v0, v]),
                                      friction=True, armature=True)
        assert A.shape == (1, n, pi.size) and np.all(speed > 0.0)
        errors.append(np.abs(A[0] @ pi - tau).max() / np.abs(tau).max())
    assert errors[-1] < 1e-8, errors
    orders = np.log2(np.array(errors[:-1]) / errors[1:])
    assert np.all(orders > 3.6), (errors, orders)


def test_speed_is_zero_across_a_reversal_and_errors_are_clear():
    """A velocity that changes sign in an interval has speed 0; bad input raises ValueError."""
    model = ROBOTS['tree']
    qd = np.ones((3, model.nv))
    q = 0.01 * np.arange(3)[:, None] * qd        # moving at 1 (rad or m)/s: consistent ends
    qd[1, 0] = -1.0
    _, speed = interval_regressor(model, 0.01, q, qd)
    assert speed[0, 0] == speed[1, 0] == 0.0 and np.all(speed[:, 1:] > 0.0)
    with pytest.raises(ValueError, match='shapes'):
        interval_regressor(model, 0.01, q[:, :-1], qd)
    with pytest.raises(ValueError, match='positive'):
        interval_regressor(model, 0.0, q, qd)
    with pytest.raises(ValueError, match='NaN'):
        interval_regressor(model, 0.01, q * np.nan, qd)
    floating = make_tree(np.random.default_rng(3), 4, floating=True)
    with pytest.raises(ValueError, match='fixed-base'):
        momentum_regressor(floating, np.zeros((1, floating.nq)), np.zeros((1, floating.nv)))
