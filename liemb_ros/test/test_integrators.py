"""
Tests of the RKMK integrators (liemb_ros.sim.integrators) against problems with known solutions.

Known solutions: the torque-free axisymmetric top (closed-form R(t), omega(t)), its centre of
mass moving on a straight line, a prescribed non-commuting body twist with
C(t) = exp(X1 t) exp(X2 t^2), and classical Runge-Kutta on vector spaces.
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from liemb_ros.sim import integrators as itg
from liemb_ros.core.lie import se3, so3

I1, I3 = 2.0, 3.5
J = np.diag([I1, I1, I3])
W0 = np.array([1.2, -0.7, 3.0])
V0 = np.array([0.4, -1.0, 0.3])     # COM velocity (world = body at t = 0)
FIXED = [itg.EULER, itg.HEUN, itg.MIDPOINT, itg.RK3, itg.RK4, itg.RK38]


def top_exact(t):
    """Torque-free axisymmetric top, R(0) = I: R = exp(t J w0 / I1) exp(-Omega t e3)."""
    om = (I3 - I1) / I1 * W0[2]
    R = so3.exp(J @ W0 / I1 * t) @ so3.exp(np.array([0.0, 0.0, -om * t]))
    w = so3.exp(np.array([0.0, 0.0, om * t])) @ (J @ W0 / I1) - np.array([0, 0, om])
    return R, w, V0 * t


def euler_rhs(w):
    return np.linalg.solve(J, -np.cross(w, J @ w))


def top_problem(kind):
    """State space and f for the free top: SE(3) x R^6 (body twist) or SO(3)xR^3 x R^6."""
    space = itg.Product(itg.SE3() if kind == 'se3' else itg.SO3R3(), itg.Vector(6))

    def f(t, y):
        C, V = space.split(y)
        w, v = V[:3], V[3:]
        vdot = -np.cross(w, v) if kind == 'se3' else np.zeros(3)
        return np.concatenate([V, euler_rhs(w), vdot])
    y0 = space.join(np.eye(4), np.concatenate([W0, V0]))
    return space, f, y0


def top_error(space, kind, y, t):
    C, V = space.split(y)
    R, w, r = top_exact(t)
    v = R.T @ V0 if kind == 'se3' else V0
    return max(np.abs(C[:3, :3] - R).max(), np.abs(C[:3, 3] - r).max(),
               np.abs(V[:3] - w).max(), np.abs(V[3:] - v).max())


def observed_orders(errors, hs):
    e = np.asarray(errors)
    return np.log(e[:-1] / e[1:]) / np.log(np.asarray(hs[:-1]) / np.asarray(hs[1:]))


@pytest.mark.parametrize('kind', ['se3', 'so3r3'])
@pytest.mark.parametrize('tableau', FIXED, ids=lambda t: t.name)
def test_order_free_top(tableau, kind):
    space, f, y0 = top_problem(kind)
    hs = [0.04, 0.02, 0.01]
    errs = [top_error(space, kind, itg.integrate(space, f, y0, (0, 1.0), h, tableau).y[-1], 1.0)
            for h in hs]
    p = observed_orders(errs, hs)
    assert np.all(np.abs(p - tableau.order) < 0.35), (errs, p)


@pytest.mark.parametrize('tableau', FIXED, ids=lambda t: t.name)
def test_order_prescribed_noncommuting_twist(tableau):
    """C(t) = exp(X1 t) exp(X2 t^2) has body twist Ad_{exp(-X2 t^2)} X1 + 2 t X2."""
    X1 = np.array([0.3, -1.1, 0.8, 0.5, 0.2, -0.4])
    X2 = np.array([-0.6, 0.4, 0.9, -0.3, 1.0, 0.1])
    space = itg.SE3()

    def f(t, y):
        return se3.Ad(se3.exp(-X2 * t * t)) @ X1 + 2.0 * t * X2
    exact = se3.exp(X1) @ se3.exp(X2)
    hs = [0.1, 0.05, 0.025]
    errs = [np.abs(itg.integrate(space, f, np.eye(4).ravel(), (0, 1.0), h, tableau)
                   .y[-1].reshape(4, 4) - exact).max() for h in hs]
    p = observed_orders(errs, hs)
    assert np.all(np.abs(p - tableau.order) < 0.35), (errs, p)


def test_vector_space_is_classical_rk4():
    """On R^k the RKMK step is the textbook RK4 step."""
    def g(t, y):
        return np.array([-y[0] + math.sin(t), y[0] * y[1]])
    y, t, h = np.array([1.0, 0.5]), 0.3, 0.2
    k1 = g(t, y)
    k2 = g(t + h / 2, y + h / 2 * k1)
    k3 = g(t + h / 2, y + h / 2 * k2)
    k4 = g(t + h, y + h * k3)
    ref = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    np.testing.assert_allclose(itg.step(itg.Vector(2), g, t, y, h), ref, rtol=0, atol=1e-15)


def test_group_membership_large_steps():
    """1000 coarse steps: R stays orthonormal, the bottom row exact (no re-orthonormalisation)."""
    space, f, y0 = top_problem('se3')
    sol = itg.integrate(space, f, y0, (0, 50.0), 0.05, itg.RK4, save_every=10)
    C = np.array([space.split(y)[0] for y in sol.y])
    R = C[:, :3, :3]
    assert np.abs(R @ R.transpose(0, 2, 1) - np.eye(3)).max() < 1e-13
    assert np.abs(np.linalg.det(R) - 1).max() < 1e-13
    assert np.all(C[:, 3] == [0.0, 0.0, 0.0, 1.0])


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-2, 2), min_size=3, max_size=3),
       st.lists(st.floats(-1, 1), min_size=6, max_size=6), st.floats(0.05, 0.6))
def test_subgroup_rotation_about_point_exact(point, rates, h):
    """
    [MT14] Corollary 1: twists (w, p x w) keep the point p fixed under SE(3).

    The angular velocity varies with time and state, so the increments contain brackets;
    the SE(3) update keeps ``C^-1 p`` at its initial body coordinates to round-off for any
    step size (up to rotations below pi per step, the integrator's guard).
    """
    p = np.array(point)
    a = np.array(rates[:3])
    b = np.array(rates[3:])
    space = itg.SE3()

    def f(t, y):
        C = y.reshape(4, 4)
        w = a + math.sin(3 * t) * b + 0.3 * C[:3, :3].T @ b
        return np.concatenate([w, np.cross(C[:3, :3].T @ p - C[:3, :3].T @ C[:3, 3], w)])
    # body coordinates of p: C^-1 p; v = (C^-1 p) x w keeps it fixed (v = -w x p_body)
    y = np.eye(4).ravel()
    sol = itg.integrate(space, f, y, (0, 4 * h), h, itg.RK4)
    for yk in sol.y:
        C = yk.reshape(4, 4)
        assert np.linalg.norm(C[:3, :3] @ p + C[:3, 3] - p) < 1e-12 * (1 + np.linalg.norm(p))


def test_so3r3_moves_the_pivot():
    """The same motion on SO(3)xR^3 (mixed velocity r' = R w x p_b) leaves the subgroup."""
    p = np.array([0.5, 0.0, 0.0])
    w = np.array([0.0, 0.0, 1.0])
    space = itg.SO3R3()

    def f(t, y):
        C = y.reshape(4, 4)
        return np.concatenate([w, C[:3, :3] @ np.cross(w, -p)])
    C = itg.integrate(space, f, np.eye(4).ravel(), (0, 0.1), 0.1, itg.MIDPOINT).y[-1]
    drift = np.linalg.norm(C.reshape(4, 4)[:3, :3] @ p + C.reshape(4, 4)[:3, 3] - p)
    # the SO(3)xR^3 midpoint update errs by r w h - 2 r sin(w h / 2) per step ([MT14] §4,
    # Fig. 1; the derivation is in docs/theory/integrators.md)
    assert drift == pytest.approx(0.5 * 0.1 - 2 * 0.5 * math.sin(0.05), rel=1e-9)


@pytest.mark.parametrize('tableau', [itg.BOGACKI_SHAMPINE, itg.DORMAND_PRINCE],
                         ids=lambda t: t.name)
def test_adaptive_error_control(tableau):
    space, f, y0 = top_problem('se3')
    errs, steps = [], []
    for tol in (1e-5, 1e-8):
        sol = itg.integrate_adaptive(space, f, y0, (0, 2.0), tableau, rtol=tol, atol=tol)
        assert sol.t[-1] == 2.0
        errs.append(top_error(space, 'se3', sol.y[-1], 2.0))
        steps.append(sol.n_steps)
        assert errs[-1] < 100 * tol
    assert errs[1] < errs[0] / 30 and steps[1] > steps[0]


def test_adaptive_rejects_too_large_first_step():
    space, f, y0 = top_problem('so3r3')
    sol = itg.integrate_adaptive(space, f, y0, (0, 1.0), itg.DORMAND_PRINCE, rtol=1e-8,
                                 atol=1e-8, h0=1.5)
    assert sol.n_rejected >= 1
    assert top_error(space, 'so3r3', sol.y[-1], 1.0) < 1e-6


def test_step_size_guard_and_errors():
    space, f, y0 = top_problem('se3')
    with pytest.raises(itg.StepSizeError, match='pi'):
        itg.step(space, f, 0.0, y0, 2.0)
    # the guard sits below the pole of dexp^-1 at 2 pi, not at pi as [MT14] App. A.4 says
    # (docs/theory/errata.md#mt14-a4-singularity)
    assert math.pi < itg.MAX_STEP_ANGLE < 2 * math.pi
    h = 3.5 / np.linalg.norm(W0)                    # the step rotates by ~5 rad
    stepper = itg.Stepper(space, f, itg.RK4)
    assert np.isfinite(stepper.step(0.0, y0, h)).all() and stepper.last_angle > math.pi
    free = itg.Stepper(space, f, itg.RK4, max_angle=None)
    free.step(0.0, y0, 2.0)
    assert free.last_angle > itg.MAX_STEP_ANGLE
    with pytest.raises(ValueError, match='embedded'):
        itg.integrate_adaptive(space, f, y0, (0, 1), itg.RK4)
    with pytest.raises(ValueError, match='shape'):
        itg.integrate(space, f, y0[:-1], (0, 1), 0.1)
    with pytest.raises(ValueError, match='lower triangular'):
        itg.Tableau('bad', [[0, 1], [0, 0]], [0.5, 0.5], [1, 0], 1)

    def bad(t, y):
        return np.full(space.dim, np.nan)
    with pytest.raises(itg.IntegrationError):
        itg.step(space, bad, 0.0, y0, 0.1)


def test_product_split_join_and_flattening():
    inner = itg.Product(itg.SE3(), itg.Vector(2))
    space = itg.Product(inner, itg.SO3(), itg.Vector(3))
    assert space.size == 16 + 2 + 9 + 3 and space.dim == 6 + 2 + 3 + 3
    C = se3.exp(np.array([0.1, 0.2, 0.3, 1, 2, 3]))
    R = so3.exp(np.array([0.3, -0.1, 0.2]))
    y = space.join(C, [1, 2], R, [4, 5, 6])
    parts = space.split(y)
    np.testing.assert_array_equal(parts[0], C)
    np.testing.assert_array_equal(parts[2], R)
    np.testing.assert_array_equal(parts[3], [4, 5, 6])
    np.testing.assert_array_equal(space.identity()[:16], np.eye(4).ravel())
    with pytest.raises(ValueError, match='factors'):
        space.join(C, R)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(-1.5, 1.5), min_size=12, max_size=12))
def test_dexpinv_neg_matches_lie_layer(x):
    """dexp^-1_{-psi} k of the kernel equals the Lie layer's matrices on every factor."""
    from liemb_ros.core.lie import so3r3
    psi, k = np.array(x[:6]), np.array(x[6:])
    np.testing.assert_allclose(itg.SE3().dexpinv_neg(psi, k), se3.dexpinv(-psi) @ k,
                               atol=1e-12)
    np.testing.assert_allclose(itg.SO3R3().dexpinv_neg(psi, k), so3r3.dexpinv(-psi) @ k,
                               atol=1e-12)
    np.testing.assert_allclose(itg.SO3().dexpinv_neg(psi[:3], k[:3]),
                               so3.dexpinv(-psi[:3]) @ k[:3], atol=1e-12)
    C = se3.exp(np.array(x[6:]))
    np.testing.assert_allclose(itg.SE3().exp_mul(C.ravel(), psi).reshape(4, 4),
                               C @ se3.exp(psi), atol=1e-12)
    np.testing.assert_allclose(itg.SO3R3().exp_mul(C.ravel(), psi).reshape(4, 4),
                               so3r3.compose(C, so3r3.exp(psi)), atol=1e-12)
