"""
Run the node set ``sim`` and watch it (the ROS part of ``liemb demo``).

:func:`run_sim` starts the simulation and dynamics nodes as processes (the command lines
of ``liemb launch sim``), listens to ``joint_states``, the dynamics node's torques and
``/diagnostics`` with an in-process node, prints a live status line (simulation time,
real-time factor, dynamics node rate and p99 compute time) and returns what it recorded;
:func:`plot` draws it.  Stamps are simulation time (the simulation node publishes
``/clock``), so the plot's time axis is simulated time even when the machine is slow.
"""
import os
import sys
import time

import numpy as np

from .launcher import NodeSet

STARTUP_TIMEOUT = 180.0  # the first run compiles the numba kernels of both nodes


def _stamp(header):
    return header.stamp.sec + 1e-9 * header.stamp.nanosec


def run_sim(model, duration=10.0, out_dir='out/demo', amplitude=None, q0=None, echo=print):
    """
    Simulate ``model`` under the dynamics node's gravity compensation; return the record.

    ``amplitude``: test torque per joint [N m] (sinusoid at the configured frequency);
    ``q0``: initial joint positions (default: the simulation node's, neutral).
    The record holds arrays ``t, q, qd, effort`` (from ``joint_states``), ``tg, tau_g``
    (the dynamics node's torques), the last diagnostics of both nodes (``diag``) and
    ``t_end``.  Raises SystemExit with a hint when ROS 2 is not installed.
    """
    try:
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import JointState
    except ImportError as exc:
        raise SystemExit(f'liemb demo: ROS 2 is not installed in this Python ({exc}); '
                         'run ./dev.sh setup (or tools/ros/setup_ros.sh VENV)') from None
    # Loopback discovery unless the user chose otherwise (works without a network).
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    params = ['liemb_simulation:publish_clock:=true',
              'liemb_simulation:diagnostics_period:=0.25',
              'liemb_dynamics:diagnostics_period:=0.25']
    launch_args = {'robot': str(model.source)} if os.path.isfile(str(model.source)) else {}
    if amplitude is not None:
        amp = ', '.join(f'{float(a):g}' for a in np.broadcast_to(amplitude, (model.nq,)))
        params.append(f'liemb_simulation:test_torque_amplitude:=[{amp}]')
    if q0 is not None:
        params.append('liemb_simulation:initial_positions:=['
                      + ', '.join(f'{float(x):.6g}' for x in q0) + ']')
    log_path = os.path.join(out_dir, 'nodes.log')
    log = open(log_path, 'w', encoding='utf-8')
    nodes = NodeSet('sim', params, stdout=log, echo=echo, launch_args=launch_args)
    rec = {'t': [], 'q': [], 'qd': [], 'effort': [], 'tg': [], 'tau_g': [], 'diag': {}}
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node('liemb_demo_monitor', context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    qos = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)

    def on_state(msg):
        rec['t'].append(_stamp(msg.header))
        rec['q'].append(np.array(msg.position))
        rec['qd'].append(np.array(msg.velocity))
        rec['effort'].append(np.array(msg.effort))

    def on_torque(msg):
        rec['tg'].append(_stamp(msg.header))
        rec['tau_g'].append(np.array(msg.effort))

    def on_diag(msg):
        for st in msg.status:
            rec['diag'][st.name] = {kv.key: kv.value for kv in st.values}
            rec['diag'][st.name]['message'] = st.message
    node.create_subscription(JointState, '/joint_states', on_state, qos)
    node.create_subscription(JointState, '/liemb_dynamics/joint_torques', on_torque, qos)
    node.create_subscription(DiagnosticArray, '/diagnostics', on_diag, qos)
    tty = sys.stdout.isatty()
    echo(f'\nROS 2: simulation node + dynamics node on {model.name!r} '
         f'(node output: {log_path}); Ctrl-C stops')
    try:
        nodes.start()
        echo('waiting for both nodes (on the first run they compile their numba kernels, '
             'about a minute)')
        t_start = time.monotonic()
        first = None
        last_print = 0.0
        while True:
            executor.spin_once(timeout_sec=0.02)
            now = time.monotonic()
            dead = nodes.poll()
            if dead is not None:
                log.flush()
                raise SystemExit(f'liemb demo: {dead[0]} exited with code {dead[1]}; see '
                                 f'{log_path}')
            if first is None:
                # The loop is closed once the dynamics node answers the simulation's
                # joint_states (the simulation holds t = 0 until its first command);
                # the demo's duration counts from there.
                if rec['t'] and rec['tg']:
                    first = now
                elif now - t_start > STARTUP_TIMEOUT:
                    what = 'torques from the dynamics node' if rec['t'] else 'joint_states'
                    raise SystemExit(f'liemb demo: no {what} after {STARTUP_TIMEOUT:.0f} s; '
                                     f'see {log_path}')
                continue
            if now - last_print >= (0.25 if tty else 2.0):
                last_print = now
                line = status_line(rec)
                echo('\r' + line if tty else line, **({'end': '', 'flush': True} if tty
                                                      else {}))
            if now - first >= duration:
                break
    except KeyboardInterrupt:
        echo('\n[demo] Ctrl-C: stopping')
    finally:
        nodes.stop()
        executor.shutdown(timeout_sec=1)
        node.destroy_node()
        context.try_shutdown()
        log.close()
    if tty:
        echo('')
    echo(status_line(rec))
    out = {k: np.array(v) for k, v in rec.items() if k != 'diag'}
    out['diag'] = rec['diag']
    out['t_end'] = float(out['t'][-1] - out['t'][0]) if len(out['t']) else 0.0
    return out


def status_line(rec):
    """One line: sim time, real-time factor, dynamics node rate and p99 compute time."""
    sim = rec['diag'].get('liemb_simulation', {})
    dyn = rec['diag'].get('liemb_dynamics: cycle', {})
    return (f"sim t {float(sim.get('sim_time', 'nan')):7.2f} s  RTF "
            f"{float(sim.get('real_time_factor', 'nan')):4.2f}  energy error "
            f"{float(sim.get('energy_balance_error', 'nan')):9.2e} J | dynamics node "
            f"{float(dyn.get('rate_hz', 'nan')):6.1f} Hz  p99 "
            f"{float(dyn.get('compute_p99_us', 'nan')):6.1f} us  dropped "
            f"{dyn.get('dropped', '-')}")


def plot(model, rec, path, title=None):
    """
    Save joint trajectories, torques and energy of a run to ``path``; return ``path``.

    ``rec``: a :func:`run_sim` record or :func:`liemb_ros.record.read_run`'s with its
    columns in ``model``'s joint order (``t, q, qd, effort``; ``tg, tau_g`` optional).
    Panels for what is there: positions always; torques when the states carry efforts or
    the dynamics node's torques were recorded (a joint_state_broadcaster without effort
    interfaces publishes none); energy for a fixed base (the base pose of a floating one is
    not in joint_states) at the rows whose positions and velocities are all there and
    finite, when there is one.  NaN values are gaps; envelopes of a decimated record are
    shaded (:func:`liemb_ros.record.draw`).  ``title``: default, the demo's.
    """
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    from ..record import draw, has_values
    from ..simulation import mechanical_energy
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
