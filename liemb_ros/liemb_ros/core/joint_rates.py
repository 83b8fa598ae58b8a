"""
Inverse kinematics at velocity and acceleration level: joint rates from the bodies' twists.

Müller, "Screw and Lie group theory in multibody dynamics", Multibody Syst. Dyn. 42 (2018)
219–248 ("[M18d]") §2, Remark 1 (eq. (11)) and Remark 3;
docs/theory/jerk-and-christoffel.md.  Given the body-fixed twists ``V_i`` and accelerations
``V̇_i`` of all bodies (measured, say, by body-mounted sensors), the joint velocities and
accelerations follow body by body from the recursions (66b) and (66c) solved for the
joint's own term, with ``A_i = Ad_{C_{i,λ}}`` (``λ`` the parent, ``V_λ = V̇_λ = 0`` at the
root):

    ``^iX_i θ̇_i = V_i - A_i V_λ``,    ``^iX_i θ̈_i = V̇_i - A_i V̇_λ + [V_i, A_i V_λ]``

(Remark 3; the paper prints ``V_i`` for the first ``V̇_i``, docs/theory/errata.md).  Each
is solved in the least-squares sense ``θ = Xᵀ r / XᵀX``, which is (11),
``q̈ = (XᵀX)⁻¹ Xᵀ ((I - D) V̇ + a V)`` with the block-diagonal ``X`` of the joint screws, written
per body: O(n).  Mimic joints share one coordinate; its rate is the least-squares fit
over their bodies, ``Σ μ_i X_iᵀ r_i / Σ μ_i² X_iᵀ X_i`` with the ratios ``μ_i``.  For twists
and accelerations of the model's own motion the result is exact; for measured ones it is
the joint motion that best explains each body's motion relative to its parent.
"""
import numpy as np

from ._kernels.dispatch import as_batch
from .kinematics import body_poses
from .lie import se3


def _bodies(model, x, name):
    """``x`` as a finite (nb, 6) array of the bodies' twists or accelerations."""
    a = np.asarray(x, dtype=float)
    if a.shape != (model.nb, 6):
        raise ValueError(f'{name} must have shape ({model.nb}, 6) (one body-fixed twist per '
                         f'body, order of model.body_names); got {a.shape}')
    if not np.all(np.isfinite(a)):
        raise ValueError(f'{name} contains NaN or inf')
    return a


def _fit(model, r):
    """Least-squares joint rates from the residuals ``r_i = X_i θ_i`` (nb, 6), per coordinate."""
    num = np.zeros(model.nq)
    den = np.zeros(model.nq)
    np.add.at(num, model.q_index, model.q_mult * np.einsum('ij,ij->i', model.X, r))
    np.add.at(den, model.q_index, model.q_mult ** 2 * np.einsum('ij,ij->i', model.X, model.X))
    return num / den


def joint_rates(model, q, twists, accelerations=None):
    """
    Joint velocities (and accelerations) from the bodies' body-fixed twists ([M18d] (11)).

    ``twists`` (nb, 6): ``V_i^b`` of every body, angular first, order of
    ``model.body_names`` (as :func:`~liemb_ros.core.kinematics.body_twists` returns them);
    ``accelerations`` (nb, 6): their time derivatives ``V̇_i^b``, or None.  Returns ``qd``
    (nq,), or ``(qd, qdd)`` when ``accelerations`` are given (module docstring: Remark 1,
    (11), Remark 3; least squares where the data are not a motion of the model).
    Fixed-base models, single configurations (a floating base's twist is its own input).
    """
    if model.floating:
        raise ValueError('joint_rates covers fixed-base models (a floating base twist is '
                         'the base body\'s own twist)')
    q, batched = as_batch(model, q, model.nq, 'q')
    if batched:
        raise ValueError('joint_rates takes a single configuration')
    V = _bodies(model, twists, 'twists')
    C = body_poses(model, q)
    A = np.zeros((model.nb, 6, 6))
    AV = np.zeros((model.nb, 6))
    for i in range(model.nb):
        p = model.parent[i]
        if p >= 0:
            A[i] = se3.Ad_inv(C[i]) @ se3.Ad(C[p])                    # Ad_{C_{i,λ}}
            AV[i] = A[i] @ V[p]
    qd = _fit(model, V - AV)
    if accelerations is None:
        return qd
    Vd = _bodies(model, accelerations, 'accelerations')
    r = Vd + np.einsum('nij,nj->ni', se3.ad(V), AV)                   # + [V_i, A_i V_λ]
    for i in range(model.nb):
        if model.parent[i] >= 0:
            r[i] -= A[i] @ Vd[model.parent[i]]
    return qd, _fit(model, r)


__all__ = ['joint_rates']
