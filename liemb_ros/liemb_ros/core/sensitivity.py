"""
Sensitivity of the inverse dynamics to the geometric parameters ([M18d] §6.2).

Müller, "Screw and Lie group theory in multibody dynamics", Multibody Syst. Dyn. 42 (2018)
219–248 ("[M18d]") §6.2: the constant part of each joint transformation is varied as
``B_i(π) = B_i exp(U_1 π_1) ⋯`` with screws ``U`` about the nominal ``B_i``, and the
derivatives follow in closed form, as for the joint screws.  Here the geometry of body
``c`` is its reference pose ``A_{λ(c),c}`` and its joint screw ``^cX_c``
(``C_c = C_λ A_{λ,c} exp(^cX_c θ_c)``, [M18k] eq. (8)); what kinematic calibration fits.
Theory: docs/theory/momentum.md, "Geometric sensitivity".

Every parameter moves the subtree of ``c`` rigidly, by a spatial twist ``σ``, and may
change the screw ``^cX_c`` itself by ``δX``:

* reference pose, ``A_{λ,c} → A_{λ,c} exp(ε e_k)``: ``σ = Ad_{C_λ A_{λ,c}} e_k``, ``δX = 0``
  (a locked joint with screw ``e_k`` just before joint ``c``, the paper's remark);
* joint screw, ``^cX_c → ^cX_c + ε e_k``: ``exp((X + εe_k)θ) = exp(Xθ) exp(ε dexp_{-Xθ}(θ e_k))``,
  so ``σ = Ad_{C_c} dexp_{-Xθ_c}(θ_c e_k)`` and ``δX = e_k``.

With them the spatial Newton–Euler recursion (70)-(71) is differentiated: for the bodies
``l`` of the subtree ``δJ_l = [σ, J_l]`` (plus ``Ad_{C_c} δX`` for ``l = c``) and
``δM^s_l = -ad_σᵀ M^s_l - M^s_l ad_σ`` (37); then ``δV_l = δV_λ + δJ_l θ̇_l``,
``δV̇_l = δV̇_λ + δJ_l θ̈_l + ([δV_l, J_l] + [V_l, δJ_l]) θ̇_l``,
``δF_l = δM V̇ + M δV̇ - ad_{δV}ᵀ M V - ad_Vᵀ (δM V + M δV)`` and
``δτ_a = δJ_aᵀ W_a + J_aᵀ δW_a``, ``δW_a = Σ_{l ⊇ a} δF_l``.  NumPy, fixed base, single
configurations, O(n) per parameter.
"""
import numpy as np

from ._joint_space import body_rate as _rates, fixed_base_vectors, project, spatial_state
from .lie import se3


class _Spatial:
    """The spatial Newton–Euler quantities of one state ((70)-(71), gravity as ``V̇_0``)."""

    def __init__(self, model, q, qd, qdd):
        self.C, self.J, self.V, self.M = spatial_state(model, q, qd)
        nb = model.nb
        self.t = np.array([[_rates(model, x, i) for i in range(nb)] for x in (qd, qdd)])
        self.Vd = np.zeros((nb, 6))
        a0 = np.concatenate([np.zeros(3), -model.gravity])
        for i in range(nb):                                              # (70d)
            p = model.parent[i]
            self.Vd[i] = ((a0 if p < 0 else self.Vd[p]) + self.J[i] * self.t[1, i]
                          + se3.ad(self.V[i]) @ self.J[i] * self.t[0, i])
        self.W = np.einsum('nij,nj->ni', self.M, self.Vd) - np.einsum(
            'nji,nj->ni', se3.ad(self.V), np.einsum('nij,nj->ni', self.M, self.V))
        for i in reversed(range(nb)):
            if model.parent[i] >= 0:
                self.W[model.parent[i]] += self.W[i]


def _variation(model, s, c, sigma, dX):
    """``δτ`` (nq,) of the rigid motion ``σ`` of the subtree of ``c`` and the screw change."""
    nb = model.nb
    sub = model.support[:, c]                        # sub[l]: c on the path to l
    adS = se3.ad(sigma)
    dJ = np.zeros((nb, 6))
    dJ[sub] = np.einsum('ij,nj->ni', adS, s.J[sub])
    dJ[c] += se3.Ad(s.C[c]) @ dX
    dV, dVd, dF = np.zeros((nb, 6)), np.zeros((nb, 6)), np.zeros((nb, 6))
    for i in range(nb):
        if not sub[i]:
            continue
        p = model.parent[i]
        t1, t2 = s.t[:, i]
        dV[i] = (dV[p] if p >= 0 else 0.0) + dJ[i] * t1
        dVd[i] = ((dVd[p] if p >= 0 else 0.0) + dJ[i] * t2
                  + (se3.ad(dV[i]) @ s.J[i] + se3.ad(s.V[i]) @ dJ[i]) * t1)
        M, V = s.M[i], s.V[i]
        dM = -adS.T @ M - M @ adS
        adV = se3.ad(V)
        dF[i] = (dM @ s.Vd[i] + M @ dVd[i] - se3.ad(dV[i]).T @ M @ V
                 - adV.T @ (dM @ V + M @ dV[i]))
    dW = dF.copy()
    for i in reversed(range(nb)):
        if model.parent[i] >= 0:
            dW[model.parent[i]] += dW[i]
    return project(model, dJ, s.W) + project(model, s.J, dW)


def geometric_sensitivity(model, q, qd, qdd):
    """
    Return the derivatives of the joint forces by the geometry, ``(d_reference, d_screw)``.

    Both (nb, 6, nq): ``d_reference[c, k] = ∂τ/∂ε`` for ``A_{λ(c),c} → A_{λ(c),c} exp(ε e_k)``
    (body ``c``'s reference pose relative to its parent, moved in its own frame, angular
    first), ``d_screw[c, k] = ∂τ/∂(^cX_c)_k`` (the body-fixed joint screw's components).
    ``τ`` is :func:`liemb_ros.core.dynamics.inverse_dynamics` with the model's gravity, no
    external wrenches; fixed-base models (module docstring: [M18d] §6.2, closed form).
    """
    args = fixed_base_vectors(model, 'geometric_sensitivity', (
        ('q', q, model.nq), ('qd', qd, model.nv), ('qdd', qdd, model.nv)))
    s = _Spatial(model, *args)
    d_ref = np.empty((model.nb, 6, model.nq))
    d_scr = np.empty((model.nb, 6, model.nq))
    zero = np.zeros(6)
    for c in range(model.nb):
        p = model.parent[c]
        base = (s.C[p] if p >= 0 else np.eye(4)) @ model.A_rel[c]
        Ad_base = se3.Ad(base)
        theta = model.q_mult[c] * args[0][model.q_index[c]] + model.q_offset[c]
        D = se3.Ad(s.C[c]) @ se3.dexp(-model.X[c] * theta) * theta
        for k in range(6):
            d_ref[c, k] = _variation(model, s, c, Ad_base[:, k], zero)
            d_scr[c, k] = _variation(model, s, c, D[:, k], np.eye(6)[k])
    return d_ref, d_scr


__all__ = ['geometric_sensitivity']
