"""Quaternions and dual quaternions against scipy, SO(3)/SE(3) and the kinematics of [MT14]."""
import math

from hypothesis import given, strategies as st
from hypothesis.extra.numpy import arrays
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from liemb_ros.core.lie import dual_quaternion as dq, quaternion as quat, se3, so3
from test_lie_groups import algebra, FEW, seeds, SOME

quats = arrays(np.float64, 4, elements=st.floats(-1, 1)).filter(
    lambda q: np.linalg.norm(q) > 0.1).map(lambda q: q / np.linalg.norm(q))


def test_conventions():
    i, j, k = np.eye(4)[1], np.eye(4)[2], np.eye(4)[3]
    np.testing.assert_array_equal(quat.multiply(i, j), k)  # Hamilton: ij = k
    np.testing.assert_array_equal(quat.from_xyzw([0.1, 0.2, 0.3, 0.9]), [0.9, 0.1, 0.2, 0.3])
    np.testing.assert_array_equal(quat.to_xyzw([0.9, 0.1, 0.2, 0.3]), [0.1, 0.2, 0.3, 0.9])
    np.testing.assert_array_equal(quat.to_matrix([0, 0, 0, 1.0]), np.diag([-1.0, -1, 1]))
    with pytest.raises(ValueError, match='zero quaternion'):
        quat.normalize(np.zeros(4))


@SOME
@given(q=quats)
def test_quaternion_matrix_against_scipy(q):
    R = quat.to_matrix(q)
    np.testing.assert_allclose(R, Rotation.from_quat(quat.to_xyzw(q)).as_matrix(), atol=1e-15)
    p = quat.from_matrix(R)
    assert p[0] >= 0 and min(np.abs(p - q).max(), np.abs(p + q).max()) < 2e-15
    np.testing.assert_allclose(quat.to_matrix(3.0 * q), R, atol=1e-15)  # norm ignored


@pytest.mark.parametrize('axis', range(3))
def test_from_matrix_near_half_turns(axis):
    """Every branch of Shepperd's method, including half turns (w = 0)."""
    for angle in [math.pi, math.pi - 1e-9, 2.0, 0.5, 1e-9, 0.0]:
        x = np.zeros(3)
        x[axis] = angle
        q = quat.from_matrix(so3.exp(x))
        np.testing.assert_allclose(quat.to_matrix(q), so3.exp(x), atol=1e-15)
        assert q[0] >= 0 and abs(np.linalg.norm(q) - 1) < 1e-15


@SOME
@given(data=st.data())
def test_quaternion_exp_log_and_rotation_vectors(data):
    x = data.draw(algebra(3))
    q = quat.exp(x)
    np.testing.assert_allclose(quat.to_matrix(q), so3.exp(x), atol=1e-15)
    np.testing.assert_allclose(quat.log(q), x, atol=1e-14)
    np.testing.assert_allclose(quat.log(q), so3.log(so3.exp(x)), atol=1e-14)
    np.testing.assert_allclose(q, quat.from_xyzw(Rotation.from_rotvec(x).as_quat()), atol=1e-15)
    np.testing.assert_allclose(quat.exp(quat.log(-q)), q, atol=1e-15)  # w >= 0 chosen


@SOME
@given(p=quats, q=quats, v=arrays(np.float64, 3, elements=st.floats(-3, 3)))
def test_quaternion_product_conjugate_and_action(p, q, v):
    np.testing.assert_allclose(quat.to_matrix(quat.multiply(p, q)),
                               quat.to_matrix(p) @ quat.to_matrix(q), atol=1e-14)
    np.testing.assert_allclose(quat.to_matrix(quat.conjugate(q)), quat.to_matrix(q).T,
                               atol=1e-15)
    np.testing.assert_allclose(quat.act(q, v), quat.to_matrix(q) @ v, atol=1e-14)
    pure = quat.multiply(quat.multiply(q, np.append(0.0, v)), quat.conjugate(q))
    np.testing.assert_allclose(pure, np.append(0.0, quat.act(q, v)), atol=1e-14)
    np.testing.assert_allclose(quat.normalize(2.5 * q), q, atol=1e-15)


# --------------------------------------------------------------------------- dual quaternions
@SOME
@given(data=st.data())
def test_dual_quaternion_exp_is_se3_exp(data):
    X = data.draw(algebra(6))
    D = dq.exp(X)
    C = se3.exp(X)
    np.testing.assert_allclose(dq.to_matrix(D), C, atol=1e-14)
    np.testing.assert_allclose(D, dq.from_matrix(C) * np.sign(D[0] or 1.0), atol=1e-14)
    assert abs(D[:4] @ D[:4] - 1) < 1e-15 and abs(D[:4] @ D[4:]) < 1e-14  # eq. (74) constraints
    np.testing.assert_allclose(dq.log(D), X, atol=1e-13)
    np.testing.assert_allclose(dq.log(D), se3.log(C), atol=1e-13)
    # double cover: -D is the same pose (docs/theory/errata.md#mt14-a4-double-cover)
    np.testing.assert_allclose(dq.exp(dq.log(-D)), D, atol=1e-14)
    np.testing.assert_allclose(dq.to_matrix(-D), C, atol=1e-14)


@FEW
@given(seed=seeds)
def test_dual_quaternion_product_and_conjugate_compose_poses(seed):
    C1, C2 = se3.random(np.random.default_rng(seed), 2)
    A, B = dq.from_matrix(C1), dq.from_matrix(C2)
    np.testing.assert_allclose(dq.to_matrix(A), C1, atol=1e-14)
    np.testing.assert_allclose(dq.to_matrix(dq.multiply(A, B)), C1 @ C2, atol=1e-13)
    np.testing.assert_allclose(dq.to_matrix(dq.conjugate(A)), se3.inverse(C1), atol=1e-14)
    np.testing.assert_allclose(dq.multiply(A, dq.conjugate(A)), np.eye(8)[0], atol=1e-14)


@FEW
@given(data=st.data())
def test_dual_quaternion_velocity_maps_against_finite_differences(data):
    """``D' = D o (omega + eps v)/2`` for the body twist ``V = dexp_{-X} X'``
    ([MT14] eq. (78), corrected: docs/theory/errata.md#mt14-eq76)."""
    X = data.draw(algebra(6, max_angle=3.0))
    Xd = data.draw(algebra(6, max_angle=2.0))
    h = 1e-6
    Dd = (dq.exp(X + h * Xd) - dq.exp(X - h * Xd)) / (2 * h)
    V = se3.dexp(-X) @ Xd
    rhs = 0.5 * dq.multiply(dq.exp(X), np.concatenate([[0.0], V[:3], [0.0], V[3:]]))
    np.testing.assert_allclose(Dd, rhs, atol=1e-8)
