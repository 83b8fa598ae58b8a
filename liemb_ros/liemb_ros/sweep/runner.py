"""
One run of a sweep: a controller drives the simulated robot through the scenario.

Each run is an in-process :class:`~liemb_ros.sim.Simulator` loop (no ROS): at every step
of ``dt`` the law reads the state ``(q, q̇)`` and the reference ``(q_d, q̇_d, q̈_d)`` at
the step's start and its torque is held over the step (zero-order hold, as a 1 kHz
controller).  The *plant* (the simulated robot) carries the run's payload, friction,
damping and armature; the *controller* keeps the nominal model: the sweep asks how a law
tuned on the URDF holds when the robot is not what the URDF says.

The metrics of a run (:data:`METRICS`), over the steps it took: tracking error ``|q_d -
q|`` over joints and steps (RMS and largest) [rad, m], the largest applied torque (after
the effort limits) [N m, N], the time during which a command exceeded an effort limit [s],
the energy balance error ``|E - E0 - W|`` of the Simulator's books at the end [J], and a
``status``: ``ok``, ``diverged`` (the Simulator stopped: its reason) or ``lost`` (the
tracking error passed ``scenario.max_error``).  A run that fails is a row, not an error.
Runs are deterministic: the effort noise of run ``i`` comes from
``numpy.random.default_rng((seed, i))``, so a run gives the same numbers in any process.
"""
import importlib
import importlib.util
import math
import os
import time

import numpy as np

from ..control.laws import CartesianImpedance, ComputedTorque
from ..core.dynamics import gravity_torques
from ..core.kinematics import link_pose
from ..core.model import load_urdf_string
from ..core.model.inertia import spatial_inertia, transform_inertia
from ..sim import ContactModel, SimulationError, Simulator
from ..sim.scenario import ready_configuration, sample_tip
from .spec import CONTROLLERS, PARAMETERS, SpecError

#: the metrics of a run, in their column order (floats)
METRICS = ('tracking_rms', 'tracking_max', 'peak_torque', 'saturation_time', 'energy_error',
           't_end')
#: the statuses of a run
STATUSES = ('ok', 'diverged', 'lost')

_ROBOTS = {}   # URDF text -> Model: each process parses a robot once
_PREPARED = set()   # (URDF text, controller, scenario) this process has prepared


def robot_model(robot_text):
    """Return the Model of a URDF text, parsed once per process (a worker's runs share it)."""
    model = _ROBOTS.get(robot_text)
    if model is None:
        model = _ROBOTS[robot_text] = load_urdf_string(robot_text, source='sweep')
    return model


def prepare(spec, robot_text):
    """
    Load the robot and the kernels of a run in this process; return the seconds taken.

    A Dask worker calls it once when it starts (:class:`~.engine.PrepareWorker`): the
    kernels come from numba's on-disk cache (a load, not a compile) and the worker's
    first task runs at full speed.  A user's law is not called here (its first call
    belongs to a task, where its errors are reported).  A process that has prepared the
    same robot, controller and scenario returns at once (0.0): every sweep registers the
    plugin again, and a worker that ran the last sweep has nothing to load.
    """
    start = time.perf_counter()
    key = (robot_text, spec['controller'], repr(sorted(spec['scenario'].items())))
    if key in _PREPARED:
        return 0.0
    nominal, link, ref, sim = _setup(spec, robot_text, {})
    sim.warm_up()
    if spec['controller'] in CONTROLLERS:
        q_d, qd_d, qdd_d = ref(0.0)
        _checked_law(spec, nominal, link, {})(0.0, sim.q, sim.qd, q_d, qd_d, qdd_d)
    _PREPARED.add(key)
    return time.perf_counter() - start


def run_chunk(spec, robot_text, items):
    """Run ``items`` = ``[(index, params), ...]``; return ``[(row, trajectory), ...]``."""
    return [run_one(spec, robot_text, i, params) for i, params in items]


def _value(params, name):
    v = params.get(name)
    return PARAMETERS[name][1] if v is None else v


def plant_model(model, link, payload):
    """Return ``model`` with a point mass ``payload`` [kg] at ``link``'s origin (or itself)."""
    if payload == 0.0:
        return model
    li = model.link_index(link)
    body = model.link_body[li]
    if body < 0:
        raise SpecError(f'payload: link {link!r} is fixed to the base')
    if payload < 0:
        raise SpecError(f'payload must be >= 0 kg, got {payload}')
    inertia = np.array(model.inertia)
    inertia[body] += transform_inertia(spatial_inertia(payload, np.eye(4), np.zeros((3, 3))),
                                       model.link_offset[li])
    return model.replace(inertia=inertia)


class Reference:
    """
    The desired motion ``q_d(t) = s + A sin(2π t / T)`` with its two derivatives.

    ``s`` (nq,) the setpoint; ``amplitude`` A [rad, m] (a scalar or nq values; 0: hold
    ``s``), ``period`` T [s].
    """

    def __init__(self, setpoint, amplitude=0.0, period=1.0):
        self.s = np.array(setpoint, dtype=float)
        self.a = np.broadcast_to(np.asarray(amplitude, dtype=float), self.s.shape).copy()
        self.w = 2.0 * math.pi / float(period)

    def __call__(self, t):
        """Return ``(q_d, q̇_d, q̈_d)`` at time ``t`` [s]."""
        s, c = math.sin(self.w * t), math.cos(self.w * t)
        return (self.s + self.a * s, self.a * (self.w * c), self.a * (-self.w * self.w * s))


def user_function(name):
    """
    Return the function ``FILE.py:NAME`` or ``MODULE:NAME`` names.

    A user's law is ``f(model, t, q, qd, q_d, qd_d, qdd_d, params) -> tau`` (nq,): the
    nominal model, time [s], state, reference and the run's varied parameters (a dict).
    """
    where, _, attr = name.rpartition(':')
    if where.endswith('.py'):
        if not os.path.isfile(where):
            raise SpecError(f'controller: no file {where}')
        spec = importlib.util.spec_from_file_location(
            '_liemb_sweep_' + os.path.basename(where)[:-3], where)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(where)
        except ImportError as exc:
            raise SpecError(f'controller: cannot import {where}: {exc}') from None
    try:
        return getattr(module, attr)
    except AttributeError:
        raise SpecError(f'controller: {where} has no {attr}') from None


def _law(spec, model, link, params):
    """Return ``law(t, q, qd, q_d, qd_d, qdd_d) -> tau`` for the spec's controller."""
    gains, name = spec['gains'], spec['controller']
    scale = _value(params, 'gain_scale')
    kp = scale * np.asarray(gains.get('kp', 100.0) if params.get('kp') is None
                            else params['kp'], dtype=float)
    kd = scale * np.asarray(gains.get('kd', 20.0) if params.get('kd') is None
                            else params['kd'], dtype=float)
    if name == 'computed_torque':
        law = ComputedTorque(model, kp, kd, friction=bool(gains.get('friction', True)))
        return lambda t, q, qd, q_d, qd_d, qdd_d: law(q, qd, q_d, qd_d, qdd_d)
    if name == 'gravity_compensation':
        return lambda t, q, qd, q_d, qd_d, qdd_d: (gravity_torques(model, q) + kp * (q_d - q)
                                                   + kd * (qd_d - qd))
    if name == 'impedance':
        K = scale * np.asarray(gains.get('K', [50.0] * 3 + [500.0] * 3), dtype=float)
        D = scale * np.asarray(gains.get('D', [5.0] * 3 + [50.0] * 3), dtype=float)
        law = CartesianImpedance(model, link, K, D, k_null=float(gains.get('k_null', 0.0)),
                                 d_null=float(gains.get('d_null', 0.0)))
        return lambda t, q, qd, q_d, qd_d, qdd_d: law(q, qd, link_pose(model, q_d, link))
    f = user_function(name)
    return lambda t, q, qd, q_d, qd_d, qdd_d: np.asarray(
        f(model, t, q, qd, q_d, qd_d, qdd_d, params), dtype=float)


def _reference(spec, nominal):
    """Return the link and the :class:`Reference` of the spec's scenario for ``nominal``."""
    link = spec.get('link') or sample_tip(nominal)
    if link not in nominal.link_names:
        raise SpecError(f"link: {link!r} is not a link of {nominal.name!r} "
                        f"({', '.join(nominal.link_names)})")
    sc = spec['scenario']
    s = sc['setpoint']
    s = ready_configuration(nominal, link) if s == 'ready' else np.asarray(s, dtype=float)
    if s.shape != (nominal.nq,):
        raise SpecError(f'scenario.setpoint: {nominal.nq} values for {nominal.name!r}')
    sine = sc['sine'] or {}
    return link, Reference(s, sine.get('amplitude', 0.0), sine.get('period', 1.0))


def _checked_law(spec, nominal, link, params):
    """:func:`_law`, its ValueError (gains of the wrong shape, a floating base) a SpecError."""
    try:
        return _law(spec, nominal, link, params)
    except ValueError as exc:
        raise SpecError(f"controller {spec['controller']}: {exc}") from None


def check_run(spec, robot_text, params):
    """
    Raise :class:`~.spec.SpecError` if a run with ``params`` cannot start; else return.

    The client calls it before it sends any task: the robot, the link, the setpoint, the
    controller and its gains are checked here, once, instead of failing every task.
    """
    nominal = robot_model(robot_text)
    link, _ = _reference(spec, nominal)
    _checked_law(spec, nominal, link, params)


def _setup(spec, robot_text, params):
    """Return the nominal model, the link, the reference and the Simulator of a run."""
    nominal = robot_model(robot_text)
    link, ref = _reference(spec, nominal)
    sc = spec['scenario']
    plant = plant_model(nominal, link, _value(params, 'payload'))
    q_d, qd_d, _ = ref(0.0)
    armature = _value(params, 'armature')
    contact = ContactModel(plant, urdf=robot_text) if sc['contact'] else None
    sim = Simulator(plant, dt=sc['dt'], q0=q_d + _value(params, 'q0_offset'), qd0=qd_d,
                    friction=_value(params, 'friction_scale') * nominal.friction,
                    damping=_value(params, 'damping_scale') * nominal.damping,
                    armature='auto' if armature == 0.0 else armature, contact=contact)
    return nominal, link, ref, sim


def run_one(spec, robot_text, index, params):
    """
    Run one simulation; return ``(row, trajectory)``.

    ``row``: ``{'run': index, **params, 'status', 'reason', **metrics}`` (:data:`METRICS`);
    ``trajectory``: ``{'t', 'q', 'q_d', 'tau'}`` arrays (steps, nq) when the spec keeps
    trajectories, else None.  A run that diverges or loses track ends early with its
    reason; an invalid spec (an unknown link, a torque of the wrong shape) raises
    :class:`~.spec.SpecError`.
    """
    nominal, link, ref, sim = _setup(spec, robot_text, params)
    law = _checked_law(spec, nominal, link, params)
    sc = spec['scenario']
    n = int(round(sc['duration'] / sc['dt']))
    sigma = _value(params, 'effort_noise')
    rng = np.random.default_rng((spec['seed'], index))
    limit, dt, max_error = sim.effort_limit, sim.dt, sc['max_error']
    sq = e_max = peak = saturated = 0.0
    status, reason, steps = 'ok', '', 0
    keep = spec['trajectories']
    ts, qs, qds, taus = [], [], [], []
    for k in range(n):
        t, q, qd = sim.t, sim.q, sim.qd
        q_d, qd_d, qdd_d = ref(t)
        e = np.abs(q_d - q)
        sq += float(e @ e)
        e_max = max(e_max, float(e.max()))
        steps += 1
        if e_max > max_error:
            status, reason = 'lost', (f'tracking error {e_max:.4g} > max_error {max_error:g} '
                                      f'at t = {t:.6g} s')
            break
        tau = law(t, q, qd, q_d, qd_d, qdd_d)
        if tau.shape != (nominal.nq,):
            raise SpecError(f'controller returned shape {tau.shape}, expected ({nominal.nq},)')
        if sigma:
            tau = tau + rng.normal(0.0, sigma, nominal.nq)
        over = np.abs(tau) > limit
        if over.any():
            saturated += dt
        applied = np.where(over, np.sign(tau) * limit, tau)
        peak = max(peak, float(np.abs(applied).max()))
        if keep:
            ts.append(t)
            qs.append(q.copy())
            qds.append(q_d)
            taus.append(applied)
        try:
            sim.step(tau)
        except (SimulationError, ValueError) as exc:
            status, reason = 'diverged', str(exc)
            break
    row = {'run': int(index), **params, 'status': status, 'reason': reason,
           'tracking_rms': math.sqrt(sq / max(steps * nominal.nq, 1)), 'tracking_max': e_max,
           'peak_torque': peak, 'saturation_time': saturated,
           'energy_error': abs(float(sim.diagnostics()['energy_balance_error'])),
           't_end': float(sim.t)}
    trajectory = ({'t': np.array(ts), 'q': np.array(qs), 'q_d': np.array(qds),
                   'tau': np.array(taus)} if keep else None)
    return row, trajectory
