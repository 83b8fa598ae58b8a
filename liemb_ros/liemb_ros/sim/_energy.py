"""
Energy and momentum of a robot's state (the Simulator's balance; :mod:`liemb_ros.sim.simulator`).

Imported from :mod:`liemb_ros.sim.simulator`, where they are public.
"""
import numpy as np

from ..core.dynamics import mass_matrix
from ..core.kinematics import body_poses


def com_moments(model):
    """
    Return ``(m, m c)`` of every body: masses (nb,) and first moments (nb, 3).

    ``c`` is the centre of mass in the body frame, read off the body-fixed spatial
    inertia (angular first) whose lower-left block is ``-m ĉ``.
    """
    M = model.inertia
    m = M[:, 3, 3].copy()
    mc = np.stack([-M[:, 5, 1], -M[:, 3, 2], -M[:, 4, 0]], axis=1)
    return m, mc


def mechanical_energy(model, q, qd, base_pose=None, armature=None):
    """
    Return ``(T, U)``: kinetic energy ``½ q̇ᵀ M(q) q̇`` and gravity potential [J].

    ``U = -Σ_i m_i gᵀ r_i`` over all bodies (and the floating base), ``r_i`` the world
    position of the body's centre of mass, ``g = model.gravity``.  ``armature`` (nq,):
    rotor inertias, whose kinetic energy ``½ Σ_j a_j q̇_j²`` is part of ``T``.
    """
    q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
    T = 0.5 * qd @ mass_matrix(model, q, base_pose=base_pose) @ qd
    if armature is not None:
        T += 0.5 * float(np.asarray(armature) @ qd[model.nv - model.nq:] ** 2)
    m, mc = com_moments(model)
    Cs = body_poses(model, q, base_pose=base_pose)
    first = np.einsum('bij,bj->i', Cs[:, :3, :3], mc) + m @ Cs[:, :3, 3]
    if model.floating:
        Mb = model.base_inertia
        mb = Mb[3, 3]
        mcb = np.array([-Mb[5, 1], -Mb[3, 2], -Mb[4, 0]])
        C = np.eye(4) if base_pose is None else np.asarray(base_pose, dtype=float)
        first = first + C[:3, :3] @ mcb + mb * C[:3, 3]
    return float(T), float(-model.gravity @ first)


def momentum(model, q, qd, base_pose=None):
    """
    Return the total spatial momentum, shape (6,): angular about the world origin, linear.

    ``Σ_i Ad_{C_i^-1}ᵀ M_i V_i^b`` over the bodies (and the floating base) in world
    coordinates [kg m²/s, kg m/s]; conserved for a free floating robot without gravity.
    """
    from ..core.kinematics import body_twists
    q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
    Cs = body_poses(model, q, base_pose=base_pose)
    Vb = body_twists(model, q, qd, 'body', base_pose=base_pose)
    h = np.einsum('bij,bj->bi', model.inertia, Vb)
    total = np.zeros(6)
    for C, hb in zip(Cs, h):
        total += _coadjoint_to_world(C, hb)
    if model.floating:
        C = np.asarray(base_pose, dtype=float)
        total += _coadjoint_to_world(C, model.base_inertia @ qd[:6])
    return total


def _coadjoint_to_world(C, w):
    """Wrench / momentum ``(m, f)`` in frame C -> world frame about the world origin."""
    R, r = C[:3, :3], C[:3, 3]
    f = R @ w[3:]
    return np.concatenate([R @ w[:3] + np.cross(r, f), f])
