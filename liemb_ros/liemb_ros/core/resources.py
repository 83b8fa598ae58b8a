"""
Locate the files shipped with the package (URDFs, configuration, launch files).

Looked up, in order: the ament index share directory (a colcon / ROS install), the
``share/liemb_ros`` folder of the Python prefix (a pip install), and the source tree
(an editable install or a checkout).  :func:`read_robot_description` turns a robot
argument (a file or a shipped robot's name, URDF or xacro) into the URDF text that
robot_state_publisher and the nodes receive.  :func:`resolve_mesh` finds the file of a
URDF mesh URI (the view draws it, the contact model samples it); :func:`mesh_candidates`
names the folder each place belongs to, so that a reader can keep to it;
:func:`read_bounded` reads a file a robot description names only when it is small enough.
"""
import os
import stat
import sys

_PKG = 'liemb_ros'
#: the source tree's package folder (urdf/, config/ beside the Python package), for a tree
#: that is not installed
_SOURCE_SHARE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def share_dirs():
    """Return the candidate share directories, most specific first."""
    dirs = []
    try:
        from ament_index_python.packages import get_package_share_directory
        dirs.append(get_package_share_directory(_PKG))
    except Exception:  # not a ROS install, or the package is not in the ament index
        pass
    dirs.append(os.path.join(sys.prefix, 'share', _PKG))
    dirs.append(_SOURCE_SHARE)
    return [d for d in dirs if os.path.isdir(d)]


def find(kind, name):
    """Return the path of a shipped file of kind (a folder such as 'urdf') by name."""
    for d in share_dirs():
        path = os.path.join(d, kind, name)
        if os.path.isfile(path):
            return path
    raise FileNotFoundError(f'{kind}/{name} is not shipped with {_PKG} '
                            f'(looked in {", ".join(share_dirs())})')


ROBOT_SUFFIXES = ('.urdf', '.urdf.xacro', '.xacro')  # shipped robots' files, preferred first


def _robot_stem(filename):
    """Return the robot name of a file in urdf/ (``None`` for other files)."""
    for suffix in ROBOT_SUFFIXES:
        if filename.endswith(suffix) and len(filename) > len(suffix):
            return filename[:-len(suffix)]
    return None


def shipped_robots():
    """Return the names of the shipped robots (URDF and xacro files, without extension)."""
    names = set()
    for d in share_dirs():
        folder = os.path.join(d, 'urdf')
        if os.path.isdir(folder):
            names.update(n for n in map(_robot_stem, os.listdir(folder)) if n)
    return sorted(names)


def example_robot_data_dirs():
    """Return the ``robots`` folders of example-robot-data installed from PyPI (cmeel)."""
    out = []
    for p in sys.path:
        d = os.path.join(p, 'cmeel.prefix', 'share', 'example-robot-data', 'robots')
        if p and os.path.isdir(d) and d not in out:
            out.append(d)
    return out


def _example_folders():
    """Yield ``(root, package, folder)`` of example-robot-data's URDF folders, in order."""
    for root in example_robot_data_dirs():
        for pkg in sorted(os.listdir(root)):
            for sub in ('urdf', 'robots'):
                folder = os.path.join(root, pkg, sub)
                if os.path.isdir(folder):
                    yield root, pkg, folder


def _example_robot(stem):
    """``<stem>.urdf`` of example-robot-data (its ``<stem>_description`` first), or None."""
    found = {}
    for root, pkg, folder in _example_folders():
        cand = os.path.join(folder, stem + '.urdf')
        if os.path.isfile(cand):
            found.setdefault(root, []).append((pkg != stem + '_description', cand))
    return min(next(iter(found.values())))[1] if found else None


def robot_path(name_or_path):
    """
    Resolve a robot argument: a file path, a shipped robot's or an example-robot-data name.

    A name ``n`` (with or without one of the extensions ``.urdf``, ``.urdf.xacro``,
    ``.xacro``) finds ``urdf/n.urdf``, else ``urdf/n.urdf.xacro``, else ``urdf/n.xacro``
    of this package; else, where example-robot-data is installed (pip), its ``n.urdf``
    (``n_description/urdf/n.urdf`` or ``.../robots/n.urdf``: ``solo12``, ``ur5_robot``,
    ``panda``, ``talos_reduced`` ...).  Raises FileNotFoundError listing the shipped robots.
    """
    if os.path.isfile(name_or_path):
        return name_or_path
    stem = _robot_stem(name_or_path) or name_or_path
    if os.sep not in stem and '/' not in stem:
        for suffix in ROBOT_SUFFIXES:
            try:
                return find('urdf', stem + suffix)
            except FileNotFoundError:
                pass
        found = _example_robot(stem)
        if found:
            return found
    erd = ' or of example-robot-data' if example_robot_data_dirs() else ''
    near = _near_example_robots(stem)
    hint = f"; example-robot-data has {', '.join(near)}" if near else ''
    raise FileNotFoundError(f'{name_or_path!r} is neither a URDF or xacro file nor a shipped '
                            f"robot ({', '.join(shipped_robots()) or 'none found'}){erd}{hint}")


def _near_example_robots(stem, most=4):
    """Return example-robot-data's robot names that start with ``stem`` or resemble it."""
    import difflib
    names = set()
    for _, _, folder in _example_folders():
        names.update(f[:-5] for f in os.listdir(folder) if f.endswith('.urdf'))
    first = sorted(n for n in names if n.startswith(stem))
    return (first or difflib.get_close_matches(stem, sorted(names), n=most))[:most]


def read_robot_description(robot, xacro_args=None):
    """
    Return a robot's URDF XML text, ready for robot_state_publisher and the nodes.

    Parameters
    ----------
    robot : str or os.PathLike
        A URDF file, a xacro file (``*.xacro``, ``*.urdf.xacro``) or a shipped robot's
        name (see :func:`robot_path`).
    xacro_args : dict or str, optional
        xacro arguments, ``{'name': value}`` or ``'name:=value name2:=value2'``.  Not
        ``None`` (even empty) runs xacro on the file whatever its extension.

    Returns
    -------
    xml_text : str
        The URDF (xacro expanded), checked to be UTF-8 XML text starting with an element;
        not otherwise validated (:func:`liemb_ros.load_urdf_string` does that).
    source_path : str
        The file it came from.

    Raises
    ------
    FileNotFoundError
        ``robot`` is neither a file nor a shipped robot.
    liemb_ros.URDFError
        The file is not UTF-8 XML text (the message names the file, its size and kind,
        never its content: a robot argument may name any readable file), or xacro failed
        (the message names the file and, for ``$(find pkg)``, the package).

    """
    from .model.urdf import read_urdf_file

    path = robot_path(os.fspath(robot))
    return read_urdf_file(path, xacro_args), path


def mesh_prefixes():
    """
    Return the install prefixes whose ``share/PKG`` folders hold installed packages.

    The Python prefix, each ``AMENT_PREFIX_PATH`` entry and each ``cmeel.prefix`` on
    ``sys.path`` (pip wheels such as example-robot-data), in that order.
    """
    return [sys.prefix] + [p for p in os.environ.get('AMENT_PREFIX_PATH', '').split(
        os.pathsep) if p] + [os.path.join(p, 'cmeel.prefix') for p in sys.path if p]


def mesh_candidates(filename, base_dir=None, package_dirs=()):
    """
    Return the files a URDF mesh ``filename`` may name, each with the folder it belongs to.

    A list of ``(path, root)``, in the order :func:`resolve_mesh` looks: for
    ``package://PKG/rest`` the root is the package's folder (``DIR/PKG``, ``DIR`` named
    ``PKG``, the ament share folder, the folder named ``PKG`` above ``base_dir``,
    ``PREFIX/share/PKG``); for a relative path the folder it is taken against; for
    ``file://`` and absolute paths ``None`` (no folder of their own).  A reader that must
    not leave the package (the view) checks that each path's real location is inside its
    root.
    """
    out = []
    if filename.startswith('package://'):
        pkg, _, rest = filename[len('package://'):].partition('/')
        for d in package_dirs:
            out.append((os.path.join(d, pkg, rest), os.path.join(d, pkg)))
            if os.path.basename(os.path.normpath(d)) == pkg:
                out.append((os.path.join(d, rest), d))
        try:
            from ament_index_python.packages import get_package_share_directory
            share = get_package_share_directory(pkg)
            out.append((os.path.join(share, rest), share))
        except Exception:  # no ROS, or no such package installed
            pass
        d = os.path.abspath(base_dir) if base_dir else ''
        while d and d != os.path.dirname(d):
            if os.path.basename(d) == pkg:
                out.append((os.path.join(d, rest), d))
            d = os.path.dirname(d)
        out += [(os.path.join(p, 'share', pkg, rest), os.path.join(p, 'share', pkg))
                for p in mesh_prefixes()]
    elif filename.startswith('file://'):
        out.append((filename[len('file://'):], None))
    elif os.path.isabs(filename):
        out.append((filename, None))
    else:
        out += [(os.path.join(d, filename), d) for d in (base_dir, *package_dirs) if d]
    return out


def resolve_mesh(filename, base_dir=None, package_dirs=()):
    """
    Return the file a URDF mesh ``filename`` names, and the places looked in.

    ``package://PKG/rest``, in order: ``DIR/PKG/rest`` and ``DIR/rest`` (``DIR`` named
    ``PKG``) for each of ``package_dirs``; the installed package's share folder (ament
    index); a folder named ``PKG`` above ``base_dir``; ``share/PKG`` under each of
    :func:`mesh_prefixes`.  ``file://`` and absolute paths as they are; relative paths
    against ``base_dir`` (the URDF's folder), then each of ``package_dirs``.
    Returns ``(path or None, tried)``; :func:`mesh_candidates` gives each place's folder.
    """
    tried = [path for path, _ in mesh_candidates(filename, base_dir, package_dirs)]
    for path in tried:
        if os.path.isfile(path):
            return path, tried
    return None, tried


#: the most bytes of one mesh file read (the view, the contact model): a robot description
#: may come from anyone on the ROS graph, and may name any file
MAX_MESH_BYTES = 50_000_000


class TooLarge(ValueError):
    """A file over the bytes a reader takes; ``size``: its bytes."""

    def __init__(self, path, size, limit):
        super().__init__(f'{path}: {size} bytes, over the {limit} bytes it may have (not read)')
        self.size = size


def read_bounded(path, limit=MAX_MESH_BYTES):
    """
    Return the bytes of the regular file ``path`` when it holds at most ``limit`` bytes.

    The file is opened without following a final symbolic link and checked on the open
    file before anything is read (a 2 GB sparse file costs nothing); no more than
    ``limit`` bytes are read.  Raises :class:`TooLarge`, ValueError (not a regular file, or
    it grew while read) or OSError.
    """
    flags = os.O_RDONLY | getattr(os, 'O_NOFOLLOW', 0) | getattr(os, 'O_NONBLOCK', 0)
    with os.fdopen(os.open(path, flags), 'rb') as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f'{path}: not a regular file')
        if info.st_size > limit:
            raise TooLarge(path, info.st_size, limit)
        data = f.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f'{path}: it grew past {limit} bytes while read')
    return data
