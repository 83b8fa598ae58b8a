"""
liemb_ros: robots as joint screws on the Lie group SE(3).

Public API (design.md): ``load_urdf``, ``load_urdf_string`` (text that is never taken for a
path), ``Model``, ``link_pose``, ``forward_kinematics``, ``link_twist``,
``link_acceleration``, ``jacobian``, ``jacobian_derivative``; third order ([M18d] §2):
``link_jerk``, ``jacobian_second_derivative``, ``body_jerks``; inverse kinematics at
velocity and acceleration level: ``joint_rates``; dynamics
([M18d]): ``inverse_dynamics`` (form 'body' | 'spatial' | 'hybrid'), ``gravity_torques``,
``joint_wrenches``, ``mass_matrix``, ``mass_matrix_derivative``, ``coriolis_matrix``,
``christoffel_symbols``, ``forward_dynamics``, ``inverse_dynamics_in_frame``,
``spatial_momenta``, ``momentum_eom``, ``geometric_sensitivity`` (NumPy statements of
[M18d] (60), (79), §6.2); equations of motion: ``kane_eom``, ``lagrange_eom``,
``system_matrices``, ``inverse_dynamics_derivatives``, ``inverse_dynamics_time_derivative``,
``linearize``; identification: ``regressor`` (``τ = Y π``), ``inertial_parameters``,
``parameter_names``, ``base_parameters``, ``identify`` (least squares), ``identify_consistent``,
``identify_payload``; ``set_num_threads``/``get_num_threads``: the threads of the batch calls;
``KERNEL_CACHE``: the folder of the compiled kernels (:mod:`liemb_ros._cache`).
Twists are angular first ``(ω, v)``, wrenches moment first ``(m, f)``, poses 4x4.
"""
# first: numba's kernel cache folder is chosen before any kernel is defined
from ._cache import KERNEL_CACHE, VERSION as __version__
from ._moved import install as _install_old_paths
from .core.christoffel import christoffel_symbols
from .core.dynamics import (coriolis_matrix, forward_dynamics, gravity_torques, inverse_dynamics,
                            joint_wrenches, mass_matrix, mass_matrix_derivative)
from .core._kernels.dispatch import get_num_threads, set_num_threads
from .core.eom import (inverse_dynamics_derivatives, inverse_dynamics_time_derivative, kane_eom,
                       lagrange_eom, linearize, system_matrices)
from .core.identification import (base_parameters, inertial_parameters, parameter_names,
                                  regressor)
from .core.identification_fit import identify, identify_consistent, identify_payload
from .core.jerk import body_jerks, jacobian_second_derivative, link_jerk
from .core.joint_rates import joint_rates
from .core.kinematics import (body_poses, body_twists, change_representation, forward_kinematics,
                              jacobian, jacobian_derivative, jacobian_factors, link_acceleration,
                              link_pose, link_twist, representation_map)
from .core.momentum import inverse_dynamics_in_frame, momentum_eom, spatial_momenta
from .core.model import REPRESENTATIONS, Model, URDFError, URDFWarning, load_urdf, load_urdf_string
from .core.sensitivity import geometric_sensitivity

_install_old_paths()   # import liemb_ros.simulation and the like, deprecated (one release)

__all__ = ['load_urdf', 'load_urdf_string', 'Model', 'URDFError', 'URDFWarning', 'REPRESENTATIONS',
           'link_pose', 'forward_kinematics', 'link_twist', 'link_acceleration', 'jacobian',
           'jacobian_derivative', 'jacobian_second_derivative', 'link_jerk', 'body_jerks',
           'joint_rates',
           'body_poses', 'body_twists', 'jacobian_factors',
           'representation_map', 'change_representation', 'inverse_dynamics', 'gravity_torques',
           'joint_wrenches',
           'mass_matrix', 'mass_matrix_derivative', 'coriolis_matrix', 'christoffel_symbols',
           'forward_dynamics', 'inverse_dynamics_in_frame', 'spatial_momenta', 'momentum_eom',
           'geometric_sensitivity',
           'kane_eom', 'lagrange_eom', 'system_matrices', 'inverse_dynamics_derivatives',
           'inverse_dynamics_time_derivative', 'linearize', 'regressor', 'inertial_parameters',
           'parameter_names', 'base_parameters', 'identify', 'identify_consistent',
           'identify_payload', 'set_num_threads',
           'get_num_threads', 'KERNEL_CACHE', '__version__']


def __getattr__(name):
    """``liemb_ros.simulation`` and the other 0.1 module paths as attributes (deprecated)."""
    from ._moved import MOVED
    if f'{__name__}.{name}' in MOVED:
        import importlib
        return importlib.import_module(f'{__name__}.{name}')   # warns, names the new path
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
