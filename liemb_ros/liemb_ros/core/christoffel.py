"""
Christoffel symbols of the first kind of the mass matrix, in closed form ([M18d] §5, (85)-(86)).

Müller, "Screw and Lie group theory in multibody dynamics", Multibody Syst. Dyn. 42 (2018)
219–248 ("[M18d]"); the theory is in docs/theory/jerk-and-christoffel.md.

    ``Γ_ijk = ½ (∂M_ij/∂q_k + ∂M_ik/∂q_j - ∂M_jk/∂q_i)``   (85),  ``C_ij = Σ_k Γ_ijk q̇_k``

is the Coriolis/centrifugal matrix for which ``Ṁ - 2C`` is skew-symmetric
(:func:`liemb_ros.core.dynamics.coriolis_matrix` computes that ``C`` recursively).  The
paper's closed form (86) is printed with wrong indices and does not cover the entries
with ``i ≥ max(j, k)``; (87) could not be reproduced (docs/theory/errata.md).  Here the
partials of ``M`` come in closed form from the same ingredients, in spatial form: with the
spatial joint screws ``J_a = Ad_{C_a} ^aX_a`` (which do not depend on the body they act on),
``M_ab = Σ_l J_aᵀ M^s_l J_b`` over the bodies ``l`` that ``a`` and ``b`` both support,
``∂J_a/∂q_c = [J_c, J_a]`` for ``c`` before ``a`` on a path ((15)) and
``∂M^s_l/∂q_c = -ad_{J_c}ᵀ M^s_l - M^s_l ad_{J_c}`` for ``c`` supporting ``l`` ((37)).
Summed over ``l``, the terms of ``c`` before ``a`` cancel and

    ``∂M_ab/∂q_c = -[c after a] [J_c, J_a]ᵀ M^c_d J_b - [c after b] J_aᵀ M^c_d [J_c, J_b]``

where ``M^c_d`` is the spatial composite inertia of the subtree of ``d``, the deepest of
``a, b, c``, and the entry is zero unless ``a, b, c`` lie on one path from the root.  This
is (86) corrected and completed (the body-fixed ``[J_la, J_lc]`` of (5) is the same
bracket moved to body ``l``).  Mimic joints sum their bodies' symbols with their ratios.
NumPy over the body triples: O(n³) per configuration, a Python loop over a batch.
"""
import numpy as np

from ._kernels.dispatch import as_batch
from .kinematics import body_poses
from .lie import se3


def _one(model, q):
    """Γ (nq, nq, nq) of one configuration (module docstring)."""
    nb = model.nb
    C = body_poses(model, q)
    J = np.einsum('nij,nj->ni', se3.Ad(C), model.X)             # spatial screws (nb, 6)
    Ai = se3.Ad_inv(C)
    Ms = np.einsum('nji,njk,nkl->nil', Ai, model.inertia, Ai)   # M^s = Ad^-T M^b Ad^-1 (34)
    sup = model.support                                           # sup[l, a]: a on root -> l
    Mc = np.einsum('la,lij->aij', sup.astype(float), Ms)         # composite of a's subtree
    br = np.einsum('cij,aj->cai', se3.ad(J), J)                  # br[c, a] = [J_c, J_a]
    idx = np.arange(nb)
    d = np.maximum(np.maximum.outer(idx, idx)[:, :, None], idx[None, None, :])   # d[a, b, c]
    comp = sup | sup.T
    on_path = comp[:, :, None] & comp[:, None, :] & comp[None, :, :]
    MJ = np.einsum('dij,bj->dbi', Mc, J)                          # MJ[d, b] = M^c_d J_b
    after = idx[None, :] > idx[:, None]                           # after[a, c]: c after a
    a_, b_, c_ = np.meshgrid(idx, idx, idx, indexing='ij')
    t1 = np.einsum('abci,abci->abc', br[c_, a_], MJ[d, b_])
    t2 = np.einsum('abci,abci->abc', MJ[d, a_], br[c_, b_])
    dM = np.where(on_path, -(after[a_, c_] * t1 + after[b_, c_] * t2), 0.0)   # dM[a, b, c]
    G = 0.5 * (dM + dM.transpose(0, 2, 1) - dM.transpose(2, 0, 1))   # (85)
    P = np.zeros((nb, model.nq))
    P[idx, model.q_index] = model.q_mult
    return np.einsum('abc,ai,bj,ck->ijk', G, P, P, P)


def christoffel_symbols(model, q):
    """
    Christoffel symbols of the first kind ``Γ_ijk`` (nq, nq, nq), or (B, nq, nq, nq).

    ``Γ_ijk = ½ (∂M_ij/∂q_k + ∂M_ik/∂q_j - ∂M_jk/∂q_i)`` ([M18d] (85)), symmetric in
    ``j, k``, in closed form over the spatial joint screws (module docstring; (86)
    corrected and completed).  ``C = Γ q̇`` (``np.einsum('ijk,k->ij', Γ, qd)``) is the
    Christoffel-consistent Coriolis matrix of :func:`liemb_ros.core.dynamics.coriolis_matrix`.
    Fixed-base models: a floating base's quasi-velocities are not coordinate rates, so its
    ``∂M/∂q`` does not give ``C`` (ValueError).
    """
    if model.floating:
        raise ValueError('Christoffel symbols are defined for fixed-base models (joint '
                         'coordinates); a floating base moves on SE(3)')
    q, batched = as_batch(model, q, model.nq, 'q')
    if not np.all(np.isfinite(q)):
        raise ValueError('q contains NaN or inf')
    if not batched:
        return _one(model, q)
    return np.stack([_one(model, x) for x in q])


__all__ = ['christoffel_symbols']
