"""
The ``liemb reproduce`` command: its options, the printed report and the plots.

:func:`add_arguments` and :func:`run` plug into :mod:`liemb_ros.app.cli`; :func:`plot` draws one
run's violations and energy drift over time, :func:`plot_convergence` the papers' log-log
figure of a convergence study (:mod:`.study`); the printed convergence table is
:func:`.table.convergence_table`.
"""
import json
import sys

import numpy as np

from ...sim.integrators import MAX_STEP_ANGLE
from .examples import EXAMPLES, UPDATES, build
from .flip_solutions import flip_interval
from .study import convergence, run_example
from .table import convergence_table


def plot(res, path):
    """Save violation and energy drift over time (log scale) to ``path`` (PNG)."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    t, m, e, names = res['history']
    fig, ax = plt.subplots(1, 2, figsize=(8, 3), dpi=80)
    for k, name in enumerate(names):
        ax[0].semilogy(t, np.maximum(m[:, k], 1e-17), label=name, lw=0.8)
    ax[0].set_xlabel('t [s]')
    ax[0].set_title('constraint violation / drift', fontsize=9)
    ax[0].legend(fontsize=6)
    ax[1].semilogy(t, np.maximum(e, 1e-17), lw=0.8)
    ax[1].set_xlabel('t [s]')
    ax[1].set_title('|energy - E0| [J]', fontsize=9)
    fig.suptitle(f"{res['example']} ({res['paper']}), {res['update']}, dt={res['dt']:g}",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_convergence(study, path):
    """
    Save the log-log convergence figure of :func:`convergence` to ``path`` (PNG).

    One panel per quantity, one line per update; a dotted line marks the round-off floor,
    missing points are runs that diverged or were refused (named in the legend).
    """
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    ups = study['updates']
    keys = list(next(iter(ups.values()))['quantities'])
    ncol = min(3, len(keys))
    nrow = -(-len(keys) // ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(3.4 * ncol, 2.9 * nrow), dpi=80,
                             squeeze=False)
    dts = np.array(study['dts'])
    for ax, key in zip(axes.ravel(), keys):
        for update, data in ups.items():
            q = data['quantities'][key]
            v = np.array([np.nan if x is None else max(x, 1e-17) for x in q['values']])
            lost = [f'{r["dt"]:.3g}' for r in data['runs'] if r['status'] != 'ok']
            label = update + (f" (p = {q['order']:.2f})" if q['order'] is not None else '')
            if q['roundoff']:
                label = f'{update} (round-off)'
            if lost:
                label += ', no result at dt = ' + ', '.join(lost)
            ax.loglog(dts, v, 'o-', ms=3, lw=0.9, label=label)
        ax.axhline(q['floor'], ls=':', lw=0.7, color='grey')
        ax.set_xlabel('step size [s]')
        ax.set_title(key, fontsize=8)
        ax.legend(fontsize=6)
    for ax in axes.ravel()[len(keys):]:
        ax.set_visible(False)
    fig.suptitle(f"{study['example']} ({study['paper']}): max over {study['t_end']:g} s",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def add_arguments(parser):
    """Add the ``reproduce`` options to an argparse parser."""
    parser.add_argument('name', nargs='?', help='example name (see --list)')
    parser.add_argument('--list', action='store_true', help='list the examples')
    parser.add_argument('--update', choices=UPDATES, default=None,
                        help="configuration update: se3, so3r3, tailored (SE(3) for bodies "
                             "jointed to the ground), ulv ([HGS18]'s formulation; flip and "
                             "sprung_box), ulv-paper (its printed stages: forces at H_i; "
                             "sprung_box); default se3, with --convergence the example's set")
    parser.add_argument('--dt', type=float, default=None, help='step size [s]')
    parser.add_argument('--t-end', type=float, default=None, help='duration [s]')
    parser.add_argument('--convergence', action='store_true',
                        help="run the paper's sequence of step sizes: values, fitted "
                             'orders, round-off levels')
    parser.add_argument('--dts', type=float, nargs='+', metavar='H',
                        help='step sizes of --convergence (default: the paper\'s)')
    parser.add_argument('--no-step-guard', action='store_true',
                        help='run steps that rotate a body by more than 0.9 * 2 pi (the '
                             'pole of dexp^-1) on, into divergence if it comes')
    parser.add_argument('--json', action='store_true', help='emit one JSON object')
    parser.add_argument('--plot', metavar='FILE.png',
                        help='save the violation/energy plot (log-log figure with '
                             '--convergence)')


def _list():
    for name, spec in EXAMPLES.items():
        derived = f' (derived: {spec.derived})' if spec.derived else ''
        print(f'{name:<20} {spec.section:<20} t_end={spec.t_end:g} s dt={spec.dt:g} s  '
              f'{spec.claim}{derived}')


def run(args):
    """Run ``liemb reproduce`` with parsed ``args``; return the exit status."""
    if args.list or not args.name:
        _list()
        return 0
    if args.name not in EXAMPLES:
        print(f'liemb reproduce: unknown example {args.name!r} (see --list)', file=sys.stderr)
        return 2
    guard = not args.no_step_guard
    try:
        build(args.name, args.update or 'se3')
    except ValueError as exc:
        print(f'liemb reproduce: {exc}', file=sys.stderr)
        return 2
    if args.convergence:
        study = convergence(args.name, None if args.update is None else (args.update,),
                            args.dts, args.t_end, step_guard=guard, progress=True)
        if args.plot:
            plot_convergence(study, args.plot)
        if args.json:
            print(json.dumps(study))
        else:
            print(convergence_table(study))
        return 0
    spec = EXAMPLES[args.name]
    update = args.update or 'se3'
    n = (args.t_end or spec.t_end) / (args.dt or spec.dt)
    res = run_example(args.name, update, args.dt, args.t_end, every=max(1, int(n) // 2000),
                      progress=True, step_guard=guard)
    if args.plot:
        plot(res, args.plot)
    out = {k: v for k, v in res.items() if k != 'history'}
    if args.name == 'flip':
        out['flip_interval_analytic_s'] = flip_interval()
    status = 0 if res['status'] == 'ok' else 1
    if args.json:
        print(json.dumps(out))
        return status
    print(f"{res['example']} ({res['paper']}): update {res['update']}, dt = {res['dt']:g} s, "
          f"t_end = {res['t_end']:g} s, {res['steps']} steps")
    print(f"  paper: {res['claim']}")
    if res['derived']:
        print(f"  derived: {res['derived']}")
    if res['status'] != 'ok':
        print(f"  {res['status'].upper()} at t = {res['t_stop']:g} s: {res['message']}")
        print('  maxima below are up to that time')
    for k, v in res['max_violation'].items():
        print(f'  max {k:<32} {v:.3e}')
    if res['has_energy']:
        print(f"  energy E0 = {res['energy0']:.6g} J, "
              f"max |E - E0| = {res['max_energy_drift']:.3e} J")
    print(f"  largest stage rotation {res['max_step_angle']:.3g} rad "
          f'(guard {MAX_STEP_ANGLE:.3g} rad' + (')' if guard else ', off)'))
    if res['flips']:
        print('  flips at t = ' + ', '.join(f'{t:.5f}' for t in res['flips'])
              + f' s (our analytic spacing 2K/p = {flip_interval():.5f} s)')
    print(f"  run time {res['run_time_s']:.2f} s")
    return status
