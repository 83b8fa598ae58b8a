"""
``simulation_node``: a URDF robot simulated with the Lie group integrators.

Reads the robot like the dynamics node (``robot_description`` parameter, ``urdf_path``
file / shipped robot name, or the transient-local ``robot_description`` topic) and
republishes its URDF on the latched ``robot_description`` topic, so RViz and the dynamics
node need nothing else.  Steps :class:`liemb_ros.simulation.Simulator` (integrator, step,
joint or absolute coordinates, SE(3) / SO(3)xR3 / tailored update, damping, initial state:
all parameters of ``config/simulation.yaml``) at ``real_time_factor`` times wall-clock
speed, and publishes:

* ``joint_states`` (``sensor_msgs/JointState``: position, velocity, applied effort);
* ``/tf`` (every link, parent link -> child link, and ``world_frame`` -> root link: the
  floating base pose) and ``/tf_static`` (links fixed to their parent);
* ``~/odom`` (``nav_msgs/Odometry``, floating base only: pose, body-fixed twist);
* ``/clock`` (``rosgraph_msgs/Clock``) when ``publish_clock`` is true: stamps are then
  simulation time, else wall-clock time;
* ``/diagnostics``: simulation time, real-time factor, energy, energy balance residual,
  constraint violation (absolute coordinates), integrator and step.

Applied torques: ``~/effort_command`` (``std_msgs/Float64MultiArray`` in
``command_joints`` order, what a ros2_control effort controller takes) and ``~/effort``
(``sensor_msgs/JointState`` effort by name); both are held until ``effort_timeout``
seconds pass without a new command, then drop to zero.  A test torque
``amplitude * sin(2 pi f t)`` per joint (``test_torque_*``) is added on top.  Services
(``std_srvs``): ``~/reset`` (Trigger), ``~/pause`` (SetBool), ``~/step`` (Trigger: one
publish period while paused).  A diverging simulation stops stepping and says why in the
log and in ``/diagnostics``; ``~/reset`` starts it again.
"""
import math
import sys
import time

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import TransformStamped
from nav_msgs.msg import Odometry
from rcl_interfaces.msg import ParameterType, SetParametersResult
from rclpy.node import Node
from rclpy.qos import (DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy,
                       qos_profile_sensor_data)
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from std_srvs.srv import SetBool, Trigger
from tf2_msgs.msg import TFMessage

from .. import resources
from ..kinematics import forward_kinematics
from ..model import URDFError, load_urdf
from ..simulation import COORDINATES, INTEGRATORS, UPDATES, SimulationError, Simulator
from .conversions import descriptor, quaternion_xyzw, to_time

RELIABLE = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL,
                     history=HistoryPolicy.KEEP_LAST)
TF_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)


class SimulationNode(Node):
    """Thin ROS adapter over :class:`liemb_ros.simulation.Simulator`."""

    def __init__(self, **kwargs):
        super().__init__('liemb_simulation', **kwargs)
        S, SA = ParameterType.PARAMETER_STRING, ParameterType.PARAMETER_STRING_ARRAY
        D, DA = ParameterType.PARAMETER_DOUBLE, ParameterType.PARAMETER_DOUBLE_ARRAY
        B = ParameterType.PARAMETER_BOOL
        ro = {'read_only': True}
        for name, default, text, kind, extra in (
                ('robot_description', '', 'URDF XML (empty: urdf_path, else the topic)', S, ro),
                ('urdf_path', '', 'URDF file or shipped robot name', S, ro),
                ('floating_base', False, 'root link as a floating SE(3) base', B, ro),
                ('integrator', 'rk4', f"RKMK tableau: {' | '.join(INTEGRATORS)}", S, ro),
                ('dt', 0.001, 'integration step [s]', D, dict(ro, lo=1e-6, hi=0.1)),
                ('coordinates', 'joint', f"{' | '.join(COORDINATES)}", S, ro),
                ('update', 'tailored',
                 f"body configuration update in absolute coordinates: {' | '.join(UPDATES)}",
                 S, ro),
                ('damping', -1.0,
                 'viscous joint damping [N m s/rad]; negative: the URDF <dynamics> values', D,
                 dict(ro, lo=-1.0, hi=1e4)),
                ('initial_positions', [0.0], 'q at start and on reset (one per joint; '
                 '[0.0] = neutral)', DA, ro),
                ('initial_velocities', [0.0], 'joint velocities at start ([0.0] = zero)', DA,
                 ro),
                ('real_time_factor', 1.0, 'simulated seconds per wall-clock second; 0 = as '
                 'fast as possible', D, dict(lo=0.0, hi=1000.0)),
                ('publish_rate', 100.0, 'joint_states and /tf messages per wall-clock second',
                 D, dict(ro, lo=1.0, hi=2000.0)),
                ('publish_clock', False, 'publish /clock and stamp messages with sim time', B,
                 ro),
                ('publish_tf', True, 'publish /tf and /tf_static', B, ro),
                ('publish_link_tf', True, 'include link transforms in /tf (false when '
                 'robot_state_publisher does it)', B, ro),
                ('world_frame', 'world', 'frame of the world (parent of the root link)', S,
                 ro),
                ('command_joints', [''], 'joint order of ~/effort_command (empty: model '
                 'order)', SA, ro),
                ('wait_for_command', False, 'hold the robot still until the first effort '
                 'command arrives (a controller that starts later)', B, ro),
                ('effort_timeout', 0.5, 'seconds a command is held; then zero torque', D,
                 dict(lo=0.0, hi=3600.0)),
                ('test_torque_amplitude', [0.0], 'test torque amplitude per joint [N m] '
                 '(one value: every joint)', DA, {}),
                ('test_torque_frequency', 0.5, 'test torque frequency [Hz]', D,
                 dict(lo=0.0, hi=1000.0)),
                ('diagnostics_period', 1.0, 'seconds between /diagnostics messages', D,
                 dict(ro, lo=0.05, hi=60.0))):
            self.declare_parameter(name, default, descriptor(text, kind, **extra))
        self.sim = None
        self.model = None
        self.paused = False
        self.error = None
        self._command = None
        self._command_time = None
        self._wall = None
        self._rtf_window = []
        self._rejected = 0
        self.pub_js = self.create_publisher(JointState, 'joint_states', RELIABLE)
        self.pub_tf = self.create_publisher(TFMessage, '/tf', TF_QOS)
        self.pub_tf_static = self.create_publisher(TFMessage, '/tf_static', LATCHED)
        self.pub_description = self.create_publisher(String, 'robot_description', LATCHED)
        self.pub_diag = self.create_publisher(DiagnosticArray, '/diagnostics', RELIABLE)
        self.pub_clock = (self.create_publisher(Clock, '/clock', RELIABLE)
                          if self.p('publish_clock') else None)
        self.pub_odom = None
        self.create_subscription(Float64MultiArray, '~/effort_command', self._on_command,
                                 RELIABLE)
        self.create_subscription(JointState, '~/effort', self._on_effort,
                                 qos_profile_sensor_data)
        self.create_service(Trigger, '~/reset', self._on_reset)
        self.create_service(SetBool, '~/pause', self._on_pause)
        self.create_service(Trigger, '~/step', self._on_step)
        self.add_on_set_parameters_callback(self._on_parameters)
        self.create_timer(self.p('diagnostics_period'), self._diagnostics)
        self._timer = None
        self._load_robot()

    def p(self, name):
        """Return the value of parameter ``name``."""
        return self.get_parameter(name).value

    # -- robot ------------------------------------------------------------------------------
    def _load_robot(self):
        xml, path = self.p('robot_description'), self.p('urdf_path')
        if xml:
            self._build(xml, xml, 'robot_description parameter')
        elif path:
            try:
                path = resources.robot_path(path)
                with open(path, encoding='utf-8') as f:
                    text = f.read()
            except (FileNotFoundError, OSError) as exc:
                self.get_logger().error(f'cannot read the robot: {exc}')
                return
            self._build(path, text, path)
        else:
            self.get_logger().info('waiting for the robot_description topic')
            self.create_subscription(
                String, 'robot_description',
                lambda m: self.sim is None and self._build(m.data, None,
                                                           'robot_description topic'),
                LATCHED)

    def _build(self, source, xml, where):
        try:
            model = load_urdf(source, floating_base=self.p('floating_base') or None)
            damping = self.p('damping')
            self.sim = Simulator(
                model, dt=self.p('dt'), integrator=self.p('integrator'),
                coordinates=self.p('coordinates'), update=self.p('update'),
                damping=None if damping < 0 else damping, **self._initial_state(model))
            self._command_order = self._joint_order(model, self.p('command_joints'))
        except (URDFError, ValueError) as exc:
            self.get_logger().error(f'cannot simulate the robot from the {where}: {exc}')
            self.sim = None
            return
        # compile now, not in the first step: tens of seconds on a cold numba cache
        start = time.perf_counter()
        self.sim.warm_up()
        forward_kinematics(model, self.sim.q, base_pose=self.sim.base_pose)
        warm = time.perf_counter() - start
        self.model = model
        self._fk_links = list(model.link_names)
        if xml is not None:
            self.pub_description.publish(String(data=xml))
        if model.floating:
            self.pub_odom = self.create_publisher(Odometry, '~/odom', RELIABLE)
        self._publish_static()
        self._wall = time.monotonic()
        self._timer = self.create_timer(1.0 / self.p('publish_rate'), self._tick)
        base = ', floating base' if model.floating else ''
        self.get_logger().info(
            f"simulating '{model.name}' ({model.nq} joints{base}) with "
            f"{self.p('integrator')} at dt = {self.p('dt')} s in {self.p('coordinates')} "
            f"coordinates, {self.p('real_time_factor')}x real time; kernels ready in "
            f"{warm:.1f} s")

    def _initial_state(self, model):
        q0 = np.asarray(self.p('initial_positions'), dtype=float)
        qd0 = np.asarray(self.p('initial_velocities'), dtype=float)
        out = {}
        if not (q0.size == 1 and q0[0] == 0.0):
            if q0.size != model.nq:
                raise ValueError(f'initial_positions has {q0.size} values; the robot has '
                                 f'{model.nq} joints {model.joint_names}')
            out['q0'] = q0
        if not (qd0.size == 1 and qd0[0] == 0.0):
            if qd0.size != model.nq:
                raise ValueError(f'initial_velocities has {qd0.size} values; the robot has '
                                 f'{model.nq} joints')
            out['qd0'] = np.concatenate([np.zeros(model.nv - model.nq), qd0])
        return out

    @staticmethod
    def _joint_order(model, names):
        names = [n for n in names if n]
        if not names:
            return np.arange(model.nq)
        unknown = [n for n in names if n not in model.joint_names]
        if unknown:
            raise ValueError(f'command_joints: unknown joints {unknown}; the robot has '
                             f'{model.joint_names}')
        return np.array([model.joint_index(n) for n in names])

    # -- input ------------------------------------------------------------------------------
    def _reject(self, what):
        self._rejected += 1
        self.get_logger().error(f'dropped {what}', throttle_duration_sec=1.0)

    def _on_command(self, msg):
        if self.sim is None:
            return
        data = np.asarray(msg.data, dtype=float)
        if data.size != self._command_order.size or not np.all(np.isfinite(data)):
            self._reject(f'~/effort_command: expected {self._command_order.size} finite '
                         f'values, got {data.size}')
            return
        tau = np.zeros(self.model.nq)
        tau[self._command_order] = data
        self._command, self._command_time = tau, time.monotonic()

    def _on_effort(self, msg):
        if self.sim is None:
            return
        if len(msg.effort) != len(msg.name):
            self._reject(f'~/effort: {len(msg.name)} names but {len(msg.effort)} efforts')
            return
        unknown = [n for n in msg.name if n not in self.model.joint_names]
        effort = np.asarray(msg.effort, dtype=float)
        if unknown or not np.all(np.isfinite(effort)):
            self._reject(f'~/effort: unknown joints {unknown}' if unknown
                         else '~/effort: non-finite effort')
            return
        tau = np.zeros(self.model.nq) if self._command is None else self._command.copy()
        for n, e in zip(msg.name, effort):
            tau[self.model.joint_index(n)] = e
        self._command, self._command_time = tau, time.monotonic()

    def _on_parameters(self, params):
        for prm in params:
            if prm.name == 'test_torque_amplitude' and self.model is not None:
                if len(prm.value) not in (1, self.model.nq):
                    return SetParametersResult(
                        successful=False,
                        reason=f'test_torque_amplitude needs 1 or {self.model.nq} values')
            if prm.name == 'real_time_factor':
                self._wall = time.monotonic()
        return SetParametersResult(successful=True)

    # -- stepping ---------------------------------------------------------------------------
    def applied_torque(self, t):
        """Return the joint torques applied at sim time ``t``: command + test torque."""
        tau = np.zeros(self.model.nq)
        if self._command is not None:
            timeout = self.p('effort_timeout')
            if timeout == 0 or time.monotonic() - self._command_time <= timeout:
                tau += self._command
        amp = np.asarray(self.p('test_torque_amplitude'), dtype=float)
        if np.any(amp):
            tau += amp * math.sin(2.0 * math.pi * self.p('test_torque_frequency') * t)
        return tau

    def _advance(self, seconds):
        sim = self.sim
        n = max(1, int(round(seconds / sim.dt)))
        try:
            sim.step(self.applied_torque(sim.t), n=n)
        except SimulationError as exc:
            self.error = str(exc)
            self.get_logger().error(f'simulation stopped: {exc} (call ~/reset to restart)')

    def _tick(self):
        now = time.monotonic()
        elapsed, self._wall = now - self._wall, now
        if self.sim is None or self.error is not None:
            return
        waiting = self.p('wait_for_command') and self._command is None
        if not self.paused and not waiting:
            rtf = self.p('real_time_factor')
            t0 = self.sim.t
            # Never fall behind by more than a few periods (e.g. after a pause or a stall).
            budget = min(elapsed, 5.0 / self.p('publish_rate'))
            if rtf == 0.0:
                deadline = now + 0.8 / self.p('publish_rate')
                while time.monotonic() < deadline and self.error is None:
                    self._advance(10 * self.sim.dt)
            else:
                self._advance(rtf * budget)
            self._rtf_window.append((now, self.sim.t - t0, elapsed))
            del self._rtf_window[:-100]
        self._publish()

    # -- output -----------------------------------------------------------------------------
    def _stamp(self):
        if self.pub_clock is not None:
            return to_time(self.sim.t)
        return self.get_clock().now().to_msg()

    def _publish(self):
        sim, model = self.sim, self.model
        stamp = self._stamp()
        if self.pub_clock is not None:
            self.pub_clock.publish(Clock(clock=stamp))
        js = JointState()
        js.header.stamp = stamp
        js.name = list(model.joint_names)
        js.position = sim.q.tolist()
        js.velocity = sim.qd[model.nv - model.nq:].tolist()
        js.effort = self.applied_torque(sim.t).tolist()
        self.pub_js.publish(js)
        if self.p('publish_tf'):
            self.pub_tf.publish(TFMessage(transforms=self._transforms(stamp, moving=True)))
        if self.pub_odom is not None:
            self.pub_odom.publish(self._odometry(stamp))

    def _transforms(self, stamp, moving):
        """Link transforms (parent link -> link) that move (or not) with the joints."""
        model, sim = self.model, self.sim
        world = self.p('world_frame')
        out = []
        if moving and model.floating:
            out.append(_transform(stamp, world, model.root_link, sim.base_pose))
        if not self.p('publish_link_tf') and moving:
            return out
        Cs = forward_kinematics(model, sim.q, base_pose=sim.base_pose)
        index = {n: i for i, n in enumerate(model.link_names)}
        for i, name in enumerate(model.link_names):
            parent = model.link_parent[i]
            if parent is None:
                if not model.floating and moving is False:
                    out.append(_transform(stamp, world, name, Cs[i]))
                continue
            fixed = model.link_body[i] == model.link_body[index[parent]]
            if fixed != (not moving):
                continue
            out.append(_transform(stamp, parent, name,
                                  np.linalg.solve(Cs[index[parent]], Cs[i])))
        return out

    def _publish_static(self):
        if self.p('publish_tf'):
            self.pub_tf_static.publish(
                TFMessage(transforms=self._transforms(self._stamp(), moving=False)))

    def _odometry(self, stamp):
        C, V = self.sim.base_pose, self.sim.qd[:6]
        msg = Odometry()
        msg.header.stamp = stamp
        msg.header.frame_id = self.p('world_frame')
        msg.child_frame_id = self.model.root_link
        p = msg.pose.pose.position
        p.x, p.y, p.z = (float(x) for x in C[:3, 3])
        o = msg.pose.pose.orientation
        o.x, o.y, o.z, o.w = quaternion_xyzw(C[:3, :3])
        # nav_msgs/Odometry: the twist is expressed in child_frame_id (body-fixed, REP 105).
        a, v = msg.twist.twist.angular, msg.twist.twist.linear
        a.x, a.y, a.z = (float(x) for x in V[:3])
        v.x, v.y, v.z = (float(x) for x in V[3:])
        return msg

    def _diagnostics(self):
        st = DiagnosticStatus(name='liemb_simulation', hardware_id='liemb_ros')
        if self.sim is None:
            st.level, st.message = DiagnosticStatus.WARN, 'no robot model yet'
        else:
            d = self.sim.diagnostics()
            w = self._rtf_window
            wall = sum(x[2] for x in w)
            rtf = sum(x[1] for x in w) / wall if wall > 0 else 0.0
            if self.error is not None:
                st.level, st.message = DiagnosticStatus.ERROR, f'stopped: {self.error}'
            elif self.paused:
                st.level, st.message = DiagnosticStatus.OK, 'paused'
            elif self.p('wait_for_command') and self._command is None:
                st.level, st.message = DiagnosticStatus.OK, 'waiting for the first command'
            else:
                st.level, st.message = DiagnosticStatus.OK, 'running'
            values = [('sim_time', f"{d['t']:.4f}"), ('real_time_factor', f'{rtf:.3f}'),
                      ('steps', str(d['steps'])), ('energy', f"{d['energy']:.6g}"),
                      ('energy_balance_error', f"{d['energy_balance_error']:.3e}"),
                      ('integrator', self.p('integrator')), ('dt', str(self.p('dt'))),
                      ('coordinates', self.p('coordinates')),
                      ('dropped', str(self._rejected))]
            if 'constraint_violation' in d:
                values.append(('max_constraint_violation',
                               f"{float(np.max(d['constraint_violation'], initial=0.0)):.3e}"))
            st.values = [KeyValue(key=k, value=v) for k, v in values]
        msg = DiagnosticArray(status=[st])
        msg.header.stamp = self.get_clock().now().to_msg()
        self.pub_diag.publish(msg)

    # -- services ---------------------------------------------------------------------------
    def _on_reset(self, req, resp):
        if self.sim is None:
            resp.success, resp.message = False, 'no robot model loaded yet'
            return resp
        self.sim.reset()
        self.error = None
        self._wall = time.monotonic()
        resp.success, resp.message = True, 'simulation reset to the initial state'
        return resp

    def _on_pause(self, req, resp):
        self.paused = bool(req.data)
        self._wall = time.monotonic()
        resp.success, resp.message = True, 'paused' if self.paused else 'running'
        return resp

    def _on_step(self, req, resp):
        if self.sim is None or self.error is not None:
            resp.success = False
            resp.message = 'no robot model loaded yet' if self.sim is None else self.error
            return resp
        if not self.paused:
            resp.success, resp.message = False, 'pause the simulation first (~/pause)'
            return resp
        self._advance(1.0 / self.p('publish_rate'))
        self._publish()
        resp.success = self.error is None
        resp.message = f't = {self.sim.t:.6f} s' if resp.success else self.error
        return resp


def _transform(stamp, parent, child, C):
    t = TransformStamped()
    t.header.stamp = stamp
    t.header.frame_id = parent
    t.child_frame_id = child
    tr, r = t.transform.translation, t.transform.rotation
    tr.x, tr.y, tr.z = (float(x) for x in C[:3, 3])
    r.x, r.y, r.z, r.w = quaternion_xyzw(C[:3, :3])
    return t


def main(args=None):
    """Run the simulation node until Ctrl-C."""
    rclpy.init(args=args if args is not None else sys.argv)
    node = SimulationNode()
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, rclpy.executors.ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == '__main__':
    main()
