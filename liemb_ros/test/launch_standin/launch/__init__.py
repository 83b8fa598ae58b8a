"""
Stand-in for the parts of ROS 2 ``launch`` that liemb_ros's launch files use (tests only).

The real ``launch`` and ``launch_ros`` are not installable from PyPI, so test_launch.py loads
``launch/*.launch.py`` against these modules.  Class names, constructor signatures and the
behaviour of ``visit``/``execute``/``perform`` follow launch 3.7.1 and launch_ros 0.28.0
(their sources were read and the launch files run with them, see test_launch.py); values
are plain strings instead of substitution lists where the launch files cannot tell the
difference, and ``launch_ros.actions.Node`` records its command line instead of starting
a process.  Written for this project; no code of the real packages.
"""


class LaunchContext:
    """The state a launch runs in: here only the launch configurations (argument values)."""

    def __init__(self, *, argv=None, noninteractive=False):
        self.argv = list(argv or [])
        self.noninteractive = noninteractive
        self.launch_configurations = {}


class Action:
    """Base of the actions: visiting one executes it (conditions are not modelled)."""

    def __init__(self, **kwargs):
        if kwargs.get('condition') is not None:
            raise NotImplementedError('conditions are not part of the stand-in')

    def visit(self, context):
        """Execute the action; return the entities it produced (or None)."""
        return self.execute(context)

    def execute(self, context):
        """Do nothing (subclasses act)."""
        return None


class LaunchDescription:
    """An ordered list of launch entities, as ``generate_launch_description`` returns."""

    def __init__(self, initial_entities=None, *, deprecated_reason=None):
        self.__entities = list(initial_entities or [])
        self.deprecated_reason = deprecated_reason

    @property
    def entities(self):
        """Return the entities, in order."""
        return self.__entities

    def add_action(self, action):
        """Append an action."""
        self.__entities.append(action)

    def get_launch_arguments(self, conditional_inclusion=False):
        """Return the DeclareLaunchArgument actions (top level only: all ours are)."""
        from .actions import DeclareLaunchArgument
        return [e for e in self.__entities if isinstance(e, DeclareLaunchArgument)]

    def visit(self, context):
        """Return the entities to visit next (as the real LaunchDescription does)."""
        return self.__entities


class Substitution:
    """Something that becomes text at launch time."""

    def perform(self, context):
        """Return the text."""
        raise NotImplementedError
