"""
The servo law: twist or joint-velocity commands to joint velocity (and position) commands.

ROS-free (the ``servo_node`` is a thin adapter over :class:`Servo`); usable from Python::

    servo = Servo(model, 'tool0', period=0.002)
    out = servo.twist_step(q, [0, 0, 0, 0.05, 0, 0], representation='hybrid')
    out.velocities, out.positions, out.status, out.condition

A command is checked first (:func:`checked`): a twist or joint velocity that is not finite
or beyond the plausibility bound :data:`MAX_SPEED` (1000 rad/s or m/s) is refused with a
ValueError naming the component and the bound, before any computation.  The compiled
stages below give finite outputs for any finite input all the same (a twist of 1e308, an
exactly singular or a zero Jacobian): the damped least squares works on scaled copies and
returns a direction and a magnitude, which the velocity limits bound.

One step, in this order (stages 2 and 4-7 are compiled: ``_dls_step``, ``_limits``):

1. the Jacobian of the controlled link in the command's frame (:meth:`Servo.jacobian`),
   rows selected by the per-axis ``mask`` (angular first, as every twist here);
2. damped least squares ``q̇ = Jᵀ(JJᵀ + λ²I)⁻¹V``, by the SVD of J, with a variable damping
   (zero while the smallest singular value stays above ``damping_threshold``, growing to
   ``damping`` at a singularity);
3. singularity-aware scaling :func:`singularity_scale`: while the command moves toward a
   larger condition number (predicted one small step ahead), the speed falls linearly from
   1 at ``singularity_thresholds[0]`` to 0 at ``[1]`` (named statuses
   ``decelerate_for_singularity`` / ``halt_for_singularity``, as MoveIt Servo names them);
   moving away is never slowed;
4. joint velocity limits (a uniform scale, so the direction of the motion is kept);
5. optional low-pass smoothing (first order, time constant ``smoothing``);
6. joint acceleration limits (the change of q̇ scaled uniformly: ramp-up and smooth stops);
7. joint position limits: each joint may move toward its limit no faster than it can stop,
   at its acceleration limit, ``margin`` before the limit (``decelerate_for_joint_limit`` /
   ``halt_for_joint_limit``); a uniform scale again.

A stale or missing command is :meth:`Servo.stop_step` (target zero: the acceleration limits
bring the arm to rest, status ``stale_command``).

The position output is ``q + q̇ dt`` (for position or trajectory controllers).

Latency.  A joint state is a few ms old when a step uses it, and the arm has moved on
meanwhile under the commands sent since: at 0.1 rad/s that lag alone makes the achieved
twist miss the command by ~1 %.  :class:`CommandHistory` predicts the present state, the
measurement plus the commanded velocities integrated since it arrived; a node steps the
law at that prediction (a Python caller with an exact state needs none of this).

Command frames.  ``representation`` (``body | spatial | hybrid | mixed``, design.md) states
the frames of a twist of the controlled link; "world" is the ``base_frame`` (a link rigidly
attached to the root; default the root link).  ``frame=F`` instead reads the twist as
``geometry_msgs/TwistStamped`` does in MoveIt Servo: angular and linear velocity of the
controlled link's origin, both resolved in frame F (any link).  Fixed-base models only.
"""
import enum
import math
from collections import namedtuple

import numpy as np
from numba import njit

from ..core.kinematics import jacobian, link_pose
from ..core.model import REPRESENTATIONS


class Status(enum.IntEnum):
    """Named servo statuses (``Status.HALT_FOR_SINGULARITY.label`` = its lower-case name)."""

    NO_WARNING = 0
    DECELERATE_FOR_SINGULARITY = 1
    HALT_FOR_SINGULARITY = 2
    DECELERATE_FOR_JOINT_LIMIT = 3
    HALT_FOR_JOINT_LIMIT = 4
    STALE_COMMAND = 5
    IDLE = 6
    INVALID_COMMAND = 7

    @property
    def label(self):
        """Return the status name in lower case, e.g. ``'halt_for_singularity'``."""
        return self.name.lower()


#: below this fraction of the commanded speed the singularity scaling halts
HALT_FRACTION = 0.05

#: The plausibility bound of a command [rad/s or m/s]: a twist component (angular in rad/s,
#: linear in m/s) or a joint velocity beyond it is refused (:func:`checked`), not scaled
#: down.  No arm's tool or joint moves at 1000 m/s or rad/s, two orders of magnitude above
#: the fastest industrial arms (tool speeds ~10 m/s, joints ~10 rad/s): a command beyond it
#: is an error upstream (units, an overflow, a stuck axis), while any command a teleop
#: device scales to "full speed" stays well below it and is scaled to the velocity limits.
MAX_SPEED = 1000.0

#: the components of a twist ``(ω, v)``, as :func:`checked` names them
TWIST_AXES = ('wx', 'wy', 'wz', 'vx', 'vy', 'vz')

#: One servo step's result: joint velocities and positions (nq,), status, condition number
#: of the masked command Jacobian, and the product of the speed scales applied.
ServoOutput = namedtuple('ServoOutput', 'velocities positions status condition scale')


def singularity_scale(kappa, approaching, lower, upper):
    """
    Return the speed scale near a singularity: 1 below ``lower``, 0 from ``upper`` on.

    Linear in the condition number ``kappa`` between the two thresholds, and only while
    the command is ``approaching`` (moving toward a larger condition number); 1 otherwise.
    A linear slow-down alone would only approach ``upper`` asymptotically: below
    :data:`HALT_FRACTION` the scale is 0 (the acceleration limits smooth that last step).
    """
    if not approaching:
        return 1.0
    ramp = min(max((upper - kappa) / (upper - lower), 0.0), 1.0)
    return 0.0 if ramp < HALT_FRACTION else ramp


@njit(cache=True)
def _largest(x):
    """Return the largest ``|x[i]|`` (0 for an empty array; NaN when x holds one)."""
    m = 0.0
    for v in x.flat:
        a = abs(v)
        if a > m:
            m = a
        elif a != a:
            return a
    return m


@njit(cache=True)
def _dls_step(J, V, damping_max, threshold, qd):
    """
    Damped least squares as a direction and a magnitude.

    Writes the direction of ``q̇ = Jᵀ(JJᵀ + λ²I)⁻¹V`` into ``qd`` (largest component ±1, or
    all zero when the magnitude is 0) and returns ``(κ(J), magnitude)``: the solution is
    ``magnitude * qd``.  The damping is Chiaverini's smooth one: ``λ² = damping_max² (1 -
    (σ_min/threshold)²)`` for ``σ_min < threshold``, else 0 (the exact pseudo-inverse away
    from singularities).  The
    SVD is of J over its largest entry, V is scaled by its largest entry, and the gains
    ``σ/(σ² + λ²)`` are formed relative to ``D = max(largest entry of J, λ)``, each at most
    1e12 (σ below 1e-12 σ_max count as zero): finite input of any magnitude gives finite
    numbers, the magnitude alone may overflow to inf (a solution beyond every velocity
    limit), never NaN.  κ is inf at a singular J; a J that is zero or not finite gives no
    motion (magnitude 0, κ inf).
    """
    qd[:] = 0.0
    jm = _largest(J)
    if not (jm > 0.0 and jm < np.inf):
        return np.inf, 0.0
    U, s, Wt = np.linalg.svd(J / jm, full_matrices=False)   # σ(J) = jm s
    smin = s[-1]
    kappa = s[0] / smin if smin > 0.0 else np.inf
    lam = 0.0                                  # the damping, in the units of J
    if smin < threshold / jm:
        r = min(smin / (threshold / jm), 1.0)
        lam = damping_max * math.sqrt(1.0 - r * r)
    vm = _largest(V)
    if not (vm > 0.0 and vm < np.inf):
        return kappa, 0.0
    D = max(jm, lam)
    ratio, b = jm / D, lam / D                 # both <= 1, one of them 1
    c = U.T @ (V / vm)                         # |c| <= sqrt(k)
    for i in range(s.shape[0]):
        if s[i] > 1e-12 * s[0]:
            x = s[i] * ratio                   # σ/D
            c[i] *= x / (x * x + b * b)        # D σ/(σ² + λ²)
        else:
            c[i] = 0.0
    d = Wt.T @ c
    dm = _largest(d)
    magnitude = (vm * dm) / D if dm <= 1.0 else (vm / D) * dm
    if magnitude > 0.0:          # else no motion (or one that underflows)
        qd[:] = d / dm
    return kappa, magnitude


@njit(cache=True)
def _condition(J):
    """Return the condition number of J (inf when singular, zero or not finite), compiled."""
    jm = _largest(J)
    if not (jm > 0.0 and jm < np.inf):
        return np.inf
    s = np.linalg.svd(J / jm, full_matrices=False)[1]
    return s[0] / s[-1] if s[-1] > 0.0 else np.inf


@njit(cache=True)
def _limits(q, target, magnitude, prev, filtered, vlim, alim, lower, upper, margin, dt,
            gain, qd):
    """
    Stages 4-7 of :class:`Servo` in one pass; writes ``qd`` and ``filtered``.

    The target is ``magnitude * target`` (``magnitude`` may be inf: a target beyond every
    velocity limit).  Velocity-limit scale of the target, low-pass (``gain`` = 1: off),
    acceleration-limited change from ``prev``, joint-limit scale (toward a limit a joint
    moves no faster than ``sqrt(2 a d)``, which stops it within the distance ``d`` to its
    limit less ``margin``, and than ``d / dt``; all joints scaled alike).  Finite ``q``,
    ``prev``, ``filtered`` and limits give a finite ``qd`` whatever the target's magnitude.
    Returns ``(velocity scale, joint-limit scale)``.
    """
    n = q.shape[0]
    speed = magnitude            # the largest magnitude within every velocity limit
    for j in range(n):
        a = abs(target[j])
        if a > 0.0 and a * speed > vlim[j]:
            speed = vlim[j] / a
    if not speed < np.inf:       # no component: nothing to scale
        speed = 0.0
    s = speed / magnitude if magnitude > 0.0 else 1.0
    k = 1.0
    for j in range(n):
        filtered[j] = (1.0 - gain) * filtered[j] + gain * (speed * target[j])
        step = abs(filtered[j] - prev[j])
        if step * k > alim[j] * dt:
            k = alim[j] * dt / step
    limit = 1.0
    for j in range(n):
        qd[j] = (1.0 - k) * prev[j] + k * filtered[j]    # no overflow of the difference
        if qd[j] > 0.0:
            d = upper[j] - margin - q[j]
        elif qd[j] < 0.0:
            d = q[j] - (lower[j] + margin)
        else:
            continue
        # 0 within the margin (also for an acceleration limit whose 2 a d would overflow)
        bound = min(math.sqrt(2.0 * alim[j] * d), d / dt) if d > 0.0 else 0.0
        if abs(qd[j]) * limit > bound:
            limit = bound / abs(qd[j])
    for j in range(n):
        qd[j] *= limit
    return s, limit


def checked(values, names, what):
    """
    Return a command ``values`` as a float array (len(names),), or raise ValueError.

    Refused, with the component named by ``names`` (twist axes, joint names): a wrong
    length, a non-finite value, or one beyond the plausibility bound :data:`MAX_SPEED`.
    Checked before any computation: the law never sees such a command.
    """
    a = np.asarray(values, dtype=float)
    if a.shape != (len(names),):
        raise ValueError(f'{what} needs {len(names)} values, got {a.size}')
    if _largest(a) <= MAX_SPEED:
        return a
    i = int(np.flatnonzero(~(np.abs(a) <= MAX_SPEED))[0])
    if not math.isfinite(a[i]):
        raise ValueError(f'non-finite {what} ({names[i]} = {a[i]})')
    raise ValueError(f'{what} beyond the plausibility bound: {names[i]} = {a[i]:g}, more than '
                     f'{MAX_SPEED:g} rad/s or m/s')


def _vector(x, n, name, default=None):
    """Broadcast a parameter to (n,) (None: ``default``); ValueError unless finite and > 0."""
    a = np.asarray(default if x is None else x, dtype=float)
    if a.size not in (1, n):
        raise ValueError(f'{name} needs 1 or {n} values, got {a.size}')
    a = np.broadcast_to(a.reshape(-1), (n,)).copy()
    if not np.all((a > 0) & np.isfinite(a)):
        raise ValueError(f'{name} must be finite positive numbers, got {a.tolist()}')
    return a


class Servo:
    """
    One servo loop: its state (the last output, the filter) and the law's settings.

    Parameters (all SI; per-joint ones take one value for every joint or one per joint):
    ``link`` controlled link; ``base_frame`` the "world" of spatial/hybrid/mixed commands
    (a link fixed to the root; None: the root); ``period`` [s]; ``mask`` 6 flags (ω, v),
    None = all; ``damping`` largest DLS damping λ and ``damping_threshold`` the smallest
    singular value below which it acts; ``singularity_thresholds`` (decelerate, halt)
    condition numbers; ``margin`` [rad or m] before each position limit;
    ``velocity_limits`` (None: the URDF's, 1 rad/s where it has none) times
    ``velocity_scale``; ``acceleration_limits`` [rad/s²]; ``smoothing`` low-pass time
    constant [s] (0: off).
    """

    def __init__(self, model, link, *, base_frame=None, period=0.002, mask=None,
                 damping=0.05, damping_threshold=0.02, singularity_thresholds=(17.0, 30.0),
                 margin=0.1, velocity_limits=None, velocity_scale=1.0,
                 acceleration_limits=5.0, smoothing=0.0):
        if model.floating:
            raise ValueError(f"'{model.name}' has a floating base: the servo drives fixed-base "
                             'arms')
        self.model = model
        n = model.nq
        self.set_link(link)
        self.set_base_frame(base_frame)
        self.set_mask(mask)
        if not (np.isfinite(period) and period > 0):
            raise ValueError(f'period must be a positive number of seconds, got {period!r}')
        lo, hi = (float(x) for x in singularity_thresholds)
        if not (1.0 <= lo < hi):
            raise ValueError(f'singularity_thresholds must be 1 <= decelerate < halt, got '
                             f'{singularity_thresholds!r}')
        for name, value in (('damping', damping), ('damping_threshold', damping_threshold),
                            ('margin', margin), ('smoothing', smoothing)):
            if not (np.isfinite(value) and value >= 0):
                raise ValueError(f'{name} must be a finite number >= 0, got {value!r}')
        urdf = np.where(np.isfinite(model.velocity_limit) & (model.velocity_limit > 0),
                        model.velocity_limit, 1.0)
        self.period = float(period)
        self.damping, self.damping_threshold = float(damping), float(damping_threshold)
        self.singularity_thresholds = (lo, hi)
        self.margin = float(margin)
        self.velocity_limits = _vector(velocity_limits, n, 'velocity_limits', urdf) * \
            _vector(velocity_scale, 1, 'velocity_scale')[0]
        self.acceleration_limits = _vector(acceleration_limits, n, 'acceleration_limits')
        self.smoothing = float(smoothing)
        self.reset()

    # -- settings ------------------------------------------------------------------------
    def set_link(self, link):
        """Select the controlled link (ValueError naming it when the model has none)."""
        self.model.link_index(link)
        self.link = link

    def set_base_frame(self, frame):
        """Select the "world" of world-resolved commands: a link fixed to the root (None: root)."""
        m = self.model
        frame = frame or m.root_link
        if m.link_body[m.link_index(frame)] >= 0:
            raise ValueError(f'base_frame {frame!r} moves with the joints; give a link fixed to '
                             f'the root {m.root_link!r}')
        C = link_pose(m, m.neutral(), frame)
        self.base_frame = frame
        self._base = None if frame == m.root_link or np.allclose(C, np.eye(4)) else C

    def set_mask(self, mask):
        """Select the commanded axes: 6 flags (ωx, ωy, ωz, vx, vy, vz); None: all."""
        m = np.ones(6, dtype=bool) if mask is None or len(mask) == 0 else \
            np.asarray(mask, dtype=float) != 0
        if m.shape != (6,) or not m.any():
            raise ValueError(f'mask needs 6 flags with at least one set, got {mask!r}')
        self.mask = m

    def reset(self):
        """Forget the last output and the filter (arm at rest)."""
        n = self.model.nq
        self.velocities = np.zeros(n)
        self._filtered = np.zeros(n)
        self.status = Status.IDLE
        self.condition = float('nan')

    def carry_state_from(self, other):
        """
        Continue from the state of ``other``, a law of the same model this one replaces.

        Takes its last output (:attr:`velocities`, rad/s or m/s), its low-pass filter's
        command, its status and condition number: a law rebuilt with new settings goes on
        from where the old one was, without a jump in the commanded velocities (the
        acceleration limit acts from the old output).  ValueError for a law of another
        number of joints.
        """
        if other.model.nq != self.model.nq:
            raise ValueError(f'a law of {other.model.nq} joints cannot hand its state to one '
                             f'of {self.model.nq}')
        self.velocities = other.velocities.copy()
        self._filtered = other._filtered.copy()
        self.status, self.condition = other.status, other.condition

    # -- the command Jacobian ------------------------------------------------------------
    def jacobian(self, q, representation='hybrid', frame=None):
        """
        Jacobian (6, nq) of the controlled link in the command's frame (before the mask).

        ``representation`` with "world" = ``base_frame``; or ``frame``: angular and linear
        velocity of the link origin, both resolved in link ``frame`` (TwistStamped).
        """
        m, link = self.model, self.link
        if frame is not None:
            if frame == link:
                return jacobian(m, q, link, 'body')
            J = jacobian(m, q, link, 'hybrid')
            if frame == m.root_link:
                return J
            R = link_pose(m, q, frame)[:3, :3].T
            return np.concatenate([R @ J[:3], R @ J[3:]])
        if representation not in REPRESENTATIONS:
            raise ValueError(f'unknown representation {representation!r}; expected one of '
                             f"{', '.join(REPRESENTATIONS)}")
        J = jacobian(m, q, link, representation)
        if self._base is None or representation == 'body':
            return J
        R, r = self._base[:3, :3].T, self._base[:3, 3]
        out = J.copy()
        if representation != 'mixed':
            out[:3] = R @ J[:3]
        if representation == 'spatial':   # Ad(C_BW): v_B = Rᵀ(v_W + ω × r)
            out[3:] = R @ (J[3:] + np.cross(J[:3].T, r).T)
        else:
            out[3:] = R @ J[3:]
        return out

    # -- steps ---------------------------------------------------------------------------
    def twist_step(self, q, twist, representation='hybrid', frame=None, dt=None):
        """
        One step toward twist ``twist`` (6,) (ω, v) of the controlled link; ServoOutput.

        ``representation`` / ``frame`` as :meth:`jacobian`; ``dt`` the time since the last
        step (default ``period``).  Components outside the mask are ignored.  ValueError
        for a twist :func:`checked` refuses (non-finite, beyond :data:`MAX_SPEED`) or an
        unknown frame or representation (state unchanged).
        """
        q = np.asarray(q, dtype=float)
        V = checked(twist, TWIST_AXES, 'twist')
        if frame is not None:
            self.model.link_index(frame)
        J = self.jacobian(q, representation, frame)[self.mask]
        Vm = V[self.mask]
        target = np.empty(self.model.nq)
        kappa, magnitude = _dls_step(J, Vm, self.damping, self.damping_threshold, target)
        scale, status = 1.0, Status.NO_WARNING
        lo, hi = self.singularity_thresholds
        if kappa > lo and magnitude > 0.0:
            # one small step ahead (1 mrad for the fastest joint): toward a singularity?
            q1 = q + 1e-3 * target
            kappa1 = _condition(self.jacobian(q1, representation, frame)[self.mask])
            scale = singularity_scale(kappa, kappa1 > kappa, lo, hi)
            if scale < 1.0:
                status = (Status.HALT_FOR_SINGULARITY if scale == 0.0 else
                          Status.DECELERATE_FOR_SINGULARITY)
        return self._finish(q, target, magnitude * scale, scale, status, kappa, dt)

    def joint_step(self, q, velocities, dt=None):
        """
        One step toward joint velocities ``velocities`` (nq,), limits applied; ServoOutput.

        ValueError for velocities :func:`checked` refuses (state unchanged).
        """
        q = np.asarray(q, dtype=float)
        target = checked(velocities, self.model.joint_names, 'joint velocities')
        magnitude = _largest(target)
        if magnitude > 0.0:
            target = target / magnitude
        return self._finish(q, target, magnitude, 1.0, Status.NO_WARNING, float('nan'), dt)

    def stop_step(self, q, status=Status.STALE_COMMAND, dt=None):
        """One step toward rest (no, a stale or a refused command): decelerate at the limits."""
        return self._finish(np.asarray(q, dtype=float), np.zeros(self.model.nq), 0.0, 1.0,
                            status, self.condition, dt)

    def _finish(self, q, target, magnitude, scale, status, kappa, dt):
        """
        Stages 4-7 of the law (one compiled kernel), the outputs and the state update.

        The target is ``magnitude * target`` (``target`` a direction, ``magnitude`` possibly
        inf).  ValueError (state unchanged) for a non-finite ``q`` or ``dt``: every output is
        finite.
        """
        m, dt = self.model, self.period if dt is None else float(dt)
        if not (0.0 < dt < math.inf) or q.shape != (m.nq,) or not _largest(q) < math.inf:
            raise ValueError(f'a step needs {m.nq} finite joint positions and a time step '
                             f'> 0, got q = {q.tolist()}, dt = {dt!r}')
        gain = 1.0 - math.exp(-dt / self.smoothing) if self.smoothing > 0 else 1.0
        qd = np.empty(m.nq)
        s, limit = _limits(q, np.ascontiguousarray(target, dtype=float), float(magnitude),
                           self.velocities, self._filtered, self.velocity_limits,
                           self.acceleration_limits, m.lower, m.upper, self.margin, dt, gain,
                           qd)
        if limit < 1.0 and (status == Status.NO_WARNING or limit == 0.0):
            status = (Status.HALT_FOR_JOINT_LIMIT if limit == 0.0 else
                      Status.DECELERATE_FOR_JOINT_LIMIT)
        self.velocities = qd
        self.status, self.condition = status, kappa
        return ServoOutput(qd.copy(), q + qd * dt, status, kappa, scale * s * limit)


class CommandHistory:
    """
    Joint velocity commands by the time they were sent; predicts the state they lead to.

    :meth:`add` each command with its time (the arm's clock); :meth:`predict` returns a measured
    ``q`` advanced by the commands integrated from ``since`` (when the measurement arrived)
    to ``now``: each command acts from its time until the next one.  ``horizon`` seconds
    of commands are kept (older measurements are advanced over that much at most).
    """

    def __init__(self, horizon=0.25):
        self.horizon = float(horizon)
        self.clear()

    def clear(self):
        """Forget every command (the arm is taken to be at rest)."""
        self._t, self._qd = [], []

    def add(self, t, qd):
        """Record command ``qd`` sent at time ``t`` (a time before the last: a clock reset)."""
        if self._t and t < self._t[-1]:
            self.clear()
        self._t.append(float(t))
        self._qd.append(np.asarray(qd, dtype=float))
        while self._t and self._t[0] < t - self.horizon:
            del self._t[0], self._qd[0]

    def predict(self, q, since, now):
        """Return ``q + ∫ q̇_cmd dt`` over ``[since, now]``."""
        out = np.array(q, dtype=float)
        t1 = now
        for k in range(len(self._t) - 1, -1, -1):   # newest first, back to ``since``
            t0 = self._t[k]
            overlap = min(t1, now) - max(t0, since)
            if overlap > 0:
                out += overlap * self._qd[k]
            if t0 <= since:
                break
            t1 = t0
        return out
