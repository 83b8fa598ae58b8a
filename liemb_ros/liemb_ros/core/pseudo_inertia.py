"""
The pseudo-inertia of a rigid body, and its log-Cholesky coordinates: physical consistency.

A body's ten inertial parameters (:data:`~liemb_ros.core.identification.PARAMETERS`: mass
``m``, first moment ``h = m c``, inertia ``I`` about the body frame's origin) are those of a
real mass distribution exactly when its pseudo-inertia ``J = ∫ (x, 1)(x, 1)ᵀ dm`` is positive
definite (Wensing, Kim and Slotine, "Linear matrix inequalities for physically consistent
inertial parameter identification: a statistical perspective on the mass distribution",
IEEE RA-L 3(1) (2018) 60–67).  Rucker and Wensing ("Smooth parameterization of rigid-body
inertia", IEEE RA-L 7(2) (2022) 2771–2778) write every such ``J`` as ``U Uᵀ`` with ``U``
upper triangular of positive diagonal, in ten unconstrained log-Cholesky coordinates ``θ``:
a fit in ``θ`` is consistent by construction.  The divergence of one body from another is
the entropic (log-det Bregman) divergence of Lee, Wensing and Park ("Geometric robot
dynamic identification: a convex programming approach", IEEE T-RO 36(2) (2020) 348–365),
written here as a sum of squares for :func:`scipy.optimize.least_squares`.
"""
import numpy as np


def pseudo_inertia(parameters):
    """
    Return the pseudo-inertia ``J = [[Σ, h], [hᵀ, m]]`` (..., 4, 4) of ten parameters (..., 10).

    ``parameters`` in :data:`~liemb_ros.core.identification.PARAMETERS` order (mass, first
    moment ``h = m c``, inertia ``I`` about the body origin); ``Σ = ½ tr(I) 1 - I`` is the
    second moment ``∫ x xᵀ dm`` of the mass about the origin, so ``J = ∫ (x, 1)(x, 1)ᵀ dm``.
    A body is physically consistent (a positive mass density exists) when ``J`` is positive
    definite (Wensing, Kim and Slotine 2018): mass positive, the inertia about the centre of
    mass positive definite and satisfying the triangle inequalities.
    """
    p = np.asarray(parameters, dtype=float)
    ixx, ixy, iyy, ixz, iyz, izz = np.moveaxis(p[..., 4:], -1, 0)
    half = 0.5 * (ixx + iyy + izz)
    J = np.zeros(p.shape[:-1] + (4, 4))
    J[..., 0, 0] = half - ixx
    J[..., 1, 1] = half - iyy
    J[..., 2, 2] = half - izz
    J[..., 0, 1] = J[..., 1, 0] = -ixy
    J[..., 0, 2] = J[..., 2, 0] = -ixz
    J[..., 1, 2] = J[..., 2, 1] = -iyz
    J[..., :3, 3] = J[..., 3, :3] = p[..., 1:4]
    J[..., 3, 3] = p[..., 0]
    return J


def parameters_of(J):
    """Return the ten parameters (..., 10) of pseudo-inertias ``J`` (..., 4, 4): the inverse."""
    J = np.asarray(J, dtype=float)
    t = J[..., 0, 0] + J[..., 1, 1] + J[..., 2, 2]
    return np.stack([J[..., 3, 3], J[..., 0, 3], J[..., 1, 3], J[..., 2, 3],
                     t - J[..., 0, 0], -J[..., 0, 1], t - J[..., 1, 1], -J[..., 0, 2],
                     -J[..., 1, 2], t - J[..., 2, 2]], axis=-1)


def body_eigenvalues(parameters):
    """Return each body's pseudo-inertia eigenvalues (bodies, 4), ascending, of (10 bodies,)."""
    p = np.asarray(parameters, dtype=float)
    return np.linalg.eigvalsh(pseudo_inertia(p.reshape(-1, 10)))


#: the log-Cholesky coordinates ``θ = (α, d1, d2, d3, s12, s23, s13, t1, t2, t3)`` of Rucker
#: and Wensing (2022): ``J = U Uᵀ``, ``U = e^α [[e^d1, s12, s13, t1], [0, e^d2, s23, t2],
#: [0, 0, e^d3, t3], [0, 0, 0, 1]]``; the positions of ``s12 ... t3`` in ``U``
OFF_DIAGONAL = ((0, 1), (1, 2), (0, 2), (0, 3), (1, 3), (2, 3))


def factor(theta):
    """Return ``U`` (4, 4), upper triangular, of log-Cholesky coordinates ``θ`` (10,)."""
    U = np.zeros((4, 4))
    U[(0, 1, 2, 3), (0, 1, 2, 3)] = np.exp(np.r_[theta[1:4], 0.0])
    for k, ij in enumerate(OFF_DIAGONAL):
        U[ij] = theta[4 + k]
    return np.exp(theta[0]) * U


def upper_factor(J):
    """Return the upper-triangular ``U`` with ``U Uᵀ = J`` (Cholesky in reversed order)."""
    return np.linalg.cholesky(J[::-1, ::-1])[::-1, ::-1]


def log_cholesky(J):
    """Return ``θ`` (10,) of a positive definite pseudo-inertia ``J`` (inverse of ``factor``)."""
    U = upper_factor(J)
    a = np.log(U[3, 3])
    return np.r_[a, np.log(np.diag(U)[:3]) - a, [U[ij] / U[3, 3] for ij in OFF_DIAGONAL]]


def factor_derivatives(U):
    """Return ``∂U/∂θ_k`` (10, 4, 4) at ``U = factor(θ)``."""
    dU = np.zeros((10, 4, 4))
    dU[0] = U
    for i in range(3):
        dU[1 + i, i, i] = U[i, i]
    for k, ij in enumerate(OFF_DIAGONAL):
        dU[4 + k][ij] = U[3, 3]
    return dU


def body_parameters(theta):
    """Return a body's ten parameters (10,) at ``θ`` and their derivatives (10, 10) in ``θ``."""
    U = factor(theta)
    dJ = factor_derivatives(U) @ U.T
    return parameters_of(U @ U.T), parameters_of(dJ + np.swapaxes(dJ, 1, 2)).T


def made_consistent(J, floor=1e-6):
    """Return ``J`` if positive definite, else with eigenvalues raised to ``floor`` × the top."""
    w, V = np.linalg.eigh(J)
    if w[0] > 0.0:
        return J
    return (V * np.maximum(w, floor * w[-1])) @ V.T


def divergence_residual(theta, F):
    """
    Return residuals (10,) whose squares sum to ``D(J‖J₀)``, and their derivatives (10, 10).

    ``D(J‖J₀) = tr(J₀⁻¹ J) - log det(J₀⁻¹ J) - 4`` (Lee, Wensing and Park 2020): zero at
    ``J = J₀``, positive elsewhere, independent of the body's frame and units, infinite as
    ``J`` degenerates.  ``J = U Uᵀ`` (``U = factor(θ)``), ``J₀ = F Fᵀ`` (``F`` upper
    triangular, :func:`upper_factor`).  With ``V = F⁻¹ U`` (upper triangular) and
    ``u_i = log V_ii``, ``D = Σ_{i<j} V_ij² + Σ_i (e^{2u_i} - 2u_i - 1)``: the residuals
    are the six ``V_ij`` and ``φ(u_i) = sign(u_i) sqrt(e^{2u_i} - 2u_i - 1)``, smooth
    (``√2 u (1 + u/3 + …)`` near 0, used below ``|u| = 1e-4``).
    """
    U = factor(theta)
    Fi = np.linalg.inv(F)
    V = Fi @ U
    dV = Fi @ factor_derivatives(U)
    u = np.log(np.diag(U) / np.diag(F))
    small = np.abs(u) < 1e-4
    e = np.expm1(2 * u)
    phi = np.where(small, np.sqrt(2.0) * u * (1 + u / 3),
                   np.sign(u) * np.sqrt(np.maximum(e - 2 * u, 0.0)))
    dphi = np.where(small, np.sqrt(2.0) * (1 + 2 * u / 3), e / np.where(small, 1.0, phi))
    du = np.zeros((4, 10))   # u_i = α + d_i (i < 3), u_3 = α, less log F_ii
    du[:, 0] = 1.0
    du[(0, 1, 2), (1, 2, 3)] = 1.0
    rows, cols = zip(*OFF_DIAGONAL)
    return np.r_[V[rows, cols], phi], np.vstack([dV[:, rows, cols].T, dphi[:, None] * du])
