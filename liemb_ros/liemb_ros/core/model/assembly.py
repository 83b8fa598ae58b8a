"""
From a parsed URDF to the screw model's arrays ([M18k] §2): the URDF-to-screws assembly.

:func:`model_arguments` walks the joint tree depth-first from its one root link
(:func:`_topology`, which refuses several roots, cycles and links with two parents),
expands every joint into 1-DOF screws (:func:`~liemb_ros.core.model.joints.expand`),
folds fixed joints into the link offsets, merges each link's inertia into its body's
(:mod:`.inertia`), couples mimic joints to their leaders if asked, and collects the
limits.  It returns the :class:`~liemb_ros.core.model.model.Model`'s construction
arguments; :func:`~liemb_ros.core.model.model.build_model` makes the model from them.
"""
import math
import warnings

import numpy as np

from . import joints as J
from .inertia import spatial_inertia, transform_inertia
from .urdf import URDFError, URDFWarning


def _topology(desc):
    """Return the root link and the joints depth-first; raise on several roots, cycles."""
    src = desc.source
    children = {link.name: [] for link in desc.links}
    parent_joint = {}
    for j in desc.joints:
        if j.child in parent_joint:
            raise URDFError(f"{src}: link '{j.child}' is the child of joints "
                            f"'{parent_joint[j.child].name}' and '{j.name}'; a URDF must be a "
                            'tree (closed loops are not allowed)')
        parent_joint[j.child] = j
        children[j.parent].append(j)
    roots = [link.name for link in desc.links if link.name not in parent_joint]
    if not roots:
        raise URDFError(f'{src}: every link is the child of a joint, so the joints form a '
                        f"cycle (e.g. through link '{desc.links[0].name}')")
    if len(roots) > 1:
        raise URDFError(f"{src}: several root links ({', '.join(roots)}); a URDF must have "
                        'exactly one link that is no joint\'s child')
    # depth-first, children in declaration order, with an explicit stack (no recursion:
    # a chain of thousands of links must load)
    order, visited = [], {roots[0]}
    stack = list(reversed(children[roots[0]]))
    while stack:
        j = stack.pop()
        if j.child in visited:
            raise URDFError(f"{src}: joint '{j.name}' closes a cycle at link '{j.child}'")
        visited.add(j.child)
        order.append(j)
        stack.extend(reversed(children[j.child]))
    if len(visited) != len(desc.links):
        stray = [link.name for link in desc.links if link.name not in visited]
        raise URDFError(f"{src}: links {', '.join(stray)} are not connected to the root "
                        f"'{roots[0]}': the joints between them form a cycle")
    return roots[0], order


def model_arguments(desc, *, floating_base=None, mimic='independent', strict=False):
    """
    Return the :class:`~liemb_ros.core.model.model.Model` arguments a URDF description gives.

    The keyword arguments of ``Model(...)`` but ``gravity``: bodies in depth-first order
    (one per 1-DOF joint, multi-DOF joints expanded into virtual bodies, [M18k] §2),
    fixed joints folded into link offsets, every link's inertia moved into its body's
    frame, coordinates (mimic joints coupled or not) and limits.  ``floating_base``,
    ``mimic`` and ``strict`` are those of
    :func:`~liemb_ros.core.model.model.build_model`, which calls this (its warnings
    point at the caller of :func:`~liemb_ros.core.model.model.load_urdf`).
    """
    if mimic not in ('independent', 'couple'):
        raise ValueError(f"mimic must be 'independent' or 'couple', got {mimic!r}")
    src = desc.source
    root, order = _topology(desc)
    links = {link.name: link for link in desc.links}

    base_link = root
    floating = False
    root_floating = [j for j in order if j.type == 'floating' and j.parent == root]
    for j in order:
        if j.type == 'floating' and j not in root_floating:
            raise URDFError(f"{src}: floating joint '{j.name}' connects '{j.parent}' and "
                            f"'{j.child}'; only a floating joint at the root link '{root}' "
                            'is supported (it becomes the SE(3) floating base)')
    if len(root_floating) > 1:
        raise URDFError(f'{src}: several floating joints at the root: '
                        f"{', '.join(j.name for j in root_floating)}")
    if root_floating:
        base_link = root_floating[0].child
        floating = True if floating_base is None else bool(floating_base)
    elif floating_base:
        floating = True

    link_body, link_offset = {}, {}
    body_names, parent, kind, S_parent, S_child, JX = [], [], [], [], [], []
    body_joint = []  # (joint desc, suffix) of each body
    if root_floating:
        link_body[root] = -1
        link_offset[root] = np.eye(4)
        # the floating base is the child of the floating joint: its pose IS base_pose
        link_body[base_link] = -1
        link_offset[base_link] = np.eye(4)
        if not floating:
            link_offset[base_link] = root_floating[0].origin.copy()
    else:
        link_body[root] = -1
        link_offset[root] = np.eye(4)

    for j in order:
        if j.type == 'floating':
            continue
        pb = link_body[j.parent]
        Tp = link_offset[j.parent] @ j.origin
        seq = J.expand(j.type, j.axis)
        if not seq:
            link_body[j.child] = pb
            link_offset[j.child] = Tp
            continue
        for k, (suffix, kd, screw) in enumerate(seq):
            body_names.append(j.child if k == len(seq) - 1 else f'{j.child}{suffix}_virtual')
            parent.append(pb)
            kind.append(kd)
            S_parent.append(Tp if k == 0 else np.eye(4))
            S_child.append(np.eye(4))
            JX.append(screw)
            body_joint.append((j, suffix))
            pb = len(body_names) - 1
        link_body[j.child] = pb
        link_offset[j.child] = np.eye(4)

    nb = len(body_names)
    # inertias: every link's spatial inertia moved into its body's frame
    inertia = np.zeros((nb, 6, 6))
    base_inertia = np.zeros((6, 6))
    for lname, link in links.items():
        if not link.has_inertial:
            continue
        M = transform_inertia(spatial_inertia(link.mass, link.com_pose, link.inertia),
                              link_offset[lname])
        b = link_body[lname]
        if b < 0:
            base_inertia += M
        else:
            inertia[b] += M

    # coordinates and mimic coupling
    names_1dof = [j.name + s for j, s in body_joint]
    coupled = {}
    by_name = {j.name: j for j in desc.joints}
    for j in desc.joints:
        if j.mimic_joint is not None and j.mimic_joint not in by_name:
            msg = f"{src}: joint '{j.name}' mimics joint '{j.mimic_joint}', which is not defined"
            if mimic == 'couple' or strict:
                raise URDFError(msg)
            warnings.warn(msg + '; the mimic tag is ignored (joints are independent)',
                          URDFWarning, stacklevel=4)
    if mimic == 'couple':
        for j, s in body_joint:
            if j.mimic_joint is None:
                continue
            lead, mult, off, seen = j.mimic_joint, j.mimic_multiplier, j.mimic_offset, {j.name}
            while by_name[lead].mimic_joint is not None:  # mimic of a mimic
                if lead in seen:
                    raise URDFError(f"{src}: mimic joints form a cycle through '{lead}'")
                seen.add(lead)
                nxt = by_name[lead]
                off = mult * nxt.mimic_offset + off
                mult = mult * nxt.mimic_multiplier
                lead = nxt.mimic_joint
            if by_name[lead].type in ('fixed', 'floating', 'planar'):
                raise URDFError(f"{src}: joint '{j.name}' mimics '{lead}', a {by_name[lead].type} "
                                'joint; only 1-DOF joints can be mimicked')
            coupled[j.name + s] = (lead, mult, off)
    joint_names = [n for n in names_1dof if n not in coupled]
    qpos = {n: i for i, n in enumerate(joint_names)}
    q_index, q_mult, q_offset = [], [], []
    for n in names_1dof:
        if n in coupled:
            lead, mult, off = coupled[n]
            q_index.append(qpos[lead])
            q_mult.append(mult)
            q_offset.append(off)
        else:
            q_index.append(qpos[n])
            q_mult.append(1.0)
            q_offset.append(0.0)

    nq = len(joint_names)
    lower = np.full(nq, -math.inf)
    upper = np.full(nq, math.inf)
    vel = np.full(nq, math.inf)
    eff = np.full(nq, math.inf)
    damping = np.zeros(nq)
    friction = np.zeros(nq)
    for (j, s), n in zip(body_joint, names_1dof):
        if n in coupled:
            continue
        i = qpos[n]
        if j.type in ('revolute', 'prismatic'):
            lower[i], upper[i] = j.lower, j.upper
        vel[i], eff[i] = j.velocity, j.effort
        damping[i], friction[i] = j.damping, j.friction

    # massless leaves make the mass matrix singular: say so early, without failing
    has_mass = np.array([inertia[i, 3, 3] > 0 or np.abs(inertia[i]).max() > 0
                         for i in range(nb)], dtype=bool)
    for i in range(nb - 1, -1, -1):
        p = parent[i]
        if p >= 0 and has_mass[i]:
            has_mass[p] = True
    massless = [body_names[i] for i in range(nb) if not has_mass[i]]
    if massless:
        warnings.warn(f"{src}: bodies {', '.join(massless)} carry no mass at all; the mass "
                      'matrix is singular (kinematics work, dynamics will refuse the model)',
                      URDFWarning, stacklevel=4)

    link_names = [root] + [j.child for j in order]
    return dict(name=desc.name, source=src, body_names=body_names, parent=parent, kind=kind,
                S_parent=S_parent, S_child=S_child, JX=JX, inertia=inertia,
                base_inertia=base_inertia, joint_names=joint_names, q_index=q_index,
                q_mult=q_mult, q_offset=q_offset, link_names=link_names,
                link_body=[link_body[n] for n in link_names],
                link_offset=[link_offset[n] for n in link_names], floating=floating,
                root_link=root, base_link=base_link, lower=lower, upper=upper,
                velocity_limit=vel, effort_limit=eff, damping=damping, friction=friction,
                mimic={n: c for n, c in coupled.items()},
                body_joint_type=[j.type for j, _ in body_joint],
                link_parent=[None] + [j.parent for j in order])
