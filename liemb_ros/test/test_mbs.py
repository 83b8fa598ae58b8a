"""
Tests of the absolute-coordinate multibody layer (liemb_ros.sim.mbs).

Independent sources: the joint-coordinate forward dynamics (liemb_ros.core.dynamics) and its
RK4 integration, the heavy top of [MT14] §5.3 (initial position and energy corrected:
docs/theory/errata.md#mt14-s5-3), analytic free-body motion, and the subgroup property of
[MT14] Corollary 1.
"""
import os

import numpy as np
import pytest

import liemb_ros as lm
from liemb_ros.sim import integrators as itg
from liemb_ros.core.dynamics import forward_dynamics
from liemb_ros.sim.mbs import Body, System, from_model, joint_state
from conftest import URDF_DIR

ARM = os.path.join(URDF_DIR, 'liemb_arm7.urdf')


def heavy_top(update):
    """[MT14] §5.3: box on a spherical joint at the origin, spring to p0, gravity."""
    s = System(gravity=(0, 0, -9.81))
    b = s.add_body(Body('top', 21.6, np.diag([0.36, 0.306, 0.09]), update=update))
    r0 = np.array([-0.5, 0.0, 0.0])
    s.spherical(b, r0, None, np.zeros(3))
    s.spring(b, np.zeros(3), None, np.array([1.0, 0.0, 0.5]), 1e4)
    C = np.eye(4)
    C[:3, 3] = [0.5, 0, 0]
    w = np.array([0, 0, 0.5])
    return s, s.state([C], [np.concatenate([w, np.cross(r0, w)])])


def max_violation(s, y0, t_end, h):
    worst = [0.0]

    def cb(t, y):
        worst[0] = max(worst[0], np.abs(s.constraint_values(y)).max())
    s.simulate(y0, t_end, h, callback=cb, every=10 ** 9)
    return worst[0]


def test_heavy_top_se3_exact_so3r3_order4():
    s, y0 = heavy_top('se3')
    assert s.energy(y0) == pytest.approx(2500.68625)
    for h in (0.01, 0.003):
        assert max_violation(s, y0, 1.0, h) < 1e-11
    s2, y2 = heavy_top('so3r3')
    hs = [0.02, 0.01, 0.005]
    e = [max_violation(s2, y2, 1.0, h) for h in hs]
    p = np.log2(np.array(e[:-1]) / e[1:])
    assert e[0] > 1e-6 and np.all(np.abs(p - 4) < 0.6), (e, p)


@pytest.mark.parametrize('update', ['se3', 'so3r3'])
def test_from_model_matches_joint_space_dynamics(update):
    model = lm.load_urdf(ARM)
    rng = np.random.default_rng(3)
    q, qd, tau = rng.uniform(-1, 1, 7), rng.uniform(-1, 1, 7), rng.uniform(-3, 3, 7)
    s, y = from_model(model, q, qd, update=update)
    s.set_torques(tau)
    q1, qd1, viol = joint_state(s, y)
    np.testing.assert_allclose(q1, q, atol=1e-12)
    np.testing.assert_allclose(qd1, qd, atol=1e-12)
    assert viol.max() < 1e-12
    f = s.rhs(0.0, y)
    d = 1e-6
    qdd = (joint_state(s, s.space.exp_mul(y, d * f))[1]
           - joint_state(s, s.space.exp_mul(y, -d * f))[1]) / (2 * d)
    np.testing.assert_allclose(qdd, forward_dynamics(model, q, qd, tau), atol=1e-6)
    # a short simulation agrees with RK4 in joint coordinates (small torques: the light
    # wrist spins up to hundreds of rad/s under the random ones above)
    tau = 0.05 * tau
    s.set_torques(tau)
    sp = itg.Vector(14)

    def g(t, x):
        return np.concatenate([x[7:], forward_dynamics(model, x[:7], x[7:], tau)])
    ref = itg.integrate(sp, g, np.concatenate([q, qd]), (0, 0.2), 1e-3).y[-1]
    sol = s.simulate(y, 0.2, 1e-3)
    q2, qd2, viol2 = joint_state(s, sol.y[-1], q_ref=ref[:7])
    np.testing.assert_allclose(q2, ref[:7], atol=1e-8)
    np.testing.assert_allclose(qd2, ref[7:], atol=1e-7)
    assert viol2[:, 0].max() < 1e-8


def test_free_body_offset_frame_se3_keeps_com():
    """[MT14] §5.2 case A: frame at the end face, rotation about the COM."""
    theta = np.diag([1.224, 4.68, 5.76])
    for update, tol in (('se3', 1e-12), ('so3r3', None)):
        s = System()
        s.add_body(Body('box', 86.4, theta, com=(0.4, 0, 0), update=update))
        w = np.array([10 * np.pi, 2 * np.pi, 0])
        v = np.cross(np.array([0.4, 0, 0]), w)
        y = s.state([np.eye(4)], [np.concatenate([w, v])])
        assert s.kinetic_energy(y) == pytest.approx(696.399, abs=5e-4)
        C = s.split(s.simulate(y, 1.0, 1e-2).y[-1])[0][0]
        drift = np.linalg.norm(C[:3, :3] @ [0.4, 0, 0] + C[:3, 3] - [0.4, 0, 0])
        if tol:
            assert drift < tol
        else:
            assert drift > 1e-6


def test_prismatic_cylindrical_universal_and_projection():
    """Joint primitives: rates consistent with h, projection removes violations."""
    s = System(gravity=(0, 0, -9.81))
    a = s.add_body(Body('a', 2.0, np.diag([0.1, 0.2, 0.3]), com=(0.1, 0, 0)))
    b = s.add_body(Body('b', 1.0, np.diag([0.05, 0.05, 0.02]), update='so3r3'))
    c = s.add_body(Body('c', 1.5, np.diag([0.02, 0.03, 0.04])))
    s.revolute(a, (0, 0, 0), (0, 0, 1), None, (0, 0, 0), (0, 0, 1))
    s.prismatic(b, (0, 0, 0), (1, 0, 0), (0, 1, 0), a, (0.3, 0, 0), (1, 0, 0), (0, 1, 0))
    s.universal(c, (0, 0, 0.2), (0, 1, 0), b, (0, 0, 0), (1, 0, 0))
    s.spring(b, (0, 0, 0), a, (0.5, 0, 0), 100.0, rest_length=0.1, damping=1.0)
    Ca, Cb, Cc = np.eye(4), np.eye(4), np.eye(4)
    Cb[:3, 3] = [0.3, 0, 0]
    Cc[:3, 3] = [0.3, 0, -0.2]
    y = s.project_velocities(s.state([Ca, Cb, Cc], np.random.default_rng(1).normal(size=18)))
    J = s.constraint_jacobian(y)
    assert J.shape == (5 + 5 + 4, 18) and np.abs(J @ s.split(y)[1].ravel()).max() < 1e-12
    # h' = J V against a finite difference of h along the state's velocity
    d = 1e-6
    f = s.rhs(0.0, y)
    dh = (s.constraint_values(s.space.exp_mul(y, d * f))
          - s.constraint_values(s.space.exp_mul(y, -d * f))) / (2 * d)
    assert np.abs(dh).max() < 1e-8
    y1 = s.simulate(y, 0.5, 0.05).y[-1]
    assert np.abs(s.constraint_values(y1)).max() > 1e-9
    y2 = s.project(y1)
    assert np.abs(s.constraint_values(y2)).max() < 1e-12
    names = [n for n, _, _ in s.joint_violations(y2)]
    assert len(names) == 3


def test_bad_input():
    with pytest.raises(ValueError, match='mass'):
        Body('x', 0.0, np.eye(3))
    with pytest.raises(ValueError, match='update'):
        Body('x', 1.0, np.eye(3), update='so3')
    # a massless leaf (massless revolute chains are merged: test_mbs_from_model.py)
    leaf = ('<robot name="leaf"><link name="world"/><link name="tip"/><joint name="j" '
            'type="continuous"><parent link="world"/><child link="tip"/></joint></robot>')
    with pytest.warns(lm.URDFWarning), pytest.raises(ValueError, match="'tip' has no mass"):
        from_model(lm.load_urdf(leaf), np.zeros(1), np.zeros(1))


def test_tailored_updates_and_velocity_conversion():
    """Grounded bodies on SE(3), the others on SO(3)xR^3; r' = R v converts the velocities."""
    s = System()
    b1 = s.add_body(Body('a', 1.0, np.eye(3)))
    b2 = s.add_body(Body('b', 1.0, np.eye(3)))
    s.spherical(b1, [-0.1, 0, 0], None, np.zeros(3))
    s.spherical(b1, [0.1, 0, 0], b2, [-0.1, 0, 0])
    assert s.grounded_bodies() == [0] and s.tailored_updates() == ['se3', 'so3r3']
    R = np.array([[0.0, -1, 0], [1, 0, 0], [0, 0, 1]])
    C = np.eye(4)
    C[:3, :3] = R
    y = s.state([C, C], [[1, 2, 3, 4, 5, 6], [0, 0, 1, 1, 0, 0]])
    y2 = s.set_updates(s.tailored_updates(), y)
    np.testing.assert_allclose(s.split(y2)[1][1, 3:], R @ [1, 0, 0])
    np.testing.assert_array_equal(s.split(y2)[1][0], [1, 2, 3, 4, 5, 6])
    assert s.space.factors[1].kind != s.space.factors[0].kind
    np.testing.assert_allclose(s.set_updates(['se3', 'se3'], y2), y, atol=1e-15)
    with pytest.raises(ValueError, match='update'):
        s.set_updates(['se3', 'nope'], y)
