"""
Ground contact (issue 21): liemb_ros.sim.contact with the Simulator, checked against mechanics.

Independent facts: a body at rest on a compliant contact sinks ``m g / k_total``; a box
sliding on a plane decelerates at ``μ g`` and stops after ``v0² / (2 μ g)``; on a slope of
angle θ it slides at ``g (sin θ - μ cos θ)`` when ``tan θ > μ`` and holds (creeping at the
regularisation's ``v_s atanh(tan θ / μ)`` at most) when ``tan θ < μ``; energy is conserved
up to the contacts' dissipation, which the work ``W`` counts.
"""
import math
import os
import time

import numpy as np
import pytest

import liemb_ros as lm
from liemb_ros.sim.contact import ContactError, ContactModel, collision_geometry, gazebo_friction
from liemb_ros.sim.simulator import Simulator

from conftest import erd_path

G = 9.81


def body_urdf(geometry, mass=1.0, inertia=(0.004, 0.004, 0.004), mu=None, name='body'):
    """A one-link robot with ``geometry`` (URDF <geometry> content) as its collision."""
    gz = (f'<gazebo reference="{name}"><mu1>{mu}</mu1><mu2>{mu}</mu2></gazebo>'
          if mu is not None else '')
    return (f'<robot name="b"><link name="{name}"><inertial><mass value="{mass}"/>'
            f'<inertia ixx="{inertia[0]}" iyy="{inertia[1]}" izz="{inertia[2]}" ixy="0" '
            f'ixz="0" iyz="0"/></inertial><collision><geometry>{geometry}</geometry>'
            f'</collision></link>{gz}</robot>')


def box_urdf(size=(0.2, 0.2, 0.1), mass=2.0, mu=0.5):
    a, b, c = size
    inertia = (mass * (b * b + c * c) / 12, mass * (a * a + c * c) / 12,
               mass * (a * a + b * b) / 12)
    return body_urdf(f'<box size="{a} {b} {c}"/>', mass, inertia, mu)


def pose(z, R=np.eye(3), x=(0.0, 0.0)):
    C = np.eye(4)
    C[:3, :3] = R
    C[:3, 3] = [x[0], x[1], z]
    return C


def rot_y(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


# -- geometry ----------------------------------------------------------------------------------
def test_collision_primitives_become_contact_spheres():
    xml = ('<robot name="r"><link name="a"><collision><origin xyz="1 0 0"/><geometry>'
           '<sphere radius="0.1"/></geometry></collision><collision><geometry><box size="0.2 '
           '0.4 0.6"/></geometry></collision></link><link name="c"><collision><geometry>'
           '<cylinder radius="0.1" length="0.2"/></geometry></collision><collision><origin '
           'rpy="1.5707963267948966 0 0"/><geometry><capsule radius="0.05" length="0.3"/>'
           '</geometry></collision></link></robot>')
    geo = collision_geometry(xml)
    c, r = geo['a']
    assert np.allclose(c[0], [1, 0, 0]) and r[0] == 0.1
    assert np.allclose(np.abs(c[1:]), [0.1, 0.2, 0.3]) and np.all(r[1:] == 0)
    c, r = geo['c']
    assert len(c) == 18                      # 2 rims of 8 points, 2 capsule ends
    assert np.allclose(np.hypot(c[:16, 0], c[:16, 1]), 0.1)
    assert np.allclose(c[16:], [[0, 0.15, 0], [0, -0.15, 0]], atol=1e-12)   # turned about x
    assert np.all(r[16:] == 0.05)


def test_meshes_read_and_approximated(tmp_path):
    """An ASCII STL cube [-1, 2]^3 scaled by 0.1: its box corners, hull points and sphere."""
    corners = [(x, y, z) for x in (-1, 2) for y in (-1, 2) for z in (-1, 2)]
    stl = 'solid cube\n' + ''.join(
        f'facet normal 0 0 1\nouter loop\nvertex {a[0]} {a[1]} {a[2]}\nvertex {b[0]} {b[1]} '
        f'{b[2]}\nvertex {c[0]} {c[1]} {c[2]}\nendloop\nendfacet\n'
        for a, b, c in zip(corners, corners[1:] + corners[:1], corners[2:] + corners[:2]))
    (tmp_path / 'cube.stl').write_text(stl + 'endsolid cube\n')
    urdf = tmp_path / 'r.urdf'
    urdf.write_text('<robot name="r"><link name="m"><inertial><mass value="1"/><inertia '
                    'ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial><collision>'
                    '<geometry><mesh filename="cube.stl" scale="0.1 0.1 0.1"/></geometry>'
                    '</collision></link></robot>')
    box = collision_geometry(str(urdf), mesh='box')['m'][0]
    assert sorted(map(tuple, np.round(box, 9))) == sorted(
        (0.1 * x, 0.1 * y, 0.1 * z) for x, y, z in corners)
    pts = collision_geometry(str(urdf), mesh='points', mesh_points=4)['m'][0]
    assert len(pts) == 4 and all(tuple(p) in set(map(tuple, box)) for p in np.round(pts, 9))
    c, r = collision_geometry(str(urdf), mesh='sphere')['m']
    assert np.allclose(c, [[0.05, 0.05, 0.05]]) and r[0] == pytest.approx(0.15 * math.sqrt(3))


def test_solo12_meshes_found_from_package_uri():
    """example-robot-data's package:// STL meshes (binary files that start with 'solid')."""
    geo = collision_geometry(erd_path('solo12'))
    c, r = geo['FL_FOOT']
    assert len(c) == 32 and np.all(r == 0)
    # the foot mesh is a wheel of radius 16 mm about the foot frame
    assert np.max(np.linalg.norm(c[:, [0, 2]], axis=1)) == pytest.approx(0.016, abs=2e-4)


# -- bad input ---------------------------------------------------------------------------------
@pytest.mark.parametrize('geometry, message', [
    ('<sphere radius="-0.1"/>', "link 'body': sphere radius must be positive"),
    ('<box size="0.1 0 0.1"/>', "link 'body': box size"),
    ('<mesh filename="package://no_such_package/m.stl"/>', "link 'body': collision mesh"),
    ('<mesh filename="/tmp/x.dae"/>', "link 'body': collision mesh"),
    ('<cone radius="1"/>', "link 'body': collision geometry <cone>"),
])
def test_unusable_geometry_names_the_link(geometry, message):
    model = lm.load_urdf_string(body_urdf('<sphere radius="0.1"/>'), floating_base=True)
    with pytest.raises(ContactError, match=message):
        ContactModel(model, body_urdf(geometry))


def test_bad_parameters_name_the_link():
    xml = body_urdf('<sphere radius="0.1"/>')
    model = lm.load_urdf_string(xml, floating_base=True)
    with pytest.raises(ContactError, match='stiffness must be finite and non-negative'):
        ContactModel(model, xml, stiffness=-1.0)
    with pytest.raises(ContactError, match="link 'body': friction coefficient"):
        ContactModel(model, xml, friction={'body': float('nan')})
    with pytest.raises(ContactError, match='friction coefficient'):
        ContactModel(model, xml, friction=-0.5)
    with pytest.raises(ContactError, match="link 'nope'"):
        ContactModel(model, xml, friction={'nope': 0.5})
    with pytest.raises(ContactError, match="link 'nope': no such link"):
        ContactModel(model, xml, links=['nope'])
    with pytest.raises(ContactError, match=r'time_constant must be within 1e-05\.\.10 s'):
        ContactModel(model, xml, time_constant=0.0)
    with pytest.raises(ContactError, match='plane 0'):
        ContactModel(model, xml, planes=[((0, 0, 0), 0.0)])
    bad_mu = body_urdf('<sphere radius="0.1"/>', mu='nan')
    with pytest.raises(ContactError, match=r"link 'body': <gazebo><mu1>"):
        gazebo_friction(bad_mu)
    with pytest.raises(ValueError, match='contact needs joint coordinates'):
        Simulator(model, coordinates='absolute', contact=ContactModel(model, xml))


def test_friction_from_gazebo_tags_and_overrides():
    xml = box_urdf(mu=0.3)
    model = lm.load_urdf_string(xml, floating_base=True)
    assert ContactModel(model, xml).link_mu('body') == 0.3
    assert ContactModel(model, xml, friction=0.7).link_mu('body') == 0.7
    assert ContactModel(model, xml, friction={'body': 0.2}).link_mu('body') == 0.2


def test_no_contact_model_changes_nothing():
    xml = body_urdf('<sphere radius="0.1"/>')
    model = lm.load_urdf_string(xml, floating_base=True)
    a = Simulator(model, base_pose=pose(0.5))
    b = Simulator(model, base_pose=pose(0.5),
                  contact=ContactModel(model, xml, planes=[((0, 0, 1), -10.0)]))
    a.step(n=200)
    b.step(n=200)
    assert np.array_equal(a.base_pose, b.base_pose) and np.array_equal(a.qd, b.qd)
    assert a.contacts() == [] and b.contacts() == []
    assert a.diagnostics()['contact_energy'] == 0.0


# -- mechanics ---------------------------------------------------------------------------------
def test_sphere_dropped_comes_to_rest_at_its_radius():
    """1 kg, r = 0.1 m from 0.3 m: rests at r - g τ² (one contact, ζ = 1), force m g up."""
    xml = body_urdf('<sphere radius="0.1"/>')
    model = lm.load_urdf_string(xml, floating_base=True)
    cm = ContactModel(model, xml)
    sim = Simulator(model, contact=cm, base_pose=pose(0.3, x=(0.4, -0.2)))
    sim.step(n=1500)
    sink = G * cm.time_constant ** 2            # m g / k with k = m / τ²
    assert sink < 3e-4                          # the stated bound: 0.25 mm
    assert sim.base_pose[2, 3] == pytest.approx(0.1 - sink, abs=1e-7)
    assert np.allclose(sim.base_pose[:2, 3], [0.4, -0.2], atol=1e-9)
    assert np.max(np.abs(sim.qd)) < 1e-6
    (c,) = sim.contacts()
    assert c.link == 'body' and np.allclose(c.point, [0.4, -0.2, 0.0], atol=1e-9)
    assert np.allclose(c.normal, [0, 0, 1])
    assert np.allclose(c.force, [0, 0, G], rtol=1e-6, atol=1e-6)
    assert c.penetration == pytest.approx(sink, rel=1e-6)


def test_box_pushed_decelerates_at_mu_g():
    """A 2 kg box at 2 m/s with μ = 0.5 (URDF <mu1>) slows at μ g, stops after v0²/(2 μ g)."""
    xml = box_urdf(mu=0.5)
    model = lm.load_urdf_string(xml, floating_base=True)
    cm = ContactModel(model, xml)
    z0 = 0.05 - 2.0 * G / (4 * cm.stiffness)
    qd0 = np.zeros(6)
    qd0[3] = 2.0
    sim = Simulator(model, contact=cm, base_pose=pose(z0), qd0=qd0)
    ts, vs = [], []
    for _ in range(60):
        sim.step(n=10)
        ts.append(sim.t)
        vs.append(sim.qd[3])
    ts, vs = np.array(ts), np.array(vs)
    sliding = (vs > 0.2) & (ts > 0.02)
    decel = -np.polyfit(ts[sliding], vs[sliding], 1)[0]
    assert decel == pytest.approx(0.5 * G, rel=0.02)
    sim.step(n=400)
    assert abs(sim.qd[3]) < 1e-3
    assert sim.base_pose[0, 3] == pytest.approx(2.0 ** 2 / (2 * 0.5 * G), rel=0.02)
    # sliding friction is not stiff (explicit RK4 steps until the box sticks): the balance
    # closes to 4e-5 of the 4 J dissipated (measured 1.6e-4 J at 1 ms, 4e-6 J at 0.5 ms)
    d = sim.diagnostics()
    assert d['work'] == pytest.approx(-0.5 * 2.0 * 2.0 ** 2, rel=1e-3)
    assert abs(d['energy_balance_error']) < 5e-4


@pytest.mark.parametrize('degrees', [20.0, 35.0])
def test_box_on_a_slope_slides_only_beyond_atan_mu(degrees):
    """μ = 0.5: atan μ = 26.6°.  20°: holds (creep below v_s atanh(tan θ / μ)); 35°: slides."""
    theta, mu = math.radians(degrees), 0.5
    xml = box_urdf(mu=mu)
    model = lm.load_urdf_string(xml, floating_base=True)
    n = np.array([math.sin(theta), 0.0, math.cos(theta)])
    cm = ContactModel(model, xml, planes=[(n, 0.0)])
    R = rot_y(theta)
    C = np.eye(4)
    C[:3, :3] = R
    C[:3, 3] = (0.05 - 2.0 * G * math.cos(theta) / (4 * cm.stiffness)) * n
    sim = Simulator(model, contact=cm, base_pose=C)
    downhill = np.array([math.cos(theta), 0.0, -math.sin(theta)])
    sim.step(n=100)
    s1, t1 = float(downhill @ sim.base_pose[:3, 3]), sim.t
    sim.step(n=400)
    s2, t2 = float(downhill @ sim.base_pose[:3, 3]), sim.t
    v = float(downhill @ (sim.base_pose[:3, :3] @ sim.qd[3:]))
    if math.tan(theta) < mu:
        creep = cm.friction_velocity * math.atanh(math.tan(theta) / mu)
        assert abs(v) <= 1.05 * creep
        assert abs(s2 - s1) <= 1.05 * creep * (t2 - t1)
    else:
        a = G * (math.sin(theta) - mu * math.cos(theta))
        # s(t) = s0 + ½ a t² from rest (the first 0.1 s included: sliding from the start)
        assert 2 * s2 / t2 ** 2 == pytest.approx(a, rel=0.02)
        assert v == pytest.approx(a * t2, rel=0.02)


def test_energy_balance_with_contact_converges():
    """
    Sphere dropped with a sideways spin and speed: E - E0 - W closes as the step shrinks.

    The impact is stiff (friction at rest); the step that meets it is implicit (ROS2,
    order 2) and over-counts the dissipation of what it stops within the step, so the
    balance error falls with h to the power 1.5..2 and is small against the energy lost.
    """
    xml = body_urdf('<sphere radius="0.1"/>', mu=0.3)
    model = lm.load_urdf_string(xml, floating_base=True)
    cm = ContactModel(model, xml)
    qd0 = np.array([0.0, 3.0, 0.0, 0.5, 0.0, 0.0])
    errs, lost = [], None
    for dt in (1e-3, 5e-4, 2.5e-4):
        sim = Simulator(model, contact=cm, base_pose=pose(0.2), qd0=qd0, dt=dt)
        sim.step(n=int(round(0.5 / dt)))
        d = sim.diagnostics()
        errs.append(abs(d['energy_balance_error']))
        lost = -d['work']
    assert lost > 0.9
    # measured: 0.22, 0.093, 0.026 J (0.0015 J at 0.125 ms) of 1.0 J dissipated
    assert errs[0] > errs[1] > errs[2] and errs[0] / errs[2] > 6.0
    assert errs[2] < 0.05 * lost


# -- a quadruped standing ----------------------------------------------------------------------
STANDING = np.array([0.1, 0.8, -1.6, -0.1, 0.8, -1.6, 0.1, -0.8, 1.6, -0.1, -0.8, 1.6])


@pytest.mark.slow
def test_solo12_stands_for_ten_seconds():
    """
    solo12 (example-robot-data, mesh collision) dropped 5 mm onto the ground under a joint
    PD posture hold with gravity compensation stands 10 s: base height in a 3 mm band,
    no drift beyond 3 mm; real-time factor reported.
    """
    path = erd_path('solo12')
    model = lm.load_urdf(path, floating_base=True)
    cm = ContactModel(model, path)
    sim = Simulator(model, contact=cm, base_pose=pose(0.24), q0=STANDING)
    kp, kd = 10.0, 0.1
    zs, xy = [], []
    for k in range(10000):
        if k == 1000:       # timed after the first second (kernels compiled, standing)
            start, cpu, inside = time.perf_counter(), time.process_time(), sim.wall_time
        g = lm.gravity_torques(model, sim.q, base_pose=sim.base_pose)[6:]
        sim.step(g + kp * (STANDING - sim.q) - kd * sim.qd[6:])
        if k % 10 == 0:
            zs.append(sim.base_pose[2, 3])
            xy.append(sim.base_pose[:2, 3].copy())
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    rtf = 9.0 / (sim.wall_time - inside)
    zs, xy = np.array(zs[100:]), np.array(xy[100:])     # after the first second
    feet = sorted({c.link for c in sim.contacts()})
    assert feet == ['FL_FOOT', 'FR_FOOT', 'HL_FOOT', 'HR_FOOT']
    assert 0.215 < zs.min() and zs.max() < 0.230
    assert np.ptp(zs) < 3e-3
    assert np.max(np.linalg.norm(xy - xy[0], axis=1)) < 3e-3
    force = sum(c.force for c in sim.contacts())
    weight = cm.mass * G
    assert force[2] == pytest.approx(weight, rel=0.01)
    print(f'\nsolo12 standing: base z {zs.min():.4f}..{zs.max():.4f} m, drift '
          f'{np.max(np.linalg.norm(xy - xy[0], axis=1)) * 1e3:.2f} mm, real-time factor '
          f'{rtf:.1f} (simulator), {9.0 / wall:.1f} (with the controller), '
          f'{9.0 / cpu:.1f} (its CPU time: on an idle core); '
          f"energy balance {sim.diagnostics()['energy_balance_error']:.3g} J")
    if os.environ.get('LIEMB_STRICT_TIMING') == '1':
        assert rtf >= 5.0


def test_box_pushed_into_a_wall_rests_on_two_planes():
    """Two planes: a 2 kg box pushed by 20 N (μ m g = 9.8 N) into a wall at x = 0.5 m."""
    xml = box_urdf(mu=0.5)
    model = lm.load_urdf_string(xml, floating_base=True)
    cm = ContactModel(model, xml, planes=[((0, 0, 1), 0.0), ((-1, 0, 0), -0.5)])
    sim = Simulator(model, contact=cm, base_pose=pose(0.05 - 2.0 * G / (4 * cm.stiffness)))
    sim.set_wrench('body', [0, 0, 0, 20.0, 0, 0], frame='world')
    sim.step(n=1500)
    # the four corners of the box's face on the wall share the 20 N
    assert sim.base_pose[0, 3] == pytest.approx(0.4 + 20.0 / (4 * cm.stiffness), abs=2e-5)
    assert np.max(np.abs(sim.qd)) < 1e-4
    total = {0: np.zeros(3), 1: np.zeros(3)}
    for c in sim.contacts():
        total[c.plane] += c.force
    assert np.allclose(total[1], [-20.0, 0, 0], atol=0.01)
    assert np.allclose(total[0], [0, 0, 2.0 * G], atol=0.01)


def test_a_collision_mesh_too_large_is_refused_unread(tmp_path):
    """A robot description may name any file as a collision mesh: a 2 GB (sparse) STL is
    refused by its size before a byte is read (it was read whole), naming the link."""
    import resource
    mesh = tmp_path / 'huge.stl'
    with open(mesh, 'wb') as f:
        f.truncate(2 * 10**9)
    urdf = ('<robot name="r"><link name="base"/><link name="body"><inertial><mass value="1"/>'
            '<inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>'
            f'<collision><geometry><mesh filename="{mesh}"/></geometry></collision></link>'
            '<joint name="j" type="floating"><parent link="base"/><child link="body"/>'
            '</joint></robot>')
    model = lm.load_urdf_string(urdf)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    with pytest.raises(ContactError, match=r"link 'body': .*huge\.stl: 2000000000 bytes, "
                                           r'over the 50000000 bytes it may have \(not read\)'):
        ContactModel(model, urdf)
    assert time.perf_counter() - start < 1.0
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100_000   # kB
