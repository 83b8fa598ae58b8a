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
import re
import shlex
import threading
import warnings
import xml.etree.ElementTree as ET
import xml.parsers.expat
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


XACRO_SUFFIXES = ('.xacro',)  # also matches *.urdf.xacro
_XACRO_NAMESPACES = ('{http://www.ros.org/wiki/xacro}', '{http://ros.org/wiki/xacro}')
_XACRO_LOCK = threading.Lock()  # xacro keeps its state in module globals


def is_xacro_path(path):
    """Return whether ``path`` names a xacro file (``*.xacro``, e.g. ``*.urdf.xacro``)."""
    return os.fspath(path).lower().endswith(XACRO_SUFFIXES)


def _decode(data, src):
    """
    Return ``data`` (bytes or str) as str, refusing anything that is not UTF-8 text.

    A leading byte-order mark is dropped.  Raises :class:`URDFError`
    ``'<src>: not UTF-8 text at byte N'`` for invalid bytes, and for a str holding lone
    surrogates (what undecodable bytes become with ``errors='surrogateescape'``), where
    ``N`` is the byte offset the character would have in UTF-8.
    """
    if isinstance(data, (bytes, bytearray, memoryview)):
        data = bytes(data)
        try:
            text = data.decode('utf-8')
        except UnicodeDecodeError as exc:
            raise URDFError(f'{src}: not UTF-8 text at byte {exc.start} '
                            f'({data[exc.start:exc.start + 1]!r})') from None
    elif isinstance(data, str):
        text = data
        try:
            text.encode('utf-8')
        except UnicodeEncodeError as exc:
            byte = len(text[:exc.start].encode('utf-8', errors='surrogatepass'))
            raise URDFError(f'{src}: not UTF-8 text at byte {byte} (character '
                            f'{text[exc.start]!r} has no UTF-8 encoding)') from None
    else:
        raise URDFError(f'{src}: expected URDF XML text (str or bytes), got '
                        f'{type(data).__name__}')
    return text[1:] if text.startswith('\ufeff') else text


def _starts_with_element(text):
    """
    Return whether ``text`` starts with an XML element.

    Whitespace, an XML declaration or processing instructions, comments and a DOCTYPE
    may come first (the XML prolog); the first thing after them must be ``<name``.
    """
    i, n = 0, len(text)
    while True:
        while i < n and text[i] in ' \t\r\n':
            i += 1
        if text.startswith('<?', i):
            end = text.find('?>', i + 2)
            if end < 0:
                return False
            i = end + 2
        elif text.startswith('<!--', i):
            end = text.find('-->', i + 4)
            if end < 0:
                return False
            i = end + 3
        elif text.startswith('<!DOCTYPE', i):
            return True  # the XML parser reads it (entities expanded, external ones refused)
        else:
            return (i + 1 < n and text[i] == '<'
                    and (text[i + 1].isalpha() or text[i + 1] in '_:'))


def _xml_text(data, src):
    """
    Decode ``data`` and check that it is XML text; see :func:`parse_urdf_string`.

    Leading whitespace is dropped (an XML declaration after it would be malformed XML).
    """
    text = _decode(data, src).lstrip(' \t\r\n')
    if not _starts_with_element(text):
        raise URDFError(f'{src}: not URDF XML (expected text starting with an XML element '
                        f'such as <robot>, got {text[:40]!r})')
    return text


def _xacro_mappings(xacro_args, src):
    """
    Return xacro arguments as a ``{name: value}`` dict of strings.

    ``xacro_args`` is ``None``, a mapping, or a string ``'name:=value name2:=value2'``
    (shell quoting allowed for values with spaces).  Raises :class:`URDFError` for a word
    that is not ``name:=value``.
    """
    if xacro_args is None:
        return {}
    if isinstance(xacro_args, str):
        try:
            words = shlex.split(xacro_args)
        except ValueError as exc:
            raise URDFError(f'{src}: xacro arguments {xacro_args!r}: {exc}') from None
        mappings = {}
        for word in words:
            name, sep, value = word.partition(':=')
            if not sep or not name:
                raise URDFError(f"{src}: xacro argument {word!r} is not of the form "
                                "'name:=value'")
            mappings[name] = value
        return mappings
    try:
        return {str(k): str(v) for k, v in dict(xacro_args).items()}
    except (TypeError, ValueError):
        raise URDFError(f'{src}: xacro arguments must be a dict or a string '
                        f"'name:=value ...', got {type(xacro_args).__name__}") from None


def _xacro_error(exc, path, culprit):
    """Return a :class:`URDFError` for a failure of xacro in ``culprit`` (from ``path``)."""
    cause = getattr(exc, 'exc', None) or exc
    msg = ' '.join(str(exc).split()) or type(exc).__name__
    where = culprit if culprit == path else f'{culprit} (included from {path})'
    from_ament = type(cause).__module__.startswith('ament_index_python')
    if from_ament or isinstance(cause, ImportError) or 'AMENT_PREFIX_PATH' in msg:
        packages = []
        with contextlib.suppress(OSError, UnicodeDecodeError):
            with open(culprit, encoding='utf-8') as f:
                packages = sorted(set(re.findall(r'\$\(find\s+([^)\s]+)\s*\)', f.read())))
        named = re.search(r"package '([^']+)' not found", msg)
        if named:
            packages = [named.group(1)]
        which = ', '.join(f"'{p}'" for p in packages) or 'a package'
        return URDFError(f'{where}: $(find ...) cannot resolve package {which} ({msg}); '
                         '$(find pkg) needs that ROS package installed and its workspace '
                         'sourced (AMENT_PREFIX_PATH), or use a path relative to the file '
                         'instead')
    return URDFError(f'{where}: xacro failed: {msg}')


def expand_xacro(path, xacro_args=None):
    """
    Expand a xacro file into URDF XML text, with xacro's Python API (no subprocess).

    Parameters
    ----------
    path : str or os.PathLike
        The ``.xacro`` (or ``.urdf.xacro``) file; includes resolve relative to it.
    xacro_args : dict or str, optional
        Values of the file's ``<xacro:arg>`` s, as ``{'name': value}`` or
        ``'name:=value name2:=value2'``; arguments not given take their defaults.

    Returns
    -------
    str
        The expanded XML, as the ``xacro`` command prints it.

    Raises
    ------
    URDFError
        For a missing or unreadable file, an undefined argument or property, malformed
        XML, or ``$(find pkg)`` that cannot resolve (no ROS, or ``pkg`` not installed):
        the message names the file (the included one where the error is) and the package.

    """
    src = os.fspath(path)
    mappings = _xacro_mappings(xacro_args, src)
    if not os.path.isfile(src):
        raise URDFError(f'{src}: no such xacro file')
    try:
        import xacro
    except ImportError:
        raise URDFError(f"{src}: reading xacro files needs the 'xacro' package "
                        '(pip install xacro, or apt install ros-$ROS_DISTRO-xacro)') from None
    full = os.path.abspath(src)
    err = io.StringIO()
    with _XACRO_LOCK:
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(err):
                doc = xacro.process_file(full, mappings=mappings)
                text = doc.toprettyxml(indent='  ')
        except Exception as exc:  # xacro and expat raise many types; re-raise as ours
            culprit = (xacro.filestack or [None])[-1] or full
            if isinstance(exc, xml.parsers.expat.ExpatError):
                raise URDFError(f'{culprit}: malformed XML: {exc}') from None
            raise _xacro_error(exc, full, culprit) from None
        finally:
            xacro.filestack = None  # a failed run must not name its file in the next one
            xacro.all_includes = []  # xacro only ever appends to it
    for line in err.getvalue().splitlines():
        if line.strip():
            warnings.warn(f'{src}: xacro: {line.strip()}', URDFWarning, stacklevel=2)
    return text


def read_urdf_file(path, xacro_args=None):
    """
    Return the URDF XML text of a file, expanding xacro files.

    Parameters
    ----------
    path : str or os.PathLike
        A URDF file, or a xacro file (``*.xacro``, e.g. ``*.urdf.xacro``).
    xacro_args : dict or str, optional
        xacro arguments (see :func:`expand_xacro`); not ``None`` (even empty) runs xacro
        on the file whatever its extension.

    Returns
    -------
    str
        UTF-8-checked text that starts with an XML element (not otherwise validated).

    Raises
    ------
    URDFError
        No such file, not UTF-8 text, not XML, or a xacro failure; naming the file.

    """
    path = os.fspath(path)
    if xacro_args is not None or is_xacro_path(path):
        return _xml_text(expand_xacro(path, xacro_args), path)
    if not os.path.isfile(path):
        raise URDFError(f'{path}: no such URDF file')
    with open(path, 'rb') as f:
        return _xml_text(f.read(), path)


def _read_text(path_or_xml, xacro_args=None):
    """
    Return ``(xml_text, source_name)`` from a file path or an XML string (or bytes).

    A ``str`` without ``<`` is a path (backwards compatible); see :func:`read_urdf_file`.
    """
    if isinstance(path_or_xml, os.PathLike) or (
            isinstance(path_or_xml, str) and '<' not in path_or_xml):
        path = os.fspath(path_or_xml)
        return read_urdf_file(path, xacro_args), path
    if isinstance(path_or_xml, (bytes, bytearray, memoryview, str)):
        return _xml_text(path_or_xml, '<string>'), '<string>'
    raise URDFError(f'expected a URDF path or XML string, got {type(path_or_xml).__name__}')


_XACRO_HINT = ('this looks like an unexpanded xacro file: expand it first (`xacro '
               'robot.urdf.xacro > robot.urdf`, or liemb_ros.resources.read_robot_description)'
               ', or load the file itself with load_urdf(path, xacro_args=...)')

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
        if isinstance(el.tag, str) and el.tag.startswith(_XACRO_NAMESPACES):
            tag = 'xacro:' + el.tag.split('}', 1)[1]
            raise URDFError(f'{src}: contains a <{tag}> element; {_XACRO_HINT}')
    for kind in ('link', 'joint'):
        for top in root.findall(kind):
            for el in top.iter():
                for attr, value in el.attrib.items():
                    if '${' in value or '$(' in value:
                        tag = '' if el is top else f' {el.tag}'
                        raise URDFError(f"{src}: {kind} '{top.get('name')}':{tag} "
                                        f'{attr}={value!r} is an unexpanded expression; '
                                        f'{_XACRO_HINT}')


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
        hint = f'; {_XACRO_HINT}' if 'unbound prefix' in str(exc) and 'xacro:' in text else ''
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
    text, src = _read_text(path_or_xml, xacro_args)
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
    return _parse_text(_xml_text(xml, source), source, strict)


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
