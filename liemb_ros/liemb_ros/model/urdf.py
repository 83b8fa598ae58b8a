"""
URDF parsing and validation into a plain :class:`RobotDescription`.

The XML is read with ``urdf_parser_py`` and every quirk of that parser is handled
here (missing ``<origin>``/``<axis>`` come back as ``None``; continuous joints get
0/0 limits; unknown link names in joints pass silently).  Everything a later stage
relies on is validated, and every problem raises :class:`URDFError` naming the file
and the offending link or joint with what was expected.

URDF conventions (REP 103, URDF spec): joint ``origin`` maps child (joint) frame
coordinates to parent link coordinates, ``rpy`` is fixed-axis roll-pitch-yaw,
``R = Rz(yaw) Ry(pitch) Rx(roll)``; ``axis`` is given in the joint frame and
defaults to (1, 0, 0); the child link frame coincides with the joint frame.
"""
import contextlib
import io
import math
import os
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import numpy as np

from .joints import URDF_TYPES


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


def _finite(values, where, what):
    arr = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(arr)):
        raise URDFError(f'{where}: {what} must be finite numbers, got {list(arr.ravel())}')
    return arr


def _read_text(path_or_xml):
    """Return ``(xml_text, source_name)`` from a file path or an XML string."""
    if isinstance(path_or_xml, os.PathLike) or (
            isinstance(path_or_xml, str) and '<' not in path_or_xml):
        path = os.fspath(path_or_xml)
        if not os.path.isfile(path):
            raise URDFError(f'{path}: no such URDF file')
        with open(path, 'r', encoding='utf-8') as f:
            return f.read(), path
    if isinstance(path_or_xml, bytes):
        return path_or_xml.decode('utf-8'), '<string>'
    if isinstance(path_or_xml, str):
        return path_or_xml, '<string>'
    raise URDFError(f'expected a URDF path or XML string, got {type(path_or_xml).__name__}')


def _precheck_xml(text, src):
    """
    Well-formedness and joint types, with messages better than the parser's.

    Returns the XML text with the elements this package never reads and that
    urdf_parser_py rejects in real-world files removed (``<transmission>``,
    ``<gazebo>``, ``<texture>`` without a file name), and a robot name added when it is
    missing (both with a warning).
    """
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise URDFError(f'{src}: malformed XML: {exc}') from None
    if root.tag != 'robot':
        raise URDFError(f'{src}: root element is <{root.tag}>, expected <robot>')
    for j in root.findall('joint'):
        name = j.get('name')
        jtype = j.get('type')
        if name is None:
            raise URDFError(f'{src}: a <joint> has no name attribute')
        if jtype not in URDF_TYPES:
            raise URDFError(f"{src}: joint '{name}' has unknown type {jtype!r}; "
                            f"expected one of {', '.join(URDF_TYPES)}")
        for tag in ('parent', 'child'):
            el = j.find(tag)
            if el is None or not el.get('link'):
                raise URDFError(f"{src}: joint '{name}' has no <{tag} link=...>")
    for link in root.findall('link'):
        if link.get('name') is None:
            raise URDFError(f'{src}: a <link> has no name attribute')
    changed = False
    if not root.get('name'):
        stem = os.path.splitext(os.path.basename(src))[0] if src != '<string>' else 'robot'
        warnings.warn(f'{src}: <robot> has no name; using {stem!r}', URDFWarning, stacklevel=4)
        root.set('name', stem)
        changed = True
    for tag in ('transmission', 'gazebo'):
        for el in root.findall(tag):
            root.remove(el)
            changed = True
    for parent in root.iter():
        for el in list(parent):
            if el.tag == 'texture' and not el.get('filename'):
                parent.remove(el)
                changed = True
    return ET.tostring(root, encoding='unicode') if changed else text


def _inertial_problem(where, message, strict):
    if strict:
        raise URDFError(f'{where}: {message}')
    warnings.warn(f'{where}: {message}; used as given (load with strict=True to refuse it)',
                  URDFWarning, stacklevel=5)


def _link_desc(link, src, strict):
    where = f"{src}: link '{link.name}'"
    desc = LinkDesc(link.name)
    inertial = link.inertial
    if inertial is None:
        return desc
    mass = inertial.mass
    if mass is None:
        raise URDFError(f'{where}: <inertial> without <mass value=...>')
    mass = float(_finite([mass], where, 'mass')[0])
    if inertial.inertia is None:
        raise URDFError(f'{where}: <inertial> without <inertia ixx=... izz=...>')
    inertia = _finite(inertial.inertia.to_matrix(), where, 'inertia')
    inertia = 0.5 * (inertia + inertia.T)
    com_pose = _finite(pose_from_origin(inertial.origin), where, 'inertial origin')
    if mass < 0.0:
        raise URDFError(f'{where}: mass must be positive, got {mass}')
    scale = float(np.abs(inertia).max())
    if mass == 0.0:
        if scale == 0.0:
            return desc  # explicitly massless link
        _inertial_problem(where, 'mass is 0 but the inertia tensor is not zero', strict)
    eig = np.linalg.eigvalsh(inertia)
    if eig[0] < -1e-12 * max(scale, 1e-300):
        _inertial_problem(where, 'inertia tensor is not positive semi-definite (principal '
                          f'moments {eig.tolist()})', strict)
    elif eig[0] + eig[1] < eig[2] * (1.0 - 1e-6):
        _inertial_problem(where, 'inertia violates the triangle inequality (principal '
                          f'moments {eig.tolist()}: I1 + I2 < I3)', strict)
    desc.mass = mass
    desc.com_pose = com_pose
    desc.inertia = inertia
    desc.has_inertial = True
    return desc


def _joint_desc(j, src):
    where = f"{src}: joint '{j.name}'"
    origin = _finite(pose_from_origin(j.origin), where, 'origin')
    if j.type in ('fixed', 'floating'):
        axis = np.array([1.0, 0.0, 0.0])
    else:
        axis = np.array([1.0, 0.0, 0.0]) if j.axis is None else _finite(j.axis, where, 'axis')
        if axis.shape != (3,):
            raise URDFError(f'{where}: axis must have 3 components, got {axis.tolist()}')
        norm = float(np.linalg.norm(axis))
        if norm < 1e-9:
            raise URDFError(f'{where}: axis {axis.tolist()} is zero; a joint axis needs a '
                            'direction')
        if abs(norm - 1.0) > 1e-6:
            warnings.warn(f'{where}: axis {axis.tolist()} is not a unit vector; normalised',
                          URDFWarning, stacklevel=4)
        axis = axis / norm
    d = JointDesc(j.name, j.type, j.parent, j.child, origin, axis)
    lim = j.limit
    if j.type in ('revolute', 'prismatic'):
        if lim is None:
            warnings.warn(f'{where}: {j.type} joint without <limit>; treated as unlimited',
                          URDFWarning, stacklevel=4)
        else:
            d.lower, d.upper = float(lim.lower or 0.0), float(lim.upper or 0.0)
            if d.lower > d.upper:
                raise URDFError(f'{where}: limit lower={d.lower} is above upper={d.upper}')
    if lim is not None and j.type in ('revolute', 'prismatic', 'continuous'):
        if lim.velocity is not None:
            d.velocity = float(lim.velocity)
        if lim.effort is not None:
            d.effort = float(lim.effort)
        if d.velocity < 0 or d.effort < 0:
            raise URDFError(f'{where}: velocity/effort limits must be non-negative')
    if j.dynamics is not None:
        d.damping = float(j.dynamics.damping or 0.0)
        d.friction = float(j.dynamics.friction or 0.0)
    if j.mimic is not None:
        d.mimic_joint = j.mimic.joint
        d.mimic_multiplier = 1.0 if j.mimic.multiplier is None else float(j.mimic.multiplier)
        d.mimic_offset = 0.0 if j.mimic.offset is None else float(j.mimic.offset)
    return d


def parse_urdf(path_or_xml, strict=False):
    """
    Read and validate a URDF (file path or XML text) into a :class:`RobotDescription`.

    Raises :class:`URDFError` for malformed XML, unknown joint types, incomplete
    inertials (no mass or no inertia tensor), negative masses, zero axes, non-finite
    numbers, duplicate names and joints that refer to unknown links.  Physically
    impossible inertials (tensor not positive semi-definite, triangle inequality
    violated, inertia without mass) are common in real robots' files: they give a
    :class:`URDFWarning` naming the link, or a :class:`URDFError` with ``strict=True``.
    Topology (roots, cycles) is checked when the model is built.
    """
    from urdf_parser_py.urdf import URDF

    text, src = _read_text(path_or_xml)
    text = _precheck_xml(text, src)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            robot = URDF.from_xml_string(text)
    except Exception as exc:  # the parser raises many types; re-raise as ours
        raise URDFError(f'{src}: {exc}'.replace('\n', ' ')) from None
    links, seen = [], set()
    for link in robot.links:
        if link.name in seen:
            raise URDFError(f"{src}: link '{link.name}' is defined twice")
        seen.add(link.name)
        links.append(_link_desc(link, src, strict))
    if not links:
        raise URDFError(f'{src}: the robot has no links')
    joints, jseen = [], set()
    for j in robot.joints:
        if j.name in jseen:
            raise URDFError(f"{src}: joint '{j.name}' is defined twice")
        jseen.add(j.name)
        for role, lname in (('parent', j.parent), ('child', j.child)):
            if lname not in seen:
                raise URDFError(f"{src}: joint '{j.name}' names {role} link '{lname}', "
                                'which is not defined')
        joints.append(_joint_desc(j, src))
    return RobotDescription(robot.name or 'robot', src, links, joints)
