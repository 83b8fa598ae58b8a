"""
A wheel for library users (issue 30): built from the package (``python -m build``: the sdist,
then the wheel from it), installed into a clean venv
with its core dependencies only (no ROS, no view, no recordings), it runs the README's
library example and ``liemb inspect``, and says on first import how to prepare the kernels.
"""
import os
import re
import shutil
import subprocess
import sys
import venv

import pytest

from conftest import REPO


@pytest.fixture(scope='module')
def clean_venv(tmp_path_factory):
    """A venv with nothing but the wheel and what it requires (from PyPI or pip's cache)."""
    tmp = tmp_path_factory.mktemp('wheel')
    source = tmp / 'liemb_ros'   # a copy: the build writes its egg-info beside setup.py
    shutil.copytree(os.path.join(REPO, 'liemb_ros'), source,
                    ignore=shutil.ignore_patterns('test', '__pycache__', '*.egg-info', 'build'))
    proc = subprocess.run([sys.executable, '-m', 'build', '-o', str(tmp / 'dist'),
                           str(source)], capture_output=True, text=True,
                          timeout=600)   # the sdist, and the wheel built from it
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (wheel,) = (tmp / 'dist').glob('liemb_ros-*.whl')
    assert list((tmp / 'dist').glob('liemb_ros-*.tar.gz'))
    venv.create(tmp / 'venv', with_pip=True)
    python = str(tmp / 'venv' / 'bin' / 'python')
    proc = _run(python, ['-m', 'pip', 'install', '-q', str(wheel)], tmp)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return python, tmp


def _run(python, argv, cwd, **env):
    """Run in the clean venv, with nothing of this test run's environment that finds code."""
    environ = {k: v for k, v in os.environ.items()
               if k not in ('PYTHONPATH', 'NUMBA_CACHE_DIR', 'AMENT_PREFIX_PATH')}
    environ.update(env)
    return subprocess.run([python] + argv, cwd=cwd, env=environ, capture_output=True,
                          text=True, timeout=900)


def test_the_wheel_needs_no_ros_and_runs_the_readme_example(clean_venv):
    python, tmp = clean_venv
    listed = _run(python, ['-m', 'pip', 'list', '--format=freeze'], tmp).stdout.lower()
    for extra in ('rclpy', 'viser', 'mcap', 'matplotlib', 'pin=='):
        assert extra not in listed, extra
    with open(os.path.join(REPO, 'README.md'), encoding='utf-8') as f:
        example = re.search(r'## The library in twenty lines\n\n```python\n(.*?)```', f.read(),
                            re.S).group(1)
    (tmp / 'example.py').write_text(example)
    # numba's JIT off: the example's numbers without minutes of compiling in a test
    proc = _run(python, ['example.py'], tmp, NUMBA_DISABLE_JIT='1')
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert re.fullmatch(r't = 0\.500 s, \|q\| < \S+ rad\n', proc.stdout), proc.stdout
    # the shipped robots came with it (share/liemb_ros/urdf), and the command line
    liemb = os.path.join(os.path.dirname(python), 'liemb')
    proc = subprocess.run([liemb, 'inspect', 'liemb_arm7'], cwd=tmp, capture_output=True,
                          text=True, timeout=300,
                          env={k: v for k, v in os.environ.items() if k != 'PYTHONPATH'})
    assert proc.returncode == 0 and "robot 'liemb_arm7'" in proc.stdout, proc.stderr
    # without the 'sweep' extra (Dask, pyarrow) a dataset says what to install, in one line
    for extra in ('dask', 'distributed', 'pyarrow'):
        assert extra + '==' not in listed, extra
    proc = subprocess.run([liemb, 'dataset', 'liemb_arm7', '10', '--serial', '--out', 'd'],
                          cwd=tmp, capture_output=True, text=True, timeout=300,
                          env={k: v for k, v in os.environ.items() if k != 'PYTHONPATH'})
    assert proc.returncode == 2 and 'pip install "dask[distributed]"' in proc.stderr and (
        proc.stderr.strip().count('\n') == 0), proc.stderr


def test_the_first_import_says_how_to_prepare_the_kernels(clean_venv):
    python, tmp = clean_venv
    home = tmp / 'cache'
    first = _run(python, ['-c', 'import liemb_ros'], tmp, LIEMB_CACHE_HOME=str(home))
    assert first.returncode == 0, first.stderr
    assert 'no prepared kernels in ' + str(home) in first.stderr, first.stderr
    assert '`liemb prepare` compiles every one once' in first.stderr
    again = _run(python, ['-c', 'import liemb_ros'], tmp, LIEMB_CACHE_HOME=str(home))
    assert again.returncode == 0 and again.stderr == '', again.stderr    # once
