"""
Joint trajectories into the dynamics node: read, timed and checked off the control loop.

Every trajectory the node tracks (``~/joint_trajectory``, a ``~/follow_joint_trajectory``
goal, ``computed_torque.trajectory_file``) goes through one path: its joint names are
checked and its arrays read (names from a message are quoted through
:func:`~liemb_ros.ros.conversions.shown`), it is timed (:func:`start_time`) and checked
against the robot's limits (:func:`liemb_ros.control.check_limits`) in the
:class:`Checker`'s thread, and the control loop's thread only installs the result.

The loop must not wait for any of it: the node serves its other callbacks between joint
states in the loop's thread (:func:`liemb_ros.ros.common.spin`), and a goal of 1e5 points
handled there stopped the torques for 4 s.  The check (sampling, dynamics) is compiled and
runs without the GIL; what stays is Python that hands the GIL back every
:data:`SWITCH_INTERVAL` (the node sets it), and what rclpy does before the node sees a
message: a ``~/joint_trajectory`` is taken as its CDR bytes (a raw subscription: a copy)
and read here, compiled, without the GIL (:func:`read_trajectory_cdr`), after its size is
checked against :data:`MAX_BYTES`; a goal, though, is deserialised by rclpy's action
server in C, holding the GIL, about 2-3 µs per point (the loop waits that long: measured
in the README), before the node can refuse it for its size (:data:`MAX_POINTS`).

Timing (``header.stamp``): 0, or a stamp at most :data:`STAMP_LATENCY` before the node
received the trajectory, means "now": it starts when its check is done (delayed by the
transport and the check, milliseconds); a stamp in the future: then; a stamp further in
the past: the points already due are left out and the arm goes from where it is to the
first point still ahead (JointTrajectoryController's replacement rule), and a trajectory
whose last point is past is refused (as JointTrajectoryController refuses it).  In every
case the trajectory begins at the state the loop has when it is installed: the setpoint
never jumps.
"""
import collections
import threading

import numpy as np
from numba import njit

from .. import control
from .conversions import shown

#: the largest ``~/joint_trajectory`` message read [bytes]: MAX_POINTS points of 64 joints
#: with positions, velocities and accelerations; a bigger one is refused unread
MAX_BYTES = 16 << 20
#: the most points of a trajectory (the control law's cap, which bounds the check's work)
MAX_POINTS = control.MAX_POINTS
#: a stamp at most this much before the node received the trajectory means "now" [s]:
#: transport, and a sender's and this node's clocks apart on two machines
STAMP_LATENCY = 0.1
#: the interval at which a thread holding the GIL hands it to another that waits [s]
#: (Python's default, 5 ms, would let a goal's Python stall the 1 kHz loop that long)
SWITCH_INTERVAL = 2e-4
#: trajectories waiting for the checker at most (more goals are refused: busy)
QUEUE = 4


class Checker:
    """
    One thread that runs jobs in order; each one's result goes back to the node's executor.

    :meth:`submit` ``(work, done, key)``: ``work()`` runs in the thread; ``done(result)``
    (its return value, or the exception it raised) runs in the thread that spins the node
    (an executor task), never in this one.  A job with a ``key`` replaces a waiting job of
    the same key (a newer ``~/joint_trajectory`` supersedes an older one not yet checked;
    the replaced job's ``done`` gets :class:`Superseded`).  At most :data:`QUEUE` jobs wait:
    ``submit`` returns False for one more.
    """

    def __init__(self, node):
        self.node = node
        self._jobs = collections.deque()
        self._wake = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f'{node.get_name()}_checker')
        self._thread.start()

    def submit(self, work, done, key=None):
        """Queue ``work``; return False (not queued) when :data:`QUEUE` jobs wait already."""
        with self._wake:
            if key is not None:
                for job in list(self._jobs):
                    if job[2] == key:
                        self._jobs.remove(job)
                        self._deliver(job[1], Superseded('a newer one came'))
            if len(self._jobs) >= QUEUE:
                return False
            self._jobs.append((work, done, key))
            self._wake.notify()
        return True

    def close(self):
        """Stop the thread after the job it runs (the waiting ones are dropped)."""
        with self._wake:
            self._closed = True
            self._jobs.clear()
            self._wake.notify()

    def _run(self):
        while True:
            with self._wake:
                while not self._jobs and not self._closed:
                    self._wake.wait()
                if self._closed:
                    return
                work, done, _ = self._jobs.popleft()
            try:
                result = work()
            except Exception as exc:  # noqa: B902 - delivered to done, which reports it
                result = exc
            self._deliver(done, result)

    def _deliver(self, done, result):
        executor = self.node.executor
        if executor is not None and not self._closed:
            executor.create_task(done, result)


class Superseded(Exception):
    """A waiting trajectory that a newer one replaced before it was checked."""


class Trajectory:
    """
    What a trajectory message says, read into arrays.

    ``names`` (list), ``stamp`` (s; 0: none), ``times`` (points,), ``positions``,
    ``velocities``, ``accelerations`` (points, joints; the last two may have 0 columns:
    none).
    """

    def __init__(self, names, stamp, times, positions, velocities, accelerations):
        self.names, self.stamp, self.times = names, stamp, times
        self.positions, self.velocities, self.accelerations = (positions, velocities,
                                                               accelerations)


def check_names(names, model):
    """
    Raise ValueError unless ``names`` are distinct joints of ``model`` (quoted: shown).

    Before anything else is read: a message may name 10 000 joints or carry megabytes.
    """
    if not names:
        raise ValueError('no joint names')
    if len(names) > model.nq:
        raise ValueError(f'{len(names)} joint names: the robot has {model.nq} joints')
    known = set(model.joint_names)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown joint(s) {', '.join(shown(n) for n in unknown[:3])}"
                         f"{f' and {len(unknown) - 3} more' if len(unknown) > 3 else ''}; "
                         f"the robot has {', '.join(model.joint_names)}")
    if len(set(names)) != len(names):
        twice = next(n for n in names if names.count(n) > 1)
        raise ValueError(f'joint {shown(twice)} named twice')


def read_trajectory_msg(traj, model):
    """
    Read a ``trajectory_msgs/JointTrajectory`` message into a :class:`Trajectory`.

    ValueError for too many points, joint names that are not the robot's (shown), or
    efforts (the feed-forward comes from the model: a JointTrajectoryController without an
    effort interface refuses them too).  Python work, in the checker's thread.
    """
    pts = traj.points
    if len(pts) > MAX_POINTS:
        raise ValueError(f'{len(pts)} points: at most {MAX_POINTS}')
    names = list(traj.joint_names)
    check_names(names, model)
    if any(len(p.effort) for p in pts):
        raise ValueError('efforts in the points: not taken (the feed-forward torque comes '
                         'from the robot model)')
    s = traj.header.stamp
    return Trajectory(names, s.sec + 1e-9 * s.nanosec,
                      np.array([p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec
                                for p in pts]),
                      _stack([p.positions for p in pts]), _stack([p.velocities for p in pts]),
                      _stack([p.accelerations for p in pts]))


def _stack(rows):
    """Return per-point rows as one array (points, values); ragged ones as they are."""
    try:
        return np.array(rows, dtype=float).reshape(len(rows), -1)
    except ValueError:   # rows of different lengths: the trajectory names the point
        return rows


def read_trajectory_cdr(data, model):
    """
    Read the CDR bytes of a ``trajectory_msgs/JointTrajectory`` into a :class:`Trajectory`.

    Compiled, without the GIL (:func:`_read_cdr`); only the joint names are decoded in
    Python.  ValueError for bytes beyond :data:`MAX_BYTES`, bytes that are not a
    little-endian CDR message (then: rclpy's deserialisation), or what
    :func:`read_trajectory_msg` refuses.
    """
    if len(data) > MAX_BYTES:
        raise ValueError(f'{len(data)} bytes: at most {MAX_BYTES} (MAX_BYTES)')
    if data[:2] != b'\x00\x01':   # not little-endian CDR: rclpy's deserialisation
        from rclpy.serialization import deserialize_message
        from trajectory_msgs.msg import JointTrajectory
        try:
            msg = deserialize_message(data, JointTrajectory)
        except Exception as exc:  # noqa: B902 - whatever rclpy raises for bad bytes
            raise ValueError(f'bytes that cannot be read ({type(exc).__name__})') from None
        return read_trajectory_msg(msg, model)
    buf = np.frombuffer(data, dtype=np.uint8)
    meta = np.zeros(8, dtype=np.int64)
    spans, times, arrays, counts = _read_cdr(buf, model.nq, MAX_POINTS, meta)
    status = meta[0]
    if status == 1:
        raise ValueError(f'malformed or cut CDR bytes (at byte {meta[1]})')
    if status == 2:
        raise ValueError(f'{meta[1]} joint names: the robot has {model.nq} joints')
    if status == 3:
        raise ValueError(f'{meta[1]} points: at most {MAX_POINTS}')
    names = [bytes(buf[a:b]).decode('utf-8', 'replace') for a, b in spans]
    check_names(names, model)
    n = len(names)
    if counts[:, 3].any():
        raise ValueError('efforts in the points: not taken (the feed-forward torque comes '
                         'from the robot model)')
    out = []
    for k, what in enumerate(('positions', 'velocities', 'accelerations')):
        c = counts[:, k]
        whole = bool(c.size) and bool(c[0])
        bad = np.flatnonzero(c != (n if (k == 0 or whole) else 0))
        if bad.size:
            raise ValueError(f'{what}: every point needs {n} values (one per joint) or, for '
                             f'velocities and accelerations, every point none; got '
                             f'{c[bad[0]]} at point {bad[0]}')
        out.append(arrays[k][:, :n] if whole or k == 0 else arrays[k][:, :0])
    return Trajectory(names, meta[2] + 1e-9 * meta[3], times, *out)


def start_time(stamp, received):
    """
    Return the time of ``time_from_start = 0``: None for "now" (the module docstring).

    ``stamp``: the message's (s, 0: none); ``received``: when the node received it (the
    clock of the loop: the states' stamps).  A trajectory that ends in the past is refused
    by :class:`liemb_ros.control.JointTrajectory`.
    """
    if stamp == 0.0 or received - STAMP_LATENCY <= stamp <= received:
        return None
    return stamp


def prepare(engine, traj, received, snapshot):
    """
    Return the :class:`liemb_ros.control.JointTrajectory` of ``traj``, checked; StateError.

    In the checker's thread: the points are checked with the state of now, then the
    segment from the state with the latest one (``snapshot()``: ``(q, q̇, time)``), so that
    a trajectory whose check took long still begins where the arm is.
    """
    state = snapshot()
    start = start_time(traj.stamp, received)
    args = (traj.names, traj.times, traj.positions, traj.velocities, traj.accelerations)
    engine.checked_trajectory(*args, start=start, state=state, part='points')
    state = snapshot()
    return engine.checked_trajectory(*args, start=state[2] if start is None else start,
                                     state=state, part='start')


@njit(cache=True, inline='always')
def _u32(b, o):
    """Return the little-endian uint32 at byte ``o``, as an int64."""
    return (np.int64(b[o]) | (np.int64(b[o + 1]) << 8) | (np.int64(b[o + 2]) << 16)
            | (np.int64(b[o + 3]) << 24))


@njit(cache=True, inline='always')
def _i32(b, o):
    """Return the little-endian int32 at byte ``o``."""
    x = _u32(b, o)
    return x - (np.int64(1) << 32) if x >= (np.int64(1) << 31) else x


@njit(cache=True, nogil=True)
def _read_cdr(b, max_names, max_points, meta):
    """
    Read a little-endian CDR ``trajectory_msgs/JointTrajectory`` (the bytes, header first).

    Returns ``(name spans (k, 2), times, (P, V, A), counts (points, 4))``: the byte range
    of each joint name, ``time_from_start`` of each point, the positions, velocities and
    accelerations (points, max_names) and how many values each point has of each (and of
    efforts).  ``meta``: [status (0 read, 1 malformed at byte meta[1], 2 more than
    ``max_names`` names, 3 more than ``max_points`` points (their count in meta[1])), -,
    stamp sec, stamp nanosec].  Offsets align as CDR does, relative to the payload (after
    the 4-byte header); a sequence of float64 aligns to 8 only when it is not empty.
    """
    end = b.size
    empty = np.zeros((0, 0))
    none = (np.zeros((0, 2), np.int64), np.zeros(0), (empty, empty, empty),
            np.zeros((0, 4), np.int64))
    meta[0] = 1
    if end < 20:
        return none
    meta[2] = _i32(b, 4)
    meta[3] = _u32(b, 8)
    o = 16 + _u32(b, 12)   # past header.frame_id
    o = (o + 3) & ~3
    if o + 4 > end:
        meta[1] = o
        return none
    count = _u32(b, o)
    o += 4
    if count > max_names:
        meta[0], meta[1] = 2, count
        return none
    spans = np.empty((count, 2), np.int64)
    for k in range(count):
        o = (o + 3) & ~3
        if o + 4 > end:
            meta[1] = o
            return none
        n = _u32(b, o)
        if n == 0 or o + 4 + n > end:
            meta[1] = o
            return none
        spans[k, 0], spans[k, 1] = o + 4, o + 3 + n
        o += 4 + n
    o = (o + 3) & ~3
    if o + 4 > end:
        meta[1] = o
        return none
    npts = _u32(b, o)
    o += 4
    if npts > max_points:
        meta[0], meta[1] = 3, npts
        return none
    times = np.empty(npts)
    arrays = (np.zeros((npts, max_names)), np.zeros((npts, max_names)),
              np.zeros((npts, max_names)))
    counts = np.zeros((npts, 4), np.int64)
    word = np.empty(8, np.uint8)
    value = word.view(np.float64)
    for i in range(npts):
        for f in range(4):
            o = (o + 3) & ~3
            if o + 4 > end:
                meta[1] = o
                return none
            n = _u32(b, o)
            o += 4
            counts[i, f] = n
            if n == 0:
                continue
            o += (8 - (o - 4) % 8) % 8
            if o + 8 * n > end:
                meta[1] = o
                return none
            if f < 3:
                for j in range(min(n, max_names)):
                    for c in range(8):
                        word[c] = b[o + 8 * j + c]
                    arrays[f][i, j] = value[0]
            o += 8 * n
        o = (o + 3) & ~3
        if o + 8 > end:
            meta[1] = o
            return none
        times[i] = _i32(b, o) + 1e-9 * _u32(b, o + 4)
        o += 8
    meta[0] = 0
    return spans, times, arrays, counts


def warm_up():
    """Compile (or load from numba's cache) the CDR reader."""
    from rclpy.serialization import serialize_message
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
    msg = JointTrajectory(joint_names=['a'], points=[JointTrajectoryPoint(positions=[0.0])])
    _read_cdr(np.frombuffer(serialize_message(msg), dtype=np.uint8), 1, 1,
              np.zeros(8, dtype=np.int64))
