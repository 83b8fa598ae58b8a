"""
Running the examples: one run with its measures, and the convergence study over step sizes.

:func:`run_example` steps an example of :mod:`.examples` to its end (or until it diverges or
the step guard refuses a step) and records the largest constraint violations, the energy
drift and a sampled history; :func:`convergence` runs the paper's sequence of step sizes for
each update and fits the order of every quantity (:func:`fit_order`).
"""
import math
import sys
import time

import numpy as np

from ...sim.integrators import MAX_STEP_ANGLE, IntegrationError, StepSizeError
from .examples import EXAMPLES, build
from .flip_solutions import FLIP_OMEGA0, FLIP_REFERENCE_H, flip_reference

#: values above this fraction of a quantity's scale are outside the asymptotic range and
#: left out of the fitted order (e.g. a 1 cm pivot drift for 1 m, 1 % of the energy)
ASYMPTOTIC = 1e-2
#: a run whose energy drift exceeds this fraction of E0 when the step guard stops it is
#: reported as diverged (the explicit scheme had left the solution), not as refused
DIVERGED = 0.1


def run_example(name, update='se3', dt=None, t_end=None, every=1, progress=False,
                step_guard=True, bar=None):
    """
    Simulate an example; return a dict of results and the sampled history.

    Keys: ``claim`` (the paper's) and ``derived`` (our own numbers, :class:`.examples.Spec`),
    ``status`` ('ok', 'diverged' or 'refused' by the step guard) with ``message`` and
    ``t_stop``, ``max_violation`` {measure: max up to the stop}, ``energy0``,
    ``max_energy_drift``, ``max_step_angle`` (largest stage rotation [rad]), ``omega_end``
    (the first body's angular velocity at the end), ``run_time_s``, ``steps``, ``flips``
    (times where the body z axis crosses the horizontal plane, flip example), ``history``
    (t, measures, energy drift).  ``bar``: a tqdm bar to advance (one per step).
    """
    spec = EXAMPLES[name]
    ex = build(name, update)
    dt = spec.dt if dt is None else float(dt)
    t_end = spec.t_end if t_end is None else float(t_end)
    stepper = ex.stepper(MAX_STEP_ANGLE if step_guard else None)
    n = int(round(t_end / dt))
    y = ex.y0
    E0 = ex.energy_of(y)
    worst = {k: 0.0 for k in ex.measures}
    drift = angle = 0.0
    hist_t, hist_m, hist_e = [], [], []
    flips = []
    prev_pz = ex.rotation(y)[2, 2]
    own_bar = None
    if progress and bar is None:
        from tqdm import tqdm
        bar = own_bar = tqdm(total=n, mininterval=1.0, delay=1.0, file=sys.stderr,
                             leave=False)
    status, message, t = 'ok', '', 0.0
    t0 = time.perf_counter()
    for k in range(n):
        try:
            y = stepper.step(k * dt, y, dt)
        except StepSizeError as exc:
            angle = max(angle, stepper.last_angle)
            status, message = 'refused', f'{exc}; --no-step-guard runs on'
            if drift > DIVERGED * abs(E0):
                status = 'diverged'
                message = (f'diverging: |E - E0| = {drift / abs(E0):.3g} E0 when the step '
                           f'guard stopped it ({exc})')
            break
        except (IntegrationError, FloatingPointError, OverflowError) as exc:
            angle = max(angle, stepper.last_angle)
            status, message = 'diverged', str(exc)
            break
        t = (k + 1) * dt
        angle = max(angle, stepper.last_angle)
        vals = {key: f(t, y) for key, f in ex.measures.items()}
        for key, v in vals.items():
            worst[key] = max(worst[key], v)
        e = abs(ex.energy_of(y) - E0)
        drift = max(drift, e)
        pz = ex.rotation(y)[2, 2]
        if name == 'flip' and pz * prev_pz < 0:
            flips.append(t - dt * pz / (pz - prev_pz))
        prev_pz = pz
        if (k + 1) % every == 0:
            hist_t.append(t)
            hist_m.append([vals[key] for key in ex.measures])
            hist_e.append(e)
        if bar is not None:
            bar.update(1)
    run_time = time.perf_counter() - t0
    if own_bar is not None:
        own_bar.close()
    return {'example': name, 'paper': spec.section, 'claim': spec.claim,
            'derived': spec.derived, 'update': update,
            'dt': dt, 't_end': t_end, 'steps': n, 'status': status, 'message': message,
            't_stop': t, 'max_violation': worst, 'energy0': E0, 'max_energy_drift': drift,
            'has_energy': ex.energy is not None,
            'max_step_angle': angle, 'omega_end': ex.omega(y).tolist(),
            'run_time_s': run_time, 'flips': flips,
            'history': (np.array(hist_t),
                        np.array(hist_m).reshape(len(hist_t), len(ex.measures)),
                        np.array(hist_e), list(ex.measures))}


def fit_order(dts, values, floor, ceiling):
    """
    Return ``(order, used)``: least-squares slope of log(value) over log(dt).

    ``dts`` decreasing.  The fit starts at the first value below ``ceiling`` (inside the
    asymptotic range) and takes the following values while they are finite, above
    ``floor`` (round-off) and decreasing (a value that no longer decreases has reached the
    floor); ``used`` are their indices; ``order`` is ``None`` with fewer than two.
    """
    used = []
    for i, v in enumerate(values):
        ok = v is not None and math.isfinite(v) and floor < v < ceiling
        if ok and (not used or v < values[used[-1]]):
            used.append(i)
        elif used:
            break
    if len(used) < 2:
        return None, used
    x = np.log([dts[i] for i in used])
    z = np.log([values[i] for i in used])
    return float(np.polyfit(x, z, 1)[0]), used


def convergence(name, updates=None, dts=None, t_end=None, step_guard=True, progress=False):
    """
    Run ``name`` for every step size and update; return the convergence study (a dict).

    ``dts`` default: the paper's sequence (:attr:`Spec.dts`), ``updates``: the example's.
    Per update: ``runs`` (per step size: status, message, t_stop, run time) and
    ``quantities`` {name: ``values`` (per step size; ``None`` where the run did not reach
    ``t_end``), ``order`` (:func:`fit_order`), ``used``, ``roundoff`` (every value at or
    below ``floor``: the paper's exactness), ``level`` (the largest value), ``floor``}.
    Quantities: the maximum over the run of every measure and of the energy drift; for the
    flip also the error of ``Omega(t_end)`` against :func:`flip_reference`.
    """
    spec = EXAMPLES[name]
    dts = tuple(spec.dts if dts is None else (float(d) for d in dts))
    updates = tuple(spec.updates if updates is None else updates)
    t_end = spec.t_end if t_end is None else float(t_end)
    ref = None
    if name == 'flip':
        ref, spread = flip_reference(t_end)
    bar = None
    if progress:
        from tqdm import tqdm
        total = len(updates) * sum(int(round(t_end / d)) for d in dts)
        bar = tqdm(total=total, mininterval=1.0, delay=1.0, file=sys.stderr, leave=False,
                   desc=f'{name} convergence')
    out = {'example': name, 'paper': spec.section, 'claim': spec.claim,
           'derived': spec.derived, 't_end': t_end,
           'dts': list(dts), 'dts_source': spec.dts_source if dts == spec.dts else 'user',
           'step_guard': step_guard, 'updates': {}}
    if ref is not None:
        out['omega_reference'] = {'h': FLIP_REFERENCE_H, 'omega': ref.tolist(),
                                  'roundoff_spread': spread}
    for update in updates:
        runs, table = [], {}
        scales = {}
        for dt in dts:
            res = run_example(name, update, dt, t_end, every=10 ** 9, step_guard=step_guard,
                              bar=bar)
            if bar is not None:
                bar.update(res['steps'] - int(round(res['t_stop'] / dt)))
            ok = res['status'] == 'ok'
            runs.append({'dt': dt, 'status': res['status'], 'message': res['message'],
                         't_stop': res['t_stop'], 'run_time_s': res['run_time_s'],
                         'max_step_angle': res['max_step_angle']})
            vals = dict(res['max_violation'])
            if res['has_energy']:
                vals['energy drift [J]'] = res['max_energy_drift']
            scales['energy drift [J]'] = (max(abs(res['energy0']), 1.0),
                                          1e-13 * max(abs(res['energy0']), 1.0))
            if ref is not None:
                vals['|Omega(t_end) - Omega_ref|'] = float(
                    np.linalg.norm(np.array(res['omega_end']) - ref))
                scales['|Omega(t_end) - Omega_ref|'] = (float(np.linalg.norm(FLIP_OMEGA0)),
                                                        spread)
            for key, v in vals.items():
                table.setdefault(key, []).append(v if ok else None)
        quantities = {}
        for key, values in table.items():
            scale, floor = scales.get(key, (1.0, spec.roundoff))
            order, used = fit_order(dts, values, floor, ASYMPTOTIC * scale)
            done = [v for v in values if v is not None]
            quantities[key] = {'values': values, 'order': order, 'used': used,
                               'roundoff': bool(done and max(done) <= floor),
                               'level': max(done) if done else None, 'floor': floor}
        out['updates'][update] = {'runs': runs, 'quantities': quantities}
    if bar is not None:
        bar.close()
    return out
