"""
MuJoCo as one more independent oracle: the same URDF, the same physics, the same answers.

MuJoCo (a test dependency, ``requirements-test.txt``) reads each URDF through its own importer
(``bench/_mujoco.py``: visuals and collisions removed, inertias kept exactly, fixed links
fused, gravity ours; damping, friction loss, armature and joint limits off) and computes with
its own algorithms: ``mj_inverse`` (recursive Newton-Euler), ``mj_forward`` (composite rigid
body mass matrix, factorised) and ``mj_step`` with its RK4.  Where the physics is the same
(fixed-base arms without contact) our results must equal its:

* inverse dynamics and forward dynamics at random states (``max|ours - MuJoCo| / max(1,
  max|MuJoCo|)``);
* the joint trajectory of our ``Simulator`` (explicit RK4, 1 ms, the ideal rigid-body robot)
  after 1 s under a torque profile (gravity compensation at ``q0`` plus a sinusoid per joint
  of amplitude ``M_jj(q0)`` [N m per rad/s²]), MuJoCo stepping RK4 at 1 ms with the same
  torque held over each step.

Each bound is 40-100x the agreement measured on this machine (stated beside it): a change in
either library that moves a result by more than rounding shows.  Floating bases are left out
(MuJoCo's free joint has a quaternion and a mixed-frame velocity; the single-call rows of
``bench/run.py`` check solo12 against Pinocchio instead).
"""
import os
import sys

import numpy as np
import pytest

import liemb_ros as lm
from liemb_ros.core import resources
from liemb_ros.sim.scenario import sample_configuration
from liemb_ros.sim.simulator import Simulator

from conftest import erd_path, REPO

mujoco = pytest.importorskip('mujoco')
sys.path.insert(0, os.path.join(REPO, 'bench'))
_mujoco = pytest.importorskip('_mujoco')   # bench/_mujoco.py: the URDF in MuJoCo

# robot: (ID, FD scaled error over 20 random states; joint q [rad] and q̇ [rad/s] after 1 s)
# measured: liemb_arm7 ID 1.1e-15, FD 1.0e-13, q 2.9e-12, q̇ 7.8e-11 (its light wrist spins
# 10 rad); panda ID 1.1e-15, FD 9.0e-15, q 1.8e-14, q̇ 8.3e-14; ur5 ID 2.5e-15, FD 7.4e-15,
# q 1.9e-15, q̇ 5.3e-15
BOUNDS = {
    'liemb_arm7': (1e-13, 5e-12, 2e-10, 5e-9),
    'panda': (1e-13, 5e-13, 1e-12, 5e-12),
    'ur5': (1e-13, 5e-13, 1e-13, 3e-13),
}


def _path(name):
    return resources.robot_path(name) if name == 'liemb_arm7' else erd_path(name)


def scaled(a, b):
    """``max|a - b| / max(1, max|b|)``: relative for large values, absolute for small."""
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))


@pytest.fixture(scope='module', params=list(BOUNDS))
def robot(request):
    """(name, our Model, MjRobot) of each arm: the ideal rigid-body robot, RK4 at 1 ms."""
    path = _path(request.param)
    model = lm.load_urdf(path)
    return request.param, model, _mujoco.MjRobot(model, path, integrator='RK4', dt=1e-3)


def test_same_bodies_and_gravity(robot):
    name, model, r = robot
    assert r.m.nv == model.nv and list(r.m.opt.gravity) == list(model.gravity)
    total = float(np.sum(r.m.body_mass))
    assert total == pytest.approx(sum(float(model.inertia[i][3, 3])
                                      for i in range(model.nb)), rel=1e-12)


def test_inverse_and_forward_dynamics_equal_mujoco(robot, rng):
    name, model, r = robot
    id_bound, fd_bound = BOUNDS[name][:2]
    err_id = err_fd = 0.0
    for _ in range(20):
        q = model.random_configuration(rng)
        qd, qdd, tau = rng.standard_normal((3, model.nv))
        r.set_joint_state(q, qd, qacc=qdd)
        mujoco.mj_inverse(r.m, r.d)
        err_id = max(err_id, scaled(lm.inverse_dynamics(model, q, qd, qdd),
                                    r.joints(r.d.qfrc_inverse)))
        r.set_joint_state(q, qd, tau=tau)
        mujoco.mj_forward(r.m, r.d)
        err_fd = max(err_fd, scaled(lm.forward_dynamics(model, q, qd, tau), r.joints(r.d.qacc)))
    print(f'\n{name}: inverse dynamics {err_id:.1e}, forward dynamics {err_fd:.1e} '
          '(scaled error vs MuJoCo)')
    assert err_id <= id_bound
    assert err_fd <= fd_bound


def _torque_profile(model):
    """``q0`` and ``tau(t)``: gravity compensation at ``q0`` plus a sinusoid per joint."""
    q0 = sample_configuration(model)
    g0 = lm.gravity_torques(model, q0)
    amp = np.diag(lm.mass_matrix(model, q0))
    w = 2.0 * np.pi * np.arange(1, model.nq + 1) / model.nq   # 1/n ... 1 Hz

    def tau(t):
        return g0 + amp * np.sin(w * t)
    return q0, tau


def _mujoco_run(r, q0, tau, n):
    """Step MuJoCo ``n`` steps of 1 ms from ``q0`` at rest, ``tau`` held over each step."""
    r.set_joint_state(q0, np.zeros(r.m.nv))
    r.d.time = 0.0
    for k in range(n):
        r.set_joint_state(r.joints(r.d.qpos), tau=tau(k * 1e-3))
        mujoco.mj_step(r.m, r.d)


def test_simulated_trajectory_equals_mujoco_rk4(robot):
    name, model, r = robot
    q_bound, qd_bound = BOUNDS[name][2:]
    q0, tau = _torque_profile(model)
    sim = Simulator(model, dt=1e-3, integrator='rk4', damping=0.0, friction=0.0,
                    limits=False, effort_limits=False, armature=0.0,
                    damping_method='explicit', q0=q0)
    sim.step(tau, n=1000)
    _mujoco_run(r, q0, tau, 1000)
    assert sim.t == pytest.approx(1.0) and r.d.time == pytest.approx(1.0)
    dq = float(np.max(np.abs(sim.q - r.joints(r.d.qpos))))
    dqd = float(np.max(np.abs(sim.qd - r.joints(r.d.qvel))))
    moved = float(np.max(np.abs(sim.q - q0)))
    print(f'\n{name}: after 1 s (joints moved up to {moved:.2f} rad) |q - q_MuJoCo| {dq:.1e} '
          f'rad, |q̇ - q̇_MuJoCo| {dqd:.1e} rad/s')
    assert moved > 0.5     # the profile drives a real motion, not a rest state
    assert dq <= q_bound
    assert dqd <= qd_bound


def test_semi_implicit_euler_equals_mujoco_euler(robot):
    """
    ``integrator='semi_implicit_euler'`` is MuJoCo's ``Euler``: damping and armature too.

    MuJoCo's Euler integrator takes the joint damping implicitly, ``(M + h D) q̈ = f``, then
    ``q̇ += h q̈``, ``q += h q̇``: ours with the same damping and armature per joint (the
    bounds of the RK4 test; measured on the arm 1.6e-15 rad).
    """
    name, model, _ = robot
    q_bound, qd_bound = BOUNDS[name][2:]
    r = _mujoco.MjRobot(model, _path(name), integrator='EULER', dt=1e-3)
    damping = np.linspace(0.5, 2.0, model.nq)
    armature = np.linspace(0.01, 0.1, model.nq)
    r.m.dof_damping[r.dadr] = damping
    r.m.dof_armature[r.dadr] = armature
    q0, tau = _torque_profile(model)
    sim = Simulator(model, dt=1e-3, integrator='semi_implicit_euler', damping=damping,
                    friction=0.0, limits=False, effort_limits=False, armature=armature, q0=q0)
    sim.step(tau, n=1000)
    _mujoco_run(r, q0, tau, 1000)
    dq = float(np.max(np.abs(sim.q - r.joints(r.d.qpos))))
    dqd = float(np.max(np.abs(sim.qd - r.joints(r.d.qvel))))
    print(f'\n{name}: semi-implicit Euler after 1 s |q - q_MuJoCo| {dq:.1e} rad, '
          f'|q̇ - q̇_MuJoCo| {dqd:.1e} rad/s (moved {np.max(np.abs(sim.q - q0)):.2f} rad)')
    assert np.max(np.abs(sim.q - q0)) > 0.2
    assert dq <= q_bound
    assert dqd <= qd_bound
