"""
Forward kinematics, twists, Jacobians and their time derivatives: the public functions.

Müller, "Screw and Lie group theory in multibody kinematics", Multibody Syst. Dyn. 43
(2018) 37–70 ("[M18k]"), and §2-3 of Müller, "Screw and Lie group theory in multibody
dynamics", Multibody Syst. Dyn. 42 (2018) 219–248 ("[M18d]"); the theory is in
docs/theory/representations.md and docs/theory/recursions.md.  This module checks and
canonicalises the arguments and calls the compiled kernels of
:mod:`liemb_ros.core._kernels.tree` and :mod:`liemb_ros.core._kernels.jacobian` through
:mod:`liemb_ros.core._kernels.dispatch`.

Four twist representations of a link with pose ``C = (R, r)`` (design.md):

=========  =====================  ===========================================
name       twist                  meaning
=========  =====================  ===========================================
body       V^b = (ω^b, v^b)       C^-1 Ċ: both in the link frame, v of the link origin
spatial    V^s = (ω^s, v^s)       Ċ C^-1: both in the world frame, v of the link point
                                  at the world origin
hybrid     V^h = (ω^s, ṙ)         world frame, velocity of the link origin
mixed      V^m = (ω^b, ṙ)         ω in the link frame, ṙ in the world frame
=========  =====================  ===========================================

Pinocchio names: LOCAL = body, WORLD = spatial, LOCAL_WORLD_ALIGNED = hybrid (its
vectors are linear first).

Algorithm (compiled kernels, O(path length)): the poses ``C_j`` of the bodies on the
link's support path come from the body-fixed POE recursion ``C_j = C_λ(j) A_{λ(j),j}
exp(^j X_j q_j)`` ([M18k] eq. (8)); the spatial Jacobian columns are the current joint
screws ``J^s_j = Ad_{C_j} ^j X_j`` (eq. (29)), the spatial twist accumulates as
``V^s_j = V^s_λ(j) + J^s_j q̇_j`` (eq. (31)) and the column derivatives are
``J̇^s_j = [V^s_j, J^s_j]`` ([M18d] eq. (16)).  The other representations follow by the
maps of [M18k] Table 3 and their time derivatives:

* body:   ``J^b = Ad_C^-1 J^s``,                 ``J̇^b = Ad_C^-1 (J̇^s - ad_{V^s} J^s)``
* hybrid: ``J^h = Ad_{-r} J^s``,                 ``J̇^h = Ad_{-r} J̇^s - (0, ṙ × ω_J)``
* mixed:  ``J^m = diag(Rᵀ, I) J^h``,             ``J̇^m = diag(Rᵀ, I) J̇^h - (Rᵀ(ω^s × ω_J), 0)``

:func:`jacobian` alone (no ``J̇``) takes a second, independent route that is cheaper: one
sweep from the link to the root builds the link's pose in each body frame on the way,
``P_λ(j) = A_{λ(j),j} exp(^j X_j q_j) P_j``, and the body-fixed columns are
``J^b_j = Ad_{P_j}^-1 ^j X_j`` ([M18k] eqs. (17), (20)); no support path is stored
and no world poses of the intermediate bodies are formed.  Tests compare both routes
with Pinocchio.

Floating base: the first six columns belong to the base body-fixed twist; their spatial
columns are ``Ad_{C_base}`` and their derivatives ``ad_{V^s_base} Ad_{C_base}``.

Every function accepts ``q`` of shape ``(nq,)`` or ``(B, nq)`` (and ``qd``/``qdd`` of
shape ``(nv,)`` / ``(B, nv)``) and returns a leading batch axis for batched input.
Batches run on several threads (``threads=``, default :func:`liemb_ros.set_num_threads`,
else every core available; results bit for bit those of ``threads=1``:
:func:`liemb_ros.core._kernels.dispatch.run_batch`); a single configuration ignores it.
"""
import numpy as np

from ._kernels.dispatch import (  # noqa: F401 (as before)
    BAD_BASE, BAD_Q, BAD_QD, BAD_QDD, OK, EYE4, F64, ND, REP_INDEX, as_batch, base_arg, check,
    fast, out_array, rep_index, run_batch, threads_arg)
from ._kernels.jacobian import (jacobian_batch, jacobian_into, jacobian_link, jacobian_tip_into,
                                link_twist_into)
from ._kernels.lie import change_representation_into
from ._kernels.tree import (body_twists_into, forward_kinematics_batch, forward_kinematics_into,
                            forward_kinematics_plain, link_pose_batch, link_pose_into,
                            link_pose_link, poses_with_base)
from .model.model import REPRESENTATIONS  # noqa: F401 (importable from here as before)

# estimated time of one configuration of a batch kernel per body [ns] (run_batch's chunks)
_NS_FK = 25
_NS_JACOBIAN = 25
_NS_JDOT = 50


def _link(model, link):
    """``(body, T)``: the body a link is attached to and the link frame in that body."""
    try:
        return model.link_frames[link]
    except (KeyError, TypeError):
        li = model.link_index(link)  # raises the helpful error, or accepts an index
        return int(model.link_body[li]), model.link_offset[li]


def link_pose(model, q, link, base_pose=None, threads=None):
    """
    Pose ``C = [[R, r], [0, 1]]`` of ``link`` in the world frame, (4, 4) or (B, 4, 4).

    Body-fixed POE over the link's support path ([M18k] eq. (8), equal to the spatial
    POE (10)); ``base_pose`` is the pose of the base (floating base, or where a fixed
    robot is mounted).  ``threads``: for a batch (module docstring).
    """
    if q.__class__ is ND and q.dtype is F64 and q.ndim == 1 and threads is None:
        # the shortest path (dispatch module docstring): the kernel checks the rest; a
        # link given by index, an entry point not cached yet: KeyError, the checked path
        try:
            if base_pose is None:
                li = model.link_ids[link]
                out = np.empty((4, 4))
                if not model.entry_points['link_pose link'](model.packed_int,
                                                            model.packed_float, q, li, out):
                    return out
            elif base_pose.__class__ is ND and base_pose.dtype is F64 and base_pose.ndim == 2:
                body, T = model.link_frames[link]
                out = np.empty((4, 4))
                if not model.entry_points['link_pose'](model.packed_int, model.packed_float, q,
                                                       base_pose, body, T, out):
                    return out
        except (KeyError, TypeError):
            pass
    q, batched = as_batch(model, q, model.nq, 'q')
    if threads is not None:
        threads_arg(threads)
    li = model.link_ids.get(link) if link.__class__ is str else None
    if li is not None and base_pose is None and not batched:
        out = np.empty((4, 4))
        st = fast(model, 'link_pose link', link_pose_link,
                  (model.packed_int, model.packed_float, q, li, out))
        if st:
            check(model, st)
        return out
    body, T = _link(model, link)
    if not batched:
        out = np.empty((4, 4))
        st = fast(model, 'link_pose', link_pose_into,
                  (model.packed_int, model.packed_float,
                   q, EYE4 if base_pose is None else base_arg(model, base_pose, None), body, T,
                   out))
        if st:
            check(model, st)
        return out
    out = np.empty((q.shape[0], 4, 4))
    check(model, run_batch(link_pose_batch,
                           (model.kinematic_tree, q, base_arg(model, base_pose, q.shape[0]),
                            body, T, out),
                           (1, 2, 5), threads, _NS_FK * model.nb))
    return out


def forward_kinematics(model, q, base_pose=None, out=None, threads=None):
    """
    Poses of all links, shape (len(link_names), 4, 4) (or with a leading batch axis).

    ``out``: an array of that shape to write into instead of a new one (for repeated large
    batches: a fresh 100 MB result costs its page faults on every call); one that shares
    memory with ``q`` or ``base_pose`` is refused (ValueError naming the argument).
    ``threads``: for a batch (module docstring).
    """
    if (out is None and threads is None and q.__class__ is ND and q.dtype is F64
            and q.ndim == 1):
        # the shortest path (dispatch module docstring): the kernel checks the rest
        if base_pose is None:
            entry = model.entry_points.get('forward_kinematics')
            if entry is not None:
                out = np.empty(model.fk_shape)
                if not entry(model.packed_int, model.packed_float, model.data.work, q, out):
                    return out
                out = None
        elif base_pose.__class__ is ND and base_pose.dtype is F64 and base_pose.ndim == 2:
            entry = model.entry_points.get('forward_kinematics base')
            if entry is not None:
                out = np.empty(model.fk_shape)
                if not entry(model.packed_int, model.packed_float, model.data.work, q,
                             base_pose, out):
                    return out
                out = None
    q, batched = as_batch(model, q, model.nq, 'q')
    if threads is not None:
        threads_arg(threads)
    nl = len(model.link_names)
    if not batched:
        out = out_array(out, (nl, 4, 4), (('q', q), ('base_pose', base_pose)))
        if base_pose is None:
            st = fast(model, 'forward_kinematics', forward_kinematics_plain,
                      (model.packed_int, model.packed_float, model.data.work, q, out))
            if st:
                check(model, st)
            return out
        st = fast(model, 'forward_kinematics base', forward_kinematics_into,
                  (model.packed_int, model.packed_float, model.data.work,
                   q, base_arg(model, base_pose, None), out))
        if st:
            check(model, st)
        return out
    out = out_array(out, (q.shape[0], nl, 4, 4), (('q', q), ('base_pose', base_pose)))
    check(model, run_batch(forward_kinematics_batch,
                           (model.kinematic_tree, model.link_body, model.link_offset, q,
                            base_arg(model, base_pose, q.shape[0]), out),
                           (3, 4, 5), threads, _NS_FK * model.nb))
    return out


def _jacobians(model, q, qd, link, representation, deriv, base_pose, twist=False,
               threads=None):
    """
    Return ``(out, qd)``: ``out[..., 0, :, :] = J`` and ``out[..., 1, :, :] = J̇``.

    A single configuration with ``twist`` gives the twist ``out = J qd`` (6,) instead.
    :func:`jacobian` calls the kernel itself.
    """
    if threads is not None:
        threads_arg(threads)
    body, T = _link(model, link)
    rep = REP_INDEX.get(representation, -1) if representation.__class__ is str else -1
    if rep < 0:
        rep = rep_index(representation)
    q, batched = as_batch(model, q, model.nq, 'q')
    if not batched:
        if qd is None:
            qd = q
        else:
            qd, qb = as_batch(model, qd, model.nv, 'qd')
            if qb:
                raise ValueError(f'q and qd batch shapes differ: {q.shape} vs {qd.shape}')
        base = EYE4 if base_pose is None else base_arg(model, base_pose, None)
        if twist:
            out = np.empty(6)
            st = fast(model, 'jacobian twist', link_twist_into,
                      (model.packed_int, model.packed_float, model.data.work,
                       q, qd, base, body, T, rep, out))
        else:
            out = np.empty((2, 6, model.nv))
            st = fast(model, 'jacobian', jacobian_into,
                      (model.packed_int, model.packed_float, model.data.work,
                       q, qd, base, body, T, rep, deriv, out[0], out[1]))
        if st:
            check(model, st)
        return out, qd
    if qd is None:
        qd = q
    else:
        qd, qb = as_batch(model, qd, model.nv, 'qd')
        if not qb or qd.shape[0] != q.shape[0]:
            raise ValueError(f'q and qd batch shapes differ: {q.shape} vs {qd.shape}')
    out = np.empty((q.shape[0], 2 if deriv else 1, 6, model.nv))
    run_batch(jacobian_batch, (model.kinematic_tree, q, qd,
                               base_arg(model, base_pose, q.shape[0]), body, T, rep, deriv, out),
              (1, 2, 3, 8), threads, (_NS_JDOT if deriv else _NS_JACOBIAN) * model.nb)
    return out, qd


def jacobian(model, q, link, representation='body', base_pose=None, threads=None):
    """
    Geometric Jacobian of ``link``: ``V = J qd``, shape (6, nv) or (B, 6, nv).

    ``representation``: 'body' | 'spatial' | 'hybrid' | 'mixed' (module docstring).
    Rows are angular first.  For a floating base the first six columns belong to
    the base's body-fixed twist.  ``threads``: for a batch (module docstring).
    """
    if q.__class__ is ND and q.dtype is F64 and q.ndim == 1 and threads is None:
        # the shortest path (dispatch module docstring): the kernel checks the rest; a
        # link given by index, an unknown representation, an entry point not cached yet:
        # KeyError (TypeError: unhashable), and the checked path says what is wrong
        try:
            if base_pose is None:
                li = model.link_ids[link]
                rep = REP_INDEX[representation]
                J = np.empty(model.jacobian_shape)
                if not model.entry_points['jacobian link'](model.packed_int, model.packed_float,
                                                           q, li, rep, J):
                    return J
            elif base_pose.__class__ is ND and base_pose.dtype is F64 and base_pose.ndim == 2:
                body, T = model.link_frames[link]
                rep = REP_INDEX[representation]
                J = np.empty(model.jacobian_shape)
                if not model.entry_points['jacobian tip'](model.packed_int, model.packed_float,
                                                          q, base_pose, body, T, rep, J):
                    return J
        except (KeyError, TypeError):
            pass
    q, batched = as_batch(model, q, model.nq, 'q')
    if batched:
        return _jacobians(model, q, None, link, representation, False, base_pose,
                          threads=threads)[0][:, 0]
    if threads is not None:
        threads_arg(threads)
    li = model.link_ids.get(link) if link.__class__ is str else None
    if li is not None and base_pose is None:
        rep = REP_INDEX.get(representation, -1) if representation.__class__ is str else -1
        if rep < 0:
            rep = rep_index(representation)
        J = np.empty((6, model.nv))
        st = fast(model, 'jacobian link', jacobian_link,
                  (model.packed_int, model.packed_float, q, li, rep, J))
        if st:
            check(model, st)
        return J
    try:
        body, T = model.link_frames[link]
    except (KeyError, TypeError):
        body, T = _link(model, link)
    rep = REP_INDEX.get(representation, -1) if representation.__class__ is str else -1
    if rep < 0:
        rep = rep_index(representation)
    J = np.empty((6, model.nv))
    st = fast(model, 'jacobian tip', jacobian_tip_into,
              (model.packed_int, model.packed_float,
               q, EYE4 if base_pose is None else base_arg(model, base_pose, None), body, T, rep,
               J))
    if st:
        check(model, st)
    return J


def jacobian_derivative(model, q, qd, link, representation='body', base_pose=None,
                        threads=None):
    """
    Time derivative ``J̇`` of :func:`jacobian` along ``qd``, shape (6, nv) or (B, 6, nv).

    With it the acceleration of the link in that representation is
    ``V̇ = J q̈ + J̇ q̇`` (the plain time derivative of the represented twist).
    ``threads``: for a batch (module docstring).
    """
    if (q.__class__ is ND and qd.__class__ is ND and q.dtype is F64 and qd.dtype is F64
            and q.ndim == 1 and qd.ndim == 1 and threads is None
            and (base_pose is None or (base_pose.__class__ is ND and base_pose.dtype is F64
                                       and base_pose.ndim == 2))):
        # the shortest path (dispatch module docstring; KeyError, TypeError: :func:`jacobian`)
        try:
            body, T = model.link_frames[link]
            rep = REP_INDEX[representation]
            out = np.empty((2, 6, model.nv))
            if not model.entry_points['jacobian'](
                    model.packed_int, model.packed_float, model.data.work, q, qd,
                    EYE4 if base_pose is None else base_pose, body, T, rep, True, out[0],
                    out[1]):
                return out[1]
        except (KeyError, TypeError):
            pass
    out = _jacobians(model, q, qd, link, representation, True, base_pose, threads=threads)[0]
    return out[1] if out.ndim == 3 else out[:, 1]


def link_twist(model, q, qd, link, representation='body', base_pose=None, threads=None):
    """Twist of ``link`` in the given representation, shape (6,) or (B, 6)."""
    if qd is None:
        raise ValueError('qd is required')
    out, qd = _jacobians(model, q, qd, link, representation, False, base_pose, True, threads)
    if out.ndim == 1:
        return out
    return np.einsum('...ij,...j->...i', out[..., 0, :, :], qd)


def link_acceleration(model, q, qd, qdd, link, representation='body', base_pose=None,
                      threads=None):
    """
    Time derivative of :func:`link_twist`: ``V̇ = J q̈ + J̇ q̇``, shape (6,) or (B, 6).

    For 'hybrid' and 'mixed' the linear part is the classical acceleration ``r̈`` of the
    link origin (see docs/theory/representations.md); for 'body' it is ``d/dt v^b``.
    """
    out, qd = _jacobians(model, q, qd, link, representation, True, base_pose, threads=threads)
    qdd, _ = as_batch(model, qdd, model.nv, 'qdd')
    if not np.all(np.isfinite(qdd)):
        raise ValueError('qdd contains NaN or inf')
    return (np.einsum('...ij,...j->...i', out[..., 0, :, :], qdd)
            + np.einsum('...ij,...j->...i', out[..., 1, :, :], qd))


# --------------------------------------------------------------------------- system level
def body_twists(model, q, qd, representation='body', base_pose=None):
    """
    Twists of all bodies by their own recursion ([M18k] eqs. (15), (31), (58), (68)).

    Returns (nb, 6), row ``i`` the twist of body ``i`` (frame ``model.body_names[i]``) in
    the given representation.  An independent route to the same numbers as
    :func:`link_twist`, O(nb).
    """
    rep = rep_index(representation)
    q, b1 = as_batch(model, q, model.nq, 'q')
    qd, b2 = as_batch(model, qd, model.nv, 'qd')
    if b1 or b2:
        raise ValueError('body_twists takes a single configuration')
    C = np.empty((model.nb + 1, 4, 4))
    V = np.empty((model.nb + 1, 6))
    check(model, body_twists_into(model.kinematic_tree, q, qd,
                                  base_arg(model, base_pose, None), rep, C, V))
    return V[1:]


def body_poses(model, q, base_pose=None):
    """Poses of all bodies (not links), shape (nb, 4, 4), order of ``model.body_names``."""
    q, batched = as_batch(model, q, model.nq, 'q')
    if batched:
        raise ValueError('body_poses takes a single configuration')
    if not (np.all(np.isfinite(q))):
        raise ValueError('q contains NaN or inf')
    return poses_with_base(model.kinematic_tree, q, base_arg(model, base_pose, None))[1:]


def _hat(x):
    return np.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])


def change_representation(C, V, source, target):
    """
    Return twists (or Jacobian columns) ``V`` of frames with poses ``C`` in another representation.

    ``C``: a pose (4, 4) or one per twist (n, 4, 4); ``V``: a twist (6,) or twists (n, 6),
    angular first, in representation ``source``; returns them in ``target`` (both one of
    :data:`REPRESENTATIONS`), of ``V``'s shape.  The maps of [M18k] Table 3 (§4.5):
    spatial ``V^s``, body ``Ad_C^-1 V^s``, hybrid ``(ω, v - r × ω)``, mixed
    ``(Rᵀω, v - r × ω)``.  The one implementation of the change of representation: the
    Jacobian kernels map their columns with the same compiled functions
    (:func:`liemb_ros.core._kernels.lie.spatial_to`, ``body_to``), bit for bit.
    """
    a, b = rep_index(source), rep_index(target)
    C = np.ascontiguousarray(C, dtype=float)
    V = np.asarray(V, dtype=float)
    if C.ndim == 2:
        C = C[None]
    if C.ndim != 3 or C.shape[1:] != (4, 4):
        raise ValueError(f'C must be a pose (4, 4) or poses (n, 4, 4); got shape {C.shape}')
    one = V.ndim == 1
    W = np.ascontiguousarray(V.reshape(1, -1) if one else V)
    if W.ndim != 2 or W.shape[1] != 6 or C.shape[0] not in (1, W.shape[0]):
        raise ValueError(f'V must be a twist (6,) or twists (n, 6) matching C {C.shape}; '
                         f'got shape {V.shape}')
    if not (np.all(np.isfinite(C)) and np.all(np.isfinite(W))):
        raise ValueError('C or V contains NaN or inf')
    out = np.empty(W.shape)
    change_representation_into(C, W, a, b, out)
    return out[0] if one else out


def representation_map(C, source, target):
    """
    Return the 6x6 matrix mapping a twist of a frame with pose ``C`` between representations.

    ``V_target = representation_map(C, source, target) @ V_source`` ([M18k] Table 3,
    §4.5); the same matrix maps Jacobian columns.  Its columns are the unit twists mapped
    by :func:`change_representation`.
    """
    return change_representation(C, np.eye(6), source, target).T


def _block_factor(model, Cs, rep, i, j):
    """Block (i, j) of A^x: the map from body j's twist to body i's twist at j's joint."""
    Ci, Cj = Cs[i], Cs[j]
    Ri, Rj = Ci[:3, :3], Cj[:3, :3]
    d = Cj[:3, 3] - Ci[:3, 3]
    Z, E = np.zeros((3, 3)), np.eye(3)
    if rep == 0:  # Ad_{C_i^-1 C_j}
        Rr = Ri.T @ Rj
        return np.block([[Rr, Z], [_hat(Ri.T @ d) @ Rr, Rr]])
    if rep == 1:
        return np.eye(6)
    if rep == 2:  # Ad_{r_{i,j}}
        return np.block([[E, Z], [_hat(d), E]])
    return np.block([[Ri.T @ Rj, Z], [_hat(d) @ Rj, E]])


def jacobian_factors(model, q, representation='body'):
    """
    System Jacobian and its factorisation ``J = A X``, ``A^-1 = I - D`` ([M18k] §3).

    Returns ``(J, A, X, D)`` for the bodies of a fixed-base model: ``J`` (6 nb, nq) stacks
    the Jacobians of all bodies (block row ``i`` = body ``i``), ``A`` (6 nb, 6 nb) is unit
    lower block-triangular over the support paths, ``X`` (6 nb, nq) block-diagonal with the
    instantaneous joint screws, ``D`` the nilpotent first sub-diagonal (parent blocks).
    """
    if model.floating:
        raise ValueError('jacobian_factors covers fixed-base models')
    rep = rep_index(representation)
    Cs = body_poses(model, q)
    nb = model.nb
    A = np.zeros((6 * nb, 6 * nb))
    D = np.zeros((6 * nb, 6 * nb))
    Xs = np.zeros((6 * nb, model.nq))
    for i in range(nb):
        for j in np.nonzero(model.support[i])[0]:
            A[6 * i:6 * i + 6, 6 * j:6 * j + 6] = _block_factor(model, Cs, rep, i, j)
        p = model.parent[i]
        if p >= 0:
            D[6 * i:6 * i + 6, 6 * p:6 * p + 6] = _block_factor(model, Cs, rep, i, p)
        col = representation_map(Cs[i], 'body', representation) @ model.X[i]
        Xs[6 * i:6 * i + 6, model.q_index[i]] += model.q_mult[i] * col
    return A @ Xs, A, Xs, D


__all__ = ['link_pose', 'forward_kinematics', 'link_twist', 'link_acceleration', 'jacobian',
           'jacobian_derivative', 'body_twists', 'body_poses', 'representation_map',
           'change_representation',
           'jacobian_factors']
