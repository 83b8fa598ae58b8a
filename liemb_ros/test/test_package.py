"""
The ROS packaging: rosdep keys for every import, one version, a licence, the sibling layout.

``rosdep install --from-paths src`` installs what ``package.xml`` names, nothing else, so every
module the package imports at run time (``liemb_ros/``, ``launch/``) and every module the tests
import must map to a key there.  The map below is the rosdep key of each top-level module (as
in the rosdistro rosdep database); a new import without an entry fails here, so it cannot be
forgotten.  colcon's and catkin_pkg's discovery of a plain clone runs in
``tools/ros/colcon_check.sh`` (the test command).
"""
import ast
import os
import sys
import xml.etree.ElementTree as ET

from conftest import REPO, ROOT

# top-level module -> rosdep key (None: the Python standard library or this package)
ROSDEP = {
    'numpy': 'python3-numpy', 'scipy': 'python3-scipy', 'numba': 'python3-numba',
    'yaml': 'python3-yaml', 'matplotlib': 'python3-matplotlib', 'tqdm': 'python3-tqdm',
    'urdf_parser_py': 'urdfdom_py', 'xacro': 'xacro', 'rclpy': 'rclpy',
    'rcl_interfaces': 'rcl_interfaces', 'builtin_interfaces': 'builtin_interfaces',
    'std_msgs': 'std_msgs', 'std_srvs': 'std_srvs', 'sensor_msgs': 'sensor_msgs',
    'geometry_msgs': 'geometry_msgs', 'visualization_msgs': 'visualization_msgs',
    'trajectory_msgs': 'trajectory_msgs', 'diagnostic_msgs': 'diagnostic_msgs',
    'rosgraph_msgs': 'rosgraph_msgs', 'nav_msgs': 'nav_msgs', 'tf2_msgs': 'tf2_msgs',
    'control_msgs': 'control_msgs', 'action_msgs': 'action_msgs',
    'liemb_interfaces': 'liemb_interfaces',
    'ament_index_python': 'ament_index_python', 'launch': 'launch', 'launch_ros': 'launch_ros',
    'pytest': 'python3-pytest', 'hypothesis': 'python3-hypothesis',
    'pinocchio': 'pinocchio', 'ament_flake8': 'ament_flake8', 'ament_pep257': 'ament_pep257',
    # PyPI-only modules: rosdistro's pip keys (trimesh; mcap-ros2-support installs mcap too)
    # and ours in tools/ros/rosdep.yaml (viser, playwright, import-linter, dask, pyarrow, zarr)
    'viser': 'python3-viser-pip', 'trimesh': 'python3-trimesh-pip',
    'mcap': 'mcap-ros2-support', 'mcap_ros2': 'mcap-ros2-support',
    'playwright': 'python3-playwright-pip', 'importlinter': 'python3-import-linter-pip',
    'dask': 'python3-dask-distributed-pip', 'distributed': 'python3-dask-distributed-pip',
    'pyarrow': 'python3-pyarrow-pip', 'zarr': 'python3-zarr-pip',
}
OURS = {'liemb_ros', 'conftest'}


def _manifest(path):
    return ET.parse(path).getroot()


def _keys(root, *tags):
    return {el.text.strip() for tag in tags for el in root.iter(tag)}


def _imports(folder):
    """Top-level modules imported anywhere in the .py files under ``folder``."""
    mods = set()
    for dirpath, _, files in os.walk(folder):
        for f in files:
            if not f.endswith('.py'):
                continue
            with open(os.path.join(dirpath, f), encoding='utf-8') as fh:
                tree = ast.parse(fh.read())
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    mods.update(a.name.split('.')[0] for a in node.names)
                elif isinstance(node, ast.ImportFrom) and node.level == 0:
                    mods.add(node.module.split('.')[0])
    local = {f[:-3] for f in os.listdir(folder) if f.endswith('.py')}   # test helpers
    return {m for m in mods if m not in sys.stdlib_module_names and m not in OURS
            and m not in local}


def test_every_runtime_import_has_an_exec_depend():
    keys = _keys(_manifest(os.path.join(ROOT, 'package.xml')), 'exec_depend', 'depend')
    used = _imports(os.path.join(ROOT, 'liemb_ros')) | _imports(os.path.join(ROOT, 'launch'))
    unknown = sorted(m for m in used if m not in ROSDEP)
    assert not unknown, f'imports without a known rosdep key (add them to ROSDEP): {unknown}'
    missing = sorted(ROSDEP[m] for m in used if ROSDEP[m] not in keys)
    assert not missing, f'package.xml lacks <exec_depend> for {missing}'


def test_every_test_import_has_a_test_or_exec_depend():
    keys = _keys(_manifest(os.path.join(ROOT, 'package.xml')),
                 'exec_depend', 'depend', 'test_depend')
    used = _imports(os.path.join(ROOT, 'test'))
    unknown = sorted(m for m in used if m not in ROSDEP)
    assert not unknown, f'test imports without a known rosdep key: {unknown}'
    missing = sorted(ROSDEP[m] for m in used if ROSDEP[m] not in keys)
    assert not missing, f'package.xml lacks <test_depend> for {missing}'
    # its URDFs are read by path, never imported; the browser test drives chromium
    assert {'python3-example-robot-data-pip', 'chromium-browser'} <= keys


def _recorded_keys():
    with open(os.path.join(REPO, 'tools', 'ros', 'rosdep_keys.txt'), encoding='utf-8') as f:
        rows = [line.split(' | ') for line in f if line.strip() and not line.startswith('#')]
    return {r[0].strip(): r[1:] for r in rows}


def test_every_rosdep_key_was_resolved_for_the_target_platforms():
    """
    ``tools/ros/rosdep_check.sh`` resolved exactly the keys of both package.xml files.

    Run offline against a rosdistro checkout (rosdistro's database plus
    ``tools/ros/rosdep.yaml``) for ubuntu:noble and debian:bookworm; a key added to a
    package.xml without running it again, or one it could not resolve, fails here.
    """
    keys = set()
    for pkg in ('liemb_ros', 'liemb_interfaces'):
        root = _manifest(os.path.join(REPO, pkg, 'package.xml'))
        keys |= _keys(root, 'depend', 'exec_depend', 'test_depend', 'build_depend',
                      'buildtool_depend', 'build_export_depend', 'member_of_group')
    keys -= {'liemb_interfaces', 'rosidl_interface_packages'}   # ours; a group, not a key
    recorded = _recorded_keys()
    assert set(recorded) == keys, (sorted(keys - set(recorded)), sorted(set(recorded) - keys))
    assert all(len(r) == 2 and all(x.strip() for x in r) for r in recorded.values())


def test_our_rosdep_keys_are_pip_packages_that_package_xml_uses():
    import yaml
    with open(os.path.join(REPO, 'tools', 'ros', 'rosdep.yaml'), encoding='utf-8') as f:
        ours = yaml.safe_load(f)
    recorded = _recorded_keys()
    for key, rules in ours.items():
        assert key.endswith('-pip') and key in recorded, key
        assert {'debian', 'ubuntu'} <= set(rules), key
        assert all('pip' in rule for rule in rules.values()), key


def test_one_version_and_a_licence():
    import liemb_ros
    ours = _manifest(os.path.join(ROOT, 'package.xml'))
    theirs = _manifest(os.path.join(REPO, 'liemb_interfaces', 'package.xml'))
    assert liemb_ros.__version__ == ours.findtext('version') == theirs.findtext('version')
    with open(os.path.join(ROOT, 'setup.py'), encoding='utf-8') as f:
        assert 'package.xml' in f.read()            # setup.py reads it, states no number
    assert os.path.isfile(os.path.join(REPO, 'LICENSE'))
    with open(os.path.join(REPO, 'LICENSE'), encoding='utf-8') as f:
        text = f.read()
    assert ours.findtext('license') == theirs.findtext('license') == 'BSD-3-Clause'
    assert 'BSD 3-Clause' in text


def test_the_repository_root_is_not_a_package():
    """colcon and catkin_pkg stop at the first package.xml: the packages must be siblings."""
    assert not os.path.exists(os.path.join(REPO, 'package.xml'))
    for pkg in ('liemb_ros', 'liemb_interfaces'):
        assert _manifest(os.path.join(REPO, pkg, 'package.xml')).findtext('name') == pkg
