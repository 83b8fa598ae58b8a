"""
Lie group time integration: Munthe-Kaas Runge-Kutta on ``G x R^k`` ([MT14] App. B).

Theory: docs/theory/integrators.md; references ([MT14], [MT13], [HGS18]): docs/theory/README.md.

API (everything below is importable from ``liemb_ros.sim.integrators``)::

    from liemb_ros.sim.integrators import Product, SE3, SO3R3, SO3, Vector, RK4, step
    space = Product(SE3(), Vector(nq), Vector(6), Vector(nv))  # state layout, flattened
    y = space.join(C_base, q, V_base, qd)       # one flat float64 array (C as 4x4)
    C, q, V, qd = space.split(y)                # views (4x4, (nq,), (6,), (nv,))
    def f(t, y):                                 # left-trivialised velocity, len space.dim
        C, q, V, qd = space.split(y)
        return np.concatenate([V, qd, Vdot, qdd])   # body twist, q', V', q''
    y1 = step(space, f, t, y, h, RK4)            # one step; y1 = y exp(Phi)
    stepper = Stepper(space, f, RK4); y1 = stepper.step(t, y, h)   # reusable, faster
    sol = integrate(space, f, y0, (t0, t1), h)                      # fixed step, Solution
    sol = integrate_adaptive(space, f, y0, (t0, t1), DORMAND_PRINCE, rtol=1e-8, atol=1e-10)

Spaces (:mod:`.spaces`): ``SE3()`` (4x4 pose, body-fixed twist ``(omega, v)``), ``SO3R3()``
(4x4 ``[[R, r], [0, 1]]`` with the direct product, mixed velocity ``(omega^b, r')``),
``SO3()`` (3x3, body ``omega``), ``Vector(k)``; ``Product(...)`` of any of them.  The group
part is updated by right multiplication with the exact exponential, so it never leaves the
group; vector parts get the classical Runge-Kutta step.  ``f`` must return, per factor, the
body-fixed (left-trivialised) velocity: ``C' = C V^`` on SE(3), ``(R', r') = (R omega^, u)``
on SO(3)xR^3, ``y'`` on vectors.

Tableaus (:mod:`.tableaus`): ``EULER``, ``HEUN``, ``MIDPOINT``, ``RK3``, ``RK4`` (classical;
the papers' MK-RK4 and the consistent 4th-order variant of [HGS18] §5.3: stage
configurations ``y exp(Psi_j)``, increment reset to 0 every step), ``RK38`` and embedded
pairs ``HEUN_EULER``, ``BOGACKI_SHAMPINE``, ``DORMAND_PRINCE`` for :func:`integrate_adaptive`.
``Tableau(name, a, b, c, order, b_hat=None, embedded_order=None)`` makes others.

Errors: :class:`StepSizeError` (a stage rotates a body by more than ``MAX_STEP_ANGLE`` =
0.9 * 2 pi in one step, near the pole of ``dexp^-1`` at 2 pi: the step is too large;
``Stepper(..., max_angle=None)`` runs on), :class:`IntegrationError` (non-finite state, step
size underflow).
"""
from .rkmk import (MAX_STEP_ANGLE, IntegrationError, Solution, Stepper, StepSizeError, integrate,
                   integrate_adaptive, step)
from .spaces import SE3, SO3, SO3R3, Product, Vector
from .tableaus import (BOGACKI_SHAMPINE, DORMAND_PRINCE, EULER, HEUN, HEUN_EULER, MIDPOINT, RK3,
                       RK4, RK38, TABLEAUS, Tableau)

__all__ = ['Product', 'SE3', 'SO3R3', 'SO3', 'Vector', 'Tableau', 'TABLEAUS', 'EULER', 'HEUN',
           'MIDPOINT', 'RK3', 'RK4', 'RK38', 'HEUN_EULER', 'BOGACKI_SHAMPINE',
           'DORMAND_PRINCE', 'Stepper', 'step', 'integrate', 'integrate_adaptive', 'Solution',
           'StepSizeError', 'IntegrationError', 'MAX_STEP_ANGLE']
