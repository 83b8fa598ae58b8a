"""
Chains of revolute joints through massless links, merged into one joint (:mod:`.from_model`).

URDF has no spherical or universal joint; it writes them as 3 (2) revolute joints through
massless intermediate links whose axes meet in one point.  :func:`find_chains` finds them
in a Model (and refuses every other massless body), :func:`common_point` the point their
axes meet in, and a :class:`Chain` is one merged joint: its angles recovered from the
relative rotation (:meth:`Chain.recover`) and its torques as the moment the massless links
transmit (:meth:`Chain.moment_axes`).  :func:`liemb_ros.sim.mbs.from_model` builds the
constraints from them; the tolerances are public there.
"""
import numpy as np

#: largest |entry| of a body-fixed spatial inertia that counts as massless
MASSLESS_TOL = 1e-12
#: largest distance [m] of a merged chain's axes from their common point
CONCURRENT_TOL = 1e-9
#: ``|w1 x w3|`` below which a 3-joint chain is treated as gimbal locked in joint_state
GIMBAL_TOL = 1e-9


def _cross(a, b):
    """Return ``a x b`` of 3-vectors (np.cross costs ~10x more on 3-vectors, in rhs loops)."""
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                     a[0] * b[1] - a[1] * b[0]])


def _rotate(a, t, v):
    """Return ``exp(a t) v`` for a unit axis ``a`` (Rodrigues, on the vector)."""
    c = np.cos(t)
    return c * v + np.sin(t) * _cross(a, v) + (1.0 - c) * (a @ v) * a


def _angle(a, v, w):
    """
    Return ``(theta, s)``: rotation about the unit axis ``a`` taking ``v`` towards ``w``.

    Paden-Kahan subproblem 1 on the components perpendicular to ``a``; ``s`` is the
    smaller of their lengths (0: the angle is undetermined).
    """
    vp = v - (a @ v) * a
    wp = w - (a @ w) * a
    return (np.arctan2(a @ _cross(vp, wp), vp @ wp),
            min(np.linalg.norm(vp), np.linalg.norm(wp)))


class Chain:
    """
    ``k`` = 2 or 3 revolute joints through massless links, merged into one joint.

    With ``R_A`` the rotations of the joints' reference configurations ``A_rel``, ``e_i``
    their unit axes and ``theta_i = |xi_i| q_i``, the relative rotation of ``c`` in ``p`` is
    ``R_A1 exp(e1 th1) R_A2 exp(e2 th2) R_A3 exp(e3 th3) = exp(a1 th1) exp(a2 th2)
    exp(a3 th3) R0`` with the reference axes ``a_i = R_A1 .. R_Ai e_i`` (``p`` frame) and
    ``R0 = R_A1 R_A2 R_A3``.  The current axes are ``w1 = a1`` (fixed in ``p``),
    ``w2 = exp(a1 th1) a2`` (fixed in neither body) and ``w3 = exp(a1 th1) exp(a2 th2) a3``
    (fixed in ``c``); the relative angular velocity is ``omega = J th'`` with
    ``J = [w1 w2 w3]``.
    """

    def __init__(self, model, bodies, Cs):
        self.bodies = bodies
        self.k = len(bodies)
        self.qi = [int(model.q_index[b]) for b in bodies]
        self.names = [model.joint_names[i] for i in self.qi]
        self.name = '+'.join(self.names)
        self.scale = np.array([np.linalg.norm(model.X[b][:3]) for b in bodies])
        P = np.eye(3)
        a = []
        for b, s in zip(bodies, self.scale):
            P = P @ model.A_rel[b][:3, :3]
            a.append(P @ model.X[b][:3] / s)
        self.a = np.array(a)                      # reference axes, p frame
        self.R0 = P
        self.w_last_c = P.T @ self.a[-1]          # last axis in the c frame
        self.cos = [self.a[i] @ self.a[i + 1] for i in range(self.k - 1)]
        self.kind = 'universal' if self.k == 2 else 'spherical'
        # the side of w1 x w3 on which the middle link sits (spherical chains, see
        # moment_axes); it changes only through the gimbal lock det[w1 w2 w3] = 0
        # (+1 for a chain built exactly at the lock)
        self.side = 1.0
        if self.k == 3:
            w = [Cs[b][:3, :3] @ model.X[b][:3] for b in bodies]
            self.side = 1.0 if w[1] @ _cross(w[0], w[2]) >= 0 else -1.0
        self.child = self.parent = None
        self.acts = []

    def current_axes(self, theta):
        """``J`` (3, k): the current joint axes in the ``p`` frame at the angles ``theta``."""
        J = np.empty((3, self.k))
        for i in range(self.k):
            w = self.a[i]
            for j in range(i - 1, -1, -1):
                w = _rotate(self.a[j], theta[j], w)
            J[:, i] = w
        return J

    def _side(self, theta):
        """Sign of ``w2.(w1 x w3)`` at the angles ``theta`` (+1 for universal chains)."""
        if self.k == 2:
            return 1.0
        J = self.current_axes(theta)
        return 1.0 if J[:, 1] @ _cross(J[:, 0], J[:, 2]) >= 0 else -1.0

    def moment_axes(self, Rp, Rc):
        """
        Return ``B`` (k, 3): the torques act on ``c`` as the world moment ``m = B.T tau``.

        ``p`` gets ``-m``; ``Rp``, ``Rc``: world rotations of the two bodies.  Each torque
        acts about its own current axis, but between the two links that joint connects; the
        massless links in between pass on the moment with ``J^T m = tau / |xi|`` (virtual
        work: ``m.omega = tau.q'`` for every relative motion ``omega = J th'``, J in world
        axes).  So the pair between ``p`` and ``c`` uses the reciprocal basis ``B = J^-1``
        (3 joints), not ``tau_i w_i`` on each axis: the axes are not orthogonal in general
        (XYZ: ``w1.w3 = sin q2``); 2 joints: the least-norm ``B = (J^T J)^-1 J^T`` (the
        universal joint's constraint takes the rest).  ``w1 = Rp a1`` and ``w3 = Rc R0^T a3``
        are fixed in the bodies; the middle axis ``w2 = exp(a1 th1) a2`` is written through
        the two poses alone (no angles, no q_ref in the right-hand side): the unit vector at
        the model's constant angles ``a1.a2`` to ``w1`` and ``a2.a3`` to ``w3``, on the side
        of ``w1 x w3`` where the middle link sat at construction (the side can only change
        through the gimbal lock).
        Singular (as the joint-space mass matrix) at the gimbal lock.
        """
        w1 = Rp @ self.a[0]
        wl = Rc @ self.w_last_c
        if self.k == 2:
            J = np.stack([w1, wl], axis=1)
            B = np.linalg.solve(J.T @ J, J.T)
        else:
            c13 = w1 @ wl
            n = _cross(w1, wl)
            nn = n @ n
            al = (self.cos[0] - c13 * self.cos[1]) / nn
            be = (self.cos[1] - c13 * self.cos[0]) / nn
            u = al * w1 + be * wl
            w2 = u + self.side * np.sqrt(max(1.0 - u @ u, 0.0) / nn) * n
            B = np.array([_cross(w2, wl), _cross(wl, w1), _cross(w1, w2)])
            B /= w1 @ B[0]                             # rows: the reciprocal basis = J^-1
        return B / self.scale[:, None]

    def _candidates(self, R):
        """Angle sets ``theta`` with ``exp(a1 th1) .. exp(ak thk) = R``; undetermined flag."""
        a = self.a
        if self.k == 2:
            t1, _ = _angle(a[0], a[1], R @ a[1])
            t2, _ = _angle(a[1], R.T @ a[0], a[0])
            return [np.array([t1, t2])], False
        a1, a2, a3 = a
        c23 = a2 @ a3
        A = a1 @ a3 - c23 * (a1 @ a2)
        B = a1 @ _cross(a2, a3)
        D = a1 @ R @ a3 - c23 * (a1 @ a2)
        r = np.hypot(A, B)
        phi = np.arctan2(B, A)
        d = np.arccos(np.clip(D / r, -1.0, 1.0))
        out, locked = [], False
        for t2 in (phi + d, phi - d):
            v = _rotate(a2, t2, a3)
            t1, s = _angle(a1, v, R @ a3)
            locked = locked or s < GIMBAL_TOL
            out.append(np.array([t1, t2, 0.0]))
        return out, locked

    def _finish(self, R, th):
        """Set ``th[2]`` from the rotation left after the first two joints."""
        a1, a2, a3 = self.a
        p = _cross(a3, [1.0, 0, 0] if abs(a3[0]) < 0.9 else [0, 1.0, 0])
        Mp = _rotate(a2, -th[1], _rotate(a1, -th[0], R @ p))
        th[2] = _angle(a3, p, Mp)[0]

    def recover(self, E, omega_rel, q_ref, q, qd):
        """
        Write the chain's ``q`` and ``q'`` from the relative pose ``E`` and angular velocity.

        ``R = R_rel R0^T`` is decomposed about the reference axes: 2 joints: two subproblems
        1, one solution; 3 joints: ``a1.R a3 = a1.exp(a2 th2) a3`` gives two ``th2``, then
        ``th1`` (subproblem 1 taking ``exp(a2 th2) a3`` to ``R a3``) and ``th3`` from the
        rest.  The branch (and multiple of 2 pi) nearest ``q_ref`` is taken; without
        ``q_ref`` the branch whose middle link is on the construction side, angles in
        (-pi, pi].  Gimbal lock (``|w1 x w3| < GIMBAL_TOL``: only ``th1 +- th3`` is
        determined) keeps ``th1`` at ``q_ref`` (or 0) and returns the least-squares
        (minimum-norm) rates; the absolute motion itself is regular there.
        """
        R = E[:3, :3] @ self.R0.T
        ref = None if q_ref is None else np.asarray(q_ref, dtype=float)[self.qi] * self.scale
        cands, locked = self._candidates(R)
        if locked:
            cands = [np.array([0.0 if ref is None else ref[0], th[1], 0.0]) for th in cands]
        if self.k == 3:
            for th in cands:
                self._finish(R, th)
        best, best_d = None, np.inf
        for th in cands:
            if ref is not None:
                th = th + 2 * np.pi * np.round((ref - th) / (2 * np.pi))
                dist = np.abs(th - ref).sum()
            else:
                th = np.angle(np.exp(1j * th))           # (-pi, pi]
                dist = float(self._side(th) != self.side)
            if dist < best_d:
                best, best_d = th, dist
        J = self.current_axes(best)
        if self.k == 3 and not locked:
            thd = np.linalg.solve(J, omega_rel)
        else:
            thd = np.linalg.lstsq(J, omega_rel, rcond=None)[0]
        q[self.qi] = best / self.scale
        qd[self.qi] = thd / self.scale


def _is_massless(M):
    return np.abs(M).max() <= MASSLESS_TOL


def find_chains(model):
    """
    Return the massless chains: lists of model bodies ``[b1, .., bk]``, ``bk`` massive.

    Raises ValueError, naming the body, for a massless body that cannot be merged.
    """
    nb = model.nb
    massless = [_is_massless(model.inertia[b]) for b in range(nb)]
    children = [[] for _ in range(nb)]
    for b in range(nb):
        if model.parent[b] >= 0:
            children[model.parent[b]].append(b)
    chains = []
    for b in range(nb):
        if not massless[b] or (model.parent[b] >= 0 and massless[model.parent[b]]):
            continue
        seq = [b]
        while massless[seq[-1]]:
            m = seq[-1]
            name = model.body_names[m]
            kids = children[m]
            if not kids:
                raise ValueError(f'body {name!r} has no mass and no child body: a massless '
                                 'leaf cannot be simulated in absolute coordinates')
            if len(kids) > 1:
                raise ValueError(f'body {name!r} has no mass and {len(kids)} child bodies: '
                                 'only a chain of massless links can be merged into one '
                                 'joint')
            seq.append(kids[0])
        names = [model.joint_names[model.q_index[c]] for c in seq]
        where = f'massless body {model.body_names[b]!r} (joints {", ".join(names)})'
        for c in seq:
            if model.body_joint_type[c] not in ('revolute', 'continuous'):
                raise ValueError(f'{where}: joint {model.joint_names[model.q_index[c]]!r} is '
                                 f'{model.body_joint_type[c]}; only chains of revolute '
                                 'joints (URDF universal/spherical joints) can be merged')
        if len(seq) > 3:
            raise ValueError(f'{where}: a chain of {len(seq)} revolute joints through '
                             'massless links is no universal (2) or spherical (3) joint')
        chains.append(seq)
    return chains


def common_point(model, chain, Cs, where):
    """World point where the chain's axes meet (ValueError when they do not)."""
    P = np.zeros((3, 3))
    rhs = np.zeros(3)
    lines = []
    for b in chain:
        xi, eta = model.X[b][:3], model.X[b][3:]
        if abs(xi @ eta) > 1e-12 * max(1.0, np.linalg.norm(eta)):
            raise ValueError(f'{where}: helical joints are not supported')
        C = Cs[b]
        e = C[:3, :3] @ xi / np.linalg.norm(xi)
        x = C[:3, :3] @ (np.cross(xi, eta) / (xi @ xi)) + C[:3, 3]
        lines.append((e, x))
    for (e1, _), (e2, _) in zip(lines, lines[1:]):
        if np.linalg.norm(np.cross(e1, e2)) < 1e-6:
            raise ValueError(f'{where}: consecutive axes are parallel; the chain is no '
                             'universal or spherical joint')
    for e, x in lines:
        Pe = np.eye(3) - np.outer(e, e)
        P += Pe
        rhs += Pe @ x
    c = np.linalg.solve(P, rhs)
    dist = max(np.linalg.norm((np.eye(3) - np.outer(e, e)) @ (c - x)) for e, x in lines)
    if dist > CONCURRENT_TOL * max(1.0, np.linalg.norm(c)):
        raise ValueError(f'{where}: the joint axes do not meet in one point (off by '
                         f'{dist:.3g} m); only universal/spherical chains can be merged')
    return c
