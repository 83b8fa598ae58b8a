"""
The compiled algorithms, apart from the public functions that check and document them.

Internal: the public API is :mod:`liemb_ros.core.kinematics`, :mod:`liemb_ros.core.dynamics` and
:mod:`liemb_ros.core.eom`, thin modules that canonicalise the arguments and call these kernels.
One algorithm per module (imports point upwards in this list only):

============== ================================================================================
module         contents
============== ================================================================================
lie            the SE(3) single-element operations (Ad, ad, exp, compose, inverse)
layout         the model as the kernels read it (``Tree``), and its packed single-call form
numba_entry    a kernel's compiled entry point: the one module that reads numba's internals
dispatch       status codes, finiteness checks, argument canonicalisation, entry-point cache
tree           tree sweeps: joint poses, body poses, link poses, spatial screws, twists
jacobian       link Jacobians and their time derivatives in four representations
inertia        spatial inertias (10 parameters): moved, applied, rates; articulated inertias
rnea           inverse dynamics (RNEA) in body-fixed, spatial and hybrid form
crba           mass matrix, its time derivative, the Coriolis matrix (composite bodies)
aba            forward dynamics (articulated-body algorithm)
derivatives    analytic ∂τ/∂q and ∂τ/∂q̇ of the inverse dynamics
============== ================================================================================

The small SE(3) operations the kernels are built of (``Ad``, ``ad``, ``exp``) are the one
implementation in :mod:`liemb_ros.core._kernels.lie`.  Nothing is imported here, so that the model
layer can import :mod:`.layout` alone.
"""
