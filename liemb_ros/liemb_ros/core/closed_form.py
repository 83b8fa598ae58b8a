"""
Equations of motion in closed form: the reference statements of the paper ([M18d] §5).

Müller, "Screw and Lie group theory in multibody dynamics — recursive algorithms and
equations of motion of tree-topology systems", Multibody Syst. Dyn. 42 (2018) 219–248
("[M18d]"); see docs/theory/recursions.md.

* :func:`kane_eom`: the Euler-Jourdain / projection (Kane) equations (78),
  ``τ = (J^b)ᵀ [M_i V̇_i - ad_{V_i}ᵀ M_i V_i - W_i^app]_i`` with the system Jacobian
  ``J^b = A^b X^b`` and ``V̇ = J q̈ - A^b a^b V`` ([M18d] (10));
* :func:`lagrange_eom`: the Lagrange form (80)-(84), ``M = (J^b)ᵀ M^b J^b`` (81) and
  ``C = -(J^b)ᵀ (M^b A^b a^b + (b^b)ᵀ M^b) J^b`` (84), plus the gravity torques.  This ``C``
  satisfies ``q̇ᵀ(Ṁ - 2C) q̇ = 0`` but ``Ṁ - 2C`` is *not* skew-symmetric (see
  docs/theory/recursions.md); :func:`liemb_ros.core.dynamics.coriolis_matrix` is the
  Christoffel-consistent one.
* :func:`system_matrices`: the stacked-system matrices they are built of.

These are matrix formulas over the stacked system in NumPy (fixed base, O(n²) memory): a
readable statement of the paper's equations and an independent cross-check of the O(n)
recursions of :mod:`liemb_ros.core.dynamics`, not production code.  They are importable from
:mod:`liemb_ros.core.eom` (and ``liemb_ros``) as well.
"""
import numpy as np

from ._kernels.dispatch import fext_arg
from .kinematics import body_poses, jacobian_factors
from ._kernels.lie import Ad_matrix_into, ad_matrix_into


def _ad(X):
    out = np.empty((6, 6))
    ad_matrix_into(np.ascontiguousarray(X, dtype=float), out)
    return out


def system_matrices(model, q, qd):
    """
    Return the stacked-system matrices of [M18d] §5 for a fixed-base model (dict of arrays).

    ``J`` (6nb, nq) = ``A X`` body-fixed system Jacobian (112), ``A`` (6nb, 6nb), ``X``,
    ``Mb`` = blockdiag(M_i^b), ``a`` = blockdiag(θ̇_i ad_{X_i}) (9), ``b`` =
    blockdiag(ad_{V_i}) (82), ``V`` = J q̇ (6nb,), ``poses`` (nb, 4, 4).
    """
    if model.floating:
        raise ValueError('the closed-form system matrices cover fixed-base models')
    q = np.asarray(q, dtype=float)
    qd = np.asarray(qd, dtype=float)
    if q.shape != (model.nq,) or qd.shape != (model.nv,):
        raise ValueError(f'q and qd must have shapes ({model.nq},), ({model.nv},); got '
                         f'{q.shape}, {qd.shape}')
    if not (np.all(np.isfinite(q)) and np.all(np.isfinite(qd))):
        raise ValueError('q or qd contains NaN or inf')
    J, A, Xs, _ = jacobian_factors(model, q, 'body')
    nb = model.nb
    V = J @ qd
    Mb = np.zeros((6 * nb, 6 * nb))
    a = np.zeros((6 * nb, 6 * nb))
    b = np.zeros((6 * nb, 6 * nb))
    for i in range(nb):
        sl = slice(6 * i, 6 * i + 6)
        Mb[sl, sl] = model.inertia[i]
        a[sl, sl] = model.q_mult[i] * qd[model.q_index[i]] * _ad(model.X[i])
        b[sl, sl] = _ad(V[sl])
    return {'J': J, 'A': A, 'X': Xs, 'Mb': Mb, 'a': a, 'b': b, 'V': V,
            'poses': body_poses(model, q)}


def _applied(model, poses, f_ext):
    """Stacked applied wrenches (gravity + f_ext) on the bodies, body frames (6nb,)."""
    nb = model.nb
    W = np.zeros(6 * nb)
    for i in range(nb):
        W[6 * i + 3:6 * i + 6] = poses[i][:3, :3].T @ model.gravity
        W[6 * i:6 * i + 6] = model.inertia[i] @ W[6 * i:6 * i + 6]   # (0, Rᵀ g) as wrench
    if f_ext is not None:
        fx = fext_arg(model, f_ext, None)
        for li, w in enumerate(fx):
            body = model.link_body[li]
            if body >= 0:
                Ad = np.empty((6, 6))   # Ad_T^-T w = Ad_{T^-1}ᵀ w
                Ad_matrix_into(np.linalg.inv(model.link_offset[li]), Ad)
                W[6 * body:6 * body + 6] += Ad.T @ w
    return W


def kane_eom(model, q, qd, qdd, f_ext=None):
    """
    Joint forces by the Euler-Jourdain / Kane projection ([M18d] (78)), fixed base.

    ``τ = Jᵀ [M_i V̇_i - ad_{V_i}ᵀ M_i V_i - W_i^app]``, ``V = J q̇``,
    ``V̇ = J q̈ - A a V`` (10); ``W^app`` = gravity ``M_i (0, R_iᵀ g)`` + ``f_ext``.  The
    columns of ``J`` are Kane's partial velocities.  Equals the O(n) inverse dynamics.
    """
    S = system_matrices(model, q, qd)
    qdd = np.asarray(qdd, dtype=float)
    if qdd.shape != (model.nv,) or not np.all(np.isfinite(qdd)):
        raise ValueError(f'qdd must be a finite vector of shape ({model.nv},)')
    V = S['V']
    Vd = S['J'] @ qdd - S['A'] @ S['a'] @ V
    F = S['Mb'] @ Vd - S['b'].T @ S['Mb'] @ V - _applied(model, S['poses'], f_ext)
    return S['J'].T @ F


def lagrange_eom(model, q, qd):
    """
    Lagrange form ``M q̈ + C q̇ + g = τ`` in system matrices ([M18d] (80)-(84)), fixed base.

    Returns ``(M, C, g)``: ``M = Jᵀ M^b J`` (81), ``C = -Jᵀ (M^b A a + bᵀ M^b) J`` (84)
    (not the Christoffel factorisation: only ``q̇ᵀ(Ṁ - 2C)q̇ = 0`` holds) and
    ``g = -Jᵀ W^grav``.
    """
    S = system_matrices(model, q, qd)
    J, Mb = S['J'], S['Mb']
    M = J.T @ Mb @ J
    C = -J.T @ (Mb @ S['A'] @ S['a'] + S['b'].T @ Mb) @ J
    g = -J.T @ _applied(model, S['poses'], None)
    return M, C, g


__all__ = ['system_matrices', 'kane_eom', 'lagrange_eom']
