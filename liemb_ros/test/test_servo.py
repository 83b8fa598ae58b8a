"""
The servo law (liemb_ros.control.servo) against its definition, by independent computations.

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
from liemb_ros.control import servo as sv

Q_BENT = np.array([0.3, 0.6, -0.2, -1.2, 0.4, 0.8, 0.1])


@pytest.fixture(scope='module')
def arm():
    return lm.load_urdf(f'{URDF_DIR}/liemb_arm7.urdf')


def _lam(sigma_min, damping_max, threshold):
    """Chiaverini's smooth damping, written out: λ² = λ_max² (1 - (σ_min/σ_0)²) below σ_0."""
    if threshold <= 0 or sigma_min >= threshold:
        return 0.0
    return damping_max * np.sqrt(1.0 - (sigma_min / threshold) ** 2)


def test_compiled_dls_is_the_closed_form_and_lies_in_the_row_space(rng):
    """The compiled step (the law the node runs): ``Jᵀ(JJᵀ + λ²I)⁻¹V`` with the damping of
    its smallest singular value, no null-space motion; undamped and rank-deficient, the
    minimum-norm least-squares solution (numpy's pinv)."""
    for k, (damping, threshold) in enumerate(((0.0, 0.0), (0.05, 0.02), (0.5, 10.0),
                                              (2.0, 10.0))):
        J = rng.normal(size=(6, 7))
        V = rng.normal(size=6)
        direction, _, magnitude = _step(J, V, damping, threshold)
        qd = magnitude * direction
        lam = _lam(np.linalg.svd(J, compute_uv=False)[-1], damping, threshold)
        assert (lam > 0) == (k >= 2), lam          # the last two are damped
        np.testing.assert_allclose(qd, _closed_form(J, V, lam), atol=1e-12)
        N = np.eye(7) - np.linalg.pinv(J) @ J       # the null-space projector annihilates it
        np.testing.assert_allclose(N @ qd, 0, atol=1e-12)
    np.testing.assert_allclose(J @ _closed_form(J, V, 0.0), V, atol=1e-12)
    Js = J.copy()
    Js[5] = Js[4]
    direction, kappa, magnitude = _step(Js, V, 0.0, 0.0)
    assert kappa > 1e12                          # singular to rounding
    np.testing.assert_allclose(magnitude * direction, np.linalg.pinv(Js) @ V, atol=1e-10)


def test_compiled_damping_and_the_singularity_scale_thresholds():
    """λ read back from the compiled step on a Jacobian of known smallest singular value σ
    (the solution along its direction is σ/(σ² + λ²)); the singularity scale's ramp."""
    for sigma, expected in ((1e-3, 0.05 * np.sqrt(1 - 0.05 ** 2)), (0.01, 0.05 * np.sqrt(0.75)),
                            (0.02, 0.0), (1.0, 0.0)):
        J = np.hstack([np.eye(6), np.zeros((6, 1))])
        J[5, 5] = sigma
        direction, _, magnitude = _step(J, np.eye(6)[5], 0.05, 0.02)
        lam2 = sigma / (magnitude * direction[5]) - sigma ** 2
        assert np.sqrt(max(lam2, 0.0)) == pytest.approx(expected, abs=1e-9), sigma
    for k, scale in ((10.0, 1.0), (17.0, 1.0), (23.5, 0.5), (30.0, 0.0), (50.0, 0.0),
                     (30.0 - 0.04 * 13.0, 0.0)):                   # the last: halts
        assert sv.singularity_scale(k, True, 17.0, 30.0) == pytest.approx(scale), k
        assert sv.singularity_scale(k, False, 17.0, 30.0) == 1.0   # moving away: never slowed
    assert sv._condition(np.array([[2.0, 0.0], [0.0, 0.0]])) == np.inf


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
    # the compiled stage alone, one joint moving fast toward either limit: no faster than it
    # can stop 0.1 before it at 2 rad/s², sqrt(2 a d) with d = 0.9, nor than d/dt = 90
    for sign in (1.0, -1.0):
        qd, filtered = np.empty(1), np.array([10.0 * sign])
        sv._limits(np.array([0.0]), np.array([sign]), 10.0, filtered.copy(), filtered,
                   np.array([100.0]), np.array([2.0]), np.array([-1.0]), np.array([1.0]),
                   0.1, 0.01, 1.0, qd)
        assert qd[0] == pytest.approx(sign * min(np.sqrt(2 * 2.0 * 0.9), 90.0))


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


def test_a_rebuilt_law_continues_from_the_old_filtered_command(arm):
    """A law rebuilt with new settings (the servo node on a parameter change) that takes the
    old one's state steps exactly as the old law would have gone on; a fresh law, its filter
    at rest, would command a different velocity."""
    settings = dict(period=0.001, smoothing=0.05, acceleration_limits=1e6)
    old, twin = sv.Servo(arm, 'tool0', **settings), sv.Servo(arm, 'tool0', **settings)
    target = np.linspace(0.2, -0.1, arm.nq)
    for _ in range(20):   # 20 ms of a 50 ms filter: the command is on its way
        old.joint_step(Q_BENT, target)
        twin.joint_step(Q_BENT, target)
    rebuilt = sv.Servo(arm, 'tool0', damping=0.1, **settings)   # joint steps ignore it
    rebuilt.carry_state_from(old)
    assert rebuilt.status == old.status and rebuilt.velocities.tolist() == old.velocities.tolist()
    for _ in range(5):
        out = rebuilt.joint_step(Q_BENT, target)
        np.testing.assert_array_equal(out.velocities, twin.joint_step(Q_BENT, target).velocities)
    dropped = sv.Servo(arm, 'tool0', **settings).joint_step(Q_BENT, target).velocities
    assert np.abs(out.velocities - dropped).max() > 0.05
    with pytest.raises(ValueError, match='joints'):
        rebuilt.carry_state_from(sv.Servo(lm.load_urdf(f'{URDF_DIR}/planar_double_pendulum.urdf'),
                                          'link2'))


def test_velocity_limits_keep_the_direction_and_positions_integrate(arm):
    servo = sv.Servo(arm, 'tool0', velocity_limits=0.2, acceleration_limits=1e6)
    out = servo.twist_step(Q_BENT, [0, 0, 0, 2.0, 0, 0], representation='hybrid')
    free = _closed_form(lm.jacobian(arm, Q_BENT, 'tool0', 'hybrid'), np.r_[0, 0, 0, 2.0, 0, 0],
                        0.0)
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
    from liemb_ros.app import launcher
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


# --- no input makes the law non-finite (issue 28) -----------------------------------------

def _closed_form(J, V, lam):
    """``Jᵀ(JJᵀ + λ²I)⁻¹V`` by a linear solve; for λ = 0 the minimum-norm pinv solution."""
    if lam == 0.0:
        return np.linalg.pinv(J, rcond=1e-12) @ V
    return J.T @ np.linalg.solve(J @ J.T + lam * lam * np.eye(len(V)), V)


def _step(J, V, damping=0.05, threshold=0.02):
    qd = np.empty(J.shape[1])
    kappa, magnitude = sv._dls_step(np.ascontiguousarray(J), np.asarray(V, dtype=float),
                                    damping, threshold, qd)
    assert np.all(np.isfinite(qd)) and not np.isnan(kappa) and magnitude >= 0.0, (
        qd, kappa, magnitude)
    assert np.abs(qd).max() in (0.0, 1.0) and (magnitude > 0) == bool(np.any(qd))
    return qd, kappa, magnitude


def _singular_jacobians(rng):
    J = rng.normal(size=(6, 7))
    dup = J.copy()
    dup[5] = dup[4]                      # two equal rows: rank 5
    dup[3] = 0.0                         # and a zero row: rank 4
    return [dup, np.zeros((6, 7)), np.outer(rng.normal(size=6), rng.normal(size=7))]


def test_compiled_dls_at_extreme_magnitudes_is_finite_and_the_closed_form(rng, arm):
    """
    The compiled damped least squares (``_dls_step``) called directly: twists up to 1e308
    and down to subnormal numbers, Jacobians scaled by 1e-150 .. 1e150 and exactly singular
    ones: a finite direction and a magnitude that, where representable, are the closed
    form's (by linearity in V: ``q̇(cJ, vV) = (v/c) q̇(J, V, λ/c)``, λ from ``c σ_min``);
    an overflowing magnitude is inf, never NaN.
    """
    J0 = rng.normal(size=(6, 7))
    V0 = rng.normal(size=6)
    for v in (5e-324, 1e-300, 1e-3, 1.0, 1e100, 1e300, 1.7e308):
        for c in (1e-150, 1e-8, 1.0, 1e8, 1e150):
            for damping, threshold in ((0.05, 0.02), (0.0, 0.02), (0.05, 0.0), (2.0, 10.0)):
                V = V0 / np.abs(V0).max() * v    # subnormal v: as rounded
                qd, kappa, magnitude = _step(c * J0, V, damping, threshold)
                s = np.linalg.svd(J0, compute_uv=False)
                assert kappa == pytest.approx(s[0] / s[-1], rel=1e-9)
                lam = _lam(c * s[-1], damping, threshold)
                ref = _closed_form(J0, V / np.abs(V).max(), float(lam) / c)
                expected = np.log(np.abs(V).max()) - np.log(c) + np.log(np.abs(ref).max())
                if expected < np.log(1e-300):   # the solution underflows: no direction
                    assert magnitude < 1e-290
                    continue
                np.testing.assert_allclose(qd, ref / np.abs(ref).max(), atol=1e-9)
                if expected < np.log(1.7e308):
                    assert np.log(magnitude) == pytest.approx(expected, abs=1e-9)
                else:
                    assert magnitude > 1e300          # inf or close to the largest double
    # the largest twists of both signs, the input of the issue
    for V in ([1e308] * 6, [1.7e308, -1.7e308, 1.7e308, -1.7e308, 1.0, 0.0],
              [0, 0, 0, 1e308, 0, 0]):
        qd, _, magnitude = _step(J0, V)
        ref = _closed_form(J0, np.asarray(V) / 1.7e308, 0.0)
        np.testing.assert_allclose(qd, ref / np.abs(ref).max(), atol=1e-9)
    # exactly singular Jacobians, damped and not, and a zero one
    Vn = V0 / np.abs(V0).max()
    for J in _singular_jacobians(rng):
        for damping in (0.05, 0.0):
            for v in (1.0, 1e308):
                qd, kappa, magnitude = _step(J, Vn * v, damping)
                assert kappa > 1e12      # σ_min 0 up to rounding (inf when exactly 0)
                if not J.any():
                    assert magnitude == 0.0
                    continue
                ref = _closed_form(J, Vn, damping)     # σ_min = 0: λ = damping
                np.testing.assert_allclose(qd, ref / np.abs(ref).max(), atol=1e-8)
                assert magnitude / v == pytest.approx(np.abs(ref).max(), rel=1e-8)
    # the arm stretched out (σ_min 3e-17) and Jacobians of 1e-300 and 1e300: finite
    for J in (lm.jacobian(arm, np.zeros(7), 'tool0', 'hybrid'), 1e-300 * J0, 1e300 * J0,
              np.full((6, 7), 1.7e308)):
        for V in (V0, Vn * 1e308, 1e-320 * np.sign(V0)):
            _step(J, V)


def test_compiled_limits_bound_any_target(rng):
    """
    ``_limits`` called directly with targets of any magnitude (inf: beyond every limit) and
    limits up to 1e308: the output is finite, within the velocity limits, within the
    acceleration limit times dt of the previous output, and toward a position limit no
    faster than a stop at the acceleration limit allows (the law's stages 4-7).
    """
    n = 7
    lower, upper = np.full(n, -2.0), np.full(n, 2.0)
    upper[6], lower[6] = np.inf, -np.inf                 # a continuous joint
    dt = 0.002
    for vl, al in ((1.0, 5.0), (1e308, 5.0), (1.0, 1e308), (1e308, 1e308)):
        vlim, alim = np.full(n, vl), np.full(n, al)
        for magnitude in (0.0, 1e-300, 1.0, 1e308, np.inf):
            for prev_scale in (0.0, 1.0, 1e308):
                for _ in range(5):
                    target = rng.uniform(-1, 1, n)
                    target /= np.abs(target).max()
                    prev = np.clip(rng.uniform(-1, 1, n) * prev_scale, -vlim, vlim)
                    filtered = prev.copy()
                    q = rng.uniform(-2.5, 2.5, n)
                    qd = np.empty(n)
                    gain = rng.choice([1.0, 0.3])
                    s, limit = sv._limits(q, target, magnitude, prev, filtered, vlim, alim,
                                          lower, upper, 0.1, dt, gain, qd)
                    assert np.all(np.isfinite(qd)) and np.all(np.isfinite(filtered))
                    assert 0.0 <= s <= 1.0 and 0.0 <= limit <= 1.0
                    assert np.all(np.abs(qd) <= vlim * (1 + 1e-12))
                    # before the joint-limit scale (which may stop harder), the change
                    # from prev is at most alim dt
                    if limit > 1e-100:   # (qd / limit recovers it while qd is no subnormal)
                        step = np.abs(qd / limit - prev)
                        assert np.all(step <= alim * dt * (1 + 1e-9) + 1e-300), step
                    # toward a limit inside the margin: not at all
                    inside = (q > upper - 0.1) & (qd > 0) | (q < lower + 0.1) & (qd < 0)
                    assert not inside.any(), (q, qd)


def test_commands_beyond_the_plausibility_bound_are_refused_and_the_law_stays_finite(arm, rng):
    """
    A twist or jog beyond ``MAX_SPEED`` (1000 rad/s or m/s) is refused before any
    computation, with the component and the bound in the reason, and the state is
    unchanged; up to the bound, at a singular configuration too, every output is finite
    and within the velocity and acceleration limits.
    """
    servo = sv.Servo(arm, 'tool0')
    vlim = servo.velocity_limits
    for call, words in (
            (lambda: servo.twist_step(Q_BENT, [0, 0, 0, 1e308, 0, 0]), ('vx = 1e+308', '1000')),
            (lambda: servo.twist_step(Q_BENT, [0, 0, -1000.5, 0, 0, 0], representation='body'),
             ('wz = -1000.5', '1000')),
            (lambda: servo.joint_step(Q_BENT, [0, 0, 0, 0, 0, 0, 1e308]),
             ('joint7 = 1e+308', '1000')),
            (lambda: servo.twist_step(Q_BENT, [0, np.inf, 0, 0, 0, 0]), ('non-finite',
                                                                         'wy = inf'))):
        with pytest.raises(ValueError) as err:
            call()
        assert all(w in str(err.value) for w in words), str(err.value)
    assert servo.status == sv.Status.IDLE and not np.any(servo.velocities)
    for q in (Q_BENT, np.zeros(7)):
        for rep in lm.REPRESENTATIONS:
            servo.reset()
            prev = np.zeros(7)
            for k in range(50):
                V = rng.choice([-1, 1], 6) * 10.0 ** rng.uniform(-300, 3, 6)
                V = np.clip(V, -sv.MAX_SPEED, sv.MAX_SPEED)
                out = (servo.twist_step(q, V, representation=rep) if k % 3 else
                       servo.joint_step(q, np.clip(V[0] * rng.normal(size=7), -1000, 1000)))
                assert np.all(np.isfinite(out.velocities)) and np.all(np.isfinite(out.positions))
                assert np.all(np.abs(out.velocities) <= vlim * (1 + 1e-12))
                assert np.all(np.abs(out.velocities - prev) <= 5.0 * servo.period + 1e-12)
                prev = out.velocities


def test_teleop_refuses_speeds_the_servo_would_refuse():
    import argparse
    from liemb_ros.ros import teleop
    parser = argparse.ArgumentParser()
    teleop.add_arguments(parser)
    for argv in (['--linear', '1e308'], ['--angular', 'nan'], ['--linear', '0'],
                 ['--rate', '0'], ['--rate', 'inf'], ['--angular', '-1']):
        with pytest.raises(SystemExit) as err:
            parser.parse_args(argv)
        assert err.value.code == 2
    assert parser.parse_args(['--linear', '1000']).linear == 1000.0
    t = teleop.Teleop(linear=900.0, angular=900.0)
    t.press('+', 0.0)
    assert t.linear == t.angular == sv.MAX_SPEED
