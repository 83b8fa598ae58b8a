"""
External wrenches applied to a Simulator's links: their generalized force and their work.

:class:`AppliedWrenches` is the part of :class:`~liemb_ros.sim.simulator.Simulator` that
holds the wrenches ``Simulator.set_wrench`` applies: each one's generalized force ``Jᵀ W``
at every stage of a step (:mod:`._joint`), and the energy each has put in so far, with
which :meth:`~liemb_ros.sim._plausible.Plausibility.blame` names the input behind an
absurd state.
"""
import numpy as np

from ..core.kinematics import jacobian


class AppliedWrenches:
    """
    The external wrenches on a robot's links, a part of the Simulator.

    ``applied``: ``{link: (W (6,), representation)}``, the wrench ``W = (m, f)`` [N m, N]
    and the Jacobian's representation it goes with (``'body'``: link axes, ``'hybrid'``:
    world axes, both about the link frame's origin).  ``work``: ``{link: [work J, largest
    force N, first t, last t]}`` of every wrench applied since the Simulator's reset.
    """

    def __init__(self, model):
        self.model = model
        self.applied = {}
        self.work = {}

    def set(self, link, wrench, representation):
        """Apply ``wrench`` (6,) to ``link`` from now on; a zero wrench removes it."""
        if np.any(wrench):
            self.applied[link] = (wrench.copy(), representation)
        else:
            self.applied.pop(link, None)

    def clear(self):
        """Remove every wrench."""
        self.applied.clear()

    def add_work(self, q, V, base, t, dt):
        """
        Add each wrench's work over the coming step of ``dt`` from ``t`` to ``work``.

        The power at the step's start ``(q, V, base)`` times ``dt`` (for naming the input
        that put energy in; the balance's work is integrated with the state).
        """
        for link, (w, rep) in self.applied.items():
            power = float(V @ (jacobian(self.model, q, link, rep, base_pose=base).T @ w))
            rec = self.work.setdefault(link, [0.0, 0.0, t, t])
            rec[0] += power * dt
            rec[1] = max(rec[1], float(np.linalg.norm(w[3:])))
            rec[3] = t + dt

    def force(self, q, base):
        """Return ``Σ Jᵀ W`` at ``q``, the wrenches' generalized force: shape (nv,)."""
        out = np.zeros(self.model.nv)
        for link, (w, rep) in self.applied.items():
            out += jacobian(self.model, q, link, rep, base_pose=base).T @ w
        return out
