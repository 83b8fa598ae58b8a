"""
URDF models in absolute coordinates (liemb_ros.sim.mbs.from_model / joint_state).

Massless revolute chains (URDF spherical/universal joints) are merged into one constraint;
floating bases.  Independent sources: the joint-coordinate forward dynamics
(liemb_ros.core.dynamics), the Simulator in joint coordinates, the energy balance (power of the
applied torques), conservation of momentum, [MT14] Corollary 1 (SE(3) keeps a ground
joint exactly).
"""
import numpy as np
import pytest

import liemb_ros as lm
from liemb_ros.core.lie import so3
from liemb_ros.core import resources
from liemb_ros.core.dynamics import forward_dynamics
from liemb_ros.sim.mbs import from_model, joint_state
from liemb_ros.sim.simulator import Simulator

INERTIAL = ('<inertial><origin xyz="{c} 0 0"/><mass value="{m}"/><inertia ixx="0.01" ixy="0" '
            'ixz="0" iyy="0.02" iyz="0" izz="0.025"/></inertial>')

# the ideal rigid-body robot: no friction, joint limits or effort limits (the Simulator's
# defaults model them), so that exact properties (momentum, constraints) can be checked
IDEAL = dict(friction=0.0, limits=False, effort_limits=False)


def urdf(links, joints):
    """
    Return URDF text for a tree under ``world``.

    ``links``: [(name, mass or None: massless)], ``joints``: [(name, parent, child, xyz, rpy,
    axis, type)].
    """
    out = ['<robot name="t"><link name="world"/>']
    for name, m in links:
        out.append(f'<link name="{name}">'
                   + (INERTIAL.format(c=0.1, m=m) if m else '') + '</link>')
    for name, parent, child, xyz, rpy, axis, typ in joints:
        lim = '<limit lower="-3" upper="3" effort="10" velocity="10"/>'
        out.append(f'<joint name="{name}" type="{typ}"><parent link="{parent}"/>'
                   f'<child link="{child}"/><origin xyz="{xyz}" rpy="{rpy}"/>'
                   f'<axis xyz="{axis}"/>{lim}</joint>')
    return '\n'.join(out) + '</robot>'


def general_chains():
    """Revolute, then a spherical chain with rotated, non-orthogonal axes, then a universal."""
    links = [('arm', 1.2), ('s1', None), ('s2', None), ('link2', 0.8), ('u1', None),
             ('link3', 0.5)]
    R = 'revolute'
    joints = [('j0', 'world', 'arm', '0 0 0.1', '0 0 0', '0 0 1', R),
              ('sa', 'arm', 's1', '0.3 0 0', '0.2 -0.1 0.3', '1 0 0', R),
              ('sb', 's1', 's2', '0 0 0', '0.1 0.4 0', '0 0.6 0.8', R),
              ('sc', 's2', 'link2', '0 0 0', '0 0 0', '0.6 0 0.8', 'continuous'),
              ('ua', 'link2', 'u1', '0.25 0 0', '0 0 0', '0 0 1', R),
              ('ub', 'u1', 'link3', '0 0 0', '0 0 0.3', '0.6 0.8 0', R)]
    return lm.load_urdf(urdf(links, joints))


def check_accelerations(model, q, qd, tau, update, base_pose=None):
    """Absolute-coordinate rhs vs the ABA: q, q', q'' (central difference) and the power."""
    s, y = from_model(model, q, qd, base_pose=base_pose, update=update)
    s.set_torques(tau)
    st = joint_state(s, y)
    np.testing.assert_allclose(st[0], q, atol=1e-12)
    np.testing.assert_allclose(st[1], qd, atol=1e-11)
    assert st[2].shape == (model.nq, 2) and st[2].max() < 1e-12
    f = s.rhs(0.0, y)
    d = 1e-6
    yp, ym = s.space.exp_mul(y, d * f), s.space.exp_mul(y, -d * f)
    qdd = (joint_state(s, yp, q_ref=q)[1] - joint_state(s, ym, q_ref=q)[1]) / (2 * d)
    tau_v = np.concatenate([np.zeros(model.nv - model.nq), tau])  # no wrench on the base
    ref = forward_dynamics(model, q, qd, tau_v, base_pose=base_pose)
    np.testing.assert_allclose(qdd, ref, atol=1e-7 * (1 + np.abs(ref).max()))
    # constraints do no work: dE/dt is the power of the joint torques, tau . q'
    power = (s.energy(yp) - s.energy(ym)) / (2 * d)
    assert power == pytest.approx(tau @ qd[model.nv - model.nq:], abs=1e-6)
    return s


@pytest.mark.parametrize('robot', ['heavy_top', 'spherical_double_pendulum'])
@pytest.mark.parametrize('update', ['se3', 'so3r3', 'tailored'])
def test_paper_robots_convert_and_match_joint_dynamics(robot, update):
    model = lm.load_urdf(resources.robot_path(robot))
    rng = np.random.default_rng(7)
    q, qd = rng.uniform(-0.8, 0.8, model.nq), rng.uniform(-2, 2, model.nq)
    tau = rng.uniform(-3, 3, model.nq)
    s = check_accelerations(model, q, qd, tau, update)
    # one spherical constraint per URDF spherical joint, one body per massive link
    assert [k for _, k, _ in s.joints] == ['spherical'] * (model.nq // 3)
    assert len(s.bodies) == model.nq // 3
    if update == 'tailored':
        assert [b.update for b in s.bodies] == ['se3'] + ['so3r3'] * (len(s.bodies) - 1)


@pytest.mark.parametrize('update', ['se3', 'so3r3'])
def test_general_spherical_and_universal_chains(update):
    """Rotated joint frames, non-orthogonal axes, chains between two massive bodies."""
    model = general_chains()
    assert model.nq == 6
    rng = np.random.default_rng(3)
    for _ in range(3):
        q, qd = rng.uniform(-1, 1, 6), rng.uniform(-2, 2, 6)
        s = check_accelerations(model, q, qd, rng.uniform(-1, 1, 6), update)
    assert [k for _, k, _ in s.joints] == ['revolute', 'spherical', 'universal']
    assert [n for n, _, _ in s.joints][1:] == ['sa+sb+sc', 'ua+ub']


def test_angles_recovered_on_the_branch_nearest_q_ref():
    """Both solutions of the decomposition and 2 pi multiples; default: the built branch."""
    model = lm.load_urdf(resources.robot_path('heavy_top'))
    q = np.array([0.4, -0.3, 2.0])
    s, y = from_model(model, q, np.zeros(3))
    np.testing.assert_allclose(joint_state(s, y)[0], q, atol=1e-13)
    other = np.array([0.4 - np.pi, np.pi + 0.3, 2.0 - np.pi])      # XYZ's second branch
    np.testing.assert_allclose(joint_state(s, y, q_ref=other)[0], other, atol=1e-13)
    wound = q + 2 * np.pi * np.array([1, -1, 2])
    np.testing.assert_allclose(joint_state(s, y, q_ref=wound + 0.1)[0], wound, atol=1e-12)
    # the other branch's pose is the same: the merged joint only sees the rotation
    Cs = lm.forward_kinematics(model, other)
    np.testing.assert_allclose(Cs[-1], lm.forward_kinematics(model, q)[-1], atol=1e-14)
    # built on the other branch (|q2| > pi/2), no q_ref: that branch, angles in (-pi, pi]
    s2, y2 = from_model(model, other, np.zeros(3))
    np.testing.assert_allclose(joint_state(s2, y2)[0], [0.4 - np.pi, 0.3 - np.pi, 2 - np.pi],
                               atol=1e-13)


def test_gimbal_lock_keeps_first_angle_and_gives_least_squares_rates():
    model = lm.load_urdf(resources.robot_path('heavy_top'))
    q = np.array([0.3, np.pi / 2, -0.2])
    s, y = from_model(model, q, np.array([0.5, 0.0, 0.5]))
    qr, qdr, viol = joint_state(s, y, q_ref=np.array([0.1, 1.5, 0.0]))
    # only q1 + q3 is determined at the lock: q1 stays at q_ref, the pose is reproduced
    assert qr[0] == pytest.approx(0.1) and qr[1] == pytest.approx(np.pi / 2)
    np.testing.assert_allclose(lm.forward_kinematics(model, qr)[-1],
                               lm.forward_kinematics(model, q)[-1], atol=1e-12)
    np.testing.assert_allclose(qdr, [0.5, 0.0, 0.5], atol=1e-12)    # the minimum-norm split
    assert np.all(np.isfinite(viol))


def agreement(model, q0, qd0, tau, update, t_end, steps, **kw):
    """
    Joint vs absolute Simulator runs: largest pose/rate gap at the end, per step size.

    Also returns the last pair of simulators and the joint-coordinate trajectory.
    """
    gaps = []
    for dt in steps:
        # armature 0: the same, unregularised dynamics in both (heavy_top's massless
        # intermediate bodies would get a rotor inertia in joint coordinates otherwise)
        sims = [Simulator(model, dt=dt, q0=q0, qd0=qd0, damping=0.0, coordinates=c,
                          update=update, armature=0.0, **IDEAL, **kw)
                for c in ('joint', 'absolute')]
        runs = [sim.run(t_end, tau) for sim in sims]
        Cj = lm.forward_kinematics(model, sims[0].q, base_pose=sims[0].base_pose)
        Ca = lm.forward_kinematics(model, sims[1].q, base_pose=sims[1].base_pose)
        gaps.append(max(np.abs(Ca - Cj).max(), np.abs(sims[1].qd - sims[0].qd).max()))
    return gaps, sims, runs[0][1]


@pytest.mark.parametrize('robot, q0, qd0, steps, tol', [
    ('heavy_top', [0.3, -0.2, 0.1], [1.0, -0.5, 2.0], (4e-3, 2e-3), 1e-8),
    ('spherical_double_pendulum', [0.2, 0.1, -0.3, 0.4, -0.2, 0.1], [0.5, 0, -0.5, 0.3, 0.5, -1],
     (2e-3, 1e-3), 1e-6)])
@pytest.mark.parametrize('update', ['tailored', 'so3r3'])
def test_joint_and_absolute_simulations_agree_to_order_four(robot, q0, qd0, steps, tol, update):
    """
    The same URDF robot in joint and in absolute coordinates, torques on every joint.

    Both runs are 4th-order discretisations of one motion: the gap falls like h^4.  The
    middle angles stay away from the gimbal lock at +-pi/2 (checked along the run).
    """
    model = lm.load_urdf(resources.robot_path(robot))
    tau = lambda t: 0.2 * np.cos(2 * t) * np.ones(model.nq)  # noqa: E731
    gaps, sims, qs = agreement(model, np.array(q0), np.array(qd0, dtype=float), tau, update,
                               0.2, steps)
    assert np.abs(qs[:, 1::3]).max() < 1.3
    assert gaps[1] < tol and gaps[1] < gaps[0] / 12, gaps
    d = sims[1].diagnostics()
    assert d['constraint_violation'].shape == (model.nq,)
    assert d['constraint_names'] == model.joint_names
    assert abs(d['energy_balance_error']) < 1e-4


def test_ground_spherical_joints_exact_on_se3():
    """
    [MT14] Corollary 1: a spherical joint to the ground stays at round-off on SE(3).

    (The URDF link frames sit at the joint centres, so the joint point is the frame origin:
    on SO(3)xR3 that constraint is linear in the state and RK keeps it too.  The second
    joint of the double pendulum, away from the frame of link 1, drifts at O(h^4).)
    """
    top = lm.load_urdf(resources.robot_path('heavy_top'))
    sim = Simulator(top, dt=1e-2, q0=np.array([0.3, -0.2, 0.1]),
                    qd0=np.array([2.0, -5.0, 20.0]), coordinates='absolute', damping=0.0,
                    **IDEAL)
    sim.step(n=100)
    viol = sim.diagnostics()['constraint_violation']
    assert viol.max() < 1e-13 and np.ptp(viol) == 0.0     # one merged joint, 3 rows
    pend = lm.load_urdf(resources.robot_path('spherical_double_pendulum'))
    sim = Simulator(pend, dt=1e-2, q0=np.array([0.2, 0.1, -0.3, 0.4, -0.2, 0.1]),
                    coordinates='absolute', update='tailored', damping=0.0, **IDEAL)
    sim.step(n=30)
    viol = sim.diagnostics()['constraint_violation']
    assert viol[:3].max() < 1e-13 and viol[3:].min() > 1e-11, viol


def test_floating_arm_absolute_and_joint_agree_momentum_conserved():
    """Floating liemb_arm7 without gravity, internal torques: momentum is conserved."""
    model = lm.load_urdf(resources.robot_path('liemb_arm7'), floating_base=True,
                         gravity=(0.0, 0.0, 0.0))
    assert model.floating and model.nv == model.nq + 6
    rng = np.random.default_rng(5)
    q0 = np.array([0, 0.4, 0, -1.2, 0, 1.0, 0])
    qd0 = np.concatenate([[0.3, -0.2, 0.5, 0.1, 0.0, -0.2], rng.uniform(-0.5, 0.5, 7)])
    base = np.eye(4)
    base[:3, :3] = so3.exp(np.array([0.1, -0.2, 0.3]))
    base[:3, 3] = [0.1, 0.2, 0.3]
    check_accelerations(model, q0, qd0, rng.uniform(-1, 1, 7), 'so3r3', base_pose=base)
    check_accelerations(model, q0, qd0, rng.uniform(-1, 1, 7), 'se3', base_pose=base)
    # small torques: the light wrist spins up to ~100 rad/s under 0.5 N m
    tau = lambda t: 0.05 * np.sin(3 * t) * np.ones(7)  # noqa: E731
    gaps, sims, _ = agreement(model, q0, qd0, tau, 'tailored', 0.3, (4e-3, 2e-3),
                              base_pose=base)
    assert gaps[1] < 1e-8 and gaps[1] < gaps[0] / 12, gaps
    np.testing.assert_allclose(sims[1].base_pose, sims[0].base_pose, atol=1e-8)
    h0 = sims[0].diagnostics()['momentum']
    for sim in sims:
        sim.reset()
        start = sim.diagnostics()['momentum']
        np.testing.assert_allclose(start, h0, atol=1e-12)
        sim.step(tau, n=150)
        np.testing.assert_allclose(sim.diagnostics()['momentum'], start, atol=1e-9)
    assert np.abs(h0).max() > 0.1


@pytest.mark.filterwarnings('ignore:.*carry no mass')
@pytest.mark.parametrize('joints, links, words', [
    ([('a', 'world', 'l1', '0 0 0', '0 0 0', '1 0 0', 'revolute'),
      ('b', 'l1', 'tip', '0.2 0 0', '0 0 0', '0 1 0', 'revolute')],
     [('l1', 1.0), ('tip', None)], "'tip' has no mass and no child"),
    ([('a', 'world', 'm1', '0 0 0', '0 0 0', '1 0 0', 'revolute'),
      ('b', 'm1', 'l2', '0 0 0.1', '0 0 0', '0 1 0', 'revolute')],
     [('m1', None), ('l2', 1.0)], "'m1'.*do not meet"),
    ([('a', 'world', 'm1', '0 0 0', '0 0 0', '1 0 0', 'revolute'),
      ('b', 'm1', 'l2', '0 0 0', '0 0 0', '-1 0 0', 'revolute')],
     [('m1', None), ('l2', 1.0)], "'m1'.*parallel"),
    ([('a', 'world', 'm1', '0 0 0', '0 0 0', '1 0 0', 'revolute'),
      ('b', 'm1', 'l2', '0 0 0', '0 0 0', '0 1 0', 'prismatic')],
     [('m1', None), ('l2', 1.0)], "'m1'.*prismatic"),
    ([('a', 'world', 'm1', '0 0 0', '0 0 0', '1 0 0', 'revolute'),
      ('b', 'm1', 'm2', '0 0 0', '0 0 0', '0 1 0', 'revolute'),
      ('c', 'm2', 'm3', '0 0 0', '0 0 0', '0 0 1', 'revolute'),
      ('d', 'm3', 'l4', '0 0 0', '0 0 0', '1 0 0', 'revolute')],
     [('m1', None), ('m2', None), ('m3', None), ('l4', 1.0)], "'m1'.*4 revolute"),
    ([('a', 'world', 'm1', '0 0 0', '0 0 0', '1 0 0', 'revolute'),
      ('b', 'm1', 'l2', '0 0 0', '0 0 0', '0 1 0', 'revolute'),
      ('c', 'm1', 'l3', '0 0 0', '0 0 0', '0 0 1', 'revolute')],
     [('m1', None), ('l2', 1.0), ('l3', 1.0)], "'m1'.*2 child"),
])
def test_massless_bodies_that_are_no_joint_chain_raise(joints, links, words):
    model = lm.load_urdf(urdf(links, joints))
    with pytest.raises(ValueError, match=words):
        from_model(model, np.zeros(model.nq), np.zeros(model.nv))
