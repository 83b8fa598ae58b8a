"""
The node set 'sim' of config/launch.yaml: ``ros2 launch liemb_ros sim.launch.py``.

The same nodes and parameters as ``liemb launch sim`` (PyPI-only ROS 2).
"""
from liemb_ros.ros.launcher import launch_description


def generate_launch_description():
    """Build the launch description of the shared node set 'sim'."""
    return launch_description('sim')
