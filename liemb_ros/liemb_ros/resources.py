"""
Locate the files shipped with the package (URDFs, configuration, launch files).

Looked up, in order: the ament index share directory (a colcon / ROS install), the
``share/liemb_ros`` folder of the Python prefix (a pip install), and the source tree
(an editable install or a checkout).
"""
import os
import sys

_PKG = 'liemb_ros'
_HERE = os.path.dirname(os.path.abspath(__file__))


def share_dirs():
    """Return the candidate share directories, most specific first."""
    dirs = []
    try:
        from ament_index_python.packages import get_package_share_directory
        dirs.append(get_package_share_directory(_PKG))
    except Exception:  # not a ROS install, or the package is not in the ament index
        pass
    dirs.append(os.path.join(sys.prefix, 'share', _PKG))
    dirs.append(os.path.dirname(_HERE))
    return [d for d in dirs if os.path.isdir(d)]


def find(kind, name):
    """Return the path of a shipped file of kind (a folder such as 'urdf') by name."""
    for d in share_dirs():
        path = os.path.join(d, kind, name)
        if os.path.isfile(path):
            return path
    raise FileNotFoundError(f'{kind}/{name} is not shipped with {_PKG} '
                            f'(looked in {", ".join(share_dirs())})')


def shipped_robots():
    """Return the names of the shipped URDFs (without extension)."""
    names = set()
    for d in share_dirs():
        folder = os.path.join(d, 'urdf')
        if os.path.isdir(folder):
            names.update(f[:-5] for f in os.listdir(folder) if f.endswith('.urdf'))
    return sorted(names)


def robot_path(name_or_path):
    """Resolve a URDF argument: an existing file path, or the name of a shipped robot."""
    if os.path.isfile(name_or_path):
        return name_or_path
    stem = name_or_path[:-5] if name_or_path.endswith('.urdf') else name_or_path
    if os.sep not in stem:
        try:
            return find('urdf', stem + '.urdf')
        except FileNotFoundError:
            pass
    raise FileNotFoundError(f'{name_or_path!r} is neither a URDF file nor a shipped robot '
                            f"({', '.join(shipped_robots()) or 'none found'})")
