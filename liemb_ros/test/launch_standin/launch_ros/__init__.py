"""Stand-in for the part of ROS 2 ``launch_ros`` liemb_ros's launch files use (tests only)."""
