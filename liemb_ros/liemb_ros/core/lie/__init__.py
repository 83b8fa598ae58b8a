"""
Lie groups of rigid-body motion: SO(3), SE(3), SO(3)xR^3, quaternions, dual quaternions.

Theory: docs/theory/conventions.md ([MT14] App. A, [M18k] App. A, [M18d] App. B; the
references are listed in docs/theory/README.md).  One vocabulary for every group
(``compose``, ``inverse``, ``act``, ``exp``, ``log``, ``Ad``, ``ad``, ``dexp``,
``dexpinv``); every function is batched over leading axes, ``[..., k] -> [..., m]``.

Conventions (project-wide): twists/screws angular first ``X = (xi, eta) = (omega, v)``,
wrenches moment first ``W = (m, f)``, poses ``C = [[R, r], [0, 1]]`` map body to world
coordinates, ``dexp`` is right-trivialised (body-fixed twist ``V = dexp_{-X} X'``),
quaternions are scalar first ``(w, x, y, z)``.

Modules: :mod:`.so3`, :mod:`.se3`, :mod:`.so3r3` (direct product, stored as 4x4),
:mod:`.quaternion`, :mod:`.dual_quaternion`; :mod:`liemb_ros.core._kernels.lie` holds the
compiled SE(3) kernels shared with the recursive algorithms, :mod:`._batch` the shape checks and
flattening of leading axes that every group's batched functions share.
"""
from . import dual_quaternion, quaternion, se3, so3, so3r3

__all__ = ['so3', 'se3', 'so3r3', 'quaternion', 'dual_quaternion']
