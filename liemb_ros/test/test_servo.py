"""
The servo law (liemb_ros.servo) against its definition, by independent computations.

DLS against the closed form ``Jᵀ(JJᵀ + λ²I)⁻¹V`` (a linear solve, not the SVD the law uses)
and its null-space property; the achieved twist of every representation from central
finite differences of forward kinematics (not from the Jacobian); the thresholds of the
damping and of the singularity scaling; joint limits reached at the margin and never
passed; stale commands stopping at the acceleration limit; bad input refused.
"""
import os

import numpy as np
import pytest

import liemb_ros as lm
from conftest import URDF_DIR
from liemb_ros import servo as sv

Q_BENT = np.array([0.3, 0.6, -0.2, -1.2, 0.4, 0.8, 0.1])


@pytest.fixture(scope='module')
def arm():
    return lm.load_urdf(f'{URDF_DIR}/liemb_arm7.urdf')


def test_dls_is_the_closed_form_and_lies_in_the_row_space(rng):
    J = rng.normal(size=(5, 6, 7))
    V = rng.normal(size=(5, 6))
    lam = np.array([0.0, 1e-3, 0.1, 0.5, 2.0])
    qd = sv.dls(J, V, lam)
    for k in range(5):
        A = J[k] @ J[k].T + lam[k] ** 2 * np.eye(6)
        np.testing.assert_allclose(qd[k], J[k].T @ np.linalg.solve(A, V[k]), atol=1e-12)
        # no null-space motion: the projector I - J⁺J annihilates it
        N = np.eye(7) - np.linalg.pinv(J[k]) @ J[k]
        np.testing.assert_allclose(N @ qd[k], 0, atol=1e-12)
    np.testing.assert_allclose(np.einsum('bij,bj->bi', J[:1], qd[:1]), V[:1], atol=1e-12)
    # rank-deficient, undamped: the minimum-norm least-squares solution
    Js = J[0].copy()
    Js[5] = Js[4]
    np.testing.assert_allclose(sv.dls(Js, V[0], 0.0), np.linalg.pinv(Js) @ V[0], atol=1e-10)


def test_damping_and_singularity_scale_thresholds():
    np.testing.assert_allclose(sv.damping([0.0, 0.01, 0.02, 1.0], 0.05, 0.02),
                               [0.05, 0.05 * np.sqrt(0.75), 0.0, 0.0])
    k = np.array([10.0, 17.0, 23.5, 30.0, 50.0])
    np.testing.assert_allclose(sv.singularity_scale(k, True, 17.0, 30.0),
                               [1.0, 1.0, 0.5, 0.0, 0.0])
    assert sv.singularity_scale(30.0 - 0.04 * 13.0, True, 17.0, 30.0) == 0.0   # halts
    np.testing.assert_allclose(sv.singularity_scale(k, False, 17.0, 30.0), 1.0)
    assert sv.condition_number([2.0, 0.0]) == np.inf


def _achieved(model, q, qd, link, rep, h=1e-6):
    """Twist of ``link`` in ``rep`` from central differences of its pose (no Jacobian)."""
    Cp, Cm = lm.link_pose(model, q + h * qd, link), lm.link_pose(model, q - h * qd, link)
    C = lm.link_pose(model, q, link)
    Cdot = (Cp - Cm) / (2 * h)
    B = np.linalg.solve(C, Cdot)          # body: C⁻¹Ċ
    S = Cdot @ np.linalg.inv(C)           # spatial: ĊC⁻¹

    def vee(X):
        return np.r_[X[2, 1], X[0, 2], X[1, 0], X[:3, 3]]
    wb, ws, rdot = vee(B)[:3], vee(S)[:3], Cdot[:3, 3]
    return {'body': vee(B), 'spatial': vee(S), 'hybrid': np.r_[ws, rdot],
            'mixed': np.r_[wb, rdot]}[rep]


@pytest.mark.parametrize('rep', lm.REPRESENTATIONS)
def test_constant_twist_is_achieved_in_every_representation(arm, rep):
    servo = sv.Servo(arm, 'tool0', period=0.002, acceleration_limits=50.0)
    V = np.array([0.05, -0.03, 0.04, 0.03, 0.02, -0.04])
    q = Q_BENT.copy()
    for _ in range(50):
        q0 = q
        out = servo.twist_step(q0, V, representation=rep)
        q = q0 + out.velocities * servo.period
    assert out.status == sv.Status.NO_WARNING and out.scale == 1.0
    np.testing.assert_allclose(_achieved(arm, q0, out.velocities, 'tool0', rep), V,
                               atol=1e-6 * np.abs(V).max() + 1e-8)
    assert out.condition == pytest.approx(np.linalg.cond(lm.jacobian(arm, q0, 'tool0', rep)))


def test_twist_stamped_frame_and_mask(arm):
    servo = sv.Servo(arm, 'tool0', acceleration_limits=1e6)
    V = np.array([0.1, 0.0, 0.0, 0.02, -0.01, 0.03])
    out = servo.twist_step(Q_BENT, V, frame='link3')
    R = lm.link_pose(arm, Q_BENT, 'link3')[:3, :3]
    hyb = _achieved(arm, Q_BENT, out.velocities, 'tool0', 'hybrid')
    np.testing.assert_allclose(np.r_[R.T @ hyb[:3], R.T @ hyb[3:]], V, atol=1e-7)
    by_frame = sv.Servo(arm, 'tool0', acceleration_limits=1e6)
    by_rep = sv.Servo(arm, 'tool0', acceleration_limits=1e6)
    np.testing.assert_allclose(by_frame.twist_step(Q_BENT, V, frame='tool0').velocities,
                               by_rep.twist_step(Q_BENT, V, representation='body').velocities)
    # translation only: the angular part is not commanded, the linear part is met exactly
    servo = sv.Servo(arm, 'tool0', mask=[0, 0, 0, 1, 1, 1], acceleration_limits=1e6)
    out = servo.twist_step(Q_BENT, V, representation='hybrid')
    np.testing.assert_allclose(_achieved(arm, Q_BENT, out.velocities, 'tool0', 'hybrid')[3:],
                               V[3:], atol=1e-7)


@pytest.mark.parametrize('rep', lm.REPRESENTATIONS)
def test_base_frame_is_the_world_of_commands(rep):
    # the arm on a tilted, shifted pedestal: base_link is no longer the root's frame
    with open(f'{URDF_DIR}/liemb_arm7.urdf', encoding='utf-8') as f:
        xml = f.read().replace('<origin xyz="0 0 0" rpy="0 0 0"/>',
                               '<origin xyz="0.4 -0.2 0.3" rpy="0.3 -0.2 0.9"/>', 1)
    model = lm.load_urdf_string(xml)
    C_WB = lm.link_pose(model, Q_BENT, 'base_link')
    assert not np.allclose(C_WB, np.eye(4))
    servo = sv.Servo(model, 'tool0', base_frame='base_link', acceleration_limits=1e6)
    V = np.array([0.05, -0.03, 0.04, 0.03, 0.02, -0.04])
    out = servo.twist_step(Q_BENT, V, representation=rep)
    # the twist of tool0 relative to base_link, from poses C_WB⁻¹ C (no Jacobian)
    h = 1e-6
    Cp = np.linalg.solve(C_WB, lm.link_pose(model, Q_BENT + h * out.velocities, 'tool0'))
    Cm = np.linalg.solve(C_WB, lm.link_pose(model, Q_BENT - h * out.velocities, 'tool0'))
    C = np.linalg.solve(C_WB, lm.link_pose(model, Q_BENT, 'tool0'))
    Cdot = (Cp - Cm) / (2 * h)

    def vee(X):
        return np.r_[X[2, 1], X[0, 2], X[1, 0], X[:3, 3]]
    body, spatial = vee(np.linalg.solve(C, Cdot)), vee(Cdot @ np.linalg.inv(C))
    want = {'body': body, 'spatial': spatial, 'hybrid': np.r_[spatial[:3], Cdot[:3, 3]],
            'mixed': np.r_[body[:3], Cdot[:3, 3]]}[rep]
    np.testing.assert_allclose(want, V, atol=1e-7)


def test_approaching_a_singularity_slows_then_halts_without_a_jump(arm):
    # stretch the arm upward: joint 4 straightens, the condition number grows
    servo = sv.Servo(arm, 'tool0', mask=[0, 0, 0, 1, 1, 1], period=0.002,
                     acceleration_limits=5.0, singularity_thresholds=(6.0, 12.0))
    q = np.array([0.0, 0.3, 0.0, -0.6, 0.0, 0.3, 0.0])
    seen, prev = [], np.zeros(7)
    for _ in range(3000):
        out = servo.twist_step(q, [0, 0, 0, 0, 0, 0.1], representation='hybrid')
        assert np.all(np.abs(out.velocities - prev) <= 5.0 * 0.002 + 1e-12)
        prev = out.velocities
        seen.append(out.status)
        q = q + out.velocities * 0.002
    assert sv.Status.DECELERATE_FOR_SINGULARITY in seen
    assert seen[-1] == sv.Status.HALT_FOR_SINGULARITY
    assert np.abs(out.velocities).max() < 1e-9 and out.condition >= 12.0 - 0.05 * 6.0
    # leaving the singularity is not slowed
    out = servo.twist_step(q, [0, 0, 0, 0, 0, -0.1], representation='hybrid')
    assert out.status == sv.Status.NO_WARNING


def test_joint_limit_stops_at_the_margin(arm):
    servo = sv.Servo(arm, 'tool0', margin=0.1, acceleration_limits=4.0, period=0.002)
    q = Q_BENT.copy()
    target = np.zeros(7)
    target[3] = -1.0                    # joint4 toward its lower limit -2.1
    for _ in range(2000):
        out = servo.joint_step(q, target)
        q = q + out.velocities * servo.period
        assert q[3] >= arm.lower[3] + 0.1 - 1e-12
    assert out.status == sv.Status.HALT_FOR_JOINT_LIMIT
    assert q[3] == pytest.approx(arm.lower[3] + 0.1, abs=2e-3)
    assert np.abs(out.velocities).max() < 1e-6
    lo, hi = sv.joint_limit_bounds(np.array([0.0]), np.array([-1.0]), np.array([1.0]), 0.1,
                                   np.array([2.0]), 0.01)
    assert hi[0] == pytest.approx(min(np.sqrt(2 * 2.0 * 0.9), 90.0)) and lo[0] == -hi[0]


def test_stale_command_decelerates_to_rest(arm):
    servo = sv.Servo(arm, 'tool0', period=0.001, acceleration_limits=2.0)
    q = Q_BENT.copy()
    for _ in range(500):
        out = servo.twist_step(q, [0, 0, 0.2, 0.1, 0, 0], representation='hybrid')
        q = q + out.velocities * 0.001
    moving = out.velocities
    assert np.abs(moving).max() > 0.05
    prev = moving
    for k in range(1000):
        out = servo.stop_step(q)
        assert np.all(np.abs(out.velocities - prev) <= 2.0 * 0.001 + 1e-12)
        prev = out.velocities
        q = q + out.velocities * 0.001
    assert out.status == sv.Status.STALE_COMMAND and not np.any(out.velocities)


def test_velocity_limits_keep_the_direction_and_positions_integrate(arm):
    servo = sv.Servo(arm, 'tool0', velocity_limits=0.2, acceleration_limits=1e6)
    out = servo.twist_step(Q_BENT, [0, 0, 0, 2.0, 0, 0], representation='hybrid')
    free = sv.dls(lm.jacobian(arm, Q_BENT, 'tool0', 'hybrid'), np.r_[0, 0, 0, 2.0, 0, 0], 0.0)
    assert np.abs(out.velocities).max() == pytest.approx(0.2)
    np.testing.assert_allclose(out.velocities, free * 0.2 / np.abs(free).max(), atol=1e-12)
    np.testing.assert_allclose(out.positions, Q_BENT + out.velocities * servo.period)


def test_command_history_integrates_the_commands_since_the_measurement():
    h = sv.CommandHistory(horizon=1.0)
    h.add(0.0, [1.0, 0.0])
    h.add(0.1, [0.0, 2.0])
    h.add(0.3, [-1.0, 0.0])
    # from 0.05: 0.05 s of the first, 0.2 s of the second, 0.1 s of the third
    np.testing.assert_allclose(h.predict([0.0, 0.0], 0.05, 0.4), [0.05 - 0.1, 0.4])
    np.testing.assert_allclose(h.predict([1.0, 1.0], 0.4, 0.4), [1.0, 1.0])
    h.add(2.0, [5.0, 5.0])              # older commands fall out of the horizon
    np.testing.assert_allclose(h.predict([0.0, 0.0], 0.0, 2.1), [0.5, 0.5])


def test_bad_input_is_refused_and_changes_nothing(arm):
    servo = sv.Servo(arm, 'tool0')
    for call in (lambda: servo.twist_step(Q_BENT, [np.nan, 0, 0, 0, 0, 0]),
                 lambda: servo.twist_step(Q_BENT, np.zeros(6), representation='world'),
                 lambda: servo.twist_step(Q_BENT, np.zeros(6), frame='no_such_link'),
                 lambda: servo.joint_step(Q_BENT, np.zeros(3))):
        with pytest.raises(ValueError):
            call()
    assert servo.status == sv.Status.IDLE and not np.any(servo.velocities)
    with pytest.raises(ValueError, match='moves'):
        sv.Servo(arm, 'tool0', base_frame='link2')
    with pytest.raises(ValueError):
        sv.Servo(arm, 'nowhere')
    with pytest.raises(ValueError, match='thresholds'):
        sv.Servo(arm, 'tool0', singularity_thresholds=(30.0, 17.0))


def test_teleop_keys_map_to_twists_without_a_terminal():
    from liemb_ros.ros import teleop
    np.testing.assert_allclose(teleop.key_twist('w', 0.05, 0.2), [0, 0, 0, 0.05, 0, 0])
    np.testing.assert_allclose(teleop.key_twist('f', 0.05, 0.2), [0, 0, 0, 0, 0, -0.05])
    np.testing.assert_allclose(teleop.key_twist('u', 0.05, 0.2), [0, 0, 0.2, 0, 0, 0])
    assert teleop.key_twist('x', 0.05, 0.2) is None
    # every axis both ways, each key once
    twists = np.array([teleop.key_twist(k, 1.0, 1.0) for k in teleop.AXIS_KEYS])
    np.testing.assert_allclose(np.sort(twists.sum(axis=0)), 0.0)
    assert sorted(map(tuple, np.abs(twists))) == sorted(map(tuple, np.repeat(np.eye(6), 2, 0)))
    t = teleop.Teleop('hybrid', linear=0.1, angular=0.5, hold=0.6)
    assert t.command(0.0) is None
    t.press('d', 1.0)
    np.testing.assert_allclose(t.command(1.5), [0, 0, 0, 0, -0.1, 0])
    assert t.command(1.7) is None                  # released: the servo's timeout stops it
    t.press('2', 2.0)
    t.press('+', 2.0)
    t.press('i', 2.0)
    assert t.representation == 'spatial'
    np.testing.assert_allclose(t.command(2.1), [0.625, 0, 0, 0, 0, 0])
    assert 'spatial' in t.line(2.1) and '+0.62' in t.line(2.1)
    t.press(' ', 2.2)
    assert t.command(2.3) is None
    t.press('q', 2.4)
    assert t.done


def test_launch_set_servo_flies_the_simulation_with_the_servo_node():
    from liemb_ros.ros import launcher
    res = launcher.resolve('servo', {}, installed=lambda p, e: False)
    by_name = {n.name: n for n in res.nodes}
    assert set(by_name) == {'liemb_simulation', 'liemb_servo'}
    servo, sim = by_name['liemb_servo'], by_name['liemb_simulation']
    assert servo.executable == 'servo_node' and servo.package == 'liemb_ros'
    assert ('~/velocity_command', 'liemb_simulation/velocity_command') in servo.remappings
    files = [p for p in sim.parameters if isinstance(p, str)]
    assert [os.path.basename(f) for f in files] == ['simulation.yaml', 'servo.yaml']
    robot = [p for p in servo.parameters if isinstance(p, dict) and 'robot_description' in p]
    assert robot and 'liemb_arm7' in robot[0]['robot_description']   # the set's default
    args = {a.name: a.default for a in launcher.arguments('servo')}
    assert args['robot'] == 'liemb_arm7'
    path = os.path.join(os.path.dirname(URDF_DIR), 'launch', 'servo.launch.py')
    assert "launch_description('servo')" in open(path, encoding='utf-8').read()
