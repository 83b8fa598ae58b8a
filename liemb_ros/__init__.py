"""
liemb_ros: robots as joint screws on the Lie group SE(3).

Public API (design.md): ``load_urdf``, ``Model``, ``link_pose``, ``forward_kinematics``,
``link_twist``, ``link_acceleration``, ``jacobian``, ``jacobian_derivative``.
Twists are angular first ``(ω, v)``, wrenches moment first ``(m, f)``, poses 4x4.
"""
from .kinematics import (body_poses, body_twists, forward_kinematics, jacobian,
                         jacobian_derivative, jacobian_factors, link_acceleration, link_pose,
                         link_twist, representation_map)
from .model import REPRESENTATIONS, Model, URDFError, URDFWarning, load_urdf

__all__ = ['load_urdf', 'Model', 'URDFError', 'URDFWarning', 'REPRESENTATIONS', 'link_pose',
           'forward_kinematics', 'link_twist', 'link_acceleration', 'jacobian',
           'jacobian_derivative', 'body_poses', 'body_twists', 'jacobian_factors',
           'representation_map']
__version__ = '0.1.0'
