"""
Where a URDF comes from: xacro files, text from outside, bad bytes and numbers, long chains.

Independent truths: the xacro robot against the same robot written out by hand
(data/xacro_arm.urdf), the long chain's last link pose against its closed form, and
for text from outside, that nothing on the file system is ever opened.
"""
import builtins
import io
import math
import os
import shutil

import numpy as np
import pytest

import liemb_ros as lm
from liemb_ros.core import model as core_model
from liemb_ros.core import resources
from liemb_ros.core.model import assembly
from liemb_ros.core.model.urdf import JointDesc, LinkDesc, RobotDescription
from conftest import URDF_DIR

pytest.importorskip('xacro')

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data')
ARM_XACRO = os.path.join(DATA, 'xacro_arm.urdf.xacro')
ARM_URDF = os.path.join(DATA, 'xacro_arm.urdf')
LIMIT = '<limit lower="-1" upper="1" effort="1" velocity="1"/>'
INERTIAL = ('<inertial><mass value="1"/>'
            '<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial>')


def chain(joint_extra=LIMIT, inertial=INERTIAL, joint_type='revolute'):
    """Return a two-link robot whose joint 'j1' and link 'arm' carry the given XML."""
    return (f'<robot name="r"><link name="base"/><link name="arm">{inertial}</link>'
            f'<joint name="j1" type="{joint_type}"><parent link="base"/><child link="arm"/>'
            f'{joint_extra}</joint></robot>')


def assert_same_model(a, b, atol=1e-12):
    """Assert that two models have the same topology, names and numbers."""
    assert a.joint_names == b.joint_names and a.link_names == b.link_names
    assert a.body_names == b.body_names and a.body_joint_type == b.body_joint_type
    np.testing.assert_array_equal(a.parent, b.parent)
    for field in ('S_parent', 'S_child', 'JX', 'inertia', 'base_inertia', 'link_offset',
                  'lower', 'upper', 'velocity_limit', 'effort_limit', 'damping', 'friction'):
        np.testing.assert_allclose(getattr(a, field), getattr(b, field), rtol=0, atol=atol,
                                   err_msg=field)


# -- xacro ----------------------------------------------------------------------------------


def test_xacro_file_is_the_hand_written_urdf(rng):
    """Properties, math, an included file's macros and argument defaults expand to exactly
    the robot written out by hand: same model numbers and the same link poses."""
    a = lm.load_urdf(ARM_XACRO)
    b = lm.load_urdf(ARM_URDF)
    assert a.name == b.name == 'xacro_arm'
    assert a.joint_names == ['shoulder', 'elbow', 'wrist']
    assert_same_model(a, b)
    assert a.mass == pytest.approx(3.5)
    for q in rng.uniform(-1, 1, (5, 3)):
        np.testing.assert_allclose(lm.link_pose(a, q, 'tool'), lm.link_pose(b, q, 'tool'),
                                   atol=1e-12)


def test_xacro_arguments_as_dict_or_string(tmp_path):
    """``xacro_args`` set the file's <xacro:arg>s (dict or 'name:=value'); a plain .xacro
    extension works too; arguments left out keep their defaults."""
    default = lm.load_urdf(ARM_XACRO)
    as_dict = lm.load_urdf(ARM_XACRO, xacro_args={'prefix': 'left_', 'payload': 2})
    as_text = lm.load_urdf(ARM_XACRO, xacro_args='prefix:=left_ payload:=2.0')
    assert as_dict.joint_names == ['left_shoulder', 'left_elbow', 'left_wrist']
    assert as_dict.link_names == ['left_base', 'left_upper', 'left_fore', 'left_tool']
    assert as_dict.mass == pytest.approx(default.mass + 1.5)   # payload 0.5 -> 2
    assert_same_model(as_dict, as_text, atol=0)
    only_payload = lm.load_urdf(ARM_XACRO, xacro_args={'payload': '2'})
    assert only_payload.joint_names == default.joint_names
    # a plain .xacro name, in another folder (includes resolve next to the file)
    shutil.copy(ARM_XACRO, tmp_path / 'arm.xacro')
    shutil.copy(os.path.join(DATA, 'xacro_arm_parts.xacro'), tmp_path)
    assert_same_model(lm.load_urdf(tmp_path / 'arm.xacro'), default, atol=0)


def test_xacro_args_on_any_file_run_xacro(tmp_path):
    """``xacro_args`` not None runs xacro whatever the extension; on a plain URDF that
    changes nothing."""
    plain = lm.load_urdf(ARM_URDF, xacro_args='')
    assert_same_model(plain, lm.load_urdf(ARM_URDF), atol=0)
    odd = tmp_path / 'named_like_urdf.urdf'
    shutil.copy(ARM_XACRO, odd)
    shutil.copy(os.path.join(DATA, 'xacro_arm_parts.xacro'), tmp_path)
    with pytest.raises(lm.URDFError, match='looks like an unexpanded xacro file'):
        lm.load_urdf(odd)
    assert_same_model(lm.load_urdf(odd, xacro_args={}), plain)


def write(path, text):
    """Write ``text`` to ``path`` and return the path as a str."""
    path.write_text(text, encoding='utf-8')
    return str(path)


XACRO_HEAD = '<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro">'


def test_xacro_errors_name_the_file_and_the_culprit(tmp_path, monkeypatch):
    """Bad arguments, undefined args and properties, $(find pkg) without ROS, errors in an
    included file: URDFError naming the file (and the package)."""
    with pytest.raises(lm.URDFError, match=r"xacro_arm\.urdf\.xacro: xacro argument "
                                           r"'payload=2' is not of the form 'name:=value'"):
        lm.load_urdf(ARM_XACRO, xacro_args='payload=2')
    no_default = write(tmp_path / 'no_default.xacro',
                       XACRO_HEAD + '<link name="$(arg side)"/></robot>')
    with pytest.raises(lm.URDFError, match=r'no_default\.xacro: xacro failed: .*side'):
        lm.load_urdf(no_default)
    assert lm.load_urdf(no_default, xacro_args='side:=left').link_names == ['left']
    undefined = write(tmp_path / 'undefined.urdf.xacro',
                      XACRO_HEAD + '<link name="${nowhere}"/></robot>')
    with pytest.raises(lm.URDFError, match=r'undefined\.urdf\.xacro: xacro failed: .*nowhere'):
        lm.load_urdf(undefined)
    inner = write(tmp_path / 'inner.xacro', XACRO_HEAD + '<link name="${1/0}"/></robot>')
    outer = write(tmp_path / 'outer.xacro', XACRO_HEAD + '<xacro:include filename='
                  '"inner.xacro"/></robot>')
    with pytest.raises(lm.URDFError, match=f'{inner} \\(included from {outer}\\): xacro failed'):
        lm.load_urdf(outer)
    missing = write(tmp_path / 'missing.xacro', XACRO_HEAD + '<xacro:include filename='
                    '"nothere.xacro"/></robot>')
    with pytest.raises(lm.URDFError, match=r'missing\.xacro: xacro failed: .*nothere\.xacro'):
        lm.load_urdf(missing)
    with pytest.raises(lm.URDFError, match=r'nofile\.xacro: no such xacro file'):
        lm.load_urdf(str(tmp_path / 'nofile.xacro'))
    broken = write(tmp_path / 'broken.xacro', XACRO_HEAD + '<link name="a"></robot>')
    with pytest.raises(lm.URDFError, match=r'broken\.xacro: malformed XML'):
        lm.load_urdf(broken)
    find = write(tmp_path / 'find.urdf.xacro', XACRO_HEAD + '<xacro:include filename='
                 '"$(find some_robot_description)/urdf/arm.xacro"/></robot>')
    monkeypatch.delenv('AMENT_PREFIX_PATH', raising=False)       # no ROS at all
    with pytest.raises(lm.URDFError, match=r"find\.urdf\.xacro: \$\(find \.\.\.\) cannot "
                                           r"resolve package 'some_robot_description'"):
        lm.load_urdf(find)
    monkeypatch.setenv('AMENT_PREFIX_PATH', str(tmp_path))       # ROS, package not there
    with pytest.raises(lm.URDFError, match=r"find\.urdf\.xacro: .*'some_robot_description'"):
        lm.load_urdf(find)


def test_unexpanded_xacro_in_a_plain_urdf_says_so(tmp_path):
    """``${...}``, ``$(...)`` and xacro elements in URDF text: the message says xacro, how
    to expand it, and names the joint or link (today: could not convert string to float)."""
    with pytest.raises(lm.URDFError, match=r"<string>: joint 'j1': origin xyz='\$\{L\} 0 0' "
                                           r'is an unexpanded expression; this looks like an '
                                           r'unexpanded xacro file: expand it'):
        lm.load_urdf(chain('<origin xyz="${L} 0 0"/>' + LIMIT))
    mesh = ('<visual><geometry><mesh filename="$(find arm)/meshes/a.stl"/></geometry>'
            '</visual>')
    with pytest.raises(lm.URDFError, match=r"^robot_description: link 'arm': mesh filename="
                                           r"'\$\(find arm\)/meshes/a\.stl' is an unexpanded"):
        lm.load_urdf_string(chain(inertial=INERTIAL + mesh), source='robot_description')
    macro = XACRO_HEAD + '<xacro:property name="L" value="1"/><link name="a"/></robot>'
    with pytest.raises(lm.URDFError, match=r'<xacro:property> element; this looks like'):
        lm.load_urdf(macro)
    with pytest.raises(lm.URDFError, match=r'malformed XML: unbound prefix.*looks like an '
                                           'unexpanded xacro'):
        lm.load_urdf('<robot name="r"><xacro:property name="L" value="1"/></robot>')
    path = write(tmp_path / 'robot.urdf', chain('<origin xyz="0 0 ${L}"/>' + LIMIT))
    with pytest.raises(lm.URDFError, match=r"robot\.urdf: joint 'j1': origin xyz="):
        lm.load_urdf(path)


# -- text from outside ----------------------------------------------------------------------


def test_load_urdf_string_never_takes_text_for_a_path(monkeypatch):
    """Paths, empty text and prose sent as a robot description are 'not URDF XML' naming the
    source, and nothing is opened or looked up; a real URDF loads with opening refused."""
    lm.load_urdf_string(chain())   # warm up: compiled helpers come from the numba cache
    touched = []

    def refuse(name):
        def call(*args, **kwargs):
            touched.append((name, args[:1]))
            raise OSError(f'{name} refused by the test')
        return call

    bad = ['/etc/passwd', '/proc/self/mem', 'liemb_arm7', os.path.join(URDF_DIR,
           'liemb_arm7.urdf'), '', '   \n', 'hello <robot/>', b'/etc/passwd',
           '<!-- a comment that never ends <robot/>', '<?xml version="1.0"', '<1/>']
    xml = '\ufeff <?xml version="1.0"?>\n<!-- made by hand -->\n' + chain()
    with monkeypatch.context() as patch:
        for owner, name in ((builtins, 'open'), (io, 'open'), (os, 'open'),
                            (os.path, 'isfile'), (os.path, 'exists'), (os, 'listdir')):
            patch.setattr(owner, name, refuse(name))
        errors = []
        for text in bad:
            try:
                lm.load_urdf_string(text, source='/robot_description')
            except lm.URDFError as exc:
                errors.append(str(exc))
        models = [lm.load_urdf_string(text, source='topic')
                  for text in (xml, xml.encode('utf-8'))]
    assert not touched
    assert len(errors) == len(bad)
    assert all(e.startswith('/robot_description: not URDF XML') for e in errors), errors
    assert all(m.source == 'topic' and m.joint_names == ['j1'] for m in models)
    with pytest.raises(lm.URDFError, match=r'^<string>: expected URDF XML text .* got int'):
        lm.load_urdf_string(42)


def test_load_urdf_string_is_load_urdf_of_the_same_text():
    """The shipped arm from its text or from its file: the same model."""
    path = os.path.join(URDF_DIR, 'liemb_arm7.urdf')
    with open(path, encoding='utf-8') as f:
        text = f.read()
    from_text = lm.load_urdf_string(text, source='arm')
    assert_same_model(from_text, lm.load_urdf(path), atol=0)
    assert_same_model(lm.load_urdf(text), from_text, atol=0)       # XML str, as before
    assert_same_model(lm.load_urdf(text.encode()), from_text, atol=0)  # bytes, as before
    from pathlib import Path
    assert_same_model(lm.load_urdf(Path(path)), from_text, atol=0)  # PathLike, as before
    assert lm.load_urdf_string is core_model.load_urdf_string


def test_external_entities_are_refused(tmp_path):
    """A DOCTYPE that pulls in a file fails as malformed XML; nothing is read."""
    secret = tmp_path / 'secret.txt'
    secret.write_text('top secret')
    xml = (f'<!DOCTYPE robot [<!ENTITY leak SYSTEM "file://{secret}">]>'
           '<robot name="&leak;"><link name="a"/></robot>')
    with pytest.raises(lm.URDFError, match='topic: malformed XML: .*external entity'):
        lm.load_urdf_string(xml, source='topic')
    inline = '<!DOCTYPE robot [<!ENTITY n "inline">]><robot name="&n;"><link name="a"/></robot>'
    assert lm.load_urdf_string(inline).name == 'inline'


# -- bad bytes and numbers ------------------------------------------------------------------


def test_not_utf8_names_the_source_and_the_byte(tmp_path):
    """Invalid bytes in a file, in bytes, or as lone surrogates in a str: the source and the
    byte offset."""
    good = chain().encode('utf-8')
    at = good.index(b'arm')
    bad = good[:at] + b'\xff' + good[at + 1:]
    path = tmp_path / 'latin.urdf'
    path.write_bytes(bad)
    # a file's error names the byte offset but quotes nothing of the file (any file may be
    # named as a robot): the size and kind instead
    in_file = (f'^{path}: not UTF-8 text at byte {at}: not a URDF file: .* the file holds '
               f'{len(bad)} bytes of binary data \\(its content is not shown\\)$')
    with pytest.raises(lm.URDFError, match=in_file):
        lm.load_urdf(str(path))
    with pytest.raises(lm.URDFError, match=in_file):
        resources.read_robot_description(str(path))
    with pytest.raises(lm.URDFError, match=f'^<string>: not UTF-8 text at byte {at} '):
        lm.load_urdf(bad)
    with pytest.raises(lm.URDFError, match=f'^topic: not UTF-8 text at byte {at} '):
        lm.load_urdf_string(bad, source='topic')
    text = bad.decode('utf-8', errors='surrogateescape')   # how undecodable bytes reach a str
    with pytest.raises(lm.URDFError, match=f'^topic: not UTF-8 text at byte {at} '):
        lm.load_urdf_string(text, source='topic')
    multibyte = chain().replace('name="r"', 'name="ré"')      # offsets count bytes, not chars
    text = multibyte.replace('arm', '\udcffrm', 1)
    at = multibyte.encode('utf-8').index(b'arm')
    with pytest.raises(lm.URDFError, match=f'^topic: not UTF-8 text at byte {at} '):
        lm.load_urdf_string(text, source='topic')


INERTIA = 'ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"'
BAD_NUMBERS = [
    ('rpy inf', chain('<origin rpy="inf 0 0"/>' + LIMIT), "joint 'j1': origin rpy='inf 0 0'"),
    ('rpy nan', chain('<origin rpy="0 nan 0"/>' + LIMIT), "joint 'j1': origin rpy='0 nan 0'"),
    ('rpy text', chain('<origin rpy="0 0 half"/>' + LIMIT), "joint 'j1': origin rpy="),
    ('xyz short', chain('<origin xyz="1 2"/>' + LIMIT), "joint 'j1': origin xyz='1 2' must be "
     '3 finite numbers'),
    ('xyz long', chain('<origin xyz="1 2 3 4"/>' + LIMIT), "joint 'j1': origin xyz="),
    ('xyz -inf', chain('<origin xyz="1 -inf 3"/>' + LIMIT), "joint 'j1': origin xyz="),
    ('axis inf', chain('<axis xyz="inf 0 0"/>' + LIMIT), "joint 'j1': axis xyz='inf 0 0'"),
    ('axis short', chain('<axis xyz="0 1"/>' + LIMIT), "joint 'j1': axis xyz='0 1'"),
    ('lower nan', chain('<limit lower="nan" upper="1" effort="1" velocity="1"/>'),
     "joint 'j1': limit lower='nan' must be a finite number"),
    ('upper text', chain('<limit lower="0" upper="pi" effort="1" velocity="1"/>'),
     "joint 'j1': limit upper='pi'"),
    ('velocity inf', chain('<limit lower="0" upper="1" effort="1" velocity="inf"/>'),
     "joint 'j1': limit velocity='inf'"),
    ('effort two', chain('<limit lower="0" upper="1" effort="1 2" velocity="1"/>'),
     "joint 'j1': limit effort='1 2'"),
    ('damping', chain(LIMIT + '<dynamics damping="x"/>'), "joint 'j1': dynamics damping='x'"),
    ('mass inf', chain(inertial=f'<inertial><mass value="inf"/><inertia ixx="0.1" {INERTIA}/>'
                       '</inertial>'), "link 'arm': inertial/mass value='inf'"),
    ('mass text', chain(inertial=f'<inertial><mass value="1kg"/><inertia ixx="0.1" {INERTIA}/>'
                        '</inertial>'), "link 'arm': inertial/mass value='1kg'"),
    ('inertia nan', chain(inertial=f'<inertial><mass value="1"/><inertia ixx="nan" {INERTIA}/>'
                          '</inertial>'), "link 'arm': inertial/inertia ixx='nan'"),
    ('inertia text', chain(inertial=f'<inertial><mass value="1"/><inertia ixx="1e" {INERTIA}/>'
                           '</inertial>'), "link 'arm': inertial/inertia ixx='1e'"),
    ('inertia missing', chain(inertial='<inertial><mass value="1"/><inertia ixx="0.1"/>'
                              '</inertial>'), "link 'arm': inertial/inertia: Required attribute"),
    ('inertial origin', chain(inertial='<inertial><origin xyz="0 0"/><mass value="1"/>'
                              f'<inertia ixx="0.1" {INERTIA}/></inertial>'),
     "link 'arm': inertial/origin xyz='0 0'"),
    ('box size', chain(inertial=INERTIAL + '<collision><geometry><box size="1 1"/></geometry>'
                       '</collision>'), "link 'arm': collision/geometry/box size='1 1'"),
]


@pytest.mark.parametrize('case,xml,message', BAD_NUMBERS, ids=[b[0] for b in BAD_NUMBERS])
def test_bad_numbers_name_the_link_or_joint(case, xml, message, tmp_path):
    """Non-finite, unparseable or wrongly sized numbers: URDFError naming the element, from
    text and from a file."""
    with pytest.raises(lm.URDFError, match='^<string>: ' + message.replace('(', r'\(')):
        lm.load_urdf(xml)
    path = write(tmp_path / 'bad.urdf', xml)
    with pytest.raises(lm.URDFError, match=f'^{path}: {message}'):
        lm.load_urdf(path)


# -- long chains ----------------------------------------------------------------------------


def chain_urdf(n, step=(0.1, 0.0, 0.02)):
    """Return a chain of ``n`` revolute joints about z, each ``step`` from its parent."""
    x, y, z = step
    parts = ['<robot name="chain"><link name="l0"/>']
    for i in range(1, n + 1):
        parts.append(f'<link name="l{i}">{INERTIAL}</link>'
                     f'<joint name="j{i}" type="continuous"><parent link="l{i - 1}"/>'
                     f'<child link="l{i}"/><origin xyz="{x} {y} {z}"/><axis xyz="0 0 1"/>'
                     '</joint>')
    return ''.join(parts) + '</robot>'


def test_a_2000_link_chain_loads_and_has_its_closed_form_pose(rng):
    """Deeper than Python's recursion limit: loads (RecursionError before), bodies in chain
    order, and the last link's pose is the planar closed form R_z(sum q), p = sum of the
    rotated steps."""
    n = 2000
    m = lm.load_urdf_string(chain_urdf(n), source='chain')
    assert m.nq == m.nb == n and m.link_names == [f'l{i}' for i in range(n + 1)]
    np.testing.assert_array_equal(m.parent, np.arange(-1, n - 1))
    q = rng.uniform(-0.01, 0.01, n)
    phi = np.concatenate(([0.0], np.cumsum(q)))      # heading of frame i, i = 0..n
    expected = np.eye(4)
    expected[:3, :3] = [[math.cos(phi[n]), -math.sin(phi[n]), 0],
                        [math.sin(phi[n]), math.cos(phi[n]), 0], [0, 0, 1]]
    expected[:3, 3] = [0.1 * np.cos(phi[:n]).sum(), 0.1 * np.sin(phi[:n]).sum(), 0.02 * n]
    np.testing.assert_allclose(lm.link_pose(m, q, f'l{n}'), expected, atol=1e-9)


def test_topology_walk_is_iterative_and_keeps_declaration_order():
    """A 10 000-link chain walks without recursion; a branching tree comes out depth-first
    with children in declaration order (the body order of every existing robot)."""
    def desc(edges, names):
        links = [LinkDesc(n) for n in names]
        joints = [JointDesc(f'{p}-{c}', 'revolute', p, c, np.eye(4), np.array([0, 0, 1.0]))
                  for p, c in edges]
        return RobotDescription('t', '<test>', links, joints)
    n = 10000
    names = [f'l{i}' for i in range(n + 1)]
    root, order = assembly._topology(desc([(names[i], names[i + 1]) for i in range(n)], names))
    assert root == 'l0' and [j.child for j in order] == names[1:]
    # base -> a, b (declared in that order); a -> a2, a1; b -> b1; a1 -> x
    edges = [('base', 'b'), ('a', 'a2'), ('b', 'b1'), ('a1', 'x'), ('base', 'a'), ('a', 'a1')]
    names = ['base', 'a', 'b', 'a1', 'a2', 'b1', 'x']
    root, order = assembly._topology(desc(edges, names))
    assert root == 'base' and [j.child for j in order] == ['b', 'b1', 'a', 'a2', 'a1', 'x']


# -- read_robot_description -----------------------------------------------------------------


def test_read_robot_description_of_files_and_shipped_names(tmp_path):
    """A shipped name gives its file's text; a xacro file its expansion (arguments applied);
    the text loads into the model the file gives."""
    text, path = resources.read_robot_description('liemb_arm7')
    assert path == resources.robot_path('liemb_arm7') and path.endswith('liemb_arm7.urdf')
    with open(path, encoding='utf-8') as f:
        assert text == f.read()
    text, path = resources.read_robot_description(ARM_XACRO, xacro_args='prefix:=r_')
    assert path == ARM_XACRO and '${' not in text and 'xacro:' not in text.split('-->')[-1]
    assert_same_model(lm.load_urdf_string(text, source=path),
                      lm.load_urdf(ARM_XACRO, xacro_args={'prefix': 'r_'}), atol=0)
    with pytest.raises(FileNotFoundError, match="'no_such_robot' is neither a URDF or xacro "
                                                'file nor a shipped robot .*liemb_arm7'):
        resources.read_robot_description('no_such_robot')
    if resources.example_robot_data_dirs():   # a name near example-robot-data's: its stems
        with pytest.raises(FileNotFoundError, match='example-robot-data has .*ur5_robot'):
            resources.robot_path('ur5')
    with pytest.raises(lm.URDFError, match='notes.urdf: not a URDF file: .* holds 10 bytes of '
                                           'UTF-8 text') as exc:
        resources.read_robot_description(write(tmp_path / 'notes.urdf', 'just notes'))
    assert 'just' not in str(exc.value)


def test_shipped_xacro_robots_are_found_by_name(tmp_path, monkeypatch):
    """shipped_robots lists .urdf, .urdf.xacro and .xacro files by name; robot_path and
    read_robot_description find them (a .urdf first)."""
    share = tmp_path / 'share'
    (share / 'urdf').mkdir(parents=True)
    shutil.copy(ARM_XACRO, share / 'urdf' / 'arm.urdf.xacro')
    shutil.copy(os.path.join(DATA, 'xacro_arm_parts.xacro'), share / 'urdf')
    shutil.copy(ARM_URDF, share / 'urdf' / 'plain.urdf')
    shutil.copy(ARM_XACRO, share / 'urdf' / 'plain.urdf.xacro')
    monkeypatch.setattr(resources, 'share_dirs', lambda: [str(share)])
    assert resources.shipped_robots() == ['arm', 'plain', 'xacro_arm_parts']
    assert resources.robot_path('arm') == str(share / 'urdf' / 'arm.urdf.xacro')
    assert resources.robot_path('arm.urdf.xacro') == str(share / 'urdf' / 'arm.urdf.xacro')
    assert resources.robot_path('plain') == str(share / 'urdf' / 'plain.urdf')
    text, path = resources.read_robot_description('arm', xacro_args={'payload': '1'})
    assert path.endswith('arm.urdf.xacro')
    assert lm.load_urdf_string(text).mass == pytest.approx(4.0)


def test_example_robot_data_robots_by_name():
    """A robot argument names an example-robot-data URDF where the package is installed."""
    from conftest import erd_path
    from liemb_ros.core import resources
    for name, rel in (('solo12', 'solo12'), ('panda', 'panda'), ('ur5_robot', 'ur5')):
        assert os.path.samefile(resources.robot_path(name), erd_path(rel)), name
    assert resources.robot_path('liemb_arm7').endswith('liemb_arm7.urdf')   # ours first
    with pytest.raises(FileNotFoundError, match='example-robot-data'):
        resources.robot_path('no_such_robot')
