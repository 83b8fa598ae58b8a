"""
An optimised excitation trajectory for identification, written as a trajectory file.

``liemb excite ROBOT -o FILE`` optimises a finite Fourier series per joint (Swevers et
al. 1997) for the condition number of the stacked base regressor, within the URDF's
position, velocity and effort limits (each shrunk by ``--margin``), and writes it as a
joint trajectory file (positions, velocities, accelerations every ``--step`` s) that the
dynamics node tracks in computed_torque (``computed_torque.trajectory_file``, ``liemb
launch control``) or that is sent as a FollowJointTrajectory goal.  The motion starts and
ends at rest at its offset, reached ``--lead`` s after the file starts.  It prints the
condition number (and that of the random feasible start), each joint's use of its limits
and whether the dynamics node's trajectory check accepts the file.  ROBOT is a URDF or
xacro file or a shipped robot name.  The method: docs/identification.md.
"""
import argparse
import math
import os
import sys
import time

import numpy as np

from .robots import load_robot


def _positive(kind):
    """Return an argparse type: a finite ``kind`` above zero."""
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f'not a number: {text!r}') from None
        if not (math.isfinite(value) and value > 0):
            raise argparse.ArgumentTypeError(f'must be positive, got {text}')
        return value
    return parse


def add_arguments(parser):
    """Add the ``liemb excite`` arguments to ``parser``."""
    parser.add_argument('robot', help='URDF or xacro file, or a shipped robot name')
    parser.add_argument('-o', '--out', required=True, metavar='FILE.yaml',
                        help='the trajectory file to write (its folder must exist)')
    parser.add_argument('--period', type=_positive(float), default=10.0, metavar='S',
                        help='period of the Fourier series [s] (default 10)')
    parser.add_argument('--duration', type=_positive(float), metavar='S',
                        help='length of the motion [s], a whole number of periods '
                             '(default one period)')
    parser.add_argument('--harmonics', type=_positive(int), default=5, metavar='K',
                        help='harmonics per joint, at least 2 (default 5)')
    parser.add_argument('--samples', type=_positive(int), default=100, metavar='N',
                        help='regressor samples over a period (default 100)')
    parser.add_argument('--friction', action='store_true',
                        help='include the viscous and Coulomb friction columns')
    parser.add_argument('--armature', action='store_true',
                        help='include the rotor inertia (armature) columns')
    parser.add_argument('--acceleration', type=_positive(float), nargs='+', metavar='A',
                        help='limit |qdd| [rad/s^2]: one value or one per joint (default none)')
    parser.add_argument('--margin', type=float, default=0.05, metavar='F',
                        help='shrink every limit by this fraction, in (0, 1) (default 0.05)')
    parser.add_argument('--seed', type=int, default=0, help='seed of the random starts')
    parser.add_argument('--starts', type=_positive(int), default=1, metavar='N',
                        help='random feasible starts; the best result is kept (default 1)')
    parser.add_argument('--iterations', type=_positive(int), default=200, metavar='N',
                        help='SLSQP iterations per start (default 200)')
    parser.add_argument('--step', type=_positive(float), default=0.01, metavar='S',
                        help='time between the points of the file [s] (default 0.01)')
    parser.add_argument('--lead', type=float, default=2.0, metavar='S',
                        help='time_from_start of the first point, the rest pose [s] '
                             '(default 2: from where the arm is to the start)')
    parser.add_argument('--plot', metavar='PNG',
                        help='draw q, qd and qdd over a period to this picture')
    parser.add_argument('--quiet', action='store_true', help='no progress bar')


def _fail(message):
    """Print ``liemb excite: message`` on stderr; return the exit status 2."""
    print(f'liemb excite: {message}', file=sys.stderr)
    return 2


def _check_arguments(args, model):
    """Return what is wrong with the arguments before any optimisation ('' if nothing)."""
    from ..control.trajectory import MAX_POINTS
    folder = os.path.dirname(os.path.abspath(args.out))
    duration = args.period if args.duration is None else args.duration
    periods = duration / args.period
    n_points = math.ceil(duration / args.step - 1e-9) + 1
    acceleration = args.acceleration or []
    problems = [
        (not os.path.isdir(folder), f'no folder {folder} for {args.out}'),
        (args.harmonics < 2, f'--harmonics must be at least 2, got {args.harmonics}'),
        (abs(periods - round(periods)) > 1e-9 * max(periods, 1.0) or round(periods) < 1,
         f'--duration {duration:g} is not a whole number of periods ({args.period:g} s)'),
        (n_points > MAX_POINTS, f'{n_points} points (--duration / --step): a trajectory '
                                f'takes at most {MAX_POINTS}; give a larger --step'),
        (not 0.0 < args.margin < 1.0, f'--margin must be in (0, 1), got {args.margin:g}'),
        (not (math.isfinite(args.lead) and args.lead >= 0.0),
         f'--lead must be zero or positive, got {args.lead:g}'),
        (len(acceleration) not in (0, 1, model.nq),
         f'--acceleration needs one value or {model.nq} (one per joint), got '
         f'{len(acceleration)}'),
        (model.floating, f"robot '{model.name}' has a floating base: excitation needs a "
                         'fixed base'),
    ]
    return next((text for bad, text in problems if bad), '')


def _accepted(model, path, q0):
    """Return the dynamics node's verdict on the file, the arm at rest at ``q0``."""
    from ..control import JointTrajectory, LimitError, check_limits, load_trajectory
    names, times, P, V, A = load_trajectory(path)
    trajectory = JointTrajectory(model.joint_names, names, times, P, V, A, start=0.0, q=q0,
                                 qd=np.zeros(model.nq))
    try:
        check_limits(model, trajectory)
    except LimitError as exc:
        return f'refused by the trajectory check: {exc}'
    return 'accepted by the dynamics node\'s trajectory check (from rest at the start pose)'


def plot(result, path):
    """Draw ``q``, ``q̇`` and ``q̈`` of ``result`` over one period to the picture ``path``."""
    from matplotlib.figure import Figure
    tr = result.trajectory
    t = np.linspace(0.0, tr.period, 1001)
    q, qd, qdd = tr.states(t)
    fig = Figure(figsize=(9, 8), layout='constrained')
    axes = fig.subplots(3, 1, sharex=True)
    axes[0].plot(t, q)
    axes[0].set_ylabel('q [rad]')
    axes[1].plot(t, qd)
    axes[1].set_ylabel('q̇ [rad/s]')
    axes[2].plot(t, qdd)
    axes[2].set_ylabel('q̈ [rad/s²]')
    axes[2].set_xlabel('t [s] (one period)')
    axes[0].legend(result.joint_names, fontsize='small', ncol=min(len(result.joint_names), 7))
    fig.suptitle(f'excitation: cond {result.condition:.4g} (start {result.start_condition:.4g})')
    fig.savefig(path)


def run(args):
    """Run ``liemb excite``: check the arguments, optimise, write, check and report."""
    from ..core.excitation import excitation_trajectory, write_trajectory
    try:
        model = load_robot(args.robot)
    except SystemExit as exc:   # a missing file or bad URDF: 'liemb: <reason>'
        return _fail(str(exc).removeprefix('liemb: '))
    wrong = _check_arguments(args, model)
    if wrong:
        return _fail(wrong)
    duration = args.period if args.duration is None else args.duration
    acceleration = None
    if args.acceleration:
        acceleration = np.array(args.acceleration if len(args.acceleration) > 1
                                else args.acceleration[0])
    began = time.perf_counter()
    try:
        result = excitation_trajectory(
            model, harmonics=args.harmonics, period=args.period, samples=args.samples,
            friction=args.friction, armature=args.armature, acceleration=acceleration,
            margin=args.margin, starts=args.starts, seed=args.seed, maxiter=args.iterations,
            progress=not args.quiet)
    except ValueError as exc:
        return _fail(str(exc))
    times, P, V, A = result.trajectory.points(duration, args.step, args.lead)
    comment = (f'An excitation trajectory for {model.name} (liemb excite): {args.harmonics} '
               f'harmonics of a {args.period:g} s period, {duration:g} s of motion.\n'
               f'At rest at the start pose at time_from_start {args.lead:g} s and at the '
               f'end; cond of the base regressor {result.condition:.4g}.')
    try:
        write_trajectory(args.out, model.joint_names, times, P, V, A, comment)
    except OSError as exc:
        return _fail(f'cannot write {args.out}: {exc}')
    print(result.text())
    print(f'{args.out}: {times.size} points every {args.step:g} s, {duration:g} s of motion '
          f'from time_from_start {args.lead:g} s; start pose '
          f'{np.round(result.trajectory.q0, 4).tolist()}')
    print(f'{args.out}: {_accepted(model, args.out, result.trajectory.q0)}')
    if args.plot:
        try:
            plot(result, args.plot)
        except (OSError, ValueError) as exc:
            return _fail(f'cannot draw {args.plot}: {exc}')
        print(f'plot: {args.plot}')
    print(f'{time.perf_counter() - began:.1f} s ({result.iterations} SLSQP iterations, '
          f'{result.starts} start(s))')
    return 0
