"""
Online payload estimation: recursive least squares on the ten parameters of what a link holds.

While the robot moves, each joint state ``(t, q, q̇, τ)`` (measured efforts ``τ``) refines an
estimate of the payload of one link, the rest of the robot known (the model, with its
URDF friction and an armature if given).  The payload is a rigid body added to the body the
link is fixed to, so its ten parameters ``θ`` (mass, first moment, inertia about the body
frame's origin: :data:`~liemb_ros.core.identification.PARAMETERS`) are the regressor's ten
columns of that body, and ``τ - τ_model = Y_body θ``.

**No accelerations** (the filtered dynamics): joint states carry no ``q̈``, and a
differentiated velocity is noisy and late.  Instead both sides are filtered by the same
first-order low-pass filter ``H = λ/(s + λ)`` (``λ = 2π cutoff``), and the ``q̈`` term is
written through the momentum ``p = M(q) q̇``: ``M q̈ = ṗ - Ṁ q̇``, so
``τ = ṗ + Y_r(q, q̇) π`` with ``Y_r π = C q̇ + g - Ṁ q̇`` (the terms without ``q̈``), and
``H[ṗ] = λ (p - H[p])`` with ``H[p]`` started at ``p(t₀)``.  Every filtered quantity is a
function of ``q`` and ``q̇`` only:

    H[τ] = (λ (Y_p - H[Y_p]) + H[Y_r]) π,   Y_p π = M(q) q̇,

exact in continuous time for any filter cut-off, without lag between the two sides (both
carry the filter's).  ``Y_p = Y(q, 0, q̇)`` without gravity and ``Y(q, q̇, 0)`` come from
:func:`~liemb_ros.core.identification.regressor`; ``Ṁ q̇`` is the derivative of
``Y_p(q, v)`` along ``q̇`` at fixed ``v = q̇``, by a central difference of step
``h |q̇|_∞ = 1e-4`` (truncation ~1e-8, round-off ~1e-12 relative).  The filter is
discretised exactly for inputs linear between samples (first-order hold), so any sample
rate and jitter is fine; a gap longer than half the filter's time constant restarts the
filters (the estimate keeps what it learned).  The same filter smooths the torque noise;
the cut-off trades that against how fast the estimate follows (the rows lag the motion by
about ``1/λ``, which does not bias them: both sides lag alike).

**Recursive least squares** in square-root information form: an upper-triangular ``R``
and ``z`` with information ``RᵀR`` and estimate ``R⁻¹ z``; each sample's ``nv`` rows are
stacked under them and re-triangularised by a QR (Householder) decomposition, so the
information stays positive definite to round-off (no covariance update to lose symmetry
or definiteness, as the textbook ``P`` form can).  **Forgetting** (``memory`` seconds:
factor ``f = exp(-dt/memory)`` per sample) is *stabilised* (Kulhavý and Zarrop, "On a
general concept of forgetting", Int. J. Control 58(4) (1993) 905–924): the information
forgotten is replaced by the prior's, ``RᵀR ← f RᵀR + (1 - f) R₀ᵀR₀ + AᵀA``, which limits
the covariance by the prior's however long the robot stands still (no wind-up) and lets
unexcited directions return slowly to the prior (no payload).  :meth:`reset` restarts from
the prior.

**Uncertainty**: the covariance is ``κ s² (RᵀR)⁻¹``, ``s²`` the residual variance of the
filtered rows (forgetting-weighted, ``nv`` rows a sample less 10 parameters), ``κ =
coth(λ dt / 2)`` the variance inflation of least squares with the first-order filter's
correlated residuals (lag-one correlation ``e^{-λ dt}``; regressors slow against the
filter), ``dt`` the mean sample interval.  **Physical consistency**: the pseudo-inertia
(:func:`~liemb_ros.core.pseudo_inertia.pseudo_inertia`) positive definite.
"""
from dataclasses import dataclass

import numpy as np

from .identification import reference_parameters, regressor
from .identification_fit import Payload, link_payload
from .pseudo_inertia import pseudo_inertia

#: the prior's standard deviations of the ten parameters, about zero (no payload), per 1 N m
#: of torque noise: mass [kg], first moment [kg m], inertia about the body origin [kg m²]
PRIOR_STD = (10.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0)
#: the largest ``h |q̇|_∞`` [rad or m] of the central difference of the momentum regressor
DIFFERENCE_STEP = 1e-4


@dataclass(frozen=True, eq=False)
class PayloadEstimate:
    """
    The estimator's current estimate (:meth:`PayloadEstimator.estimate`).

    ``payload``: a :class:`~liemb_ros.core.identification_fit.Payload` in the link's frame
    (mass, centre of mass, inertia about it, the ten parameters, their covariance, standard
    errors of mass and centre of mass; ``residual_rms`` the filtered torques' residual per
    joint, ``condition`` of the column-scaled information, ``samples`` used); its
    ``setting`` / ``node_parameters()`` are what the dynamics engine / node take.
    ``std`` (10,): standard errors of the ten parameters (link frame).  ``consistent``:
    the pseudo-inertia is positive definite (a real body has these parameters).
    ``excitation`` [N² m²]: the mean square torque, per joint and sample (forgetting-
    weighted), that a change of the parameters by one prior standard deviation
    (:data:`PRIOR_STD`) makes in the direction the data see least: the smallest eigenvalue
    of the data's information, the parameters scaled by the prior's, per row (0: nothing
    learned; at rest gravity shows only the mass and the horizontal first moment, 0 too).
    ``ready``: consistent and ``excitation`` at least the estimator's ``min_excitation``.
    """

    payload: Payload
    std: np.ndarray
    consistent: bool
    excitation: float
    ready: bool


class PayloadEstimator:
    """
    Recursive least squares on the payload of ``link`` from joint states with efforts.

    ``model``: fixed base, one position coordinate per velocity (the directional difference
    of the momentum adds ``h q̇`` to ``q``); ``link``: its name (not fixed to the base).
    ``cutoff`` [Hz]: the filter's (module docstring); ``memory`` [s]: the forgetting time
    constant (0: never forget); ``min_excitation``: what ``ready`` needs
    (:class:`PayloadEstimate`); ``friction``: subtract the URDF's viscous damping and
    Coulomb friction (``model.damping``, ``model.friction``) as part of the known torques;
    ``armature`` (nv,) or None: rotor inertias, known too.  Raises ValueError for arguments
    that cannot work.  :meth:`update` takes one sample; inputs that cannot be used are
    skipped and counted by reason (:attr:`skipped`), never raised.
    """

    def __init__(self, model, link, cutoff=2.0, memory=0.0, min_excitation=1e-3,
                 friction=False, armature=None):
        if model.floating or model.nq != model.nv:
            raise ValueError('payload estimation needs a fixed base and one position '
                             f'coordinate per velocity (robot {model.name!r})')
        li = model.link_index(link)
        body = int(model.link_body[li])
        if body < 0:
            raise ValueError(f'link {link!r} is fixed to the base: a payload there moves no '
                             'joint')
        if not (np.isfinite(cutoff) and cutoff > 0.0):
            raise ValueError(f'cutoff must be a finite number > 0 [Hz], got {cutoff}')
        for name, value in (('memory', memory), ('min_excitation', min_excitation)):
            if not (np.isfinite(value) and value >= 0.0):
                raise ValueError(f'{name} must be a finite number >= 0, got {value}')
        self.model, self.link_index = model, li
        self.cutoff, self.memory = float(cutoff), float(memory)
        self.min_excitation = float(min_excitation)
        self.friction = bool(friction)
        known = reference_parameters(model, self.friction, armature is not None)
        if armature is not None:
            armature = np.asarray(armature, dtype=float).ravel()
            if armature.shape != (model.nv,) or not np.all(np.isfinite(armature)):
                raise ValueError(f'armature must be {model.nv} finite values')
            known[-model.nv:] = armature
        self._armature = armature is not None
        # the regressor's columns -> the payload body's ten and the known torques' one
        self._K = np.zeros((known.size, 11))
        self._K[10 * body + np.arange(10), np.arange(10)] = 1.0
        self._K[:, 10] = known
        self._weightless = model.replace(gravity=np.zeros(3))   # Y(q, 0, v): M(q) v alone
        self._lam = 2.0 * np.pi * self.cutoff
        self._R0 = np.diag(1.0 / np.asarray(PRIOR_STD))
        self.reset()

    # -- state ------------------------------------------------------------------------------
    def reset(self):
        """Forget everything: the prior's information (no payload), filters restarted."""
        self._R = self._R0.copy()
        self._z = np.zeros(10)
        self._sse = self._rows_seen = 0.0      # forgetting-weighted residual sum, rows
        self._res2 = np.zeros(self.model.nv)   # ... per joint
        self._weight = 0.0
        self._dt = None                        # mean sample interval [s]
        self.samples = 0                       # samples used by the least squares
        self.restarts = 0                      # filter restarts (gaps, resets)
        self.skipped = {}                      # reason -> samples skipped
        self._filters = None

    def restart(self):
        """Restart the filters (next sample starts them); what was learned is kept."""
        self._filters = None

    def _skip(self, why):
        self.skipped[why] = self.skipped.get(why, 0) + 1
        return False

    # -- the rows ---------------------------------------------------------------------------
    def _regressor(self, model, q, qd, qdd):
        return regressor(model, q, qd, qdd, friction=self.friction,
                         armature=self._armature) @ self._K

    def _momentum(self, q, qd, zero):
        """``Y_p(q, q̇)`` (nv, 11): the momentum ``M(q) q̇``'s rows (without gravity)."""
        return self._regressor(self._weightless, q, zero, qd)

    def rows(self, q, qd):
        """
        Return the momentum rows ``Y_p`` and the rest ``Y_r`` (nv, 11) at ``(q, q̇)``.

        Columns: the payload's ten parameters, then the known robot's torques (its
        parameters' sum); ``Y_r = Y(q, q̇, 0) - Ṁ q̇`` (module docstring).
        """
        zero = np.zeros(self.model.nv)
        h = DIFFERENCE_STEP / max(np.abs(qd).max(), 1.0)
        dP = (self._momentum(q + h * qd, qd, zero)
              - self._momentum(q - h * qd, qd, zero)) / (2 * h)
        return self._momentum(q, qd, zero), self._regressor(self.model, q, qd, zero) - dP

    # -- one sample -------------------------------------------------------------------------
    def update(self, t, q, qd, tau):
        """
        Take a joint state: time ``t`` [s], ``q`` (nq,), ``q̇``, measured ``τ`` (nv,).

        Returns whether it was used; one that cannot be (wrong shapes, NaN or inf, time not
        after the last sample's) is counted in :attr:`skipped`.  The first sample after a
        (re)start only starts the filters.
        """
        try:
            t = float(t)
            q, qd, tau = (np.asarray(x, dtype=float).ravel() for x in (q, qd, tau))
        except (TypeError, ValueError):
            return self._skip('not numbers')
        nv = self.model.nv
        if q.shape != (nv,) or qd.shape != (nv,) or tau.shape != (nv,):
            return self._skip('wrong sizes')
        if not (np.isfinite(t) and np.all(np.isfinite(q)) and np.all(np.isfinite(qd))
                and np.all(np.isfinite(tau))):
            return self._skip('not finite')
        f = self._filters
        if f is not None and not t > f[0]:
            return self._skip('time not increasing')
        P, Rr = self.rows(q, qd)
        if f is not None and t - f[0] > 0.5 / self._lam:
            self.restarts += 1
            f = None
        if f is None:   # the filters start: H[Y_p] at Y_p, H[Y_r] and H[τ] at zero
            self._filters = (t, P, Rr, tau, P, np.zeros_like(Rr), np.zeros(nv))
            return True
        t0, P0, Rr0, tau0, zp, zr, zt = f
        dt = t - t0
        x = self._lam * dt
        a = np.exp(-x)
        k = -np.expm1(-x) / x           # (1 - a) / x
        b_new, b_old = 1.0 - k, k - a   # first-order hold: exact for inputs linear in t
        zp = a * zp + b_new * P + b_old * P0
        zr = a * zr + b_new * Rr + b_old * Rr0
        zt = a * zt + b_new * tau + b_old * tau0
        self._filters = (t, P, Rr, tau, zp, zr, zt)
        A = self._lam * (P - zp) + zr
        self._least_squares(A[:, :10], zt - A[:, 10], dt)
        return True

    def _least_squares(self, A, b, dt):
        """Add rows ``A θ = b``, the old information forgotten over ``dt`` (stabilised)."""
        f = np.exp(-dt / self.memory) if self.memory > 0.0 else 1.0
        r = b - A @ np.linalg.solve(self._R, self._z)   # before the update
        blocks = [np.column_stack((np.sqrt(f) * self._R, np.sqrt(f) * self._z))]
        if f < 1.0:
            blocks.append(np.column_stack((np.sqrt(1.0 - f) * self._R0, np.zeros(10))))
        blocks.append(np.column_stack((A, b)))
        T = np.linalg.qr(np.vstack(blocks), mode='r')
        self._R, self._z = T[:10, :10], T[:10, 10]
        self._sse = f * self._sse + T[10, 10] ** 2
        self._rows_seen = f * self._rows_seen + b.size
        self._res2 = f * self._res2 + r ** 2
        self._weight = f * self._weight + 1.0
        self._dt = dt if self._dt is None else self._dt + 0.01 * (dt - self._dt)
        self.samples += 1

    # -- the estimate -----------------------------------------------------------------------
    def estimate(self):
        """Return the :class:`PayloadEstimate` now (the prior's, no payload, before data)."""
        theta = np.linalg.solve(self._R, self._z)
        Ri = np.linalg.inv(self._R)
        dof = self._rows_seen - 10.0
        s2 = self._sse / dof if dof > 0.0 else 1.0
        kappa = 1.0 / np.tanh(0.5 * self._lam * self._dt) if self._dt else 1.0
        cov = kappa * s2 * (Ri @ Ri.T)
        scaled = self._R / self._R0.diagonal()   # R diag(prior std): the prior's is 1
        sv = np.linalg.svd(scaled, compute_uv=False)
        excitation = max(float(sv[-1] ** 2) - 1.0, 0.0) / max(self._rows_seen, 1.0)
        cols = np.linalg.norm(self._R, axis=0)
        sv_cols = np.linalg.svd(self._R / cols, compute_uv=False)
        consistent = bool(np.linalg.eigvalsh(pseudo_inertia(theta))[0] > 0.0)
        residual = np.sqrt(self._res2 / self._weight) if self._weight else np.zeros_like(
            self._res2)
        with np.errstate(divide='ignore', invalid='ignore'):   # no mass: no centre of mass
            payload = link_payload(self.model, self.link_index, theta, cov, residual,
                                   float(sv_cols[0] / sv_cols[-1]), self.samples, False)
        std = np.sqrt(np.diag(payload.covariance))
        return PayloadEstimate(payload, std, consistent, excitation,
                               consistent and excitation >= self.min_excitation)
