"""
Newton–Euler equations in an arbitrary frame, and the equations of motion in momentum form.

Müller, "Screw and Lie group theory in multibody dynamics", Multibody Syst. Dyn. 42 (2018)
219–248 ("[M18d]") §3.5 (eqs. (59)-(61)) and §5.1 (eq. (79)); the theory is in
docs/theory/momentum.md.  Fixed-base models; NumPy over the bodies (O(n), single
configurations): statements of the paper's forms, checked against the compiled
inverse dynamics, not production code.

**Arbitrary frame** (:func:`inverse_dynamics_in_frame`).  Every body's Newton–Euler
equations measured and resolved in one frame ``F_j`` (the world, or a body's frame, which
moves): with ``^jV_i = Ad_{C_j}⁻¹ V^s_i``, ``^jM_i = Ad_{C_j}ᵀ M^s_i Ad_{C_j}`` (61) and the
frame's own twist ``^jV_j = V^b_j``,

    ``^jM_i (^jV̇_i + ad_{^jV_j} ^jV_i) - ad_{^jV_i}ᵀ ^jM_i ^jV_i = ^jW_i``   (60)

(the transpose on the second ``ad`` is missing in print; and ``V̇^s_i = Ad_{C_j}(^jV̇_i +
ad_{^jV_j} ^jV_i)``, docs/theory/errata.md).  The kinematics runs in ``F_j`` too: the joint
screws ``^jJ_i = Ad_{C_j⁻¹C_i} ^iX_i`` move relative to the frame with the relative twist
``^jV_i - ^jV_j``, so

    ``^jV_i = ^jV_λ + ^jJ_i θ̇_i``,
    ``^jV̇_i = ^jV̇_λ + ^jJ_i θ̈_i + [^jV_i - ^jV_j, ^jJ_i] θ̇_i``,

the wrenches add up the tree without transformation (as in the spatial form, which is
``F_j`` = world) and ``τ_i = ^jJ_iᵀ ^jW_i``.  Gravity is the ground's acceleration,
``^jV̇_0 = Ad_{C_j}⁻¹ (0, -g)``.  Resolved in a third frame ``F_k`` ((62)-(64)), with
``R = R_{k,j}`` mapping ``F_j`` coordinates to ``F_k``'s, ``^kV = Ad_R ^jV``,
``^kM = Ad_R ^jM Ad_Rᵀ`` (64, with the rotation read this way round) and ``ω_j``, ``ω_k``
the angular velocities of the two frames in ``F_k``:

    ``^kM (^kV̇ + (ad_{^kV_j} + ad_{ω_k - ω_j}) ^kV) - ad_{^kV}ᵀ ^kM ^kV = ^kW``   (63)

and the screws turn relative to ``F_k`` as well, ``d/dt ^kJ_i = [^kV_i - ^kV_j + (ω_j -
ω_k, 0), ^kJ_i]``.

**Momentum form** (:func:`spatial_momenta`, :func:`momentum_eom`).  (79) projects the
spatial momentum balance of the bodies, ``Π̇^s_i = W^s_i`` (36), with the spatial
Jacobians: ``Σ_i (J^s_i)ᵀ (Π̇^s_i - W^{s,app}_i) = τ``, ``Π^s_i = M^s_i J^s_i q̇``.  Its
projection ``p = Σ_i (J^s_i)ᵀ Π^s_i = M q̇`` (the generalised momentum) gives first-order
equations on the phase space ``(q, p)``:

    ``q̇ = M⁻¹ p``,   ``ṗ = τ + Σ_i (J^s_i)ᵀ W^{s,app}_i + Σ_i (J̇^s_i)ᵀ Π^s_i``

with ``J̇^s_j = [V^s_j, J^s_j]`` (16) column by column and ``W^{s,app}_i = M^s_i (0, g)``.
"""
import numpy as np

from ._joint_space import (body_rate as _rates, fixed_base_vectors, project as _project,
                           spatial_state)
from .dynamics import mass_matrix
from .kinematics import _link, body_poses
from .lie import se3


def _frame_pose(model, C, frame):
    """Pose of the frame ``F_j`` and the body it moves with (-1: the world)."""
    if frame == 'world':
        return np.eye(4), -1
    body, T = _link(model, frame)
    if body < 0:
        return T, -1
    return C[body] @ T, body


def inverse_dynamics_in_frame(model, q, qd, qdd, frame='world', resolved_in=None):
    """
    Joint forces (nq,) by the Newton–Euler equations of every body in frame ``frame``.

    ``frame``: 'world' or a link name: twists, inertias and wrenches are measured at that
    frame, which moves with its body (module docstring, (60)-(61)); ``resolved_in``: the
    frame ``F_k`` their coordinates are resolved in, (62)-(64) (default ``frame``).
    Gravity from the model, no external wrenches.  Equals
    :func:`liemb_ros.core.dynamics.inverse_dynamics` whichever frames are chosen (the
    paper's point: the frame is a choice of coordinates).
    """
    q, qd, qdd = fixed_base_vectors(model, 'inverse_dynamics_in_frame', (
        ('q', q, model.nq), ('qd', qd, model.nv), ('qdd', qdd, model.nv)))
    C = body_poses(model, q)
    Cj, fbody = _frame_pose(model, C, frame)
    Ck, kbody = _frame_pose(model, C, frame if resolved_in is None else resolved_in)
    Cj_inv = se3.inverse(Cj)
    nb = model.nb
    J = np.einsum('nij,nj->ni', se3.Ad(Cj_inv @ C), model.X)                 # ^jJ_i
    V = np.zeros((nb, 6))
    for i in range(nb):
        p = model.parent[i]
        V[i] = (V[p] if p >= 0 else 0.0) + J[i] * _rates(model, qd, i)
    Vj = np.zeros(6) if fbody < 0 else V[fbody]   # ^jV_j = V^b_j: the frame moves with its body
    R = Ck[:3, :3].T @ Cj[:3, :3]                 # R_{k,j}: F_j coordinates to F_k's
    w_j = R @ Vj[:3]                              # angular velocities of F_j and F_k, in F_k
    w_k = np.zeros(3) if kbody < 0 else (se3.Ad(se3.inverse(Ck) @ Cj) @ V[kbody])[:3]
    AdR = se3.Ad_R(R)
    J, V, Vj = J @ AdR.T, V @ AdR.T, AdR @ Vj    # ^kJ_i, ^kV_i, ^kV_j^j  (62)
    w_rel = np.concatenate([w_j - w_k, np.zeros(3)])
    a0 = AdR @ se3.Ad_inv(Cj) @ np.concatenate([np.zeros(3), -model.gravity])
    Vd = np.zeros((nb, 6))
    for i in range(nb):              # d/dt ^kJ_i = [^kV_i - ^kV_j + (ω_j - ω_k, 0), ^kJ_i]
        p = model.parent[i]
        Vd[i] = ((Vd[p] if p >= 0 else a0) + J[i] * _rates(model, qdd, i)
                 + se3.ad(V[i] - Vj + w_rel) @ J[i] * _rates(model, qd, i))
    W = np.zeros((nb, 6))
    Ai = se3.Ad_inv(Cj_inv @ C)                                               # Ad_{C_{j,i}}⁻¹
    frame_term = se3.ad(Vj - w_rel)                   # ad_{^kV_j} + ad_{(ω_k - ω_j, 0)}
    for i in reversed(range(nb)):
        Mk = AdR @ Ai[i].T @ model.inertia[i] @ Ai[i] @ AdR.T          # (61), (64)
        W[i] += Mk @ (Vd[i] + frame_term @ V[i]) - se3.ad(V[i]).T @ Mk @ V[i]   # (63)
        if model.parent[i] >= 0:
            W[model.parent[i]] += W[i]
    return _project(model, J, W)


def spatial_momenta(model, q, qd):
    """
    Spatial momenta ``Π^s_i = M^s_i V^s_i`` of all bodies, (nb, 6), ``(L, P)`` ([M18d] (35)).

    Angular momentum about the world origin and linear momentum, both in the world frame,
    order of ``model.body_names``.
    """
    q, qd = fixed_base_vectors(model, 'spatial_momenta',
                               (('q', q, model.nq), ('qd', qd, model.nv)))
    _, _, V, Ms = spatial_state(model, q, qd)
    return np.einsum('nij,nj->ni', Ms, V)


def momentum_eom(model, q, p, tau):
    """
    Phase-space equations of motion from (79): ``(q̇, ṗ)`` at ``(q, p)`` under ``tau``.

    ``p = M q̇`` (nq,) is the generalised momentum ``Σ_i (J^s_i)ᵀ Π^s_i``; ``q̇ = M⁻¹ p``
    and ``ṗ = τ + Σ_i (J^s_i)ᵀ W^{s,grav}_i + Σ_i (J̇^s_i)ᵀ Π^s_i`` (module docstring).
    """
    q, p, tau = fixed_base_vectors(model, 'momentum_eom', (
        ('q', q, model.nq), ('p', p, model.nv), ('tau', tau, model.nv)))
    qd = np.linalg.solve(mass_matrix(model, q), p)
    _, J, V, Ms = spatial_state(model, q, qd)
    Pi = np.einsum('nij,nj->ni', Ms, V)
    grav = np.einsum('nij,j->ni', Ms, np.concatenate([np.zeros(3), model.gravity]))
    pd = tau.copy()
    for i in range(model.nb):
        anc = np.nonzero(model.support[i])[0]                 # the columns of body i
        pd += _project_subset(model, anc, J, V, grav[i], Pi[i])
    return qd, pd


def _project_subset(model, cols, J, V, W, Pi):
    """``Σ_a μ_a (J_aᵀ W + [V_a, J_a]ᵀ Π)`` over the bodies ``cols``, at their coordinates."""
    out = np.zeros(model.nq)
    for a in cols:
        Jd = se3.ad(V[a]) @ J[a]
        out[model.q_index[a]] += model.q_mult[a] * (J[a] @ W + Jd @ Pi)
    return out


__all__ = ['inverse_dynamics_in_frame', 'spatial_momenta', 'momentum_eom']
