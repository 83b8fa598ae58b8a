"""
Dynamics of a robot far from the world origin (issue 17, item 1).

Nothing in the joint-space dynamics depends on where the robot stands: moving a floating base
(or a fixed base's ``base_pose``) by ``r`` must leave ``M``, ``Ṁ``, ``C`` and ``∂τ/∂q̇``
unchanged, and ``∂τ/∂q`` and the forward dynamics too at the same base rotation (gravity
sees only the rotation).  Kernels that work at the world origin lose ``|r|² eps`` of relative
precision (measured before the fix, solo12: 2e-6 for ``M`` and 2e-4 for the Cholesky forward
dynamics at 100 km); these tests hold every quantity to 1e-12 relative at 1, 10 and 100 km.
The independent references are the same quantities at the world origin, the body-form RNEA
(body frames only: invariant by construction) and Pinocchio (its CRBA works in joint frames).
"""
import numpy as np
import pinocchio as pin
import pytest

import liemb_ros as lm
from liemb_ros.core import dynamics as D
from liemb_ros.core import eom as E
from conftest import erd_path, SWAP

DISTANCES = (1e3, 1e4, 1e5)
DIRECTION = np.array([0.6, -0.48, 0.64])   # unit: every coordinate far away
RTOL = 1e-12


def _rotation(rng):
    Q, _ = np.linalg.qr(rng.standard_normal((3, 3)))
    return Q * np.sign(np.linalg.det(Q))


def _pose(R, r):
    C = np.eye(4)
    C[:3, :3] = R
    C[:3, 3] = r
    return C


def _relerr(a, b):
    return np.abs(a - b).max() / max(np.abs(b).max(), 1e-300)


def _quantities(model, q, qd, qdd, tau, base):
    dq, dqd = E.inverse_dynamics_derivatives(model, q, qd, qdd, base_pose=base)
    return {
        'M': D.mass_matrix(model, q, base_pose=base),
        'Mdot': D.mass_matrix_derivative(model, q, qd, base_pose=base),
        'C': D.coriolis_matrix(model, q, qd, base_pose=base),
        'dtau_dq': dq,
        'dtau_dqd': dqd,
        'fd_cholesky': D.forward_dynamics(model, q, qd, tau, base_pose=base, method='cholesky'),
        'fd_aba': D.forward_dynamics(model, q, qd, tau, base_pose=base),
        'tau': D.inverse_dynamics(model, q, qd, qdd, base_pose=base),
    }


# the quantities that do not see the base pose at all (no gravity in them)
POSE_FREE = ('M', 'Mdot', 'C', 'dtau_dqd')


@pytest.fixture(scope='module', params=[('solo12', True), ('panda', False)],
                ids=['solo12-floating', 'panda-fixed'])
def robot(request):
    name, floating = request.param
    model = lm.load_urdf(erd_path(name), floating_base=floating)
    rng = np.random.default_rng(17)
    q = model.random_configuration(rng)
    qd, qdd, tau = (rng.standard_normal(model.nv) for _ in range(3))
    return model, q, qd, qdd, tau, _rotation(rng)


@pytest.mark.parametrize('dist', DISTANCES)
def test_dynamics_invariant_to_base_position(robot, dist):
    """Every quantity at ``r`` equals the one at the origin (same rotation) to 1e-12."""
    model, q, qd, qdd, tau, R = robot
    ref = _quantities(model, q, qd, qdd, tau, _pose(R, np.zeros(3)))
    far = _quantities(model, q, qd, qdd, tau, _pose(R, dist * DIRECTION))
    for key, value in ref.items():
        assert _relerr(far[key], value) <= RTOL, key


@pytest.mark.parametrize('dist', DISTANCES)
def test_kinetic_quantities_invariant_to_base_pose(robot, dist):
    """``M``, ``Ṁ``, ``C``, ``∂τ/∂q̇`` at a far, rotated base equal those at the identity."""
    model, q, qd, qdd, tau, R = robot
    ref = _quantities(model, q, qd, qdd, tau, None)
    far = _quantities(model, q, qd, qdd, tau, _pose(R, dist * DIRECTION))
    for key in POSE_FREE:
        assert _relerr(far[key], ref[key]) <= RTOL, key


@pytest.mark.parametrize('dist', DISTANCES)
def test_spatial_and_hybrid_forms_equal_body_form_far_away(robot, dist):
    """The spatial and hybrid RNEA give the body form's torques to 1e-12, with link wrenches."""
    model, q, qd, qdd, _, R = robot
    base = _pose(R, dist * DIRECTION)
    f_ext = np.random.default_rng(3).standard_normal((len(model.link_names), 6))
    for fext in (None, f_ext):
        body = D.inverse_dynamics(model, q, qd, qdd, 'body', f_ext=fext, base_pose=base)
        for form in ('spatial', 'hybrid'):
            tau = D.inverse_dynamics(model, q, qd, qdd, form, f_ext=fext, base_pose=base)
            assert _relerr(tau, body) <= RTOL, form


def test_mass_matrix_far_away_against_pinocchio():
    """solo12 at 100 km: our ``M`` against Pinocchio's CRBA (free flyer, linear first)."""
    path = erd_path('solo12')
    model = lm.load_urdf(path, floating_base=True)
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
    data = pm.createData()
    rng = np.random.default_rng(5)
    q = model.random_configuration(rng)
    base = _pose(_rotation(rng), 1e5 * DIRECTION)
    P = np.zeros((model.nv, model.nv))
    Pq = np.zeros((pm.nq, model.nq))
    P[:6, :6] = SWAP
    for k, jn in enumerate(model.joint_names):
        j = pm.joints[pm.getJointId(jn)]
        P[j.idx_v, 6 + k] = 1.0
        Pq[j.idx_q, k] = 1.0
    qp = Pq @ q
    qp[:7] = pin.SE3ToXYZQUAT(pin.SE3(base[:3, :3], base[:3, 3]))
    Mp = pin.crba(pm, data, qp)
    Mp = np.triu(Mp) + np.triu(Mp, 1).T
    M = D.mass_matrix(model, q, base_pose=base)
    assert _relerr(P @ M @ P.T, Mp) <= 1e-12


@pytest.mark.parametrize('dist', DISTANCES)
def test_link_twists_and_jacobian_derivatives_invariant_to_base_position(robot, dist):
    """
    Body, hybrid and mixed twists, Jacobians and ``J̇`` of every link do not see ``r``.

    The spatial ones do (they are taken at the world origin): ``V^s = (ω, ṙ + r × ω)`` from
    the hybrid twist at the link origin ``r``, to 1e-12 of their size.
    """
    model, q, qd, _, _, R = robot
    near, far = _pose(R, np.zeros(3)), _pose(R, dist * DIRECTION)
    for link in model.link_names[1::3]:
        for rep in ('body', 'hybrid', 'mixed'):
            for fn, args in ((lm.link_twist, (qd,)), (lm.jacobian_derivative, (qd,)),
                             (lm.jacobian, ())):
                ref = fn(model, q, *args, link, rep, base_pose=near)
                got = fn(model, q, *args, link, rep, base_pose=far)
                assert _relerr(got, ref) <= RTOL, (link, rep, fn.__name__)
        for rep in ('body', 'hybrid', 'mixed'):   # the recursions of each representation
            assert _relerr(lm.body_twists(model, q, qd, rep, base_pose=far),
                           lm.body_twists(model, q, qd, rep, base_pose=near)) <= RTOL, rep
        r = lm.link_pose(model, q, link, base_pose=far)[:3, 3]
        Vh = lm.link_twist(model, q, qd, link, 'hybrid', base_pose=far)
        Vs = lm.link_twist(model, q, qd, link, 'spatial', base_pose=far)
        expect = np.concatenate([Vh[:3], Vh[3:] + np.cross(r, Vh[:3])])
        assert _relerr(Vs, expect) <= RTOL, link
