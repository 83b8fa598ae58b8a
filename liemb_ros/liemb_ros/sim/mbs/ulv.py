"""
A rigid body in unified local velocity coordinates, with its RK4 Lie group scheme ([HGS18]).

[HGS18] (Holzinger, Gerstmayr, Schöberl) describes a free rigid body by six *unified*
velocity coordinates ``w``: ``w_i`` is the body-fixed velocity of the point ``y_i`` (a face
centre of a hexahedron with half sides ``l1, l2, l3``) projected on the direction ``b_i``
(eqs. (18)-(24)), so ``w = D v_L`` with the body-fixed twist ``v_L = (U; Omega)``
(**translation first**, as in the paper; the rest of this package is angular first).  The
equations of motion from Gibbs-Appell (eq. (51)) are

    M_bar w' + Gamma_bar(w) w = Q_bar,
    M_bar = D^-T diag(m I, J) D^-1,  Gamma_bar w = D^-T diag(E(w) m, E(w) J) D^-1 w,

with ``E(w) = Omega~`` (eq. (40)) and ``Q_bar = D^-T (F; tau)`` for a body-fixed force ``F`` at
the COM and moment ``tau`` (eqs. (52)-(53)); for ``l = 1`` ``D`` is orthogonal and these are
the paper's eqs. (56), (60).  The configuration ``H`` in SE(3) is reconstructed with the
incremental motion vector ``n = (n_T; n_R)``: ``n' = T_bar^-1(n) w``, ``H_new = H exp(n)``
(eqs. (11)-(17), (72)-(81)).

The scheme (eqs. (82)-(87)) is classical RK4 for ``w`` and RK4 on ``n`` with ``n = 0`` at the
start of every step; ``T_bar^-1`` and ``exp`` are written out as in the paper, with its
misprints corrected (docs/theory/errata.md#hgs18-eq16 and below: ``k1`` of (16) lacks a
factor ``phi``; (17)/(78) need the anticommutator ``n_T~ n_R~ + n_R~ n_T~`` and the
coefficient ``k2`` of (77); ``D`` row 5 has ``+1/sqrt 2``; (87) ends with ``K4``).  The
forces are evaluated at the stage configurations ``H exp(K1/2), H exp(K2/2), H exp(K3)``
(``stages='munthe-kaas'``, the default and 4th order); ``stages='paper'`` evaluates them at
``H_i`` in every stage as printed, which is exact for the paper's torque-free example and
1st order otherwise (docs/theory/errata.md#hgs18-eq82).  Theory:
docs/theory/integrators.md#unified-local-velocity-coordinates-hgs18.

This formulation covers one free rigid body (with applied forces); constrained systems are
in :mod:`.system`.  Its ``Omega`` is classical RK4 on Euler's equations, as is the body-twist
Munthe-Kaas RK4 of :mod:`liemb_ros.sim.integrators` (RK4 is affine covariant and ``w = D v_L``
with constant ``D``): the two agree to round-off, amplified by the dynamics.
"""
import math

import numpy as np

from ...core.lie import so3
from ..integrators.rkmk import MAX_STEP_ANGLE, IntegrationError, StepSizeError

#: below this angle the coefficients k1, k2 (eqs. (76), (77)) use their Taylor series
SERIES_ANGLE = 2e-2
_S = 1.0 / math.sqrt(2.0)


def hexahedron(half_sides=(1.0, 1.0, 1.0)):
    """
    Return the directions ``b`` and points ``y`` (6, 3) of eqs. (19)-(24).

    ``y_i`` are the face centres of a box with half sides ``l1, l2, l3``, ``b_i`` unit
    vectors over ``sqrt 2`` along its edges.
    """
    l1, l2, l3 = (float(v) for v in half_sides)
    b = _S * np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1.0]])
    y = np.array([[0, -l2, 0], [0, l2, 0], [0, 0, -l3], [0, 0, l3], [-l1, 0, 0], [l1, 0, 0.0]])
    return b, y


def projection_matrix(half_sides=(1.0, 1.0, 1.0)):
    """
    Return ``D`` (6x6) with ``w = D (U; Omega)`` ([HGS18] eqs. (18)-(24), (54)).

    Row ``i`` is ``[b_i^T, (y_i x b_i)^T]`` (``w_i = b_i . (U + Omega x y_i)``); for
    ``l = 1`` it is the paper's (54) with row 5 corrected (docs/theory/errata.md#hgs18-eq54),
    orthogonal with ``det D = -1``.
    """
    b, y = hexahedron(half_sides)
    return np.hstack([b, np.cross(y, b)])


def so3_exp(n_R):
    """``exp_SO(3)(n_R)`` ([HGS18] eq. (14))."""
    phi = math.sqrt(n_R @ n_R)
    N = so3.hat(n_R)
    if phi < SERIES_ANGLE:
        t2 = phi * phi
        a, b = 1.0 - t2 / 6.0 + t2 * t2 / 120.0, 0.5 - t2 / 24.0 + t2 * t2 / 720.0
    else:
        a, b = math.sin(phi) / phi, (1.0 - math.cos(phi)) / (phi * phi)
    return np.eye(3) + a * N + b * (N @ N)


def so3_tangent(n_R):
    """``T_SO(3)(n_R) = I - (1 - cos)/phi^2 n~ + (phi - sin)/phi^3 n~^2`` (eq. (15))."""
    phi = math.sqrt(n_R @ n_R)
    N = so3.hat(n_R)
    if phi < SERIES_ANGLE:
        t2 = phi * phi
        a, b = 0.5 - t2 / 24.0 + t2 * t2 / 720.0, 1.0 / 6.0 - t2 / 120.0 + t2 * t2 / 5040.0
    else:
        a = (1.0 - math.cos(phi)) / (phi * phi)
        b = (phi - math.sin(phi)) / phi ** 3
    return np.eye(3) - a * N + b * (N @ N)


def se3_exp(n):
    """``exp_SE(3)(n)`` of ``n = (n_T; n_R)`` as a 4x4 matrix ([HGS18] eq. (13))."""
    H = np.eye(4)
    H[:3, :3] = so3_exp(n[3:])
    H[:3, 3] = so3_tangent(n[3:]).T @ n[:3]
    return H


def tangent_coefficients(n):
    """
    Return ``(k1, k2)`` of [HGS18] eqs. (76), (77) (= (16), (17) with their misprints corrected).

    ``k1 = (1 - (phi/2) cot(phi/2)) / phi^2``,
    ``k2 = (n_R . n_T) (phi^2 / (1 - cos phi) + phi cot(phi/2) - 4) / (2 phi^4)``; Taylor
    series below :data:`SERIES_ANGLE`.  Singular at ``phi = 2 pi``.
    """
    n_T, n_R = n[:3], n[3:]
    phi = math.sqrt(n_R @ n_R)
    if phi < SERIES_ANGLE:
        t2 = phi * phi
        return (1.0 / 12.0 + t2 / 720.0 + t2 * t2 / 30240.0,
                (n_R @ n_T) * (1.0 / 360.0 + t2 / 7560.0 + t2 * t2 / 201600.0))
    cot = 1.0 / math.tan(0.5 * phi)
    k1 = (1.0 - 0.5 * phi * cot) / (phi * phi)
    k2 = (n_R @ n_T) * (phi * phi / (1.0 - math.cos(phi)) + phi * cot - 4.0) / (2.0 * phi ** 4)
    return k1, k2


def se3_tangent_inverse(n):
    """
    Return ``T^-1_SE(3)(n)`` (6x6, ``(n_T; n_R)`` ordering; [HGS18] eqs. (13), (16), (17)).

    ``[[T^-1_SO3, T_{n_T n_R -}], [0, T^-1_SO3]]`` with ``T^-1_SO3 = I + n_R~/2 + k1 n_R~^2``
    and ``T_{n_T n_R -} = n_T~/2 + k1 (n_T~ n_R~ + n_R~ n_T~) + k2 n_R~^2``.
    """
    k1, k2 = tangent_coefficients(n)
    NT, NR = so3.hat(n[:3]), so3.hat(n[3:])
    NR2 = NR @ NR
    A = np.eye(3) + 0.5 * NR + k1 * NR2
    out = np.zeros((6, 6))
    out[:3, :3] = A
    out[3:, 3:] = A
    out[:3, 3:] = 0.5 * NT + k1 * (NT @ NR + NR @ NT) + k2 * NR2
    return out


def interpolation_matrix(y, half_sides=(1.0, 1.0, 1.0)):
    """
    Return ``N(y)`` (3x6): the body-fixed velocity of the body point ``y`` is ``N(y) w``.

    [HGS18] eqs. (26)-(27), for half sides ``(l1, l2, l3)``; equal to ``[I, -y~] D^-1``
    (the point's velocity ``U + Omega x y``).  Affine in ``y``.
    """
    l1, l2, l3 = (float(v) for v in half_sides)
    y1, y2, y3 = (float(v) for v in y)
    return _S * np.array([[1 - y2 / l2, -1 - y2 / l2, 0, 0, y3 / l1, y3 / l1],
                          [y1 / l2, y1 / l2, 1 - y3 / l3, -1 - y3 / l3, 0, 0],
                          [0, 0, y2 / l3, y2 / l3, 1 - y1 / l1, -1 - y1 / l1]])


def basis_rates(w, half_sides=(1.0, 1.0, 1.0)):
    """
    Return ``E_dot(w)`` (3x3): the rates of the body's basis vectors in the body frame.

    [HGS18] eq. (40) (its denominators read ``sqrt(2) l_i``, as in (37)-(39)); equal to
    ``Omega~`` (the paper's footnote 1).
    """
    l1, l2, l3 = (float(v) for v in half_sides)
    a = _S * (w[0] + w[1]) / l2
    b = _S * (w[4] + w[5]) / l1
    c = _S * (w[2] + w[3]) / l3
    return np.array([[0.0, -a, b], [a, 0.0, -c], [-b, c, 0.0]])


def gibbs_appell(mass, first_moment, second_moment, w, half_sides=(1.0, 1.0, 1.0)):
    """
    Return ``(M_bar, Gamma_bar(w))`` (6x6 each) by the integrals of Gibbs-Appell.

    [HGS18] eqs. (48)-(49): ``M_bar = int rho N^T N dV``, ``Gamma_bar = int rho N^T P dV``
    with ``P = E_dot(w) N`` (eq. (42)).  ``N(y) = N_0 + sum_k y_k N_k`` is affine in
    ``y`` (:func:`interpolation_matrix`), so the integrals need only the body's mass
    [kg], its ``first_moment`` ``int rho y dV`` (3, = mass x COM [kg m]) and
    ``second_moment`` ``int rho y y^T dV`` (3x3 [kg m^2]; ``tr(J)/2 I - J`` for the inertia
    ``J`` about a frame at the COM), all in the body frame.  The paper's alternative to the
    Newton-Euler route of :class:`UnifiedBody` (eq. (56)); the two agree to round-off.
    """
    N0 = interpolation_matrix(np.zeros(3), half_sides)
    Nk = [interpolation_matrix(e, half_sides) - N0 for e in np.eye(3)]
    E = basis_rates(w, half_sides)
    c = np.asarray(first_moment, dtype=float)
    S = np.asarray(second_moment, dtype=float)

    def integral(A):
        out = mass * N0.T @ A @ N0
        for k in range(3):
            out = out + c[k] * (N0.T @ A @ Nk[k] + Nk[k].T @ A @ N0)
            for m in range(3):
                out = out + S[k, m] * (Nk[k].T @ A @ Nk[m])
        return out
    return integral(np.eye(3)), integral(E)


class UnifiedBody:
    """
    One rigid body in unified local velocity coordinates ([HGS18] §3-§5).

    ``mass``, ``inertia`` (3x3 about the COM, body axes; the body frame is at the COM, as
    the paper assumes from §4.2 on), ``half_sides`` ``(l1, l2, l3)`` of the projection
    hexahedron (the paper: 1), ``gravity`` (world, m/s^2), ``wrench(t, H, w) -> (F, tau)``
    an optional body-fixed force at the COM and moment.  ``assembly``: 'newton-euler'
    (``M_bar`` and ``Gamma_bar w`` from the body's Newton-Euler equations, eq. (56)) or
    'gibbs-appell' (the paper's own integrals (48)-(49), :func:`gibbs_appell`; slower,
    equal to round-off).  Attributes ``D``, ``D_inv``, ``M_bar``.
    """

    def __init__(self, mass, inertia, half_sides=(1.0, 1.0, 1.0), gravity=(0.0, 0.0, 0.0),
                 wrench=None, assembly='newton-euler'):
        self.mass = float(mass)
        if not self.mass > 0:
            raise ValueError(f'mass must be positive, got {mass}')
        self.inertia = np.asarray(inertia, dtype=float).reshape(3, 3)
        if assembly not in ('newton-euler', 'gibbs-appell'):
            raise ValueError("assembly must be 'newton-euler' or 'gibbs-appell', got "
                             f'{assembly!r}')
        self.assembly = assembly
        self.half_sides = tuple(float(v) for v in half_sides)
        self.D = projection_matrix(half_sides)
        self.D_inv = np.linalg.inv(self.D)
        if assembly == 'gibbs-appell':
            self._second = 0.5 * np.trace(self.inertia) * np.eye(3) - self.inertia
            self.M_bar = gibbs_appell(self.mass, np.zeros(3), self._second, np.zeros(6),
                                      half_sides)[0]
        else:
            M = np.zeros((6, 6))
            M[:3, :3] = self.mass * np.eye(3)
            M[3:, 3:] = self.inertia
            self.M_bar = self.D_inv.T @ M @ self.D_inv          # eq. (56) for l = 1
        self._M_bar_inv = np.linalg.inv(self.M_bar)
        self.gravity = np.asarray(gravity, dtype=float).reshape(3)
        self.wrench = wrench

    def coordinates(self, U, Omega):
        """Return ``w = D (U; Omega)`` (eqs. (18)-(24))."""
        return self.D @ np.concatenate([U, Omega])

    def twist(self, w):
        """Return ``(U, Omega)`` of ``w`` (``v_L = D^-1 w``, eq. (71) for ``l = 1``)."""
        v = self.D_inv @ w
        return v[:3], v[3:]

    def quadratic(self, w):
        """``Gamma_bar(w) w = D^-T (E m U; E J Omega)``, ``E(w) = Omega~`` (eqs. (40), (56))."""
        if self.assembly == 'gibbs-appell':
            return gibbs_appell(self.mass, np.zeros(3), self._second, w, self.half_sides)[1] @ w
        U, Om = self.twist(w)
        E = so3.hat(Om)
        return self.D_inv.T @ np.concatenate([E @ (self.mass * U), E @ (self.inertia @ Om)])

    def generalized_force(self, t, H, w):
        """``Q_bar = D^-T (F; tau)``: gravity ``m R^T g`` plus ``wrench`` (eqs. (52)-(53))."""
        F = self.mass * (H[:3, :3].T @ self.gravity)
        tau = np.zeros(3)
        if self.wrench is not None:
            f, m = self.wrench(t, H, w)
            F = F + np.asarray(f, dtype=float)
            tau = np.asarray(m, dtype=float)
        return self.D_inv.T @ np.concatenate([F, tau])

    def acceleration(self, t, H, w):
        """``w' = M_bar^-1 (Q_bar - Gamma_bar w)`` (eq. (79))."""
        return self._M_bar_inv @ (self.generalized_force(t, H, w) - self.quadratic(w))

    def tangent_inverse(self, n):
        """``T_bar^-1(n) = T^-1_SE(3)(n) D^-1`` (eqs. (72)-(78), (78) corrected)."""
        return se3_tangent_inverse(n) @ self.D_inv

    def kinetic_energy(self, w):
        """Return ``w^T M_bar w / 2``."""
        return 0.5 * float(w @ self.M_bar @ w)


class UnifiedStepper:
    """
    The RK4 Lie group scheme of [HGS18] (eqs. (82)-(87)) on the state ``y = (H, w)``.

    ``y`` is flat: the 4x4 pose ``H`` (16 floats, row-major) then ``w`` (6).
    ``step(t, y, h) -> y_new``; ``last_angle`` is the largest ``|n_R|`` of the step's stage
    increments and update; ``max_angle`` the step guard (as
    :class:`~liemb_ros.sim.integrators.Stepper`; ``None`` switches it off).
    """

    def __init__(self, body, stages='munthe-kaas', max_angle=MAX_STEP_ANGLE):
        if stages not in ('munthe-kaas', 'paper'):
            raise ValueError(f"stages must be 'munthe-kaas' or 'paper', got {stages!r}")
        self.body = body
        self.stages = stages
        self.max_angle = max_angle
        self.last_angle = 0.0

    def step(self, t, y, h):
        """
        Return the state after one step of size ``h`` (eqs. (82)-(87)).

        Raises :class:`~liemb_ros.sim.integrators.StepSizeError` past the guard and
        :class:`~liemb_ros.sim.integrators.IntegrationError` when a stage is not finite.
        """
        with np.errstate(over='ignore', invalid='ignore'):
            return self._step(t, y, h)

    def _step(self, t, y, h):
        b = self.body
        H = y[:16].reshape(4, 4)
        w = y[16:]
        frozen = self.stages == 'paper'
        _finite(t, h, w)
        k1 = h * b.acceleration(t, H, w)
        K1 = h * (b.D_inv @ w)                          # T_bar^-1(0) = D^-1
        n2 = 0.5 * K1
        w2 = w + 0.5 * k1
        _finite(t, h, n2, w2)
        k2 = h * b.acceleration(t + 0.5 * h, H if frozen else H @ se3_exp(n2), w2)
        K2 = h * (b.tangent_inverse(n2) @ w2)
        n3 = 0.5 * K2
        w3 = w + 0.5 * k2
        _finite(t, h, n3, w3)
        k3 = h * b.acceleration(t + 0.5 * h, H if frozen else H @ se3_exp(n3), w3)
        K3 = h * (b.tangent_inverse(n3) @ w3)
        n4 = K3
        w4 = w + k3
        _finite(t, h, n4, w4)
        k4 = h * b.acceleration(t + h, H if frozen else H @ se3_exp(n4), w4)
        K4 = h * (b.tangent_inverse(n4) @ w4)
        n = (K1 + 2.0 * K2 + 2.0 * K3 + K4) / 6.0       # eq. (87), "+ K4" (misprinted "+ K1")
        _finite(t, h, n)
        self.last_angle = max(math.sqrt(v[3:] @ v[3:]) for v in (n2, n3, n4, n))
        if self.max_angle is not None and self.last_angle > self.max_angle:
            raise StepSizeError(f'step h={h:g} at t={t:g} rotates by {self.last_angle:.3g} '
                                f'rad > {self.max_angle:.3g} rad (T^-1 is singular at 2 pi); '
                                'reduce the step size')
        out = np.concatenate([(H @ se3_exp(n)).reshape(-1),
                              w + (k1 + 2.0 * k2 + 2.0 * k3 + k4) / 6.0])
        _finite(t, h, out)
        return out


def _finite(t, h, *arrays):
    """Raise :class:`IntegrationError` unless every array is finite."""
    for a in arrays:
        if not np.isfinite(a).all():
            raise IntegrationError(f'non-finite state in the step at t={t:g} (h={h:g})')
