"""
[HGS18]'s flipping box solved without the integrators under test: its yardsticks.

The box's data (:data:`FLIP_J`, :data:`FLIP_OMEGA0`), the analytic time between flips
(:func:`flip_interval`, Landau-Lifshitz's elliptic integral) and the reference solution of
the convergence study (:func:`flip_reference`: classical RK4 on Euler's equations,
:func:`euler_rk4`, at [HGS18]'s reference step and twice it).  The example itself, built on
the Lie group integrators, is :func:`~liemb_ros.app.reproduce.examples.flip`.  The same box
translating under gravity and a spring (:func:`~liemb_ros.app.reproduce.examples.sprung_box`)
has its reference in :func:`newton_euler_reference` (Newton-Euler equations in quaternions,
DOP853).
"""
import math

import numpy as np

#: [HGS18] §6: the box's principal moments of inertia and initial body angular velocity
FLIP_J = np.array([5.2988, 1.1775, 4.3568])
FLIP_OMEGA0 = np.array([0.01, 0.0, 100.0])
#: [HGS18]'s reference step (§6: "h = 1e-5")
FLIP_REFERENCE_H = 1e-5


def flip_interval():
    """Analytic time between flips ``2 K(k) / p`` (Landau-Lifshitz; our derivation)."""
    from scipy.special import ellipk
    w0 = FLIP_OMEGA0
    T2 = float(FLIP_J @ w0 ** 2)
    L2 = float(np.sum((FLIP_J * w0) ** 2))
    C, B, A = FLIP_J[0], FLIP_J[2], FLIP_J[1]
    k2 = (B - A) * (C * T2 - L2) / ((C - B) * (L2 - A * T2))
    p = math.sqrt((C - B) * (L2 - A * T2) / (A * B * C))
    return 2.0 * ellipk(k2) / p


def euler_rk4(inertia, omega0, t_end, h):
    """
    Return ``Omega(t_end)`` of classical RK4 on Euler's equations ``J Omega' = J Omega x Omega``.

    The flip's reference ([HGS18] §6 uses ``h = 1e-5``); scalar code, ~0.25 s for 1e5
    steps.  ``Omega`` does not depend on the configuration, so this is the reference of
    both formulations.
    """
    j1, j2, j3 = (float(v) for v in inertia)
    a1, a2, a3 = (j2 - j3) / j1, (j3 - j1) / j2, (j1 - j2) / j3
    x, y, z = (float(v) for v in omega0)
    n = int(round(t_end / h))
    h2, h6 = 0.5 * h, h / 6.0
    for _ in range(n):
        k1x, k1y, k1z = a1 * y * z, a2 * z * x, a3 * x * y
        x2, y2, z2 = x + h2 * k1x, y + h2 * k1y, z + h2 * k1z
        k2x, k2y, k2z = a1 * y2 * z2, a2 * z2 * x2, a3 * x2 * y2
        x3, y3, z3 = x + h2 * k2x, y + h2 * k2y, z + h2 * k2z
        k3x, k3y, k3z = a1 * y3 * z3, a2 * z3 * x3, a3 * x3 * y3
        x4, y4, z4 = x + h * k3x, y + h * k3y, z + h * k3z
        k4x, k4y, k4z = a1 * y4 * z4, a2 * z4 * x4, a3 * x4 * y4
        x += h6 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x)
        y += h6 * (k1y + 2.0 * k2y + 2.0 * k3y + k4y)
        z += h6 * (k1z + 2.0 * k2z + 2.0 * k3z + k4z)
    return np.array([x, y, z])


def flip_reference(t_end=1.0, h=FLIP_REFERENCE_H):
    """
    Return ``(Omega_ref(t_end), spread)``: the reference and its round-off level.

    ``spread = |Omega_ref(h) - Omega_ref(2 h)|``: both are converged (RK4's error at 2e-5 is
    ~1e-11), so their difference is round-off amplified by the flips (~2e-5 at 1 s; seed
    [HGS18]'s "up to machine precision" is not reachable in float64).  Errors at or below the
    spread are at the floor.
    """
    ref = euler_rk4(FLIP_J, FLIP_OMEGA0, t_end, h)
    ref2 = euler_rk4(FLIP_J, FLIP_OMEGA0, t_end, 2.0 * h)
    return ref, float(np.linalg.norm(ref - ref2))


def newton_euler_reference(mass, inertia, x0, v0, omega0, t_end, gravity, anchor, point,
                           stiffness, tol=1e-13):
    """
    Return the dense solution of a free body under gravity and a zero-length spring.

    Newton-Euler equations with the unit quaternion (scalar first, R(0) = I):
    ``m x'' = m g - c (x + R a - p)``, ``J Omega' = (J Omega) x Omega + a x R^T F_s``,
    ``q' = q * (0, Omega) / 2``; ``x`` the COM [m] (world), ``a`` = ``point`` the spring's
    body point (COM frame), ``p`` = ``anchor`` its world end, ``c`` = ``stiffness`` [N/m],
    ``Omega`` body-fixed [rad/s], ``v0`` the world COM velocity.  Integrated with scipy's
    DOP853 at ``tol``; returns ``f(t) -> (x (3), R (3, 3))`` (its 7th-order dense output),
    independent of the Lie group integrators.
    """
    from scipy.integrate import solve_ivp

    from .top_reference import quaternion_matrix
    J = np.asarray(inertia, dtype=float)
    Jinv = np.linalg.inv(J)
    g, p, a = (np.asarray(v, dtype=float) for v in (gravity, anchor, point))

    def f(t, y):
        x, v, q, om = y[:3], y[3:6], y[6:10], y[10:]
        R = quaternion_matrix(q)
        Fs = -stiffness * (x + R @ a - p)
        qd = 0.5 * np.array([-q[1:] @ om, *(q[0] * om + np.cross(q[1:], om))])
        wd = Jinv @ (np.cross(J @ om, om) + np.cross(a, R.T @ Fs))
        return np.concatenate([v, g + Fs / mass, qd, wd])
    y0 = np.concatenate([x0, v0, [1.0, 0.0, 0.0, 0.0], omega0])
    sol = solve_ivp(f, (0.0, t_end), y0, method='DOP853', rtol=tol, atol=tol,
                    dense_output=True).sol

    def at(t):
        y = sol(t)
        return y[:3], quaternion_matrix(y[6:10])
    return at
