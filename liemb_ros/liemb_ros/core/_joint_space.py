"""
Helpers shared by the NumPy statements of [M18d]: joint rates, projections, arguments.

Used by :mod:`.jerk`, :mod:`.momentum`, :mod:`.sensitivity` and :mod:`.operation_counts`
(each a readable, checked statement of one part of the paper, not a compiled kernel).
"""
import numpy as np

from .kinematics import body_poses
from .lie import se3


def body_rate(model, x, i):
    """``θ``-rate of body ``i`` from the velocity-sized vector ``x``: ``μ_i x[k(i)]`` (mimic)."""
    return model.q_mult[i] * x[model.nv - model.nq + model.q_index[i]]


def project(model, S, W):
    """Joint forces ``τ_k = Σ_{i: k(i) = k} μ_i S_iᵀ W_i`` (nq,) from per-body screws ``S``."""
    tau = np.zeros(model.nq)
    np.add.at(tau, model.q_index, model.q_mult * np.einsum('ij,ij->i', S, W))
    return tau


def fixed_base_vectors(model, what, vectors):
    """
    Return ``vectors`` ((name, value, size), ...) as finite float arrays of their sizes.

    ValueError naming the argument otherwise, or naming ``what`` for a floating base.
    """
    if model.floating:
        raise ValueError(f'{what} covers fixed-base models')
    out = []
    for name, x, n in vectors:
        a = np.asarray(x, dtype=float)
        if a.shape != (n,) or not np.all(np.isfinite(a)):
            raise ValueError(f'{name} must be a finite vector of shape ({n},); got {a.shape}')
        out.append(a)
    return out


def spatial_state(model, q, qd):
    """
    Return poses ``C`` (nb, 4, 4), spatial screws ``J^s_i`` (nb, 6), twists ``V^s_i``, inertias.

    ``J^s_i = Ad_{C_i} ^iX_i`` (70b), ``V^s_i = V^s_λ + J^s_i θ̇_i`` (70c) and
    ``M^s_i = Ad_{C_i}^-T M^b_i Ad_{C_i}^-1`` (34), (nb, 6, 6); fixed base.
    """
    C = body_poses(model, q)
    J = np.einsum('nij,nj->ni', se3.Ad(C), model.X)
    V = np.zeros((model.nb, 6))
    for i in range(model.nb):
        p = model.parent[i]
        V[i] = (V[p] if p >= 0 else 0.0) + J[i] * body_rate(model, qd, i)
    Ai = se3.Ad_inv(C)
    return C, J, V, np.einsum('nji,njk,nkl->nil', Ai, model.inertia, Ai)
