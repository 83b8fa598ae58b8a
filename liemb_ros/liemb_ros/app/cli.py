"""
The ``liemb`` command line.

``liemb inspect ROBOT``   joint screws (spatial Y_i, body-fixed X_i) and the link tree
``liemb dynamics ROBOT``  inverse dynamics, mass matrix, Coriolis and gravity terms
``liemb excite ROBOT``    an optimised excitation trajectory for identification (a file)
``liemb reproduce NAME``  reproduce a published Lie group integration example
``liemb demo``            simulation + dynamics node on the default robot, a live 3D view
``liemb record FILE``     record ROS 2 topics to MCAP; ``liemb plot FILE`` draws a recording
``liemb identify FILE``   identify the robot's dynamics from a recording (URDF, YAML, plot)
``liemb launch NAME``     start a node set with launch arguments (stand-in for ros2 launch)
``liemb teleop``          keyboard twists for the servo node (``liemb launch servo``)
``liemb view [ROBOT]``    a live 3D view in the browser (ROS topics, ``--simulate``, ``--sliders``)
``liemb prepare``         compile every kernel into numba's cache (the set-up does it)
``liemb sweep SPEC``      simulation sweeps on Dask; ``liemb dataset ROBOT N``: dynamics samples

ROBOT is a URDF or xacro file or the name of a shipped robot (``liemb inspect --list``).
"""
import argparse
import importlib
import importlib.util
import signal
import sys

from ..core import resources
from .robots import inspect_text, load_robot


def _cmd_inspect(args):
    if args.list:
        for name in resources.shipped_robots():
            print(f'{name:30s} {resources.find("urdf", name + ".urdf")}')
        return 0
    if not args.robot:
        raise SystemExit('liemb inspect: give a URDF file or shipped robot name (or --list)')
    model = load_robot(args.robot, floating_base=args.floating_base or None, mimic=args.mimic,
                       xacro_args=args.xacro_args)
    print(inspect_text(model))
    return 0


def _side_process(what, argv, log_path):
    import subprocess
    log = open(log_path, 'w', encoding='utf-8')
    proc = subprocess.Popen([sys.executable, '-m', 'liemb_ros.app.cli', what] + argv,
                            stdout=log, stderr=subprocess.STDOUT)
    log.close()
    return proc


def _stop_side_processes(procs, grace=15.0):
    """
    Stop side processes (recorder, view): SIGTERM, then SIGKILL after ``grace`` seconds.

    SIGTERM, not SIGINT: a process started in the background of a non-interactive shell
    (CI) inherits SIGINT ignored.  The recorder finishes its file within about a second of
    either; killed, its file still reads up to its last chunk (``liemb_ros.app.recordings``).
    """
    import signal
    import subprocess
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _record_refused(path, overwrite, command):
    """Return whether ``command --record PATH`` must stop: PATH exists, no ``--overwrite``."""
    import os
    if overwrite or not os.path.lexists(path):
        return False
    print(f'{command}: {path} exists; --overwrite replaces it (nothing was started)',
          file=sys.stderr)
    return True


def _start_recorder(path, log_dir, overwrite=False):
    """Start ``liemb record PATH`` beside a node set (its output in ``log_dir``)."""
    import os
    os.makedirs(log_dir, exist_ok=True)
    log_path = os.path.join(log_dir, 'record.log')
    print(f'recording to {path} (liemb plot {path} draws it; log: {log_path})')
    proc = _side_process('record', [path] + ['--overwrite'] * overwrite, log_path)
    _wait_for_line(proc, log_path, 'liemb record: writing', 'the recorder')
    return proc


#: seconds a side process may take to be ready (import, ROS context, subscriptions)
SIDE_READY_TIMEOUT = 60.0


def _wait_for_line(proc, log_path, line, what, timeout=SIDE_READY_TIMEOUT):
    """
    Wait until ``proc`` wrote ``line`` to ``log_path`` (ready), exited, or timed out.

    Return whether it is ready; say why on stderr when it is not.  The recorder starts
    in 1-3 s (Python, rclpy, mcap); nodes started before it is subscribed would publish
    the start of the run to nobody.
    """
    import time
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with open(log_path, encoding='utf-8', errors='replace') as f:
                if line in f.read():
                    return True
        except OSError:
            pass
        if proc.poll() is not None:
            print(f'{what} exited with code {proc.returncode} before it was ready '
                  f'(see {log_path})', file=sys.stderr)
            return False
        time.sleep(0.05)
    print(f'{what} is not ready after {timeout:.0f} s; going on (see {log_path})',
          file=sys.stderr)
    return False


def _start_viewer(robot, host, port, log_dir):
    """Start ``liemb view ROBOT`` on ROS topics; print its address (None: not started)."""
    import os

    from ..view import ViewError, check_address, page_address
    try:
        port = check_address(host, port)
    except ViewError as exc:
        print(f'{exc} (the demo runs without its live view)', file=sys.stderr)
        return None
    log_path = os.path.join(log_dir, 'view.log')
    proc = _side_process('view', [robot, '--host', host, '--port', str(port)], log_path)
    url, where, warning = page_address(host, port)
    where = f'{where}; ' if where else ''
    print(f'live 3D view: {url}  ({where}open it in a browser while the demo runs; '
          f'--duration S runs longer; log: {log_path})')
    if warning:
        print(f'live 3D view: warning: {warning}', file=sys.stderr)
    return proc


def _cmd_demo(args):
    import os

    from .demo import default_robot, run
    # the side processes find the nodes the way the demo's monitor does
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    if args.record and _record_refused(args.record, args.overwrite, 'liemb demo'):
        return 2
    # a missing robot or a bad URDF: 'liemb: <reason>' before the recorder and view start
    robot = load_robot(args.robot or default_robot()).source
    os.makedirs(args.out, exist_ok=True)
    procs = []
    try:
        if args.record:
            procs.append(_start_recorder(args.record, args.out, args.overwrite))
        if args.view_port >= 0:
            procs.append(_start_viewer(robot, args.view_host, args.view_port, args.out))
        run(robot, args.out, duration=args.duration)
    finally:
        _stop_side_processes([p for p in procs if p is not None])
    return 0


def _cmd_record(args):
    from ..ros.recorder import record_main
    return record_main(args)


def _cmd_plot(args):
    from .plots import plot_main
    return plot_main(args)


def _cmd_prepare(args):
    from .prepare import prepare
    prepare(progress=not args.quiet, force=args.force)
    return 0


def _view_port(text):
    """``liemb demo --view-port``: -1 (no view) or 0..65535; else an argparse error (exit 2)."""
    if text.strip() == '-1':
        return -1
    from .view_command import port_argument
    return port_argument(text)


def _cmd_launch(args):
    from . import launch_sets, launcher
    try:
        if args.name is None:
            print(_launch_sets_text())
            return 0 if args.show_args else 2
        if args.show_args:
            print(launch_sets.arguments_text(args.name))
            return 0
        values = launch_sets.parse_assignments(args.assignments)
        recorder = None
        if args.record:
            import os
            if _record_refused(args.record, args.overwrite, 'liemb launch'):
                return 2
            recorder = _start_recorder(args.record, os.path.dirname(
                os.path.abspath(args.record)), args.overwrite)
        try:
            return launcher.launch(args.name, duration=args.duration,
                                   extra_params=args.param, launch_args=values)
        finally:
            if recorder is not None:
                _stop_side_processes([recorder])
                _plot_recording(args.record)
    except (launch_sets.LaunchArgumentError, FileNotFoundError) as exc:
        print(f'liemb launch: {exc}', file=sys.stderr)
        return 2


def _plot_recording(path):
    """``liemb plot PATH`` after a recorded launch (next to it, .png); never raises."""
    from .plots import plot_main
    try:
        plot_main(argparse.Namespace(file=path, robot=None, out=None))
    except Exception as exc:   # a plot must not hide how the launch ended
        print(f'liemb launch: no plot of {path}: {exc}', file=sys.stderr)


def _launch_sets_text():
    """Return the node sets of ``liemb launch`` with their descriptions."""
    from .launch_sets import load_sets
    try:
        sets = load_sets()
    except (OSError, KeyError) as exc:   # a broken install: say so in the help, not crash
        return f'node sets: unavailable ({exc})'
    lines = ['node sets (liemb launch NAME --show-args lists the launch arguments):']
    lines += [f"  {name:10s} {' '.join(str(s.get('description', '')).split())}"
              for name, s in sets.items()]
    return '\n'.join(lines)


# Subcommands implemented in their own modules: each has add_arguments(parser) and run(args).
_PLUGGED = [
    ('dynamics', '.dynamics_cli', 'inverse dynamics, mass matrix, Coriolis and gravity terms'),
    ('sweep', '.sweep_cli', 'simulation sweeps on Dask: a controller over varied parameters'),
    ('dataset', '.dataset_cli', 'sampled states and their dynamics as sharded Parquet, on Dask'),
    ('excite', '.excite_cli', 'an optimised excitation trajectory for identification, '
                              'written as a trajectory file'),
    ('identify', '.identify_cli', 'identify inertial parameters, friction, armature or a '
                                  'payload from a recording (MCAP)'),
    ('reproduce', '.reproduce', 'reproduce a published Lie group integration example'),
    ('teleop', '..ros.teleop', 'keyboard twists for the servo node, in a chosen representation'),
    ('view', '.view_command', 'a live 3D view of a robot in the browser: from ROS topics, '
                              'a simulation (--simulate) or joint sliders (--sliders)'),
]


def build_parser():
    """Return the argument parser of the ``liemb`` command."""
    parser = argparse.ArgumentParser(prog='liemb', description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest='command', required=True)
    p = sub.add_parser('inspect', help='print joint screws and the link tree of a robot')
    p.add_argument('robot', nargs='?', help='URDF file or shipped robot name')
    p.add_argument('--list', action='store_true', help='list the shipped robots')
    p.add_argument('--floating-base', action='store_true',
                   help='make the root link a floating SE(3) base')
    p.add_argument('--mimic', choices=('independent', 'couple'), default='independent',
                   help='mimic joints as independent coordinates (default) or coupled')
    p.add_argument('--xacro-args', metavar="'NAME:=VALUE ...'",
                   help='arguments of a xacro robot (given: xacro runs on the file)')
    p.set_defaults(func=_cmd_inspect)
    p = sub.add_parser('demo', help='the main job: the default arm simulated under the '
                                    "dynamics node's gravity compensation, plotted and drawn")
    p.add_argument('--robot', help='URDF file or shipped robot name (default: liemb_arm7)')
    p.add_argument('--out', default='out/demo', help='folder for pictures and plots')
    p.add_argument('--duration', type=float, default=10.0,
                   help='seconds to run the simulation (Ctrl-C stops earlier)')
    p.add_argument('--record', metavar='FILE.mcap',
                   help="record the run's topics to MCAP (liemb plot FILE.mcap draws them)")
    p.add_argument('--overwrite', action='store_true',
                   help='replace the --record file if it exists (else the demo refuses)')
    p.add_argument('--view-port', type=_view_port, default=8080,
                   help='port of the live 3D view in the browser (default 8080; -1: none)')
    p.add_argument('--view-host', default='127.0.0.1',
                   help='address of the live 3D view (default 127.0.0.1)')
    p.set_defaults(func=_cmd_demo)
    p = sub.add_parser('record', help='record ROS 2 topics to an MCAP file (ros2 bag record '
                                      'stand-in; Foxglove and ros2 bag open it)')
    p.add_argument('file', help='the MCAP file to write')
    p.add_argument('topics', nargs='*',
                   help='topics or fnmatch patterns (default: joint_states, tf, diagnostics, '
                        "robot_description and the liemb nodes' topics)")
    p.add_argument('--duration', type=float, help='stop after this many seconds')
    p.add_argument('--overwrite', action='store_true',
                   help='replace FILE if it exists (else liemb record refuses, as ros2 bag '
                        'record does)')
    p.set_defaults(func=_cmd_record)
    p = sub.add_parser('plot', help="draw the demo's plots from an MCAP recording")
    p.add_argument('file', help='an MCAP file (liemb demo --record, liemb record, ros2 bag '
                                'record); one cut short is read up to its last chunk')
    p.add_argument('--robot', help='URDF file or shipped robot name (default: the recorded '
                                   'robot_description)')
    p.add_argument('--out', help='the picture to write, its format from its extension '
                                 '(default: FILE with .png); its folder is created')
    p.set_defaults(func=_cmd_plot)
    p = sub.add_parser('prepare', help='compile every kernel into the package\'s kernel cache '
                                       '(once after installing: later starts take well under '
                                       'a second); prints where it is')
    p.add_argument('--quiet', action='store_true', help='no progress bar')
    p.add_argument('--force', action='store_true',
                   help='run every step even when the cache folder is already prepared')
    p.set_defaults(func=_cmd_prepare)
    p = sub.add_parser(
        'launch', help='start a node set of config/launch.yaml with launch arguments '
                       '(ros2 launch stand-in): sim | stand | dynamics | servo | control',
        description='Start a node set as ros2 launch would, each node a process; Ctrl-C '
                    'stops it.\nLaunch arguments (ARG:=VALUE) as in ros2 launch liemb_ros '
                    'NAME.launch.py;\n--show-args lists them with defaults.',
        epilog=_launch_sets_text(), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('name', nargs='?', help='node set name (none: list the sets)')
    p.add_argument('assignments', nargs='*', metavar='ARG:=VALUE',
                   help='launch arguments, e.g. robot:=my_robot.urdf.xacro namespace:=arm')
    p.add_argument('--duration', type=float, help='stop after this many seconds')
    p.add_argument('--record', metavar='FILE.mcap',
                   help="record the set's topics to MCAP while it runs")
    p.add_argument('--overwrite', action='store_true',
                   help='replace the --record file if it exists (else the launch refuses)')
    p.add_argument('-p', '--param', action='append', default=[], metavar='NODE:NAME:=VALUE',
                   help='override a node parameter after everything else, e.g. '
                        'liemb_dynamics:publish_rate:=100.0')
    p.add_argument('-s', '--show-args', '--list-args', action='store_true',
                   help="list the set's launch arguments (defaults, descriptions) and exit")
    p.set_defaults(func=_cmd_launch)
    for name, module, text in _PLUGGED:
        if importlib.util.find_spec(module, __package__) is None:
            continue
        mod = importlib.import_module(module, __package__)
        p = sub.add_parser(name, help=text, description=mod.__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        mod.add_arguments(p)
        p.set_defaults(func=mod.run)
    return parser


def main(argv=None):
    """Entry point of the ``liemb`` console script."""
    # A command started in the background of a non-interactive shell (a CI script, `cmd &`)
    # inherits SIGINT ignored, and so would every node, recorder and view it starts: a
    # stop's SIGINT would be lost on them and each killed after the grace.  Ctrl-C and an
    # explicit `kill -INT` stop a liemb command and what it started, as they stop ros2 launch.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    parser = build_parser()
    # Launch arguments may come after options (liemb launch sim --duration 5 robot:=my.urdf).
    args, rest = parser.parse_known_args(argv)
    if rest:
        if args.command != 'launch':
            parser.error(f"unrecognized arguments: {' '.join(rest)}")
        args.assignments += rest
    return args.func(args)


if __name__ == '__main__':
    sys.exit(main())
