"""
Identification of inertial parameters: the joint-torque regressor and its parameter vector.

Inverse dynamics is linear in each body's inertial parameters,
``τ = Y(q, q̇, q̈) π``; a least-squares fit of ``π`` to recorded torques stacks ``Y`` over a
trajectory.  ``Y`` is computed from the body-fixed Newton-Euler recursion (Müller, "Screw
and Lie group theory in multibody dynamics — recursive algorithms and equations of motion
of tree-topology systems", Multibody Syst. Dyn. 42 (2018) 219–248, [M18d] §4, (66)-(67)):
the RNEA's forward pass, each body's ``Φ(V̇) - ad_Vᵀ Φ(V)``, carried to the joints that
support it; exact, not finite differences (:mod:`liemb_ros.core._kernels.regressor`).

**Parameters of a body** (ten, :data:`PARAMETERS`), in its body frame (the child link
frame of its joint; URDF links fixed to it are merged in):
``(m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz)`` — mass [kg], first moment
``m c`` [kg m] (``c`` the centre of mass), and the rotational inertia [kg m²] **about the
body frame's origin** (not the centre of mass: ``I = I_c + m (|c|² 1 - c cᵀ)``), which
keeps ``τ`` linear.  This is Pinocchio's ``Inertia.toDynamicParameters`` order, and
``computeJointTorqueRegressor``'s columns.

**Columns**: a floating base's ten first (the base body, ``model.base_link``), then ten per
body in ``model.body_names`` order (massless virtual bodies of multi-DOF URDF joints
included: their parameters are zero); with ``friction=True`` then one viscous column per
joint coordinate (``q̇_k``, coefficient [N m s/rad or N s/m]) and one Coulomb column per
coordinate (``sign(q̇_k)``, ``sign(0) = 0``, level [N m or N]); with ``armature=True`` then
one per coordinate (``q̈_k``, rotor inertia [kg m² or kg], as ``mass_matrix(armature=)``).
:func:`parameter_names` names them.

**Rows**: the velocity coordinates, as :func:`~liemb_ros.core.dynamics.inverse_dynamics`:
for a floating base rows 0-5 are the base wrench ``(m, f)`` in the base frame, ``qd[:6]``
the base body twist ``(ω, v)``; ``base_pose`` (the gravity's direction in the base frame)
as there.  Mimic-coupled joints (``model.shared_coordinates``) add ``q_mult`` times their
projection to their leader's row, as the RNEA does.  External wrenches are not part of
``Y``: subtract their torques ``Jᵀ f`` from the measured ones.

``regressor(model, q, qd, qdd) @ inertial_parameters(model)`` equals
``inverse_dynamics(model, q, qd, qdd)`` to round-off.

**Base parameters** (:func:`base_parameters`): torques determine only some linear
combinations of ``π``; the identifiable ones are ``β = π[independent] + K_d π[dependent]``,
found numerically from the regressor on random states (Gautier, "Numerical calculation of
the base inertial parameters of robots", J. Robotic Systems 8(4) (1991) 485–506).  The
fits of these parameters to recordings are in :mod:`liemb_ros.core.identification_fit`.
"""
from dataclasses import dataclass

import numpy as np

from ._kernels.dispatch import (EYE4, F64, ND, base_arg, check, fast, out_array, run_batch,
                                states, threads_arg)
from ._kernels.regressor import regressor_batch, regressor_into
from .model.synthetic import random_pose

#: the ten inertial parameters of a body, in column order (the suffixes of parameter_names)
PARAMETERS = ('m', 'mcx', 'mcy', 'mcz', 'Ixx', 'Ixy', 'Iyy', 'Ixz', 'Iyz', 'Izz')

# estimated time of one configuration of the batch kernel per body [ns] (run_batch's chunks)
_NS_REGRESSOR = 200


def parameter_count(model, friction=False, armature=False):
    """Return the number of columns of :func:`regressor` (``10`` per body, base, joint terms)."""
    return (10 * (model.nb + (1 if model.floating else 0))
            + model.nq * ((2 if friction else 0) + (1 if armature else 0)))


def regressor_columns(model, friction=False, armature=False):
    """
    Return where the columns of ``friction`` and ``armature`` lie among all the columns.

    The indices (p,) of :func:`regressor`'s columns with ``friction`` and ``armature`` inside
    those of ``regressor(..., friction=True, armature=True)``: one regressor with every
    column serves fits with fewer terms (``Y_all[..., regressor_columns(model, f, a)]``).
    """
    n, nq = 10 * (model.nb + (1 if model.floating else 0)), model.nq
    return np.concatenate([np.arange(n)] + ([np.arange(n, n + 2 * nq)] if friction else [])
                          + ([np.arange(n + 2 * nq, n + 3 * nq)] if armature else []))


def regressor(model, q, qd, qdd, base_pose=None, friction=False, armature=False, out=None,
              threads=None):
    """
    Joint-torque regressor ``Y``: ``τ = Y π``, shape (nv, p) or (B, nv, p).

    ``π``: ten inertial parameters per body, ``(m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy,
    I_xz, I_yz, I_zz)``, the inertia about the body frame's origin in the body frame; a
    floating base's first; then with ``friction`` a viscous (``q̇_k``) and a Coulomb
    (``sign(q̇_k)``, ``sign(0) = 0``) column per joint coordinate, with ``armature`` a
    ``q̈_k`` column per coordinate (module docstring; :func:`parameter_names`).  ``q``
    (nq,) or (B, nq); ``qd``, ``qdd`` (nv,) or (B, nv); ``base_pose`` as for
    :func:`~liemb_ros.core.dynamics.inverse_dynamics`.  Computed from the body-fixed
    Newton-Euler recursion ([M18d] (66)-(67)).  Raises ValueError on wrong shapes or NaN/inf.
    ``out``: an array of the result's shape to write into instead of a new one (a batch's
    result is large, ``8 nv p`` bytes a configuration, and a fresh one pays its page faults
    on every call); one that shares memory with an argument is refused.
    ``threads``: for a batch (:func:`liemb_ros.set_num_threads`); results do not depend on it.
    """
    if (out is None and threads is None and q.__class__ is ND and qd.__class__ is ND
            and qdd.__class__ is ND and q.dtype is F64 and qd.dtype is F64 and qdd.dtype is F64
            and q.ndim == 1 and qd.ndim == 1 and qdd.ndim == 1
            and (base_pose is None or (base_pose.__class__ is ND and base_pose.dtype is F64
                                       and base_pose.ndim == 2))):
        # the shortest path (dispatch module docstring): the kernel checks the rest
        entry = model.entry_points.get('regressor')
        if entry is not None:
            f, a = bool(friction), bool(armature)
            Y = np.empty((model.nv, parameter_count(model, f, a)))
            if not entry(model.packed_int, model.packed_float, model.data.work, q, qd, qdd,
                         EYE4 if base_pose is None else base_pose, f, a, Y):
                return Y
    (q, qd, qdd), B = states(model, q, (('qd', qd), ('qdd', qdd)))
    if threads is not None:
        threads_arg(threads)
    friction = bool(friction)   # one numba type for the entry point (fast)
    armature = bool(armature)
    p = parameter_count(model, friction, armature)
    shape = (model.nv, p) if B is None else (B, model.nv, p)
    if out is None:
        out = np.empty(shape)
    else:
        out = out_array(out, shape, (('q', q), ('qd', qd), ('qdd', qdd),
                                     ('base_pose', base_pose)))
    if B is None:
        st = fast(model, 'regressor', regressor_into,
                  (model.packed_int, model.packed_float, model.data.work, q, qd, qdd,
                   EYE4 if base_pose is None else base_arg(model, base_pose, None), friction,
                   armature, out))
        if st:
            check(model, st)
        return out
    run_batch(regressor_batch, (model.tree, q, qd, qdd, base_arg(model, base_pose, B), friction,
                                armature, out),
              (1, 2, 3, 4, 7), threads, _NS_REGRESSOR * model.nb)
    return out


def inertial_parameters(model):
    """
    Return the model's own inertial parameters ``π``, (10 nb,) or (10 (nb + 1),) (floating base).

    In the columns' order of :func:`regressor` (module docstring), read off the body-fixed
    spatial inertias ``[[Θ, h~], [-h~, m 1]]`` ([M18d] (40)): ``m``, ``h = m c``, ``Θ`` (about
    the body frame's origin).  ``regressor(model, q, qd, qdd) @ inertial_parameters(model)``
    is ``inverse_dynamics(model, q, qd, qdd)``.
    """
    M = model.inertia
    if model.floating:
        M = np.concatenate((model.base_inertia[None], M))
    return np.stack([M[:, 3, 3], M[:, 2, 4], M[:, 0, 5], M[:, 1, 3], M[:, 0, 0], M[:, 0, 1],
                     M[:, 1, 1], M[:, 0, 2], M[:, 1, 2], M[:, 2, 2]], axis=1).ravel()


def parameter_names(model, friction=False, armature=False):
    """
    Names of the columns of :func:`regressor`: ``'<body>.<parameter>'``, ``'<joint>.fv'`` ...

    A body's ten are ``'<body>.m'``, ``.mcx``, ``.mcy``, ``.mcz``, ``.Ixx``, ``.Ixy``,
    ``.Iyy``, ``.Ixz``, ``.Iyz``, ``.Izz`` (:data:`PARAMETERS`; the floating base under
    ``model.base_link``'s name); the joint terms ``'<joint>.fv'`` (viscous), ``'<joint>.fc'``
    (Coulomb), ``'<joint>.armature'`` for each of ``model.joint_names``.
    """
    bodies = ([model.base_link] if model.floating else []) + list(model.body_names)
    names = [f'{b}.{k}' for b in bodies for k in PARAMETERS]
    if friction:
        names += [f'{j}.fv' for j in model.joint_names] + [f'{j}.fc' for j in model.joint_names]
    if armature:
        names += [f'{j}.armature' for j in model.joint_names]
    return names


def reference_parameters(model, friction=False, armature=False):
    """
    Return the model's own values of every column of :func:`regressor`, (p,): the URDF's.

    :func:`inertial_parameters`, then with ``friction`` the URDF's viscous ``damping`` and
    Coulomb ``friction`` of each joint (``model.damping``, ``model.friction``), with
    ``armature`` zeros (a URDF has no rotor inertia).
    """
    parts = [inertial_parameters(model)]
    if friction:
        parts += [model.damping, model.friction]
    if armature:
        parts.append(np.zeros(model.nq))
    return np.concatenate(parts)


#: the base parameters' default tolerance: a column is independent when its part outside the
#: span of the columns before it is above ``tol`` times the largest column (all scaled to 1)
BASE_TOL = 1e-8


@dataclass(frozen=True, eq=False)
class BaseParameters:
    """
    The identifiable combinations of a model's parameters, ``β = π[ind] + Kd π[dep]``.

    ``independent`` (n,), ``dependent`` (p - n,): indices of the standard columns of
    :func:`regressor` (ascending; together every column once); ``Kd`` (n, p - n): each
    dependent column's coefficients on the independent ones, ``Y[:, dependent] =
    Y[:, independent] Kd`` for every state, so that ``Y π = Y[:, independent] β``.  A
    dependent column with no coefficient (a zero column of ``Kd``) moves no joint at all.
    ``names`` (n,): readable, the independent parameter's name and up to three of the
    dependent ones it absorbs (``'link2.Izz + link3.Iyy + 0.09*link3.m + … (2 more)'``);
    :meth:`grouping` lists them all.  ``standard_names`` (p,): :func:`parameter_names`.
    ``reference`` (p,): the model's standard values (:func:`reference_parameters`), what
    :meth:`to_standard` keeps where the data cannot see.  ``friction``, ``armature``: the
    columns included; ``tol``: the tolerance they were found with (:func:`base_parameters`).
    """

    independent: np.ndarray
    dependent: np.ndarray
    Kd: np.ndarray
    names: tuple
    standard_names: tuple
    reference: np.ndarray
    friction: bool
    armature: bool
    tol: float

    @property
    def count(self):
        """Return the number of base parameters ``n``."""
        return int(self.independent.size)

    @property
    def matrix(self):
        """Return ``K`` (n, p): ``β = K π`` (the identity on the independent columns, ``Kd``)."""
        K = np.zeros((self.count, len(self.standard_names)))
        K[:, self.independent] = np.eye(self.count)
        K[:, self.dependent] = self.Kd
        return K

    def from_standard(self, pi):
        """Return ``β = π[independent] + Kd π[dependent]`` of standard ``π`` (..., p)."""
        pi = np.asarray(pi, dtype=float)
        return pi[..., self.independent] + pi[..., self.dependent] @ self.Kd.T

    def to_standard(self, beta, reference=None):
        """
        Return a standard ``π`` (p,) with base parameters ``β``: the reference where unseen.

        The dependent parameters keep their ``reference`` values (default: the model's,
        :attr:`reference`) and the independent ones are solved for,
        ``π[independent] = β - Kd π_ref[dependent]``: one point of the affine set of
        parameters with the same torques (``π_ref`` plus a null-space correction).
        """
        pi = np.array(self.reference if reference is None else reference, dtype=float)
        pi[self.independent] = np.asarray(beta, dtype=float) - self.Kd @ pi[self.dependent]
        return pi

    def regressor(self, Y):
        """Return the base regressor ``Y[..., independent]`` of a standard one: ``τ = Y_b β``."""
        return Y[..., self.independent]

    def grouping(self, k):
        """Return base parameter ``k`` as ``[(standard name, coefficient), ...]``, itself first."""
        return _grouping(self.standard_names, self.independent, self.dependent, self.Kd, k)


def _grouping(names, independent, dependent, Kd, k):
    """Return base parameter ``k`` as ``[(name, coefficient), ...]`` (``grouping``)."""
    return [(names[independent[k]], 1.0)] + [(names[d], float(c))
                                             for d, c in zip(dependent, Kd[k]) if c != 0.0]


def _term(name, c):
    """`` + name``, `` - name`` or `` + 0.09*name`` (coefficient to four digits)."""
    if abs(abs(c) - 1.0) < 1e-9:
        return f" {'+' if c > 0 else '-'} {name}"
    return f" {'+' if c > 0 else '-'} {abs(c):.4g}*{name}"


def _base_name(terms, shown=3):
    """Name a grouping readably: its first ``shown`` absorbed terms and a count of the rest."""
    name = terms[0][0] + ''.join(_term(n, c) for n, c in terms[1:shown + 1])
    more = len(terms) - 1 - shown
    return name + (f' + … ({more} more)' if more > 0 else '')


def base_parameters(model, friction=False, armature=False, samples=None, rng=0, tol=BASE_TOL):
    """
    Find the base parameters of ``model`` (:class:`BaseParameters`) from its regressor.

    Stacks :func:`regressor` over ``samples`` random states (``q`` uniform in the joint
    limits, ``q̇``, ``q̈`` standard normal, a random base pose for a floating base; default
    enough for three times as many rows as columns; ``rng`` a seed or Generator: the
    result is deterministic), scales each column to unit norm, and keeps, in column
    order, each column whose part outside the span of the columns kept before it is above
    ``tol`` (Gram-Schmidt, twice).  The earlier of two dependent parameters is the one
    kept, so a body's dependent parameters are grouped onto its parent's and its own first
    ones, as by the rules of Gautier and Khalil ("Direct calculation of minimum set of
    inertial parameters of serial robots", IEEE T-RA 6(3) (1990) 368–373); the columns of
    bodies without mass in the model (the virtual bodies of multi-DOF joints) come last,
    so that they are grouped onto real bodies where they can be.  Columns below
    ``tol`` times the largest are zero (they move no joint).  The count is checked against
    the numerical rank of the same matrix (its singular values above ``tol`` times the
    largest; Gautier 1991 uses QR, the SVD is the surer test): a ValueError if the two
    differ, ``tol`` then falling where the columns have no gap.  Measured on the 7-joint
    arm, the Panda, the UR5, solo12 and talos (floating), with friction and armature: the
    parts kept are above 0.25, the others below 3e-15.  ``Kd`` solves ``Y[:, dependent] =
    Y[:, independent] Kd`` by least squares on the same rows; entries below ``tol`` (in the
    scaled columns) are set to zero.
    """
    if not 0.0 < tol < 1.0:
        raise ValueError(f'tol must be in (0, 1), got {tol}')
    rng = np.random.default_rng(rng)
    p = parameter_count(model, friction, armature)
    if samples is None:
        samples = max(10, -(-3 * p // model.nv))
    q = model.random_configuration(rng, size=samples)
    qd, qdd = rng.standard_normal((2, samples, model.nv))
    base = np.array([random_pose(rng) for _ in range(samples)]) if model.floating else None
    W = regressor(model, q, qd, qdd, base_pose=base, friction=friction,
                  armature=armature).reshape(-1, p)
    norms = np.linalg.norm(W, axis=0)
    live = norms > tol * norms.max()
    Wn = W / np.where(live, norms, 1.0)
    Wn[:, ~live] = 0.0
    sv = np.linalg.svd(Wn[:, live], compute_uv=False)
    rank = int(np.count_nonzero(sv > tol * sv[0]))
    reference = reference_parameters(model, friction, armature)
    massless = np.zeros(p, dtype=bool)   # the columns of bodies without mass in the model
    n_inertial = inertial_parameters(model).size
    massless[:n_inertial] = np.repeat(reference[:n_inertial:10] <= 0.0, 10)
    basis = np.empty((Wn.shape[0], int(live.sum())))
    keep = []
    for c in np.r_[np.flatnonzero(live & ~massless), np.flatnonzero(live & massless)]:
        v = Wn[:, c].copy()
        for _ in range(2):
            v -= basis[:, :len(keep)] @ (basis[:, :len(keep)].T @ v)
        n = np.linalg.norm(v)
        if n > tol:
            basis[:, len(keep)] = v / n
            keep.append(c)
    if len(keep) != rank:
        raise ValueError(f'base_parameters: the columns kept in order ({len(keep)}) and the '
                         f'numerical rank ({rank}) differ at tol={tol:g}: the scaled '
                         'regressor has singular values near tol; choose another tol')
    independent = np.sort(np.array(keep, dtype=np.int64))
    dependent = np.setdiff1d(np.arange(p), independent)
    Ks = np.linalg.lstsq(Wn[:, independent], Wn[:, dependent], rcond=None)[0]
    Ks[np.abs(Ks) <= tol] = 0.0
    scale = np.where(live, norms, 0.0)
    Kd = Ks * scale[dependent] / scale[independent][:, None]
    names = tuple(parameter_names(model, friction, armature))
    for a in (independent, dependent, Kd, reference):
        a.setflags(write=False)
    return BaseParameters(independent, dependent, Kd,
                          tuple(_base_name(_grouping(names, independent, dependent, Kd, k))
                                for k in range(independent.size)),
                          names, reference, bool(friction), bool(armature), float(tol))
