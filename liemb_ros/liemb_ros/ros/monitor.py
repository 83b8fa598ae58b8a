"""
Watch the node set ``sim`` run (the ROS part of ``liemb demo``).

:func:`watch` starts the simulation and dynamics nodes it is given (processes of the set
``sim``, started by :func:`liemb_ros.app.demo.run_sim`), listens to ``joint_states``, the
dynamics node's torques and ``/diagnostics`` with an in-process node, prints a live status
line (simulation time, real-time factor, dynamics node rate and p99 compute time) and
returns what it recorded (:func:`liemb_ros.app.plots.plot_run` draws it).  Stamps are
simulation time (the simulation node publishes ``/clock``), so the time axis is simulated
time even when the machine is slow.
"""
import sys
import time

import numpy as np

STARTUP_TIMEOUT = 180.0  # the first run compiles the numba kernels of both nodes


def _stamp(header):
    return header.stamp.sec + 1e-9 * header.stamp.nanosec


def watch(nodes, model, duration=10.0, log_path='nodes.log', echo=print):
    """
    Start ``nodes`` and watch them for ``duration`` s of closed loop; return the record.

    ``nodes``: the set's processes, with ``start()``, ``poll()`` (the first that died, or
    None) and ``stop()`` (:class:`liemb_ros.launcher.NodeSet`); ``log_path``: where their
    output goes (named in messages).  The record holds arrays ``t, q, qd, effort`` (from
    ``joint_states``), ``tg, tau_g`` (the dynamics node's torques), the last diagnostics of
    both nodes (``diag``) and ``t_end``.  Raises SystemExit with a hint when ROS 2 is not
    installed, a node died, or nothing came within :data:`STARTUP_TIMEOUT`.
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
    return (f"sim t {_field(sim, 'sim_time', '7.2f')} s  RTF "
            f"{_field(sim, 'real_time_factor', '4.2f')}  energy error "
            f"{_field(sim, 'energy_balance_error', '9.2e')} J | dynamics node "
            f"{_field(dyn, 'rate_hz', '6.1f')} Hz  p99 "
            f"{_field(dyn, 'compute_p99_us', '6.1f')} us  dropped "
            f"{dyn.get('dropped', '-')}")


def _field(values, key, spec):
    """``values[key]`` (a diagnostics value) formatted by ``spec``; '-' until it came."""
    if key not in values:
        return '-'.rjust(int(spec.split('.')[0]))
    return format(float(values[key]), spec)
