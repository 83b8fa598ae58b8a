"""
Node sets with launch arguments, for ``ros2 launch`` and for ``liemb launch NAME``.

The node sets and their launch arguments live in ``config/launch.yaml``.  One pure
function, :func:`~liemb_ros.app.launch_sets.resolve` (:mod:`.launch_sets`, with the
arguments' checks), turns a set name and launch argument values into the list of nodes to
start (:class:`NodeSpec`: package, executable, name, namespace, parameters, remappings,
arguments); both front ends here only translate its result:

* :func:`launch_description` for the launch files in ``launch/`` (``ros2 launch liemb_ros
  sim.launch.py robot:=my.urdf``): declares every argument and, at launch time, turns the
  resolved nodes into ``launch_ros.actions.Node`` actions;
* :func:`commands` / :class:`NodeSet` / :func:`launch` for ``liemb launch sim robot:=...``,
  the stand-in where ``ros2 launch`` is not available (PyPI-only ROS 2): each node runs as
  its own process with ``--ros-args``.  Ctrl-C (SIGINT) or SIGTERM stops every node (SIGINT,
  then SIGKILL after a grace period); the launcher exits when a required node dies, and
  its exit code is non-zero when any node failed (named with its exit code on stderr).

The robot is read once (a xacro file is expanded) and handed to every node that needs it as
the ``robot_description`` parameter in a generated parameter file.  Nodes of other packages
(robot_state_publisher, rviz2) start only when asked for and installed; asked for but not
installed, they are skipped with a message.  Bad arguments raise
:class:`LaunchArgumentError` before anything starts.
"""
import difflib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import yaml

from .launch_sets import (  # noqa: F401 (importable from here as before)
    FALSE, TRUE, Argument, LaunchArgumentError, NodeSpec, Resolution, arguments, arguments_text,
    installed, load_config, load_sets, node_command, parse_assignments, read_robot, resolve)


def parameter_files(parameters, tmpdir, written=None):
    """
    Return the parameter file paths of a node's ``parameters``, writing dicts to ``tmpdir``.

    ``written`` (a dict kept across the nodes of one launch) writes a dict shared by several
    nodes, such as the robot description, once.
    """
    written = {} if written is None else written
    paths = []
    for p in parameters:
        if isinstance(p, dict):
            if id(p) not in written:
                path = os.path.join(tmpdir, f'params_{len(written)}.yaml')
                with open(path, 'w', encoding='utf-8') as f:
                    yaml.safe_dump({'/**': {'ros__parameters': p}}, f)
                written[id(p)] = (path, p)   # keep p alive: its id stays unique
            paths.append(written[id(p)][0])
        else:
            paths.append(p)
    return paths


def node_argv(spec, param_files, extra_params=()):
    """Return the command line of ``spec`` (``extra_params``: ``param:=value`` strings)."""
    argv = node_command(spec.package, spec.executable) + list(spec.arguments) + ['--ros-args']
    argv += list(spec.ros_arguments) + ['-r', f'__node:={spec.name}']
    if spec.namespace:
        argv += ['-r', f'__ns:={spec.namespace}']
    for path in param_files:
        argv += ['--params-file', path]
    for src, dst in spec.remappings:
        argv += ['-r', f'{src}:={dst}']
    for assignment in extra_params:
        argv += ['-p', assignment]
    return argv


#: parameters rclpy declares in every node, beside those of the node's table
RCLPY_PARAMETERS = ('use_sim_time', 'start_type_description_service')


def _check_parameter_name(item, node, name):
    """
    Refuse ``-p item`` naming a parameter our ``node`` does not declare: LaunchArgumentError.

    rclpy ignores an override of an undeclared parameter without a word, so a typo
    (``publish_rat``) would run the node with its default.  Nodes of other packages
    (robot_state_publisher, RViz) are not checked.
    """
    from .parameter_docs import NODES, tables
    if node not in NODES or name in RCLPY_PARAMETERS or name.startswith('qos_overrides.'):
        return
    known = [spec[0] for spec in tables()[node]]
    if name not in known:
        close = difflib.get_close_matches(name, known, n=1)
        raise LaunchArgumentError(
            f'-p {item!r}: {node} has no parameter {name!r}'
            + (f' (did you mean {close[0]!r}?)' if close else '')
            + '; docs/parameters.md lists them')


def commands(name, extra_params=(), launch_args=None, tmpdir=None):
    """
    Build the command lines of set ``name`` with ``launch_args`` (``{name: value}``).

    Returns ``(runnable, skipped)``: ``runnable`` a list of ``(node name, argv, optional)``,
    ``skipped`` messages.  ``extra_params`` are ``node:param:=value`` overrides, applied
    last; generated parameter files go to ``tmpdir`` (default: a new temporary folder).
    """
    res = resolve(name, launch_args)
    tmpdir = tmpdir or tempfile.mkdtemp(prefix='liemb_launch_')
    names = {n['name'] for n in load_sets()[name]['nodes']}
    for item in extra_params:
        node, sep, assignment = item.partition(':')
        if not sep or ':=' not in assignment:
            raise LaunchArgumentError(f'-p {item!r}: expected NODE:PARAM:=VALUE')
        if node not in names:
            raise LaunchArgumentError(f"-p {item!r}: no node {node!r} in this launch "
                                      f"({', '.join(sorted(names))})")
        _check_parameter_name(item, node, assignment.partition(':=')[0])
    written = {}
    runnable = []
    for spec in res.nodes:
        extra = [item.partition(':')[2] for item in extra_params
                 if item.partition(':')[0] == spec.name]
        argv = node_argv(spec, parameter_files(spec.parameters, tmpdir, written), extra)
        runnable.append((spec.name, argv, spec.optional))
    return runnable, res.skipped


def launch_description(name):
    """
    Return the ``launch.LaunchDescription`` of set ``name`` (for the files in ``launch/``).

    Declares every launch argument (default and description); an ``OpaqueFunction`` resolves
    their values at launch time into ``launch_ros.actions.Node`` actions.
    """
    from launch import LaunchDescription
    from launch.actions import DeclareLaunchArgument, OpaqueFunction
    declared = []
    for a in arguments(name):
        kwargs = {'choices': list(a.choices)} if a.choices else {}
        declared.append(DeclareLaunchArgument(a.name, default_value=a.default,
                                              description=a.description, **kwargs))
    return LaunchDescription(declared + [OpaqueFunction(function=launch_nodes, args=[name])])


def launch_nodes(context, name):
    """Return the launch actions of set ``name`` with the arguments of ``context``."""
    from launch.actions import LogInfo
    from launch.substitutions import LaunchConfiguration
    from launch_ros.actions import Node
    values = {a.name: LaunchConfiguration(a.name).perform(context) for a in arguments(name)}
    res = resolve(name, values)
    tmpdir = tempfile.mkdtemp(prefix='liemb_launch_')
    written = {}
    actions = [LogInfo(msg=f'[liemb_ros] skipping {s}') for s in res.skipped]
    for spec in res.nodes:
        actions.append(Node(
            package=spec.package, executable=spec.executable, name=spec.name,
            namespace=spec.namespace or None,
            parameters=parameter_files(spec.parameters, tmpdir, written),
            remappings=spec.remappings, arguments=spec.arguments,
            ros_arguments=spec.ros_arguments, output='screen'))
    return actions


class NodeSet:
    """
    The processes of a node set: :meth:`start`, :meth:`poll` (a dead node?), :meth:`stop`.

    ``launch_args`` are the launch arguments (``{name: value}``), ``extra_params``
    ``node:param:=value`` overrides; ``env`` is the environment of the node processes,
    ``stdout`` where they print (default: inherited).  Used by :func:`launch` and the demo.
    """

    def __init__(self, name, extra_params=(), env=None, stdout=None, echo=print,
                 launch_args=None):
        self.tmpdir = tempfile.mkdtemp(prefix='liemb_launch_')
        try:
            self.runnable, self.skipped = commands(name, extra_params, launch_args, self.tmpdir)
        except BaseException:
            shutil.rmtree(self.tmpdir, ignore_errors=True)
            raise
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
        """
        Stop every node: SIGINT, then SIGKILL after ``grace`` seconds; return the failures.

        A failure is ``(label, exit code, what happened)``: a node that ended (before the stop
        or on it) with a code other than 0 or the SIGINT / SIGTERM a stop sends (a Ctrl-C in
        the terminal reaches the nodes too), or one still running after the grace (killed).
        """
        for _, _, p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        deadline = time.monotonic() + grace
        failures = []
        for label, _, p in self.procs:
            try:
                code = p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.echo(f'[launch] {label} did not stop; killing it')
                p.kill()
                failures.append((label, p.wait(), f'did not stop within {grace:g} s; killed'))
                continue
            if code not in STOPPED:
                failures.append((label, code, f'exited with code {code}'))
        shutil.rmtree(self.tmpdir, ignore_errors=True)
        return failures


#: the exit codes of a node that stopped as asked: cleanly, or ended by the signal (one
#: still importing has no handler yet)
STOPPED = (0, -signal.SIGINT, -signal.SIGTERM)


def exit_code(code):
    """Return a process exit status for a node's exit ``code`` (-N: killed by signal N)."""
    return code if 0 < code < 256 else 128 - code if code < 0 else 1


def launch(name, duration=None, extra_params=(), grace=5.0, env=None, echo=print,
           launch_args=None):
    """
    Start the node set ``name`` and supervise it; return the exit code.

    Stops after ``duration`` seconds when given, on Ctrl-C / SIGTERM, or when a required
    node exits.  0 only when every node ran until the stop and stopped cleanly; else the
    exit code of the first node that failed (a required node that exited on its own with 0:
    1; killed by signal N: 128 + N), each failure named on stderr, whatever ``duration``.
    Bad launch arguments raise LaunchArgumentError before any node starts.
    """
    nodes = NodeSet(name, extra_params, env=env, echo=echo, launch_args=launch_args)
    stopping = {'flag': False}

    def stop(*_):
        stopping['flag'] = True
    old = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    dead = None
    told = set()
    t0 = time.monotonic()
    try:
        nodes.start()
        while not stopping['flag']:
            dead = nodes.poll()   # before the duration: a node that died at the end counts
            if dead is not None:
                echo(f'[launch] {dead[0]} exited with code {dead[1]}; stopping')
                break
            for label, optional, p in nodes.procs:
                if optional and p.poll() is not None and label not in told:
                    told.add(label)
                    echo(f'[launch] {label} (optional) exited with code {p.returncode}; '
                         'going on without it')
            if duration is not None and time.monotonic() - t0 >= duration:
                break
            time.sleep(0.1)
    finally:
        failures = nodes.stop(grace)
        for sig, handler in old.items():
            signal.signal(sig, handler)
    if dead is not None and dead[1] in STOPPED and not stopping['flag']:
        failures.insert(0, (dead[0], dead[1], f'exited on its own with code {dead[1]}'))
    for label, code, what in failures:
        print(f'[launch] failed: {label} {what}', file=sys.stderr, flush=True)
    return exit_code(failures[0][1]) if failures else 0
