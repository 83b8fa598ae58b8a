"""
The dynamics node's ``~/follow_joint_trajectory`` action (control_msgs/FollowJointTrajectory).

What a ros2_control JointTrajectoryController serves, for the ``computed_torque`` mode: a goal's
``trajectory`` is tracked as one on ``~/joint_trajectory`` (joints by name, a subset holds the
others; ``header.stamp`` 0 = now); a goal is refused when the node has no robot or state yet,
is in another mode, or the trajectory cannot be tracked (the reason in the log).  A new goal or
a trajectory on the topic replaces the active goal, which aborts; a cancelled goal holds the
arm where it is.  Feedback (desired, actual, error of the goal's joints, ``index`` the point
being approached) comes with ``~/controller_state`` (none when ``controller_state_rate`` is
0); the trajectory file of ``computed_torque.repeat`` waits while a goal runs.  The goal
succeeds once the trajectory has ended and every joint is within its ``goal_tolerance``
(position, velocity; 0: not checked), at the latest ``goal_time_tolerance`` after the end
(else GOAL_TOLERANCE_VIOLATED); it aborts with PATH_TOLERANCE_VIOLATED as soon as a joint
leaves its ``path_tolerance`` (and holds there).  Multi-DOF trajectories and component
tolerances are refused (no multi-DOF joints here).
"""
import numpy as np
from control_msgs.action import FollowJointTrajectory
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.task import Future

from .. import control

Result = FollowJointTrajectory.Result


def _seconds(d):
    return d.sec + 1e-9 * d.nanosec


def _tolerances(items, names, what):
    """Per-joint (position, velocity) limits of ``names`` (inf: not checked); ValueError."""
    tol = np.full((len(names), 2), np.inf)
    index = {n: i for i, n in enumerate(names)}
    for t in items:
        if t.name not in index:
            raise ValueError(f'{what} for joint {t.name!r}, which the trajectory does not move')
        for k, v in enumerate((t.position, t.velocity)):
            if v > 0:
                tol[index[t.name], k] = v
    return tol


class TrajectoryAction:
    """The action server of a :class:`~liemb_ros.ros.dynamics_node.DynamicsNode`."""

    def __init__(self, node):
        self.node = node
        self.active = None   # the goal being executed: a dict, see _accepted
        self._futures = {}   # goal id -> the future its execution waits for
        # its own reentrant group: an executing goal (a coroutine waiting for the control loop)
        # holds its callback group, which must be neither the node's (joint_states) nor
        # exclusive (new goals and cancel requests come meanwhile)
        self.server = ActionServer(
            node, FollowJointTrajectory, '~/follow_joint_trajectory',
            execute_callback=self._execute, goal_callback=self._on_goal,
            handle_accepted_callback=self._accepted, cancel_callback=self._on_cancel,
            callback_group=ReentrantCallbackGroup())

    # -- goals --------------------------------------------------------------------------
    def _check(self, goal):
        """Return ``(names, times, P, V, A, path, goal tolerance, goal time)``; ValueError."""
        e = self.node.engine
        if e is None or not e.ready:
            raise ValueError('no robot or no complete joint state yet')
        if e.mode != 'computed_torque':
            raise ValueError(f'mode is {e.mode}: goals are tracked in computed_torque only')
        if goal.multi_dof_trajectory.joint_names or goal.multi_dof_trajectory.points:
            raise ValueError('multi-DOF trajectories are not supported')
        if goal.component_path_tolerance or goal.component_goal_tolerance:
            raise ValueError('component tolerances (multi-DOF joints) are not supported')
        traj = goal.trajectory
        names = list(traj.joint_names)
        pts = traj.points
        args = (names, [_seconds(p.time_from_start) for p in pts],
                [p.positions for p in pts], [p.velocities for p in pts],
                [p.accelerations for p in pts])
        control.JointTrajectory(e.model.joint_names, *args, start=0.0, q=e.q, qd=e.qd)
        return args + (_tolerances(goal.path_tolerance, names, 'path_tolerance'),
                       _tolerances(goal.goal_tolerance, names, 'goal_tolerance'),
                       max(_seconds(goal.goal_time_tolerance), 0.0))

    def _on_goal(self, goal):
        try:
            self._check(goal)
        except ValueError as exc:
            self.node._refuse(f'~/follow_joint_trajectory goal: {exc}')
            return GoalResponse.REJECT
        return GoalResponse.ACCEPT

    def _accepted(self, handle):
        """Track the accepted goal (it replaces the active one), then start executing it."""
        node = self.node
        future = Future()
        self._futures[bytes(handle.goal_id.uuid)] = future
        try:   # the state may have changed since the goal was checked
            names, times, P, V, A, path, tol, slack = self._check(handle.request)
            start = _seconds(handle.request.trajectory.header.stamp) or node._now()
            node.engine.set_trajectory(names, times, P, V, A, start=start)
        except ValueError as exc:   # StateError is one
            future.set_result(Result(error_code=Result.INVALID_GOAL, error_string=str(exc)))
        else:
            self.finish('replaced by a new goal', Result.INVALID_GOAL)
            e = node.engine
            self.active = {'handle': handle, 'future': future, 'trajectory': e.trajectory,
                           'cols': np.array([e.model.joint_index(n) for n in names]),
                           'names': names, 'end': start + times[-1], 'path': path,
                           'tol': tol, 'slack': slack, 'times': np.asarray(times) + start}
        handle.execute()

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
            e.set_trajectory(goal['names'], [0.0], [e.q[goal['cols']]])   # hold here
            self.finish('cancelled', Result.SUCCESSFUL)
            return
        cols = goal['cols']
        q_d, qd_d, qdd_d = e.reference
        q, qd = e.q[cols], e.qd[e.model.nv - e.model.nq:][cols]
        err = np.stack([q_d[cols] - q, qd_d[cols] - qd], axis=1)
        if feedback:
            fb = FollowJointTrajectory.Feedback()
            fb.header.stamp = self.node._stamp_msg()
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
            e.set_trajectory(goal['names'], [0.0], [q])   # stop here
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
