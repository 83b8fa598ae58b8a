"""
URDF robots in absolute coordinates: a :class:`~liemb_ros.core.model.Model` as a constrained MBS.

Every massive model body becomes a free rigid body (frame = the model's body frame, inertia
from ``model.inertia``), every 1-DOF joint a lower-pair constraint between the child and its
parent (the ground for a fixed base, the base body for a floating base) and every joint
torque a wrench pair (:meth:`System.actuator`).  :func:`joint_state` recovers ``(q, q')``
and the per-joint constraint violation from an absolute state.

Massless links.  URDF has no spherical or universal joint; it writes them as 3 (2) revolute
joints through massless intermediate links whose axes meet in one point (the shipped
``heavy_top`` and ``spherical_double_pendulum``).  A massless body has no place in absolute
coordinates (its mass matrix is singular), so such a chain is merged into ONE joint between
the first joint's parent ``p`` and the chain's last, massive body ``c``: 2 revolute joints
with intersecting, non-parallel axes -> :meth:`System.universal`; 3 with concurrent axes,
consecutive ones not parallel -> :meth:`System.spherical`.  The chain's joint angles are
recovered by a decomposition of the relative rotation about the given axes
(:meth:`_Chain.recover`); its joint torques act between ``p`` and ``c`` as the moment the
massless links transmit (:meth:`_Chain.moment_axes`).  Any other massless body raises
``ValueError`` naming the body and the reason.
"""
import numpy as np

from ...core.kinematics import body_poses, body_twists
from ...core.lie import se3
from .system import Body, System

#: largest |entry| of a body-fixed spatial inertia that counts as massless
MASSLESS_TOL = 1e-12
#: largest distance [m] of a merged chain's axes from their common point
CONCURRENT_TOL = 1e-9
#: ``|w1 x w3|`` below which a 3-joint chain is treated as gimbal locked in joint_state
GIMBAL_TOL = 1e-9


class ModelSystem(System):
    """A :class:`System` made from a Model; keeps the joint map for :func:`joint_state`."""

    def __init__(self, model, gravity):
        super().__init__(gravity=gravity)
        self.model = model
        self.joint_map = []        # per system joint: a _Single or a _Chain
        self.q_joint = np.zeros(model.nq, dtype=np.int64)   # q index -> system joint
        self.chains = []
        self.base_body = None
        self.ground_pose = np.eye(4)

    def set_torques(self, tau):
        """Set the joint torques/forces ``tau`` (nq,) (model joint order)."""
        tau = np.asarray(tau, dtype=float).reshape(self.model.nq)
        self.tau[:] = tau

    def rhs(self, t, y):
        """Left-trivialised velocity ``(V, V')``; moves merged chains' torque axes first."""
        for ch in self.chains:
            if np.any(self.tau[ch.acts]):
                C, _ = self.split(y)
                Rp = (C[ch.parent] if ch.parent is not None else self.ground_pose)[:3, :3]
                Rc = C[ch.child][:3, :3]
                screws = np.zeros((ch.k, 6))
                screws[:, :3] = ch.moment_axes(Rp, Rc) @ Rc
                self.set_actuator_screws(ch.acts, screws)
        return super().rhs(t, y)


class _Single:
    """One revolute or prismatic model joint: one constraint, one actuator."""

    def __init__(self, kind, child, parent, X, A_rel, qi):
        self.kind, self.child, self.parent = kind, child, parent
        self.X, self.A_rel, self.qi = X.copy(), A_rel.copy(), qi

    def recover(self, E, Vrel, q_ref, q, qd):
        """Write ``q`` and ``q'`` of the joint from the relative pose and body twist."""
        X = self.X
        x = se3.log(np.linalg.solve(self.A_rel, E))
        if self.kind == 'revolute':
            qi = X[:3] @ x[:3] / (X[:3] @ X[:3])
            if q_ref is not None:
                qi += 2 * np.pi * np.round((q_ref[self.qi] - qi) / (2 * np.pi))
            q[self.qi] = qi
            qd[self.qi] = X[:3] @ Vrel[:3] / (X[:3] @ X[:3])
        else:
            q[self.qi] = X[3:] @ x[3:] / (X[3:] @ X[3:])
            qd[self.qi] = X[3:] @ Vrel[3:] / (X[3:] @ X[3:])


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


class _Chain:
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


def _body_from_inertia(name, M, update):
    m = M[3, 3]
    if not m > 0:
        raise ValueError(f'body {name!r} has no mass: absolute coordinates need a positive '
                         'mass on every body (massless links are merged only inside chains '
                         'of 2 or 3 revolute joints with concurrent axes)')
    mc = M[:3, 3:]
    c = np.array([mc[2, 1], mc[0, 2], mc[1, 0]]) / m
    theta0 = M[:3, :3] - m * (c @ c * np.eye(3) - np.outer(c, c))
    return Body(name, m, theta0, com=c, update=update)


def _velocity(C, V, update):
    return V if update == 'se3' else np.concatenate([V[:3], C[:3, :3] @ V[3:]])


def _find_chains(model):
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


def _common_point(model, chain, Cs, where):
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


def _updates(model, update, chain_start):
    """One update per model body (the base first for a floating base)."""
    nsys = model.nb + (1 if model.floating else 0)
    if update == 'tailored':
        out = ['so3r3'] if model.floating else []
        for b in range(model.nb):
            root = model.parent[chain_start.get(b, b)]
            out.append('se3' if root < 0 and not model.floating else 'so3r3')
        return out
    out = [update] * nsys if isinstance(update, str) else list(update)
    if len(out) != nsys:
        raise ValueError(f'update needs {nsys} entries, got {len(out)}')
    return out


def from_model(model, q, qd, base_pose=None, update='se3'):
    """
    Return ``(system, y0)``: ``model`` at ``(q, qd)`` as a :class:`ModelSystem` and its state.

    ``update``: 'se3', 'so3r3', 'tailored' (SE(3) for the bodies jointed to the ground,
    through a merged chain or not, SO(3)xR3 for the others and a floating base) or one
    entry per model body (floating base: the base body first; entries of merged massless
    links are not used).  Floating base: ``qd = (V_base, q')`` with the body-fixed base
    twist and ``base_pose`` the base pose (identity by default), as in
    :mod:`liemb_ros.core.dynamics`.  Supported joints: revolute/continuous, prismatic (fixed
    joints are folded into the bodies by the Model); chains of revolute joints through
    massless links become universal/spherical joints (module docstring).  Raises
    ValueError for other massless bodies, mimic or helical joints.
    """
    q = np.asarray(q, dtype=float).reshape(model.nq)
    qd = np.asarray(qd, dtype=float).reshape(model.nv)
    if np.any(model.q_mult != 1.0) or np.any(model.q_offset != 0.0) or \
            len(set(model.q_index.tolist())) != model.nb:
        raise ValueError('from_model: mimic joints are not supported in absolute coordinates')
    for b in range(model.nb):
        if model.body_joint_type[b] not in ('revolute', 'continuous', 'prismatic'):
            raise ValueError(f'joint of body {model.body_names[b]!r}: type '
                             f'{model.body_joint_type[b]!r} not supported')
    chain_bodies = _find_chains(model)
    chain_start = {seq[-1]: seq[0] for seq in chain_bodies}
    merged = {b for seq in chain_bodies for b in seq[:-1]}
    updates = _updates(model, update, chain_start)
    G = np.eye(4) if base_pose is None else np.asarray(base_pose, dtype=float).reshape(4, 4)
    Cs = body_poses(model, q, base_pose=G)
    Vs = body_twists(model, q, qd, 'body', base_pose=G)
    sysm = ModelSystem(model, model.gravity)
    poses, vels = [], []
    if model.floating:
        sysm.base_body = sysm.add_body(_body_from_inertia(model.base_link, model.base_inertia,
                                                          updates[0]))
        poses.append(G)
        vels.append(_velocity(G, qd[:6], updates[0]))
    else:
        sysm.ground_pose = G.copy()
    off = 1 if model.floating else 0
    index = {}                                     # model body -> system body
    for b in range(model.nb):
        if b in merged:
            continue
        index[b] = sysm.add_body(_body_from_inertia(model.body_names[b], model.inertia[b],
                                                    updates[off + b]))
        poses.append(Cs[b])
        vels.append(_velocity(Cs[b], Vs[b], updates[off + b]))
    screws = {}                                    # q index -> (child, parent, screw)
    for b in range(model.nb):
        if b in merged:
            continue
        child = index[b]
        p = model.parent[chain_start.get(b, b)]
        parent = index[p] if p >= 0 else sysm.base_body
        Cp = poses[parent] if parent is not None else G
        if b in chain_start:
            seq = next(s for s in chain_bodies if s[-1] == b)
            jid = _add_chain(sysm, model, seq, Cs, G, child, parent, Cp)
            ch = sysm.joint_map[jid]
            for i in ch.qi:
                screws[i] = (child, parent, np.zeros(6), ch)
            continue
        jid, entry, screw = _add_single(sysm, model, b, child, parent, Cp, poses[child], G)
        screws[entry.qi] = (child, parent, screw, None)
    for i in range(model.nq):
        child, parent, screw, ch = screws[i]
        k = sysm.actuator(child, parent, screw)
        if ch is not None:
            ch.acts.append(k)
    sysm.tau = np.zeros(model.nq)
    return sysm, sysm.state(poses, vels)


def _add_single(sysm, model, b, child, parent, Cp, Cc, G):
    """Revolute or prismatic constraint of model body ``b``; ``(joint id, entry, screw)``."""
    E = np.linalg.solve(Cp, Cc)                    # child pose in the parent frame
    X = model.X[b]
    xi, eta = X[:3], X[3:]
    qi = int(model.q_index[b])
    name = model.joint_names[qi]
    if np.linalg.norm(xi) > 0:
        if abs(xi @ eta) > 1e-12 * max(1.0, np.linalg.norm(eta)):
            raise ValueError(f'joint {name!r}: helical joints are not supported')
        a = np.cross(xi, eta) / (xi @ xi)            # a point on the axis (child frame)
        e = xi / np.linalg.norm(xi)
        a_p = E[:3, :3] @ a + E[:3, 3]
        e_p = E[:3, :3] @ e
        if parent is None:                           # ground: world coordinates
            a_p = G[:3, :3] @ a_p + G[:3, 3]
            e_p = G[:3, :3] @ e_p
        jid = sysm.revolute(child, a, e, parent, a_p, e_p, name=name)
        kind = 'revolute'
        screw = np.concatenate([e, np.zeros(3)])
    else:
        d = eta / np.linalg.norm(eta)
        f = np.cross(d, [1.0, 0, 0] if abs(d[0]) < 0.9 else [0, 1.0, 0])
        f /= np.linalg.norm(f)
        Gp = E if parent is not None else G @ E
        jid = sysm.prismatic(child, np.zeros(3), d, f, parent, Gp[:3, 3], Gp[:3, :3] @ d,
                             Gp[:3, :3] @ f, name=name)
        kind = 'prismatic'
        screw = np.concatenate([np.zeros(3), d])
    entry = _Single(kind, child, parent, X, model.A_rel[b], qi)
    sysm.joint_map.append(entry)
    sysm.q_joint[qi] = jid
    return jid, entry, screw


def _add_chain(sysm, model, seq, Cs, G, child, parent, Cp):
    """Universal/spherical constraint for a massless chain ``seq``; its joint id."""
    names = [model.joint_names[model.q_index[c]] for c in seq]
    where = f'massless body {model.body_names[seq[0]]!r} (joints {", ".join(names)})'
    x = _common_point(model, seq, Cs, where)
    ch = _Chain(model, seq, Cs)
    ch.child, ch.parent = child, parent
    Cc = Cs[seq[-1]]
    x_c = np.linalg.solve(Cc, np.append(x, 1.0))[:3]
    x_p = x if parent is None else np.linalg.solve(Cp, np.append(x, 1.0))[:3]
    if ch.k == 3:
        jid = sysm.spherical(child, x_c, parent, x_p, name=ch.name)
    else:
        e1 = Cp[:3, :3] @ ch.a[0]                  # first axis, world
        e2 = Cc[:3, :3] @ ch.w_last_c              # second axis, world
        u_p = ch.a[0] if parent is not None else e1
        jid = sysm.universal(child, x_c, ch.w_last_c, parent, x_p, u_p, name=ch.name,
                             value=e1 @ e2)
    sysm.joint_map.append(ch)
    sysm.chains.append(ch)
    sysm.q_joint[ch.qi] = jid
    return jid


def joint_state(sysm, y, q_ref=None):
    """
    Recover ``(q, qd, violation)`` from an absolute state of a :func:`from_model` system.

    ``q``: from the relative pose ``A_rel^-1 C_p^-1 C_c = exp(X q)`` (revolute angles are
    unwrapped to the branch nearest ``q_ref`` when given; merged chains: the decomposition
    of :meth:`_Chain.recover`); ``qd``: the relative twist projected on the joint screw
    (chains: solved from the relative angular velocity); floating base: ``qd`` starts with
    the base body twist and the base pose is returned as a 4th item.  ``violation``
    (nq, 2): per joint the position and orientation residuals of its constraint rows
    (:meth:`joint_violations`); every joint of a merged chain reports the merged joint's.
    """
    model = sysm.model
    C, V = sysm.split(y)
    Vb = np.array([V[i] if b.update == 'se3'
                   else np.concatenate([V[i, :3], C[i, :3, :3].T @ V[i, 3:]])
                   for i, b in enumerate(sysm.bodies)])
    G = sysm.ground_pose
    q = np.empty(model.nq)
    qd = np.empty(model.nv)
    o = 0
    if model.floating:
        G = C[sysm.base_body]
        qd[:6] = Vb[sysm.base_body]
        o = 6
    qdj = qd[o:]
    for entry in sysm.joint_map:
        child, parent = entry.child, entry.parent
        Cp = C[parent] if parent is not None else G
        E = np.linalg.solve(Cp, C[child])
        Vp = Vb[parent] if parent is not None else np.zeros(6)
        if isinstance(entry, _Chain):
            omega = E[:3, :3] @ Vb[child, :3] - Vp[:3]
            entry.recover(E, omega, q_ref, q, qdj)
        else:
            Vrel = Vb[child] - se3.Ad(se3.inverse(E)) @ Vp
            entry.recover(E, Vrel, q_ref, q, qdj)
    viol = np.array([[p, r] for _, p, r in sysm.joint_violations(y)])[sysm.q_joint]
    if model.floating:
        return q, qd, viol, G.copy()
    return q, qd, viol
