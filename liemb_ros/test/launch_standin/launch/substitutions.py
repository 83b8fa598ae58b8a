"""Stand-in of ``launch.substitutions``: TextSubstitution and LaunchConfiguration."""
from . import Substitution


class TextSubstitution(Substitution):
    """Plain text."""

    def __init__(self, *, text):
        self.text = text

    def perform(self, context):
        """Return the text."""
        return self.text


class LaunchConfiguration(Substitution):
    """The value of a launch configuration (a declared argument) by name."""

    def __init__(self, variable_name, *, default=None):
        self.variable_name = variable_name
        self.default = default

    def perform(self, context):
        """Return the value; the default when unset; raise when neither exists."""
        if self.variable_name in context.launch_configurations:
            return context.launch_configurations[self.variable_name]
        if self.default is None:
            raise RuntimeError(f"launch configuration '{self.variable_name}' does not exist")
        return str(self.default)
