"""
URDF robots in absolute coordinates: a :class:`~liemb_ros.model.Model` as a constrained MBS.

Every model body becomes a free rigid body (frame = the model's body frame, inertia from
``model.inertia``), every 1-DOF joint a lower-pair constraint between the child and its
parent (the ground for a fixed base, the base body for a floating base) and every joint
torque a wrench pair (:meth:`System.actuator`).  :func:`joint_state` recovers ``(q, q')``
and the per-joint constraint violation from an absolute state.
"""
import numpy as np

from ..kinematics import body_poses, body_twists
from ..lie import se3
from .system import Body, System


class ModelSystem(System):
    """A :class:`System` made from a Model; keeps the joint map for :func:`joint_state`."""

    def __init__(self, model, gravity):
        super().__init__(gravity=gravity)
        self.model = model
        self.joint_map = []        # per model body: (child, parent, X, A_rel, joint kind)
        self.base_body = None

    def set_torques(self, tau):
        """Set the joint torques/forces ``tau`` (nq,) (model joint order)."""
        tau = np.asarray(tau, dtype=float).reshape(self.model.nq)
        self.tau[:] = tau


def _body_from_inertia(name, M, update):
    m = M[3, 3]
    if not m > 0:
        raise ValueError(f'body {name!r} has no mass: absolute coordinates need a positive '
                         'mass on every body (merge massless joint chains in the URDF)')
    mc = M[:3, 3:]
    c = np.array([mc[2, 1], mc[0, 2], mc[1, 0]]) / m
    theta0 = M[:3, :3] - m * (c @ c * np.eye(3) - np.outer(c, c))
    return Body(name, m, theta0, com=c, update=update)


def _velocity(C, V, update):
    return V if update == 'se3' else np.concatenate([V[:3], C[:3, :3] @ V[3:]])


def from_model(model, q, qd, base_pose=None, update='se3'):
    """
    Return ``(system, y0)``: ``model`` at ``(q, qd)`` as a :class:`ModelSystem` and its state.

    ``update`` is 'se3', 'so3r3' or one entry per system body (floating base: the base body
    first).  Floating base: ``qd = (V_base, q')`` with the body-fixed base twist and
    ``base_pose`` the base pose (identity by default), as in :mod:`liemb_ros.dynamics`.
    Supported joints: revolute/continuous, prismatic (fixed joints are folded into the
    bodies by the Model).  Raises ValueError for massless bodies, mimic or helical joints.
    """
    q = np.asarray(q, dtype=float).reshape(model.nq)
    qd = np.asarray(qd, dtype=float).reshape(model.nv)
    if np.any(model.q_mult != 1.0) or np.any(model.q_offset != 0.0) or \
            len(set(model.q_index.tolist())) != model.nb:
        raise ValueError('from_model: mimic joints are not supported in absolute coordinates')
    nsys = model.nb + (1 if model.floating else 0)
    updates = [update] * nsys if isinstance(update, str) else list(update)
    if len(updates) != nsys:
        raise ValueError(f'update needs {nsys} entries, got {len(updates)}')
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
    off = len(poses)
    for b in range(model.nb):
        if model.body_joint_type[b] not in ('revolute', 'continuous', 'prismatic'):
            raise ValueError(f'joint of body {model.body_names[b]!r}: type '
                             f'{model.body_joint_type[b]!r} not supported')
        sysm.add_body(_body_from_inertia(model.body_names[b], model.inertia[b],
                                         updates[off + b]))
        poses.append(Cs[b])
        vels.append(_velocity(Cs[b], Vs[b], updates[off + b]))
    for b in range(model.nb):
        child = off + b
        p = model.parent[b]
        parent = (off + p) if p >= 0 else sysm.base_body
        Cp = poses[parent] if parent is not None else G
        E = np.linalg.solve(Cp, poses[child])        # child pose in the parent frame
        X = model.X[b]
        xi, eta = X[:3], X[3:]
        name = model.joint_names[model.q_index[b]]
        pj = None if parent is None else parent
        if np.linalg.norm(xi) > 0:
            if abs(xi @ eta) > 1e-12 * max(1.0, np.linalg.norm(eta)):
                raise ValueError(f'joint {name!r}: helical joints are not supported')
            a = np.cross(xi, eta) / (xi @ xi)            # a point on the axis (child frame)
            e = xi / np.linalg.norm(xi)
            a_p = E[:3, :3] @ a + E[:3, 3]
            e_p = E[:3, :3] @ e
            if pj is None:                               # ground: world coordinates
                a_p = G[:3, :3] @ a_p + G[:3, 3]
                e_p = G[:3, :3] @ e_p
            sysm.revolute(child, a, e, pj, a_p, e_p, name=name)
            kind = 'revolute'
            screw = np.concatenate([e, np.zeros(3)])
        else:
            d = eta / np.linalg.norm(eta)
            f = np.cross(d, [1.0, 0, 0] if abs(d[0]) < 0.9 else [0, 1.0, 0])
            f /= np.linalg.norm(f)
            Gp = E if pj is not None else G @ E
            sysm.prismatic(child, np.zeros(3), d, f, pj, Gp[:3, 3], Gp[:3, :3] @ d,
                           Gp[:3, :3] @ f, name=name)
            kind = 'prismatic'
            screw = np.concatenate([np.zeros(3), d])
        sysm.actuator(child, pj, screw)
        sysm.joint_map.append((child, parent, X.copy(), model.A_rel[b].copy(), kind))
    sysm.tau = np.zeros(model.nq)
    return sysm, sysm.state(poses, vels)


def joint_state(sysm, y, q_ref=None):
    """
    Recover ``(q, qd, violation)`` from an absolute state of a :func:`from_model` system.

    ``q``: from the relative pose ``A_rel^-1 C_p^-1 C_c = exp(X q)`` (revolute angles are
    unwrapped to the branch nearest ``q_ref`` when given); ``qd``: the relative twist
    projected on the joint screw; floating base: ``qd`` starts with the base body twist
    and the base pose is returned as a 4th item.  ``violation`` (nq, 2): per joint the
    position and orientation residuals of its constraint rows (:meth:`joint_violations`).
    """
    model = sysm.model
    C, V = sysm.split(y)
    Vb = np.array([V[i] if b.update == 'se3'
                   else np.concatenate([V[i, :3], C[i, :3, :3].T @ V[i, 3:]])
                   for i, b in enumerate(sysm.bodies)])
    G = np.eye(4)
    q = np.empty(model.nq)
    qd = np.empty(model.nv)
    o = 0
    if model.floating:
        G = C[sysm.base_body]
        qd[:6] = Vb[sysm.base_body]
        o = 6
    for b, (child, parent, X, A_rel, kind) in enumerate(sysm.joint_map):
        Cp = C[parent] if parent is not None else G
        E = np.linalg.solve(Cp, C[child])
        x = se3.log(np.linalg.solve(A_rel, E))
        Vp = Vb[parent] if parent is not None else np.zeros(6)
        Vrel = Vb[child] - se3.Ad(se3.inverse(E)) @ Vp
        if kind == 'revolute':
            qi = X[:3] @ x[:3] / (X[:3] @ X[:3])
            if q_ref is not None:
                qi += 2 * np.pi * np.round((q_ref[b] - qi) / (2 * np.pi))
            q[b] = qi
            qd[o + b] = X[:3] @ Vrel[:3] / (X[:3] @ X[:3])
        else:
            q[b] = X[3:] @ x[3:] / (X[3:] @ X[3:])
            qd[o + b] = X[3:] @ Vrel[3:] / (X[3:] @ X[3:])
    viol = np.array([[p, r] for _, p, r in sysm.joint_violations(y)])
    if model.floating:
        return q, qd, viol, G.copy()
    return q, qd, viol
