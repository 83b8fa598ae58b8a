"""
Where URDF text comes from: files, xacro expansion, strings and bytes, checked as XML text.

:func:`read_urdf_file` reads a URDF file or expands a xacro file (:func:`expand_xacro`,
xacro's Python API, its arguments as a dict or ``'name:=value ...'``); :func:`xml_text`
checks that text or bytes are UTF-8 and start with an XML element; :func:`read_text` takes
either a path or XML text (the inputs :func:`liemb_ros.core.model.urdf.parse_urdf` accepts).
Every problem raises :class:`~liemb_ros.core.model.urdf_types.URDFError` naming the file (the
included one where a xacro error is) and, for ``$(find pkg)``, the package.
"""
import contextlib
import io
import os
import re
import shlex
import threading
import warnings
import xml.parsers.expat

from .urdf_types import URDFError, URDFWarning

XACRO_SUFFIXES = ('.xacro',)  # also matches *.urdf.xacro
XACRO_NAMESPACES = ('{http://www.ros.org/wiki/xacro}', '{http://ros.org/wiki/xacro}')
_XACRO_LOCK = threading.Lock()  # xacro keeps its state in module globals
#: what an error about xacro left in a URDF advises
XACRO_HINT = ('this looks like an unexpanded xacro file: expand it first (`xacro '
              'robot.urdf.xacro > robot.urdf`, or liemb_ros.core.resources.read_robot_description)'
              ', or load the file itself with load_urdf(path, xacro_args=...)')


def is_xacro_path(path):
    """Return whether ``path`` names a xacro file (``*.xacro``, e.g. ``*.urdf.xacro``)."""
    return os.fspath(path).lower().endswith(XACRO_SUFFIXES)


def _decode(data, src, quote=True):
    """
    Return ``data`` (bytes or str) as str, refusing anything that is not UTF-8 text.

    A leading byte-order mark is dropped.  Raises :class:`URDFError`
    ``'<src>: not UTF-8 text at byte N (the byte)'`` for invalid bytes (the byte not quoted
    when ``quote`` is false), and for a str holding lone surrogates (what undecodable bytes
    become with ``errors='surrogateescape'``), where ``N`` is the byte offset the character
    would have in UTF-8.
    """
    if isinstance(data, (bytes, bytearray, memoryview)):
        data = bytes(data)
        try:
            text = data.decode('utf-8')
        except UnicodeDecodeError as exc:
            byte = f' ({data[exc.start:exc.start + 1]!r})' if quote else ''
            raise URDFError(f'{src}: not UTF-8 text at byte {exc.start}{byte}') from None
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


def xml_text(data, src, file=False):
    """
    Decode ``data`` and check that it is XML text; see :func:`parse_urdf_string`.

    Leading whitespace is dropped (an XML declaration after it would be malformed XML).
    Text that is not XML is quoted (its first 40 characters) in the error, except the
    content of a ``file`` (``data`` read from the file ``src``): a robot argument may name
    any readable file, so its error says what was expected and what the file holds (size,
    text or binary data), never what it says.
    """
    try:
        text = _decode(data, src, quote=not file).lstrip(' \t\r\n')
    except URDFError as exc:
        if not file:
            raise
        raise URDFError(f'{exc}: {_not_urdf_file(data, "binary data")}') from None
    if not _starts_with_element(text):
        if file:
            raise URDFError(f'{src}: {_not_urdf_file(data, "UTF-8 text")}')
        raise URDFError(f'{src}: not URDF XML (expected text starting with an XML element '
                        f'such as <robot>, got {text[:40]!r})')
    return text


def _not_urdf_file(data, kind):
    """Say what a URDF file holds and what a file that is none does, without its content."""
    holds = f'{len(data)} bytes of {kind}' if len(data) else '0 bytes'
    return (f'not a URDF file: expected UTF-8 XML text starting with an element such as '
            f'<robot>; the file holds {holds} (its content is not shown)')


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
        No such file, not UTF-8 text, not XML, or a xacro failure; naming the file (and
        for a file that is not XML its size and kind, never its content).

    """
    path = os.fspath(path)
    if xacro_args is not None or is_xacro_path(path):
        return xml_text(expand_xacro(path, xacro_args), path)
    if not os.path.isfile(path):
        raise URDFError(f'{path}: no such URDF file')
    with open(path, 'rb') as f:
        return xml_text(f.read(), path, file=True)


def read_text(path_or_xml, xacro_args=None):
    """
    Return ``(xml_text, source_name)`` from a file path or an XML string (or bytes).

    A ``str`` without ``<`` is a path (backwards compatible); see :func:`read_urdf_file`.
    """
    if isinstance(path_or_xml, os.PathLike) or (
            isinstance(path_or_xml, str) and '<' not in path_or_xml):
        path = os.fspath(path_or_xml)
        return read_urdf_file(path, xacro_args), path
    if isinstance(path_or_xml, (bytes, bytearray, memoryview, str)):
        return xml_text(path_or_xml, '<string>'), '<string>'
    raise URDFError(f'expected a URDF path or XML string, got {type(path_or_xml).__name__}')
