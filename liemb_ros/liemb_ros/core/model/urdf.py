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

The parts: :mod:`.urdf_types` (the error types and the descriptions), :mod:`.urdf_sources`
(files, xacro, XML text) and this module (the checks and the parse); everything is
importable from here.
"""
import contextlib
import io
import math
import os
import re
import warnings
import xml.etree.ElementTree as ET

import numpy as np

from .joints import URDF_TYPES
from .urdf_sources import (XACRO_HINT, XACRO_NAMESPACES, XACRO_SUFFIXES, expand_xacro,
                           is_xacro_path, read_text, read_urdf_file, xml_text)
from .urdf_types import (JointDesc, LinkDesc, RobotDescription, URDFError, URDFWarning,
                         pose_from_origin, rpy_to_matrix)

__all__ = ['URDFError', 'URDFWarning', 'LinkDesc', 'JointDesc', 'RobotDescription',
           'rpy_to_matrix', 'pose_from_origin', 'XACRO_SUFFIXES', 'is_xacro_path',
           'expand_xacro', 'read_urdf_file', 'parse_urdf', 'parse_urdf_string']


def _finite(values, where, what):
    arr = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(arr)):
        raise URDFError(f'{where}: {what} must be finite numbers, got {list(arr.ravel())}')
    return arr


_INERTIA_ATTRS = ('ixx', 'ixy', 'ixz', 'iyy', 'iyz', 'izz')
# numeric attributes of links and joints: {tag: {path below it: ((attribute, count), ...)}}
_GEOMETRY = {'origin': (('xyz', 3), ('rpy', 3)), 'geometry/box': (('size', 3),),
             'geometry/cylinder': (('radius', 1), ('length', 1)),
             'geometry/sphere': (('radius', 1),), 'geometry/mesh': (('scale', 3),)}
_NUMBERS = {
    'joint': {'origin': (('xyz', 3), ('rpy', 3)), 'axis': (('xyz', 3),),
              'limit': (('lower', 1), ('upper', 1), ('effort', 1), ('velocity', 1)),
              'dynamics': (('damping', 1), ('friction', 1)),
              'mimic': (('multiplier', 1), ('offset', 1)),
              'calibration': (('rising', 1), ('falling', 1)),
              'safety_controller': (('soft_lower_limit', 1), ('soft_upper_limit', 1),
                                    ('k_position', 1), ('k_velocity', 1))},
    'link': {'inertial/origin': (('xyz', 3), ('rpy', 3)), 'inertial/mass': (('value', 1),),
             'inertial/inertia': tuple((a, 1) for a in _INERTIA_ATTRS),
             **{f'{part}/{path}': attrs for part in ('visual', 'collision')
                for path, attrs in _GEOMETRY.items()}},
}
_NUMBER_DEPTH = 3  # the longest path above


def _check_unexpanded(root, src):
    """Raise :class:`URDFError` for xacro elements or ``${...}``/``$(...)`` left in a URDF."""
    for el in root.iter():
        if isinstance(el.tag, str) and el.tag.startswith(XACRO_NAMESPACES):
            tag = 'xacro:' + el.tag.split('}', 1)[1]
            raise URDFError(f'{src}: contains a <{tag}> element; {XACRO_HINT}')
    for kind in ('link', 'joint'):
        for top in root.findall(kind):
            for el in top.iter():
                for attr, value in el.attrib.items():
                    if '${' in value or '$(' in value:
                        tag = '' if el is top else f' {el.tag}'
                        raise URDFError(f"{src}: {kind} '{top.get('name')}':{tag} "
                                        f'{attr}={value!r} is an unexpanded expression; '
                                        f'{XACRO_HINT}')


def _check_numbers(root, src):
    """Raise :class:`URDFError` naming the link or joint of a malformed or non-finite number."""
    for top in root:
        specs = _NUMBERS.get(top.tag)
        if specs is None:
            continue
        todo = [(child, child.tag, 1) for child in top]  # one pass over the few elements
        for el, path, depth in todo:
            for attr, count in specs.get(path, ()):
                value = el.get(attr)
                if value is None:
                    continue
                try:
                    nums = [float(w) for w in value.split()]
                except ValueError:
                    nums = None
                if nums is None or len(nums) != count or not all(map(math.isfinite, nums)):
                    what = 'a finite number' if count == 1 else f'{count} finite numbers'
                    raise URDFError(f"{src}: {top.tag} '{top.get('name')}': "
                                    f'{path} {attr}={value!r} must be {what}')
            if depth < _NUMBER_DEPTH:
                todo.extend((child, f'{path}/{child.tag}', depth + 1) for child in el)


def _precheck_xml(text, src):
    """
    Well-formedness, joint types and numbers, with messages better than the parser's.

    Returns the XML text with the elements this package never reads and that
    urdf_parser_py rejects in real-world files removed (``<transmission>``,
    ``<gazebo>``, ``<texture>`` without a file name), and a robot name added when it is
    missing (both with a warning).  A DOCTYPE is resolved here: the text handed on is
    then the parsed tree's.
    """
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        hint = f'; {XACRO_HINT}' if 'unbound prefix' in str(exc) and 'xacro:' in text else ''
        raise URDFError(f'{src}: malformed XML: {exc}{hint}') from None
    if root.tag != 'robot':
        raise URDFError(f'{src}: root element is <{root.tag}>, expected <robot>')
    _check_unexpanded(root, src)
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
    _check_numbers(root, src)
    changed = '<!DOCTYPE' in text
    if not root.get('name'):
        stem = os.path.splitext(os.path.basename(src))[0] if src != '<string>' else 'robot'
        warnings.warn(f'{src}: <robot> has no name; using {stem!r}', URDFWarning, stacklevel=5)
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
                  URDFWarning, stacklevel=6)


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
                          URDFWarning, stacklevel=5)
        axis = axis / norm
    d = JointDesc(j.name, j.type, j.parent, j.child, origin, axis)
    lim = j.limit
    if j.type in ('revolute', 'prismatic'):
        if lim is None:
            warnings.warn(f'{where}: {j.type} joint without <limit>; treated as unlimited',
                          URDFWarning, stacklevel=5)
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


def _parser_message(exc):
    """Return urdf_parser_py's message with its XPath as "joint 'j1': origin xyz:"."""
    msg = ' '.join(str(exc).split())
    m = re.match(r"ParseError in /robot(?:\[[^]]*\])?/(link|joint)\[@name='([^']*)'\]"
                 r'(/[^:]*)?: (.*)', msg)
    if not m:
        return msg
    kind, name, rest, what = m.groups()
    rest = (rest or '').strip('/')
    attr = re.search(r'\[@([^]]+)\]$', rest)
    path = re.sub(r'\[[^]]*\]', '', rest)
    element = f' {path}{" " + attr.group(1) if attr else ""}:' if path else ''
    return f"{kind} '{name}':{element} {what}"


def parse_urdf(path_or_xml, strict=False, xacro_args=None):
    """
    Read and validate a URDF (file path or XML text) into a :class:`RobotDescription`.

    Raises :class:`URDFError` for malformed XML, unknown joint types, incomplete
    inertials (no mass or no inertia tensor), negative masses, zero axes, non-finite
    or malformed numbers, duplicate names and joints that refer to unknown links.
    Physically impossible inertials (tensor not positive semi-definite, triangle
    inequality violated, inertia without mass) are common in real robots' files: they
    give a :class:`URDFWarning` naming the link, or a :class:`URDFError` with
    ``strict=True``.  Topology (roots, cycles) is checked when the model is built.

    A ``str`` containing no ``<`` is a file path; a ``.xacro`` file (or any file when
    ``xacro_args`` is not ``None``) is expanded with :func:`expand_xacro` first.  Use
    :func:`parse_urdf_string` for text that must never be taken for a path.
    """
    text, src = read_text(path_or_xml, xacro_args)
    return _parse_text(text, src, strict)


def parse_urdf_string(xml, *, source='<string>', strict=False):
    """
    Validate URDF XML text into a :class:`RobotDescription`, never touching the file system.

    Parameters
    ----------
    xml : str or bytes
        The URDF document (bytes must be UTF-8).
    source : str
        What the text is called in error messages (a topic, a parameter, a file name).
    strict : bool
        Refuse physically impossible inertials instead of warning.

    Raises
    ------
    URDFError
        ``'<source>: not URDF XML'`` when the text does not start (after whitespace, a
        byte-order mark, the XML declaration and comments) with an XML element;
        ``'<source>: not UTF-8 text at byte N'``; and everything :func:`parse_urdf` raises.

    """
    return _parse_text(xml_text(xml, source), source, strict)


def _parse_text(text, src, strict):
    """Validate checked XML text into a :class:`RobotDescription` (see parse_urdf)."""
    from urdf_parser_py.urdf import URDF

    text = _precheck_xml(text, src)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            robot = URDF.from_xml_string(text)
    except Exception as exc:  # the parser raises many types; re-raise as ours
        raise URDFError(f'{src}: {_parser_message(exc)}') from None
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
