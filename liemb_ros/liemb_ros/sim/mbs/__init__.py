"""
Constrained multibody systems in absolute coordinates ([MT14], [MT13]).

Theory: docs/theory/integrators.md; references: docs/theory/README.md.

API::

    from liemb_ros.sim.mbs import System, Body, from_model, joint_state
    s = System(gravity=(0, 0, -9.81))
    b = s.add_body(Body('top', m, Theta_com, com=(0, 0, 0), update='se3'))  # or 'so3r3'
    s.spherical(b, a_body, None, p_world)      # None = ground; revolute, prismatic,
    s.spring(b, (0, 0, 0), None, p0, 1e4)      # cylindrical, universal likewise
    y0 = s.state(poses, velocities)            # body twists (se3) / mixed (so3r3)
    sol = s.simulate(y0, t_end, h)             # MK-RK4, index-1, no stabilisation
    s.joint_violations(y), s.energy(y), s.project(y), s.rhs(t, y), s.space

    sysm, y0 = from_model(model, q, qd, base_pose=None, update='se3')   # URDF Model
    sysm.set_torques(tau)                      # joint torques as wrench pairs
    q, qd, violation = joint_state(sysm, y)    # (+ base pose for floating models)

The free rigid body of [HGS18] in unified local velocity coordinates, with its RK4 Lie group
scheme (:mod:`.ulv`)::

    body = UnifiedBody(m, J, gravity=(0, 0, -9.81))      # wrench=f(t, H, w) -> (F, tau)
    y = np.concatenate([H.ravel(), body.coordinates(U, Omega)])
    y = UnifiedStepper(body).step(t, y, h)

Per-body update groups (``update``) are the papers' tailored update; ``s.alpha``/``s.beta``
switch on Baumgarte stabilisation and ``simulate(project=True)`` projection (both off by
default, as in the papers); ``s.set_updates(s.tailored_updates(), y)`` switches every body
to the tailored update (SE(3) iff jointed to the ground) and converts the state ``y``.
The right-hand side is one compiled kernel (:mod:`._kernels`).
"""
from .from_model import ModelSystem, from_model, joint_state
from .system import Body, System
from .ulv import UnifiedBody, UnifiedStepper

__all__ = ['Body', 'System', 'ModelSystem', 'from_model', 'joint_state', 'UnifiedBody',
           'UnifiedStepper']
