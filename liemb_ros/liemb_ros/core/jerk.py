"""
Third-order kinematics: the jerk of a link and the second time derivative of its Jacobian.

Müller, "Screw and Lie group theory in multibody dynamics", Multibody Syst. Dyn. 42 (2018)
219–248 ("[M18d]") §2; the theory is in docs/theory/jerk-and-christoffel.md.  The jerk of a
link is ``V̈``, the second time derivative of its twist in one of the four representations
of :mod:`liemb_ros.core.kinematics`; with the Jacobian ``J`` and its derivatives,

    ``V̈ = J q⃛ + 2 J̇ q̈ + J̈ q̇``.

The public calls (:func:`link_jerk`, :func:`jacobian_second_derivative`) take the spatial
route, which the paper calls the most efficient for higher orders: the spatial joint screws
``J^s_j = Ad_{C_j} ^jX_j`` move with their own body, ``J̇^s_j = [V^s_j, J^s_j]`` (16) and

    ``J̈^s_j = (ad_{V̇^s_j} + ad_{V^s_j}²) J^s_j``,

so that the spatial jerk of body ``i`` is (21)-(22) summed over its support path,
``V̈^s_i = Σ_j (J_j θ⃛_j + 2 [V_j, J_j] θ̈_j + (ad_{V̇_j} + ad_{V_j}²) J_j θ̇_j)``.  The other
representations are linear maps ``P(C)`` of the spatial one (design.md) and follow by
differentiating ``X^x = P X^s`` twice (:func:`_represent`).

:func:`body_jerks` is the jerk of every body by the recursion of one form, each the time
derivative of the acceleration recursion of its own form ([M18d] (66c), (70d), (75d)):

* body-fixed, the recursive form of (13) (with the coefficient ``2 - δ_kr`` of the erratum,
  docs/theory/errata.md):
  ``V̈_i = A_i V̈_λ - θ̇_i ad_{X_i} A_i V̇_λ - θ̈_i ad_{X_i} V_i - θ̇_i ad_{X_i} V̇_i + X_i θ⃛_i``
  with ``A_i = Ad_{C_{i,λ}}``;
* spatial, (21)-(22):
  ``V̈_i = V̈_λ + J_i θ⃛_i + 2 ad_{V_i} J_i θ̈_i + (ad_{V̇_i} + ad_{V_i}²) J_i θ̇_i``;
* hybrid, (31)-(32): with ``d = r_λ - r_i`` and ``Z_i = Ad_{R_i} ^iX_i``,
  ``V̈_i = Ad_d V̈_λ + 2 ad_ḋ V̇_λ + ad_d̈ V_λ + (ad_{ω̇_i} + ad_{ω_i}²) Z_i θ̇_i
  + 2 ad_{ω_i} Z_i θ̈_i + Z_i θ⃛_i`` (``ad_x`` of a translation ``(0, x)``, of a rotation
  ``(ω, 0)``);
* mixed, (33) corrected (erratum): ``V̈^m = P V̈^h + Ṗ V̇^h`` with ``P = diag(Rᵀ, I)``.

Here ``λ`` is the parent, ``θ_i = q_mult[i] q[q_index[i]] + q_offset[i]`` (mimic joints) and
``q⃛`` the joint jerk; a floating base's rows 0-5 of ``qd, qdd, qddd`` are its body-fixed
twist and that twist's first and second time derivatives.  The jerk is kinematic: gravity
plays no part.  These are NumPy functions over the bodies (O(n) per configuration, a Python
loop over a batch): a statement of the paper's third-order kinematics, checked against
finite differences of :func:`~liemb_ros.core.kinematics.link_acceleration`.
"""
import numpy as np

from ._joint_space import body_rate as _rates
from ._kernels.dispatch import as_batch, base_arg, rep_index
from .kinematics import _link, body_poses
from .lie import se3

FORMS = ('body', 'spatial', 'hybrid', 'mixed')


def _ad(X):
    """``ad_X`` (6, 6) of a screw ``X`` (6,), angular first ([M18d] (115))."""
    return se3.ad(np.ascontiguousarray(X, dtype=float))


def _cross(a, B):
    """Return ``a × B`` column by column: ``a`` (3,), ``B`` (3, m)."""
    return np.cross(a[:, None], B, axis=0)


def _base_motion(model, base, qd, qdd, qddd):
    """Spatial twist of the base and its two derivatives, from its body-fixed ones."""
    V = np.zeros((3, 6))
    if model.floating:
        Ad = se3.Ad(base)
        V[0] = Ad @ qd[:6]
        V[1] = Ad @ qdd[:6]                        # + Ad ad_{V^b} V^b = 0
        V[2] = Ad @ (qddd[:6] + _ad(qd[:6]) @ qdd[:6])
    return V


def _spatial_motion(model, q, qd, qdd, qddd, base):
    """
    Poses, spatial columns and the spatial twists with two derivatives of every node.

    Node 0 is the base, node ``i + 1`` body ``i``.  Returns ``C`` (nb + 1, 4, 4), ``cols``
    (nb, 6) the spatial joint screws ``Ad_{C_i} ^iX_i`` (unscaled by ``q_mult``) and ``V``
    (3, nb + 1, 6): ``V[0]`` the twists ``V^s``, ``V[1]`` ``V̇^s``, ``V[2]`` ``V̈^s``.
    """
    nb = model.nb
    C = np.empty((nb + 1, 4, 4))
    C[0] = base
    C[1:] = body_poses(model, q, base)
    V = np.empty((3, nb + 1, 6))
    V[:, 0] = _base_motion(model, base, qd, qdd, qddd)
    cols = np.einsum('nij,nj->ni', se3.Ad(C[1:]), model.X)
    for i in range(nb):
        s, p = i + 1, model.parent[i] + 1
        J = cols[i]
        t1, t2, t3 = (_rates(model, x, i) for x in (qd, qdd, qddd))
        V[0, s] = V[0, p] + J * t1
        adV = _ad(V[0, s])
        aJ = adV @ J                                       # J̇_i = [V_i, J_i]  (16)
        V[1, s] = V[1, p] + J * t2 + aJ * t1
        V[2, s] = V[2, p] + J * t3 + 2.0 * aJ * t2 + (_ad(V[1, s]) @ J + adV @ aJ) * t1
    return C, cols, V


def _represent(rep, C, V, Vd, X, Xd, Xdd):
    """
    Spatial screws ``X`` (6, m) with two time derivatives, in representation ``rep``.

    ``C`` is the pose of the frame they are represented at, ``V``, ``Vd`` its spatial twist
    and its derivative.  ``X^x = P(C) X^s`` (design.md), differentiated twice:

    * body:   ``Ad_C^-1 (Ẍ - 2 ad_V Ẋ - ad_V̇ X + ad_V² X)``  (``d/dt Ad_C^-1 = -Ad_C^-1 ad_V``)
    * hybrid: ``(ξ̈, η̈ - r̈ × ξ - 2 ṙ × ξ̇ - r × ξ̈)``       (``X^h = (ξ, η - r × ξ)``)
    * mixed:  the hybrid one with ``Rᵀ(ä - 2 ω × ȧ - ω̇ × a + ω × (ω × a))`` for its angular part
    """
    if rep == 1:
        return X, Xd, Xdd
    if rep == 0:
        Ai = se3.Ad_inv(C)
        adV, adVd = _ad(V), _ad(Vd)
        return (Ai @ X, Ai @ (Xd - adV @ X),
                Ai @ (Xdd - 2.0 * adV @ Xd - adVd @ X + adV @ (adV @ X)))
    r = C[:3, 3]
    w, wd = V[:3], Vd[:3]
    rd = V[3:] + np.cross(w, r)
    rdd = Vd[3:] + np.cross(wd, r) + np.cross(w, rd)
    H = [X.copy(), Xd.copy(), Xdd.copy()]
    H[0][3:] -= _cross(r, X[:3])
    H[1][3:] -= _cross(rd, X[:3]) + _cross(r, Xd[:3])
    H[2][3:] -= _cross(rdd, X[:3]) + 2.0 * _cross(rd, Xd[:3]) + _cross(r, Xdd[:3])
    if rep == 2:
        return tuple(H)
    Rt = C[:3, :3].T
    a, ad_, add = H[0][:3].copy(), H[1][:3].copy(), H[2][:3].copy()
    H[0][:3] = Rt @ a
    H[1][:3] = Rt @ (ad_ - _cross(w, a))
    H[2][:3] = Rt @ (add - 2.0 * _cross(w, ad_) - _cross(wd, a) + _cross(w, _cross(w, a)))
    return tuple(H)


def _link_jacobians(model, q, qd, qdd, link, rep, base):
    """``(J, J̇, J̈)`` of ``link`` in representation ``rep``, each (6, nv), and the link's pose."""
    zero = np.zeros(model.nv)
    C, cols, V = _spatial_motion(model, q, qd, qdd, zero, base)
    body, T = _link(model, link)
    node = body + 1
    J = np.zeros((3, 6, model.nv))
    if model.floating:
        Ad = se3.Ad(base)
        adV, adVd = _ad(V[0, 0]), _ad(V[1, 0])
        J[0, :, :6] = Ad
        J[1, :, :6] = adV @ Ad
        J[2, :, :6] = (adVd + adV @ adV) @ Ad
    if body >= 0:
        off = model.nv - model.nq
        for i in np.nonzero(model.support[body])[0]:
            k = off + model.q_index[i]
            adV, adVd = _ad(V[0, i + 1]), _ad(V[1, i + 1])
            col = model.q_mult[i] * cols[i]
            J[0, :, k] += col
            J[1, :, k] += adV @ col
            J[2, :, k] += (adVd + adV @ adV) @ col
    Cl = C[node] @ T
    return _represent(rep, Cl, V[0, node], V[1, node], *J), Cl


def _states(model, q, vectors, base_pose):
    """Canonical ``q`` and velocity-sized vectors, one configuration or a batch of ``B``."""
    q, batched = as_batch(model, q, model.nq, 'q')
    out = []
    for name, v in vectors:
        if v is None:
            raise ValueError(f'{name} is required')
        v, vb = as_batch(model, v, model.nv, name)
        if vb != batched or (batched and v.shape[0] != q.shape[0]):
            raise ValueError(f'q and {name} batch shapes differ: {q.shape} vs {v.shape}')
        out.append(v)
    if not all(np.all(np.isfinite(a)) for a in [q] + out):
        raise ValueError('q, qd, qdd or qddd contains NaN or inf')
    B = q.shape[0] if batched else None
    base = base_arg(model, base_pose, B)
    if B is not None:
        base = np.broadcast_to(base, (B, 4, 4))
    return q, out, base, B


def jacobian_second_derivative(model, q, qd, qdd, link, representation='body', base_pose=None):
    """
    Second time derivative ``J̈`` of :func:`~liemb_ros.core.kinematics.jacobian`, (6, nv).

    Along a motion with velocity ``qd`` and acceleration ``qdd`` (``J̈`` is linear in ``qdd``,
    quadratic in ``qd``); the jerk of the link is ``V̈ = J q⃛ + 2 J̇ q̈ + J̈ q̇``.  Spatial
    columns: ``J̈^s_j = (ad_{V̇^s_j} + ad_{V^s_j}²) J^s_j`` ([M18d] (21)-(22)); the other
    representations by the maps of the module docstring.  Batched input gives (B, 6, nv).
    """
    rep = rep_index(representation)
    q, (qd, qdd), base, B = _states(model, q, (('qd', qd), ('qdd', qdd)), base_pose)
    if B is None:
        return _link_jacobians(model, q, qd, qdd, link, rep, base)[0][2]
    return np.stack([_link_jacobians(model, q[b], qd[b], qdd[b], link, rep, base[b])[0][2]
                     for b in range(B)])


def _jerk_one(model, q, qd, qdd, qddd, link, rep, base):
    (J, Jd, Jdd), _ = _link_jacobians(model, q, qd, qdd, link, rep, base)
    return J @ qddd + 2.0 * Jd @ qdd + Jdd @ qd


def link_jerk(model, q, qd, qdd, qddd, link, representation='body', base_pose=None):
    """
    Jerk ``V̈`` of ``link``, the time derivative of its acceleration, (6,) or (B, 6).

    ``V̈ = d/dt`` :func:`~liemb_ros.core.kinematics.link_acceleration`, angular first, in
    ``representation`` ('body' | 'spatial' | 'hybrid' | 'mixed'); ``qddd`` (nv,) is the
    joint jerk (floating base: rows 0-5 the second derivative of the base's body-fixed
    twist).  ``V̈ = J q⃛ + 2 J̇ q̈ + J̈ q̇`` ([M18d] (13),
    (21)-(22), (31)-(32)); for 'hybrid' and 'mixed' the linear part is ``d³r/dt³`` of the link
    origin.
    """
    rep = rep_index(representation)
    q, (qd, qdd, qddd), base, B = _states(
        model, q, (('qd', qd), ('qdd', qdd), ('qddd', qddd)), base_pose)
    if B is None:
        return _jerk_one(model, q, qd, qdd, qddd, link, rep, base)
    return np.stack([_jerk_one(model, q[b], qd[b], qdd[b], qddd[b], link, rep, base[b])
                     for b in range(B)])


def _body_form(model, C, qd, qdd, qddd, base_motion):
    """Body-fixed recursion (66b), (66c) and their derivative, the recursive (13)."""
    V = np.empty((3, model.nb + 1, 6))
    V[:, 0] = base_motion
    for i in range(model.nb):
        s, p = i + 1, model.parent[i] + 1
        X = model.X[i]
        adX = _ad(X)
        t1, t2, t3 = (_rates(model, x, i) for x in (qd, qdd, qddd))
        A = se3.Ad_inv(C[s]) @ se3.Ad(C[p])          # Ad_{C_{i,λ}}
        V[0, s] = A @ V[0, p] + X * t1
        AVd = A @ V[1, p]
        V[1, s] = AVd - t1 * adX @ V[0, s] + X * t2
        V[2, s] = (A @ V[2, p] - t1 * adX @ AVd - t2 * adX @ V[0, s] - t1 * adX @ V[1, s]
                   + X * t3)
    return V


def _hybrid_form(model, C, qd, qdd, qddd, base_motion):
    """Hybrid recursion (75c), (75d) and its derivative, the recursive (31)-(32)."""
    V = np.empty((3, model.nb + 1, 6))
    V[:, 0] = base_motion
    for i in range(model.nb):
        s, p = i + 1, model.parent[i] + 1
        Z = se3.Ad_R(C[s, :3, :3]) @ model.X[i]       # ⁰X_i^i
        t1, t2, t3 = (_rates(model, x, i) for x in (qd, qdd, qddd))
        d = C[p, :3, 3] - C[s, :3, 3]                  # r_{i,λ} = r_λ - r_i
        for k in range(3):                             # Ad_d: (ω, v + d × ω)
            V[k, s, :3] = V[k, p, :3]
            V[k, s, 3:] = V[k, p, 3:] + np.cross(d, V[k, p, :3])
        V[0, s] += Z * t1
        w = V[0, s, :3]
        wZ = np.concatenate([np.cross(w, Z[:3]), np.cross(w, Z[3:])])      # ad_ω Z
        dd = V[0, p, 3:] - V[0, s, 3:]                                      # ḋ
        V[1, s, 3:] += np.cross(dd, V[0, p, :3])                            # ad_ḋ V_λ
        V[1, s] += wZ * t1 + Z * t2
        wd = V[1, s, :3]
        wdZ = np.concatenate([np.cross(wd, Z[:3]), np.cross(wd, Z[3:])])
        wwZ = np.concatenate([np.cross(w, wZ[:3]), np.cross(w, wZ[3:])])
        ddd = V[1, p, 3:] - V[1, s, 3:]                                     # d̈
        V[2, s, 3:] += 2.0 * np.cross(dd, V[1, p, :3]) + np.cross(ddd, V[0, p, :3])
        V[2, s] += (wdZ + wwZ) * t1 + 2.0 * wZ * t2 + Z * t3
    return V


def body_jerks(model, q, qd, qdd, qddd, form='spatial', base_pose=None):
    """
    Jerks of all bodies by the recursion of one form, (nb, 6), order of ``model.body_names``.

    ``form``: 'body' (recursive (13)), 'spatial' ((21)-(22)), 'hybrid' ((31)-(32)) or
    'mixed' ((33), corrected): the recursions of the module docstring, each in its own
    representation; single configurations.  Independent routes to the numbers of
    :func:`link_jerk` for the bodies' own frames.
    """
    rep = rep_index(form)
    q, (qd, qdd, qddd), base, B = _states(
        model, q, (('qd', qd), ('qdd', qdd), ('qddd', qddd)), base_pose)
    if B is not None:
        raise ValueError('body_jerks takes a single configuration')
    if rep == 1:
        return _spatial_motion(model, q, qd, qdd, qddd, base)[2][2, 1:]
    C = np.empty((model.nb + 1, 4, 4))
    C[0] = base
    C[1:] = body_poses(model, q, base)
    Vs = _base_motion(model, base, qd, qdd, qddd)
    own = np.stack(_represent(min(rep, 2), base, Vs[0], Vs[1], *Vs[:, :, None]))[:, :, 0]
    if rep == 0:
        return _body_form(model, C, qd, qdd, qddd, own)[2, 1:]
    V = _hybrid_form(model, C, qd, qdd, qddd, own)
    if rep == 2:
        return V[2, 1:]
    out = V[2, 1:].copy()               # mixed: P V̈^h + Ṗ V̇^h, P = diag(Rᵀ, I)
    for i in range(model.nb):
        Rt = C[i + 1, :3, :3].T
        wb = Rt @ V[0, i + 1, :3]
        out[i, :3] = Rt @ V[2, i + 1, :3] - np.cross(wb, Rt @ V[1, i + 1, :3])
    return out


__all__ = ['link_jerk', 'jacobian_second_derivative', 'body_jerks']
