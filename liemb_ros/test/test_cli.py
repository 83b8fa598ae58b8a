"""The ``liemb`` command line: inspect prints what the model holds; arguments are checked."""
import subprocess
import sys

import pytest

import liemb_ros as lm
from liemb_ros.app.cli import inspect_text, main
from conftest import erd_path


def test_inspect_lists_every_joint_screw_and_link():
    model = lm.load_urdf(erd_path('panda'))
    text = inspect_text(model)
    for name in model.joint_names + model.link_names:
        assert name in text
    # the spatial screw of joint 2 at q = 0 is (0,1,0, -0.333,0,0)
    line = next(x for x in text.splitlines() if ' panda_joint2 ' in x)
    assert '[  0.000   1.000   0.000  -0.333   0.000   0.000]' in line
    assert 'mass = 17.45 kg' in text


def test_inspect_console_script(capsys):
    assert main(['inspect', erd_path('ur5')]) == 0
    out = capsys.readouterr().out
    assert 'shoulder_pan_joint' in out and 'link tree' in out


def test_inspect_bad_file_is_a_clean_error(tmp_path):
    bad = tmp_path / 'bad.urdf'
    bad.write_text('<robot name="x"><link name="a"></robot>')
    proc = subprocess.run([sys.executable, '-m', 'liemb_ros.app.cli', 'inspect', str(bad)],
                          capture_output=True, text=True)
    assert proc.returncode != 0
    assert 'bad.urdf: malformed XML' in proc.stderr
    assert 'Traceback' not in proc.stderr


@pytest.mark.parametrize('port', ['99999', '-5', '65536', '80.5'])
def test_demo_view_port_that_is_no_port_is_exit_2(port, capsys):
    """``liemb demo --view-port P`` outside 0..65535 (and not -1: no view) stops before
    anything starts, with argparse's exit code 2 and the reason, never a traceback."""
    with pytest.raises(SystemExit) as exc:
        main(['demo', '--view-port', port, '--duration', '0.1'])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"{port!r} is not a port: give 0..65535" in err and 'Traceback' not in err, err


@pytest.mark.parametrize('robot', ['no_such_robot', 'bad.urdf'])
def test_demo_with_a_robot_it_cannot_load_stops_before_anything_starts(
        robot, tmp_path, monkeypatch):
    """``liemb demo --robot R`` with a robot that is not there, or a bad URDF: the reason
    (``liemb: ...``), never a traceback, and no recorder or view process started."""
    from liemb_ros.app import cli
    bad = tmp_path / 'bad.urdf'
    bad.write_text('<robot name="x"><link name="a"/><link name="b"/><joint name="j" '
                   'type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 0"/>'
                   '</joint></robot>')
    started = []
    monkeypatch.setattr(cli, '_start_viewer', lambda *a: started.append('view'))
    monkeypatch.setattr(cli, '_start_recorder', lambda *a: started.append('recorder'))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main(['demo', '--robot', robot, '--record', 'run.mcap', '--duration', '0.1'])
    assert str(exc.value).startswith('liemb: ') and started == [], (exc.value, started)
    assert ('neither a URDF' if robot == 'no_such_robot' else 'axis') in str(exc.value)


def test_a_command_started_with_sigint_ignored_honours_it():
    """A ``liemb`` command started in the background of a script inherits SIGINT ignored;
    it restores the handler, so that Ctrl-C or ``kill -INT`` reach it and the node
    processes it starts (a caught signal is reset to its default on exec; an ignored one
    would stay ignored in every node, each then killed after the stop's grace)."""
    script = ('import signal, sys\n'
              'signal.signal(signal.SIGINT, signal.SIG_IGN)\n'
              'from liemb_ros.app import cli\n'
              "cli.main(['launch', 'sim', '--show-args'])\n"
              'sys.exit(7 if signal.getsignal(signal.SIGINT) is signal.default_int_handler '
              'else 3)\n')
    proc = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 7, proc.stdout + proc.stderr
