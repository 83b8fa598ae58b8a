"""
The dynamics node's online payload estimate: joint states with efforts in, an estimate out.

:class:`PayloadEstimation`, a part that :class:`liemb_ros.ros.dynamics_node.DynamicsNode`
owns, exists when ``payload_estimation.link`` names a link.  It adapts
:class:`liemb_ros.core.payload_estimation.PayloadEstimator` (the maths, and why it needs
no accelerations) to ROS:

* ``joint_states`` (``sensor_msgs/JointState``: positions, velocities and efforts of every
  joint of the model; ``header.stamp``, else the node clock) on the node itself, not its
  1 kHz io node, with a queue of one: the estimator takes the latest state on each of
  the node's turns (every 4 ms while states flow, :data:`liemb_ros.ros.common.TURN`),
  about 0.3 ms each, never in the control loop's callback;
* ``~/payload_estimate`` (``geometry_msgs/InertiaStamped``, ``header.frame_id`` the link:
  mass, centre of mass and inertia about it in link axes, what ``payload.*`` take) and
  ``~/payload_estimate/covariance`` (``std_msgs/Float64MultiArray``, 10 x 10, row-major:
  the covariance of the ten parameters ``m, m cx, m cy, m cz, Ixx, Ixy, Iyy, Ixz, Iyz,
  Izz`` in the link frame, the inertia about the link origin), ``payload_estimation.
  publish_rate`` times a second;
* ``~/payload_estimate/apply`` (``std_srvs/Trigger``): copies a ``ready`` estimate
  (consistent and excited enough) into ``payload.link``, ``payload.mass``, ``payload.com``
  and ``payload.inertia``, so the node's torques include it; refused with the reason
  otherwise.  Nothing is applied unless asked;
* ``~/payload_estimate/reset`` (``std_srvs/Trigger``): back to the prior (no payload);
* a ``/diagnostics`` status (:meth:`PayloadEstimation.diagnostic`).

A change of ``gravity`` or ``armature`` (the known robot) starts a new estimate.  A joint
state it cannot use (a joint of the model missing, no or too few efforts, NaN or
inf, a stamp not after the last) is skipped and counted by reason; none stops the node.
"""
from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
from geometry_msgs.msg import InertiaStamped
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension
from std_srvs.srv import Trigger

from ..core.payload_estimation import PayloadEstimator
from .dynamics_output import RELIABLE

#: the latest joint state only (the estimator is fed on the node's turns)
LATEST = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT)


class PayloadEstimation:
    """
    Online estimation of the payload of ``payload_estimation.link`` (module docstring).

    ``node``: the dynamics node (its parameters, clock, log; ``set_parameters_atomically``
    applies an estimate through the node's own parameter check); ``guard(callback,
    where, failed=None)``: its error handling.  :meth:`make_estimator` makes the estimator of a
    new robot's engine, :meth:`serve` starts it.
    """

    def __init__(self, node, guard):
        self.node = node
        self.link = node.p('payload_estimation.link')
        self.estimator = None
        self.skipped = {}   # reason -> joint states the node could not hand over
        if not self.link:
            return
        node.create_subscription(JointState, 'joint_states',
                                 guard(self._on_state, 'joint_states (payload estimation)'),
                                 LATEST)
        self.pub = node.create_publisher(InertiaStamped, '~/payload_estimate', RELIABLE)
        self.pub_cov = node.create_publisher(Float64MultiArray,
                                             '~/payload_estimate/covariance', RELIABLE)
        for name, callback in (('apply', self._on_apply), ('reset', self._on_reset)):
            node.create_service(Trigger, f'~/payload_estimate/{name}', guard(
                callback, f'~/payload_estimate/{name}', _failed))
        node.create_timer(1.0 / node.p('payload_estimation.publish_rate'),
                          guard(self.publish, '~/payload_estimate'))

    def make_estimator(self, engine):
        """
        Return the estimator for ``engine``'s robot (None: estimation off).

        The known robot is the engine's model without its payload (the URDF's inertias,
        the engine's gravity) and the engine's armature.  Raises ValueError for parameters
        that do not fit the robot (an unknown link, one fixed to the base).
        """
        if not self.link:
            return None
        p = self.node.p
        model = engine.model.replace(inertia=engine.settings.base_model.inertia)
        return PayloadEstimator(model, self.link, p('payload_estimation.cutoff'),
                                p('payload_estimation.memory'),
                                p('payload_estimation.min_excitation'),
                                p('payload_estimation.friction'), engine.settings.armature)

    def serve(self, estimator):
        """Estimate with ``estimator`` (a new robot's, or after a change of its engine)."""
        self.estimator = estimator
        if estimator is not None:
            self._index = {n: i for i, n in enumerate(estimator.model.joint_names)}

    def _skip(self, why):
        self.skipped[why] = self.skipped.get(why, 0) + 1
        self.node.get_logger().warning(f'payload estimation: skipped a joint state ({why})',
                                       throttle_duration_sec=5.0)

    def _on_state(self, msg):
        """Hand a joint state to the estimator, in the model's joint order."""
        e = self.estimator
        if e is None:
            return
        n = len(msg.name)
        if not (len(msg.position) == len(msg.velocity) == len(msg.effort) == n):
            self._skip('positions, velocities and efforts not one per name')
            return
        at = [self._index.get(name) for name in msg.name]
        if sorted(i for i in at if i is not None) != list(range(e.model.nv)):
            self._skip('not every joint of the model once')
            return
        order = [k for _, k in sorted((i, k) for k, i in enumerate(at) if i is not None)]
        s = msg.header.stamp
        t = (s.sec + 1e-9 * s.nanosec if s.sec or s.nanosec
             else self.node.get_clock().now().nanoseconds * 1e-9)
        e.update(t, [msg.position[k] for k in order], [msg.velocity[k] for k in order],
                 [msg.effort[k] for k in order])

    def publish(self):
        """Publish the estimate and its covariance (the ``publish_rate`` timer)."""
        if self.estimator is None or self.estimator.samples == 0:
            return
        p = self.estimator.estimate().payload
        msg = InertiaStamped()
        msg.header.stamp = self.node.get_clock().now().to_msg()
        msg.header.frame_id = p.link
        msg.inertia.m = p.mass
        msg.inertia.com.x, msg.inertia.com.y, msg.inertia.com.z = p.com.tolist()
        i = msg.inertia
        i.ixx, i.ixy, i.ixz, i.iyy, i.iyz, i.izz = p.inertia.tolist()
        self.pub.publish(msg)
        cov = Float64MultiArray(data=p.covariance.ravel().tolist())
        cov.layout.dim = [MultiArrayDimension(label='row', size=10, stride=100),
                          MultiArrayDimension(label='column', size=10, stride=10)]
        self.pub_cov.publish(cov)

    def _on_apply(self, req, resp):
        """Copy a ready estimate into the ``payload.*`` parameters (the node's torques)."""
        if self.estimator is None:
            return _failed('no robot yet', req, resp)
        est = self.estimator.estimate()
        if not est.ready:
            why = ('its pseudo-inertia is not positive definite' if not est.consistent else
                   f'excitation {est.excitation:.3g} < payload_estimation.min_excitation '
                   f'{self.estimator.min_excitation:g}: move every joint')
            return _failed(f'estimate not applied: {why}', req, resp)
        result = self.node.set_parameters_atomically(
            [Parameter(k, value=v) for k, v in est.payload.node_parameters().items()])
        resp.success = result.successful
        resp.message = (f'applied {est.payload.mass:.4g} kg at {est.payload.link}'
                        if result.successful else f'estimate not applied: {result.reason}')
        return resp

    def _on_reset(self, req, resp):
        """Forget the estimate: back to the prior (no payload)."""
        if self.estimator is None:
            return _failed('no robot yet', req, resp)
        self.estimator.reset()
        resp.success, resp.message = True, 'payload estimate reset'
        return resp

    def diagnostic(self):
        """Return the ``/diagnostics`` status of the estimate, or None (estimation off)."""
        if not self.link:
            return None
        st = DiagnosticStatus(name='liemb_dynamics: payload estimate',
                              hardware_id='liemb_ros', level=DiagnosticStatus.WARN)
        e = self.estimator
        if e is None:
            st.message = 'no robot yet'
            return st
        est = e.estimate()
        p = est.payload
        st.level = DiagnosticStatus.OK if est.ready else DiagnosticStatus.WARN
        st.message = (f'{p.mass:.4g} ± {p.mass_std:.2g} kg at {p.link}' if est.ready else
                      'not ready: ' + ('inconsistent' if not est.consistent
                                       else 'too little excitation'))
        skipped = {**self.skipped, **e.skipped}
        st.values = [KeyValue(key=k, value=v) for k, v in (
            ('samples', str(e.samples)), ('excitation', f'{est.excitation:.3g}'),
            ('consistent', str(est.consistent)), ('mass_kg', f'{p.mass:.6g}'),
            ('mass_std_kg', f'{p.mass_std:.3g}'),
            ('com_m', ' '.join(f'{x:.6g}' for x in p.com)),
            ('com_std_m', ' '.join(f'{x:.3g}' for x in p.com_std)),
            ('filter_restarts', str(e.restarts)),
            ('skipped', str(sum(skipped.values()))),
            ('skipped_why', '; '.join(f'{k}: {v}' for k, v in skipped.items()) or 'none'))]
        return st


def _failed(text, req, resp):
    """Return the response of a ``~/payload_estimate/*`` request that failed."""
    resp.success = False
    resp.message = text
    return resp
