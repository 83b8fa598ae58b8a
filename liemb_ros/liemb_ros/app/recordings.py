"""
Read MCAP recordings back (``liemb plot``; :mod:`.plots` draws them).

Reading (:func:`read_messages`, :func:`read_run`, ``liemb plot``) streams the file record by
record with mcap's :class:`~mcap.stream_reader.StreamReader` (file order, no index needed),
so a file cut short is read up to its last complete chunk; a channel that cannot be decoded
(another message encoding such as JSON, a schema that does not parse) is skipped with one
warning. :func:`read_run` turns a recording of the demo (``joint_states``, the dynamics
node's ``joint_torques``, ``/diagnostics``, ``robot_description``) into the record
:func:`~liemb_ros.app.plots.plot_run` draws, so ``liemb plot FILE.mcap`` draws the demo's
plots. A recording of a control run (``liemb launch control --record FILE.mcap``) holds the
dynamics node's ``~/controller_state`` (``control_msgs/JointTrajectoryControllerState``):
then :func:`~liemb_ros.app.plots.plot_control` draws desired against actual positions per
joint, the torques and the tracking error with its RMS. :func:`read_run` keeps a bounded
number of rows per stream (:class:`Samples`: every message while there are fewer than ``2 *
PLOT_POINTS``, then between ``PLOT_POINTS`` and twice that, evenly spaced, each with the min
and max of the messages it stands for: a plot has fewer pixels), so an hour at 1 kHz is read
in the memory of a few seconds; counts, durations and the tracking error's RMS and maximum
are over every message.
"""
import contextlib
import io
import os
import sys

import numpy as np

from ..ros.recorder import CHUNK_SIZE, FLUSH_PERIOD


class RecordingError(Exception):
    """A file that holds no MCAP recording at all (not MCAP, or cut before its header)."""


def _warn(text):
    print(f'warning: {text}', file=sys.stderr)


def _shown(text):
    from ..ros.conversions import shown
    return shown(text)


class Reading:
    """
    What a reader of ``path`` met: counts, channels skipped, and how much of the file it read.

    ``size``: the file's bytes; ``read_to``: the end of the last complete record read;
    ``complete``: the file ends with its footer (a recorder that finished it); ``chunks``,
    ``messages``: complete chunks read and messages decoded; ``damaged_chunks``: chunks whose
    data did not decompress or match its CRC (skipped); ``skipped``: topic -> why its channel
    was not decoded; ``undecodable``: topic -> messages that did not decode; ``end``: the
    reader's error where the file stopped being readable.
    """

    def __init__(self, path):
        self.path, self.size, self.read_to, self.complete = path, 0, 0, False
        self.chunks = self.messages = self.damaged_chunks = 0
        self.skipped, self.undecodable, self.end = {}, {}, None

    def loss(self):
        """Return a sentence on what a cut-short file lost (None for a complete file)."""
        if self.complete:
            return None
        lost = self.size - self.read_to
        tail = (f'the last {lost} bytes ({100.0 * lost / max(self.size, 1):.1f} %), an '
                f'unfinished record, could not be read ({self.end})' if lost else
                'it ends after a complete record')
        return (f'{self.path} is cut short (a recorder stopped before it finished the file, '
                f'e.g. killed): read {self.messages} messages in {self.chunks} complete chunks '
                f'up to byte {self.read_to} of {self.size}; {tail}; what the recorder had not '
                f'yet written is lost (with liemb record: at most the last {FLUSH_PERIOD:g} s, '
                f'at most {CHUNK_SIZE // 1024} KiB)')


def _decoder(factory, channel, schema):
    """Return ``(decode, None)`` for a channel, or ``(None, why)`` when it cannot be decoded."""
    if channel.message_encoding != 'cdr':
        return None, f'message encoding {_shown(channel.message_encoding)}, not ROS 2 cdr'
    if schema is None:
        return None, 'no schema'
    if schema.encoding != 'ros2msg':
        return None, f'schema encoding {_shown(schema.encoding)}, not ros2msg'
    said = io.StringIO()
    try:   # the schema parser prints what it refuses: said with the reason, once
        with contextlib.redirect_stderr(said), contextlib.redirect_stdout(said):
            return factory.decoder_for(channel.message_encoding, schema), None
    except Exception as exc:   # the schema parser's errors have no common base
        why = str(exc) or said.getvalue().strip() or type(exc).__name__
        return None, f'its schema {_shown(schema.name)} does not parse: {_shown(why)}'


def _wanted_topic(topics):
    if topics is None:
        return lambda topic: True
    if callable(topics):
        return topics
    topics = {topics} if isinstance(topics, str) else set(topics)
    return topics.__contains__


def read_messages(path, topics=None, *, log=_warn, reading=None):
    """
    Yield ``(topic, log_time_ns, message)`` of an MCAP recording (decoded ROS 2 CDR).

    Streams the file in its order, one chunk at a time (bounded memory), with mcap's
    StreamReader: a file cut short (a recorder killed) is read up to its last complete
    record, and ``log`` says how much was lost when the file ends.  ``topics``: names or a
    predicate (None: all); a channel of a wanted topic that cannot be decoded (not CDR, a
    schema that does not parse) is skipped with one ``log`` line, as is the first message
    of a channel that does not decode; a chunk whose data is damaged is skipped with one
    line.  ``reading``: a :class:`Reading` to fill.  Raises RecordingError when the file is
    not MCAP or holds no record, OSError when it cannot be opened.
    """
    from mcap.records import Channel, Chunk, Footer, Header, Message, Schema
    from mcap.stream_reader import StreamReader, breakup_chunk
    from mcap_ros2.decoder import DecoderFactory
    wanted = _wanted_topic(topics)
    reading = Reading(path) if reading is None else reading
    factory = DecoderFactory()
    schemas, channels, decoders = {}, {}, {}
    with open(path, 'rb') as f:
        reading.size = os.fstat(f.fileno()).st_size
        records = StreamReader(f, emit_chunks=True).records
        started = False
        while True:
            try:
                record = next(records)
            except StopIteration:
                break
            except Exception as exc:   # a record cut short or garbled: the readable end
                if not started:
                    raise RecordingError(f'{path} is not an MCAP recording: '
                                         f'{exc or type(exc).__name__}') from None
                reading.end = f'{type(exc).__name__}: {exc}' if str(exc) else \
                    type(exc).__name__
                break
            started = started or isinstance(record, Header)
            reading.read_to = f.tell()
            if isinstance(record, Chunk):
                try:
                    inner = breakup_chunk(record, validate_crc=True)
                except Exception as exc:   # decompression or CRC: this chunk only
                    reading.damaged_chunks += 1
                    if reading.damaged_chunks == 1:
                        log(f'{path}: skipping a damaged chunk at byte {reading.read_to}: '
                            f'{_shown(exc)} (more are counted, not shown)')
                    continue
                reading.chunks += 1
            else:
                inner = (record,)
            for r in inner:
                if isinstance(r, Message):
                    channel = channels.get(r.channel_id)
                    if channel is None:
                        continue   # before its channel: a message no reader can place
                    decode = decoders.get(r.channel_id, False)
                    if decode is False:
                        decode = decoders[r.channel_id] = _channel_decoder(
                            factory, channel, schemas, wanted, reading, log)
                    if decode is None:
                        continue
                    topic = channel.topic
                    try:
                        msg = decode(r.data)
                    except Exception as exc:   # the CDR decoder's errors have no common base
                        count = reading.undecodable.get(topic, 0) + 1
                        reading.undecodable[topic] = count
                        if count == 1:
                            log(f'{path}: a message of {_shown(topic)} does not decode '
                                f'({_shown(exc)}); skipped (more are counted, not shown)')
                        continue
                    reading.messages += 1
                    yield topic, r.log_time, msg
                elif isinstance(r, Schema):
                    schemas[r.id] = r
                elif isinstance(r, Channel):
                    channels[r.id] = r
                elif isinstance(r, Footer):
                    reading.complete = True
    if not started:
        raise RecordingError(f'{path} is not an MCAP recording: no header')
    if not reading.complete:
        log(reading.loss())


def _channel_decoder(factory, channel, schemas, wanted, reading, log):
    """Return the decoder of ``channel`` (None: not wanted, or skipped with one line)."""
    if not wanted(channel.topic):
        return None
    decode, why = _decoder(factory, channel, schemas.get(channel.schema_id))
    if decode is None:
        why = why or 'no decoder'
        reading.skipped[channel.topic] = why
        log(f'{reading.path}: skipping {_shown(channel.topic)}: {why}')
    return decode


def _stamp(header):
    return header.stamp.sec + 1e-9 * header.stamp.nanosec


#: rows :class:`Samples` keeps for a plot: between this and twice this once a stream has
#: more messages (a plot is ~600-1200 pixels wide)
PLOT_POINTS = 2048


#: joint names a stream may name (columns): a file naming more is not a robot's
MAX_JOINTS = 1024


class Samples:
    """
    One stream of stamped per-joint values, kept for a plot in bounded memory.

    :meth:`add` takes a stamp, joint names and, per key (``'q'``, ``'qd'``, ...), values
    over those names (empty: not given).  Columns are the joints in the order first met; a
    message naming some joints updates those and holds the others, as
    robot_state_publisher merges partial joint_states; a joint not given yet is NaN.
    ``scalars``: keys of one value per message.  At most ``2 * points`` rows are kept,
    each for ``stride`` consecutive messages: the first of them (the stamp and values: the
    curves, and what needs one instant such as energy) and the NaN-ignoring min and max
    over them (an envelope, so a one-message spike still shows); when the rows are full,
    neighbours merge and the stride doubles.  ``count``: messages added; ``t_min``,
    ``t_max``: over all of them.
    """

    def __init__(self, keys, scalars=(), points=PLOT_POINTS):
        self.keys, self.scalars, self.points = tuple(keys), tuple(scalars), int(points)
        self.names, self._column, self._columns_of = [], {}, {}
        self.count, self.stride, self._rows, self._pending = 0, 1, 0, 0
        self.t_min, self.t_max = np.inf, -np.inf
        rows = 2 * self.points
        self._t = np.empty(rows)
        self._now = {k: np.full(1 if k in self.scalars else 0, np.nan) for k in self._all}
        self._first, self._lo, self._hi = (
            {k: np.empty((rows, self._now[k].size)) for k in self._all} for _ in range(3))

    @property
    def _all(self):
        return self.keys + self.scalars

    def _columns(self, names):
        key = tuple(names)
        cols = self._columns_of.get(key)
        if cols is not None:
            return cols
        new = [n for n in dict.fromkeys(key) if n not in self._column]
        if len(self.names) + len(new) > MAX_JOINTS:
            raise ValueError(f'more than {MAX_JOINTS} joint names')
        if new:
            for n in new:
                self._column[n] = len(self.names)
                self.names.append(n)
            for k in self.keys:
                pad = np.full((len(self._t), len(new)), np.nan)
                for store in (self._first, self._lo, self._hi):
                    store[k] = np.concatenate([store[k], pad], axis=1)
                self._now[k] = np.concatenate([self._now[k], pad[0]])
        if len(self._columns_of) > 64:   # a file that reorders its names at every message
            self._columns_of.clear()
        cols = self._columns_of[key] = np.array([self._column[n] for n in key], dtype=np.intp)
        return cols

    def add(self, t, names, values):
        """
        Add one message: stamp ``t`` [s], joint ``names``, ``values`` key -> sequence.

        Raises ValueError, keeping nothing of the message, when a non-empty sequence does
        not have one value per name (a scalar key: one value).
        """
        cols = self._columns(names)
        given = []
        for k, v in values.items():
            v = np.asarray(v, dtype=float).ravel()
            if v.size == 0:
                continue
            if v.size != (1 if k in self.scalars else cols.size):
                raise ValueError(f'{k} has {v.size} values for {cols.size} joint names')
            given.append((k, v))
        for k, v in given:
            if k in self.scalars:
                self._now[k][0] = v[0]
            else:
                self._now[k][cols] = v
        self._push(float(t))

    def _push(self, t):
        r = self._rows
        if self._pending == 0:
            self._t[r] = t
            for k in self._all:
                self._first[k][r] = self._lo[k][r] = self._hi[k][r] = self._now[k]
        else:
            for k in self._all:
                np.fmin(self._lo[k][r], self._now[k], out=self._lo[k][r])
                np.fmax(self._hi[k][r], self._now[k], out=self._hi[k][r])
        self.count += 1
        self.t_min, self.t_max = min(self.t_min, t), max(self.t_max, t)
        self._pending += 1
        if self._pending == self.stride:
            self._rows, self._pending = r + 1, 0
            if self._rows == len(self._t):
                self._halve()

    def _halve(self):
        p = self.points
        self._t[:p] = self._t[0::2].copy()
        for k in self._all:
            first, lo, hi = self._first[k], self._lo[k], self._hi[k]
            first[:p] = first[0::2].copy()
            lo[:p] = np.fmin(lo[0::2], lo[1::2])
            hi[:p] = np.fmax(hi[0::2], hi[1::2])
        self._rows, self.stride = p, 2 * self.stride

    def arrays(self):
        """
        Return ``(t, values, envelope)`` of the rows kept, in stamp order.

        ``values``: key -> (rows, joints) array (a scalar key: (rows,)); ``envelope``:
        key -> ``(lo, hi)`` of the same shapes.
        """
        n = self._rows + (self._pending > 0)
        order = np.argsort(self._t[:n], kind='stable')
        values, envelope = {}, {}
        for k in self._all:
            first, lo, hi = (a[k][:n][order] for a in (self._first, self._lo, self._hi))
            if k in self.scalars:
                first, lo, hi = first[:, 0], lo[:, 0], hi[:, 0]
            values[k], envelope[k] = first, (lo, hi)
        return self._t[:n][order], values, envelope


#: the arrays :func:`read_run` fills from ``~/controller_state`` (stamp, then per joint)
CONTROL_KEYS = ('tc', 'time_from_start', 'q_ref', 'qd_ref', 'qdd_ref', 'q_fb', 'qd_fb',
                'q_err', 'qd_err', 'tau_out')


def _controller_values(msg):
    d = msg.reference.time_from_start
    return {'time_from_start': [d.sec + 1e-9 * d.nanosec],
            'q_ref': msg.reference.positions, 'qd_ref': msg.reference.velocities,
            'qdd_ref': msg.reference.accelerations, 'q_fb': msg.feedback.positions,
            'qd_fb': msg.feedback.velocities, 'q_err': msg.error.positions,
            'qd_err': msg.error.velocities, 'tau_out': msg.output.effort}


def read_run(path, joint_states='/joint_states', torques='/liemb_dynamics/joint_torques',
             controller_state='/liemb_dynamics/controller_state', *, points=PLOT_POINTS,
             log=_warn):
    """
    Return ``(record, robot_xml)`` of a recorded run, streamed in bounded memory.

    ``record``: ``t`` and ``q, qd, effort`` (``joint_states``: header stamps [s], one
    column per joint of ``joints``, matched by name; see :class:`Samples`), ``tg`` and
    ``tau_g`` (the dynamics node's torques, columns ``torque_joints``), ``diag`` (the last
    values of each diagnostic status), ``t_end`` (last - first joint_states stamp); from
    ``controller_state`` (:data:`CONTROL_KEYS`): ``tc`` (header stamps),
    ``time_from_start`` (of the reference), ``q_ref, qd_ref, qdd_ref`` (reference),
    ``q_fb, qd_fb`` (feedback), ``q_err, qd_err`` (error), ``tau_out`` (output effort),
    ``control_joints`` (their columns) and ``q_err_rms``, ``q_err_max`` over every message
    (None without one).  ``envelope``: key -> ``(lo, hi)``, the min and max over the
    messages each row stands for; ``count``: messages per stream (``t``, ``tg``, ``tc``);
    ``stride``: messages per row; ``malformed``: topic -> messages skipped whose arrays do
    not match their joint names; ``reading``: the :class:`Reading`.  Every message is
    kept while a stream has fewer than ``2 * points``.  ``robot_xml``: the last
    ``robot_description`` text (None if none).  Raises RecordingError (not a recording)
    or OSError; ``log`` gets the warnings (channels skipped, malformed messages, a file cut
    short).
    """
    streams = {'t': Samples(('q', 'qd', 'effort'), points=points),
               'tg': Samples(('tau_g',), points=points),
               'tc': Samples(CONTROL_KEYS[2:], ('time_from_start',), points=points)}
    rec = {'diag': {}}
    err = [0.0, 0, 0.0]   # sum of squares, finite values, max |e| of the position error
    malformed = {}
    xml = None
    reading = Reading(path)
    wanted = {joint_states, torques, controller_state, '/diagnostics'}

    def topic_wanted(topic):
        return topic in wanted or topic.endswith('robot_description')

    for topic, _, msg in read_messages(path, topic_wanted, log=log, reading=reading):
        try:
            if topic == controller_state:
                values = _controller_values(msg)
                streams['tc'].add(_stamp(msg.header), msg.joint_names, values)
                e = np.asarray(values['q_err'], dtype=float)
                e = np.abs(e[np.isfinite(e)])
                if e.size:
                    err[0] += float(e @ e)
                    err[1] += e.size
                    err[2] = max(err[2], float(e.max()))
            elif topic == joint_states:
                streams['t'].add(_stamp(msg.header), msg.name, {
                    'q': msg.position, 'qd': msg.velocity, 'effort': msg.effort})
            elif topic == torques:
                streams['tg'].add(_stamp(msg.header), msg.name, {'tau_g': msg.effort})
            elif topic == '/diagnostics':
                for st in msg.status:
                    rec['diag'][st.name] = {kv.key: kv.value for kv in st.values}
                    rec['diag'][st.name]['message'] = st.message
            elif topic.endswith('robot_description'):
                xml = msg.data
        except ValueError as exc:   # arrays that do not match their joint names
            malformed[topic] = malformed.get(topic, 0) + 1
            if malformed[topic] == 1:
                log(f'{path}: skipping a message of {_shown(topic)}: {exc} (more are '
                    'counted, not shown)')
    rec['envelope'], rec['count'], rec['stride'] = {}, {}, {}
    for key, stream in streams.items():
        t, values, envelope = stream.arrays()
        rec[key] = t
        rec.update(values)
        rec['envelope'].update(envelope)
        rec['count'][key], rec['stride'][key] = stream.count, stream.stride
    rec['joints'], rec['torque_joints'] = streams['t'].names, streams['tg'].names
    rec['control_joints'] = streams['tc'].names
    t = streams['t']
    rec['t_end'] = float(t.t_max - t.t_min) if t.count else 0.0
    rec['q_err_rms'] = float(np.sqrt(err[0] / err[1])) if err[1] else None
    rec['q_err_max'] = err[2] if err[1] else None
    rec['malformed'] = malformed
    rec['reading'] = reading
    return rec, xml


def tracking_rms(rec):
    """
    Return ``(rms, max)`` of the recorded ``~/controller_state`` position errors [rad].

    Over every message when ``rec`` is :func:`read_run`'s (its ``q_err_rms``), else over
    the rows of ``q_err``; finite values only.
    """
    if rec.get('q_err_rms') is not None:
        return rec['q_err_rms'], rec['q_err_max']
    e = np.abs(rec['q_err'][np.isfinite(rec['q_err'])])
    return (float(np.sqrt(np.mean(e ** 2))), float(e.max())) if e.size else (np.nan, np.nan)


def _columns_of(rec, names, joints, keys):
    """Return ``rec`` with the ``keys`` arrays' columns put in the order of ``names``."""
    where = {n: i for i, n in enumerate(joints)}
    idx = np.array([where.get(n, -1) for n in names], dtype=np.intp)

    def pick(a):
        out = np.full((a.shape[0], len(names)), np.nan)
        out[:, idx >= 0] = a[:, idx[idx >= 0]]
        return out
    rec = dict(rec, envelope=dict(rec['envelope']))
    for k in keys:
        rec[k] = pick(rec[k])
        lo, hi = rec['envelope'][k]
        rec['envelope'][k] = (pick(lo), pick(hi))
    return rec


def _model_order(rec, model, path):
    """
    Return ``(rec, error)``: joint_states and torques in ``model``'s joint order, by name.

    Recorded joints the model does not have are left out and model joints never recorded
    are NaN, each with a warning; ``error`` says why nothing can be plotted (no joint
    states, or none of the model's joints).
    """
    names, joints = list(model.joint_names), rec['joints']
    if not rec['count']['t']:
        return rec, f'{path} holds no joint_states to plot'
    common = [n for n in names if n in joints]
    if not common:
        return rec, (f"the recorded joint_states name {len(joints)} joints "
                     f"({_shown(', '.join(joints))}), none of {model.name}'s "
                     f"({_shown(', '.join(names))}); give --robot")
    extra = [n for n in joints if n not in names]
    if extra:
        _warn(f'{path}: joint_states of joints {model.name} does not have, left out: '
              f"{_shown(', '.join(extra))}")
    if len(common) < len(names):
        _warn(f'{path}: {model.name} joints never in joint_states (not drawn): '
              f"{_shown(', '.join(n for n in names if n not in joints))}")
    rec = _columns_of(rec, names, joints, ('q', 'qd', 'effort'))
    return _columns_of(rec, names, rec['torque_joints'], ('tau_g',)), None
