"""A robot for a command: loaded with its warnings shown, and described (``liemb inspect``)."""
import sys
import warnings

import numpy as np

from ..core import resources


def _fmt_vec(v, width=7, prec=3):
    v = np.round(np.asarray(v, dtype=float), prec) + 0.0  # no '-0.000'
    return '[' + ' '.join(f'{x:{width}.{prec}f}' for x in v) + ']'


def load_robot(robot, **kwargs):
    """
    Return the model of ``robot`` (a URDF or xacro file or a shipped robot name) for a command.

    ``kwargs`` go to :func:`liemb_ros.core.model.load_urdf`; its warnings are printed to stderr
    and a missing file or a bad URDF exits with ``liemb: <reason>``.
    """
    from ..core.model import URDFError, load_urdf
    try:
        path = resources.robot_path(robot)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            model = load_urdf(path, **kwargs)
    except (FileNotFoundError, URDFError) as exc:
        raise SystemExit(f'liemb: {exc}') from None
    for w in caught:
        print(f'warning: {w.message}', file=sys.stderr)
    return model


def inspect_text(model):
    """Return the human-readable description printed by ``liemb inspect``."""
    lines = []
    base = 'floating (SE(3), body-fixed twist first in qd)' if model.floating else 'fixed'
    lines.append(f'robot {model.name!r} from {model.source}')
    lines.append(f'  nq = {model.nq}   nv = {model.nv}   bodies = {model.nb}   '
                 f'links = {len(model.link_names)}   mass = {model.mass:.4g} kg   base: {base}')
    lines.append('')
    lines.append('joint screws (angular first; Y_i spatial at q = 0, [M18k] eq. (12); '
                 'X_i in the child body frame, eq. (5))')
    w = max([len(n) for n in model.body_names + model.joint_names] + [10])
    hdr = (f"{'#':>3} {'joint':<{w}} {'type':<10} {'parent -> child':<{2 * w + 4}} "
           f"{'Y_i':<44} {'X_i':<44} limits")
    lines.append(hdr)
    lines.append('-' * len(hdr))
    body_to_q = {}
    for b in range(model.nb):
        body_to_q.setdefault(int(model.q_index[b]), b)
    for b in range(model.nb):
        p = model.parent[b]
        parent = model.base_link if p < 0 else model.body_names[p]
        qi = int(model.q_index[b])
        jname = model.joint_names[qi] if body_to_q[qi] == b else model.body_names[b]
        lim = ''
        if np.isfinite(model.lower[qi]):
            lim = f'[{model.lower[qi]:.3g}, {model.upper[qi]:.3g}]'
        if model.q_mult[b] != 1.0 or model.q_offset[b] != 0.0 or body_to_q[qi] != b:
            lim += (f' mimic {model.joint_names[qi]} x {model.q_mult[b]:g} '
                    f'+ {model.q_offset[b]:g}')
        lines.append(f'{b:>3} {jname:<{w}} {model.body_joint_type[b]:<10} '
                     f"{parent + ' -> ' + model.body_names[b]:<{2 * w + 4}} "
                     f'{_fmt_vec(model.Y[b]):<44} {_fmt_vec(model.X[b]):<44} {lim}')
    lines.append('')
    lines.append('link tree (body the link is rigidly attached to)')
    children = {}
    for i, name in enumerate(model.link_names):
        children.setdefault(model.link_parent[i], []).append(i)

    stack = [(r, 0) for r in reversed(children.get(None, []))]
    while stack:  # depth first, children in order; no recursion (deep chains)
        i, depth = stack.pop()
        b = model.link_body[i]
        owner = 'base' if b < 0 else f'body {b}'
        lines.append(f"{'  ' * depth}{model.link_names[i]}  ({owner})")
        stack.extend((c, depth + 1) for c in reversed(children.get(model.link_names[i], [])))
    return '\n'.join(lines)
