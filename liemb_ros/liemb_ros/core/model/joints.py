"""
URDF joint types as sequences of 1-DOF screw joints ([M18k] §2.1, Remark 4).

Every joint of the model is a lower pair with one degree of freedom: revolute (R),
prismatic (P) or helical (H).  Multi-DOF URDF joints become chains of such joints
joined by massless virtual bodies whose relative reference configurations are the
identity (canonical coordinates of the 2nd kind, [M18k] Remark 4):

* ``revolute``/``continuous``: one R screw ``(a; 0)`` in the child (joint) frame;
* ``prismatic``: one P screw ``(0; a)``;
* ``planar`` (axis = plane normal ``n``): P(u), P(v), R(n) with ``u, v`` an
  orthonormal basis of the plane, so the motion stays in the planar subgroup SE(2);
* ``fixed``: no screw; folded into the reference configuration;
* ``floating``: not a screw chain, but an SE(3) base configuration with a
  body-fixed twist (see :class:`liemb_ros.core.model.model.Model`).

Screws are angular first, ``X = (e; d x e + h e)`` ([M18k] eq. (83)).
"""
import numpy as np

#: kernel codes of the 1-DOF joint kinds
REVOLUTE = 0
PRISMATIC = 1
HELICAL = 2

KIND_NAMES = {REVOLUTE: 'R', PRISMATIC: 'P', HELICAL: 'H'}

#: URDF joint types this package understands
URDF_TYPES = ('revolute', 'continuous', 'prismatic', 'fixed', 'floating', 'planar')


def revolute_screw(axis, point=(0.0, 0.0, 0.0), pitch=0.0):
    """
    Return the unit joint screw ``(e; d x e + h e)`` of an R (``pitch = 0``) or H joint.

    ``axis`` is normalised; ``point`` is any point ``d`` on the axis and ``pitch``
    is ``h`` in m/rad, all in the frame the screw is expressed in ([M18k] eq. (83)).
    """
    e = np.asarray(axis, dtype=float)
    e = e / np.linalg.norm(e)
    d = np.asarray(point, dtype=float)
    return np.concatenate([e, np.cross(d, e) + pitch * e])


def prismatic_screw(axis):
    """Return the unit joint screw ``(0; e)`` of a P joint along ``axis`` ([M18k] eq. (86))."""
    e = np.asarray(axis, dtype=float)
    return np.concatenate([np.zeros(3), e / np.linalg.norm(e)])


def plane_basis(normal):
    """Orthonormal ``(u, v)`` spanning the plane with unit ``normal``, ``u x v = n``."""
    n = np.asarray(normal, dtype=float)
    n = n / np.linalg.norm(n)
    helper = np.eye(3)[int(np.argmin(np.abs(n)))]
    u = np.cross(helper, n)
    u /= np.linalg.norm(u)
    return u, np.cross(n, u)


def expand(joint_type, axis):
    """
    Expand a URDF joint into its 1-DOF screw sequence.

    Returns a list of ``(suffix, kind, screw)`` with the screw expressed in the joint
    (child link) frame at q = 0; ``suffix`` is appended to the URDF joint name to name
    the 1-DOF joint ('' for single-DOF joints).  ``fixed`` gives an empty list.
    """
    if joint_type in ('revolute', 'continuous'):
        return [('', REVOLUTE, revolute_screw(axis))]
    if joint_type == 'prismatic':
        return [('', PRISMATIC, prismatic_screw(axis))]
    if joint_type == 'planar':
        u, v = plane_basis(axis)
        return [('_x', PRISMATIC, prismatic_screw(u)),
                ('_y', PRISMATIC, prismatic_screw(v)),
                ('_theta', REVOLUTE, revolute_screw(axis))]
    if joint_type == 'fixed':
        return []
    raise ValueError(f'joint type {joint_type!r} has no screw expansion')
