"""
The Simulator's ROS2 step with the contacts' Jacobian compiled whole (issue 31).

A robot standing on the ground takes a ROS2 step (:meth:`._joint._JointCoordinates._ros2`)
with the contacts' dense stiffness and damping every step; in Python its two right-hand
sides, the contacts at the stage and at the step's end and the solves were some thirty
calls, most of a step's time.  :func:`ros2_contact_step` takes it in one call, as
:mod:`._explicit` does the explicit step: the Jacobian's diagonals and the dense matrix
``M + g A`` factored, ``f(y)`` with the contacts' force at ``y`` (from the evaluation the
step was chosen with), the two solves, the updates on ``SE(3) x R^n`` (or ``R^n``), the
contacts at the stage (:func:`~._contact_forces.evaluate_into`) and at the step's end with
their Jacobian for the next step, and the work ``W`` by the trapezoidal rule.  The same
kernels, the same operations in the same order: the states are bit for bit those of the
Python path, which stays for what this step does not do (applied wrenches, mimic joints,
semi-implicit Euler's inertia) and is tested against it (``test_contact_compiled.py``).
"""
import numpy as np
from numba import njit

from ._contact_forces import evaluate_into
from ._dense import cho_solve, cholesky_in_place
from ..core._kernels.aba import aba_arm_into, aba_into
from ..core._kernels.dispatch import NO_FEXT
from .integrators.spaces import exp_mul_kernel
from .passive import all_finite, jacobian_diagonals_into, passive_torques

#: where :func:`ros2_contact_step` stopped (its first result): the step is taken (``DONE``),
#: or the error that the Python path raises there
DONE, W_MATRIX, FIRST_STAGE, CONTACT_AT_STAGE, SECOND_STAGE, NOT_FINITE, CONTACT_AT_END = \
    range(7)


@njit(cache=True)
def dense_w_matrix(M, Kc, Bc, P, c, kq, g, L):
    """
    Return ``(ok, A, K)``: the dense ROS2 matrices with the contacts' ``(K_c, B_c)``.

    ``A = B_c + g K_c + diag_P(c)``, ``K = K_c + diag_P(kq)``; ``L`` ← the Cholesky factor
    of ``M + g A``, ``ok``: whether it is positive definite.
    """
    A = Bc + g * Kc
    K = Kc.copy()
    for j in range(P.shape[0]):
        A[P[j], P[j]] += c[j]
        K[P[j], P[j]] += kq[j]
    L[:, :] = M + g * A
    return cholesky_in_place(L), A, K


@njit(cache=True)
def w_solve_dense(L, A, K, g, k, o):
    """
    ``k_V ← k_V - g L⁻ᵀL⁻¹ (A k_V + K k_x)``, ``k_x ← k_x + g k_V`` in place.

    ``k_x = k[:o]`` (base twist and ``q̇`` entries, ``o = nv``), ``k_V = k[o:o + nv]``.
    """
    n = A.shape[0]
    r = np.empty(n)
    for i in range(n):
        sm = 0.0
        for j in range(n):
            sm += A[i, j] * k[o + j]
        for j in range(o):
            sm += K[i, j] * k[j]
        r[i] = sm
    cho_solve(L, r)
    for i in range(n):
        k[o + i] -= g * r[i]
    for i in range(o):
        k[i] += g * k[o + i]


@njit(cache=True)
def _load(q, qd, nb6, passive, tau_in, tau, gen, touching, pc):
    """
    ``_JointCoordinates._load`` without wrenches: set ``tau`` (nv,); return the power.

    The passive torques under the applied ``tau_in`` on the joints, plus the contacts'
    generalized force ``gen`` and power ``pc`` when they touch (``touching``); else a
    zero base force.
    """
    power = passive_torques(q, qd, tau_in, passive, tau[nb6:])
    if touching:
        for i in range(nb6):
            tau[i] = gen[i]
        for i in range(nb6, tau.shape[0]):
            tau[i] += gen[i]
        power += pc
    else:
        for i in range(nb6):
            tau[i] = 0.0
    return power


@njit(cache=True)
def _rhs(ki, kf, w, q, v, base, nb6, a, passive, tau_in, tau, arm, gen, touching, pc, out):
    """
    ``_JointCoordinates._f``: ``out = ((V_base,) q̇, V̇, Ẇ)`` at ``(q, v, base)``; a status.

    ``V̇`` the articulated-body forward dynamics (with the armature ``arm`` when it is not
    empty) under :func:`_load`'s force.
    """
    nq = q.shape[0]
    nv = v.shape[0]
    power = _load(q, v[nb6:], nb6, passive, tau_in, tau, gen, touching, pc)
    vdot = np.empty(nv)
    if arm.shape[0]:
        st = aba_arm_into(ki, kf, w, q, v, tau, base, NO_FEXT, vdot, arm)
    else:
        st = aba_into(ki, kf, w, q, v, tau, base, NO_FEXT, vdot)
    if st:
        return st
    for i in range(a):
        out[i] = v[i]
    for i in range(nq):
        out[a + i] = v[nb6 + i]
    for i in range(nv):
        out[a + nq + i] = vdot[i]
    out[out.shape[0] - 1] = power
    return 0


@njit(cache=True)
def ros2_contact_step(ki, kf, w, space, o, y, h, g, M, Kc, Bc, P, at_y, passive, tau_in, tau,
                      arm, spheres, planes, law, reach, contact_arm, work, stage, end, y1):
    """
    One ROS2 step with the contacts' ``(K_c, B_c)`` from ``y`` into ``y1``: ``_ros2``.

    ``space = (kinds, yoff, aoff, dims)`` of the state's space; ``o``: 16 with a floating
    base (its pose first in ``y``), else 0; ``M`` the mass matrix at ``y``; ``P`` the joint
    entries of ``V``; ``at_y = (gen, touching, power)``: the contacts' force at ``y``;
    ``passive``, ``tau_in``: the passive parameters and the applied joint torque; ``tau``
    (nv,): the generalized force, left as at ``y1``; ``arm``: the forward dynamics'
    armature (empty: none); ``spheres``, ``planes``, ``law``, ``work``: the contact
    model's (:func:`~._contact_forces.evaluate_into`), ``reach`` the margin of the
    evaluation at the end (``h`` :data:`~.contact.REACH_SPEED`) and ``contact_arm`` its
    armature; ``stage``, ``end``: the outputs of the evaluations at the stage and at
    ``y1`` (with the Jacobian).  Returns ``(where, status, stage counts, end counts)``:
    ``where`` :data:`DONE` or the stage that failed (:data:`W_MATRIX`: ``M + g A`` is not
    positive definite) with its kernel status, the counts
    ``(npairs, power, energy, nt, nh)`` of each evaluation.
    """
    kinds, yoff, aoff, dims = space
    nv = M.shape[0]
    nq = P.shape[0]
    nb6 = nv - nq
    a = 6 if o else 0
    n = y.shape[0]
    dim = a + nq + nv + 1
    none = (0, 0.0, 0.0, 0, 0)
    ident = np.eye(4)
    base = y[:16].reshape((4, 4)) if o else ident
    q = y[o:o + nq]
    v = y[o + nq:o + nq + nv]
    c = np.empty(nq)
    kq = np.empty(nq)
    jacobian_diagonals_into(q, v[nb6:], passive, g, h, c, kq)
    L = np.empty((nv, nv))
    ok, A, K = dense_w_matrix(M, Kc, Bc, P, c, kq, g, L)
    if not ok:
        return W_MATRIX, 0, none, none
    gen0, touching0, pc0 = at_y
    k1 = np.empty(dim)
    st = _rhs(ki, kf, w, q, v, base, nb6, a, passive, tau_in, tau, arm, gen0, touching0, pc0,
              k1)
    if st:
        return FIRST_STAGE, st, none, none
    p0 = k1[dim - 1]
    w_solve_dense(L, A, K, g, k1, a + nq)
    psi = np.empty(dim)
    for i in range(dim):
        psi[i] = h * k1[i]
    y2 = np.empty(n)
    exp_mul_kernel(kinds, yoff, aoff, dims, y, psi, y2)
    base2 = y2[:16].reshape((4, 4)) if o else ident
    q2 = y2[o:o + nq]
    v2 = y2[o + nq:o + nq + nv]
    st, np2, pc2, e2, nt2, nh2 = evaluate_into(
        ki, kf, w, q2, base2, o > 0, v2, spheres, planes, law, 0.0, False, 0.0, contact_arm,
        np.zeros(0, dtype=np.int64), work, stage)
    if st:
        return CONTACT_AT_STAGE, st, none, none
    counts2 = (np2, pc2, e2, nt2, nh2)
    k2 = np.empty(dim)
    st = _rhs(ki, kf, w, q2, v2, base2, nb6, a, passive, tau_in, tau, arm, stage[0], nt2 > 0,
              pc2, k2)
    if st:
        return SECOND_STAGE, st, counts2, none
    for i in range(dim):
        k2[i] -= 2.0 * k1[i]
    w_solve_dense(L, A, K, g, k2, a + nq)
    for i in range(dim):
        psi[i] = h * (1.5 * k1[i] + 0.5 * k2[i])
    exp_mul_kernel(kinds, yoff, aoff, dims, y, psi, y1)
    if not all_finite(y1):
        return NOT_FINITE, 0, counts2, none
    base1 = y1[:16].reshape((4, 4)) if o else ident
    q1 = y1[o:o + nq]
    v1 = y1[o + nq:o + nq + nv]
    st, np1, pc1, e1, nt1, nh1 = evaluate_into(
        ki, kf, w, q1, base1, o > 0, v1, spheres, planes, law, reach, True, h, contact_arm,
        np.zeros(0, dtype=np.int64), work, end)
    if st:
        return CONTACT_AT_END, st, counts2, none
    p1 = _load(q1, v1[nb6:], nb6, passive, tau_in, tau, end[0], nt1 > 0, pc1)
    y1[n - 1] = y[n - 1] + 0.5 * h * (p0 + p1)
    return DONE, 0, counts2, (np1, pc1, e1, nt1, nh1)
