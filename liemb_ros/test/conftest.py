"""Shared test helpers: where example-robot-data keeps its URDFs, Pinocchio conventions."""
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the liemb_ros package
REPO = os.path.dirname(ROOT)  # the repository: bench/, tools/, docs/ and both packages
URDF_DIR = os.path.join(ROOT, 'urdf')


def erd_robots_dir():
    """The ``robots`` folder of the installed example-robot-data (no Python loader in 6.x)."""
    for base in sys.path + [sys.prefix]:
        for cand in (os.path.join(base, 'cmeel.prefix', 'share', 'example-robot-data', 'robots'),
                     os.path.join(base, 'share', 'example-robot-data', 'robots')):
            if os.path.isdir(cand):
                return cand
    raise RuntimeError('example-robot-data is not installed (it is a test dependency)')


ERD = {
    'ur5': 'ur_description/urdf/ur5_robot.urdf',
    'panda': 'panda_description/urdf/panda.urdf',
    'double_pendulum': 'double_pendulum_description/urdf/double_pendulum.urdf',
    'solo12': 'solo_description/robots/solo12.urdf',
}


ROS_HINT = 'ROS 2 not installed in this venv: run tools/ros/setup_ros.sh VENV (./dev.sh does)'


def ros_importorskip(*modules):
    """
    Import ROS 2 modules, or skip the calling test module when they are missing.

    The README's test command sets ``LIEMB_REQUIRE_ROS=1``: there a missing module is an error,
    so CI can never pass by silently skipping every ROS test.
    """
    if os.environ.get('LIEMB_REQUIRE_ROS') == '1':
        return [__import__(m, fromlist=['_']) for m in modules]
    return [pytest.importorskip(m, reason=ROS_HINT) for m in modules]


def erd_path(name):
    """Absolute path of an example-robot-data URDF by short name (see ``ERD``)."""
    return os.path.join(erd_robots_dir(), ERD.get(name, name))


# Pinocchio orders motions (v, w) and forces (f, tau); we order angular first.
SWAP = np.zeros((6, 6))
SWAP[:3, 3:] = np.eye(3)
SWAP[3:, :3] = np.eye(3)


@pytest.fixture
def rng():
    """A seeded generator per test."""
    return np.random.default_rng(20261122)


@pytest.fixture
def graph(tmp_path, monkeypatch):
    """Node processes and a client node on a private localhost ROS domain (ros_graph.Graph)."""
    from ros_graph import Graph
    monkeypatch.setenv('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    g = Graph(tmp_path)
    try:
        yield g
    finally:
        g.close()


def _announce_often():
    """
    Give this test process's DDS participants the recorder's 0.25 s discovery announcements.

    A test's client participant exists before the nodes it starts; with Fast DDS's default
    3 s announcement period a node was often matched with it only at the client's next
    announcement, and the test missed up to ~2.5 s of the node's start (seen: the
    simulated arm had fallen before the first state arrived).  Fast DDS reads the profile
    file when a process creates its first participant, so one is created here, with
    ``liemb_ros.recorder.discovery_profile`` (config/record_fastdds.xml), before any test;
    the variable is gone again, so the node processes the tests start run with the
    defaults, as a user's do.  A profile file of the user's own is left alone.
    """
    try:
        import rclpy
        from liemb_ros.ros.recorder import PROFILE_VARIABLES, discovery_profile
    except ImportError:
        return
    if any(os.environ.get(v) for v in PROFILE_VARIABLES):
        return
    context = rclpy.Context()
    with discovery_profile(log=lambda *_: None):   # a participant without endpoints
        rclpy.init(context=context, domain_id=101)
        node = rclpy.create_node('liemb_test_discovery_profile', context=context)
    node.destroy_node()
    context.try_shutdown()


_announce_often()
