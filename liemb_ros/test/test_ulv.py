"""
The unified local velocity coordinates of [HGS18] and its RK4 Lie group scheme
(liemb_ros.sim.mbs.ulv).

Independent sources: the paper's printed matrices (54) (row 5 corrected), (60), (89); the
package's SE(3) exponential and dexp^-1 ([MT14] formulas) in the paper's translation-first
order; the body-twist Munthe-Kaas RK4 on the flip; closed-form free flight and free fall.
"""
import math

import numpy as np
import pytest

from liemb_ros.sim import integrators as itg
from liemb_ros.app import reproduce as rp
from liemb_ros.core.lie import se3
from liemb_ros.sim.mbs import ulv

S = 1 / math.sqrt(2)
P = np.block([[np.zeros((3, 3)), np.eye(3)], [np.eye(3), np.zeros((3, 3))]])


def test_projection_matrix_is_the_papers_and_orthogonal():
    D = ulv.projection_matrix()
    printed = S * np.array([[1, 0, 0, 0, 0, 1], [-1, 0, 0, 0, 0, 1], [0, 1, 0, 1, 0, 0],
                            [0, -1, 0, 1, 0, 0], [0, 0, 1, 0, 1, 0], [0, 0, -1, 0, 1, 0]])
    np.testing.assert_allclose(D, printed, atol=1e-15)
    np.testing.assert_allclose(D.T @ D, np.eye(6), atol=1e-15)
    assert np.linalg.det(D) == pytest.approx(-1.0)
    np.testing.assert_allclose(D @ [0, 0, 0, 0.01, 0, 100],                 # eq. (89)
                               [100 * S, 100 * S, 0.01 * S, 0.01 * S, 0, 0], atol=1e-13)
    # general half sides: w_i = b_i . (U + Omega x y_i)
    b, y = ulv.hexahedron((0.3, 0.5, 0.7))
    U, Om = np.array([0.1, -0.4, 0.9]), np.array([1.1, 0.2, -0.6])
    w = np.einsum('ij,ij->i', b, U + np.cross(Om, y))
    np.testing.assert_allclose(ulv.projection_matrix((0.3, 0.5, 0.7)) @ np.r_[U, Om], w,
                               atol=1e-15)


def test_mass_matrix_and_quadratic_term_match_eqs_60_61():
    m, J = 1.7, np.array([5.2988, 1.1775, 4.3568])
    body = ulv.UnifiedBody(m, np.diag(J))
    blocks = [(J[2], 0), (J[0], 2), (J[1], 4)]
    M60 = np.zeros((6, 6))
    for j, k in blocks:
        M60[k:k + 2, k:k + 2] = 0.5 * np.array([[m + j, j - m], [j - m, m + j]])
    np.testing.assert_allclose(body.M_bar, M60, atol=1e-14)
    w = np.array([0.3, -1.2, 0.7, 2.0, -0.4, 1.1])
    w1, w2, w3, w4, w5, w6 = w
    J11, J22, J33 = J
    row1 = (m * (w1 + w2) * (w4 - w3)          # eq. (61) row 1 corrected: errata.md#hgs18-eq61
            + ((J22 - J11) * (w3 + w4) + m * (w5 - w6)) * (w5 + w6)) / (2 * math.sqrt(2))
    row3 = (m * (w1 ** 2 - w2 ** 2 - (w3 + w4) * (w5 - w6))
            - (J22 - J33) * (w1 + w2) * (w5 + w6)) / (2 * math.sqrt(2))
    g = body.quadratic(w)
    assert g[0] == pytest.approx(row1) and g[2] == pytest.approx(row3)
    assert w @ g == pytest.approx(0.0, abs=1e-12)           # Gamma_bar w does no work
    U, Om = body.twist(w)
    assert body.kinetic_energy(w) == pytest.approx(0.5 * (m * U @ U + Om @ (J * Om)))


@pytest.mark.parametrize('angle', [0.0, 1e-3, 1.9e-2, 2.1e-2, 0.7, 3.0, 5.6])
def test_tangent_inverse_and_exp_equal_se3_dexpinv_and_exp(angle):
    rng = np.random.default_rng(int(angle * 1000))
    n = rng.normal(size=6)
    n[3:] *= angle / np.linalg.norm(n[3:])
    k = rng.normal(size=6)
    np.testing.assert_allclose(ulv.se3_tangent_inverse(n) @ k,
                               P @ itg.SE3().dexpinv_neg(P @ n, P @ k), atol=1e-13)
    np.testing.assert_allclose(ulv.se3_exp(n), se3.exp(P @ n), atol=1e-14)


def flight(U0, Om0, h, t_end, gravity=(0, 0, 0), stages='munthe-kaas'):
    body = ulv.UnifiedBody(1.3, np.diag([0.2, 0.5, 0.4]), gravity=gravity)
    stepper = ulv.UnifiedStepper(body, stages=stages)
    y = np.r_[np.eye(4).ravel(), body.coordinates(np.asarray(U0, float), np.asarray(Om0, float))]
    for k in range(int(round(t_end / h))):
        y = stepper.step(k * h, y, h)
    return y[:16].reshape(4, 4)[:3, 3]


def test_free_flight_and_free_fall_fourth_order():
    """COM on x0 + U0 t (+ g t^2 / 2): 4th order with stage configurations
    (docs/theory/errata.md#hgs18-eq78, #hgs18-eq82)."""
    U0, Om0, g = np.array([1.0, -2.0, 0.5]), np.array([0.3, 2.0, -1.0]), np.array([0, 0, -9.81])
    hs = [1 / 10, 1 / 20]
    free = [np.linalg.norm(flight(U0, Om0, h, 1.0) - U0) for h in hs]
    fall = [np.linalg.norm(flight(U0, Om0, h, 1.0, g) - U0 - 0.5 * g) for h in hs]
    frozen = [np.linalg.norm(flight(U0, Om0, h, 1.0, g, 'paper') - U0 - 0.5 * g) for h in hs]
    assert math.log2(free[0] / free[1]) > 3.7 and math.log2(fall[0] / fall[1]) > 3.7
    assert math.log2(frozen[0] / frozen[1]) < 1.5        # the printed frozen stages: 1st order


def test_flip_agrees_with_body_twist_munthe_kaas():
    """Both formulations give classical RK4's Omega: equal to round-off, amplified by flips."""
    h, n = 1 / 1280, 1280
    ends = {}
    for update in ('se3', 'ulv'):
        ex = rp.build('flip', update)
        stepper, y = ex.stepper(), ex.y0
        for k in range(n):
            y = stepper.step(k * h, y, h)
        ends[update] = (ex.rotation(y), ex.omega(y))
    assert np.abs(ends['se3'][1] - ends['ulv'][1]).max() < 1e-6
    assert np.abs(ends['se3'][0] - ends['ulv'][0]).max() < 1e-8
    np.testing.assert_allclose(ends['ulv'][1], rp.euler_rk4(rp.FLIP_J, rp.FLIP_OMEGA0, 1.0, h),
                               atol=1e-5)


def test_step_guard_and_bad_input():
    body = ulv.UnifiedBody(1.0, np.eye(3))
    y = np.r_[np.eye(4).ravel(), body.coordinates(np.zeros(3), np.array([0, 0, 7.0]))]
    with pytest.raises(itg.StepSizeError, match='2 pi'):
        ulv.UnifiedStepper(body).step(0.0, y, 1.0)
    ulv.UnifiedStepper(body, max_angle=None).step(0.0, y, 0.85)
    with pytest.raises(ValueError, match='stages'):
        ulv.UnifiedStepper(body, stages='frozen')
    with pytest.raises(ValueError, match='mass'):
        ulv.UnifiedBody(0.0, np.eye(3))


def test_half_sides_change_coordinates_not_motion():
    """Another hexahedron (l != 1, D not orthogonal) gives the same motion (eq. (26)-(27))."""
    ends = []
    for sides in ((1.0, 1.0, 1.0), (0.3, 0.5, 0.7)):
        body = ulv.UnifiedBody(1.3, np.diag([0.2, 0.5, 0.4]), half_sides=sides,
                               gravity=(0, 0, -9.81))
        stepper = ulv.UnifiedStepper(body)
        y = np.r_[np.eye(4).ravel(), body.coordinates(np.array([1.0, -2.0, 0.5]),
                                                      np.array([0.3, 2.0, -1.0]))]
        for k in range(20):
            y = stepper.step(0.05 * k, y, 0.05)
        ends.append((y[:16], body.twist(y[16:])))
    np.testing.assert_allclose(ends[0][0], ends[1][0], atol=1e-12)
    np.testing.assert_allclose(np.r_[ends[0][1]], np.r_[ends[1][1]], atol=1e-12)
