"""
The Simulator in absolute coordinates: bodies on SE(3) / SO(3)xR3 with joint constraints.

See :mod:`liemb_ros.sim.simulator` (``coordinates='absolute'``) and :mod:`liemb_ros.sim.mbs`.
"""
import numpy as np

from .passive import limit_state, passive_torques
from .integrators import TABLEAUS, Stepper


class _AbsoluteCoordinates:
    """
    Bodies on SE(3) / SO(3)xR3 with joint constraints (:func:`liemb_ros.sim.mbs.from_model`).

    ``update='tailored'``: SE(3) for bodies jointed to the ground (their lower pair is
    then kept exactly, [MT14] Corollary 1), SO(3)xR3 for all others ([MT13]).
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

    def advance(self, t, h):
        from .integrators import IntegrationError
        sim = self.sim
        q, V = self._joints()[:2]
        qd = V[self.model.nv - self.model.nq:]
        reaching = np.zeros(len(q), dtype=np.bool_)
        if limit_state(q, qd, sim.lower, sim.upper, h, reaching) == 2:
            sim.joint_limits.engage(reaching, q,
                                    self._joints()[3] if self.model.floating else None)
        tau = np.empty(self.model.nq)
        p0 = passive_torques(q, qd, sim._tau, (sim.damping, sim.friction, sim.friction_velocity,
                                               sim.lower, sim.upper, sim.limit_stiffness,
                                               sim.limit_damping), tau)
        nc = tau - sim.joint_limits.spring(q)[0]      # held: its work, the springs' in U
        self.sysm.set_torques(tau)
        try:
            self.y = self.stepper.step(t, self.y, h)
        except IntegrationError as exc:
            raise ValueError(str(exc)) from None
        self._joint = None
        if not np.all(np.isfinite(self.y)):
            return
        qd = self._joints()[1][self.model.nv - self.model.nq:]
        self.work += 0.5 * h * (p0 + float(qd @ nc))

    def extra_diagnostics(self):
        return {'constraint_violation': self._joints()[2][:, 0],
                'orientation_violation': self._joints()[2][:, 1],
                'constraint_names': list(self.model.joint_names)}
