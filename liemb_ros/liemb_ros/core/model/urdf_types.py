"""
What a parsed URDF is: the error and warning types, the link and joint descriptions.

:class:`RobotDescription` holds the validated links (:class:`LinkDesc`) and joints
(:class:`JointDesc`, every optional field resolved) of a URDF, its topology not yet
resolved (:func:`liemb_ros.core.model.build_model` does that); :func:`rpy_to_matrix` and
:func:`pose_from_origin` are URDF's pose conventions (REP 103: ``R = Rz(yaw) Ry(pitch)
Rx(roll)``).  Parsing and validation: :mod:`.urdf`.
"""
import math
from dataclasses import dataclass, field

import numpy as np


class URDFError(ValueError):
    """A URDF that cannot be turned into a model; the message names the culprit."""


class URDFWarning(UserWarning):
    """A fixable problem in a URDF (non-unit axis, missing limits, ...)."""


@dataclass
class LinkDesc:
    """A URDF link: name and optional inertial data (in the link frame)."""

    name: str
    mass: float = 0.0
    com_pose: np.ndarray = field(default_factory=lambda: np.eye(4))  # inertial frame in link
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))  # about COM
    has_inertial: bool = False


@dataclass
class JointDesc:
    """A URDF joint with every optional field resolved to a concrete value."""

    name: str
    type: str
    parent: str
    child: str
    origin: np.ndarray  # 4x4, child (joint) frame in parent link frame
    axis: np.ndarray  # unit vector in the joint frame
    lower: float = -math.inf
    upper: float = math.inf
    velocity: float = math.inf
    effort: float = math.inf
    damping: float = 0.0
    friction: float = 0.0
    mimic_joint: str = None
    mimic_multiplier: float = 1.0
    mimic_offset: float = 0.0


@dataclass
class RobotDescription:
    """Validated URDF content: links and joints, topology not yet resolved."""

    name: str
    source: str
    links: list
    joints: list


def rpy_to_matrix(rpy):
    """Rotation ``Rz(yaw) Ry(pitch) Rx(roll)`` of URDF fixed-axis roll-pitch-yaw."""
    r, p, y = rpy
    cr, sr = math.cos(r), math.sin(r)
    cp, sp = math.cos(p), math.sin(p)
    cy, sy = math.cos(y), math.sin(y)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])


def pose_from_origin(origin):
    """4x4 pose of a URDF ``<origin>`` element (``None`` means identity)."""
    C = np.eye(4)
    if origin is None:
        return C
    if origin.rpy is not None:
        C[:3, :3] = rpy_to_matrix(origin.rpy)
    if origin.xyz is not None:
        C[:3, 3] = origin.xyz
    return C
