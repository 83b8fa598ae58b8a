"""
Energy and momentum of a robot's state (the Simulator's balance; :mod:`liemb_ros.sim.simulator`).

:func:`mechanical_energy`, :func:`momentum` and :func:`com_moments` are imported from
:mod:`liemb_ros.sim.simulator`, where they are public; :class:`EnergyBooks` is the part of
the Simulator that keeps its energy balance.
"""
import numpy as np
from numba import njit

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
    U = _potential(body_poses(model, q, base_pose=base_pose), model.inertia, model.gravity)
    if model.floating:
        C = np.eye(4) if base_pose is None else np.asarray(base_pose, dtype=float)
        U += _potential(C[None], model.base_inertia[None], model.gravity)
    return float(T), float(U)


@njit(cache=True)
def _potential(Cs, inertia, g):
    """
    Gravity's potential ``-gᵀ Σ_b (R_b m_b c_b + m_b r_b)`` of bodies with poses ``Cs``.

    ``Cs`` (nb, 4, 4) world poses, ``inertia`` (nb, 6, 6) body-fixed spatial inertias
    (angular first: ``m_b`` and ``m_b c_b`` read as in :func:`com_moments`), ``g`` (3,).
    One compiled pass (the Simulator's energy check, every 100 steps).
    """
    f0 = 0.0
    f1 = 0.0
    f2 = 0.0
    for b in range(Cs.shape[0]):
        M = inertia[b]
        C = Cs[b]
        m = M[3, 3]
        c0 = -M[5, 1]
        c1 = -M[3, 2]
        c2 = -M[4, 0]
        f0 += C[0, 0] * c0 + C[0, 1] * c1 + C[0, 2] * c2 + m * C[0, 3]
        f1 += C[1, 0] * c0 + C[1, 1] * c1 + C[1, 2] * c2 + m * C[1, 3]
        f2 += C[2, 0] * c0 + C[2, 1] * c1 + C[2, 2] * c2 + m * C[2, 3]
    return -(g[0] * f0 + g[1] * f1 + g[2] * f2)


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


class EnergyBooks:
    """
    The energy balance ``E - E0 - W`` of a Simulator, a part it owns.

    ``E = T + U``: the kinetic energy (the ``armature``'s too) and the potential of
    gravity, the ``joint_limits``' springs (:class:`~liemb_ros.sim.passive.JointLimits`)
    and the ``contact``'s springs (a :class:`~liemb_ros.sim.contact.ContactModel` or
    None) [J]; ``E0`` and ``U0``: ``E`` and ``U`` at the state :meth:`open` was given (the
    Simulator's reset).  The work ``W`` is integrated with the state (the Simulator's).
    """

    def __init__(self, model, armature, joint_limits, contact):
        self.model = model
        self.armature = armature
        self.joint_limits = joint_limits
        self.contact = contact
        self.E0 = self.U0 = 0.0

    def energy(self, q, qd, base):
        """Return ``(T, U)`` [J] at the state: U with the limit and contact springs."""
        T, U = mechanical_energy(self.model, q, qd, base, self.armature)
        return T, U + self.joint_limits.spring(q)[1] + self.contact_energy(q, qd, base)

    def contact_energy(self, q, qd, base):
        """Return the contact springs' energy ``Σ ½ k p²`` [J] (0 without contact)."""
        if self.contact is None:
            return 0.0
        return self.contact.evaluate(q, qd, base)[2]

    def open(self, q, qd, base):
        """Open the books at the state: ``E0``, ``U0``."""
        T, U = self.energy(q, qd, base)
        self.E0 = T + U
        self.U0 = U

    def off(self, T, U, work, dissipated, max_error, dt):
        """
        Return why ``E = T + U`` after the work ``W`` is off the books, or None.

        Off: ``E - E0 - W`` beyond ``max_error * (1 + |T| + |U - U0| + |W|)``, where energy
        gained may also exceed that by ``dissipated`` (>= 0), the contacts' dissipation
        counted in implicit steps (the Simulator's ``check``), which the scale leaves out of
        ``W`` (it may be over-counted many times).  ``dt``: the step [s], for the message.
        """
        err = T + U - self.E0 - work
        scale = 1.0 + abs(T) + abs(U - self.U0) + abs(work + dissipated)
        tol = max_error * scale
        if err > tol + dissipated or err < -tol:
            contacts = f' + the contacts\' {dissipated:.3g} J' if dissipated else ''
            return (f'the energy balance is off by {err:.3g} J (kinetic {T:.3g} J, allowed '
                    f'{tol:.3g} J{contacts}): the integration diverges (dt = {dt} s)')
        return None
