"""
Poses and spatial inertias as numpy arrays: the helpers that build a model's tables.

One pose at a time, each a thin call of the compiled Lie kernels
(:mod:`liemb_ros.core._kernels.lie`): the inverse of a 4x4 pose, its 6x6 adjoint
``Ad_C`` and its action on one 6-vector, and the body-fixed spatial inertia
(angular first, ``[[Θ, m d~], [-m d~, m I]]``, [M18d] eqs. (39), (40)) and its change
of frame.  The model's construction (:mod:`.model`, :mod:`.assembly`), the synthetic
models and the dynamics engine's payload read them; none of them is a kernel.
"""
import numpy as np

from .._kernels import lie as _lie


def Ad_matrix(C):
    """Return the 6x6 ``Ad_C`` of one pose (numpy helper for model building)."""
    out = np.empty((6, 6))
    _lie.Ad_matrix_into(np.ascontiguousarray(C, dtype=float), out)
    return out


def Ad_vector(C, X):
    """Return ``Ad_C X`` for one pose and one 6-vector."""
    out = np.empty(6)
    _lie.Ad_apply_into(np.ascontiguousarray(C, dtype=float),
                       np.ascontiguousarray(X, dtype=float), out)
    return out


def pose_inverse(C):
    """Return the inverse of one homogeneous 4x4 pose."""
    out = np.empty((4, 4))
    _lie.inverse_into(np.ascontiguousarray(C, dtype=float), out)
    return out


def spatial_inertia(mass, com_pose, inertia_com):
    """
    Return the 6x6 body-fixed spatial inertia (angular first) of a rigid body.

    ``com_pose`` is the COM frame in the frame the result is expressed in;
    ``inertia_com`` is the rotational inertia about the COM, resolved in the COM
    frame ([M18d] eqs. (39), (40)).
    """
    Mc = np.zeros((6, 6))
    Mc[:3, :3] = inertia_com
    Mc[3:, 3:] = mass * np.eye(3)
    Ai = Ad_matrix(pose_inverse(com_pose))
    return Ai.T @ Mc @ Ai


def transform_inertia(M, T):
    """
    Express an inertia ``M`` given in frame F_l in frame F_b.

    ``T`` is the pose of F_l in F_b; the result is ``Ad_T^-T M Ad_T^-1``.
    """
    Ai = Ad_matrix(pose_inverse(T))
    return Ai.T @ M @ Ai
