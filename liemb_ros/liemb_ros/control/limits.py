"""
A trajectory checked against the robot's limits before it is tracked.

:func:`check_limits` samples a trajectory as the control loop will and refuses it
(:class:`LimitError`) when, at any sample, a moved joint's position lies beyond its URDF
``<limit lower upper>`` by more than :data:`POSITION_MARGIN` (the segment from the
state it begins at may stay as far out as that state is: a joint beyond its limit may be
brought back, and as fast: one beyond its velocity limit may be slowed down; a point
given beyond a limit is named first), a moved joint's velocity exceeds ``<limit
velocity>`` or a joint's feed-forward torque exceeds ``<limit effort>`` by more than the
fraction :data:`RATE_MARGIN`; or when its last point has a velocity
(JointTrajectoryController's default, ``allow_nonzero_velocity_at_trajectory_end:
false``), or it holds a point due now that is not the state (a jump).  The feed-forward
torque is what the computed-torque law commands on the trajectory (``e = 0``):
``ID(q_d, q̇_d, q̈_d)`` with the rotor inertia, the joint damping and the compensated
friction, before any feedback.  Samples: every
segment at its start and at least every :data:`CHECK_STEP` (the 1 kHz loop's period;
a trajectory longer than ``CHECK_SAMPLES * CHECK_STEP`` at ``duration / CHECK_SAMPLES``),
at least :data:`MIN_INTERVALS` intervals per segment, and the last point as it is
reached.  Between two samples ``h`` apart a position can pass the sampled ones by at
most ``h² max|q̈| / 8`` (12.5 µrad at 100 rad/s² for 1 ms, well within the margin), a
velocity by ``h² max|q⃛| / 8``.  A refusal names the joint, the point (its index among
the points given and its ``time_from_start``, or the segment and the time within it), the
value and the limit; for a velocity or an effort, also the factor by which the trajectory
slowed down uniformly would fit (:func:`slowdown`), or that no timing helps.  The
sampling and the dynamics are compiled and run without the GIL: a check in a thread does
not hold up a control loop in another.
"""
import math

import numpy as np
from numba import njit

from ..core._kernels.dispatch import check
from ..core._kernels.rnea import id_plain
from .laws import _computed_torque_pass, _per_joint, FRICTION_VELOCITY
from .trajectory import _segment_into, JointTrajectory

#: a position may pass its joint's limit by this much (rad or m): a point planned on the
#: limit and rounded, and what a 1 kHz sampling can miss
POSITION_MARGIN = 1e-3
#: a velocity or a feed-forward torque may pass its limit by this fraction of it
RATE_MARGIN = 1e-3
#: the spacing of the samples [s]: the control loop's period at 1 kHz
CHECK_STEP = 1e-3
#: the most samples of one trajectory (a longer one is sampled more coarsely)
CHECK_SAMPLES = 200_000
#: every segment is sampled at this many intervals at least
MIN_INTERVALS = 4
#: a last point's velocity above this is not at rest (JointTrajectoryController's float
#: epsilon)
END_VELOCITY = float(np.finfo(np.float32).eps)


_WHAT = ('', 'position', 'velocity', 'effort')


class LimitError(ValueError):
    """
    A trajectory beyond a limit of the robot (the message says where and by how much).

    :attr:`joint` (name), :attr:`point` (index among the points given; -1: the state the
    trajectory begins at), :attr:`time` (``time_from_start`` of the sample, s),
    :attr:`quantity` ('position', 'velocity', 'effort', 'end velocity', 'jump'),
    :attr:`value`, :attr:`limit`, :attr:`slowdown` (the uniform slow-down factor that
    would fit, inf when none does, nan when timing does not matter).
    """

    def __init__(self, text, joint, point, time, quantity, value, limit, slowdown):
        super().__init__(text)
        self.joint, self.point, self.time, self.quantity = joint, point, time, quantity
        self.value, self.limit, self.slowdown = value, limit, slowdown


def check_limits(model, trajectory, friction=True, armature=0.0, part='all'):
    """
    Raise :class:`LimitError` unless ``trajectory`` stays within ``model``'s limits.

    ``trajectory``: a :class:`JointTrajectory` of ``model``'s joints; ``friction``,
    ``armature``: as the computed-torque law that will track it (:func:`computed_torque`).
    Fixed-base models (the computed-torque law's).  The samples, the limits and the
    margins: the module docstring.  ``part``: 'all'; 'points': all but the segment from the
    state (which depends on the state alone: a big trajectory is checked with one state,
    then its first segment with the latest); 'start': that segment, a jump and the end.
    """
    tr = trajectory
    cols, P = tr.columns, tr.positions
    lo, hi = model.lower[cols], model.upper[cols]
    given = P[int(tr.index[0] == -1):]   # the points given (a waypoint beyond: named first)
    out = (given < lo - POSITION_MARGIN) | (given > hi + POSITION_MARGIN)
    if out.any():
        k, j = np.argwhere(out)[0]
        k += int(tr.index[0] == -1)
        x = P[k, j]
        raise _error(model, tr, 'position', cols[j], tr.times[k], x,
                     lo[j] if x < lo[j] else hi[j], math.nan, segment=max(k - 1, 0))
    if part == 'points' and tr.index[0] == -1 and tr.times.size == 2:
        return   # the one segment starts at the state
    if part != 'points' and tr.velocities is not None:
        moving = np.abs(tr.velocities[-1]) > END_VELOCITY
        if moving.any():
            j = int(np.flatnonzero(moving)[0])
            raise _error(model, tr, 'end velocity', cols[j], tr.times[-1],
                         tr.velocities[-1, j], 0.0, math.nan)
    if part != 'points' and tr.index[0] >= 0:   # a point due now, held: it must be the state
        far = np.abs(P[0] - tr.hold[cols]) > POSITION_MARGIN
        if far.any():
            j = int(np.flatnonzero(far)[0])
            raise _error(model, tr, 'jump', cols[j], 0.0, P[0, j], tr.hold[cols[j]],
                         _jump_time(model, tr, friction, armature))
    lo0, hi0, vmax0 = lo, hi, model.velocity_limit.copy()   # (one compiled signature)
    if tr.index[0] == -1:   # the segment from the state may stay as far out as it is
        lo0, hi0 = np.minimum(lo, P[0]), np.maximum(hi, P[0])
        if tr.velocities is not None:   # ... and as fast
            vmax0[cols] = np.maximum(vmax0[cols], np.abs(tr.velocities[0]))
    last = tr.times.size - 1
    first, stop = {'all': (0, last), 'points': (int(tr.index[0] == -1), last),
                   'start': (0, int(tr.index[0] == -1))}[part]
    if part == 'start' and not stop:
        return   # no segment from the state (a held point, checked above)
    found = np.zeros(5)
    code = _first_violation(*_law_args(model, friction, armature), *tr.packed, lo, hi, lo0,
                            hi0, model.velocity_limit, vmax0, model.effort_limit,
                            _step(tr.times), first, stop, found)
    if code == 4:
        check(model, int(found[4]))   # a kernel status: non-finite, singular
    if code:
        s, j, value, limit, k = found
        quantity = _WHAT[code]
        factor = (math.nan if quantity == 'position'
                  else slowdown(model, tr, friction, armature))
        raise _error(model, tr, quantity, int(j), s, value, limit, factor, segment=int(k))


def slowdown(model, trajectory, friction=True, armature=0.0):
    """
    Return the least factor ``s`` by which ``trajectory``, slowed down uniformly, fits.

    Slowed down by ``s`` (every time ``× s``, velocities ``/ s``, accelerations ``/ s²``)
    the path is the same and each sample's torque is ``a / s² + b / s + c``, with ``a`` the
    inertial and Coriolis part (and the rotor inertia), ``b`` the damping, ``c`` gravity and
    the friction feed-forward (taken as fixed: an upper bound of its size); each velocity
    is ``q̇ / s``.  The least ``s`` meeting every velocity and effort limit (with
    :data:`RATE_MARGIN`) over the samples; below 1: it could go faster; inf: gravity and
    friction alone are beyond a limit somewhere.  Exact for the given points' timing; the
    segment from the state it begins at (whose velocity is the state's) does not scale so,
    and is counted as if it did.
    """
    tr = trajectory
    law = _law_args(model, friction, armature)
    return float(_slowdown(*law, *tr.packed, model.velocity_limit, model.effort_limit,
                           _step(tr.times), 0, tr.times.size - 1))


def _law_args(model, friction, armature):
    """
    Return the computed-torque pass's model and law arguments (e = 0: any gains).

    The scans run without the interpreter lock (``nogil``: the trajectory action checks a
    goal in its own thread), so each gets a workspace of its own, not ``model.data``.
    """
    n = model.nq
    if model.floating:
        raise ValueError(f"check_limits needs a fixed-base robot; '{model.name}' has a "
                         'floating base')
    return (model.packed_int, model.packed_float, np.empty_like(model.data.work), np.ones(n),
            np.ones(n), model.damping,
            model.friction, bool(friction), _per_joint(armature, n))


def _step(times):
    """Return the sample spacing of a trajectory of these point times (module docstring)."""
    return max(CHECK_STEP, float(times[-1] - times[0]) / CHECK_SAMPLES)


def _tfs(tr, s):
    """``time_from_start`` of the trajectory's time ``s`` (s after its origin)."""
    return float(s + tr.origin - tr.start)


def _jump_time(model, tr, friction, armature):
    """
    Return the least ``time_from_start`` in which the held point could be reached.

    The slow-down factor of the same interpolation from the state (at rest) to the point in
    1 s.
    """
    V = () if tr.velocities is None else tr.velocities
    A = () if tr.accelerations is None else tr.accelerations
    trial = JointTrajectory(tr.joint_names, tr.names, [1.0], tr.positions, V, A, start=0.0,
                            q=tr.hold, qd=np.zeros(model.nq))
    return slowdown(model, trial, friction, armature)


def _unit(model, joint, quantity):
    """Return the unit of ``quantity`` of model joint index ``joint``."""
    prismatic = any(t == 'prismatic' for b, t in enumerate(model.body_joint_type)
                    if model.q_index[b] == joint)
    base = 'm' if prismatic else 'rad'
    return {'position': base, 'jump': base, 'velocity': f'{base}/s',
            'end velocity': f'{base}/s', 'effort': 'N' if prismatic else 'N m'}[quantity]


def _error(model, tr, quantity, joint, s, value, limit, factor, segment=None):
    """
    Return the :class:`LimitError` of one violation at the trajectory's time ``s``, in words.

    ``segment``: the segment of the sample (None: the sample is a point).
    """
    name = model.joint_names[joint]
    unit = _unit(model, joint, quantity)
    tfs = _tfs(tr, s)
    at = np.flatnonzero(tr.times == s)
    if at.size or segment is None:   # at a point (the held point: its own time)
        point = int(tr.index[at[0] if at.size else 0])
        where = 'at ' + _point(tr, point)
    else:
        a, b = tr.index[segment], tr.index[segment + 1]
        point = int(b)
        where = (f'at time_from_start {tfs:.4g} s, between {_point(tr, a)} and '
                 f'{_point(tr, b)}')
    if quantity == 'position':
        text = (f'{name} position {value:.6g} {unit} {where} is beyond its limits '
                f'[{model.lower[joint]:.6g}, {model.upper[joint]:.6g}] {unit} (margin '
                f'{POSITION_MARGIN:g})')
    elif quantity in ('velocity', 'effort'):
        text = (f'{name} {"velocity" if quantity == "velocity" else "feed-forward torque"} '
                f'{value:.4g} {unit} {where} is beyond its limit {limit:.4g} {unit}')
        text += (f'; slowed down by a factor of {factor:.3g} or more (every time_from_start '
                 f'x {factor:.3g}) it would be within every limit' if math.isfinite(factor)
                 else '; no timing helps: gravity and friction alone are beyond an effort '
                 'limit on this path')
    elif quantity == 'end velocity':
        text = (f'{name} velocity {value:.6g} {unit} {where}: a trajectory must end at rest '
                '(as JointTrajectoryController requires by default)')
    else:
        text = (f'{name} at {limit:.6g} {unit} would jump to {value:.6g} {unit}: '
                f'{_point(tr, point)} is due now and is not the current state; '
                + (f'reaching it from there at rest needs time_from_start >= {factor:.3g} s'
                   if math.isfinite(factor) else 'no timing reaches it: gravity and '
                   'friction alone are beyond an effort limit there'))
    return LimitError(text, name, point, tfs, quantity, value, limit, factor)


def _point(tr, index):
    """Name a point: ``point 3 (time_from_start 1.5 s)``, or the state it begins from."""
    if index < 0:
        return f'the current state (time_from_start {_tfs(tr, 0.0):.4g} s)'
    return f'point {index} (time_from_start {tr.time_from_start[index]:.4g} s)'


@njit(cache=True)
def _grid(t, step, first, stop):
    """
    Return the sample times (s after the origin) and their segments.

    Of segments ``first`` to ``stop - 1`` (the module docstring), and the last point when
    ``stop`` is the last.
    """
    last = t.size - 1
    count = int(stop == last)
    for k in range(first, stop):
        count += max(MIN_INTERVALS, int(math.ceil((t[k + 1] - t[k]) / step)))
    s = np.empty(count)
    seg = np.empty(count, dtype=np.int64)
    i = 0
    for k in range(first, stop):
        m = max(MIN_INTERVALS, int(math.ceil((t[k + 1] - t[k]) / step)))
        for j in range(m):
            s[i] = t[k] + (t[k + 1] - t[k]) * j / m
            seg[i] = k
            i += 1
    if stop == last:
        s[i] = t[last]
        seg[i] = max(last - 1, 0)
    return s, seg


@njit(cache=True, inline='always')
def _at(t, P, V, A, kind, cols, hold, s, k, q, qd, qdd):
    """Write the trajectory at ``s`` in segment ``k`` (a lone point: held) into q, qd, qdd."""
    for c in range(hold.size):
        q[c] = hold[c]
        qd[c] = 0.0
        qdd[c] = 0.0
    if t.size == 1:
        for j in range(cols.size):
            q[cols[j]] = P[0, j]
        return
    _segment_into(P, V, A, kind, k, t[k + 1] - t[k], min(s - t[k], t[k + 1] - t[k]), cols,
                  q, qd, qdd)


@njit(cache=True, nogil=True)
def _first_violation(ki, kf, w, kp, kd, damping, friction, with_friction, armature, t, P, V, A,
                     kind, cols, hold, lo, hi, lo0, hi0, vmax, vmax0, emax, step, first, stop,
                     found):
    """
    Return the kind of the first violation (0 none, 1 position, 2 velocity, 3 effort, 4).

    4: a kernel status, left in ``found[4]``; ``found``: (s, joint, value, limit, segment).

    A position beyond a limit comes first wherever it is (no timing helps), then the
    earliest velocity or effort.  Segments ``first`` to ``stop - 1`` (:func:`_grid`);
    segment 0 within ``lo0``, ``hi0``, ``vmax0`` (the state's segment: as far out as the
    state).
    """
    s_all, seg = _grid(t, step, first, stop)
    n = hold.size
    q, qd, qdd = np.empty(n), np.empty(n), np.empty(n)
    a, ff, tau = np.empty(n), np.empty(n), np.empty(n)
    rate = 0
    for i in range(s_all.size):
        s, k = s_all[i], seg[i]
        _at(t, P, V, A, kind, cols, hold, s, k, q, qd, qdd)
        for j in range(cols.size):
            c = cols[j]
            low, high, fast = ((lo0[j], hi0[j], vmax0[c]) if k == 0
                               else (lo[j], hi[j], vmax[c]))
            x = q[c]
            if x < low - POSITION_MARGIN or x > high + POSITION_MARGIN:
                found[0], found[1], found[2], found[4] = s, c, x, k
                found[3] = low if x < low else high
                return 1
            if not rate and abs(qd[c]) > fast * (1.0 + RATE_MARGIN):
                found[0], found[1], found[2], found[3], found[4] = s, c, qd[c], fast, k
                rate = 2
        if rate:
            continue   # the positions still to look at
        st = _computed_torque_pass(ki, kf, w, q, qd, q, qd, qdd, kp, kd, damping, friction,
                                   with_friction, armature, a, ff, tau)
        if st:
            found[4] = st
            return 4
        for c in range(n):
            if abs(tau[c]) > emax[c] * (1.0 + RATE_MARGIN):
                found[0], found[1], found[2], found[3], found[4] = s, c, tau[c], emax[c], k
                rate = 3
                break
    return rate


@njit(cache=True, inline='always')
def _least_root(a, b, c):
    """Return the least positive root of ``a u² + b u + c`` (inf when none)."""
    best = np.inf
    if a == 0.0:
        if b != 0.0 and -c / b > 0.0:
            best = -c / b
        return best
    d = b * b - 4.0 * a * c
    if d < 0.0:
        return best
    r = math.sqrt(d)
    for u in ((-b - r) / (2.0 * a), (-b + r) / (2.0 * a)):
        if 0.0 < u < best:
            best = u
    return best


@njit(cache=True, nogil=True)
def _slowdown(ki, kf, w, kp, kd, damping, friction, with_friction, armature, t, P, V, A, kind,
              cols, hold, vmax, emax, step, first, stop):
    """:func:`slowdown` of the samples (the largest factor any sample needs)."""
    s_all, seg = _grid(t, step, first, stop)
    n = hold.size
    q, qd, qdd = np.empty(n), np.empty(n), np.empty(n)
    zero = np.zeros(n)
    dyn, grav = np.empty(n), np.empty(n)
    need = 0.0
    for i in range(s_all.size):
        _at(t, P, V, A, kind, cols, hold, s_all[i], seg[i], q, qd, qdd)
        for j in range(cols.size):
            c = cols[j]
            need = max(need, abs(qd[c]) / (vmax[c] * (1.0 + RATE_MARGIN)))
        st = id_plain(ki, kf, w, q, qd, qdd, 0, 0.0, dyn)      # M q̈ + C q̇
        st = st or id_plain(ki, kf, w, q, zero, zero, 0, 1.0, grav)   # g
        if st:
            return np.inf
        for c in range(n):
            limit = emax[c] * (1.0 + RATE_MARGIN)
            if not math.isfinite(limit):
                continue
            a = dyn[c] + armature[c] * qdd[c]
            b = damping[c] * qd[c]
            g = grav[c]
            if with_friction:
                g += friction[c] * math.tanh(qd[c] / FRICTION_VELOCITY)
            if abs(g) > limit:
                return np.inf
            u = min(_least_root(a, b, g - limit), _least_root(a, b, g + limit))
            if u < np.inf:
                need = max(need, 1.0 / u)
    return need
