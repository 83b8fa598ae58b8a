"""
``liemb identify RUN.mcap``: identification from a recording, checked against a known robot.

The "true" robot is the shipped 7-joint arm with every link's mass and inertia scaled by
factors in [0.7, 1.3] (physically consistent: the centre of mass kept, the inertia about it
scaled by a positive factor), other viscous and Coulomb friction and a rotor inertia per
joint (:func:`true_robot`).  Its recordings are written here with the mcap library and
rclpy's serializer: a sum-of-sines motion (a finite Fourier series, Swevers et al. 1997)
sampled at 500 Hz, the efforts the true robot's inverse dynamics with friction and
armature at the exact accelerations (the independent source: the command sees only
``q``, ``q̇`` and the effort, and differentiates).  The command starts from the unchanged
URDF.  Also: the filter and the derivative against closed forms, the URDF writer against
the model it writes, and the errors a user meets (exit 2, one line).
"""
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from conftest import ros_importorskip

ros_importorskip('rclpy', 'mcap_ros2')
from test_record_reading import Recording, joint_state  # noqa: E402

from liemb_ros.app import cli  # noqa: E402
from liemb_ros.app.identify_cli import read_joint_states  # noqa: E402
from liemb_ros.core import resources, signals  # noqa: E402
from liemb_ros.core.identification import (base_parameters, inertial_parameters,  # noqa: E402
                                           reference_parameters, regressor)
from liemb_ros.core.identified_urdf import identified_urdf  # noqa: E402
from liemb_ros.core.model import load_urdf, load_urdf_string  # noqa: E402

pytestmark = pytest.mark.ros

RATE = 500.0          # samples per second
SECONDS = 24.0        # of the run
BASE_HZ = 0.1         # the Fourier series' fundamental; harmonics 1..HARMONICS
HARMONICS = 5


def arm_xml():
    """Return the shipped 7-joint arm's URDF text."""
    with open(resources.robot_path('liemb_arm7'), encoding='utf-8') as f:
        return f.read()


def true_robot(rng=0):
    """
    Return ``(xml, armature)``: the arm with scaled inertials, changed friction, armature.

    Each link's mass times a factor in [0.7, 1.3] and its inertia about the centre of mass
    times another (consistent for any positive factors); each joint's damping and Coulomb
    friction times factors in [0.5, 1.5]; armature (nq,) in [0.01, 0.1] kg m².
    """
    rng = np.random.default_rng(rng)
    root = ET.fromstring(arm_xml())
    for link in root.iter('link'):
        inertial = link.find('inertial')
        if inertial is None:
            continue
        mass = inertial.find('mass')
        mass.set('value', repr(float(mass.get('value')) * rng.uniform(0.7, 1.3)))
        f = rng.uniform(0.7, 1.3)
        inertia = inertial.find('inertia')
        for k, v in inertia.attrib.items():
            inertia.set(k, repr(float(v) * f))
    for dyn in root.iter('dynamics'):
        for k in ('damping', 'friction'):
            dyn.set(k, repr(float(dyn.get(k)) * rng.uniform(0.5, 1.5)))
    armature = rng.uniform(0.01, 0.1, 7)
    return ET.tostring(root, encoding='unicode'), armature


def true_parameters(model, armature):
    """Return every regressor column's true value (inertials, friction, armature)."""
    pi = reference_parameters(model, friction=True, armature=True)
    pi[-model.nq:] = armature
    return pi


def sum_of_sines(model, t, rng=1, peak=1.2):
    """
    Return ``q, qd, qdd`` (N, nq) of a finite Fourier series inside the joint limits.

    Harmonics 1..HARMONICS of BASE_HZ with random coefficients, each joint's amplitude
    scaled to 0.7 of its half range about the middle (at most ``peak`` rad).
    """
    rng = np.random.default_rng(rng)
    w = 2 * np.pi * BASE_HZ * np.arange(1, HARMONICS + 1)
    a, b = rng.standard_normal((2, model.nq, HARMONICS)) / np.arange(1, HARMONICS + 1)
    period = np.arange(0.0, 1.0 / BASE_HZ, 0.01)   # the scale of one period: any t alike
    top = np.abs(np.sin(np.outer(period, w)) @ a.T + np.cos(np.outer(period, w)) @ b.T)
    s, c = np.sin(np.outer(t, w)), np.cos(np.outer(t, w))
    q = s @ a.T + c @ b.T
    qd = (c * w) @ a.T - (s * w) @ b.T
    qdd = -(s * w ** 2) @ a.T - (c * w ** 2) @ b.T
    mid, half = 0.5 * (model.upper + model.lower), 0.5 * (model.upper - model.lower)
    scale = np.minimum(0.7 * half, peak) / top.max(axis=0)
    return mid + q * scale, qd * scale, qdd * scale


def write_run(path, names, t, q, qd, effort, noise=0.0, rng=2):
    """Write joint_states (``effort`` plus Gaussian noise of std ``noise``) to ``path``."""
    rng = np.random.default_rng(rng)
    rec = Recording(path)
    for k in range(t.size):
        e = effort[k] + noise * rng.standard_normal(effort.shape[1]) if noise else effort[k]
        rec.add('/joint_states', joint_state(t[k], names, q[k], qd[k], e))
    rec.finish()


@pytest.fixture(scope='module')
def run(tmp_path_factory):
    """A noise-free recording of the true robot: ``(path, true model, armature, states)``."""
    xml, armature = true_robot()
    model = load_urdf_string(xml)
    t = np.arange(0.0, SECONDS, 1.0 / RATE)
    q, qd, qdd = sum_of_sines(model, t)
    tau = regressor(model, q, qd, qdd, friction=True, armature=True) @ true_parameters(
        model, armature)
    path = tmp_path_factory.mktemp('identify') / 'run.mcap'
    write_run(path, model.joint_names, t, q, qd, tau)
    return path, model, armature, (t, q, qd, qdd, tau)


def liemb(*argv):
    """Run ``liemb ARGV`` in this process; return its exit status."""
    return cli.main([str(a) for a in argv])


def identify(path, *argv):
    """Run ``liemb identify PATH --robot liemb_arm7 ARGV`` in this process; return its results."""
    from liemb_ros.app import identify_cli
    args = cli.build_parser().parse_args(['identify', str(path), '--robot', 'liemb_arm7',
                                          '--quiet', *map(str, argv)])
    return identify_cli.identify_run(args)


# --------------------------------------------------------------------------- signals
def test_the_filter_is_flat_below_its_cut_off_and_delays_nothing():
    """A 1 Hz sine through the 20 Hz filter at 500 Hz: unchanged to 1e-7 inside the edges."""
    h, fc = 1.0 / RATE, 20.0
    t = np.arange(0.0, 10.0, h)
    x = np.sin(2 * np.pi * t + 0.3)
    y = signals.lowpass(x, h, fc)
    e = signals.edge_samples(h, fc)
    assert np.abs(y - x)[e:-e].max() < 1e-7
    # the closed form of the forward-backward gain, 1 / (1 + (f/fc)^8), at the cut-off
    z = signals.lowpass(np.sin(2 * np.pi * fc * t), h, fc)
    assert abs(np.abs(z[e:-e]).max() - 0.5) < 0.01


def test_the_derivative_is_exact_to_fourth_order():
    """Five-point differences of a 2 Hz sine: error below (ω h)⁴/30 relative, no delay."""
    h = 1.0 / RATE
    t = np.arange(0.0, 2.0, h)
    w = 2 * np.pi * 2.0
    d = signals.derivative(np.sin(w * t)[:, None], h)[:, 0]
    bound = (w * h) ** 4 / 30 * w
    assert np.abs(d - w * np.cos(w * t))[2:-2].max() < 1.01 * bound
    assert np.abs(d - w * np.cos(w * t)).max() < (w * h) ** 2 * w   # the one-sided ends


def test_held_efforts_are_fitted_at_the_interval_midpoints():
    """
    A unit inertia driven by efforts held over each interval (exact integration, closed
    form): at the midpoints the acceleration is the effort to 1e-6; at the samples it is
    half a sample late, an error of about ω h / 2 of it.
    """
    h, w = 1.0 / RATE, 2 * np.pi
    t = np.arange(0.0, 6.0, h)
    tau = np.sin(w * t)                       # tau[k]: held over (t[k-1], t[k]]
    v = np.r_[0.0, np.cumsum(h * tau[1:])]    # q̇ of q̈ = tau
    q = np.r_[0.0, np.cumsum(h * v[:-1] + 0.5 * h * h * tau[1:])]
    _, _, a, inner = signals.joint_signals(t, q[:, None], v[:, None], 20.0, held=True)
    assert np.abs(a[inner, 0] - tau[inner]).max() < 1e-6
    _, _, a, inner = signals.joint_signals(t, q[:, None], v[:, None], 20.0)
    assert np.abs(a[inner, 0] - tau[inner]).max() > 0.3 * w * h / 2
    x = np.sin(w * t)
    m = signals.interval_midpoints(x)
    assert np.abs(m - np.sin(w * (t - h / 2)))[2:-1].max() < (w * h) ** 4 / 10


def test_held_efforts_of_a_simulated_arm_give_the_base_parameters_to_1e_6(tmp_path):
    """
    ``--effort-held`` on a digital controller's recording: the true robot simulated (RK4 at
    1 ms, its friction and armature) under computed torque with the unchanged URDF at 500 Hz,
    each effort held over the interval before its sample; the base parameters to 1e-6 of the
    largest (measured 1.4e-10: the momentum form integrated over each interval, to O(h⁴);
    the midpoint pairing it replaced gave 9.6e-6), held-out torques to 1e-5 of their RMS.
    """
    from liemb_ros.control.laws import ComputedTorque
    from liemb_ros.sim import Simulator
    xml, armature = true_robot()
    true = load_urdf_string(xml)
    nominal = load_urdf_string(arm_xml())
    h = 1.0 / RATE
    t = np.arange(0.0, 10.0 + h / 2, h)
    qr, qdr, qddr = sum_of_sines(nominal, t)
    law = ComputedTorque(nominal, kp=900.0, kd=60.0)
    sim = Simulator(true, dt=1e-3, q0=qr[0], qd0=qdr[0], armature=armature,
                    damping_method='explicit')
    q, qd, effort = [sim.q.copy()], [sim.qd.copy()], [np.zeros(true.nq)]
    for k in range(t.size - 1):
        tau = np.clip(law(sim.q, sim.qd, qr[k], qdr[k], qddr[k]), -sim.effort_limit,
                      sim.effort_limit)
        sim.step(tau, n=2)
        q.append(sim.q.copy())
        qd.append(sim.qd.copy())
        effort.append(tau)
    path = tmp_path / 'held.mcap'
    write_run(path, true.joint_names, t, np.array(q), np.array(qd), np.array(effort))
    out = identify(path, '--effort-held', '--cutoff', '0')
    ls = out['ls']
    beta = ls.base.from_standard(true_parameters(true, armature))
    err = np.abs(ls.values - beta) / np.abs(beta).max()
    assert err.max() < 1e-6, (err.max(), ls.names[int(err.argmax())])
    assert out['errors']['identified'].max() < 1e-5, out['errors']
    assert out['consistent'].consistent


def test_stamps_are_uniform_runs_between_lost_samples():
    h, runs = signals.uniform_runs(np.r_[np.arange(0.0, 1.0, 0.01), np.arange(1.5, 2.0, 0.01)])
    assert h == pytest.approx(0.01) and runs == [(0, 100), (100, 150)]
    with pytest.raises(ValueError, match='do not increase'):
        signals.uniform_runs([0.0, 0.1, 0.1, 0.2])
    with pytest.raises(ValueError, match='not uniform'):     # jitter past half a period
        signals.uniform_runs([0.0, 0.1, 0.2, 0.23, 0.4, 0.5])


@pytest.mark.parametrize('cutoff', [0.0, 20.0])
def test_lost_samples_split_the_recording_into_runs(cutoff):
    """
    Samples lost in a recording: each run between them is filtered and differentiated
    alone, its edges left out; inside, the signals are those of the whole recording
    (equal without a filter; to 1e-6 of the largest with a 20 Hz one, whose start-up at the
    gap's edges is left out).
    """
    t = np.arange(0.0, 3.0, 0.002)
    q = np.sin(2 * np.pi * 0.7 * t)[:, None] * [1.0, 0.5]
    qd = 2 * np.pi * 0.7 * np.cos(2 * np.pi * 0.7 * t)[:, None] * [1.0, 0.5]
    keep = np.ones(t.size, dtype=bool)
    keep[700:705] = False                        # 10 ms lost
    full = signals.joint_signals(t, q, qd, cutoff)
    cut = signals.joint_signals(t[keep], q[keep], qd[keep], cutoff)
    inner = cut[3]
    edge = signals.edge_samples(0.002, cutoff) if cutoff else 2
    assert not inner[700 - edge:700 + edge].any()             # the gap's edges left out
    assert inner[700 - edge - 1] and inner[700 + edge]
    for a, b in zip(full[:3], cut[:3]):
        x, y = a[keep][inner], b[inner]
        if cutoff:
            assert np.abs(x - y).max() <= 1e-6 * np.abs(a).max()
        else:
            np.testing.assert_array_equal(x, y)


# --------------------------------------------------------------------------- URDF writer
def test_the_written_urdf_holds_the_parameters_it_was_given():
    """Any consistent parameters and friction written and loaded back: the same, to 1e-9."""
    xml, _ = true_robot(5)
    model = load_urdf_string(arm_xml())
    pi = inertial_parameters(load_urdf_string(xml))
    damping, friction = np.linspace(0.1, 0.7, 7), np.linspace(1.0, 2.0, 7)
    back = load_urdf_string(identified_urdf(arm_xml(), model, pi, damping, friction))
    assert np.allclose(inertial_parameters(back), pi, rtol=1e-9, atol=1e-12)
    assert np.allclose(back.damping, damping) and np.allclose(back.friction, friction)
    assert back.link_names == model.link_names and np.allclose(back.Y, model.Y)


# --------------------------------------------------------------------------- the command
def test_help():
    with pytest.raises(SystemExit) as exc:
        liemb('identify', '--help')
    assert exc.value.code == 0


def test_a_noise_free_run_gives_the_true_base_parameters(run):
    """
    The base parameters to 1e-6 relative (each, to the largest: some are near zero), the
    held-out torques to 1 % of their RMS, a consistent fit, and files the nodes read.
    """
    path, true, armature, _ = run
    out = identify(path)
    ls = out['ls']
    beta = ls.base.from_standard(true_parameters(true, armature))
    err = np.abs(ls.values - beta) / np.abs(beta).max()
    assert err.max() < 1e-6, (err.max(), ls.names[int(err.argmax())])
    assert out['errors']['identified'].max() < 0.01, out['errors']
    assert out['errors']['URDF'].max() > 0.05            # the start was wrong
    assert out['consistent'].consistent
    urdf, yaml_file, png = out['files']
    written = load_urdf(urdf)
    written_beta = ls.base.from_standard(np.r_[inertial_parameters(written), written.damping,
                                               written.friction, armature])
    assert np.abs(written_beta - beta).max() / np.abs(beta).max() < 1e-3
    import yaml
    with open(yaml_file, encoding='utf-8') as f:
        params = yaml.safe_load(f)['liemb_dynamics']['ros__parameters']
    base, names = ls.base, list(ls.base.standard_names)
    alone = [j for j, joint in enumerate(true.joint_names)   # not lumped with a link's inertia
             if names.index(f'{joint}.armature') in base.independent
             and not base.Kd[list(base.independent).index(names.index(f'{joint}.armature'))
                             ].any()]
    assert len(alone) >= 4, alone
    assert np.allclose(np.array(params['armature'])[alone], armature[alone], rtol=1e-3)


def test_the_table_names_every_base_parameter_and_the_unidentifiable(run, capsys, tmp_path):
    path = run[0]
    assert liemb('identify', path, '--robot', 'liemb_arm7', '--quiet', '--out', tmp_path) == 0
    text = capsys.readouterr().out
    base = base_parameters(load_urdf(resources.robot_path('liemb_arm7')), friction=True,
                           armature=True)
    for name in base.names:
        assert name in text
    assert 'link1.m ' in text and 'not identifiable' in text
    assert 'held-out torque error, identified' in text


def test_noisy_efforts_give_parameters_within_their_standard_errors(run, tmp_path):
    """
    Efforts with Gaussian noise of 0.5 N m (1.5 % of joint 2's torque RMS, 190 % of joint
    7's): the base parameters' errors over their reported standard errors look standard
    normal (|z| < 4.5, RMS z within [0.5, 2]), and the consistent fit is consistent.
    """
    _, true, armature, (t, q, qd, _, tau) = run
    path = tmp_path / 'noisy.mcap'
    write_run(path, true.joint_names, t, q, qd, tau, noise=0.5)
    out = identify(path)
    ls = out['ls']
    z = (ls.values - ls.base.from_standard(true_parameters(true, armature))) / ls.std
    assert np.abs(z).max() < 4.5, z
    assert 0.5 < np.sqrt(np.mean(z ** 2)) < 2.0, z
    assert out['consistent'].consistent


def test_a_payload_mass_and_centre_of_mass(run, tmp_path):
    """
    A 1.5 kg body at (0.02, -0.01, 0.08) m on link7, the rest the true robot (its URDF and
    armature): the mass within 1 %, the centre of mass within 1 mm.
    """
    _, true, armature, (t, q, qd, qdd, tau) = run
    xml = ET.fromstring(true_robot()[0])
    robot = tmp_path / 'true.urdf'
    robot.write_text(ET.tostring(xml, encoding='unicode'))
    params = tmp_path / 'true.yaml'
    params.write_text('liemb_dynamics:\n  ros__parameters:\n    armature: '
                      f'{armature.tolist()}\n')
    m, c = 1.5, np.array([0.02, -0.01, 0.08])
    pi = np.r_[m, m * c, 0.004 + m * (c @ c - c * c)[[0]], -m * c[0] * c[1],
               0.005 + m * (c @ c - c[1] ** 2), -m * c[0] * c[2], -m * c[1] * c[2],
               0.003 + m * (c[0] ** 2 + c[1] ** 2)]
    body = true.body_names.index('link7')
    tau = tau + regressor(true, q, qd, qdd)[..., 10 * body:10 * body + 10] @ pi
    path = tmp_path / 'payload.mcap'
    write_run(path, true.joint_names, t, q, qd, tau)
    from liemb_ros.app import identify_cli
    args = cli.build_parser().parse_args(['identify', str(path), '--robot', str(robot),
                                          '--payload', 'link7', '--params', str(params),
                                          '--quiet'])
    p = identify_cli.identify_run(args)['payload']
    assert abs(p.mass - m) < 0.01 * m, p.mass
    assert np.linalg.norm(p.com - c) < 1e-3, p.com


def test_the_reader_keeps_every_sample(run):
    path, true, _, (t, q, _, _, tau) = run
    rec = read_joint_states(str(path))
    assert rec['t'].size == t.size and rec['names'] == true.joint_names
    assert np.array_equal(rec['q'], q) and np.array_equal(rec['effort'], tau)


# --------------------------------------------------------------------------- errors
def _identify_process(*argv):
    return subprocess.run([sys.executable, '-m', 'liemb_ros.app.cli', 'identify',
                           *map(str, argv), '--quiet'], capture_output=True, text=True,
                          timeout=300)


def test_errors_are_one_line_and_exit_2(tmp_path):
    """No efforts, unknown joints, too little excitation: exit 2, one line, no traceback."""
    model = load_urdf(resources.robot_path('liemb_arm7'))
    t = np.arange(0.0, 4.0, 1.0 / RATE)
    q = np.zeros((t.size, 7))
    no_effort = tmp_path / 'no_effort.mcap'
    rec = Recording(no_effort)
    for k in range(t.size):
        rec.add('/joint_states', joint_state(t[k], model.joint_names, q[k], q[k]))
    rec.finish()
    other = tmp_path / 'other.mcap'
    write_run(other, ['a', 'b'], t, q[:, :2], q[:, :2], q[:, :2])
    still = tmp_path / 'still.mcap'   # one joint moves: the others' parameters unseen
    q1 = q.copy()
    q1[:, 0] = np.sin(2 * np.pi * 0.5 * t)
    write_run(still, model.joint_names, t, q1, np.gradient(q1, t, axis=0), q + 1.0)
    cases = [(no_effort, 'carry no efforts', ()), (other, 'does not have: a, b', ()),
             (still, 'joint2 is slower in 100 %', ()),
             (still, 'condition number', ('--min-velocity', 0)),
             (tmp_path / 'missing.mcap', 'No such file', ())]
    for path, said, more in cases:
        p = _identify_process(path, '--robot', 'liemb_arm7', '--out', tmp_path, *more)
        lines = p.stderr.strip().splitlines()
        assert p.returncode == 2, p.stderr
        assert len(lines) == 1 and said in lines[0] and 'Traceback' not in p.stderr, p.stderr
