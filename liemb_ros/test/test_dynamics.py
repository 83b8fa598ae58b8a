"""Inverse/forward dynamics, mass and Coriolis matrices against Pinocchio, Lagrange and energy."""
import ast
import os
import subprocess
import sys

import numpy as np
import pinocchio as pin
import pytest
import scipy.linalg as sla

import liemb_ros as lm
from liemb_ros.core import dynamics as D
from liemb_ros.core._kernels import inertia as KI
from liemb_ros.core.kinematics import body_poses, body_twists
from liemb_ros.core._kernels.lie import Ad_matrix_into
from liemb_ros.core.model import Model
from liemb_ros.core.model.joints import prismatic_screw, revolute_screw
from liemb_ros.core.model.synthetic import random_inertia, random_model, random_pose
from conftest import ROOT, SWAP, erd_path


# --------------------------------------------------------------------------- helpers
def make_tree(rng, n=7, floating=False, gravity=(0.0, 0.0, -9.81), massless_leaf=False):
    """Build a random tree of R/P/H joints (random link offsets, gravity, massless leaf)."""
    parent, kind, S_parent, S_child, JX, inertia = [], [], [], [], [], []
    for i in range(n):
        parent.append(-1 if i == 0 else int(rng.integers(-1 if floating else 0, i)))
        k = int(rng.integers(3))
        axis, point = rng.standard_normal(3), 0.3 * rng.standard_normal(3)
        screw = (prismatic_screw(axis) if k == 1 else
                 revolute_screw(axis, point, rng.uniform(-0.3, 0.3) if k == 2 else 0.0))
        kind.append(k)
        S_parent.append(random_pose(rng))
        S_child.append(random_pose(rng, 0.2))
        JX.append(screw)
        inertia.append(random_inertia(rng))
    if massless_leaf:
        inertia[-1] = np.zeros((6, 6))
        parent[-1] = n - 2
    names = [f'b{i}' for i in range(n)]
    offsets = [np.eye(4)] + [random_pose(rng, 0.3) for _ in range(n)]
    return Model(name='tree', source='<test>', body_names=names, parent=parent, kind=kind,
                 S_parent=S_parent, S_child=S_child, JX=JX, inertia=inertia,
                 base_inertia=random_inertia(rng) if floating else np.zeros((6, 6)),
                 joint_names=[f'j{i}' for i in range(n)], q_index=np.arange(n),
                 q_mult=np.ones(n), q_offset=np.zeros(n), link_names=['base'] + names,
                 link_body=[-1] + list(range(n)), link_offset=offsets, floating=floating,
                 root_link='base', base_link='base', lower=np.full(n, -np.inf),
                 upper=np.full(n, np.inf), velocity_limit=np.full(n, np.inf),
                 effort_limit=np.full(n, np.inf), damping=np.zeros(n), friction=np.zeros(n),
                 gravity=gravity)


def state(model, rng):
    """Random q, qd, qdd, base pose (None for a fixed base) and link wrenches."""
    base = random_pose(rng) if model.floating else None
    return (rng.standard_normal(model.nq), rng.standard_normal(model.nv),
            rng.standard_normal(model.nv), base,
            rng.standard_normal((len(model.link_names), 6)))


def hat6(X):
    w = X[:3]
    M = np.zeros((4, 4))
    M[:3, :3] = [[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]]
    M[:3, 3] = X[3:]
    return M


def advance(model, q, base, qd, t):
    """Return the configuration after moving for time ``t`` at velocity ``qd`` (base on SE(3))."""
    nb = model.nv - model.nq
    qt = q + t * qd[nb:]
    if model.floating:
        return qt, base @ sla.expm(hat6(t * qd[:6]))
    return qt, base


def energies(model, q, qd, base):
    """Return kinetic (from body twists) and potential (from the COMs) energy, independently."""
    V = body_twists(model, q, qd, 'body', base_pose=base)
    T = 0.5 * sum(V[i] @ model.inertia[i] @ V[i] for i in range(model.nb))
    U = 0.0
    poses = list(zip(model.inertia, body_poses(model, q, base_pose=base)))
    if model.floating:
        T += 0.5 * qd[:6] @ model.base_inertia @ qd[:6]
        poses.append((model.base_inertia, np.eye(4) if base is None else base))
    for M, C in poses:
        m = M[3, 3]
        if m > 0:
            mc = M[:3, 3:]          # m c~  ([M18d] eq. (40))
            c = np.array([mc[2, 1], mc[0, 2], mc[1, 0]]) / m
            U -= m * model.gravity @ (C[:3, :3] @ c + C[:3, 3])
    return T, U


def pin_setup(name):
    """Return our model, Pinocchio's, its data and the permutation P with v_pin = P v_ours."""
    path = erd_path(name)
    floating = name == 'solo12'
    model = lm.load_urdf(path, floating_base=floating)
    pm = (pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating
          else pin.buildModelFromUrdf(path))
    P = np.zeros((model.nv, model.nv))
    Pq = np.zeros((pm.nq, model.nq), dtype=int)
    off = 6 if floating else 0
    if floating:
        P[:6, :6] = SWAP
    for k, jn in enumerate(model.joint_names):
        j = pm.joints[pm.getJointId(jn)]
        P[j.idx_v, off + k] = 1.0
        Pq[j.idx_q, k] = 1
    return model, pm, pm.createData(), P, Pq


def pin_q(model, Pq, q, base):
    """Return the Pinocchio configuration of ours (free flyer: xyz, quaternion xyzw)."""
    qp = Pq @ q
    if model.floating:
        qp = qp.astype(float)
        qp[:7] = pin.SE3ToXYZQUAT(pin.SE3(base[:3, :3], base[:3, 3]))
    return qp.astype(float)


def pin_fext(model, pm, f):
    """Pinocchio's ``fext`` (per joint, joint frame, linear first) of our link wrenches ``f``."""
    fext = pin.StdVec_Force()
    for _ in range(pm.njoints):
        fext.append(pin.Force.Zero())
    for li, ln in enumerate(model.link_names):
        fr = pm.frames[pm.getFrameId(ln)]
        fext[fr.parentJoint] += fr.placement.act(pin.Force(f[li, 3:], f[li, :3]))
    return fext


# --------------------------------------------------------------------------- three forms
@pytest.mark.parametrize('seed', range(3))
@pytest.mark.parametrize('floating', [False, True])
@pytest.mark.parametrize('gravity', [(0.0, 0.0, 0.0), (0.3, -1.2, -9.81)])
def test_three_forms_agree(seed, floating, gravity):
    rng = np.random.default_rng(seed)
    model = make_tree(rng, 8, floating, gravity)
    for fext in (None, 'random'):
        q, qd, qdd, base, f = state(model, rng)
        f = None if fext is None else f
        taus = [D.inverse_dynamics(model, q, qd, qdd, form, f_ext=f, base_pose=base)
                for form in D.FORMS]
        scale = np.abs(taus[0]).max()
        for tau in taus[1:]:
            assert np.abs(tau - taus[0]).max() <= 1e-12 * scale


@pytest.mark.parametrize('floating', [False, True])
def test_three_forms_agree_on_synthetic_trees(floating):
    """The same check on ``synthetic.random_model`` trees (screws off the frame origins)."""
    for seed in range(3):
        rng = np.random.default_rng(100 + seed)
        model = random_model(9, rng, branching=0.5, floating=floating)
        q, qd, qdd, base, f = state(model, rng)
        for fext in (None, f):
            taus = [D.inverse_dynamics(model, q, qd, qdd, form, f_ext=fext, base_pose=base)
                    for form in D.FORMS]
            for tau in taus[1:]:
                assert np.abs(tau - taus[0]).max() <= 1e-12 * np.abs(taus[0]).max()


def test_gravity_trick_equals_explicit_gravity_wrenches(rng):
    """V̇_0 = (0, -g) equals applying W_i = M_i (0, R_iᵀ g) on every body
    (docs/theory/recursions.md#gravity-and-applied-wrenches)."""
    g = np.array([0.4, -0.7, -9.81])
    model = make_tree(np.random.default_rng(5), 7, gravity=g)
    free = make_tree(np.random.default_rng(5), 7, gravity=(0.0, 0.0, 0.0))
    assert np.array_equal(free.X, model.X)
    q, qd, qdd, _, _ = state(model, rng)
    poses = body_poses(model, q)
    W = {}
    for i in range(model.nb):
        w = model.inertia[i] @ np.concatenate([np.zeros(3), poses[i][:3, :3].T @ g])
        T = model.link_offset[i + 1]          # link frame in the body frame
        Ad = np.empty((6, 6))
        Ad_matrix_into(T, Ad)
        W[model.link_names[i + 1]] = Ad.T @ w  # the same wrench in the link frame
    for form in D.FORMS:
        np.testing.assert_allclose(D.inverse_dynamics(free, q, qd, qdd, form, f_ext=W),
                                   D.inverse_dynamics(model, q, qd, qdd, form), atol=1e-11)


def test_frame_choice_invariance(rng):
    """Moving body frames (C_i -> C_i S_i) leaves the torques unchanged ([M18d] §4.4)."""
    model = make_tree(rng, 6, floating=True)
    q, qd, qdd, base, _ = state(model, rng)
    moved = model
    for b in range(model.nb):
        moved = moved.moved_body_frame(b, random_pose(rng))
    for form in D.FORMS:
        np.testing.assert_allclose(D.inverse_dynamics(moved, q, qd, qdd, form, base_pose=base),
                                   D.inverse_dynamics(model, q, qd, qdd, form, base_pose=base),
                                   rtol=1e-11, atol=1e-11)


# --------------------------------------------------------------------------- Pinocchio
@pytest.mark.parametrize('name', ['ur5', 'panda', 'solo12'])
def test_against_pinocchio(name, rng):
    model, pm, data, P, Pq = pin_setup(name)
    for _ in range(5):
        q = model.random_configuration(rng)
        base = random_pose(rng) if model.floating else None
        qd, qdd, tau = (rng.standard_normal(model.nv) for _ in range(3))
        qp, vp, ap = pin_q(model, Pq, q, base), P @ qd, P @ qdd
        for form in D.FORMS:
            np.testing.assert_allclose(
                P @ D.inverse_dynamics(model, q, qd, qdd, form, base_pose=base),
                pin.rnea(pm, data, qp, vp, ap), atol=1e-10, err_msg=form)
        # joint wrenches: data.f[i] is the wrench joint i transmits, in its (child) frame
        W = D.joint_wrenches(model, q, qd, qdd, base_pose=base)
        for k, jn in enumerate(model.joint_names):
            np.testing.assert_allclose(W[k], SWAP @ data.f[pm.getJointId(jn)].vector,
                                       atol=1e-10, err_msg=jn)
        M = D.mass_matrix(model, q, base_pose=base)
        Mp = pin.crba(pm, data, qp)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        np.testing.assert_allclose(P @ M @ P.T, Mp, atol=1e-10)
        np.testing.assert_allclose(P @ D.gravity_torques(model, q, base_pose=base),
                                   pin.computeGeneralizedGravity(pm, data, qp), atol=1e-10)
        # ABA: the largest error over 200 states per robot is 1.3e-15 (ur5), 2.8e-15 (panda),
        # 9.9e-16 (solo12) of the largest acceleration; absolute 2.8e-14, 4.3e-13, 5.5e-12
        qdd_pin = pin.aba(pm, data, qp, vp, P @ tau)
        np.testing.assert_allclose(P @ D.forward_dynamics(model, q, qd, tau, base_pose=base),
                                   qdd_pin, rtol=0, atol=1e-12 * np.abs(qdd_pin).max())
        C = D.coriolis_matrix(model, q, qd, base_pose=base)
        Cp = P.T @ pin.computeCoriolisMatrix(pm, data, qp, vp) @ P
        np.testing.assert_allclose(C @ qd, Cp @ qd, atol=1e-10)
        # Ṁ against a central difference of Pinocchio's CRBA along the motion
        h = 1e-6
        Mt = [pin.crba(pm, data, pin.integrate(pm, qp, t * vp)) for t in (h, -h)]
        Mt = [np.triu(m) + np.triu(m, 1).T for m in Mt]
        Md = D.mass_matrix_derivative(model, q, qd, base_pose=base)
        np.testing.assert_allclose(P @ Md @ P.T, (Mt[0] - Mt[1]) / (2 * h), atol=1e-7)
        for CC in (C, Cp):
            S = Md - 2 * CC
            np.testing.assert_allclose(S, -S.T, atol=1e-10)
        # both are the Christoffel-consistent factorisation (Echeandia & Wensing)
        np.testing.assert_allclose(C, Cp, atol=1e-9)


def test_mimic_coupling_projects_torques(rng):
    """A mimic-coupled Panda: τ_coupled = Pᵀ τ_full with q_full = P q + offset."""
    path = erd_path('panda')
    full = lm.load_urdf(path)
    coupled = lm.load_urdf(path, mimic='couple')
    lead, mult, off = coupled.mimic['panda_finger_joint2']
    P = np.zeros((full.nq, coupled.nq))
    for k, jn in enumerate(full.joint_names):
        if jn == 'panda_finger_joint2':
            P[k, coupled.joint_index(lead)] = mult
        else:
            P[k, coupled.joint_index(jn)] = 1.0
    shift = np.array([off if jn == 'panda_finger_joint2' else 0.0 for jn in full.joint_names])
    q, qd, qdd = (rng.standard_normal(coupled.nq) for _ in range(3))
    tau_full = D.inverse_dynamics(full, P @ q + shift, P @ qd, P @ qdd)
    np.testing.assert_allclose(D.inverse_dynamics(coupled, q, qd, qdd), P.T @ tau_full,
                               atol=1e-11)
    M = D.mass_matrix(coupled, q)
    np.testing.assert_allclose(M, P.T @ D.mass_matrix(full, P @ q + shift) @ P, atol=1e-12)
    tau = rng.standard_normal(coupled.nq)
    qdd = D.forward_dynamics(coupled, q, qd, tau)      # shared coordinate: M-solve route
    np.testing.assert_allclose(D.inverse_dynamics(coupled, q, qd, qdd), tau, atol=1e-9)
    C = D.coriolis_matrix(coupled, q, qd)
    S = D.mass_matrix_derivative(coupled, q, qd) - 2 * C
    np.testing.assert_allclose(S, -S.T, atol=1e-12)
    np.testing.assert_allclose(C @ qd + D.gravity_torques(coupled, q),
                               D.inverse_dynamics(coupled, q, qd, 0 * qd), atol=1e-11)


# --------------------------------------------------------------------------- Lagrange, energy
@pytest.mark.parametrize('seed', range(2))
def test_lagrange_equations_by_finite_differences(seed):
    """τ = d/dt ∂T/∂q̇ - ∂T/∂q + ∂U/∂q with T, U from body twists and COMs ([M18d] §5)."""
    rng = np.random.default_rng(seed)
    model = make_tree(rng, 6)
    q, qd, qdd, _, _ = state(model, rng)
    n = model.nq
    E = np.eye(n)

    def dT_dqd(q_, qd_):   # T is quadratic in q̇: a central difference is exact
        return np.array([(energies(model, q_, qd_ + e, None)[0]
                          - energies(model, q_, qd_ - e, None)[0]) / 2 for e in E])
    h = 1e-4
    p = [dT_dqd(q + qd * t + 0.5 * qdd * t * t, qd + qdd * t) for t in (-2 * h, -h, h, 2 * h)]
    dpdt = (p[0] - 8 * p[1] + 8 * p[2] - p[3]) / (12 * h)
    L = lambda qq: sum(energies(model, qq, qd, None) * np.array([-1.0, 1.0]))  # noqa: E731
    dL = np.array([(-L(q + 2 * h * e) + 8 * L(q + h * e) - 8 * L(q - h * e) + L(q - 2 * h * e))
                   / (12 * h) for e in E])           # ∂(U - T)/∂q
    tau = D.inverse_dynamics(model, q, qd, qdd)
    np.testing.assert_allclose(dpdt + dL, tau, rtol=1e-7, atol=1e-7 * np.abs(tau).max())
    # and gravity alone is ∂U/∂q
    U = lambda qq: energies(model, qq, 0 * qd, None)[1]  # noqa: E731
    dU = np.array([(U(q + h * e) - U(q - h * e)) / (2 * h) for e in E])
    np.testing.assert_allclose(D.gravity_torques(model, q), dU, rtol=1e-7, atol=1e-7)


@pytest.mark.parametrize('floating', [False, True])
def test_energy_balance(floating, rng):
    """d/dt (T + U) = q̇ᵀ τ along the motion q̈ = FD(q, q̇, τ) (power balance)."""
    model = make_tree(rng, 6, floating)
    q, qd, _, base, _ = state(model, rng)
    base = np.eye(4) if base is None else base
    tau = 5 * rng.standard_normal(model.nv)
    qdd = D.forward_dynamics(model, q, qd, tau, base_pose=base)
    h = 1e-5

    def E(t):
        qt, bt = advance(model, q, base, qd, t)
        return sum(energies(model, qt, qd + t * qdd, bt))
    dE = (E(-2 * h) - 8 * E(-h) + 8 * E(h) - E(2 * h)) / (12 * h)
    assert dE == pytest.approx(qd @ tau, rel=1e-7, abs=1e-7)


def test_energy_balance_along_simulated_trajectory(rng):
    """T + U gains exactly the work of τ: RK4 of (q, q̇, work) under forward dynamics."""
    model = make_tree(rng, 6)
    q0, qd0, _, _, _ = state(model, rng)
    amp = 5 * rng.standard_normal(model.nv)

    def tau(t):
        return amp * np.sin(3 * t)

    def f(t, x):
        q, qd = x[:model.nq], x[model.nq:-1]
        u = tau(t)
        return np.concatenate([qd, D.forward_dynamics(model, q, qd, u), [qd @ u]])

    x, dt = np.concatenate([q0, qd0, [0.0]]), 2e-3
    for k in range(250):
        t = k * dt
        k1 = f(t, x)
        k2 = f(t + dt / 2, x + dt / 2 * k1)
        k3 = f(t + dt / 2, x + dt / 2 * k2)
        k4 = f(t + dt, x + dt * k3)
        x = x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    e0 = sum(energies(model, q0, qd0, None))
    e1 = sum(energies(model, x[:model.nq], x[model.nq:-1], None))
    assert abs(x[-1]) > 1.0   # the torques did real work
    assert e1 - e0 == pytest.approx(x[-1], rel=1e-7, abs=1e-7 * abs(e0))


# --------------------------------------------------------------------------- M, C, FD
@pytest.mark.parametrize('floating', [False, True])
def test_mass_matrix_is_id_with_unit_accelerations(floating, rng):
    model = make_tree(rng, 8, floating, gravity=(0.0, 0.0, 0.0))
    q, _, _, base, _ = state(model, rng)
    z = np.zeros(model.nv)
    cols = [D.inverse_dynamics(model, q, z, e, base_pose=base) for e in np.eye(model.nv)]
    M = D.mass_matrix(model, q, base_pose=base)
    np.testing.assert_allclose(M, np.array(cols).T, atol=1e-12 * np.abs(M).max())
    np.testing.assert_array_equal(M, M.T)
    assert np.linalg.eigvalsh(M).min() > 0


def test_coriolis_is_christoffel(rng):
    """C = Σ_k Γ_ijk q̇_k with Γ from finite differences of M ([M18d] eq. (85))."""
    model = make_tree(rng, 6)
    q, qd, qdd, _, _ = state(model, rng)
    n, h = model.nq, 1e-5
    dM = np.array([(D.mass_matrix(model, q + h * e) - D.mass_matrix(model, q - h * e)) / (2 * h)
                   for e in np.eye(n)])               # dM[k] = ∂M/∂q_k
    # Γ_ijk = ½(∂M_ij/∂q_k + ∂M_ik/∂q_j - ∂M_jk/∂q_i)
    Gam = 0.5 * (dM.transpose(1, 2, 0) + dM.transpose(1, 0, 2) - dM)
    C = D.coriolis_matrix(model, q, qd)
    np.testing.assert_allclose(C, Gam @ qd, atol=1e-7 * np.abs(C).max())
    np.testing.assert_allclose(D.mass_matrix_derivative(model, q, qd),
                               np.einsum('kij,k->ij', dM, qd), atol=1e-7 * np.abs(C).max())
    tau = D.inverse_dynamics(model, q, qd, qdd)
    np.testing.assert_allclose(D.mass_matrix(model, q) @ qdd + C @ qd
                               + D.gravity_torques(model, q), tau, atol=1e-11)


@pytest.mark.parametrize('floating', [False, True])
def test_forward_dynamics_aba_equals_mass_matrix_solve(floating, rng):
    model = make_tree(rng, 8, floating)
    for _ in range(3):
        q, qd, _, base, f = state(model, rng)
        tau = rng.standard_normal(model.nv)
        a = D.forward_dynamics(model, q, qd, tau, f_ext=f, base_pose=base)
        b = D.forward_dynamics(model, q, qd, tau, f_ext=f, base_pose=base, method='cholesky')
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(D.inverse_dynamics(model, q, qd, a, f_ext=f, base_pose=base),
                                   tau, atol=1e-10)


@pytest.mark.parametrize('name', ['panda', 'solo12'])
def test_joint_wrenches_with_external_wrenches_against_pinocchio(name, rng):
    """
    Joint wrenches and torques with link wrenches against Pinocchio's ``rnea(..., fext)``.

    ``data.f[j]`` is the wrench joint ``j`` transmits to its child, in the joint frame, linear
    first; ours is ``(m, f)`` in the child body frame, which for URDF joints is the joint frame.
    Link wrenches go to Pinocchio's joints through the link frames' placements.
    """
    model, pm, data, P, Pq = pin_setup(name)
    for _ in range(3):
        q, qd, qdd, base, f = state(model, rng)
        q = model.random_configuration(rng)
        fext = pin_fext(model, pm, f)
        tau = D.inverse_dynamics(model, q, qd, qdd, f_ext=f, base_pose=base)
        tau_pin = pin.rnea(pm, data, pin_q(model, Pq, q, base), P @ qd, P @ qdd, fext)
        scale = np.abs(tau_pin).max()
        np.testing.assert_allclose(P @ tau, tau_pin, rtol=0, atol=1e-12 * scale)
        W = D.joint_wrenches(model, q, qd, qdd, f_ext=f, base_pose=base)
        assert W.shape == (model.nq, 6)
        Wp = np.array([SWAP @ data.f[pm.getJointId(jn)].vector for jn in model.joint_names])
        np.testing.assert_allclose(W, Wp, rtol=0, atol=1e-12 * np.abs(Wp).max())
        Wb = D.joint_wrenches(model, q, qd, qdd, f_ext=f, base_pose=base, per_body=True)
        assert Wb.shape == (model.nb, 6)
        np.testing.assert_array_equal(W, Wb[D._owner_bodies(model)])


def test_external_wrench_dict_and_array(rng):
    model = make_tree(rng, 5, floating=True)
    q, qd, qdd, base, _ = state(model, rng)
    w = rng.standard_normal(6)
    arr = np.zeros((len(model.link_names), 6))
    arr[3] = w
    a = D.inverse_dynamics(model, q, qd, qdd, f_ext={model.link_names[3]: w}, base_pose=base)
    b = D.inverse_dynamics(model, q, qd, qdd, f_ext=arr, base_pose=base)
    np.testing.assert_array_equal(a, b)
    # a wrench on the link equals -J_linkᵀ w in the torques (J body Jacobian of that link)
    J = lm.jacobian(model, q, model.link_names[3], 'body', base_pose=base)
    np.testing.assert_allclose(a, D.inverse_dynamics(model, q, qd, qdd, base_pose=base) - J.T @ w,
                               atol=1e-11)


# --------------------------------------------------------------------------- batches
def test_batch_equals_loop(rng):
    model = make_tree(rng, 6, floating=True)
    B = 4
    Q = rng.standard_normal((B, model.nq))
    QD, QDD, TAU = (rng.standard_normal((B, model.nv)) for _ in range(3))
    bases = np.array([random_pose(rng) for _ in range(B)])
    F = rng.standard_normal((B, len(model.link_names), 6))
    for form in D.FORMS:
        out = D.inverse_dynamics(model, Q, QD, QDD, form, f_ext=F, base_pose=bases)
        assert out.shape == (B, model.nv)
        for k in range(B):
            np.testing.assert_array_equal(out[k], D.inverse_dynamics(
                model, Q[k], QD[k], QDD[k], form, f_ext=F[k], base_pose=bases[k]))
    checks = [
        (D.mass_matrix(model, Q, base_pose=bases), lambda k: D.mass_matrix(
            model, Q[k], base_pose=bases[k])),
        (D.coriolis_matrix(model, Q, QD, base_pose=bases), lambda k: D.coriolis_matrix(
            model, Q[k], QD[k], base_pose=bases[k])),
        (D.mass_matrix_derivative(model, Q, QD, base_pose=bases),
         lambda k: D.mass_matrix_derivative(model, Q[k], QD[k], base_pose=bases[k])),
        (D.gravity_torques(model, Q, base_pose=bases), lambda k: D.gravity_torques(
            model, Q[k], base_pose=bases[k])),
        (D.forward_dynamics(model, Q, QD, TAU, f_ext=F, base_pose=bases),
         lambda k: D.forward_dynamics(model, Q[k], QD[k], TAU[k], f_ext=F[k],
                                      base_pose=bases[k])),
        (D.joint_wrenches(model, Q, QD, QDD, base_pose=bases[0]),
         lambda k: D.joint_wrenches(model, Q[k], QD[k], QDD[k], base_pose=bases[0])),
    ]
    for out, one in checks:
        assert out.shape[0] == B
        for k in range(B):
            np.testing.assert_allclose(out[k], one(k), rtol=1e-13, atol=1e-13)


_NO_JIT = """
import numpy as np
import liemb_ros as lm
from liemb_ros.core import dynamics as D
from liemb_ros.core.model.synthetic import random_model, random_pose
rng = np.random.default_rng(7)
out = []
for m in (random_model(5, rng, branching=0.5, floating=True),
          lm.load_urdf(SOLO, floating_base=True)):
    q = m.random_configuration(rng)
    qd, qdd = rng.standard_normal(m.nv), rng.standard_normal(m.nv)
    b, f = random_pose(rng), rng.standard_normal((len(m.link_names), 6))
    res = [q, qd, qdd, b, f]
    res += [D.inverse_dynamics(m, q, qd, qdd, form, f_ext=f, base_pose=b) for form in D.FORMS]
    res += [D.mass_matrix(m, q, b), D.mass_matrix_derivative(m, q, qd, b),
            D.coriolis_matrix(m, q, qd, b),
            D.forward_dynamics(m, q, qd, qdd, f_ext=f, base_pose=b),
            D.joint_wrenches(m, q, qd, qdd, f_ext=f, base_pose=b)]
    out.append([np.asarray(o).tolist() for o in res])
print(repr(out))
"""


@pytest.mark.slow
def test_results_without_jit_agree():
    """
    ``NUMBA_DISABLE_JIT=1`` runs the same kernels as plain Python, with the same results.

    A random tree (helical and prismatic joints, branches) and solo12; solo12's plain-Python
    results are also checked against Pinocchio (τ of each form, joint wrenches, ``M``,
    ``Ṁ = C + Cᵀ``, ``C`` and the ABA, all with link wrenches where they take them).
    """
    solo = f'SOLO = {erd_path("solo12")!r}\n'
    env = dict(os.environ, NUMBA_DISABLE_JIT='1')
    proc = subprocess.run([sys.executable, '-c', solo + _NO_JIT], capture_output=True,
                          text=True, env=env, cwd=ROOT, check=True)
    slow = ast.literal_eval(proc.stdout)
    ns = {}
    exec(solo + _NO_JIT, ns)   # the same script, compiled kernels
    for got, ref in zip(slow, ns['out']):
        for a, b in zip(got, ref):
            b = np.asarray(b)
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * np.abs(b).max())
    model, pm, data, P, Pq = pin_setup('solo12')
    q, qd, qdd, b, f, tb, ts, th, M, Md, C, qdd_fd, W = (np.asarray(x) for x in slow[1])
    qp, vp = pin_q(model, Pq, q, b), P @ qd
    fext = pin_fext(model, pm, f)
    tau = pin.rnea(pm, data, qp, vp, P @ qdd, fext)
    Wp = np.array([SWAP @ data.f[pm.getJointId(jn)].vector for jn in model.joint_names])
    Mp = pin.crba(pm, data, qp)
    Mp = np.triu(Mp) + np.triu(Mp, 1).T
    Cp = P.T @ pin.computeCoriolisMatrix(pm, data, qp, vp) @ P
    rel = lambda a, b: np.abs(a - b).max() / np.abs(b).max()  # noqa: E731
    for t in (tb, ts, th):
        assert rel(P @ t, tau) < 1e-12
    assert rel(W, Wp) < 1e-12
    assert rel(P @ M @ P.T, Mp) < 1e-12
    assert rel(C, Cp) < 1e-12
    assert rel(Md, Cp + Cp.T) < 1e-12
    assert rel(P @ qdd_fd, pin.aba(pm, data, qp, vp, P @ qdd, fext)) < 1e-11


# --------------------------------------------------------------------------- bad input
def test_bad_input(rng):
    model = make_tree(rng, 4)
    q, qd, qdd, _, _ = state(model, rng)
    nan = q.copy()
    nan[1] = np.nan
    with pytest.raises(ValueError, match=r'q must have shape \(4,\)'):
        D.inverse_dynamics(model, q[:3], qd, qdd)
    with pytest.raises(ValueError, match='qdd must have shape'):
        D.inverse_dynamics(model, q, qd, np.zeros((2, 3)))
    with pytest.raises(ValueError, match='batch shapes differ'):
        D.inverse_dynamics(model, np.zeros((2, 4)), np.zeros((3, 4)), np.zeros((2, 4)))
    with pytest.raises(ValueError, match='q contains NaN'):
        D.inverse_dynamics(model, nan, qd, qdd)
    for form in D.FORMS:
        with pytest.raises(ValueError, match='qd contains NaN'):
            D.inverse_dynamics(model, q, nan, qdd, form)
    with pytest.raises(ValueError, match='qdd contains NaN'):
        D.inverse_dynamics(model, q, qd, np.full(4, np.inf))
    with pytest.raises(ValueError, match='tau contains NaN'):
        D.forward_dynamics(model, q, qd, nan)
    with pytest.raises(ValueError, match='base_pose contains NaN'):
        D.mass_matrix(model, q, base_pose=np.full((4, 4), np.nan))
    with pytest.raises(ValueError, match='q contains NaN'):
        D.coriolis_matrix(model, nan, qd)
    with pytest.raises(ValueError, match='f_ext contains NaN'):
        D.inverse_dynamics(model, q, qd, qdd, f_ext=np.full((5, 6), np.nan))
    with pytest.raises(ValueError, match=r'f_ext must have shape \(5, 6\)'):
        D.inverse_dynamics(model, q, qd, qdd, f_ext=np.zeros((4, 6)))
    with pytest.raises(ValueError, match="unknown link 'nope'"):
        D.inverse_dynamics(model, q, qd, qdd, f_ext={'nope': np.zeros(6)})
    with pytest.raises(ValueError, match=r"f_ext\['b1'\] must be a wrench"):
        D.inverse_dynamics(model, q, qd, qdd, f_ext={'b1': np.zeros(3)})
    with pytest.raises(ValueError, match="unknown form 'world'"):
        D.inverse_dynamics(model, q, qd, qdd, form='world')
    with pytest.raises(ValueError, match="unknown method"):
        D.forward_dynamics(model, q, qd, qdd, method='crba')
    leaf = make_tree(rng, 4, massless_leaf=True)
    for method in ('aba', 'cholesky'):
        with pytest.raises(ValueError, match='singular'):
            D.forward_dynamics(leaf, q, qd, qdd, method=method)
    with pytest.raises(ValueError, match="body 'b3'"):
        D.forward_dynamics(leaf, q, qd, qdd)


def test_articulated_inertia_moves_to_the_parent_by_the_congruence(rng):
    """ABA's block-form transfer equals ``Ad_{G^-1}ᵀ M Ad_{G^-1}`` for any symmetric M."""
    from liemb_ros.core.lie import se3
    for _ in range(50):
        G = random_pose(rng, scale=2.0)
        A = rng.standard_normal((6, 6))
        M = A @ A.T + rng.standard_normal() * np.eye(6)   # symmetric, not a rigid inertia
        K = se3.Ad_inv(G)
        out = rng.standard_normal((6, 6))
        expected = out + K.T @ M @ K
        KI.add_inertia_to_parent.py_func(G, M, np.empty((6, 6)), np.empty((6, 6)), out)
        np.testing.assert_allclose(out, expected, rtol=0, atol=1e-12 * np.abs(expected).max())


def _inertia6(p):
    """The 6x6 ``[[Θ, h~], [-h~, m I]]`` of a 10-parameter inertia (KI.inertia10_to)."""
    m, h, (t00, t11, t22, t01, t02, t12) = p[0], p[1:4], p[4:]
    H = np.array([[0, -h[2], h[1]], [h[2], 0, -h[0]], [-h[1], h[0], 0]])
    return np.block([[np.array([[t00, t01, t02], [t01, t11, t12], [t02, t12, t22]]), H],
                     [-H, m * np.eye(3)]])


def test_ten_parameter_inertias_match_the_6x6_forms(rng):
    """10-parameter inertias: transfer (spatial, hybrid), product and rate equal the 6x6 ones."""
    from liemb_ros.core.lie import se3
    for _ in range(50):
        C = random_pose(rng, scale=2.0)
        M = random_inertia(rng)
        K = se3.Ad_inv(C)
        Ms = K.T @ M @ K   # [M18d] eq. (34)
        p = np.empty(10)
        KI.inertia10_to.py_func(C, M, False, p)
        np.testing.assert_allclose(_inertia6(p), Ms, rtol=0, atol=1e-12 * np.abs(Ms).max())
        AdR = se3.Ad(np.block([[C[:3, :3], np.zeros((3, 1))], [np.zeros((1, 3)), 1.0]]))
        Mh = AdR @ M @ AdR.T   # hybrid inertia at the body origin ([M18d] eq. (76a))
        ph = np.empty(10)
        KI.inertia10_to.py_func(C, M, True, ph)
        np.testing.assert_allclose(_inertia6(ph), Mh, rtol=0, atol=1e-12 * np.abs(Mh).max())
        x = rng.standard_normal(6)
        f = rng.standard_normal(6)
        KI.inertia10_apply.py_func(p, x, f, False)
        np.testing.assert_allclose(f, Ms @ x, rtol=0, atol=1e-12 * np.abs(Ms).max())
        g = f.copy()
        KI.inertia10_apply.py_func(p, x, g, True)
        np.testing.assert_allclose(g, 2 * (Ms @ x), rtol=0, atol=1e-11 * np.abs(Ms).max())
        V = rng.standard_normal(6)
        adV = se3.ad(V)
        dMs = -adV.T @ Ms - Ms @ adV   # [M18d] eq. (37)
        d = np.empty(10)
        KI.inertia10_rate.py_func(p, V, d)
        assert d[0] == 0.0
        np.testing.assert_allclose(_inertia6(d), dMs, rtol=0, atol=1e-12 * np.abs(dMs).max())
