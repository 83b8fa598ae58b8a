"""
Derivatives of the inverse dynamics and the linearised model ([M18d] §6).

Müller, Multibody Syst. Dyn. 42 (2018) 219–248 ("[M18d]"); the theory is in
docs/theory/recursions.md.

* :func:`inverse_dynamics_derivatives`: ``∂τ/∂q`` and ``∂τ/∂q̇`` of the inverse dynamics,
  analytic, in spatial form over subtree composites (one pass over the bodies, then one
  product per joint pair on a common path, O(n·d) for depth d), compiled
  (:mod:`liemb_ros.core._kernels.derivatives`); :func:`inverse_dynamics_time_derivative` gives
  ``τ̇ = ∂τ/∂q q̇ + ∂τ/∂q̇ q̈ + M q⃛``.
* :func:`linearize`: ``A, B`` of ``δẋ = A δx + B δτ`` about a state and torque.
* ``Ṁ`` is :func:`liemb_ros.core.dynamics.mass_matrix_derivative` (recursive, compiled).
* The closed-form equations of motion :func:`kane_eom`, :func:`lagrange_eom` and
  :func:`system_matrices` ([M18d] §5) are the reference statements of the paper's
  equations, kept apart from the production kernels in :mod:`liemb_ros.core.closed_form`;
  they are importable from here as well.

Floating base: the configuration derivative is taken along a right (body-fixed) tangent
perturbation of the base, ``C_base exp(δ^)`` with ``δ = (δω, δv)`` angular first (as
Pinocchio's ``integrate`` for its free flyer, whose tangent is linear first), followed by
``q + δq``; so ``∂τ/∂q`` is (nv, nv).  The linearised base kinematics is
``δ̇_base = δV_base - ad_{V_base} δ_base``.
"""
import numpy as np

from . import dynamics as dyn_
from ._kernels.derivatives import derivatives_batch, derivatives_into
from ._kernels.dispatch import (EYE4, NO_FEXT, base_arg, check, fast, fext_arg, out_array,
                                run_batch, states, threads_arg)
from .closed_form import kane_eom, lagrange_eom, system_matrices  # noqa: F401 (API)
from ._kernels.lie import ad_matrix_into

_NS_DERIVATIVES = 200   # estimated time of one configuration per body [ns] (run_batch)


def inverse_dynamics_derivatives(model, q, qd, qdd, f_ext=None, base_pose=None, out=None,
                                 threads=None):
    """
    Return ``(∂τ/∂q, ∂τ/∂q̇)`` of :func:`~liemb_ros.core.dynamics.inverse_dynamics`, each (nv, nv).

    Analytic, in spatial form over subtree composites (trees, mimic coupling, the floating
    base; the equations are in :mod:`liemb_ros.core._kernels.derivatives`), not finite
    differences.  Batched input gives (B, nv, nv)
    each.  The floating-base configuration derivative is along ``C_base exp(δ^)`` (module
    docstring); ``∂τ/∂q̇ = 2 C_Γ`` for a fixed base.  ``f_ext`` is held fixed in the link frames.
    ``out``: a pair of arrays of the results' shape to write into instead of new ones
    (repeated large batches; see :func:`~liemb_ros.core.kinematics.forward_kinematics`).
    ``threads``: how many threads a batch runs on (default :func:`liemb_ros.set_num_threads`,
    else every core available; results bit for bit those of ``threads=1``); a single
    configuration ignores it.
    """
    (q, qd, qdd), B = states(model, q, (('qd', qd), ('qdd', qdd)))
    if threads is not None:
        threads_arg(threads)
    shape = (model.nv, model.nv) if B is None else (B, model.nv, model.nv)
    if out is None:
        dq, dqd = np.empty(shape), np.empty(shape)
    else:
        if not (isinstance(out, tuple) and len(out) == 2):
            raise ValueError(f'out must be a pair (dtau_dq, dtau_dqd) of arrays of shape '
                             f'{shape}; got {type(out).__name__}')
        args = (('q', q), ('qd', qd), ('qdd', qdd), ('base_pose', base_pose),
                ('f_ext', f_ext))
        dq, dqd = out_array(out[0], shape, args), out_array(out[1], shape, args)
        if np.shares_memory(dq, dqd):
            raise ValueError('the two arrays of out must not overlap')
    if B is None:
        st = fast(model, 'dtau', derivatives_into,
                  (model.packed_int, model.packed_float, model.data.work, q, qd, qdd,
                   EYE4 if base_pose is None else base_arg(model, base_pose, None),
                   NO_FEXT if f_ext is None else fext_arg(model, f_ext, None), dq, dqd))
        if st:
            check(model, st)
        return dq, dqd
    run_batch(derivatives_batch, (model.tree, q, qd, qdd, base_arg(model, base_pose, B),
                                  fext_arg(model, f_ext, B), dq, dqd),
              (1, 2, 3, 4, 5, 6, 7), threads, _NS_DERIVATIVES * model.nb)
    return dq, dqd


def inverse_dynamics_time_derivative(model, q, qd, qdd, qddd, f_ext=None, base_pose=None):
    """
    ``τ̇ = d/dt τ(q, q̇, q̈)`` along a trajectory with jerk ``qddd``, shape (nv,) or (B, nv).

    Exact chain rule with the analytic partials: ``τ̇ = ∂τ/∂q q̇ + ∂τ/∂q̇ q̈ + M q⃛``
    (``f_ext`` constant in the link frames); needed for flatness-based control of
    series-elastic robots ([M18d] §6).
    """
    (q, qd, qdd, qddd), B = states(model, q, (('qd', qd), ('qdd', qdd), ('qddd', qddd)))
    if not np.all(np.isfinite(qddd)):
        raise ValueError('qddd contains NaN or inf')
    dq, dqd = inverse_dynamics_derivatives(model, q, qd, qdd, f_ext=f_ext, base_pose=base_pose)
    M = dyn_.mass_matrix(model, q, base_pose=base_pose)
    mv = lambda A, x: np.einsum('...ij,...j->...i', A, x)  # noqa: E731
    return mv(dq, qd) + mv(dqd, qdd) + mv(M, qddd)


def linearize(model, q, qd, tau, f_ext=None, base_pose=None):
    """
    Linearised state-space model ``δẋ = A δx + B δτ`` about ``(q, q̇, τ)``.

    State ``x = (q, q̇)`` (tangent ``δx`` of size 2 nv); ``A`` (2nv, 2nv) and ``B``
    (2nv, nv): ``A = [[K, I], [-M⁻¹ ∂τ/∂q, -M⁻¹ ∂τ/∂q̇]]``, ``B = [[0], [M⁻¹]]`` at
    ``q̈ = forward_dynamics(q, q̇, τ)``; ``K = 0`` except ``K[:6, :6] = -ad_{V_base}`` for a
    floating base.  Returns ``(A, B)``; single configurations only.
    """
    (q, qd, tau), B = states(model, q, (('qd', qd), ('tau', tau)))
    if B is not None:
        raise ValueError('linearize takes a single configuration')
    qdd = dyn_.forward_dynamics(model, q, qd, tau, f_ext=f_ext, base_pose=base_pose)
    dq, dqd = inverse_dynamics_derivatives(model, q, qd, qdd, f_ext=f_ext, base_pose=base_pose)
    M = dyn_.mass_matrix(model, q, base_pose=base_pose)
    Minv = np.linalg.inv(M)
    nv = model.nv
    A = np.zeros((2 * nv, 2 * nv))
    A[:nv, nv:] = np.eye(nv)
    if model.floating:
        ad_matrix_into(np.ascontiguousarray(qd[:6]), A[:6, :6])
        A[:6, :6] *= -1.0
    A[nv:, :nv] = -Minv @ dq
    A[nv:, nv:] = -Minv @ dqd
    Bm = np.zeros((2 * nv, nv))
    Bm[nv:] = Minv
    return A, Bm


__all__ = ['inverse_dynamics_derivatives', 'inverse_dynamics_time_derivative', 'linearize',
           'system_matrices', 'kane_eom', 'lagrange_eom']
