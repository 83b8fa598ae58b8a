"""
Simulate a URDF robot with the Lie group integrators (what the simulation node steps).

:class:`Simulator` integrates a :class:`~liemb_ros.model.Model` forward in time under
applied joint torques and viscous joint damping, in one of two sets of coordinates:

``coordinates='joint'``
    The state is ``(C_base, q, V)``: for a floating base its pose ``C_base`` on SE(3)
    (integrated on the group, ``Ċ = C V̂_base`` with the body-fixed base twist, never with
    Euler angles), the joint positions ``q`` (nq,) and the generalized velocity ``V``
    (nv,) = ``(V_base^b, q̇)``.  Accelerations come from the O(n) articulated-body
    algorithm (:func:`liemb_ros.dynamics.forward_dynamics`).  The state space is
    SE(3) x R^k (floating base) or R^k, stepped by Munthe-Kaas Runge-Kutta
    (:mod:`liemb_ros.integrators`).
``coordinates='absolute'``
    Every body is a rigid body on SE(3) or SO(3)xR3 (``update='se3' | 'so3r3' |
    'tailored'``) and the joints are lower-pair constraints (:mod:`liemb_ros.mbs`, the
    index-1 formulation of seeds 000/001): the same robot, the papers' way.  The joint
    coordinates are recovered from the body poses; the per-joint constraint violation is
    reported.

The work done by the applied torques and the damping, ``W = ∫ q̇ᵀ(τ - D q̇) dt``, is
integrated with the state by the same scheme in joint coordinates, so
``energy_balance_error = E - E0 - W`` measures the integration error alone (zero up to
the scheme's order).  In absolute coordinates the damping torque ``-D q̇`` is evaluated
at the start of each step (held over the step, first order) and ``W`` by the trapezoidal
rule; use them for the constraint-violation study, joint coordinates for accuracy.  A state that
becomes non-finite, or an energy balance that is off by more than ``max_energy_error``
(relative), stops the simulation with :class:`SimulationError` and leaves the last good
state in place.
"""
import time

import numpy as np

from .dynamics import forward_dynamics_function, mass_matrix
from .integrators import TABLEAUS, SE3, IntegrationError, Product, Stepper, Vector
from .kinematics import body_poses

COORDINATES = ('joint', 'absolute')
UPDATES = ('se3', 'so3r3', 'tailored')


class SimulationError(RuntimeError):
    """The simulation diverged (the message says why); the last good state is kept."""


#: fixed-step explicit tableaus the Simulator accepts (names of integrators.TABLEAUS)
INTEGRATORS = ('euler', 'heun', 'midpoint', 'rk3', 'rk4', 'rk38')


def com_moments(model):
    """
    Return ``(m, m c)`` of every body: masses (nb,) and first moments (nb, 3).

    ``c`` is the centre of mass in the body frame, read off the body-fixed spatial
    inertia (angular first) whose lower-left block is ``-m ĉ``.
    """
    M = model.inertia
    m = M[:, 3, 3].copy()
    mc = np.stack([-M[:, 5, 1], -M[:, 3, 2], -M[:, 4, 0]], axis=1)
    return m, mc


def mechanical_energy(model, q, qd, base_pose=None):
    """
    Return ``(T, U)``: kinetic energy ``½ q̇ᵀ M(q) q̇`` and gravity potential [J].

    ``U = -Σ_i m_i gᵀ r_i`` over all bodies (and the floating base), ``r_i`` the world
    position of the body's centre of mass, ``g = model.gravity``.
    """
    q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
    T = 0.5 * qd @ mass_matrix(model, q, base_pose=base_pose) @ qd
    m, mc = com_moments(model)
    Cs = body_poses(model, q, base_pose=base_pose)
    first = np.einsum('bij,bj->i', Cs[:, :3, :3], mc) + m @ Cs[:, :3, 3]
    if model.floating:
        Mb = model.base_inertia
        mb = Mb[3, 3]
        mcb = np.array([-Mb[5, 1], -Mb[3, 2], -Mb[4, 0]])
        C = np.eye(4) if base_pose is None else np.asarray(base_pose, dtype=float)
        first = first + C[:3, :3] @ mcb + mb * C[:3, 3]
    return float(T), float(-model.gravity @ first)


def momentum(model, q, qd, base_pose=None):
    """
    Return the total spatial momentum, shape (6,): angular about the world origin, linear.

    ``Σ_i Ad_{C_i^-1}ᵀ M_i V_i^b`` over the bodies (and the floating base) in world
    coordinates [kg m²/s, kg m/s]; conserved for a free floating robot without gravity.
    """
    from .kinematics import body_twists
    q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
    Cs = body_poses(model, q, base_pose=base_pose)
    Vb = body_twists(model, q, qd, 'body', base_pose=base_pose)
    h = np.einsum('bij,bj->bi', model.inertia, Vb)
    total = np.zeros(6)
    for C, hb in zip(Cs, h):
        total += _coadjoint_to_world(C, hb)
    if model.floating:
        C = np.asarray(base_pose, dtype=float)
        total += _coadjoint_to_world(C, model.base_inertia @ qd[:6])
    return total


def _coadjoint_to_world(C, w):
    """Wrench / momentum ``(m, f)`` in frame C -> world frame about the world origin."""
    R, r = C[:3, :3], C[:3, 3]
    f = R @ w[3:]
    return np.concatenate([R @ w[:3] + np.cross(r, f), f])


class Simulator:
    """
    Step a robot forward in time: ``sim.step(tau, n)``; state in ``t, q, qd, base_pose``.

    Parameters
    ----------
    model : Model
    dt : float
        Integration step [s].
    integrator : str
        Explicit RKMK tableau, one of :data:`INTEGRATORS` (``'rk4'``: classical 4th order).
    coordinates : ``'joint'`` | ``'absolute'``
        See the module docstring.
    update : ``'se3'`` | ``'so3r3'`` | ``'tailored'``
        Body configuration update in absolute coordinates (ignored for joint coordinates,
        where a floating base is always on SE(3)).  ``'tailored'``: SE(3) for bodies
        attached to the ground by a joint, SO(3)xR3 for the others (seed 001).
    damping : None, float or (nq,) array
        Viscous joint damping [N m s/rad or N s/m]; None: the URDF ``<dynamics damping>``.
    q0, qd0, base_pose : arrays, optional
        Initial joint positions (nq,), generalized velocity (nv,) and, for a floating base,
        the base pose (4, 4); defaults: neutral, rest, identity.
    max_energy_error : float
        Stop when ``|E - E0 - W| > max_energy_error * (1 + |T| + |U - U0| + |W|)``.

    """

    def __init__(self, model, *, dt=1e-3, integrator='rk4', coordinates='joint',
                 update='tailored', damping=None, q0=None, qd0=None, base_pose=None,
                 max_energy_error=0.5):
        if integrator not in INTEGRATORS:
            raise ValueError(f'unknown integrator {integrator!r}; expected one of '
                             f'{", ".join(INTEGRATORS)}')
        if coordinates not in COORDINATES:
            raise ValueError(f'unknown coordinates {coordinates!r}; expected one of '
                             f'{", ".join(COORDINATES)}')
        if update not in UPDATES:
            raise ValueError(f'unknown update {update!r}; expected one of {", ".join(UPDATES)}')
        if not (np.isfinite(dt) and dt > 0):
            raise ValueError(f'dt must be a positive number of seconds, got {dt!r}')
        self.model = model
        self.dt = float(dt)
        self.integrator = integrator
        self.coordinates = coordinates
        self.update = update
        self.max_energy_error = float(max_energy_error)
        d = model.damping if damping is None else damping
        self.damping = np.broadcast_to(np.asarray(d, dtype=float), (model.nq,)).copy()
        if np.any(self.damping < 0) or not np.all(np.isfinite(self.damping)):
            raise ValueError('damping must be finite and non-negative')
        self._q0 = model.neutral() if q0 is None else _vector(q0, model.nq, 'q0')
        self._qd0 = np.zeros(model.nv) if qd0 is None else _vector(qd0, model.nv, 'qd0')
        if model.floating:
            C = np.eye(4) if base_pose is None else np.asarray(base_pose, dtype=float)
            if C.shape != (4, 4) or not np.all(np.isfinite(C)):
                raise ValueError('base_pose must be a finite 4x4 pose')
        elif base_pose is not None:
            raise ValueError(f'{model.name} has a fixed base: base_pose does not apply')
        else:
            C = None
        self._base0 = C
        self._tau = np.zeros(model.nq)
        self._backend = (_JointCoordinates(self) if coordinates == 'joint'
                         else _AbsoluteCoordinates(self))
        self.reset()

    # -- state ------------------------------------------------------------------------------
    def reset(self):
        """Go back to the initial state at ``t = 0``."""
        self.t = 0.0
        self.steps = 0
        self.wall_time = 0.0
        self._backend.set_state(self._q0, self._qd0, self._base0)
        self.work = 0.0
        self._read()
        self.E0 = sum(mechanical_energy(self.model, self.q, self.qd, self.base_pose))
        self._U0 = mechanical_energy(self.model, self.q, self.qd, self.base_pose)[1]

    def _read(self):
        self.q, self.qd, self.base_pose, self.work = self._backend.get_state()

    def step(self, tau=None, n=1):
        """
        Advance ``n`` steps of ``dt`` with joint torques ``tau``; see :meth:`diagnostics`.

        ``tau`` is (nq,) [N m or N] held constant over the ``n`` steps, or a callable
        ``tau(t)`` evaluated at the start of every step; None means zero.  Raises
        :class:`SimulationError` on divergence (the state is left at the last good step).
        """
        start = time.perf_counter()
        held = None if callable(tau) else (
            np.zeros(self.model.nq) if tau is None else _vector(tau, self.model.nq, 'tau'))
        for _ in range(int(n)):
            self._tau = held if held is not None else _vector(tau(self.t), self.model.nq,
                                                              'tau')
            saved = self._backend.save()
            try:
                self._backend.advance(self.t, self.dt)
            except ValueError as exc:  # a kernel refused a non-finite state
                self._backend.restore(saved)
                raise SimulationError(f'diverged at t = {self.t:.6g} s: {exc}') from None
            self.t += self.dt
            self.steps += 1
            self._check(saved)
        self._read()
        self.wall_time += time.perf_counter() - start

    def warm_up(self):
        """
        Compile (or load from numba's cache) the kernels of a step; return the seconds taken.

        Takes one step and puts the state, time, step count and wall time back as they
        were, so the first real :meth:`step` runs at full speed.  A node calls this while
        it starts: on a cold cache the kernels compile for tens of seconds, and a
        real-time loop must not do that inside its first cycle.
        """
        start = time.perf_counter()
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
        self.diagnostics()   # its energy kernels too
        return time.perf_counter() - start

    def _check(self, saved):
        y = self._backend.y
        if not np.all(np.isfinite(y)):
            self._backend.restore(saved)
            self.t -= self.dt
            self.steps -= 1
            self._read()
            raise SimulationError(f'state became non-finite at t = {self.t + self.dt:.6g} s '
                                  f'(step dt = {self.dt} s too large, or torques too big?)')
        if self.steps % 100 == 0:
            self._read()
            T, U = mechanical_energy(self.model, self.q, self.qd, self.base_pose)
            err = T + U - self.E0 - self.work
            scale = 1.0 + abs(T) + abs(U - self._U0) + abs(self.work)
            if abs(err) > self.max_energy_error * scale:
                raise SimulationError(
                    f'energy balance off by {err:.3g} J at t = {self.t:.6g} s (kinetic '
                    f'{T:.3g} J): the integration diverges; reduce dt = {self.dt} s')

    def diagnostics(self):
        """
        Return a dict: ``t``, ``steps``, ``kinetic``, ``potential``, ``energy``, ``work``.

        Also ``energy_balance_error`` (``E - E0 - W`` [J]), ``momentum`` (6,) world spatial
        momentum, ``real_time_factor`` (sim seconds per wall second spent in
        :meth:`step`) and, in absolute coordinates, ``constraint_violation`` per joint.
        """
        T, U = mechanical_energy(self.model, self.q, self.qd, self.base_pose)
        out = {'t': self.t, 'steps': self.steps, 'kinetic': T, 'potential': U,
               'energy': T + U, 'work': self.work,
               'energy_balance_error': T + U - self.E0 - self.work,
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


def _vector(x, n, name):
    x = np.asarray(x, dtype=float)
    if x.shape != (n,):
        raise ValueError(f'{name} must have shape ({n},), got {x.shape}')
    if not np.all(np.isfinite(x)):
        raise ValueError(f'{name} contains NaN or inf')
    return x


class _JointCoordinates:
    """
    State ``y = (C_base,) (q, V, W)`` on ``SE(3) x R^(nq+nv+1)`` (or ``R^(nq+nv+1)``).

    The velocity returned to the integrator is ``(V_base,) (q̇, V̇, Ẇ)``: the body-fixed
    base twist is the left-trivialised derivative of ``C_base`` (``Ċ = C V̂``), ``q̇`` the
    joint part of ``V``, ``V̇`` the forward dynamics and ``Ẇ = q̇ᵀ(τ - D q̇)`` the power.
    """

    def __init__(self, sim):
        m = self.model = sim.model
        self.sim = sim
        self.nq, self.nv = m.nq, m.nv
        self.nb6 = m.nv - m.nq
        self.o = 16 if m.floating else 0
        n = m.nq + m.nv + 1
        self.space = Product(SE3(), Vector(n)) if m.floating else Vector(n)
        self.stepper = Stepper(self.space, self._f, TABLEAUS[sim.integrator])
        self.y = np.zeros(self.space.size)
        self._tau = np.zeros(m.nv)
        self._fd = forward_dynamics_function(m)
        self._a = a = 6 if m.floating else 0
        o, nq, nv = self.o, m.nq, m.nv
        self._sq, self._sv = slice(o, o + nq), slice(o + nq, o + nq + nv)
        self._oq, self._ov = slice(a, a + nq), slice(a + nq, a + nq + nv)
        self._tau_joints = self._tau[self.nb6:]
        self._tmp = np.empty(nq)
        self._out_template = np.zeros(self.space.dim)

    def _f(self, t, y):
        q = y[self._sq]
        v = y[self._sv]
        qd = v[self.nb6:]
        np.multiply(self.sim.damping, qd, out=self._tmp)
        np.subtract(self.sim._tau, self._tmp, out=self._tau_joints)
        vdot = self._fd(q, v, self._tau, y[:16].reshape(4, 4) if self.o else None)
        out = self._out_template.copy()
        a = self._a
        if a:
            out[:6] = v[:6]
        out[self._oq] = qd
        out[self._ov] = vdot
        out[-1] = qd @ self._tau_joints
        return out

    def set_state(self, q, qd, base):
        o, nq = self.o, self.nq
        if o:
            self.y[:16] = base.reshape(-1)
        self.y[o:o + nq] = q
        self.y[o + nq:o + nq + self.nv] = qd
        self.y[-1] = 0.0

    def get_state(self):
        o, nq, nv = self.o, self.nq, self.nv
        base = self.y[:16].reshape(4, 4).copy() if o else None
        return (self.y[o:o + nq].copy(), self.y[o + nq:o + nq + nv].copy(), base,
                float(self.y[-1]))

    def save(self):
        return self.y.copy()

    def restore(self, saved):
        self.y = saved

    def advance(self, t, h):
        try:
            self.y = self.stepper.step(t, self.y, h)
        except IntegrationError as exc:
            raise ValueError(str(exc)) from None

    def extra_diagnostics(self):
        return {}


class _AbsoluteCoordinates:
    """
    Bodies on SE(3) / SO(3)xR3 with joint constraints (:func:`liemb_ros.mbs.from_model`).

    ``update='tailored'``: SE(3) for bodies jointed to the ground (their lower pair is
    then kept exactly, seed 000 Corollary 1), SO(3)xR3 for all others (seed 001).
    """

    def __init__(self, sim):
        from .mbs import from_model
        self.sim = sim
        m = self.model = sim.model
        self.updates = sim.update          # from_model resolves 'tailored' per body
        self._from_model = from_model
        q0 = sim._q0
        self.sysm, self.y = from_model(m, q0, sim._qd0, base_pose=sim._base0,
                                       update=self.updates)
        self.stepper = Stepper(self.sysm.space, self.sysm.rhs, TABLEAUS[sim.integrator])
        self.work = 0.0
        self._joint = None
        self._q_last = np.array(q0, dtype=float)

    def set_state(self, q, qd, base):
        self.sysm, self.y = self._from_model(self.model, q, qd, base_pose=base,
                                             update=self.updates)
        self.stepper = Stepper(self.sysm.space, self.sysm.rhs, TABLEAUS[self.sim.integrator])
        self.work = 0.0
        self._joint = None
        self._q_last = np.array(q, dtype=float)

    def _joints(self):
        from .mbs import joint_state
        if self._joint is None:
            # revolute angles continue from the last step's (no 2 pi jumps)
            self._joint = joint_state(self.sysm, self.y, q_ref=self._q_last)
            self._q_last = self._joint[0]
        return self._joint

    def get_state(self):
        st = self._joints()
        base = st[3] if self.model.floating else None
        return st[0].copy(), st[1].copy(), base, self.work

    def save(self):
        return self.y.copy(), self.work, self._joint, self._q_last

    def restore(self, saved):
        self.y, self.work, self._joint, self._q_last = saved

    def _power(self):
        qd = self._joints()[1][self.model.nv - self.model.nq:]
        tau = self.sim._tau - self.sim.damping * qd
        return tau, float(qd @ tau)

    def advance(self, t, h):
        from .integrators import IntegrationError
        tau, p0 = self._power()
        self.sysm.set_torques(tau)
        try:
            self.y = self.stepper.step(t, self.y, h)
        except IntegrationError as exc:
            raise ValueError(str(exc)) from None
        self._joint = None
        if not np.all(np.isfinite(self.y)):
            return
        qd = self._joints()[1][self.model.nv - self.model.nq:]
        self.work += 0.5 * h * (p0 + float(qd @ tau))

    def extra_diagnostics(self):
        return {'constraint_violation': self._joints()[2][:, 0],
                'orientation_violation': self._joints()[2][:, 1],
                'constraint_names': list(self.model.joint_names)}
