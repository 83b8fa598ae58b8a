"""ROS 2 adapters: nodes, message conversions, the launcher (the only layer importing rclpy)."""
