"""
What ``liemb view`` reads and where it listens (issue 28): the probes as a user or a hostile
robot description gives them.

A robot description names mesh files, and what the view reads goes to every browser on the
page.  The probes: a sparse 2 GB ``.stl`` (made with ``truncate``), ``package://`` URIs that
climb out of the package with ``..``, a symbolic link in the package to a file outside it, a
``file://`` URI outside every allowed folder, and, from the ``robot_description`` topic, the
same with a URI of 5000 characters.  Each is refused without being read, logged with its path
and drawn as the magenta marker box, while a legitimate mesh beside them (and
example-robot-data's solo12) is drawn.  Then the addresses: the wildcard hosts, ``::`` and a
name, each printed as the address it listens on, and bad ports, as processes with their exit
codes.  The browser test in test_view.py checks that the page and the joint_states feed keep
working while a mesh is being read.
"""
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import numpy as np
import pytest

import liemb_ros as lm
from conftest import ROOT, erd_path, ros_importorskip

ros_importorskip('viser')
from liemb_ros import view as lv  # noqa: E402  (after the import check)
from liemb_ros.view import visuals  # noqa: E402

SPARSE = 2 * 1024 ** 3   # bytes of the sparse probe: `truncate -s 2G`
LIEMB = [sys.executable, '-m', 'liemb_ros.app.cli']


def _link(name, filename, parent=None):
    text = (f'<link name="{name}"><inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" '
            'izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial><visual><geometry>'
            f'<mesh filename="{filename}"/></geometry></visual></link>')
    if parent:
        text += (f'<joint name="j_{name}" type="revolute"><parent link="{parent}"/>'
                 f'<child link="{name}"/><axis xyz="0 0 1"/>'
                 '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>')
    return text


@pytest.fixture
def probe(tmp_path):
    """
    A package folder with a good mesh, a sparse 2 GB one and a link out; a secret file beside.

    Returns ``(folders, uris)``: the folders (``pkgs`` holds package ``mypkg``; ``secret``
    the file no URI may reach; ``robot`` the URDF's folder) and the link -> mesh URI of the
    probe robot.
    """
    import trimesh
    pkgs, secret, robot = (tmp_path / d for d in ('pkgs', 'secret', 'robot'))
    meshes = pkgs / 'mypkg' / 'meshes'
    meshes.mkdir(parents=True)
    secret.mkdir()
    robot.mkdir()
    trimesh.creation.box(extents=(0.1, 0.2, 0.3)).export(meshes / 'ok.stl')
    trimesh.creation.icosphere().export(secret / 'secret.stl')
    subprocess.run(['truncate', '-s', '2G', str(meshes / 'big.stl')], check=True)
    os.symlink(secret / 'secret.stl', meshes / 'escape.stl')
    uris = {
        'base': 'package://mypkg/meshes/ok.stl',
        'sparse': 'package://mypkg/meshes/big.stl',
        'climb': 'package://mypkg/../../secret/secret.stl',
        'dotdot': 'package://../secret/secret.stl',
        'symlink': 'package://mypkg/meshes/escape.stl',
        'absolute': f'file://{secret}/secret.stl',
    }
    return {'pkgs': pkgs, 'secret': secret, 'robot': robot}, uris


def _urdf(uris, name='probe'):
    links, parent = [], None
    for link, uri in uris.items():
        links.append(_link(link, uri, parent))
        parent = link
    return f'<robot name="{name}">{"".join(links)}</robot>'


def _line(text, link):
    """The one log line about ``link``'s mesh."""
    found = [ln for ln in text.splitlines() if f"of link '{link}'" in ln]
    assert len(found) == 1, (link, text)
    return found[0]


def test_the_probes_are_refused_unread_and_the_good_mesh_is_drawn(probe):
    """In process: every probe a 'missing' visual with its reason, the good mesh read."""
    folders, uris = probe
    lines = []
    vis = lv.read_visuals(_urdf(uris), str(folders['robot']), [str(folders['pkgs'])],
                          lines.append)
    kinds = {v.link: v.kind for v in vis}
    assert kinds == dict(base='mesh', sparse='missing', climb='missing', dotdot='missing',
                         symlink='missing', absolute='missing')
    ok = vis[0]
    assert np.allclose(np.ptp(ok.mesh.vertices, axis=0), (0.1, 0.2, 0.3))
    text = '\n'.join(lines)
    secret = repr(str(folders['secret'] / 'secret.stl'))
    assert f'{SPARSE} bytes, over the 50 MB one mesh may have (not read)' in _line(text, 'sparse')
    for link in ('climb', 'symlink'):   # found in the package, really outside it
        assert f"refused: it is {secret}, outside its folder " \
               f"{str(folders['pkgs'] / 'mypkg')!r}" in _line(text, link)
    assert "refused: '..' is not a package name" in _line(text, 'dotdot')
    assert f"refused: it is {secret}, outside the URDF's folder" in _line(text, 'absolute')
    assert '--allow-path' in _line(text, 'absolute')
    # --allow-path opens the secret folder (and only it): the link and the absolute URI
    vis = lv.read_visuals(_urdf(uris), str(folders['robot']), [str(folders['pkgs'])],
                          lines.append, allow_paths=[str(folders['secret'])])
    assert {v.link: v.kind for v in vis} == dict(
        base='mesh', sparse='missing', climb='mesh', dotdot='missing', symlink='mesh',
        absolute='mesh')


def test_a_mesh_is_size_checked_and_the_robot_has_a_total(tmp_path, monkeypatch):
    """Each file is checked before reading; the robot's files share one budget."""
    import trimesh
    box = trimesh.creation.box(extents=(0.1, 0.2, 0.3))
    for k in range(3):
        box.export(tmp_path / f'm{k}.stl')
    size = os.path.getsize(tmp_path / 'm0.stl')
    # a budget for two of the three files
    monkeypatch.setattr(visuals, 'MAX_ROBOT_MESH_BYTES', 2 * size + size // 2)
    links = {f'l{k}': f'm{k}.stl' for k in range(3)}
    links['again'] = 'm0.stl'   # a file drawn twice is read (and counted) once
    lines = []
    vis = lv.read_visuals(_urdf(links), str(tmp_path), (), lines.append)
    assert [v.kind for v in vis] == ['mesh', 'mesh', 'missing', 'mesh']
    assert len(lines) == 1 and f"over the {size // 2} bytes left of the" in lines[0]
    fifo = tmp_path / 'pipe.stl'
    os.mkfifo(fifo)   # opening it for reading would wait for a writer forever
    vis = lv.read_visuals(_urdf({'p': 'pipe.stl'}), str(tmp_path), (), lines.append)
    assert vis[0].kind == 'missing' and 'is not a regular file' in lines[-1]


def test_reading_is_off_the_callback_and_a_closed_view_draws_nothing(probe, monkeypatch):
    """
    While a mesh is being read, the description's callback has returned, the page is served
    and joint states move the robot; a view closed meanwhile draws nothing.
    """
    import trimesh
    from argparse import Namespace

    ros_importorskip('sensor_msgs')
    from sensor_msgs.msg import JointState

    from liemb_ros.ros.view_node import _Viewer
    folders, uris = probe
    reading, release = threading.Event(), threading.Event()
    real = trimesh.load_mesh

    def slow(*args, **kwargs):   # a mesh that takes as long as the test wants
        reading.set()
        assert release.wait(60)
        return real(*args, **kwargs)
    monkeypatch.setattr(trimesh, 'load_mesh', slow)
    args = Namespace(floating_base=False, host='127.0.0.1', port=0,
                     package_dir=[str(folders['pkgs'])], allow_path=[])
    lines = []
    viewer = _Viewer(None, args, lines.append)
    viewer.set_robot(_urdf({'base': uris['base'], 'arm': uris['base']}), 'robot_description')
    view = viewer.view
    try:
        assert reading.wait(30) and not view.meshes_done.is_set()
        with urllib.request.urlopen(view.url, timeout=10) as page:
            assert page.status == 200
        before = np.array(view.frames['arm'].wxyz)
        viewer.on_joint_state(JointState(name=['j_arm'], position=[0.8], velocity=[0.0]))
        viewer.refresh()
        assert view.updates == 2 and not view.meshes_done.is_set()
        after = view.frames['arm'].wxyz   # 0.8 rad about z
        assert np.allclose(before, (1, 0, 0, 0)) and np.allclose(
            after, (np.cos(0.4), 0.0, 0.0, np.sin(0.4)))
        assert 'meshes: reading 0 of 2' in view.gui_status.content
        release.set()
        assert view.meshes_done.wait(30)
        assert 'meshes: 2 drawn' in view.gui_status.content
        assert all(v.mesh is not None for v in view.visuals)
    finally:
        release.set()
        view.close()
    # a view closed while reading: the mesh read is dropped, nothing drawn after close
    release.clear()
    reading.clear()
    model = lm.load_urdf_string(_urdf({'base': uris['base']}))
    view = lv.RobotView(model, _urdf({'base': uris['base']}), port=0,
                        package_dirs=[str(folders['pkgs'])], log=lines.append)
    drawn = []
    monkeypatch.setattr(view, '_draw_visual', lambda k, v: drawn.append(k))
    assert reading.wait(30)
    view.close()
    release.set()
    assert view.meshes_done.wait(30) and drawn == []


def test_example_robot_data_meshes_are_read(monkeypatch):
    """solo12's package:// STL meshes (example-robot-data, a pip package) are all drawn."""
    xml = open(erd_path('solo12')).read()
    lines = []
    vis = lv.read_visuals(xml, os.path.dirname(erd_path('solo12')), (), lines.append)
    meshes = [v for v in vis if v.filename]
    assert len(meshes) == 17 and all(v.kind == 'mesh' for v in meshes), lines
    assert lines == []


def _run(argv, tmp_path, until=None, timeout=120):
    """
    Run ``liemb ARGV`` as a process; return ``(code, stdout, stderr, peak RSS in bytes)``.

    With ``until``, the process is interrupted (SIGINT, Ctrl-C) once it has printed its
    address and its stderr holds that text, and the peak is its own ``VmHWM`` read then.
    Not ``wait4``'s ``ru_maxrss``: Linux carries the forking process's peak through the
    exec into the child's, so inside a long test run it reported the test process's 2.2 GB.
    """
    out, err = tmp_path / 'stdout.txt', tmp_path / 'stderr.txt'
    peak = None
    with open(out, 'w') as o, open(err, 'w') as e:
        proc = subprocess.Popen(LIEMB + argv, stdout=o, stderr=e, cwd=ROOT)
        deadline = time.monotonic() + timeout
        while until is not None and not (until in err.read_text() and
                                         'Ctrl-C stops' in out.read_text()):
            assert proc.poll() is None, err.read_text()
            assert time.monotonic() < deadline, err.read_text()
            time.sleep(0.05)
        if until is not None:
            with open(f'/proc/{proc.pid}/status', encoding='ascii') as f:
                peak = 1024 * int(next(line for line in f
                                       if line.startswith('VmHWM:')).split()[1])
            proc.send_signal(signal.SIGINT)
        proc.wait(timeout=timeout)
    return proc.returncode, out.read_text(), err.read_text(), peak


def test_liemb_view_refuses_the_probes_of_a_urdf_file(probe, tmp_path):
    """``liemb view probe.urdf``: each probe logged as refused, memory far below the 2 GB."""
    folders, uris = probe
    urdf = folders['robot'] / 'probe.urdf'
    urdf.write_text(_urdf(uris))
    # the sparse file is the last mesh the view's thread opens: its line ends the reading
    code, out, err, peak = _run(['view', str(urdf), '--sliders', '--port', '0',
                                 '--package-dir', str(folders['pkgs'])], tmp_path,
                                until=f'{SPARSE} bytes')
    assert code == 0, err
    assert 'http://127.0.0.1:' in out and 'Traceback' not in err
    secret = repr(str(folders['secret'] / 'secret.stl'))
    assert f'{SPARSE} bytes, over the 50 MB' in _line(err, 'sparse')
    for link in ('climb', 'symlink', 'absolute'):
        assert f'refused: it is {secret}' in _line(err, link)
    assert "'..' is not a package name" in _line(err, 'dotdot')
    assert "of link 'base'" not in err
    # reading the sparse file whole would take 2 GB (the issue saw 3.5 GB)
    assert peak < 1.5e9, f'peak RSS {peak / 1e9:.2f} GB'


@pytest.mark.ros
def test_a_description_from_the_topic_is_held_to_the_same_folders(graph, probe):
    """
    From ``robot_description`` (no URDF folder): --package-dir and --allow-path decide; the
    URIs are quoted in the log, a URI of 100 000 characters cut.
    """
    from std_msgs.msg import String

    from liemb_ros.ros.common import LATCHED
    folders, uris = probe
    good = folders['pkgs'] / 'mypkg' / 'meshes' / 'ok.stl'
    (folders['robot'] / 'other.stl').write_bytes(good.read_bytes())
    long_uri = 'package://mypkg/meshes/' + 'x' * 100_000 + '.stl'
    links = dict(uris)
    links.pop('sparse')
    links.update(relative='mypkg/meshes/ok.stl', relative_out='../robot/other.stl',
                 long=long_uri, sparse=uris['sparse'])   # the sparse file read last
    graph.run('view', LIEMB + ['view', '--port', '0', '--package-dir', str(folders['pkgs']),
                               '--allow-path', str(folders['secret'])])
    desc = graph.node.create_publisher(String, '/robot_description', LATCHED)
    desc.publish(String(data=_urdf(links)))
    graph.spin_until(lambda: f'{SPARSE} bytes' in graph.output('view'))
    text = graph.output('view')
    assert "liemb view: 'probe' from robot_description at http://127.0.0.1:" in text
    for link in ('base', 'relative', 'climb', 'symlink', 'absolute'):   # drawn
        assert f"of link '{link}'" not in text, text
    assert "'..' is not a package name" in _line(text, 'dotdot')
    other = repr(str(folders['robot'] / 'other.stl'))
    assert f"refused: it is {other}, outside its folder {str(folders['pkgs'])!r}" in \
        _line(text, 'relative_out')
    long_line = _line(text, 'long')
    assert 'not found' in long_line and '(100027 chars)' in long_line
    assert len(long_line) < 3000
    assert f'{SPARSE} bytes, over the 50 MB' in _line(text, 'sparse')


def _serve(argv, tmp_path, timeout=120):
    """
    Start ``liemb ARGV`` (a view); return ``(process, stdout, stderr)`` once it serves.

    Fails if it exits first.
    """
    out, err = tmp_path / 'serve_out.txt', tmp_path / 'serve_err.txt'
    with open(out, 'w') as o, open(err, 'w') as e:
        proc = subprocess.Popen(LIEMB + argv, stdout=o, stderr=e, cwd=ROOT)
    deadline = time.monotonic() + timeout
    while 'Ctrl-C stops' not in out.read_text():
        assert proc.poll() is None, err.read_text()
        assert time.monotonic() < deadline, err.read_text()
        time.sleep(0.05)
    return proc, out.read_text(), err.read_text()


def _ipv6():
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(('::1', 0))
        return True
    except OSError:
        return False


@pytest.mark.parametrize('host, here, listens', [
    ('0.0.0.0', 'http://127.0.0.1:{port}', 'http://0.0.0.0:{port}'),
    ('', 'http://127.0.0.1:{port}', 'http://0.0.0.0:{port}'),
    ('::', 'http://[::1]:{port}', 'http://[::]:{port}'),
    ('localhost', 'http://localhost:{port}', None),
])
def test_the_printed_address_is_where_it_listens(tmp_path, host, here, listens):
    """
    ``--host`` as given: the line names the address it listens on and one that opens the
    page here (fetched); a wildcard says every interface and warns that the page is open to
    the network; a loopback name is printed as given, without a warning.
    """
    if ':' in host and not _ipv6():
        pytest.skip('no IPv6 loopback on this machine')
    proc, out, err = _serve(['view', 'liemb_arm7', '--sliders', '--port', '0',
                             '--host', host], tmp_path)
    try:
        port = int(re.search(r' at http://\S+:(\d+) ', out).group(1))
        url = here.format(port=port)
        with urllib.request.urlopen(url, timeout=30) as page:
            assert page.status == 200
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    assert f'liemb view: liemb_arm7 at {url} (' in out
    if listens is None:
        assert 'warning' not in err
        return
    others = f'http://{socket.gethostname()}:{port}'
    assert f'(it listens on every interface, {listens.format(port=port)}; from other ' \
           f"machines: {others} or this machine's IP address;" in out
    assert 'liemb view: warning: the page listens on every interface: it is open to the ' \
           'network' in err


@pytest.mark.parametrize('port', ['99999', '-5', '65536', '80.5'])
def test_a_bad_port_is_an_argument_error(port):
    """Exit 2 with a message naming the port, as argparse's errors; never a traceback."""
    proc = subprocess.run(LIEMB + ['view', 'liemb_arm7', '--sliders', '--port', port],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 2
    assert f"liemb view: error: argument --port: '{port}' is not a port: give 0..65535" in \
        proc.stderr
    assert 'Traceback' not in proc.stderr and proc.stdout == ''


DEEP = """<robot name="deep">
  <link name="base"><inertial><mass value="1"/>
    <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="10" velocity="1"/></joint>
  <link name="arm"><inertial><origin xyz="0 0 -0.5"/><mass value="1"/>
    <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><origin xyz="0 0 -0.5"/><geometry><sphere radius="0.1"/></geometry></collision>
  </link>
</robot>"""


def test_simulating_a_robot_the_ground_cannot_hold_is_exit_2(tmp_path):
    """``--simulate --contact`` of a robot that starts 0.6 m inside the ground (a plane or a
    pose gone wrong): the simulator's refusal, exit 2, no traceback."""
    path = tmp_path / 'deep.urdf'
    path.write_text(DEEP)
    proc = subprocess.run(LIEMB + ['view', str(path), '--simulate', '--contact', '--port', '0'],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 2, proc.stderr
    assert "liemb view: cannot simulate deep: the robot starts 0.6 m inside contact plane 0 " \
           "(link 'arm')" in proc.stderr
    assert 'Traceback' not in proc.stderr


def test_page_address_and_check_address_in_python():
    """The API behind the lines (and the demo's --view-port check)."""
    url, where, warning = lv.page_address('192.0.2.1', 8080)   # TEST-NET-1: not loopback
    assert url == 'http://192.0.2.1:8080' and where == ''
    assert warning.startswith('the page listens on 192.0.2.1, not a loopback address: it is '
                              'open to the network')
    assert lv.page_address('::1', 80) == ('http://[::1]:80', '', None)
    assert lv.page_address('127.0.0.1', 80) == ('http://127.0.0.1:80', '', None)
    for port in (99999, -5, 65536, 8080.5, 'http'):
        with pytest.raises(lv.ViewError, match=r'is not a port: give 0\.\.65535'):
            lv.check_address('127.0.0.1', port)
