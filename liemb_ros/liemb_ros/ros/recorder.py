"""
Record ROS 2 topics to MCAP (``liemb record``, ``--record FILE.mcap``).

:class:`Recorder` subscribes to the topics that match its patterns as they appear in the
graph (serialized: the CDR bytes are written as received, as ``ros2 bag record`` does), with
the publishers' reliability and durability, and writes them to an MCAP file with the
``ros2`` profile, ``cdr`` message encoding and ``ros2msg`` schemas named as ROS 2 names
them (``sensor_msgs/msg/JointState``), each with its dependencies in rosbag2's layout
(:func:`message_definition`, from the installed ``.msg`` files).  Foxglove and ``ros2 bag``
on a ROS install open the file.  Log times are the receive times (ns since the epoch).

The file survives a kill: messages go into zstd-compressed chunks of at most about
:data:`CHUNK_SIZE` bytes (uncompressed), and the chunk in progress is closed and written out
at least every :data:`FLUSH_PERIOD` seconds, as ``ros2 bag record`` writes chunks as it goes.
A recorder killed (SIGKILL, a crash) loses the chunk it was filling (the messages of at most
the last second, at most about 1 MiB of them) and the file's summary, which readers do not
need: :func:`read_messages` reads every complete chunk before the cut and says what was lost.
(The file is not fsynced: a machine that loses power may lose what its OS had not yet
written.)  SIGINT and SIGTERM stop :meth:`Recorder.spin` within one turn of its loop (the
handlers only set a flag, so no write is cut in the middle); SIGINT is handled even when the
process inherited it ignored, as a job started in the background of a non-interactive shell
(CI) does.  An existing file is not replaced unless asked (``overwrite``, ``liemb record
--overwrite``), as ``ros2 bag record`` refuses one.

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
    pkg, kind, typ = (name.split('/') + ['', ''])[:3]   # pkg/msg/Type (pkg/action/...: none)
    for d in _share_dirs(pkg):
        path = os.path.join(d, kind, typ + '.msg')
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
    from ..core.resources import find
    os.environ['FASTDDS_DEFAULT_PROFILES_FILE'] = find('config', DISCOVERY_PROFILE)
    try:
        yield
    finally:
        os.environ.pop('FASTDDS_DEFAULT_PROFILES_FILE', None)


def _message_class(name):
    pkg, kind, typ = name.split('/')   # pkg/msg/Type, pkg/action/Type_FeedbackMessage
    return getattr(importlib.import_module(f'{pkg}.{kind}'), typ)


#: the largest chunk the recorder writes [bytes, uncompressed] (the mcap writer's default)
CHUNK_SIZE = 1024 * 1024


#: the recorder closes its chunk and writes it to the file at least this often [s]
FLUSH_PERIOD = 1.0


class Recorder:
    """
    Write the topics matching ``patterns`` (fnmatch, ``*`` spans ``/``) to an MCAP file.

    Create it, then :meth:`spin` (until Ctrl-C, SIGTERM, ``duration`` or :meth:`stop`) or
    call :meth:`spin_once` from your loop; :meth:`close` finishes the file.  ``counts``
    holds the messages written per topic, ``types`` their types.  Raises FileExistsError
    when ``path`` exists and ``overwrite`` is false.  Chunks of at most :data:`CHUNK_SIZE`
    bytes, each written out within :data:`FLUSH_PERIOD` s (see the module's docstring).
    """

    def __init__(self, path, patterns=DEFAULT_TOPICS, *, node_name='liemb_record', log=print,
                 overwrite=False):
        import rclpy
        from mcap.writer import Writer
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.signals import SignalHandlerOptions

        self.path, self.patterns, self.log = path, tuple(patterns), log
        self.counts, self.types = {}, {}
        self._channels, self._schemas, self._subs = {}, {}, []
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self._file = open(path, 'wb' if overwrite else 'xb')
        self._writer = Writer(self._file, chunk_size=CHUNK_SIZE)
        self._writer.start(profile='ros2', library='liemb_ros record')
        self._file.flush()
        self.context = rclpy.Context()
        with discovery_profile(log):   # the participant is created with the first node
            rclpy.init(context=self.context, signal_handler_options=SignalHandlerOptions.NO)
            self.node = rclpy.create_node(node_name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._last_scan = -1e9
        self._last_flush = time.monotonic()
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
            except (ImportError, AttributeError, FileNotFoundError, ValueError) as exc:
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
            except (ImportError, AttributeError, FileNotFoundError, ValueError):
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
        self._file.flush()   # a chunk the writer closed at CHUNK_SIZE goes out now

    def flush(self):
        """Close the chunk in progress and write it out (the file is readable up to here)."""
        if not self._closed:
            self._writer.flush()
            self._last_flush = time.monotonic()

    def spin_once(self, timeout_sec=0.05):
        """Receive for up to ``timeout_sec``; new topics twice a second, a chunk each second."""
        now = time.monotonic()
        if now - self._last_scan > 0.5:
            self._last_scan = now
            self.scan()
        self.executor.spin_once(timeout_sec=timeout_sec)
        if time.monotonic() - self._last_flush >= FLUSH_PERIOD:
            self.flush()

    def stop(self):
        """Make :meth:`spin` return."""
        self._stop = True

    def spin(self, duration=None):
        """
        Record until Ctrl-C, SIGTERM, ``duration`` seconds or :meth:`stop`; then close.

        In the main thread SIGINT and SIGTERM only set the stop flag (a KeyboardInterrupt
        in the middle of a write would leave a broken chunk), SIGINT even when the process
        inherited it ignored; the loop sees the flag within one :meth:`spin_once` (50 ms
        and the callback in progress).  The previous handlers are restored on return.
        """
        from rclpy.executors import ExternalShutdownException
        end = time.monotonic() + duration if duration is not None else float('inf')
        main = threading.current_thread() is threading.main_thread()
        previous = {sig: signal.signal(sig, lambda *_: self.stop())
                    for sig in (signal.SIGINT, signal.SIGTERM)} if main else {}
        try:
            while not self._stop and time.monotonic() < end:
                self.spin_once()
        except (KeyboardInterrupt, ExternalShutdownException):
            pass
        finally:
            try:
                self._finish_file()
            finally:   # a second Ctrl-C while leaving the graph acts as usual
                for sig, handler in previous.items():
                    signal.signal(sig, handler)
            self.close()

    def _finish_file(self):
        if not self._closed:
            self._closed = True
            self._writer.finish()
            self._file.close()

    def close(self):
        """Finish the MCAP file (its last chunk, summary and index), then leave the graph."""
        if self.context is None:
            return
        self._finish_file()
        context, self.context = self.context, None
        self.executor.shutdown(timeout_sec=1)
        self.node.destroy_node()
        context.try_shutdown()

    def summary(self):
        """Return one line per recorded topic: count, type."""
        return '\n'.join(f'  {topic:40s} {self.counts[topic]:7d}  {self.types[topic]}'
                         for topic in sorted(self.counts))


def record_main(args):
    """Run ``liemb record``; return the exit code."""
    try:
        rec = Recorder(args.file, args.topics or DEFAULT_TOPICS,
                       overwrite=getattr(args, 'overwrite', False))
    except ImportError as exc:
        print(f'liemb record: ROS 2 or mcap is not installed in this Python ({exc}); run '
              './dev.sh setup', file=sys.stderr)
        return 2
    except FileExistsError:
        print(f'liemb record: {args.file} exists; --overwrite replaces it', file=sys.stderr)
        return 2
    except OSError as exc:
        print(f'liemb record: cannot write {args.file}: {exc}', file=sys.stderr)
        return 2
    print(f"liemb record: writing {', '.join(rec.patterns)} to {args.file} (Ctrl-C stops)",
          flush=True)
    rec.spin(args.duration)
    print(f'liemb record: wrote {args.file}\n{rec.summary()}', flush=True)
    return 0
