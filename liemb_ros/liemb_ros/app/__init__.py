"""
The applications: the ``liemb`` command and what it runs.

:mod:`.cli` (the command and its subcommands: :mod:`.dynamics_cli`, :mod:`.view_command`,
:mod:`.reproduce`), :mod:`.demo` (the main job), :mod:`.launcher` (node sets from
``config/launch.yaml``, for ``liemb launch`` and the launch files; :mod:`.launch_sets`
resolves a set and its arguments to nodes), :mod:`.prepare`
(compiling every kernel ahead of time), :mod:`.recordings` (reading MCAP back, ``liemb
plot``), :mod:`.robots` and :mod:`.viz`.  The top layer: it may import every other.
"""
