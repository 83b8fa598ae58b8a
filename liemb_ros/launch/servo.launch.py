"""
``ros2 launch liemb_ros servo.launch.py [ARG:=VALUE ...]``: simulation + servo node.

The node set 'servo' of config/launch.yaml: the simulated arm (default liemb_arm7) driven by
the servo node's joint velocity commands; send twists with ``liemb teleop`` or on
``/liemb_servo/twist_cmd``.  The same nodes, parameters and launch arguments as ``liemb
launch servo`` (PyPI-only ROS 2).  ``--show-args`` lists them.
"""
from liemb_ros.app.launcher import launch_description


def generate_launch_description():
    """Declare the launch arguments of set 'servo'; resolve its nodes at launch time."""
    return launch_description('servo')
