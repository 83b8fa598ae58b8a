"""
The robot in a viser scene in the browser: :class:`RobotView` and what it draws.

:class:`RobotView` serves the page (:func:`~.address.check_address` first, so a bad port, a
taken port or a foreign address raises :class:`ViewError` naming it), builds the scene
from the URDF's visuals (:mod:`.visuals`) with one frame per link, the view's controls (link
frames, twist arrows, representation, link) and a status area, and moves the frames to
each configuration given to :meth:`RobotView.update` (rotations as the unit quaternions
of :func:`liemb_ros.core.lie.quaternion.from_matrix`).  Mesh files are read in a thread of the
view's own and drawn as each arrives, so neither the page nor the caller (a ROS callback)
waits for them.  :func:`~.address.page_address` (:mod:`.address`) says where the page is
and warns when it is open to the network.  :func:`twist_arrows` and
:func:`joint_wrench_arrows` compute the arrows it and the simulation feed draw.
"""
import contextlib
import io
import math
import threading

import numpy as np

from ..core.kinematics import forward_kinematics, link_twist
from ..core.lie import quaternion
from ..core.model import REPRESENTATIONS
from .address import (  # noqa: F401 (importable from here as before)
    DEFAULT_HOST, DEFAULT_PORT, ViewError, check_address, check_port, page_address)
from .visuals import MISSING_COLOR, MISSING_MESH_SIZE, load_meshes, read_visuals

#: arrow colours of the dynamics node's markers: linear (blue), angular (orange), force (red)
LINEAR_COLOR, ANGULAR_COLOR, FORCE_COLOR = (0.1, 0.4, 1.0), (1.0, 0.6, 0.0), (0.9, 0.1, 0.1)
#: metres of arrow per m/s or rad/s (the dynamics node's default ``marker_scale``)
TWIST_SCALE = 0.2


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
    from ..core.dynamics import joint_wrenches
    from ..core.kinematics import body_poses
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
    base_dir, package_dirs, allow_paths
        Where mesh files are looked for and may be read (:func:`.visuals.find_mesh`:
        ``base_dir`` the URDF's folder, None for a description without one).
    log : callable
        Receives one line per problem (missing, refused or unreadable meshes).
    quote : callable
        Quotes text of the description in the log (``repr``;
        :func:`liemb_ros.ros.conversions.shown` for a description from a message).

    Raises
    ------
    ViewError
        The address cannot be served (names host and port).

    """

    def __init__(self, model, xml, *, host=DEFAULT_HOST, port=DEFAULT_PORT, base_dir=None,
                 package_dirs=(), allow_paths=(), log=print, quote=repr, title=None):
        import viser

        self.model = model
        self.log = log
        self.visuals = read_visuals(xml, base_dir, package_dirs, log, allow_paths, quote,
                                    load=False)
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
        self._status, self._status_lock = {}, threading.Lock()
        self._closed = threading.Event()
        self._build_scene()
        self._build_gui()
        self.update(self.q)
        self.meshes_done = threading.Event()
        self._loader = threading.Thread(target=self._load_meshes, args=(quote,),
                                        name='liemb-view-meshes', daemon=True)
        self._loader.start()

    @property
    def url(self):
        """Return the address that opens the page here, e.g. ``http://127.0.0.1:8080``."""
        return page_address(self.host, self.port)[0]

    def announce(self, what):
        """
        Print where the page of ``what`` (the robot's name and origin) is, on stdout.

        ``liemb view: WHAT at URL (...)``, and a warning line through the log when the page
        is open to the network (:func:`page_address`).
        """
        url, where, warning = page_address(self.host, self.port)
        where = f'{where}; ' if where else ''
        print(f'liemb view: {what} at {url} ({where}open it in a browser; Ctrl-C stops)',
              flush=True)
        if warning:
            self.log(f'liemb view: warning: {warning}')

    def _load_meshes(self, quote):
        """Read the mesh files and draw each as it arrives (the loader thread)."""
        pending = [v for v in self.visuals if v.kind == 'mesh']
        self._meshes = [0, len(pending)]
        self._show_meshes()

        def drawn(k, v):
            with self._lock:
                if self._closed.is_set():
                    return
                self._draw_visual(k, v)
                self._meshes[0] += 1
                self._show_meshes()
        try:
            if pending:
                load_meshes(self.visuals, self.log, quote, done=drawn, stop=self._closed)
                if not self._closed.is_set():
                    with self._lock:
                        self._frame_camera()
        except Exception as exc:   # the view goes on without the rest of the meshes
            self.log(f'liemb view: reading the mesh files stopped: {type(exc).__name__}: {exc}')
        finally:
            self.meshes_done.set()

    def _show_meshes(self):
        done, total = self._meshes
        if not any(v.filename is not None for v in self.visuals):
            return
        if done < total:
            self.set_status(f'meshes: reading {done} of {total}', key='meshes')
            return
        drawn = sum(v.mesh is not None for v in self.visuals)
        markers = sum(v.kind == 'missing' and v.filename is not None for v in self.visuals)
        text = f'meshes: {drawn} drawn'
        if markers:
            text += f', {markers} as magenta markers (see the log)'
        self.set_status(text, key='meshes')

    def _frame_camera(self):
        """
        Point new clients' camera at the robot: link origins and visuals, each with its size.

        Returns the span [m] framed.
        """
        Cs = forward_kinematics(self.model, self.q, base_pose=self.base_pose)
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
        return span

    def _build_scene(self):
        scene = self.server.scene
        span = self._frame_camera()   # framed again when the meshes are read
        size = 2.0 * math.ceil(span)
        scene.add_grid('/grid', width=size, height=size, cell_size=0.1, section_size=0.5)
        self.frames = {}
        for name in self.model.link_names:
            self.frames[name] = scene.add_frame(f'/robot/{name}', show_axes=False,
                                                axes_length=0.08, axes_radius=0.004)
        for k, v in enumerate(self.visuals):
            if v.link not in self.frames:
                self.log(f'liemb view: visual of unknown link {v.link!r} not drawn')
            elif v.kind != 'mesh':   # meshes: when read
                self._draw_visual(k, v)
        self._twist_handle = None

    def _draw_visual(self, k, v):
        """Add visual ``k`` to the scene under its link's frame."""
        if v.link not in self.frames:
            return
        scene = self.server.scene
        node = f'/robot/{v.link}/visual_{k}'
        wxyz, p = quaternion.from_matrix(v.origin[:3, :3]), v.origin[:3, 3]
        color = tuple(int(round(255 * c)) for c in v.color)
        if v.kind == 'box':
            scene.add_box(node, color=color, dimensions=v.size, wxyz=wxyz, position=p)
        elif v.kind == 'cylinder':
            # along its local z, as in URDF (checked in the browser test)
            scene.add_cylinder(node, radius=v.size[0], height=v.size[1], color=color,
                               wxyz=wxyz, position=p)
        elif v.kind == 'sphere':
            scene.add_icosphere(node, radius=v.size[0], color=color, wxyz=wxyz, position=p)
        elif v.kind == 'mesh':
            scene.add_mesh_simple(node, vertices=np.asarray(v.mesh.vertices) * v.scale,
                                  faces=np.asarray(v.mesh.faces), color=color,
                                  wxyz=wxyz, position=p)
        else:
            scene.add_box(node, color=tuple(int(255 * c) for c in MISSING_COLOR),
                          dimensions=(MISSING_MESH_SIZE,) * 3, wireframe=True,
                          wxyz=wxyz, position=p)

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
            wxyz = quaternion.from_matrix(Cs[:, :3, :3])
            with self.server.atomic():
                for C, w, frame in zip(Cs, wxyz, self.frames.values()):
                    frame.position = C[:3, 3]
                    frame.wxyz = w
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
        """Show ``text`` (markdown) under ``key`` in the page's status area (any thread)."""
        with self._status_lock:
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
        """Stop serving the page (and reading mesh files: the one being read is dropped)."""
        with self._lock:
            self._closed.set()
        with contextlib.redirect_stdout(io.StringIO()):
            self.server.stop()


def _tip(model):
    from ..sim.scenario import sample_tip
    return sample_tip(model)
