"""
Excitation trajectories for identification: a finite Fourier series per joint, optimised.

A least-squares fit of the base parameters (:mod:`liemb_ros.core.identification_fit`) is
only as good as the recording: the stacked base regressor must be well conditioned.
:func:`excitation_trajectory` finds a periodic joint motion whose stacked base regressor
has a small condition number and that stays within the robot's limits (Swevers, Ganseman,
Tükel, De Schutter and Van Brussel, "Optimal robot excitation and identification", IEEE
Transactions on Robotics and Automation 13(5) (1997) 730–740, §III):

**The series** (:class:`FourierTrajectory`), per joint ``i``, ``K`` harmonics of the base
frequency ``ω_f = 2π / T_f`` (``T_f`` the period, s)::

    q_i(t)  = q0_i + Σ_l  a_il/(ω_f l) sin(ω_f l t) - b_il/(ω_f l) cos(ω_f l t)
    q̇_i(t)  =        Σ_l  a_il cos(ω_f l t) + b_il sin(ω_f l t)
    q̈_i(t)  =        Σ_l  ω_f l (-a_il sin(ω_f l t) + b_il cos(ω_f l t))

(``l = 1..K``; ``a``, ``b`` in rad/s or m/s), periodic, its derivatives analytic.  **At
rest at q0**: the coefficients are held to ``Σ_l b_il / l = 0`` (``q(0) = q0``),
``Σ_l a_il = 0`` (``q̇(0) = 0``) and ``Σ_l l b_il = 0`` (``q̈(0) = 0``), so the motion
starts and, after any whole number of periods, ends at rest at its offset ``q0``: the
robot enters it from rest with no jump in position, velocity or acceleration.  The
optimiser works in the ``2K - 3`` coordinates per joint that satisfy these exactly
(:func:`rest_basis`; ``K >= 2``), and on ``q0``.

**The criterion**: ``cond`` of the base regressor (:class:`~.identification.BaseParameters`;
friction and armature columns optional) stacked over ``samples`` times evenly spread over
one period (at the middles of ``samples`` equal intervals: not at the rest at ``t = 0``,
where a Coulomb column's ``sign(q̇)`` would be round-off's; more periods repeat the same
rows), each column scaled to unit norm: the
``condition`` that :func:`~.identification_fit.identify` reports for an unweighted fit of a
recording of it, and independent of the units of the parameters.  Minimised as
``log cond``.

**The limits**, each shrunk by the fraction ``margin`` (default :data:`MARGIN`) about its
middle: position within ``[lower, upper]`` (joints with finite limits), ``|q̇| <= velocity``
and ``|τ_ff| <= effort`` (URDF ``<limit>``; a limit that is not finite and positive is not
imposed), optionally ``|q̈| <= acceleration``.  ``τ_ff`` is the torque the computed-torque
law feeds forward on the trajectory
(:func:`~liemb_ros.control.laws.computed_torque` with ``e = 0``), bounded:
``|ID(q, q̇, q̈) + D q̇| + F`` with ``D`` the URDF damping and ``F`` its Coulomb friction
(the law's ``F tanh(·)`` at its largest), so the dynamics node's trajectory check
(:func:`~liemb_ros.control.limits.check_limits`) accepts what is found here.  The margin is
what is left for the model's error (the reason to identify it).

**The optimiser**: scipy's SLSQP, because the problem is small and smooth (``n (2K - 2)``
variables; a few thousand inequality constraints at the constraint times), SLSQP takes
the constraints' Jacobians as dense matrices (given here exactly: the position, velocity
and acceleration constraints are linear in the coefficients; the torques' through
:func:`~liemb_ros.core.eom.inverse_dynamics_derivatives` and the mass matrix) and
converges in tens of iterations; trust-constr's interior point method needs many more
function evaluations at this size.  The criterion's gradient is by finite differences
(one batch regressor per variable).  The constraints are imposed at ``constraint_samples``
times per period; the result is then checked at every :data:`CHECK_STEP` over a period:
no quantity may use more than ``1 - margin / 2`` of its limit there (half the margin
for what passes between the constraint times), else the worst times join the
constraint times and the problem is solved again (at most :data:`REFINEMENTS` times).
Each start is a random feasible one (``seed``): random coefficients scaled down until
every limit holds; the best of ``starts`` runs is kept.
"""
import math
import sys
import time
from dataclasses import dataclass

import numpy as np

from .dynamics import inverse_dynamics, mass_matrix
from .eom import inverse_dynamics_derivatives
from .identification import base_parameters, regressor

#: the fraction by which every limit is shrunk about its middle (positions, velocities,
#: accelerations, torques): what is left for the model's error
MARGIN = 0.05
#: the spacing [s] at which a result is checked against its limits (the 1 kHz control loop's)
CHECK_STEP = 1e-3
#: how often the constraint times are refined when the dense check finds a limit exceeded
REFINEMENTS = 5
#: the constraint times per period and harmonic (by default): between them a limit is
#: passed by about ``h² max|q⃛| / 8`` (``h`` their spacing), well within half the margin
CONSTRAINT_SAMPLES = 40
#: SLSQP's tolerance on ``log cond`` (a relative change of the condition number)
FTOL = 1e-6
#: a constraint this far below zero still counts as met (SLSQP's result is on the active
#: ones to round-off)
FEASIBLE_TOL = 1e-9
#: ``log cond`` of a regressor with a zero column (cond infinite): far above any other
BAD_COST = 1e3
#: the most halvings of a random start's amplitude in search of a feasible one
START_HALVINGS = 40


def rest_basis(harmonics):
    """
    Return ``N`` (2K, 2K - 3): coefficients ``(a_1..a_K, b_1..b_K) = N z`` at rest at ``q0``.

    An orthonormal basis of the coefficients with ``Σ b_l / l = 0``, ``Σ a_l = 0`` and
    ``Σ l b_l = 0`` (module docstring): ``q(0) = q0``, ``q̇(0) = q̈(0) = 0`` for every
    ``z``.  ``harmonics`` ``K >= 2``.
    """
    K = int(harmonics)
    if K < 2:
        raise ValueError(f'harmonics must be at least 2 (rest at q0 takes 3 of the 2K '
                         f'coefficients of a joint), got {harmonics}')
    lk = np.arange(1.0, K + 1)
    C = np.zeros((3, 2 * K))
    C[0, K:] = 1.0 / lk
    C[1, :K] = 1.0
    C[2, K:] = lk
    return np.linalg.svd(C)[2][3:].T


def fourier_basis(t, harmonics, period):
    """
    Return ``(Bq, Bqd, Bqdd)``, each (T, 2K): ``q - q0 = Bq c``, ``q̇ = Bqd c``, ``q̈ = Bqdd c``.

    ``c = (a_1..a_K, b_1..b_K)`` of one joint (module docstring), ``t`` (T,) times [s],
    ``period`` ``T_f`` [s].
    """
    t = np.asarray(t, dtype=float).reshape(-1)
    w = 2.0 * math.pi / period * np.arange(1.0, harmonics + 1)   # ω_f l
    s, c = np.sin(np.outer(t, w)), np.cos(np.outer(t, w))
    return (np.hstack((s / w, -c / w)), np.hstack((c, s)), np.hstack((-w * s, w * c)))


@dataclass(frozen=True, eq=False)
class FourierTrajectory:
    """
    A finite Fourier series per joint (Swevers et al. 1997), periodic with ``period`` [s].

    ``q0`` (n,): the offset [rad or m]; ``a``, ``b`` (n, K): the coefficients [rad/s or m/s]
    of the module docstring's series.  :meth:`states` gives ``q``, ``q̇``, ``q̈`` at any
    times, :meth:`points` the waypoints of a trajectory file.
    """

    q0: np.ndarray
    a: np.ndarray
    b: np.ndarray
    period: float

    @property
    def harmonics(self):
        """Return the number of harmonics ``K``."""
        return self.a.shape[1]

    def states(self, t):
        """Return ``(q, q̇, q̈)``, each (T, n), at times ``t`` (T,) [s] (analytic)."""
        Bq, Bqd, Bqdd = fourier_basis(t, self.harmonics, self.period)
        c = np.hstack((self.a, self.b)).T     # (2K, n)
        return self.q0 + Bq @ c, Bqd @ c, Bqdd @ c

    def points(self, duration, step, lead=0.0):
        """
        Return the waypoints ``(times, q, q̇, q̈)`` of ``duration`` s of motion, one per ``step``.

        ``times`` (P,) are ``time_from_start``: the motion's ``t = 0`` at ``lead`` [s] (the
        time a trajectory controller takes from its state to the first point, the rest
        at ``q0``), then every ``step`` to ``lead + duration`` (``step`` rounded down so
        that the last point lands there).  ``duration``: a whole number of periods, for
        the motion to end at rest at ``q0``.
        """
        periods = duration / self.period
        if duration <= 0.0 or abs(periods - round(periods)) > 1e-9 * max(periods, 1.0):
            raise ValueError(f'duration must be a positive whole number of periods '
                             f'({self.period:g} s), got {duration:g} s')
        if not step > 0.0:
            raise ValueError(f'step must be positive, got {step:g}')
        if not lead >= 0.0:
            raise ValueError(f'lead must be zero or positive, got {lead:g}')
        t = np.linspace(0.0, duration, int(math.ceil(duration / step - 1e-9)) + 1)
        q, qd, qdd = self.states(t)
        return lead + t, q, qd, qdd


@dataclass(frozen=True, eq=False)
class Excitation:
    """
    An optimised excitation trajectory (:func:`excitation_trajectory`).

    ``trajectory``: the :class:`FourierTrajectory`; ``joint_names``: the model's, its
    columns' order; ``condition``: ``cond`` of its stacked base regressor (columns
    scaled); ``start_condition``: that of the random feasible start of the best run;
    ``base``: the :class:`~.identification.BaseParameters` of the criterion; ``times``:
    the regressor's sample times over one period [s]; ``usage``: for each of
    ``'position'``, ``'velocity'``, ``'acceleration'``, ``'effort'`` the largest fraction
    of each joint's limit used at every :data:`CHECK_STEP` over a period (n,); position:
    the distance from the middle of its range over half the range; nan where not
    limited); ``limits``: the same keys, each joint's limit (position: (n, 2)); ``margin``;
    ``iterations`` (all runs), ``seconds`` (the optimisation's wall time), ``starts``.
    """

    trajectory: FourierTrajectory
    joint_names: tuple
    condition: float
    start_condition: float
    base: object
    times: np.ndarray
    usage: dict
    limits: dict
    margin: float
    iterations: int
    seconds: float
    starts: int

    def text(self):
        """Return the condition numbers and each joint's use of its limits as a table."""
        w = max(len(name) for name in self.joint_names + ('joint',)) + 2
        lines = [f'condition number of the stacked base regressor ({self.base.count} base '
                 f'parameters, {self.times.size} samples, columns scaled): '
                 f'{self.condition:.4g} (random feasible start: {self.start_condition:.4g})',
                 f'limits used (max over a period at {CHECK_STEP * 1e3:g} ms, each limit '
                 f'shrunk by a margin of {100 * self.margin:g} %):',
                 f"{'joint':<{w}}{'position':>10}{'velocity':>10}{'accel.':>10}{'effort':>10}"]
        keys = ('position', 'velocity', 'acceleration', 'effort')
        for j, name in enumerate(self.joint_names):
            cells = ['-' if not np.isfinite(self.usage[k][j]) else
                     f'{100 * self.usage[k][j]:.1f} %' for k in keys]
            lines.append(f'{name:<{w}}' + ''.join(f'{c:>10}' for c in cells))
        return '\n'.join(lines)


@dataclass
class _Problem:
    """The optimisation's fixed parts: model, bases at the sample times, limits."""

    model: object
    base: object
    K: int
    period: float
    N: np.ndarray                      # rest_basis (2K, m)
    cost_t: np.ndarray                 # the regressor's sample times (S,)
    lo: np.ndarray                     # shrunk position limits (n,), -inf/inf: none
    hi: np.ndarray
    vmax: np.ndarray                   # shrunk limits (n,), inf: none
    amax: np.ndarray
    emax: np.ndarray
    amax0: np.ndarray                  # the acceleration limits unshrunk (n,), inf: none
    friction: bool
    armature: bool

    @property
    def n(self):
        """Return the number of joints."""
        return self.model.nq

    @property
    def m(self):
        """Return the free coefficients per joint, ``2K - 3``."""
        return self.N.shape[1]

    def bases(self, t):
        """Return ``(Pq, Pqd, Pqdd)``, each (T, m): the series' bases in the rest coordinates."""
        return tuple(B @ self.N for B in fourier_basis(t, self.K, self.period))

    def split(self, x):
        """Return ``q0`` (n,) and ``Z`` (n, m) of the variables ``x``."""
        return x[:self.n], x[self.n:].reshape(self.n, self.m)

    def states(self, x, P):
        """Return ``(q, q̇, q̈)`` (T, n) of ``x`` at the times of bases ``P``."""
        q0, Z = self.split(x)
        return q0 + P[0] @ Z.T, P[1] @ Z.T, P[2] @ Z.T

    def trajectory(self, x):
        """Return the :class:`FourierTrajectory` of the variables ``x``."""
        q0, Z = self.split(x)
        c = Z @ self.N.T
        return FourierTrajectory(q0.copy(), c[:, :self.K].copy(), c[:, self.K:].copy(),
                                 self.period)

    def condition(self, x, P):
        """
        Return ``cond`` of the scaled stacked base regressor at the bases ``P``.

        From the eigenvalues of its Gram matrix (``cond = sqrt(λ_max / λ_min)``, columns
        scaled to unit norm): a tenth of the SVD's time at 50 columns, and exact to
        ``cond² ε``, well below the conditions met here.
        """
        Y = regressor(self.model, *self.states(x, P), friction=self.friction,
                      armature=self.armature)
        A = self.base.regressor(Y).reshape(-1, self.base.count)
        G = A.T @ A
        d = np.sqrt(np.diag(G))
        if not np.all(d > 0.0):
            return math.inf
        lam = np.linalg.eigvalsh(G / np.outer(d, d))
        return math.sqrt(lam[-1] / lam[0]) if lam[0] > 0.0 else math.inf

    def effort(self, q, qd, qdd):
        """Return ``ID(q, q̇, q̈) + D q̇`` (T, n) (module docstring; ``F`` is added apart)."""
        return inverse_dynamics(self.model, q, qd, qdd) + self.model.damping * qd

    def constraints(self, x, P):
        """
        Return the constraint values ``g(x) >= 0`` at bases ``P`` and their Jacobian.

        Rows: per limited quantity and joint, ``limit - value`` and ``limit + value`` (for
        positions ``hi - q`` and ``q - lo``) at every time.
        """
        n, m = self.n, self.m
        q, qd, qdd = self.states(x, P)
        T = q.shape[0]
        values, jacs = [], []

        def linear(value, Pk, upper, lower, joints):
            for j in joints:
                J = np.zeros((T, x.size))
                J[:, n + j * m:n + (j + 1) * m] = Pk
                if Pk is P[0]:
                    J[:, j] = 1.0
                values.extend((upper[j] - value[:, j], value[:, j] - lower[j]))
                jacs.extend((-J, J))
        linear(q, P[0], self.hi, self.lo, np.flatnonzero(np.isfinite(self.lo)))
        linear(qd, P[1], self.vmax, -self.vmax, np.flatnonzero(np.isfinite(self.vmax)))
        linear(qdd, P[2], self.amax, -self.amax, np.flatnonzero(np.isfinite(self.amax)))
        limited = np.flatnonzero(np.isfinite(self.emax))
        if limited.size:
            tau = self.effort(q, qd, qdd)
            dq, dqd = inverse_dynamics_derivatives(self.model, q, qd, qdd)
            dqd = dqd + np.diag(self.model.damping)
            M = mass_matrix(self.model, q)
            # dτ_k/dZ[j] = ∂τ/∂q[:, j] Pq[k] + ∂τ/∂q̇[:, j] Pq̇[k] + M[:, j] Pq̈[k]
            dZ = (dq[..., None] * P[0][:, None, None, :] + dqd[..., None]
                  * P[1][:, None, None, :] + M[..., None] * P[2][:, None, None, :])
            J = np.concatenate((dq, dZ.reshape(T, n, n * m)), axis=2)   # (T, n, x.size)
            for j in limited:
                room = self.emax[j] - self.model.friction[j]
                values.extend((room - tau[:, j], room + tau[:, j]))
                jacs.extend((-J[:, j], J[:, j]))
        return np.concatenate(values), np.vstack(jacs)

    def fractions(self, x, t):
        """
        Return each quantity's fraction of its (unshrunk) limit at times ``t``, (T, n) each.

        Keys ``'position'`` (the distance from the middle of the range over half the
        range), ``'velocity'``, ``'acceleration'``, ``'effort'`` (``(|ID + D q̇| + F) /
        effort``); nan where a joint has no such limit.
        """
        model = self.model
        q, qd, qdd = self.states(x, self.bases(t))
        mid, half = 0.5 * (model.upper + model.lower), 0.5 * (model.upper - model.lower)
        with np.errstate(invalid='ignore', divide='ignore'):
            used = {'position': np.abs(q - mid) / half,
                    'velocity': np.abs(qd) / model.velocity_limit,
                    'acceleration': np.abs(qdd) / self.amax0,
                    'effort': (np.abs(self.effort(q, qd, qdd)) + model.friction)
                    / model.effort_limit}
        for key, limit in (('position', self.lo), ('velocity', self.vmax),
                           ('acceleration', self.amax), ('effort', self.emax)):
            used[key] = np.where(np.isfinite(limit), used[key], math.nan)
        return used


def _limits(model, acceleration, margin):
    """Return the shrunk ``lo, hi, vmax, amax, emax`` and the unshrunk ``amax`` (n,) each."""
    n = model.nq
    keep = 1.0 - margin
    finite = np.isfinite(model.lower) & np.isfinite(model.upper) & (model.upper > model.lower)
    mid, half = 0.5 * (model.upper + model.lower), 0.5 * (model.upper - model.lower)
    lo = np.where(finite, mid - keep * half, -math.inf)
    hi = np.where(finite, mid + keep * half, math.inf)

    def rate(limit):
        limit = np.broadcast_to(np.asarray(limit, dtype=float), (n,))
        return np.where(np.isfinite(limit) & (limit > 0.0), limit, math.inf)
    if acceleration is None:
        amax = np.full(n, math.inf)
    else:
        amax = np.asarray(acceleration, dtype=float)
        if amax.shape not in ((), (n,)) or not np.all(amax > 0.0):
            raise ValueError(f'acceleration must be one positive value or one per joint '
                             f'({n}), got {np.asarray(acceleration).tolist()}')
        amax = rate(amax)
    return (lo, hi, keep * rate(model.velocity_limit), keep * amax,
            keep * rate(model.effort_limit), amax)


def _feasible(problem, x, P, tol=0.0):
    """Return whether every constraint holds at ``x`` at the bases ``P`` (within ``tol``)."""
    return bool(np.all(problem.constraints(x, P)[0] >= -tol))


def _random_start(problem, rng, P):
    """
    Return a random feasible start: ``q0`` at the middle of the range, random ``Z`` scaled.

    ``Z`` standard normal, scaled so that the largest velocity is the smallest velocity
    limit (or 1), then halved until every constraint holds at ``P``.
    """
    n, m = problem.n, problem.m
    lo, hi = problem.lo, problem.hi
    q0 = np.where(np.isfinite(lo), 0.5 * (lo + hi), 0.0)
    Z = rng.standard_normal((n, m))
    x = np.concatenate((q0, Z.ravel()))
    qd = problem.states(x, P)[1]
    vref = np.min(problem.vmax) if np.isfinite(problem.vmax).any() else 1.0
    Z *= vref / max(np.abs(qd).max(), 1e-12)
    for _ in range(START_HALVINGS):
        x = np.concatenate((q0, Z.ravel()))
        if _feasible(problem, x, P):
            return x
        Z *= 0.5
    raise ValueError('no feasible start: the robot at rest at the middle of its joint '
                     'ranges already exceeds an effort limit (with the margin)')


def excitation_trajectory(model, harmonics=5, period=10.0, samples=100, friction=False,
                          armature=False, acceleration=None, margin=MARGIN,
                          constraint_samples=None, starts=1, seed=0, maxiter=200,
                          progress=False):
    """
    Optimise an excitation trajectory of ``model`` (module docstring): an :class:`Excitation`.

    ``harmonics`` ``K`` (>= 2) and ``period`` ``T_f`` [s] of the series; ``samples``: the
    regressor's sample times over a period (at least enough rows for the base parameters);
    ``friction``, ``armature``: include those columns of the regressor
    (:func:`~.identification.regressor`); ``acceleration``: a limit on ``|q̈|`` [rad/s² or
    m/s²], one or one per joint (None: none); ``margin``: every limit shrunk by this
    fraction (0 < margin < 1; at most half of it is used between the constraint times, module
    docstring); ``constraint_samples``: the constraint times per period (default
    ``max(samples, CONSTRAINT_SAMPLES K)``); ``starts`` random feasible starts from ``seed``
    (the best run is kept); ``maxiter``: SLSQP's iterations per run; ``progress``: a tqdm
    bar on stderr.  Fixed-base models without coupled (mimic) coordinates.  Raises
    ValueError on bad arguments, when no feasible start exists, or when the limits still
    fail the dense check after :data:`REFINEMENTS` refinements.
    """
    if model.floating or model.nq != model.nv:
        why = 'a floating base' if model.floating else 'coupled (mimic) coordinates'
        raise ValueError(f"excitation needs a fixed-base robot with one coordinate per "
                         f"joint; '{model.name}' has {why}")
    if not (math.isfinite(period) and period > 0.0):
        raise ValueError(f'period must be positive, got {period}')
    if not 0.0 < margin < 1.0:
        raise ValueError(f'margin must be in (0, 1), got {margin}')
    if int(starts) < 1 or int(maxiter) < 1:
        raise ValueError(f'starts and maxiter must be at least 1, got {starts}, {maxiter}')
    base = base_parameters(model, friction=friction, armature=armature)
    if samples * model.nv < base.count:
        raise ValueError(f'{samples} samples give {samples * model.nv} rows for '
                         f'{base.count} base parameters: give at least '
                         f'{-(-base.count // model.nv)}')
    K = int(harmonics)
    problem = _Problem(model, base, K, float(period), rest_basis(K),
                       (np.arange(samples) + 0.5) * (period / samples),
                       *_limits(model, acceleration, margin), bool(friction), bool(armature))
    nc = constraint_samples or max(samples, CONSTRAINT_SAMPLES * K)
    dense = math.ceil(period / CHECK_STEP)
    check_t = np.arange(dense) * (period / dense)
    rng = np.random.default_rng(seed)
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=int(starts) * int(maxiter), desc='excitation', unit='it',
                   file=sys.stderr, mininterval=0.5, leave=False)
    best, iterations, began = None, 0, time.perf_counter()
    try:
        for k in range(int(starts)):
            x, start_condition, its = _run(problem, rng, np.arange(nc) * (period / nc),
                                           check_t, 1.0 - 0.5 * margin, int(maxiter), bar)
            iterations += its
            if bar is not None:   # a run that stopped early: the bar at its share
                bar.update(max((k + 1) * int(maxiter) - bar.n, 0))
            condition = problem.condition(x, problem.bases(problem.cost_t))
            if best is None or condition < best[1]:
                best = (x, condition, start_condition)
    finally:
        if bar is not None:
            bar.close()
    x, condition, start_condition = best
    usage = {key: np.max(f, axis=0) for key, f in problem.fractions(x, check_t).items()}
    return Excitation(problem.trajectory(x), tuple(model.joint_names), float(condition),
                      float(start_condition), base, problem.cost_t, usage,
                      {'position': np.column_stack((model.lower, model.upper)),
                       'velocity': model.velocity_limit.copy(), 'acceleration': problem.amax0,
                       'effort': model.effort_limit.copy()},
                      float(margin), iterations, time.perf_counter() - began, int(starts))


def _run(problem, rng, times, check_t, allowed, maxiter, bar):
    """
    Optimise from one random feasible start; return ``(x, start condition, iterations)``.

    SLSQP with the constraints at ``times``; then the fractions of the limits at
    ``check_t`` must stay at or below ``allowed`` (``1 - margin / 2``): where one does
    not, its worst time joins the constraint times and SLSQP runs again from there
    (:data:`REFINEMENTS` times at most; then a ValueError).
    """
    from scipy.optimize import minimize
    cost_P = problem.bases(problem.cost_t)

    def cost(x):
        c = problem.condition(x, cost_P)
        return math.log(c) if math.isfinite(c) else BAD_COST

    P = problem.bases(times)
    x = _random_start(problem, rng, P)
    start_condition = problem.condition(x, cost_P)
    done = [0]

    def step(xk):
        done[0] += 1
        if bar is not None:
            bar.update(1)
            bar.set_postfix(cond=f'{math.exp(cost(xk)):.4g}', refresh=False)
    for refinement in range(REFINEMENTS + 1):
        if refinement and bar is not None:
            bar.total += maxiter
        cons = {'type': 'ineq', 'fun': lambda z, P=P: problem.constraints(z, P)[0],
                'jac': lambda z, P=P: problem.constraints(z, P)[1]}
        res = minimize(cost, x, method='SLSQP', constraints=[cons], callback=step,
                       options={'maxiter': maxiter, 'ftol': FTOL})
        if _feasible(problem, res.x, P, tol=FEASIBLE_TOL) and cost(res.x) <= cost(x):
            x = res.x
        over = []
        for f in problem.fractions(x, check_t).values():
            f = np.where(np.isnan(f), -math.inf, f)
            over += [int(np.argmax(f[:, j])) for j in np.flatnonzero(f.max(axis=0) > allowed)]
        if not over:
            return x, start_condition, done[0]
        times = np.union1d(times, check_t[over])
        P = problem.bases(times)
    raise ValueError(f'the limits still fail at a {CHECK_STEP * 1e3:g} ms sampling after '
                     f'{REFINEMENTS} refinements of the constraint times: give more '
                     'constraint_samples')


def write_trajectory(path, joint_names, times, positions, velocities, accelerations,
                     comment=''):
    """
    Write a joint trajectory file: what ``computed_torque.trajectory_file`` reads.

    ``joint_names`` (n,), ``times`` (P,) ``time_from_start`` [s], ``positions``,
    ``velocities``, ``accelerations`` (P, n) — the fields of ``trajectory_msgs/
    JointTrajectory`` (:func:`liemb_ros.control.trajectory.load_trajectory` reads them;
    with accelerations the controller interpolates quintic).  Values are rounded to 1e-9
    (nrad, nrad/s, ...): a velocity that is zero to round-off is written zero, so an end
    at rest is read at rest.  ``comment``: lines written first, each as ``# ...``.
    """
    import yaml
    points = [{'time_from_start': round(float(t), 9),
               'positions': np.round(p, 9).tolist(), 'velocities': np.round(v, 9).tolist(),
               'accelerations': np.round(a, 9).tolist()}
              for t, p, v, a in zip(times, positions, velocities, accelerations)]
    for pt in points:   # no '-0.0'
        for key in ('positions', 'velocities', 'accelerations'):
            pt[key] = [x + 0.0 for x in pt[key]]
    text = yaml.safe_dump({'joint_names': list(joint_names), 'points': points},
                          sort_keys=False, default_flow_style=None, width=1000)
    head = ''.join(f'# {line}\n' if line else '#\n' for line in comment.splitlines())
    with open(path, 'w', encoding='utf-8') as f:
        f.write(head + text)
