"""
The core: a robot as joint screws on SE(3), and the algorithms on it (no ROS, no simulator).

* :mod:`.lie`: SO(3), SE(3), SO(3)×R³ and (dual) quaternions, batched.
* :mod:`.model`: URDF and xacro parsed and validated into a :class:`~.model.Model` (the joint
  screws ``Y``, ``X``, reference configurations ``A``, inertias, topology).
* :mod:`._kernels`: the compiled recursions (tree sweeps, Jacobians, RNEA, CRBA, ABA, the
  derivatives), the packed model layout and the dispatch between public functions and them.
* :mod:`.kinematics`, :mod:`.dynamics`, :mod:`.eom`: the public functions ([M18k], [M18d]);
  :mod:`.closed_form`: the closed-form equations of motion, for cross-checks.
* :mod:`.identification` (the regressor, base parameters), :mod:`.identification_fit` (least
  squares, the physically consistent fit, a payload), :mod:`.payload_estimation` (a
  payload online, by recursive least squares), :mod:`.pseudo_inertia` (a body's physical
  consistency, log-Cholesky coordinates).
* :mod:`.resources`: the robots and files a user names (shipped robots, URDF and mesh paths).

Nothing here imports another layer of the package (``liemb_ros.sim``, ``control``,
``view``, ``ros``, ``app``) or ROS; the import contract of the tests holds it so.
"""
