"""
Identify a robot's dynamics from a recording: ``liemb identify RUN.mcap --robot ROBOT``.

Reads every ``joint_states`` message of the recording (positions, velocities and the
measured efforts, stamped; no down-sampling), computes the accelerations as the
derivative of the velocities low-pass filtered without delay (a forward-backward
Butterworth; ``--cutoff``, :mod:`liemb_ros.core.signals`; velocities from the filtered
positions when none were recorded; ``--effort-held`` for efforts held over the interval
before their stamps, as a lock-step simulation or a digital controller records them: then
no accelerations, the equations integrated over each interval in momentum form,
:mod:`liemb_ros.core.held_efforts`), leaves out the samples where
a joint is near rest (``--min-velocity``: it sticks, and Coulomb friction is no function
of its velocity there), and fits the base parameters, the viscous and Coulomb friction
and the rotor inertia (armature) of every joint by weighted least squares, then the
physically consistent parameters (:mod:`liemb_ros.core.identification_fit`).  The last
``--holdout`` part of the run is kept out of the fits and used to validate them (its
samples where every joint moves).

It prints a table (parameter, URDF value, identified value, standard error; the standard
parameters the torques cannot tell apart marked "not identifiable") and writes, into
``--out`` (default: beside the recording):

- ``RUN_identified.urdf``: the robot's URDF with the consistent fit's inertials and each
  joint's friction in ``<dynamics damping friction>``, where the simulation and dynamics
  nodes read them (``robot:=RUN_identified.urdf``);
- ``RUN_identified.yaml``: a ROS parameter file (``params_file:=`` of ``liemb launch``)
  with the dynamics node's ``armature`` per joint (and with ``--payload`` its
  ``payload.*``); the friction as comments;
- ``RUN_validation.png``: measured against predicted torques on the held-out part, of the
  URDF and of the identified model, per joint.

``--payload LINK`` identifies instead what LINK holds (mass, centre of mass, inertia), the
rest of the robot being ``--robot`` (e.g. an identified URDF) with the armature of
``--params`` (a YAML this command wrote).  Exit status 2 with one line on stderr for a
recording without efforts, joints the robot does not have, too little excitation (the
condition number said) and other unusable input.
"""
import os
import sys

import numpy as np

#: the default cut-off frequency of the velocity filter [Hz]
CUTOFF = 20.0
#: the default held-out fraction of the run (its end)
HOLDOUT = 0.2
#: the default slowest joint speed of a sample used [rad/s or m/s]: near rest a joint with
#: Coulomb friction sticks, its friction anything in [-F, F], not F sign(q̇)
MIN_VELOCITY = 0.05
#: samples per call of interval_regressor in held_rows: bounded temporaries on long runs
HELD_CHUNK = 20000
#: rows of the growing arrays of :func:`read_joint_states`
BLOCK = 4096


class IdentifyError(Exception):
    """Input ``liemb identify`` cannot use: its message is the one line it prints."""


def add_arguments(parser):
    """Add the ``liemb identify`` arguments to ``parser``."""
    parser.add_argument('file', help='an MCAP recording with joint_states carrying efforts '
                                     '(liemb record, liemb launch ... --record, ros2 bag)')
    parser.add_argument('--robot', required=True,
                        help='URDF or xacro file, or a shipped robot name: the model to start '
                             'from (its values are the table\'s "URDF value")')
    parser.add_argument('--payload', metavar='LINK',
                        help='identify what LINK holds instead (the rest of the robot known: '
                             '--robot, with the armature of --params)')
    parser.add_argument('--params', metavar='FILE.yaml',
                        help='with --payload: a RUN_identified.yaml of an earlier liemb '
                             'identify (the armature of the robot without the payload)')
    parser.add_argument('--cutoff', type=float, default=CUTOFF, metavar='HZ',
                        help='cut-off frequency of the zero-phase low-pass filter of the '
                             f'velocities before differentiation (default {CUTOFF:g} Hz: a '
                             'few times above the motion, below the noise; 0: no filter, '
                             'for velocities without noise such as a simulation\'s)')
    parser.add_argument('--effort-held', action='store_true',
                        help='each effort was held over the interval before its stamp (a '
                             'lock-step simulation, commanded torques): fit the equations of '
                             'motion integrated over each interval (momentum form, no '
                             'accelerations)')
    parser.add_argument('--holdout', type=float, default=HOLDOUT, metavar='FRACTION',
                        help='the end of the run kept out of the fit for validation '
                             f'(default {HOLDOUT:g})')
    parser.add_argument('--min-velocity', type=float, default=MIN_VELOCITY, metavar='V',
                        help='leave out the samples where a joint moves slower than V rad/s '
                             '(or m/s): a joint near rest sticks, its friction is not '
                             f'F sign(qd) (default {MIN_VELOCITY:g}; 0 keeps every sample)')
    parser.add_argument('--topic', default='/joint_states', help='the joint_states topic')
    parser.add_argument('--no-friction', action='store_true',
                        help='fit no viscous and Coulomb friction')
    parser.add_argument('--no-armature', action='store_true', help='fit no rotor inertia')
    parser.add_argument('--out', help='folder of the files written (default: the recording\'s)')
    parser.add_argument('--quiet', action='store_true', help='no progress bar')


# --------------------------------------------------------------------------- reading
class _Columns:
    """Rows of per-joint values in arrays that grow by :data:`BLOCK` rows (bounded copies)."""

    def __init__(self):
        self.n, self.names, self.index = 0, [], {}
        self.t = np.empty(BLOCK)
        self.values = {k: np.empty((BLOCK, 0)) for k in ('q', 'qd', 'effort')}

    def add(self, t, names, values):
        cols = []
        for name in names:
            if name not in self.index:
                self.index[name] = len(self.names)
                self.names.append(name)
                for k, a in self.values.items():
                    self.values[k] = np.hstack([a, np.full((a.shape[0], 1), np.nan)])
            cols.append(self.index[name])
        for k, v in values.items():
            if len(v) not in (0, len(cols)):
                raise ValueError(f'{len(v)} {k} values for {len(cols)} joint names')
        if self.n == self.t.size:
            self.t = np.concatenate([self.t, np.empty(self.t.size)])
            for k, a in self.values.items():
                self.values[k] = np.vstack([a, np.empty_like(a)])
        r = self.n
        self.t[r] = t
        for k, a in self.values.items():
            a[r] = a[r - 1] if r else np.nan   # a joint not named holds its value
            v = values[k]
            if len(v):
                a[r, cols] = v
        self.n += 1


def read_joint_states(path, topic='/joint_states', log=None, progress=None):
    """
    Return every message of ``topic`` in an MCAP recording, in arrays: no down-sampling.

    ``{'t': (N,) header stamps [s], 'names': joint names (columns, in the order first met),
    'q', 'qd', 'effort': (N, joints), 'xml': the last robot_description or None,
    'reading': the Reading}``.  A message that names some joints updates those and holds the
    others (as robot_state_publisher merges them); a value never given is NaN, as is every
    value of a kind (velocity, effort) no message carries.  Messages whose arrays do not
    match their names are skipped (one ``log`` line).  Streams the file
    (:func:`~liemb_ros.app.recordings.read_messages`); the arrays hold ``8 (3 n + 1)``
    bytes a message.  ``progress(bytes_read, size)``: called as the file is read.  Raises
    RecordingError or OSError as read_messages does.
    """
    from .recordings import Reading, read_messages
    from .recordings import _warn as warn
    log = warn if log is None else log
    reading = Reading(path)
    cols, xml, skipped = _Columns(), None, 0

    def wanted(name):
        return name == topic or name.endswith('robot_description')

    for name, _, msg in read_messages(path, wanted, log=log, reading=reading):
        if name != topic:
            xml = msg.data
            continue
        try:
            stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
            cols.add(stamp, msg.name, {'q': msg.position, 'qd': msg.velocity,
                                       'effort': msg.effort})
        except ValueError as exc:
            skipped += 1
            if skipped == 1:
                log(f'{path}: skipping a message of {topic}: {exc} (more are counted, not '
                    'shown)')
        if progress is not None and cols.n % 1000 == 0:
            progress(reading.read_to, reading.size)
    n = cols.n
    out = {k: a[:n] for k, a in cols.values.items()}
    out.update(t=cols.t[:n], names=cols.names, xml=xml, reading=reading, skipped=skipped)
    return out


def recording_arrays(rec, model, path, topic):
    """
    Return ``(t, q, qd, effort)`` of :func:`read_joint_states`' ``rec`` in ``model``'s joints.

    Leaves out the messages before every joint was named and those that repeat the last
    stamp (a lock-step simulation re-publishes its state until answered); ``qd`` is None
    when no message carries velocities.  Raises IdentifyError for no messages, joints
    ``model`` does not have or never recorded, no efforts, and NaN after the start.
    """
    if not rec['t'].size:
        raise IdentifyError(f'{path} holds no {topic} messages (--topic names another)')
    names, joints = list(model.joint_names), rec['names']
    unknown = [n for n in joints if n not in names]
    if unknown:
        raise IdentifyError(f"the recording names joints {model.name} does not have: "
                            f"{', '.join(unknown)} (its joints: {', '.join(names)}; "
                            'is --robot the recorded robot?)')
    missing = [n for n in names if n not in joints]
    if missing:
        raise IdentifyError(f"joints of {model.name} never in the recording's {topic}: "
                            f"{', '.join(missing)}")
    idx = [joints.index(n) for n in names]
    q, qd, effort = (rec[k][:, idx] for k in ('q', 'qd', 'effort'))
    if np.all(np.isnan(effort)):
        raise IdentifyError(f"the {topic} messages of {path} carry no efforts: "
                            'identification needs the measured joint torques')
    complete = ~np.isnan(q).any(axis=1) & ~np.isnan(effort).any(axis=1)
    start = int(np.argmax(complete)) if complete.any() else q.shape[0]
    t = rec['t']
    keep = np.zeros(t.size, dtype=bool)
    keep[start:] = True
    keep[start + 1:] &= t[start + 1:] != t[start:-1]
    t, q, qd, effort = t[keep], q[keep], qd[keep], effort[keep]
    if np.all(np.isnan(qd)):
        qd = None
    for what, a in (('position', q), ('velocity', qd), ('effort', effort)):
        if a is not None and not np.all(np.isfinite(a)):
            k = int(np.flatnonzero(~np.isfinite(a).all(axis=1))[0])
            raise IdentifyError(f'a {what} of {path} is NaN or infinite at '
                                f'{t[k] - t[0]:.6g} s (sample {k}; a joint not recorded '
                                'there?)')
    return t, q, qd, effort


# --------------------------------------------------------------------------- fitting
class _KnownRobot:
    """The torques of a robot whose parameters are known: ``predict`` as an Identification's."""

    def __init__(self, model, armature):
        from ..core.identification import reference_parameters
        self.model = model
        self.parameters = reference_parameters(model, friction=True, armature=True)
        self.parameters[-model.nq:] = armature

    def predict(self, q, qd, qdd, base_pose=None):
        """Return the torques (N, nv) of states ``q, qd, qdd``."""
        from ..core.identification import regressor
        return regressor(self.model, q, qd, qdd, base_pose=base_pose, friction=True,
                         armature=True) @ self.parameters

    def predict_rows(self, Y):
        """Return the torques (N, nv) of regressor rows ``Y`` with every column."""
        return Y @ self.parameters


def _armature_of(path, model):
    """Return the dynamics node's ``armature`` (nq,) of a parameter file (zeros: no file)."""
    if path is None:
        return np.zeros(model.nq)
    import yaml
    try:
        with open(path, encoding='utf-8') as f:
            value = yaml.safe_load(f)['liemb_dynamics']['ros__parameters']['armature']
    except (OSError, yaml.YAMLError, KeyError, TypeError) as exc:
        raise IdentifyError(f'--params {path}: no liemb_dynamics armature ({exc})') from None
    a = np.broadcast_to(np.asarray(value, dtype=float), (model.nq,))
    return np.array(a)


def _rms_error(tau, pred):
    """Return the RMS of ``tau - pred`` per joint over the RMS of ``tau`` (nv,)."""
    return np.sqrt(np.mean((tau - pred) ** 2, axis=0) / np.mean(tau ** 2, axis=0))


def table_text(model, ls, consistent):
    """
    Return the table of an identification: one row per base parameter, then the unseen.

    Columns: the parameter, its URDF value, the least-squares value and its standard
    error, the consistent fit's value; then each standard parameter no base parameter
    holds (its column moves no joint) with its URDF and consistent values and "not
    identifiable".
    """
    base = ls.base
    urdf = base.from_standard(base.reference)
    width = max(len(n) for n in list(base.names) + list(base.standard_names))
    head = (f'{"parameter":<{width}} {"URDF value":>12} {"identified":>12} '
            f'{"std error":>11} {"consistent":>12}')
    rows = [head, '-' * len(head)]
    for k, name in enumerate(base.names):
        rows.append(f'{name:<{width}} {urdf[k]:12.6g} {ls.values[k]:12.6g} '
                    f'{ls.std[k]:11.3g} {consistent.values[k]:12.6g}')
    seen = np.zeros(len(base.standard_names), dtype=bool)
    seen[base.independent] = True
    seen[base.dependent] = np.any(base.Kd != 0.0, axis=0)
    for j in np.flatnonzero(~seen):
        rows.append(f'{base.standard_names[j]:<{width}} {base.reference[j]:12.6g} '
                    f'{"-":>12} {"not identifiable":>11} {consistent.parameters[j]:12.6g}')
    return '\n'.join(rows)


class _Data:
    """
    A recording's samples for the fits: states and efforts, or rows and efforts.

    States ``(q, qd, qdd)``; or, for held efforts, ``rows`` (N, nv, p): each sample's
    regressor row of the interval before it, with every column (:func:`held_rows`).
    """

    def __init__(self, q, qd, qdd, effort, rows):
        self.q, self.qd, self.qdd, self.effort, self._rows = q, qd, qdd, effort, rows

    def states(self, mask):
        """Return ``(q, qd, qdd)`` of the samples ``mask`` (Nones with rows)."""
        if self._rows is not None:
            return None, None, None
        return self.q[mask], self.qd[mask], self.qdd[mask]

    def rows(self, mask):
        """Return the rows of the samples ``mask``, or None (states)."""
        return None if self._rows is None else self._rows[mask]

    def predict(self, fit, mask):
        """Return the torques (N, nv) of an Identification (or _KnownRobot) at ``mask``."""
        if self._rows is not None:
            return fit.predict_rows(self._rows[mask])
        return fit.predict(*self.states(mask))


def held_rows(model, t, q, qd, cutoff):
    """
    Return ``(rows, inner, speed)`` of a recording whose efforts were held over its intervals.

    ``rows`` (N, nv, p): row ``k`` the momentum-form regressor of the interval before sample
    ``k`` (:func:`~liemb_ros.core.held_efforts.interval_regressor`, friction and armature
    columns all there), from ``q`` and ``qd`` (``cutoff`` > 0: low-pass filtered first,
    :func:`~liemb_ros.core.signals.lowpass`; ``qd`` None: the derivative of ``q``);
    ``inner`` (N,): the samples whose row a fit may use (inside a uniform run, after its
    first sample, away from the filter's edges); ``speed`` (N, nv): the smallest ``|q̇|``
    over each sample's interval.  Intervals across a lost sample have no row (each uniform
    run is taken alone, :func:`~liemb_ros.core.signals.uniform_runs`).
    """
    from ..core.held_efforts import interval_regressor
    from ..core.identification import parameter_count
    from ..core.signals import derivative, edge_samples, lowpass, uniform_runs
    h, runs = uniform_runs(t)
    edge = edge_samples(h, cutoff) if cutoff else 1
    n = len(t)
    rows = np.zeros((n, model.nv, parameter_count(model, True, True)))
    inner = np.zeros(n, dtype=bool)
    speed = np.zeros((n, model.nv))
    for a, b in runs:
        if b - a <= 2 * edge:
            continue
        x = lowpass(q[a:b], h, cutoff) if cutoff else q[a:b]
        v = (derivative(x, h) if qd is None else
             lowpass(qd[a:b], h, cutoff) if cutoff else qd[a:b])
        for c in range(0, b - a - 1, HELD_CHUNK):   # bounded temporaries on long runs
            d = min(c + HELD_CHUNK, b - a - 1)
            A, s = interval_regressor(model, h, x[c:d + 1], v[c:d + 1], friction=True,
                                      armature=True)
            rows[a + c + 1:a + d + 1], speed[a + c + 1:a + d + 1] = A, s
        inner[a + edge:b - edge] = True
    if not inner.any():
        raise ValueError(f'no uniform run of {(max(b - a for a, b in runs) - 1) * h:.3g} s is '
                         f'long enough for a {cutoff:g} Hz filter: record longer or raise the '
                         'cut-off')
    return rows, inner, speed


def _fit(model, data, fit, args, bar):
    """Return the least-squares and consistent fits on the samples ``fit``; advance ``bar``."""
    from ..core import identification_fit as idf
    q, qd, qdd = data.states(fit)
    tau, Y = data.effort[fit], data.rows(fit)
    options = dict(friction=not args.no_friction, armature=not args.no_armature,
                   weights='auto', Y=Y)
    ls = idf.identify(model, q, qd, qdd, tau, **options)
    bar.update(1)
    consistent = idf.identify_consistent(model, q, qd, qdd, tau, base=ls.base, **options)
    bar.update(1)
    return ls, consistent


def _joint_terms(model, fit):
    """Return ``(viscous, coulomb, armature)`` (nq,) of a fit (zeros for terms not fitted)."""
    names = list(fit.base.standard_names)
    pi = fit.parameters

    def terms(suffix):
        return np.array([pi[names.index(f'{j}.{suffix}')] if f'{j}.{suffix}' in names
                         else np.nan for j in model.joint_names])
    fv, fc, arm = terms('fv'), terms('fc'), terms('armature')
    return (np.where(np.isnan(fv), model.damping, fv), np.where(np.isnan(fc), model.friction, fc),
            np.nan_to_num(arm))


def parameter_file(model, armature=None, payload=None, friction=None, command=''):
    """
    Return the text of a ROS parameter file for the dynamics node (``liemb launch params_file``).

    ``armature`` (nq,): the node's ``armature``; ``payload``: a
    :class:`~liemb_ros.core.identification_fit.Payload` (its ``payload.*``); ``friction``:
    ``(viscous, coulomb)`` (nq,) each, written as comments (the nodes read them from the
    URDF's ``<dynamics>``); ``command``: the line that made it, as a comment.
    """
    import yaml
    params = {}
    if armature is not None:
        params['armature'] = [float(a) for a in armature]
    if payload is not None:
        params.update(payload.node_parameters())
    lines = [f'# {command}'] if command else []
    if friction is not None:
        lines.append('# joint friction (in the identified URDF\'s <dynamics damping friction>, '
                     'where the nodes read it):')
        lines += [f'#   {j}: viscous {v:.6g}, Coulomb {c:.6g}'
                  for j, v, c in zip(model.joint_names, *friction)]
    lines.append('# the simulation node takes one armature value for all joints '
                 '(liemb_simulation: armature)')
    body = yaml.safe_dump({'liemb_dynamics': {'ros__parameters': params}}, sort_keys=False)
    return '\n'.join(lines) + '\n' + body


def validation_plot(path, t, tau, predictions, names, title):
    """
    Draw measured against predicted torques per joint into ``path`` (held-out samples).

    ``t`` (N,) [s]; ``tau`` (N, nv) measured; ``predictions``: label -> (N, nv); ``names``:
    a label per joint.  Each panel's legend gives each prediction's RMS error relative to
    the measured RMS.
    """
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    n = tau.shape[1]
    fig, axes = plt.subplots(n, 1, figsize=(10, 1.8 * n + 1), sharex=True, squeeze=False)
    for j, ax in enumerate(axes[:, 0]):
        ax.plot(t, tau[:, j], 'k', lw=1.5, label='measured')
        for label, pred in predictions.items():
            err = _rms_error(tau[:, j:j + 1], pred[:, j:j + 1])[0]
            ax.plot(t, pred[:, j], lw=1.0, label=f'{label} ({100 * err:.2g} % RMS error)')
        ax.set_ylabel(f'{names[j]}\n[N m]')
        ax.legend(loc='upper right', fontsize='small')
    axes[-1, 0].set_xlabel('time [s]')
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# --------------------------------------------------------------------------- the command
def _progress(quiet, total, what):
    from tqdm import tqdm
    return tqdm(total=total, desc=what, disable=quiet, file=sys.stderr, mininterval=0.5,
                leave=False, unit_scale=True)


def identify_run(args):
    """
    Run ``liemb identify`` on ``args``; return the results (what the tests check).

    ``{'model', 'fit', 'validation', 'ls', 'consistent', 'payload', 'table', 'files',
    'errors'}``; raises IdentifyError for input it cannot use.
    """
    from ..core.identification import inertial_parameters
    from ..core.identified_urdf import identified_urdf
    from ..core.model.urdf_sources import read_text
    from ..core.signals import joint_signals
    from .recordings import RecordingError
    from .robots import load_robot
    if not 0.0 < args.holdout < 1.0:
        raise IdentifyError(f'--holdout must be in (0, 1), got {args.holdout:g}')
    if not args.cutoff >= 0.0:
        raise IdentifyError(f'--cutoff must be 0 (no filter) or more, got {args.cutoff:g}')
    if not args.min_velocity >= 0.0:
        raise IdentifyError(f'--min-velocity must be 0 or more, got {args.min_velocity:g}')
    if args.params and not args.payload:
        raise IdentifyError('--params goes with --payload')
    try:
        model = load_robot(args.robot)
    except SystemExit as exc:
        raise IdentifyError(str(exc.code).removeprefix('liemb: ')) from None
    if model.floating:
        raise IdentifyError(f'{model.name} has a floating base: liemb identify takes '
                            'fixed-base robots')
    size = max(os.path.getsize(args.file), 1) if os.path.isfile(args.file) else 1
    with _progress(args.quiet, size, 'reading') as bar:
        def advance(done, _):
            bar.update(done - bar.n)
        try:
            rec = read_joint_states(args.file, args.topic, progress=advance)
        except (RecordingError, OSError) as exc:
            raise IdentifyError(str(exc)) from None
    t, q, qd, effort = recording_arrays(rec, model, args.file, args.topic)
    rows = None   # held efforts: each sample's row of the interval before it (every column)
    try:
        if args.effort_held:
            rows, inner, speed = held_rows(model, t, q, qd, args.cutoff)
            q = qd = qdd = None
        else:
            q, qd, qdd, inner = joint_signals(t, q, qd, args.cutoff)
            speed = np.abs(qd)
    except ValueError as exc:
        raise IdentifyError(f'{args.file}: {exc}') from None
    used = np.flatnonzero(inner)
    split = used[int(round((1.0 - args.holdout) * used.size))]
    slow = speed[inner] < args.min_velocity
    moving = np.all(speed >= args.min_velocity, axis=1)
    if moving[inner].sum() < 0.1 * inner.sum():
        j = int(slow.mean(axis=0).argmax())
        raise IdentifyError(f'only {int(moving[inner].sum())} of {int(inner.sum())} samples have '
                            f'every joint faster than --min-velocity {args.min_velocity:g} '
                            f'({model.joint_names[j]} is slower in {100 * slow[:, j].mean():.0f} '
                            '% of them): move every joint, or lower --min-velocity (0 keeps '
                            'every sample)')
    fit = inner & moving & (np.arange(t.size) < split)
    held = inner & moving & (np.arange(t.size) >= split)
    data = _Data(q, qd, qdd, effort, rows)
    out = {'model': model, 'fit': fit, 'validation': held, 'ls': None, 'consistent': None,
           'payload': None, 'files': []}
    from ..core import identification_fit as idf
    reference = _KnownRobot(model, _armature_of(args.params, model))
    before = data.predict(reference, held)
    folder = args.out or os.path.dirname(os.path.abspath(args.file))
    stem = os.path.join(folder, os.path.splitext(os.path.basename(args.file))[0])
    os.makedirs(folder, exist_ok=True)
    command = f'liemb identify {args.file} --robot {args.robot}' + (
        f' --payload {args.payload}' if args.payload else '')
    try:
        if args.payload:
            with _progress(args.quiet, 1, 'fitting the payload') as bar:
                payload = idf.identify_payload(model, args.payload, *data.states(fit),
                                               effort[fit], reference=reference,
                                               weights='auto', Y=data.rows(fit))
                bar.update(1)
            after = before + _payload_torques(model, payload, data, held)
            out['payload'] = payload
            out['table'] = payload_text(payload)
            files = {'.yaml': parameter_file(model, payload=payload, command=command)}
        else:
            with _progress(args.quiet, 2, 'fitting') as bar:
                ls, consistent = _fit(model, data, fit, args, bar)
            after = data.predict(consistent, held)
            out.update(ls=ls, consistent=consistent, table=table_text(model, ls, consistent))
            viscous, coulomb, armature = _joint_terms(model, consistent)
            xml = read_text(model.source)[0]
            files = {'.urdf': identified_urdf(xml, model,
                                              consistent.parameters[:inertial_parameters(
                                                  model).size],
                                              damping=viscous, friction=coulomb),
                     '.yaml': parameter_file(model, armature=armature,
                                             friction=(viscous, coulomb), command=command)}
    except ValueError as exc:
        raise IdentifyError(str(exc)) from None
    for ext, text in files.items():
        path = f'{stem}_identified{ext}'
        with open(path, 'w', encoding='utf-8') as f:
            f.write(text)
        out['files'].append(path)
    tau = effort[held]
    out['errors'] = {'URDF': _rms_error(tau, before), 'identified': _rms_error(tau, after)}
    plot = f'{stem}_validation.png'
    validation_plot(plot, t[held] - t[0], tau, {'URDF': before, 'identified': after},
                    model.joint_names, f'{os.path.basename(args.file)}: held-out '
                    f'{t[held][-1] - t[held][0]:.3g} s of {t[-1] - t[0]:.3g} s')
    out['files'].append(plot)
    return out


def _payload_torques(model, payload, data, mask):
    """Return the joint torques (N, nv) of ``payload`` on its link at the samples ``mask``."""
    from ..core.identification import regressor
    from ..core.pseudo_inertia import parameters_of, pseudo_inertia
    li = model.link_index(payload.link)
    body = int(model.link_body[li])
    T = model.link_offset[li]   # link frame -> body frame
    x = parameters_of(T @ pseudo_inertia(payload.parameters) @ T.T)
    Y = data.rows(mask)
    if Y is None:
        Y = regressor(model, *data.states(mask))
    return Y[..., 10 * body:10 * body + 10] @ x


def payload_text(payload):
    """Return the identified payload as text: mass, centre of mass, inertia, their errors."""
    c, s = payload.com, payload.com_std
    return '\n'.join([
        f'payload on {payload.link}' + (' (projected to a consistent body)'
                                        if payload.projected else ''),
        f'  mass     {payload.mass:.6g} kg  (std error {payload.mass_std:.3g})',
        '  com      ' + ' '.join(f'{x:.6g}' for x in c) + ' m in the link frame  (std error '
        + ' '.join(f'{x:.3g}' for x in s) + ')',
        '  inertia  ' + ' '.join(f'{x:.6g}' for x in payload.inertia)
        + ' kg m^2 (ixx ixy ixz iyy iyz izz, about the centre of mass)'])


def run(args):
    """Run ``liemb identify``: fit, print the table, write the files; 2 on unusable input."""
    try:
        out = identify_run(args)
    except IdentifyError as exc:
        print(f'liemb identify: {exc}', file=sys.stderr)
        return 2
    print(out['table'])
    if out['ls'] is not None:
        ls = out['ls']
        print(f"\n{ls.samples} samples fitted, condition number {ls.condition:.3g}; the "
              f"consistent fit is {'' if out['consistent'].consistent else 'NOT '}"
              'physically consistent')
    for label, err in out['errors'].items():
        print(f'held-out torque error, {label}: '
              + ' '.join(f'{100 * e:.3g}' for e in err) + ' % of each joint\'s RMS')
    for path in out['files']:
        print(f'wrote {path}')
    return 0
