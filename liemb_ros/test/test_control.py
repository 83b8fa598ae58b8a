"""
Control laws (liemb_ros.control, no ROS) against their definitions and independent sources.

Interpolation: end conditions and finite differences of the polynomials; computed torque:
Pinocchio's crba, computeCoriolisMatrix and computeGeneralizedGravity; impedance: Pinocchio's
frame Jacobians and gravity, the pose error in closed form, and the static displacement
``K⁻¹F`` under a constant wrench (forward dynamics with an external wrench on the link).
"""
import numpy as np
import pinocchio as pin
import pytest
from hypothesis import given, settings, strategies as st

import liemb_ros as lm
from liemb_ros import control
from liemb_ros.control import laws
from liemb_ros.core.lie import so3
from conftest import SWAP, erd_path


@pytest.fixture(scope='module')
def panda():
    """Our Panda, Pinocchio's, its data and the column permutation (v_pin = v[perm])."""
    path = erd_path('panda')
    model = lm.load_urdf(path)
    pm = pin.buildModelFromUrdf(path)
    order = np.argsort([pm.joints[pm.getJointId(n)].idx_v for n in model.joint_names])
    return model, pm, pm.createData(), order


@pytest.mark.parametrize('kind', ['linear', 'cubic', 'quintic'])
def test_segment_meets_its_end_conditions_and_its_derivatives_are_consistent(kind, rng):
    T = 0.7
    p0, p1, v0, v1, a0, a1 = rng.normal(size=(6, 4))
    V = None if kind == 'linear' else np.array([v0, v1])
    A = np.array([a0, a1]) if kind == 'quintic' else None
    for s, p_ref in ((0.0, p0), (T, p1)):
        p, v, a = control.segment(T, s, p0, p1, V, A)
        np.testing.assert_allclose(p, p_ref, atol=1e-12)
        if V is not None:
            np.testing.assert_allclose(v, V[0] if s == 0 else V[1], atol=1e-11)
        if A is not None:
            np.testing.assert_allclose(a, A[0] if s == 0 else A[1], atol=1e-9)
    h = 1e-6
    for s in (0.1, 0.35, 0.6):
        pm_, vm, _ = control.segment(T, s - h, p0, p1, V, A)
        pp, vp, _ = control.segment(T, s + h, p0, p1, V, A)
        _, v, a = control.segment(T, s, p0, p1, V, A)
        np.testing.assert_allclose(v, (pp - pm_) / (2 * h), atol=1e-7)
        np.testing.assert_allclose(a, (vp - vm) / (2 * h), atol=1e-6)


def test_quintic_reproduces_a_quintic_exactly(rng):
    c = rng.normal(size=6)
    f = np.polynomial.Polynomial(c)
    T = 1.3
    P = [np.array([f(0.0)]), np.array([f(T)])]
    V = np.array([[f.deriv()(0.0)], [f.deriv()(T)]])
    A = np.array([[f.deriv(2)(0.0)], [f.deriv(2)(T)]])
    for s in np.linspace(0, T, 7):
        p, v, a = control.segment(T, s, P[0], P[1], V, A)
        np.testing.assert_allclose([p[0], v[0], a[0]],
                                   [f(s), f.deriv()(s), f.deriv(2)(s)], atol=1e-9)


def test_trajectory_starts_from_the_state_holds_the_end_and_other_joints():
    names = ['a', 'b', 'c']
    q, qd = np.array([0.1, 0.2, 0.3]), np.array([0.5, 0.0, 0.0])
    tr = control.JointTrajectory(names, ['c', 'a'], [1.0, 2.0], [[1.0, 2.0], [1.5, 2.5]],
                                 [[0.0, 0.0], [0.0, 0.0]], start=10.0, q=q, qd=qd)
    # before the start and at it: the state where it began (c = 0.3, a = 0.1)
    np.testing.assert_allclose(tr.sample(9.0)[0], q)
    q_d, qd_d, _ = tr.sample(10.0)
    np.testing.assert_allclose(q_d, q)
    np.testing.assert_allclose(qd_d, [0.5, 0.0, 0.0])   # it starts with the current velocity
    np.testing.assert_allclose(tr.sample(11.0)[0], [2.0, 0.2, 1.0])
    q_d, qd_d, qdd_d = tr.sample(12.5)                   # after the end: hold, at rest
    np.testing.assert_allclose(q_d, [2.5, 0.2, 1.5])
    assert not qd_d.any() and not qdd_d.any()
    assert 0.2 == tr.sample(10.5)[0][1]                   # joint b is not named: held


@pytest.mark.parametrize('names,times,pos,vel,message', [
    (['a', 'x'], [1.0], [[0, 0]], [], "unknown joint.*'x'"),
    (['a'], [1.0, 1.0], [[0], [1]], [], 'strictly increasing'),
    (['a'], [2.0, 1.0], [[0], [1]], [], 'strictly increasing'),
    (['a'], [-1.0], [[0]], [], '>= 0'),
    (['a'], [1.0], [[np.nan]], [], 'non-finite positions'),
    (['a', 'b'], [1.0], [[0]], [], 'positions: every point needs 2'),
    (['a'], [1.0, 2.0], [[0], [1]], [[0], []], 'velocities: every point'),
    (['a', 'a'], [1.0], [[0, 0]], [], 'distinct'),
    (['a'], [], [], [], 'at least one point'),
])
def test_bad_trajectories_are_refused_with_a_reason(names, times, pos, vel, message):
    with pytest.raises(ValueError, match=message):
        control.JointTrajectory(['a', 'b'], names, times, pos, vel, start=0.0,
                                q=np.zeros(2), qd=np.zeros(2))


def test_points_already_due_are_left_out_and_the_state_starts_the_motion():
    """
    JointTrajectoryController's replacement rule: a trajectory whose start is past goes
    from the state at ``now`` to its first point still ahead; its last point in the past:
    refused; one point due exactly now: held from now on.
    """
    names = ['a']
    q, qd = np.array([0.2]), np.array([0.1])
    tr = control.JointTrajectory(names, names, [0.5, 2.0, 3.0], [[1.0], [0.4], [0.0]],
                                 [[0.0], [0.0], [0.0]], start=10.0, q=q, qd=qd, now=11.0)
    assert tr.index.tolist() == [-1, 1, 2] and tr.times.tolist() == [0.0, 1.0, 2.0]
    q_d, qd_d, _ = tr.sample(11.0)                 # the state: no jump towards point 0
    assert q_d[0] == 0.2 and qd_d[0] == 0.1
    np.testing.assert_allclose(tr.sample(12.0)[0], [0.4])
    assert tr.start == 10.0 and tr.time_from_start.tolist() == [0.5, 2.0, 3.0]
    with pytest.raises(ValueError, match=r'ends in the past: its last point \(point 2\) was '
                                         'due 0.5 s ago'):
        control.JointTrajectory(names, names, [0.5, 2.0, 3.0], [[1.0], [0.4], [0.0]],
                                start=10.0, q=q, qd=qd, now=13.5)
    tr = control.JointTrajectory(names, names, [0.0], [[0.7]], start=5.0, q=q, qd=qd)
    assert tr.index.tolist() == [0]
    assert tr.sample(5.0)[0][0] == 0.7 and tr.sample(6.0)[0][0] == 0.7


@pytest.fixture(scope='module')
def arm():
    """The shipped liemb_arm7 (URDF limits: joint2 +-2 rad, 2 rad/s, 130 N m)."""
    from liemb_ros.core import resources
    return lm.load_urdf(resources.robot_path('liemb_arm7'))


ARM_Q0 = np.array([0.0, 0.5, 0.0, -1.0, 0.0, 0.6, 0.0])


def _to(model, q, names, times, P, rest=True, qd=None, start=0.0, now=None):
    """A trajectory of ``model`` from state ``q`` (at rest) through points ``P`` of ``names``."""
    n = len(names)
    zero = [np.zeros(n)] * len(times) if rest else ()
    return control.JointTrajectory(model.joint_names, names, times, P, zero, zero,
                                   start=start, q=q, qd=np.zeros(model.nq) if qd is None
                                   else qd, now=now)


def test_limits_refuse_a_trajectory_naming_the_joint_the_point_and_the_limit(arm):
    """
    Each limit against its closed form: a waypoint beyond the position limit; the quintic
    from rest to rest, whose peak velocity is 15/8 of the mean; a linear jump; a last point
    that moves; the same trajectories slowed down pass.
    """
    q_far = ARM_Q0.copy()
    q_far[1] = 5.0
    with pytest.raises(control.LimitError, match=r'joint2 position 5 rad at point 0 '
                       r'\(time_from_start 2 s\) is beyond its limits \[-2, 2\] rad') as e:
        control.check_limits(arm, _to(arm, ARM_Q0, arm.joint_names, [2.0], [q_far]))
    assert (e.value.joint, e.value.point, e.value.quantity, e.value.limit) == (
        'joint2', 0, 'position', 2.0)
    q1 = ARM_Q0.copy()
    q1[0] += 1.0
    for T in (0.3, 0.6):   # peak 15/8 / T rad/s against the limit 2 rad/s
        with pytest.raises(control.LimitError, match='joint1 velocity') as e:
            control.check_limits(arm, _to(arm, ARM_Q0, arm.joint_names, [T], [q1]))
        assert e.value.point == 0 and e.value.limit == 2.0
        assert 2.0 < e.value.value <= 15 / 8 / T + 1e-9
        assert e.value.slowdown == pytest.approx(15 / 8 / T / (2 * 1.001), rel=1e-4)
        control.check_limits(arm, _to(arm, ARM_Q0, arm.joint_names,
                                      [T * e.value.slowdown * 1.0001], [q1]))
    # positions only, due now: a jump; linear at 2 rad/s takes 0.5 s
    with pytest.raises(control.LimitError, match='would jump to 1 rad') as e:
        control.check_limits(arm, _to(arm, ARM_Q0, arm.joint_names, [0.0], [q1], rest=False))
    assert e.value.quantity == 'jump'
    assert e.value.slowdown == pytest.approx(0.5 / 1.001, rel=1e-6)
    moving = _to(arm, ARM_Q0, ['joint1'], [3.0], [[1.0]])
    moving.velocities[-1] = 0.1
    with pytest.raises(control.LimitError, match='must end at rest'):
        control.check_limits(arm, moving)
    # a joint beyond its limit may be brought back; the points themselves may not pass it
    out = ARM_Q0.copy()
    out[1] = 2.0009   # within the margin of 1e-3
    control.check_limits(arm, _to(arm, out, ['joint2'], [2.0], [[1.5]]))
    out[1] = 2.3
    control.check_limits(arm, _to(arm, out, ['joint2'], [2.0], [[1.5]]))
    with pytest.raises(control.LimitError, match='joint2 position 2.2 rad at point 1'):
        control.check_limits(arm, _to(arm, out, ['joint2'], [2.0, 3.0], [[1.5], [2.2]]))
    # ... and one faster than its limit slowed down, never sped up
    fast = np.zeros(7)
    fast[0] = 3.0   # rad/s, limit 2
    control.check_limits(arm, _to(arm, ARM_Q0, ['joint1'], [1.0], [[0.9]], qd=fast))
    with pytest.raises(control.LimitError, match='joint1 velocity 3.0'):
        control.check_limits(arm, _to(arm, ARM_Q0, ['joint1'], [1.0], [[2.0]], qd=fast))


def test_the_feed_forward_checked_is_pinocchio_s_rnea(panda):
    """
    An effort refusal's torque is the law's feed-forward at the sample it names: Pinocchio's
    rnea with the armature, plus the joint damping and the friction feed-forward (the
    trajectory sampled at that time independently, by ``sample``); slowed down by the
    factor the refusal gives, the trajectory passes, a little less slowed down it does not.
    """
    model, pm, data, order = panda
    q0 = np.array([0.0, -0.3, 0.0, -2.0, 0.0, 1.6, 0.8, 0.02, 0.02])
    armature = 0.05
    tr = _to(model, q0, ['panda_joint1'], [0.05], [[0.05]])
    with pytest.raises(control.LimitError, match='feed-forward torque') as e:
        control.check_limits(model, tr, armature=armature)
    err = e.value
    q, qd, qdd = tr.sample(err.time)
    pa = pin.Model(pm)
    pa.armature[:] = armature
    ref = pin.rnea(pa, pa.createData(), q[order], qd[order], qdd[order])
    ff = ref + (model.damping * qd + model.friction * np.tanh(qd / control.FRICTION_VELOCITY)
                )[order]
    j = model.joint_index(err.joint)
    assert err.value == pytest.approx(ff[list(order).index(j)], rel=1e-9, abs=1e-9)
    assert abs(err.value) > model.effort_limit[j] * 1.001
    s = err.slowdown
    assert s > 1
    control.check_limits(model, _to(model, q0, ['panda_joint1'], [0.05 * s * 1.001],
                                    [[0.05]]), armature=armature)
    with pytest.raises(control.LimitError):
        control.check_limits(model, _to(model, q0, ['panda_joint1'], [0.05 * s * 0.99],
                                        [[0.05]]), armature=armature)


def test_the_check_gives_the_gil_to_other_threads(arm):
    """
    A check of 10 000 points runs compiled without the GIL: a thread that ticks every
    0.2 ms meanwhile is never held up for half the check's time (it would be for all of it).
    """
    import threading
    import time
    n = 10_000
    P = np.tile(ARM_Q0, (n, 1))
    P[:, 0] = 0.3 * np.sin(np.linspace(0, 2 * np.pi, n))
    tr = _to(arm, ARM_Q0, arm.joint_names, 1.0 + 1e-3 * np.arange(n), P, rest=False)
    control.check_limits(arm, tr)   # compiled (or loaded) before the timing
    gaps, done = [], []

    def tick():
        last = time.perf_counter()
        while not done:
            time.sleep(2e-4)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now
    thread = threading.Thread(target=tick)
    thread.start()
    time.sleep(0.01)
    t0 = time.perf_counter()
    control.check_limits(arm, tr)
    took = time.perf_counter() - t0
    done.append(True)
    thread.join()
    print(f'check of {n} points: {took * 1e3:.0f} ms; the ticking thread waited at most '
          f'{max(gaps) * 1e3:.1f} ms')
    assert max(gaps) < 0.5 * took


def test_computed_torque_against_pinocchio(panda, rng):
    model, pm, data, order = panda
    for _ in range(3):
        q, qd, q_d, qd_d, qdd_d = (model.random_configuration(rng), *rng.normal(size=(4, 9)))
        kp, kd = rng.uniform(10, 500, 9), rng.uniform(1, 50, 9)
        tau = control.computed_torque(model, q, qd, q_d, qd_d, qdd_d, kp, kd)
        qp, vp = q[order], qd[order]
        M = pin.crba(pm, data, qp)
        M = np.triu(M) + np.triu(M, 1).T
        Cm = pin.computeCoriolisMatrix(pm, data, qp, vp)
        g = pin.computeGeneralizedGravity(pm, data, qp)
        a = (qdd_d + kd * (qd_d - qd) + kp * (q_d - q))[order]
        ff = model.damping * qd_d + model.friction * np.tanh((qd_d + kp / kd * (q_d - q)) / 0.003)
        ref = M @ a + Cm @ vp + g + ff[order]
        np.testing.assert_allclose(tau[order], ref, atol=1e-9 * (1 + np.abs(ref).max()))


def test_computed_torque_with_armature_against_pinocchio(panda, rng):
    # rotor inertia: Pinocchio's model.armature enters its RNEA as armature * a (and its
    # CRBA on the diagonal); ours is the armature argument (a scalar or one per joint)
    model, pm, _, order = panda
    pa = pin.Model(pm)
    for armature in (0.05, rng.uniform(0.0, 0.5, 9)):
        pa.armature[:] = np.broadcast_to(armature, (9,))[order]
        data = pa.createData()
        q, qd, q_d, qd_d, qdd_d = (model.random_configuration(rng), *rng.normal(size=(4, 9)))
        kp, kd = rng.uniform(10, 500, 9), rng.uniform(1, 50, 9)
        tau = control.computed_torque(model, q, qd, q_d, qd_d, qdd_d, kp, kd, friction=False,
                                      armature=armature)
        a = (qdd_d + kd * (qd_d - qd) + kp * (q_d - q))[order]
        ref = pin.rnea(pa, data, q[order], qd[order], a) + (model.damping * qd_d)[order]
        np.testing.assert_allclose(tau[order], ref, atol=1e-9 * (1 + np.abs(ref).max()))


def test_computed_torque_object_equals_the_function_and_reports_the_error(panda, rng):
    # what the dynamics node's loop calls: gains checked once, the same numbers
    model = panda[0]
    law = control.ComputedTorque(model, 100.0, [20.0], armature=0.1)
    for _ in range(3):
        q, qd, q_d, qd_d, qdd_d = (model.random_configuration(rng), *rng.normal(size=(4, 9)))
        tau = law(q, qd, q_d, qd_d, qdd_d)
        np.testing.assert_array_equal(tau, control.computed_torque(
            model, q, qd, q_d, qd_d, qdd_d, 100.0, 20.0, armature=0.1))
        assert law.tracking_error == np.abs(q_d - q).max()
        np.testing.assert_array_equal(law(list(q), qd, q_d.astype('>f8'),
                                          qd_d, qdd_d), law(q, qd, q_d, qd_d, qdd_d))
    with pytest.raises(ValueError, match=r'q_d must have shape \(9,\)'):
        law(q, qd, q_d[:8], qd_d, qdd_d)
    with pytest.raises(ValueError, match='NaN'):
        law(q, qd * np.nan, q_d, qd_d, qdd_d)
    with pytest.raises(ValueError, match='floating base'):
        control.ComputedTorque(lm.load_urdf(erd_path('solo12'), floating_base=True), 100.0,
                               20.0)


def test_computed_torque_gains_in_any_form_agree_and_compile_once(panda, rng):
    # scalars, lists, per-joint arrays and kd = 0 (no K_d⁻¹ K_p term) give the formula's
    # numbers, and the compiled pass is typed once for all of them (issue 19: compile time)
    model, pm, data, order = panda
    q, qd, q_d, qd_d, qdd_d = (model.random_configuration(rng), *rng.normal(size=(4, 9)))
    passes = (laws._computed_torque_terms, laws._computed_torque_pass)
    control.computed_torque(model, q, qd, q_d, qd_d, qdd_d, 100.0, 20.0)
    typed = [len(f.signatures) for f in passes]
    inv = np.argsort(order)          # Pinocchio's joint order back to the model's
    Mp = pin.crba(pm, data, q[order])
    M = (np.triu(Mp) + np.triu(Mp, 1).T)[np.ix_(inv, inv)]
    h = pin.rnea(pm, data, q[order], qd[order], np.zeros(9))[inv]
    for kp, kd in ((100.0, 20.0), ([100.0], [20.0]), (np.full(9, 100.0), np.full(9, 20.0)),
                   (list(rng.uniform(10, 500, 9)), np.r_[0.0, rng.uniform(1, 50, 8)])):
        kp_, kd_ = np.broadcast_to(kp, (9,)), np.broadcast_to(kd, (9,))
        ratio = np.divide(kp_, kd_, out=np.zeros(9), where=kd_ > 0)
        q_r = qd_d + ratio * (q_d - q)
        np.testing.assert_allclose(control.reference_velocity(q, q_d, qd_d, kp, kd), q_r,
                                   rtol=1e-15, atol=1e-15)
        ref = (M @ (qdd_d + kd_ * (qd_d - qd) + kp_ * (q_d - q)) + h
               + model.damping * qd_d + model.friction * np.tanh(q_r / 0.003))
        for friction in (True, False):
            tau = control.computed_torque(model, list(q), qd, q_d, qd_d, qdd_d, kp, kd,
                                          friction)
            want = ref if friction else ref - model.friction * np.tanh(q_r / 0.003)
            np.testing.assert_allclose(tau, want, atol=1e-9 * (1 + np.abs(want).max()))
    assert [len(f.signatures) for f in passes] == typed


def test_pose_error_closed_form():
    C = np.eye(4)
    C[:3, :3] = so3.exp([0.0, 0.0, 0.5])
    C[:3, 3] = (1.0, 2.0, 3.0)
    Cd = C.copy()
    Cd[:3, :3] = C[:3, :3] @ so3.exp([0.1, 0.0, 0.0])   # 0.1 rad about the link's x
    Cd[:3, 3] += (0.0, 0.2, 0.0)                        # 0.2 m along the world y
    R = C[:3, :3]
    np.testing.assert_allclose(control.pose_error(C, Cd, 'body'),
                               np.r_[0.1, 0, 0, R.T @ [0, 0.2, 0]], atol=1e-12)
    np.testing.assert_allclose(control.pose_error(C, Cd, 'hybrid'),
                               np.r_[R @ [0.1, 0, 0], 0, 0.2, 0], atol=1e-12)
    with pytest.raises(ValueError, match='spatial'):
        control.pose_error(C, Cd, 'spatial')
    # random poses (rotations up to pi) against Pinocchio's log3, lists accepted
    rng = np.random.default_rng(3)
    for _ in range(50):
        A, B = (pin.SE3(pin.exp3(rng.uniform(-1.8, 1.8, 3)), rng.normal(size=3))
                for _ in range(2))
        w = pin.log3(A.rotation.T @ B.rotation)
        dp = B.translation - A.translation
        body = control.pose_error(A.homogeneous.tolist(), B.homogeneous, 'body')
        hybrid = control.pose_error(A.homogeneous, B.homogeneous, 'hybrid')
        np.testing.assert_allclose(body, np.r_[w, A.rotation.T @ dp], atol=1e-12)
        np.testing.assert_allclose(hybrid, np.r_[A.rotation @ w, dp], atol=1e-12)
    with pytest.raises(ValueError, match='4x4'):
        control.pose_error(np.eye(3), np.eye(4), 'body')


def _pin_hand(panda, q, ref):
    """Pinocchio's Jacobian of panda_hand in ``ref`` (our joint order, angular first) and its
    pose (4x4)."""
    model, pm, data, order = panda
    qp = q[order]
    pin.framesForwardKinematics(pm, data, qp)
    pin.computeJointJacobians(pm, data, qp)
    fid = pm.getFrameId('panda_hand')
    J = np.empty((6, model.nv))
    J[:, order] = SWAP @ pin.getFrameJacobian(pm, data, fid, ref)
    C = np.eye(4)
    C[:3, :3], C[:3, 3] = data.oMf[fid].rotation, data.oMf[fid].translation
    return J, C


@pytest.mark.parametrize('representation,ref', [('body', pin.LOCAL),
                                                ('hybrid', pin.LOCAL_WORLD_ALIGNED)])
def test_impedance_torque_against_its_definition_with_pinocchio(panda, rng,
                                                                representation, ref):
    model, pm, data, order = panda
    q, qd = model.random_configuration(rng), rng.normal(size=9)
    qp = q[order]
    J, C = _pin_hand(panda, q, ref)
    Cd = C.copy()
    Cd[:3, :3] = C[:3, :3] @ so3.exp([0.05, -0.02, 0.03])
    Cd[:3, 3] += (0.01, -0.02, 0.03)
    K, D = rng.uniform(10, 1000, 6), rng.uniform(1, 50, 6)
    g = np.empty(9)
    g[order] = pin.computeGeneralizedGravity(pm, data, qp)
    e = control.pose_error(C, Cd, representation)
    tau = control.cartesian_impedance(model, q, qd, 'panda_hand', Cd, K, D, representation)
    np.testing.assert_allclose(tau, J.T @ (K * e - D * (J @ qd)) + g, atol=1e-8)
    # the same through the general path (a robot mounted at base_pose), gains as 6x6
    general = control.cartesian_impedance(model, q, qd, 'panda_hand', Cd, np.diag(K),
                                          np.diag(D), representation, base_pose=np.eye(4))
    np.testing.assert_allclose(general, tau, rtol=0, atol=1e-10)
    with pytest.raises(ValueError, match='6x6'):
        control.cartesian_impedance(model, q, qd, 'panda_hand', Cd, K[:5], D, representation)
    # the posture term makes no task wrench: J⁺ᵀ Δτ = 0
    qn = model.random_configuration(rng)
    dtau = control.cartesian_impedance(model, q, qd, 'panda_hand', Cd, K, D, representation,
                                       posture=qn, k_null=20.0, d_null=2.0) - tau
    assert np.abs(dtau).max() > 1e-3
    np.testing.assert_allclose(np.linalg.pinv(J).T @ dtau, 0.0, atol=1e-9)


@pytest.mark.parametrize('representation,ref', [('body', pin.LOCAL),
                                                ('hybrid', pin.LOCAL_WORLD_ALIGNED)])
def test_impedance_friction_feed_forward_against_its_definition(panda, rng, representation,
                                                                ref):
    """
    ``friction=True`` adds ``F tanh(q̇_r / 0.003)``, ``q̇_r = J⁺ D⁻¹ K e`` (+ the posture's
    ``(I - J⁺J) K_n/D_n (q_n - q)``), J from Pinocchio; nothing at the target.
    """
    model, pm, data, order = panda
    model = model.replace(friction=rng.uniform(0.5, 2.0, 9))
    q, qd = model.random_configuration(rng), rng.normal(size=9)
    J, C = _pin_hand(panda, q, ref)
    Cd = C.copy()
    Cd[:3, :3] = C[:3, :3] @ so3.exp([0.002, -0.001, 0.003])
    Cd[:3, 3] += (0.001, -0.002, 0.0005)
    K, D = rng.uniform(10, 1000, 6), rng.uniform(1, 50, 6)
    e = control.pose_error(C, Cd, representation)
    qn = model.random_configuration(rng)
    Jp = np.linalg.pinv(J)
    for posture, k_null, d_null, extra in (
            (None, 0.0, 0.0, 0.0),
            (qn, 20.0, 2.0, (np.eye(9) - Jp @ J) @ (10.0 * (qn - q)))):
        args = (model, q, qd, 'panda_hand', Cd, K, D, representation, posture, k_null, d_null)
        dtau = control.cartesian_impedance(*args, friction=True) - \
            control.cartesian_impedance(*args)
        qd_r = Jp @ (K * e / D) + extra
        np.testing.assert_allclose(dtau, model.friction * np.tanh(qd_r / 0.003), atol=1e-9)
        assert np.abs(dtau).max() > 0.1
    at_target = (model, q, qd, 'panda_hand', C, K, D, representation)
    np.testing.assert_allclose(control.cartesian_impedance(*at_target, friction=True),
                               control.cartesian_impedance(*at_target), atol=1e-12)


@pytest.mark.parametrize('representation', ['hybrid', 'body'])
def test_impedance_holds_a_constant_wrench_at_the_static_displacement(representation):
    """Forward dynamics with a wrench on the hand settle at K⁻¹F from the target (2 %)."""
    model = lm.load_urdf(erd_path('panda'))
    link = 'panda_hand'
    q = np.array([0.0, -0.4, 0.0, -2.2, 0.0, 1.9, 0.8, 0.0, 0.0])
    qd = np.zeros(9)
    posture = q.copy()
    Cd = lm.link_pose(model, q, link)
    K = np.array([30.0, 30.0, 30.0, 1000.0, 1000.0, 1000.0])
    D = np.array([2.0, 2.0, 2.0, 60.0, 60.0, 60.0])
    F = np.array([0.0, 0.0, 0.0, 6.0, -4.0, 5.0])   # a force at the hand origin, no moment
    dt = 5e-4
    for _ in range(6000):   # 3 s, semi-implicit Euler
        C = lm.link_pose(model, q, link)
        R = C[:3, :3]
        W_link = F if representation == 'body' else np.r_[R.T @ F[:3], R.T @ F[3:]]
        tau = control.cartesian_impedance(model, q, qd, link, Cd, K, D, representation,
                                          posture=posture, d_null=1.0)
        qdd = lm.forward_dynamics(model, q, qd, tau, f_ext={link: W_link})
        qd = qd + dt * qdd
        q = q + dt * qd
    C = lm.link_pose(model, q, link)
    assert np.abs(qd).max() < 1e-4
    disp = -control.pose_error(C, Cd, representation)   # x - x_d in the rows of K
    np.testing.assert_allclose(disp[3:], F[3:] / K[3:], rtol=0.02)
    assert np.abs(disp[:3]).max() < 0.02 * np.abs(F[3:] / K[3:]).max()


def test_friction_reversals_jerk_a_light_wrist_unless_its_rotor_inertia_is_there():
    """
    Computed torque with the friction feed-forward on liemb_arm7, in the Simulator at 500 Hz.

    Every joint follows a 0.2 rad, 0.5 Hz sine (peak acceleration 2 rad/s²) and reverses at
    0.5 s.  The wrist's URDF friction (0.18 N m) on its own 6e-4 kg m² is ~300 rad/s²: the
    feed-forward cannot flip exactly when the simulated friction does, and the reversal
    jerks the link by over 100 rad/s².  With a rotor inertia of 0.01 kg m² on every joint
    (a small motor through a gear, which no URDF states) in the simulation and in the
    controller, the same reversal stays within a few rad/s² and the tracking error shrinks.
    """
    from liemb_ros.core import resources
    from liemb_ros.sim.simulator import Simulator
    model = lm.load_urdf(resources.robot_path('liemb_arm7'))
    q0 = np.array([0.3, 0.6, -0.2, -1.2, 0.4, 0.8, 2.5])
    amp, w, period = 0.2, np.pi, 0.002

    def run(armature):
        sim = Simulator(model, q0=q0, qd0=np.full(7, amp * w),
                        armature=armature if armature else 'auto')
        every = int(round(period / sim.dt))
        qds, errors = [], []
        for k in range(int(1.0 / sim.dt)):
            if k % every == 0:
                t = k * sim.dt
                q_d = q0 + amp * np.sin(w * t)
                qd_d = np.full(7, amp * w * np.cos(w * t))
                qdd_d = np.full(7, -amp * w * w * np.sin(w * t))
                tau = control.computed_torque(model, sim.q, sim.qd, q_d, qd_d, qdd_d, 900.0,
                                              60.0, friction=True, armature=armature)
                qds.append(sim.qd.copy())
                errors.append(q_d - sim.q)
            sim.step(tau)
        jerk = np.abs(np.diff(qds, axis=0)).max(axis=0) / period
        return jerk, np.sqrt(np.mean(np.square(errors[25:]), axis=0))

    bare, bare_error = run(0.0)
    geared, geared_error = run(0.01)
    print(f'max acceleration without rotor inertia {bare.round(1)}, with {geared.round(1)} '
          f'rad/s^2; RMS errors {bare_error.max():.1e}, {geared_error.max():.1e} rad')
    assert bare[6] > 50.0                  # the effect is there without it ...
    assert geared.max() < 6.0              # ... and gone with it (2 rad/s² commanded)
    assert geared_error.max() < 0.5 * bare_error.max()


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 12), rank_drop=st.integers(0, 3),
       scale=st.floats(-3.0, 3.0))
def test_null_space_projection_of_the_posture_term(seed, n, rank_drop, scale):
    """
    ``(I - J⁺J) x`` by one-sided Jacobi: in the null space of J (every row, relative to its
    norm, to 1e-12), a projection (applied twice it changes nothing), and numpy's
    ``x - pinv(J) @ J @ x`` where J is well conditioned; rows scaled over 6 decades and
    rank-deficient Jacobians (rows that are combinations of others, zero rows) included.
    """
    from liemb_ros.control.laws import _null_space_project
    rng = np.random.default_rng(seed)
    J = rng.normal(size=(6, n))
    for k in range(rank_drop):   # dependent rows: a singular configuration
        J[5 - k] = J[0] * rng.normal() + J[1] * rng.normal() if k < 2 else 0.0
    x = rng.normal(size=n)
    y = x.copy()
    _null_space_project(J, y)
    np.testing.assert_allclose(y, x - np.linalg.pinv(J) @ (J @ x), atol=1e-10)
    J_scaled = J * 10.0 ** (scale * rng.uniform(-1, 1, size=(6, 1)))
    y = x.copy()
    _null_space_project(J_scaled, y)
    rows = np.linalg.norm(J_scaled, axis=1)
    assert np.all(np.abs(J_scaled @ y) <= 1e-12 * np.maximum(rows, 1e-300) * np.abs(x).sum())
    z = y.copy()
    _null_space_project(J_scaled, z)
    np.testing.assert_allclose(z, y, atol=1e-12 * np.abs(x).sum())
