"""
The node set 'dynamics' of config/launch.yaml: ``ros2 launch liemb_ros dynamics.launch.py``.

The same nodes and parameters as ``liemb launch dynamics`` (PyPI-only ROS 2).
"""
from liemb_ros.ros.launcher import launch_description


def generate_launch_description():
    """Build the launch description of the shared node set 'dynamics'."""
    return launch_description('dynamics')
