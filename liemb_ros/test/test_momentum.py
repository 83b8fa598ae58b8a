"""Newton–Euler in an arbitrary frame ([M18d] (60)-(61)) and the momentum form (79)."""
import numpy as np
import pytest

import liemb_ros as lm
from liemb_ros.core import momentum as P
from conftest import erd_path
from test_dynamics import make_tree


@pytest.mark.parametrize('seed', range(2))
def test_any_frame_gives_the_inverse_dynamics(seed):
    """(60) in the world and every link frame, (63) resolved in a third frame = the RNEA."""
    rng = np.random.default_rng(seed)
    model = make_tree(rng, 6, gravity=(0.5, -0.3, -9.81))
    q, qd, qdd = rng.standard_normal((3, model.nq))
    tau = lm.inverse_dynamics(model, q, qd, qdd, form='body')
    for frame in ['world'] + model.link_names:
        np.testing.assert_allclose(P.inverse_dynamics_in_frame(model, q, qd, qdd, frame), tau,
                                   rtol=0, atol=1e-12 * np.abs(tau).max(), err_msg=frame)
    for frame, k in [('world', 'b3'), ('b2', 'world'), ('b1', 'b4'), ('b4', 'b0')]:
        np.testing.assert_allclose(   # (62)-(64): measured at F_j, resolved in F_k
            P.inverse_dynamics_in_frame(model, q, qd, qdd, frame, resolved_in=k), tau,
            rtol=0, atol=1e-12 * np.abs(tau).max(), err_msg=f'{frame} in {k}')


def test_spatial_momenta_and_their_rate():
    """Π^s by differences along the motion: (J^s)ᵀ (Π̇^s - W^grav) = τ (79), step 1e-4."""
    rng = np.random.default_rng(5)
    model = make_tree(rng, 6)
    q, qd, qdd = rng.standard_normal((3, model.nq))
    h = 1e-4
    Pi = lambda t: P.spatial_momenta(model, q + qd * t + qdd * t * t / 2, qd + qdd * t)  # noqa
    Pid = (Pi(-2 * h) - 8 * Pi(-h) + 8 * Pi(h) - Pi(2 * h)) / (12 * h)
    C = lm.body_poses(model, q)
    tau = np.zeros(model.nq)
    for i, name in enumerate(model.body_names):
        J = lm.jacobian(model, q, name, 'spatial')   # any frame on body i has these columns
        m = model.inertia[i][3, 3]
        c = model.inertia[i][:3, 3:]
        com = np.array([c[2, 1], c[0, 2], c[1, 0]]) / m      # m d^ block -> d (body frame)
        r = C[i][:3, :3] @ com + C[i][:3, 3]
        g = m * model.gravity
        Wg = np.concatenate([np.cross(r, g), g])
        tau += J.T @ (Pid[i] - Wg)
    ref = lm.inverse_dynamics(model, q, qd, qdd)
    np.testing.assert_allclose(tau, ref, rtol=0, atol=1e-8 * np.abs(ref).max())


def test_momentum_eom_against_the_lagrangian_form():
    """ṗ = d/dt (M q̇) = Ṁ q̇ + M q̈ along the forward dynamics; q̇ = M⁻¹ p; Panda, mimic."""
    for model in (make_tree(np.random.default_rng(7), 6),
                  lm.load_urdf(erd_path('panda'), mimic='couple')):
        rng = np.random.default_rng(9)
        q = rng.uniform(-1, 1, model.nq)
        qd, tau = rng.standard_normal((2, model.nq))
        M = lm.mass_matrix(model, q)
        qd_, pd = P.momentum_eom(model, q, M @ qd, tau)
        qdd = lm.forward_dynamics(model, q, qd, tau)
        ref = lm.mass_matrix_derivative(model, q, qd) @ qd + M @ qdd
        np.testing.assert_allclose(qd_, qd, rtol=0, atol=1e-12 * np.abs(qd).max())
        np.testing.assert_allclose(pd, ref, rtol=0, atol=1e-11 * np.abs(ref).max())


def test_bad_input(rng):
    model = make_tree(rng, 3)
    z = np.zeros(3)
    with pytest.raises(ValueError, match='fixed-base'):
        P.spatial_momenta(make_tree(rng, 3, True), z, np.zeros(9))
    with pytest.raises(ValueError, match='qdd must be'):
        P.inverse_dynamics_in_frame(model, z, z, z[:2])
    with pytest.raises(ValueError, match='unknown link|not a link|link'):
        P.inverse_dynamics_in_frame(model, z, z, z, 'nowhere')
