"""
Simulation: a robot's motion integrated in time, and the multibody systems of the papers.

* :mod:`.simulator`: :class:`Simulator` (joint coordinates with a floating base on SE(3), or
  absolute coordinates; RK4 or RKMK, implicit damping, joint limits, friction, pushes, the
  energy balance), over :mod:`._joint`, :mod:`.passive` (damping, friction, limits),
  :mod:`._absolute`, :mod:`._energy`, :mod:`._wrenches`, :mod:`._armature`,
  :mod:`._plausible` and :mod:`._dense`.
* :mod:`.contact`: ground contact of the URDF's collision geometry (:class:`ContactModel`).
* :mod:`.integrators`: Munthe-Kaas Runge-Kutta on ``G × Rᵏ`` ([MT14], [MT13]);
  :mod:`.mbs`: rigid bodies in absolute coordinates, constraints, [HGS18]'s ULV scheme.
* :mod:`.scenario`: a sample tool link, configuration and test torque for any robot.

Builds on :mod:`liemb_ros.core` only; never imports ROS.
"""
from .contact import ContactModel, ContactWarning
from .simulator import SimulationError, SimulationWarning, Simulator

__all__ = ['Simulator', 'SimulationError', 'SimulationWarning', 'ContactModel',
           'ContactWarning']
