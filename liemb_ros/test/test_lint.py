"""ROS 2 code style: ament's flake8 (line length 99) and pep257 configurations."""
import os

import pytest

from conftest import REPO as ROOT

PATHS = [p for p in ('liemb_ros/liemb_ros', 'liemb_ros/test', 'bench', 'tools',
                     'liemb_ros/launch', 'liemb_ros/setup.py')
         if os.path.exists(os.path.join(ROOT, p))]


@pytest.mark.linter
def test_flake8():
    from ament_flake8.main import main_with_errors
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        rc, errors = main_with_errors(argv=PATHS)
    finally:
        os.chdir(cwd)
    assert rc == 0, f'{len(errors)} flake8 errors:\n' + '\n'.join(errors)


@pytest.mark.linter
def test_pep257():
    from ament_pep257.main import main
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        rc = main(argv=[p for p in PATHS if p != 'liemb_ros/test'])
    finally:
        os.chdir(cwd)
    assert rc == 0, 'pep257 errors (see captured output)'
