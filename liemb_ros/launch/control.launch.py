"""
``ros2 launch liemb_ros control.launch.py [ARG:=VALUE ...]``: the arm tracking a demo trajectory.

The node set 'control' of config/launch.yaml (+ robot_state_publisher and RViz when asked for
with use_robot_state_publisher:=true / use_rviz:=true): the same nodes, parameters and
launch arguments as ``liemb launch control`` (PyPI-only ROS 2).  ``--show-args`` lists them.
"""
from liemb_ros.app.launcher import launch_description


def generate_launch_description():
    """Declare the launch arguments of set 'control'; resolve its nodes at launch time."""
    return launch_description('control')
