"""
The dynamics node's lean message path (``liemb_ros.ros.wire``) against rclpy's own
serialisation: what it reads from CDR bytes is what ``deserialize_message`` reads, what it
writes deserialises to the message built field by field.
"""
import math
import struct

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='ROS 2 (rclpy) is not installed')
from hypothesis import given, settings, strategies as st  # noqa: E402
from rclpy.serialization import deserialize_message, serialize_message  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray, MultiArrayDimension  # noqa: E402

from liemb_ros.ros.wire import JointStateReader, Template  # noqa: E402

NAME = st.text(min_size=0, max_size=20)
FLOAT = st.floats(allow_nan=True, allow_infinity=True, width=64)


def _bits(values):
    """Values as their IEEE bit patterns (so that NaN equals NaN)."""
    return [struct.pack('<d', v) for v in values]


@st.composite
def joint_states(draw):
    names = draw(st.lists(NAME, max_size=14))
    n = len(names)
    msg = JointState(name=names)
    msg.header.frame_id = draw(st.sampled_from(['', 'base', 'a_longer_frame_id']))
    msg.header.stamp.sec = draw(st.integers(-2**31, 2**31 - 1))
    msg.header.stamp.nanosec = draw(st.integers(0, 999_999_999))
    sizes = st.sampled_from(sorted({0, n, n + 1, max(n - 1, 0)}))
    msg.position = draw(st.lists(FLOAT, min_size=draw(sizes), max_size=n + 1))
    msg.velocity = draw(st.lists(FLOAT, min_size=draw(sizes), max_size=n + 1))
    msg.effort = draw(st.lists(FLOAT, max_size=n))
    return msg


@settings(max_examples=400, deadline=None)
@given(joint_states())
def test_reader_reads_what_rclpy_reads(msg):
    data = serialize_message(msg)
    names, pos, vel, stamp = JointStateReader(JointState).read(data)
    ref = deserialize_message(data, JointState)
    assert names == tuple(ref.name)
    assert _bits(pos) == _bits(ref.position)
    assert _bits(vel) == _bits(ref.velocity)
    assert stamp == (ref.header.stamp.sec, ref.header.stamp.nanosec)


def test_reader_decodes_names_only_when_they_change():
    reader = JointStateReader(JointState)
    a = JointState(name=['j1', 'j2'], position=[1.0, 2.0])
    first = reader.read(serialize_message(a))[0]
    again = reader.read(serialize_message(JointState(name=['j1', 'j2'], position=[3.0, 4.0])))
    assert again[0] is first and again[1] == (3.0, 4.0)
    # same lengths, one character different: decoded anew
    other = reader.read(serialize_message(JointState(name=['j1', 'j3'], position=[0.0, 0.0])))
    assert other[0] == ('j1', 'j3')
    # a different frame_id shifts the names: still read right
    b = JointState(name=['j1', 'j2'], position=[5.0, 6.0])
    b.header.frame_id = 'xyz'
    assert reader.read(serialize_message(b))[:2] == (('j1', 'j2'), (5.0, 6.0))


def test_reader_never_returns_wrong_data_for_cut_bytes():
    """Every truncation either raises (rclpy's verdict) or reads what rclpy reads."""
    msg = JointState(name=['shoulder', 'elbow', 'wrist'], position=[0.1, 0.2, 0.3],
                     velocity=[1.0, 2.0, 3.0], effort=[4.0, 5.0, 6.0])
    data = serialize_message(msg)
    for cut in range(len(data)):
        reader = JointStateReader(JointState)
        reader.read(data)                    # with the names cached, and without
        for r in (reader, JointStateReader(JointState)):
            try:
                got = r.read(data[:cut])
            except Exception:  # noqa: B902 - rclpy's error for a short buffer
                continue
            ref = deserialize_message(data[:cut], JointState)
            assert got[0] == tuple(ref.name) and got[1] == tuple(ref.position)
            assert got[2] == tuple(ref.velocity)


@pytest.mark.parametrize('n', [0, 1, 9, 40])
def test_template_writes_the_message_built_field_by_field(n):
    rng = np.random.default_rng(n)
    names = [f'joint_{k}' for k in range(n)]
    template = Template(JointState(name=names, position=[0.0] * n, velocity=[0.0] * n,
                                   effort=[0.0] * n), ('position', 'velocity', 'effort'))
    for _ in range(5):
        q, qd, tau = rng.normal(size=(3, n)) * 10.0 ** rng.integers(-3, 3, size=(3, n))
        sec, nanosec = int(rng.integers(0, 2**31)), int(rng.integers(0, 10**9))
        got = deserialize_message(template.fill(sec, nanosec, q, qd, tau), JointState)
        assert list(got.name) == names
        assert (got.header.stamp.sec, got.header.stamp.nanosec) == (sec, nanosec)
        for field, want in (('position', q), ('velocity', qd), ('effort', tau)):
            assert _bits(getattr(got, field)) == _bits(want)


def test_template_without_a_stamp_and_wrong_lengths():
    cmd = Float64MultiArray(data=[0.0] * 7)
    cmd.layout.dim = [MultiArrayDimension(label='joints', size=7, stride=7)]
    template = Template(cmd, ('data',), stamp=False)
    values = np.linspace(-math.pi, math.pi, 7)
    got = deserialize_message(template.fill(0, 0, values), Float64MultiArray)
    assert _bits(got.data) == _bits(values)
    assert (got.layout.dim[0].label, got.layout.dim[0].size) == ('joints', 7)
    with pytest.raises(ValueError, match='7 float64'):
        template.fill(0, 0, values[:6])
    with pytest.raises(ValueError, match='7 float64'):
        template.fill(0, 0, values.astype(np.float32))


@pytest.mark.parametrize('links', [1, 13])
def test_template_of_scalar_fields_and_many_stamps_is_the_message_built_field_by_field(links):
    """The twist array: 6 scalars per element, a stamp in the header and in every element."""
    from liemb_interfaces.msg import TwistRepresented, TwistRepresentedArray
    rng = np.random.default_rng(links)
    arr = TwistRepresentedArray(links=[f'link_{k}' for k in range(links)])
    arr.header.frame_id = 'world'
    for k in range(links):
        arr.twists.append(TwistRepresented(representation='hybrid', angular_frame='world',
                                           linear_frame='world',
                                           reference_point=f'origin of link_{k}'))
    paths = [f'twists[{k}].{v}.{c}' for k in range(links) for v in ('angular', 'linear')
             for c in 'xyz']
    template = Template(arr, [paths], stamp=['header.stamp'] + [
        f'twists[{k}].header.stamp' for k in range(links)])
    for _ in range(3):
        V = rng.normal(size=(links, 6)) * 10.0 ** rng.integers(-3, 3, size=(links, 6))
        sec, nanosec = int(rng.integers(-2**31, 2**31)), int(rng.integers(0, 10**9))
        got = deserialize_message(template.fill(sec, nanosec, V), TwistRepresentedArray)
        assert list(got.links) == list(arr.links) and got.header.frame_id == 'world'
        for k, t in enumerate(got.twists):
            for stamp in (got.header.stamp, t.header.stamp):
                assert (stamp.sec, stamp.nanosec) == (sec, nanosec)
            assert t.reference_point == f'origin of link_{k}'
            assert _bits([t.angular.x, t.angular.y, t.angular.z, t.linear.x, t.linear.y,
                          t.linear.z]) == _bits(V[k])
    with pytest.raises(ValueError, match=f'{6 * links} float64'):
        template.fill(0, 0, V[:, :5])


def test_template_of_a_wrench_keeps_its_frame_and_puts_the_moment_first():
    """The dynamics node's wrench: (moment, force) as the engine orders a wrench."""
    from geometry_msgs.msg import WrenchStamped
    msg = WrenchStamped()
    msg.header.frame_id = 'panda_link1'
    template = Template(msg, [[f'wrench.{v}.{c}' for v in ('torque', 'force') for c in 'xyz']])
    W = np.array([1.5, -2.0, 3.25, 10.0, -20.0, 30.5])
    got = deserialize_message(template.fill(7, 8, W), WrenchStamped)
    assert got.header.frame_id == 'panda_link1'
    assert (got.header.stamp.sec, got.header.stamp.nanosec) == (7, 8)
    w = got.wrench
    assert [w.torque.x, w.torque.y, w.torque.z, w.force.x, w.force.y, w.force.z] == W.tolist()
