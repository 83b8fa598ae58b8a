"""
A sweep's specification: robot, controller, scenario and the parameters varied over its runs.

A spec is a mapping (a YAML file for ``liemb sweep SPEC.yaml``, or a dict)::

    robot: liemb_arm7              # a URDF or xacro file, or a shipped robot's name
    controller: computed_torque    # | gravity_compensation | impedance | FILE.py:NAME | MOD:NAME
    gains: {kp: 100.0, kd: 20.0}   # impedance: {K: [6 values], D: [6 values]}
    scenario:
      duration: 1.0                # simulated seconds of each run
      dt: 0.001                    # the Simulator's step [s]
      setpoint: ready              # 'ready' (scenario.ready_configuration) or nq values
      sine: {amplitude: 0.2, period: 2.0}   # optional: q_d(t) = setpoint + A sin(2 pi t / T)
      contact: false               # ground contact of the collision geometry (z = 0)
      max_error: 1.0               # a run whose tracking error passes this [rad, m] is lost
    vary:                          # one of grid, random, list
      grid: {payload: [0.0, 1.5, 3.0], friction_scale: [0.5, 1.0, 1.5]}
    seed: 0                        # the effort noise and random draws (per run: seed, index)
    trajectories: false            # also keep each run's (t, q, q_d, tau) in its own file
    runs_per_task: null            # runs in one Dask task (None: about a second of work)

``vary`` takes ``grid`` (every combination, the last name varying fastest), ``random``
(``{n: N, seed: S, ranges: {name: [lo, hi]}}``: N uniform draws) or ``list`` (a list of
``{name: value}``).  The names (:data:`PARAMETERS`) are scalars, one Parquet column each.
:func:`runs` expands the spec into the runs' parameters, in a fixed order: run ``i`` is
the same run in every process and on every restart.
"""
import hashlib
import itertools
import json

import numpy as np

#: the varied parameters, with what each does and its default (the value when not varied)
PARAMETERS = {
    'payload': ('point mass [kg] at the controlled link (the tip) of the plant only; the '
                'controller keeps the nominal model', 0.0),
    'friction_scale': ("the plant's Coulomb friction: the URDF's times this", 1.0),
    'damping_scale': ("the plant's viscous damping: the URDF's times this", 1.0),
    'armature': ('rotor inertia [kg m^2 or kg] added to every joint of the plant', 0.0),
    'kp': ('joint-space proportional gain [1/s^2 for computed torque, N m/rad for gravity '
           'compensation]; None: gains.kp', None),
    'kd': ('joint-space derivative gain; None: gains.kd', None),
    'gain_scale': ('every gain of the law times this (impedance: K and D)', 1.0),
    'q0_offset': ('initial joint positions: the setpoint plus this on every joint [rad, m]',
                  0.0),
    'effort_noise': ('standard deviation [N m, N] of Gaussian noise added to every torque '
                     'command, seeded per run', 0.0),
}
CONTROLLERS = ('computed_torque', 'gravity_compensation', 'impedance')
SCENARIO = {'duration': 1.0, 'dt': 1e-3, 'setpoint': 'ready', 'sine': None, 'contact': False,
            'max_error': 1.0}
TOP = ('robot', 'controller', 'gains', 'scenario', 'vary', 'seed', 'trajectories',
       'runs_per_task', 'link')


class SpecError(ValueError):
    """A sweep or dataset spec that cannot run (the message names the field)."""


def load_spec(path):
    """Read a YAML spec file and return it checked (:func:`check_spec`)."""
    import yaml
    try:
        with open(path, encoding='utf-8') as f:
            spec = yaml.safe_load(f)
    except OSError as exc:
        raise SpecError(f'cannot read {path}: {exc.strerror}') from None
    except yaml.YAMLError as exc:
        raise SpecError(f'{path} is not YAML: {" ".join(str(exc).split())}') from None
    return check_spec(spec)


def check_spec(spec):
    """
    Return ``spec`` with its defaults filled in, or raise :class:`SpecError` naming the field.

    Checks the names and kinds of every field; the robot itself is loaded by the runner.
    """
    if not isinstance(spec, dict):
        raise SpecError('a sweep spec is a mapping (robot, controller, scenario, vary, ...)')
    unknown = sorted(set(spec) - set(TOP))
    if unknown:
        raise SpecError(f"unknown field(s) {', '.join(unknown)}; a spec has {', '.join(TOP)}")
    if not isinstance(spec.get('robot'), str):
        raise SpecError('robot: a URDF file or a shipped robot name is required')
    out = {'robot': spec['robot'], 'controller': spec.get('controller', 'computed_torque'),
           'gains': dict(spec.get('gains') or {}), 'seed': int(spec.get('seed', 0)),
           'trajectories': bool(spec.get('trajectories', False)),
           'runs_per_task': spec.get('runs_per_task'), 'link': spec.get('link')}
    c = out['controller']
    if not isinstance(c, str) or (c not in CONTROLLERS and ':' not in c):
        raise SpecError(f'controller: one of {", ".join(CONTROLLERS)} or FILE.py:FUNCTION / '
                        f'MODULE:FUNCTION, got {c!r}')
    scenario = dict(SCENARIO)
    given = spec.get('scenario') or {}
    bad = sorted(set(given) - set(SCENARIO))
    if bad:
        raise SpecError(f"scenario: unknown field(s) {', '.join(bad)}; it has "
                        f"{', '.join(SCENARIO)}")
    scenario.update(given)
    for name in ('duration', 'dt', 'max_error'):
        v = scenario[name]
        if not (isinstance(v, (int, float)) and np.isfinite(v) and v > 0):
            raise SpecError(f'scenario.{name} must be a positive number, got {v!r}')
    if scenario['sine'] is not None and not (
            isinstance(scenario['sine'], dict) and set(scenario['sine']) <= {'amplitude',
                                                                             'period'}):
        raise SpecError('scenario.sine: {amplitude: A, period: T}')
    out['scenario'] = scenario
    if out['runs_per_task'] is not None and int(out['runs_per_task']) < 1:
        raise SpecError('runs_per_task must be at least 1')
    out['vary'] = _check_vary(spec.get('vary') or {'list': [{}]})
    return out


def _check_vary(vary):
    if not isinstance(vary, dict) or len(vary) != 1 or next(iter(vary)) not in (
            'grid', 'random', 'list'):
        raise SpecError('vary: exactly one of grid, random, list')
    kind, body = next(iter(vary.items()))
    if kind == 'grid':
        if not isinstance(body, dict) or not all(isinstance(v, list) and v
                                                 for v in body.values()):
            raise SpecError('vary.grid: {name: [values, ...]}')
        names = list(body)
    elif kind == 'random':
        if not isinstance(body, dict) or not isinstance(body.get('ranges'), dict):
            raise SpecError('vary.random: {n: N, seed: S, ranges: {name: [lo, hi]}}')
        names = list(body['ranges'])
        if int(body.get('n', 0)) < 1 or any(
                not (isinstance(r, list) and len(r) == 2) for r in body['ranges'].values()):
            raise SpecError('vary.random: n >= 1 and each range [lo, hi]')
    else:
        if not isinstance(body, list) or not all(isinstance(r, dict) for r in body):
            raise SpecError('vary.list: a list of {name: value}')
        names = sorted({k for r in body for k in r})
    unknown = [n for n in names if n not in PARAMETERS]
    if unknown:
        raise SpecError(f"vary: unknown parameter(s) {', '.join(unknown)}; the parameters: "
                        f"{', '.join(PARAMETERS)}")
    return {kind: body}


def varied_names(spec):
    """Return the names of the varied parameters, in their column order."""
    kind, body = next(iter(spec['vary'].items()))
    if kind == 'grid':
        return list(body)
    if kind == 'random':
        return list(body['ranges'])
    return sorted({k for r in body for k in r})


def runs(spec):
    """
    Return the varied parameters of every run: a list of dicts, run ``i`` at index ``i``.

    Grid: ``itertools.product`` order; random: ``numpy.random.default_rng(seed)`` draws,
    one row per run, columns in ``ranges`` order; list: as given (missing names: default).
    """
    kind, body = next(iter(spec['vary'].items()))
    names = varied_names(spec)
    if kind == 'grid':
        rows = [dict(zip(names, combo)) for combo in itertools.product(*body.values())]
    elif kind == 'random':
        rng = np.random.default_rng(int(body.get('seed', 0)))
        lo, hi = np.array([body['ranges'][n] for n in names], dtype=float).T
        draws = rng.uniform(lo, hi, size=(int(body['n']), len(names)))
        rows = [dict(zip(names, map(float, d))) for d in draws]
    else:
        rows = [{n: r.get(n, PARAMETERS[n][1]) for n in names} for r in body]
    return [{n: (None if v is None else float(v)) for n, v in r.items()} for r in rows]


def spec_hash(spec, robot_text):
    """Return 16 hex digits identifying a checked spec and its robot's URDF text."""
    h = hashlib.sha256(json.dumps(spec, sort_keys=True).encode())
    h.update(robot_text.encode())
    return h.hexdigest()[:16]
