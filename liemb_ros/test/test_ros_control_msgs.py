"""
The local control_msgs build (tools/ros/control_msgs) is type-identical to upstream's.

``JointTrajectoryControllerState`` must be upstream's Kilted / Rolling definition
(ros-controls/control_msgs tag 6.8.0, ``control_msgs/msg/JointTrajectoryControllerState.msg``,
the same fields in every 6.x tag): the same fields in the same order with the same types, so
that its RIHS01 type hash (which DDS advertises, and which ``ros2 topic echo``, rosbag2 and
PlotJuggler on a real ROS install check) is upstream's.  The hash is recomputed here from the
definition written below (REP-2011: SHA-256 of the type description as JSON, without default
values), with our own code, which is first checked against hashes that upstream's tools
generated: the older definition (before ``speed_scaling_factor``) as built from
ros-controls/control_msgs in a public colcon workspace, and trajectory_msgs' own.

The FollowJointTrajectory action (6.8.0, ``control_msgs/action/FollowJointTrajectory.action``):
its Goal and Result and JointComponentTolerance, unchanged since that workspace's build, have
its hashes; the Feedback (``index`` fields added in 6.3.0) is checked field by field and by
the hash recomputed here.
"""
import copy
import hashlib
import json
import os
import sys

import pytest

from conftest import ros_importorskip

pytestmark = [pytest.mark.ros, pytest.mark.filterwarnings('ignore::DeprecationWarning:lark.*')]
rclpy, _ = ros_importorskip('rclpy', 'control_msgs.msg')

from control_msgs.msg import JointTrajectoryControllerState  # noqa: E402

TYPE = 'control_msgs/msg/JointTrajectoryControllerState'
JTP = 'trajectory_msgs/msg/JointTrajectoryPoint'
MDOF = 'trajectory_msgs/msg/MultiDOFJointTrajectoryPoint'
HEADER = 'std_msgs/msg/Header'
# type_description_interfaces/msg/FieldType ids
NESTED, DOUBLE, STRING_SEQUENCE = 1, 11, 17 + 144
# ros-controls/control_msgs 6.8.0 (commit 13dacdd8):
# control_msgs/msg/JointTrajectoryControllerState.msg
UPSTREAM_FIELDS = [
    ('header', NESTED, HEADER),
    ('joint_names', STRING_SEQUENCE, ''),
    ('reference', NESTED, JTP),
    ('feedback', NESTED, JTP),
    ('error', NESTED, JTP),
    ('output', NESTED, JTP),
    ('multi_dof_joint_names', STRING_SEQUENCE, ''),
    ('multi_dof_reference', NESTED, MDOF),
    ('multi_dof_feedback', NESTED, MDOF),
    ('multi_dof_error', NESTED, MDOF),
    ('multi_dof_output', NESTED, MDOF),
    ('speed_scaling_factor', DOUBLE, ''),
]
# The hash of the definition before speed_scaling_factor (control_msgs 4.x-5.x), as upstream's
# rosidl generated it: github.com/saahu27/aprs, aprs_ws/.../control_msgs/msg/detail/
# joint_trajectory_controller_state__description.c (control_msgs built from source).
OLD_UPSTREAM_HASH = 'RIHS01_6cb9ac0858fc11b54bd6c0a46f032ea243c168561822' '76d8eb0875f6ce6a8335'
# trajectory_msgs/msg/JointTrajectoryPoint's hash in the same generated file
JTP_UPSTREAM_HASH = 'RIHS01_de8907036d8bd45aac6f30cc9044a3d4a329c42cbf719aff7d95a584cfa532d7'
# the same workspace: control_msgs/action/detail/follow_joint_trajectory__description.c and
# control_msgs/msg/detail/joint_component_tolerance__description.c
ACTION = 'control_msgs/action/FollowJointTrajectory'
UPSTREAM_ACTION_HASHES = {
    ACTION + '_Goal':
        'RIHS01_8a9060704b269608f5a340934cc26e66869dd14bdac29e2e7fd9ec8b9882d205',
    ACTION + '_Result':
        'RIHS01_8002e99ed2c14c6faa522f2a93c26d744c5982f254f9e98ff9c6f19789bdb220',
    'control_msgs/msg/JointComponentTolerance':
        'RIHS01_739ea7566931944d33830fa10f1bf5e7a7fbdc3172bce7a7eaac642bd6e3ffa4',
}
INT32 = 6
# ros-controls/control_msgs 6.8.0: control_msgs/action/FollowJointTrajectory.action, feedback
UPSTREAM_FEEDBACK = [
    ('header', NESTED, HEADER),
    ('joint_names', STRING_SEQUENCE, ''),
    ('desired', NESTED, JTP),
    ('actual', NESTED, JTP),
    ('error', NESTED, JTP),
    ('index', INT32, ''),
    ('multi_dof_joint_names', STRING_SEQUENCE, ''),
    ('multi_dof_desired', NESTED, MDOF),
    ('multi_dof_actual', NESTED, MDOF),
    ('multi_dof_error', NESTED, MDOF),
    ('multi_dof_index', INT32, ''),
]


def _share_json(name):
    pkg, kind, typ = name.split('/')
    path = os.path.join(sys.prefix, 'share', pkg, kind, typ + '.json')
    if not os.path.isfile(path):
        pytest.skip(f'{path} not installed')
    with open(path, encoding='utf-8') as f:
        return json.load(f)


def rihs01(description):
    """REP-2011 RIHS01 hash of a ``type_description_msg`` dict (default values are not hashed)."""
    d = copy.deepcopy(description)
    for td in [d['type_description'], *d['referenced_type_descriptions']]:
        for field in td['fields']:
            field.pop('default_value', None)
    text = json.dumps(d, ensure_ascii=True, allow_nan=False, indent=None,
                      separators=(', ', ': '), sort_keys=False)
    return 'RIHS01_' + hashlib.sha256(text.encode('utf-8')).hexdigest()


def description(fields, name=TYPE):
    """The type description of message ``name`` with ``fields`` (of the types used here)."""
    refs = {}
    for used in (HEADER, JTP, MDOF):
        d = _share_json(used)['type_description_msg']
        for td in [d['type_description'], *d['referenced_type_descriptions']]:
            refs[td['type_name']] = td
    top = {'type_name': name,
           'fields': [{'name': n, 'type': {'type_id': t, 'capacity': 0, 'string_capacity': 0,
                                           'nested_type_name': nested}, 'default_value': ''}
                      for n, t, nested in fields]}
    return {'type_description': top,
            'referenced_type_descriptions': [refs[k] for k in sorted(refs)]}


def test_hash_function_reproduces_upstream_hashes():
    jtp = _share_json(JTP)
    built = jtp['type_hashes'][0]['hash_string']
    assert rihs01(jtp['type_description_msg']) == built == JTP_UPSTREAM_HASH
    assert rihs01(description(UPSTREAM_FIELDS[:-1])) == OLD_UPSTREAM_HASH


def _types(fields):
    names = {STRING_SEQUENCE: 'sequence<string>', DOUBLE: 'double', INT32: 'int32'}
    return [(n, names.get(t) or nested.replace('/msg/', '/')) for n, t, nested in fields]


def test_fields_are_upstreams():
    fields = JointTrajectoryControllerState.get_fields_and_field_types()
    assert list(fields.items()) == _types(UPSTREAM_FIELDS)


def test_type_hash_is_upstreams():
    """The hash DDS advertises for our build = the hash of upstream's definition."""
    want = rihs01(description(UPSTREAM_FIELDS))
    built = _share_json(TYPE)
    assert built['type_hashes'][0] == {'type_name': TYPE, 'hash_string': want}
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    try:
        node = rclpy.create_node('liemb_test_control_msgs', context=ctx)
        node.create_publisher(JointTrajectoryControllerState, '~/controller_state', 1)
        infos = node.get_publishers_info_by_topic(
            node.resolve_topic_name('~/controller_state'))
        assert [(i.topic_type, str(i.topic_type_hash)) for i in infos] == [(TYPE, want)]
        node.destroy_node()
    finally:
        ctx.try_shutdown()


def test_follow_joint_trajectory_is_upstreams():
    action = pytest.importorskip('control_msgs.action')
    built = {h['type_name']: h['hash_string']
             for h in _share_json(ACTION)['type_hashes']}
    for name, want in UPSTREAM_ACTION_HASHES.items():
        assert built[name] == want, name
    fields = action.FollowJointTrajectory.Feedback.get_fields_and_field_types()
    assert list(fields.items()) == _types(UPSTREAM_FEEDBACK)
    feedback = ACTION + '_Feedback'
    assert built[feedback] == rihs01(description(UPSTREAM_FEEDBACK, feedback))
    result = action.FollowJointTrajectory.Result
    assert (result.SUCCESSFUL, result.INVALID_GOAL, result.INVALID_JOINTS,
            result.OLD_HEADER_TIMESTAMP, result.PATH_TOLERANCE_VIOLATED,
            result.GOAL_TOLERANCE_VIOLATED) == (0, -1, -2, -3, -4, -5)
