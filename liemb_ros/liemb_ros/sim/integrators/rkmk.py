"""
Munthe-Kaas Runge-Kutta (RKMK) steps on a state space ``G x R^k`` ([MT14] App. B).

For ``y' = y f(t, y)`` (``f`` returns the left-trivialised velocity in algebra coordinates,
e.g. body-fixed twists on SE(3), mixed velocities on SO(3)xR^3, plain derivatives on vector
factors), one explicit s-stage step of size ``h`` is ([MT14] eq. (83), [MT13] eq. (36)):

    Psi_1 = 0,  Psi_j = h sum_{l<j} a_jl k_l,
    k_j = dexp^-1_{-Psi_j} f(t + c_j h, y exp(Psi_j)),
    y_new = y exp(Phi),  Phi = h sum_j b_j k_j.

On a vector factor this is the classical Runge-Kutta step; on a group factor the update is
a right multiplication by the exact exponential, so every stage and the result stay on the
group (no re-orthonormalisation) and a motion confined to a subgroup stays in it
([MT14] Corollary 1).  With an embedded ``b_hat`` the local error estimate is the
algebra vector ``h sum_j (b_j - b_hat_j) k_j`` (both candidate solutions are ``y exp(.)``).
Theory: docs/theory/integrators.md.
"""
import math

import numpy as np

from .spaces import VECTOR, exp_mul_kernel
from .tableaus import RK4


class StepSizeError(ValueError):
    """A stage rotated a body by more than :data:`MAX_STEP_ANGLE`: ``dexp^-1`` nears its pole."""


class IntegrationError(FloatingPointError):
    """The solution became non-finite, or the adaptive step size underflowed."""


#: Largest rotation angle [rad] of a stage increment ``Psi_j`` or of the update ``Phi``.
#: ``dexp^-1_{-Psi}`` ([MT14] eqs. (44), (56)) is analytic for ``|Psi_omega| < 2 pi`` and
#: singular at ``2 pi`` (``det dexp = 2 (1 - cos t) / t^2``; not at ``pi`` as [MT14] App. A.4
#: says, docs/theory/errata.md#mt14-a4-singularity); the
#: guard keeps a 10 % margin, where ``det dexp`` is still 0.012 and the coefficients of
#: ``dexp^-1`` are below 0.3.  ``Stepper(..., max_angle=None)`` switches the guard off.
MAX_STEP_ANGLE = 0.9 * 2.0 * math.pi


class Solution:
    """
    Result of :func:`integrate` / :func:`integrate_adaptive`.

    ``t`` (N,), ``y`` (N, size) states at the saved times, ``space``, and the counters
    ``n_steps`` (accepted), ``n_rejected`` and ``n_f`` (right-hand side evaluations).
    """

    def __init__(self, space, t, y, n_steps, n_rejected, n_f):
        self.space = space
        self.t = np.asarray(t, dtype=float)
        self.y = np.asarray(y, dtype=float)
        self.n_steps = n_steps
        self.n_rejected = n_rejected
        self.n_f = n_f

    def __repr__(self):
        return (f'Solution({self.t.size} states, t in [{self.t[0]:g}, {self.t[-1]:g}], '
                f'{self.n_steps} steps, {self.n_rejected} rejected, {self.n_f} f-evaluations)')


class Stepper:
    """
    Reusable RKMK stepper: ``Stepper(space, f, tableau).step(t, y, h) -> y_new``.

    Keeps its stage buffers between calls (the fast path for a simulator loop).
    ``step_with_error`` also returns the local error estimate (algebra vector); it needs a
    tableau with ``b_hat``.  ``n_f`` counts the evaluations of ``f``; ``last_angle`` is the
    largest rotation angle of the last step's stages and update.  ``max_angle`` (default
    :data:`MAX_STEP_ANGLE`) is the step guard of :meth:`step`; ``None`` switches it off, so
    that a too-large step runs on (and, where the scheme diverges, ends in
    :class:`IntegrationError` once the state is no longer finite).
    """

    def __init__(self, space, f, tableau=RK4, max_angle=MAX_STEP_ANGLE):
        self.space = space
        self.f = f
        self.tableau = tableau
        self.max_angle = max_angle
        self.last_angle = 0.0
        self.K = np.zeros((tableau.stages, space.dim))
        self._psi = np.zeros(space.dim)
        self._ystage = np.empty(space.size)
        self._nonzero = [np.nonzero(tableau.a[j, :j])[0] for j in range(tableau.stages)]
        self._weights = [tableau.a[j, self._nonzero[j]] for j in range(tableau.stages)]
        # a vector space needs neither exp nor dexp^-1: y exp(psi) = y + psi, dexp^-1 = I
        self._flat = bool(np.all(space.kinds == VECTOR))
        self.n_f = 0

    def _stages(self, t, y, h):
        tab = self.tableau
        space = self.space
        K = self.K
        biggest = 0.0
        for j in range(tab.stages):
            nz = self._nonzero[j]
            if nz.size == 0:
                K[j] = self.f(t + tab.c[j] * h, y)
                continue
            if nz.size == 1:  # e.g. every stage of classical RK4: no gather, no temporary
                psi = np.multiply(K[nz[0]], h * self._weights[j][0], out=self._psi)
            else:
                psi = np.dot(h * self._weights[j], K[nz], out=self._psi)
            yj = self._ystage
            if self._flat:
                np.add(y, psi, out=yj)
                K[j] = self.f(t + tab.c[j] * h, yj)
                continue
            biggest = max(biggest, _exp_mul_angle(space, y, psi, yj))
            v = self.f(t + tab.c[j] * h, yj)
            space.dexpinv_neg(psi, v, out=K[j])
        self.n_f += tab.stages
        return biggest

    def _finish(self, y, h, weights, biggest):
        phi = h * (weights @ self.K)
        if self._flat:
            return y + phi, biggest
        y1 = np.empty(self.space.size)
        biggest = max(biggest, _exp_mul_angle(self.space, y, phi, y1))
        return y1, biggest

    def step(self, t, y, h):
        """
        Return ``y exp(Phi)`` after one step of size ``h`` from ``(t, y)``.

        Raises :class:`StepSizeError` if a stage or the update rotates a group factor by
        more than ``max_angle`` (the step is too large for the motion: ``dexp^-1`` is
        singular at 2 pi), :class:`IntegrationError` if the result is not finite.
        """
        biggest = self._stages(t, y, h)
        y1, biggest = self._finish(y, h, self.tableau.b, biggest)
        self.last_angle = biggest
        if self.max_angle is not None and biggest > self.max_angle:
            raise StepSizeError(f'step h={h:g} at t={t:g} rotates by {biggest:.3g} rad > '
                                f'{self.max_angle:.3g} rad (dexp^-1 is singular at 2 pi); '
                                'reduce the step size')
        if not np.isfinite(y1).all():
            raise IntegrationError(f'non-finite state after the step at t={t:g} (h={h:g})')
        return y1

    def step_with_error(self, t, y, h):
        """
        Return ``(y_new, err, angle)``: the new state, the error vector and the largest angle.

        ``err = h sum_j (b_j - b_hat_j) k_j`` (algebra coordinates); no exception on large
        angles or non-finite values: the adaptive driver rejects such steps.
        """
        tab = self.tableau
        if not tab.adaptive:
            raise ValueError(f'{tab!r} has no embedded pair; use an adaptive tableau')
        biggest = self._stages(t, y, h)
        y1, biggest = self._finish(y, h, tab.b, biggest)
        err = h * ((tab.b - tab.b_hat) @ self.K)
        return y1, err, biggest


def _exp_mul_angle(space, y, psi, out):
    """Write ``y exp(psi)`` into ``out``; return the largest rotation angle of ``psi``."""
    return exp_mul_kernel(space.kinds, space.yoff, space.aoff, space.dims, y, psi, out)


def step(space, f, t, y, h, tableau=RK4):
    """
    Return the state after one RKMK step of size ``h`` (see :class:`Stepper`).

    ``space``: a :mod:`~liemb_ros.sim.integrators.spaces` space; ``f(t, y)`` returns the
    velocity (length ``space.dim``); ``y`` a flat state (length ``space.size``).
    """
    return Stepper(space, f, tableau).step(t, y, h)


def integrate(space, f, y0, t_span, h, tableau=RK4, save_every=1, callback=None):
    """
    Integrate with the fixed step ``h`` from ``t_span[0]`` to ``t_span[1]``.

    The last step is shortened to land on ``t_span[1]``.  States are saved every
    ``save_every`` steps and at the end; ``callback(t, y)``, if given, is called after every
    step.  Returns a :class:`Solution`.
    """
    t0, t1 = float(t_span[0]), float(t_span[1])
    if not h > 0 or not t1 >= t0:
        raise ValueError(f'need h > 0 and t_end >= t0, got h={h}, t_span={t_span}')
    y = np.array(y0, dtype=float)
    if y.shape != (space.size,):
        raise ValueError(f'y0 must have shape ({space.size},) for {space!r}, got {y.shape}')
    stepper = Stepper(space, f, tableau)
    n = max(int(math.ceil((t1 - t0) / h - 1e-9)), 0)
    ts, ys = [t0], [y.copy()]
    for i in range(n):
        t = t0 + i * h
        hi = min(h, t1 - t)
        y = stepper.step(t, y, hi)
        if callback is not None:
            callback(t + hi, y)
        if (i + 1) % save_every == 0 or i == n - 1:
            ts.append(t + hi if i < n - 1 else t1)
            ys.append(y.copy())
    return Solution(space, ts, ys, n, 0, stepper.n_f)


def integrate_adaptive(space, f, y0, t_span, tableau, rtol=1e-6, atol=1e-9, h0=None,
                       h_max=np.inf, h_min=1e-12, callback=None, max_steps=1_000_000):
    """
    Integrate with step-size control by an embedded pair (e.g. ``DORMAND_PRINCE``).

    The error ``err = h sum (b - b_hat)_j k_j`` is weighed by ``space.error_scale(y, y_new,
    atol, rtol)``; a step is accepted when the RMS norm is at most 1 and no rotation exceeds
    :data:`MAX_STEP_ANGLE`.  New step ``h * min(5, max(0.2, 0.9 err^(-1/(q+1))))``, ``q``
    the lower order of the pair.  Every accepted state is saved; ``callback(t, y)`` after
    each.  Raises :class:`IntegrationError` if ``h`` falls below ``h_min`` or ``max_steps``
    is exceeded.
    """
    if not tableau.adaptive:
        raise ValueError(f'{tableau!r} has no embedded pair')
    t, t1 = float(t_span[0]), float(t_span[1])
    y = np.array(y0, dtype=float)
    if y.shape != (space.size,):
        raise ValueError(f'y0 must have shape ({space.size},) for {space!r}, got {y.shape}')
    stepper = Stepper(space, f, tableau)
    q = min(tableau.order, tableau.embedded_order)
    h = float(h0) if h0 is not None else min(h_max, 1e-3 * max(abs(t1 - t), 1.0))
    ts, ys = [t], [y.copy()]
    n_acc = n_rej = 0
    while t < t1:
        if n_acc + n_rej >= max_steps:
            raise IntegrationError(f'more than {max_steps} steps before t={t1:g} (at t={t:g})')
        h = min(h, h_max, t1 - t)
        y1, err, angle = stepper.step_with_error(t, y, h)
        sc = space.error_scale(y, y1, atol, rtol)
        e = math.sqrt(np.mean((err / sc) ** 2)) if err.size else 0.0
        ok = np.isfinite(e) and np.isfinite(y1).all() and angle <= MAX_STEP_ANGLE
        if ok and e <= 1.0:
            t = t + h if t + h < t1 else t1
            y = y1
            n_acc += 1
            ts.append(t)
            ys.append(y.copy())
            if callback is not None:
                callback(t, y)
            fac = 5.0 if e == 0.0 else min(5.0, max(0.2, 0.9 * e ** (-1.0 / (q + 1))))
        else:
            n_rej += 1
            fac = 0.2 if not ok else min(1.0, max(0.2, 0.9 * e ** (-1.0 / (q + 1))))
        h *= fac
        if h < h_min and t < t1:
            raise IntegrationError(f'step size {h:.3g} below h_min={h_min:g} at t={t:g}')
    return Solution(space, ts, ys, n_acc, n_rej, stepper.n_f)
