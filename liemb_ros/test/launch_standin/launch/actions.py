"""Stand-in of ``launch.actions``: DeclareLaunchArgument, OpaqueFunction, LogInfo."""
import logging

from . import Action
from .substitutions import TextSubstitution


class DeclareLaunchArgument(Action):
    """Declare a launch argument: its default fills the configuration when it is unset."""

    def __init__(self, name, *, default_value=None, description=None, choices=None,
                 **kwargs):
        super().__init__(**kwargs)
        if choices is not None and default_value is not None and default_value not in choices:
            raise RuntimeError(f'default_value {default_value!r} is not in choices {choices}')
        self.__name = name
        self.__default = None if default_value is None else [TextSubstitution(
            text=default_value)]
        self.__description = 'no description given' if description is None else description
        self.__choices = choices

    @property
    def name(self):
        """Return the argument's name."""
        return self.__name

    @property
    def default_value(self):
        """Return the default as a list of substitutions (None: required)."""
        return self.__default

    @property
    def description(self):
        """Return the description."""
        return self.__description

    @property
    def choices(self):
        """Return the accepted values (None: any)."""
        return self.__choices

    def execute(self, context):
        """Set the default when unset; raise on a missing required value or a bad choice."""
        configs = context.launch_configurations
        if self.__name not in configs:
            if self.__default is None:
                raise RuntimeError(f'Required launch argument "{self.__name}" was not provided.')
            configs[self.__name] = ''.join(s.perform(context) for s in self.__default)
        if self.__choices is not None and configs[self.__name] not in self.__choices:
            raise RuntimeError(f'Argument "{self.__name}" provided value '
                               f'"{configs[self.__name]}" is not valid. Valid options are: '
                               f'{self.__choices}')
        return None


class OpaqueFunction(Action):
    """Call ``function(context, *args, **kwargs)`` at launch time; it returns entities."""

    def __init__(self, *, function, args=None, kwargs=None, **left_over_kwargs):
        super().__init__(**left_over_kwargs)
        if not callable(function):
            raise TypeError(f"OpaqueFunction expected a callable for 'function', got "
                            f"'{type(function)}'")
        self.__function = function
        self.__args = [] if args is None else args
        self.__kwargs = {} if kwargs is None else kwargs

    def execute(self, context):
        """Call the function."""
        return self.__function(context, *self.__args, **self.__kwargs)


class LogInfo(Action):
    """Log a message on the 'launch.user' logger."""

    def __init__(self, *, msg, **kwargs):
        super().__init__(**kwargs)
        self.__msg = msg

    @property
    def msg(self):
        """Return the message."""
        return self.__msg

    def execute(self, context):
        """Log the message."""
        logging.getLogger('launch.user').info(self.__msg)
        return None
