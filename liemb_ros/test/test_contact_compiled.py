"""
The contacts' compiled evaluation and ROS2 step against numpy and the Python path.

The near pairs (``sim/_contact_forces.py``), which look at a link's spheres only where a
sphere about all of them is near a plane, are the pairs of every sphere and plane by the
gap formula of ``sim/contact.py``'s module docstring; the diagonal bound of ``is_stiff``
is numpy's.  The ROS2 step with the contacts compiled whole (``sim/_contact_step.py``) is
the Python path's (``_JointCoordinates._ros2``, switched to by ``_compiled_contact =
False``) to the last bit: states, work, the contacts' work and forces, on a floating base
(solo12 landing and standing, a wrench for part of the run, which the Python path steps)
and a fixed one with an armature (a pendulum swung onto the ground), and its errors.
"""
import numpy as np
import pytest

import liemb_ros as lm
from liemb_ros.sim._contact_forces import _diagonal_rate_exceeds
from liemb_ros.sim.contact import ContactModel
from liemb_ros.sim.simulator import Simulator

from conftest import erd_path


def _pairs_by_numpy(cm, q, base, margin):
    """Every (sphere, plane) pair with ``n·c - d - ρ < margin``: keys, points, gaps."""
    Cs = lm.forward_kinematics(cm.model, q, base_pose=base)
    C = Cs[cm.point_link]
    c = np.einsum('nij,nj->ni', C[:, :3, :3], cm.point_pos) + C[:, :3, 3]
    hc = c @ cm.normals.T - cm.offsets                      # (spheres, planes)
    gap = hc - cm.point_radius[:, None]
    i, j = np.nonzero(gap < margin)
    x = c[i] - hc[i, j, None] * cm.normals[j]
    return i * len(cm.offsets) + j, x, gap[i, j]


@pytest.mark.parametrize('margin', [0.0, 5e-3, 0.05, np.inf])
def test_near_pairs_are_every_pair_within_the_margin(margin):
    """solo12 over two planes at random postures and heights: the same pairs, x and gaps."""
    path = erd_path('solo12')
    model = lm.load_urdf(path, floating_base=True)
    cm = ContactModel(model, path, planes=[((0.0, 0.0, 1.0), 0.0),
                                           ((1.0, 0.0, 0.2), 0.15)])
    rng = np.random.default_rng(3)
    found = 0
    for _ in range(40):
        q = rng.uniform(-1.5, 1.5, model.nq)
        base = np.eye(4)
        a = rng.uniform(-0.6, 0.6)
        base[:3, :3] = [[np.cos(a), 0.0, np.sin(a)], [0.0, 1.0, 0.0],
                        [-np.sin(a), 0.0, np.cos(a)]]
        base[:3, 3] = (rng.uniform(-0.1, 0.1), 0.0, rng.uniform(0.05, 0.4))
        keys, x, gap = _pairs_by_numpy(cm, q, base, margin)
        n = cm._evaluate(q, np.zeros(model.nv), base, margin, None, None, None)[0][0]
        assert np.array_equal(cm._keys[:n], keys)
        np.testing.assert_allclose(cm._x[:n], x, rtol=0, atol=1e-12)
        np.testing.assert_allclose(cm._gap[:n], gap, rtol=0, atol=1e-12)
        found += n
    assert found > 0


def test_diagonal_bound_is_numpys():
    """``max(diag(A) / diag(M)) > limit`` as numpy says it, NaN (no decision) included."""
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(1, 8))
        M = np.diag(rng.uniform(0.1, 2.0, n))
        A = np.diag(rng.uniform(0.0, 10.0, n))
        if rng.uniform() < 0.2:
            A[rng.integers(n), rng.integers(n)] = np.nan
        limit = rng.uniform(0.0, 20.0)
        with np.errstate(invalid='ignore'):
            expected = bool(np.max(np.diag(A) / np.diag(M)) > limit)
        assert _diagonal_rate_exceeds(M, A, limit) == expected


STANDING = np.array([0.1, 0.8, -1.6, -0.1, 0.8, -1.6, 0.1, -0.8, 1.6, -0.1, -0.8, 1.6])

PENDULUM = """<robot name="p"><link name="base"/>
<joint name="j" type="revolute"><parent link="base"/><child link="arm"/>
<origin xyz="0 0 0.3"/><axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="10"
velocity="10"/></joint>
<link name="arm"><inertial><origin xyz="0 0 -0.25"/><mass value="1.0"/>
<inertia ixx="0.001" iyy="0.001" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial>
<collision><origin xyz="0 0 -0.25"/><geometry><sphere radius="0.08"/></geometry>
</collision></link></robot>"""


def _solo12(compiled):
    path = erd_path('solo12')
    model = lm.load_urdf(path, floating_base=True)
    base = np.eye(4)
    base[2, 3] = 0.24
    sim = Simulator(model, dt=1e-3, contact=ContactModel(model, path), base_pose=base,
                    q0=STANDING)
    sim._backend._compiled_contact = compiled
    g = lm.gravity_torques(model, STANDING, base_pose=base)[6:]
    return sim, lambda k: g + 10.0 * (STANDING - sim.q) - 0.1 * sim.qd[6:]


def _pendulum(compiled):
    model = lm.load_urdf_string(PENDULUM)
    sim = Simulator(model, dt=1e-3, contact=ContactModel(model, PENDULUM, friction=0.8),
                    q0=np.array([-1.2]), armature=0.02)
    sim._backend._compiled_contact = compiled
    return sim, lambda k: np.array([3.0 if k < 300 else 0.0])


def _record(make, compiled, steps, wrench=None):
    """The states, work and contacts of ``steps`` steps; ``wrench``: (link, W, from, to)."""
    sim, law = make(compiled)
    out = []
    for k in range(steps):
        if wrench is not None and k == wrench[2]:
            sim.set_wrench(wrench[0], wrench[1])
        if wrench is not None and k == wrench[3]:
            sim.clear_wrenches()
        sim.step(law(k))
        d = sim.diagnostics()
        base = sim.base_pose.reshape(-1) if sim.model.floating else []
        out.append(np.concatenate([sim.q, sim.qd, base,
                                   [d['work'], d['contact_energy'], d['contact_work']]]))
    forces = [(c.link, c.point, c.force) for c in sim.contacts()]
    return np.array(out), forces


@pytest.mark.parametrize('make, steps, wrench', [
    (_solo12, 600, ('base_link', np.array([0.0, 0.0, 0.0, 30.0, 0.0, -40.0]), 200, 260)),
    (_pendulum, 800, None),
])
def test_compiled_contact_steps_are_the_python_steps(make, steps, wrench):
    """Every state, the work and the contacts bit for bit, with the contacts touching."""
    a, fa = _record(make, True, steps, wrench)
    b, fb = _record(make, False, steps, wrench)
    assert np.array_equal(a, b)
    assert fa and len(fa) == len(fb)
    for (la, xa, Fa), (lb, xb, Fb) in zip(fa, fb):
        assert la == lb and np.array_equal(xa, xb) and np.array_equal(Fa, Fb)


def test_compiled_contact_step_raises_the_python_errors():
    """A non-finite applied torque in contact: the same error from both paths."""
    messages = []
    for compiled in (True, False):
        sim, law = _solo12(compiled)
        sim.step(law(0), n=20)
        with pytest.raises(ValueError) as err:
            sim._backend.y[sim._backend.v_start] = np.nan
            sim._backend.advance(sim.t, 1e-3)
        messages.append(str(err.value))
    assert messages[0] == messages[1]
