"""
The node sets of ``config/launch.yaml`` and their launch arguments, resolved to nodes.

:func:`resolve` turns a set name and launch argument values (strings, as a command line or
``ros2 launch`` gives them) into the nodes to start, :class:`NodeSpec` (package,
executable, name, namespace, parameters, remappings, arguments), checking every value
first: unknown or malformed arguments and missing files raise
:class:`LaunchArgumentError` before anything starts.  It reads files (the shipped
configuration, the robot, ``params_file``) and asks which optional nodes are installed,
and starts nothing; the front ends in :mod:`.launcher` only translate its result.
"""
import os
import re
import shutil
import sys
import textwrap
from dataclasses import dataclass, field

import yaml

from ..core import resources

TRUE, FALSE = ('true', '1'), ('false', '0')   # as launch's conditions read them
_NAMESPACE = re.compile(r'^(/[A-Za-z_][A-Za-z0-9_]*)+$')
_NAME = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*$')


class LaunchArgumentError(ValueError):
    """A launch argument is unknown or malformed, or names a file that does not exist."""


@dataclass
class Argument:
    """A launch argument of a node set: its default (a string) and what it does."""

    name: str
    default: str
    description: str
    choices: list = None
    kind: str = 'str'


@dataclass
class NodeSpec:
    """
    A node to start, independent of the front end.

    ``parameters`` in order: paths of parameter files, or dicts (written to generated
    parameter files by :func:`parameter_files`); ``remappings`` ``(from, to)`` pairs;
    ``arguments`` go before ``--ros-args``, ``ros_arguments`` after it.
    """

    package: str
    executable: str
    name: str
    namespace: str = ''
    parameters: list = field(default_factory=list)
    remappings: list = field(default_factory=list)
    arguments: list = field(default_factory=list)
    ros_arguments: list = field(default_factory=list)
    optional: bool = False


@dataclass
class Resolution:
    """What :func:`resolve` returns: the nodes to start and messages on those left out."""

    nodes: list
    skipped: list


def load_config():
    """Return ``config/launch.yaml`` (``arguments`` and ``sets``)."""
    with open(resources.find('config', 'launch.yaml'), encoding='utf-8') as f:
        return yaml.safe_load(f)


def load_sets():
    """Return the node sets of ``config/launch.yaml`` by name."""
    return load_config()['sets']


def _set(config, name):
    if name not in config['sets']:
        raise LaunchArgumentError(f"unknown launch set {name!r}; available: "
                                  f"{', '.join(config['sets'])}")
    return config['sets'][name]


def arguments(name, config=None):
    """Return the launch arguments of set ``name`` (with this set's defaults), in order."""
    config = config or load_config()
    defaults = _set(config, name).get('defaults', {})
    return [Argument(arg, str(defaults.get(arg, spec.get('default', ''))),
                     ' '.join(str(spec.get('description', '')).split()),
                     spec.get('choices'), spec.get('kind', 'str'))
            for arg, spec in config['arguments'].items()]


def arguments_text(name):
    """Return the launch arguments of set ``name`` as text (for ``--show-args``)."""
    lines = [f"Arguments of 'liemb launch {name}' and 'ros2 launch liemb_ros "
             f"{name}.launch.py' (ARG:=VALUE):"]
    for a in arguments(name):
        lines.append(f"    '{a.name}':")
        lines += textwrap.wrap(a.description, 88, initial_indent=' ' * 8,
                               subsequent_indent=' ' * 8)
        if a.choices:
            lines.append(f"        Valid choices are: {a.choices}")
        lines.append(f"        (default: '{a.default}')")
    return '\n'.join(lines)


def parse_assignments(items):
    """Return ``{name: value}`` of ``ARG:=VALUE`` strings (LaunchArgumentError if malformed)."""
    values = {}
    for item in items:
        name, sep, value = item.partition(':=')
        if not sep or not _NAME.match(name):
            raise LaunchArgumentError(f'{item!r} is not a launch argument (expected ARG:=VALUE)')
        values[name] = value
    return values


def read_robot(robot, xacro_args=None):
    """
    Return ``(xml, source)`` of a URDF or xacro file or a shipped robot's name.

    ``xacro_args``: ``'name:=value ...'`` (empty: none).  Raises LaunchArgumentError when
    the robot does not exist or cannot be expanded.
    """
    try:
        return resources.read_robot_description(robot, xacro_args=xacro_args or None)
    except Exception as exc:  # missing file, xacro or XML errors: all a bad argument
        raise LaunchArgumentError(f'robot {robot!r}: {exc}') from None


def _bool(name, value):
    if value.lower() in TRUE:
        return True
    if value.lower() in FALSE:
        return False
    raise LaunchArgumentError(f"{name}:={value!r}: expected true or false")


def _namespace(value):
    ns = value.strip().rstrip('/')
    if not ns:
        return ''
    ns = ns if ns.startswith('/') else '/' + ns
    if not _NAMESPACE.match(ns):
        raise LaunchArgumentError(f'namespace:={value!r} is not a valid ROS namespace '
                                  '(letters, digits and _ in /-separated tokens)')
    return ns


def node_command(package, executable):
    """Return the command prefix of a node (a list), or None when it is not installed."""
    if package == 'liemb_ros':
        return [sys.executable, '-m', f'liemb_ros.ros.{executable}']
    prefixes = os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep) + [sys.prefix]
    for prefix in prefixes:
        path = os.path.join(prefix, 'lib', package, executable)
        if prefix and os.access(path, os.X_OK):
            return [path]
    found = shutil.which(executable)
    return [found] if found else None


def installed(package, executable):
    """Return whether a node's executable can be found (ament prefixes, then PATH)."""
    return node_command(package, executable) is not None


def _check_values(args, values):
    """Return the typed value of every argument (defaults filled in); raise on bad ones."""
    known = {a.name: a for a in args}
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise LaunchArgumentError(f"unknown launch argument(s) {', '.join(unknown)}; "
                                  f"known: {', '.join(known)}")
    typed = {}
    for a in args:
        value = str(values.get(a.name, a.default))
        if a.choices and value not in a.choices:
            raise LaunchArgumentError(f'{a.name}:={value!r}: valid choices are '
                                      f"{', '.join(a.choices)}")
        typed[a.name] = _bool(a.name, value) if a.kind == 'bool' else value
    return typed


def resolve(name, values=None, installed=installed):
    """
    Resolve node set ``name`` with launch argument ``values`` (strings) to the nodes to start.

    Pure apart from reading files (the robot, ``params_file``, the shipped configuration)
    and asking ``installed(package, executable)`` about optional nodes.  Returns a
    :class:`Resolution`; raises :class:`LaunchArgumentError` for unknown or malformed
    arguments and missing files.  Parameters of every node, in order: the shipped files,
    the robot (one dict shared by the nodes that need it), the values of the launch
    arguments, then ``params_file``.
    """
    config = load_config()
    node_set = _set(config, name)
    v = _check_values(arguments(name, config), values or {})
    ns = _namespace(v['namespace'])
    asked = [n for n in node_set['nodes'] if v.get(n.get('condition'), True)]
    skipped, nodes = [], []
    for n in asked:
        if n.get('optional') and not installed(n['package'], n['executable']):
            skipped.append(f"{n['package']}/{n['executable']} ({n['condition']}:=true, but "
                           'it is not installed; starting without it)')
        else:
            nodes.append(n)
    robot = None
    if v['robot']:
        xml, _ = read_robot(v['robot'], v['xacro_args'])
        robot = {'robot_description': xml}
    elif v['xacro_args']:
        raise LaunchArgumentError('xacro_args needs a robot (robot:=FILE.xacro)')
    else:
        needs = [n['name'] for n in asked if n.get('robot_description')
                 and n['package'] != 'liemb_ros']
        if needs:
            raise LaunchArgumentError(f"{', '.join(needs)} needs the robot: give robot:=...")
    params_file = v['params_file']
    if params_file:
        _check_params_file(params_file)
    rviz_config = v['rviz_config'] or resources.find('rviz', 'liemb.rviz')
    if not os.path.isfile(rviz_config):
        raise LaunchArgumentError(f'rviz_config: {rviz_config!r} does not exist')
    fmt = {'rviz_config': rviz_config}
    specs = []
    for n in nodes:
        params = [resources.find('config', p) for p in n.get('params', [])]
        if n.get('robot_description') and robot is not None:
            params.append(robot)
        over = {'use_sim_time': v['use_sim_time']}
        if n['package'] == 'liemb_ros':     # the robot comes from launch, not the config
            over.update({'urdf_path': ''} if robot else
                        {'robot_description': '', 'urdf_path': ''})
        over.update({p: v[p] for p in n.get('launch_params', [])})
        for arg, extra in n.get('when_true', {}).items():
            if v[arg]:
                over.update(extra)
        for other in nodes:
            over.update(other.get('sets', {}).get(n['name'], {}))
        params.append(over)
        if params_file:
            params.append(params_file)
        specs.append(NodeSpec(
            package=n['package'], executable=n['executable'], name=n['name'], namespace=ns,
            parameters=params, remappings=list(n.get('remap', {}).items()),
            arguments=[a.format(**fmt) for a in n.get('args', [])],
            ros_arguments=['--log-level', v['log_level']],
            optional=bool(n.get('optional', False))))
    return Resolution(specs, skipped)


def _check_params_file(path):
    if not os.path.isfile(path):
        raise LaunchArgumentError(f'params_file: {path!r} does not exist')
    try:
        with open(path, encoding='utf-8') as f:
            data = yaml.safe_load(f)
    except yaml.YAMLError as exc:
        raise LaunchArgumentError(f'params_file {path!r} is not YAML: {exc}') from None
    if not _parameter_tree(data):
        raise LaunchArgumentError(f'params_file {path!r}: expected a mapping of node names '
                                  '(namespaces may nest) to {ros__parameters: {...}}, as ros2 '
                                  'param dump writes it')


def _parameter_tree(data):
    """Return whether ``data`` maps node names, maybe nested, to ``{ros__parameters: {}}``."""
    if not isinstance(data, dict) or not data:
        return False
    if 'ros__parameters' in data and not isinstance(data['ros__parameters'], dict):
        return False
    return all(_parameter_tree(value) for key, value in data.items()
               if key != 'ros__parameters')
