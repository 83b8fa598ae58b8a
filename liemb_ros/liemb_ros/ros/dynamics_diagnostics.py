"""
The dynamics node's ``/diagnostics``, and the counts it reports.

:class:`Counters` is what the node (its input) and its outputs
(:class:`~liemb_ros.ros.dynamics_output.DynamicsOutputs`) count; :class:`DynamicsDiagnostics`,
a part that :class:`liemb_ros.ros.dynamics_node.DynamicsNode` owns, publishes the node's
status every ``diagnostics_period``: rates of the last window, compute and callback times,
counts that add up, the age of the last joint state.
"""
import math
import time

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

from .conversions import SHOWN_CHARS, shown
from ..control.engine import CycleStats
from .dynamics_output import RELIABLE, bounded


class Counters:
    """
    What the dynamics node counts: joint states, dropped inputs, refused outputs.

    Every joint state is ``received``, then dropped (``rejected``, with the other invalid
    inputs and refused commands), ``skipped`` or ``processed``; ``lost``: samples the
    middleware lost before the node took them; ``refused``: outputs not published (not
    finite); ``callback_stats``: the whole callback, from receiving a state to its last
    publish.
    """

    def __init__(self):
        self.rejected = 0           # invalid messages (dropped)
        self.refused = 0            # non-finite outputs (not published)
        self.received = self.processed = self.skipped = self.lost = 0
        self.callback_stats = CycleStats()   # the whole callback: receive to last publish


class DynamicsDiagnostics:
    """
    The ``/diagnostics`` of a dynamics node.

    ``node``: the node (its parameters ``payload.*``, clock and names); ``counters``:
    :class:`Counters`; ``watch``: its :class:`~liemb_ros.ros.common.StateWatch`;
    ``source``: its :class:`~liemb_ros.ros.common.RobotSource`.  :attr:`scheduling` is the
    loop thread's scheduling, as :func:`~liemb_ros.ros.common.realtime_priority` describes
    it.
    """

    def __init__(self, node, counters, watch, source):
        self.node, self.counters, self.watch, self.source = node, counters, watch, source
        self.scheduling = 'normal'   # the loop thread's (realtime_priority)
        self._window = (time.monotonic(), 0)   # (time, cycles) at the last diagnostics
        self.pub_diag = node.create_publisher(DiagnosticArray, '/diagnostics', RELIABLE)

    def publish(self, engine, compiling=None, payload=None):
        """
        Publish the status of ``engine`` (None: no robot yet).

        ``compiling``: ``(robot name, Preparation)`` while a robot's kernels compile;
        ``payload``: the payload estimate's status, published with it (None: none).
        """
        node, n = self.node, self.counters
        p = (lambda name: node.get_parameter(name).value)
        st = DiagnosticStatus(name='liemb_dynamics: cycle', hardware_id='liemb_ros')
        e = engine
        now = time.monotonic()
        if e is None:
            src = self.source
            st.level = DiagnosticStatus.ERROR if src.error else DiagnosticStatus.WARN
            if compiling is not None:
                name, preparing = compiling
                st.message = (f'compiling kernels for robot {shown(name)} '
                              f'({preparing.seconds:.0f} s so far)')
            else:
                st.message = (f'unusable robot description: {src.error}' if src.error else
                              'waiting for the robot description on '
                              + node.resolve_topic_name('robot_description'))
        else:
            s = e.stats.summary()
            t0, n0 = self._window
            rate = (e.stats.count - n0) / (now - t0) if now > t0 else 0.0
            self._window = (now, e.stats.count)
            age = self.watch.age()
            if not e.ready:
                st.level = DiagnosticStatus.WARN
                st.message = f"waiting for joint states of {', '.join(e.missing_joints())}"
            elif self.watch.stale():
                st.level = DiagnosticStatus.WARN
                st.message = (f'no joint_states for {age:.2f} s (state_timeout '
                              f'{self.watch.timeout()} s): not commanding')
            else:
                st.level, st.message = DiagnosticStatus.OK, 'running'
            c = n.callback_stats.summary()
            st.values = [KeyValue(key=k, value=v) for k, v in (
                ('rate_hz', f'{rate:.1f}'), ('compute_p50_us', f"{s['p50']:.1f}"),
                ('compute_p99_us', f"{s['p99']:.1f}"), ('compute_max_us', f"{s['max']:.1f}"),
                ('callback_p50_us', f"{c['p50']:.1f}"), ('callback_p99_us', f"{c['p99']:.1f}"),
                ('callback_mean_us', f"{c['mean']:.1f}"),
                ('cycles', str(e.stats.count)), ('received', str(n.received)),
                ('processed', str(n.processed)), ('skipped', str(n.skipped)),
                ('lost', str(n.lost)), ('dropped', str(n.rejected)),
                ('refused_outputs', str(n.refused)),
                ('clamped_commands', str(e.clamped)),
                ('last_state_age_s', f'{age:.3f}' if math.isfinite(age) else 'never'),
                ('ignored_joints', shown(', '.join(e.ignored)) if e.ignored else 'none'),
                ('robot', bounded(e.model.name, SHOWN_CHARS)), ('mode', e.mode),
                ('tracking_error_rad', f'{e.tracking_error:.3g}'
                 if e.mode == 'computed_torque' else 'n/a'),
                ('payload', f'{p("payload.mass")} kg at {p("payload.link")}'
                 if p('payload.link') else 'none'),
                ('representation', e.representation),
                ('scheduling', self.scheduling))]
        msg = DiagnosticArray(status=[st] if payload is None else [st, payload])
        msg.header.stamp = node.get_clock().now().to_msg()
        self.pub_diag.publish(msg)
