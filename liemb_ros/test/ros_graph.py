"""
Node processes and an in-process client on a private ROS 2 domain (shared by the ROS tests).

Each :class:`Graph` takes a ``ROS_DOMAIN_ID`` no other graph on this machine holds (a lock
file per domain: test runs side by side never share one) with
``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``, starts node processes the way a user does
(``python -m liemb_ros.ros.<node> --ros-args ...`` with the shipped parameter files, or a
console command such as ``liemb launch``), records what they print, and spins a client node
that publishes, subscribes and calls services.
"""
import fcntl
import gc
import os
import random
import tempfile
import signal
import subprocess
import sys
import time

import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy

from conftest import ROOT

RELIABLE = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)
TIMEOUT = 180.0  # generous: a node may compile numba kernels on a cold cache first
CONFIG = os.path.join(ROOT, 'config')


def node_argv(node, params=(), name=None, files=True):
    """
    Command line of one of our nodes, as the launchers build it.

    ``node``: 'dynamics' or 'simulation'; ``params``: ``name:=value`` overrides;
    ``files``: include the shipped ``config/<node>.yaml``.
    """
    name = name or f'liemb_{node}'
    argv = [sys.executable, '-m', f'liemb_ros.ros.{node}_node', '--ros-args',
            '-r', f'__node:={name}']
    if files:
        argv += ['--params-file', os.path.join(CONFIG, f'{node}.yaml')]
    for p in params:
        argv += ['-p', p]
    return argv


class Graph:
    """Node processes and a client node on a private, localhost-only ROS domain."""

    def __init__(self, tmp_path):
        self.domain, self._domain_lock = free_domain()
        self.env = dict(os.environ, ROS_DOMAIN_ID=str(self.domain),
                        ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST')
        self.env.pop('ROS_STATIC_PEERS', None)
        self.tmp_path = tmp_path
        self.procs = []
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=self.domain)
        self.node = Node('liemb_test_client', context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        # The client stands in for a teleop device or a controller that publishes on time:
        # a full garbage collection over the suite's heap (Pinocchio, hypothesis, every test
        # module: 0.2-0.4 s measured) would stall it past the servo's 0.2 s command timeout.
        gc.collect()
        gc.freeze()

    def start(self, launch_set, only, params=(), launch_args=None):
        """Start the nodes named ``only`` of a launch set, as ``liemb launch`` would."""
        from liemb_ros.app.launcher import commands
        runnable, _ = commands(launch_set, params, launch_args,
                               tmpdir=str(self.tmp_path))
        for label, argv, _ in runnable:
            if label in only:
                self.run(label, argv)

    def run(self, label, argv):
        """Start a process (its output goes to ``<tmp>/<label>.log``); return it."""
        log = open(self.tmp_path / f'{label}.log', 'w')
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=self.env)
        self.procs.append((label, log, proc))
        return proc

    def output(self, label=None):
        """Everything the processes (or the one named ``label``) printed so far."""
        text = []
        for name, log, _ in self.procs:
            if label in (None, name):
                log.flush()
                text.append(f'--- {name}\n' + (self.tmp_path / f'{name}.log').read_text())
        return '\n'.join(text)

    def spin_until(self, done, timeout=TIMEOUT, allow_exit=()):
        """Spin the client until ``done()``; fail when a process died or time ran out."""
        deadline = time.monotonic() + timeout
        while not done():
            for label, _, p in self.procs:
                if label not in allow_exit:
                    assert p.poll() is None, f'{label} exited ({p.returncode}):\n' \
                                             f'{self.output()}'
            assert time.monotonic() < deadline, f'timed out; nodes said:\n{self.output()}'
            self.executor.spin_once(timeout_sec=0.02)

    def spin_for(self, seconds):
        """Spin the client for ``seconds``."""
        end = time.monotonic() + seconds
        self.spin_until(lambda: time.monotonic() > end)

    def call(self, srv_type, name, request):
        """Call a service and return its response (see :func:`call_service`)."""
        client = self.node.create_client(srv_type, name)
        return call_service(self.spin_until, client, request)

    def close(self):
        """Stop every process (SIGINT, then kill) and the client."""
        for _, _, p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        for _, log, p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            log.close()
        self.executor.shutdown(timeout_sec=1)
        self.node.destroy_node()
        self.context.try_shutdown()
        self._domain_lock.close()   # the domain is free again


_HELD = []   # the lock files of claim_domain(), held until this process ends


def claim_domain():
    """Return a domain id no other process holds, held until this process ends."""
    domain, lock = free_domain()
    _HELD.append(lock)
    return domain


def free_domain():
    """Return ``(domain id, open lock file)`` of a domain no other process holds."""
    ids = list(range(1, 102))
    random.shuffle(ids)
    for domain in ids:
        f = open(os.path.join(tempfile.gettempdir(), f'liemb-ros-domain-{domain}.lock'), 'w')
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.close()
            continue
        return domain, f
    raise RuntimeError('every ROS domain 1-101 is held by another test run')


def call_service(spin_until, client, request, attempt=3.0, attempts=5):
    """
    Call ``client`` with ``request`` the way a robust ROS client must, and return the response.

    ``service_is_ready()`` turns true when the server's request reader has matched the
    client, which can be before the server's response writer has matched the client's response
    reader; rmw_fastrtps then drops the response ("failed to send response (timeout): client
    will not receive response", seen on a loaded CI machine). So the request is sent again when
    no response came within ``attempt`` seconds, up to ``attempts`` times (our services are
    idempotent queries). ``spin_until(done, timeout=...)`` spins the client's executor.
    """
    spin_until(client.service_is_ready)
    for k in range(attempts):
        future = client.call_async(request)
        end = time.monotonic() + attempt
        last = k == attempts - 1
        spin_until(lambda: future.done() or (not last and time.monotonic() > end))
        if future.done():
            return future.result()
        client.remove_pending_request(future)


class Latest:
    """Subscription that keeps every message."""

    def __init__(self, graph, msg_type, topic, qos=RELIABLE):
        self.msgs = []
        self.subscription = graph.node.create_subscription(msg_type, topic, self.msgs.append,
                                                           qos)


def diagnostics(msgs, name):
    """Return ``(level, message, {key: value})`` of the last status called ``name``."""
    for m in reversed(msgs):
        for s in m.status:
            if s.name == name:
                return s.level, s.message, {kv.key: kv.value for kv in s.values}
    return None, None, {}


def wait_ready(graph, node='/liemb_dynamics', timeout=TIMEOUT):
    """Wait until a dynamics node has its robot compiled (its Jacobian service says so)."""
    from liemb_interfaces.srv import GetJacobian
    deadline = time.monotonic() + timeout
    while True:
        resp = graph.call(GetJacobian, f'{node}/get_jacobian',
                          GetJacobian.Request(link='', representation='body'))
        if not resp.message.startswith(('compiling', 'no robot')):
            return
        assert time.monotonic() < deadline, f'{node} never got ready:\n{graph.output()}'
        graph.spin_for(0.1)


def param(name, value):
    """Return an ``rcl_interfaces/Parameter`` message (type from the Python value)."""
    return Parameter(name, value=value).to_parameter_msg()
