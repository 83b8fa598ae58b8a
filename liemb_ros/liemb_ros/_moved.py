"""
The old import paths of the modules that moved into the layer packages, for one release.

The package's modules live in layers (``core``, ``sim``, ``control``, ``view``, ``ros``,
``app``; ``docs/design.md``).  Code written against the flat layout of version 0.1 keeps
working for one more release: ``import liemb_ros.simulation`` (or ``from liemb_ros.lie
import so3``) gives the module at its new path itself (:data:`MOVED`), with a
``DeprecationWarning`` that names that path.  The finder is installed by ``import
liemb_ros``; it answers only for the names in :data:`MOVED` and their submodules.
"""
import importlib
import importlib.abc
import importlib.util
import sys
import warnings

#: old module path -> new one (a package's submodules follow it)
MOVED = {
    'liemb_ros.lie': 'liemb_ros.core.lie',
    'liemb_ros.model': 'liemb_ros.core.model',
    'liemb_ros.kinematics': 'liemb_ros.core.kinematics',
    'liemb_ros.dynamics': 'liemb_ros.core.dynamics',
    'liemb_ros.eom': 'liemb_ros.core.eom',
    'liemb_ros.closed_form': 'liemb_ros.core.closed_form',
    'liemb_ros.resources': 'liemb_ros.core.resources',
    'liemb_ros.simulation': 'liemb_ros.sim.simulator',
    'liemb_ros.contact': 'liemb_ros.sim.contact',
    'liemb_ros.integrators': 'liemb_ros.sim.integrators',
    'liemb_ros.mbs': 'liemb_ros.sim.mbs',
    'liemb_ros.servo': 'liemb_ros.control.servo',
    'liemb_ros.reproduce': 'liemb_ros.app.reproduce',
}


def new_path(name):
    """Return the new path of an old module name, or None when it did not move."""
    for old, new in MOVED.items():
        if name == old or name.startswith(old + '.'):
            return new + name[len(old):]
    return None


class _Aliases(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Import an old name as the module at its new path (the same module object)."""

    def find_spec(self, name, path=None, target=None):
        new = new_path(name)
        if new is None or importlib.util.find_spec(new) is None:
            return None
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec):
        new = new_path(spec.name)
        warnings.warn(f'{spec.name} is now {new}; the old path goes in the next release',
                      DeprecationWarning, stacklevel=2)
        return importlib.import_module(new)

    def exec_module(self, module):
        """Nothing to run: the module at the new path is already imported."""


def install():
    """Put the old paths' finder first on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _Aliases) for f in sys.meta_path):
        sys.meta_path.insert(0, _Aliases())
