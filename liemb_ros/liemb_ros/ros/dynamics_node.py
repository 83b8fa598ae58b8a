"""
``dynamics_node``: real-time inverse dynamics, twists, joint wrenches and Jacobians.

Reads the robot from the ``robot_description`` parameter, a URDF or xacro file / shipped
robot name (``urdf_path``, ``xacro_args``), or else the transient-local
``robot_description`` topic (as robot_state_publisher publishes it; it waits for it, and
says so in its log and ``/diagnostics``).  Subscribes to ``joint_states`` (SensorDataQoS;
joints the model does not know are ignored and counted, partial messages merge by name),
``odom`` (``nav_msgs/Odometry``, floating base only: the base pose and body-fixed twist)
and ``~/desired`` (``trajectory_msgs/JointTrajectoryPoint``: desired accelerations in
``command_joints`` order for full inverse dynamics).  On every joint state
(``publish_rate = 0``) or at a fixed rate it publishes:

* ``~/joint_torques`` (``sensor_msgs/JointState``, effort = torque) and
  ``~/effort_command`` (``std_msgs/Float64MultiArray`` in ``command_joints`` order, for a
  ros2_control effort / forward-command controller: remap it to
  ``/<controller>/commands``);
* ``~/twists`` (``liemb_interfaces/TwistRepresentedArray``: every twist states its
  representation and the frames its rows are resolved in);
* ``~/wrench/<joint>`` (``geometry_msgs/WrenchStamped`` in the child link frame);
* ``~/markers`` (``visualization_msgs/MarkerArray``: arrows for twists and wrenches);
* ``/diagnostics`` (cycle-time p50/p99/max, rate, dropped messages);
* with ``payload_estimation.link`` set, ``~/payload_estimate`` and its covariance: the
  payload of that link estimated online from the efforts of ``joint_states``, copied into
  the ``payload.*`` parameters only by ``~/payload_estimate/apply``
  (:mod:`liemb_ros.ros.dynamics_payload`).

Controller modes (``mode``, switchable at run time; the laws are :mod:`liemb_ros.control`):

* ``gravity_compensation``: ``τ = g(q)``; ``inverse_dynamics``: ``τ = ID(q, q̇, q̈_d)`` of
  ``~/desired``;
* ``computed_torque``: ``τ = M(q̈_d + K_d ė + K_p e) + C q̇ + g + D q̇_d + F tanh(q̇_r/v_f)``
  (``D``, ``F`` the URDF joint damping and Coulomb friction, as feed-forwards, the friction
  along ``q̇_r = q̇_d + K_d⁻¹ K_p e``; the friction term off with
  ``computed_torque.friction_compensation: false``) tracking ``~/joint_trajectory``
  (``trajectory_msgs/JointTrajectory``: joints by name, a subset holds the others; quintic
  between points with accelerations, cubic with velocities, linear with positions only; a
  new one replaces the old, going from the state to its first point still ahead; one that
  comes before the first complete joint state waits for it; after the end it holds the
  last point; with none it holds the position where the mode started;
  ``computed_torque.trajectory_file`` is a YAML trajectory tracked once the state is known,
  ``computed_torque.repeat`` starts it again 1 s after its end); or a
  ``control_msgs/action/FollowJointTrajectory`` goal on ``~/follow_joint_trajectory``, as a
  JointTrajectoryController serves it (:mod:`liemb_ros.ros.trajectory_action`; a goal
  succeeds only within its goal tolerances, by default ``computed_torque.goal_tolerance``
  and ``computed_torque.stopped_velocity_tolerance``, at the latest
  ``computed_torque.goal_time`` after its end).  Every trajectory, whichever way it comes,
  is read, timed and checked in a thread of its own, never in the control loop's
  (:mod:`liemb_ros.ros.trajectory_intake`): ``header.stamp`` 0, or at most 0.1 s before it
  came, is now; a later stamp is when it starts; one that ends in the past is refused; one
  whose start is past leaves out the points already due.  It is refused, with the joint,
  the point (index, ``time_from_start``) and the limit, when a position leaves the URDF
  limits (by more than 1 mm or 1 mrad), a velocity or the feed-forward torque
  ``ID(q_d, q̇_d, q̈_d)`` (with armature, damping, friction) exceeds the URDF velocity or
  effort limit, anywhere along it (sampled every 1 ms, the segment from the current state
  included), or it ends moving, or it has more than 10 000 points (a topic message: more
  than 16 MiB); a refusal says by how much the trajectory, slowed down, would fit
  (:func:`liemb_ros.control.check_limits`).  Gains
  ``computed_torque.kp`` (1/s²) and ``computed_torque.kd`` (1/s): one value or one per
  joint.  ``/diagnostics`` reports the largest joint error of the last cycle, and
  ``~/controller_state`` (``control_msgs/JointTrajectoryControllerState``, what a ros2_control
  JointTrajectoryController publishes; at most ``controller_state_rate`` per second, 0: none;
  built only while someone subscribes)
  the state it came from: ``reference`` (q_d, q̇_d, q̈_d, ``time_from_start`` since the
  trajectory's start), ``feedback`` (q, q̇), ``error`` (reference - feedback: positions,
  velocities), ``output`` (effort: the torque commanded, clamped as ``~/effort_command``),
  all in the order of ``joint_names`` (the model's joints), stamped with the state's stamp;
* ``cartesian_impedance``: ``τ = Jᵀ(K e - D V) + g`` (+ a null-space posture term
  ``impedance.null_stiffness``, ``impedance.null_damping`` towards the posture where the
  mode started) for ``impedance.link``, with ``impedance.stiffness`` and
  ``impedance.damping`` (6 values: angular rows first, then linear) in
  ``impedance.representation`` (``body``: about / along the link's axes; ``hybrid``: about
  / along the world axes, at the link origin), towards ``~/target_pose``
  (``geometry_msgs/PoseStamped`` in ``world_frame``; with none it holds the pose where the
  mode started).  ``impedance.friction_compensation`` (off by default) adds the URDF
  Coulomb friction along where the springs pull (``liemb_ros.control`` says when to use it).

``armature`` (one value or one per joint, kg m² or kg) is the rotor inertia reflected to
each joint, which no URDF states: computed_torque and inverse_dynamics use
``M(q) + diag(armature)`` (give the simulation node the same ``armature``).

``payload.link``, ``payload.mass``, ``payload.com`` (link frame), ``payload.inertia``
(ixx ixy ixz iyy iyz izz about the centre of mass) and ``gravity`` (world frame; empty: the
model's) rebuild the model once when they change (every mode then includes the payload in
M, C and g; the loop costs the same).  A bad trajectory or target (unknown joints,
non-increasing times, NaN, another frame, beyond a limit) is refused with the reason in the
log, counted as dropped in ``/diagnostics`` and nothing is commanded from it; bad gains are
refused as parameter changes with the reason.  Magnitudes beyond physical plausibility are
refused with the bound (:mod:`liemb_ros.control.engine_state`: joint positions 1e6, velocities
1e4, accelerations 1e6, positions in the world 1e7 m; a payload's centre of mass 100 m,
inertia 1e6 kg m², gravity 1e3 m/s²).  Every callback runs inside the node's error
handling (an error drops the input, logged and counted; the node goes on), every output is
checked finite before it goes out, and text from messages (frame ids, joint names) reaches
the log and ``/diagnostics`` quoted and cut (:func:`liemb_ros.ros.conversions.shown`).

Serves ``~/get_jacobian`` (``liemb_interfaces/GetJacobian``, J or J̇).  ``mode``,
``representation``, ``twist_links``, ``wrench_joints`` and ``command_joints`` can be
changed at run time, several at once all or none; invalid values are refused with a
reason.  A bad message is logged (throttled) and dropped; the node keeps its last good
state.  Outputs are checked finite and refused (logged, counted) otherwise.

Stale input: when no joint state has arrived for ``state_timeout`` seconds, the node stops
publishing commands (it never commands from an old state; a ros2_control forward-command
controller then holds its last command, so give the consumer its own timeout, as our
simulation node's ``effort_timeout``) and ``/diagnostics`` turns WARN with the age of the
last state.  A parameter or file that cannot work (missing file, unknown link or joint)
ends the process with exit code 1 and the reason.
"""
import copy
import sys
import time

import numpy as np
import rclpy
from builtin_interfaces.msg import Time
from geometry_msgs.msg import PoseStamped
from liemb_interfaces.srv import GetJacobian
from nav_msgs.msg import Odometry
from rcl_interfaces.msg import SetParametersResult
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from .common import (STEADY, ConfigError, Preparation, RobotSource, StateWatch, declare,
                     guarded, realtime_priority, run, settle_heap)
from .conversions import pose_matrix, shown
from .dynamics_diagnostics import Counters, DynamicsDiagnostics
from .dynamics_loop import DynamicsLoop
from .dynamics_output import RELIABLE, DynamicsOutputs, bounded
from .dynamics_payload import PayloadEstimation
from .dynamics_parameters import engine_settings, parameter_table
from .dynamics_trajectories import Trajectories, read_trajectory_file
from ..control.engine import FRAMES, DynamicsEngine, StateError
from . import trajectory_intake as intake
from .trajectory_action import TrajectoryAction

# The node owns its parts: its loop (dynamics_loop.py: joint states in, one cycle of the
# engine out), its outputs (dynamics_output.py: what one cycle publishes), its /diagnostics
# and the counts they report (dynamics_diagnostics.py), the age of the last joint state
# (common.StateWatch), the topic's and the file's trajectories (dynamics_trajectories.py)
# and the trajectory action (trajectory_action.py); its parameters are
# dynamics_parameters.py's table (imported from here too: app.parameter_docs, the tests).
# This module is the robot, the parameter changes, the command inputs (desired
# accelerations, target pose, odometry), the Jacobian service and main().


class DynamicsNode(Node):
    """Thin ROS adapter over :class:`liemb_ros.control.engine.DynamicsEngine`."""

    NAME = 'liemb_dynamics'

    def __init__(self, **kwargs):
        super().__init__(self.NAME, **kwargs)
        self.checker = self.action = self.io_node = None   # destroy_node's parts, once made
        try:
            self._build()
        except (ConfigError, KeyboardInterrupt):
            # destroyed now: rclpy's shutdown destroys a node while holding the context's
            # lock, which the action's thread needs to end (its join waited out 10 s)
            self.destroy_node()
            raise

    def _build(self):
        """Make the node's parts; ConfigError when a parameter or the robot cannot work."""
        self.source = RobotSource(self, self._on_robot)
        declare(self, parameter_table())
        self.engine = None
        self._candidate = self._preparing = self._odom_sub = None
        self._pending_desired = None
        trajectory_file = read_trajectory_file(self.p('computed_torque.trajectory_file'))
        self.counters = Counters()   # what /diagnostics reports
        self.watch = StateWatch(lambda: self.p('state_timeout'))   # the last good joint state
        # The 1 kHz path (joint_states in; torques and effort command out) lives on a node
        # of its own, '<name>_io', with no other entity: rclpy's executor rebuilds its wait
        # set from every entity of a node on each wake-up, 150-450 µs for this node's 40
        # (services, parameter services, action, publishers' event handlers), which
        # run() (common.spin) waits on only between joint states, every few ms.
        # Names are resolved here (namespace, remapping), the io node takes them as they are.
        self.io_node = rclpy.create_node(
            f'{self.get_name()}_io', namespace=self.get_namespace(), context=self.context,
            use_global_arguments=False, enable_rosout=False, start_parameter_services=False)
        self.outputs = DynamicsOutputs(self, self.io_node, self.counters, self._guarded,
                                       self.p('controller_state_rate'))
        self.diagnostics = DynamicsDiagnostics(self, self.counters, self.watch, self.source)
        self.payload_estimation = PayloadEstimation(self, self._guarded)   # ~/payload_estimate
        self.create_subscription(JointTrajectoryPoint, '~/desired', self._guarded(
            self._on_desired, '~/desired'), RELIABLE)
        self.create_subscription(JointTrajectory, '~/joint_trajectory', self._guarded(
            self._on_trajectory, '~/joint_trajectory'), RELIABLE, raw=True)
        self.create_subscription(PoseStamped, '~/target_pose', self._guarded(
            self._on_target_pose, '~/target_pose'), RELIABLE)
        self.create_service(GetJacobian, '~/get_jacobian', self._guarded(
            self._on_get_jacobian, '~/get_jacobian', _failed_jacobian))
        self.action = TrajectoryAction(self)   # ~/follow_joint_trajectory
        # trajectories are read and checked in a thread of their own (trajectory_intake), whose
        # Python hands the GIL to the loop's thread within SWITCH_INTERVAL
        sys.setswitchinterval(intake.SWITCH_INTERVAL)
        self.checker = intake.Checker(self)
        self.trajectories = Trajectories(self, trajectory_file, self.checker, self.action,
                                         self.refuse, self._guarded, self.state_time,
                                         self.snapshot)   # ~/joint_trajectory, the file
        self.loop = DynamicsLoop(self, self.io_node, self.counters, self.watch, self.outputs,
                                 self.trajectories, self.action, self._reject,
                                 self._guarded)   # joint_states in, a cycle out
        self.create_timer(self.get_parameter('diagnostics_period').value, self._guarded(
            self._diagnostics, '/diagnostics'),
                          clock=STEADY)
        self.source.start()
        self.add_on_set_parameters_callback(self._guarded(
            self._on_parameters, 'parameters', lambda text, params: SetParametersResult(
                successful=False, reason=text)))

    def p(self, name):
        """Return the value of parameter ``name``."""
        return self.get_parameter(name).value

    # -- robot ------------------------------------------------------------------------------
    def destroy_node(self):
        """Destroy the io and action nodes with this one; stop the checker's thread."""
        try:
            if self.checker is not None:
                self.checker.close()
            if self.action is not None:
                self.action.destroy()   # joins the action's thread (see there)
            if self.io_node is not None:
                self.io_node.destroy_node()
        finally:
            super().destroy_node()

    def _on_robot(self, model, xml, where):
        """Build the engine for a new robot; ConfigError when the parameters do not fit it."""
        try:
            engine = DynamicsEngine(model, **self._settings({}))
            self.payload_estimation.make_estimator(engine)   # the estimation's parameters fit it
        except ValueError as exc:
            raise ConfigError(f'the parameters do not fit robot {shown(model.name)} from {where}: '
                              f'{exc}') from None
        # compile now, not in the first cycle; in a thread, so that the node answers meanwhile
        self._candidate = engine
        self._preparing = Preparation(
            self, lambda: engine.warm_up() + _warm_intake(),
            lambda warm: self._install(engine, where, warm), f'robot {shown(model.name)}')

    def _install(self, engine, where, warm):
        """Serve a prepared engine (in the executor thread)."""
        if engine is not self._candidate:
            return   # a newer description replaced it while it compiled
        engine.configure(**self._settings({}))   # changed while compiling
        model = engine.model
        first = self.engine is None
        self.engine, self._candidate, self._preparing = engine, None, None
        self.outputs.serve(engine)
        self.loop.serve(engine)
        self.payload_estimation.serve(self.payload_estimation.make_estimator(engine))
        if model.floating and self._odom_sub is None:
            self._odom_sub = self.create_subscription(
                Odometry, 'odom', self._guarded(self._on_odometry, 'odom'),
                qos_profile_sensor_data)
        if self._pending_desired is not None:
            self._apply_desired(self._pending_desired)
            self._pending_desired = None
        self.outputs.make_wrench_publishers()
        if first:
            self.loop.set_rate(self.p('publish_rate'))
            self.outputs.set_secondary_rate(self.p('secondary_rate'))
            scheduling = self.diagnostics.scheduling = realtime_priority(
                self.p('realtime_priority'))
            if scheduling.startswith('normal ('):
                self.get_logger().warning(f'{scheduling}: the loop runs at normal '
                                          'priority (grant rtprio in /etc/security/limits.conf '
                                          'or CAP_SYS_NICE)')
        base = ' floating base (odometry on ' + self.resolve_topic_name('odom') + ');' \
            if model.floating else ''
        settle_heap()   # no full garbage collection over the libraries in the loop
        self.get_logger().info(f'robot {shown(model.name)} ({model.nq} joints) from {where};'
                               f'{base} mode {engine.mode}, twists of '
                               f'{shown(", ".join(engine.twist_links))} '
                               f'in {engine.representation}; kernels ready in {warm:.1f} s')

    # -- parameters -------------------------------------------------------------------------
    def _settings(self, changes):
        """Return the engine settings of all parameters (``changes`` empty) or those changed."""
        return engine_settings(changes, self.p)

    def _on_parameters(self, params):
        """Check every changed parameter first, then apply them all (or none)."""
        changes = {p.name: p.value for p in params}
        for name in ('publish_rate', 'secondary_rate', 'state_timeout', 'marker_rate',
                     'marker_scale', 'controller_state_rate'):
            if name in changes and not np.isfinite(changes[name]):
                return SetParametersResult(successful=False,
                                           reason=f'{name} must be a finite number')
        settings = self._settings(changes) if changes else {}
        if settings and (self.engine is not None or self._candidate is not None):
            try:
                if self.engine is not None:
                    self.engine.configure(**settings)
                else:   # compiling: check on a copy, _install applies the parameters
                    copy.copy(self._candidate).configure(**settings)
            except ValueError as exc:
                return SetParametersResult(successful=False, reason=str(exc))
            if self.engine is not None:
                self.outputs.make_wrench_publishers()
                if 'gravity' in settings or 'armature' in settings:   # the known robot
                    self.payload_estimation.serve(
                        self.payload_estimation.make_estimator(self.engine))
        if 'publish_rate' in changes:
            self.loop.set_rate(changes['publish_rate'])
        if 'controller_state_rate' in changes:
            self.outputs.set_state_rate(changes['controller_state_rate'])
        if 'secondary_rate' in changes and self.engine is not None:
            self.outputs.set_secondary_rate(changes['secondary_rate'])
        return SetParametersResult(successful=True)

    # -- input ------------------------------------------------------------------------------
    def _reject(self, what):
        """Drop a bad input message: counted, logged (throttled, the text cut)."""
        self.counters.rejected += 1
        if self.engine is not None:
            self.engine.stats.dropped += 1
        self.get_logger().error(f'dropped {bounded(what)}', throttle_duration_sec=1.0)

    def refuse(self, what):
        """Drop a command (trajectory, target): counted, logged (throttled per 0.1 s only)."""
        self.counters.rejected += 1
        self.get_logger().error(f'refused {bounded(what)}', throttle_duration_sec=0.1)

    def _guarded(self, callback, where, failed=None):
        """
        Return ``callback`` inside the node's error handling (:func:`common.guarded`).

        An error is logged (throttled, its text cut) and counted as a dropped input;
        ``failed(text, *args)``: what the callback returns then (a service's response, a
        parameter change's result), else None.
        """
        def on_error(text, args):
            self._reject(text)
            return None if failed is None else failed(text, *args)
        return guarded(callback, where, on_error)

    def _diagnostics(self):
        """Publish ``/diagnostics`` (the diagnostics timer)."""
        compiling = None
        if self.engine is None and self._preparing is not None:
            compiling = (self._candidate.model.name, self._preparing)
        self.diagnostics.publish(self.engine, compiling, self.payload_estimation.diagnostic())

    def _on_odometry(self, msg):
        """Floating base: pose (in header.frame_id) and body-fixed twist (child_frame_id)."""
        t = msg.twist.twist
        try:
            self.engine.update_base(pose_matrix(msg.pose.pose),
                                    [t.angular.x, t.angular.y, t.angular.z,
                                     t.linear.x, t.linear.y, t.linear.z])
        except ValueError as exc:   # StateError is one
            self._reject(f'odom message: {exc}')

    def _on_desired(self, msg):
        if self.engine is None:
            # Kept until the robot is known (robot_description may come later).
            self._pending_desired = list(msg.accelerations)
            return
        self._apply_desired(msg.accelerations)

    def _now(self):
        """Return the node clock in seconds (/clock with use_sim_time)."""
        return self.get_clock().now().nanoseconds * 1e-9

    def state_time(self):
        """
        Return the time of the state the torques come from: its stamp (else the clock).

        The trajectory is sampled there, so that q and q_d are of the same instant (sampled
        at the arrival instead, the desired state would lead the measured one by the
        transport delay: 2-3 mrad at 1.4 rad/s and 2 ms).
        """
        t = self.engine.stamp
        if t is not None and (t[0] or t[1]):
            return t[0] + t[1] * 1e-9
        return self._now()

    def stamp_msg(self):
        """Return the stamp of the state (a ``builtin_interfaces/Time``), else the clock's."""
        t = self.engine.stamp if self.engine is not None else None
        if t is None:
            return self.get_clock().now().to_msg()
        return Time(sec=t[0], nanosec=t[1])

    def snapshot(self):
        """Return ``(q, q̇, time)`` of the latest state (any thread)."""
        return self.engine.state_snapshot()

    def _on_trajectory(self, data):
        """Take a ``~/joint_trajectory`` (its CDR bytes): :class:`Trajectories` tracks it."""
        self.trajectories.on_topic(data)

    def _on_target_pose(self, msg):
        """Take a target pose of the impedance link, in world_frame."""
        world = self.p('world_frame')
        if self.engine is None:
            self.refuse('~/target_pose: no robot yet')
            return
        if msg.header.frame_id not in ('', world):
            self.refuse(f'~/target_pose in frame {shown(msg.header.frame_id)}: expected '
                        f'{shown(world)} (world_frame)')
            return
        try:
            self.engine.set_target_pose(pose_matrix(msg.pose))
        except ValueError as exc:   # StateError is one
            self.refuse(f'~/target_pose: {exc}')

    def _apply_desired(self, accelerations):
        try:
            self.engine.set_desired_acceleration(accelerations)
        except StateError as exc:
            self._reject(f'~/desired point: {exc}')

    # -- service ------------------------------------------------------------------------------
    def _on_get_jacobian(self, req, resp):
        e = self.engine
        if e is None:
            resp.success = False
            resp.message = ('compiling kernels for the robot; ask again in a moment'
                            if self._preparing is not None else 'no robot model loaded yet')
            return resp
        try:
            J, cols = e.jacobian(req.link, req.representation or 'body', req.derivative,
                                 req.joint_names, req.positions, req.velocities)
        except (ValueError, StateError) as exc:
            resp.success = False
            resp.message = str(exc)
            return resp
        world = self.get_parameter('world_frame').value
        ang, lin, point = FRAMES[req.representation or 'body']
        resp.success = True
        resp.message = ''
        resp.rows, resp.cols = J.shape
        resp.data = J.ravel().tolist()
        resp.joint_names = cols
        resp.angular_frame = req.link if ang == 'link' else world
        resp.linear_frame = req.link if lin == 'link' else world
        resp.reference_point = f'origin of {req.link if point == "link origin" else world}'
        return resp


def _failed_jacobian(text, req, resp):
    """Return the response of a ``~/get_jacobian`` request that failed (``text``: why)."""
    resp.success = False
    resp.message = text
    return resp


def _warm_intake():
    """Compile the trajectory reader (:func:`intake.warm_up`); return the seconds it took."""
    t0 = time.perf_counter()
    intake.warm_up()
    return time.perf_counter() - t0


def main(args=None):
    """Run the dynamics node until Ctrl-C or SIGTERM; exit 1 when it cannot work."""
    return run(DynamicsNode, args)


if __name__ == '__main__':
    sys.exit(main())
