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
