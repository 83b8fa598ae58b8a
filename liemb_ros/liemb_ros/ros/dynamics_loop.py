"""
The dynamics node's control loop: a joint state in, one cycle of the engine out.

:class:`DynamicsLoop`, a part that :class:`liemb_ros.ros.dynamics_node.DynamicsNode` owns,
is the node's 1 kHz path.  It subscribes to ``joint_states`` on the node's io node (raw:
the CDR bytes, read by :class:`~liemb_ros.ros.wire.JointStateReader`), merges each state
into the engine's and, with ``publish_rate`` 0, runs one cycle of the engine from it at
once; with ``publish_rate`` > 0 a timer runs the cycle from the latest state instead.  The
cycle samples the trajectory at the state's time (the node's ``state_time``) and hands
what it computed to the outputs (:class:`~liemb_ros.ros.dynamics_output.DynamicsOutputs`)
and an active goal its feedback (:class:`~liemb_ros.ros.trajectory_action.TrajectoryAction`).
Nothing is commanded from an incomplete state or a stale one (``state_timeout``).  Every
state is counted received, then dropped, skipped or processed
(:class:`~liemb_ros.ros.dynamics_diagnostics.Counters`), and so are the samples the
middleware lost.  Why the io node exists, and how one thread serves it and the node:
:func:`liemb_ros.ros.common.spin`.
"""
import time

from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import JointState

from .common import error_text
from .conversions import shown
from ..control.engine import OutputError, StateError
from .wire import JointStateReader


class DynamicsLoop:
    """
    The joint-state intake and the cycle of a dynamics node.

    ``node``: the node (its log, clock and timers; ``state_time()``, the time of the
    latest state); ``io_node``: the node of the 1 kHz path, where the ``joint_states``
    subscription lives (its name resolved by ``node``); ``counters``: the node's
    :class:`~liemb_ros.ros.dynamics_diagnostics.Counters`; ``watch``: its
    :class:`~liemb_ros.ros.common.StateWatch` (told of every good state, asked whether the
    latest is stale); ``outputs``, ``trajectories``, ``action``: the node's parts that each
    state and each cycle feed; ``reject(what)``: the node's drop of a bad input (counted,
    logged); ``guard(callback, where)``: its error handling, around the ``publish_rate``
    timer.  :meth:`serve` gives it the engine of a new robot; until then every state is
    skipped.
    """

    def __init__(self, node, io_node, counters, watch, outputs, trajectories, action,
                 reject, guard):
        self.node, self.counters, self.watch = node, counters, watch
        self.outputs, self.trajectories, self.action = outputs, trajectories, action
        self.reject, self.guard = reject, guard
        self.state_time = node.state_time
        self.engine = None
        self._timer = None      # the publish_rate timer (None: publish with every state)
        self._pending = False   # publish_rate > 0: a state arrived since the last output
        self._reader = JointStateReader(JointState)
        io_node.create_subscription(
            JointState, node.resolve_topic_name('joint_states'), self._on_joint_state,
            qos_profile_sensor_data,
            event_callbacks=SubscriptionEventCallbacks(message_lost=self._on_lost,
                                                       use_default_callbacks=False),
            raw=True)

    def serve(self, engine):
        """Run the cycles of ``engine`` (a new robot's) from now on."""
        self.engine = engine

    def set_rate(self, rate):
        """Publish at ``rate`` per second on a timer (``publish_rate``; 0: with every state)."""
        node = self.node
        if self._timer is not None:
            node.destroy_timer(self._timer)
            self._timer = None
        if rate > 0:
            self._timer = node.create_timer(1.0 / rate, self.guard(self._on_timer,
                                                                   'publish_rate timer'))

    def _on_lost(self, info):
        """DDS lost samples before we took them (queue overflow): count them."""
        self.counters.lost += info.total_count_change

    def _on_joint_state(self, msg):
        """
        Merge a state; publish at once (``publish_rate`` 0) or mark it for the timer.

        Counts: every message is received, then dropped (invalid), skipped (no robot yet,
        empty, not all joints known yet, stale or refused output, or superseded by a newer
        one before the timer published) or processed (outputs published from it).  An
        error anywhere (a kernel's, an output's) drops the state: nothing goes out from it.
        """
        t0 = time.perf_counter()
        self.counters.received += 1
        if self.engine is None:
            self.counters.skipped += 1   # no robot yet: nothing to do
            return
        try:
            self._take_state(msg, t0)
        except Exception as exc:  # noqa: B902 - the loop must outlive any state
            self.reject(error_text('joint_states message', exc))

    def _take_state(self, msg, t0):
        """:meth:`_on_joint_state` once the robot is known (``t0``: when it came)."""
        try:   # the CDR bytes (a raw subscription: see wire.py)
            names, position, velocity, stamp = self._reader.read(msg)
        except Exception as exc:  # noqa: B902 - whatever rclpy raises for bad bytes
            self.reject(f'joint_states message that cannot be read: {exc}')
            return
        if not names:
            self.counters.skipped += 1   # an empty message: nothing to do
            return
        known = len(self.engine.ignored)
        try:
            self.engine.update_state(names, position, velocity, stamp)
        except StateError as exc:
            self.reject(f'joint_states message: {exc}')
            return
        if len(self.engine.ignored) > known:   # say it once per joint, never again
            new = list(self.engine.ignored)[known:]
            self.node.get_logger().info(
                f"ignoring joint(s) {shown(', '.join(new))} of joint_states: not in robot "
                f'{shown(self.engine.model.name)}')
        self.watch.seen()
        self.trajectories.state_arrived()
        if self._timer is not None:
            self.counters.skipped += self._pending   # the one before this never got out
            self._pending = True
            return
        if self._publish(fresh=True):
            self.counters.processed += 1
        else:
            self.counters.skipped += 1
        self.counters.callback_stats.add(time.perf_counter() - t0)

    def _on_timer(self):
        """Publish the latest state's outputs (the ``publish_rate`` timer)."""
        t0 = time.perf_counter()
        published = self._publish()
        if self._pending:
            self._pending = False
            if published:
                self.counters.processed += 1
            else:
                self.counters.skipped += 1
        if published:
            self.counters.callback_stats.add(time.perf_counter() - t0)

    def _publish(self, fresh=False):
        """
        Compute and publish the outputs of the current state; return whether it did.

        ``fresh``: the state has just arrived (it cannot be stale).
        """
        e = self.engine
        if e is None or not e.ready:
            if e is not None:
                self.node.get_logger().warning(
                    f'no state yet for {", ".join(e.missing_joints())}',
                    throttle_duration_sec=5.0)
            return False
        if not fresh and self.watch.stale():
            self.node.get_logger().warning(
                f'no joint_states for {self.watch.age():.2f} s: not commanding',
                throttle_duration_sec=5.0)
            return False
        now = time.monotonic()
        inline = self.outputs.inline()
        t_state = self.state_time()
        if self.trajectories.file is not None:
            self.trajectories.start_file(t_state)
        try:
            out = e.cycle(inline, now=t_state)
        except OutputError as exc:
            self.counters.refused += 1
            self.node.get_logger().error(str(exc), throttle_duration_sec=1.0)
            return False
        stamp = e.stamp   # (sec, nanosec) of the state, else of the clock
        if stamp is None:
            stamp = self.node.get_clock().now().seconds_nanoseconds()
        due = self.outputs.publish(out, stamp, t_state)
        if self.action.active is not None:
            self.action.cycle(feedback=due)
        self.outputs.secondary(out, stamp, now, inline)
        return True
