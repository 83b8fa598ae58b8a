"""
URDF -> screw model: parsing and validation (urdf), joint types (joints), Model (model).

:mod:`.model` builds its :class:`Model` from the arguments :mod:`.assembly` derives from a
parsed URDF (tree order, 1-DOF screws, folded fixed joints, merged inertias, mimic
coupling); :mod:`.inertia` holds the pose and spatial-inertia helpers both use.

:mod:`.urdf` is made of :mod:`.urdf_types` (errors, link and joint descriptions) and
:mod:`.urdf_sources` (files, xacro, XML text) plus its own checks and parse.
"""
from .model import REPRESENTATIONS, Model, build_model, load_urdf, load_urdf_string
from .synthetic import random_model
from .urdf import URDFError, URDFWarning, expand_xacro, parse_urdf, parse_urdf_string

__all__ = ['Model', 'load_urdf', 'load_urdf_string', 'build_model', 'parse_urdf',
           'parse_urdf_string', 'expand_xacro', 'URDFError', 'URDFWarning', 'REPRESENTATIONS',
           'random_model']
