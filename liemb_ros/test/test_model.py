"""URDF -> Model: real robots, joint types, mimic joints, bad input, frame invariance."""
import glob
import os
import warnings

import numpy as np
import pinocchio as pin
import pytest
from hypothesis import given, settings, strategies as st

import liemb_ros as lm
from liemb_ros.core.model import random_model
from liemb_ros.core.model.synthetic import random_pose
from conftest import SWAP, URDF_DIR, erd_path, erd_robots_dir

LIMIT = '<limit lower="-1" upper="1" effort="1" velocity="1"/>'
INERTIAL = ('<inertial><mass value="1"/>'
            '<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial>')


def robot(body, name='r'):
    return f'<robot name="{name}">{body}</robot>'


def chain(joint_type='revolute', extra='', child_inertial=INERTIAL):
    return robot(f'<link name="base"/><link name="arm">{child_inertial}</link>'
                 f'<joint name="j1" type="{joint_type}"><parent link="base"/>'
                 f'<child link="arm"/>{extra}</joint>')


def all_erd_urdfs():
    return sorted(glob.glob(os.path.join(erd_robots_dir(), '**', '*.urdf'), recursive=True))


def test_every_example_robot_data_urdf_loads():
    """Real robots' files load (with warnings for their physically odd inertials) and have
    Pinocchio's number of velocity coordinates; the one empty file is refused clearly."""
    paths = all_erd_urdfs()
    assert len(paths) > 60
    for path in paths:
        if path.endswith(os.path.join('ur_description', 'urdf', 'ur3.urdf')):
            with pytest.raises(lm.URDFError, match='ur3.urdf: the robot has no links'):
                lm.load_urdf(path)
            continue
        with warnings.catch_warnings():
            warnings.simplefilter('ignore', lm.URDFWarning)
            model = lm.load_urdf(path)
        assert model.nv == pin.buildModelFromUrdf(path).nv, path


@pytest.mark.parametrize('name', ['ur5', 'panda', 'solo12', 'double_pendulum'])
def test_inertias_and_topology_match_pinocchio(name):
    path = erd_path(name)
    model = lm.load_urdf(path)
    pm = pin.buildModelFromUrdf(path)
    names = [pm.names[i] for i in range(1, pm.njoints)]
    assert sorted(names) == sorted(model.joint_names)
    for b, jname in enumerate(model.joint_names):
        i = pm.getJointId(jname)
        np.testing.assert_allclose(model.inertia[b], SWAP @ pm.inertias[i].matrix() @ SWAP,
                                   atol=1e-12, err_msg=jname)
        parent = model.parent[b]
        pin_parent = pm.parents[i]
        assert ((parent < 0 and pin_parent == 0)
                or pm.names[pin_parent] == model.joint_names[parent])
        np.testing.assert_allclose(model.A_rel[b], pm.jointPlacements[i].homogeneous,
                                   atol=1e-14)
    assert model.mass == pytest.approx(sum(inert.mass for inert in pm.inertias), rel=1e-12)


def test_panda_mimic_default_and_coupled():
    path = erd_path('panda')
    model = lm.load_urdf(path)
    assert model.nq == 9 and 'panda_finger_joint2' in model.joint_names
    coupled = lm.load_urdf(path, mimic='couple')
    assert coupled.nq == 8 and 'panda_finger_joint2' not in coupled.joint_names
    lead, mult, off = coupled.mimic['panda_finger_joint2']
    assert lead == 'panda_finger_joint1'
    q8 = coupled.random_configuration(1)
    q9 = np.append(q8, mult * q8[-1] + off)
    for link in ('panda_leftfinger', 'panda_rightfinger', 'panda_hand'):
        np.testing.assert_allclose(lm.link_pose(coupled, q8, link),
                                   lm.link_pose(model, q9, link), atol=1e-14)
    # coupled Jacobian column = leader column + multiplier * follower column
    J9 = lm.jacobian(model, q9, 'panda_rightfinger', 'spatial')
    J8 = lm.jacobian(coupled, q8, 'panda_rightfinger', 'spatial')
    np.testing.assert_allclose(J8[:, -1], J9[:, 7] + mult * J9[:, 8], atol=1e-14)


def test_mimic_chain_and_unknown_leader():
    body = ('<link name="a"/><link name="b"/><link name="c"/><link name="d"/>'
            f'<joint name="j1" type="revolute"><parent link="a"/><child link="b"/>{LIMIT}</joint>'
            '<joint name="j2" type="revolute"><parent link="b"/><child link="c"/>'
            f'<mimic joint="j1" multiplier="2" offset="0.1"/>{LIMIT}</joint>'
            '<joint name="j3" type="revolute"><parent link="c"/><child link="d"/>'
            f'<mimic joint="j2" multiplier="-1" offset="0.5"/>{LIMIT}</joint>')
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', lm.URDFWarning)
        m = lm.load_urdf(robot(body), mimic='couple')
        assert m.joint_names == ['j1']
        assert m.mimic['j3'] == ('j1', -2.0, pytest.approx(0.4))
        bad = robot(body.replace('<mimic joint="j1"', '<mimic joint="ghost"'))
        with pytest.raises(lm.URDFError, match="joint 'j2' mimics joint 'ghost'"):
            lm.load_urdf(bad, mimic='couple')
        with pytest.warns(lm.URDFWarning, match="joint 'j2' mimics joint 'ghost'"):
            assert lm.load_urdf(bad).nq == 3


def test_continuous_has_no_limits_and_missing_axis_defaults_to_x():
    m = lm.load_urdf(chain('continuous', '<limit effort="3" velocity="2"/>'))
    assert m.lower[0] == -np.inf and m.upper[0] == np.inf
    assert m.effort_limit[0] == 3 and m.velocity_limit[0] == 2
    np.testing.assert_array_equal(m.X[0], [1, 0, 0, 0, 0, 0])


def test_planar_joint_stays_in_its_plane(rng):
    m = lm.load_urdf(chain('planar', '<origin xyz="0.1 0.2 0.3" rpy="0.3 -0.2 1.0"/>'
                                     '<axis xyz="1 1 0"/>'))
    assert m.joint_names == ['j1_x', 'j1_y', 'j1_theta'] and m.nb == 3
    n = np.array([1.0, 1.0, 0.0]) / np.sqrt(2)
    C0 = lm.link_pose(m, np.zeros(3), 'arm')
    for q in rng.uniform(-3, 3, (20, 3)):
        C = lm.link_pose(m, q, 'arm')
        rel = np.linalg.inv(C0) @ C           # motion relative to the joint frame
        np.testing.assert_allclose(rel[:3, :3] @ n, n, atol=1e-14)   # normal preserved
        assert abs(rel[:3, 3] @ n) < 1e-14                             # no motion off-plane


def test_floating_joint_makes_an_se3_base(rng):
    body = ('<link name="world"/><link name="base">' + INERTIAL + '</link>'
            '<link name="arm">' + INERTIAL + '</link>'
            '<joint name="free" type="floating"><parent link="world"/><child link="base"/>'
            '</joint><joint name="j1" type="revolute"><parent link="base"/>'
            f'<child link="arm"/><origin xyz="0 0 0.2"/>{LIMIT}</joint>')
    m = lm.load_urdf(robot(body))
    assert m.floating and m.base_link == 'base' and m.nq == 1 and m.nv == 7
    base = random_pose(rng)
    np.testing.assert_allclose(lm.link_pose(m, [0.0], 'base', base_pose=base), base)
    assert not lm.load_urdf(robot(body), floating_base=False).floating
    solo = lm.load_urdf(erd_path('solo12'), floating_base=True)
    assert solo.floating and solo.nv == 18


BAD = [
    ('malformed', '<robot name="r"><link name="a"></robot>', 'malformed XML'),
    ('unknown type', chain('spherical'), "joint 'j1' has unknown type 'spherical'"),
    ('zero axis', chain('revolute', '<axis xyz="0 0 0"/>' + LIMIT), "joint 'j1': axis .* zero"),
    ('negative mass', chain(child_inertial='<inertial><mass value="-2"/><inertia ixx="1" '
                            'ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>'),
     "link 'arm': mass must be positive"),
    ('no inertia tensor', chain(child_inertial='<inertial><mass value="2"/></inertial>'),
     "link 'arm': <inertial> without <inertia"),
    ('nan', chain('revolute', '<origin xyz="0 nan 0"/>' + LIMIT), "joint 'j1': origin"),
    ('unknown child', robot('<link name="a"/><joint name="j" type="fixed"><parent link="a"/>'
                            '<child link="zz"/></joint>'), "joint 'j' names child link 'zz'"),
    ('two roots', robot('<link name="a"/><link name="b"/>'), r'several root links \(a, b\)'),
    ('cycle', robot('<link name="a"/><link name="b"/><link name="c"/>'
                    '<joint name="j1" type="fixed"><parent link="a"/><child link="b"/></joint>'
                    '<joint name="j2" type="fixed"><parent link="b"/><child link="c"/></joint>'
                    '<joint name="j3" type="fixed"><parent link="c"/><child link="b"/></joint>'),
     "link 'b' is the child of joints 'j1' and 'j3'"),
    ('closed cycle', robot('<link name="a"/><link name="b"/>'
                           '<joint name="j1" type="fixed"><parent link="a"/><child link="b"/>'
                           '</joint><joint name="j2" type="fixed"><parent link="b"/>'
                           '<child link="a"/></joint>'), 'form a cycle'),
    ('limits reversed', chain('revolute', '<limit lower="1" upper="-1" effort="1" '
                              'velocity="1"/>'), "joint 'j1': limit lower=1.0 is above"),
    ('duplicate link', robot('<link name="a"/><link name="a"/>'), "link 'a' is defined twice"),
    ('nested floating', robot('<link name="a"/><link name="b"/><link name="c"/>'
                              f'<joint name="j1" type="revolute"><parent link="a"/>'
                              f'<child link="b"/>{LIMIT}</joint><joint name="f" '
                              'type="floating"><parent link="b"/><child link="c"/></joint>'),
     "floating joint 'f' connects 'b' and 'c'"),
    ('not a robot', '<model name="x"/>', 'root element is <model>'),
]


@pytest.mark.parametrize('case,xml,message', BAD, ids=[b[0] for b in BAD])
def test_bad_urdf_messages_name_the_culprit(case, xml, message):
    with pytest.raises(lm.URDFError, match=message):
        lm.load_urdf(xml)


def test_bad_file_names_the_file(tmp_path):
    with pytest.raises(lm.URDFError, match='no such URDF file'):
        lm.load_urdf(str(tmp_path / 'missing.urdf'))
    p = tmp_path / 'broken.urdf'
    p.write_text(chain('prismatic', '<axis xyz="0 0 0"/>' + LIMIT))
    with pytest.raises(lm.URDFError, match=r"broken\.urdf: joint 'j1'"):
        lm.load_urdf(p)


@pytest.mark.parametrize('inertia,message', [
    ('ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="3"', 'triangle inequality'),
    ('ixx="1" ixy="2" ixz="0" iyy="1" iyz="0" izz="1"', 'not positive semi-definite'),
])
def test_impossible_inertia_warns_or_raises_when_strict(inertia, message):
    xml = chain(child_inertial=f'<inertial><mass value="1"/><inertia {inertia}/></inertial>')
    with pytest.raises(lm.URDFError, match=f"link 'arm': inertia .*{message}"):
        lm.load_urdf(xml, strict=True)
    with pytest.warns(lm.URDFWarning, match=f"link 'arm': inertia .*{message}"):
        lm.load_urdf(xml)


def test_non_unit_axis_is_normalised_with_warning():
    with pytest.warns(lm.URDFWarning, match="joint 'j1': axis .* not a unit vector"):
        m = lm.load_urdf(chain('prismatic', '<axis xyz="0 0 2"/>' + LIMIT))
    np.testing.assert_array_equal(m.X[0], [0, 0, 0, 0, 0, 1])


@settings(deadline=None, max_examples=40)
@given(seed=st.integers(0, 2**31 - 1), body=st.integers(0, 5))
def test_moving_a_body_frame_leaves_Y_and_link_poses_unchanged(seed, body):
    """
    [M18k] Remark 7: Y_i does not depend on where body frames are.

    docs/theory/conventions.md#joint-screws-and-the-robot-model.
    """
    rng = np.random.default_rng(seed)
    model = random_model(6, rng, branching=0.4)
    S = random_pose(rng)
    moved = model.moved_body_frame(body, S)
    np.testing.assert_allclose(moved.Y, model.Y, atol=1e-12)
    np.testing.assert_allclose(moved.A[body], model.A[body] @ S, atol=1e-12)
    q = rng.uniform(-3, 3, model.nq)
    np.testing.assert_allclose(lm.forward_kinematics(moved, q), lm.forward_kinematics(model, q),
                               atol=1e-12)
    # the body's own frame moved: C_i' = C_i S, and its kinetic energy is unchanged
    qd = rng.standard_normal(model.nq)
    Vb = lm.link_twist(model, q, qd, model.link_names[body + 1], 'body')
    C = lm.link_pose(model, q, model.link_names[body + 1])
    np.testing.assert_allclose(moved.X[body], np.linalg.solve(
        _Ad(S), model.X[body]), atol=1e-12)
    V2 = np.linalg.solve(_Ad(S), Vb)
    np.testing.assert_allclose(V2 @ moved.inertia[body] @ V2, Vb @ model.inertia[body] @ Vb,
                               rtol=1e-12)
    assert C.shape == (4, 4)


def _Ad(C):
    R, r = C[:3, :3], C[:3, 3]
    h = np.array([[0, -r[2], r[1]], [r[2], 0, -r[0]], [-r[1], r[0], 0]])
    return np.block([[R, np.zeros((3, 3))], [h @ R, R]])


def test_model_cannot_drift_and_replace_builds_a_new_one():
    """Every array read-only (gravity included); replace() gives a new model, single = batch."""
    model = lm.load_urdf(os.path.join(URDF_DIR, 'liemb_arm7.urdf'))
    for name, value in vars(model).items():
        if isinstance(value, np.ndarray):
            assert not value.flags.writeable, name
    with pytest.raises(ValueError):
        model.gravity[:] = (0.0, 0.0, -1.62)
    moon = model.replace(gravity=(0.0, 0.0, -1.62))
    q = model.random_configuration(3, size=4)
    g_earth, g_moon = lm.gravity_torques(model, q), lm.gravity_torques(moon, q)
    np.testing.assert_allclose(g_moon, g_earth * (1.62 / 9.81), rtol=1e-12, atol=1e-14)
    for k in range(len(q)):   # a single call reads the same model as the batch
        np.testing.assert_array_equal(lm.gravity_torques(moon, q[k]), g_moon[k])
    np.testing.assert_array_equal(model.gravity, (0.0, 0.0, -9.81))
    with pytest.raises(ValueError, match='unknown'):
        model.replace(colour='red')


def test_packed_layout_reads_back_every_kernel_array():
    """The packed arrays of single calls unpack (named offsets) to the batch kernels' Tree."""
    from liemb_ros.core._kernels import layout
    rng = np.random.default_rng(4)
    for model in (random_model(6, rng, branching=0.5), random_model(3, rng, floating=True),
                  lm.load_urdf(erd_path('panda'))):
        assert model.packed_int[layout.NB] == model.nb
        assert model.packed_int[layout.NL] == len(model.link_names)
        got = layout.unpack(model.packed_int, model.packed_float)
        assert type(got) is layout.Tree and type(model.tree) is layout.Tree
        for name in layout.Tree._fields:
            # each field is the model's array of that name (nbase: 6 for a free flyer;
            # inertia_scale: the largest |entry| of the bodies' spatial inertias)
            if name == 'nbase':
                want = 6 if model.floating else 0
            elif name == 'inertia_scale':
                want = np.abs(model.inertia).max()
            else:
                want = getattr(model, name)
            np.testing.assert_array_equal(getattr(got, name), want)
            np.testing.assert_array_equal(getattr(model.tree, name), want)
            assert np.shape(getattr(got, name)) == np.shape(want)


def test_joint_indices_is_a_read_only_view_of_joint_index():
    model = lm.load_urdf(erd_path('ur5'))
    index = model.joint_indices
    assert dict(index) == {n: model.joint_index(n) for n in model.joint_names}
    assert list(index.values()) == list(range(model.nq))
    with pytest.raises(TypeError):
        index['elbow_joint'] = 0
