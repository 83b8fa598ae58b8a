"""
[HGS18]'s own assembly of the equations of motion (eqs. (26)-(27), (40)-(42), (48)-(49)).

The interpolation matrix N and the basis rates E_dot against the rigid-body velocity field
U + Omega x y; the Gibbs-Appell integrals against Gauss-Legendre quadrature over a solid box
(exact: the integrands are quadratic in y) and against the Newton-Euler route (eq. (56));
a run with either assembly gives the same motion to round-off.
"""
import numpy as np
import pytest

from liemb_ros.core.lie import so3
from liemb_ros.sim.mbs.ulv import (UnifiedBody, UnifiedStepper, basis_rates, gibbs_appell,
                                   interpolation_matrix, projection_matrix)

SIDES = [(1.0, 1.0, 1.0), (0.7, 1.3, 0.4)]


@pytest.mark.parametrize('half_sides', SIDES)
def test_interpolation_matrix_and_basis_rates_are_the_velocity_field(half_sides):
    rng = np.random.default_rng(3)
    D = projection_matrix(half_sides)
    for _ in range(5):
        U, Om, y = rng.normal(size=(3, 3))
        w = D @ np.concatenate([U, Om])
        np.testing.assert_allclose(interpolation_matrix(y, half_sides) @ w,
                                   U + np.cross(Om, y), atol=1e-13)
        np.testing.assert_allclose(basis_rates(w, half_sides), so3.hat(Om), atol=1e-13)


def _box_quadrature(a, b, c, rho, integrand):
    """Gauss-Legendre (2 points per axis) of a quadratic integrand over a centred box."""
    x, wts = np.polynomial.legendre.leggauss(2)
    total = 0.0
    for i, wi in zip(x, wts):
        for j, wj in zip(x, wts):
            for k, wk in zip(x, wts):
                y = np.array([i * a / 2, j * b / 2, k * c / 2])
                total = total + wi * wj * wk * integrand(y)
    return rho * total * (a * b * c / 8)


@pytest.mark.parametrize('half_sides', SIDES)
def test_gibbs_appell_integrals_by_quadrature_and_newton_euler(half_sides):
    a, b, c, rho = 0.8, 0.4, 0.1, 2700.0
    m = rho * a * b * c
    J = m / 12 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
    S = 0.5 * np.trace(J) * np.eye(3) - J
    rng = np.random.default_rng(5)
    w = rng.normal(size=6)
    M, G = gibbs_appell(m, np.zeros(3), S, w, half_sides)
    E = basis_rates(w, half_sides)
    Mq = _box_quadrature(a, b, c, rho, lambda y: interpolation_matrix(y, half_sides).T
                         @ interpolation_matrix(y, half_sides))
    Gq = _box_quadrature(a, b, c, rho, lambda y: interpolation_matrix(y, half_sides).T
                         @ E @ interpolation_matrix(y, half_sides))
    np.testing.assert_allclose(M, Mq, atol=1e-12 * np.abs(Mq).max())
    np.testing.assert_allclose(G, Gq, atol=1e-12 * np.abs(Gq).max())
    ne = UnifiedBody(m, J, half_sides)
    np.testing.assert_allclose(M, ne.M_bar, atol=1e-13 * np.abs(M).max())
    np.testing.assert_allclose(G @ w, ne.quadratic(w), atol=1e-12 * np.abs(G @ w).max())
    # an off-COM frame: the first moment enters, M_bar is still the rigid body's
    r = np.array([0.1, -0.05, 0.02])
    M_off = gibbs_appell(m, m * r, S + m * np.outer(r, r), w, half_sides)[0]
    Mq_off = _box_quadrature(a, b, c, rho, lambda y: interpolation_matrix(y + r, half_sides).T
                             @ interpolation_matrix(y + r, half_sides))
    np.testing.assert_allclose(M_off, Mq_off, atol=1e-12 * np.abs(Mq_off).max())


def test_both_assemblies_give_the_same_motion_under_loads():
    J = np.diag([5.2988, 1.1775, 4.3568])

    def spring(t, H, w):
        F = H[:3, :3].T @ (-50.0 * (H[:3, 3] + H[:3, :3] @ [0.5, 0.2, 0.1] - [0, 0, 1.0]))
        return F, np.cross([0.5, 0.2, 0.1], F)
    ys = []
    for assembly in ('newton-euler', 'gibbs-appell'):
        body = UnifiedBody(1.0, J, gravity=(0, 0, -9.81), wrench=spring, assembly=assembly)
        y = np.concatenate([np.eye(4).reshape(-1), body.coordinates([1.0, -2, 0.5], [1, 5, -2])])
        stepper = UnifiedStepper(body)
        for k in range(200):
            y = stepper.step(k / 400, y, 1 / 400)
        ys.append(y)
    np.testing.assert_allclose(ys[1], ys[0], atol=1e-12 * np.abs(ys[0]).max())
    with pytest.raises(ValueError, match='assembly'):
        UnifiedBody(1.0, J, assembly='lagrange')
