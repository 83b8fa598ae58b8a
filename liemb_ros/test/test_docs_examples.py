"""
Every code block of the README and docs/ runs as a newcomer copies it (issue 30).

Python blocks (```python) run as scripts; shell blocks (```sh) run line by line from the
repository's root, ``.venv/bin/`` read as the folder of this test's Python (the README's
venv in CI).  The README's two set-up commands (``./dev.sh ...``) are what runs this test
and are left out.  Blocks that need a ROS install, a real robot or run until Ctrl-C are
written as ```console and are not run.  Each runs on a ROS domain of its own, on loopback.
"""
import glob
import os
import re
import subprocess
import sys

import pytest

from conftest import REPO

FENCE = re.compile(r'^```(\w*)\n(.*?)^```', re.S | re.M)
RUN = ('python', 'sh')


def _blocks():
    files = [os.path.join(REPO, 'README.md')] + sorted(
        glob.glob(os.path.join(REPO, 'docs', '**', '*.md'), recursive=True))
    out = []
    for path in files:
        with open(path, encoding='utf-8') as f:
            text = f.read()
        for m in FENCE.finditer(text):
            lang, body = m.group(1), m.group(2)
            if lang not in RUN:
                continue
            line = text.count('\n', 0, m.start()) + 1
            if lang == 'sh':
                body = '\n'.join(x for x in body.splitlines() if not x.startswith('./dev.sh'))
                if not body.strip():
                    continue
            out.append(pytest.param(lang, body, id=f'{os.path.relpath(path, REPO)}:{line}'))
    return out


def _env():
    from ros_graph import claim_domain
    env = dict(os.environ, ROS_DOMAIN_ID=str(claim_domain()),
               ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST', MPLBACKEND='Agg')
    env.pop('ROS_STATIC_PEERS', None)
    return env


@pytest.mark.parametrize('lang, body', _blocks())
def test_the_block_runs_as_written(lang, body, tmp_path):
    if lang == 'python':
        script = tmp_path / 'block.py'
        script.write_text(body)
        argv, cwd = [sys.executable, str(script)], str(tmp_path)
    else:
        bindir = os.path.dirname(sys.executable) + '/'
        argv = ['bash', '-euo', 'pipefail', '-c', body.replace('.venv/bin/', bindir)]
        cwd = REPO
    proc = subprocess.run(argv, cwd=cwd, env=_env(), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, (body, proc.stdout[-3000:], proc.stderr[-3000:])
