"""
SE(3): hat/Ad/ad identities, screw exponentials of [M18k], the dexp blocks and the errata.

The dexp blocks are checked against the printed and corrected formulas of [MT14] eqs. (55),
(57) and (58) (docs/theory/conventions.md#dexp-and-its-inverse; the misprints are listed in
docs/theory/errata.md): the printed ones are shown to be wrong, the corrected ones and the
Selig forms to agree with the ad-power series.
"""
import math

from hypothesis import given, strategies as st
import numpy as np
import pytest
import scipy.linalg as sl

from liemb_ros.core._kernels import lie as _core
from liemb_ros.core.lie import se3, so3
from test_lie_groups import algebra, dexp_series, dexpinv_series, FEW, seeds, SOME, tol


def test_docstring_examples():
    np.testing.assert_array_equal(se3.hat([0, 0, 1, 1, 0, 0]),
                                  [[0, -1, 0, 1], [1, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]])
    np.testing.assert_allclose(se3.exp([0, 0, 0, 1, 2, 3]),
                               [[1, 0, 0, 1], [0, 1, 0, 2], [0, 0, 1, 3], [0, 0, 0, 1]])


@FEW
@given(data=st.data())
def test_revolute_prismatic_and_helical_screws(data):
    """[M18k] eqs. (85), (86): ``exp(Y q) = [[exp(e q), (I - exp(e q)) d + h q e], [0, 1]]``."""
    e = data.draw(algebra(3, max_angle=1.0).filter(lambda a: np.linalg.norm(a) > 0.1))
    e = e / np.linalg.norm(e)
    d = np.array([data.draw(st.floats(-2, 2)) for _ in range(3)])
    h = data.draw(st.floats(-1, 1))
    q = data.draw(st.floats(-6, 6))
    Rq = so3.exp(e * q)
    C = se3.exp(np.concatenate([e, np.cross(d, e) + h * e]) * q)
    np.testing.assert_allclose(C[:3, :3], Rq, atol=1e-14)
    np.testing.assert_allclose(C[:3, 3], (np.eye(3) - Rq) @ d + h * q * e, atol=1e-13)
    np.testing.assert_allclose(se3.exp(np.concatenate([np.zeros(3), e]) * q)[:3, 3], q * e,
                               atol=1e-14)


@SOME
@given(data=st.data())
def test_exp_against_expm(data):
    X = data.draw(algebra(6))
    np.testing.assert_allclose(se3.exp(X), sl.expm(se3.hat(X)), atol=tol(X, rel=1e-14))
    np.testing.assert_array_equal(se3.vee(se3.hat(X)), X)


@FEW
@given(data=st.data(), seed=seeds)
def test_Ad_conjugates_hat_and_its_factors(data, seed):
    """``(Ad_C X)^ = C X^ C^-1`` ([M18k] eq. (92)); ``Ad_C = Ad_r Ad_R`` (eq. (91))."""
    C = se3.random(np.random.default_rng(seed))
    X = data.draw(algebra(6))
    Ci = se3.inverse(C)
    np.testing.assert_allclose(se3.hat(se3.Ad(C) @ X), C @ se3.hat(X) @ Ci,
                               atol=tol(C, X, rel=1e-14))
    np.testing.assert_allclose(Ci, np.linalg.inv(C), atol=1e-13)
    np.testing.assert_allclose(se3.Ad_inv(C), np.linalg.inv(se3.Ad(C)), atol=1e-12)
    np.testing.assert_allclose(se3.Ad_inv(C), se3.Ad(Ci), atol=1e-14)
    R, r = se3.to_Rr(C)
    np.testing.assert_array_equal(se3.from_Rr(R, r), C)
    np.testing.assert_allclose(se3.Ad(C), se3.Ad_r(r) @ se3.Ad_R(R), atol=1e-15)
    np.testing.assert_allclose(se3.Ad_r(r), se3.Ad(se3.from_Rr(np.eye(3), r)), atol=0)
    p = X[3:]
    np.testing.assert_allclose(se3.act(C, p), (C @ np.append(p, 1.0))[:3], atol=1e-14)


@FEW
@given(data=st.data())
def test_ad_is_the_commutator_and_ad_star_its_transpose(data):
    X, Y, W = (data.draw(algebra(6)) for _ in range(3))
    hX, hY = se3.hat(X), se3.hat(Y)
    np.testing.assert_allclose(se3.hat(se3.ad(X) @ Y), hX @ hY - hY @ hX, atol=1e-13)
    np.testing.assert_array_equal(se3.ad_star(X), se3.ad(X).T)
    # independent kernel: ad_X^T W = (m x w + f x v, f x w)
    ref = np.empty(6)
    _core.adT_apply_into(X, W, ref)
    np.testing.assert_allclose(se3.ad_star(X) @ W, ref, atol=1e-14)
    # duality with the power pairing W . V
    assert abs((se3.ad_star(X) @ W) @ Y - W @ (se3.ad(X) @ Y)) < 1e-12
    # the gyroscopic wrench -ad_V^T M V does no work on V
    M = np.diag([1.0, 2.0, 3.0, 4.0, 4.0, 4.0])
    assert abs(X @ (se3.ad_star(X) @ M @ X)) < 1e-12


@SOME
@given(data=st.data())
def test_body_and_spatial_twists_against_matrix_finite_differences(data):
    """``(C^-1 C')^v = dexp_{-X} X'`` ([MT14] eq. (53)), ``(C' C^-1)^v = dexp_X X'``."""
    X = data.draw(algebra(6, max_angle=3.0))
    Xd = data.draw(algebra(6, max_angle=2.0))
    h = 1e-6
    Cd = (se3.exp(X + h * Xd) - se3.exp(X - h * Xd)) / (2 * h)
    C = se3.exp(X)
    Ci = se3.inverse(C)
    np.testing.assert_allclose(se3.dexp(-X) @ Xd, se3.vee(Ci @ Cd), atol=tol(X, Xd, rel=1e-8))
    np.testing.assert_allclose(se3.dexp(X) @ Xd, se3.vee(Cd @ Ci), atol=tol(X, Xd, rel=1e-8))


def test_log_near_and_at_pi(rng):
    for _ in range(20):
        e = rng.standard_normal(3)
        e /= np.linalg.norm(e)
        eta = rng.uniform(-3, 3, 3)
        for d in [1e-3, 1e-6, 1e-9, 1e-12]:
            X = np.concatenate([(math.pi - d) * e, eta])
            np.testing.assert_allclose(se3.log(se3.exp(X)), X, atol=1e-13)
        C = se3.from_Rr(2 * np.outer(e, e) - np.eye(3), eta)
        X = se3.log(C)
        assert np.all(np.isfinite(X))
        np.testing.assert_allclose(se3.exp(X), C, atol=1e-14)


# --------------------------------------------------------------------------- errata
def _blocks(X):
    """Quantities of [MT14] App. A.2 for ``X = (xi, eta)``."""
    xi, eta = X[:3], X[3:]
    t = np.linalg.norm(xi)
    alpha = math.sin(t) / t
    beta = 2 * (1 - math.cos(t)) / t**2
    gamma = (t / 2) / math.tan(t / 2)
    h = xi @ eta / t**2
    return xi, eta, t, alpha, beta, gamma, h, so3.hat(xi), so3.hat(eta)


@pytest.mark.parametrize('theta', [0.3, 1.7, 3.0, 4.5])
def test_dexp_block_P_corrected_and_printed(theta, rng):
    """
    [MT14] eq. (55) as printed is wrong except at theta = 1; the corrected P is right.

    docs/theory/errata.md#mt14-eq55.
    """
    e = rng.standard_normal(3)
    X = np.concatenate([theta * e / np.linalg.norm(e), rng.uniform(-2, 2, 3)])
    xi, eta, t, a, b, g, h, xh, eh = _blocks(X)
    anti = eh @ xh + xh @ eh
    corrected = (b / 2 * eh + (1 - a) / t**2 * anti + h * (a - b) * xh
                 + h * (b / 2 - 3 * (1 - a) / t**2) * xh @ xh)
    printed = (b / 2 * eh + (1 - a) / t**2 * anti + h * (a - b) / t * xh
               + h / t**2 * (b / 2 - 3 * (1 - a) / t) * xh @ xh)
    truth = dexp_series(se3.ad(X), terms=80)
    np.testing.assert_allclose(se3.dexp(X), truth, atol=1e-13)
    np.testing.assert_allclose(se3.dexp(X)[3:, :3], corrected, atol=1e-13)
    assert np.abs(printed - truth[3:, :3]).max() > 1e-3


@pytest.mark.parametrize('theta', [0.3, 1.7, 3.0, 4.5])
def test_dexpinv_block_U_corrected_and_printed(theta, rng):
    """
    [MT14] eq. (57) with gamma = (2/t) cot(t/2) and h/t^3 is wrong; the corrected U is right.

    docs/theory/errata.md#mt14-eq57.
    """
    e = rng.standard_normal(3)
    X = np.concatenate([theta * e / np.linalg.norm(e), rng.uniform(-2, 2, 3)])
    xi, eta, t, a, b, g, h, xh, eh = _blocks(X)
    anti = eh @ xh + xh @ eh
    corrected = -eh / 2 + (1 - g) / t**2 * anti + h / t**2 * (1 / b + g - 2) * xh @ xh
    gp = 2 / t / math.tan(t / 2)
    printed = -eh / 2 + (1 - gp) / t**2 * anti + h / t**3 * (1 / b + gp - 2) * xh @ xh
    truth = np.linalg.inv(se3.dexp(X))
    np.testing.assert_allclose(se3.dexpinv(X), truth, atol=1e-12)
    np.testing.assert_allclose(se3.dexpinv(X)[3:, :3], corrected, atol=1e-12)
    assert np.abs(printed - truth[3:, :3]).max() > 1e-3
    if theta < 2:  # well inside the Bernoulli series radius 2 pi
        np.testing.assert_allclose(se3.dexpinv(X), dexpinv_series(se3.ad(X), 40), atol=1e-13)


def _selig_c(t):
    """[MT14] eq. (58) coefficients, as printed (correct but cancelling)."""
    c2 = 2 / t**2 + (t + 3 * math.sin(t)) / (4 * t * (math.cos(t) - 1))
    c4 = 1 / t**4 + (t + math.sin(t)) / (4 * t**3 * (math.cos(t) - 1))
    return c2, c4


def test_selig_forms_agree_and_cancel_at_small_angles(rng):
    """
    [MT14] eq. (58) is right for moderate angles, useless near 0; pure-ad dexp form too.

    docs/theory/errata.md#mt14-eq58.
    """
    X = np.concatenate([rng.uniform(-1, 1, 3), rng.uniform(-2, 2, 3)])
    X[:3] *= 1.3 / np.linalg.norm(X[:3])
    A = se3.ad(X)
    A2 = A @ A
    c2, c4 = _selig_c(1.3)
    np.testing.assert_allclose(se3.dexpinv(X), np.eye(6) - A / 2 + c2 * A2 + c4 * A2 @ A2,
                               atol=1e-13)
    t, s, c = 1.3, math.sin(1.3), math.cos(1.3)
    selig = (np.eye(6) + (4 - t * s - 4 * c) / (2 * t**2) * A
             + (4 * t - 5 * s + t * c) / (2 * t**3) * A2
             + (2 - t * s - 2 * c) / (2 * t**4) * A2 @ A
             + (2 * t - 3 * s + t * c) / (2 * t**5) * A2 @ A2)
    np.testing.assert_allclose(se3.dexp(X), selig, atol=1e-13)
    # at theta = 1e-3 the printed c4 is off by orders of magnitude (true value ~ -1/720)
    assert abs(_selig_c(1e-3)[1] + 1 / 720) > 1.0


def test_mixed_velocity_map_of_remark_5(rng):
    """``V^m = blockdiag(I, R) dexp_{-X} X' = [[dexp_{-xi}, 0], [R P(-X), dexp_xi]] X'``."""
    X = rng.uniform(-1.5, 1.5, 6)
    Xd = rng.uniform(-1, 1, 6)
    R = se3.exp(X)[:3, :3]
    A = np.zeros((6, 6))
    A[:3, :3] = so3.dexp(-X[:3])
    A[3:, :3] = R @ se3.dexp(-X)[3:, :3]
    A[3:, 3:] = so3.dexp(X[:3])
    V = se3.dexp(-X) @ Xd
    np.testing.assert_allclose(A @ Xd, np.concatenate([V[:3], R @ V[3:]]), atol=1e-14)


def _pose_from(rng):
    """A random pose from an exponential (rotation up to pi, translation of size 1)."""
    return se3.exp(np.concatenate([rng.uniform(-2, 2, 3), rng.standard_normal(3)]))


@FEW
@given(seed=seeds)
def test_kernels_accept_out_aliasing_an_input(seed):
    """
    Every ``*_into`` kernel of ``_kernels.lie`` writes into ``out`` = one of its inputs correctly.

    The reference is the same kernel into a fresh array (itself checked against the 6x6
    matrices above); the aliased call must give the same numbers (issue 17, item 6).
    """
    rng = np.random.default_rng(seed)
    C, D = _pose_from(rng), _pose_from(rng)
    X, Y = rng.standard_normal(6), rng.standard_normal(6)
    for kernel in (_core.Ad_apply_into, _core.Ad_inv_apply_into, _core.AdT_apply_into,
                   _core.Ad_invT_apply_into):
        ref = np.empty(6)
        kernel(C, X, ref)
        got = X.copy()
        kernel(C, got, got)
        np.testing.assert_array_equal(got, ref, err_msg=kernel.__name__)
    for kernel in (_core.ad_apply_into, _core.adT_apply_into):
        ref = np.empty(6)
        kernel(X, Y, ref)
        for which in (0, 1):
            a, b = X.copy(), Y.copy()
            kernel(a, b, (a, b)[which])
            np.testing.assert_array_equal((a, b)[which], ref, err_msg=kernel.__name__)
    ref = np.empty((4, 4))
    _core.compose_into(C, D, ref)
    np.testing.assert_allclose(ref, C @ D, rtol=0, atol=1e-14)
    for which in (0, 1):
        a, b = C.copy(), D.copy()
        _core.compose_into(a, b, (a, b)[which])
        np.testing.assert_array_equal((a, b)[which], ref)
    a = C.copy()
    _core.inverse_into(a, a)
    np.testing.assert_allclose(a @ C, np.eye(4), rtol=0, atol=1e-14)
