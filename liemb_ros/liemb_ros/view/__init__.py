"""
A live 3D view of a robot in the browser (``liemb view``), served by viser.

:class:`RobotView` draws a robot's URDF visual geometry (boxes, cylinders, spheres and mesh
files; ``package://`` and relative paths resolved against given folders and installed
packages) in a viser scene, one scene frame per link, and moves it to a configuration
``q`` with :func:`liemb_ros.forward_kinematics`.  On demand it shows the link frames and the
twist of one link as two arrows (angular orange, linear blue, as the dynamics node's
``~/markers``) in a chosen representation:

``body``     at the link origin, ``ω^b`` and ``v^b`` drawn rotated by the link's ``R``;
``spatial``  at the world origin, ``ω^s`` and ``v^s`` (velocity of the body point there);
``hybrid``   at the link origin, ``ω^s`` and ``ṙ``;
``mixed``    at the link origin, ``ω^b`` drawn rotated by ``R``, and ``ṙ``.

The components in the chosen representation are printed beside the scene.  Joints past a
position limit are listed there too.  Three feeds move the robot:

* a :class:`~liemb_ros.sim.simulator.Simulator` stepped in real time in a thread
  (:class:`SimulationDriver`, ``liemb view --simulate ROBOT``, :func:`view_simulation`), with
  pause, reset and the joints' transmitted forces (:func:`joint_wrench_arrows`) in the page;
* ROS topics (:mod:`liemb_ros.ros.view_node`: ``robot_description``, ``joint_states``,
  ``/tf`` for a floating base, the dynamics node's ``~/markers`` and the simulation node's
  ``~/contact_markers``), the RViz stand-in for a PyPI install;
* joint sliders in the page (:meth:`RobotView.add_sliders`) when nothing drives the robot.

The page is self-contained (viser serves its client from the wheel); the server listens on
``127.0.0.1`` unless told otherwise, and says so with a warning when it listens elsewhere
(:func:`page_address`: a wildcard address is reported as every interface, with a URL that
opens the page here).  Mesh files are read only from the folders their URIs belong to, the
URDF's folder, ``package_dirs``, installed packages and ``allow_paths`` (``..`` and symbolic
links resolved first), each at most :data:`MAX_MESH_BYTES` and checked before it is read, in
a thread of the view's own (:mod:`.visuals`); a mesh file that is missing, refused or cannot
be read is drawn as a magenta marker box of :data:`MISSING_MESH_SIZE` (its extent is
unknown) and logged with its path and the reason.  A port outside 0..65535, a port that is
taken or an address that cannot be bound raises :class:`ViewError` naming it.
"""
# The parts: visuals.py (the URDF's visual geometry), address.py (where the page is served:
# port and address checks, the URL), scene.py (RobotView: the page, the scene and its
# controls, the arrows), simulate.py (the simulation feed); the ROS feed is
# liemb_ros.ros.view_node and the command liemb_ros.app.view_command.
from ..core.resources import resolve_mesh
from .address import DEFAULT_HOST, DEFAULT_PORT, ViewError, check_address, check_port, page_address
from .scene import (ANGULAR_COLOR, FORCE_COLOR, LINEAR_COLOR, TWIST_SCALE, RobotView,
                    joint_wrench_arrows, twist_arrows)
from .simulate import CONTACT_COLOR, CONTACT_SCALE, SimulationDriver, gravity_hold, view_simulation
from .visuals import (DEFAULT_COLOR, MAX_MESH_BYTES, MAX_ROBOT_MESH_BYTES, MESH_TYPES,
                      MISSING_COLOR, MISSING_MESH_SIZE, Visual, find_mesh, load_meshes,
                      read_visuals)

__all__ = [
    'resolve_mesh',
    'ANGULAR_COLOR', 'DEFAULT_HOST', 'DEFAULT_PORT', 'FORCE_COLOR', 'LINEAR_COLOR',
    'TWIST_SCALE', 'RobotView', 'ViewError', 'check_address', 'check_port',
    'joint_wrench_arrows', 'page_address', 'twist_arrows', 'CONTACT_COLOR', 'CONTACT_SCALE',
    'SimulationDriver', 'gravity_hold', 'view_simulation', 'DEFAULT_COLOR', 'MAX_MESH_BYTES',
    'MAX_ROBOT_MESH_BYTES', 'MESH_TYPES', 'MISSING_COLOR', 'MISSING_MESH_SIZE', 'Visual',
    'find_mesh', 'load_meshes', 'read_visuals',
]
