"""
External wrenches applied to a Simulator's links: their generalized force and their work.

:class:`AppliedWrenches` is the part of :class:`~liemb_ros.sim.simulator.Simulator` that
holds the wrenches ``Simulator.set_wrench`` applies: each one's generalized force ``Jᵀ W``
at every stage of a step (:mod:`._joint`), and the energy each has put in so far, with
which :meth:`~liemb_ros.sim._plausible.Plausibility.blame` names the input behind an
absurd state.
"""
import numpy as np

from ..core._kernels.layout import REPRESENTATIONS
from ..core.kinematics import jacobian
from ._plausible import finite_vector


class AppliedWrenches:
    """
    The external wrenches on a robot's links, a part of the Simulator.

    ``applied``: ``{link: (W (6,), representation)}``, the wrench ``W = (m, f)`` [N m, N]
    and the Jacobian's representation it goes with (``'body'``: link axes, ``'hybrid'``:
    world axes, both about the link frame's origin).  ``work``: ``{link: [work J, largest
    force N, first t, last t]}`` of every wrench applied since the Simulator's reset.
    ``arrays``: the applied wrenches as the compiled step takes them (:mod:`._explicit`),
    ``(links, reps, W)``: link indices (nw,), representation indices (nw,) and wrenches
    (nw, 6), in the order of ``applied``; None where a wrench acts on a frame that is not
    a link (the Python path takes those).
    """

    def __init__(self, model):
        self.model = model
        self.applied = {}
        self.work = {}
        self.arrays = self._arrays()

    def apply(self, link, wrench, frame, plausible):
        """
        Apply ``wrench`` (6,) to ``link`` in ``frame`` (``Simulator.set_wrench``), checked.

        ValueError for an unknown link or frame, a wrench that is not 6 finite numbers, or
        one beyond ``plausible`` (:meth:`~liemb_ros.sim._plausible.Plausibility.wrench`).
        """
        if frame not in ('link', 'world'):
            raise ValueError(f"frame must be 'link' or 'world', got {frame!r}")
        if link not in self.model.link_ids and link not in self.model.link_frames:
            raise ValueError(f"unknown link {link!r} of '{self.model.name}'")
        w = finite_vector(wrench, 6, 'wrench')
        plausible.wrench(link, w)
        self.set(link, w, 'body' if frame == 'link' else 'hybrid')

    def set(self, link, wrench, representation):
        """Apply ``wrench`` (6,) to ``link`` from now on; a zero wrench removes it."""
        if np.any(wrench):
            self.applied[link] = (wrench.copy(), representation)
        else:
            self.applied.pop(link, None)
        self.arrays = self._arrays()

    def clear(self):
        """Remove every wrench."""
        self.applied.clear()
        self.arrays = self._arrays()

    def _arrays(self):
        """``(links, reps, W)`` of ``applied`` (the class docstring), or None."""
        ids = self.model.link_ids
        if any(link not in ids for link in self.applied):
            return None
        return (np.array([ids[link] for link in self.applied], dtype=np.int64),
                np.array([REPRESENTATIONS.index(rep) for _, rep in self.applied.values()],
                         dtype=np.int64),
                np.array([w for w, _ in self.applied.values()], dtype=float).reshape(-1, 6))

    def compiled_work(self, t0, t1, work):
        """
        Book the work of the steps from ``t0`` to ``t1`` [s] the compiled step took.

        ``work`` (nw,) [J]: each wrench's work, :meth:`work_so_far` plus ``power · dt`` of
        each step, added in the order :meth:`add_work` adds them.
        """
        for (link, (w, _)), total in zip(self.applied.items(), work):
            rec = self.work.setdefault(link, [0.0, 0.0, t0, t0])
            rec[0] = float(total)
            rec[1] = max(rec[1], float(np.linalg.norm(w[3:])))
            rec[3] = t1

    def work_so_far(self):
        """Each applied wrench's work so far [J], (nw,) in the order of ``applied``."""
        return np.array([self.work[link][0] if link in self.work else 0.0
                         for link in self.applied], dtype=float)

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
