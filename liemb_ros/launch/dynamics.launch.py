"""
``ros2 launch liemb_ros dynamics.launch.py [ARG:=VALUE ...]``: the dynamics node.

The node set 'dynamics' of config/launch.yaml, for a real robot whose driver (or
robot_state_publisher) publishes robot_description; robot:=FILE hands it a URDF or xacro
file instead.  The same nodes, parameters and launch arguments as ``liemb launch
dynamics`` (PyPI-only ROS 2).  ``--show-args`` lists them.
"""
from liemb_ros.app.launcher import launch_description


def generate_launch_description():
    """Declare the launch arguments of set 'dynamics'; resolve its nodes at launch time."""
    return launch_description('dynamics')
