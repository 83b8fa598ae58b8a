"""
What the Simulator takes as plausible: bounds on its inputs and states (issue 28).

The bounds come from the robot model (:class:`Plausibility`, built once per Simulator):

* an external **force** up to :data:`WRENCH_WEIGHTS` times the robot's weight (its mass
  under standard gravity, whatever the model's gravity), a **moment** up to that force
  times the robot's **size** (the farthest link origin from the root link at ``q0`` plus
  the largest radius of gyration of a body: the lever such a force can have);
* a commanded **joint torque** up to that moment (revolute and helical joints) or that
  force (prismatic joints), whatever the effort limit (a torque within this bound and
  beyond ``<limit effort>`` is clamped to the limit, as a motor saturates);
* a **state** whose coordinates are finite and whose speeds stay within bounds: a
  revolute joint and the base's angular velocity below the rate at which a point at the
  robot's size would pass :data:`POINT_SPEED` (``POINT_SPEED / size``), a prismatic
  joint and the base's linear velocity below :data:`POINT_SPEED` itself.  (Not the URDF's
  ``<limit velocity>``: a light wrist whipped by a free-floating arm passes 100 times its
  limit in a simulation that keeps its momentum to 1e-5, and solo12's limits are 1000.)
  Checked after every step (one compiled pass over the state, :func:`state_flag`), the
  energy books and the contacts' depth every 100 steps and before a node publishes
  (:meth:`Simulator.check`).

A 1e12 N push on a 2.5 kg quadruped (the issue's probe) is refused with its bound; a
state beyond the speed bound or off the energy books is absurd (:meth:`Simulator.check`),
and :meth:`Plausibility.blame` names the input that drove it there.
"""
import numpy as np
from numba import njit

from ..core.dynamics import gravity_torques, mass_matrix
from ..core.kinematics import forward_kinematics, jacobian
from .passive import all_finite

#: an external force beyond this many times the robot's weight is refused
WRENCH_WEIGHTS = 100.0
#: standard gravity [m/s²]: the weight of the bounds is the mass under it
STANDARD_GRAVITY = 9.80665
#: no point of a robot moves faster [m/s] (three times the speed of sound)
POINT_SPEED = 1000.0


class Plausibility:
    """
    The bounds of one robot, from its model at ``q0`` (module docstring).

    ``force`` [N], ``moment`` [N m], ``torque`` (nq,) [N m or N], ``speed`` (nv,) [rad/s
    or m/s], ``size`` [m], ``weight`` [N].
    """

    def __init__(self, model, q0, base0):
        self.model = model
        Cs = forward_kinematics(model, q0, base_pose=base0)
        origins = Cs[:, :3, 3]
        reach = float(np.max(np.linalg.norm(origins - origins[0], axis=1)))
        bodies = [model.inertia[b] for b in range(model.nb)]
        if model.floating:
            bodies.append(model.base_inertia)
        gyration = 0.0
        for inertia in bodies:
            m = inertia[3, 3]
            if m > 0:   # about the centre of mass: the largest principal moment over m
                c = np.array([-inertia[5, 1], -inertia[3, 2], -inertia[4, 0]]) / m
                Ic = inertia[:3, :3] - m * (np.dot(c, c) * np.eye(3) - np.outer(c, c))
                largest = max(float(np.linalg.eigvalsh(Ic)[-1]), 0.0)
                gyration = max(gyration, float(np.sqrt(largest / m)))
        self.size = reach + gyration
        self.weight = model.mass * STANDARD_GRAVITY
        self.force = WRENCH_WEIGHTS * self.weight
        self.moment = self.force * self.size
        prismatic = np.zeros(model.nq, dtype=bool)
        for b, kind in enumerate(model.body_joint_type):
            if kind == 'prismatic':
                prismatic[model.q_index[b]] = True
        self.torque = np.where(prismatic, self.force, self.moment)
        turn = POINT_SPEED / max(self.size, 1e-3)
        joint = np.where(prismatic, POINT_SPEED, turn)
        base = [turn] * 3 + [POINT_SPEED] * 3 if model.floating else []
        self.speed = np.concatenate([base, joint])

    def wrench(self, link, w):
        """Raise ValueError when the wrench ``(m, f)`` on ``link`` is beyond the bounds."""
        moment, force = float(np.linalg.norm(w[:3])), float(np.linalg.norm(w[3:]))
        if force > self.force:
            raise ValueError(
                f"external wrench on '{link}': force {force:.4g} N beyond the plausible "
                f'{self.force:.4g} N ({WRENCH_WEIGHTS:g} times the robot\'s weight, '
                f'{self.weight:.4g} N)')
        if moment > self.moment:
            raise ValueError(
                f"external wrench on '{link}': moment {moment:.4g} N m beyond the plausible "
                f'{self.moment:.4g} N m ({self.force:.4g} N at the robot\'s size, '
                f'{self.size:.3g} m)')

    def torques(self, tau):
        """Raise ValueError when a joint torque of ``tau`` (nq,) is beyond its bound."""
        over = np.abs(tau) > self.torque
        if np.any(over):
            j = int(np.flatnonzero(over)[0])
            raise ValueError(
                f"joint torque {tau[j]:.4g} on '{self.model.joint_names[j]}' beyond the "
                f'plausible {self.torque[j]:.4g} N m (N for a prismatic joint: '
                f'{WRENCH_WEIGHTS:g} times the robot\'s weight at its size)')

    def state(self, V):
        """Return why the generalized velocity ``V`` (nv,) is absurd, or None."""
        over = np.abs(V) > self.speed
        if not np.any(over):
            return None
        i = int(np.flatnonzero(over)[0])
        a = self.model.nv - self.model.nq
        what = (f"joint '{self.model.joint_names[i - a]}'" if i >= a else
                f'the floating base (twist coordinate {i})')
        return (f'{what} moves at {V[i]:.4g} (rad/s or m/s), beyond the plausible '
                f'{self.speed[i]:.4g} (a point at the robot\'s size, {self.size:.3g} m, at '
                f'{POINT_SPEED:g} m/s)')

    def absurd(self, y, q, qd, base, contact, dt):
        """
        Return why a state is absurd, its energy aside (``Simulator.check``), or None.

        Not finite (the integrated state ``y`` or the velocity ``qd``), too fast
        (:meth:`state`) or too deep in a plane (:meth:`depth`).
        """
        if not (all_finite(y) and np.all(np.isfinite(qd))):
            return 'the state is not finite'
        return self.state(qd) or self.depth(contact, q, base, dt)

    def start_depth(self, contact, q0, qd0, base0):
        """
        Refuse a start deeper in a plane than a contact spring pushing with the force bound.

        ``p_max = force / k`` (``contact``: a :class:`~liemb_ros.sim.contact.ContactModel`;
        ``q0``, ``qd0``, ``base0``: the initial state): a robot that starts deeper (a
        plane's offset with the wrong sign, a base pose below the ground) would be thrown
        out with more than 100 times its weight.  Raises ValueError naming the plane and
        the link.
        """
        inside = contact.evaluate(q0, qd0, base0, forces=True)[3]
        if not inside or contact.stiffness <= 0:
            return
        deep = max(inside, key=lambda c: c.penetration)
        most = self.force / contact.stiffness
        if deep.penetration > most:
            raise ValueError(
                f"the robot starts {deep.penetration:.4g} m inside contact plane {deep.plane} "
                f"(link '{deep.link}'), beyond the plausible {most:.3g} m (where the contact "
                f'spring pushes with {self.force:.4g} N, 100 times the robot\'s '
                'weight): check the planes and the initial pose')

    def depth(self, contact, q, base, dt):
        """
        Return why the deepest contact sphere at ``q`` is absurd, or None.

        Absurd: deeper than ``force / k``, where its spring pushes with the force bound (an
        impact faster than the contact can stop in steps of ``dt`` [s]).  ``contact``: a
        :class:`~liemb_ros.sim.contact.ContactModel` or None.
        """
        if contact is None or not contact.stiffness > 0:
            return None
        p, link, plane = contact.deepest(q, base)
        most = self.force / contact.stiffness
        if p > most:
            return (f"a contact sphere of '{link}' is {p * 1e3:.3g} mm deep in plane "
                    f'{plane}, beyond the plausible {most * 1e3:.3g} mm (where its spring '
                    f'pushes with 100 times the robot\'s weight): an impact faster than '
                    f'the contact (stiffness {contact.stiffness:.4g} N/m) can stop '
                    f'in steps of {dt:g} s')
        return None

    def blame(self, sim):
        """
        Name the inputs behind ``sim``'s state: what put energy in, what acts now.

        First the energy each external wrench has put in so far (``sim.wrenches.work``,
        the largest first: a push that ended before the state went wrong is the cause
        still); then the inputs acting at the state, ranked by the acceleration
        ``|M⁻¹ f|`` each drives (each external wrench, the applied joint torques, the
        contacts; gravity's for comparison).  One line for a :class:`SimulationError`.
        """
        m = self.model
        q, V, base = sim.q, sim.qd, sim.base_pose
        done = sorted(sim.wrenches.work.items(), key=lambda kv: -kv[1][0])
        parts = [f"the external wrench on '{link}' put in {w:.3g} J (up to {f:.4g} N, t = "
                 f'{t0:.3f} to {t1:.3f} s)' for link, (w, f, t0, t1) in done]
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(V))):
            return '; '.join(parts + ['the state is not finite'])
        inputs = []
        for link, (w, rep) in sim.wrenches.applied.items():
            f = jacobian(m, q, link, rep, base_pose=base).T @ w
            inputs.append((f"the external wrench on '{link}' (force "
                           f'{np.linalg.norm(w[3:]):.4g} N, moment {np.linalg.norm(w[:3]):.4g} '
                           'N m)', f))
        tau = np.asarray(sim._tau, dtype=float)
        if np.any(tau):
            f = np.zeros(m.nv)
            f[m.nv - m.nq:] = tau
            j = int(np.argmax(np.abs(tau)))
            inputs.append((f"the applied joint torques (largest {tau[j]:.4g} on "
                           f"'{m.joint_names[j]}')", f))
        if sim.contact is not None:
            gen, _, _, contacts = sim.contact.evaluate(q, V, base, forces=True)[:4]
            if gen is not None:
                deep = max(contacts, key=lambda c: c.penetration)
                inputs.append((f'the contacts ({len(contacts)} touching, the deepest '
                               f"{deep.penetration * 1e3:.3g} mm on '{deep.link}')", gen))
        if not inputs:
            return '; '.join(parts + ['no input acts now (the integration alone: a smaller '
                                      'dt may help)'])
        g = -gravity_torques(m, q, base_pose=base)
        try:
            L = np.linalg.cholesky(mass_matrix(m, q, base_pose=base, armature=sim.armature))
        except np.linalg.LinAlgError:
            L = None

        def accel(f):
            if L is None:
                return float(np.max(np.abs(f)))
            return float(np.max(np.abs(np.linalg.solve(L.T, np.linalg.solve(L, f)))))
        ranked = sorted(((accel(f), text) for text, f in inputs), reverse=True)
        unit = 'rad/s² or m/s²' if L is not None else 'N m or N: the mass matrix is singular'
        now = ', '.join(f'{text} {a:.3g}' for a, text in ranked)
        return '; '.join(parts + [f'acting now ({unit}, gravity {accel(g):.3g}): {now}'])


def initial_state(model, q0, qd0, base_pose):
    """
    Return the Simulator's initial ``(q0 (nq,), qd0 (nv,), base0 (4, 4) or None)``, checked.

    ``q0``, ``qd0``, ``base_pose`` as given to the Simulator (None: neutral, rest,
    identity); finite, of their shapes, ``base_pose`` for a floating base only; else
    ValueError.
    """
    q0 = model.neutral() if q0 is None else finite_vector(q0, model.nq, 'q0')
    qd0 = np.zeros(model.nv) if qd0 is None else finite_vector(qd0, model.nv, 'qd0')
    if model.floating:
        C = np.eye(4) if base_pose is None else np.asarray(base_pose, dtype=float)
        if C.shape != (4, 4) or not np.all(np.isfinite(C)):
            raise ValueError('base_pose must be a finite 4x4 pose')
    elif base_pose is not None:
        raise ValueError(f'{model.name} has a fixed base: base_pose does not apply')
    else:
        C = None
    return q0, qd0, C


def finite_vector(x, n, name):
    """Return ``x`` as a float array of shape (n,); ValueError unless so and finite."""
    x = np.asarray(x, dtype=float)
    if x.shape != (n,):
        raise ValueError(f'{name} must have shape ({n},), got {x.shape}')
    if not np.all(np.isfinite(x)):
        raise ValueError(f'{name} contains NaN or inf')
    return x


@njit(cache=True)
def state_flag(y, start, speed):
    """
    Return 0 when ``y`` is finite and ``|y[start + i]| <= speed[i]``; 1: not finite; 2: too fast.

    One pass over the Simulator's state vector after each step (``start``: where the
    generalized velocity begins).
    """
    for i in range(y.shape[0]):
        if not np.isfinite(y[i]):
            return 1
    for i in range(speed.shape[0]):
        if abs(y[start + i]) > speed[i]:
            return 2
    return 0


@njit(cache=True)
def clamp_torques(tau, bound, limit, out):
    """
    ``out = clip(tau, -limit, limit)``; return -1, or the first joint beyond ``bound`` or NaN.

    The Simulator's torque of each step (:meth:`Plausibility.torques` says why a joint is
    refused): one compiled pass instead of numpy's checks and clip (13 against 1 us).
    """
    for j in range(tau.shape[0]):
        x = tau[j]
        if not abs(x) <= bound[j]:
            return j
        out[j] = min(max(x, -limit[j]), limit[j])
    return -1


def per_joint(value, n, name):
    """``value`` (a number or (n,)) as a new (n,) array; ValueError unless finite and >= 0."""
    out = np.broadcast_to(np.asarray(value, dtype=float), (n,)).copy()
    if np.any(out < 0) or not np.all(np.isfinite(out)):
        raise ValueError(f'{name} must be finite and non-negative')
    return out


def one_of(value, name, options):
    """Raise ValueError unless the argument ``name`` is one of ``options``."""
    if value not in options:
        raise ValueError(f'unknown {name} {value!r}; expected one of {", ".join(options)}')
