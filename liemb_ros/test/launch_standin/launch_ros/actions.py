"""
Stand-in of ``launch_ros.actions.Node``: the command line a node would be started with.

As the real Node: ``package``/``executable`` name the program (here written
``package/executable``), ``arguments`` come first, ``ros_arguments`` after a
``--ros-args``, then ``--ros-args -r __node:=NAME -r __ns:=NAMESPACE``, one
``--params-file`` per parameter file in order, and ``-r from:=to`` per remapping.  A
relative namespace is made absolute (a ``ros_namespace`` configuration, as set by
PushRosNamespace, is prepended).  Parameter dicts are refused: the real Node reads string
values in them as YAML (a URDF would not survive), so liemb_ros passes files only.
"""
import os

from launch import Action


class Node(Action):
    """A ROS node to start; :meth:`execute` records its command line in ``cmd``."""

    def __init__(self, *, executable, package=None, name=None, namespace=None,
                 exec_name=None, parameters=None, remappings=None, ros_arguments=None,
                 arguments=None, **kwargs):
        kwargs.pop('output', None)
        super().__init__(**kwargs)
        self.__package, self.__executable = package, executable
        self.__name, self.__namespace = name, namespace
        self.__parameters = list(parameters or [])
        self.__remappings = [tuple(r) for r in (remappings or [])]
        self.__ros_arguments = ros_arguments
        self.__arguments = list(arguments or [])
        self.cmd = None
        self.__expanded_namespace = None

    @property
    def node_package(self):
        """Return the package."""
        return self.__package

    @property
    def node_executable(self):
        """Return the executable."""
        return self.__executable

    @property
    def node_name(self):
        """Return the fully qualified node name (only after execute, as the real one)."""
        if self.cmd is None:
            raise RuntimeError('cannot access node_name before execute')
        ns = self.__expanded_namespace or '/'
        return ns.rstrip('/') + '/' + self.__name

    @property
    def expanded_node_namespace(self):
        """Return the absolute namespace after execute."""
        return self.__expanded_namespace

    @property
    def expanded_remapping_rules(self):
        """Return the remappings ``(from, to)``."""
        return list(self.__remappings)

    def execute(self, context):
        """Build ``cmd`` (no process is started)."""
        base = context.launch_configurations.get('ros_namespace')
        ns = self.__namespace
        if ns is not None or base is not None:
            if ns is None:
                ns = base
            elif base and not ns.startswith('/'):
                ns = base.rstrip('/') + '/' + ns
            ns = ns if ns.startswith('/') else '/' + ns
            ns = ns if ns == '/' else ns.rstrip('/')
        self.__expanded_namespace = ns
        cmd = [f'{self.__package}/{self.__executable}'] + self.__arguments
        if self.__ros_arguments is not None:
            cmd += ['--ros-args'] + list(self.__ros_arguments)
        cmd += ['--ros-args']
        if self.__name is not None:
            cmd += ['-r', f'__node:={self.__name}']
        if ns is not None:
            cmd += ['-r', f'__ns:={ns}']
        for p in self.__parameters:
            if isinstance(p, dict):
                raise TypeError('parameter dicts: string values would be read as YAML')
            cmd += ['--params-file', os.path.abspath(p)]
        for src, dst in self.__remappings:
            cmd += ['-r', f'{src}:={dst}']
        self.cmd = cmd
        return None
