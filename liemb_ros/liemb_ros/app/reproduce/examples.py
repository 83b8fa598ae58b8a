"""
The examples of [MT14], [MT13] and [HGS18]: how each is built and what its paper claims.

References: docs/theory/README.md; the examples' pages: docs/examples/.

Each builder ``NAME(update)`` returns an :class:`Example` (initial state, the measures to
watch, the energy, the stepper) with every body on one configuration update; :data:`EXAMPLES`
maps the names of ``liemb reproduce`` to a :class:`Spec` (builder, paper section, duration,
step size, the paper's claim, its step sizes); :func:`build` builds one by name.  The flip
of [HGS18] also has its analytic flip interval and the reference solution of its
convergence study in :mod:`.flip_solutions`, and the heavy top of [MT13] §5.1 its
reference trajectory in :mod:`.top_reference`.  Running them: :mod:`.study`.
"""
import dataclasses
import math

import numpy as np

from ...sim.integrators import MAX_STEP_ANGLE, RK4, Stepper
from ...sim.mbs import Body, System
from ...sim.mbs.ulv import UnifiedBody, UnifiedStepper
from .flip_solutions import (  # noqa: F401 (importable from here as before)
    FLIP_J, FLIP_OMEGA0, FLIP_REFERENCE_H, euler_rk4, flip_interval, flip_reference)

RHO = 2700.0            # aluminium, implied by the papers' masses (86.4 kg / 0.032 m^3)
G = (0.0, 0.0, -9.81)
#: a constraint violation [m] (or dimensionless residual) at or below this is round-off
#: (the papers' figures show 1e-15 .. 1e-13 m; 1e5 steps accumulate to ~1e-12 m)
ROUNDOFF = 1e-11


def _box(a, b, c):
    m = RHO * a * b * c
    return m, m / 12.0 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])


def _pose(r, R=None):
    C = np.eye(4)
    C[:3, 3] = r
    if R is not None:
        C[:3, :3] = R
    return C


def _twist(update, C, w, v_world):
    """Velocity of a body with frame pose C, omega (body), frame-origin velocity (world)."""
    v = C[:3, :3].T @ v_world if update == 'se3' else v_world
    return np.concatenate([w, v])


class Example:
    """
    A built example: initial state ``y0``, measures ``{name: f(t, y) -> float}``.

    ``system`` (a :class:`~liemb_ros.sim.mbs.System`, or ``None`` for [HGS18]'s formulation
    and kinematic examples), ``energy`` ('total', 'kinetic' or ``None``: no energy),
    ``stepper(max_angle)`` (default: MK-RK4 on the system), ``energy_fn(y)``,
    ``rotation(y)`` (R of the first body) and ``omega(y)`` (its body angular velocity)
    where the defaults do not apply.
    """

    def __init__(self, system, y0, measures, energy='total', stepper=None, energy_fn=None,
                 rotation=None, omega=None):
        self.system = system
        self.y0 = y0
        self.measures = measures
        self.energy = energy
        self._stepper = stepper
        self._energy_fn = energy_fn
        self._rotation = rotation
        self._omega = omega

    def stepper(self, max_angle=MAX_STEP_ANGLE):
        """Return a stepper with ``step(t, y, h)`` (MK-RK4 unless the example has its own)."""
        if self._stepper is not None:
            return self._stepper(max_angle)
        return Stepper(self.system.space, self.system.rhs, RK4, max_angle=max_angle)

    def energy_of(self, y):
        """Return the total (kinetic for force-free examples) energy of ``y`` (0: none)."""
        if self.energy is None:
            return 0.0
        if self._energy_fn is not None:
            return self._energy_fn(y)
        s = self.system
        return s.kinetic_energy(y) if self.energy == 'kinetic' else s.energy(y)

    def rotation(self, y):
        """Return the rotation matrix of the first body."""
        if self._rotation is not None:
            return self._rotation(y)
        return self.system.split(y)[0][0, :3, :3]

    def omega(self, y):
        """Return the body-fixed angular velocity of the first body."""
        if self._omega is not None:
            return self._omega(y)
        return self.system.split(y)[1][0, :3]

    def tailor(self):
        """Switch every body to the tailored update (SE(3) iff jointed to the ground)."""
        s = self.system
        self.y0 = s.set_updates(s.tailored_updates(), self.y0)
        return self


def _joint_measures(s):
    out = {}
    for k, (name, _, parts) in enumerate(s.joints):
        has_ori = any(not p for _, _, p in parts)
        out[f'{name} position [m]'] = (lambda t, y, k=k: s.joint_violations(y)[k][1])
        if has_ori:
            out[f'{name} orientation'] = (lambda t, y, k=k: s.joint_violations(y)[k][2])
    return out


# ----------------------------------------------------------------------------- examples
def free_box(update, offset, screw):
    """[MT14] §5.1/5.2: free 0.8x0.4x0.1 m box, frame at the COM or at the end face."""
    m, theta = _box(0.8, 0.4, 0.1)
    c = np.array([0.4, 0.0, 0.0]) if offset else np.zeros(3)
    s = System()
    s.add_body(Body('box', m, theta, com=c, update=update))
    if screw and not offset:
        w, vcom = np.array([0.0, 0.0, 2 * math.pi]), np.array([10.0, 0.0, 0.0])
    elif screw:
        w, vcom = np.array([10 * math.pi, 2 * math.pi, 0.0]), np.array([10.0, 0.0, 0.0])
    else:
        w, vcom = np.array([10 * math.pi, 2 * math.pi, 0.0]), np.zeros(3)
    v0 = vcom + np.cross(w, -c)              # velocity of the frame origin (R = I)
    y0 = s.state([np.eye(4)], [_twist(update, np.eye(4), w, v0)])

    def com_error(t, y):
        C = s.split(y)[0][0]
        return float(np.linalg.norm(C[:3, :3] @ c + C[:3, 3] - (c + vcom * t)))
    return Example(s, y0, {'COM drift [m]': com_error}, energy='kinetic')


def heavy_top_spring(update):
    """[MT14] §5.3: box 0.1x0.2x0.4 on a spherical joint, spring c = 1e4 N/m, gravity."""
    s = System(gravity=G)
    b = s.add_body(Body('top', 21.6, np.diag([0.36, 0.306, 0.09]), update=update))
    r0 = np.array([-0.5, 0.0, 0.0])
    s.spherical(b, r0, None, np.zeros(3), name='pivot')
    s.spring(b, np.zeros(3), None, np.array([1.0, 0.0, 0.5]), 1e4)
    C = _pose([0.5, 0, 0])
    w = np.array([0.0, 0.0, 0.5])
    y0 = s.state([C], [_twist(update, C, w, np.cross(w, -r0))])
    return Example(s, y0, _joint_measures(s))


def heavy_top_001(update):
    """[MT13] §5.1: the same box, COM at r0 = (0.5, 0, 0) from the pivot, no gravity."""
    s = System()
    b = s.add_body(Body('top', 21.6, np.diag([0.36, 0.306, 0.09]), update=update))
    r0 = np.array([0.5, 0.0, 0.0])
    s.spherical(b, -r0, None, np.zeros(3), name='pivot')
    C = _pose(r0)
    w = np.array([0.0, 20 * math.pi, 10 * math.pi])
    y0 = s.state([C], [_twist(update, C, w, np.cross(w, r0))])
    return Example(s, y0, _joint_measures(s), energy='kinetic')


def heavy_top_reference(update):
    """
    [MT13] §5.1's top against its reference trajectory (:mod:`.top_reference`).

    The top of :func:`heavy_top_001`; measures: the pivot, and the orientation error
    ``angle(R_ref^T R)`` [rad] against [MT13]'s reference (quaternions, variable-step RK4
    at relative/absolute accuracy 1e-6/1e-9) and against a tight one (DOP853 at 1e-13),
    both sampled every :data:`~.top_reference.SAMPLE` s up to the example's 10 s; between
    samples (and after 10 s) a measure keeps its last value.
    """
    from . import top_reference as tr
    ex = heavy_top_001(update)
    top = ex.system.bodies[0]
    J = tr.pivot_inertia(top.mass, top.inertia, [0.5, 0.0, 0.0])
    ref = tr.top_reference(tuple(J.ravel()), (0.0, 20 * math.pi, 10 * math.pi),
                           EXAMPLES['heavy_top_reference'].t_end)
    n_ref = len(ref['t']) - 1

    def against(which):
        last = {'e': 0.0}

        def error(t, y):
            k = t / tr.SAMPLE
            if abs(k - round(k)) < 1e-6 and round(k) <= n_ref:
                R = ex.rotation(y)
                last['e'] = tr.rotation_angle(ref[which][int(round(k))].T @ R)
            return last['e']
        return error
    ex.measures['orientation vs [MT13] reference [rad]'] = against('paper')
    ex.measures['orientation vs tight reference [rad]'] = against('tight')
    return ex


def _links(s, update, n):
    m, theta = _box(0.2, 0.1, 0.05)
    return [s.add_body(Body(f'link{i + 1}', m, theta, update=update)) for i in range(n)]


def double_pendulum(update):
    """[MT14] §5.4 / [MT13] §5.2: two 0.2x0.1x0.05 aluminium boxes, spherical joints."""
    s = System(gravity=G)
    b1, b2 = _links(s, update, 2)
    h = np.array([0.1, 0.0, 0.0])
    s.spherical(b1, -h, None, np.zeros(3), name='joint1')
    s.spherical(b1, h, b2, -h, name='joint2')
    C1, C2 = _pose([0.1, 0, 0]), _pose([0.3, 0, 0])
    w1, w2 = np.array([10.0, 0, 0]), np.array([10, 10, 20]) * math.pi
    v1 = np.cross(w1, h)
    v2 = v1 + np.cross(w1, h) + np.cross(w2, h)
    y0 = s.state([C1, C2], [_twist(update, C1, w1, v1), _twist(update, C2, w2, v2)])
    return Example(s, y0, _joint_measures(s))


def floating_pair(update):
    """[MT13] §5.3: the two links joined by one spherical joint, free, no gravity."""
    s = System()
    b1, b2 = _links(s, update, 2)
    h = np.array([0.1, 0.0, 0.0])
    s.spherical(b1, h, b2, -h, name='joint1')
    C1, C2 = _pose([0.1, 0, 0]), _pose([0.3, 0, 0])
    w1, w2 = np.array([0, 0, -10.0]), np.array([1.0, -1.0, 2 * math.pi])
    v2 = np.cross(w1, h) + np.cross(w2, h)
    y0 = s.state([C1, C2], [_twist(update, C1, w1, np.zeros(3)), _twist(update, C2, w2, v2)])
    return Example(s, y0, _joint_measures(s), energy='kinetic')


def three_bar(update):
    """[MT13] §5.4 (own geometry): ground-link1-link2-ground loop of spherical joints."""
    s = System(gravity=G)
    m, th = _box(0.2, 0.1, 0.05)
    b1 = s.add_body(Body('link1', m, th, update=update))
    b2 = s.add_body(Body('link2', m, np.diag(th.diagonal()[[1, 0, 2]]), update=update))
    s.spherical(b1, [-0.1, 0, 0], None, np.zeros(3), name='joint1')
    s.spherical(b1, [0.1, 0, 0], b2, [0, -0.1, 0], name='joint2')
    s.spherical(b2, [0, 0.1, 0], None, [0.2, 0.2, 0], name='joint3')
    C1, C2 = _pose([0.1, 0, 0]), _pose([0.2, 0.1, 0])
    w1 = np.array([3.0, 0.0, 5.0])
    y = s.state([C1, C2], [_twist(update, C1, w1, np.cross(w1, [0.1, 0, 0])), np.zeros(6)])
    return Example(s, s.project_velocities(y), _joint_measures(s))


def spherical_four_bar(update):
    """
    [MT14] §5.4's remark (own geometry): ground-link1-link2-link3-ground loop of spheres.

    The three 0.2x0.1x0.05 m links of :func:`three_bar` (the third along x like the first):
    ground point (0, 0, 0), link 1 to (0.2, 0, 0), link 2 to (0.2, 0.2, 0), link 3 to the
    ground point (0.4, 0.2, 0), spherical joints, gravity; omega1 = (3, 0, 5) rad/s
    projected onto the constraints (kinetic-energy metric).  The loop has 6 degrees of
    freedom, three of them the links' spins about their own axes.
    """
    s = System(gravity=G)
    m, th = _box(0.2, 0.1, 0.05)
    th_y = np.diag(th.diagonal()[[1, 0, 2]])
    b1 = s.add_body(Body('link1', m, th, update=update))
    b2 = s.add_body(Body('link2', m, th_y, update=update))
    b3 = s.add_body(Body('link3', m, th, update=update))
    s.spherical(b1, [-0.1, 0, 0], None, np.zeros(3), name='joint1')
    s.spherical(b1, [0.1, 0, 0], b2, [0, -0.1, 0], name='joint2')
    s.spherical(b2, [0, 0.1, 0], b3, [-0.1, 0, 0], name='joint3')
    s.spherical(b3, [0.1, 0, 0], None, [0.4, 0.2, 0], name='joint4')
    C1, C2, C3 = _pose([0.1, 0, 0]), _pose([0.2, 0.1, 0]), _pose([0.3, 0.2, 0])
    w1 = np.array([3.0, 0.0, 5.0])
    y = s.state([C1, C2, C3], [_twist(update, C1, w1, np.cross(w1, [0.1, 0, 0])),
                               np.zeros(6), np.zeros(6)])
    return Example(s, s.project_velocities(y), _joint_measures(s))


def four_bar(update):
    """[MT14] §5.5 (own geometry, L0 = 0.5 m): crank, coupler, rocker; joint 4 spherical."""
    s = System()
    pts = ([0, 0, 0], [0, 0.2, 0], [0.5, 0.4, 0], [0.5, 0, 0])
    A, B, Cp, D = (np.array(p, float) for p in pts)
    bodies, coms = [], []
    for name, p, q in (('crank', A, B), ('coupler', B, Cp), ('rocker', D, Cp)):
        L = np.linalg.norm(q - p)
        u = (q - p) / L
        m = RHO * 0.02 * 0.02 * L
        th = m * L * L / 12 * (np.eye(3) - np.outer(u, u)) + m * 0.02 ** 2 / 6 * np.eye(3)
        bodies.append(s.add_body(Body(name, m, th, update=update)))
        coms.append((p + q) / 2)
    z = np.array([0.0, 0.0, 1.0])
    c1, c2, c3 = coms
    s.revolute(bodies[0], A - c1, z, None, A, z, name='joint1')
    s.revolute(bodies[0], B - c1, z, bodies[1], B - c2, z, name='joint2')
    s.revolute(bodies[2], D - c3, z, None, D, z, name='joint3')
    s.spherical(bodies[1], Cp - c2, bodies[2], Cp - c3, name='joint4')
    w0 = 10 * math.pi
    vB = np.cross(w0 * z, B - A)
    # v_C = vB + w2 z x (C - B) = w3 z x (C - D): two equations for (w2, w3)
    M = np.column_stack([np.cross(z, Cp - B)[:2], -np.cross(z, Cp - D)[:2]])
    w2, w3 = np.linalg.solve(M, -vB[:2])
    Cs = [_pose(c) for c in coms]
    vel = [_twist(update, Cs[0], w0 * z, np.cross(w0 * z, c1 - A)),
           _twist(update, Cs[1], w2 * z, vB + np.cross(w2 * z, c2 - B)),
           _twist(update, Cs[2], w3 * z, np.cross(w3 * z, c3 - D))]
    return Example(s, s.state(Cs, vel), _joint_measures(s))


def rp_mechanism(update, cylindrical=False):
    """
    [MT14] §5.6 (own geometry, given masses): ring on a revolute, slider, spring.

    ``cylindrical``: joint 1 is a cylindrical joint (the ring also slides along the axis,
    under gravity and the spring), the variant of which §5.6 says "the same accuracy".
    """
    s = System(gravity=G)
    z = np.array([0.0, 0.0, 1.0])
    r1, r2 = np.array([0.1, 0.0, 0.0]), np.array([0.25, 0.0, 0.1])
    b1 = s.add_body(Body('ring', 6.82825, np.diag([0.0507567, 0.0507567, 0.0986682]),
                         update=update))
    b2 = s.add_body(Body('slider', 0.864, np.diag([0.0002304, 0.0029952, 0.0029952]),
                         update=update))
    x = np.array([1.0, 0, 0])
    (s.cylindrical if cylindrical else s.revolute)(b1, -r1, z, None, np.zeros(3), z,
                                                   name='joint1')
    s.prismatic(b2, np.zeros(3), z, x, b1, r2 - r1, z, x, name='joint2')
    s.spring(b1, r2 - r1 - 0.1 * z, b2, np.zeros(3), 1e4, rest_length=0.1)
    w = 20 * math.pi * z
    C1, C2 = _pose(r1), _pose(r2)
    y0 = s.state([C1, C2], [_twist(update, C1, w, np.cross(w, r1)),
                            _twist(update, C2, w, np.cross(w, r2) + z)])
    return Example(s, y0, _joint_measures(s))


def rotating_frame(update, omega=1.0, radius=1.0):
    """
    [MT14] §4, Fig. 1: a frame rotating about a fixed axis, explicit midpoint rule.

    The frame starts at ``(radius, 0, 0)`` and turns about the world z axis at ``omega``;
    its velocity is prescribed as the exact function of time (the paper's ``V_{i+1/2} =
    V(t_i + dt/2)``): the constant body twist ``(omega e3, omega p x e3)``, ``p = (-radius,
    0, 0)`` on SE(3), the mixed velocity ``(omega e3, r'(t))`` on SO(3)xR^3.  The paper's
    "explicit trapezoidal" scheme is the midpoint rule (docs/theory/errata.md#mt14-s4).
    Measures: the position error against the exact circle, and that of the first step,
    which the paper gives as ``r omega dt - 2 r sin(omega dt / 2)`` for SO(3)xR^3
    (4.1661e-5 for ``r = omega = 1``, ``dt = 0.1``; ``dt^3 / 24`` to leading order) and 0 for
    SE(3).
    """
    from ...sim.integrators import MIDPOINT, SE3, SO3R3
    space = SE3() if update == 'se3' else SO3R3()
    e3 = np.array([0.0, 0.0, 1.0])
    p = np.array([-radius, 0.0, 0.0])
    twist = np.concatenate([omega * e3, omega * np.cross(p, e3)])

    def exact(t):
        c, s_ = math.cos(omega * t), math.sin(omega * t)
        return np.array([[c, -s_, 0.0], [s_, c, 0.0], [0.0, 0.0, 1.0]]) @ [radius, 0.0, 0.0]

    def f(t, y):
        if update == 'se3':
            return twist
        return np.concatenate([omega * e3, omega * np.cross(e3, exact(t))])

    def error(t, y):
        return float(np.linalg.norm(y.reshape(4, 4)[:3, 3] - exact(t)))
    first = {}

    def first_step(t, y):
        first.setdefault('e', error(t, y))
        return first['e']
    y0 = _pose([radius, 0.0, 0.0]).reshape(-1)
    return Example(None, y0, {'position error [m]': error, 'first-step error [m]': first_step},
                   energy=None,
                   stepper=lambda a: Stepper(space, f, MIDPOINT, max_angle=a),
                   rotation=lambda y: y.reshape(4, 4)[:3, :3],
                   omega=lambda y: omega * e3)


def rotating_frame_step_error(dt, omega=1.0, radius=1.0):
    """[MT14] §4: the SO(3)xR^3 position error of one step, ``r w dt - 2 r sin(w dt/2)``."""
    return radius * omega * dt - 2.0 * radius * math.sin(0.5 * omega * dt)


def cardan(update):
    """[MT14] §5.7 (own geometry): shaft on a revolute (frame on the axis), Hooke joint."""
    s = System()
    y_ax = np.array([0.0, 1.0, 0.0])
    m1, th1 = _box(0.04, 0.2, 0.04)
    b1 = s.add_body(Body('shaft1', m1, th1, update=update))
    a = math.radians(30)
    R2 = np.array([[math.cos(a), -math.sin(a), 0], [math.sin(a), math.cos(a), 0], [0, 0, 1]])
    b2 = s.add_body(Body('shaft2', m1, th1, update=update))
    hook = np.array([0.0, 0.2, 0.0])
    c2 = hook + R2 @ [0, 0.1, 0]
    s.revolute(b1, [0, -0.1, 0], y_ax, None, [0, 0, 0], y_ax, name='joint1')
    s.universal(b1, [0, 0.1, 0], [0, 0, 1], b2, [0, -0.1, 0], [1, 0, 0], name='joint2')
    C1, C2 = _pose([0, 0.1, 0]), _pose(c2, R2)
    w1, w2 = np.array([0, math.pi, 0]), np.array([math.pi, math.pi, 0])
    y = s.state([C1, C2], [_twist(update, C1, w1, np.zeros(3)),
                           _twist(update, C2, R2.T @ w2,
                                  np.cross(w1, hook) + np.cross(w2, c2 - hook))])
    return Example(s, s.project_velocities(y), _joint_measures(s), energy='kinetic')


def _ulv_example(body, H0, U0, omega0, stages, energy, energy_fn):
    """Return the :class:`Example` of one :class:`~liemb_ros.sim.mbs.ulv.UnifiedBody`."""
    y0 = np.concatenate([np.asarray(H0, dtype=float).reshape(-1), body.coordinates(U0, omega0)])
    return Example(None, y0, {}, energy=energy,
                   stepper=lambda a: UnifiedStepper(body, stages=stages, max_angle=a),
                   energy_fn=energy_fn,
                   rotation=lambda y: y[:16].reshape(4, 4)[:3, :3],
                   omega=lambda y: body.twist(y[16:])[1])


#: the sprung box: spring point (COM frame) and world anchor [m], stiffness [N/m], start
SPRUNG_POINT = np.array([0.5, 0.2, 0.1])
SPRUNG_ANCHOR = np.array([0.0, 0.0, 1.0])
SPRUNG_STIFFNESS = 50.0
SPRUNG_V0 = np.array([1.0, -2.0, 0.5])
SPRUNG_OMEGA0 = np.array([1.0, 5.0, -2.0])


def sprung_box(update):
    """
    [HGS18] §6's box (m = 1, J = diag(5.2988, 1.1775, 4.3568)) translating under loads.

    Own example (not in [HGS18]): the box starts at the origin with R = I, COM velocity
    :data:`SPRUNG_V0` (world = body at the start) and body angular velocity
    :data:`SPRUNG_OMEGA0`; gravity and a zero-length spring of :data:`SPRUNG_STIFFNESS` from
    the body point :data:`SPRUNG_POINT` to the world point :data:`SPRUNG_ANCHOR` act, so
    the force and the moment depend on the configuration and the motion translates and
    rotates at once: what the flip (torque-free, U = 0) cannot exercise, the ``n_T``-``n_R``
    coupling of (78) (``T_2``) and the stage configurations of (82)-(85).  ``update``:
    'se3' (body-twist Munthe-Kaas RK4 on :class:`~liemb_ros.sim.mbs.System`), 'ulv'
    ([HGS18]'s scheme with the forces at the Munthe-Kaas stage configurations), 'ulv-paper'
    (forces at ``H_i`` in every stage, as printed).  Measures: the COM position [m] and the
    orientation [rad] against :func:`.flip_solutions.newton_euler_reference`.
    """
    from .flip_solutions import newton_euler_reference
    from .top_reference import rotation_angle
    a, p, c = SPRUNG_POINT, SPRUNG_ANCHOR, SPRUNG_STIFFNESS
    g = np.array(G)
    if update in ('ulv', 'ulv-paper'):
        def spring(t, H, w):
            R = H[:3, :3]
            F = R.T @ (-c * (H[:3, 3] + R @ a - p))
            return F, np.cross(a, F)
        body = UnifiedBody(1.0, np.diag(FLIP_J), gravity=G, wrench=spring)

        def energy(y):
            H = y[:16].reshape(4, 4)
            d = H[:3, 3] + H[:3, :3] @ a - p
            return body.kinetic_energy(y[16:]) - g @ H[:3, 3] + 0.5 * c * (d @ d)
        ex = _ulv_example(body, np.eye(4), SPRUNG_V0, SPRUNG_OMEGA0,
                          'paper' if update == 'ulv-paper' else 'munthe-kaas', 'total', energy)

        def pose(y):
            return y[:16].reshape(4, 4)
    else:
        s = System(gravity=G)
        b = s.add_body(Body('box', 1.0, np.diag(FLIP_J), update=update))
        s.spring(b, a, None, p, c)
        y0 = s.state([np.eye(4)], [_twist(update, np.eye(4), SPRUNG_OMEGA0, SPRUNG_V0)])
        ex = Example(s, y0, {})

        def pose(y):
            return s.split(y)[0][0]
    solved = {'t_end': 0.0}

    def ref(t):
        if t > solved['t_end']:         # (re)solve up to t_end, further for a longer run
            solved['t_end'] = max(t, EXAMPLES['sprung_box'].t_end, 2.0 * solved['t_end'])
            solved['f'] = newton_euler_reference(1.0, np.diag(FLIP_J), np.zeros(3), SPRUNG_V0,
                                                 SPRUNG_OMEGA0, solved['t_end'], G, p, a, c)
        return solved['f'](t)

    def position(t, y):
        return float(np.linalg.norm(pose(y)[:3, 3] - ref(t)[0]))

    def orientation(t, y):
        return rotation_angle(ref(t)[1].T @ pose(y)[:3, :3])
    ex.measures = {'COM position vs reference [m]': position,
                   'orientation vs reference [rad]': orientation}
    return ex


def flip(update):
    """
    [HGS18] §6: free box J = diag(5.2988, 1.1775, 4.3568), m = 1, Omega0 = (0.01, 0, 100).

    ``update`` 'se3' or 'so3r3': body-twist (mixed-velocity) Munthe-Kaas RK4 on
    :class:`~liemb_ros.sim.mbs.System`; 'ulv': [HGS18]'s unified local velocity coordinates
    with its RK4 Lie group scheme (:mod:`liemb_ros.sim.mbs.ulv`).
    """
    w0 = FLIP_OMEGA0
    L0 = FLIP_J * w0
    if update == 'ulv':
        body = UnifiedBody(1.0, np.diag(FLIP_J))
        ex = _ulv_example(body, np.eye(4), np.zeros(3), w0, 'munthe-kaas', 'kinetic',
                          lambda y: body.kinetic_energy(y[16:]))
    else:
        s = System()
        s.add_body(Body('box', 1.0, np.diag(FLIP_J), update=update))
        y0 = s.state([np.eye(4)], [np.concatenate([w0, np.zeros(3)])])
        ex = Example(s, y0, {}, energy='kinetic')

    def momentum(t, y):
        return float(np.linalg.norm(ex.rotation(y) @ (FLIP_J * ex.omega(y)) - L0)
                     / np.linalg.norm(L0))

    def det_error(t, y):
        return abs(float(np.linalg.det(ex.rotation(y))) - 1.0)
    ex.measures = {'rel. angular momentum drift': momentum, '|det R - 1|': det_error}
    return ex


PAPER_000_DTS = (1e-2, 1e-3, 1e-4)
#: [HGS18] §6, Fig. 11
PAPER_003_DTS = tuple(1.0 / n for n in (10, 40, 80, 160, 320, 640, 1280, 2560, 5120))


@dataclasses.dataclass(eq=False)
class Spec:
    """
    One entry of :data:`EXAMPLES`: how to build it and what the paper says.

    ``claim``: what the paper prints (its words and numbers); ``derived``: numbers of our own
    derivation that the paper does not print (printed as "derived:", never as "paper:").
    ``roundoff``: the round-off floor of its measures (default :data:`ROUNDOFF`; larger where
    positions are large: the boxes whose COM travels 100 m reach 1.1e-10 m after 1e5 steps
    with the exact SO(3)xR^3 update, so their floor is 3e-10 m).
    """

    build: object   # the builder, NAME(update) -> Example
    section: str
    t_end: float
    dt: float
    claim: str
    dts: tuple = PAPER_000_DTS
    updates: tuple = ('se3', 'so3r3')
    dts_source: str = '[MT14] §5: 1e-2, 1e-3, 1e-4 s'
    roundoff: float = ROUNDOFF
    derived: str = ''


_001 = '[MT13] uses 1e-3 s only; the sequence of [MT14] §5 (same authors, same scheme)'

EXAMPLES = {
    'box_com_rotation': Spec(lambda u: free_box(u, False, False), '[MT14] §5.1 A', 10.0, 1e-3,
                             'COM stays at 0 for both updates; T0 = 696.399 J'),
    'box_com_screw': Spec(lambda u: free_box(u, False, True), '[MT14] §5.1 B', 10.0, 1e-3,
                          'SO(3)xR^3 exact; SE(3) 4th order', roundoff=3e-10),
    'box_offset_rotation': Spec(lambda u: free_box(u, True, False), '[MT14] §5.2 A', 10.0, 1e-3,
                                'SE(3) exact for any step; SO(3)xR^3 4th order'),
    'box_offset_screw': Spec(lambda u: free_box(u, True, True), '[MT14] §5.2 B', 10.0, 1e-3,
                             'both 4th order, SO(3)xR^3 more accurate', roundoff=3e-10),
    'heavy_top_spring': Spec(heavy_top_spring, '[MT14] §5.3', 8.0, 1e-3,
                             'SE(3) pivot at round-off; SO(3)xR^3 drifts; energy better '
                             'with SE(3)'),
    'double_pendulum': Spec(double_pendulum, '[MT14] §5.4, [MT13] §5.2', 5.0, 1e-3,
                            'joint 1 exact with SE(3); joint 2 similar for both',
                            updates=('se3', 'so3r3', 'tailored')),
    'spherical_four_bar': Spec(spherical_four_bar, '[MT14] §5.4 (remark)', 5.0, 1e-3,
                               '"Similar results were obtained for a spherical three-bar and '
                               'a four-bar pendulum": ground joints exact with SE(3), joints '
                               'between the links similar for both',
                               updates=('se3', 'so3r3', 'tailored')),
    'four_bar': Spec(four_bar, '[MT14] §5.5', 2.0, 1e-3,
                     'ground revolutes exact with SE(3); orientation exact for both',
                     updates=('se3', 'so3r3', 'tailored')),
    'rp_mechanism': Spec(rp_mechanism, '[MT14] §5.6', 2.0, 1e-3,
                         'revolute and prismatic exact with SE(3) even for large steps'),
    'rp_cylindrical': Spec(lambda u: rp_mechanism(u, cylindrical=True), '[MT14] §5.6', 2.0, 1e-3,
                           'joint 1 cylindrical: "the same accuracy" (SE(3) exact for any '
                           'step)'),
    'rotating_frame': Spec(rotating_frame, '[MT14] §4, Fig. 1', 10.0, 0.1,
                           'midpoint rule: SE(3) exact for any step; SO(3)xR^3 orientation '
                           'exact, position not (Fig. 1b)',
                           dts=(1.0, 0.1, 0.01), dts_source='[MT14] §4 ("any step"); ours',
                           derived='SO(3)xR^3 step error r w dt - 2 r sin(w dt/2) = 4.166e-5 m '
                                   '(r = w = 1, dt = 0.1)'),
    'cardan': Spec(cardan, '[MT14] §5.7', 5.0, 1e-3,
                   'joint 1 exact for both; hook centre exact with SE(3); hook angle same '
                   'order', updates=('se3', 'so3r3', 'tailored')),
    'heavy_top': Spec(heavy_top_001, '[MT13] §5.1', 10.0, 1e-3,
                      'SE(3) pivot at round-off; SO(3)xR^3 ~1e-5 m; T0 = 13.97 kJ',
                      dts_source=_001, derived='T0 = 13972.4 J'),
    'heavy_top_reference': Spec(heavy_top_reference, '[MT13] §5.1 (reference)', 10.0, 1e-3,
                                'a reference trajectory from Euler\'s equations in '
                                'quaternions, variable-step RK4, relative/absolute accuracy '
                                '1e-6/1e-9', dts_source=_001),
    'floating_pair': Spec(floating_pair, '[MT13] §5.3', 10.0, 1e-3,
                          'both updates similar (~1e-7 m)', dts_source=_001),
    'three_bar': Spec(three_bar, '[MT13] §5.4', 10.0, 1e-3,
                      'ground joints exact with SE(3); joint 2 similar for both',
                      dts_source=_001, updates=('se3', 'so3r3', 'tailored')),
    'flip': Spec(flip, '[HGS18] §6', 1.0, 1.0 / 1280,
                 '|det R - 1| < 1e-13; 4th order in Omega (Fig. 11, 12)',
                 dts=PAPER_003_DTS, updates=('se3', 'ulv'),
                 dts_source='[HGS18] §6, Fig. 11: h = 1/10 ... 1/5120'),
    'sprung_box': Spec(sprung_box, '[HGS18] §6 box, own loads', 1.0, 1.0 / 1280,
                       'RK4 Lie group scheme (82)-(87) 4th order (Fig. 11; shown for the '
                       'torque-free flip only)',
                       dts=PAPER_003_DTS, updates=('se3', 'ulv', 'ulv-paper'),
                       dts_source='[HGS18] §6, Fig. 11: h = 1/10 ... 1/5120',
                       derived='own loads: 4th order with the forces at the stage '
                               'configurations, 1st order at H_i in every stage (as printed)'),
}
UPDATES = ('se3', 'so3r3', 'tailored', 'ulv', 'ulv-paper')


def build(name, update):
    """Return the :class:`Example` ``name`` with every body on ``update``."""
    if name not in EXAMPLES:
        raise ValueError(f'unknown example {name!r}; try --list')
    if update in ('ulv', 'ulv-paper') and update not in EXAMPLES[name].updates:
        raise ValueError(f"update {update!r} ([HGS18]'s formulation) covers one free rigid "
                         'body: only the examples ' + ', '.join(
                             n for n, sp in EXAMPLES.items() if update in sp.updates))
    if update not in UPDATES:
        raise ValueError(f'unknown update {update!r}; one of {", ".join(UPDATES)}')
    if update == 'tailored':
        ex = EXAMPLES[name].build('se3')
        if ex.system is None:
            raise ValueError(f"update 'tailored' needs a multibody example; {name!r} has none")
        return ex.tailor()
    return EXAMPLES[name].build(update)
