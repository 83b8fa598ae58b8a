"""The dynamics node's engine (no ROS): joint-state validation, twists, Jacobians."""
import numpy as np
import pytest

import liemb_ros as lm
from liemb_ros.control.engine import DynamicsEngine, OutputError, StateError
from conftest import erd_path


@pytest.fixture
def engine():
    model = lm.load_urdf(erd_path('panda'))
    return DynamicsEngine(model, twist_links=['panda_hand', 'panda_link4'],
                          wrench_joints=['panda_joint2'],
                          command_joints=list(reversed(model.joint_names)))


def test_partial_states_merge_by_name(engine, rng):
    m = engine.model
    q = m.random_configuration(rng)
    assert not engine.ready
    engine.update_state(m.joint_names[:4][::-1], q[:4][::-1])
    assert not engine.ready and engine.missing_joints() == m.joint_names[4:]
    engine.update_state(m.joint_names[4:], q[4:], np.ones(5))
    assert engine.ready
    np.testing.assert_array_equal(engine.q, q)
    np.testing.assert_array_equal(engine.qd, np.r_[np.zeros(4), np.ones(5)])


@pytest.mark.parametrize('names,pos,vel,message', [
    (['panda_joint1', 'ghost'], [np.nan, 0.0], [], 'non-finite .* panda_joint1'),
    (['panda_joint1', 'panda_joint2'], [0.0], [], '2 joint names but 1 positions'),
    (['panda_joint1'], [0.0], [1.0, 2.0], '1 joint names but 2 velocities'),
    (['panda_joint1', 'panda_joint2'], [0.0, np.nan], [], 'non-finite .* panda_joint2'),
    (['panda_joint1', 'panda_joint1'], [0.0, 0.0], [], 'duplicate joint names'),
])
def test_bad_states_are_rejected_and_the_last_good_state_kept(engine, names, pos, vel,
                                                              message):
    m = engine.model
    good = m.random_configuration(0)
    engine.update_state(m.joint_names, good)
    with pytest.raises(StateError, match=message):
        engine.update_state(names, pos, vel)
    np.testing.assert_array_equal(engine.q, good)


def test_joints_the_model_does_not_know_are_ignored_and_counted(engine, rng):
    """What joint_state_broadcaster sends on a real robot: a gripper and wheels too."""
    m = engine.model
    q = m.random_configuration(rng)
    names = ['wheel_left', *m.joint_names[:5], 'gripper', *m.joint_names[5:]]
    pos = np.r_[7.0, q[:5], np.nan, q[5:]]       # not ours: even NaN there does not matter
    assert engine.update_state(names, pos) == ('wheel_left', 'gripper')
    np.testing.assert_array_equal(engine.q, q)
    assert engine.ready
    engine.update_state(names, pos)
    assert engine.ignored == {'wheel_left': 2, 'gripper': 2}
    with pytest.raises(StateError, match='11 joint names but 10 positions'):
        engine.update_state(names[:-1] + ['x'], pos[:-1])
    # a stream of new names: the first MAX_IGNORED are remembered, the rest only ignored
    from liemb_ros.control.engine_state import MAX_IGNORED
    for k in range(3):
        more = [f'w{k}_{i}' for i in range(MAX_IGNORED // 2)]
        engine.update_state(list(m.joint_names) + more, np.r_[q, np.zeros(len(more))])
    assert len(engine.ignored) == MAX_IGNORED and engine.ignored['gripper'] == 2


def test_settings_change_all_or_none(engine):
    """configure (the node's parameter callback): one bad value and nothing changes."""
    with pytest.raises(ValueError, match="unknown representation 'world'"):
        engine.configure(mode='inverse_dynamics', twist_links=['panda_link3'],
                         representation='world')
    assert engine.mode == 'gravity_compensation'
    assert engine.twist_links == ['panda_hand', 'panda_link4']
    engine.configure(mode='inverse_dynamics', twist_links=[], representation='body')
    assert (engine.mode, engine.representation) == ('inverse_dynamics', 'body')
    # the leaf links of the URDF tree: the ones no joint names as its parent
    import xml.etree.ElementTree as ET
    root = ET.parse(erd_path('panda')).getroot()
    parents = {j.find('parent').get('link') for j in root.findall('joint')}
    leaves = [lk.get('name') for lk in root.findall('link') if lk.get('name') not in parents]
    assert sorted(engine.twist_links) == sorted(leaves)


def test_non_finite_outputs_are_refused(engine):
    """Velocities of 1e155 are finite, the Coriolis torques are not: refused, state kept."""
    m = engine.model
    engine.configure(mode='inverse_dynamics')
    engine.update_state(m.joint_names, np.zeros(m.nq), np.full(m.nq, 1e155))
    with pytest.raises(OutputError, match='non-finite tau'):
        engine.cycle()
    engine.update_state(m.joint_names, np.zeros(m.nq), np.ones(m.nq))
    assert np.all(np.isfinite(engine.cycle()['tau']))


def test_floating_base_waits_for_odometry(rng):
    m = lm.load_urdf(erd_path('solo12'), floating_base=True)
    e = DynamicsEngine(m, mode='inverse_dynamics')
    q, qd = m.random_configuration(rng), rng.standard_normal(m.nv)
    e.update_state(m.joint_names, q, qd[6:])
    assert not e.ready and e.missing_joints() == ['base odometry']
    from liemb_ros.core.lie import se3
    C = se3.exp(rng.normal(size=6))
    with pytest.raises(StateError, match='non-finite'):
        e.update_base(C, np.r_[np.nan, qd[1:6]])
    e.update_base(C, qd[:6])
    assert e.ready
    np.testing.assert_allclose(e.cycle()['tau'], lm.inverse_dynamics(
        m, q, qd, np.zeros(m.nv), base_pose=C)[6:], atol=1e-12)
    fixed = DynamicsEngine(lm.load_urdf(erd_path('ur5')))
    with pytest.raises(StateError, match='fixed base'):
        fixed.update_base(C, qd[:6])


def test_twists_and_jacobians_equal_the_library(engine, rng):
    m = engine.model
    q = m.random_configuration(rng)
    qd = rng.standard_normal(m.nv)
    engine.update_state(m.joint_names, q, qd)
    for rep in lm.REPRESENTATIONS:
        engine.configure(representation=rep)
        V = engine.twists()
        for k, link in enumerate(engine.twist_links):
            np.testing.assert_allclose(V[k], lm.link_twist(m, q, qd, link, rep), atol=1e-12)
        J, cols = engine.jacobian('panda_hand', rep)
        np.testing.assert_array_equal(J, lm.jacobian(m, q, 'panda_hand', rep))
        assert cols == m.joint_names
        Jd, _ = engine.jacobian('panda_hand', rep, derivative=True)
        np.testing.assert_array_equal(Jd, lm.jacobian_derivative(m, q, qd, 'panda_hand', rep))
    q2 = m.random_configuration(rng)
    J2, _ = engine.jacobian('panda_link7', 'body', names=m.joint_names, positions=q2)
    np.testing.assert_array_equal(J2, lm.jacobian(m, q2, 'panda_link7', 'body'))
    np.testing.assert_array_equal(engine.q, q)  # the request did not change the state


def test_bad_configuration_and_requests_name_the_culprit(engine):
    with pytest.raises(ValueError, match="unknown representation 'world'"):
        engine.configure(representation='world')
    with pytest.raises(ValueError, match="unknown mode 'pd'"):
        engine.configure(mode='pd')
    with pytest.raises(ValueError, match="unknown link 'nope'"):
        engine.configure(twist_links=['nope'])
    with pytest.raises(ValueError, match="unknown joint 'nope'"):
        engine.configure(wrench_joints=['nope'])
    with pytest.raises(ValueError, match='no joint state received yet'):
        engine.jacobian('panda_hand', 'body')
    with pytest.raises(ValueError, match="unknown link 'nope'"):
        engine.jacobian('nope', 'body', positions=np.zeros(9))
    with pytest.raises(ValueError, match="unknown representation 'x'"):
        engine.jacobian('panda_hand', 'x', positions=np.zeros(9))
    # the request's values: their count, or that they are not finite (not their list)
    with pytest.raises(ValueError, match='^9 joint names but 2 positions$'):
        engine.jacobian('panda_hand', 'body', positions=np.zeros(2))
    with pytest.raises(ValueError, match='^positions with a NaN or an infinity$'):
        engine.jacobian('panda_hand', 'body', positions=np.full(9, np.nan))
    with pytest.raises(ValueError, match='^9 joint names but 100000 velocities$'):
        engine.jacobian('panda_hand', 'body', positions=np.zeros(9), velocities=np.zeros(100000))


def test_command_order(engine):
    tau = np.arange(engine.model.nq, dtype=float)
    np.testing.assert_array_equal(engine.command(tau), tau[::-1])


def test_twists_of_every_link_with_a_floating_base(rng):
    """All links at once (base link included) equal link_twist one by one, per representation."""
    from liemb_ros.core.lie import se3
    m = lm.load_urdf(erd_path('solo12'), floating_base=True)
    C = se3.exp(rng.normal(size=6))
    e = DynamicsEngine(m, twist_links=list(m.link_names), base_pose=C)
    q, qd = m.random_configuration(rng), rng.standard_normal(m.nv)
    e.update_state(m.joint_names, q, qd[6:])
    e.qd[:6] = qd[:6]
    for rep in lm.REPRESENTATIONS:
        e.configure(representation=rep)
        V = e.twists()
        for k, link in enumerate(m.link_names):
            np.testing.assert_allclose(V[k], lm.link_twist(m, q, qd, link, rep, base_pose=C),
                                       atol=1e-12, err_msg=f'{link} {rep}')


def test_warm_up_leaves_no_trace(engine, rng):
    """warm_up (the node calls it at start): settings, state and statistics unchanged."""
    m = engine.model
    engine.update_state(m.joint_names, m.random_configuration(rng), rng.normal(size=m.nv))
    engine.configure(mode='inverse_dynamics')
    engine.configure(representation='body')
    ref = engine.cycle()
    state = (engine.q.copy(), engine.qd.copy(), engine.qdd_desired.copy(), engine.stats.count)
    assert engine.warm_up() >= 0.0
    assert (engine.mode, engine.representation) == ('inverse_dynamics', 'body')
    assert engine.stats.count == state[3] and len(engine.stats.samples) == state[3]
    for a, b in zip((engine.q, engine.qd, engine.qdd_desired), state[:3]):
        np.testing.assert_array_equal(a, b)
    out = engine.cycle()
    for k in ('tau', 'command', 'twists', 'wrenches'):
        np.testing.assert_array_equal(out[k], ref[k])


def test_effort_command_is_limited_by_the_urdf(engine):
    """<limit effort> of the Panda (87 / 12 / 20 N m): the command, not the torques."""
    import xml.etree.ElementTree as ET
    root = ET.parse(erd_path('panda')).getroot()
    limit = {j.get('name'): float(j.find('limit').get('effort')) for j in root.findall('joint')
             if j.find('limit') is not None}
    m = engine.model
    tau = np.linspace(-500.0, 500.0, m.nq)
    cmd = engine.command(tau)
    expected = [np.clip(tau[m.joint_names.index(j)], -limit[j], limit[j])
                for j in engine.command_joints]
    np.testing.assert_array_equal(cmd, expected)
    assert engine.clamped == 1
    engine.command(tau * 1e-3)   # within every limit: not counted
    assert engine.clamped == 1
    engine.configure(clamp_effort=False)
    np.testing.assert_array_equal(engine.command(tau), tau[::-1])


def test_controller_modes_compute_their_laws(engine, rng):
    """computed_torque holds, then tracks a trajectory by the clock; impedance holds a pose."""
    from liemb_ros import control
    m = engine.model
    q, qd = m.random_configuration(rng), rng.normal(size=9) * 0.1
    engine.update_state(m.joint_names, q, qd)
    engine.configure(mode='computed_torque', kp=[100.0], kd=[20.0])
    tau = engine.cycle(now=5.0)['tau']   # no trajectory: hold q, at rest
    np.testing.assert_allclose(tau, control.computed_torque(
        m, q, qd, q, np.zeros(9), np.zeros(9), 100.0, 20.0), atol=1e-10)
    engine.configure(friction_compensation=False)
    # (a point the arm reaches in a second from its random configuration within the limits)
    engine.set_trajectory(m.joint_names[:2], [1.0], [0.9 * q[:2]], [[0.0, 0.0]], start=5.0)
    q_d, qd_d, qdd_d = engine.trajectory.sample(5.5)
    tau = engine.cycle(now=5.5)['tau']
    np.testing.assert_allclose(tau, control.computed_torque(m, q, qd, q_d, qd_d, qdd_d, 100.0,
                                                            20.0, False), atol=1e-10)
    assert engine.tracking_error == pytest.approx(np.abs(q_d - q).max())
    engine.configure(mode='cartesian_impedance', impedance_link='panda_hand',
                     impedance_representation='body')
    tau = engine.cycle(now=6.0)['tau']   # holds the pose where the mode started: e = 0
    J = lm.jacobian(m, q, 'panda_hand', 'body')
    np.testing.assert_allclose(tau, lm.gravity_torques(m, q) - J.T @ (
        engine.settings.impedance_damping * (J @ qd)), atol=1e-10)


def test_armature_adds_the_rotor_inertia_to_the_laws_that_accelerate(engine, rng):
    """computed_torque and inverse_dynamics use M + diag(armature); gravity_compensation not."""
    m = engine.model
    q, qd = m.random_configuration(rng), rng.normal(size=9) * 0.1
    engine.update_state(m.joint_names, q, qd)
    armature = rng.uniform(0.01, 0.3, 9)
    qdd = rng.normal(size=9)
    engine.set_desired_acceleration(qdd[engine.command_index])
    for mode in ('inverse_dynamics', 'computed_torque', 'gravity_compensation'):
        engine.configure(mode=mode, armature=[])
        bare = engine.cycle(now=1.0)['tau']
        engine.configure(armature=armature)
        tau = engine.cycle(now=1.0)['tau']
        if mode == 'inverse_dynamics':
            want = lm.inverse_dynamics(m, q, qd, qdd) + armature * qdd
        elif mode == 'computed_torque':   # holds q: a = -K_d q̇
            want = bare - armature * engine.settings.kd * qd
        else:
            want = bare
        np.testing.assert_allclose(tau, want, atol=1e-10)
    engine.configure(armature=[0.2])
    np.testing.assert_array_equal(engine.settings.armature, np.full(9, 0.2))


@pytest.mark.parametrize('settings,message', [
    (dict(kp=[-1.0]), 'kp must be'), (dict(kd=[np.nan]), 'kd must be'),
    (dict(kp=[1.0, 2.0]), 'kp must be 1 or 9'), (dict(stiffness=[1e9]), 'stiffness'),
    (dict(impedance_representation='spatial'), 'body, hybrid'),
    (dict(impedance_link='ghost'), 'ghost'), (dict(impedance_link='panda_link0'), 'fixed'),
    (dict(payload=('panda_hand', -1.0, (), ())), 'mass'),
    (dict(payload=('panda_hand', 1.0, (0, 0), ())), 'payload_com takes 3'),
    (dict(payload=('panda_hand', 1.0, (), (1, 0, 0, 1, 0, 3))), 'triangle'),
    (dict(gravity=[0.0, np.inf, 0.0]), 'gravity'),
    (dict(armature=[-0.1]), 'armature must be'), (dict(armature=[0.1, 0.2]), 'armature'),
])
def test_bad_gains_and_payloads_are_refused_all_or_none(engine, settings, message):
    model = engine.model
    with pytest.raises(ValueError, match=message):
        engine.configure(mode='computed_torque', **settings)
    assert engine.mode == 'gravity_compensation' and engine.model is model


def test_bad_trajectories_and_targets_are_refused(engine, rng):
    m = engine.model
    with pytest.raises(StateError, match='no complete joint state'):
        engine.set_trajectory(m.joint_names, [1.0], [m.neutral()])
    engine.update_state(m.joint_names, m.random_configuration(rng))
    with pytest.raises(StateError, match="unknown joint.*'ghost'"):
        engine.set_trajectory(['ghost'], [1.0], [[0.0]])
    with pytest.raises(StateError, match='strictly increasing'):
        engine.set_trajectory(m.joint_names[:1], [1.0, 0.5], [[0.0], [1.0]])
    with pytest.raises(StateError, match='not a rotation'):
        engine.set_target_pose(np.diag([1.0, 1.0, -1.0, 1.0]))
    assert engine.trajectory is None and engine.target_pose is None


def test_payload_and_gravity_rebuild_the_model(engine, rng):
    """A point payload's torques equal its weight as an external wrench on the link."""
    m0 = engine.model
    q = m0.random_configuration(rng)
    engine.update_state(m0.joint_names, q)
    com = np.array([0.02, -0.01, 0.1])
    engine.configure(payload=('panda_hand', 2.0, com, ()))
    C = lm.link_pose(m0, q, 'panda_hand')
    f = C[:3, :3].T @ (2.0 * m0.gravity)           # the weight in the link frame
    ref = lm.inverse_dynamics(m0, q, np.zeros(9), np.zeros(9),
                              f_ext={'panda_hand': np.r_[np.cross(com, f), f]})
    np.testing.assert_allclose(engine.cycle()['tau'], ref, atol=1e-10)
    engine.configure(gravity=[0.0, 0.0, 0.0])
    np.testing.assert_allclose(engine.cycle()['tau'], 0.0, atol=1e-12)
    engine.configure(payload=('', 0.0, (), ()), gravity=[])
    assert engine.model is m0


def test_controller_modes_need_a_fixed_base():
    model = lm.load_urdf(erd_path('solo12'), floating_base=True)
    with pytest.raises(ValueError, match='fixed-base'):
        DynamicsEngine(model, mode='computed_torque')
