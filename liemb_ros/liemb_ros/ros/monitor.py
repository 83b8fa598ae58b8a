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


def plot(model, rec, path):
    """Save joint trajectories, torques and energy of a :func:`run_sim` record to ``path``."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    from ..simulation import mechanical_energy
    fig, axes = plt.subplots(3, 1, figsize=(9, 9), sharex=True)
    if len(rec['t']) == 0:
        fig.suptitle('no joint_states received')
        fig.savefig(path, dpi=90)
        plt.close(fig)
        return path
    t0 = rec['t'][0]
    t = rec['t'] - t0
    for j, name in enumerate(model.joint_names):
        line, = axes[0].plot(t, rec['q'][:, j], label=name)
        axes[1].plot(t, rec['effort'][:, j], color=line.get_color())
        if len(rec['tg']):
            axes[1].plot(rec['tg'] - t0, rec['tau_g'][:, j], '--', color=line.get_color(),
                         linewidth=0.8)
    axes[0].set_ylabel('q [rad]')
    axes[0].legend(ncol=4, fontsize=7)
    axes[1].set_ylabel('torque [N m]')
    axes[1].set_title('applied (solid: dynamics node command + test torque) and '
                      'gravity compensation (dashed)', fontsize=9)
    energy = np.array([mechanical_energy(model, q, qd) for q, qd in zip(rec['q'], rec['qd'])])
    axes[2].plot(t, energy[:, 0], label='kinetic T')
    axes[2].plot(t, energy[:, 1] - energy[0, 1], label='potential U - U(0)')
    axes[2].plot(t, energy.sum(axis=1) - energy[0].sum(), label='T + U - E(0)')
    axes[2].set_ylabel('energy [J]')
    axes[2].set_xlabel('simulation time [s]')
    axes[2].legend(fontsize=8)
    fig.suptitle(f'{model.name}: simulation node under the dynamics node\'s gravity '
                 'compensation')
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
