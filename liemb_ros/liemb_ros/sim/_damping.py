"""
The Simulator's damping method: explicit in the tableau, or the implicit ROS2 step.

Joint damping, friction at rest and the limit dampers are viscous rates ``M⁻¹D``; an
explicit tableau is stable while ``dt · λ_max(M⁻¹D)`` stays within its stability interval
(:data:`STABILITY_LIMIT`).  ``damping_method='auto'`` takes the implicit step once that
product exceeds :data:`STIFF_FRACTION` of it, at ``q0`` or later along the motion
(:meth:`DampingMethod.recheck`, every 100 steps); the module docstring of
:mod:`liemb_ros.sim.simulator` says what each step is.
"""
from .passive import damping_rate_max

#: ``damping_method='auto'`` is implicit when ``dt · λ_max(M⁻¹D)`` exceeds this fraction of the
#: tableau's stability limit on the negative real axis (at ``q0``, and checked again every
#: 100 steps along the motion)
STIFF_FRACTION = 0.85
#: ``|R(-x)| <= 1`` for ``0 <= x <= limit``: stability interval of each explicit tableau
#: (``'semi_implicit_euler'`` takes the viscous rates implicitly: no limit)
STABILITY_LIMIT = {'euler': 2.0, 'heun': 2.0, 'midpoint': 2.0, 'rk3': 2.5127,
                   'rk4': 2.7853, 'rk38': 2.7853, 'semi_implicit_euler': float('inf')}


class DampingMethod:
    """
    Which step the damping takes: ``method`` ``'explicit'`` or ``'implicit'``.

    ``requested``: ``'auto'``, ``'explicit'`` or ``'implicit'``; ``viscous``: the
    Simulator's arrays ``(damping, friction, limit_damping)`` (nq,) each (the limit dampers
    change in place as limits engage) and ``friction_velocity``, whose viscous rates
    ``D`` (:meth:`rates`) the method is chosen by; ``stiffness``: ``dt ·
    λ_max(M⁻¹D)`` at ``q0`` (0 without damping or outside joint coordinates);
    ``stiff_limit``: the largest ``dt · λ`` the tableau takes explicitly.
    """

    def __init__(self, model, dt, integrator, joint_coordinates, requested, viscous, q0, base0,
                 armature):
        self.model, self.dt, self.armature = model, dt, armature
        self._viscous = viscous
        self.method, self.stiffness = 'explicit', 0.0
        self.stiff_limit = STIFF_FRACTION * STABILITY_LIMIT[integrator]
        rates = self.rates()
        if joint_coordinates and (rates > 0).any():
            self.stiffness = dt * damping_rate_max(model, rates, q0, base0, armature)
            self.method = (requested if requested != 'auto' else
                           'implicit' if self.stiffness > self.stiff_limit else 'explicit')
        # 'auto' that started explicit: may switch along the way (kept until reset)
        self.auto = requested == 'auto' and self.method == 'explicit' and self.stiffness > 0
        self.initial = self.method

    def rates(self):
        """Viscous coefficients D (nq,): the damping, the friction at rest, the limit dampers."""
        damping, friction, limit_damping, friction_velocity = self._viscous
        return damping + friction / friction_velocity + limit_damping

    def recheck(self, q, base):
        """'auto': return True once the damping became stiff along the way (switch to implicit)."""
        if not self.auto or self.method == 'implicit':
            return False
        stiff = self.dt * damping_rate_max(self.model, self.rates(), q, base, self.armature)
        self.stiffness = max(self.stiffness, stiff)
        return stiff > self.stiff_limit
