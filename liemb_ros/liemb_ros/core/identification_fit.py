"""
Identification from recordings: least squares, the physically consistent fit, a payload.

A recording is ``N`` samples of ``q`` (N, nq), ``qd``, ``qdd`` and the measured joint
torques ``tau`` (N, nv) (a floating base's ``base_pose`` as for
:func:`~liemb_ros.core.identification.regressor`; external wrenches' torques subtracted).
Torques are linear in the parameters, ``τ = Y π = Y_b β`` with ``β`` the base parameters
(:func:`~liemb_ros.core.identification.base_parameters`), so:

- :func:`identify`: ``β`` by (weighted) least squares, with standard errors from the
  residual variance;
- :func:`identify_consistent`: the standard parameters with every body's pseudo-inertia
  positive definite (Wensing, Kim and Slotine, "Linear matrix inequalities for physically
  consistent inertial parameter identification: a statistical perspective on the mass
  distribution", IEEE RA-L 3(1) (2018) 60–67), in the log-Cholesky parametrisation of
  Rucker and Wensing ("Smooth parameterization of rigid-body inertia", IEEE RA-L 7(2)
  (2022) 2771–2778), regularised toward the model's values by the entropic (log-det
  Bregman) divergence of Lee, Wensing and Park ("Geometric robot dynamic identification: a
  convex programming approach", IEEE T-RO 36(2) (2020) 348–365);
- :func:`identify_payload`: mass, centre of mass and inertia of what a link holds, the rest
  of the robot known, in the dynamics node's payload parameters.

Both fits return an :class:`Identification`; its :meth:`~Identification.predict` gives the
torques of other states.
"""
import warnings
from dataclasses import dataclass

import numpy as np

from .dynamics import inverse_dynamics
from .identification import base_parameters, regressor, regressor_columns
from .model.inertia import pose_inverse
from .pseudo_inertia import (body_eigenvalues, body_parameters, divergence_residual, log_cholesky,
                             made_consistent, parameters_of, pseudo_inertia, upper_factor)

#: a fit is refused when the condition number of its stacked base regressor (weighted, each
#: column scaled to unit norm) is above this: the data do not tell the parameters apart
MAX_CONDITION = 1e10
#: the smallest joint noise ``weights='auto'`` estimates, relative to the torques' RMS (exact
#: data fit to round-off: their weights stay finite)
NOISE_FLOOR = 1e-8
#: how often ``weights='auto'`` re-estimates the joint noise from a weighted fit
REWEIGHTINGS = 1
#: the smallest torque noise :func:`identify_consistent` assumes, relative to the weighted
#: torques' RMS: with exact data a smaller one makes the balance of fit and divergence so
#: stiff that the trust region crawls along the curved set of equal torques (measured on
#: the 7-joint arm: over 500 evaluations at 1e-8, 20 to 100 at 1e-4)
CONSISTENT_NOISE_FLOOR = 1e-4
#: the default weight of the divergence from the model's bodies in :func:`identify_consistent`
REGULARIZATION = 1.0
#: the dynamics node's payload parameters (``ros/dynamics_parameters.PAYLOAD``), in the order
#: of the engine's ``payload`` setting ``(link, mass, com, inertia)``
PAYLOAD_PARAMETERS = ('payload.link', 'payload.mass', 'payload.com', 'payload.inertia')


# --------------------------------------------------------------------------- data, weights
def _recording(model, q, qd, qdd, tau, Y=None):
    """
    Check a recording's shapes: samples of ``q`` (N, nq), ``qd``, ``qdd``, ``tau`` (N, nv).

    With rows ``Y`` (N, nv, p) given instead of the states: ``(None, None, None, tau)``, ``Y``
    checked against ``tau``.
    """
    if Y is not None:
        tau, = _recording_arrays(model, (('tau', tau, model.nv),))
        if Y.ndim != 3 or Y.shape[:2] != tau.shape:
            raise ValueError(f'Y must have shape ({tau.shape[0]}, {model.nv}, p), got {Y.shape}')
        if not np.all(np.isfinite(Y)):
            raise ValueError('Y contains NaN or inf')
        return None, None, None, tau
    return _recording_arrays(model, (('q', q, model.nq), ('qd', qd, model.nv),
                                     ('qdd', qdd, model.nv), ('tau', tau, model.nv)))


def _recording_arrays(model, named):
    """Check named arrays (name, x, columns): (N, columns) each, the same N, finite."""
    arrays = []
    for name, x, n in named:
        x = np.asarray(x, dtype=float)
        if x.ndim != 2 or x.shape[1] != n:
            raise ValueError(f'{name} must have shape (N, {n}) (N samples), got {x.shape}')
        if arrays and x.shape[0] != arrays[0].shape[0]:
            raise ValueError(f'q and {name} have different numbers of samples: '
                             f'{arrays[0].shape[0]} and {x.shape[0]}')
        if not np.all(np.isfinite(x)):
            raise ValueError(f'{name} contains NaN or inf (sample '
                             f'{int(np.flatnonzero(~np.isfinite(x).all(axis=1))[0])})')
        arrays.append(x)
    return arrays


@dataclass(frozen=True)
class _Solution:
    """A weighted linear least-squares solution and what the later steps need of it."""

    x: np.ndarray            # the estimate (n,)
    covariance: np.ndarray   # σ̂² (AᵀWᵀWA)⁻¹ (n, n)
    condition: float         # of the weighted, column-scaled A
    R: np.ndarray            # (n, n): ‖W(b - A x)‖² = ‖z - R x‖² + const
    z: np.ndarray            # (n,)
    sigma: float             # σ̂, the weighted residual's standard deviation
    rms: float               # the weighted torques' RMS


class _Equations:
    """
    A recording's equations ``A x = tau`` (``A`` (N, nv, n), ``tau`` (N, nv)), joint by joint.

    Each joint's rows are compressed once to the triangle ``R̃_j`` of the QR of
    ``[A[:, j], tau[:, j]]`` (at most ``n + 1`` rows): row weights are per joint, so
    ``‖w_j (tau_j - A_j x)‖ = w_j ‖R̃_j (x, -1)‖`` for any weights, and every weighted fit
    (:meth:`solve`, and those :meth:`weights` makes) costs no more than its ``n + 1``
    rows per joint, not ``N``.
    """

    def __init__(self, A, tau, what):
        self.N, self.nv, self.n = A.shape
        self.what = what
        if self.N * self.nv <= self.n:
            raise ValueError(f'{self.N} samples give {self.N * self.nv} equations for '
                             f'{self.n} {what}: record more samples')
        self.blocks = [np.linalg.qr(np.column_stack((A[:, j], tau[:, j])), mode='r')
                       for j in range(self.nv)]
        self.rms = float(np.sqrt(np.mean(tau ** 2)))

    def residuals(self, x):
        """Return each joint's residual norm ``‖tau_j - A_j x‖`` (nv,) at ``x``."""
        return np.array([np.linalg.norm(B[:, -1] - B[:, :-1] @ x) for B in self.blocks])

    def solve(self, w):
        """
        Return the least-squares :class:`_Solution` with the rows of joint ``j`` times ``w[j]``.

        Through the SVD of the weighted matrix with unit-norm columns: its condition number
        decides whether the data identify ``x`` (a ValueError above :data:`MAX_CONDITION`).
        """
        n = self.n
        M = np.vstack([wj * B for wj, B in zip(w, self.blocks)])
        Aw, b = M[:, :n], M[:, n]
        scale = np.linalg.norm(Aw, axis=0)
        scale[scale == 0.0] = 1.0
        U, s, Vt = np.linalg.svd(Aw / scale, full_matrices=False)
        cond = s[0] / s[-1] if s.size == n and s[-1] > 0.0 else np.inf
        if cond > MAX_CONDITION:
            raise ValueError(f'the data cannot identify the {n} {self.what}: the stacked '
                             f'regressor (weighted, columns scaled) has condition number '
                             f'{cond:.3g} > {MAX_CONDITION:g}; record states that move every '
                             'joint (varied positions, velocities, accelerations)')
        z = U.T @ b
        x = Vt.T @ (z / s) / scale
        r = b - Aw @ x
        sigma = np.sqrt(r @ r / (self.N * self.nv - n))
        Vs = Vt.T / s / scale[:, None]
        return _Solution(x, sigma ** 2 * Vs @ Vs.T, float(cond), s[:, None] * Vt * scale, z,
                         float(sigma), float(np.sqrt(b @ b / (self.N * self.nv))))

    def weights(self, weights):
        """
        Return each joint's row weight, (nv,): ones, given, or ``'auto'``: ``1/σ_j`` estimated.

        ``σ_j² = ‖r_j‖² / (N - n/nv)``, the residual variance of joint ``j`` (its share of
        the degrees of freedom), floored at :data:`NOISE_FLOOR` times the torques' RMS: from
        an unweighted fit (the weighted least squares of Gautier and Poignet 2001), then
        :data:`REWEIGHTINGS` times from the fit weighted by the last estimate; an
        unweighted fit lets the noise of the joints with large torques leak into the
        residuals of those with small ones (measured: their ``σ_j`` 30 % too large on the
        7-joint arm, within 5 % after one reweighting).
        """
        nv = self.nv
        if weights is None:
            return np.ones(nv)
        if isinstance(weights, str):
            if weights != 'auto':
                raise ValueError(f"weights must be None, 'auto' or one positive value per "
                                 f'velocity coordinate ({nv}), got {weights!r}')
            w = np.ones(nv)
            floor = NOISE_FLOOR * self.rms or 1.0
            for _ in range(1 + REWEIGHTINGS):
                r = self.residuals(self.solve(w).x)
                w = 1.0 / np.maximum(r / np.sqrt(max(self.N - self.n / nv, 1.0)), floor)
            return w
        w = np.asarray(weights, dtype=float)
        if w.shape != (nv,) or not np.all(np.isfinite(w)) or np.any(w <= 0.0):
            raise ValueError(f'weights must be one positive finite value per velocity '
                             f'coordinate ({nv}), got {w.tolist()}')
        return w


# --------------------------------------------------------------------------- results
@dataclass(frozen=True, eq=False)
class Identification:
    """
    Identified parameters of a model, from :func:`identify` or :func:`identify_consistent`.

    ``base``: the :class:`~liemb_ros.core.identification.BaseParameters`; ``values`` (n,):
    the estimated base parameters ``β`` (named ``base.names``), ``std`` (n,) their standard
    errors and ``covariance`` (n, n) (of the least-squares estimate: ``σ̂² (AᵀWᵀWA)⁻¹``,
    ``σ̂²`` the weighted residual variance); ``parameters`` (p,): standard parameters with
    these base values (``base.standard_names``; for least squares the model's values where
    the data cannot see, :meth:`~liemb_ros.core.identification.BaseParameters.to_standard`);
    ``eigenvalues`` (bodies, 4): each body's pseudo-inertia eigenvalues (:func:`pseudo_inertia`;
    a floating base's first); ``weights`` (nv,): the row weights used (``1/σ_j``);
    ``residual_rms`` (nv,): each joint's torque residual on the recording [N m or N];
    ``condition``: of the stacked base regressor (weighted, columns scaled to unit norm);
    ``samples``; ``method``: ``'least squares'`` or ``'consistent'``.
    """

    model: object
    base: object
    values: np.ndarray
    std: np.ndarray
    covariance: np.ndarray
    parameters: np.ndarray
    eigenvalues: np.ndarray
    weights: np.ndarray
    residual_rms: np.ndarray
    condition: float
    samples: int
    method: str

    @property
    def names(self):
        """Return the readable names of the base parameters, ``base.names``."""
        return self.base.names

    @property
    def consistent(self):
        """
        Return whether every body is physically consistent: pseudo-inertia positive definite.

        A body whose ten parameters are all zero (the massless virtual bodies of multi-DOF
        joints) counts as consistent.
        """
        blocks = self.parameters[:self.eigenvalues.shape[0] * 10].reshape(-1, 10)
        return bool(np.all((self.eigenvalues[:, 0] > 0.0) | np.all(blocks == 0.0, axis=1)))

    def predict(self, q, qd, qdd, base_pose=None):
        """Return the identified model's torques (N, nv) (or (nv,)) at states ``q, qd, qdd``."""
        return regressor(self.model, q, qd, qdd, base_pose=base_pose,
                         friction=self.base.friction, armature=self.base.armature
                         ) @ self.parameters

    def predict_rows(self, Y):
        """Return the torques (N, nv) of regressor rows ``Y`` with every column (all terms)."""
        return Y[..., regressor_columns(self.model, self.base.friction, self.base.armature)
                 ] @ self.parameters

    def table(self):
        """Return the base parameters as text: name, value, standard error and its percent."""
        rows = [f'{"value":>13} {"std":>10} {"%":>7}  name']
        for name, v, s in zip(self.names, self.values, self.std):
            pct = f'{100 * s / abs(v):7.2f}' if v != 0.0 else f'{"-":>7}'
            rows.append(f'{v:13.6g} {s:10.3g} {pct}  {name}')
        return '\n'.join(rows)


def _least_squares(model, q, qd, qdd, tau, base_pose, friction, armature, weights, base, Y):
    """Fit by least squares (:func:`identify`); also return ``Y``, ``tau`` and the solution."""
    q, qd, qdd, tau = _recording(model, q, qd, qdd, tau, Y)
    if base is None:
        base = base_parameters(model, friction=friction, armature=armature)
    elif (base.friction, base.armature) != (bool(friction), bool(armature)):
        raise ValueError(f'base has friction={base.friction}, armature={base.armature}; the '
                         f'fit asks friction={bool(friction)}, armature={bool(armature)}')
    if Y is None:
        Y = regressor(model, q, qd, qdd, base_pose=base_pose, friction=friction,
                      armature=armature)
    else:
        Y = _given_rows(model, Y, friction, armature)
    A = base.regressor(Y)
    equations = _Equations(A, tau, 'base parameters')
    w = equations.weights(weights)
    sol = equations.solve(w)
    pi = base.to_standard(sol.x)
    fit = _result(model, base, sol, pi, w, tau - Y @ pi, 'least squares')
    return fit, Y, tau, sol


def _given_rows(model, Y, friction, armature):
    """``Y`` given to a fit: its own columns, or those of the fit's terms out of every column."""
    from .identification import parameter_count
    p = parameter_count(model, friction, armature)
    if Y.shape[2] == p:
        return Y
    if Y.shape[2] == parameter_count(model, True, True):
        return Y[..., regressor_columns(model, friction, armature)]
    raise ValueError(f'Y has {Y.shape[2]} columns: the fit takes {p} (friction={bool(friction)}, '
                     f'armature={bool(armature)}) or all {parameter_count(model, True, True)}')


def _result(model, base, sol, pi, w, residual, method):
    """Return the :class:`Identification` of standard parameters ``pi``, ``sol``'s statistics."""
    n_inertial = 10 * (model.nb + (1 if model.floating else 0))
    return Identification(
        model=model, base=base, values=base.from_standard(pi), std=np.sqrt(np.diag(
            sol.covariance)), covariance=sol.covariance, parameters=pi,
        eigenvalues=body_eigenvalues(pi[:n_inertial]), weights=w,
        residual_rms=np.sqrt(np.mean(residual ** 2, axis=0)), condition=sol.condition,
        samples=residual.shape[0], method=method)


def identify(model, q, qd, qdd, tau, base_pose=None, friction=False, armature=False,
             weights=None, base=None, Y=None):
    """
    Identify the base parameters by weighted least squares (:class:`Identification`).

    ``q`` (N, nq), ``qd``, ``qdd``, ``tau`` (N, nv): the recording (module docstring);
    ``friction``, ``armature``: also fit each joint's viscous and Coulomb friction, rotor
    inertia (the columns of :func:`~liemb_ros.core.identification.regressor`).
    ``weights``: None (every row alike), one weight per velocity coordinate (``1/σ_j``,
    ``σ_j`` the torque noise of joint ``j``), or ``'auto'``: ``σ_j`` estimated from the
    residuals, joint by joint, of an unweighted fit and once more of the fit so weighted
    (joints with noisier torques count less; :data:`REWEIGHTINGS`).  ``base``: the model's
    :func:`~liemb_ros.core.identification.base_parameters` (computed if omitted).
    ``Y``: the recording's regressor rows (N, nv, p) when they are not ``Y(q, q̇, q̈)`` at
    sampled states (efforts held over sample intervals:
    :func:`~liemb_ros.core.held_efforts.interval_regressor`), with the columns of
    ``friction`` and ``armature`` or all of them; ``q``, ``qd``, ``qdd`` are then unused (None).

    Solves ``min ‖W (τ - Y_b β)‖²`` by the SVD of the stacked, weighted base regressor with
    unit-norm columns; the standard errors are ``sqrt(diag(σ̂² (AᵀA)⁻¹))``, ``A = W Y_b``,
    ``σ̂² = ‖W r‖² / (N nv - n)``.  Raises ValueError on shapes that do not match, NaN or
    inf, and data that cannot identify the base parameters (too few samples, or a condition
    number above :data:`MAX_CONDITION`, given in the message).
    """
    return _least_squares(model, q, qd, qdd, tau, base_pose, friction, armature, weights,
                          base, Y)[0]


def identify_consistent(model, q, qd, qdd, tau, base_pose=None, friction=False,
                        armature=False, weights=None, base=None,
                        regularization=REGULARIZATION, Y=None):
    """
    Identify physically consistent standard parameters (:class:`Identification`).

    Every body with mass in ``model`` has its pseudo-inertia ``J = U Uᵀ`` in log-Cholesky
    coordinates (Rucker and Wensing 2022): positive definite for every value of them, so the
    result is consistent by construction.  ``Y``: rows given instead of states, as
    :func:`identify`'s.  Viscous and Coulomb friction and the armature
    (``friction``, ``armature``) are bounded below by zero; massless bodies (virtual bodies
    of multi-DOF joints) keep their zero parameters.  Minimises, with
    :func:`scipy.optimize.least_squares` (trust region, exact derivatives), from the model's
    bodies (made consistent where they are not) and the least-squares joint terms,

        ``‖W (τ - Y π)‖² / σ² + regularization · Σ_bodies D(J_b ‖ J_b,model)``

    where ``W`` is that of :func:`identify` (``weights`` as there) and ``σ`` its residual
    standard deviation ``σ̂`` (at least :data:`CONSISTENT_NOISE_FLOOR` of the weighted
    torques' RMS), so that the first term is a chi-square in the torque noise, and
    ``D(J‖J₀) = tr(J₀⁻¹ J) - log det(J₀⁻¹ J) - 4`` is the entropic divergence of Lee,
    Wensing and Park (2020): zero at the model's body, independent of the body's frame and
    units, infinite as a body degenerates.  The default weight (:data:`REGULARIZATION`)
    is a prior as weak as one sample's chi-square per unit of divergence: beside the
    ``N nv`` rows of a recording it moves the directions the data see by far less than
    their standard errors, and it decides those they cannot see (there the result is the
    consistent body closest to the model's).  ``std``, ``covariance``, ``condition`` and
    ``weights`` are those of the least-squares fit; ``values`` the base parameters of the
    result.  Warns (RuntimeWarning) if the optimiser stops before converging.
    """
    if not regularization > 0.0:
        raise ValueError(f'regularization must be positive, got {regularization}')
    ls, Y, tau, sol = _least_squares(model, q, qd, qdd, tau, base_pose, friction, armature,
                                     weights, base, Y)
    ref = ls.base.reference
    bodies = model.nb + (1 if model.floating else 0)
    free = [b for b in range(bodies) if ref[10 * b] > 0.0]
    sigma = max(sol.sigma, CONSISTENT_NOISE_FLOOR * sol.rms)
    problem = _ConsistentProblem(sol.R @ ls.base.matrix / sigma, sol.z / sigma, ref, free,
                                 10 * bodies, np.sqrt(regularization))
    x0 = np.concatenate([log_cholesky(J) for J in problem.J_ref]
                        + [np.maximum(ls.parameters[10 * bodies:], 0.0)])
    pi = problem.parameters(_minimise(problem, x0, 'identify_consistent'))
    return _result(model, ls.base, sol, pi, ls.weights, tau - Y @ pi, 'consistent')


class _ConsistentProblem:
    """
    The residuals of :func:`identify_consistent` and their Jacobian, of ``x``.

    ``x``: ten log-Cholesky coordinates per body of ``free`` (their order), then the joint
    terms (standard columns ``joints`` on); the data residual ``G π(x) - z`` (``G`` (n, p)),
    then ``lam`` times each free body's divergence residuals (:func:`divergence_residual`)
    from ``ref``'s (made consistent: :attr:`J_ref`).
    """

    def __init__(self, G, z, ref, free, joints, lam):
        self.G, self.z, self.ref, self.free, self.joints, self.lam = G, z, ref, free, joints, lam
        self.J_ref = [made_consistent(pseudo_inertia(ref[10 * b:10 * b + 10])) for b in free]
        self.factors = [upper_factor(J) for J in self.J_ref]
        self.nt = 10 * len(free)

    def parameters(self, x, derivatives=False):
        """Return the standard ``π`` (p,) of ``x`` (and each free body's ``∂π_b/∂θ_b``)."""
        pi = self.ref.copy()
        d = []
        for k, b in enumerate(self.free):
            pi[10 * b:10 * b + 10], dk = body_parameters(x[10 * k:10 * k + 10])
            d.append(dk)
        pi[self.joints:] = x[self.nt:]
        return (pi, d) if derivatives else pi

    def fun(self, x):
        """Return the residuals: data, then divergences."""
        with np.errstate(over='ignore', invalid='ignore'):   # a trial step too far: inf
            reg = [divergence_residual(x[10 * k:10 * k + 10], f)[0]
                   for k, f in enumerate(self.factors)]
            return np.concatenate([self.G @ self.parameters(x) - self.z] +
                                  [self.lam * r for r in reg])

    def jac(self, x):
        """Return the residuals' derivatives in ``x``."""
        n = self.G.shape[0]
        d = self.parameters(x, derivatives=True)[1]
        out = np.zeros((n + self.nt, x.size))
        for k, (b, f) in enumerate(zip(self.free, self.factors)):
            c = slice(10 * k, 10 * k + 10)
            out[:n, c] = self.G[:, 10 * b:10 * b + 10] @ d[k]
            out[n + 10 * k:n + 10 * k + 10, c] = self.lam * divergence_residual(x[c], f)[1]
        out[:n, self.nt:] = self.G[:, self.joints:]
        return out


def _minimise(problem, x0, who):
    """:func:`scipy.optimize.least_squares` of ``problem`` from ``x0``; joint terms ``≥ 0``."""
    from scipy.optimize import least_squares   # here: it doubles `import liemb_ros` (0.35 s)
    lower = np.r_[np.full(problem.nt, -np.inf), np.zeros(x0.size - problem.nt)]
    res = least_squares(problem.fun, x0, jac=problem.jac, bounds=(lower, np.inf),
                        method='trf', x_scale='jac', ftol=1e-12, xtol=1e-12, gtol=1e-12,
                        max_nfev=500)
    if res.status == 0:
        warnings.warn(f'{who}: the optimiser stopped after {res.nfev} evaluations before '
                      f'converging (first-order optimality {res.optimality:.3g}); the result '
                      'is consistent but may not be the optimum', RuntimeWarning, stacklevel=3)
    return res.x


# --------------------------------------------------------------------------- payload
@dataclass(frozen=True, eq=False)
class Payload:
    """
    What a link holds, identified by :func:`identify_payload`, in the link's frame.

    ``link``; ``mass`` [kg]; ``com`` (3,): the centre of mass in the link frame [m];
    ``inertia`` (6,): about the centre of mass in link axes, ``(ixx, ixy, ixz, iyy, iyz,
    izz)`` [kg m²] (the dynamics node's order); ``parameters`` (10,): the ten parameters in
    the link frame (:data:`~liemb_ros.core.identification.PARAMETERS`, the inertia about the
    link's origin) and ``covariance`` (10, 10) of their least-squares estimate;
    ``mass_std``, ``com_std`` (3,): standard errors (to first order); ``residual_rms``
    (nv,), ``condition``, ``samples``: as in :class:`Identification`; ``projected``: the
    least-squares estimate was not physically consistent and was replaced by a consistent
    fit (:func:`identify_payload`).
    """

    link: str
    mass: float
    com: np.ndarray
    inertia: np.ndarray
    parameters: np.ndarray
    covariance: np.ndarray
    mass_std: float
    com_std: np.ndarray
    residual_rms: np.ndarray
    condition: float
    samples: int
    projected: bool

    @property
    def setting(self):
        """Return the dynamics engine's ``payload`` setting ``(link, mass, com, inertia)``."""
        return (self.link, float(self.mass), tuple(self.com.tolist()),
                tuple(self.inertia.tolist()))

    def node_parameters(self):
        """Return the dynamics node's payload parameters, by name (:data:`PAYLOAD_PARAMETERS`)."""
        link, mass, com, inertia = self.setting
        return dict(zip(PAYLOAD_PARAMETERS, (link, mass, list(com), list(inertia))))


def identify_payload(model, link, q, qd, qdd, tau, base_pose=None, reference=None,
                     weights=None, Y=None):
    """
    Identify the mass, centre of mass and inertia of what ``link`` holds (:class:`Payload`).

    The rest of the robot is known: its torques are those of ``reference`` (an
    :class:`Identification` of the robot without the payload, friction and all: its
    :meth:`~Identification.predict`) or else ``model``'s inverse dynamics, subtracted from
    ``tau``; the remainder is fitted by least squares (``weights`` as in :func:`identify`)
    on the ten columns of :func:`~liemb_ros.core.identification.regressor` of the body
    ``link`` is fixed to, a payload being a rigid body added to it.  An estimate that is
    not physically consistent (pseudo-inertia not positive definite, :func:`pseudo_inertia`)
    is replaced by the fit of :func:`identify_consistent` (log-Cholesky coordinates), its
    divergence taken from the estimate made consistent (negative eigenvalues of its
    pseudo-inertia raised to ``1e-6`` of the largest).  The result is moved to the link's
    frame.  Raises ValueError for a link fixed to a fixed base and for data that cannot
    identify the ten parameters (condition number above :data:`MAX_CONDITION`: a payload
    on a link that only turns about one axis, say).  ``Y``: the recording's rows with every
    column, given instead of states (:func:`identify`; the reference's torques are then its
    ``predict_rows(Y)``).
    """
    q, qd, qdd, tau = _recording(model, q, qd, qdd, tau, Y)
    li = model.link_index(link)
    body = int(model.link_body[li])
    if body < 0 and not model.floating:
        raise ValueError(f'link {link!r} is fixed to the base: a payload there moves no joint')
    col = 10 * (body + 1 if model.floating else body)
    if Y is not None:
        from .identification import inertial_parameters
        n = inertial_parameters(model).size
        rest = (reference.predict_rows(Y) if reference is not None
                else Y[..., :n] @ inertial_parameters(model))
        A = Y[..., col:col + 10]
    else:
        rest = (reference.predict(q, qd, qdd, base_pose) if reference is not None
                else inverse_dynamics(model, q, qd, qdd, base_pose=base_pose))
        A = regressor(model, q, qd, qdd, base_pose=base_pose)[..., col:col + 10]
    target = tau - rest
    equations = _Equations(A, target, 'payload parameters')
    sol = equations.solve(equations.weights(weights))
    x = sol.x
    projected = bool(np.linalg.eigvalsh(pseudo_inertia(x))[0] <= 0.0)
    if projected:   # the consistent fit, toward the estimate made consistent
        sigma = max(sol.sigma, CONSISTENT_NOISE_FLOOR * sol.rms)
        problem = _ConsistentProblem(sol.R / sigma, sol.z / sigma, x, [0], 10,
                                     np.sqrt(REGULARIZATION))
        x = problem.parameters(_minimise(problem, log_cholesky(problem.J_ref[0]),
                                         'identify_payload'))
    return link_payload(model, li, x, sol.covariance,
                        residual_rms=np.sqrt(np.mean((target - A @ x) ** 2, axis=0)),
                        condition=sol.condition, samples=tau.shape[0], projected=projected)


def link_payload(model, li, x, covariance, residual_rms, condition, samples, projected):
    """
    Return the :class:`Payload` of link ``li`` from its body's ten parameters ``x`` (10,).

    ``x``, ``covariance`` (10, 10): the payload's parameters in the frame of the body the
    link is fixed to (the regressor's columns of that body) and their covariance; both are
    moved to the link's frame, and the mass, centre of mass, inertia about it and the
    standard errors of the first two (to first order) read off.  The other fields as given.
    """
    T = pose_inverse(model.link_offset[li])   # body frame -> link frame: J_l = T J_b Tᵀ
    E = pseudo_inertia(np.eye(10))
    to_link = parameters_of(T @ E @ T.T).T
    p = to_link @ x
    cov = to_link @ covariance @ to_link.T
    m = p[0]
    c = p[1:4] / m
    S = pseudo_inertia(p)[:3, :3]   # about the link origin: I_o = tr(S) 1 - S
    I_c = np.trace(S) * np.eye(3) - S - m * (c @ c * np.eye(3) - np.outer(c, c))
    dc = np.hstack([-c[:, None] / m, np.eye(3) / m])   # ∂c/∂(m, h)
    return Payload(link=model.link_names[li], mass=float(m), com=c,
                   inertia=I_c[(0, 0, 0, 1, 1, 2), (0, 1, 2, 1, 2, 2)], parameters=p,
                   covariance=cov, mass_std=float(np.sqrt(cov[0, 0])),
                   com_std=np.sqrt(np.diag(dc @ cov[:4, :4] @ dc.T)),
                   residual_rms=residual_rms, condition=condition, samples=samples,
                   projected=projected)
