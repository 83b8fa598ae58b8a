"""
The ``liemb view`` command: its options and the choice of feed (simulation, sliders, ROS).

With ``--simulate`` a :class:`~.simulate.SimulationDriver` moves the robot, with
``--sliders`` the page's joint sliders; otherwise :func:`liemb_ros.ros.view_node.run_view`
follows the ROS topics.  A port outside 0..65535 is an argument error (exit 2).
"""
import argparse
import math
import os
import time

import numpy as np

from ..view.address import DEFAULT_HOST, DEFAULT_PORT, ViewError, check_port
from ..view.scene import RobotView
from ..view.simulate import SimulationDriver, gravity_hold


def port_argument(text):
    """Parse a ``--port`` value: 0..65535 (0: a free one); else an argparse error (exit 2)."""
    try:
        return check_port(text)
    except ViewError:
        raise argparse.ArgumentTypeError(f'{text!r} is not a port: give 0..65535 (0: a free '
                                         'one)') from None


def add_arguments(parser):
    """Arguments of ``liemb view``."""
    parser.add_argument('robot', nargs='?',
                        help='URDF or xacro file or shipped robot name (with --simulate: '
                             'default liemb_arm7; from ROS: default the robot_description '
                             'topic)')
    parser.add_argument('--simulate', action='store_true',
                        help='run a Simulator in this process and show it (no ROS needed)')
    parser.add_argument('--floating-base', action='store_true',
                        help='make the root link a floating SE(3) base (--simulate, --sliders)')
    parser.add_argument('--contact', action='store_true',
                        help="--simulate: ground contact of the URDF's collision geometry with "
                             'the plane z = 0 (liemb_ros.sim.contact)')
    parser.add_argument('--sliders', action='store_true',
                        help='no simulation and no ROS: move the joints with sliders')
    parser.add_argument('--host', default=DEFAULT_HOST,
                        help=f'address to serve the page on (default {DEFAULT_HOST}: this '
                             'machine only; 0.0.0.0 opens it to the network, with a warning)')
    parser.add_argument('--port', type=port_argument, default=DEFAULT_PORT,
                        help=f'port of the page (default {DEFAULT_PORT}; 0: a free one)')
    parser.add_argument('--package-dir', action='append', default=[], metavar='DIR',
                        help='where package:// meshes are looked for (DIR/PKG/... or a '
                             'folder named PKG); repeatable')
    parser.add_argument('--allow-path', action='append', default=[], metavar='DIR',
                        help='a folder mesh files may also be read from (by default only '
                             "their package's folder, the URDF's folder, --package-dir "
                             'folders and installed packages; .. and symbolic links are '
                             'resolved first); repeatable')
    parser.add_argument('--xacro-args', metavar="'NAME:=VALUE ...'",
                        help='arguments of a xacro robot')
    parser.add_argument('--markers', action='append', metavar='TOPIC',
                        help='from ROS: a MarkerArray topic whose arrows and spheres are drawn; '
                             'repeatable (default: /liemb_dynamics/markers and '
                             '/liemb_simulation/contact_markers)')
    parser.add_argument('--torque', choices=('gravity', 'zero'), default='gravity',
                        help='--simulate: gravity compensation plus a test torque (default), '
                             'or no torque (the robot falls)')
    parser.add_argument('--amplitude', type=float, default=0.05,
                        help='--simulate: test torque amplitude as a fraction of each '
                             "joint's effort limit (default 0.05), at 0.5 Hz")
    parser.add_argument('--speed', type=float, default=1.0,
                        help='--simulate: simulated seconds per wall-clock second')
    parser.add_argument('--duration', type=float,
                        help='stop after this many seconds (default: until Ctrl-C)')


def _wait(duration):
    end = math.inf if duration is None else time.monotonic() + duration
    try:
        while time.monotonic() < end:
            time.sleep(min(0.2, max(0.0, end - time.monotonic())))
    except KeyboardInterrupt:
        pass


def run(args):
    """Run ``liemb view``; return the exit code."""
    import sys

    from ..core import resources
    from ..core.model import URDFError, load_urdf_string
    if not (args.simulate or args.sliders):
        from ..ros.view_node import run_view
        return run_view(args)
    try:
        xml, path = resources.read_robot_description(args.robot or 'liemb_arm7',
                                                     args.xacro_args)
        model = load_urdf_string(xml, source=path, floating_base=args.floating_base or None)
    except (FileNotFoundError, URDFError) as exc:
        print(f'liemb view: {exc}', file=sys.stderr)
        return 2
    dirs = [os.path.abspath(d) for d in args.package_dir]
    try:
        view = RobotView(model, xml, host=args.host, port=args.port,
                         base_dir=os.path.dirname(os.path.abspath(path)), package_dirs=dirs,
                         allow_paths=[os.path.abspath(d) for d in args.allow_path],
                         log=lambda line: print(line, file=sys.stderr, flush=True))
    except ViewError as exc:
        print(exc, file=sys.stderr)
        return 2
    driver = None
    if args.simulate:
        from ..sim.scenario import sample_configuration
        from ..sim.simulator import Simulator
        contact = None
        if args.contact:
            from ..sim.contact import ContactModel
            try:
                contact = ContactModel(model, xml, urdf_path=path)
            except ValueError as exc:
                print(f'liemb view: no ground contact for {model.name}: {exc}', file=sys.stderr)
                view.close()
                return 2
        base = None
        if model.floating:   # stand it above the ground
            base = np.eye(4)
            base[2, 3] = 0.5
        try:   # e.g. a robot that would start inside the ground
            sim = Simulator(model, q0=sample_configuration(model), base_pose=base,
                            contact=contact)
        except ValueError as exc:
            print(f'liemb view: cannot simulate {model.name}: {exc}', file=sys.stderr)
            view.close()
            return 2
        torque = (gravity_hold(model, args.amplitude * np.where(
            np.isfinite(model.effort_limit) & (model.effort_limit > 0),
            model.effort_limit, 10.0)) if args.torque == 'gravity' else None)
        driver = SimulationDriver(sim, view, torque=torque, speed=args.speed).start()
    else:
        view.add_sliders()
    view.announce(model.name)
    _wait(args.duration)
    if driver is not None:
        driver.stop()
    view.close()
    return 0
