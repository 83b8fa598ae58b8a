"""
The Simulator refuses the absurd, names what blew it up, and holds a firm push (issue 28).

Probes as a careless user would send them, in process: a 1e12 N push on the standing
quadruped (example-robot-data's solo12), a torque of 1e300, contact planes and parameters
of 1e308, a plane normal of length 2, a start 0.4 m inside the ground, and the 100 N
push of 0.3 s that diverged.  Independent facts: the bounds from the URDF's masses
(read with ElementTree, not the model), a ball at rest on a plane sinks ``g τ_c²`` below
its radius, and a horizontal push can give the robot no more horizontal momentum than
its impulse (the ground's friction only opposes the motion).
"""
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import liemb_ros as lm
from liemb_ros.core import resources
from liemb_ros.sim.contact import ContactModel, ContactWarning
from liemb_ros.sim.simulator import SimulationError, Simulator, mechanical_energy

from conftest import erd_path

G = 9.81
STANDARD_GRAVITY = 9.80665
STANDING = np.array([0.1, 0.8, -1.6, -0.1, 0.8, -1.6, 0.1, -0.8, 1.6, -0.1, -0.8, 1.6])
BALL = ('<robot name="b"><link name="body"><inertial><mass value="1.0"/><inertia ixx="0.004" '
        'iyy="0.004" izz="0.004" ixy="0" ixz="0" iyz="0"/></inertial><collision><geometry>'
        '<sphere radius="0.1"/></geometry></collision></link>{}</robot>')


def pose(z, x=0.0):
    C = np.eye(4)
    C[0, 3], C[2, 3] = x, z
    return C


def urdf_mass(path):
    """The robot's mass summed from the URDF's <inertial><mass> (not the model's)."""
    root = ET.parse(path).getroot()
    return sum(float(m.get('value')) for m in root.iter('mass'))


@pytest.fixture(scope='module')
def solo12():
    path = erd_path('solo12')
    model = lm.load_urdf(path, floating_base=True)
    return path, model, ContactModel(model, path)


def standing(solo12, **kwargs):
    """solo12 dropped 5 mm in its standing posture (test_contact's stand)."""
    _, model, cm = solo12
    return Simulator(model, contact=cm, base_pose=pose(0.24), q0=STANDING, **kwargs)


def hold(sim):
    """The stand's joint PD and gravity compensation (test_contact.py)."""
    g = lm.gravity_torques(sim.model, sim.q, base_pose=sim.base_pose)[6:]
    return g + 10.0 * (STANDING - sim.q) - 0.1 * sim.qd[6:]


# -- the inputs --------------------------------------------------------------------------------
def test_a_push_of_1e12_newtons_is_refused_with_its_bound(solo12):
    """The issue's probe: 1e12 N on the quadruped's base; the bound is 100 times its weight."""
    path, model, _ = solo12
    sim = standing(solo12)
    weight = urdf_mass(path) * STANDARD_GRAVITY
    with pytest.raises(ValueError, match=r"external wrench on 'base_link': force 1e\+12 N "
                                         r'beyond the plausible (\S+) N') as err:
        sim.set_wrench('base_link', [0, 0, 0, 1e12, 0, 0], frame='world')
    bound = float(str(err.value).split('plausible ')[1].split(' N')[0])
    assert bound == pytest.approx(100.0 * weight, rel=1e-3)
    with pytest.raises(ValueError, match="moment 1e\\+06 N m beyond the plausible"):
        sim.set_wrench('base_link', [1e6, 0, 0, 0, 0, 0])
    with pytest.raises(ValueError, match='wrench contains NaN or inf'):
        sim.set_wrench('base_link', [0, 0, 0, np.inf, 0, 0])
    assert sim.wrenches.applied == {}            # nothing was taken
    sim.set_wrench('base_link', [0, 0, 0, 0.99 * bound, 0, 0], frame='world')   # within


def test_an_implausible_torque_is_refused_a_strong_one_clamped():
    """1e300 N m names the joint and the bound; 1e3 N m (beyond <limit effort>) is clamped."""
    arm = lm.load_urdf(resources.robot_path('liemb_arm7'))
    sim = Simulator(arm)
    with pytest.raises(ValueError, match=r"joint torque 1e\+300 on 'joint1' beyond the "
                                         r'plausible \S+ N m'):
        sim.step(np.full(7, 1e300))
    assert sim.steps == 0
    sim.step(np.full(7, 1e3))
    assert np.array_equal(sim.diagnostics()['applied_torque'], arm.effort_limit)


# -- contact parameters ------------------------------------------------------------------------
@pytest.mark.parametrize('kwargs, words', [
    ({'planes': [((0, 0, 1), 1e308)]},
     r'plane 0: offset 1e\+308 m .* beyond the plausible 1e\+06 m'),
    ({'planes': [((0, 0, 1e308), 0.0), ]}, 'must be finite'),
    ({'planes': [((0, 0, 1e-300), 0.0)]}, 'the normal nonzero'),
    ({'friction': 1e308}, r'friction coefficient 1e\+308 is beyond the plausible 10'),
    ({'friction': {'body': 11.0}}, r"link 'body': friction coefficient 11 is beyond the "
                                   'plausible 10'),
    ({'stiffness': 1e308}, r"contact stiffness 1e\+308 is beyond the plausible 1e\+10 N/m "
                           r"\(the robot's 1 kg at a time constant of 1e-05 s\)"),
    ({'damping': 1e308}, r'contact damping 1e\+308 is beyond the plausible 2e\+05 N s/m'),
    ({'time_constant': 100.0}, r'time_constant must be within 1e-05\.\.10 s, got 100'),
    ({'damping_ratio': 1e6}, r'damping_ratio must be within 0\.001\.\.100'),
    ({'friction_velocity': 0.0}, r'friction_velocity must be within 1e-07\.\.10 m/s'),
])
def test_contact_parameters_beyond_their_bounds_are_refused(kwargs, words):
    model = lm.load_urdf_string(BALL.format(''), floating_base=True)
    with pytest.raises(ValueError, match=words):
        ContactModel(model, BALL.format(''), **kwargs)


def test_a_no_slip_mu1_in_the_urdf_is_taken_as_the_bound():
    """Gazebo URDFs write <mu1>100000</mu1> for "no slip" (example-robot-data does)."""
    xml = BALL.format('<gazebo reference="body"><mu1>100000.0</mu1></gazebo>')
    model = lm.load_urdf_string(xml, floating_base=True)
    with pytest.warns(ContactWarning, match="link 'body': <gazebo><mu1> 100000 taken as 10"):
        cm = ContactModel(model, xml)
    assert cm.link_mu('body') == 10.0


def test_a_plane_with_a_longer_normal_stays_where_its_equation_puts_it():
    """
    ``2 z = -0.6`` is the plane ``z = -0.3``: a ball of radius 0.1 rests with its centre at
    ``-0.2 - g τ_c²``, step for step as on ``z = -0.3`` written with a unit normal.
    (Normalising the normal alone moved the plane to ``z = -0.6``.)
    """
    model = lm.load_urdf_string(BALL.format(''), floating_base=True)
    runs = []
    for plane in (((0, 0, 2), -0.6), ((0, 0, 1), -0.3)):
        cm = ContactModel(model, BALL.format(''), planes=[plane])
        sim = Simulator(model, contact=cm, base_pose=pose(0.0))
        sim.step(n=1200)
        runs.append(sim)
    np.testing.assert_array_equal(runs[0].base_pose, runs[1].base_pose)
    sink = G * 0.005 ** 2
    assert runs[0].base_pose[2, 3] == pytest.approx(-0.3 + 0.1 - sink, abs=1e-6)
    assert np.allclose(runs[0].contacts()[0].point, [0, 0, -0.3], atol=1e-9)


def test_a_start_deep_inside_the_ground_is_refused():
    """The ground's offset with the wrong sign: the ball's centre 0.3 m below its surface."""
    model = lm.load_urdf_string(BALL.format(''), floating_base=True)
    cm = ContactModel(model, BALL.format(''), planes=[((0, 0, 1), 0.3)])
    with pytest.raises(ValueError, match=r"the robot starts 0\.4 m inside contact plane 0 "
                                         r"\(link 'body'\), beyond the plausible 0\.0245 m"):
        Simulator(model, contact=cm)


# -- a firm push on the standing quadruped -----------------------------------------------------
def push(sim, force, start=0.4, seconds=0.3, until=1.6, each=None):
    """
    Hold the stand, push the base with ``force`` (world, N) from ``start`` for ``seconds``.

    ``each(sim, tau, pushing)`` after every step (``tau``: the step's torques).
    """
    n0, n1 = round(start / sim.dt), round((start + seconds) / sim.dt)
    for k in range(round(until / sim.dt)):
        if k == n0:
            sim.set_wrench('base_link', np.r_[0, 0, 0, force], frame='world')
        elif k == n1:
            sim.clear_wrenches()
        tau = hold(sim)
        sim.step(tau)
        if each is not None:
            each(sim, tau, n0 <= k < n1)


@pytest.mark.parametrize('force', [(100.0, 0, 0), (0, -100.0, 0), (0, 0, -100.0),
                                   (500.0, 0, 0)])
def test_a_firm_push_on_the_standing_quadruped_holds(solo12, force):
    """
    100 N (4 times solo12's weight) for 0.3 s diverged; now it holds, and so does 500 N.

    Every 10 ms the state passes :meth:`Simulator.check` (what the node does before it
    publishes); the robot's energy never exceeds its initial energy and the work the push
    and the joint torques did (the contacts only take energy: a landing that threw a foot
    off at 64 rad/s made 11 J from nothing); when the push ends the horizontal momentum is
    at most the push's impulse and along it (the ground's friction only opposes); pushed
    down, the robot stands again on its four feet.
    """
    sim = standing(solo12)
    model = sim.model
    force = np.array(force)
    E0 = sum(mechanical_energy(model, sim.q, sim.qd, sim.base_pose))
    books = {'work': 0.0, 'excess': 0.0, 'momentum': None, 'v': (sim.base_pose, sim.qd.copy())}

    def each(sim, tau, pushing):
        (C0, V0), V1 = books['v'], sim.qd
        books['work'] += 0.5 * sim.dt * tau @ (V0[6:] + V1[6:])     # the joint torques
        if pushing:    # the push at the base's origin: its world velocity is R v (body v)
            v0, v1 = C0[:3, :3] @ V0[3:6], sim.base_pose[:3, :3] @ V1[3:6]
            books['work'] += 0.5 * sim.dt * force @ (v0 + v1)
        elif books['momentum'] is None and sim.t > 0.5:
            books['momentum'] = sim.diagnostics()['momentum'][3:]    # world, kg m/s
        books['v'] = (sim.base_pose, V1.copy())
        if sim.steps % 10 == 0:
            sim.check()
            E = sum(mechanical_energy(model, sim.q, sim.qd, sim.base_pose))
            books['excess'] = max(books['excess'], E - E0 - books['work'])
    push(sim, force, each=each)
    assert books['excess'] < 1.0, books                  # J, of up to 3 kJ put in
    impulse = 0.3 * force
    if force[2] == 0:
        p = books['momentum']
        along = p[:2] @ impulse[:2] / np.linalg.norm(impulse[:2])
        assert 0.0 < along <= np.linalg.norm(impulse) * (1 + 1e-6)
    else:
        for _ in range(600):               # 0.6 s more to settle
            sim.step(hold(sim))
        assert 0.215 < sim.base_pose[2, 3] < 0.230
        feet = sorted({c.link for c in sim.contacts()})
        assert feet == ['FL_FOOT', 'FR_FOOT', 'HL_FOOT', 'HR_FOOT']


def test_a_push_that_blows_the_step_up_is_named():
    """
    The arm at a step of 0.05 s (explicit Euler) pushed at its tool by 500 N: the step
    diverges; the error names the push and the energy it put in, the state left passes.
    """
    arm = lm.load_urdf(resources.robot_path('liemb_arm7'))
    sim = Simulator(arm, dt=0.05, integrator='euler')
    sim.set_wrench('tool0', [0, 0, 0, 500.0, 0, 0], frame='world')
    with pytest.raises(SimulationError) as err:
        for _ in range(100):
            sim.step()
            sim.check()
    text = str(err.value)
    assert "the external wrench on 'tool0' put in" in text and 'up to 500 N' in text, text
    assert 'acting now' in text and "the external wrench on 'tool0' (force 500 N" in text
    assert np.all(np.isfinite(sim.qd)) and sim.plausible.state(sim.qd) is None
    sim.check()                               # the state left behind passes
