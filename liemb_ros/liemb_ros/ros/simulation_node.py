"""
``simulation_node``: a URDF robot simulated with the Lie group integrators.

Reads the robot like the dynamics node (``robot_description`` parameter, ``urdf_path``
URDF / xacro file / shipped robot name, or the transient-local ``robot_description``
topic) and republishes its URDF on the latched ``robot_description`` topic, so RViz and the
dynamics node need nothing else.  Steps :class:`liemb_ros.sim.Simulator` (integrator, step,
joint or absolute coordinates, SE(3) / SO(3)xR3 / tailored update, damping, initial state:
all parameters of ``config/simulation.yaml``) at ``real_time_factor`` times wall-clock
speed, and publishes:

* ``joint_states`` (``sensor_msgs/JointState``: position, velocity, applied effort, after
  the effort limits);
* ``/tf`` (every link, parent link -> child link, and ``world_frame`` -> root link: the
  floating base pose) and ``/tf_static`` (links fixed to their parent); with
  ``publish_link_tf: false`` (robot_state_publisher runs) only the world -> root transform,
  so no frame is published twice, and never a frame to itself;
* ``~/odom`` (``nav_msgs/Odometry``, floating base only: pose, body-fixed twist);
* ``/clock`` (``rosgraph_msgs/Clock``) when ``publish_clock`` or ``use_sim_time`` is true:
  stamps are then simulation time, else wall-clock time.  The node's own timers run on the
  steady clock, so with ``use_sim_time`` it drives everyone else's time and never waits
  for its own ``/clock``;
* ``/diagnostics``: simulation time, real-time factor, energy, energy balance residual,
  constraint violation (absolute coordinates), integrator and step.

Applied torques: ``~/effort_command`` (``std_msgs/Float64MultiArray`` in
``command_joints`` order, what a ros2_control effort controller takes) and ``~/effort``
(``sensor_msgs/JointState`` effort by name, joints the model does not know ignored);
both are held until ``effort_timeout`` seconds pass without a new command, then drop to
zero; ``~/reset`` clears them.

The simulated robot keeps its URDF joint position limits (stiff one-sided spring-dampers,
``joint_limits``, ``limit_time_constant``), clamps the applied torque to ``<limit effort>``
(``effort_limits``) and has viscous and regularised Coulomb friction from ``<dynamics
damping friction>`` (``damping``, ``friction``, ``friction_velocity``): see
:mod:`liemb_ros.sim.simulator`.  External wrenches: ``~/external_wrench/<link>``
(``geometry_msgs/WrenchStamped``, the link name made a topic token: ``topic_token``) for
every moving link (or ``wrench_links``); ``header.frame_id`` empty or the link: moment and
force in the link frame, the force at its origin; the ``world_frame``: world axes, about
the link frame's origin.  Each is held for ``wrench_timeout`` seconds (0: until the next
message), so a controller can be pushed and tested; ``~/reset`` removes them.

Plausibility (issue 28, :mod:`liemb_ros.sim._plausible`): a wrench beyond 100 times the
robot's weight (a moment: at the robot's size), an effort beyond that moment, a velocity
command beyond the rate at which a point at the robot's size moves at 1000 m/s, a position
command farther than that rate covers in a second, a test torque beyond the effort bound
(also when set at run time) are dropped or refused with the bound; ``/diagnostics`` counts
them (``dropped``) and quotes the last (``last_dropped``; text from messages through
:func:`~liemb_ros.ros.conversions.shown`).  Every state is checked before it is published
(:meth:`Simulator.check`: finite, speeds, energy books, contact depth): an absurd one is
never sent; the simulation stops with the reason instead, naming the energy each wrench
put in, the inputs acting at the last plausible state and where the applied torques came
from (``~/effort_command``, the drive, the posture hold, the test torque).  Every
callback runs inside the node's error handling: no message ends the node.

Ground contact (``contact: true``; issue 21, :mod:`liemb_ros.sim.contact`): the URDF's
``<collision>`` geometry (of ``contact_links``, default every moving link that has some)
against the planes ``contact_planes`` (four numbers per plane: normal and offset,
``n·x = d``, a normal of any length scaling the equation; default the ground ``z = 0``),
a compliant normal force from
``contact_time_constant`` and ``contact_damping_ratio`` (or ``contact_stiffness`` /
``contact_damping`` in N/m, N s/m), regularised Coulomb friction ``contact_friction``
(negative: the URDF's ``<gazebo><mu1>``, else 1) with ``contact_friction_velocity``;
meshes per ``contact_mesh`` (``points`` | ``box`` | ``sphere``, ``contact_mesh_points``).
Published with every joint state: ``~/contacts`` (``geometry_msgs/WrenchStamped``, one
message per link in contact: ``header.frame_id`` the link, the total contact wrench on
it in the link frame about its origin, as a force-torque sensor there would read it) and
``~/contact_markers`` (``visualization_msgs/MarkerArray`` in the world frame: an arrow
per contact along its force, 1 cm per ``contact_marker_scale`` N, and a sphere at the
contact point); ``/diagnostics`` counts the contacts and their springs' energy.  Geometry
or parameters that cannot work (a missing mesh, a NaN ``<mu1>``) end the process with
the link named, like any other bad parameter.  A floating base starts at
``initial_base_pose`` (x, y, z and optionally roll, pitch, yaw).  ``joint_hold_stiffness``
and ``joint_hold_damping`` add a PD posture hold towards the initial positions to every
joint at every step (the motor drivers of a legged robot: ``liemb launch stand``, where
the dynamics node adds the gravity compensation); ``joint_states`` reports it in the effort.

Velocity and position commands (fixed-base robots): ``~/velocity_command`` and
``~/position_command`` (``std_msgs/Float64MultiArray`` in ``command_joints`` order, what
ros2_control's JointGroupVelocityController / JointGroupPositionController take) engage a
joint drive that the simulated robot obeys through its dynamics: computed torque
``τ = ID(q, q̇, K_p (q_ref - q) + K_d (q̇_ref - q̇)) + D q̇ + F tanh(q̇/v_s)`` (inverse dynamics
of the model, gravity and Coriolis terms included, plus the joint damping and friction the
simulation applies; clamped by the effort limits like any torque, except the friction
term: it cancels the simulation's friction exactly, which is switched off while the drive
acts, so a light joint does not chatter where its velocity reverses), with
``K_p = ω²``, ``K_d = 2ω``, ``ω = 2π drive_frequency`` (critically damped).  A velocity
command sets ``q̇_ref`` and integrates ``q_ref`` from the state where the drive engaged
(joint velocities then follow the command exactly once the transient of ``1/ω`` has
passed); a position command sets ``q_ref`` with ``q̇_ref = 0`` (a PD drive).  A command
older than ``effort_timeout`` holds the reference where it is (the robot stops and stays);
an effort command hands the robot back to the efforts, ``~/reset`` clears the drive.  The
drive torque is what ``joint_states`` reports as effort.  A test torque
``amplitude * sin(2 pi f t)`` per joint (``test_torque_*``) is added on top.  Services
(``std_srvs``): ``~/reset`` (Trigger), ``~/pause`` (SetBool), ``~/step`` (Trigger: one
publish period while paused).  Lock-step (``lockstep: true``): the simulation publishes a
state and advances one publish period only when a command (``~/effort_command``,
``~/effort``, a drive command) has answered it, so a controller that answers every state
(the dynamics node with ``publish_rate: 0``) closes the same loop whatever DDS and the CPU
do: the run is reproducible message for message, and a slow controller slows the
simulation instead of seeing late states; ``real_time_factor`` still caps the pace, and
``lockstep_timeout`` bounds the wait (missed answers are counted in ``/diagnostics``).
Commands are held without ``effort_timeout`` then.  A diverging simulation stops stepping
and says why in the log and in ``/diagnostics``; ``~/reset`` starts it again.  A parameter
or file that cannot work (missing file, wrong number of initial positions, NaN) ends the
process with exit code 1 and the reason; run-time parameter changes are checked as a
whole before any is applied.
"""
import sys
import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import WrenchStamped
from rcl_interfaces.msg import SetParametersResult
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import SetBool, Trigger

from ..core.dynamics import inverse_dynamics
from ..core.kinematics import forward_kinematics
from .common import (STEADY, ConfigError, Preparation, RobotSource, declare, guarded, run,
                     settle_heap, topic_token)
from .conversions import shown
from .simulation_output import RELIABLE, Dropped, SimulationOutputs
from . import simulation_parameters as parameters
from .simulation_stepping import SimulationStepping

# The node owns its parts: its outputs (simulation_output.py: the publishers and what a
# state publishes, /diagnostics), its stepping (simulation_stepping.py: the commands, drive,
# wrenches and the real-time or lock-step loop) and the messages it dropped; its
# parameters are simulation_parameters.py's table and the functions that read it (the
# Simulator they describe, the checks of a run-time change).  This module is the robot's
# set-up, the subscriptions, the services and main().

#: streamed commands: a queue of old ones would only delay the newest
LATEST = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE)


class SimulationNode(Node):
    """Thin ROS adapter over :class:`liemb_ros.sim.simulator.Simulator`."""

    NAME = 'liemb_simulation'

    def __init__(self, **kwargs):
        super().__init__(self.NAME, **kwargs)
        self.source = RobotSource(self, self._on_robot)
        declare(self, parameters.parameter_table())
        self._candidate = self._preparing = None
        parameters.check_numbers(self.p, parameters.FINITE)
        sim_time = self.p('publish_clock') or self.p('use_sim_time')
        if self.p('use_sim_time') and not self.p('publish_clock'):
            self.get_logger().info('use_sim_time: this node publishes /clock')
        self.dropped = Dropped()   # messages and callback errors: /diagnostics counts them
        self.outputs = SimulationOutputs(self, self.p, sim_time)
        self.stepping = SimulationStepping(self.p, self.get_logger(), self.outputs,
                                           self.dropped)
        self._wrench_subs = []
        stepping = self.stepping
        self.create_subscription(Float64MultiArray, '~/effort_command',
                                 self._guarded(stepping.on_command, '~/effort_command'),
                                 RELIABLE)
        self.create_subscription(JointState, '~/effort',
                                 self._guarded(stepping.on_effort, '~/effort'),
                                 qos_profile_sensor_data)
        for kind in ('velocity', 'position'):   # only the newest matters: no backlog
            self.create_subscription(
                Float64MultiArray, f'~/{kind}_command',
                self._guarded(lambda msg, kind=kind: stepping.on_drive(kind, msg),
                              f'~/{kind}_command'), LATEST)
        self.create_service(Trigger, '~/reset', self._guarded(self._on_reset, '~/reset'))
        self.create_service(SetBool, '~/pause', self._guarded(self._on_pause, '~/pause'))
        self.create_service(Trigger, '~/step', self._guarded(self._on_step, '~/step'))
        # the steady clock: with use_sim_time, ROS-time timers would wait for our own /clock
        self.create_timer(self.p('diagnostics_period'),
                          self._guarded(self._diagnostics, '/diagnostics'), clock=STEADY)
        self._timer = None
        self.source.start()
        self.add_on_set_parameters_callback(self._guarded(self._on_parameters, 'parameters'))

    def p(self, name):
        """Return the value of parameter ``name``."""
        return self.get_parameter(name).value

    @property
    def sim(self):
        """Return the :class:`~liemb_ros.sim.Simulator` being stepped (None: no robot yet)."""
        return self.stepping.sim

    def _guarded(self, callback, where):
        """
        Return ``callback`` inside the node's error handling (:func:`~.common.guarded`).

        An error (a bug, or an input no check foresaw) is logged, throttled, and counted as
        a dropped message; a service answers ``success: false`` with it, a parameter change
        is refused with it, and an error while stepping or publishing stops the simulation
        with the reason (the state it left is not trusted; ``~/reset`` starts again).
        """
        def on_error(text, args):
            self.dropped.add(text)
            self.get_logger().error(f'{text} (ignored)', throttle_duration_sec=1.0)
            if where == 'parameters':
                return SetParametersResult(successful=False, reason=text)
            if len(args) == 2:            # a service: (request, response)
                args[1].success, args[1].message = False, text
                return args[1]
            if where == 'the simulation loop' and self.sim is not None:
                self.stepping.stop(text)
            return None
        return guarded(callback, where, on_error)

    def _on_parameters(self, params):
        """Check every changed parameter first, then apply them all (or none)."""
        reason = parameters.refused_change(params, self.sim)
        if reason is not None:
            return SetParametersResult(successful=False, reason=reason)
        if any(prm.name == 'real_time_factor' for prm in params):
            self.stepping.paced_from_now()
        return SetParametersResult(successful=True)

    # -- robot ------------------------------------------------------------------------------
    def _on_robot(self, model, xml, where):
        """Build the simulator for a robot (a new description replaces the old one)."""
        try:
            sim = parameters.simulator(self.p, model, xml, where, self.get_logger().warning)
            command_order = parameters.joint_order(model, self.p('command_joints'))
            wrench_links = parameters.wrench_links(model, self.p('wrench_links'))
            parameters.check_amplitude(sim, np.asarray(self.p('test_torque_amplitude'),
                                                       dtype=float))
        except ValueError as exc:
            raise ConfigError(f"cannot simulate robot {shown(model.name)} from {where}: "
                              f'{exc}') from None
        # compile now, not in the first step: in a thread, so that the node answers meanwhile
        self._candidate = sim
        self._preparing = Preparation(
            self, lambda: self._warm_up(sim),
            lambda warm: self._install(sim, command_order, wrench_links, xml, where, warm),
            f"robot {shown(model.name)}")

    @staticmethod
    def _warm_up(sim):
        """Compile every kernel a step and a publish use; return the seconds taken."""
        start = time.perf_counter()
        model = sim.model
        sim.warm_up()
        forward_kinematics(model, sim.q, base_pose=sim.base_pose)
        if not model.floating:    # the joint drive's inverse dynamics
            inverse_dynamics(model, sim.q, sim.qd, np.zeros(model.nv))
        return time.perf_counter() - start

    def _install(self, sim, command_order, wrench_links, xml, where, warm):
        """Start simulating a prepared robot (in the executor thread)."""
        if sim is not self._candidate:
            return   # a newer description replaced it while it compiled
        self._candidate = self._preparing = None
        model = sim.model
        if self._timer is not None:
            self.destroy_timer(self._timer)
        for sub in self._wrench_subs:
            self.destroy_subscription(sub)
        self.stepping.serve(sim, command_order)
        self._wrench_subs = [
            self.create_subscription(
                WrenchStamped, f'~/external_wrench/{topic_token(link)}',
                self._guarded(lambda msg, link=link: self.stepping.on_wrench(link, msg),
                              f'~/external_wrench/{topic_token(link)}'), LATEST)
            for link in wrench_links]
        self.outputs.serve(sim, None if where == 'the robot_description topic' else xml)
        self.stepping.start()
        self._timer = self.create_timer(1.0 / self.p('publish_rate'),
                                        self._guarded(self.stepping.tick,
                                                      'the simulation loop'),
                                        clock=STEADY)
        base = ', floating base' if model.floating else ''
        settle_heap()   # no full garbage collection over the libraries in the loop
        self.get_logger().info(
            f"simulating {shown(model.name)} ({model.nq} joints{base}) from {where} with "
            f"{self.p('integrator')} at dt = {self.p('dt')} s in {self.p('coordinates')} "
            f'coordinates (damping {sim.damping_method}), '
            f"{self.p('real_time_factor')}x real time; kernels ready in "
            f"{warm:.1f} s")

    def _diagnostics(self):
        """Publish ``/diagnostics`` (the diagnostics timer)."""
        if self.sim is not None:
            self.outputs.publish_diagnostics(*self.outputs.status(self.stepping, self.dropped))
            return
        err = self.source.error
        if self._preparing is not None:
            message = (f"compiling kernels for robot {shown(self._candidate.model.name)} "
                       f'({self._preparing.seconds:.0f} s so far)')
        else:
            message = (f'unusable robot description: {err}' if err else
                       'waiting for the robot description on '
                       + self.resolve_topic_name('robot_description'))
        self.outputs.publish_diagnostics(
            DiagnosticStatus.ERROR if err else DiagnosticStatus.WARN, message)

    # -- services ---------------------------------------------------------------------------
    def _on_reset(self, req, resp):
        if self.sim is None:
            resp.success, resp.message = False, 'no robot model loaded yet'
            return resp
        self.stepping.reset()
        resp.success, resp.message = True, ('simulation reset to the initial state; held '
                                            'commands cleared')
        return resp

    def _on_pause(self, req, resp):
        self.stepping.pause(req.data)
        resp.success, resp.message = True, 'paused' if self.stepping.paused else 'running'
        return resp

    def _on_step(self, req, resp):
        stepping = self.stepping
        if self.sim is None or stepping.error is not None:
            resp.success = False
            resp.message = 'no robot model loaded yet' if self.sim is None else stepping.error
            return resp
        if not stepping.paused:
            resp.success, resp.message = False, 'pause the simulation first (~/pause)'
            return resp
        resp.success = stepping.step()
        resp.message = f't = {self.sim.t:.6f} s' if resp.success else stepping.error
        return resp


def main(args=None):
    """Run the simulation node until Ctrl-C or SIGTERM; exit 1 when it cannot work."""
    return run(SimulationNode, args)


if __name__ == '__main__':
    sys.exit(main())
