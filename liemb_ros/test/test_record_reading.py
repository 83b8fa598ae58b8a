"""
Reading recordings (``liemb_ros.app.recordings``, ``liemb plot``) as real systems and killed
recorders leave them.

Each file is written here with the mcap library's writer and rclpy's serializer (the
independent source of the bytes), in the layout a probe calls for: cut at arbitrary
offsets, a JSON channel and a malformed schema beside the robot's topics, joint_states
without efforts, with NaN, in another joint order, split over two publishers, 100 000
states.  ``liemb plot`` runs as a process; its exit codes are checked.
"""
import subprocess
import sys

import numpy as np
import pytest

from conftest import ros_importorskip

ros_importorskip('rclpy', 'mcap_ros2')
from liemb_ros.ros import recorder  # noqa: E402  (after the import check)
from liemb_ros.app import recordings  # noqa: E402

pytestmark = pytest.mark.ros

ARM = ['joint1', 'joint2', 'joint3', 'joint4', 'joint5', 'joint6', 'joint7']
JS = 'sensor_msgs/msg/JointState'


def _urdf():
    from liemb_ros.core import resources
    with open(resources.robot_path('liemb_arm7'), encoding='utf-8') as f:
        return f.read()


def joint_state(t, names, position=(), velocity=(), effort=()):
    """Return a JointState stamped ``t`` [s]."""
    from sensor_msgs.msg import JointState
    msg = JointState(name=list(names), position=[float(x) for x in position],
                     velocity=[float(x) for x in velocity], effort=[float(x) for x in effort])
    msg.header.stamp.sec, msg.header.stamp.nanosec = int(t // 1), int(round(t % 1 * 1e9))
    return msg


class Recording:
    """An MCAP file written with the mcap library, ROS 2 profile, messages by rclpy."""

    def __init__(self, path, chunk_size=1024 * 1024):
        from mcap.writer import Writer
        self.file = open(path, 'wb')
        self.writer = Writer(self.file, chunk_size=chunk_size)
        self.writer.start(profile='ros2', library='test')
        self.channels, self.schemas, self.time = {}, {}, 0

    def channel(self, topic, type_name, encoding='cdr', schema=None, schema_encoding='ros2msg'):
        """Register ``topic``; ``schema``: the schema's text (default: the installed .msg)."""
        if schema is None:
            schema = recorder.message_definition(type_name)
        sid = self.writer.register_schema(name=type_name, encoding=schema_encoding,
                                          data=schema.encode())
        self.channels[topic] = self.writer.register_channel(
            topic=topic, message_encoding=encoding, schema_id=sid)

    def add(self, topic, msg, type_name=JS):
        """Write ``msg`` (a ROS message, or bytes as they are) on ``topic``."""
        from rclpy.serialization import serialize_message
        if topic not in self.channels:
            self.channel(topic, type_name)
        data = msg if isinstance(msg, bytes) else serialize_message(msg)
        self.time += 1000
        self.writer.add_message(self.channels[topic], log_time=self.time, data=data,
                                publish_time=self.time)

    def robot(self):
        """Write the default arm's URDF on ``/robot_description``."""
        from std_msgs.msg import String
        self.add('/robot_description', String(data=_urdf()), 'std_msgs/msg/String')

    def flush(self):
        """Close the chunk in progress; return the file offset after it."""
        self.writer.flush()
        return self.file.tell()

    def finish(self):
        """Write the summary and close the file."""
        self.writer.finish()
        self.file.close()


def plots(*argvs):
    """
    Run ``liemb plot ARGV`` as processes, side by side; return them, finished, in order.

    Each has ``stdout``, ``stderr`` (text) and ``returncode``.
    """
    procs = [subprocess.Popen([sys.executable, '-m', 'liemb_ros.app.cli', 'plot', *map(str, a)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for a in argvs]
    for p in procs:
        p.stdout, p.stderr = p.communicate(timeout=300)
    return procs


def plot(*argv):
    """Run ``liemb plot ARGV`` as a process; return it, finished (see :func:`plots`)."""
    return plots(argv)[0]


def _read(path, **kwargs):
    notes = []
    rec, xml = recordings.read_run(str(path), log=notes.append, **kwargs)
    return rec, xml, notes


def test_a_file_cut_anywhere_gives_back_every_complete_chunk(tmp_path):
    """
    A recording cut at any byte (a recorder killed mid-write) reads back exactly the messages
    of the chunks that end before the cut, and says how many bytes were lost.

    Chunks of 10 states; which chunk is whole at a cut comes from the complete file's own
    chunk index (mcap's seeking reader): start + length <= cut.
    """
    from mcap.reader import make_reader
    path = tmp_path / 'run.mcap'
    rec = Recording(path)
    rec.robot()
    rec.flush()
    n, per_chunk = 200, 10
    for i in range(n):
        rec.add('/joint_states', joint_state(0.004 * i, ARM, np.full(7, i), np.zeros(7),
                                             np.ones(7)))
        if i % per_chunk == per_chunk - 1:
            rec.flush()
    rec.finish()
    data = path.read_bytes()
    with open(path, 'rb') as f:
        chunks = make_reader(f).get_summary().chunk_indexes
    assert len(chunks) == n // per_chunk + 1     # the robot_description's chunk first
    ends = np.array([c.chunk_start_offset + c.chunk_length for c in chunks])
    most = max(c.chunk_length + c.message_index_length for c in chunks)
    cut_file = tmp_path / 'cut.mcap'
    rng = np.random.default_rng(28)
    cuts = sorted(set(rng.integers(ends[0] - 50, len(data), 60)) | set(ends) |
                  set(ends - 1) | set(ends + 1) | {len(data) - 1})
    for cut in cuts:
        cut_file.write_bytes(data[:cut])
        got, xml, notes = _read(cut_file)
        whole = int((ends[1:] <= cut).sum())
        assert got['count']['t'] == whole * per_chunk, cut
        assert np.array_equal(got['q'][:, :1].ravel(), np.arange(whole * per_chunk)), cut
        assert (xml is not None) == (cut >= ends[0]), cut
        reading = got['reading']
        assert reading.read_to <= cut and reading.size == cut
        if cut >= len(data) - 8:   # only the closing magic cut: the footer was read
            assert reading.complete and notes == [], (cut, notes)
            continue
        assert not reading.complete
        assert len(notes) == 1 and 'cut short' in notes[0], (cut, notes)
        assert f'up to byte {reading.read_to} of {cut}' in notes[0]
        lost = cut - reading.read_to
        assert lost < most, (cut, lost)   # at most an unfinished chunk and its index
        if lost:
            assert f'the last {lost} bytes' in notes[0]
    # the whole file: nothing lost, nothing said
    got, _, notes = _read(path)
    assert got['count']['t'] == n and got['reading'].complete and notes == []
    # cut before its first record: not a recording, a message and exit 2
    head = tmp_path / 'head.mcap'
    head.write_bytes(data[:12])
    with pytest.raises(recordings.RecordingError, match='not an MCAP recording'):
        _read(head)
    # liemb plot draws what a cut file holds and says what was lost
    cut = int(ends[7]) + 100
    cut_file.write_bytes(data[:cut])
    proc, refused = plots((cut_file, '--out', tmp_path / 'cut.png'), (head,))
    assert proc.returncode == 0, proc.stderr
    assert f'liemb plot: {7 * per_chunk} joint states' in proc.stdout
    assert 'cut short' in proc.stderr and f'of {cut}' in proc.stderr
    assert refused.returncode == 2 and 'not an MCAP recording' in refused.stderr


def test_channels_that_do_not_decode_are_skipped_with_one_warning_each(tmp_path):
    """
    A JSON channel, a schema that does not parse, and messages that are not CDR of their
    schema: each channel is skipped with one warning, the rest of the file is read; ``liemb
    plot`` does not even decode channels it does not draw.
    """
    path = tmp_path / 'mixed.mcap'
    rec = Recording(path)
    rec.robot()
    rec.channel('/status_json', 'Status', encoding='json', schema='{"type": "object"}',
                schema_encoding='jsonschema')
    rec.channel('/weird', 'weird_msgs/msg/Weird', schema='float64[ x\nthis is not @ message')
    rec.channel('/garbled', JS)
    for i in range(60):
        rec.add('/joint_states', joint_state(0.01 * i, ARM, np.full(7, 0.1 * i), np.zeros(7),
                                             np.zeros(7)))
        rec.add('/status_json', b'{"ok": true}')
        rec.add('/weird', b'\x00\x01\x00\x00' + bytes(16))
        rec.add('/garbled', b'\x00\x01\x00\x00\xff\xff\xff\x7f')   # a string longer than all
    rec.finish()
    notes = []
    got = [m for m in recordings.read_messages(str(path), log=notes.append)]
    assert sorted({t for t, _, _ in got}) == ['/joint_states', '/robot_description']
    assert len(got) == 61
    assert len(notes) == 3, notes
    for topic, why in (('/status_json', "message encoding 'json'"),
                       ('/weird', 'does not parse'), ('/garbled', 'does not decode')):
        assert sum(topic in n for n in notes) == 1 and any(why in n for n in notes), notes
    # joint_states only: the other channels are not decoded, nothing to say
    notes = []
    assert len(list(recordings.read_messages(str(path), ['/joint_states'],
                                             log=notes.append))) == 60 and notes == []
    proc = plot(path)
    assert proc.returncode == 0, proc.stderr
    assert 'liemb plot: 60 joint states' in proc.stdout and proc.stderr == ''


def test_joint_states_are_matched_by_name_and_merged(tmp_path):
    """
    Joint states in another order than the model's, and split over two publishers (an arm
    and a wrist, as robot_state_publisher merges them): each joint's column holds the value
    of the last message that named it, NaN before any did.
    """
    from liemb_ros.app import cli
    path = tmp_path / 'split.mcap'
    rec = Recording(path)
    rec.robot()
    arm, wrist = ARM[:5][::-1], ['joint7', 'joint6']
    sent = []   # (names, positions, efforts) in the order written
    for i in range(40):
        t = 0.01 * i
        sent.append((arm, [10.0 * ARM.index(n) + t for n in arm], []))
        rec.add('/joint_states', joint_state(t, arm, sent[-1][1]))
        if i % 4 == 0:
            sent.append((wrist, [10.0 * ARM.index(n) + t for n in wrist], [1.0 + i, 2.0 + i]))
            rec.add('/joint_states', joint_state(t + 0.001, wrist, sent[-1][1],
                                                 effort=sent[-1][2]))
    rec.finish()
    got, xml, notes = _read(path)
    assert notes == [] and got['joints'] == arm + wrist
    ordered, error = recordings._model_order(got, cli.load_robot('liemb_arm7'), str(path))
    assert error is None and len(ordered['t']) == len(sent) == 50
    last_q, last_effort = dict.fromkeys(ARM, np.nan), dict.fromkeys(ARM, np.nan)
    for row, (names, q, effort) in enumerate(sent):
        last_q.update(zip(names, q))
        last_effort.update(zip(names, effort))
        assert np.array_equal(ordered['q'][row], [last_q[n] for n in ARM], equal_nan=True)
        assert np.array_equal(ordered['effort'][row], [last_effort[n] for n in ARM],
                              equal_nan=True)
    assert np.isnan(ordered['qd']).all()
    proc = plot(path, '--out', tmp_path / 'split.png')
    assert proc.returncode == 0, proc.stderr
    assert 'liemb plot: 50 joint states' in proc.stdout


def test_plot_draws_what_is_there(tmp_path):
    """
    No efforts (a joint_state_broadcaster without effort interfaces): no torque panel; NaN
    samples: gaps, no traceback; no velocities: no energy panel; a joint of another robot is
    left out with a warning, a model joint never recorded is named (no energy: it needs
    every joint); none of the model's joints: exit 2.
    """
    import matplotlib.image

    def write(name, rows, names=ARM):
        path = tmp_path / f'{name}.mcap'
        rec = Recording(path)
        rec.robot()
        for t, q, qd in rows:
            rec.add('/joint_states', joint_state(t, names, q, qd))
        rec.finish()
        return path, '--out', tmp_path / f'{name}.png'

    q = np.tile(0.01 * np.arange(100)[:, None], (1, 7))
    q[40:50, 2] = np.nan
    runs = [write('no_effort', [(0.01 * i, q[i], np.zeros(7)) for i in range(100)]),
            write('positions', [(0.01 * i, q[i], ()) for i in range(100)]),
            write('gripper', [(0.01 * i, q[i], np.zeros(7)) for i in range(100)],
                  ARM[:6] + ['gripper_finger']),
            write('other', [(0.0, [0, 0], ())], ['wheel_left', 'wheel_right'])]
    procs = plots(*runs)
    for proc, (_, _, out), panels in zip(procs, runs, (2, 1, 1)):
        assert proc.returncode == 0 and proc.stderr.count('Traceback') == 0, proc.stderr
        # panels of 3 inches at 90 dpi: positions; energy (with velocities); no torques
        assert matplotlib.image.imread(out).shape[0] == panels * 3 * 90, out
    got, _, _ = _read(runs[0][0])
    assert np.isnan(got['q'][40:50, 2]).all() and np.isfinite(got['q'][50:, 2]).all()
    assert "'gripper_finger'" in procs[2].stderr and "'joint7'" in procs[2].stderr
    assert procs[3].returncode == 2 and 'none of liemb_arm7' in procs[3].stderr


def test_plot_out_paths_and_exit_codes(tmp_path):
    """
    ``--out`` into a missing folder creates it; an unknown or missing extension is exit 2
    with the formats; a missing file, an empty one, a text file: exit 2, no traceback.
    """
    path = tmp_path / 'run.mcap'
    rec = Recording(path)
    rec.robot()
    for i in range(20):
        rec.add('/joint_states', joint_state(0.01 * i, ARM, np.zeros(7), np.zeros(7),
                                             np.zeros(7)))
    rec.finish()
    out = tmp_path / 'a' / 'b' / 'plot.svg'
    (tmp_path / 'empty.mcap').write_bytes(b'')
    (tmp_path / 'text.mcap').write_text('not a recording')
    bad_out, bad_in = ('plot.xyz', 'plot'), ('missing.mcap', 'empty.mcap', 'text.mcap')
    proc, *refused = plots((path, '--out', out),
                           *[(path, '--out', tmp_path / bad) for bad in bad_out],
                           *[(tmp_path / name,) for name in bad_in])
    assert proc.returncode == 0 and out.stat().st_size > 1000, proc.stderr
    for proc, name in zip(refused, bad_out + bad_in):
        assert proc.returncode == 2 and name in proc.stderr, proc.stderr
        assert 'Traceback' not in proc.stderr and not (tmp_path / name).exists() or \
            name.endswith('.mcap')
    assert all('png' in proc.stderr for proc in refused[:2])


def test_a_recording_without_joint_states_says_so(tmp_path):
    """
    ``liemb launch dynamics --record`` without a driver: only the node's diagnostics and no
    robot_description; the plot names the missing joint_states, not the robot (exit 2).
    """
    from diagnostic_msgs.msg import DiagnosticArray
    path = tmp_path / 'dynamics.mcap'
    rec = Recording(path)
    rec.add('/diagnostics', DiagnosticArray(), 'diagnostic_msgs/msg/DiagnosticArray')
    rec.finish()
    for proc in plots((path,), (path, '--robot', 'liemb_arm7')):
        assert proc.returncode == 2 and 'holds no joint_states to plot' in proc.stderr, \
            proc.stderr
        assert 'robot_description' not in proc.stderr


def test_samples_keep_first_min_and_max_of_each_bin():
    """
    :class:`recordings.Samples` against a direct computation: every row is the first message of
    its bin of ``stride`` messages and the NaN-ignoring min and max over the bin.
    """
    rng = np.random.default_rng(5)
    n, points = 1000, 8
    values = rng.normal(size=(n, 2))
    values[rng.random((n, 2)) < 0.1] = np.nan
    values[rng.random(n) < 0.02] = np.nan   # whole messages
    s = recordings.Samples(('q',), points=points)
    for i in range(n):
        s.add(0.001 * i, ['a', 'b'], {'q': values[i]})
    t, kept, envelope = s.arrays()
    stride = s.stride
    assert s.count == n and points <= len(t) <= 2 * points
    assert stride * (len(t) - 1) < n <= stride * len(t)
    starts = np.arange(0, n, stride)
    assert np.array_equal(t, 0.001 * starts)
    assert np.array_equal(kept['q'], values[starts], equal_nan=True)
    lo, hi = envelope['q']
    for row, start in enumerate(starts):
        assert np.array_equal(lo[row], np.fmin.reduce(values[start:start + stride]),
                              equal_nan=True)
        assert np.array_equal(hi[row], np.fmax.reduce(values[start:start + stride]),
                              equal_nan=True)
    with pytest.raises(ValueError, match='3 values for 2 joint names'):
        s.add(1.0, ['a', 'b'], {'q': [1, 2, 3]})
    assert s.count == n


def test_reading_memory_does_not_grow_with_the_recording(tmp_path):
    """
    Joint states at 1 kHz: the rows kept stay within ``2 * PLOT_POINTS`` and the reader's
    peak memory does not grow with the recording (10 000 against 100 000 states, each in a
    fresh process; a reader holding every state as arrays took ~1.8 kB each: 160 MB more).
    A one-message spike survives in the envelope; counts and duration are over every
    message.  (An hour at 1 kHz, 3.6 M states, measured outside the suite: 244 MB peak,
    as much as the imports take.)
    """
    def write(path, n, spike):
        from rclpy.serialization import serialize_message
        rec = Recording(path)
        rec.robot()
        data = bytearray(serialize_message(joint_state(0, ARM, np.zeros(7), np.zeros(7),
                                                       np.zeros(7))))
        for i in range(n):   # the stamp patched in place: sec, nanosec after the CDR header
            data[4:12] = np.array([i // 1000, i % 1000 * 1_000_000], '<u4').tobytes()
            if i == spike:
                rec.add('/joint_states', joint_state(i / 1000, ARM, np.full(7, 5.0),
                                                     np.zeros(7), np.zeros(7)))
            else:
                rec.add('/joint_states', bytes(data))
        rec.finish()

    script = ('import resource, sys\nfrom liemb_ros.app import recordings\n'
              'rec, _ = recordings.read_run(sys.argv[1])\n'
              "print(rec['count']['t'], len(rec['t']), rec['t_end'], "
              "rec['envelope']['q'][1].max(), resource.getrusage(resource.RUSAGE_SELF)"
              '.ru_maxrss)')
    peaks = {}
    for n in (10_000, 100_000):
        path = tmp_path / f'{n}.mcap'
        write(path, n, spike=n - 777)
        out = subprocess.run([sys.executable, '-c', script, str(path)], capture_output=True,
                             text=True, timeout=600, check=True).stdout.split()
        count, rows, t_end, top, peaks[n] = int(out[0]), int(out[1]), float(out[2]), \
            float(out[3]), int(out[4])
        assert count == n and rows <= 2 * recordings.PLOT_POINTS
        assert t_end == pytest.approx((n - 1) / 1000, abs=1e-9) and top == 5.0
    print(f'peak RSS reading 10k / 100k joint states: {peaks[10_000] / 1024:.0f} / '
          f'{peaks[100_000] / 1024:.0f} MB')
    assert peaks[100_000] - peaks[10_000] < 20 * 1024   # kB
