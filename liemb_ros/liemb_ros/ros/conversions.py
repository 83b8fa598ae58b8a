"""
Conversions at the ROS boundary: parameter descriptors, quaternions, time stamps, text.

Text from messages is made safe to log with :func:`shown`.

Our quaternions are scalar first ``(w, x, y, z)`` (:mod:`liemb_ros.core.lie.quaternion`);
ROS messages order ``(x, y, z, w)``.  Simulation time in seconds becomes a
``builtin_interfaces/Time``.
"""
import numpy as np
from builtin_interfaces.msg import Time
from rcl_interfaces.msg import FloatingPointRange, ParameterDescriptor

from ..core.lie import quaternion


#: the most characters of a message's text (a frame id, a joint name, a list of names) that a
#: log line or ``/diagnostics`` value quotes
SHOWN_CHARS = 120


def shown(text, limit=SHOWN_CHARS):
    """
    Return ``text`` quoted for a log line, cut to about ``limit`` characters.

    Strings that arrive in messages (frame ids, joint names) may be megabytes long or hold
    control characters; a log line or a diagnostics value quotes them through this: the
    text is quoted with :func:`repr` (escapes, no new lines) and cut in the middle, keeping
    its start and end, with the original length: ``'abc…xyz' (1048576 chars)``; at most
    ``10 * limit`` characters (escapes) whatever the text.
    """
    text = text if isinstance(text, str) else str(text)
    if len(text) <= limit:
        return repr(text)
    keep = max(limit // 2 - 2, 1)
    return f"{text[:keep] + '…' + text[-keep:]!r} ({len(text)} chars)"


def descriptor(description, type_, lo=None, hi=None, read_only=False):
    """Return a ``ParameterDescriptor`` (with a floating-point range when ``lo`` is given)."""
    d = ParameterDescriptor(description=description, type=type_, read_only=read_only)
    if lo is not None:
        d.floating_point_range = [FloatingPointRange(from_value=lo, to_value=hi, step=0.0)]
    return d


def quaternion_xyzw(R):
    """Return the unit quaternion of rotation matrix ``R`` as four floats ``(x, y, z, w)``."""
    return tuple(float(c) for c in quaternion.to_xyzw(quaternion.from_matrix(R)))


def pose_matrix(pose):
    """
    Return the 4x4 pose of a ``geometry_msgs/Pose`` (the quaternion normalised).

    Raises ValueError when the orientation is no rotation (zero, NaN or infinite).
    """
    p, o = pose.position, pose.orientation
    quat = np.array([o.w, o.x, o.y, o.z])
    norm = float(np.linalg.norm(quat))
    if not (np.isfinite(norm) and norm > 1e-9):
        raise ValueError(f'orientation {quat.tolist()} is not a rotation')
    C = np.eye(4)
    C[:3, :3] = quaternion.to_matrix(quat / norm)
    C[:3, 3] = (p.x, p.y, p.z)
    return C


def to_time(seconds):
    """Return ``builtin_interfaces/Time`` for a non-negative time in seconds."""
    sec = int(seconds // 1)
    nanosec = int(round((seconds - sec) * 1e9))
    if nanosec >= 1_000_000_000:
        sec, nanosec = sec + 1, nanosec - 1_000_000_000
    return Time(sec=sec, nanosec=nanosec)
