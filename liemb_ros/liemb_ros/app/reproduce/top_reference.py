"""
[MT13] §5.1's reference trajectory of the heavy top: quaternions and variable-step RK4.

[MT13] §5.1 determines "a reference trajectory ... by integrating the dynamic Euler-equations
in quaternion parameterization using a RK4 integration scheme with variable step size and
relative and absolute accuracy goal of 1e-6 and 1e-9".  The top has no loads (M = F = 0)
and a fixed pivot, so its rotation is the torque-free motion about the pivot:

    J_p Omega' = (J_p Omega) x Omega,    q' = q * (0, Omega) / 2,

with ``J_p = Theta_0 + m (|r0|^2 I - r0 r0^T)`` the inertia about the pivot, ``Omega`` the
body-fixed angular velocity and ``q`` the unit quaternion (scalar first) of ``R``.
:func:`adaptive_rk4` is that scheme (classical RK4, step doubling for the local error,
accepted when the error is at most ``atol + rtol |y|`` componentwise); :func:`top_reference`
samples it, and a second, tight reference (scipy's DOP853 at 1e-13), every
:data:`SAMPLE` s.  Neither uses the Lie group integrators the example checks.
"""
import functools
import math

import numpy as np

#: the reference is sampled (and the example compares with it) at t = SAMPLE k
SAMPLE = 0.01
#: [MT13] §5.1: the reference's "relative and absolute accuracy goal"
PAPER_RTOL, PAPER_ATOL = 1e-6, 1e-9
#: the tight reference: DOP853 at these tolerances
TIGHT_TOL = 1e-13


def pivot_inertia(mass, theta_com, r0):
    """Return the inertia (3, 3) [kg m^2] about a point at ``r0`` [m] from the COM."""
    r0 = np.asarray(r0, dtype=float)
    return np.asarray(theta_com, dtype=float) + mass * (r0 @ r0 * np.eye(3) - np.outer(r0, r0))


def top_rhs(inertia):
    """Return ``f(t, y)`` of the torque-free top, ``y = (q (4, scalar first), Omega (3))``."""
    J = np.asarray(inertia, dtype=float)
    (a, b, c), (d, e, g), (k, m, n) = J.tolist()
    (ia, ib, ic), (id_, ie, ig), (ik, im, in_) = np.linalg.inv(J).tolist()

    def f(t, y):
        q0, q1, q2, q3, w1, w2, w3 = y.tolist()
        L1 = a * w1 + b * w2 + c * w3
        L2 = d * w1 + e * w2 + g * w3
        L3 = k * w1 + m * w2 + n * w3
        M1, M2, M3 = L2 * w3 - L3 * w2, L3 * w1 - L1 * w3, L1 * w2 - L2 * w1
        return np.array([0.5 * (-q1 * w1 - q2 * w2 - q3 * w3),
                         0.5 * (q0 * w1 + q2 * w3 - q3 * w2),
                         0.5 * (q0 * w2 + q3 * w1 - q1 * w3),
                         0.5 * (q0 * w3 + q1 * w2 - q2 * w1),
                         ia * M1 + ib * M2 + ic * M3,
                         id_ * M1 + ie * M2 + ig * M3,
                         ik * M1 + im * M2 + in_ * M3])
    return f


def adaptive_rk4(f, y0, t_out, rtol, atol, h0=1e-4):
    """
    Integrate ``y' = f(t, y)`` with variable-step classical RK4; return ``y`` at ``t_out``.

    One step of size h is compared with two of size h/2 (step doubling); the local error
    estimate ``|y_2 - y_1| / 15`` must be at most ``atol + rtol max(|y|, |y_2|)`` in every
    component, and the next step is ``h min(4, max(0.2, 0.9 err^(-1/5)))``.  Steps are cut
    to land on the times ``t_out`` (increasing, from 0; a cut step that is accepted leaves
    the step size as it was); the more accurate two-half-step value is kept.  Returns
    ``(Y (len(t_out), n), steps)``: the states at ``t_out`` and the accepted steps.
    """
    def rk4(t, y, h):
        k1 = f(t, y)
        k2 = f(t + 0.5 * h, y + 0.5 * h * k1)
        k3 = f(t + 0.5 * h, y + 0.5 * h * k2)
        k4 = f(t + h, y + h * k3)
        return y + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    y = np.array(y0, dtype=float)
    t, h, steps = 0.0, h0, 0
    out = []
    for target in t_out:
        while target - t > 1e-12 * max(1.0, target):
            hs = min(h, target - t)
            y1 = rk4(t, y, hs)
            y2 = rk4(t + 0.5 * hs, rk4(t, y, 0.5 * hs), 0.5 * hs)
            scale = atol + rtol * np.maximum(np.abs(y), np.abs(y2))
            err = float(np.max(np.abs(y2 - y1) / 15.0 / scale))
            grow = min(4.0, max(0.2, 0.9 * err ** -0.2)) if err > 0 else 4.0
            if err <= 1.0:
                t, y = t + hs, y2
                steps += 1
            if err > 1.0 or hs == h:
                h = hs * grow
        out.append(y.copy())
    return np.array(out), steps


def quaternion_matrix(q):
    """Return the rotation matrix (3, 3) of the quaternion ``q`` (scalar first, normalised)."""
    w, x, y, z = np.asarray(q, dtype=float) / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def rotation_angle(R):
    """Return the angle [rad] of the rotation ``R`` (the geodesic distance to I)."""
    c = 0.5 * (np.trace(R) - 1.0)
    s = 0.5 * np.linalg.norm([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    return math.atan2(s, c)


@functools.lru_cache(maxsize=4)
def top_reference(inertia, omega0, t_end):
    """
    Return the references of the top, sampled at ``t = SAMPLE k``, ``k = 0 .. t_end/SAMPLE``.

    ``inertia`` (9 floats, row-major: the pivot inertia), ``omega0`` (3 floats, body
    angular velocity [rad/s]) start from ``R = I``.  Returns a dict: ``t`` (n,),
    ``paper`` and ``tight`` (n, 3, 3) rotation matrices (:func:`adaptive_rk4` at
    [MT13]'s tolerances, DOP853 at :data:`TIGHT_TOL`), ``paper_omega`` and
    ``tight_omega`` (n, 3) their body angular velocities [rad/s], ``paper_steps`` (the
    accepted steps of the variable-step RK4).
    """
    from scipy.integrate import solve_ivp
    f = top_rhs(np.reshape(inertia, (3, 3)))
    n = int(round(t_end / SAMPLE))
    t = SAMPLE * np.arange(n + 1)
    y0 = np.concatenate([[1.0, 0.0, 0.0, 0.0], omega0])
    paper, steps = adaptive_rk4(f, y0, t, PAPER_RTOL, PAPER_ATOL)
    tight = solve_ivp(f, (0.0, t[-1]), y0, method='DOP853', t_eval=t, rtol=TIGHT_TOL,
                      atol=TIGHT_TOL).y.T
    return {'t': t, 'paper': np.array([quaternion_matrix(q) for q in paper[:, :4]]),
            'tight': np.array([quaternion_matrix(q) for q in tight[:, :4]]),
            'paper_omega': paper[:, 4:], 'tight_omega': tight[:, 4:], 'paper_steps': steps}
