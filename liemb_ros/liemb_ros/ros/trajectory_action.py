"""
The dynamics node's ``~/follow_joint_trajectory`` action (control_msgs/FollowJointTrajectory).

What a ros2_control JointTrajectoryController serves, for the ``computed_torque`` mode: a goal's
``trajectory`` is read, timed and checked against the robot's limits as one on
``~/joint_trajectory`` (:mod:`liemb_ros.ros.trajectory_intake`: joints by name, a subset
holds the others; ``header.stamp`` 0 = now), in the checker's thread, while the goal
callback waits without holding up the control loop; a goal is refused (the reason in the
log) when the node has no robot or state yet, is in another mode, the trajectory cannot be
tracked or leaves a limit (the joint, the point, the limit), it has more than
:data:`~liemb_ros.ros.trajectory_intake.MAX_POINTS` points, or
:data:`~liemb_ros.ros.trajectory_intake.QUEUE` trajectories wait for their check.  A new goal
or a trajectory on the topic replaces the active goal, which aborts; a cancelled goal holds
the arm where it is.  Feedback (desired, actual, error of the goal's joints, ``index`` the
point being approached) comes with ``~/controller_state`` (none when
``controller_state_rate`` is 0); the trajectory file of ``computed_torque.repeat`` waits while
a goal runs.

Tolerances, as JointTrajectoryController takes a ``JointTolerance``: a value > 0 is the
tolerance, 0 (or a joint not listed) the node's default, -1 none.  Defaults: no path
tolerance; at the goal, ``computed_torque.goal_tolerance`` (position) and
``computed_torque.stopped_velocity_tolerance`` (velocity); ``goal_time_tolerance`` 0:
``computed_torque.goal_time``.  The goal succeeds once the trajectory has ended and every
joint it moves is within its goal tolerances, at the latest the goal time after the end
(else GOAL_TOLERANCE_VIOLATED); it aborts with PATH_TOLERANCE_VIOLATED as soon as a joint
leaves its path tolerance (and holds there).  Multi-DOF trajectories and component
tolerances are refused (no multi-DOF joints here).
"""
import threading

import numpy as np
import rclpy
from control_msgs.action import FollowJointTrajectory
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import SingleThreadedExecutor
from rclpy.task import Future

from .common import error_text
from .conversions import shown
from .trajectory_intake import MAX_POINTS, QUEUE, prepare, read_trajectory_msg

Result = FollowJointTrajectory.Result


def _seconds(d):
    return d.sec + 1e-9 * d.nanosec


def _tolerances(items, names, default, what):
    """
    Per-joint (position, velocity) tolerances of ``names`` (inf: not checked); ValueError.

    ``default``: (names, 2) for the joints a ``JointTolerance`` leaves at 0 or unlisted.
    """
    tol = np.array(default, dtype=float)
    index = {n: i for i, n in enumerate(names)}
    if len(items) > len(names):
        raise ValueError(f'{len(items)} {what} entries for {len(names)} joints')
    for t in items:
        if t.name not in index:
            raise ValueError(f'{what} for joint {shown(t.name)}, which the trajectory does '
                             'not move')
        for k, v in enumerate((t.position, t.velocity)):
            if v > 0:
                tol[index[t.name], k] = v
            elif v < 0:   # -1: erased
                tol[index[t.name], k] = np.inf
    return tol


class TrajectoryAction:
    """
    The action server of a :class:`~liemb_ros.ros.dynamics_node.DynamicsNode`.

    It lives on a node of its own, ``<name>_action``, spun by its own executor in a thread
    of its own: rclpy's action server takes (deserialises) a goal in the thread that spins
    it, 0.1-0.3 s for 10 000 points, and the dynamics node's thread is the control loop's.
    In that thread the Python of a goal gives the GIL back within
    :data:`~liemb_ros.ros.trajectory_intake.SWITCH_INTERVAL`; what runs in C holding it
    (about 2-3 µs per point) still holds the loop up.  The goal becomes the active one in
    the loop's thread (an executor task there); the loop ends it.  Of the node it uses the
    public side: ``engine``, ``checker``, ``p``, ``state_time``, ``snapshot``, ``refuse`` and
    ``stamp_msg``.
    """

    def __init__(self, node):
        self.node = node
        self.active = None   # the goal being executed: a dict, see _track
        self._futures = {}   # goal id -> the future its execution waits for
        self._prepared = {}  # id of an accepted goal's request -> what _prepare returned
        self.action_node = rclpy.create_node(
            f'{node.get_name()}_action', namespace=node.get_namespace(), context=node.context,
            use_global_arguments=False, enable_rosout=False, start_parameter_services=False)
        self.executor = SingleThreadedExecutor(context=node.context)
        # reentrant: an executing goal (a coroutine waiting for the control loop) holds its
        # callback group, and new goals and cancel requests come meanwhile
        self.server = ActionServer(
            self.action_node, FollowJointTrajectory,
            node.resolve_topic_name('~/follow_joint_trajectory'),
            execute_callback=self._execute, goal_callback=self._on_goal,
            handle_accepted_callback=self._accepted, cancel_callback=self._on_cancel,
            callback_group=ReentrantCallbackGroup())
        self.executor.add_node(self.action_node)
        self._thread = threading.Thread(target=self._spin, daemon=True,
                                        name=f'{node.get_name()}_action')
        self._thread.start()

    def _spin(self):
        try:
            self.executor.spin()
        except Exception:  # noqa: B902 - the context shut down (the node ends)
            pass

    def destroy(self):
        """
        Stop the action's thread, wait for it to end, and destroy its node.

        The thread is joined: a daemon thread still inside rclpy's wait (C++ with the GIL
        released) when the interpreter exits is ended by a forced unwind that C++ turns
        into ``std::terminate``, and the node exited with SIGABRT (-6) instead of 0 after
        Ctrl-C on a loaded machine (CI run 2 of issue 28).  After Ctrl-C the context is
        shut down already and ``executor.shutdown`` may raise; the thread's spin ends then
        by itself (it checks the context), so the join still returns.
        """
        try:
            self.executor.shutdown(timeout_sec=1.0)
        except Exception:  # noqa: B902 - a context shut down by the signal handler
            pass
        self._thread.join(timeout=10.0)
        self.action_node.destroy_node()

    def _future(self):
        """Return a future whose result, set from any thread, wakes this executor."""
        future = Future()
        future.add_done_callback(lambda _: self.executor.wake())
        return future

    # -- goals --------------------------------------------------------------------------
    def _refusal(self, goal):
        """Return why ``goal`` cannot be taken, judged before reading its points (or None)."""
        e = self.node.engine
        if e is None or not e.ready:
            return 'no robot or no complete joint state yet'
        if e.mode != 'computed_torque':
            return f'mode is {e.mode}: goals are tracked in computed_torque only'
        if goal.multi_dof_trajectory.joint_names or goal.multi_dof_trajectory.points:
            return 'multi-DOF trajectories are not supported'
        if goal.component_path_tolerance or goal.component_goal_tolerance:
            return 'component tolerances (multi-DOF joints) are not supported'
        n = len(goal.trajectory.points)
        if n > MAX_POINTS:
            return (f'{n} points: at most {MAX_POINTS} (the check of a trajectory against '
                    'the limits costs time in proportion)')
        return None

    def _defaults(self):
        """Return the goal tolerances (model joints, 2) and goal time of the parameters."""
        p = self.node.p
        tol = np.empty((self.node.engine.model.nq, 2))
        tol[:, 0] = p('computed_torque.goal_tolerance')   # one value or one per joint
        tol[:, 1] = p('computed_torque.stopped_velocity_tolerance')
        return tol, p('computed_torque.goal_time')

    async def _on_goal(self, goal):
        """Check the goal in the checker's thread; accept it when it can be tracked."""
        node = self.node
        try:
            reason = self._refusal(goal)
            if reason is None:
                future = self._future()
                received, defaults = node.state_time(), self._defaults()
                job = (lambda: self._prepare(goal, received, defaults))
                if node.checker.submit(job, future.set_result):
                    result = await future
                    if not isinstance(result, Exception):
                        self._prepared[id(goal)] = result
                        return GoalResponse.ACCEPT
                    reason = str(result)
                else:
                    reason = f'busy: {QUEUE} trajectories wait for their check'
        except Exception as exc:  # noqa: B902 - a goal must never take the node down
            reason = error_text('its check', exc)
        node.refuse(f'~/follow_joint_trajectory goal: {reason}')
        return GoalResponse.REJECT

    def _prepare(self, goal, received, defaults):
        """
        Read and check ``goal`` (the checker's thread).

        Return ``(trajectory, names, path tolerance, goal tolerance, goal time)``.
        """
        e = self.node.engine
        model = e.model
        traj = read_trajectory_msg(goal.trajectory, model)
        names = traj.names
        cols = [model.joint_index(n) for n in names]
        tol, goal_time = defaults
        path = _tolerances(goal.path_tolerance, names, np.full((len(names), 2), np.inf),
                           'path_tolerance')
        tol = _tolerances(goal.goal_tolerance, names, tol[cols], 'goal_tolerance')
        slack = _seconds(goal.goal_time_tolerance)
        trajectory = prepare(e, traj, received, self.node.snapshot)
        return trajectory, names, path, tol, slack if slack > 0 else goal_time

    def _accepted(self, handle):
        """Start executing the accepted goal; the loop's thread makes it the active one."""
        future = self._future()
        self._futures[bytes(handle.goal_id.uuid)] = future
        prepared = self._prepared.pop(id(handle.request), None)
        self.node.executor.create_task(self._track, handle, future, prepared)
        handle.execute()

    def _track(self, handle, future, prepared):
        """
        Make the prepared goal the active one (the loop's thread), replacing the last.

        Its future gets INVALID_GOAL instead when the mode or the robot changed meanwhile,
        or anything fails here.
        """
        try:
            self._activate(handle, future, prepared)
        except Exception as exc:  # noqa: B902 - a goal must never take the node down
            text = error_text('~/follow_joint_trajectory goal', exc)
            self.node.refuse(text)
            if not future.done():
                future.set_result(Result(error_code=Result.INVALID_GOAL, error_string=text))

    def _activate(self, handle, future, prepared):
        e = self.node.engine
        if prepared is None or e is None or e.mode != 'computed_torque' or (
                prepared[0].joint_names != e.model.joint_names):
            future.set_result(Result(error_code=Result.INVALID_GOAL,
                                     error_string='the mode or the robot changed meanwhile'))
            return
        trajectory, names, path, tol, slack = prepared
        self.finish('replaced by a new goal', Result.INVALID_GOAL)
        e.trajectory = trajectory
        times = trajectory.start + trajectory.time_from_start
        self.active = {'handle': handle, 'future': future, 'trajectory': trajectory,
                       'cols': np.array([e.model.joint_index(n) for n in names]),
                       'names': names, 'end': times[-1], 'path': path, 'tol': tol,
                       'slack': slack, 'times': times}

    async def _execute(self, handle):
        result = await self._futures.pop(bytes(handle.goal_id.uuid))
        if handle.is_active:   # ended before it started
            handle.abort()
        return result

    def _on_cancel(self, handle):
        return CancelResponse.ACCEPT

    def finish(self, text, code, succeeded=False):
        """End the active goal (succeeded, or aborted with ``code``), if there is one."""
        goal, self.active = self.active, None
        if goal is None:
            return
        handle = goal['handle']
        if handle.is_active:
            if succeeded:
                handle.succeed()
            elif handle.is_cancel_requested:
                handle.canceled()
            else:
                handle.abort()
        goal['future'].set_result(Result(error_code=code, error_string=text))

    # -- the control loop -------------------------------------------------------------------
    def cycle(self, feedback):
        """
        Check the active goal against the state just computed; end it when it is done.

        ``feedback``: whether to publish feedback this cycle (at the controller_state rate).
        """
        goal = self.active
        if goal is None:
            return
        e = self.node.engine
        handle = goal['handle']
        if e.mode != 'computed_torque' or e.trajectory is not goal['trajectory']:
            self.finish('the trajectory was replaced (another trajectory, or mode '
                        f'{e.mode})', Result.INVALID_GOAL)
            return
        if handle.is_cancel_requested:
            e.hold(goal['names'])
            self.finish('cancelled', Result.SUCCESSFUL)
            return
        cols = goal['cols']
        q_d, qd_d, qdd_d = e.reference
        q, qd = e.q[cols], e.qd[e.model.nv - e.model.nq:][cols]
        err = np.stack([q_d[cols] - q, qd_d[cols] - qd], axis=1)
        if feedback and np.isfinite(err).all() and np.isfinite(qdd_d).all():
            fb = FollowJointTrajectory.Feedback()
            fb.header.stamp = self.node.stamp_msg()
            fb.joint_names = goal['names']
            fb.desired.positions, fb.desired.velocities = q_d[cols].tolist(), qd_d[cols].tolist()
            fb.desired.accelerations = qdd_d[cols].tolist()
            fb.actual.positions, fb.actual.velocities = q.tolist(), qd.tolist()
            fb.error.positions, fb.error.velocities = err[:, 0].tolist(), err[:, 1].tolist()
            fb.index = int(min(np.searchsorted(goal['times'], e.now, side='right'),
                               len(goal['times']) - 1))
            handle.publish_feedback(fb)
        bad = np.abs(err) > goal['path']
        if e.now < goal['end'] and bad.any():
            j, k = np.argwhere(bad)[0]
            text = (f"{goal['names'][j]} {('position', 'velocity')[k]} error "
                    f"{err[j, k]:.3g} beyond the path tolerance {goal['path'][j, k]:.3g}")
            e.hold(goal['names'])   # stop here
            self.finish(text, Result.PATH_TOLERANCE_VIOLATED)
        elif e.now >= goal['end']:
            bad = np.abs(err) > goal['tol']
            if not bad.any():
                self.finish('', Result.SUCCESSFUL, succeeded=True)
            elif e.now > goal['end'] + goal['slack']:
                j, k = np.argwhere(bad)[0]
                self.finish(f"{goal['names'][j]} {('position', 'velocity')[k]} error "
                            f"{err[j, k]:.3g} beyond the goal tolerance "
                            f"{goal['tol'][j, k]:.3g}", Result.GOAL_TOLERANCE_VIOLATED)
