"""Joint rates from the bodies' twists and accelerations ([M18d] (11), Remarks 1 and 3)."""
import numpy as np
import pytest

import liemb_ros as lm
from liemb_ros.core.lie import se3
from conftest import erd_path
from test_dynamics import make_tree


def accelerations(model, q, qd, qdd):
    """The bodies' V̇^b by (10), ``V̇ = J q̈ - A a V`` of the closed-form system matrices."""
    S = lm.system_matrices(model, q, qd)
    return (S['J'] @ qdd - S['A'] @ S['a'] @ S['V']).reshape(model.nb, 6)


@pytest.mark.parametrize('seed', range(3))
def test_recovers_the_joint_motion(seed):
    """Random trees of R/P/H joints: (q̇, q̈) back from (V^b, V̇^b) to round-off."""
    rng = np.random.default_rng(seed)
    model = make_tree(rng, 7)
    q, qd, qdd = rng.standard_normal((3, model.nq))
    V = lm.body_twists(model, q, qd, 'body')
    np.testing.assert_allclose(lm.joint_rates(model, q, V), qd, rtol=0, atol=1e-12)
    qd2, qdd2 = lm.joint_rates(model, q, V, accelerations(model, q, qd, qdd))
    np.testing.assert_allclose(qd2, qd, rtol=0, atol=1e-12)
    np.testing.assert_allclose(qdd2, qdd, rtol=0, atol=1e-12 * np.abs(qdd).max())


def test_accelerations_by_differences_and_mimic():
    """Panda, coupled fingers: V̇^b by fourth-order differences of body_twists (step 1e-3)."""
    model = lm.load_urdf(erd_path('panda'), mimic='couple')
    rng = np.random.default_rng(8)
    q = model.random_configuration(rng)
    qd, qdd = rng.standard_normal((2, model.nv))
    h = 1e-3
    V = lambda t: lm.body_twists(model, q + qd * t + qdd * t * t / 2, qd + qdd * t)  # noqa: E731
    Vd = (V(-2 * h) - 8 * V(-h) + 8 * V(h) - V(2 * h)) / (12 * h)
    qd2, qdd2 = lm.joint_rates(model, q, V(0.0), Vd)
    np.testing.assert_allclose(qd2, qd, rtol=0, atol=1e-12)
    np.testing.assert_allclose(qdd2, qdd, rtol=0, atol=1e-8 * np.abs(qdd).max())


def test_least_squares_for_data_off_the_model(rng):
    """Twists no motion of the model gives: each joint's rate is the fit XᵀΔV / XᵀX."""
    model = make_tree(rng, 4)
    q = rng.standard_normal(model.nq)
    V = rng.standard_normal((model.nb, 6))
    qd = lm.joint_rates(model, q, V)
    V_fit = lm.body_twists(model, q, qd, 'body')
    C = lm.body_poses(model, q)
    for i in range(model.nb):      # the residual of every body is orthogonal to its screw
        p = model.parent[i]
        moved = V_fit[i] - V[i]
        if p >= 0:
            moved -= se3.Ad_inv(C[i]) @ se3.Ad(C[p]) @ (V_fit[p] - V[p])
        assert abs(model.X[i] @ moved) < 1e-12


def test_bad_input(rng):
    model = make_tree(rng, 3)
    q = np.zeros(3)
    with pytest.raises(ValueError, match=r'twists must have shape \(3, 6\)'):
        lm.joint_rates(model, q, np.zeros((2, 6)))
    with pytest.raises(ValueError, match='accelerations contains NaN'):
        lm.joint_rates(model, q, np.zeros((3, 6)), np.full((3, 6), np.nan))
    with pytest.raises(ValueError, match='fixed-base'):
        lm.joint_rates(make_tree(rng, 3, True), q, np.zeros((3, 6)))
