"""
Simulate a URDF robot with the Lie group integrators (what the simulation node steps).

:class:`Simulator` integrates a :class:`~liemb_ros.core.model.Model` in time under applied
joint torques, in one of two sets of coordinates:

``coordinates='joint'``
    The state is ``(C_base, q, V)``: a floating base's pose ``C_base`` on SE(3) (integrated
    on the group, ``Ċ = C V̂_base``, never with Euler angles), the joint positions ``q``
    (nq,) and ``V`` (nv,) = ``(V_base^b, q̇)``; accelerations from the O(n) articulated-body
    algorithm, steps by Munthe-Kaas Runge-Kutta on SE(3) x R^k ([MT14]).
``coordinates='absolute'``
    Every body on SE(3) or SO(3)xR3 (``update='se3' | 'so3r3' | 'tailored'``), the joints
    lower-pair constraints (:mod:`liemb_ros.sim.mbs`, the index-1 formulation of [MT14],
    [MT13]): the same robot, the papers' way, with the constraint violation reported.

Real robots' URDFs run as they are: stiff damping, joint position and effort limits,
friction, ground contact and plausibility checks, each described with its argument in
:class:`Simulator`'s docstring (docs/simulation.md and docs/contact.md: the behaviour;
CHANGELOG.md: the measurements behind each choice).  A state that is not finite, too
fast, off its energy books or too deep in a plane stops the simulation with a
:class:`SimulationError` naming the inputs that drove it, and the last good state stays.
The work of the torques, damping, friction and limit dampers ``W`` is integrated with the
state, so ``energy_balance_error = E - E0 - W`` is the integration error.

The parts: this module (the :class:`Simulator`, its checks and diagnostics), ``_joint``
(joint coordinates: the right-hand side, RKMK and ROS2), ``passive`` (damping, friction,
limits; :class:`~liemb_ros.sim.passive.JointLimits`), ``_absolute``, ``_energy``
(:func:`mechanical_energy`, :func:`momentum`; :class:`~liemb_ros.sim._energy.EnergyBooks`),
``_wrenches`` (:class:`~liemb_ros.sim._wrenches.AppliedWrenches`), ``_armature`` (massless
joints) and ``_plausible`` (the bounds).  The Simulator owns one object of each class named
here: its ``joint_limits``, ``books`` and ``wrenches``.
"""
import time

import numpy as np

from ._absolute import _AbsoluteCoordinates
from ._armature import AUTO_ARMATURE, SimulationWarning  # noqa: F401 (public here)
from ._armature import resolve_armature
from ._damping import STABILITY_LIMIT, STIFF_FRACTION  # noqa: F401 (public here)
from ._damping import DampingMethod
from ._energy import com_moments, mechanical_energy, momentum  # noqa: F401 (public here)
from ._energy import EnergyBooks
from ._joint import _JointCoordinates
from .passive import LIMIT_MIN_STEPS, damping_rate_max  # noqa: F401 (public here)
from .passive import JointLimits, all_finite
from ._plausible import Plausibility, clamp_torques, initial_state, one_of, per_joint, state_flag
from ._wrenches import AppliedWrenches

COORDINATES = ('joint', 'absolute')
UPDATES = ('se3', 'so3r3', 'tailored')
DAMPING_METHODS = ('auto', 'explicit', 'implicit')

#: joint limits: time constant ``τ_c`` [s] of the critically damped limit spring-damper
LIMIT_TIME_CONSTANT = 0.01
#: Coulomb friction ``-F tanh(q̇ / v_s)``: regularisation velocity ``v_s`` [rad/s or m/s]
FRICTION_VELOCITY = 1e-3


class SimulationError(RuntimeError):
    """The simulation diverged (the message says why); the last good state is kept."""


#: fixed-step explicit tableaus the Simulator accepts (names of integrators.TABLEAUS), and
#: the one-stage semi-implicit Euler step (joint coordinates)
INTEGRATORS = ('euler', 'heun', 'midpoint', 'rk3', 'rk4', 'rk38', 'semi_implicit_euler')


class Simulator:
    """
    Step a robot forward in time: ``sim.step(tau, n)``; state in ``t, q, qd, base_pose``.

    Parameters
    ----------
    model : Model
    dt : float
        Integration step [s].
    integrator : str
        Explicit RKMK tableau, one of :data:`INTEGRATORS` (``'rk4'``: classical 4th order),
        or ``'semi_implicit_euler'`` (joint coordinates): one forward-dynamics pass a step,
        ``q̇⁺ = q̇ + h (M + diag(a + h c))⁻¹ f(q, q̇)``, ``q⁺ = q ⊕ h q̇⁺`` (the base on
        SE(3): ``C exp(h V⁺)``), where ``f`` is every force at the step's start, ``a`` the
        armature and ``c = -∂τ/∂q̇`` the viscous slopes of the damping, the friction and
        the limit dampers (:func:`~liemb_ros.sim.passive.jacobian_diagonals`; the limit
        springs explicit, stable by their time constant of at least 2 ``dt``): first
        order (its energy error too: it is not symplectic in joint coordinates), stable
        for any damping, a quarter of RK4's cost.  With damping and armature it is
        MuJoCo's ``Euler`` integrator, to round-off.
    coordinates : ``'joint'`` | ``'absolute'``
        See the module docstring.
    update : ``'se3'`` | ``'so3r3'`` | ``'tailored'``
        Body configuration update in absolute coordinates (ignored for joint coordinates,
        where a floating base is always on SE(3)).  ``'tailored'``: SE(3) for bodies
        attached to the ground by a joint, SO(3)xR3 for the others ([MT13]).
    damping : None, float or (nq,) array
        Viscous joint damping [N m s/rad or N s/m]; None: the URDF ``<dynamics damping>``.
    damping_method : ``'auto'`` | ``'explicit'`` | ``'implicit'``
        Joint coordinates: how the damping torque ``-D q̇`` is integrated (module
        docstring).  ``'explicit'``: inside the Runge-Kutta right-hand side (the tableau's
        order; unstable once ``dt · λ_max(M⁻¹D)`` passes the tableau's stability limit,
        2.785 for RK4).  ``'implicit'``: the linearly implicit Rosenbrock method ROS2 with
        the damping Jacobian (order 2, L-stable in the damping: stable and right in the
        overdamped limit for any damping; ``integrator`` is then not used).  ``'auto'``:
        ``'implicit'`` when ``dt · λ_max`` exceeds :data:`STIFF_FRACTION` of the tableau's
        limit at ``q0`` or, checked every 100 steps, later (the switch is kept until
        :meth:`reset`), else ``'explicit'``.  The choice is ``self.damping_method``;
        ``self.damping_stiffness`` is ``dt · λ_max`` at ``q0``.
    armature : ``'auto'``, float or (nq,) array
        Rotor inertia added to each joint's diagonal of the mass matrix, ``M + diag(a)``
        [kg m² or kg] (Pinocchio's ``model.armature``, MuJoCo's ``armature``).
        ``'auto'``: zero, except at joints that carry no inertia at ``q0`` (massless
        leaves: :func:`~liemb_ros.core.dynamics.singular_joints`), which get
        :data:`AUTO_ARMATURE` ``· max_j M_jj(q0)``, with a warning naming them.  With
        an explicit armature that leaves such joints, the constructor raises ValueError
        naming them.  Joint coordinates only.  ``self.armature`` is the one in use.
    q0, qd0, base_pose : arrays, optional
        Initial joint positions (nq,), generalized velocity (nv,) and, for a floating base,
        the base pose (4, 4); defaults: neutral, rest, identity.
    limits : bool
        Joint position limits from the URDF (``self.lower``, ``self.upper``; ±inf: none).
    limit_time_constant, limit_damping_ratio : float
        ``τ_c`` [s] (:data:`LIMIT_TIME_CONSTANT`) and ``ζ`` of the limit spring-damper
        ``k_j = m_j / (τ_c ζ)²``, ``b_j = 2 m_j / τ_c``, ``m_j = 1 / (M⁻¹)_jj(q0)`` as in
        MuJoCo (a joint whose inertia falls below ``k_j (2 dt ζ)²`` engages with a time
        constant of ``2 dt``, MuJoCo's ``refsafe``: chains through massless bodies lose up
        to 1700x of that inertia): a joint driven into its limit with torque τ settles ``τ
        / k_j`` past it.  Under ``damping_method='auto'`` a step that reaches a limit is a
        ROS2 step with the spring in its Jacobian.  The springs' energy is potential.
    friction : None, float or (nq,) array
        Coulomb friction level F [N m or N]; None: the URDF ``<dynamics friction>``.
    friction_velocity : float
        ``v_s`` of ``-F tanh(q̇ / v_s)`` [rad/s or m/s]: a torque ``τ < F`` holds the joint
        creeping at ``v_s atanh(τ / F)``.
    effort_limits : bool
        Clamp the applied torque to ``±<limit effort>`` (``self.effort_limit``; a URDF
        effort of 0 means none).
    max_energy_error : float
        Stop when ``|E - E0 - W| > max_energy_error * (1 + |T| + |U - U0| + |W|)``.
    contact : :class:`~liemb_ros.sim.contact.ContactModel`, optional
        Ground contact of the collision geometry with planes (issue 21; joint coordinates).
        Its force enters every stage's right-hand side, its springs' energy ``½ k p²`` the
        potential and its damping and friction the work ``W``.  With ``damping_method``
        ``'auto'`` or ``'implicit'`` a step in which a contact touches, or reaches its plane
        at its velocity, is a ROS2 step with the contacts' stiffness and damping in its
        (dense) Jacobian: a light foot under a stiff contact has rates ``b / m_foot`` far
        beyond any explicit tableau's limit at 1 ms; a step that meets a contact its
        Jacobian did not hold is taken again (halved, then with that contact).  None
        (default): no contact, the behaviour is unchanged.

    """

    def __init__(self, model, *, dt=1e-3, integrator='rk4', coordinates='joint',
                 update='tailored', damping=None, q0=None, qd0=None, base_pose=None,
                 max_energy_error=0.5, damping_method='auto', armature='auto',
                 limits=True, limit_time_constant=LIMIT_TIME_CONSTANT,
                 limit_damping_ratio=1.0, friction=None,
                 friction_velocity=FRICTION_VELOCITY, effort_limits=True, contact=None):
        one_of(integrator, 'integrator', INTEGRATORS)
        one_of(coordinates, 'coordinates', COORDINATES)
        if integrator == 'semi_implicit_euler' and coordinates != 'joint':
            raise ValueError("integrator 'semi_implicit_euler' needs joint coordinates")
        one_of(update, 'update', UPDATES)
        if not (np.isfinite(dt) and dt > 0):
            raise ValueError(f'dt must be a positive number of seconds, got {dt!r}')
        one_of(damping_method, 'damping_method', DAMPING_METHODS)
        self.model = model
        self.dt = float(dt)
        self.integrator = integrator
        self.coordinates = coordinates
        self.update = update
        self.max_energy_error = float(max_energy_error)
        self.damping = per_joint(model.damping if damping is None else damping, model.nq,
                                 'damping')
        self._q0, self._qd0, self._base0 = initial_state(model, q0, qd0, base_pose)
        self.plausible = Plausibility(model, self._q0, self._base0)
        self.armature = resolve_armature(model, armature, coordinates == 'joint', self._q0,
                                         self._base0)
        self.friction = per_joint(model.friction if friction is None else friction, model.nq,
                                  'friction')
        if not (np.isfinite(friction_velocity) and friction_velocity > 0):
            raise ValueError(f'friction_velocity must be positive, got {friction_velocity!r}')
        self.friction_velocity = float(friction_velocity)
        lim = self.joint_limits = JointLimits(model, self._q0, self._base0, self.armature,
                                              self.dt, limits, limit_time_constant,
                                              limit_damping_ratio)
        # the part's own arrays (changed in place only), under the Simulator's public names
        self.lower, self.upper = lim.lower, lim.upper
        self.limit_stiffness, self.limit_damping = lim.stiffness, lim.damping
        eff = model.effort_limit
        self.effort_limit = (np.where(np.isfinite(eff) & (eff > 0), eff, np.inf)
                             if effort_limits else np.full(model.nq, np.inf))
        self.damping_choice = DampingMethod(model, self.dt, integrator, coordinates == 'joint',
                                            damping_method, (self.damping, self.friction,
                                                             self.limit_damping,
                                                             self.friction_velocity), self._q0,
                                            self._base0, self.armature)
        self._tau = np.zeros(model.nq)
        self.wrenches = AppliedWrenches(model)
        if contact is not None:
            if coordinates != 'joint':
                raise ValueError('contact needs joint coordinates')
            if getattr(contact, 'model', None) is not model:
                raise ValueError('the contact model was made for another robot model')
            self.plausible.start_depth(contact, self._q0, self._qd0, self._base0)
        self.contact = contact
        self.books = EnergyBooks(model, self.armature, self.joint_limits, contact)
        self._backend = (_JointCoordinates(
            self, limits_implicit=damping_method == 'auto' and np.any(self.limit_stiffness > 0),
            contact_implicit=contact is not None and damping_method != 'explicit',
            stiff_limit=self.damping_choice.stiff_limit) if coordinates == 'joint'
            else _AbsoluteCoordinates(self))
        self._v_start = getattr(self._backend, 'v_start', -1)   # joint coordinates: V in y
        # fixed base, joint coordinates, no contact: explicit steps in compiled code
        self._compiled = getattr(self._backend, 'compiled', None)
        self.reset()

    def set_wrench(self, link, wrench, frame='link'):
        """
        Apply an external wrench ``(m, f)`` (6,) [N m, N] to ``link`` from now on.

        ``frame='link'``: moment and force in the link frame, the force acting at the link
        frame's origin (a follower load: it turns with the link).  ``'world'``: world axes,
        about the link frame's origin (a push of fixed direction).  Its generalized force
        is ``Jᵀ W`` with the body (``'link'``) or hybrid (``'world'``) Jacobian, evaluated
        at every stage of the step; its work is part of ``work``.  A zero wrench or
        :meth:`clear_wrenches` removes it.  Joint coordinates only.  A force beyond
        ``self.plausible.force`` (100 times the robot's weight) or a moment beyond
        ``self.plausible.moment`` (that force at the robot's size) raises ValueError with
        the bound (:mod:`liemb_ros.sim._plausible`).
        """
        if self.coordinates != 'joint':
            raise ValueError('external wrenches need joint coordinates')
        self.wrenches.apply(link, wrench, frame, self.plausible)

    def clear_wrenches(self):
        """Remove every external wrench."""
        self.wrenches.clear()

    @property
    def wrench_work(self):
        """``{link: [work J, largest force N, first t, last t]}`` of each external wrench."""
        return self.wrenches.work

    @property
    def damping_method(self):
        """``'explicit'`` or ``'implicit'``: the step the damping takes now."""
        return self.damping_choice.method

    @property
    def damping_stiffness(self):
        """``dt · λ_max(M⁻¹D)`` at ``q0`` (or the largest along the way under ``'auto'``)."""
        return self.damping_choice.stiffness

    def _set_method(self, method):
        self.damping_choice.method = method
        if self.coordinates == 'joint':
            self._backend.implicit = method == 'implicit'

    # -- state ------------------------------------------------------------------------------
    def reset(self):
        """Go back to the initial state at ``t = 0``."""
        self.t = 0.0
        self.steps = 0
        self.wall_time = 0.0
        self.wrenches.work = {}
        self._set_method(self.damping_choice.initial)
        self.joint_limits.reset()
        self._backend.set_state(self._q0, self._qd0, self._base0)   # its work W = 0
        self._read()
        self.books.open(self.q, self.qd, self.base_pose)
        self._good = (self._backend.save(), self.t, self.steps)

    def contacts(self):
        """
        Return the contacts now: a list of :data:`liemb_ros.sim.contact.Contact`.

        Each: ``link``, ``point`` (3,) on the plane under the touching sphere's centre,
        ``normal`` (3,) of the plane, ``force`` (3,) on the robot (normal and friction)
        [N], ``penetration`` [m], ``plane`` (index); all in the world frame.  Empty
        without contact.
        """
        if self.contact is None:
            return []
        return self.contact.evaluate(self.q, self.qd, self.base_pose, forces=True)[3]

    def _read(self):
        self.q, self.qd, self.base_pose, self.work = self._backend.get_state()

    def step(self, tau=None, n=1):
        """
        Advance ``n`` steps of ``dt`` with joint torques ``tau``; see :meth:`diagnostics`.

        ``tau`` is (nq,) [N m or N] held constant over the ``n`` steps, or a callable
        ``tau(t)`` evaluated at the start of every step; None means zero.  A torque beyond
        ``self.plausible.torque`` raises ValueError with the bound; within it, the effort
        limits clamp it.  Raises :class:`SimulationError` on divergence, naming the input
        that drove it (:meth:`check`; the state is left at the last good step).
        """
        start = time.perf_counter()
        held = None if callable(tau) else (
            np.zeros(self.model.nq) if tau is None else self._torque(tau))
        n, done = int(n), 0
        while done < n:
            self._tau = held if held is not None else self._torque(tau(self.t))
            k = self._compiled_steps(n - done if held is not None else 1)
            if k:
                done += k
                if self.steps % 100 == 0:
                    self._periodic_check()
                continue
            if self.wrenches.applied:
                q, V, base, _ = self._backend.get_state()
                self.wrenches.add_work(q, V, base, self.t, self.dt)
            saved = self._backend.save()
            try:
                self._backend.advance(self.t, self.dt)
            except ValueError as exc:  # a kernel refused a non-finite state
                self._backend.restore(saved)
                self._read()
                raise SimulationError(f'diverged in the step from t = {self.t:.6g} s ({exc}); '
                                      f'{self.plausible.blame(self)}') from None
            self.t += self.dt
            self.steps += 1
            done += 1
            self._check(saved)
        self._read()
        self.wall_time += time.perf_counter() - start

    def _compiled_steps(self, n):
        """
        Take up to ``n`` steps in compiled code (:mod:`._explicit`); return how many.

        Only explicit steps, with external wrenches on links only; 0 where the next step is
        the Python path's (a ROS2 step, a limit reached, a state to refuse: it raises).
        """
        fast = self._compiled
        if fast is None or self.damping_method == 'implicit' or self.wrenches.arrays is None:
            return 0
        k, self.t = fast.take(self._backend, self.wrenches, self.t, self.steps, n, self.dt,
                              self._tau)
        self.steps += k
        return k

    def _torque(self, tau):
        """``tau`` (nq,) checked (finite, plausible) and clamped to the effort limits."""
        tau = np.asarray(tau, dtype=float)
        nq = self.model.nq
        if tau.shape != (nq,):
            raise ValueError(f'tau must have shape ({nq},), got {tau.shape}')
        out = np.empty(nq)
        j = clamp_torques(tau, self.plausible.torque, self.effort_limit, out)
        if j >= 0:
            if not np.isfinite(tau[j]):
                raise ValueError('tau contains NaN or inf')
            self.plausible.torques(tau)
        return out

    def warm_up(self):
        """
        Compile (or load from numba's cache) the kernels of a step; return the seconds taken.

        Takes one step (with the compiled explicit step, :mod:`._explicit`, once more
        through the Python path, which takes the steps near a limit) and puts the state,
        time, step count and wall time back as they were, so the first real :meth:`step`
        runs at full speed.  A node calls this while it starts: on a cold cache the
        kernels compile for tens of seconds, and a real-time loop must not do that inside
        its first cycle.
        """
        start = time.perf_counter()
        compiled = self._compiled
        try:
            self._step_and_restore()
            if compiled is not None:
                self._compiled = None
                self._step_and_restore()
        finally:
            self._compiled = compiled
        self.diagnostics()   # its energy kernels too
        return time.perf_counter() - start

    def _step_and_restore(self):
        """Take one step with no torque; put state, time, counts and torque back."""
        saved = self._backend.save()
        t, steps, wall, tau = self.t, self.steps, self.wall_time, self._tau
        try:
            self.step()
        except SimulationError:
            pass   # the real run reports it
        finally:
            self._backend.restore(saved)
            self.t, self.steps, self.wall_time, self._tau = t, steps, wall, tau
            self._read()

    def _check(self, saved):
        """
        After a step: a state not finite or too fast stops at once; every 100 :meth:`check`.

        The speeds are checked in joint coordinates (``self.plausible.speed``); the state
        goes back to the step's start.
        """
        y = self._backend.y
        flag = state_flag(y, self._v_start, self.plausible.speed) if self._v_start >= 0 else (
            0 if all_finite(y) else 1)
        if flag:
            self._read()
            why = ('the state became non-finite' if flag == 1 else
                   self.plausible.state(self.qd))
            self._backend.restore(saved)
            self.t -= self.dt
            self.steps -= 1
            self._read()
            raise SimulationError(f'{why} in the step from t = {self.t:.6g} s; '
                                  f'{self.plausible.blame(self)}')
        if self.steps % 100 == 0:
            self._periodic_check()

    def _periodic_check(self):
        """Every 100 steps: the limits' impedance at joints in range, stiffness, :meth:`check`."""
        self._read()
        lim = self.joint_limits
        if lim.impedance0 is not None:   # joints that engage unforeseen: recent m_j
            lim.engage((self.q >= self.lower) & (self.q <= self.upper), self.q,
                       self.base_pose)
        if self.damping_choice.recheck(self.q, self.base_pose):   # 'auto': stiff by now
            self._set_method('implicit')
        self.check()

    def check(self):
        """
        Raise :class:`SimulationError` unless the present state is plausible.

        Absurd (:mod:`liemb_ros.sim._plausible`): a coordinate that is not finite, a joint
        (or the floating base) faster than ``self.plausible.speed``, a contact sphere too
        deep, or an energy off the books (:meth:`~liemb_ros.sim._energy.EnergyBooks.off`:
        ``E - E0 - W`` beyond ``max_energy_error * (1 + |T| + |U - U0| + |W|)``, and energy
        gained beyond that by the contacts' dissipation counted in implicit steps,
        ``contact_work``: contacts only dissipate, so energy they are booked to have taken
        cannot reappear; an impact the step does not resolve over-counts it, by up to ``h
        b / m`` times the impact's kinetic energy).  The message names the symptom and the
        input that drove the state there
        (:meth:`~liemb_ros.sim._plausible.Plausibility.blame`).  On failure the state goes
        back to the last one that passed (a node checks before it publishes: no absurd
        state goes out); :meth:`step` checks every 100 steps.
        """
        self._read()
        why = self._absurd()
        if why is None:
            self._good = (self._backend.save(), self.t, self.steps)
            return
        at = self.t
        saved, self.t, self.steps = self._good
        self._backend.restore((saved[0].copy(), *saved[1:]))
        self._read()
        raise SimulationError(f'{why} at t = {at:.6g} s (back to t = {self.t:.6g} s); '
                              f'{self.plausible.blame(self)}')

    def _absurd(self):
        """Return why the present state is absurd (:meth:`check`), or None."""
        why = self.plausible.absurd(self._backend.y, self.q, self.qd, self.base_pose,
                                    self.contact, self.dt)
        if why is not None:
            return why
        T, U = self.books.energy(self.q, self.qd, self.base_pose)
        return self.books.off(T, U, self.work, -getattr(self._backend, 'contact_work', 0.0),
                              self.max_energy_error, self.dt)

    def diagnostics(self):
        """
        Return a dict: ``t``, ``steps``, ``kinetic``, ``potential``, ``energy``, ``work``.

        Also ``energy_balance_error`` (``E - E0 - W`` [J]), ``momentum`` (6,) world spatial
        momentum, ``real_time_factor`` (sim seconds per wall second spent in
        :meth:`step`) and, in absolute coordinates, ``constraint_violation`` per joint.
        ``potential`` holds gravity's, the limit springs' and the contact springs' energy,
        ``limit_energy`` and ``contact_energy`` the latter alone; ``work`` the work of the
        applied torques, damping, friction, the limit dampers and the contacts' dampers
        and friction; ``contact_work`` the part of it the contacts did in implicit steps
        (:meth:`check`).  ``applied_torque`` (nq,): the last step's command after the effort
        limits; ``in_limit`` (nq,) bool: joints past a position limit now.
        """
        T, U = self.books.energy(self.q, self.qd, self.base_pose)
        out = {'t': self.t, 'steps': self.steps, 'kinetic': T, 'potential': U,
               'limit_energy': self.joint_limits.spring(self.q)[1],
               'contact_energy': self.books.contact_energy(self.q, self.qd, self.base_pose),
               'applied_torque': np.array(self._tau, dtype=float),
               'in_limit': (self.q < self.lower) | (self.q > self.upper),
               'energy': T + U, 'work': self.work,
               'energy_balance_error': T + U - self.books.E0 - self.work,
               'contact_work': getattr(self._backend, 'contact_work', 0.0),
               'momentum': momentum(self.model, self.q, self.qd, self.base_pose),
               'real_time_factor': self.t / self.wall_time if self.wall_time > 0 else 0.0}
        out.update(self._backend.extra_diagnostics())
        return out

    def run(self, t_end, tau=None, progress=False):
        """
        Simulate until ``t_end``; return ``(t, q, qd)`` sampled at every step.

        ``tau``: as in :meth:`step`.  ``progress``: show a tqdm bar (for long runs).
        """
        n = int(round((t_end - self.t) / self.dt))
        ts, qs, qds = [self.t], [self.q.copy()], [self.qd.copy()]
        steps = range(n)
        if progress:
            from tqdm import tqdm
            steps = tqdm(steps, desc=f'simulating {self.model.name}', unit='step')
        for _ in steps:
            self.step(tau)
            ts.append(self.t)
            qs.append(self.q.copy())
            qds.append(self.qd.copy())
        return np.array(ts), np.array(qs), np.array(qds)
