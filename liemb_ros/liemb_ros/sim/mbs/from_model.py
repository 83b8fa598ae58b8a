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
(:meth:`._chains.Chain.recover`); its joint torques act between ``p`` and ``c`` as the
moment the massless links transmit (:meth:`._chains.Chain.moment_axes`).  Any other
massless body raises ``ValueError`` naming the body and the reason.
"""
import numpy as np

from ._chains import CONCURRENT_TOL, GIMBAL_TOL, MASSLESS_TOL  # noqa: F401 (public here)
from ._chains import Chain, common_point, find_chains
from ...core.kinematics import body_poses, body_twists
from ...core.lie import se3
from .system import Body, System


class ModelSystem(System):
    """A :class:`System` made from a Model; keeps the joint map for :func:`joint_state`."""

    def __init__(self, model, gravity):
        super().__init__(gravity=gravity)
        self.model = model
        self.joint_map = []        # per system joint: a _Single or a Chain
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
    chain_bodies = find_chains(model)
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
    x = common_point(model, seq, Cs, where)
    ch = Chain(model, seq, Cs)
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
    of :meth:`Chain.recover`); ``qd``: the relative twist projected on the joint screw
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
        if isinstance(entry, Chain):
            omega = E[:3, :3] @ Vb[child, :3] - Vp[:3]
            entry.recover(E, omega, q_ref, q, qdj)
        else:
            Vrel = Vb[child] - se3.Ad(se3.inverse(E)) @ Vp
            entry.recover(E, Vrel, q_ref, q, qdj)
    viol = np.array([[p, r] for _, p, r in sysm.joint_violations(y)])[sysm.q_joint]
    if model.floating:
        return q, qd, viol, G.copy()
    return q, qd, viol
