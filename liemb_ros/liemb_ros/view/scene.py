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

* a :class:`~liemb_ros.simulation.Simulator` stepped in real time in a thread
  (:class:`SimulationDriver`, ``liemb view --simulate ROBOT``, :func:`view_simulation`), with
  pause, reset and the joints' transmitted forces (:func:`joint_wrench_arrows`) in the page;
* ROS topics (:mod:`liemb_ros.ros.view_node`: ``robot_description``, ``joint_states``,
  ``/tf`` for a floating base, the dynamics node's ``~/markers`` and the simulation node's
  ``~/contact_markers``), the RViz stand-in for a PyPI install;
* joint sliders in the page (:meth:`RobotView.add_sliders`) when nothing drives the robot.

The page is self-contained (viser serves its client from the wheel); the server listens on
``127.0.0.1`` unless told otherwise.  A mesh file that is missing or cannot be read is
drawn as a marker box of :data:`MISSING_MESH_SIZE` (its extent is unknown) and logged with
its path; a port that is taken or an address that cannot be bound raises
:class:`ViewError` naming it.
"""
import contextlib
import io
import math
import os
import socket
import threading
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import numpy as np

from .kinematics import forward_kinematics, link_twist
from .model import REPRESENTATIONS
from .model.urdf import rpy_to_matrix
from .resources import resolve_mesh

DEFAULT_HOST = '127.0.0.1'
DEFAULT_PORT = 8080
#: edge [m] of the box drawn for a mesh file that is missing or unreadable
MISSING_MESH_SIZE = 0.05
#: colour of geometry without a URDF material, and of missing meshes (RGB 0..1)
DEFAULT_COLOR = (0.6, 0.6, 0.62)
MISSING_COLOR = (1.0, 0.0, 1.0)
#: arrow colours of the dynamics node's markers: linear (blue), angular (orange), force (red)
LINEAR_COLOR, ANGULAR_COLOR, FORCE_COLOR = (0.1, 0.4, 1.0), (1.0, 0.6, 0.0), (0.9, 0.1, 0.1)
#: metres of arrow per m/s or rad/s (the dynamics node's default ``marker_scale``)
TWIST_SCALE = 0.2
#: contact force arrows: metres per newton and colour (as the simulation node's markers)
CONTACT_SCALE, CONTACT_COLOR = 0.001, (1.0, 0.4, 0.0)


class ViewError(RuntimeError):
    """The view cannot start: the address or port cannot be served."""


@dataclass
class Visual:
    """One ``<visual>`` of a link: its geometry in the link frame and its colour."""

    link: str
    kind: str                       # 'box' | 'cylinder' | 'sphere' | 'mesh' | 'missing'
    origin: np.ndarray              # (4, 4) visual frame in the link frame
    color: tuple                    # RGB 0..1
    size: tuple = ()                # box: (x, y, z); cylinder: (radius, length); sphere: (r,)
    path: str = None                # mesh: the resolved file
    scale: tuple = (1.0, 1.0, 1.0)
    problem: str = None             # why a mesh is drawn as a marker
    mesh: object = field(default=None, repr=False)


def _floats(text, n, default):
    if text is None:
        return default
    values = tuple(float(x) for x in text.split())
    return values if len(values) == n else default


def _origin(el):
    C = np.eye(4)
    if el is not None:
        C[:3, :3] = rpy_to_matrix(_floats(el.get('rpy'), 3, (0.0, 0.0, 0.0)))
        C[:3, 3] = _floats(el.get('xyz'), 3, (0.0, 0.0, 0.0))
    return C


def _color(material, named):
    if material is None:
        return DEFAULT_COLOR
    c = material.find('color')
    if c is not None and c.get('rgba'):
        return _floats(c.get('rgba'), 4, DEFAULT_COLOR + (1.0,))[:3]
    return named.get(material.get('name'), DEFAULT_COLOR)


def _load_mesh(path):
    import trimesh
    mesh = trimesh.load(path, force='mesh')
    if not isinstance(mesh, trimesh.Trimesh) or len(mesh.faces) == 0:
        raise ValueError('no triangles in it')
    return mesh


def read_visuals(xml, base_dir=None, package_dirs=(), log=print):
    """
    Return the :class:`Visual` list of URDF text ``xml`` (links without visuals: none).

    Mesh files are resolved (:func:`resolve_mesh`) and loaded with trimesh; one that is
    missing or unreadable becomes a ``'missing'`` visual (a marker box) and is logged with
    the link and the paths tried.
    """
    root = ET.fromstring(xml)
    named = {}
    for m in root.findall('material'):
        c = m.find('color')
        if c is not None and c.get('rgba'):
            named[m.get('name')] = _floats(c.get('rgba'), 4, DEFAULT_COLOR + (1.0,))[:3]
    out = []
    for link in root.findall('link'):
        name = link.get('name')
        for vis in link.findall('visual'):
            geom = vis.find('geometry')
            shape = None if geom is None else next(iter(geom), None)
            if shape is None:
                continue
            v = Visual(name, shape.tag, _origin(vis.find('origin')),
                       _color(vis.find('material'), named))
            if shape.tag == 'box':
                v.size = _floats(shape.get('size'), 3, (0.1, 0.1, 0.1))
            elif shape.tag == 'cylinder':
                v.size = (float(shape.get('radius', 0.05)), float(shape.get('length', 0.1)))
            elif shape.tag == 'sphere':
                v.size = (float(shape.get('radius', 0.05)),)
            elif shape.tag == 'mesh':
                filename = shape.get('filename', '')
                v.scale = _floats(shape.get('scale'), 3, (1.0, 1.0, 1.0))
                v.path, tried = resolve_mesh(filename, base_dir, package_dirs)
                if v.path is None:
                    hint = ''
                    if filename.startswith('package://'):
                        pkg = filename[len('package://'):].partition('/')[0]
                        hint = f'; --package-dir gives the folder holding package {pkg!r}'
                    v.problem = (f"mesh file {filename!r} of link {name!r} not found "
                                 f"(looked in: {', '.join(tried) or 'nowhere'}{hint})")
                else:
                    try:
                        v.mesh = _load_mesh(v.path)
                    except Exception as exc:   # any reader error: draw the marker instead
                        v.problem = f'mesh file {v.path!r} of link {name!r} unreadable: {exc}'
                if v.problem:
                    v.kind = 'missing'
                    log(f'liemb view: {v.problem}; drawn as a {MISSING_MESH_SIZE} m marker box')
            else:
                log(f'liemb view: link {name!r} has an unknown geometry <{shape.tag}>; '
                    'not drawn')
                continue
            out.append(v)
    return out


def _wxyz(R):
    """Return the unit quaternion (w, x, y, z) of a rotation matrix (Shepperd's method)."""
    tr = R[0, 0] + R[1, 1] + R[2, 2]
    if tr > 0:
        s = 2.0 * math.sqrt(tr + 1.0)
        return (0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s,
                (R[1, 0] - R[0, 1]) / s)
    i = int(np.argmax(np.diag(R)))
    j, k = (i + 1) % 3, (i + 2) % 3
    s = 2.0 * math.sqrt(max(1.0 + R[i, i] - R[j, j] - R[k, k], 1e-300))
    q = [0.0, 0.0, 0.0, 0.0]
    q[0] = (R[k, j] - R[j, k]) / s
    q[1 + i] = 0.25 * s
    q[1 + j] = (R[j, i] + R[i, j]) / s
    q[1 + k] = (R[k, i] + R[i, k]) / s
    return tuple(q)


def check_address(host, port):
    """
    Return a port that ``host`` can serve on (``port``, or a free one for 0).

    Raises :class:`ViewError` naming the address when the port is taken or the address
    is not one of this machine's.
    """
    try:
        with socket.socket(socket.AF_INET6 if ':' in host else socket.AF_INET) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server does
            s.bind((host, int(port)))
            return s.getsockname()[1]
    except OSError as exc:
        taken = exc.errno in (98, 48)  # EADDRINUSE (Linux, macOS)
        why = ('is in use by another program; choose another with --port' if taken else
               f'cannot be served ({exc.strerror}); give an address of this machine with '
               '--host')
        raise ViewError(f'liemb view: {host}:{port} {why}') from None


def twist_arrows(model, q, qd, link, representation, base_pose=None, scale=TWIST_SCALE):
    """
    Arrows of a link's twist as drawn by the view: ``(points (2, 2, 3), V (6,))``.

    ``points[0]`` is the angular arrow, ``points[1]`` the linear one, each ``(start,
    end)`` in world coordinates with ``scale`` metres per unit (module docstring for where
    each representation puts them); ``V = (ω, v)`` the twist in ``representation``.
    """
    V = link_twist(model, q, qd, link, representation, base_pose=base_pose)
    C = forward_kinematics(model, q, base_pose=base_pose)[model.link_index(link)]
    R = C[:3, :3]
    w, v = V[:3], V[3:]
    start = np.zeros(3) if representation == 'spatial' else C[:3, 3]
    if representation in ('body', 'mixed'):
        w = R @ w
    if representation == 'body':
        v = R @ v
    pts = np.array([[start, start + scale * w], [start, start + scale * v]])
    return pts, V


def joint_wrench_arrows(model, q, qd, qdd, base_pose=None, scale=0.1 * TWIST_SCALE):
    """
    Force arrows of the wrenches the joints transmit, as the dynamics node's markers draw them.

    For joint ``k`` (:func:`liemb_ros.joint_wrenches`, child body frame) an arrow from the
    origin of its child body along the force ``f`` turned into the world frame, ``scale``
    metres per newton.  Returns ``points`` (nq, 2, 3).
    """
    from .dynamics import joint_wrenches
    from .kinematics import body_poses
    W = joint_wrenches(model, q, qd, qdd, base_pose=base_pose)
    Cl = forward_kinematics(model, q, base_pose=base_pose)
    Cb = None
    pts = np.empty((model.nq, 2, 3))
    for k in range(model.nq):
        b = int(np.nonzero(model.q_index == k)[0][-1])   # the joint's last body
        name = model.body_names[b]
        if name in model.link_ids:   # a URDF joint's child link: the body frame
            C = Cl[model.link_ids[name]]
        else:                        # a virtual body of a planar joint
            Cb = body_poses(model, q, base_pose=base_pose) if Cb is None else Cb
            C = Cb[b]
        pts[k] = C[:3, 3], C[:3, 3] + scale * (C[:3, :3] @ W[k, 3:])
    return pts


class RobotView:
    """
    A robot in a viser scene in the browser; move it with :meth:`update`.

    Parameters
    ----------
    model : Model
    xml : str
        The URDF text (its visuals are drawn; the model's kinematics moves them).
    host, port : str, int
        Where to serve the page (``port=0``: a free port); :attr:`url` is the address.
    base_dir, package_dirs
        Where mesh files are looked for (:func:`resolve_mesh`).
    log : callable
        Receives one line per problem (missing meshes).

    Raises
    ------
    ViewError
        The address cannot be served (names host and port).

    """

    def __init__(self, model, xml, *, host=DEFAULT_HOST, port=DEFAULT_PORT, base_dir=None,
                 package_dirs=(), log=print, title=None):
        import viser

        self.model = model
        self.log = log
        self.visuals = read_visuals(xml, base_dir, package_dirs, log)
        port = check_address(host, port)
        with contextlib.redirect_stdout(io.StringIO()):   # viser's banner: we print the URL
            self.server = viser.ViserServer(host=host, port=port, label=title or model.name,
                                            verbose=False)
        # no share button: it would ask viser's relay on the internet for a public URL
        self.server.gui.configure_theme(show_share_button=False)
        self.host, self.port = host, self.server.get_port()
        self.q = model.neutral()
        self.qd = np.zeros(model.nv)
        self.base_pose = np.eye(4) if model.floating else None
        self.updates = 0
        self._lock = threading.Lock()
        self._build_scene()
        self._build_gui()
        self.update(self.q)

    @property
    def url(self):
        """Return the page's address, e.g. ``http://127.0.0.1:8080``."""
        host = '127.0.0.1' if self.host in ('0.0.0.0', '') else self.host
        return f'http://{host}:{self.port}'

    def _build_scene(self):
        scene = self.server.scene
        Cs = forward_kinematics(self.model, self.q, base_pose=self.base_pose)
        # frame the link origins and the visuals' centres, each with its size around it
        pos = [C[:3, 3] for C in Cs]
        for v in self.visuals:
            if v.link in self.model.link_names:
                centre = (Cs[self.model.link_index(v.link)] @ v.origin)[:3, 3]
                size = max(v.size) if v.size else MISSING_MESH_SIZE
                if v.mesh is not None:
                    size = float(np.max(np.abs(v.mesh.vertices))) * max(v.scale)
                pos += [centre - 0.5 * size, centre + 0.5 * size]
        pos = np.array(pos)
        centre = 0.5 * (pos.min(axis=0) + pos.max(axis=0))
        span = max(float(np.ptp(pos, axis=0).max()), 0.3)
        self.server.initial_camera.look_at = centre
        self.server.initial_camera.position = centre + span * np.array([0.9, 0.7, 0.45])
        size = 2.0 * math.ceil(span)
        scene.add_grid('/grid', width=size, height=size, cell_size=0.1, section_size=0.5)
        self.frames = {}
        for name in self.model.link_names:
            self.frames[name] = scene.add_frame(f'/robot/{name}', show_axes=False,
                                                axes_length=0.08, axes_radius=0.004)
        for k, v in enumerate(self.visuals):
            if v.link not in self.frames:
                self.log(f'liemb view: visual of unknown link {v.link!r} not drawn')
                continue
            node = f'/robot/{v.link}/visual_{k}'
            R, p = v.origin[:3, :3], v.origin[:3, 3]
            color = tuple(int(round(255 * c)) for c in v.color)
            if v.kind == 'box':
                scene.add_box(node, color=color, dimensions=v.size, wxyz=_wxyz(R), position=p)
            elif v.kind == 'cylinder':
                # along its local z, as in URDF (checked in the browser test)
                scene.add_cylinder(node, radius=v.size[0], height=v.size[1], color=color,
                                   wxyz=_wxyz(R), position=p)
            elif v.kind == 'sphere':
                scene.add_icosphere(node, radius=v.size[0], color=color, wxyz=_wxyz(R),
                                    position=p)
            elif v.kind == 'mesh':
                scene.add_mesh_simple(node, vertices=np.asarray(v.mesh.vertices) * v.scale,
                                      faces=np.asarray(v.mesh.faces), color=color,
                                      wxyz=_wxyz(R), position=p)
            else:
                scene.add_box(node, color=tuple(int(255 * c) for c in MISSING_COLOR),
                              dimensions=(MISSING_MESH_SIZE,) * 3, wireframe=True,
                              wxyz=_wxyz(R), position=p)
        self._twist_handle = None

    def _build_gui(self):
        gui = self.server.gui
        with gui.add_folder('View'):
            self.gui_frames = gui.add_checkbox('Link frames', initial_value=False)
            self.gui_twist = gui.add_checkbox('Twist arrows', initial_value=True)
            self.gui_representation = gui.add_dropdown(
                'Representation', options=REPRESENTATIONS, initial_value='hybrid')
            links = self.model.link_names
            self.gui_link = gui.add_dropdown('Twist of link', options=links,
                                             initial_value=_tip(self.model))
            self.gui_status = gui.add_markdown('')

        @self.gui_frames.on_update
        def _(_event):
            for frame in self.frames.values():
                frame.show_axes = self.gui_frames.value

        for handle in (self.gui_twist, self.gui_representation, self.gui_link):
            handle.on_update(lambda _event: self.update(self.q, self.qd, self.base_pose))

    def add_sliders(self):
        """Add one slider per joint (within its limits) that moves the robot."""
        gui = self.server.gui
        self.sliders = []
        with gui.add_folder('Joints'):
            for j, name in enumerate(self.model.joint_names):
                lo, hi = self.model.lower[j], self.model.upper[j]
                lo, hi = (lo, hi) if np.isfinite(lo) and np.isfinite(hi) else (-np.pi, np.pi)
                s = gui.add_slider(name, min=float(lo), max=float(hi),
                                   step=float(hi - lo) / 1000,
                                   initial_value=float(np.clip(self.q[j], lo, hi)))
                s.on_update(lambda _event: self.update(
                    np.array([h.value for h in self.sliders]), base_pose=self.base_pose))
                self.sliders.append(s)
        return self.sliders

    def update(self, q, qd=None, base_pose=None, in_limit=None):
        """
        Show configuration ``q`` (nq,) (and twist arrows from ``qd`` (nv,)).

        ``base_pose``: the floating base's (4, 4) pose; ``in_limit``: (nq,) bool, joints in
        a limit (default: those outside ``model.lower``/``model.upper``).
        """
        q = np.asarray(q, dtype=float)
        qd = np.zeros(self.model.nv) if qd is None else np.asarray(qd, dtype=float)
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(qd))):
            return
        with self._lock:
            self.q, self.qd = q.copy(), qd.copy()
            if base_pose is not None:
                self.base_pose = np.asarray(base_pose, dtype=float)
            Cs = forward_kinematics(self.model, q, base_pose=self.base_pose)
            with self.server.atomic():
                for C, frame in zip(Cs, self.frames.values()):
                    frame.position = C[:3, 3]
                    frame.wxyz = _wxyz(C[:3, :3])
                self._show_twist(q, qd)
            self._show_status(q, in_limit)
            self.updates += 1

    def _show_twist(self, q, qd):
        rep, link = self.gui_representation.value, self.gui_link.value
        if not self.gui_twist.value:
            if self._twist_handle is not None and self._twist_handle.visible:
                self._twist_handle.visible = False
            self._twist_v = None
            return
        pts, self._twist_v = twist_arrows(self.model, q, qd, link, rep, self.base_pose)
        if self._twist_handle is not None and np.array_equal(pts, self._twist_points):
            if not self._twist_handle.visible:
                self._twist_handle.visible = True
            return   # unchanged (paused): not sent again
        self._twist_points = pts
        self._twist_handle = self.server.scene.add_arrows(
            '/twist', pts, np.array([ANGULAR_COLOR, LINEAR_COLOR]), shaft_radius=0.004,
            head_radius=0.01, head_length=0.02)

    def _show_status(self, q, in_limit):
        lines = []
        if self._twist_v is not None:
            V = self._twist_v
            lines.append(f'**{self.gui_link.value}** ({self.gui_representation.value})  \n'
                         f'ω = {np.array2string(V[:3], precision=3)} rad/s  \n'
                         f'v = {np.array2string(V[3:], precision=3)} m/s')
        if in_limit is None:
            in_limit = (q < self.model.lower) | (q > self.model.upper)
        names = [n for n, hit in zip(self.model.joint_names, in_limit) if hit]
        lines.append('in a limit: ' + (', '.join(names) if names else 'none'))
        self.set_status('\n\n'.join(lines))

    def set_status(self, text, key='view'):
        """Show ``text`` (markdown) under ``key`` in the page's status area."""
        self._status = getattr(self, '_status', {})
        self._status[key] = text
        self.gui_status.content = '\n\n'.join(self._status.values())

    def _keep_set(self, folder, name, count):
        """
        Return whether the scene node ``folder/name`` is to be drawn (``count`` > 0).

        With nothing to draw, the node is removed (once, when it was shown).
        """
        shown = self.__dict__.setdefault('_shown_sets', set())
        key = f'{folder}/{name}'
        if count == 0:
            if key in shown:
                shown.discard(key)
                self.server.scene.remove_by_name(key)
            return False
        shown.add(key)
        return True

    def set_arrows(self, name, points, colors, shaft_radius=0.004, head_radius=0.01,
                   head_length=0.02):
        """Show arrows ``points`` (N, 2, 3) (start, end; world) with ``colors`` (N, 3) 0..1."""
        points = np.asarray(points, dtype=float).reshape(-1, 2, 3)
        if not self._keep_set('/markers', name, len(points)):
            return
        self.server.scene.add_arrows(f'/markers/{name}', points,
                                     np.asarray(colors, dtype=float).reshape(-1, 3),
                                     shaft_radius=shaft_radius, head_radius=head_radius,
                                     head_length=head_length)

    def set_points(self, name, centres, colors, size=0.01):
        """Show round dots of diameter ``size`` [m] at ``centres`` (N, 3) (contact points)."""
        centres = np.asarray(centres, dtype=float).reshape(-1, 3)
        if not self._keep_set('/points', name, len(centres)):
            return
        self.server.scene.add_point_cloud(
            f'/points/{name}', centres, np.asarray(colors, dtype=float).reshape(-1, 3),
            point_size=size, point_shape='circle', precision='float32')

    def close(self):
        """Stop serving the page."""
        with contextlib.redirect_stdout(io.StringIO()):
            self.server.stop()


def _tip(model):
    from .demo import sample_tip
    return sample_tip(model)


def gravity_hold(model, amplitude=None, frequency=0.5):
    """
    Return ``tau(t, q, base_pose=None)``: gravity compensation plus ``amplitude sin(2π f t)``.

    The torque the demo applies (the dynamics node's compensation and the simulation node's
    test torque), on the ``nq`` joints (a floating base's own six entries are not actuated);
    ``amplitude`` per joint defaults to :func:`liemb_ros.demo.test_torque`.
    """
    from .demo import test_torque
    from .dynamics import gravity_torques
    amp = test_torque(model) if amplitude is None else np.broadcast_to(amplitude, (model.nq,))
    skip = model.nv - model.nq

    def tau(t, q, base_pose=None):
        g = gravity_torques(model, q, base_pose=base_pose)[skip:]
        return g + amp * math.sin(2 * math.pi * frequency * t)
    return tau


class SimulationDriver:
    """
    Step a :class:`~liemb_ros.simulation.Simulator` in real time and show it in a view.

    A thread advances the simulation to ``speed`` times the wall-clock time elapsed (while
    not paused), ``rate`` times a second, in chunks of ``chunk`` seconds with the torque
    ``torque(t, q, base_pose)`` (nq,) held over each chunk (None: zero), and shows every
    frame.  The page gets *Pause* and *Reset* and a status line (simulation time, energy
    balance error).  An error while stepping (a diverging simulation, a torque of the wrong
    shape) stops stepping and is shown in the page and in :attr:`error`.
    """

    def __init__(self, sim, view, torque=None, rate=30.0, speed=1.0, chunk=0.01):
        self.sim, self.view, self.torque = sim, view, torque
        self.rate, self.speed, self.chunk = float(rate), float(speed), float(chunk)
        self.error = None
        self._stop = threading.Event()
        self._thread = None
        gui = view.server.gui
        with gui.add_folder('Simulation'):
            self.gui_pause = gui.add_checkbox('Pause', initial_value=False)
            self.gui_reset = gui.add_button('Reset')
            self.gui_wrenches = gui.add_checkbox('Joint wrenches', initial_value=False)
        self._reset_request = False

        @self.gui_reset.on_click
        def _(_event):
            self._reset_request = True

    def start(self):
        """Start stepping in a thread; returns self."""
        self._thread = threading.Thread(target=self._run, name='liemb-view-sim', daemon=True)
        self._thread.start()
        return self

    def stop(self):
        """Stop stepping (waits for the thread)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def accelerations(self, applied):
        """
        Return ``q̈`` (nv,) of the state under the ``applied`` joint torques (nq,).

        With the simulation's damping, friction and armature (not the limit springs).
        """
        from .dynamics import forward_dynamics
        sim, model = self.sim, self.sim.model
        v = sim.qd[model.nv - model.nq:]
        tau = np.zeros(model.nv)
        tau[model.nv - model.nq:] = (applied - sim.damping * v
                                     - sim.friction * np.tanh(v / sim.friction_velocity))
        armature = sim.armature if np.any(sim.armature) else None
        return forward_dynamics(model, sim.q, sim.qd, tau, base_pose=sim.base_pose,
                                armature=armature)

    def show_contacts(self):
        """
        Draw the simulation's ground contacts; return how many there are.

        A magenta dot at each contact point and an arrow of the force on the robot,
        :data:`CONTACT_SCALE` metres per newton (the simulation node's contact markers).
        """
        contacts = self.sim.contacts() if getattr(self.sim, 'contact', None) else []
        points = [c.point for c in contacts]
        self.view.set_points('contacts', points, [MISSING_COLOR] * len(points), size=0.02)
        self.view.set_arrows('contact_forces',
                             [(c.point, c.point + CONTACT_SCALE * c.force) for c in contacts],
                             [CONTACT_COLOR] * len(points))
        return len(contacts)

    def _show_wrenches(self, d):
        if not self.gui_wrenches.value:
            self.view.set_arrows('joint_wrenches', [], [])
            return
        sim = self.sim
        try:
            pts = joint_wrench_arrows(sim.model, sim.q, sim.qd,
                                      self.accelerations(d['applied_torque']), sim.base_pose)
        except ValueError:   # a singular mass matrix: nothing to draw this frame
            return
        self.view.set_arrows('joint_wrenches', pts, np.tile(FORCE_COLOR, (len(pts), 1)))

    def _run(self):
        sim, period = self.sim, 1.0 / self.rate
        has_contact = getattr(sim, 'contact', None) is not None
        n = max(1, int(round(self.chunk / sim.dt)))
        wall0, t0 = time.monotonic(), sim.t
        while not self._stop.is_set():
            frame_start = time.monotonic()
            if self._reset_request:
                self._reset_request = False
                sim.reset()
                self.error = None
                wall0, t0 = frame_start, sim.t
            if self.gui_pause.value or self.error is not None:
                wall0, t0 = frame_start, sim.t
            else:
                target = t0 + self.speed * (frame_start - wall0)
                try:
                    while (sim.t < target - 0.5 * sim.dt
                           and time.monotonic() - frame_start < period):
                        tau = (None if self.torque is None else
                               self.torque(sim.t, sim.q, sim.base_pose))
                        sim.step(tau, n)
                except Exception as exc:   # SimulationError, a bad torque: show, stop stepping
                    self.error = f'{type(exc).__name__}: {exc}'
                if sim.t < target - 0.2:   # slower than real time: do not run after it
                    wall0, t0 = frame_start, sim.t
            d = sim.diagnostics()
            self.view.update(sim.q, sim.qd, sim.base_pose, in_limit=d['in_limit'])
            self._show_wrenches(d)
            n_contacts = self.show_contacts()
            state = ('paused' if self.gui_pause.value else
                     f'stopped: {self.error}' if self.error else 'running')
            self.view.set_status(f"simulation t = {sim.t:.2f} s ({state})  \n"
                                 f"energy balance error {d['energy_balance_error']:.2e} J"
                                 + (f'  \ncontacts: {n_contacts}' if has_contact else ''),
                                 key='sim')
            self._stop.wait(max(0.0, period - (time.monotonic() - frame_start)))


def view_simulation(sim, *, torque=None, host=DEFAULT_HOST, port=DEFAULT_PORT, xml=None,
                    package_dirs=(), rate=30.0, speed=1.0, log=print):
    """
    Show a running :class:`~liemb_ros.simulation.Simulator` in the browser; return the driver.

    The API behind ``liemb view --simulate``: ``driver = view_simulation(sim)``, open
    ``driver.view.url``; ``driver.stop()`` and ``driver.view.close()`` end it.  ``xml``:
    the URDF text (default: read from ``sim.model.source``); ``torque(t, q, base_pose)`` as in
    :class:`SimulationDriver` (e.g. :func:`gravity_hold`); ``package_dirs``: where
    ``package://`` meshes are (:func:`resolve_mesh`).
    """
    model = sim.model
    base_dir = None
    if xml is None:
        from .model.urdf import read_urdf_file
        xml = read_urdf_file(model.source)
        base_dir = os.path.dirname(os.path.abspath(model.source))
    view = RobotView(model, xml, host=host, port=port, base_dir=base_dir,
                     package_dirs=package_dirs, log=log)
    return SimulationDriver(sim, view, torque=torque, rate=rate, speed=speed).start()


def add_arguments(parser):
    """Arguments of ``liemb view``."""
    parser.add_argument('robot', nargs='?',
                        help='URDF or xacro file or shipped robot name (with --simulate: '
                             'default liemb_arm7; from ROS: default the robot_description '
                             'topic)')
    parser.add_argument('--simulate', action='store_true',
                        help='run a Simulator in this process and show it (no ROS needed)')
    parser.add_argument('--floating-base', action='store_true',
                        help='make the root link a floating SE(3) base (--simulate, --sliders)')
    parser.add_argument('--contact', action='store_true',
                        help="--simulate: ground contact of the URDF's collision geometry with "
                             'the plane z = 0 (liemb_ros.contact)')
    parser.add_argument('--sliders', action='store_true',
                        help='no simulation and no ROS: move the joints with sliders')
    parser.add_argument('--host', default=DEFAULT_HOST,
                        help=f'address to serve the page on (default {DEFAULT_HOST}; '
                             '0.0.0.0 for other machines)')
    parser.add_argument('--port', type=int, default=DEFAULT_PORT,
                        help=f'port of the page (default {DEFAULT_PORT}; 0: a free one)')
    parser.add_argument('--package-dir', action='append', default=[], metavar='DIR',
                        help='where package:// meshes are looked for (DIR/PKG/... or a '
                             'folder named PKG); repeatable')
    parser.add_argument('--xacro-args', metavar="'NAME:=VALUE ...'",
                        help='arguments of a xacro robot')
    parser.add_argument('--markers', action='append', metavar='TOPIC',
                        help='from ROS: a MarkerArray topic whose arrows and spheres are drawn; '
                             'repeatable (default: /liemb_dynamics/markers and '
                             '/liemb_simulation/contact_markers)')
    parser.add_argument('--torque', choices=('gravity', 'zero'), default='gravity',
                        help='--simulate: gravity compensation plus a test torque (default), '
                             'or no torque (the robot falls)')
    parser.add_argument('--amplitude', type=float, default=0.05,
                        help='--simulate: test torque amplitude as a fraction of each '
                             "joint's effort limit (default 0.05), at 0.5 Hz")
    parser.add_argument('--speed', type=float, default=1.0,
                        help='--simulate: simulated seconds per wall-clock second')
    parser.add_argument('--duration', type=float,
                        help='stop after this many seconds (default: until Ctrl-C)')


def _wait(duration):
    end = math.inf if duration is None else time.monotonic() + duration
    try:
        while time.monotonic() < end:
            time.sleep(min(0.2, max(0.0, end - time.monotonic())))
    except KeyboardInterrupt:
        pass


def run(args):
    """Run ``liemb view``; return the exit code."""
    import sys

    from . import resources
    from .model import URDFError, load_urdf_string
    if not (args.simulate or args.sliders):
        from .ros.view_node import run_view
        return run_view(args)
    try:
        xml, path = resources.read_robot_description(args.robot or 'liemb_arm7',
                                                     args.xacro_args)
        model = load_urdf_string(xml, source=path, floating_base=args.floating_base or None)
    except (FileNotFoundError, URDFError) as exc:
        print(f'liemb view: {exc}', file=sys.stderr)
        return 2
    dirs = [os.path.abspath(d) for d in args.package_dir]
    try:
        view = RobotView(model, xml, host=args.host, port=args.port,
                         base_dir=os.path.dirname(os.path.abspath(path)), package_dirs=dirs,
                         log=lambda line: print(line, file=sys.stderr))
    except ViewError as exc:
        print(exc, file=sys.stderr)
        return 2
    driver = None
    if args.simulate:
        from .demo import sample_configuration
        from .simulation import Simulator
        contact = None
        if args.contact:
            from .contact import ContactModel
            try:
                contact = ContactModel(model, xml, urdf_path=path)
            except ValueError as exc:
                print(f'liemb view: no ground contact for {model.name}: {exc}', file=sys.stderr)
                view.close()
                return 2
        base = None
        if model.floating:   # stand it above the ground
            base = np.eye(4)
            base[2, 3] = 0.5
        sim = Simulator(model, q0=sample_configuration(model), base_pose=base, contact=contact)
        torque = (gravity_hold(model, args.amplitude * np.where(
            np.isfinite(model.effort_limit) & (model.effort_limit > 0),
            model.effort_limit, 10.0)) if args.torque == 'gravity' else None)
        driver = SimulationDriver(sim, view, torque=torque, speed=args.speed).start()
    else:
        view.add_sliders()
    print(f'liemb view: {model.name} at {view.url} (open it in a browser; Ctrl-C stops)',
          flush=True)
    _wait(args.duration)
    if driver is not None:
        driver.stop()
    view.close()
    return 0
