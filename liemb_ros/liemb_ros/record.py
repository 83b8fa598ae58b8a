"""
Record ROS 2 topics to MCAP (``liemb record``, ``--record FILE.mcap``) and plot a recording.

:class:`Recorder` subscribes to the topics that match its patterns as they appear in the
graph (serialized: the CDR bytes are written as received, as ``ros2 bag record`` does), with
the publishers' reliability and durability, and writes them to an MCAP file with the
``ros2`` profile, ``cdr`` message encoding and ``ros2msg`` schemas named as ROS 2 names
them (``sensor_msgs/msg/JointState``), each with its dependencies in rosbag2's layout
(:func:`message_definition`, from the installed ``.msg`` files).  Foxglove and ``ros2 bag``
on a ROS install open the file.  Log times are the receive times (ns since the epoch).

Nodes started after the recorder (``liemb demo/launch --record`` start it first): with Fast
DDS a participant that is already running is most often matched with a newly started one
only at its own next periodic participant announcement (every 3 s by default), not on the
new one's initial announcements; the nodes' volatile messages published before their
writers have matched the recorder's readers are lost to it (issue 20: the first ~2 s of
1 run in 3-4).  The recorder's participant therefore announces itself every 0.25 s
(:data:`DISCOVERY_PROFILE`, loaded by :func:`discovery_profile`), which bounds that delay
to about 0.25 s plus endpoint discovery; the nodes start publishing later than that (their
kernels load first).  Fast DDS reads its profile file once per process, at its first
participant: a :class:`Recorder` created in a process that already has a ROS context
announces itself every 3 s (``liemb record`` is a process of its own), and later
participants of the recorder's process use the profile too.  When
``FASTDDS_DEFAULT_PROFILES_FILE`` names a file of your own, that file is used.

:func:`read_run` turns a recording of the demo (``joint_states``, the dynamics node's
``joint_torques``, ``/diagnostics``, ``robot_description``) into the record
:func:`liemb_ros.ros.monitor.plot` draws, so ``liemb plot FILE.mcap`` draws the demo's plots.
A recording of a control run (``liemb launch control --record FILE.mcap``) holds the dynamics
node's ``~/controller_state`` (``control_msgs/JointTrajectoryControllerState``): then
:func:`plot_control` draws desired against actual positions per joint, the torques and the
tracking error with its RMS.
"""
import contextlib
import fnmatch
import importlib
import os
import re
import signal
import sys
import threading
import time

#: what the demo and ``liemb launch --record`` write: states, frames, the dynamics node's
#: torques, twists and wrenches, the simulation's topics, diagnostics, the robot
DEFAULT_TOPICS = ('/joint_states', '/tf', '/tf_static', '/diagnostics', '/robot_description',
                  '/liemb_dynamics/*', '/liemb_simulation/*')
PRIMITIVES = {'bool', 'byte', 'char', 'float32', 'float64', 'int8', 'uint8', 'int16',
              'uint16', 'int32', 'uint32', 'int64', 'uint64', 'string', 'wstring'}
SEPARATOR = '=' * 80


def _share_dirs(package):
    dirs = []
    try:
        from ament_index_python.packages import get_package_share_directory
        dirs.append(get_package_share_directory(package))
    except Exception:  # not in the ament index: the venv's share folder
        pass
    dirs.append(os.path.join(sys.prefix, 'share', package))
    return dirs


def _msg_text(name):
    pkg, _, typ = name.partition('/msg/')
    for d in _share_dirs(pkg):
        path = os.path.join(d, 'msg', typ + '.msg')
        if os.path.isfile(path):
            with open(path, encoding='utf-8') as f:
                return f.read()
    raise FileNotFoundError(f'no message definition {name}.msg in '
                            f"{', '.join(_share_dirs(pkg))}")


def _field_types(text, pkg):
    """Return the message types (``pkg/msg/Type``) the fields of a ``.msg`` text use."""
    out = []
    for line in text.splitlines():
        line = line.split('#', 1)[0].strip()
        if not line:
            continue
        typ = re.sub(r'\[.*\]$', '', line.split()[0])
        typ = typ.split('<=')[0]
        if typ in PRIMITIVES:
            continue
        parts = typ.split('/')
        if len(parts) == 1:
            out.append(f'{pkg}/msg/{parts[0]}')
        else:
            out.append(f'{parts[0]}/msg/{parts[-1]}')
    return out


def message_definition(name):
    """
    Return the ``ros2msg`` schema text of message type ``name`` (``pkg/msg/Type``).

    The type's ``.msg`` text, then every type it uses (depth first, each once) after a line
    of 80 ``=`` and ``MSG: pkg/msg/Type``, as rosbag2 writes MCAP schemas.  Raises
    FileNotFoundError naming a ``.msg`` file that is not installed.
    """
    text = _msg_text(name)
    parts, seen = [text.rstrip('\n')], {name}
    stack = list(reversed(_field_types(text, name.split('/')[0])))
    while stack:
        dep = stack.pop()
        if dep in seen:
            continue
        seen.add(dep)
        dep_text = _msg_text(dep)
        parts.append(f'{SEPARATOR}\nMSG: {dep}\n{dep_text.rstrip()}')
        stack.extend(reversed(_field_types(dep_text, dep.split('/')[0])))
    return '\n'.join(parts) + '\n'


#: messages a subscription keeps until the recorder's thread writes them: 4 s of 250 Hz
#: joint states, so that a recorder thread starved by its process (the demo's monitor, a
#: garbage collection) loses nothing
RECORD_DEPTH = 1000

#: topics whose type is known before any publisher is seen (ROS conventions and our nodes):
#: topic -> (type, latched)
KNOWN_TOPICS = {
    '/joint_states': ('sensor_msgs/msg/JointState', False),
    '/tf': ('tf2_msgs/msg/TFMessage', False),
    '/tf_static': ('tf2_msgs/msg/TFMessage', True),
    '/diagnostics': ('diagnostic_msgs/msg/DiagnosticArray', False),
    '/robot_description': ('std_msgs/msg/String', True),
    '/liemb_dynamics/joint_torques': ('sensor_msgs/msg/JointState', False),
    '/liemb_dynamics/controller_state': ('control_msgs/msg/JointTrajectoryControllerState',
                                         False),
}


#: the Fast DDS profile of the recorder's participant (``config/``): it announces itself
#: every 0.25 s, so nodes started after it are matched with it at once (see the module's
#: docstring)
DISCOVERY_PROFILE = 'record_fastdds.xml'
#: the variables that name a Fast DDS profile file (3.x; 2.x's)
PROFILE_VARIABLES = ('FASTDDS_DEFAULT_PROFILES_FILE', 'FASTRTPS_DEFAULT_PROFILES_FILE')


@contextlib.contextmanager
def discovery_profile(log=print):
    """
    Name :data:`DISCOVERY_PROFILE` in ``FASTDDS_DEFAULT_PROFILES_FILE`` inside the block.

    Create the recorder's ROS context and first node inside (rmw_fastrtps creates the
    participant with the first node): Fast DDS reads the file when the first participant
    of the process is created, so the variable is restored on exit and
    processes started later (nodes) do not inherit it.  A profile file named by the user
    is kept (``log`` says what that means for the recording); with an RMW other than Fast
    DDS the variable does nothing.
    """
    mine = [v for v in PROFILE_VARIABLES if os.environ.get(v)]
    if mine:
        log(f'liemb record: {mine[0]} is set ({os.environ[mine[0]]}): the recorder uses that '
            'profile, not its own; unless it shortens leaseAnnouncement, nodes started after '
            'the recorder may be matched up to 3 s late and their first messages missed')
        yield
        return
    from .resources import find
    os.environ['FASTDDS_DEFAULT_PROFILES_FILE'] = find('config', DISCOVERY_PROFILE)
    try:
        yield
    finally:
        os.environ.pop('FASTDDS_DEFAULT_PROFILES_FILE', None)


def _message_class(name):
    pkg, _, typ = name.partition('/msg/')
    return getattr(importlib.import_module(f'{pkg}.msg'), typ)


class Recorder:
    """
    Write the topics matching ``patterns`` (fnmatch, ``*`` spans ``/``) to an MCAP file.

    Create it, then :meth:`spin` (until Ctrl-C, SIGTERM, ``duration`` or :meth:`stop`) or
    call :meth:`spin_once` from your loop; :meth:`close` finishes the file.  ``counts``
    holds the messages written per topic, ``types`` their types.
    """

    def __init__(self, path, patterns=DEFAULT_TOPICS, *, node_name='liemb_record', log=print):
        import rclpy
        from mcap.writer import Writer
        from rclpy.executors import SingleThreadedExecutor

        self.path, self.patterns, self.log = path, tuple(patterns), log
        self.counts, self.types = {}, {}
        self._channels, self._schemas, self._subs = {}, {}, []
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self._file = open(path, 'wb')
        self._writer = Writer(self._file)
        self._writer.start(profile='ros2', library='liemb_ros record')
        self.context = rclpy.Context()
        with discovery_profile(log):   # the participant is created with the first node
            rclpy.init(context=self.context)
            self.node = rclpy.create_node(node_name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._last_scan = -1e9
        self._stop = False
        self._closed = False
        self._subscribe_known()

    def _wanted(self, topic):
        return any(fnmatch.fnmatchcase(topic, p) for p in self.patterns)

    def _qos(self, topic):
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
        infos = self.node.get_publishers_info_by_topic(topic)
        reliable = infos and all(i.qos_profile.reliability == ReliabilityPolicy.RELIABLE
                                 for i in infos)
        latched = infos and all(i.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL
                                for i in infos)
        return QoSProfile(
            depth=RECORD_DEPTH,
            reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT,
            durability=(DurabilityPolicy.TRANSIENT_LOCAL if latched
                        else DurabilityPolicy.VOLATILE))

    def scan(self):
        """Subscribe to matching topics that appeared since the last scan."""
        for topic, types in self.node.get_topic_names_and_types():
            if topic in self._channels or not self._wanted(topic) or len(types) != 1:
                continue
            name = types[0]
            try:
                cls = _message_class(name)
                schema = self._schemas.get(name)
                if schema is None:
                    schema = self._writer.register_schema(
                        name=name, encoding='ros2msg',
                        data=message_definition(name).encode())
                    self._schemas[name] = schema
            except (ImportError, AttributeError, FileNotFoundError) as exc:
                self.log(f'liemb record: not recording {topic} ({name}): {exc}')
                self._channels[topic] = None
                continue
            self._subscribe(topic, name, cls, schema, self._qos(topic))

    def _subscribe(self, topic, name, cls, schema, qos):
        channel = self._writer.register_channel(topic=topic, message_encoding='cdr',
                                                schema_id=schema)
        self._channels[topic] = channel
        self.types[topic] = name
        self.counts[topic] = 0
        self._subs.append(self.node.create_subscription(
            cls, topic, lambda data, t=topic, c=channel: self._write(t, c, data), qos,
            raw=True))

    def _subscribe_known(self):
        """
        Subscribe at once to the wanted topics of :data:`KNOWN_TOPICS`.

        Reliable, latched where they are.  A subscription made by :meth:`scan` matches its
        publisher only after discovery, a second or two after the publisher started, and
        would miss the start of a run that the recorder was started before.
        """
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
        for topic, (name, latched) in KNOWN_TOPICS.items():
            if not self._wanted(topic):
                continue
            try:
                cls = _message_class(name)
                schema = self._schemas.get(name)
                if schema is None:
                    schema = self._writer.register_schema(
                        name=name, encoding='ros2msg', data=message_definition(name).encode())
                    self._schemas[name] = schema
            except (ImportError, AttributeError, FileNotFoundError):
                continue   # left to scan(), which reports it
            self._subscribe(topic, name, cls, schema, QoSProfile(
                depth=RECORD_DEPTH, reliability=ReliabilityPolicy.RELIABLE,
                durability=(DurabilityPolicy.TRANSIENT_LOCAL if latched
                            else DurabilityPolicy.VOLATILE)))

    def _write(self, topic, channel, data):
        if self._closed:
            return
        now = time.time_ns()
        self._writer.add_message(channel_id=channel, log_time=now, data=bytes(data),
                                 publish_time=now, sequence=self.counts[topic])
        self.counts[topic] += 1

    def spin_once(self, timeout_sec=0.05):
        """Receive for up to ``timeout_sec``; look for new topics twice a second."""
        now = time.monotonic()
        if now - self._last_scan > 0.5:
            self._last_scan = now
            self.scan()
        self.executor.spin_once(timeout_sec=timeout_sec)

    def stop(self):
        """Make :meth:`spin` return."""
        self._stop = True

    def spin(self, duration=None):
        """Record until Ctrl-C, SIGTERM, ``duration`` seconds or :meth:`stop`; then close."""
        from rclpy.executors import ExternalShutdownException
        end = time.monotonic() + duration if duration is not None else float('inf')
        main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGTERM, lambda *_: self.stop()) if main else None
        try:
            while not self._stop and time.monotonic() < end:
                self.spin_once()
        except (KeyboardInterrupt, ExternalShutdownException):
            pass
        finally:
            if main:
                signal.signal(signal.SIGTERM, previous)
            self.close()

    def close(self):
        """Finish the MCAP file (its summary and index) and leave the ROS graph."""
        if self._closed:
            return
        self._closed = True
        self._writer.finish()
        self._file.close()
        self.executor.shutdown(timeout_sec=1)
        self.node.destroy_node()
        self.context.try_shutdown()

    def summary(self):
        """Return one line per recorded topic: count, type."""
        return '\n'.join(f'  {topic:40s} {self.counts[topic]:7d}  {self.types[topic]}'
                         for topic in sorted(self.counts))


def read_messages(path, topics=None):
    """Yield ``(topic, log_time_ns, message)`` of an MCAP recording (decoded, ROS 2 CDR)."""
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory
    with open(path, 'rb') as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        for _schema, channel, message, decoded in reader.iter_decoded_messages(topics=topics):
            yield channel.topic, message.log_time, decoded


def _stamp(header):
    return header.stamp.sec + 1e-9 * header.stamp.nanosec


#: the arrays :func:`read_run` fills from ``~/controller_state`` (stamp, then per joint)
CONTROL_KEYS = ('tc', 'time_from_start', 'q_ref', 'qd_ref', 'qdd_ref', 'q_fb', 'qd_fb',
                'q_err', 'qd_err', 'tau_out')


def read_run(path, joint_states='/joint_states', torques='/liemb_dynamics/joint_torques',
             controller_state='/liemb_dynamics/controller_state'):
    """
    Return ``(record, robot_xml)`` of a recorded demo run, as the demo's monitor records.

    ``record``: arrays ``t, q, qd, effort`` (``joint_states``, header stamps), ``tg, tau_g``
    (the dynamics node's torques), ``diag`` (the last values of each diagnostic status) and
    ``t_end``; from ``controller_state`` (:data:`CONTROL_KEYS`): ``tc`` (header stamps),
    ``time_from_start`` (of the reference), ``q_ref, qd_ref, qdd_ref`` (reference),
    ``q_fb, qd_fb`` (feedback), ``q_err, qd_err`` (error), ``tau_out`` (output effort) and
    ``control_joints`` (its joint_names); ``robot_xml``: the last ``robot_description`` text
    (None if none).
    """
    import numpy as np
    rec = {'t': [], 'q': [], 'qd': [], 'effort': [], 'tg': [], 'tau_g': [], 'diag': {}}
    rec.update({k: [] for k in CONTROL_KEYS})
    names = []
    xml = None
    for topic, _, msg in read_messages(path):
        if topic == controller_state:
            names = list(msg.joint_names)
            d = msg.reference.time_from_start
            for key, value in zip(CONTROL_KEYS, (
                    _stamp(msg.header), d.sec + 1e-9 * d.nanosec, msg.reference.positions,
                    msg.reference.velocities, msg.reference.accelerations,
                    msg.feedback.positions, msg.feedback.velocities, msg.error.positions,
                    msg.error.velocities, msg.output.effort)):
                rec[key].append(np.array(value, dtype=float))
        elif topic == joint_states:
            rec['t'].append(_stamp(msg.header))
            rec['q'].append(np.array(msg.position))
            rec['qd'].append(np.array(msg.velocity))
            rec['effort'].append(np.array(msg.effort))
        elif topic == torques:
            rec['tg'].append(_stamp(msg.header))
            rec['tau_g'].append(np.array(msg.effort))
        elif topic == '/diagnostics':
            for st in msg.status:
                rec['diag'][st.name] = {kv.key: kv.value for kv in st.values}
                rec['diag'][st.name]['message'] = st.message
        elif topic.endswith('robot_description'):
            xml = msg.data
    out = {k: np.array(v) for k, v in rec.items() if k != 'diag'}
    out['diag'] = rec['diag']
    out['control_joints'] = names
    out['t_end'] = float(out['t'][-1] - out['t'][0]) if len(out['t']) else 0.0
    return out, xml


def tracking_rms(rec):
    """Return ``(rms, max)`` of the recorded ``~/controller_state`` position errors [rad]."""
    import numpy as np
    e = rec['q_err']
    return float(np.sqrt(np.mean(e ** 2))), float(np.abs(e).max())


def plot_control(rec, path, title=''):
    """
    Save a control run's plot to ``path``; return ``path``.

    Desired (dashed) and actual position of each joint, the commanded torques, and the
    tracking error (reference - feedback) with its RMS.  ``rec``: :func:`read_run`'s record
    of a recording that holds ``~/controller_state``.
    """
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    names = rec['control_joints']
    n = len(names)
    t = rec['tc'] - rec['tc'][0]
    rms, peak = tracking_rms(rec)
    fig = plt.figure(figsize=(13, max(8.0, 1.3 * n + 1)))
    grid = fig.add_gridspec(n, 2)
    half = max(n // 2, 1)
    tau_ax = fig.add_subplot(grid[:half, 1])
    err_ax = fig.add_subplot(grid[half:, 1], sharex=tau_ax)
    first = None
    for j, name in enumerate(names):
        ax = fig.add_subplot(grid[j, 0], sharex=first)
        first = first or ax
        line, = ax.plot(t, rec['q_fb'][:, j], linewidth=1.2, label='actual')
        ax.plot(t, rec['q_ref'][:, j], '--', color='k', linewidth=0.9, label='desired')
        ax.set_ylabel(f'{name}\n[rad]', fontsize=8)
        ax.tick_params(labelsize=7)
        if j == 0:
            ax.legend(fontsize=7, ncol=2, loc='upper right')
            ax.set_title('joint positions: desired (dashed) and actual', fontsize=9)
        if j < n - 1:
            ax.tick_params(labelbottom=False)
        tau_ax.plot(t, rec['tau_out'][:, j], color=line.get_color(), linewidth=0.9,
                    label=name)
        err_ax.plot(t, 1e3 * rec['q_err'][:, j], color=line.get_color(), linewidth=0.9)
    ax.set_xlabel('time [s]')
    tau_ax.set_ylabel('torque [N m]')
    tau_ax.set_title('commanded torques (~/controller_state output)', fontsize=9)
    tau_ax.legend(fontsize=7, ncol=4)
    tau_ax.tick_params(labelbottom=False)
    err_ax.set_ylabel('error [mrad]')
    err_ax.set_xlabel('time [s]')
    err_ax.set_title(f'tracking error (desired - actual): RMS {rms:.2e} rad, max {peak:.2e} '
                     'rad', fontsize=9)
    fig.suptitle(title or 'computed-torque tracking')
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def record_main(args):
    """Run ``liemb record``; return the exit code."""
    try:
        rec = Recorder(args.file, args.topics or DEFAULT_TOPICS)
    except ImportError as exc:
        print(f'liemb record: ROS 2 or mcap is not installed in this Python ({exc}); run '
              './dev.sh setup', file=sys.stderr)
        return 2
    except OSError as exc:
        print(f'liemb record: cannot write {args.file}: {exc}', file=sys.stderr)
        return 2
    print(f"liemb record: writing {', '.join(rec.patterns)} to {args.file} (Ctrl-C stops)",
          flush=True)
    rec.spin(args.duration)
    print(f'liemb record: wrote {args.file}\n{rec.summary()}', flush=True)
    return 0


def plot_main(args):
    """Run ``liemb plot``; return the exit code."""
    from .model import URDFError, load_urdf, load_urdf_string
    from .ros.monitor import plot
    try:
        rec, xml = read_run(args.file)
    except OSError as exc:
        print(f'liemb plot: cannot read {args.file}: {exc}', file=sys.stderr)
        return 2
    except Exception as exc:   # the mcap reader's errors have no common base
        print(f'liemb plot: {args.file} is not a readable MCAP recording: {exc}',
              file=sys.stderr)
        return 2
    try:
        if args.robot:
            from . import resources
            model = load_urdf(resources.robot_path(args.robot))
        elif xml:
            model = load_urdf_string(xml, source=f'{args.file}: robot_description')
        else:
            print(f'liemb plot: {args.file} holds no robot_description; give --robot',
                  file=sys.stderr)
            return 2
    except (FileNotFoundError, URDFError) as exc:
        print(f'liemb plot: {exc}', file=sys.stderr)
        return 2
    out = args.out or os.path.splitext(args.file)[0] + '.png'
    if len(rec['tc']):
        rms, peak = tracking_rms(rec)
        plot_control(rec, out, f'{model.name}: the dynamics node tracking a joint trajectory '
                               '(computed_torque)')
        print(f"liemb plot: {len(rec['tc'])} controller states, "
              f"{rec['tc'][-1] - rec['tc'][0]:.2f} s, tracking error RMS {rms:.2e} rad "
              f'(max {peak:.2e} rad) -> {out}')
        return 0
    if len(rec['q']) and rec['q'].shape[1] != model.nq:
        print(f'liemb plot: the recorded joint_states have {rec["q"].shape[1]} joints, '
              f'{model.name} has {model.nq}', file=sys.stderr)
        return 2
    plot(model, rec, out)
    print(f"liemb plot: {len(rec['t'])} joint states, {len(rec['tg'])} torque messages, "
          f"{rec['t_end']:.2f} s -> {out}")
    return 0
