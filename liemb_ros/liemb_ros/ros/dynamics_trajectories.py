"""
The joint trajectories a dynamics node tracks from its topic and from its file.

:class:`Trajectories`, a part that :class:`liemb_ros.ros.dynamics_node.DynamicsNode` owns,
takes ``~/joint_trajectory`` (its CDR bytes; one that comes before the first complete joint
state waits for it) and ``computed_torque.trajectory_file`` (:func:`read_trajectory_file`;
started once the state is known, again 1 s after its end with ``computed_torque.repeat``),
has each read, timed and checked in the checker's thread
(:mod:`liemb_ros.ros.trajectory_intake`) and installs the result in the loop's thread.  A
``~/follow_joint_trajectory`` goal is :mod:`liemb_ros.ros.trajectory_action`'s.
"""
import os

from .. import control
from ..core.resources import find
from .common import ConfigError
from . import trajectory_intake as intake


def read_trajectory_file(name):
    """Read a ``computed_torque.trajectory_file`` (None for ''; ConfigError when unusable)."""
    if not name:
        return None
    try:
        path = name if os.path.isfile(name) else find('config', name)
        return control.load_trajectory(path)
    except (OSError, ValueError) as exc:
        raise ConfigError(f'computed_torque.trajectory_file: {exc}') from None


class Trajectories:
    """
    The topic's and the file's joint trajectories of a dynamics node.

    ``node``: the node (its ``engine``, parameters and log); ``trajectory_file``: what
    :func:`read_trajectory_file` read (or None); ``checker``: the node's
    :class:`~liemb_ros.ros.trajectory_intake.Checker`; ``action``: its
    :class:`~liemb_ros.ros.trajectory_action.TrajectoryAction` (an active goal has the
    arm, the file waits); ``refuse(what)``: the node's refusal of a command (counted,
    logged); ``guard(callback, where)``: its error handling; ``state_time()``: the time of
    the latest state; ``snapshot()``: ``(q, q̇, time)`` of the latest state (any thread).
    """

    def __init__(self, node, trajectory_file, checker, action, refuse, guard, state_time,
                 snapshot):
        self.node, self.checker, self.action = node, checker, action
        self.refuse, self.guard = refuse, guard
        self.state_time, self.snapshot = state_time, snapshot
        self.file = trajectory_file  # (names, times, P, V, A) of the file, or None
        self._early = None           # a ~/joint_trajectory before the first complete state
        self._file_started = None    # when the file's trajectory last started (state time)
        self._file_pending = False   # the file's trajectory is being checked

    def state_arrived(self):
        """Start a ``~/joint_trajectory`` that waited for a complete joint state, if any."""
        if self._early is not None and self.node.engine.ready:
            self.on_topic(self._early)   # it starts from this state

    def start_file(self, now):
        """Start (or, with ``computed_torque.repeat``, restart) the trajectory file's motion."""
        e = self.node.engine
        if e.mode != 'computed_torque' or self.action.active is not None or self._file_pending:
            return
        names, times, P, V, A = self.file
        if self._file_started is not None:
            end = self._file_started + times[-1] + 1.0
            if not (self._p('computed_torque.repeat') and now > end):
                return
        traj = intake.Trajectory(names, 0.0, times, P, V, A)
        self._file_pending = self._check(
            traj, now, self.guard(self._install_file, 'computed_torque.trajectory_file'),
            'file')

    def _p(self, name):
        return self.node.get_parameter(name).value

    def _install_file(self, result):
        """Track the file's trajectory, checked (in the executor's thread)."""
        self._file_pending = False
        e = self.node.engine
        if isinstance(result, Exception):
            self.file = None
            self.node.get_logger().error(f'computed_torque.trajectory_file not tracked: '
                                         f'{result}')
        elif e.mode == 'computed_torque' and self.action.active is None:
            e.trajectory = result
            self._file_started = result.start
            self.node.get_logger().info(f"tracking {self._p('computed_torque.trajectory_file')} "
                                        f'({result.time_from_start[-1]:.1f} s)')

    def _check(self, traj, received, done, key):
        """Read, time and check ``traj`` in the checker's thread; ``done(result)`` after."""
        engine = self.node.engine
        if self.checker.submit(lambda: intake.prepare(engine, traj, received, self.snapshot),
                               done, key):
            return True
        done(ValueError(f'busy: {intake.QUEUE} trajectories wait for their check'))
        return False

    def on_topic(self, data):
        """
        Take a new joint trajectory for computed_torque (it replaces the old one).

        ``data``: its CDR bytes (a raw subscription), read and checked in the checker's
        thread (:mod:`liemb_ros.ros.trajectory_intake`); bigger than ``MAX_BYTES``: refused.
        """
        engine = self.node.engine
        if engine is None:
            self.refuse('~/joint_trajectory: no robot yet')
            return
        if len(data) > intake.MAX_BYTES:
            self.refuse(f'~/joint_trajectory: {len(data)} bytes, at most {intake.MAX_BYTES}')
            return
        self._early = None
        if not engine.ready:   # kept: tracked from the first complete state
            self._early = data
            self.node.get_logger().info('~/joint_trajectory before a complete joint state: '
                                        'it starts from the first one')
            return
        received = self.state_time()

        def work():
            return intake.prepare(engine, intake.read_trajectory_cdr(data, engine.model),
                                  received, self.snapshot)
        if not self.checker.submit(work, self.guard(self._install_topic,
                                                    '~/joint_trajectory'), 'topic'):
            self.refuse(f'~/joint_trajectory: busy, {intake.QUEUE} trajectories wait for '
                        'their check')

    def _install_topic(self, result):
        """Track a checked ``~/joint_trajectory`` (in the executor's thread), or say why not."""
        if isinstance(result, intake.Superseded):
            self.refuse(f'~/joint_trajectory: superseded ({result})')
            return
        if isinstance(result, Exception):
            self.refuse(f'~/joint_trajectory: {result}')
            return
        e = self.node.engine
        if e is None or result.joint_names != e.model.joint_names:
            return   # another robot meanwhile
        e.trajectory = result
        if e.mode != 'computed_torque':
            self.node.get_logger().warning(f'trajectory received in mode {e.mode}: it is '
                                           'tracked in computed_torque only',
                                           throttle_duration_sec=5.0)
