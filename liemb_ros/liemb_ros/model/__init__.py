"""URDF -> screw model: parsing and validation (urdf), joint types (joints), Model (model)."""
from .model import REPRESENTATIONS, Model, build_model, load_urdf
from .synthetic import random_model
from .urdf import URDFError, URDFWarning, parse_urdf

__all__ = ['Model', 'load_urdf', 'build_model', 'parse_urdf', 'URDFError', 'URDFWarning',
           'REPRESENTATIONS', 'random_model']
