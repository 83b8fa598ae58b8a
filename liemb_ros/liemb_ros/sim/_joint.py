"""
The Simulator in joint coordinates: explicit RKMK, semi-implicit Euler and the ROS2 W-method.

The state ``(C_base,) (q, V, W)``, its right-hand side (the articulated-body forward
dynamics under the applied, passive, external and contact forces) and the linearly
implicit Rosenbrock step ROS2 with the passive forces' and contacts' Jacobian, the
one-stage semi-implicit Euler step (:meth:`_JointCoordinates._semi_implicit`); the module
docstring of :mod:`liemb_ros.sim.simulator` says when which step is taken.
"""
import numpy as np
from numba import njit

from ._dense import cho_solve as _cho_solve, damped_cholesky as _damped_cholesky
from ._contact_forces import raise_status
from ._contact_step import FIRST_STAGE, NOT_FINITE, SECOND_STAGE, W_MATRIX
from ._contact_step import dense_w_matrix as _dense_w_matrix, ros2_contact_step
from ._contact_step import w_solve_dense as _w_solve_dense
from ..core._kernels.crba import crba_into
from ..core._kernels.dispatch import EYE4, NO_ARM, armature_arg, check, fast
from ._explicit import ExplicitStep
from .passive import all_finite, jacobian_diagonals, jacobian_diagonals_into, limit_state
from .passive import passive_torques
from .contact import REACH_SPEED, is_stiff
from ..core.dynamics import forward_dynamics, forward_dynamics_function
from .integrators import TABLEAUS, SE3, IntegrationError, Product, Stepper, Vector

#: ROS2's γ (Verwer, Spee, Blom & Hundsdorfer 1999): L-stable, order 2 for any Jacobian
_ROS2_GAMMA = 1.0 + 1.0 / np.sqrt(2.0)
#: a step that met contact pairs its Jacobian did not hold is split in halves this deep,
#: then taken again with them held at most :data:`CONTACT_RETAKES` times
CONTACT_SPLITS = 3
CONTACT_RETAKES = 2


class _JointCoordinates:
    """
    State ``y = (C_base,) (q, V, W)`` on ``SE(3) x R^(nq+nv+1)`` (or ``R^(nq+nv+1)``).

    The velocity returned to the integrator is ``(V_base,) (q̇, V̇, Ẇ)``: the body-fixed
    base twist is the left-trivialised derivative of ``C_base`` (``Ċ = C V̂``), ``q̇`` the
    joint part of ``V``, ``V̇`` the forward dynamics and ``Ẇ = q̇ᵀ(τ - D q̇)`` the power.

    ``sim``: the Simulator (its model, parts and passive parameters); ``limits_implicit``:
    a step that starts in a limit or reaches one is a ROS2 step (``damping_method='auto'``
    with limits); ``contact_implicit``: a step with stiff contacts is a ROS2 step with
    their Jacobian (``damping_method`` not ``'explicit'``); ``stiff_limit``: the fastest
    rate times ``dt`` the explicit tableau takes (``STIFF_FRACTION`` of its stability
    limit).
    """

    def __init__(self, sim, *, limits_implicit, contact_implicit, stiff_limit):
        m = self.model = sim.model
        self.sim = sim
        self.nq, self.nv = m.nq, m.nv
        self.nb6 = m.nv - m.nq
        self.o = 16 if m.floating else 0
        n = m.nq + m.nv + 1
        self.space = Product(SE3(), Vector(n)) if m.floating else Vector(n)
        self.semi_implicit = sim.integrator == 'semi_implicit_euler'
        self.stepper = Stepper(self.space, self._f,
                               TABLEAUS['euler' if self.semi_implicit else sim.integrator])
        self.y = np.zeros(self.space.size)
        self._tau = np.zeros(m.nv)
        if self.semi_implicit:   # the armature plus h times the viscous slopes, per step
            self._arm0 = armature_arg(m, 0.0 if sim.armature is None else sim.armature)
            self._arm, self._kq = np.empty(m.nq), np.empty(m.nq)
            self._fd = lambda q, v, tau, base=None: forward_dynamics(
                m, q, v, tau, base_pose=base, armature=self._arm)
        else:
            self._fd = forward_dynamics_function(m, sim.armature)
        self._mass = _mass_function(m, sim.armature)
        self.implicit = sim.damping_method == 'implicit'
        self.limits_implicit = bool(limits_implicit)
        self.limited = bool(np.any(sim.joint_limits.limited))
        self._reaching = np.zeros(m.nq, dtype=np.bool_)
        self.contact = sim.contact
        self._cached = None     # (state, h, contacts) at the end of the last step
        self._met = set()       # keys of the pairs the last step touched (stage, end)
        self._dwc = 0.0         # the contacts' work in the last step (implicit steps)
        self.contact_work = 0.0
        self.contact_implicit = contact_implicit
        self._stiff_limit = stiff_limit
        self._P = np.arange(m.nv - m.nq, m.nv, dtype=np.int64)   # joint entries of V
        self._passive = (sim.damping, sim.friction, sim.friction_velocity, sim.lower,
                         sim.upper, sim.limit_stiffness, sim.limit_damping)
        self._a = a = 6 if m.floating else 0
        o, nq, nv = self.o, m.nq, m.nv
        self._sq, self._sv = slice(o, o + nq), slice(o + nq, o + nq + nv)
        self.v_start = o + nq     # where V begins in y (the Simulator's speed check)
        self._oq, self._ov = slice(a, a + nq), slice(a + nq, a + nq + nv)
        self._tau_joints = self._tau[self.nb6:]
        self._out_template = np.zeros(self.space.dim)
        # the ROS2 step with the contacts compiled whole (_contact_step), where its right-hand
        # side is _f's: the forward dynamics' kernel with a fixed armature, no mimic joints
        self._compiled_contact = (sim.contact is not None and not m.shared_coordinates
                                  and not self.semi_implicit)
        if self._compiled_contact:
            sp = self.space
            self._space_arrays = (sp.kinds, sp.yoff, sp.aoff, sp.dims)
            self._fd_arm = NO_ARM if sim.armature is None else armature_arg(m, sim.armature)
            self._contact_arm = NO_ARM if sim.armature is None else sim.armature
            self._no_force = np.zeros(m.nv)   # the contacts' force where none touches
        # the common case whole in compiled code (its steps are those of self.stepper)
        self.compiled = (None if m.floating or m.shared_coordinates or sim.contact is not None
                         else ExplicitStep(m, self.stepper.tableau, sim.armature, self._passive,
                                           self.limited, self.limits_implicit,
                                           sim.plausible.speed, self.semi_implicit))

    def _f(self, t, y, contact=None):
        q, v = y[self._sq], y[self._sv]
        power = self._load(y, contact)
        vdot = self._fd(q, v, self._tau, y[:16].reshape(4, 4) if self.o else None)
        out = self._out_template.copy()
        a = self._a
        if a:
            out[:6] = v[:6]
        out[self._oq] = v[self.nb6:]
        out[self._ov] = vdot
        out[-1] = power
        return out

    def _load(self, y, contact=None):
        """Set the generalized force ``self._tau`` at ``y``; return its non-conservative power."""
        q = y[self._sq]
        v = y[self._sv]
        qd = v[self.nb6:]
        power = passive_torques(q, qd, self.sim._tau, self._passive, self._tau_joints)
        ext = None
        if self.sim.wrenches.applied:
            ext = self.sim.wrenches.force(q, y[:16].reshape(4, 4) if self.o else None)
            power += float(v @ ext)
        if self.contact is not None:
            at = contact or self.contact.evaluate(q, v, y[:16].reshape(4, 4) if self.o else None)
            gen, pc = at[0], at[1]
            if len(at) > 5 and at[5].size:     # the pairs touching here (a stage, an end)
                self._met.update(at[5].tolist())
            if gen is not None:
                ext = gen if ext is None else ext + gen
                power += pc
        if ext is not None:
            self._tau[:self.nb6] = ext[:self.nb6]
            self._tau_joints += ext[self.nb6:]
        elif self.nb6:
            self._tau[:6] = 0.0
        return power

    def set_state(self, q, qd, base):
        o, nq = self.o, self.nq
        if o:
            self.y[:16] = base.reshape(-1)
        self.y[o:o + nq] = q
        self.y[o + nq:o + nq + self.nv] = qd
        self.y[-1] = 0.0
        self.contact_work = 0.0

    def get_state(self):
        o, nq, nv = self.o, self.nq, self.nv
        base = self.y[:16].reshape(4, 4).copy() if o else None
        return (self.y[o:o + nq].copy(), self.y[o + nq:o + nq + nv].copy(), base,
                float(self.y[-1]))

    def save(self):
        return self.y.copy(), self.contact_work

    def restore(self, saved):
        self.y, self.contact_work = saved

    def advance(self, t, h, depth=0):
        """
        Take one step of ``h`` from ``t``: RKMK, or ROS2 where something is stiff.

        With implicit contacts a step that met a pair its Jacobian did not hold (touching
        at a stage or at the step's end: a foot the step's own motion brought down,
        faster than its velocity at the start said) is taken again from the same state:
        as two steps of ``h/2`` (each of them likewise, down to ``h / 2^``
        :data:`CONTACT_SPLITS`), then with those pairs held (:meth:`_contact_terms`), at
        most :data:`CONTACT_RETAKES` times.  The pair's damper acts on the stage
        explicitly otherwise, and a light foot (``h b / m`` in the hundreds) is thrown off
        the ground; a fast impact (solo12 pushed by 200 N onto its base at 16 m/s) met in
        one step of 1 ms made 360 J from nothing in it, none in steps of 0.5 ms.
        """
        try:
            M, near = None, False
            if self.limited:
                y, sim = self.y, self.sim
                q = y[self._sq]
                near = limit_state(q, y[self._sv][self.nb6:], sim.lower, sim.upper, h,
                                   self._reaching)
                if near == 2:   # a joint reaches its limit: it engages with its inertia now
                    base = y[:16].reshape(4, 4) if self.o else None
                    M = self._mass(q, base)
                    sim.joint_limits.engage(self._reaching, q, base, M)
            if not self.contact_implicit:
                self._plain(t, h, M, near)
                return
            y0, keep, first = self.y, None, None
            for attempt in range(CONTACT_RETAKES + 1):
                held = self._step(t, h, M, near, keep)
                if held is None:         # not stiff with the pairs met: the explicit step holds
                    self.y, self._cached, self._dwc = first
                    break
                missed = self._met.difference(held)
                if not missed or attempt == CONTACT_RETAKES:
                    break
                if first is None:
                    first = self.y, self._cached, self._dwc
                self.y, self._cached = y0, None
                if depth < CONTACT_SPLITS:     # an impact within the step: two halves
                    self.advance(t, 0.5 * h, depth + 1)
                    self.advance(t + 0.5 * h, 0.5 * h, depth + 1)
                    return
                keep = np.array(sorted(missed.union(held)), dtype=np.int64)
            self.contact_work += self._dwc
        except IntegrationError as exc:
            raise ValueError(str(exc)) from None

    def _step(self, t, h, M, near, keep):
        """
        Take the step: ROS2 with the contacts when they are stiff, else as the damping says.

        Returns the keys of the pairs the contacts' Jacobian held (a set), or None when
        with ``keep`` the contacts are still not stiff (the step is not taken);
        ``self._met``: the pairs that touched at any stage (Runge-Kutta or ROS2) or at the
        step's end.
        """
        terms, held = self._contact_terms(h, keep) if self.contact_implicit else (None, ())
        if terms is None and keep is not None:
            return None
        self._dwc = 0.0
        self._met = set()
        if terms is not None:
            self._ros2(t, h, *terms)
        elif self._plain(t, h, M, near):   # the contacts at the end serve the next step too
            at_y1 = self._contact_at(self.y, h)
            self._cached = (self.y[:-1].copy(), h, at_y1)
            self._met.update(at_y1[5].tolist())
        return set(held)

    def _plain(self, t, h, M, near):
        """
        Step without the contacts' Jacobian; True unless it was a ROS2 step.

        ROS2 with ``damping_method='implicit'``; else semi-implicit Euler when chosen (its
        damping is implicit already); else ROS2 if a limit is stiff; else RKMK.
        """
        if self.implicit or (not self.semi_implicit and self.limits_implicit and near > 0):
            self._ros2(t, h, M)
            return False
        if self.semi_implicit:
            self._semi_implicit(t, h)
        else:
            self.y = self.stepper.step(t, self.y, h)
        return True

    def _semi_implicit(self, t, h):
        """
        One semi-implicit Euler step: ``V⁺ = V + h V̇``, ``(C, q)⁺ = (C, q) exp(h V⁺)``.

        ``V̇`` is the forward dynamics with every force at the step's start and the inertia
        ``M + diag(a + h c)``, ``c`` the viscous slopes ``-∂τ/∂q̇`` of the damping, friction
        and limit dampers on the joints (:func:`~.passive.jacobian_diagonals` with ``g =
        0``): the linearly implicit Euler step in the velocity, ``(M + h D) (V⁺ - V) = h
        f``.  The work ``W`` gains ``h`` times the power at the start.  The compiled step
        (:func:`~._explicit.explicit_steps`) does the same operations in the same order.
        """
        y, nb6 = self.y, self.nb6
        c = self._arm
        jacobian_diagonals_into(y[self._sq], y[self._sv][nb6:], self._passive, 0.0, h, c,
                                self._kq)
        c *= h
        c += self._arm0
        k = self._f(t, y)
        self.stepper.n_f += 1
        psi = h * k
        v1 = y[self._sv] + psi[self._ov]
        psi[self._oq] = h * v1[nb6:]
        if self._a:
            psi[:6] = h * v1[:6]
        y1 = self.space.exp_mul(y, psi)
        if not all_finite(y1):
            raise IntegrationError(f'non-finite state after the step at t={t:g} (h={h:g})')
        self.y = y1

    def _contact_terms(self, h, keep=None):
        """
        Return what a ROS2 step with the contacts needs, or None; and the pairs held.

        ``(M, (K, B), at_y)``: the mass matrix, the contacts' Jacobian and their
        evaluation at ``y`` (:meth:`ContactModel.evaluate`'s tuple).  None: no contact is
        near, or
        (unless the method is implicit anyway) their fastest rate
        (:func:`~liemb_ros.sim.contact.is_stiff`) is within :data:`STIFF_FRACTION` of the
        tableau's stability limit, where the explicit tableau keeps its order.  ``held``:
        the keys of the pairs in ``K`` and ``B`` (``keep``'s too), a list.
        """
        y, cached, self._cached = self.y, self._cached, None
        if (keep is None and cached is not None and cached[1] == h
                and np.array_equal(cached[0], y[:-1])):
            at_y = cached[2]      # the last step ended here
        else:
            at_y = self._contact_at(y, h, keep)
        terms = at_y[4]
        if terms is None:
            return None, ()
        K, B, M, held = terms
        held = held.tolist()
        if not self.implicit and not is_stiff(M, K, B, self._stiff_limit / h):
            return None, held
        return (M, (K, B), at_y), held

    def _contact_at(self, y, h=None, keep=None):
        """:meth:`ContactModel.evaluate` at ``y`` (with a step ``h``: and its Jacobian)."""
        base = y[:16].reshape(4, 4) if self.o else None
        q = y[self._sq]
        if h is None:
            return self.contact.evaluate(q, y[self._sv], base)
        return self.contact.evaluate(q, y[self._sv], base, h=h, armature=self.sim.armature,
                                     keep=keep)

    def _ros2(self, t, h, M=None, contact=None, at_y=None):
        """
        One step of ROS2 with the damping Jacobian ``J = [[0, I], [0, -M⁻¹D]]``.

        ``(I - γ h J) k_1 = f(y)``, ``(I - γ h J) k_2 = f(y exp(h k_1)) - 2 k_1``,
        ``y ← y exp(h (3/2 k_1 + 1/2 k_2))``, ``γ = 1 + 1/√2``: order 2 for any ``J`` (a
        W-method), L-stable for the linear damping.  ``J`` holds the damping and the
        kinematics ``q̇ = V`` (its ``q``/base rows: a velocity the damping stops within the
        step moves nothing); not the other forces' derivatives (the method's order does not
        need them).  The work ``W`` has no Jacobian row: ``W ← W + h/2 (P(y) + P(y_2))``.
        The floating base moves on SE(3) by the exponential (an order-2 RKMK update needs
        no dexp⁻¹ correction).  ``contact``: the contacts' ``(K, B)`` (nv, nv), added to
        the joints' diagonal ones (a dense Jacobian, :meth:`_w_solve_dense`); ``M``: the
        mass matrix at ``y`` when known, ``at_y`` the contacts' force and power there.
        With the contacts and no applied wrench the step is :meth:`_ros2_contact`'s, in
        compiled code.
        """
        if contact is not None and self._compiled_contact and not self.sim.wrenches.applied:
            self._ros2_contact(t, h, M, contact, at_y)
            return
        y, space, g = self.y, self.space, _ROS2_GAMMA * h
        base = y[:16].reshape(4, 4) if self.o else None
        q = y[self._sq]
        if M is None:
            M = self._mass(q, base)
        c, kq = jacobian_diagonals(q, y[self._sv][self.nb6:], self._passive, g, h)
        if contact is None:
            L = _damped_cholesky(M, self._P, c, g)
            solve = self._w_solve
        else:
            L = np.empty_like(M)
            ok, c, kq = _dense_w_matrix(M, contact[0], contact[1], self._P, c, kq, g, L)
            if not ok:
                L = None
            solve = self._w_solve_dense
        if L is None:
            raise ValueError('the mass matrix is not positive definite')
        k1 = self._f(t, y, at_y)
        p0 = k1[-1]
        solve(L, g, k1, c, kq)
        y2 = space.exp_mul(y, h * k1)
        k2 = self._f(t + h, y2)
        k2 -= 2.0 * k1
        solve(L, g, k2, c, kq)
        y1 = space.exp_mul(y, h * (1.5 * k1 + 0.5 * k2))
        if not all_finite(y1):
            raise IntegrationError(f'non-finite state after the step at t={t:g} (h={h:g})')
        if self.contact_implicit:
            # the contacts at y1 (with their Jacobian) serve the next step too
            at_y1 = self._contact_at(y1, h)
            self._cached = (y1[:-1].copy(), h, at_y1)
            self._met.update(at_y1[5].tolist())
            if contact is not None:
                # the work by the trapezoidal rule on the step's ends, not on the stage
                # y2: a contact the step stops has a y2 far from the solution, and its
                # damper's power there over-counts the dissipation
                y1[-1] = y[-1] + 0.5 * h * (p0 + self._load(y1, at_y1[:2]))
                self._dwc = 0.5 * h * (at_y[1] + at_y1[1])
        self.y = y1

    def _ros2_contact(self, t, h, M, contact, at_y):
        """
        :meth:`_ros2` with the contacts, whole in one compiled call (:mod:`._contact_step`).

        Bit for bit the Python path's step (without applied wrenches), its errors the same;
        the contacts at the step's end serve the next step (``self._cached``).
        """
        y, cm, m = self.y, self.contact, self.model
        spheres, planes, law, work = cm.kernel_args()
        stage, end = cm.outputs(False), cm.outputs(True)
        y1 = np.empty(y.shape[0])
        gen = at_y[0]
        where, st, at_stage, at_end = ros2_contact_step(
            m.packed_int, m.packed_float, m.data.work, self._space_arrays, self.o, y, h,
            _ROS2_GAMMA * h, M, contact[0], contact[1], self._P,
            (self._no_force if gen is None else gen, gen is not None, at_y[1]), self._passive,
            self.sim._tau, self._tau, self._fd_arm, spheres, planes, law, h * REACH_SPEED,
            self._contact_arm, work, stage, end, y1)
        if at_y[5].size:
            self._met.update(at_y[5].tolist())
        if where == W_MATRIX:
            raise ValueError('the mass matrix is not positive definite')
        if where in (FIRST_STAGE, SECOND_STAGE):
            check(m, st)
        if where == NOT_FINITE:
            raise IntegrationError(f'non-finite state after the step at t={t:g} (h={h:g})')
        if where:
            raise_status(m, st)
        self._met.update(stage[5][:at_stage[3]].tolist())
        at_y1 = cm.result(at_end, end)
        self._cached = (y1[:-1].copy(), h, at_y1)
        self._met.update(at_y1[5].tolist())
        self._dwc = 0.5 * h * (at_y[1] + at_y1[1])
        self.y = y1

    def _w_solve(self, L, g, k, c, kq):
        """
        ``k ← (I - g J)⁻¹ k`` with ``J = [[0, I], [-M⁻¹K, -M⁻¹B]]``.

        ``k_V ← k_V - g (M + g B + g² K)⁻¹ ((B + g K) k_V + K k_q)``, then
        ``k_q ← k_q + g k_V``; ``c = diag(B + g K)``, ``kq = diag(K)`` on the joints.
        """
        v = k[self._ov]
        a = self._a
        _w_solve(L, self._P, c, kq * k[a:a + self.nq], g, v)
        k[:self._ov.start] += g * v

    def _w_solve_dense(self, L, g, k, A, K):
        """
        :meth:`_w_solve` with dense ``A = B + g K`` and ``K`` (nv, nv) on all velocities.

        ``k_V ← k_V - g (M + g A)⁻¹ (A k_V + K k_x)``, ``k_x ← k_x + g k_V`` (``k_x``: the
        base twist and ``q̇`` entries, the first nv of ``k``).
        """
        _w_solve_dense(L, A, K, g, k, self._ov.start)

    def extra_diagnostics(self):
        return {}


def _mass_function(model, armature=None):
    """
    Return ``mass(q, base) -> M(q) + diag(0_6, armature)``, bound to ``model``.

    :func:`~liemb_ros.core.dynamics.mass_matrix` without its argument checks and packing, for
    the step: ``q`` (nq,) and ``base`` (4, 4) or None must be float64 C-contiguous arrays
    (views of the state are).  NaN/inf still raise ValueError (checked in the kernel).
    """
    ki, kf, w, nv = model.packed_int, model.packed_float, model.data.work, model.nv
    zeros = np.zeros(nv)
    a = nv - model.nq
    arm = None if armature is None else np.array(armature, dtype=float)

    def mass(q, base=None):
        out = np.empty((nv, nv))
        st = fast(model, ('crba', base is None), crba_into,
                  (ki, kf, w, q, zeros, EYE4 if base is None else base, False, out))
        if st:
            check(model, st)
        if arm is not None:
            diag = out.reshape(-1)[a * (nv + 1)::nv + 1]
            diag += arm
        return out
    return mass


@njit(cache=True)
def _w_solve(L, P, c, e, g, v):
    """``v ← v - g L⁻ᵀL⁻¹ (c v + e)`` in place (``c``, ``e`` on the entries ``P``)."""
    r = np.zeros(v.shape[0])
    for j in range(P.shape[0]):
        r[P[j]] = c[j] * v[P[j]] + e[j]
    _cho_solve(L, r)
    for i in range(v.shape[0]):
        v[i] -= g * r[i]
