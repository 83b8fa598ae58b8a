"""
``liemb launch NAME``: start a node set as processes (stand-in for ``ros2 launch``).

The node sets live in ``config/launch.yaml`` and are shared with the real ROS 2 launch
files in ``launch/`` (which call :func:`node_specs`), so both start the same nodes with
the same parameters.  Each node runs as its own process with ``--ros-args``; nodes of
other packages (robot_state_publisher, rviz2) are found through the ament index and
skipped with a message when they are optional and not installed (as with PyPI-only
ROS).  Ctrl-C (SIGINT) or SIGTERM stops every node cleanly (SIGINT, then SIGKILL after
a grace period); the launcher exits when a required node dies, with its exit code.
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import yaml

from .. import resources


def load_sets():
    """Return the node sets of ``config/launch.yaml``."""
    with open(resources.find('config', 'launch.yaml'), encoding='utf-8') as f:
        return yaml.safe_load(f)


def node_specs(name):
    """
    Return the node specs of set ``name`` with absolute parameter-file paths.

    Each spec is a dict: package, executable, name, params (list of paths), remap
    (dict), args (list), optional (bool), robot_description (bool), sets (dict: parameters
    this node's presence sets on other nodes, ``{node: {param: value}}``).
    """
    sets = load_sets()
    if name not in sets:
        raise ValueError(f"unknown launch set {name!r}; available: {', '.join(sets)}")
    share = os.path.dirname(os.path.dirname(resources.find('config', 'launch.yaml')))
    specs = []
    for node in sets[name]['nodes']:
        spec = dict(node)
        spec['params'] = [resources.find('config', p) for p in node.get('params', [])]
        spec['remap'] = dict(node.get('remap', {}))
        spec['args'] = [a.replace('{share}', share) for a in node.get('args', [])]
        spec['optional'] = bool(node.get('optional', False))
        spec['robot_description'] = bool(node.get('robot_description', False))
        spec['sets'] = dict(node.get('sets', {}))
        specs.append(spec)
    return specs


def _executable(spec):
    """Command prefix for a node, or None when an optional node is not installed."""
    if spec['package'] == 'liemb_ros':
        return [sys.executable, '-m', f"liemb_ros.ros.{spec['executable']}"]
    prefixes = os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep) + [sys.prefix]
    for prefix in prefixes:
        path = os.path.join(prefix, 'lib', spec['package'], spec['executable'])
        if prefix and os.access(path, os.X_OK):
            return [path]
    found = shutil.which(spec['executable'])
    return [found] if found else None


def robot_description_params(spec_params, tmpdir):
    """Write the URDF named by the liemb parameter files into a parameter file for RSP."""
    urdf_path = None
    for path in spec_params:
        with open(path, encoding='utf-8') as f:
            data = yaml.safe_load(f) or {}
        for node in data.values():
            urdf_path = (node.get('ros__parameters', {}).get('urdf_path') or urdf_path)
    if urdf_path is None:
        return None
    with open(resources.robot_path(urdf_path), encoding='utf-8') as f:
        xml = f.read()
    out = os.path.join(tmpdir, 'robot_description.yaml')
    with open(out, 'w', encoding='utf-8') as f:
        yaml.safe_dump({'/**': {'ros__parameters': {'robot_description': xml}}}, f)
    return out


def commands(name, extra_params=()):
    """
    Build ``(label, argv)`` for every node of set ``name`` that can be started.

    Returns ``(runnable, skipped)``; ``extra_params`` are ``node:param:=value`` overrides.
    """
    specs = node_specs(name)
    liemb_params = [p for s in specs if s['package'] == 'liemb_ros' for p in s['params']]
    tmpdir = tempfile.mkdtemp(prefix='liemb_launch_')
    runnable, skipped = [], []
    exes = {spec['name']: _executable(spec) for spec in specs}
    started = [s for s in specs if exes[s['name']] is not None]
    for spec in specs:
        exe = exes[spec['name']]
        if exe is None:
            if spec['optional']:
                skipped.append(f"{spec['package']}/{spec['executable']} (not installed)")
                continue
            raise FileNotFoundError(f"{spec['package']}/{spec['executable']} is not installed")
        argv = exe + spec['args'] + ['--ros-args', '-r', f"__node:={spec['name']}"]
        for path in spec['params']:
            argv += ['--params-file', path]
        if spec['robot_description']:
            rd = robot_description_params(liemb_params, tmpdir)
            if rd:
                argv += ['--params-file', rd]
        for src, dst in spec['remap'].items():
            argv += ['-r', f'{src}:={dst}']
        for other in started:
            for param, value in other['sets'].get(spec['name'], {}).items():
                argv += ['-p', f'{param}:={yaml.safe_dump(value).splitlines()[0]}']
        for item in extra_params:
            node, _, assignment = item.partition(':')
            if node == spec['name']:
                argv += ['-p', assignment]
        runnable.append((spec['name'], argv, spec['optional']))
    return runnable, skipped


def launch_description(name):
    """Return a ``launch.LaunchDescription`` for ``ros2 launch`` (real ROS 2 installs only)."""
    from launch import LaunchDescription
    from launch_ros.actions import Node
    specs = node_specs(name)
    liemb_params = [p for s in specs if s['package'] == 'liemb_ros' for p in s['params']]
    nodes = []
    for spec in specs:
        params = list(spec['params'])
        params += [other['sets'][spec['name']] for other in specs
                   if spec['name'] in other['sets']]
        if spec['robot_description']:
            rd = robot_description_params(liemb_params, tempfile.mkdtemp(prefix='liemb_'))
            if rd:
                params.append(rd)
        nodes.append(Node(package=spec['package'], executable=spec['executable'],
                          name=spec['name'], parameters=params, arguments=spec['args'],
                          remappings=list(spec['remap'].items()), output='screen'))
    return LaunchDescription(nodes)


class NodeSet:
    """
    The processes of a node set: :meth:`start`, :meth:`poll` (a dead node?), :meth:`stop`.

    ``env`` is the environment of the node processes; ``stdout`` where they print (default:
    inherited).  Used by :func:`launch` and by the demo.
    """

    def __init__(self, name, extra_params=(), env=None, stdout=None, echo=print):
        self.runnable, self.skipped = commands(name, extra_params)
        self.env, self.stdout, self.echo = env, stdout, echo
        self.procs = []

    def start(self):
        """Start every runnable node."""
        for s in self.skipped:
            self.echo(f'[launch] skipping {s}')
        for label, argv, optional in self.runnable:
            self.echo(f'[launch] starting {label}')
            self.procs.append((label, optional, subprocess.Popen(
                argv, env=self.env, stdout=self.stdout,
                stderr=None if self.stdout is None else subprocess.STDOUT)))

    def poll(self):
        """Return ``(label, exit code)`` of the first required node that exited, else None."""
        for label, optional, p in self.procs:
            if not optional and p.poll() is not None:
                return label, p.returncode
        return None

    def stop(self, grace=5.0):
        """Stop every node: SIGINT, then SIGKILL after ``grace`` seconds."""
        for _, _, p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        deadline = time.monotonic() + grace
        for label, _, p in self.procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.echo(f'[launch] {label} did not stop; killing it')
                p.kill()
                p.wait()


def launch(name, duration=None, extra_params=(), grace=5.0, env=None, echo=print):
    """
    Start the node set ``name`` and supervise it; return the exit code.

    Stops after ``duration`` seconds when given, on Ctrl-C / SIGTERM, or when a required
    node exits (its code is returned).
    """
    nodes = NodeSet(name, extra_params, env=env, echo=echo)
    stopping = {'flag': False}

    def stop(*_):
        stopping['flag'] = True
    old = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    code = 0
    t0 = time.monotonic()
    try:
        nodes.start()
        while not stopping['flag']:
            if duration is not None and time.monotonic() - t0 >= duration:
                break
            dead = nodes.poll()
            if dead is not None:
                echo(f'[launch] {dead[0]} exited with code {dead[1]}; stopping')
                code = dead[1] or 1
                break
            time.sleep(0.1)
    finally:
        nodes.stop(grace)
        for sig, handler in old.items():
            signal.signal(sig, handler)
    return code
