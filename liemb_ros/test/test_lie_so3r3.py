"""SO(3)xR^3 direct product ([MT14] App. A.3): product, exp/log, Ad/ad, mixed twists."""
from hypothesis import given, strategies as st
import numpy as np
import scipy.linalg as sl

from liemb_ros.core.lie import se3, so3, so3r3
from test_lie_groups import algebra, FEW, seeds, SOME


@FEW
@given(seed=seeds)
def test_product_is_the_direct_product_not_the_matrix_product(seed):
    C1, C2 = so3r3.random(np.random.default_rng(seed), 2)
    C = so3r3.compose(C1, C2)
    np.testing.assert_allclose(C[:3, :3], C1[:3, :3] @ C2[:3, :3], atol=1e-15)
    np.testing.assert_allclose(C[:3, 3], C1[:3, 3] + C2[:3, 3], atol=1e-15)
    np.testing.assert_array_equal(C[3], [0, 0, 0, 1])
    assert np.abs(C - se3.compose(C1, C2)).max() > 1e-6
    Ci = so3r3.inverse(C1)
    np.testing.assert_array_equal(Ci[:3, :3], C1[:3, :3].T)
    np.testing.assert_array_equal(Ci[:3, 3], -C1[:3, 3])


@SOME
@given(data=st.data())
def test_exp_log_ad_dexp_are_componentwise(data):
    """``exp(xi, r) = (exp xi, r)``, ``Ad = blockdiag(R, I)``, ``dexp = blockdiag(dexp_xi, I)``."""
    X = data.draw(algebra(6))
    C = so3r3.exp(X)
    np.testing.assert_array_equal(C[:3, :3], so3.exp(X[:3]))
    np.testing.assert_array_equal(C[:3, 3], X[3:])
    np.testing.assert_array_equal(so3r3.log(C), np.concatenate([so3.log(C[:3, :3]), X[3:]]))
    I6 = np.eye(6)
    np.testing.assert_array_equal(so3r3.Ad(C), sl.block_diag(C[:3, :3], I6[:3, :3]))
    np.testing.assert_array_equal(so3r3.ad(X), sl.block_diag(so3.hat(X[:3]), 0 * I6[:3, :3]))
    np.testing.assert_array_equal(so3r3.dexp(X), sl.block_diag(so3.dexp(X[:3]), I6[:3, :3]))
    np.testing.assert_array_equal(so3r3.dexpinv(X),
                                  sl.block_diag(so3.dexpinv(X[:3]), I6[:3, :3]))
    Y = data.draw(algebra(6))
    np.testing.assert_allclose(so3r3.ad(X) @ Y,
                               np.concatenate([np.cross(X[:3], Y[:3]), np.zeros(3)]),
                               atol=1e-15)


@SOME
@given(data=st.data())
def test_left_and_right_trivialisations_are_mixed_and_hybrid_twists(data):
    """[M18k] Remark 17: ``dexp_{-X} X' = (omega^b, r')``, ``dexp_X X' = (omega^s, r')``."""
    X = data.draw(algebra(6, max_angle=3.0))
    Xd = data.draw(algebra(6, max_angle=2.0))
    h = 1e-6
    Rd = (so3.exp(X[:3] + h * Xd[:3]) - so3.exp(X[:3] - h * Xd[:3])) / (2 * h)
    R = so3.exp(X[:3])
    mixed = np.concatenate([so3.vee(R.T @ Rd), Xd[3:]])
    hybrid = np.concatenate([so3.vee(Rd @ R.T), Xd[3:]])
    np.testing.assert_allclose(so3r3.dexp(-X) @ Xd, mixed, atol=1e-8)
    np.testing.assert_allclose(so3r3.dexp(X) @ Xd, hybrid, atol=1e-8)


def test_free_translation_stays_on_a_line(rng):
    """The direct-product exp moves the origin on a straight line (no screw coupling)."""
    X = rng.uniform(-2, 2, 6)
    for t in np.linspace(-1, 1, 7):
        np.testing.assert_allclose(so3r3.exp(t * X)[:3, 3], t * X[3:], atol=1e-15)
