"""SO(3): hat/vee, exp/log (near 0 and pi) against scipy, dexp against finite differences."""
import math

from hypothesis import given, strategies as st
import numpy as np
from scipy.spatial.transform import Rotation
import scipy.linalg as sl

from liemb_ros.core.lie import so3
from test_lie_groups import algebra, FEW, seeds, SOME


def test_hat_vee_and_docstring_examples():
    np.testing.assert_array_equal(so3.hat([1.0, 2.0, 3.0]),
                                  [[0, -3, 2], [3, 0, -1], [-2, 1, 0]])
    np.testing.assert_allclose(so3.exp([0, 0, math.pi / 2]),
                               [[0, -1, 0], [1, 0, 0], [0, 0, 1]], atol=2e-16)
    np.testing.assert_array_equal(so3.ad([1.0, 2.0, 3.0]), so3.hat([1.0, 2.0, 3.0]))


@FEW
@given(data=st.data())
def test_hat_is_the_cross_product_and_vee_its_inverse(data):
    x, y = data.draw(algebra(3)), data.draw(algebra(3))
    np.testing.assert_allclose(so3.hat(x) @ y, np.cross(x, y), atol=1e-15)
    np.testing.assert_array_equal(so3.vee(so3.hat(x)), x)


@SOME
@given(data=st.data())
def test_exp_against_expm_and_scipy(data):
    x = data.draw(algebra(3))
    R = so3.exp(x)
    np.testing.assert_allclose(R, sl.expm(so3.hat(x)), atol=1e-14)
    np.testing.assert_allclose(R, Rotation.from_rotvec(x).as_matrix(), atol=1e-14)
    np.testing.assert_allclose(R.T @ R, np.eye(3), atol=1e-15)


@FEW
@given(seed=seeds)
def test_log_against_scipy(seed):
    R = so3.random(np.random.default_rng(seed), 8)
    np.testing.assert_allclose(so3.log(R), Rotation.from_matrix(R).as_rotvec(), atol=1e-12)


def test_log_near_and_at_pi(rng):
    for _ in range(20):
        e = rng.standard_normal(3)
        e /= np.linalg.norm(e)
        for d in [1e-3, 1e-6, 1e-9, 1e-12]:
            x = (math.pi - d) * e
            np.testing.assert_allclose(so3.log(so3.exp(x)), x, atol=5e-15)
        # exactly pi: R = 2 e e^T - I; the log is +-pi e, and no NaN
        R = 2 * np.outer(e, e) - np.eye(3)
        x = so3.log(R)
        assert np.all(np.isfinite(x))
        assert abs(np.linalg.norm(x) - math.pi) < 1e-15
        assert min(np.abs(x - math.pi * e).max(), np.abs(x + math.pi * e).max()) < 1e-14
        np.testing.assert_allclose(so3.exp(x), R, atol=1e-15)


def test_log_and_dexp_at_identity():
    np.testing.assert_array_equal(so3.log(np.eye(3)), np.zeros(3))
    np.testing.assert_array_equal(so3.dexp(np.zeros(3)), np.eye(3))
    np.testing.assert_array_equal(so3.dexpinv(np.zeros(3)), np.eye(3))
    x = np.array([1e-9, -2e-9, 3e-9])
    np.testing.assert_allclose(so3.log(so3.exp(x)), x, rtol=1e-15, atol=0)


@SOME
@given(data=st.data())
def test_body_angular_velocity_against_matrix_finite_differences(data):
    """``omega = dexp_{-xi} xi'`` with ``omega^ = R^T R'`` ([MT14] eq. (42))."""
    x = data.draw(algebra(3, max_angle=3.0))
    xd = data.draw(algebra(3, max_angle=2.0))
    h = 1e-6
    Rd = (so3.exp(x + h * xd) - so3.exp(x - h * xd)) / (2 * h)
    R = so3.exp(x)
    np.testing.assert_allclose(so3.dexp(-x) @ xd, so3.vee(R.T @ Rd), atol=1e-8)
    np.testing.assert_allclose(so3.dexp(x) @ xd, so3.vee(Rd @ R.T), atol=1e-8)


@FEW
@given(data=st.data())
def test_dexp_determinant_and_closed_forms(data):
    """``det dexp_xi = 2 (1 - cos t)/t^2`` (docs/theory/conventions.md) and [MT14] eq. (41)."""
    x = data.draw(algebra(3, max_angle=6.0))
    t = np.linalg.norm(x)
    det = 1.0 if t == 0 else (math.sin(t / 2) / (t / 2))**2  # = 2 (1 - cos t)/t^2
    assert abs(np.linalg.det(so3.dexp(x)) - det) < 1e-13
    if t > 1e-3:
        eq41 = ((np.eye(3) - so3.exp(x)) @ so3.hat(x) + np.outer(x, x)) / t**2
        np.testing.assert_allclose(so3.dexp(x), eq41, atol=1e-12)


@FEW
@given(seed=seeds, data=st.data())
def test_Ad_conjugates_hat_and_act_rotates(seed, data):
    R = so3.random(np.random.default_rng(seed))
    x = data.draw(algebra(3))
    np.testing.assert_allclose(so3.hat(so3.Ad(R) @ x), R @ so3.hat(x) @ R.T, atol=1e-14)
    np.testing.assert_allclose(so3.act(R, x), R @ x, atol=1e-15)
    np.testing.assert_array_equal(so3.inverse(R), R.T)
    np.testing.assert_allclose(so3.compose(R, R.T), np.eye(3), atol=1e-15)
