"""
The compiled explicit step (``sim._explicit``) against the Python path, bit for bit.

Each scenario runs twice from the same start: once as the Simulator steps it (the compiled
steps wherever they apply), once with the compiled path switched off (``_compiled =
None``: every step through ``_JointCoordinates`` and the Stepper); states, work, time,
step counts and the limits' impedance must be equal to the last bit, and so must the
errors of a run that diverges.  The scenarios engage damping, Coulomb friction, the
joint limits (with implicit and with explicit limit steps), an armature, an external
wrench for part of the run, and a torque held or given as a function of time, for every
explicit tableau, on the shipped arm and on the Panda.
"""
import warnings

import numpy as np
import pytest
from numba import njit

from conftest import erd_path
import liemb_ros as lm
from liemb_ros.core import resources
from liemb_ros.sim.simulator import INTEGRATORS, SimulationError, Simulator

ROBOTS = {'liemb_arm7': resources.robot_path('liemb_arm7'), 'panda': erd_path('panda')}


@pytest.fixture(scope='module', params=sorted(ROBOTS))
def model(request):
    return lm.load_urdf(ROBOTS[request.param])


def _simulator(model, compiled, **kwargs):
    """Return a Simulator started near its upper limits; ``compiled`` False: Python only."""
    span = np.where(np.isfinite(model.upper - model.lower), model.upper - model.lower, 1.0)
    q0 = np.where(np.isfinite(model.upper), model.upper - 0.1 * span, 0.3)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        sim = Simulator(model, q0=q0, **kwargs)
    if compiled:
        run, sim.compiled_steps = sim._compiled.run, 0

        def counted(*args):
            k, t = run(*args)
            sim.compiled_steps += k
            return k, t
        sim._compiled.run = counted
    else:
        sim._compiled = None
    return sim


def _scenario(sim):
    """Push every joint into its upper limit, with a wrench for a while, then let go."""
    m = sim.model
    push = np.where(np.isfinite(m.effort_limit) & (m.effort_limit > 0), 0.1 * m.effort_limit,
                    1.0)
    sim.step(push, n=250)
    sim.set_wrench(m.link_names[-1], np.array([0.1, 0.0, 0.2, 2.0, -1.0, 3.0]))
    sim.step(push, n=30)
    sim.clear_wrenches()
    sim.step(lambda t: -push * np.cos(5.0 * t), n=120)
    sim.step(None, n=333)
    return sim


def _record(sim):
    return (sim.q, sim.qd, sim.work, sim.t, sim.steps, sim.limit_stiffness,
            sim.limit_damping, sim.damping_method, sim.diagnostics()['energy'])


@njit(cache=True)
def _numba_dots(A, x, y):
    out = np.empty(A.shape[1])
    np.dot(A.T, x, out)
    return out, np.dot(x, y)


def _same_blas():
    """
    Whether numba's ``np.dot`` gives numpy's bits here (both call BLAS ``dgemv``/``ddot``).

    numba calls scipy's BLAS, numpy its own: two OpenBLAS builds that agree bit for bit
    on the machines this was written on.  Where they do not, the compiled step does the
    same operations in the same order but its sums come from another BLAS.
    """
    rng = np.random.default_rng(5)
    for n, k in ((7, 4), (9, 6), (13, 6), (7, 1)):
        A, x, y = rng.standard_normal((k, n)), rng.standard_normal(k), rng.standard_normal(k)
        mv, vv = _numba_dots(A, x, y)
        if not (np.array_equal(mv, A.T @ x) and vv == x @ y):
            return False
    return True


SAME_BLAS = _same_blas()


def _assert_same(a, b):
    """Equal to the last bit (where numba's and numpy's BLAS agree; else to round-off)."""
    if not SAME_BLAS:
        warnings.warn("numba's BLAS (scipy's OpenBLAS) and numpy's differ in the last bit here: "
                      'the compiled step is compared to round-off')
    for x, y in zip(_record(a), _record(b)):
        if SAME_BLAS or not isinstance(x, (float, np.ndarray)):
            assert np.array_equal(x, y), (x, y)
        else:
            np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-15)
    assert a.wrench_work == b.wrench_work or not SAME_BLAS


@pytest.mark.parametrize('integrator', INTEGRATORS)
@pytest.mark.parametrize('method', ['explicit', 'auto'])
def test_compiled_steps_are_the_python_steps(model, integrator, method):
    """Damping, friction, limits engaged, armature, a wrench: equal states to the last bit."""
    kwargs = dict(integrator=integrator, damping=0.05, friction=0.05, friction_velocity=0.1,
                  armature=0.02, damping_method=method, limit_time_constant=0.05)
    fast = _scenario(_simulator(model, True, **kwargs))
    slow = _scenario(_simulator(model, False, **kwargs))
    # 'auto': a step from within a limit is a ROS2 step, in Python
    assert fast.compiled_steps > (600 if method == 'explicit' else 0)
    assert np.any(fast.diagnostics()['in_limit']) or np.any(fast.limit_stiffness > 0)
    _assert_same(fast, slow)


def test_divergence_is_reported_alike(model):
    """A run that explodes raises the same error and keeps the same last good state."""
    kwargs = dict(damping=500.0, damping_method='explicit', limits=False, armature=0.01)
    errors = []
    for compiled in (True, False):
        sim = _simulator(model, compiled, **kwargs)
        with pytest.raises(SimulationError) as err:
            sim.step(np.ones(model.nq), n=500)
        errors.append((str(err.value), sim))
    assert errors[0][0] == errors[1][0]
    _assert_same(errors[0][1], errors[1][1])
