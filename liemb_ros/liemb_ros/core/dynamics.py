"""
Recursive O(n) dynamics of a tree of 1-DOF screw joints: the public functions.

Müller, "Screw and Lie group theory in multibody dynamics — recursive algorithms and
equations of motion of tree-topology systems", Multibody Syst. Dyn. 42 (2018) 219–248
("[M18d]"), §4-§6; the theory is in docs/theory/recursions.md.  This module checks and
canonicalises the arguments and calls the compiled kernels of :mod:`liemb_ros.core._kernels`
(``rnea``, ``crba``, ``aba``) through :mod:`liemb_ros.core._kernels.dispatch`.

Conventions (design.md): twists ``V = (ω, v)`` angular first, wrenches ``W = (m, f)``
moment first, power ``Wᵀ V``.  Bodies are the 1-DOF joints of the :class:`Model` in
topological order; ``parent[i]`` is the predecessor, ``X[i]`` the body-fixed joint screw,
``inertia[i]`` the 6x6 body-fixed spatial inertia ([M18d] eq. (40)).  Joint ``i`` moves
by ``θ_i = q_mult[i] q[q_index[i]] + q_offset[i]``, so mimic-coupled bodies add
``q_mult[i] X_iᵀ W_i`` to the torque of their leader's coordinate.

Inverse dynamics, three forms selected by ``form=`` (they agree to round-off):

* ``'body'``    [M18d] (66)-(67): ``V_i = Ad_{C_{i,λ}} V_λ + X_i θ̇_i``,
  ``V̇_i = Ad_{C_{i,λ}} V̇_λ + [V_i, X_i θ̇_i] + X_i θ̈_i`` (65c),
  ``W_i = Σ_c Ad_{C_{c,i}}ᵀ W_c + M_i V̇_i - ad_{V_i}ᵀ M_i V_i - W_i^app``, ``Q_i = X_iᵀ W_i``;
* ``'spatial'`` [M18d] (70)-(71): ``J_i = Ad_{C_i} X_i``, ``V_i = V_λ + J_i θ̇_i``,
  ``V̇_i = V̇_λ + J_i θ̈_i + [V_i, J_i θ̇_i]`` (69), ``M^s_i = Ad_{C_i}^-T M_i Ad_{C_i}^-1``,
  ``W_i = Σ_c W_c + M^s_i V̇_i - ad_{V_i}ᵀ M^s_i V_i - W_i^app``, ``Q_i = J_iᵀ W_i``;
* ``'hybrid'``  [M18d] (75)-(76) with two misprints in the paper
  corrected (see docs/theory/errata.md): ``Z_i = Ad_{R_i} X_i``,
  ``V_i = Ad_{r_λ - r_i} V_λ + Z_i θ̇_i``, ``V̇_i = Ad_{r_λ - r_i} V̇_λ
  + ad_v(ṙ_λ - ṙ_i) V_λ + ad_ω(ω_i) Z_i θ̇_i + Z_i θ̈_i``, ``M^h_i = Ad_{R_i} M_i Ad_{R_i}ᵀ``,
  ``W_i = Σ_c Adr(r_i - r_c)ᵀ W_c + M^h_i V̇_i + ad_ω(ω_i) M^h_i (ω_i, 0) - W_i^app``.

The spatial and hybrid forms and every spatial kernel below (mass matrix, ``Ṁ``, Coriolis
matrix, and the RNEA derivatives of :mod:`liemb_ros.core.eom`) work in a world-aligned frame at
the base origin rather than at the world origin
(:func:`liemb_ros.core._kernels.tree.local_base`): exact, since every
joint-space result pairs screws with wrenches or inertias expressed in one inertial frame,
and invariant to where the robot stands (at the world origin the lever arms grow with the
distance ``|r|`` and the round-off with ``|r|² eps``: 1e-6 relative at 100 km).

All backward loops start at the last body and subtract the applied wrench (two misprints
in the paper, see docs/theory/errata.md).  Gravity enters by the base-acceleration trick
``V̇_0 = (0, -g)`` in the world frame (``model.gravity``, default (0, 0, -9.81)).

External wrenches ``f_ext``: an ``(len(link_names), 6)`` array, or a ``{link: wrench}``
dict, of wrenches ``(m, f)`` acting *on* each link, applied at the link frame origin and
expressed in the link frame (body-fixed).  Wrenches on links fixed to a fixed base have no
effect.

Floating base (``model.floating``): ``base_pose`` is the base pose ``C_base`` (identity if
omitted), ``qd[:6]`` the base body-fixed twist ``(ω^b, v^b)``, ``qdd[:6]`` its time
derivative, ``tau[:6]`` the wrench ``(m, f)`` applied to the base in the base frame (zero
for an unactuated base).  For a fixed base ``base_pose`` places the root in the world.

Mass matrix and its time derivative ``Ṁ``: composite rigid bodies in spatial form,
``M_ab = J_aᵀ M^C_b J_b`` for ``a`` an ancestor of ``b`` (``M^C`` the composite spatial
inertia of ``b``'s subtree), which is ``M = Jᵀ M^b J`` of [M18d] (81) summed
recursively, and its derivative with ``J̇^s_j = [V^s_j, J^s_j]`` (16) and (37).
Coriolis matrix: the Christoffel-consistent factorisation
``C = Σ_i J_iᵀ (M^s_i J̇_i + B_i J_i)`` with
``B_i = ½(-ad_{V_i}ᵀ M^s_i - M^s_i ad_{V_i} - Λ(M^s_i V_i))``, ``Λ(h) V' = ad_{V'}ᵀ h``
(spatial form, composite over subtrees), for which ``Ṁ - 2C`` is skew-symmetric; the
factorisation (84) of [M18d] is not (see docs/theory/recursions.md).  Forward
dynamics: the articulated-body algorithm in body-fixed form.

Every function accepts ``q`` of shape ``(nq,)`` or ``(B, nq)`` and ``qd``, ``qdd``,
``tau`` of shape ``(nv,)`` or ``(B, nv)``; batched input gives a leading batch axis.
Batches of inverse dynamics, gravity torques, ``M``, ``Ṁ`` and forward dynamics run on
several threads (``threads=``, default :func:`liemb_ros.set_num_threads`, else every core
available; results bit for bit those of ``threads=1``:
:func:`liemb_ros.core._kernels.dispatch.run_batch`); a single configuration ignores it.
"""
import weakref

import numpy as np

from ._kernels.aba import aba_arm_into, aba_batch, aba_into
from ._kernels.crba import coriolis_batch, coriolis_into, crba_batch, crba_into
from ._kernels.dispatch import (  # noqa: F401 (as before)
    BAD_BASE, BAD_FEXT, BAD_Q, BAD_QD, BAD_QDD, BAD_TAU, OK, SINGULAR, EYE4, F64, FORM_INDEX,
    FORMS, LAYOUT, ND, NO_ARM, NO_FEXT, armature_arg, as_batch, base_arg, check, fast, fext_arg,
    form_index, out_array, run_batch, states, threads_arg)
from ._kernels.rnea import id_batch, id_into, id_plain, wrench_batch, wrench_entry

# estimated time of one configuration of a batch kernel per body [ns] (run_batch's chunks)
_NS_ID = 60
_NS_CRBA = 60
_NS_ABA = 150


def inverse_dynamics(model, q, qd, qdd, form='body', f_ext=None, base_pose=None, threads=None):
    """
    Joint forces ``τ = M(q) q̈ + C(q, q̇) q̇ + g(q) - Σ J_lᵀ f_l``, shape (nv,) or (B, nv).

    Recursive Newton-Euler, O(n), in ``form`` 'body' | 'spatial' | 'hybrid' (module
    docstring; [M18d] §4).  ``f_ext``: wrenches on links (module docstring).  For a
    floating base ``tau[:6]`` is the base wrench in the base frame.  Raises ValueError on
    wrong shapes, NaN/inf or unknown names.  ``threads``: for a batch (module docstring).
    """
    if (f_ext is None and threads is None and form == 'body' and q.__class__ is ND
            and qd.__class__ is ND and qdd.__class__ is ND and q.dtype is F64
            and qd.dtype is F64 and qdd.dtype is F64 and q.ndim == 1 and qd.ndim == 1
            and qdd.ndim == 1):
        # the shortest path (dispatch module docstring): the kernel checks the rest
        if base_pose is None:
            entry = model.entry_points.get('id plain')
            if entry is not None:
                tau = np.empty(model.nv)
                if not entry(model.packed_int, model.packed_float, model.data.work, q, qd, qdd,
                             0, 1.0, tau):
                    return tau
        elif base_pose.__class__ is ND and base_pose.dtype is F64 and base_pose.ndim == 2:
            entry = model.entry_points.get('id')
            if entry is not None:
                tau = np.empty(model.nv)
                if not entry(model.packed_int, model.packed_float, model.data.work, q, qd, qdd,
                             base_pose, NO_FEXT, 0, 1.0, tau):
                    return tau
    fm = FORM_INDEX.get(form, -1) if form.__class__ is str else -1
    if fm < 0:
        fm = form_index(form)
    (q, qd, qdd), B = states(model, q, (('qd', qd), ('qdd', qdd)))
    if threads is not None:
        threads_arg(threads)
    if B is None:
        tau = np.empty(model.nv)
        if base_pose is None and f_ext is None:
            st = fast(model, 'id plain', id_plain,
                      (model.packed_int, model.packed_float, model.data.work, q, qd, qdd, fm, 1.0,
                       tau))
        else:
            st = fast(model, 'id', id_into,
                      (model.packed_int, model.packed_float, model.data.work,
                       q, qd, qdd, EYE4 if base_pose is None else base_arg(model, base_pose, None),
                       NO_FEXT if f_ext is None else fext_arg(model, f_ext, None),
                       fm, 1.0, tau))
        if st:
            check(model, st)
        return tau
    tau = np.empty((B, model.nv))
    run_batch(id_batch, (model.tree, q, qd, qdd, base_arg(model, base_pose, B),
                         fext_arg(model, f_ext, B), fm, 1.0, tau),
              (1, 2, 3, 4, 5, 8), threads, _NS_ID * model.nb)
    return tau


def gravity_torques(model, q, base_pose=None, threads=None):
    """
    Gravity torques ``g(q)`` = inverse dynamics at rest, shape (nv,) or (B, nv).

    For a floating base the first six entries are the base wrench that holds the robot
    against gravity (base frame).  Equals ``∂U/∂q`` of the potential energy.
    ``threads``: for a batch (module docstring).
    """
    q, batched = as_batch(model, q, model.nq, 'q')
    if threads is not None:
        threads_arg(threads)
    if not batched:
        z = np.zeros(model.nv)
        tau = np.empty(model.nv)
        if base_pose is None:
            st = fast(model, 'id plain', id_plain,
                      (model.packed_int, model.packed_float, model.data.work, q, z, z, 0, 1.0,
                       tau))
        else:
            st = fast(model, 'id', id_into,
                      (model.packed_int, model.packed_float, model.data.work, q, z, z,
                       base_arg(model, base_pose, None), NO_FEXT, 0, 1.0, tau))
        if st:
            check(model, st)
        return tau
    z = np.zeros((q.shape[0], model.nv))
    tau = np.empty(z.shape)
    run_batch(id_batch, (model.tree, q, z, z, base_arg(model, base_pose, q.shape[0]),
                         fext_arg(model, None, q.shape[0]), 0, 1.0, tau),
              (1, 2, 3, 4, 5, 8), threads, _NS_ID * model.nb)
    return tau


def joint_wrenches(model, q, qd, qdd, f_ext=None, base_pose=None, per_body=False):
    """
    Wrench each joint transmits to its child body, in the child body frame, moment first.

    Returns (nq, 6) (or (B, nq, 6)): row ``k`` belongs to coordinate ``joint_names[k]``
    and is the wrench that joint's 1-DOF joint transmits from its parent onto its child
    body (and everything beyond), in the child body frame: for URDF joints that is the
    child link frame; for the components of a planar joint it is the massless virtual
    body frame (its last component's row is the wrench in the child link frame).  Mimic
    followers have no coordinate and no row; ``per_body=True`` returns all bodies
    ``(nb, 6)`` in ``model.body_names`` order instead.  ``X_iᵀ W_i`` is the joint force.
    For a floating base the base wrench is ``inverse_dynamics(...)[:6]``.
    """
    (q, qd, qdd), B = states(model, q, (('qd', qd), ('qdd', qdd)))
    if B is None:
        W = np.empty((model.nb, 6))
        st = fast(model, 'wrenches', wrench_entry,
                  (model.packed_int, model.packed_float, model.data.work,
                   q, qd, qdd, EYE4 if base_pose is None else base_arg(model, base_pose, None),
                   fext_arg(model, f_ext, None), 1.0, W))
        if st:
            check(model, st)
    else:
        W = wrench_batch(model.tree, q, qd, qdd, base_arg(model, base_pose, B),
                         fext_arg(model, f_ext, B), 1.0, np.empty((B, model.nb, 6)))
    if per_body:
        return W
    return W[..., _owner_bodies(model), :]


_OWNERS = weakref.WeakKeyDictionary()


def _owner_bodies(model):
    """Index of the body whose 1-DOF joint owns each coordinate (its first, unscaled body)."""
    owner = _OWNERS.get(model)
    if owner is not None:
        return owner
    owner = np.full(model.nq, -1)
    for b in range(model.nb):
        k = model.q_index[b]
        if owner[k] < 0 and model.q_mult[b] == 1.0 and model.q_offset[b] == 0.0:
            owner[k] = b
    for b in range(model.nb):
        if owner[model.q_index[b]] < 0:
            owner[model.q_index[b]] = b
    _OWNERS[model] = owner
    return owner


def mass_matrix(model, q, base_pose=None, out=None, armature=None, threads=None):
    """
    Joint-space mass matrix ``M(q) = Jᵀ M^b J`` ([M18d] (81)), (nv, nv) or (B, nv, nv).

    Composite rigid bodies in spatial form; symmetric positive definite unless the model
    has massless leaves.  Floating base: rows/columns 0-5 are the base body twist.
    ``out``: an array of the result's shape to write into instead of a new one (repeated
    large batches; see :func:`~liemb_ros.core.kinematics.forward_kinematics`).
    ``armature``: (nq,) rotor inertias [kg m² or kg] added to the joints' diagonal,
    ``M + diag(0_6, armature)`` (Pinocchio's ``model.armature``; see :func:`singular_joints`).
    ``threads``: for a batch (module docstring).
    """
    if (armature is None and out is None and threads is None and q.__class__ is ND
            and q.dtype is F64 and q.ndim == 1
            and (base_pose is None or (base_pose.__class__ is ND and base_pose.dtype is F64
                                       and base_pose.ndim == 2))):
        # the shortest path (dispatch module docstring): the kernel checks the rest
        entry = model.entry_points.get('crba')
        if entry is not None:
            M = np.empty(model.mass_shape)
            if not entry(model.packed_int, model.packed_float, model.data.work, q, q,
                         EYE4 if base_pose is None else base_pose, False, M):
                return M
    if armature is not None:
        arm = armature_arg(model, armature)
        M = mass_matrix(model, q, base_pose=base_pose, out=out, threads=threads)
        a = model.nv - model.nq
        idx = np.arange(a, model.nv)
        M[..., idx, idx] += arm
        return M
    q, batched = as_batch(model, q, model.nq, 'q')
    if threads is not None:
        threads_arg(threads)
    if not batched:
        out = out_array(out, (model.nv, model.nv), (('q', q), ('base_pose', base_pose)))
        st = fast(model, 'crba', crba_into,
                  (model.packed_int, model.packed_float, model.data.work, q, q,   # qd: unread
                   EYE4 if base_pose is None else base_arg(model, base_pose, None), False,
                   out))
        if st:
            check(model, st)
        return out
    B = q.shape[0]
    # a new output is allocated by numpy (large arrays get huge pages: ~5x less first-touch
    # time than numba's allocator for talos' 115 MB at B = 10 000)
    out = out_array(out, (B, model.nv, model.nv), (('q', q), ('base_pose', base_pose)))
    run_batch(crba_batch, (model.tree, q, np.zeros((1, model.nv)), base_arg(model, base_pose, B),
                           False, out),
              (1, 2, 3, 5), threads, _NS_CRBA * model.nb)
    return out


def mass_matrix_derivative(model, q, qd, base_pose=None, threads=None):
    """
    Time derivative ``Ṁ = dM/dt`` along the velocity ``qd``, (nv, nv) or (B, nv, nv).

    ``Ṁ = J̇ᵀ M^b J + Jᵀ M^b J̇`` evaluated recursively over composite bodies (the kernel of
    :func:`mass_matrix`, module docstring), independent of the Coriolis matrix; with it
    ``Ṁ - 2C`` is skew-symmetric.  Floating base: the base moves by ``Ċ = C V̂base_arg``.
    ``threads``: for a batch (module docstring).
    """
    (q, qd), B = states(model, q, (('qd', qd),))
    if threads is not None:
        threads_arg(threads)
    if B is None:
        out = np.empty((model.nv, model.nv))
        st = fast(model, 'crba', crba_into,
                  (model.packed_int, model.packed_float, model.data.work, q, qd,
                   EYE4 if base_pose is None else base_arg(model, base_pose, None), True, out))
        if st:
            check(model, st)
        return out
    out = np.empty((B, model.nv, model.nv))
    run_batch(crba_batch, (model.tree, q, qd, base_arg(model, base_pose, B), True, out),
              (1, 2, 3, 5), threads, 2 * _NS_CRBA * model.nb)
    return out


def coriolis_matrix(model, q, qd, base_pose=None):
    """
    Christoffel-consistent Coriolis/centrifugal matrix ``C(q, q̇)``, (nv, nv) or (B, nv, nv).

    ``M q̈ + C q̇ + g = τ`` and ``Ṁ - 2C`` is skew-symmetric (module docstring); for a
    fixed base ``C_ij = Σ_k Γ_ijk q̇_k`` with the Christoffel symbols (85) of [M18d].
    """
    (q, qd), B = states(model, q, (('qd', qd),))
    if B is None:
        out = np.empty((model.nv, model.nv))
        st = fast(model, 'coriolis', coriolis_into,
                  (model.packed_int, model.packed_float, model.data.work, q, qd,
                   EYE4 if base_pose is None else base_arg(model, base_pose, None), out))
        if st:
            check(model, st)
        return out
    return coriolis_batch(model.tree, q, qd, base_arg(model, base_pose, B))


def forward_dynamics(model, q, qd, tau, f_ext=None, base_pose=None, method='aba',
                     armature=None, threads=None):
    """
    Joint accelerations ``q̈ = M^-1 (τ - C q̇ - g + Σ J_lᵀ f_l)``, shape (nv,) or (B, nv).

    ``method='aba'``: the O(n) articulated-body algorithm in body-fixed form (module
    docstring); ``'cholesky'``: solve ``M q̈ = τ - ID(q, q̇, 0)`` with the mass matrix
    (used automatically when mimic coupling makes two bodies share a coordinate).
    Floating base: ``qdd[:6]`` is the derivative of the base body twist, ``tau[:6]``
    the base wrench (zero for an unactuated base).  Raises ValueError for a singular
    mass matrix (massless leaf), wrong shapes or NaN/inf.  ``armature``: (nq,) rotor
    inertias added to the joints' diagonal, ``(M + diag(0_6, armature)) q̈ = …``, in the
    ABA as an addition to each joint's pivot ``D_i = S_iᵀ I^A_i S_i + armature_i`` (as
    Pinocchio's ``aba`` with ``model.armature``); it regularises massless leaves.
    ``threads``: for a batch (module docstring; the Cholesky route threads its inverse
    dynamics and mass matrix).
    """
    if (method == 'aba' and armature is None and f_ext is None and threads is None
            and q.__class__ is ND and qd.__class__ is ND and tau.__class__ is ND
            and q.dtype is F64 and qd.dtype is F64 and tau.dtype is F64 and q.ndim == 1
            and qd.ndim == 1 and tau.ndim == 1 and not model.shared_coordinates
            and (base_pose is None or (base_pose.__class__ is ND and base_pose.dtype is F64
                                       and base_pose.ndim == 2))):
        # the shortest path (dispatch module docstring): the kernel checks the rest
        entry = model.entry_points.get('aba')
        if entry is not None:
            qdd = np.empty(model.nv)
            if not entry(model.packed_int, model.packed_float, model.data.work, q, qd, tau,
                         EYE4 if base_pose is None else base_pose, NO_FEXT, qdd):
                return qdd
    if method not in ('aba', 'cholesky'):
        raise ValueError(f"unknown method {method!r}; expected 'aba' or 'cholesky'")
    (q, qd, tau), B = states(model, q, (('qd', qd), ('tau', tau)))
    if threads is not None:
        threads_arg(threads)
    arm = None if armature is None else armature_arg(model, armature)
    if method == 'cholesky' or model.shared_coordinates:
        return _fd_cholesky(model, q, qd, tau, f_ext, base_pose, B, arm, threads)
    if B is None:
        qdd = np.empty(model.nv)
        base = EYE4 if base_pose is None else base_arg(model, base_pose, None)
        fext = NO_FEXT if f_ext is None else fext_arg(model, f_ext, None)
        if arm is None:
            st = fast(model, 'aba', aba_into,
                      (model.packed_int, model.packed_float, model.data.work, q, qd, tau, base,
                       fext, qdd))
        else:
            st = fast(model, 'aba_arm', aba_arm_into,
                      (model.packed_int, model.packed_float, model.data.work,
                       q, qd, tau, base, fext, qdd, arm))
    else:
        qdd = np.empty((B, model.nv))
        st = run_batch(aba_batch, (model.tree, q, qd, tau, base_arg(model, base_pose, B),
                                   fext_arg(model, f_ext, B), qdd,
                                   NO_ARM if arm is None else arm),
                       (1, 2, 3, 4, 5, 6), threads, _NS_ABA * model.nb)
    if st:
        check(model, st)
    return qdd


def forward_dynamics_function(model, armature=None):
    """
    Return ``fd(q, qd, tau, base_pose=None) -> qdd`` bound to ``model``, for inner loops.

    The same ABA kernel as :func:`forward_dynamics` without its per-call shape checks and
    argument packing (what a simulator's right-hand side calls thousands of times per
    second): ``q`` (nq,), ``qd`` and ``tau`` (nv,) must be float64 arrays of those shapes,
    ``base_pose`` a (4, 4) float64 pose or None.  NaN/inf input and a singular
    articulated inertia still raise ValueError (checked inside the kernel).  Models whose
    bodies share coordinates (coupled mimic joints) get :func:`forward_dynamics` itself.
    ``armature``: (nq,) rotor inertias, as in :func:`forward_dynamics`.
    """
    arm = None if armature is None else armature_arg(model, armature)
    if model.shared_coordinates:
        return lambda q, qd, tau, base_pose=None: forward_dynamics(model, q, qd, tau,
                                                                   base_pose=base_pose,
                                                                   armature=arm)
    ki, kf, w, nv = model.packed_int, model.packed_float, model.data.work, model.nv
    if arm is not None:
        def fd_arm(q, qd, tau, base_pose=None):
            qdd = np.empty(nv)
            st = aba_arm_into(ki, kf, w, q, qd, tau, EYE4 if base_pose is None else base_pose,
                              NO_FEXT, qdd, arm)
            if st:
                check(model, st)
            return qdd
        return fd_arm

    def fd(q, qd, tau, base_pose=None):
        qdd = np.empty(nv)
        st = aba_into(ki, kf, w, q, qd, tau, EYE4 if base_pose is None else base_pose, NO_FEXT,
                      qdd)
        if st == LAYOUT:    # a strided view (say): the checked path copies it
            return forward_dynamics(model, q, qd, tau, base_pose=base_pose)
        if st:
            check(model, st)
        return qdd
    return fd


def _fd_cholesky(model, q, qd, tau, f_ext, base_pose, B, arm=None, threads=None):
    if not np.all(np.isfinite(tau)):
        raise ValueError('tau contains NaN or inf')
    bias = inverse_dynamics(model, q, qd, np.zeros_like(tau), f_ext=f_ext, base_pose=base_pose,
                            threads=threads)
    M = mass_matrix(model, q, base_pose=base_pose, armature=arm, threads=threads)
    try:
        L = np.linalg.cholesky(M)
    except np.linalg.LinAlgError:
        raise ValueError(f"forward dynamics of model '{model.name}': the mass matrix is "
                         'singular (a massless leaf or a body without inertia about its '
                         'joint)') from None
    rhs = (tau - bias)[..., None]
    y = np.linalg.solve(L, rhs)
    return np.linalg.solve(np.swapaxes(L, -1, -2), y)[..., 0]


def singular_joints(model, q, base_pose=None, armature=None, rtol=1e-9):
    """
    Return the indices of the joints whose articulated inertia vanishes at ``q``.

    The pivots of ``M + diag(armature)`` eliminated from the last coordinate to the first
    (leaves first, the ``U D Uᵀ`` factorisation whose pivots are the ABA's
    ``D_i = S_iᵀ I^A_i S_i``) are compared with ``rtol · max_i M_ii``: a joint at or below
    it carries no inertia (a massless leaf, or a subtree without inertia about the joint
    axis) and makes ``M`` singular or numerically so.  Each is given its armature in turn
    (elimination continues with the regularised pivot), so the result is the set of
    joints that :func:`forward_dynamics` needs an armature at.  ``armature`` here is only
    what is already there.  Returns an int array (joint indices 0..nq-1).
    """
    M = mass_matrix(model, q, base_pose=base_pose, armature=armature).copy()
    a = model.nv - model.nq
    tol = rtol * max(float(np.max(np.diag(M)[a:], initial=0.0)), 1e-300)
    found = []
    for k in range(model.nv - 1, -1, -1):
        d = M[k, k]
        if k >= a and not d > tol:
            found.append(k - a)
            d = M[k, k] = max(d, 0.0) + tol if tol > 0 else 1.0
        if d > 0:
            M[:k, :k] -= np.outer(M[:k, k], M[k, :k]) / d
    return np.array(sorted(found), dtype=np.int64)


__all__ = ['FORMS', 'inverse_dynamics', 'gravity_torques', 'joint_wrenches', 'mass_matrix',
           'mass_matrix_derivative', 'coriolis_matrix', 'forward_dynamics', 'singular_joints']
