"""
The documentation cannot rot (issue 30): the site builds with warnings as errors, and every
relative link of the README and docs/ names a file that exists.

``mkdocs build --strict`` (mkdocs.yml) renders docs/ and the API reference
(docs/reference.md) from the docstrings with mkdocstrings: a function renamed or removed,
or a docstring that does not parse, fails the build.  Links out of docs/ (the README,
CHANGELOG.md) are not site pages, so mkdocs leaves them to the check below, which covers
every relative link of every page.
"""
import glob
import os
import re
import subprocess
import sys

import pytest

from conftest import REPO

LINK = re.compile(r'\]\(([^)\s]+)\)')


def test_the_site_and_its_api_reference_build_with_warnings_as_errors(tmp_path):
    mkdocs = os.path.join(os.path.dirname(sys.executable), 'mkdocs')
    proc = subprocess.run([mkdocs, 'build', '--strict', '-f', os.path.join(REPO, 'mkdocs.yml'),
                           '-d', str(tmp_path / 'site')], cwd=REPO, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    reference = (tmp_path / 'site' / 'reference' / 'index.html').read_text()
    for name in ('core.dynamics.inverse_dynamics', 'sim.simulator.Simulator',
                 'control.laws.ComputedTorque', 'view.scene.RobotView'):
        assert f'id="liemb_ros.{name}"' in reference, name


PAGES = [os.path.join(REPO, 'README.md')] + sorted(
    glob.glob(os.path.join(REPO, 'docs', '**', '*.md'), recursive=True))


@pytest.mark.parametrize('page', PAGES, ids=lambda p: os.path.relpath(p, REPO))
def test_every_relative_link_names_a_file(page):
    with open(page, encoding='utf-8') as f:
        text = re.sub(r'^```.*?^```', '', f.read(), flags=re.S | re.M)   # not in code
    dead = []
    for target in LINK.findall(text):
        if re.match(r'[a-z]+:', target) or target.startswith('#'):
            continue
        path = os.path.normpath(os.path.join(os.path.dirname(page), target.split('#')[0]))
        if not os.path.exists(path):
            dead.append(target)
    assert not dead, dead
