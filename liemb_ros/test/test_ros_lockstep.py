"""
Lock-step simulation over DDS: the closed loop does not depend on timing (issue 16).

The simulation and dynamics nodes as ``liemb launch sim`` starts them, the simulation in
lock-step (``lockstep: true``: it steps one publish period only after a command answered
the last published state), the dynamics node compensating gravity on every state while a
test torque swings the arm.  The loop runs twice from the same initial state (``~/reset``
between): once as fast as the loop goes (``real_time_factor: 0``), once at real time
while another process keeps a core busy.  The two runs must be the same run, state for
state and bit for bit (stamps are simulation time), with no answer missed.  Without
lock-step they differ, because the torque a step gets depends on when DDS delivers it.
"""
import subprocess
import sys

import numpy as np
import pytest

from conftest import ros_importorskip

pytestmark = [pytest.mark.ros, pytest.mark.filterwarnings('ignore::DeprecationWarning:lark.*')]
rclpy, _ = ros_importorskip('rclpy', 'liemb_interfaces.srv')

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from rcl_interfaces.srv import SetParameters  # noqa: E402
from ros_graph import Latest, diagnostics, param, wait_ready  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_srvs.srv import SetBool, Trigger  # noqa: E402

SIM = 'liemb_simulation'
SECONDS = 1.0      # simulated seconds per run
RATE = 200.0       # states per simulated second (the loop's rate)


def _values(diags):
    return diagnostics(diags.msgs, SIM)[2]


def _run(graph, states, diags):
    """Run the loop for SECONDS of simulated time; return {stamp: positions}."""
    graph.call(SetBool, f'/{SIM}/pause', SetBool.Request(data=True))
    graph.spin_for(0.3)            # answers to the last state arrive while paused
    assert graph.call(Trigger, f'/{SIM}/reset', Trigger.Request()).success
    states.msgs.clear()
    graph.call(SetBool, f'/{SIM}/pause', SetBool.Request(data=False))
    graph.spin_until(lambda: any(_stamp(m) >= SECONDS for m in states.msgs), timeout=120)
    return {_stamp(m): np.array(m.position) for m in states.msgs if _stamp(m) <= SECONDS}


def _stamp(msg):
    return round(msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec, 9)


def test_lockstep_runs_are_the_same_run_whatever_the_timing(graph):
    graph.start('sim', [SIM, 'liemb_dynamics'], [
        f'{SIM}:lockstep:=true', f'{SIM}:publish_rate:={RATE}', f'{SIM}:publish_clock:=true',
        f'{SIM}:real_time_factor:=0.0', f'{SIM}:diagnostics_period:=0.1',
        f'{SIM}:test_torque_amplitude:=[3.0]', f'{SIM}:test_torque_frequency:=2.0',
        'liemb_dynamics:publish_rate:=0.0'])
    states = Latest(graph, JointState, '/joint_states')
    diags = Latest(graph, DiagnosticArray, '/diagnostics')
    wait_ready(graph)
    graph.spin_until(lambda: _values(diags).get('lockstep') == 'on'
                     and float(_values(diags).get('sim_time', 0)) > 0.1, timeout=120)

    fast = _run(graph, states, diags)
    res = graph.call(SetParameters, f'/{SIM}/set_parameters', SetParameters.Request(
        parameters=[param('real_time_factor', 1.0)])).results[0]
    assert res.successful, res.reason
    hog = subprocess.Popen([sys.executable, '-c', 'while True: pass'])
    try:
        loaded = _run(graph, states, diags)
    finally:
        hog.kill()
        hog.wait()

    graph.spin_for(0.3)
    values = _values(diags)
    assert values['lockstep_missed'] == '0', values
    common = sorted(set(fast) & set(loaded))
    assert len(common) >= 0.9 * SECONDS * RATE, (len(fast), len(loaded), len(common))
    # one state per period of simulated time
    assert np.allclose(np.diff(common), 1.0 / RATE)
    q = np.array([fast[t] for t in common])
    assert np.abs(q - q[0]).max() > 0.01            # the arm moved
    different = [t for t in common if not np.array_equal(fast[t], loaded[t])]
    assert not different, (len(different), different[:3])
