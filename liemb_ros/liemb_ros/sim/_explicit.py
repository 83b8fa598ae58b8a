"""
The Simulator's explicit step compiled whole: fixed base, joint coordinates, no contact.

MuJoCo steps in compiled code with no interpreter between the stages of a step; this
module does the same for the commonest case of :class:`~liemb_ros.sim.simulator.Simulator`
(a fixed base in joint coordinates, an explicit RKMK tableau or semi-implicit Euler, no
contact): :func:`explicit_steps` takes up to ``n`` whole steps in one call, each one the
stages of the tableau (or semi-implicit Euler's one) over the right-hand side of
:mod:`._joint` (the applied torque, the passive torques of
:func:`~liemb_ros.sim.passive.passive_torques`, the articulated-body forward dynamics with
the armature, the power ``Ẇ``), the update and the Simulator's check of the new state
(:func:`~liemb_ros.sim._plausible.state_flag`).

The state is ``y = (q, q̇, W)`` on ``R^(2 nq + 1)``, where RKMK is the classical
Runge-Kutta method.  The results are bit for bit those of the Python path
(``_JointCoordinates._f`` under :class:`~liemb_ros.sim.integrators.Stepper`): the same
kernels, the same operations in the same order; the stage sums with two weights or more
and the update's ``b @ K`` go, as numpy's ``@`` does, through BLAS ``dgemv`` (numba's
``np.dot``), whose summation order (fused, blocked) a loop would not reproduce.

The loop stops, leaving the step to the Python path (which takes it and raises what it
raises), before a step that it does not take the same way: one that starts in a limit
while the limits are integrated implicitly, or reaches a limit (the limit engages with
the inertia then, :meth:`~liemb_ros.sim.passive.JointLimits.engage`), or whose result is
not finite, too fast or from a kernel that refused its input.  It also stops after the
step that makes the step count a multiple of 100, where the Simulator checks the energy
books and the stiffness (:meth:`~liemb_ros.sim.simulator.Simulator.check`).
"""
import numpy as np
from numba import njit

from ..core._kernels.aba import _aba_work, aba_inlined
from ..core._kernels.dispatch import OK, armature_arg
from ..core._kernels.jacobian import jacobian_link
from ..core._kernels.layout import unpack
from ._plausible import state_flag
from .passive import all_finite, jacobian_diagonals_into, limit_state, passive_torques


class ExplicitStep:
    """
    The workspace of :func:`explicit_steps` for one Simulator (allocated once).

    ``model``: the fixed-base model; ``tableau``: an explicit
    :class:`~liemb_ros.sim.integrators.Tableau`; ``armature`` (nq,) or None; ``passive``:
    the tuple of :func:`~liemb_ros.sim.passive.passive_torques` (its arrays are the
    Simulator's, changed in place); ``limited``: whether any joint has a limit;
    ``limits_implicit``: whether a step that starts in a limit is a ROS2 step
    (``damping_method='auto'`` with limits); ``speed`` (nq,): the joints' plausible
    speeds (``Simulator.plausible.speed``); ``semi_implicit``: semi-implicit Euler steps
    (``_JointCoordinates._semi_implicit``) instead of the tableau's.
    """

    def __init__(self, model, tableau, armature, passive, limited, limits_implicit, speed,
                 semi_implicit=False):
        m = model
        s, nq = tableau.stages, m.nq
        dim = 2 * nq + 1
        self._ki, self._kf, self._w = m.packed_int, m.packed_float, m.data.work
        self._arm = (armature_arg(m, 0.0 if armature is None else armature) if semi_implicit
                     else np.zeros(0) if armature is None else armature_arg(m, armature))
        self._passive = passive
        self._speed = speed
        self._flags = np.array([nq, s, limited, limits_implicit, semi_implicit],
                               dtype=np.int64)
        # the tableau: a (s, s), b (s,); per stage the nonzero columns of a's row
        self._tab = np.concatenate([tableau.a.reshape(-1), tableau.b])
        nz = np.zeros((s, s + 1), dtype=np.int64)
        for j in range(s):
            cols = np.nonzero(tableau.a[j, :j])[0]
            nz[j, 0] = cols.size
            nz[j, 1:1 + cols.size] = cols
        self._nz = nz
        # stage derivatives K (s, dim), psi, the stage state, the new state, the torque,
        # the weights of a stage, the update b @ K; for the wrenches: their generalized
        # force, one's Jᵀ W, a Jacobian; semi-implicit Euler's inertia and slopes; last, the
        # identity base pose
        self._buf = np.zeros(s * dim + 4 * dim + nq + s + 16 + 10 * nq)
        self._buf[-16:] = np.eye(4).reshape(-1)
        self._reaching = np.zeros(nq, dtype=np.bool_)
        self.stages = s

    def run(self, y, t, steps, n, dt, tau, wrenches, work_done):
        """
        Take up to ``n`` steps of ``dt`` from ``y`` (in place), time ``t``, step count ``steps``.

        ``tau`` (nq,): the applied torque after the effort limits, held over the steps;
        ``wrenches``: ``AppliedWrenches.arrays``; ``work_done`` (nw,): their work so far,
        updated in place.  Returns ``(k, t)``: the steps taken and the time after them.
        """
        return explicit_steps(self._ki, self._kf, self._w, self._arm, self._passive,
                              self._speed, self._flags, self._tab, self._nz, self._buf,
                              self._reaching, tau, *wrenches, work_done, y, t, dt, steps, n)

    def take(self, backend, wrenches, t, steps, n, dt, tau):
        """
        :meth:`run` on a Simulator's ``backend`` state, its ``wrenches``' work booked.

        ``backend``: the ``_JointCoordinates`` whose ``y`` it advances (its function-call
        count ``stepper.n_f`` counted); ``wrenches``: the
        :class:`~liemb_ros.sim._wrenches.AppliedWrenches`.  Returns ``(k, t)`` as
        :meth:`run`.
        """
        work = wrenches.work_so_far()
        k, t1 = self.run(backend.y, t, steps, n, dt, tau, wrenches.arrays, work)
        if k:
            backend.stepper.n_f += k * self.stages
            wrenches.compiled_work(t, t1, work)
        return k, t1


@njit(cache=True, inline='always')
def _rhs(model, work, arm, y, nq, tau_cmd, passive, wrenches, scratch, out):
    """
    ``out = (q̇, q̈, Ẇ)`` at ``y = (q, q̇, W)``: ``_JointCoordinates._f`` for a fixed base.

    ``wrenches = (ki, kf, links, reps, W)``: the external wrenches (``W`` (nw, 6)), their
    generalized force ``Σ Jᵀ W`` added to the torque and its power to ``Ẇ``;
    ``scratch = (tau, ext, J, jw, base, fext)``.  Returns the first kernel status that is
    not ``OK``, else ``OK``.
    """
    tau, ext, J, jw, base, fext = scratch
    q = y[:nq]
    qd = y[nq:2 * nq]
    power = passive_torques(q, qd, tau_cmd, passive, tau)
    ki, kf, links, reps, W = wrenches
    if links.shape[0] > 0:
        ext[:] = 0.0
        for w in range(links.shape[0]):
            st = jacobian_link(ki, kf, q, links[w], reps[w], J)
            if st != OK:
                return st
            np.dot(J.T, W[w], jw)
            for i in range(nq):
                ext[i] += jw[i]
        power += np.dot(qd, ext)
        for i in range(nq):
            tau[i] += ext[i]
    st = aba_inlined(model, q, qd, tau, base, fext, out[nq:2 * nq], work, arm)
    for i in range(nq):
        out[i] = qd[i]
    out[2 * nq] = power
    return st


@njit(cache=True)
def explicit_steps(ki, kf, w, arm, passive, speed, flags, tab, nz, buf, reaching, tau_cmd,
                   links, reps, W, work_done, y, t, dt, steps, n):
    """
    Take up to ``n`` explicit RKMK steps of ``dt`` from ``y`` in place; return ``(k, t)``.

    ``flags = (nq, stages, limited, limits_implicit, semi_implicit)``; ``tab``: the
    tableau's ``a`` and ``b``, flat; ``nz[j] = (count, columns...)``: the nonzero entries
    of row ``j`` of ``a``; ``buf``: the workspace of :class:`ExplicitStep`; ``steps``: the
    step count before the first step (the loop stops after the one that makes it a
    multiple of 100).
    ``links``, ``reps``, ``W``: the external wrenches (``AppliedWrenches.arrays``);
    ``work_done`` (nw,): each one's work, to which every step adds its power at the step's
    start times ``dt`` (``AppliedWrenches.add_work``).
    A step the Python path must take (module docstring) is not taken.  Semi-implicit
    Euler (``flags[4]``): one stage with the inertia ``arm + dt c``, ``c`` the viscous
    slopes (``_JointCoordinates._semi_implicit``, the same operations in the same order);
    it takes the steps that start in a limit too (its limit dampers are implicit).
    """
    model = unpack(ki, kf)
    work = _aba_work(w, model.parent.shape[0])
    nq, s, limited, limits_implicit = flags[0], flags[1], flags[2], flags[3]
    semi = flags[4]
    dim = y.shape[0]
    a = tab[:s * s].reshape((s, s))
    b = tab[s * s:s * s + s]
    o = s * dim
    K = buf[:o].reshape((s, dim))
    psi = buf[o:o + dim]
    ys = buf[o + dim:o + 2 * dim]
    y1 = buf[o + 2 * dim:o + 3 * dim]
    phi = buf[o + 3 * dim:o + 4 * dim]
    o += 4 * dim
    tau = buf[o:o + nq]
    hw = buf[o + nq:o + nq + s]
    o += nq + s
    ext = buf[o:o + nq]
    jw = buf[o + nq:o + 2 * nq]
    J = buf[o + 2 * nq:o + 8 * nq].reshape((6, nq))
    arm_h = buf[o + 8 * nq:o + 9 * nq]
    kq = buf[o + 9 * nq:o + 10 * nq]
    base = buf[buf.shape[0] - 16:].reshape((4, 4))
    scratch = (tau, ext, J, jw, base, buf[:0].reshape((0, 6)))
    wrenches = (ki, kf, links, reps, W)
    power = np.empty(links.shape[0])
    lo, hi = passive[3], passive[4]
    for k in range(n):
        if limited:
            near = limit_state(y[:nq], y[nq:2 * nq], lo, hi, dt, reaching)
            if near == 2 or (near == 1 and limits_implicit and not semi):
                return k, t
        for i in range(links.shape[0]):     # each wrench's power at the step's start
            if jacobian_link(ki, kf, y[:nq], links[i], reps[i], J) != OK:
                return k, t
            np.dot(J.T, W[i], jw)
            power[i] = np.dot(y[nq:2 * nq], jw)
        if semi:
            jacobian_diagonals_into(y[:nq], y[nq:2 * nq], passive, 0.0, dt, arm_h, kq)
            for i in range(nq):
                arm_h[i] = arm[i] + dt * arm_h[i]
            if _rhs(model, work, arm_h, y, nq, tau_cmd, passive, wrenches, scratch,
                    K[0]) != OK:
                return k, t
            for i in range(nq):
                v1 = y[nq + i] + dt * K[0, nq + i]
                y1[nq + i] = v1
                y1[i] = y[i] + dt * v1
            y1[2 * nq] = y[2 * nq] + dt * K[0, 2 * nq]
        else:
            for j in range(s):
                m = nz[j, 0]
                if m == 0:
                    ys[:] = y
                elif m == 1:
                    c = nz[j, 1]
                    f = dt * a[j, c]
                    for i in range(dim):
                        psi[i] = K[c, i] * f
                        ys[i] = y[i] + psi[i]
                else:
                    for i in range(m):
                        hw[i] = dt * a[j, nz[j, 1 + i]]
                    np.dot(hw[:m], K[nz[j, 1:1 + m]], psi)
                    for i in range(dim):
                        ys[i] = y[i] + psi[i]
                if _rhs(model, work, arm, ys, nq, tau_cmd, passive, wrenches, scratch,
                        K[j]) != OK:
                    return k, t
            np.dot(b, K, phi)
            for i in range(dim):
                y1[i] = y[i] + dt * phi[i]
        if not all_finite(y1) or state_flag(y1, nq, speed) != 0:
            return k, t
        y[:] = y1
        for i in range(links.shape[0]):
            work_done[i] += power[i] * dt
        t += dt
        steps += 1
        if steps % 100 == 0:
            return k + 1, t
    return n, t
