"""
The compiled kernels' folder (``liemb_ros._cache``) and ``liemb prepare``: every process that
imports the package finds the same folder, one per installation and state of the sources;
other states' folders are cleaned; ``NUMBA_CACHE_DIR`` wins.
"""
import json
import os
import subprocess
import sys
import tempfile

import liemb_ros
from liemb_ros import _cache
from liemb_ros.app import prepare

WHERE = 'import liemb_ros, os; print(liemb_ros.KERNEL_CACHE); print(os.environ["NUMBA_CACHE_DIR"])'


def _where(env):
    out = subprocess.run([sys.executable, '-c', WHERE], env=env, capture_output=True, text=True,
                         timeout=120, check=True).stdout.split()
    return out


def _env(**changes):
    env = {k: v for k, v in os.environ.items()
           if k not in ('NUMBA_CACHE_DIR', 'LIEMB_CACHE_HOME', 'XDG_CACHE_HOME')}
    env.update(changes)
    return env


def test_every_process_finds_the_folder_of_its_installation_and_sources(tmp_path):
    home = tmp_path / 'home'
    folder, numba_dir = _where(_env(LIEMB_CACHE_HOME=str(home)))
    assert folder == numba_dir    # numba, and the processes this one starts, use it
    installation, state = os.path.relpath(folder, home).split(os.sep)
    assert state == f'{liemb_ros.__version__}-{_cache.source_hash()}'
    assert os.path.isdir(folder)
    # a second process: the same folder; XDG_CACHE_HOME is honoured the same way
    assert _where(_env(LIEMB_CACHE_HOME=str(home)))[0] == folder
    xdg = _where(_env(XDG_CACHE_HOME=str(tmp_path / 'xdg')))[0]
    assert xdg == str(tmp_path / 'xdg' / 'liemb_ros' / installation / state)


def test_other_source_states_are_cleaned_and_numba_cache_dir_wins(tmp_path):
    home = tmp_path / 'home'
    folder = _where(_env(LIEMB_CACHE_HOME=str(home)))[0]
    stale = os.path.join(os.path.dirname(folder), '0.0.9-0123456789ab')
    other_installation = home / 'otherinst' / '0.1.0-0123456789ab'
    os.makedirs(os.path.join(stale, 'sub'))
    os.makedirs(other_installation)
    assert _where(_env(LIEMB_CACHE_HOME=str(home)))[0] == folder
    assert not os.path.exists(stale)          # an edit of the sources leaves no stale code
    assert other_installation.is_dir()        # another venv's folder is not ours to clean
    mine = str(tmp_path / 'mine')
    assert _where(_env(LIEMB_CACHE_HOME=str(home), NUMBA_CACHE_DIR=mine)) == [mine, mine]


def test_an_unwritable_home_falls_back_to_a_temporary_folder(tmp_path):
    blocked = tmp_path / 'a_file'
    blocked.write_text('')        # no folder can be made below a file, not even by root
    folder = _where(_env(LIEMB_CACHE_HOME=str(blocked / 'cache')))[0]
    assert folder.startswith(os.path.join(tempfile.gettempdir(), f'liemb_ros-{os.getuid()}'))
    assert os.path.isdir(folder)


def test_a_prepared_folder_is_known_by_its_manifest(tmp_path):
    (tmp_path / 'a').mkdir()
    (tmp_path / 'a' / 'k.nbi').write_bytes(b'12')
    (tmp_path / 'a' / 'k.1.nbc').write_bytes(b'1234')
    files = prepare.cache_files(str(tmp_path))
    assert files == {os.path.join('a', 'k.nbi'): 2, os.path.join('a', 'k.1.nbc'): 4}
    assert not prepare.prepared(str(tmp_path))
    (tmp_path / prepare.MANIFEST).write_text(json.dumps({'files': files}))
    assert prepare.prepared(str(tmp_path))
    (tmp_path / 'a' / 'k.1.nbc').unlink()       # a file gone: prepare again
    assert not prepare.prepared(str(tmp_path))
    (tmp_path / prepare.MANIFEST).write_text('{not json')
    assert not prepare.prepared(str(tmp_path))


def test_the_simulation_steps_take_both_damping_steps(monkeypatch):
    # the arm's stiff URDF damping makes 'auto' implicit; a robot without damping (panda,
    # ur5_robot) takes the explicit tableau, whose kernels a node must find prepared too
    from liemb_ros.sim import simulator
    methods = {}

    class Recorded(simulator.Simulator):
        def warm_up(self):
            methods.setdefault(self.model.floating, set()).add(self.damping_choice.method)

        def step(self, *args, **kwargs):
            pass

    monkeypatch.setattr(simulator, 'Simulator', Recorded)
    steps = dict(prepare._steps())
    for base in ('fixed base', 'floating base'):
        for label in (f'simulation, {base}', f'simulation, {base}, implicit damping'):
            steps[label]()
    assert methods == {False: {'explicit', 'implicit'}, True: {'explicit', 'implicit'}}
