"""
A URDF with identified inertials and joint friction: the model's file, rewritten.

An identification (:mod:`liemb_ros.core.identification_fit`) gives ten parameters per
*body*, in the body frame; a body is the child link of its joint with every link fixed to
it merged in (:mod:`liemb_ros.core.model`).  :func:`identified_urdf` writes them back
into the robot's own URDF text, changing nothing else: each body's joint child link gets
the body's parameters less those of the other links fixed to it (their URDF inertials
stay as they are), as ``<inertial>`` in the link frame (``<origin xyz>`` the centre of
mass, ``rpy`` zero, ``<inertia>`` about the centre of mass in link axes); each joint's
``<dynamics damping friction>`` gets the identified viscous and Coulomb friction, the
values the simulation and dynamics nodes read from a URDF.  Comments and the order of
elements are kept (:mod:`xml.etree.ElementTree`).

Frames: a link's pseudo-inertia ``J = ∫ (x, 1)(x, 1)ᵀ dm`` in its frame is ``T J_l Tᵀ``
in the body frame, ``T`` the link's pose in the body frame (``model.link_offset``), so
sums and differences of bodies are sums and differences of their ``J``
(:func:`~liemb_ros.core.pseudo_inertia.pseudo_inertia`).
"""
import xml.etree.ElementTree as ET

import numpy as np

from .model import parse_urdf_string
from .model.inertia import pose_inverse
from .pseudo_inertia import pseudo_inertia


def link_pseudo_inertia(mass, com_pose, inertia_com):
    """
    Return the pseudo-inertia (4, 4) of a URDF ``<inertial>`` in its link's frame.

    ``mass`` [kg]; ``com_pose`` (4, 4): the inertial frame in the link frame (origin the
    centre of mass); ``inertia_com`` (3, 3): about the centre of mass in the inertial
    frame's axes [kg m²].  ``J = [[Σ_c + m c cᵀ, m c], [m cᵀ, m]]``, ``Σ_c = ½ tr(I) 1 - I``
    with ``I = R I_c Rᵀ`` in link axes.
    """
    R, c = com_pose[:3, :3], com_pose[:3, 3]
    inertia = R @ inertia_com @ R.T
    J = np.zeros((4, 4))
    J[:3, :3] = 0.5 * np.trace(inertia) * np.eye(3) - inertia + mass * np.outer(c, c)
    J[:3, 3] = J[3, :3] = mass * c
    J[3, 3] = mass
    return J


def inertial_of(J):
    """
    Return ``(mass, com (3,), inertia_com (3, 3))`` of a pseudo-inertia ``J`` (4, 4).

    The inverse of :func:`link_pseudo_inertia` with the inertial frame's axes those of
    the frame ``J`` is in.  Raises ValueError when the mass is not positive.
    """
    m = J[3, 3]
    if not m > 0.0:
        raise ValueError(f'a link of mass {m:.6g} kg cannot be written as a URDF inertial')
    c = J[:3, 3] / m
    S = J[:3, :3] - m * np.outer(c, c)
    return float(m), c, np.trace(S) * np.eye(3) - S


def _number(x):
    return f'{float(x):.12g}'


def _set_inertial(link, mass, com, inertia):
    """Replace the ``<inertial>`` of the ``<link>`` element (one is added if it has none)."""
    old = link.find('inertial')
    new = ET.Element('inertial')
    new.text, new.tail = '\n      ', '\n    '
    ET.SubElement(new, 'origin', xyz=' '.join(map(_number, com)), rpy='0 0 0').tail = '\n      '
    ET.SubElement(new, 'mass', value=_number(mass)).tail = '\n      '
    names = ('ixx', 'ixy', 'ixz', 'iyy', 'iyz', 'izz')
    ij = ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))
    ET.SubElement(new, 'inertia', {k: _number(inertia[a, b]) for k, (a, b) in zip(names, ij)}
                  ).tail = '\n    '
    if old is None:
        new.tail = link.text
        link.insert(0, new)
    else:
        new.tail = old.tail
        link[list(link).index(old)] = new


def identified_urdf(xml, model, parameters, damping=None, friction=None):
    """
    Return the URDF text ``xml`` of ``model`` with identified inertials and friction.

    ``parameters`` (10 nb,): the standard inertial parameters of the fixed-base ``model``'s
    bodies (:func:`~liemb_ros.core.identification.inertial_parameters` order, body frames;
    the first ``10 nb`` of an :class:`~liemb_ros.core.identification_fit.Identification`'s
    ``parameters``); ``damping``, ``friction`` (nq,): each joint's viscous [N m s/rad or
    N s/m] and Coulomb [N m or N] friction for ``<dynamics>`` (None: left as they are).
    Bodies without mass in the model (virtual bodies of multi-DOF joints) are left alone.
    Raises ValueError for a floating-base model and for a body whose parameters, less
    those of the links fixed to it, have no positive mass.
    """
    if model.floating:
        raise ValueError('identified_urdf writes fixed-base robots only')
    parameters = np.asarray(parameters, dtype=float)
    if parameters.shape != (10 * model.nb,):
        raise ValueError(f'parameters must have shape ({10 * model.nb},), got '
                         f'{parameters.shape}')
    desc = {link.name: link for link in parse_urdf_string(xml).links}
    root = ET.fromstring(xml, parser=ET.XMLParser(target=ET.TreeBuilder(insert_comments=True)))
    links = {e.get('name'): e for e in root.findall('link')}
    joints = {e.get('name'): e for e in root.findall('joint')}
    index = {name: i for i, name in enumerate(model.link_names)}
    for b, name in enumerate(model.body_names):
        J = pseudo_inertia(parameters[10 * b:10 * b + 10])
        if model.inertia[b, 3, 3] <= 0.0 or name not in links:
            continue
        for li in np.flatnonzero(model.link_body == b):
            other = desc.get(model.link_names[li])
            if model.link_names[li] == name or other is None or not other.has_inertial:
                continue
            T = model.link_offset[li]
            J = J - T @ link_pseudo_inertia(other.mass, other.com_pose, other.inertia) @ T.T
        T = pose_inverse(model.link_offset[index[name]])
        try:
            mass, com, inertia = inertial_of(T @ J @ T.T)
        except ValueError as exc:
            raise ValueError(f'link {name!r}: {exc}') from None
        _set_inertial(links[name], mass, com, inertia)
    for k, jname in enumerate(model.joint_names):
        if damping is None and friction is None:
            break
        joint = joints[jname]
        dyn = joint.find('dynamics')
        if dyn is None:
            dyn = ET.SubElement(joint, 'dynamics')
        if damping is not None:
            dyn.set('damping', _number(damping[k]))
        if friction is not None:
            dyn.set('friction', _number(friction[k]))
    return ET.tostring(root, encoding='unicode') + '\n'
