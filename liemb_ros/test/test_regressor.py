"""
The joint-torque regressor ``τ = Y π`` against Pinocchio, our inverse dynamics and closed forms.

Pinocchio's ``computeJointTorqueRegressor`` (same ten parameters per body, same order, the
inertia about the joint frame = our body frame) on robots of example-robot-data and on
random trees rebuilt joint by joint in Pinocchio; ``Y π`` against our inverse dynamics with
the model's own parameters (also helical joints, screws off the frame origin, mimic
coupling); the friction and armature columns against their closed forms; batches against
the single call.
"""
import numpy as np
import pinocchio as pin
import pytest

import liemb_ros as lm
from liemb_ros.core import identification as ID
from liemb_ros.core.model.synthetic import random_model, random_pose
from conftest import SWAP, erd_path
from test_dynamics import pin_q, pin_setup


def scaled(a, b):
    """``max|a - b| / max(1, max|b|)``."""
    return np.abs(a - b).max() / max(1.0, np.abs(b).max())


def columns(model, pm):
    """Pinocchio's column of each of ours: body ``b`` is the joint of its coordinate."""
    cols = list(range(10)) if model.floating else []
    for b in range(model.nb):
        jid = pm.getJointId(model.joint_names[model.q_index[b]])
        cols += range(10 * (jid - 1), 10 * jid)
    return np.array(cols)


def pin_tree(model):
    """Pinocchio's model of a random tree of R, P, H joints with screws through frame origins."""
    pm = pin.Model()
    pm.gravity = pin.Motion(np.r_[model.gravity, 0.0, 0.0, 0.0])
    pi = ID.inertial_parameters(model).reshape(-1, 10)
    off = 0
    if model.floating:
        jid = pm.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), 'base')
        pm.appendBodyToJoint(jid, pin.Inertia.FromDynamicParameters(pi[0]), pin.SE3.Identity())
        off = 1
    for i in range(model.nb):
        e, d = model.X[i, :3], model.X[i, 3:]
        if np.linalg.norm(e) < 1e-12:
            joint = pin.JointModelPrismaticUnaligned(d)
        elif abs(e @ d) > 1e-12:
            joint = pin.JointModelHelicalUnaligned(e, e @ d)
        else:
            assert np.abs(d).max() < 1e-12   # through the origin: Pinocchio's joints are
            joint = pin.JointModelRevoluteUnaligned(e)
        A = model.A_rel[i]
        jid = pm.addJoint(int(model.parent[i]) + 1 + off, joint, pin.SE3(A[:3, :3], A[:3, 3]),
                          model.joint_names[i])
        pm.appendBodyToJoint(jid, pin.Inertia.FromDynamicParameters(pi[off + i]),
                             pin.SE3.Identity())
    return pm


def state(model, rng):
    q = model.random_configuration(rng)
    qd, qdd = rng.standard_normal((2, model.nv))
    return q, qd, qdd, random_pose(rng) if model.floating else None


# --------------------------------------------------------------------------- Pinocchio
@pytest.mark.parametrize('name', ['ur5', 'panda', 'solo12'])
def test_against_pinocchio(name, rng):
    model, pm, data, P, Pq = pin_setup(name)
    cols = columns(model, pm)
    pi_pin = np.concatenate([pm.inertias[j].toDynamicParameters() for j in range(1, pm.njoints)])
    pi = lm.inertial_parameters(model)
    np.testing.assert_allclose(pi, pi_pin[cols], rtol=0, atol=1e-12 * np.abs(pi).max())
    for _ in range(3):
        q, qd, qdd, base = state(model, rng)
        Y = lm.regressor(model, q, qd, qdd, base_pose=base)
        Yp = pin.computeJointTorqueRegressor(pm, data, pin_q(model, Pq, q, base), P @ qd, P @ qdd)
        assert scaled(P @ Y, Yp[:, cols]) < 1e-12
        tau = lm.inverse_dynamics(model, q, qd, qdd, base_pose=base)
        assert scaled(Y @ pi, tau) < 1e-12


@pytest.mark.parametrize('floating', [False, True])
def test_against_pinocchio_on_random_trees(floating, rng):
    for seed in range(3):
        model = random_model(8, seed, branching=0.5, floating=floating, offset_screws=False)
        pm = pin_tree(model)
        data = pm.createData()
        P = np.eye(model.nv)
        if floating:
            P[:6, :6] = SWAP
        for _ in range(2):
            q, qd, qdd, base = state(model, rng)
            qp = q
            if floating:
                qp = np.r_[pin.SE3ToXYZQUAT(pin.SE3(base[:3, :3], base[:3, 3])), q]
            Y = lm.regressor(model, q, qd, qdd, base_pose=base)
            Yp = pin.computeJointTorqueRegressor(pm, data, qp, P @ qd, P @ qdd)
            assert scaled(P @ Y, Yp) < 1e-12
            assert scaled(Y @ lm.inertial_parameters(model),
                          lm.inverse_dynamics(model, q, qd, qdd, base_pose=base)) < 1e-12


# --------------------------------------------------------------------------- Y π = τ
@pytest.mark.parametrize('floating', [False, True])
def test_y_pi_is_inverse_dynamics(floating, rng):
    """Helical joints, screws off the frame origin, any gravity, a base pose given."""
    for seed in range(3):
        model = random_model(9, seed, branching=0.4, floating=floating).replace(
            gravity=rng.standard_normal(3))
        pi = lm.inertial_parameters(model)
        for _ in range(3):
            q, qd, qdd, base = state(model, rng)
            base = random_pose(rng)
            tau = lm.inverse_dynamics(model, q, qd, qdd, base_pose=base)
            assert scaled(lm.regressor(model, q, qd, qdd, base_pose=base) @ pi, tau) < 1e-12


def test_mimic_coupled_rows_add_to_the_leader(rng):
    """A mimic-coupled Panda: ``Y_coupled = Pᵀ Y_full`` with ``q_full = P q + offset``."""
    path = erd_path('panda')
    full = lm.load_urdf(path)
    coupled = lm.load_urdf(path, mimic='couple')
    assert coupled.shared_coordinates
    lead, mult, off = coupled.mimic['panda_finger_joint2']
    P = np.zeros((full.nq, coupled.nq))
    for k, jn in enumerate(full.joint_names):
        P[k, coupled.joint_index(lead if jn == 'panda_finger_joint2' else jn)] = (
            mult if jn == 'panda_finger_joint2' else 1.0)
    shift = np.array([off if jn == 'panda_finger_joint2' else 0.0 for jn in full.joint_names])
    q, qd, qdd = (rng.standard_normal(coupled.nq) for _ in range(3))
    Y = lm.regressor(coupled, q, qd, qdd)
    np.testing.assert_allclose(Y, P.T @ lm.regressor(full, P @ q + shift, P @ qd, P @ qdd),
                               rtol=0, atol=1e-12 * np.abs(Y).max())
    assert scaled(Y @ lm.inertial_parameters(coupled),
                  lm.inverse_dynamics(coupled, q, qd, qdd)) < 1e-12


# --------------------------------------------------------------------------- joint terms
def test_friction_and_armature_columns(rng):
    """``Y π`` with the joint terms: ``τ + f_v q̇ + f_c sign(q̇) + a q̈``, ``a`` as in ``M``."""
    model = lm.load_urdf(erd_path('solo12'), floating_base=True)
    n, nq = 10 * (model.nb + 1), model.nq
    q, qd, qdd, base = state(model, rng)
    qd[6 + 3] = 0.0                       # sign(0) = 0
    Y = lm.regressor(model, q, qd, qdd, base_pose=base, friction=True, armature=True)
    assert Y.shape == (model.nv, n + 3 * nq)
    np.testing.assert_array_equal(Y[:, :n], lm.regressor(model, q, qd, qdd, base_pose=base))
    joints = np.zeros((model.nv, nq))
    joints[6:] = np.eye(nq)
    np.testing.assert_array_equal(Y[:, n:n + nq], joints * qd[6:])
    np.testing.assert_array_equal(Y[:, n + nq:n + 2 * nq], joints * np.sign(qd[6:]))
    assert Y[6 + 3, n + nq + 3] == 0.0
    np.testing.assert_array_equal(Y[:, n + 2 * nq:], joints * qdd[6:])
    np.testing.assert_array_equal(
        lm.regressor(model, q, qd, qdd, base_pose=base, armature=True)[:, n:], Y[:, n + 2 * nq:])
    fv, fc, a = rng.uniform(0.1, 1.0, (3, nq))
    pi = np.r_[lm.inertial_parameters(model), fv, fc, a]
    M = lm.mass_matrix(model, q, base_pose=base, armature=a)
    bias = lm.inverse_dynamics(model, q, qd, 0 * qdd, base_pose=base)
    expect = M @ qdd + bias + np.r_[np.zeros(6), fv * qd[6:] + fc * np.sign(qd[6:])]
    assert scaled(Y @ pi, expect) < 1e-12


def test_parameter_names():
    model = lm.load_urdf(erd_path('solo12'), floating_base=True)
    names = lm.parameter_names(model, friction=True, armature=True)
    assert len(names) == len(set(names)) == lm.regressor(
        model, model.neutral(), np.zeros(model.nv), np.zeros(model.nv), friction=True,
        armature=True).shape[1]
    assert names[:11] == [f'base_link.{p}' for p in ID.PARAMETERS] + ['FL_SHOULDER.m']
    assert names[-1] == 'HR_KFE.armature' and names[10 * 13] == 'FL_HAA.fv'
    assert names[10 * 13 + 12] == 'FL_HAA.fc'
    ur5 = lm.load_urdf(erd_path('ur5'))
    assert lm.parameter_names(ur5)[3:6] == ['shoulder_link.mcz', 'shoulder_link.Ixx',
                                            'shoulder_link.Ixy']
    assert len(lm.parameter_names(ur5, armature=True)) == 66


# --------------------------------------------------------------------------- batches
def test_batch_equals_loop_and_threads(rng, monkeypatch):
    from liemb_ros.core._kernels import dispatch
    monkeypatch.setattr(dispatch, 'CHUNK_NS', 0)   # split a few configurations
    model = random_model(6, 3, branching=0.5, floating=True)
    B = 7
    Q = np.array([model.random_configuration(rng) for _ in range(B)])
    QD, QDD = rng.standard_normal((2, B, model.nv))
    bases = np.array([random_pose(rng) for _ in range(B)])
    Y = lm.regressor(model, Q, QD, QDD, base_pose=bases, friction=True, threads=1)
    assert Y.shape == (B, model.nv, 10 * 7 + 2 * 6)
    for k in range(B):
        np.testing.assert_array_equal(Y[k], lm.regressor(model, Q[k], QD[k], QDD[k],
                                                         base_pose=bases[k], friction=True))
    for threads in (2, 3):
        np.testing.assert_array_equal(lm.regressor(model, Q, QD, QDD, base_pose=bases,
                                                   friction=True, threads=threads), Y)
    one = lm.regressor(model, Q, QD, QDD, base_pose=bases[0])
    np.testing.assert_array_equal(one[2], lm.regressor(model, Q[2], QD[2], QDD[2], bases[0]))
    out = np.full(one.shape, np.nan)
    assert lm.regressor(model, Q, QD, QDD, bases[0], out=out) is out
    np.testing.assert_array_equal(out, one)
    out = np.full(one.shape[1:], np.nan)
    assert lm.regressor(model, Q[2], QD[2], QDD[2], bases[0], out=out) is out
    np.testing.assert_array_equal(out, one[2])


def test_bad_input(rng):
    model = random_model(4, 1)
    q, qd, qdd, _ = state(model, rng)
    nan = q.copy()
    nan[1] = np.nan
    with pytest.raises(ValueError, match=r'q must have shape \(4,\)'):
        lm.regressor(model, q[:3], qd, qdd)
    with pytest.raises(ValueError, match='batch shapes differ'):
        lm.regressor(model, np.zeros((2, 4)), np.zeros((3, 4)), np.zeros((2, 4)))
    with pytest.raises(ValueError, match='base_pose must be a 4x4 pose'):
        lm.regressor(model, q, qd, qdd, base_pose=np.eye(3))
    with pytest.raises(ValueError, match='threads must be a positive integer'):
        lm.regressor(model, q, qd, qdd, threads=0)
    with pytest.raises(ValueError, match=r'out must be .* of shape \(4, 48\)'):
        lm.regressor(model, q, qd, qdd, friction=True, out=np.empty((4, 40)))
    buf = np.zeros((4, 40))
    with pytest.raises(ValueError, match='out overlaps qd'):
        lm.regressor(model, q, buf[0, :4], qdd, out=buf)
    for args, what in (((nan, qd, qdd), 'q'), ((q, nan, qdd), 'qd'), ((q, qd, nan), 'qdd')):
        with pytest.raises(ValueError, match=f'^{what} contains NaN'):
            lm.regressor(model, *args)
        with pytest.raises(ValueError, match=f'^{what} contains NaN'):
            lm.regressor(model, *(np.stack([x, x]) for x in args))
    with pytest.raises(ValueError, match='base_pose contains NaN'):
        lm.regressor(model, q, qd, qdd, base_pose=np.full((4, 4), np.inf))
