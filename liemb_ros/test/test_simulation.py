"""The Simulator in joint coordinates: against scipy, conservation laws, order, divergence."""
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import liemb_ros as lm
from liemb_ros.core import resources
from liemb_ros.core.dynamics import forward_dynamics
from liemb_ros.sim.simulator import SimulationError, Simulator, mechanical_energy, momentum


#: the ideal rigid-body robot these tests integrate: no friction, limits or effort limits
#: (those are tested in test_sim_realism.py)
IDEAL = dict(friction=0.0, limits=False, effort_limits=False)


@pytest.fixture(scope='module')
def arm():
    return lm.load_urdf(resources.robot_path('liemb_arm7'))


def test_matches_scipy_on_the_arm(arm):
    """RK4 on R^k against scipy's adaptive RK45 at tight tolerance (independent integrator)."""
    q0 = np.array([0.0, 0.4, 0.0, -1.2, 0.0, 1.0, 0.0])
    tau = np.array([1.0, -2.0, 0.5, 1.0, 0.1, -0.1, 0.05])
    D = arm.damping

    def f(t, x):
        q, qd = x[:7], x[7:]
        return np.concatenate([qd, forward_dynamics(arm, q, qd, tau - D * qd)])
    ref = solve_ivp(f, (0, 0.5), np.concatenate([q0, np.zeros(7)]), rtol=1e-11, atol=1e-12)
    sim = Simulator(arm, dt=1e-3, q0=q0, **IDEAL)
    sim.step(tau, n=500)
    np.testing.assert_allclose(sim.q, ref.y[:7, -1], atol=1e-8)
    np.testing.assert_allclose(sim.qd, ref.y[7:, -1], atol=1e-7)


def test_energy_balance_converges_at_order_four(arm):
    """No damping, no torque: E is conserved up to the scheme's error, which falls like h^4."""
    errs = []
    for dt in (8e-3, 4e-3, 2e-3):
        sim = Simulator(arm, dt=dt, damping=0.0, q0=np.array([0, 0.4, 0, -1.2, 0, 1.0, 0]),
                        **IDEAL)
        sim.step(n=int(round(0.4 / dt)))
        errs.append(abs(sim.diagnostics()['energy_balance_error']))
    rates = np.log2(np.array(errs[:-1]) / np.array(errs[1:]))
    assert np.all(rates > 3.5), (errs, rates)


def test_work_of_torques_and_damping_is_accounted(arm):
    """E - E0 - W (W: work of torques and damping, integrated with the state) -> 0 like h^4."""
    errs = []
    for dt in (4e-3, 2e-3, 1e-3):
        sim = Simulator(arm, dt=dt, damping=0.3, **IDEAL)
        sim.step(lambda t: 5.0 * np.sin(3.0 * t) * np.ones(7), n=int(round(0.3 / dt)))
        d = sim.diagnostics()
        assert abs(d['work']) > 0.1
        errs.append(abs(d['energy_balance_error']))
    assert errs[0] / errs[1] > 10 and errs[1] / errs[2] > 10, errs


def test_floating_base_on_se3_conserves_momentum_without_gravity(rng):
    """Internal torques leave the total momentum alone: its drift is RK4 error (order 4)."""
    model = lm.load_urdf(resources.robot_path('liemb_arm7'), floating_base=True,
                         gravity=(0.0, 0.0, 0.0))
    qd0 = np.concatenate([rng.normal(size=6), rng.normal(size=model.nq)])
    C0 = np.eye(4)
    C0[:3, 3] = [0.1, -0.2, 0.3]
    drift = []
    for dt in (4e-3, 2e-3, 1e-3):
        sim = Simulator(model, dt=dt, damping=0.0, qd0=qd0, base_pose=C0, **IDEAL)
        h0 = momentum(model, sim.q, sim.qd, sim.base_pose)
        sim.step(lambda t: np.sin(5 * t) * np.ones(model.nq), n=int(round(0.4 / dt)))
        R = sim.base_pose[:3, :3]
        np.testing.assert_allclose(R.T @ R, np.eye(3), atol=1e-13)  # stays on SE(3)
        d = sim.diagnostics()
        drift.append(np.abs(d['momentum'] - h0).max())
        assert abs(d['energy_balance_error']) < 1e-3 * (1 + abs(d['work']))
    assert drift[0] / drift[1] > 12 and drift[1] / drift[2] > 12, drift
    assert drift[2] < 1e-5 * (1 + np.abs(h0).max())


def test_energy_terms_against_a_closed_form_pendulum():
    xml = """<robot name="p"><link name="base"/><link name="bob"><inertial><origin xyz="0 0 -0.5"/>
    <mass value="2"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/>
    </inertial></link><joint name="j" type="continuous"><parent link="base"/><child link="bob"/>
    <axis xyz="0 1 0"/></joint></robot>"""
    model = lm.load_urdf(xml)
    q, qd = np.array([0.3]), np.array([1.5])
    T, U = mechanical_energy(model, q, qd)
    assert T == pytest.approx(0.5 * (0.01 + 2 * 0.25) * 1.5 ** 2, rel=1e-12)
    assert U == pytest.approx(-2 * 9.81 * 0.5 * np.cos(0.3), rel=1e-12)


def test_divergence_stops_with_a_clear_error(arm):
    sim = Simulator(arm, dt=0.2, damping=0.0, q0=np.array([0, 0.4, 0, -1.2, 0, 1.0, 0]))
    with pytest.raises(SimulationError, match='diverge|non-finite|beyond the plausible') as err:
        sim.step(np.full(7, 100.0), n=200)
    assert 'acting now' in str(err.value) and 'the applied joint torques' in str(err.value)
    assert np.all(np.isfinite(sim.q))  # the last good state is kept


@pytest.mark.parametrize('kwargs, words', [
    ({'integrator': 'rk5'}, 'unknown integrator'), ({'coordinates': 'polar'}, 'coordinates'),
    ({'dt': 0.0}, 'dt'), ({'q0': np.zeros(3)}, 'q0'), ({'damping': -1.0}, 'damping'),
    ({'base_pose': np.eye(4)}, 'fixed base')])
def test_bad_arguments(arm, kwargs, words):
    with pytest.raises(ValueError, match=words):
        Simulator(arm, **kwargs)


def test_bad_torque(arm):
    sim = Simulator(arm)
    with pytest.raises(ValueError, match='tau'):
        sim.step(np.full(7, np.nan))
    with pytest.raises(ValueError, match='tau'):
        sim.step(np.zeros(6))


@pytest.mark.parametrize('robot, update', [('liemb_arm7', 'tailored'),
                                           ('planar_double_pendulum', 'so3r3'),
                                           ('planar_double_pendulum', 'se3')])
def test_absolute_and_joint_coordinates_agree(robot, update):
    """
    The same URDF robot in joint and in absolute coordinates: same link trajectories.

    Both are 4th-order discretisations of the same motion, so they agree to the
    integrator's accuracy: the gap shrinks like h^4 when the step is halved.
    """
    model = lm.load_urdf(resources.robot_path(robot))
    q0 = np.array([0, 0.4, 0, -1.2, 0, 1.0, 0])[:model.nq]
    tau = lambda t: 0.05 * np.cos(2 * t) * np.ones(model.nq)  # noqa: E731
    gaps = []
    for dt in (4e-3, 2e-3):
        sims = [Simulator(model, dt=dt, q0=q0, damping=0.0, coordinates=c, update=update,
                          **IDEAL)
                for c in ('joint', 'absolute')]
        for sim in sims:
            sim.step(tau, n=int(round(0.3 / dt)))
        Cj = lm.forward_kinematics(model, sims[0].q)
        Ca = lm.forward_kinematics(model, sims[1].q)
        gaps.append(max(np.abs(Ca - Cj).max(), np.abs(sims[1].qd - sims[0].qd).max()))
        d = sims[1].diagnostics()
        assert d['constraint_violation'].shape == (model.nq,)
        assert np.max(d['constraint_violation']) < 1e-5
    assert gaps[1] < 1e-5 and (gaps[1] < gaps[0] / 8 or gaps[1] < 1e-10), gaps


def test_tailored_update_keeps_ground_joints_exact():
    """A body jointed to the ground on SE(3) keeps its lower pair to round-off ([MT14])."""
    model = lm.load_urdf(resources.robot_path('liemb_arm7'))
    sim = Simulator(model, dt=5e-3, q0=np.array([0, 0.4, 0, -1.2, 0, 1.0, 0]),
                    coordinates='absolute', update='tailored', damping=0.0)
    sim.step(n=100)
    d = sim.diagnostics()
    assert d['constraint_violation'][0] < 1e-12
    assert d['orientation_violation'][0] < 1e-12


@pytest.mark.parametrize('coordinates', ['joint', 'absolute'])
def test_warm_up_leaves_no_trace(arm, coordinates):
    """
    warm_up (the simulation node calls it at start) leaves no trace.

    State, time and counters are as before, and the run after it is bit for bit the run
    without it.
    """
    q0 = np.array([0.0, 0.4, 0.0, -1.2, 0.0, 1.0, 0.0])
    tau = np.array([1.0, -2.0, 0.5, 1.0, 0.1, -0.1, 0.05])
    ref = Simulator(arm, dt=1e-3, q0=q0, coordinates=coordinates)
    ref.step(tau, n=3)
    sim = Simulator(arm, dt=1e-3, q0=q0, coordinates=coordinates)
    sim.step(tau, n=1)
    before = (sim.t, sim.steps, sim.wall_time, sim.q.copy(), sim.qd.copy(), sim.work)
    assert sim.warm_up() >= 0.0
    assert (sim.t, sim.steps, sim.wall_time, sim.work) == before[:3] + before[5:]
    np.testing.assert_array_equal(sim.q, before[3])
    np.testing.assert_array_equal(sim.qd, before[4])
    sim.step(tau, n=2)
    np.testing.assert_array_equal(sim.q, ref.q)
    np.testing.assert_array_equal(sim.qd, ref.qd)
    assert sim.work == ref.work
