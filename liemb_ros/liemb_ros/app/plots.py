"""
Pictures of a recorded or watched run (``liemb plot``, the demo's plot).

:func:`plot_run` draws a run of the node set ``sim`` (joint positions, torques, energy) from
:func:`liemb_ros.app.recordings.read_run` or :func:`liemb_ros.app.demo.run_sim`;
:func:`plot_control` draws a control run (desired against actual positions, torques, the
tracking error and its RMS); :func:`plot_main` is ``liemb plot``.  Panels only for what was
recorded; NaN values are gaps; a decimated record's min-max envelopes are shaded
(:func:`draw`).
"""
import os
import sys

import numpy as np

from .recordings import RecordingError, _model_order, read_run, tracking_rms


def has_values(a):
    """Return whether array ``a`` holds a finite value (a curve worth a panel)."""
    return bool(np.size(a)) and bool(np.isfinite(a).any())


def draw(ax, t, rec, key, column, scale=1.0, **style):
    """
    Plot column ``column`` of ``rec[key]`` against ``t`` on ``ax``, with its envelope.

    The envelope (``rec['envelope'][key]``: the min and max over the messages each row
    stands for, :class:`Samples`) is shaded in the line's colour where it is wider than
    the line; NaN values are gaps.  Return the line.
    """
    line, = ax.plot(t, scale * rec[key][:, column], **style)
    lo, hi = rec.get('envelope', {}).get(key, (None, None))
    if lo is not None and np.any(lo[:, column] < hi[:, column]):
        ax.fill_between(t, scale * lo[:, column], scale * hi[:, column], linewidth=0,
                        color=line.get_color(), alpha=0.25)
    return line


def plot_run(model, rec, path, title=None):
    """
    Save joint trajectories, torques and energy of a run to ``path``; return ``path``.

    ``rec``: a :func:`liemb_ros.app.demo.run_sim` record or :func:`read_run`'s with its
    columns in ``model``'s joint order (``t, q, qd, effort``; ``tg, tau_g`` optional).
    Panels for what is there: positions always; torques when the states carry efforts or
    the dynamics node's torques were recorded (a joint_state_broadcaster without effort
    interfaces publishes none); energy for a fixed base (the base pose of a floating one is
    not in joint_states) at the rows whose positions and velocities are all there and
    finite, when there is one.  NaN values are gaps; envelopes of a decimated record are
    shaded (:func:`draw`).  ``title``: default, the demo's.
    """
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    from ..sim.simulator import mechanical_energy
    if len(rec['t']) == 0:
        fig = plt.figure(figsize=(9, 3))
        fig.suptitle('no joint_states received')
        fig.savefig(path, dpi=90)
        plt.close(fig)
        return path
    tg = rec.get('tg', np.zeros(0))
    torques = has_values(rec['effort']) or (len(tg) > 0 and has_values(rec['tau_g']))
    complete = np.zeros(len(rec['t']), dtype=bool)
    if not model.floating and rec['qd'].shape == rec['q'].shape:
        complete = np.isfinite(rec['q']).all(axis=1) & np.isfinite(rec['qd']).all(axis=1)
    panels = 1 + torques + complete.any()
    fig, axes = plt.subplots(panels, 1, figsize=(9, 3 * panels), sharex=True, squeeze=False)
    axes = list(axes[:, 0])
    pos_ax = axes.pop(0)
    tau_ax = axes.pop(0) if torques else None
    energy_ax = axes.pop(0) if complete.any() else None
    t0 = rec['t'][0]
    t = rec['t'] - t0
    for j, name in enumerate(model.joint_names):
        line = draw(pos_ax, t, rec, 'q', j, label=name)
        if tau_ax is None:
            continue
        if has_values(rec['effort'][:, j]):
            draw(tau_ax, t, rec, 'effort', j, color=line.get_color())
        if len(tg):
            draw(tau_ax, tg - t0, rec, 'tau_g', j, linestyle='--', color=line.get_color(),
                 linewidth=0.8)
    pos_ax.set_ylabel('q [rad]')
    pos_ax.legend(ncol=4, fontsize=7)
    if tau_ax is not None:
        tau_ax.set_ylabel('torque [N m]')
        tau_ax.set_title('applied (solid: dynamics node command + test torque) and '
                         'gravity compensation (dashed)', fontsize=9)
    if energy_ax is not None:
        energy = np.full((len(t), 2), np.nan)
        for i in np.flatnonzero(complete):
            energy[i] = mechanical_energy(model, rec['q'][i], rec['qd'][i])
        ref = energy[np.flatnonzero(complete)[0]]
        energy_ax.plot(t, energy[:, 0], label='kinetic T')
        energy_ax.plot(t, energy[:, 1] - ref[1], label='potential U - U(0)')
        energy_ax.plot(t, energy.sum(axis=1) - ref.sum(), label='T + U - E(0)')
        energy_ax.set_ylabel('energy [J]')
        energy_ax.legend(fontsize=8)
    (energy_ax or tau_ax or pos_ax).set_xlabel('time [s] (header stamps)')
    fig.suptitle(title or f'{model.name}: simulation node under the dynamics node\'s '
                          'gravity compensation')
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def plot_control(rec, path, title=''):
    """
    Save a control run's plot to ``path``; return ``path``.

    Desired (dashed) and actual position of each joint, the commanded torques (when the
    controller states carry them), and the tracking error (reference - feedback) with its
    RMS.  ``rec``: :func:`read_run`'s record of a recording that holds
    ``~/controller_state``; NaN values are gaps, envelopes are shaded (see :func:`draw`).
    """
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    names = rec['control_joints']
    n = len(names)
    t = rec['tc'] - rec['tc'][0]
    rms, peak = tracking_rms(rec)
    fig = plt.figure(figsize=(13, max(8.0, 1.3 * n + 1)))
    grid = fig.add_gridspec(n, 2)
    torques = has_values(rec['tau_out'])
    half = max(n // 2, 1) if torques and n > 1 else 0
    tau_ax = fig.add_subplot(grid[:half, 1]) if half else None
    err_ax = fig.add_subplot(grid[half:, 1], sharex=tau_ax)
    first = None
    for j, name in enumerate(names):
        ax = fig.add_subplot(grid[j, 0], sharex=first)
        first = first or ax
        line = draw(ax, t, rec, 'q_fb', j, linewidth=1.2, label='actual')
        ax.plot(t, rec['q_ref'][:, j], '--', color='k', linewidth=0.9, label='desired')
        ax.set_ylabel(f'{name}\n[rad]', fontsize=8)
        ax.tick_params(labelsize=7)
        if j == 0:
            ax.legend(fontsize=7, ncol=2, loc='upper right')
            ax.set_title('joint positions: desired (dashed) and actual', fontsize=9)
        if j < n - 1:
            ax.tick_params(labelbottom=False)
        if tau_ax is not None:
            draw(tau_ax, t, rec, 'tau_out', j, color=line.get_color(), linewidth=0.9,
                 label=name)
        draw(err_ax, t, rec, 'q_err', j, scale=1e3, color=line.get_color(), linewidth=0.9)
    ax.set_xlabel('time [s]')
    if tau_ax is not None:
        tau_ax.set_ylabel('torque [N m]')
        tau_ax.set_title('commanded torques (~/controller_state output)', fontsize=9)
        tau_ax.legend(fontsize=7, ncol=4)
        tau_ax.tick_params(labelbottom=False)
    err_ax.set_ylabel('error [mrad]')
    err_ax.set_xlabel('time [s]')
    err_ax.set_title(f'tracking error (desired - actual): RMS {rms:.2e} rad, max {peak:.2e} '
                     'rad', fontsize=9)
    fig.suptitle(title or 'computed-torque tracking')
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def picture_formats():
    """Return the picture formats (file extensions) matplotlib can save, sorted."""
    from matplotlib.backend_bases import FigureCanvasBase
    return sorted(FigureCanvasBase.get_supported_filetypes())


def plot_main(args):
    """Run ``liemb plot``; return the exit code."""
    from ..core.model import URDFError, load_urdf, load_urdf_string
    out = args.out or os.path.splitext(args.file)[0] + '.png'
    ext = os.path.splitext(out)[1].lower().lstrip('.')
    if ext not in picture_formats():
        print(f'liemb plot: cannot tell the picture format of {out} (extension '
              f"{ext or 'none'}); name one of {', '.join(picture_formats())}",
              file=sys.stderr)
        return 2
    try:
        rec, xml = read_run(args.file)
    except OSError as exc:
        print(f'liemb plot: cannot read {args.file}: {exc}', file=sys.stderr)
        return 2
    except RecordingError as exc:
        print(f'liemb plot: {exc}', file=sys.stderr)
        return 2
    if not (rec['count']['t'] or rec['count']['tc']):   # before asking for a robot
        print(f'liemb plot: {args.file} holds no joint_states to plot', file=sys.stderr)
        return 2
    try:
        if args.robot:
            from ..core import resources
            model = load_urdf(resources.robot_path(args.robot))
        elif xml:
            model = load_urdf_string(xml, source=f'{args.file}: robot_description')
        else:
            print(f'liemb plot: {args.file} holds no robot_description; give --robot',
                  file=sys.stderr)
            return 2
    except (FileNotFoundError, URDFError) as exc:
        print(f'liemb plot: {exc}', file=sys.stderr)
        return 2
    try:
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        if rec['count']['tc']:
            rms, peak = tracking_rms(rec)
            plot_control(rec, out, f'{model.name}: the dynamics node tracking a joint '
                                   'trajectory (computed_torque)')
            print(f"liemb plot: {rec['count']['tc']} controller states, "
                  f"{rec['tc'][-1] - rec['tc'][0]:.2f} s, tracking error RMS {rms:.2e} rad "
                  f'(max {peak:.2e} rad) -> {out}')
            return 0
        rec, error = _model_order(rec, model, args.file)
        if error:
            print(f'liemb plot: {error}', file=sys.stderr)
            return 2
        plot_run(model, rec, out, title=f'{model.name}: {os.path.basename(args.file)}')
    except (OSError, ValueError, RuntimeError) as exc:   # savefig: the folder, the format
        print(f'liemb plot: cannot write {out}: {type(exc).__name__}: {exc}',
              file=sys.stderr)
        return 2
    print(f"liemb plot: {rec['count']['t']} joint states, {rec['count']['tg']} torque "
          f"messages, {rec['t_end']:.2f} s -> {out}")
    return 0
