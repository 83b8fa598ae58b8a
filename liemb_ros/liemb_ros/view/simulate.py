"""
The simulation feed of the view: a :class:`~liemb_ros.sim.simulator.Simulator` in real time.

:class:`SimulationDriver` steps the simulation in a thread and shows every frame in a
:class:`~.scene.RobotView` (with pause, reset, the joints' transmitted forces and the
ground contacts); :func:`view_simulation` sets both up (``liemb view --simulate``);
:func:`gravity_hold` is the demo's torque (gravity compensation plus a test torque).
"""
import math
import os
import threading
import time

import numpy as np

from .address import DEFAULT_HOST, DEFAULT_PORT
from .scene import FORCE_COLOR, RobotView, joint_wrench_arrows
from .visuals import MISSING_COLOR

#: contact force arrows: metres per newton and colour (as the simulation node's markers)
CONTACT_SCALE, CONTACT_COLOR = 0.001, (1.0, 0.4, 0.0)


def gravity_hold(model, amplitude=None, frequency=0.5):
    """
    Return ``tau(t, q, base_pose=None)``: gravity compensation plus ``amplitude sin(2π f t)``.

    The torque the demo applies (the dynamics node's compensation and the simulation node's
    test torque), on the ``nq`` joints (a floating base's own six entries are not actuated);
    ``amplitude`` per joint defaults to :func:`liemb_ros.sim.scenario.test_torque`.
    """
    from ..sim.scenario import test_torque
    from ..core.dynamics import gravity_torques
    amp = test_torque(model) if amplitude is None else np.broadcast_to(amplitude, (model.nq,))
    skip = model.nv - model.nq

    def tau(t, q, base_pose=None):
        g = gravity_torques(model, q, base_pose=base_pose)[skip:]
        return g + amp * math.sin(2 * math.pi * frequency * t)
    return tau


class SimulationDriver:
    """
    Step a :class:`~liemb_ros.sim.simulator.Simulator` in real time and show it in a view.

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
        from ..core.dynamics import forward_dynamics
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
                    package_dirs=(), allow_paths=(), rate=30.0, speed=1.0, log=print):
    """
    Show a running :class:`~liemb_ros.sim.simulator.Simulator` in the browser; return the driver.

    The API behind ``liemb view --simulate``: ``driver = view_simulation(sim)``, open
    ``driver.view.url``; ``driver.stop()`` and ``driver.view.close()`` end it.  ``xml``:
    the URDF text (default: read from ``sim.model.source``); ``torque(t, q, base_pose)`` as in
    :class:`SimulationDriver` (e.g. :func:`gravity_hold`); ``package_dirs``: where
    ``package://`` meshes are, ``allow_paths``: other folders meshes may be read from
    (:func:`.visuals.find_mesh`).
    """
    model = sim.model
    base_dir = None
    if xml is None:
        from ..core.model.urdf import read_urdf_file
        xml = read_urdf_file(model.source)
        base_dir = os.path.dirname(os.path.abspath(model.source))
    view = RobotView(model, xml, host=host, port=port, base_dir=base_dir,
                     package_dirs=package_dirs, allow_paths=allow_paths, log=log)
    return SimulationDriver(sim, view, torque=torque, rate=rate, speed=speed).start()
