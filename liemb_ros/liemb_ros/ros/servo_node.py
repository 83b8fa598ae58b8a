"""
``servo_node``: teleoperation; twist or joint-jog commands to joint commands at a fixed rate.

A thin adapter over :class:`liemb_ros.control.servo.Servo` (the servo law, its stages and named
statuses are documented there).  Reads the robot like the dynamics node (``RobotSource``:
``robot_description`` parameter, ``urdf_path``, or the ``robot_description`` topic) and
``joint_states`` (merged by name; joints the model does not know are ignored and counted).
Each step uses the present state predicted from the last joint state (its stamp, ROS time)
and the velocity commands sent since (:class:`liemb_ros.control.servo.CommandHistory`): a loop of a
few ms latency would otherwise miss the commanded twist by about 1 % at 0.1 rad/s.  Run
the servo on the arm's clock: ``use_sim_time`` with a simulation that is not real time.

Commands (the newest wins; one older than ``command_timeout`` brings the arm smoothly to
rest, status ``stale_command``):

* ``~/twist_cmd`` (``geometry_msgs/TwistStamped``): the twist of the controlled link,
  angular and linear velocity of its origin both resolved in ``header.frame_id`` (any link
  of the robot, or ``world_frame``; empty: ``base_frame``), as MoveIt Servo reads it;
* ``~/twist_cmd_represented`` (``liemb_interfaces/TwistRepresented``): ``body``,
  ``spatial``, ``hybrid`` or ``mixed``, "world" being ``base_frame``; non-empty
  ``angular_frame`` / ``linear_frame`` must be the frames that representation names;
* ``~/joint_jog`` (``sensor_msgs/JointState``): velocities by joint name (others zero).

A bad command (NaN, a twist component or jog velocity beyond the plausibility bound of
1000 rad/s or m/s (:data:`liemb_ros.control.servo.MAX_SPEED`), an unknown frame, representation or
joint) is refused before any computation and logged (throttled), counted in
``/diagnostics``, and the arm decelerates to rest (status ``invalid_command``) instead of
acting on it; the node keeps running.  Every callback (commands, joint states, timers,
parameter changes) runs inside the node's error handling: an error in one refuses the
command or the change, never ends the process; text from messages (frame ids, joint
names) reaches the log and ``/diagnostics`` only through
:func:`liemb_ros.ros.conversions.shown` (quoted, cut to about 120 characters).  No joint
command that is not finite is ever published (a cycle that produced one commands a stop).

Outputs every ``1/publish_rate`` seconds (steady clock), those named in ``outputs``:
``~/velocity_command`` and ``~/position_command`` (``std_msgs/Float64MultiArray`` in
``command_joints`` order, for ros2_control's JointGroupVelocityController /
JointGroupPositionController: remap them to ``/<controller>/commands``) and
``~/joint_trajectory`` (``trajectory_msgs/JointTrajectory``, one point
``trajectory_lookahead`` seconds ahead, for a JointTrajectoryController).  A new command is
served at once, in an extra step (at most one between two timer steps: the output rate
stays below twice ``publish_rate``); the timer then restarts.  The latency is the DDS
hop and one step, not up to a period.  Consecutive outputs differ by at most the
acceleration limits times the time between them, counted as at most two periods (unless
a joint limit forces a harder stop): a cycle that runs late (a starved machine) slows the
ramp instead of stepping.  ``~/status`` (``std_msgs/String``, latched, on change): the
status name (``no_warning``, ``decelerate_for_singularity``, ``halt_for_singularity``,
``decelerate_for_joint_limit``, ``halt_for_joint_limit``,
``stale_command``, ``idle``, ``invalid_command``); ``/diagnostics``: status, condition
number, compute time p50/p99, command arrival -> published output p50/p99, command age,
refused commands.

Without joint states for ``state_timeout`` seconds the node stops commanding (a consumer
needs its own timeout, as the simulation node's ``effort_timeout``).  Every servo
parameter can change at run time (``link``, ``base_frame``, ``mask``, the limits ...),
several at once all or none; invalid values are refused with the reason.
"""
import itertools
import math
import sys
import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import TwistStamped
from liemb_interfaces.msg import TwistRepresented
from rcl_interfaces.msg import SetParametersResult
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from sensor_msgs.msg import JointState

from ..core.model import REPRESENTATIONS
from ..control.servo import TWIST_AXES, CommandHistory, ServoOutput, Status, checked
from .common import (ERROR_CHARS, STEADY, ConfigError, RobotSource, StateWatch, declare, guarded,
                     run, settle_heap)
from .conversions import shown
from .servo_output import ServoOutputs
from .servo_parameters import (LAW, OTHER, SINGULARITY, check_other, command_order, servo_law,
                               parameter_table)
from ..control.engine import FRAMES, CycleStats, EngineState, StateError
from .wire import JointStateReader

# The node owns its parts: its outputs (servo_output.py: the joint commands, ~/status and
# the /diagnostics publisher), the age of the last joint state (common.StateWatch) and the
# state itself (control.engine_state.EngineState); its parameters are servo_parameters.py's
# table and the law they make (imported from here too: app.parameter_docs).  This module is
# the robot, the commands, the loop and its /diagnostics.

#: streamed commands: a queue of old ones would only delay the newest
LATEST = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE)
NEWEST_STATE = QoSProfile(depth=1, reliability=qos_profile_sensor_data.reliability)


class ServoNode(Node):
    """Thin ROS adapter over :class:`liemb_ros.control.servo.Servo`."""

    NAME = 'liemb_servo'

    def __init__(self, **kwargs):
        super().__init__(self.NAME, **kwargs)
        self.source = RobotSource(self, self._on_robot)
        declare(self, parameter_table())
        self.servo = self.state = None
        self._cmd = None              # (kind, payload, steady time of arrival)
        self._refused = 0
        self._last_refused = ''
        self.watch = StateWatch(lambda: self.get_parameter('state_timeout').value)
        self._last_step = None
        self._history = CommandHistory()
        self._served = False
        self._stats = CycleStats()
        self._latency = CycleStats()      # a command's arrival -> the output it shaped
        self._arrived = None
        self._window = (time.monotonic(), 0)
        self._errors = 0              # cycles that raised (a stop was commanded)
        self._last_error = ''
        self._failed = False          # the last cycle raised
        self.outputs = ServoOutputs(self, self.p)   # joint commands, ~/status, /diagnostics
        # the newest state only (best effort, depth 1): a backlog would age every step's state
        # raw: the CDR bytes, read by wire.JointStateReader (9 µs instead of rclpy's 45 per
        # message; joint states come at the arm's rate, often 1 kHz)
        self._reader = JointStateReader(JointState)
        self.create_subscription(JointState, 'joint_states', self._guarded(
            self._on_joint_state, 'joint_states', stop=False), NEWEST_STATE, raw=True)
        self.create_subscription(TwistStamped, '~/twist_cmd', self._guarded(
            self._on_twist, '~/twist_cmd'), LATEST)
        self.create_subscription(TwistRepresented, '~/twist_cmd_represented', self._guarded(
            self._on_represented, '~/twist_cmd_represented'), LATEST)
        self.create_subscription(JointState, '~/joint_jog', self._guarded(
            self._on_jog, '~/joint_jog'), LATEST)
        self._timer = None
        self.create_timer(self.p('diagnostics_period'), self._guarded(
            self._diagnostics, '/diagnostics', stop=False), clock=STEADY)
        check_other({k: self.p(k) for k in OTHER}, ConfigError)
        self.source.start()
        self.add_on_set_parameters_callback(self._on_parameters)

    def p(self, name):
        """Return the value of parameter ``name``."""
        return self.get_parameter(name).value

    # -- robot and settings ---------------------------------------------------------------
    def _on_robot(self, model, xml, where):
        """Build the law and the state for a (new) robot; ConfigError when they do not fit."""
        values = {k: self.p(k) for k in list(LAW) + list(SINGULARITY)}
        try:
            servo = servo_law(model, values, 1.0 / self.p('publish_rate'))
            joints, order = command_order(model, self.p('command_joints'))
        except ValueError as exc:
            raise ConfigError(f'the parameters do not fit robot {shown(model.name)} from '
                              f'{where}: {exc}') from None
        state = EngineState(model)
        start = time.perf_counter()   # compile now, not in the first cycle
        q = model.neutral()
        for rep in REPRESENTATIONS:
            servo.twist_step(q, np.zeros(6), representation=rep)
        servo.twist_step(q, np.zeros(6), frame=servo.link)
        servo.reset()
        warm = time.perf_counter() - start
        settle_heap()   # no full garbage collection over the libraries in the loop
        self.servo, self.state = servo, state
        self.outputs.joints, self.outputs.index = joints, order
        self._cmd = None
        if self._timer is None:
            self._timer = self.create_timer(1.0 / self.p('publish_rate'), self._tick,
                                            clock=STEADY)
        self.get_logger().info(
            f'servo of {shown(servo.link)} of robot {shown(model.name)} ({model.nq} joints) '
            f'from {where}; base frame {shown(servo.base_frame)}; '
            f"{self.p('publish_rate'):g} Hz, outputs {', '.join(self.p('outputs'))}; kernels "
            f'ready in {warm:.1f} s')

    def _on_parameters(self, params):
        """Check every changed parameter first, then apply them all (or none); never raise."""
        try:
            return self._set_parameters(params)
        except Exception as exc:  # noqa: B902 - a request must not kill the node
            return SetParametersResult(successful=False, reason=f'{type(exc).__name__}: {exc}')

    def _set_parameters(self, params):
        changes = {p.name: p.value for p in params}
        values = {k: changes.get(k, self.p(k)) for k in list(LAW) + list(SINGULARITY) + list(
            OTHER)}
        try:
            for k in ('damping', 'damping_threshold', 'joint_limit_margin', 'velocity_scale',
                      'smoothing_time_constant') + SINGULARITY:
                if not math.isfinite(values[k]):
                    raise ValueError(f'{k} must be finite')
            check_other(values)
            if self.servo is None:
                return SetParametersResult(successful=True)
            model = self.servo.model
            joints, order = command_order(model, values['command_joints'])
            servo = servo_law(model, values, 1.0 / self.p('publish_rate')) if set(changes) & (
                set(LAW) | set(SINGULARITY)) else None
        except ValueError as exc:
            return SetParametersResult(successful=False, reason=str(exc))
        if servo is not None:   # continue from the old law's state: no jump
            servo.carry_state_from(self.servo)
            self.servo = servo
            if 'link' in changes or 'base_frame' in changes:
                self._cmd = None    # a twist meant for another link or frame: stop
        self.outputs.joints, self.outputs.index = joints, order
        return SetParametersResult(successful=True)

    # -- input ----------------------------------------------------------------------------
    def _guarded(self, callback, where, stop=True):
        """
        Return ``callback`` inside the node's error handling: no input may kill the node.

        An error is logged (throttled, its text cut; :func:`~.common.guarded`) and, with
        ``stop`` (the command topics), refuses the command: the arm decelerates to rest.
        """
        def on_error(text, _):
            if stop:
                self._refuse(text)
            else:
                self.get_logger().error(f'{text} (ignored)', throttle_duration_sec=1.0)
        return guarded(callback, where, on_error)

    def _refuse(self, what):
        """Refuse a command: log (throttled), count, and stop the arm smoothly."""
        self._refused += 1
        self._last_refused = what
        self._cmd = ('invalid', None, time.monotonic())
        self.get_logger().error(f'refused {what}; stopping', throttle_duration_sec=1.0)

    def _on_joint_state(self, data):
        if self.state is None:
            return
        try:
            names, position, velocity, stamp = self._reader.read(data)
        except Exception as exc:  # noqa: B902 - whatever rclpy raises for bad bytes
            self.get_logger().error(f'dropped a joint_states message that cannot be read: '
                                    f'{shown(str(exc), ERROR_CHARS)}',
                                    throttle_duration_sec=1.0)
            return
        if not names:
            return
        try:
            unknown = self.state.update_state(names, position, velocity, stamp)
        except StateError as exc:
            self.get_logger().error(f'dropped joint_states message: '
                                    f'{shown(str(exc), ERROR_CHARS)}',
                                    throttle_duration_sec=1.0)
            return
        new = [n for n in unknown if self.state.ignored[n] == 1]   # ignored the first time
        if new:
            self.get_logger().info(f"ignoring joint(s) {shown(', '.join(new))} of "
                                   f'joint_states: not in robot {shown(self.state.model.name)}')
        self.watch.seen()
        # when the state was measured, in ROS time (wall, or sim time with use_sim_time, as
        # the arm's own): its stamp, unless missing or implausible (another machine's
        # clock); then its arrival
        now = self._ros_now()
        stamp = stamp[0] + 1e-9 * stamp[1]
        self._state_time = stamp if stamp > 0 and 0.0 <= now - stamp < 0.05 else now

    def _ros_now(self):
        return self.get_clock().now().nanoseconds * 1e-9

    def _frame(self, name):
        """Return the model link a message's frame names (world_frame: the root), or None."""
        if name == self.p('world_frame'):
            return self.servo.model.root_link
        return name if name in self.servo.model.link_ids else None

    def _command(self, kind, payload):
        self._cmd = (kind, payload, time.monotonic())
        self._arrived = time.perf_counter()
        last = self._last_step
        if last is not None and not self._served:
            self._served = True          # at most once between two timer cycles
            self._step()                 # serve it now; the timer restarts from here
            self._timer.reset()

    def _twist(self, where, vector3s):
        """Return the checked twist (ω, v) of two Vector3, or None after refusing it."""
        a, v = vector3s
        try:
            return checked((a.x, a.y, a.z, v.x, v.y, v.z), TWIST_AXES, 'twist')
        except ValueError as exc:
            self._refuse(f'{where}: {exc}')
            return None

    def _on_twist(self, msg):
        if self.servo is None:
            return
        frame = self._frame(msg.header.frame_id) if msg.header.frame_id else \
            self.servo.base_frame
        if frame is None:
            return self._refuse(f'~/twist_cmd: unknown frame {shown(msg.header.frame_id)} '
                                f'(links of {shown(self.servo.model.name)} or '
                                f"{shown(self.p('world_frame'))})")
        V = self._twist('~/twist_cmd', (msg.twist.angular, msg.twist.linear))
        if V is not None:
            self._command('twist', (V, None, frame))

    def _on_represented(self, msg):
        if self.servo is None:
            return
        where = '~/twist_cmd_represented'
        rep = msg.representation
        if rep not in REPRESENTATIONS:
            return self._refuse(f'{where}: unknown representation {shown(rep)} '
                                f"(expected {', '.join(REPRESENTATIONS)})")
        link, base = self.servo.link, self.servo.base_frame
        want = [link if f == 'link' else base for f in FRAMES[rep][:2]]
        for got, expected, what in zip((msg.angular_frame, msg.linear_frame), want,
                                       ('angular_frame', 'linear_frame')):
            if got and self._frame(got) != expected:
                return self._refuse(f'{where}: {what} {shown(got)} is not the '
                                    f'{shown(expected)} a {rep} twist of {shown(link)} names')
        V = self._twist(where, (msg.angular, msg.linear))
        if V is not None:
            self._command('twist', (V, rep, None))

    def _on_jog(self, msg):
        if self.servo is None:
            return
        model = self.servo.model
        names, velocity = msg.name, msg.velocity
        if len(names) > model.nq or len(velocity) != len(names):
            return self._refuse(f'~/joint_jog: {len(names)} names with {len(velocity)} '
                                f"velocities (robot {shown(model.name)} has {model.nq} "
                                'joints)')
        unknown = [n for n in names if n not in model.joint_names]
        if unknown or len(set(names)) != len(names):
            return self._refuse(f"~/joint_jog: names {shown(', '.join(names))} (unknown: "
                                f"{shown(', '.join(unknown))}); each a joint of "
                                f'{shown(model.name)} at most once')
        try:
            given = checked(velocity, names, 'joint jog velocities')
        except ValueError as exc:
            return self._refuse(f'~/joint_jog: {exc}')
        qd = np.zeros(model.nq)
        qd[[model.joint_index(n) for n in names]] = given
        self._command('jog', qd)

    # -- the loop -------------------------------------------------------------------------
    def _tick(self):
        self._served = False
        self._step()

    def _step(self):
        """Run one cycle inside the node's error handling (the timer's and a command's)."""
        try:
            self._cycle()
        except Exception as exc:  # noqa: B902 - a dead node would leave the arm moving
            self._cycle_failed(exc)

    def _cycle_failed(self, exc):
        """
        Command a stop after a cycle raised; count and report it; keep serving.

        A servo whose process died would leave a ros2_control velocity controller on its
        last command; instead the outputs say stop (velocity 0, position and trajectory
        at the measured position), the law forgets its past (acceleration limits restart
        from rest) and ``/diagnostics`` turns ERROR until a cycle succeeds again.
        """
        self._errors += 1
        self._failed = True
        text = f'{type(exc).__name__}: {shown(str(exc), ERROR_CHARS)}'
        if text != self._last_error:      # each distinct error once, not 1000 times a second
            self._last_error = text
            self.get_logger().error(f'cycle failed ({text}); commanding a stop')
        try:
            if self.servo is not None:
                self.servo.reset()
            q = np.asarray(self.state.q, dtype=float)
            self.outputs.publish(ServoOutput(np.zeros(len(q)), q, self.outputs.status,
                                             math.nan, 0.0))
        except Exception as exc2:  # noqa: B902 - nothing more this node can do
            self.get_logger().error(f'could not command a stop: {exc2}')

    def _cycle(self):
        servo, state = self.servo, self.state
        if servo is None or not state.ready or self.watch.stale():
            return
        now = time.monotonic()
        # the present state: the last measurement advanced by the commands sent since
        t_ros = self._ros_now()
        q = self._history.predict(state.q, self._state_time, t_ros)
        # the time that really passed (acceleration limits, position output), at most two
        # periods: timer jitter is absorbed, but a late cycle (a starved machine) is not
        # caught up in one step, which the robot would see as a jump; after a pause
        # (stale state), one period
        elapsed = math.inf if self._last_step is None else now - self._last_step
        dt = min(max(elapsed, 1e-6), 2.0 * servo.period) if elapsed < 0.1 else servo.period
        self._last_step = now
        t0 = time.perf_counter()
        cmd = self._cmd
        if cmd is None:
            out = servo.stop_step(q, Status.IDLE, dt=dt)
        elif cmd[0] == 'invalid':
            out = servo.stop_step(q, Status.INVALID_COMMAND, dt=dt)
        elif now - cmd[2] > self.p('command_timeout'):
            out = servo.stop_step(q, Status.STALE_COMMAND, dt=dt)
        elif cmd[0] == 'jog':
            out = servo.joint_step(q, cmd[1], dt=dt)
        else:
            V, rep, frame = cmd[1]
            out = servo.twist_step(q, V, representation=rep or 'hybrid', frame=frame, dt=dt)
        self._stats.add(time.perf_counter() - t0)
        self._history.add(t_ros, out.velocities)
        self.outputs.publish(out)
        self._failed = False
        if self._arrived is not None:
            self._latency.add(time.perf_counter() - self._arrived)
            self._arrived = None

    def _diagnostics(self):
        st = DiagnosticStatus(name='liemb_servo', hardware_id='liemb_ros')
        servo = self.servo
        if servo is None:
            err = self.source.error
            st.level = DiagnosticStatus.ERROR if err else DiagnosticStatus.WARN
            st.message = (f'unusable robot description: {err}' if err else
                          'waiting for the robot description on '
                          + self.resolve_topic_name('robot_description'))
        else:
            now = time.monotonic()
            s = self._stats.summary()
            lat = self._latency.summary()
            t0, n0 = self._window
            rate = (self._stats.count - n0) / (now - t0) if now > t0 else 0.0
            self._window = (now, self._stats.count)
            age = self.watch.age()
            if not self.state.ready:
                st.level = DiagnosticStatus.WARN
                st.message = ('waiting for joint states of '
                              + shown(', '.join(self.state.missing_joints())))
            elif self.watch.stale():
                st.level = DiagnosticStatus.WARN
                st.message = f'no joint_states for {age:.2f} s: not commanding'
            elif self._failed:
                st.level = DiagnosticStatus.ERROR
                st.message = f'cycle failed ({self._last_error}): commanding a stop'
            else:
                status = servo.status
                st.level = (DiagnosticStatus.OK if status in (
                    Status.NO_WARNING, Status.IDLE, Status.STALE_COMMAND)
                    else DiagnosticStatus.WARN)
                st.message = status.label
            cmd_age = 'never' if self._cmd is None else f'{now - self._cmd[2]:.3f}'
            st.values = [KeyValue(key=k, value=v) for k, v in (
                ('status', servo.status.label), ('condition_number', f'{servo.condition:.4g}'),
                ('link', shown(servo.link)), ('base_frame', shown(servo.base_frame)),
                ('rate_hz', f'{rate:.1f}'), ('compute_p50_us', f"{s['p50']:.1f}"),
                ('compute_p99_us', f"{s['p99']:.1f}"), ('compute_max_us', f"{s['max']:.1f}"),
                ('command_to_output_p50_us', f"{lat['p50']:.1f}"),
                ('command_to_output_p99_us', f"{lat['p99']:.1f}"),
                ('command_age_s', cmd_age), ('refused_commands', str(self._refused)),
                ('last_refused', self._last_refused or 'none'),
                ('last_state_age_s', f'{age:.3f}' if math.isfinite(age) else 'never'),
                ('ignored_joints', _names(self.state.ignored)),
                ('failed_cycles', str(self._errors)),
                ('last_error', self._last_error or 'none'))]
        msg = DiagnosticArray(status=[st])
        msg.header.stamp = self.get_clock().now().to_msg()
        self.outputs.pub_diag.publish(msg)


def _names(names, first=32):
    """Return names from messages for ``/diagnostics``: the first ones, cut, and a count."""
    if not names:
        return 'none'
    more = len(names) - first
    text = shown(', '.join(itertools.islice(names, first)))
    return text + (f' and {more} more' if more > 0 else '')


def main(args=None):
    """Run the servo node until Ctrl-C or SIGTERM; exit 1 when it cannot work."""
    return run(ServoNode, args)


if __name__ == '__main__':
    sys.exit(main())
