"""
Launch arguments: ``liemb launch`` and the launch files start the same nodes.

Most tests call :func:`launch_sets.resolve` and :func:`launcher.commands` (no ROS process).
The launch files are loaded against a stand-in of ``launch``/``launch_ros``
(``test/launch_standin/``, written for these tests with the real class names, constructor
signatures and visit/execute/perform behaviour): the real packages are not installable
from PyPI.  It was checked against launch 3.7.1 and launch_ros 0.28.0 (their rolling
sources, pure Python, put on PYTHONPATH by hand; the API used is the same in Jazzy's
3.4.3 / 0.26.6): the real ``LaunchService`` ran both launch files with the arguments of
``CASES`` (executables that record their command line and parameter files): the same
nodes, command lines and parameter file contents as ``liemb launch``, but for a repeated
``--ros-args``; with the real nodes, ``sim.launch.py namespace:=arm use_sim_time:=true``
gave /arm/liemb_simulation and /arm/liemb_dynamics, the torques on
/arm/liemb_simulation/effort_command, /clock, /tf and /diagnostics global, rviz2 skipped
with a message; ``mode:=bogus`` was refused by DeclareLaunchArgument's choices.  Where
the real ``launch`` is importable (a ROS install),
:func:`test_launch_files_with_the_real_launch_api` loads the files with it too.  One test
starts ``liemb launch dynamics`` as a user would and stops it.
"""
import importlib.util
import os
import random
import subprocess
import sys
import tempfile
import time

import pytest
import yaml

from conftest import ROOT, erd_path, ros_importorskip

from liemb_ros.app import cli
from liemb_ros.core import resources
from liemb_ros.app import launch_sets, launcher
from liemb_ros.app.launch_sets import LaunchArgumentError, resolve
from liemb_ros.app.launcher import commands

STANDIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'launch_standin')
XACRO = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data',
                     'xacro_arm.urdf.xacro')


def everything(package, executable):
    """Pretend every node is installed."""
    return True


def nothing(package, executable):
    """Pretend no node of another package is installed."""
    return package == 'liemb_ros'


def by_name(res):
    return {n.name: n for n in res.nodes}


def merged(spec):
    """The parameters a node ends up with (files and dicts applied in order)."""
    out = {}
    for p in spec.parameters:
        if isinstance(p, dict):
            out.update(p)
            continue
        with open(p, encoding='utf-8') as f:
            for key, value in (yaml.safe_load(f) or {}).items():
                if key in ('/**', f'/**/{spec.name}', spec.name):
                    out.update(value['ros__parameters'])
    return out


def test_sim_defaults():
    res = resolve('sim', {}, installed=everything)
    nodes = by_name(res)
    assert list(nodes) == ['liemb_simulation', 'liemb_dynamics'] and not res.skipped
    sim, dyn = nodes['liemb_simulation'], nodes['liemb_dynamics']
    xml = resources.read_robot_description('liemb_arm7')[0]
    for spec in (sim, dyn):
        assert spec.namespace == '' and spec.ros_arguments == ['--log-level', 'info']
        p = merged(spec)
        assert p['robot_description'] == xml and p['urdf_path'] == ''
        assert p['use_sim_time'] is False and p['floating_base'] is False
    assert merged(dyn)['mode'] == 'gravity_compensation'
    assert merged(sim)['publish_clock'] is False and merged(sim)['publish_link_tf'] is True
    robot = [p for p in sim.parameters if isinstance(p, dict) and 'robot_description' in p]
    assert robot and any(p is robot[0] for p in dyn.parameters)   # one dict, written once


def test_dynamics_defaults_take_the_robot_from_the_topic():
    (dyn,) = resolve('dynamics', {}, installed=everything).nodes
    p = merged(dyn)
    assert p['robot_description'] == '' and p['urdf_path'] == ''


def test_namespace_keeps_remaps_inside():
    res = resolve('sim', {'namespace': 'arm/'}, installed=everything)
    assert {n.namespace for n in res.nodes} == {'/arm'}
    dyn = by_name(res)['liemb_dynamics']
    assert dyn.remappings == [('~/effort_command', 'liemb_simulation/effort_command'),
                              ('odom', 'liemb_simulation/odom')]
    rclpy = pytest.importorskip('rclpy')   # how rcl expands them: inside /arm
    from rclpy.node import Node
    context = rclpy.Context()
    rclpy.init(context=context, args=['--ros-args', '-r', '__ns:=/arm'] + sum(
        (['-r', f'{a}:={b}'] for a, b in dyn.remappings), []))
    try:
        node = Node('liemb_dynamics', context=context)
        assert node.resolve_topic_name('~/effort_command') == \
            '/arm/liemb_simulation/effort_command'
        assert node.resolve_topic_name('joint_states') == '/arm/joint_states'
        assert node.resolve_topic_name('odom') == '/arm/liemb_simulation/odom'
        assert node.resolve_topic_name('/tf') == '/tf'
        node.destroy_node()
    finally:
        context.try_shutdown()


def test_use_sim_time_reaches_every_node_and_the_simulation_publishes_clock():
    res = resolve('sim', {'use_sim_time': 'true', 'use_robot_state_publisher': 'true',
                          'use_rviz': 'True'}, installed=everything)
    assert [n.name for n in res.nodes] == ['liemb_simulation', 'liemb_dynamics',
                                           'robot_state_publisher', 'rviz2']
    assert all(merged(n)['use_sim_time'] is True for n in res.nodes)
    assert merged(res.nodes[0])['publish_clock'] is True


def test_rsp_and_rviz_only_when_asked_and_installed():
    res = resolve('sim', {}, installed=everything)
    assert [n.name for n in res.nodes] == ['liemb_simulation', 'liemb_dynamics']
    asked = {'use_robot_state_publisher': 'true', 'use_rviz': 'true'}
    res = resolve('sim', asked, installed=everything)
    nodes = by_name(res)
    assert merged(nodes['liemb_simulation'])['publish_link_tf'] is False
    rsp = merged(nodes['robot_state_publisher'])
    assert rsp['robot_description'].startswith('<?xml') and 'urdf_path' not in rsp
    assert nodes['rviz2'].arguments == ['-d', resources.find('rviz', 'liemb.rviz')]
    assert ('/robot_description', 'robot_description') in nodes['rviz2'].remappings
    res = resolve('sim', asked, installed=nothing)   # asked, not installed: a message
    assert [n.name for n in res.nodes] == ['liemb_simulation', 'liemb_dynamics']
    assert len(res.skipped) == 2 and 'not installed' in res.skipped[0]
    assert merged(res.nodes[0])['publish_link_tf'] is True   # nobody else publishes links


def test_robot_file_floating_base_mode_and_log_level():
    ur5 = erd_path('ur5')
    res = resolve('dynamics', {'robot': ur5, 'floating_base': 'true', 'log_level': 'debug',
                               'mode': 'inverse_dynamics'}, installed=everything)
    (dyn,) = res.nodes
    p = merged(dyn)
    with open(ur5, encoding='utf-8') as f:
        assert p['robot_description'] == f.read()
    assert p['floating_base'] is True and p['mode'] == 'inverse_dynamics'
    assert dyn.ros_arguments == ['--log-level', 'debug']


def test_xacro_robot_with_arguments():
    res = resolve('dynamics', {'robot': XACRO, 'xacro_args': 'prefix:=left_ payload:=1.5'},
                  installed=everything)
    xml = merged(res.nodes[0])['robot_description']
    assert '<link name="left_base"' in xml and '${' not in xml and '<xacro:' not in xml


def test_params_file_comes_last_then_p(tmp_path):
    user = tmp_path / 'mine.yaml'
    user.write_text('/**/liemb_dynamics:\n  ros__parameters:\n    mode: inverse_dynamics\n')
    runnable, skipped = commands('sim', ['liemb_dynamics:publish_rate:=50.0'],
                                 {'params_file': str(user)}, str(tmp_path))
    for label, argv, optional in runnable:
        files = [argv[i + 1] for i, a in enumerate(argv) if a == '--params-file']
        shipped = {'liemb_simulation': 'simulation.yaml', 'liemb_dynamics': 'dynamics.yaml'}
        assert files[0] == resources.find('config', shipped[label])
        assert files[-1] == str(user)
        if label == 'liemb_dynamics':
            assert argv[-2:] == ['-p', 'publish_rate:=50.0']
            assert argv.index('--params-file') < argv.index('-p')
    generated = sorted(os.listdir(tmp_path))
    assert generated == ['mine.yaml', 'params_0.yaml', 'params_1.yaml', 'params_2.yaml']
    with open(tmp_path / 'params_0.yaml', encoding='utf-8') as f:   # the robot, once
        assert yaml.safe_load(f)['/**']['ros__parameters']['robot_description'].startswith('<')


def test_dynamics_with_an_example_robot_data_urdf_builds_the_command_line(tmp_path):
    ur5 = erd_path('ur5')
    (run,), skipped = commands('dynamics', (), {'robot': ur5, 'namespace': 'ur'},
                               str(tmp_path))
    label, argv, optional = run
    assert (label, optional, skipped) == ('liemb_dynamics', False, [])
    assert argv[:3] == [sys.executable, '-m', 'liemb_ros.ros.dynamics_node']
    robot, values = str(tmp_path / 'params_0.yaml'), str(tmp_path / 'params_1.yaml')
    assert argv[3:] == ['--ros-args', '--log-level', 'info', '-r', '__node:=liemb_dynamics',
                        '-r', '__ns:=/ur',
                        '--params-file', resources.find('config', 'dynamics.yaml'),
                        '--params-file', robot, '--params-file', values]
    with open(robot, encoding='utf-8') as f, open(ur5, encoding='utf-8') as g:
        assert yaml.safe_load(f) == {'/**': {'ros__parameters': {
            'robot_description': g.read()}}}
    with open(values, encoding='utf-8') as f:
        assert yaml.safe_load(f)['/**']['ros__parameters'] == {
            'use_sim_time': False, 'urdf_path': '', 'floating_base': False,
            'mode': 'gravity_compensation'}


@pytest.mark.parametrize('values, message', [
    ({'robots': 'x'}, 'unknown launch argument'),
    ({'use_sim_time': 'maybe'}, 'expected true or false'),
    ({'mode': 'fast'}, 'valid choices'),
    ({'namespace': 'a b'}, 'not a valid ROS namespace'),
    ({'robot': '/no/such/robot.urdf'}, 'neither'),
    ({'params_file': '/no/such.yaml'}, 'does not exist'),
    ({'robot': '', 'xacro_args': 'a:=1'}, 'xacro_args needs'),
    ({'robot': XACRO, 'xacro_args': 'oops'}, "'oops' is not of the form 'name:=value'"),
    ({'use_robot_state_publisher': 'true', 'robot': ''}, 'needs the robot'),
])
def test_bad_arguments_are_refused(values, message):
    with pytest.raises(LaunchArgumentError, match=message):
        resolve('sim', values, installed=nothing)


@pytest.mark.parametrize('argv, message', [
    (['launch', 'sim', 'robot=panda'], 'is not a launch argument'),
    (['launch', 'sim', 'robots:=panda'], 'unknown launch argument'),
    (['launch', 'sim', 'robot:=/no/such.urdf'], 'neither'),
    (['launch', 'sim', '-p', 'nobody:x:=1'], "no node 'nobody'"),
    # rclpy ignores an undeclared override: a typo would run the default without a word
    (['launch', 'sim', '-p', 'liemb_dynamics:publish_rat:=100.0'],
     "liemb_dynamics has no parameter 'publish_rat' (did you mean 'publish_rate'?)"),
    (['launch', 'simulation'], 'unknown launch set'),
])
def test_cli_errors_exit_2_before_anything_starts(argv, message, capsys, monkeypatch):
    def no_start(*args, **kwargs):
        raise AssertionError('a node was started')
    monkeypatch.setattr(launcher.subprocess, 'Popen', no_start)
    assert cli.main(argv) == 2
    assert message in capsys.readouterr().err


def test_cli_lists_the_arguments(capsys):
    assert cli.main(['launch', 'dynamics', '--show-args']) == 0
    out = capsys.readouterr().out
    assert all(f"'{a.name}'" in out for a in launch_sets.arguments('dynamics'))
    assert "(default: 'gravity_compensation')" in out
    assert cli.main(['launch']) == 2 and 'dynamics' in capsys.readouterr().out


def test_inspect_walks_a_deep_link_tree(tmp_path):
    n = 1500   # deeper than Python's recursion limit
    links = ''.join(f'<link name="l{i}"/>' for i in range(n))
    joints = ''.join(f'<joint name="j{i}" type="fixed"><parent link="l{i}"/>'
                     f'<child link="l{i + 1}"/></joint>' for i in range(n - 1))
    path = tmp_path / 'chain.urdf'
    path.write_text(f'<robot name="chain">{links}{joints}</robot>')
    text = cli.inspect_text(cli.load_robot(str(path)))
    assert f"{'  ' * (n - 1)}l{n - 1}  (base)" in text


# --- the launch files ---------------------------------------------------------------------

@pytest.fixture
def standin():
    """Make ``import launch`` / ``launch_ros`` find the stand-in for one test."""
    names = [m for m in sys.modules if m.split('.')[0] in ('launch', 'launch_ros')]
    saved = {m: sys.modules.pop(m) for m in names}
    sys.path.insert(0, STANDIN)
    try:
        import launch
        assert launch.__file__.startswith(STANDIN)
        yield launch
    finally:
        sys.path.remove(STANDIN)
        for m in [m for m in sys.modules if m.split('.')[0] in ('launch', 'launch_ros')]:
            del sys.modules[m]
        sys.modules.update(saved)


def load_launch_file(name):
    path = os.path.join(ROOT, 'launch', f'{name}.launch.py')
    spec = importlib.util.spec_from_file_location(f'{name}_launch', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.generate_launch_description()


def run_description(ld, context, keep=()):
    """Visit the entities depth first, as LaunchService does; return them all (in order).

    Entities of the types ``keep`` are returned without being visited (a real Node would
    start its process).
    """
    visited, queue = [], list(ld.entities)
    while queue:
        entity = queue.pop(0)
        visited.append(entity)
        if not isinstance(entity, keep):
            queue[0:0] = list(entity.visit(context) or [])
    return visited


def normalized(argv, skip):
    """A command line without its program, one --ros-args, parameter files read."""
    out, rest = [], argv[skip:]
    for i, a in enumerate(rest):
        if a == '--ros-args' and '--ros-args' in out:
            continue
        if i and rest[i - 1] == '--params-file':
            with open(a, encoding='utf-8') as f:
                a = yaml.safe_load(f)
        out.append(a)
    return out


def test_every_node_set_has_a_launch_file():
    """``ros2 launch liemb_ros NAME.launch.py`` exists for every set of config/launch.yaml."""
    files = {f[:-len('.launch.py')] for f in os.listdir(os.path.join(ROOT, 'launch'))
             if f.endswith('.launch.py')}
    assert files == set(launch_sets.load_sets()), files


CASES = [
    ('sim', {}),
    ('stand', {}),
    ('sim', {'namespace': 'arm', 'use_sim_time': 'true', 'use_robot_state_publisher': 'true',
             'use_rviz': 'true', 'floating_base': 'false', 'log_level': 'warn'}),
    ('dynamics', {}),
    ('dynamics', {'robot': XACRO, 'xacro_args': 'prefix:=r_', 'mode': 'inverse_dynamics',
                  'namespace': '/ur'}),
]


@pytest.mark.parametrize('name, values', CASES)
def test_launch_files_start_what_liemb_launch_starts(standin, name, values, tmp_path):
    from launch_ros.actions import Node
    from launch.actions import DeclareLaunchArgument, LogInfo
    ld = load_launch_file(name)
    declared = ld.get_launch_arguments()
    assert [(a.name, a.default_value[0].text, a.description) for a in declared] == [
        (a.name, a.default, a.description) for a in launch_sets.arguments(name)]
    assert all(a.description for a in declared)
    context = standin.LaunchContext()
    context.launch_configurations.update(values)
    visited = run_description(ld, context)
    nodes = [e for e in visited if isinstance(e, Node)]
    logs = [e.msg for e in visited if isinstance(e, LogInfo)]
    assert len([e for e in visited if isinstance(e, DeclareLaunchArgument)]) == len(declared)
    runnable, skipped = commands(name, (), values, str(tmp_path))
    assert logs == [f'[liemb_ros] skipping {s}' for s in skipped]
    assert [n.node_name.rsplit('/', 1)[1] for n in nodes] == [r[0] for r in runnable]
    for node, (label, argv, _) in zip(nodes, runnable):
        exe = launch_sets.node_command(node.node_package, node.node_executable)
        assert normalized(node.cmd, 1) == normalized(argv, len(exe))
        assert node.expanded_node_namespace == (values.get('namespace') and
                                                '/' + values['namespace'].strip('/'))


def test_launch_files_refuse_bad_values_like_liemb_launch(standin):
    ld = load_launch_file('sim')
    context = standin.LaunchContext()
    context.launch_configurations.update({'mode': 'bogus'})
    with pytest.raises(RuntimeError, match='not valid'):
        run_description(ld, context)
    context = standin.LaunchContext()
    context.launch_configurations.update({'robot': '/no/such.urdf'})
    with pytest.raises(LaunchArgumentError):
        run_description(ld, context)


def test_launch_files_with_the_real_launch_api():
    try:
        import launch
        from launch_ros.actions import Node
    except ImportError:
        launch = None
    if launch is None or not hasattr(launch, 'LaunchService'):
        pytest.skip('the real launch / launch_ros are not installed (not on PyPI)')
    ld = load_launch_file('dynamics')
    assert [a.name for a in ld.get_launch_arguments()] == [
        a.name for a in launch_sets.arguments('dynamics')]
    context = launch.LaunchContext()
    context.launch_configurations['robot'] = erd_path('ur5')
    visited = run_description(ld, context, keep=(Node,))
    nodes = [e for e in visited if isinstance(e, Node)]
    assert [(n.node_package, n.node_executable) for n in nodes] == [
        ('liemb_ros', 'dynamics_node')]


# --- end to end ---------------------------------------------------------------------------

@pytest.mark.ros
def test_liemb_launch_dynamics_starts_and_stops_cleanly():
    """``liemb launch dynamics --duration``: the node starts (waits for a robot), exit 0."""
    ros_importorskip('rclpy')
    env = dict(os.environ, ROS_DOMAIN_ID=str(random.randint(120, 160)),
               ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST', PYTHONUNBUFFERED='1')
    env.pop('ROS_STATIC_PEERS', None)
    proc = subprocess.run([sys.executable, '-m', 'liemb_ros.app.cli', 'launch', 'dynamics',
                           '--duration', '6'], env=env,
                          capture_output=True, text=True, timeout=60)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert '[launch] starting liemb_dynamics' in out and 'killing' not in out
    assert '[liemb_dynamics]' in out, out   # the node ran and logged under its name


# --- a launch that failed says so (issue 28) ------------------------------------------------

SECRET = 'admin:$6$S3CR3T-HASH:19000:0:99999:7:::\n'


@pytest.mark.parametrize('content, kind', [
    (SECRET.encode(), ' of UTF-8 text'),
    (b'\x7fELF\x02\x01\x01\x00S3CR3T' + bytes(range(256)), ' of binary data'),
    (b'<?xml version="1.0"?>\n<!-- S3CR3T -->\nS3CR3T text', ' of UTF-8 text'),
    (b'', ' (its content'),
])
def test_a_robot_file_that_is_no_urdf_is_named_not_quoted(content, kind, tmp_path, capsys):
    """``liemb launch sim robot:=FILE`` (exit 2) says what it expected and what the file
    is (its size and kind), never what it holds (the robot may be any readable file)."""
    path = tmp_path / 'robot.urdf'
    path.write_bytes(content)
    kind = f'holds {len(content)} bytes{kind}'
    assert cli.main(['launch', 'sim', f'robot:={path}']) == 2
    err = capsys.readouterr().err
    assert 'not a URDF file' in err and 'starting with an element' in err and kind in err, err
    assert 'S3CR3T' not in err and 'admin' not in err, err
    with pytest.raises(Exception) as exc:     # the node's RobotSource reads it the same way
        resources.read_robot_description(str(path))
    assert 'S3CR3T' not in str(exc.value) and kind in str(exc.value)


def _fake_nodes(monkeypatch, nodes):
    """Make ``launcher.launch`` start ``nodes`` ``(label, shell script, optional)``."""
    runnable = [(label, ['sh', '-c', script], optional) for label, script, optional in nodes]
    monkeypatch.setattr(launcher, 'commands', lambda *a, **k: (runnable, []))


#: a node that runs until a stop's SIGINT, then exits 0 (as ours do)
CLEAN = 'trap "exit 0" INT TERM; while :; do sleep 0.05; done'


@pytest.mark.parametrize('nodes, duration, code, said', [
    # fails 0.2 s after the duration ended (ignoring the stop's SIGINT meanwhile): the
    # supervision loop never saw it; the exit code of the launch still says so
    ([('good', CLEAN, False), ('bad', 'trap "" INT; sleep 1.2; exit 3', False)], 1.0, 3,
     'bad exited with code 3'),
    # crashes on the stop
    ([('bad', 'trap "exit 4" INT; while :; do sleep 0.05; done', False)], 0.5, 4,
     'bad exited with code 4'),
    # a required node that dies stops the set at once, whatever the duration
    ([('good', CLEAN, False), ('bad', 'exit 5', False)], 60.0, 5, 'bad exited with code 5'),
    # an optional node (rviz2) that failed: the set goes on, the exit code tells
    ([('good', CLEAN, False), ('viewer', 'exit 6', True)], 1.0, 6,
     'viewer exited with code 6'),
    # a node that does not stop within the grace is killed: 128 + SIGKILL
    ([('stuck', 'trap "" INT; sleep 30', False)], 0.3, 137, 'stuck did not stop'),
    ([('good', CLEAN, False), ('also_good', CLEAN, False)], 0.5, 0, None),
])
def test_launch_exit_code_names_the_node_that_failed(nodes, duration, code, said, monkeypatch,
                                                     capsys):
    _fake_nodes(monkeypatch, nodes)
    start = time.monotonic()
    assert launcher.launch('sim', duration=duration, grace=0.5, echo=print) == code
    assert time.monotonic() - start < 15.0
    out = capsys.readouterr()
    if said is None:
        assert 'failed' not in out.err + out.out
    else:
        assert f'[launch] failed: {said}' in out.err, out


@pytest.mark.ros
def test_liemb_launch_exits_non_zero_when_a_node_failed():
    """``liemb launch dynamics`` whose node cannot read its robot: the node exits 1 with the
    reason (no byte of the file), the launch exits 1 naming it."""
    ros_importorskip('rclpy')
    env = dict(os.environ, ROS_DOMAIN_ID=str(random.randint(120, 160)),
               ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST', PYTHONUNBUFFERED='1')
    env.pop('ROS_STATIC_PEERS', None)
    with tempfile.NamedTemporaryFile('w', suffix='.urdf') as f:
        f.write(SECRET)
        f.flush()
        proc = subprocess.run([sys.executable, '-m', 'liemb_ros.app.cli', 'launch', 'dynamics',
                               '-p', f'liemb_dynamics:urdf_path:={f.name}', '--duration',
                               '120'], env=env, capture_output=True, text=True, timeout=150)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert '[launch] failed: liemb_dynamics exited with code 1' in proc.stderr, out
    assert 'not a URDF file' in out and 'S3CR3T' not in out, out


@pytest.mark.parametrize('text, good', [
    (SECRET, False),                                  # a mapping, but of no node's parameters
    ('- a\n- b\n', False),
    ('liemb_dynamics:\n  ros__parameters: 3\n', False),
    ('/**:\n  ros__parameters: {}\n', True),
    ('arm:\n  liemb_dynamics:\n    ros__parameters:\n      mode: inverse_dynamics\n', True),
])
def test_a_params_file_rcl_cannot_read_is_refused_before_anything_starts(
        text, good, tmp_path, capsys, monkeypatch):
    """rcl refuses such a file in every node (each exits 1, a traceback apiece): refused
    first, exit 2, without quoting the file."""
    path = tmp_path / 'params.yaml'
    path.write_text(text)
    if good:
        resolve('sim', {'params_file': str(path)}, installed=nothing)
        return
    monkeypatch.setattr(launcher.subprocess, 'Popen', lambda *a, **k: pytest.fail('started'))
    assert cli.main(['launch', 'sim', f'params_file:={path}']) == 2
    err = capsys.readouterr().err
    assert 'ros__parameters' in err and 'S3CR3T' not in err and 'admin' not in err, err
