"""
Joint limits, effort limits and friction in the Simulator (issue 16, item 2).

The default arm (liemb_arm7): limits ±2 rad on joint2, effort 130 N m, URDF
``<dynamics damping="1.3" friction="2.6"/>``.  Each feature is switchable
(``limits``, ``effort_limits``, ``friction``) and its energy is in the balance.
"""
import warnings

import numpy as np
import pytest

import liemb_ros as lm
from liemb_ros.core import resources
from liemb_ros.core.dynamics import gravity_torques
from liemb_ros.sim.simulator import FRICTION_VELOCITY, SimulationWarning, Simulator


@pytest.fixture(scope='module')
def arm():
    return lm.load_urdf(resources.robot_path('liemb_arm7'))


def _drive_joint2(model, seconds=1.5, **kw):
    """Joint2 commanded far past its effort limit toward +2 rad; max q and final state."""
    sim = Simulator(model, **kw)
    tau = np.zeros(model.nq)
    tau[1] = 1e3
    top = -np.inf
    for _ in range(int(round(seconds / sim.dt))):
        sim.step(tau)
        top = max(top, sim.q[1])
    return sim, top


def test_joint_driven_into_its_limit_stays_within(arm):
    """
    Joint2 at its effort limit (130 N m) plus gravity, into its +2 rad limit.

    The limit is a spring: the static penetration is ``(τ_max + |g_2|) / k_2`` (0.026 rad
    here); the impact at full effort overshoots by at most 0.1 rad (measured 0.088).
    Without limits the same joint swings far past (the bug of issue 16).
    """
    sim, top = _drive_joint2(arm)
    d = sim.diagnostics()
    assert d['applied_torque'][1] == 130.0           # the effort limit
    assert d['in_limit'][1] and d['limit_energy'] > 0
    static = (130.0 + abs(gravity_torques(arm, sim.q)[1])) / sim.limit_stiffness[1]
    assert sim.q[1] - 2.0 == pytest.approx(static, rel=0.05)
    assert static < 0.03 and top < 2.1, (static, top)
    assert abs(sim.qd[1]) < 1e-2
    free, top_free = _drive_joint2(arm, seconds=0.5, limits=False)
    assert top_free > 3.0


def test_limit_energy_balance_converges(arm):
    """
    No friction, no damping, explicit RK4: a joint bouncing in its limit; E - E0 - W -> 0.

    The limit spring's energy is potential, its damper's work is in W; the kink at the
    limit costs the tableau its order (measured 0.42, 0.13,
    0.027 J of |W| = 131 J: ratios 3.3, 4.7, not 16).
    """
    errs = []
    for dt in (2e-3, 1e-3, 5e-4):
        sim = Simulator(arm, dt=dt, damping=0.0, friction=0.0, damping_method='explicit',
                        qd0=np.array([0, 6.0, 0, 0, 0, 0, 0]))
        sim.step(n=int(round(1.0 / dt)))
        d = sim.diagnostics()
        assert d['work'] < -1.0          # the limit damper dissipated
        errs.append(abs(d['energy_balance_error']) / abs(d['work']))
    assert errs[1] < 2e-3 and errs[0] / errs[1] > 3 and errs[1] / errs[2] > 3, errs


def test_friction_energy_balance_converges(arm):
    """
    Friction and damping, a sinusoidal drive (implicit step, order 2): E - E0 - W -> 0.

    Measured 0.21, 0.054, 0.019 J of |W| = 26 J (ratios 3.8, 2.8).
    """
    errs = []
    for dt in (1e-3, 5e-4, 2.5e-4):
        sim = Simulator(arm, dt=dt, limits=False, q0=np.array([0, 0.4, 0, -1.2, 0, 1.0, 0]))
        assert sim.damping_method == 'implicit'
        sim.step(lambda t: 8.0 * np.sin(4.0 * t) * np.ones(7), n=int(round(1.0 / dt)))
        d = sim.diagnostics()
        assert d['work'] < -1.0
        errs.append(abs(d['energy_balance_error']) / abs(d['work']))
    assert errs[0] < 1.5e-2 and errs[0] / errs[1] > 2.5 and errs[1] / errs[2] > 2.5, errs


def test_torque_below_coulomb_level_does_not_move():
    """
    No gravity, joint1 (F = 2.6 N m) under half of F: it creeps at ``v_s atanh(1/2)``.

    The regularised friction ``-F tanh(q̇/v_s)`` holds a torque ``τ < F`` at the speed
    ``v_s atanh(τ/F)`` (0.55 mrad/s for v_s = 1 mrad/s): the stated tolerance.  Above F
    the joint breaks away.
    """
    model = lm.load_urdf(resources.robot_path('liemb_arm7'), gravity=(0.0, 0.0, 0.0))
    tau = np.zeros(7)
    tau[0] = 1.3
    sim = Simulator(model)
    sim.step(tau, n=1000)
    creep = FRICTION_VELOCITY * np.arctanh(0.5)
    assert abs(sim.qd[0]) == pytest.approx(creep, rel=0.02)
    assert abs(sim.q[0]) < 1.0 * creep
    tau[0] = 5.2
    sim = Simulator(model)
    sim.step(tau, n=1000)
    assert sim.qd[0] > 0.5


def test_switches(arm):
    """limits=False, effort_limits=False, friction=0: each feature off on its own."""
    sim = Simulator(arm, limits=False, effort_limits=False, friction=0.0)
    assert np.all(sim.lower == -np.inf) and np.all(sim.limit_stiffness == 0)
    over = 1.5 * arm.effort_limit      # every joint beyond its <limit effort>
    sim.step(over)
    assert np.all(sim.diagnostics()['applied_torque'] == over)
    assert np.all(sim.friction == 0) and sim.damping_method == 'explicit'
    np.testing.assert_array_equal(Simulator(arm).friction, arm.friction)
    with pytest.raises(ValueError, match='friction'):
        Simulator(arm, friction=-1.0)
    with pytest.raises(ValueError, match='limit_time_constant'):
        Simulator(arm, limit_time_constant=0.0)


def test_a_start_beyond_a_limit_is_named(arm):
    """q0 beyond joint2's and joint4's limits: simulated as given, with a warning naming them."""
    q0 = np.zeros(arm.nq)
    q0[1], q0[3] = 2.5, -3.0
    with pytest.warns(SimulationWarning, match=r'joint2, joint4 \(2.5 not in \[-2, 2\]'):
        sim = Simulator(arm, q0=q0)
    np.testing.assert_array_equal(sim.q, q0)
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        Simulator(arm, q0=q0, limits=False)
        Simulator(arm, q0=np.clip(q0, arm.lower, arm.upper))


@pytest.mark.parametrize('frame', ['link', 'world'])
def test_external_wrench_against_rnea(arm, frame):
    """
    A wrench on tool0 accelerates the arm as the RNEA's ``f_ext`` says (``M q̈ = Jᵀ W + ...``).

    One step of 1 µs from rest: ``q̇ / dt`` is ``q̈(0)`` to O(dt).  A world-resolved
    wrench equals the link-frame one rotated by the tool's orientation at that instant.
    """
    from liemb_ros.core.dynamics import forward_dynamics, inverse_dynamics
    q0 = np.array([0.0, 0.4, 0.0, -1.2, 0.0, 1.0, 0.0])
    W = np.array([0.3, -0.2, 0.5, 4.0, -3.0, 2.0])
    R = lm.link_pose(arm, q0, 'tool0')[:3, :3]
    Wb = W if frame == 'link' else np.concatenate([R.T @ W[:3], R.T @ W[3:]])
    zero = np.zeros(7)
    tau = inverse_dynamics(arm, q0, zero, zero) - inverse_dynamics(
        arm, q0, zero, zero, f_ext={'tool0': Wb})
    qdd = forward_dynamics(arm, q0, zero, tau)
    sim = Simulator(arm, dt=1e-6, q0=q0, damping=0.0, friction=0.0, limits=False)
    sim.set_wrench('tool0', W, frame=frame)
    sim.step()
    np.testing.assert_allclose(sim.qd / sim.dt, qdd, rtol=1e-4, atol=1e-4)


def test_external_wrench_work_is_accounted(arm):
    """
    A push on tool0 with friction, limits and damping on: its work closes the balance.

    The arm is pushed into its limits (impacts, stepped by ROS2 with the limit spring in
    its Jacobian from the step that reaches the limit: order ~1.4 here); measured 4.7 %
    and 1.8 % of |W| + T at 1 and 0.5 ms.
    """
    errs = []
    for dt in (1e-3, 5e-4):
        sim = Simulator(arm, dt=dt, q0=np.array([0, 0.4, 0, -1.2, 0, 1.0, 0]))
        sim.set_wrench('tool0', [0, 0, 0, 40.0, 0, 30.0], frame='world')
        sim.step(n=int(round(1.0 / dt)))
        d = sim.diagnostics()
        errs.append(abs(d['energy_balance_error']) / (abs(d['work']) + d['kinetic']))
    assert errs[0] < 6e-2 and errs[1] < 0.6 * errs[0], errs
    sim.clear_wrenches()
    with pytest.raises(ValueError, match='unknown link'):
        sim.set_wrench('nowhere', np.zeros(6))


def test_limit_engages_no_faster_than_two_steps(arm, rng):
    """
    A limit's spring-damper is the one at ``q0`` unless the joint got too light for it.

    ``k_j = m_j(q0) / τ_c²`` with ``m_j = 1 / (M⁻¹)_jj`` (Pinocchio's ``computeMinverse``);
    where a joint within its range at ``q`` has ``m_j(q) / k_j < (2 dt)²`` it engages with
    ``k_j = m_j(q) / (2 dt)²``, ``b_j = 2 m_j(q) / (2 dt)`` (MuJoCo's refsafe), and
    :meth:`reset` restores the ones at ``q0``.  The default arm never needs it: driven into
    two limits its impedance stays the one at ``q0`` (human.urdf does: test_simulate_robots).
    """
    pin = pytest.importorskip('pinocchio')
    pm = pin.buildModelFromUrdf(resources.robot_path('liemb_arm7'))
    assert [pm.names[i] for i in range(1, pm.njoints)] == list(arm.joint_names)
    data = pm.createData()

    def inertias(q):
        return 1.0 / np.diag(pin.computeMinverse(pm, data, q))

    tc, dt = 0.0025, 1e-3                 # capped where m_j(q0) / m_j(q) > (tc / 2 dt)²
    sim = Simulator(arm, dt=dt, limit_time_constant=tc)
    q0 = arm.neutral()
    k0, b0 = sim.limit_stiffness.copy(), sim.limit_damping.copy()
    np.testing.assert_allclose(k0, inertias(q0) / tc ** 2, rtol=1e-9)
    np.testing.assert_allclose(b0, 2 * inertias(q0) / tc, rtol=1e-9)
    for _ in range(500):
        q = arm.random_configuration(rng)
        if np.any(inertias(q0) / inertias(q) > (tc / (2 * dt)) ** 2 * 1.01):
            break
    else:
        pytest.fail('no configuration where a joint is light enough')
    sim.joint_limits.engage(np.ones(arm.nq, dtype=bool), q)
    mj = inertias(q)
    cap = mj / (2 * dt) ** 2
    capped = k0 > cap
    assert np.any(capped) and not np.all(capped)
    np.testing.assert_allclose(sim.limit_stiffness, np.where(capped, cap, k0), rtol=1e-9)
    np.testing.assert_allclose(sim.limit_damping, np.where(capped, mj / dt, b0), rtol=1e-9)
    sim.reset()
    assert np.array_equal(sim.limit_stiffness, k0) and np.array_equal(sim.limit_damping, b0)
    sim = Simulator(arm, q0=np.array([0.0, 0.0, 0.0, -0.3, 0.0, 0.0, 0.0]))
    k0 = sim.limit_stiffness.copy()
    tau = np.zeros(arm.nq)
    tau[1], tau[3] = 1e3, -1e3
    sim.step(tau, n=460)
    assert np.sum(sim.diagnostics()['in_limit']) >= 2
    assert np.array_equal(sim.limit_stiffness, k0)
