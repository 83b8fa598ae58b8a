"""
The package's layers (docs/design.md), checked by import-linter against the code's imports.

The contracts live in ``liemb_ros/setup.cfg``: ``app > ros > control | view > sim > core``,
each importing only what is below it (``control`` and ``view`` not each other); nothing
below ``ros`` imports ROS 2; no import circles between the modules of a package.  A change
that breaks one fails here, with the import that breaks it.
"""
import os

from importlinter.cli import lint_imports

from conftest import REPO


def test_the_import_contracts_hold(capsys):
    code = lint_imports(config_filename=os.path.join(REPO, 'liemb_ros', 'setup.cfg'),
                        no_cache=True, no_logo=True)
    out = capsys.readouterr().out
    assert 'Contracts: 3 kept, 0 broken.' in out and code == 0, out


def test_old_import_paths_give_the_moved_modules_with_a_warning():
    """The 0.1 paths (``liemb_ros._moved.MOVED``), for one release: the same module objects."""
    import importlib
    import sys
    import warnings

    from liemb_ros import _moved
    for old, new in _moved.MOVED.items():
        sys.modules.pop(old, None)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            module = importlib.import_module(old)
        assert module is importlib.import_module(new), old
        assert any(issubclass(w.category, DeprecationWarning) and new in str(w.message)
                   for w in caught), (old, [str(w.message) for w in caught])
    with warnings.catch_warnings(record=True):
        warnings.simplefilter('always')
        from liemb_ros.lie import so3
        ulv = importlib.import_module('liemb_ros.mbs.ulv')
    assert so3 is importlib.import_module('liemb_ros.core.lie.so3')
    assert ulv is importlib.import_module('liemb_ros.sim.mbs.ulv')
