"""
The armature of the Simulator's joints: rotor inertia, and what makes a model simulable.

A joint that carries no inertia (a massless leaf, or a chain through massless bodies that
is gimbal-like somewhere) leaves the joint-space mass matrix singular and its acceleration
undefined; ``armature='auto'`` gives such joints :data:`AUTO_ARMATURE` of the largest
diagonal entry, with a :class:`SimulationWarning` naming them (Pinocchio's
``model.armature``, MuJoCo's ``armature``).  Imported by :mod:`liemb_ros.sim.simulator`,
where these names are public.
"""
import warnings

import numpy as np

from ..core.dynamics import mass_matrix, singular_joints

#: ``armature='auto'``: joints without inertia get this fraction of ``max_i M_ii(q0)``
AUTO_ARMATURE = 1e-4


class SimulationWarning(UserWarning):
    """
    The model was regularised to be simulated, or starts where it cannot stay.

    Armature added to massless joints (:func:`resolve_armature`); ``q0`` beyond a joint
    limit (:class:`~liemb_ros.sim.passive.JointLimits`).
    """


def resolve_armature(model, armature, joint_coordinates, q0, base0):
    """
    Resolve the Simulator's ``armature`` argument: None (none at all) or the (nq,) array.

    ``armature``: ``'auto'``, a number or an (nq,) array [kg m² or kg]; ``q0`` (nq,),
    ``base0`` (4, 4) or None: the initial state, where the joints without inertia are
    found (:func:`~liemb_ros.core.dynamics.singular_joints`).  ``joint_coordinates``
    False (absolute coordinates): ``'auto'`` is None, and joints without inertia raise.
    Raises ValueError naming the joints an explicit armature leaves without inertia.
    """
    m = model
    auto = isinstance(armature, str)
    if auto and armature != 'auto':
        raise ValueError(f"armature must be 'auto', a number or an (nq,) array, got "
                         f'{armature!r}')
    arm = np.zeros(m.nq) if auto else np.array(
        np.broadcast_to(np.asarray(armature, dtype=float), (m.nq,)))
    if not (np.all(np.isfinite(arm)) and np.all(arm >= 0)):
        raise ValueError('armature must be finite and non-negative')
    if auto and not joint_coordinates:
        return None   # bodies in absolute coordinates: no joint-space mass matrix
    bad = singular_joints(m, q0, base_pose=base0, armature=arm)
    if auto:   # massless bodies: singular at q0 or, gimbal-like, elsewhere
        massless = np.flatnonzero(~np.any(m.inertia.reshape(m.nb, 36), axis=1))
        bad = np.union1d(bad, m.q_index[massless]).astype(np.int64)
    if len(bad) and (not auto or not joint_coordinates):
        raise ValueError(
            f'{m.name}: the joints {_names(m, bad)} carry no inertia at q0 (massless '
            'bodies): the mass matrix is singular and the accelerations undefined; give '
            "them a rotor inertia (armature='auto' or armature=array), joint coordinates")
    if len(bad):
        M = mass_matrix(m, q0, base_pose=base0)
        a = m.nv - m.nq
        value = AUTO_ARMATURE * float(np.max(np.diag(M)[a:]))
        arm[bad] = value
        warnings.warn(f'{m.name}: joints {_names(m, bad)} carry no inertia (massless '
                      f'bodies); armature {value:.3g} added to each (armature=auto)',
                      SimulationWarning, stacklevel=3)
    return arm if np.any(arm > 0) else None


def _names(model, idx, most=6):
    """Joint names of ``idx`` for a message, at most ``most`` of them and a count."""
    names = [model.joint_names[i] for i in idx]
    more = f' and {len(names) - most} more' if len(names) > most else ''
    return ', '.join(names[:most]) + more
