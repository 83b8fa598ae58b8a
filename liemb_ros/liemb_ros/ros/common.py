"""
What every liemb node shares: parameters, the robot's source, names, the process entry point.

* :func:`declare` declares a node's parameters with typed descriptors and survives what a
  command line or YAML file may send (an empty list ``[]`` arrives untyped; rclpy would
  leave the parameter uninitialised and the node would die on first read).
* :class:`RobotSource` gets the robot the way robot_state_publisher's users expect: the
  ``robot_description`` parameter (URDF XML), a file (``urdf_path``: URDF, xacro with
  ``xacro_args``, or a shipped robot's name) or else the transient-local
  ``robot_description`` topic.  Text from the topic is parsed as XML and never opened as
  a path.  A parameter or file that cannot work is a :class:`ConfigError` (the process
  exits non-zero with the reason); a bad description on the topic is logged and the node
  waits for the next one.
* :class:`Preparation` compiles a new robot's kernels in a thread while the node spins, so
  that it answers parameter and service requests meanwhile and reports "compiling" in its
  log and ``/diagnostics`` (minutes on a cold numba cache, a fraction of a second after).
* :class:`StateWatch`: the age of the last good joint state against ``state_timeout``
  (the dynamics and servo nodes each own one and stop commanding from a stale state).
* :func:`topic_token` turns a joint or link name into a valid topic name token.
* :func:`run` is every node's ``main``: a clean exit on Ctrl-C and SIGTERM (no traceback
  from callbacks that race the shutdown), exit code 1 with the reason for a
  configuration that cannot work.
"""
import faulthandler
import gc
import math
import os
import re
import signal
import sys
import threading
import time
import warnings

import rclpy
from rcl_interfaces.msg import ParameterType
from rclpy.clock import Clock, ClockType
from rclpy.exceptions import (InvalidParameterTypeException, InvalidParameterValueException,
                              ParameterUninitializedException)
from rclpy.executors import ShutdownException, SingleThreadedExecutor, TimeoutException
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import String

from .._cache import KERNEL_CACHE, prepared
from ..core.model import URDFError, load_urdf_string
from ..core.resources import read_robot_description
from .conversions import descriptor, shown

#: robot_state_publisher's QoS for robot_description: late joiners get the last one
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL,
                     history=HistoryPolicy.KEEP_LAST)
#: the steady clock: timers that must run whatever /clock does (use_sim_time)
STEADY = Clock(clock_type=ClockType.STEADY_TIME)
#: the most characters of an error's text that a log line or ``/diagnostics`` quotes
#: (:func:`~liemb_ros.ros.conversions.shown`): an error may quote a message's text, but
#: its own words should stay whole
ERROR_CHARS = 400


class ConfigError(Exception):
    """A configuration that cannot work (missing file, unknown link): the node exits."""


def error_text(where, exc):
    """Return ``'WHERE: Type: message'`` of an exception, the message cut to ERROR_CHARS."""
    return f'{where}: {type(exc).__name__}: {shown(str(exc), ERROR_CHARS)}'


def guarded(callback, where, on_error):
    """
    Return ``callback`` inside a node's error handling: no input may end the node.

    An exception of ``callback`` (a bug, or an input no check foresaw) becomes
    :func:`error_text` ``(where, exc)``, and ``on_error(text, args)`` decides what follows
    (log and count it, refuse a command, stop a simulation, answer a service); its return
    value is the callback's (a service's response, a parameter change's result).
    """
    def call(*args):
        try:
            return callback(*args)
        except Exception as exc:  # noqa: B902 - no input may end the node
            return on_error(error_text(where, exc), args)
    return call


def declare(node, specs):
    """
    Declare parameters from ``(name, default, description, type, extra)`` tuples.

    ``extra`` holds :func:`~liemb_ros.ros.conversions.descriptor` keywords (``lo``, ``hi``,
    ``read_only``).  A list parameter overridden with ``[]`` (which rclpy receives without a
    type and leaves uninitialised) becomes the empty list of its declared type.  An override
    of the wrong type or out of range (``-p publish_rate:=fast``) is a :class:`ConfigError`
    naming the parameter.
    """
    for name, default, text, kind, extra in specs:
        # an empty default says nothing of its type: declare the type, the value follows
        value = Parameter.Type(kind) if isinstance(default, list) and not default else default
        final = descriptor(text, kind, **extra)
        writable = descriptor(text, kind, **dict(extra, read_only=False))
        try:
            node.declare_parameter(name, value, writable)
        except (InvalidParameterTypeException, InvalidParameterValueException) as exc:
            hint = (' (a double needs a decimal point: 100.0, not 100)'
                    if "'INTEGER', expecting type 'DOUBLE" in exc.args[0] else '')
            raise ConfigError(f'parameter {name}: {exc.args[0]}{hint}') from None
        try:
            node.get_parameter(name)
        except ParameterUninitializedException:
            node.set_parameters([Parameter(name, Parameter.Type(kind), [])])
        if final.read_only:
            node.set_descriptor(name, final)


def realtime_priority(priority):
    """
    Give every thread of this process the real-time policy ``SCHED_FIFO`` at ``priority``.

    What ros2_control's controller manager does for its loop: a thread of this policy runs
    as soon as it is ready, before every normal (``SCHED_OTHER``) thread on its core, so other
    work on the machine no longer preempts a cycle.  All threads, not the loop's alone: a
    publish waits on locks the middleware's own threads hold, and a preempted holder would
    stall the loop anyway (measured: the loop thread alone cut the callback p99 less than
    half as much).  Threads created later inherit the policy (:class:`Preparation` drops it).
    Linux only; it needs the right (root, ``CAP_SYS_NICE`` or an ``rtprio`` limit in
    ``/etc/security/limits.conf``).  ``priority`` 0: nothing to do.  Returns a description for
    the log and ``/diagnostics``: ``'SCHED_FIFO 50'``, ``'normal'`` or ``'normal
    (SCHED_FIFO 50 refused: ...)'``.
    """
    if priority <= 0:
        return 'normal'
    try:
        param = os.sched_param(int(priority))
        for tid in sorted(int(t) for t in os.listdir('/proc/self/task')):
            try:
                os.sched_setscheduler(tid, os.SCHED_FIFO, param)
            except ProcessLookupError:   # a thread that ended meanwhile
                pass
    except (AttributeError, OSError) as exc:   # no such call here, or not permitted
        return f'normal (SCHED_FIFO {priority} refused: {exc})'
    return f'SCHED_FIFO {priority}'


class StateWatch:
    """
    How old the last good joint state is, against a timeout (the nodes that command from them).

    ``timeout()`` returns the timeout in seconds (0: never stale), read on every question
    (``state_timeout`` may change at run time); ``clock()`` the steady time in seconds.  The
    node calls :meth:`seen` on every good joint state.
    """

    def __init__(self, timeout, clock=time.monotonic):
        self.timeout = timeout
        self.clock = clock
        self.last = None   # steady time of the last good joint state

    def seen(self):
        """Take note of a good joint state, now."""
        self.last = self.clock()

    def age(self):
        """Return the seconds since the last good joint state (inf before the first)."""
        return math.inf if self.last is None else self.clock() - self.last

    def stale(self):
        """Return whether the last good joint state is older than the timeout."""
        timeout = self.timeout()
        return timeout > 0 and self.age() > timeout


def settle_heap():
    """
    Collect garbage once, then freeze every object that exists now (``gc.freeze``).

    Called when a node starts serving a robot: the imported libraries, the compiled kernels
    and the model are long-lived (a node holds about 240 000 objects), and a full cyclic
    collection over them stopped the process for 60-110 ms (measured; 180-380 ms in a
    process that has also imported Pinocchio and matplotlib), which a 1 kHz loop or a 0.2 s
    command timeout cannot absorb.  Frozen objects are never scanned again, so a later full
    collection costs microseconds.  What the loop allocates afterwards is collected as usual.
    """
    gc.collect()
    gc.freeze()


class Preparation:
    """
    Run ``work()`` in a thread; then ``done(result)`` in the node's executor.

    ``work`` compiles kernels (numba holds the GIL in bursts, so the executor still answers
    requests, a little slower).  An exception in ``work`` is logged as an error and
    ``done`` is not called.  :attr:`seconds` tells how long it has been running.
    """

    def __init__(self, node, work, done, what):
        self.node, self.what = node, what
        self.started = time.monotonic()
        self._result = self._error = None
        self._done = done
        if KERNEL_CACHE and prepared(KERNEL_CACHE):
            node.get_logger().info(f'{what}: loading the prepared kernels')
        else:
            node.get_logger().info(
                f'{what}: compiling kernels into {KERNEL_CACHE or "__pycache__"} (not '
                'prepared: a first start takes a minute or more; `liemb prepare` once '
                'prepares every node and command)')
        self._thread = threading.Thread(target=self._run, args=(work,), daemon=True)
        self._thread.start()
        self._timer = node.create_timer(0.05, self._poll, clock=STEADY)

    @property
    def seconds(self):
        """Seconds since the preparation started."""
        return time.monotonic() - self.started

    def _run(self, work):
        realtime = (os.SCHED_FIFO, os.SCHED_RR) if hasattr(os, 'SCHED_FIFO') else ()
        if realtime and os.sched_getscheduler(0) in realtime:
            # a thread inherits its creator's policy: a real-time loop thread (see
            # realtime_priority) must not hand a minute of compiling a real-time priority
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
        try:
            self._result = work()
        except Exception as exc:  # reported in the executor thread by _poll
            self._error = exc

    def _poll(self):
        if self._thread.is_alive():
            return
        self.node.destroy_timer(self._timer)
        if self._error is not None:
            self.node.get_logger().error(f'{self.what}: preparing failed: {self._error}')
            return
        self._done(self._result)


def topic_token(name):
    """
    Return ``name`` as a valid ROS topic name token (``panda.joint-1`` -> ``panda_joint_1``).

    Characters other than letters, digits and ``_`` become ``_``, runs of ``_`` collapse,
    a leading digit gets a ``j`` in front (tokens must not start with one).
    """
    token = re.sub(r'_+', '_', re.sub(r'[^A-Za-z0-9_]', '_', str(name))).strip('_')
    if not token or token[0].isdigit():
        token = 'j' + token
    return token


def robot_parameter_table():
    """Return the parameters every node declares for its robot (:class:`RobotSource`)."""
    S, B = ParameterType.PARAMETER_STRING, ParameterType.PARAMETER_BOOL
    ro = {'read_only': True}
    return (
        ('robot_description', '', 'URDF XML of the robot (empty: urdf_path, else the '
         'robot_description topic)', S, ro),
        ('urdf_path', '', 'URDF or xacro file, or a shipped robot name; used when '
         'robot_description is empty', S, ro),
        ('xacro_args', '', "xacro arguments for a .xacro urdf_path: 'name:=value ...'",
         S, ro),
        ('floating_base', False, 'treat the root link as a floating SE(3) base', B, ro))


class RobotSource:
    """
    The robot of a node: parameter, file or topic; calls ``on_robot(model, xml, where)``.

    Declares ``robot_description``, ``urdf_path``, ``xacro_args`` and ``floating_base``
    (read-only).  :meth:`start` loads from the parameter or the file at once (raising
    :class:`ConfigError`, also for a ``ConfigError`` of ``on_robot``), or subscribes to the
    ``robot_description`` topic; a description from the topic that cannot be used (any
    error while it is loaded) is logged and kept in :attr:`error` (for the node's
    diagnostics; cut by :func:`~liemb_ros.ros.conversions.shown`), and the node waits for
    the next one.  A changed description on the topic replaces the robot.
    """

    def __init__(self, node, on_robot):
        self.node = node
        self.on_robot = on_robot
        self.waiting = False
        self.error = None
        self._text = None
        declare(node, robot_parameter_table())

    def _p(self, name):
        return self.node.get_parameter(name).value

    def _load(self, xml, where):
        """Parse the description; the parser's warnings go to the node's log."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            model = load_urdf_string(xml, source=where,
                                     floating_base=self._p('floating_base') or None)
        for w in caught:
            self.node.get_logger().warning(str(w.message))
        return model

    def start(self):
        """Load the robot from the parameter or file, or subscribe to the topic."""
        xml, path = self._p('robot_description'), self._p('urdf_path')
        if xml:
            where = 'the robot_description parameter'
        elif path:
            try:
                xml, where = read_robot_description(path, self._p('xacro_args') or None)
            except (OSError, URDFError, ValueError) as exc:
                raise ConfigError(f'cannot read the robot {path!r}: {exc}') from None
        else:
            topic = self.node.resolve_topic_name('robot_description')
            self.node.get_logger().info(f'waiting for the robot description on {topic}')
            self.waiting = True
            self.node.create_subscription(String, 'robot_description', self._on_topic,
                                          LATCHED)
            return
        try:
            model = self._load(xml, where)
        except URDFError as exc:
            raise ConfigError(f'cannot use the robot from {where}: {exc}') from None
        self.on_robot(model, xml, where)

    def _on_topic(self, msg):
        text = msg.data
        if text == self._text:
            return
        self._text = text
        where = 'the robot_description topic'
        try:
            model = self._load(text, where)
            self.on_robot(model, text, where)
        except Exception as exc:  # noqa: B902 - no message may end the node
            # the error may quote the message's text (a name, the start of the XML): cut
            self.error = shown(str(exc), ERROR_CHARS)
            self.node.get_logger().error(f'cannot use the robot from {where}: {self.error}; '
                                         'waiting for another description')
            return
        self.waiting = False
        self.error = None


#: how often a node with an io node serves its other callbacks while joint states flow [s]
TURN = 0.004
#: ... and once none has come for :data:`IDLE_AFTER` seconds (each turn costs a wait over
#: the node's ~40 entities: an idle node used 10 % of a core at 4 ms, 5 % at 20 ms)
IDLE_TURN = 0.02
IDLE_AFTER = 0.5
#: how often the io node's QoS events are taken [s]: the count of lost samples (which the
#: middleware accumulates meanwhile) only feeds /diagnostics, and each look costs rclpy's
#: executor a wait over the io node (0.2-0.6 ms in a loaded 1 kHz node, measured)
EVENTS_TURN = 0.1


def spin(node):
    """
    Serve ``node``'s callbacks until its context shuts down.

    A node with an ``io_node`` (the dynamics node's 1 kHz path) is served in this one
    thread: between turns, a wait set built for the io node's one subscription (rcl's, as
    rclpy's executor uses it, without the executor's per-wake-up bookkeeping: 40 against
    125 µs of CPU per state in process) waits for the next joint state and hands it to the
    subscription's callback; every :data:`TURN` seconds the node's ready callbacks
    (services, parameters, timers, the action) all run (every :data:`IDLE_TURN` seconds
    while no joint state has come for :data:`IDLE_AFTER` s: the first one is served at once
    and brings the short turns back), and every :data:`EVENTS_TURN` s the io node's QoS
    events (lost samples).
    One thread: no locks, no races between a cycle and a parameter change.
    """
    io_node = getattr(node, 'io_node', None)
    if io_node is None:
        rclpy.spin(node)
        return
    context = node.context
    main = SingleThreadedExecutor(context=context)
    main.add_node(node)
    fast = SingleThreadedExecutor(context=context)
    fast.add_node(io_node)
    (sub,) = io_node.subscriptions
    wait_set = _rclpy.WaitSet(1, 0, 0, 0, 0, 0, context.handle)
    due = last = events_due = 0.0
    while context.ok():
        wait = due - time.monotonic()
        if wait > 0:   # a joint state, or the wait runs out
            try:
                with sub.handle:
                    wait_set.clear_entities()
                    wait_set.add_subscription(sub.handle)
                    wait_set.wait(int(wait * 1e9))
                    taken = sub.handle.take_message(sub.msg_type, sub.raw)
            except Exception:  # noqa: B902 - the handles of a context shut down meanwhile
                if context.ok():
                    raise
                break
            if taken is not None:
                last = time.monotonic()
                if due - last > TURN:   # back from idle: the short turns at once
                    due = last + TURN
                sub.callback(taken[0])
            continue
        if time.monotonic() >= events_due:   # the io node's QoS events (lost samples)
            fast.spin_once(timeout_sec=0)
            events_due = time.monotonic() + EVENTS_TURN
        for _ in range(64):   # every callback that is ready (one wait, then its batch)
            try:
                handler, _, _ = main.wait_for_ready_callbacks(timeout_sec=0)
            except (TimeoutException, ShutdownException):
                break
            handler()
            if handler.exception() is not None:
                raise handler.exception()
        now = time.monotonic()
        due = now + (TURN if now - last < IDLE_AFTER else IDLE_TURN)


def run(node_class, args=None):
    """
    Run a node until Ctrl-C or SIGTERM; return the process exit code.

    0 after a clean stop, also one while the node was still starting (a launch stopping
    because another node failed); 1 with the reason on stderr when the node's configuration
    cannot work (:class:`ConfigError` while it starts).  An error raised by a callback after
    the shutdown began (a publisher whose context the signal handler already invalidated)
    is the race of a normal stop, not a failure, and prints nothing.

    Ctrl-C raises KeyboardInterrupt wherever the main thread is, also inside a conversion
    that pybind11 turns into another exception (``take_message``'s "Unable to convert call
    argument '0' to Python object": the simulation node exited 1 with that traceback
    once in 25 stops), sometimes before rclpy's signal thread has shut the context down,
    so ``rclpy.ok()`` alone does not tell a stop from a failure: a flag set by the SIGINT
    handler does (installed before ``rclpy.init``, whose handler calls it).  Only the first
    SIGINT raises: a Ctrl-C in a terminal reaches a launched node twice (from the terminal
    and from the launcher), and a KeyboardInterrupt inside ``destroy_node`` would leave its
    entities half destroyed (rclpy issue 178: a segmentation fault at exit); the launcher
    kills a node that does not stop.  A crash in native code prints every thread's Python
    stack (:mod:`faulthandler`).
    """
    faulthandler.enable(all_threads=True)
    stopping = []

    def interrupted(signum, frame):   # Python's default_int_handler, once, and the flag
        stopping.append(signum)
        if len(stopping) == 1:
            raise KeyboardInterrupt
    if threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, interrupted)
    rclpy.init(args=args if args is not None else sys.argv)
    try:
        node = node_class()
    except ConfigError as exc:
        print(f'[{node_class.NAME}] error: {exc}', file=sys.stderr, flush=True)
        rclpy.try_shutdown()
        return 1
    except KeyboardInterrupt:   # Ctrl-C or the launch's stop while starting: no traceback
        rclpy.try_shutdown()
        return 0
    try:
        spin(node)
    except (KeyboardInterrupt, rclpy.executors.ExternalShutdownException):
        pass
    except Exception:
        if rclpy.ok() and not stopping:
            raise
    finally:
        try:
            node.destroy_node()
        except Exception:  # the context may be gone already
            pass
        rclpy.try_shutdown()
    return 0
