"""
Inverse dynamics of a robot at one state: τ, M q̈, C q̇ and g per coordinate, and M.

``liemb dynamics ROBOT --q ... --qd ... --qdd ...`` prints, for every coordinate, the
joint force ``τ = M(q) q̈ + C(q, q̇) q̇ + g(q)`` (recursive Newton-Euler, [M18d] §4) and
its three parts, then the mass matrix.  ROBOT is a URDF file or a shipped robot name.
An option left out means zeros.  Units: rad, m, N, N m.
Floating base (``--floating-base``): ``qd``/``qdd`` start with the base body twist
``(ω, v)`` and its derivative, and the first six rows of τ are the base wrench ``(m, f)``.
"""
import numpy as np

from ..core import dynamics
from .robots import load_robot


def add_arguments(parser):
    """Add the ``liemb dynamics`` arguments to ``parser``."""
    parser.add_argument('robot', help='URDF or xacro file, or a shipped robot name')
    parser.add_argument('--q', type=float, nargs='+', default=[], metavar='Q',
                        help='joint coordinates, model.joint_names order (nq values)')
    parser.add_argument('--qd', type=float, nargs='+', default=[], metavar='QD',
                        help='velocities (nv values; a floating base twist first)')
    parser.add_argument('--qdd', type=float, nargs='+', default=[], metavar='QDD',
                        help='accelerations (nv values)')
    parser.add_argument('--form', choices=dynamics.FORMS, default='body',
                        help='recursive Newton-Euler form (all give the same τ)')
    parser.add_argument('--floating-base', action='store_true',
                        help='make the root link a floating SE(3) base')
    parser.add_argument('--mimic', choices=('independent', 'couple'), default='independent',
                        help='mimic joints as independent coordinates (default) or coupled')
    parser.add_argument('--precision', type=int, default=4, help='decimals printed')
    parser.add_argument('--xacro-args', metavar="'NAME:=VALUE ...'",
                        help='arguments of a xacro robot (given: xacro runs on the file)')


def _vector(values, n, name, model):
    if not values:
        return np.zeros(n)
    if len(values) != n:
        raise SystemExit(f"liemb dynamics: --{name} needs {n} values for robot '{model.name}' "
                         f'({", ".join(coordinate_names(model)[-n:])}), got {len(values)}')
    return np.array(values)


def coordinate_names(model):
    """Return a label per velocity coordinate (base twist components first)."""
    base = ['base wx', 'base wy', 'base wz', 'base vx', 'base vy', 'base vz']
    return (base if model.floating else []) + list(model.joint_names)


def dynamics_text(model, q, qd, qdd, form='body', precision=4):
    """Return the table printed by ``liemb dynamics`` (raises ValueError on bad input)."""
    tau = dynamics.inverse_dynamics(model, q, qd, qdd, form=form)
    M = dynamics.mass_matrix(model, q)
    g = dynamics.gravity_torques(model, q)
    cqd = dynamics.coriolis_matrix(model, q, qd) @ qd
    names = coordinate_names(model)
    off = model.nv - model.nq
    qcol = ['-'] * off + [f'{x:.{precision}f}' for x in np.round(q, precision) + 0.0]
    w = max(len(n) for n in names + ['coordinate'])
    cw = max(12, precision + 8)
    lines = [f'robot {model.name!r} from {model.source}',
             f'  nq = {model.nq}   nv = {model.nv}   form = {form}   '
             f'gravity = {tuple(float(x) for x in model.gravity)} m/s^2', '',
             'τ = M(q) q̈ + C(q, q̇) q̇ + g(q)   [N m | N]']
    cols = ['q', 'qd', 'qdd', 'tau', 'M qdd', 'C qd', 'g']
    hdr = f"{'coordinate':<{w}} " + ' '.join(f'{c:>{cw}}' for c in cols)
    lines += [hdr, '-' * len(hdr)]
    Mqdd = M @ qdd

    def row(values):   # rounded first, so that no '-0.0000' is printed
        return ' '.join(f'{v:{cw}.{precision}f}' for v in np.round(values, precision) + 0.0)
    for k, name in enumerate(names):
        lines.append(f'{name:<{w}} {qcol[k]:>{cw}} '
                     + row([qd[k], qdd[k], tau[k], Mqdd[k], cqd[k], g[k]]))
    resid = np.abs(Mqdd + cqd + g - tau).max()
    lines += [f'max |M qdd + C qd + g - tau| = {resid:.2e}', '',
              'mass matrix M(q) (rows and columns in the order above)']
    for k, name in enumerate(names):
        lines.append(f'{name:<{w}} ' + row(M[k]))
    return '\n'.join(lines)


def run(args):
    """Run ``liemb dynamics``: load the robot and print the table."""
    model = load_robot(args.robot, floating_base=args.floating_base or None, mimic=args.mimic,
                       xacro_args=args.xacro_args)
    q = _vector(args.q, model.nq, 'q', model)
    qd = _vector(args.qd, model.nv, 'qd', model)
    qdd = _vector(args.qdd, model.nv, 'qdd', model)
    try:
        print(dynamics_text(model, q, qd, qdd, form=args.form, precision=args.precision))
    except ValueError as exc:
        raise SystemExit(f'liemb dynamics: {exc}') from None
    return 0
