"""
The Simulator's one-stage step, ``integrator='semi_implicit_euler'``, against independent facts.

* Order 1: the joint positions after 0.2 s at three step sizes against an RK4 run at a
  hundredth of the smallest, on the shipped arm with damping and friction (fixed base,
  the compiled step) and on solo12 flying free (floating base, the Python path on SE(3)):
  the error halves with the step (fitted order within 0.85-1.15).
* Stiff damping: a damping rate ``dt · λ_max(M⁻¹D)`` in the thousands, where the explicit
  RK4 step diverges, is stepped stably, and the velocity is the overdamped limit
  ``q̇ = D⁻¹(τ - g(q))`` (the implicit Euler step's fixed point, to the inertia's share).
* The same step as MuJoCo's Euler integrator (implicit damping, armature), bit for bit
  within round-off: ``test_mujoco_oracle.py``; the compiled step equal to the Python path
  to the last bit (every integrator, limits, a wrench): ``test_sim_compiled.py``.
"""
import warnings

import numpy as np
import pytest

from conftest import erd_path
import liemb_ros as lm
from liemb_ros.core import resources
from liemb_ros.sim.simulator import SimulationError, Simulator


@pytest.fixture(scope='module')
def arm():
    return lm.load_urdf(resources.robot_path('liemb_arm7'))


def _order(errors, steps):
    """Least-squares slope of log(error) against log(step)."""
    return float(np.polyfit(np.log(steps), np.log(errors), 1)[0])


def _run(model, integrator, dt, T, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        sim = Simulator(model, dt=dt, integrator=integrator, **kwargs)
    sim.step(kwargs.pop('tau', None), n=int(round(T / dt)))
    return sim


def test_first_order_fixed_base(arm):
    kwargs = dict(q0=np.full(arm.nq, 0.4), damping=0.3, friction=0.05, friction_velocity=0.5,
                  limits=False, armature=0.01)
    T, steps = 0.2, np.array([2e-3, 1e-3, 5e-4])
    ref = _run(arm, 'rk4', 5e-6, T, **kwargs).q
    errors = [np.max(np.abs(_run(arm, 'semi_implicit_euler', h, T, **kwargs).q - ref))
              for h in steps]
    p = _order(errors, steps)
    print(f'\nsemi-implicit Euler, arm: errors {errors}, order {p:.3f}')
    assert 0.85 <= p <= 1.15
    assert errors[-1] < 1e-3          # and small: the same motion


def test_first_order_floating_base():
    model = lm.load_urdf(erd_path('solo12'), floating_base=True)
    model_g0 = model
    kwargs = dict(q0=np.tile([0.1, 0.6, -1.2], 4), qd0=0.5 * np.sin(np.arange(model.nv)),
                  limits=False, damping=0.0, friction=0.0, armature=0.001)
    T, steps = 0.1, np.array([2e-3, 1e-3, 5e-4])
    ref = _run(model_g0, 'rk4', 1e-5, T, **kwargs)
    errs = []
    for h in steps:
        sim = _run(model_g0, 'semi_implicit_euler', h, T, **kwargs)
        R = sim.base_pose[:3, :3]
        assert np.allclose(R.T @ R, np.eye(3), atol=1e-12)   # the base stays on SE(3)
        errs.append(max(np.max(np.abs(sim.q - ref.q)),
                        np.max(np.abs(sim.base_pose - ref.base_pose))))
    p = _order(errs, steps)
    print(f'\nsemi-implicit Euler, solo12 in the air: errors {errs}, order {p:.3f}')
    assert 0.85 <= p <= 1.15


def test_stiff_damping_is_stable_and_overdamped(arm):
    D = 2000.0
    kwargs = dict(q0=np.full(arm.nq, 0.4), damping=D, friction=0.0, limits=False,
                  armature=0.0, effort_limits=False)
    with pytest.raises(SimulationError):       # the explicit tableau at this rate
        _run(arm, 'rk4', 1e-3, 0.5, damping_method='explicit', **kwargs)
    sim = _run(arm, 'semi_implicit_euler', 1e-3, 0.5, **kwargs)
    assert sim.damping_stiffness > 1000 * 2.785   # far past RK4's stability limit
    assert sim.damping_method == 'explicit'       # no ROS2 step: the step itself is implicit
    creep = -lm.gravity_torques(arm, sim.q) / D   # q̇ = D⁻¹(τ - g), τ = 0
    np.testing.assert_allclose(sim.qd, creep, rtol=0.02, atol=1e-6)


def test_absolute_coordinates_refused(arm):
    with pytest.raises(ValueError, match='joint coordinates'):
        Simulator(arm, integrator='semi_implicit_euler', coordinates='absolute')
