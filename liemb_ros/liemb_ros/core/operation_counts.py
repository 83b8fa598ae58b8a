"""
Operation counts of the three Newton–Euler forms, from an instrumented recursion ([M18d] §4.5).

Müller, "Screw and Lie group theory in multibody dynamics", Multibody Syst. Dyn. 42 (2018)
219–248 ("[M18d]"), §4.1-4.3 (the algorithms (66)-(67), (70)-(71), (75)-(76)) and the
operation counts of its §4.5 for a chain of ``n`` bodies (docs/theory/operation-counts.md):

=========  ===============================================================================
form       the paper's count
=========  ===============================================================================
body       ``3(n-1)`` frame transformations ``Ad_{C_{i,i-1}}``, ``2n-1`` Lie brackets
spatial    ``n`` screw transformations ``Ad_{C_i}``, ``n`` inertia (2nd-order tensor)
           transformations, ``2n-1`` Lie brackets
hybrid     ``3n-3`` translational and ``n`` rotational screw transformations, ``n``
           rotational inertia transformations, ``3n-1`` Lie brackets
=========  ===============================================================================

:func:`newton_euler_counts` runs each form's recursion in plain NumPy with every one of
those primitives applied through a counter, and skips an operation only where its
argument is zero by construction (the twist and acceleration of the ground, ``V_0 = V̇_0 =
0``; the wrench beyond a leaf, ``W_{n+1} = 0``; the bracket ``[^1X_1, V_1]`` of a body on
the ground, ``V_1 = ^1X_1 q̇_1``), as the paper's counts assume.  The joint forces it
returns are those of :func:`liemb_ros.core.dynamics.inverse_dynamics` (a test checks it to
round-off), so the counts are those of a working algorithm, not a tally on paper.  Trees:
"``i - 1``" is the parent, and the ``-1`` terms become ``-r`` with ``r`` the number of
bodies on the ground (each skip above happens once per such body).  The poses
``C_i = C_{i-1} B_i exp(^iX_i q_i)`` are common to the three forms and counted apart
(``pose products``).  Gravity enters as ``V̇_0 = (0, -g)`` ([M18d] §4.4): it makes the
ground's acceleration non-zero: one more frame transformation per body on the ground in
the body-fixed form (spatial and hybrid take ``(0, -g)`` unchanged; the paper omits
gravity); ``gravity=False`` reproduces the paper's setting.
"""
from collections import Counter

import numpy as np

from ._joint_space import fixed_base_vectors, project as _project
from .kinematics import body_poses
from .lie import se3

FORMS = ('body', 'spatial', 'hybrid')


class _Ops:
    """The counted primitives: each applies one operation of [M18d] and counts it."""

    def __init__(self):
        self.n = Counter()

    def frame(self, C, x):
        """Apply a frame transformation ``Ad_C x`` to a twist (rotation and translation)."""
        self.n['frame transformations'] += 1
        return se3.Ad(C) @ x

    def frame_T(self, C, w):
        """Apply a frame transformation to a wrench, ``Ad_Cᵀ w``."""
        self.n['frame transformations'] += 1
        return se3.Ad(C).T @ w

    def screw(self, C, x):
        """Apply a screw transformation to a joint screw, ``Ad_C x`` (spatial form, (70b))."""
        self.n['screw transformations'] += 1
        return se3.Ad(C) @ x

    def tensor(self, Ai, M):
        """Transform an inertia, ``Aiᵀ M Ai`` ((71a) with ``Ai = Ad_C⁻¹``)."""
        self.n['inertia transformations'] += 1
        return Ai.T @ M @ Ai

    def translate(self, d, x):
        """Translate a twist, ``Ad_d x = (ω, v + d × ω)`` (hybrid)."""
        self.n['translational transformations'] += 1
        return np.concatenate([x[:3], x[3:] + np.cross(d, x[:3])])

    def translate_T(self, d, w):
        """Translate a wrench, ``Ad_dᵀ w = (m - d × f, f)`` (moment shift)."""
        self.n['translational transformations'] += 1
        return np.concatenate([w[:3] - np.cross(d, w[3:]), w[3:]])

    def rotate(self, R, x):
        """Rotate a screw, ``Ad_R x = (R ω, R v)`` (hybrid, (75b))."""
        self.n['rotational transformations'] += 1
        return np.concatenate([R @ x[:3], R @ x[3:]])

    def rotate_tensor(self, R, M):
        """Rotate an inertia, ``Ad_R M Ad_Rᵀ`` ((76a))."""
        self.n['rotational inertia transformations'] += 1
        A = se3.Ad_R(R)
        return A @ M @ A.T

    def bracket(self, X, Y):
        """Return the Lie bracket ``[X, Y] = ad_X Y``."""
        self.n['Lie brackets'] += 1
        return se3.ad(X) @ Y

    def cobracket(self, X, W):
        """Return ``ad_Xᵀ W``, a bracket on a wrench (one bracket in the paper's count)."""
        self.n['Lie brackets'] += 1
        return se3.ad(X).T @ W


def _poses(model, q, ops):
    C = body_poses(model, q)
    ops.n['pose products'] += model.nb
    return C


def _body(model, q, qd, qdd, a0, ops):
    """Run the body-fixed form (66)-(67)."""
    C = _poses(model, q, ops)
    nb = model.nb
    V, Vd, A = np.zeros((nb, 6)), np.zeros((nb, 6)), [None] * nb
    for i in range(nb):
        p = model.parent[i]
        X = model.X[i]
        t1, t2 = (model.q_mult[i] * x[model.q_index[i]] for x in (qd, qdd))
        if p < 0:
            A[i] = se3.inverse(C[i])                              # C_{i,0}
            V[i] = X * t1
            Vd[i] = X * t2 + (ops.frame(A[i], a0) if a0.any() else 0.0)
            continue
        A[i] = se3.inverse(C[i]) @ C[p]                           # C_{i,i-1}
        V[i] = ops.frame(A[i], V[p]) + X * t1                     # (66b)
        Vd[i] = ops.frame(A[i], Vd[p]) - t1 * ops.bracket(X, V[i]) + X * t2   # (66c)
    W = np.zeros((nb, 6))
    for i in reversed(range(nb)):
        M = model.inertia[i]
        W[i] += M @ Vd[i] - ops.cobracket(V[i], M @ V[i])        # (67a)
        p = model.parent[i]
        if p >= 0:
            W[p] += ops.frame_T(A[i], W[i])
    return _project(model, model.X, W)


def _spatial(model, q, qd, qdd, a0, ops):
    """Run the spatial form (70)-(71)."""
    C = _poses(model, q, ops)
    nb = model.nb
    J, V, Vd = np.zeros((nb, 6)), np.zeros((nb, 6)), np.zeros((nb, 6))
    for i in range(nb):
        p = model.parent[i]
        t1, t2 = (model.q_mult[i] * x[model.q_index[i]] for x in (qd, qdd))
        J[i] = ops.screw(C[i], model.X[i])                        # (70b)
        Vp, Vdp = (np.zeros(6), a0) if p < 0 else (V[p], Vd[p])
        V[i] = Vp + J[i] * t1                                     # (70c)
        Vd[i] = Vdp + J[i] * t2 + (ops.bracket(Vp, V[i]) if p >= 0 else 0.0)   # (70d)
    W = np.zeros((nb, 6))
    for i in reversed(range(nb)):
        Ms = ops.tensor(se3.Ad_inv(C[i]), model.inertia[i])      # (71a)
        W[i] += Ms @ Vd[i] - ops.cobracket(V[i], Ms @ V[i])      # (71b)
        if model.parent[i] >= 0:
            W[model.parent[i]] += W[i]
    return _project(model, J, W)


def _hybrid(model, q, qd, qdd, a0, ops):
    """Run the hybrid form (75)-(76)."""
    C = _poses(model, q, ops)
    nb = model.nb
    Z, V, Vd = np.zeros((nb, 6)), np.zeros((nb, 6)), np.zeros((nb, 6))
    for i in range(nb):
        p = model.parent[i]
        t1, t2 = (model.q_mult[i] * x[model.q_index[i]] for x in (qd, qdd))
        Z[i] = ops.rotate(C[i, :3, :3], model.X[i])              # (75b)
        if p < 0:
            V[i] = Z[i] * t1
            Vd[i] = a0 + ops.bracket(np.concatenate([V[i, :3], np.zeros(3)]), Z[i]) * t1 \
                + Z[i] * t2
            continue
        d = C[p, :3, 3] - C[i, :3, 3]                            # r_{i,i-1}
        V[i] = ops.translate(d, V[p]) + Z[i] * t1                 # (75c)
        rd = V[p, 3:] - V[i, 3:]                                  # ṙ_{i-1} - ṙ_i
        Vd[i] = (ops.translate(d, Vd[p])                          # (75d)
                 + ops.bracket(np.concatenate([np.zeros(3), rd]), V[p])
                 + ops.bracket(np.concatenate([V[i, :3], np.zeros(3)]), Z[i]) * t1
                 + Z[i] * t2)
    W = np.zeros((nb, 6))
    for i in reversed(range(nb)):
        Mh = ops.rotate_tensor(C[i, :3, :3], model.inertia[i])   # (76a)
        w = np.concatenate([V[i, :3], np.zeros(3)])
        W[i] += Mh @ Vd[i] - ops.cobracket(w, Mh @ w)            # (76b): ad_ω M (ω, 0)
        p = model.parent[i]
        if p >= 0:
            W[p] += ops.translate_T(C[p, :3, 3] - C[i, :3, 3], W[i])   # r_{i,i-1}
    return _project(model, Z, W)


def newton_euler_counts(model, q, qd, qdd, form='body', gravity=True):
    """
    Joint forces by the instrumented ``form`` recursion and its operation counts.

    Returns ``(tau, counts)``: ``tau`` (nq,) the inverse dynamics of a fixed-base model (no
    external wrenches; with the model's gravity unless ``gravity=False``), ``counts`` a dict
    of the primitives the recursion applied (module docstring).  A reference for counting,
    not a fast path: :func:`liemb_ros.core.dynamics.inverse_dynamics` is the compiled one.
    """
    if form not in FORMS:
        raise ValueError(f'unknown form {form!r}; expected one of {", ".join(FORMS)}')
    args = fixed_base_vectors(model, 'newton_euler_counts', (
        ('q', q, model.nq), ('qd', qd, model.nv), ('qdd', qdd, model.nv)))
    a0 = np.zeros(6)
    if gravity:
        a0[3:] = -model.gravity
    ops = _Ops()
    tau = {'body': _body, 'spatial': _spatial, 'hybrid': _hybrid}[form](model, *args, a0, ops)
    return tau, dict(ops.n)


def paper_counts(n, form):
    """Return the counts [M18d] §4.5 states for a chain of ``n`` bodies (a dict)."""
    if form == 'body':
        return {'frame transformations': 3 * (n - 1), 'Lie brackets': 2 * n - 1}
    if form == 'spatial':
        return {'screw transformations': n, 'inertia transformations': n,
                'Lie brackets': 2 * n - 1}
    if form == 'hybrid':
        return {'translational transformations': 3 * n - 3, 'rotational transformations': n,
                'rotational inertia transformations': n, 'Lie brackets': 3 * n - 1}
    raise ValueError(f'unknown form {form!r}; expected one of {", ".join(FORMS)}')


__all__ = ['newton_euler_counts', 'paper_counts', 'FORMS']
