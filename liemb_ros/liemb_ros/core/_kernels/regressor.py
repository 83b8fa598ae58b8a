"""
The joint-torque regressor ``Y(q, q̇, q̈)``, ``τ = Y π``, from the body-fixed Newton-Euler sweep.

Müller, Multibody Syst. Dyn. 42 (2018) 219–248 ("[M18d]"), §4, the body-fixed form: the
forward pass (66) gives each body's twist ``V_j`` and acceleration ``A_j = V̇_j`` (with the
gravity offset ``A_0 = (0, -Rᵀ g)``: the RNEA's own, :func:`~.rnea.rnea_body`, whose
joint forces are discarded); the
body's Newton-Euler wrench ``M_j A_j - ad_{V_j}ᵀ M_j V_j`` is linear in its ten inertial
parameters ``π_j``: with ``M_j V = Φ(V) π_j`` it is ``Y_j π_j``,
``Y_j = Φ(A_j) - ad_{V_j}ᵀ Φ(V_j)`` (6x10, :func:`body_block`).  The backward pass (67)
carries each body's block to its ancestors, ``Ad_{C_{i,j}}ᵀ Y_j`` (the wrench moved to body
``i``'s frame, :func:`~.lie.Ad_invT_apply_into` joint by joint), and projects it on their
joint screws: ``Y[i, j] = q_mult[i] X_iᵀ Ad_{C_{i,j}}ᵀ Y_j`` for ``i`` on the path root ->
``j``, zero elsewhere (a body moves only the joints that support it).  Rows are the model's
velocity coordinates, so mimic-coupled bodies add to their leader's row (as in the RNEA).

``π_j = (m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz)``: mass, first moment
and the rotational inertia about the body frame's origin, in the body frame (Pinocchio's
``Inertia.toDynamicParameters`` order); columns ``10 j .. 10 j + 9`` (a floating base's
block first, in rows ``0..5`` its body-fixed wrench ``(m, f)``).  Past the inertial blocks,
optional friction columns (viscous ``q̇_k``, then Coulomb ``sign(q̇_k)``, ``sign(0) = 0``)
and armature columns (``q̈_k``), one per joint coordinate, on that coordinate's row.

Entry points as the RNEA's: :func:`regressor_into` (one configuration, the packed model,
the model's workspace: :func:`~.layout.regressor_floats`) and :func:`regressor_batch` (the
model's :class:`~.layout.Tree`, ``nogil``: :func:`~.dispatch.run_batch`).
"""
import numpy as np
from numba import njit

from .dispatch import (LAYOUT, NO_FEXT, OK, at, check_inputs, plain, plain_pose, raise_status,
                       sizes)
from .inertia import dot6
from .layout import regressor_floats, unpack
from .lie import Ad_invT_apply_into
from .numba_entry import SINGLE_CALL, c_view
from .rnea import body_fext, rnea_body


@njit(cache=True, inline='always')
def body_block(V, A, Y):
    """
    Write the (10, 6) transpose of ``Φ(A) - ad_Vᵀ Φ(V)``: row ``c`` is parameter ``c``'s wrench.

    ``M V = Φ(V) π`` for ``M = [[Θ, h~], [-h~, m I]]`` ([M18d] (40)) and ``π`` in the order
    of the module docstring.  In closed form, with ``ω, v`` of ``V``, ``α, a`` of ``A`` and
    ``b = a + ω × v``: the mass's wrench ``(0, b)``; the first moment's ``e_k``-th
    ``(e_k × b, α × e_k + ω × (ω × e_k))``; an inertia entry's ``E`` (the symmetric unit
    matrix of ``I_xx`` ... ``I_zz``) ``(E α + ω × E ω, 0)``.
    """
    w0 = V[0]
    w1 = V[1]
    w2 = V[2]
    b0 = A[3] + w1 * V[5] - w2 * V[4]
    b1 = A[4] + w2 * V[3] - w0 * V[5]
    b2 = A[5] + w0 * V[4] - w1 * V[3]
    a0 = A[0]
    a1 = A[1]
    a2 = A[2]
    ww = w0 * w0 + w1 * w1 + w2 * w2
    w01 = w0 * w1
    w02 = w0 * w2
    w12 = w1 * w2
    for r in range(10):
        for c in range(6):
            Y[r, c] = 0.0
    # m
    Y[0, 3] = b0
    Y[0, 4] = b1
    Y[0, 5] = b2
    # m c: moment e_k × b, force α × e_k + ω ω_k - |ω|² e_k
    Y[1, 1] = -b2
    Y[1, 2] = b1
    Y[1, 3] = w0 * w0 - ww
    Y[1, 4] = a2 + w01
    Y[1, 5] = -a1 + w02
    Y[2, 0] = b2
    Y[2, 2] = -b0
    Y[2, 3] = -a2 + w01
    Y[2, 4] = w1 * w1 - ww
    Y[2, 5] = a0 + w12
    Y[3, 0] = -b1
    Y[3, 1] = b0
    Y[3, 3] = a1 + w02
    Y[3, 4] = -a0 + w12
    Y[3, 5] = w2 * w2 - ww
    # I_xx, I_xy, I_yy, I_xz, I_yz, I_zz: moment E α + ω × E ω
    Y[4, 0] = a0
    Y[4, 1] = w02
    Y[4, 2] = -w01
    Y[5, 0] = a1 - w02
    Y[5, 1] = a0 + w12
    Y[5, 2] = w0 * w0 - w1 * w1
    Y[6, 0] = -w12
    Y[6, 1] = a1
    Y[6, 2] = w01
    Y[7, 0] = a2 + w01
    Y[7, 1] = w2 * w2 - w0 * w0
    Y[7, 2] = a0 - w12
    Y[8, 0] = w1 * w1 - w2 * w2
    Y[8, 1] = a2 - w01
    Y[8, 2] = a1 + w02
    Y[9, 0] = w12
    Y[9, 1] = -w02
    Y[9, 2] = a2


@njit(cache=True, inline='always')
def _regressor_work(w, nb):
    """
    The regressor's work arrays ``(V, A, G, Y, fb, W, tau)``, views of ``w``.

    ``fb``, ``W``, ``tau``: the RNEA's applied wrenches (zero, and its two scratch rows),
    joint wrenches and joint forces (at most ``nb + 6`` coordinates), not used after it.
    """
    n6 = 6 * (nb + 1)
    V = c_view(w[:n6], (nb + 1, 6))
    A = c_view(w[n6:2 * n6], (nb + 1, 6))
    W = c_view(w[2 * n6:3 * n6], (nb + 1, 6))
    o = 3 * n6
    G = c_view(w[o:o + 16 * nb], (nb, 4, 4))
    o += 16 * nb
    Y = c_view(w[o:o + 60], (10, 6))
    o += 60
    fb = c_view(w[o:o + 6 * (nb + 3)], (nb + 3, 6))
    o += 6 * (nb + 3)
    return V, A, G, Y, fb, W, w[o:o + nb + 6]


@njit(cache=True, inline='always')
def _regressor(model, q, qd, qdd, base, friction, armature, out, V, A, G, Y, fb, W, tau):
    """
    The regressor of one configuration into ``out`` (nv, p); returns a status.

    ``friction``, ``armature``: whether ``out`` has the friction and armature columns
    (module docstring) past the ``10 (nb + 1 if floating else nb)`` inertial ones.
    """
    st = check_inputs(q, qd, qdd, base, NO_FEXT)
    if st != OK:
        return st
    parent = model.parent
    X = model.X
    q_index = model.q_index
    q_mult = model.q_mult
    nbase = model.nbase
    nb = parent.shape[0]
    body_fext(model, NO_FEXT, fb)
    rnea_body(model, q, qd, qdd, base, fb, 1.0, tau[:qd.shape[0]], G, V, A, W)
    out[:, :] = 0.0
    first = 0
    if nbase > 0:   # the base's own block: its wrench is tau[:6]
        body_block(V[0], A[0], Y)
        for c in range(10):
            for r in range(6):
                out[r, c] = Y[c, r]
        first = 10
    for j in range(nb):
        body_block(V[j + 1], A[j + 1], Y)
        o = first + 10 * j
        i = j
        while True:   # (67): Y_j carried to each ancestor i and projected on X_i
            row = nbase + q_index[i]
            m = q_mult[i]
            for c in range(10):
                out[row, o + c] += m * dot6(X[i], Y[c])
            p = parent[i]
            if p < 0 and nbase == 0:
                break
            for c in range(10):   # Ad_{C_{λ,i}}^-T: in the parent's frame
                Ad_invT_apply_into(G[i], Y[c], Y[c])
            if p < 0:
                for c in range(10):
                    for r in range(6):
                        out[r, o + c] += Y[c, r]
                break
            i = p
    o = first + 10 * nb
    n = qd.shape[0] - nbase
    if friction:
        for k in range(n):
            v = qd[nbase + k]
            out[nbase + k, o + k] = v
            out[nbase + k, o + n + k] = 1.0 if v > 0.0 else (-1.0 if v < 0.0 else 0.0)
        o += 2 * n
    if armature:
        for k in range(n):
            out[nbase + k, o + k] = qdd[nbase + k]
    return OK


@njit(**SINGLE_CALL)
def regressor_into(ki, kf, w, q, qd, qdd, base, friction, armature, out):
    """Single configuration: the regressor into ``out`` (nv, p); returns a status."""
    nq, nv = sizes(ki)
    if not (plain(q, nq) and plain(qd, nv) and plain(qdd, nv) and plain_pose(base)):
        return LAYOUT
    model = unpack(ki, kf)
    V, A, G, Y, fb, W, tau = _regressor_work(w, model.parent.shape[0])
    return _regressor(model, q, qd, qdd, base, friction, armature, out, V, A, G, Y, fb, W,
                      tau)


@njit(cache=True, nogil=True)
def regressor_batch(model, Q, QD, QDD, base, friction, armature, out):
    """``out[k]`` = the regressor of configuration ``k`` (one workspace for the batch)."""
    nb = model.parent.shape[0]
    V, A, G, Y, fb, W, tau = _regressor_work(np.empty(regressor_floats(nb)), nb)
    for k in range(Q.shape[0]):
        st = _regressor(model, Q[k], QD[k], QDD[k], at(base, k), friction, armature, out[k],
                        V, A, G, Y, fb, W, tau)
        if st != OK:
            raise_status(st)
    return out
