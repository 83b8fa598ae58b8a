"""
MCAP recordings (``liemb_ros.record``, ``liemb record``, ``--record``) and ``liemb plot``.

Schemas are checked against the installed ``.msg`` files by a round trip: a message
serialized by rclpy decodes with the schema we write (mcap_ros2's own parser).  A recording
of the demo's node set is read back with the mcap reader (topics, ROS 2 schema names, counts)
and its joint states and torques equal what the demo's monitor received.
"""
import os
import random
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from conftest import ros_importorskip

rclpy, _ = ros_importorskip('rclpy', 'mcap_ros2')
from liemb_ros import record  # noqa: E402  (after the import check)

pytestmark = pytest.mark.ros


def _roundtrip(msg, name):
    from mcap_ros2._dynamic import generate_dynamic
    from rclpy.serialization import serialize_message
    decode = generate_dynamic(name, record.message_definition(name))[name]
    return decode(serialize_message(msg))


def test_schemas_decode_what_rclpy_serializes():
    from geometry_msgs.msg import TransformStamped
    from liemb_interfaces.msg import TwistRepresented, TwistRepresentedArray
    from sensor_msgs.msg import JointState
    from tf2_msgs.msg import TFMessage
    js = JointState(name=['a', 'b'], position=[1.0, 2.0], velocity=[3.0, 4.0], effort=[5.0, 6.0])
    js.header.stamp.sec, js.header.frame_id = 7, 'world'
    out = _roundtrip(js, 'sensor_msgs/msg/JointState')
    assert out.name == ['a', 'b'] and list(out.effort) == [5.0, 6.0]
    assert out.header.stamp.sec == 7 and out.header.frame_id == 'world'
    tf = TFMessage(transforms=[TransformStamped(child_frame_id='tool0')])
    tf.transforms[0].transform.translation.x = 0.5
    out = _roundtrip(tf, 'tf2_msgs/msg/TFMessage')
    assert out.transforms[0].child_frame_id == 'tool0'
    assert out.transforms[0].transform.translation.x == 0.5
    tw = TwistRepresentedArray(twists=[TwistRepresented(representation='mixed')])
    assert _roundtrip(tw, 'liemb_interfaces/msg/TwistRepresentedArray').twists[0]. \
        representation == 'mixed'
    from control_msgs.msg import JointTrajectoryControllerState
    cs = JointTrajectoryControllerState(joint_names=['a'], speed_scaling_factor=1.0)
    cs.reference.positions, cs.error.velocities, cs.output.effort = [0.5], [-0.25], [3.0]
    out = _roundtrip(cs, 'control_msgs/msg/JointTrajectoryControllerState')
    assert out.joint_names == ['a'] and list(out.reference.positions) == [0.5]
    assert list(out.error.velocities) == [-0.25] and list(out.output.effort) == [3.0]
    assert out.speed_scaling_factor == 1.0
    text = record.message_definition('sensor_msgs/msg/JointState')
    assert text.count('MSG: ') == 2   # std_msgs/Header, builtin_interfaces/Time: once each
    assert 'MSG: std_msgs/msg/Header' in text and 'MSG: builtin_interfaces/msg/Time' in text


def test_missing_definition_names_the_file():
    with pytest.raises(FileNotFoundError, match='Nope.msg'):
        record.message_definition('sensor_msgs/msg/Nope')


def test_plot_refuses_a_file_that_is_not_mcap(tmp_path):
    bad = tmp_path / 'run.mcap'
    bad.write_text('not an mcap file')
    proc = subprocess.run([sys.executable, '-m', 'liemb_ros.cli', 'plot', str(bad)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and str(bad) in proc.stderr


@pytest.mark.xfail(strict=False, reason=(
    'known defect, issue 20 left open: in 1 of 3-4 runs the recorder (its own participant in '
    'this process) receives the nodes\' messages only from ~1.7 s of the run on, although its '
    'subscriptions exist before the nodes start (pre-subscribed, depth 1000); cause not found'))
def test_demo_run_recorded_and_plotted(tmp_path, monkeypatch):
    """The demo's node set recorded while the demo's monitor runs; plot from the recording."""
    monkeypatch.setenv('ROS_DOMAIN_ID', str(random.randint(1, 101)))
    monkeypatch.setenv('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    import liemb_ros as lm
    from liemb_ros import resources
    from liemb_ros.demo import sample_configuration, test_torque
    from liemb_ros.ros import monitor
    model = lm.load_urdf(resources.robot_path('liemb_arm7'))
    path = str(tmp_path / 'run.mcap')
    recorder = record.Recorder(path, log=print)
    thread = threading.Thread(target=recorder.spin, daemon=True)
    thread.start()
    try:
        rec = monitor.run_sim(model, duration=2.0, out_dir=str(tmp_path),
                              amplitude=test_torque(model), q0=sample_configuration(model),
                              echo=lambda *a, **k: None)
    finally:
        recorder.stop()
        thread.join(timeout=20)
    assert not thread.is_alive()
    from mcap.reader import make_reader
    with open(path, 'rb') as f:
        summary = make_reader(f).get_summary()
    schemas = {s.id: s for s in summary.schemas.values()}
    channels = {c.topic: schemas[c.schema_id].name for c in summary.channels.values()}
    counts = {summary.channels[k].topic: n
              for k, n in summary.statistics.channel_message_counts.items()}
    expected = {'/joint_states': 'sensor_msgs/msg/JointState',
                '/tf': 'tf2_msgs/msg/TFMessage',
                '/diagnostics': 'diagnostic_msgs/msg/DiagnosticArray',
                '/robot_description': 'std_msgs/msg/String',
                '/liemb_dynamics/joint_torques': 'sensor_msgs/msg/JointState',
                '/liemb_dynamics/twists': 'liemb_interfaces/msg/TwistRepresentedArray',
                '/liemb_dynamics/markers': 'visualization_msgs/msg/MarkerArray'}
    for topic, schema in expected.items():
        assert channels.get(topic) == schema, (topic, channels)
        assert counts.get(topic, 0) > 0, (topic, counts)
    assert all(s.encoding == 'ros2msg' for s in schemas.values())
    assert all(c.message_encoding == 'cdr' for c in summary.channels.values())
    assert counts == {t: n for t, n in recorder.counts.items() if n}
    # the recording holds what the monitor saw: the same stamped states and torques
    got, xml = record.read_run(path)
    assert xml and lm.load_urdf_string(xml).joint_names == model.joint_names
    assert counts['/joint_states'] == len(got['t']) >= 0.9 * len(rec['t']) > 50
    # the simulation holds t = 0 until the first torques arrive; after that every stamp is
    # one state, so the two streams line up by stamp
    moving = rec['t'] > 0
    assert len(np.unique(rec['t'][moving])) == moving.sum() > 50
    common, i, j = np.intersect1d(rec['t'], got['t'], return_indices=True)
    assert (common > 0).sum() >= 0.9 * moving.sum()
    assert np.array_equal(rec['q'][i], got['q'][j])
    assert np.array_equal(rec['effort'][i], got['effort'][j])
    common, i, j = np.intersect1d(rec['tg'], got['tg'], return_indices=True)
    assert len(common) >= 0.9 * len(np.unique(rec['tg'])) > 10
    assert np.array_equal(rec['tau_g'][i], got['tau_g'][j])
    png = tmp_path / 'plot.png'
    proc = subprocess.run([sys.executable, '-m', 'liemb_ros.cli', 'plot', path,
                           '--out', str(png)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert f"{len(got['t'])} joint states, {len(got['tg'])} torque messages" in proc.stdout
    assert png.stat().st_size > 10_000 and os.path.isfile(path)


def test_demo_command_records_and_prints_the_view_address(tmp_path, monkeypatch):
    """``liemb demo --record FILE --view-port P``: the address printed, the file written."""
    monkeypatch.setenv('ROS_DOMAIN_ID', str(random.randint(1, 101)))
    from liemb_ros.view import check_address
    port = check_address('127.0.0.1', 0)
    path = tmp_path / 'demo.mcap'
    proc = subprocess.run([sys.executable, '-m', 'liemb_ros.cli', 'demo', '--duration', '2',
                           '--out', str(tmp_path), '--record', str(path),
                           '--view-port', str(port)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert f'live 3D view: http://127.0.0.1:{port}' in proc.stdout
    assert f'recording to {path}' in proc.stdout
    view_log = (tmp_path / 'view.log').read_text()
    assert 'liemb_arm7 from' in view_log and f':{port}' in view_log
    record_log = (tmp_path / 'record.log').read_text()
    assert f'wrote {path}' in record_log     # stopped cleanly: the summary was written
    got, xml = record.read_run(str(path))
    assert len(got['t']) > 50 and len(got['tg']) > 10 and xml


def test_launch_control_records_and_plots_the_tracking(tmp_path, monkeypatch):
    """
    ``liemb launch control --record FILE``: the run ends with FILE.png, drawn from the dynamics
    node's ~/controller_state; the desired positions plotted are config/demo_trajectory.yaml
    interpolated as a JointTrajectoryController does (cubic Hermite through positions and
    velocities: scipy's, here) at the recorded stamps; the tracking error RMS is printed.
    """
    import re

    import yaml
    from scipy.interpolate import CubicHermiteSpline

    from liemb_ros import resources
    monkeypatch.setenv('ROS_DOMAIN_ID', str(random.randint(1, 101)))
    monkeypatch.setenv('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    path = tmp_path / 'control.mcap'
    log = tmp_path / 'launch.log'
    with open(log, 'w') as out:
        # friction off (simulation and feed-forward): the error is the loop's, not the
        # friction model's (the simulation's tanh(q̇/1 mm/s) against the node's 3 mm/s)
        # lock-step on simulated time: the loop's error is the controller's, whatever the
        # load of the machine (without it, 1.5e-3-2.5e-3 rad at load 4-7 on 2 cores)
        proc = subprocess.Popen([sys.executable, '-m', 'liemb_ros.cli', 'launch', 'control',
                                 'lockstep:=true', 'use_sim_time:=true',
                                 '--record', str(path), '-p', 'liemb_simulation:friction:=0.0',
                                 '-p', 'liemb_dynamics:computed_torque.friction_compensation:='
                                 'false'], stdout=out, stderr=subprocess.STDOUT)
        # the trajectory twice (9 s each): the node says it starts it again 1 s after its
        # end.  Twice, because the recorder may miss the first ~2 s (issue 20's open
        # defect: its participant is discovered late); one whole pass is checked below
        deadline = time.monotonic() + 120
        while log.read_text().count('tracking demo_trajectory.yaml') < 3:
            text = log.read_text()
            if proc.poll() is not None or time.monotonic() > deadline or \
                    'simulation stopped' in text:
                proc.send_signal(signal.SIGINT)   # the launch stops its nodes and recorder
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                pytest.fail(f'the control run did not get through its trajectory:\n{text}')
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)   # Ctrl-C: nodes, then the recorder, stop; the plot
        assert proc.wait(timeout=120) == 0, log.read_text()
    text = log.read_text()
    png = tmp_path / 'control.png'
    found = re.search(r'liemb plot: (\d+) controller states, [\d.]+ s, tracking error RMS '
                      r'(\S+) rad \(max (\S+) rad\) -> (\S+)', text)
    assert found, text[-3000:]
    assert found.group(4) == str(png) and png.stat().st_size > 10_000
    rec, xml = record.read_run(str(path))
    assert xml and int(found.group(1)) == len(rec['tc']) > 500
    with open(resources.find('config', 'demo_trajectory.yaml'), encoding='utf-8') as f:
        demo = yaml.safe_load(f)
    names = demo['joint_names']
    assert rec['control_joints'] == names
    times = [p['time_from_start'] for p in demo['points']]
    spline = CubicHermiteSpline(times, [p['positions'] for p in demo['points']],
                                [p['velocities'] for p in demo['points']])
    # one start per pass of the trajectory (stamp - time_from_start); the first pass the
    # recording holds whole
    starts = rec['tc'] - rec['time_from_start']
    passes = [np.abs(starts - t0) < 1e-6 for t0 in np.unique(np.round(starts, 6))]
    whole = [k for k in passes if rec['time_from_start'][k].min() < times[0]
             and rec['time_from_start'][k].max() > times[-1]]
    assert whole, [(rec['time_from_start'][k].min(), rec['time_from_start'][k].max())
                   for k in passes]
    first = whole[0]
    s = rec['time_from_start'][first]
    given = s >= times[0]   # before its first point the motion starts from the arm's state
    want = np.where(s[given, None] <= times[-1], spline(np.minimum(s[given], times[-1])),
                    demo['points'][-1]['positions'])
    off = np.abs(rec['q_ref'][first][given] - want).max()
    rms, peak = record.tracking_rms(rec)
    print(f'launch control --record: {len(rec["tc"])} controller states, desired = the demo '
          f'trajectory within {off:.1e} rad; tracking error RMS {rms:.2e} rad, max {peak:.2e}')
    assert off < 1e-8   # time_from_start is to 1 ns: |q̇| 1 ns
    assert np.array_equal(rec['q_err'], rec['q_ref'] - rec['q_fb'])
    assert found.group(2) == f'{rms:.2e}' and rms < 1e-3
