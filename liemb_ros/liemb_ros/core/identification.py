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
"""
import numpy as np

from ._kernels.dispatch import (EYE4, base_arg, check, fast, out_array, run_batch, states,
                                threads_arg)
from ._kernels.regressor import regressor_batch, regressor_into

#: the ten inertial parameters of a body, in column order (the suffixes of parameter_names)
PARAMETERS = ('m', 'mcx', 'mcy', 'mcz', 'Ixx', 'Ixy', 'Iyy', 'Ixz', 'Iyz', 'Izz')

# estimated time of one configuration of the batch kernel per body [ns] (run_batch's chunks)
_NS_REGRESSOR = 200


def parameter_count(model, friction=False, armature=False):
    """Return the number of columns of :func:`regressor` (``10`` per body, base, joint terms)."""
    return (10 * (model.nb + (1 if model.floating else 0))
            + model.nq * ((2 if friction else 0) + (1 if armature else 0)))


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
