"""Kinematics against Pinocchio, finite differences, the relations of [M18k], a fixed example."""
import numpy as np
import pinocchio as pin
import pytest
import scipy.linalg as sla

import liemb_ros as lm
from liemb_ros.core.model import random_model
from liemb_ros.core.model.synthetic import random_pose
from conftest import SWAP, erd_path

REPS = ('body', 'spatial', 'hybrid', 'mixed')


def hat3(w):
    return np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])


def hat6(X):
    M = np.zeros((4, 4))
    M[:3, :3] = hat3(X[:3])
    M[:3, 3] = X[3:]
    return M


def vee6(M):
    return np.array([M[2, 1], M[0, 2], M[1, 0], M[0, 3], M[1, 3], M[2, 3]])


def twist_from_pose_rate(C, Cd, rep):
    """The four twists from their definitions (design.md), given C and its rate."""
    R, Rd, rd = C[:3, :3], Cd[:3, :3], Cd[:3, 3]
    wb = vee6(np.block([[R.T @ Rd, np.zeros((3, 1))], [np.zeros((1, 4))]]))[:3]
    ws = R @ wb
    if rep == 'body':
        return vee6(np.linalg.inv(C) @ Cd)
    if rep == 'spatial':
        return vee6(Cd @ np.linalg.inv(C))
    if rep == 'hybrid':
        return np.concatenate([ws, rd])
    return np.concatenate([wb, rd])


@pytest.mark.parametrize('robot', ['ur5', 'panda', 'double_pendulum'])
def test_against_pinocchio(robot, rng):
    path = erd_path(robot)
    model = lm.load_urdf(path)
    pm = pin.buildModelFromUrdf(path)
    data = pm.createData()
    assert [pm.names[i] for i in range(1, pm.njoints)] == model.joint_names
    frames = [ln for ln in model.link_names if pm.existFrame(ln)]
    assert len(frames) == len(model.link_names)
    pin_ref = {'body': pin.LOCAL, 'spatial': pin.WORLD, 'hybrid': pin.LOCAL_WORLD_ALIGNED}
    for _ in range(25):
        q = model.random_configuration(rng)
        qd = rng.standard_normal(model.nv)
        pin.forwardKinematics(pm, data, q, qd)
        pin.computeJointJacobiansTimeVariation(pm, data, q, qd)
        pin.computeJointJacobians(pm, data, q)
        pin.updateFramePlacements(pm, data)
        Cs = lm.forward_kinematics(model, q)
        for li, ln in enumerate(frames):
            fid = pm.getFrameId(ln)
            np.testing.assert_allclose(Cs[li], data.oMf[fid].homogeneous, atol=1e-12)
            np.testing.assert_allclose(lm.link_pose(model, q, ln), Cs[li], atol=1e-14)
            for rep, ref in pin_ref.items():
                V_pin = SWAP @ pin.getFrameVelocity(pm, data, fid, ref).vector
                np.testing.assert_allclose(lm.link_twist(model, q, qd, ln, rep), V_pin,
                                           atol=1e-12, err_msg=f'{ln} {rep}')
                J = lm.jacobian(model, q, ln, rep)
                np.testing.assert_allclose(J, SWAP @ pin.getFrameJacobian(pm, data, fid, ref),
                                           atol=1e-10, err_msg=f'{ln} {rep}')
                Jd = lm.jacobian_derivative(model, q, qd, ln, rep)
                Jd_pin = SWAP @ pin.getFrameJacobianTimeVariation(pm, data, fid, ref)
                np.testing.assert_allclose(Jd, Jd_pin, atol=1e-9, err_msg=f'{ln} {rep}')
            # mixed = (angular of LOCAL, linear of LOCAL_WORLD_ALIGNED)
            Jl = SWAP @ pin.getFrameJacobian(pm, data, fid, pin.LOCAL)
            Jw = SWAP @ pin.getFrameJacobian(pm, data, fid, pin.LOCAL_WORLD_ALIGNED)
            np.testing.assert_allclose(lm.jacobian(model, q, ln, 'mixed'),
                                       np.vstack([Jl[:3], Jw[3:]]), atol=1e-10)


@pytest.mark.parametrize('seed', range(4))
@pytest.mark.parametrize('floating', [False, True])
def test_finite_differences_random_trees(seed, floating):
    """Twists, Jacobians and J̇ from their definitions by central differences of FK."""
    rng = np.random.default_rng(seed)
    model = random_model(7, rng, kinds='RPH', branching=0.4, floating=floating)
    base = random_pose(rng)
    q = rng.uniform(-2, 2, model.nq)
    qd = rng.standard_normal(model.nv)
    eps = 1e-6

    def state(t):
        """Configuration along q(t) = q + t q̇ with the base on its one-parameter subgroup."""
        b = base @ sla.expm(hat6(qd[:6]) * t) if floating else base
        return q + t * qd[model.nv - model.nq:], b

    for link in model.link_names[1:]:
        Cs = [lm.link_pose(model, *state(t)[:1], link, base_pose=state(t)[1])
              for t in (-eps, eps)]
        C0 = lm.link_pose(model, q, link, base_pose=base)
        Cd = (Cs[1] - Cs[0]) / (2 * eps)
        for rep in REPS:
            V_fd = twist_from_pose_rate(C0, Cd, rep)
            V = lm.link_twist(model, q, qd, link, rep, base_pose=base)
            np.testing.assert_allclose(V, V_fd, atol=1e-7, err_msg=f'{link} {rep}')
            J = lm.jacobian(model, q, link, rep, base_pose=base)
            np.testing.assert_allclose(J @ qd, V, atol=1e-12)
            Jp, Jm = (lm.jacobian(model, *state(t)[:1], link, rep, base_pose=state(t)[1])
                      for t in (eps, -eps))
            Jd = lm.jacobian_derivative(model, q, qd, link, rep, base_pose=base)
            np.testing.assert_allclose(Jd, (Jp - Jm) / (2 * eps), atol=1e-7,
                                       err_msg=f'{link} {rep}')


def test_acceleration_is_time_derivative_of_twist(rng):
    model = random_model(6, rng, branching=0.3)
    q, qd, qdd = rng.standard_normal((3, model.nv))
    eps = 1e-6
    link = model.link_names[-1]
    for rep in REPS:
        Vp = lm.link_twist(model, q + eps * qd + 0.5 * eps**2 * qdd, qd + eps * qdd, link, rep)
        Vm = lm.link_twist(model, q - eps * qd + 0.5 * eps**2 * qdd, qd - eps * qdd, link, rep)
        np.testing.assert_allclose(lm.link_acceleration(model, q, qd, qdd, link, rep),
                                   (Vp - Vm) / (2 * eps), atol=1e-7)


def test_three_poe_formulations_agree(rng):
    """[M18k] eqs. (3), (8) and (10) give the same poses."""
    model = random_model(8, rng, branching=0.4)
    q = rng.uniform(-3, 3, model.nq)
    Cs = lm.forward_kinematics(model, q)
    for i in range(model.nb):
        path = np.nonzero(model.support[i])[0]
        C_joint_frames = np.eye(4)
        C_body_poe = np.eye(4)
        C_spatial = np.eye(4)
        for j in path:
            C_joint_frames = (C_joint_frames @ model.S_parent[j]
                              @ sla.expm(hat6(model.JX[j] * q[j]))
                              @ np.linalg.inv(model.S_child[j]))
            C_body_poe = C_body_poe @ model.A_rel[j] @ sla.expm(hat6(model.X[j] * q[j]))
            C_spatial = C_spatial @ sla.expm(hat6(model.Y[j] * q[j]))
        C_spatial = C_spatial @ model.A[i]
        for C in (C_joint_frames, C_body_poe, C_spatial):
            np.testing.assert_allclose(C, Cs[i + 1], atol=1e-12)


def test_fixed_rrp_example_in_every_representation():
    """
    A fixed R-R-P chain with known pose and twists of its last link, every representation.

    It stands in for the example of [M18k] §2.5 and §3.6, whose geometry and numbers our text
    of the paper lacks (docs/theory/README.md#bibliography). Hand check of the position:
    ``r_3 = Rz(q1) Ry(q2) (0.3 + q3, 0, 0) + (0, 0, 0.5)``.
    """
    urdf = """<robot name="rrp">
      <link name="base"/><link name="l1"/><link name="l2"/><link name="l3"/>
      <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/>
        <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
      <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/>
        <origin xyz="0 0 0.5"/><axis xyz="0 1 0"/>
        <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
      <joint name="j3" type="prismatic"><parent link="l2"/><child link="l3"/>
        <origin xyz="0.3 0 0"/><axis xyz="1 0 0"/>
        <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
    </robot>"""
    model = lm.load_urdf(urdf)
    np.testing.assert_allclose(model.Y, [[0, 0, 1, 0, 0, 0], [0, 1, 0, -0.5, 0, 0],
                                         [0, 0, 0, 1, 0, 0]], atol=1e-15)
    q, qd = np.array([0.3, -0.6, 0.2]), np.array([1.0, 2.0, -0.5])
    C3 = [[0.788473, -0.295520, -0.539424, 0.394237],
          [0.243903, 0.955336, -0.166863, 0.121952],
          [0.564642, 0, 0.825336, 0.782321], [0, 0, 0, 1]]
    np.testing.assert_allclose(lm.link_pose(model, q, 'l3'), C3, atol=1e-6)
    expected = {
        'body': [0.564642, 2, 0.825336, -0.5, 0.412668, -1],
        'spatial': [-0.591040, 1.910673, 1, -1.349573, -0.417472, -0.282321],
        'hybrid': [-0.591040, 1.910673, 1, 0.023235, 0.439148, -1.107657],
        'mixed': [0.564642, 2, 0.825336, 0.023235, 0.439148, -1.107657],
    }
    for rep, V in expected.items():
        np.testing.assert_allclose(lm.link_twist(model, q, qd, 'l3', rep), V, atol=1e-6)


def test_conversion_table(rng):
    """[M18k] Table 3: all twelve maps between the representations."""
    model = random_model(6, rng, branching=0.2)
    q, qd = rng.standard_normal((2, model.nv))
    link = model.link_names[-1]
    C = lm.link_pose(model, q, link)
    R, r = C[:3, :3], C[:3, 3]
    Z, E = np.zeros((3, 3)), np.eye(3)
    Ad = np.block([[R, Z], [hat3(r) @ R, R]])
    maps = {  # (from, to): matrix
        ('body', 'spatial'): Ad, ('body', 'hybrid'): np.block([[R, Z], [Z, R]]),
        ('body', 'mixed'): np.block([[E, Z], [Z, R]]),
        ('spatial', 'body'): np.linalg.inv(Ad),
        ('spatial', 'hybrid'): np.block([[E, Z], [-hat3(r), E]]),
        ('spatial', 'mixed'): np.block([[R.T, Z], [-hat3(r), E]]),
        ('hybrid', 'body'): np.block([[R.T, Z], [Z, R.T]]),
        ('hybrid', 'spatial'): np.block([[E, Z], [hat3(r), E]]),
        ('hybrid', 'mixed'): np.block([[R.T, Z], [Z, E]]),
        ('mixed', 'body'): np.block([[E, Z], [Z, R.T]]),
        ('mixed', 'spatial'): np.block([[R, Z], [hat3(r) @ R, E]]),
        ('mixed', 'hybrid'): np.block([[R, Z], [Z, E]]),
    }
    V = {rep: lm.link_twist(model, q, qd, link, rep) for rep in REPS}
    Jx = {rep: lm.jacobian(model, q, link, rep) for rep in REPS}
    from liemb_ros.core.kinematics import representation_map
    for (a, b), M in maps.items():
        np.testing.assert_allclose(representation_map(C, a, b), M, atol=1e-12)
        np.testing.assert_allclose(M @ V[a], V[b], atol=1e-12)
        np.testing.assert_allclose(M @ Jx[a], Jx[b], atol=1e-12)
    np.testing.assert_allclose(V['spatial'][:3], V['hybrid'][:3], atol=1e-14)
    np.testing.assert_allclose(V['body'][:3], V['mixed'][:3], atol=1e-14)
    np.testing.assert_allclose(V['hybrid'][3:], V['mixed'][3:], atol=1e-14)


@pytest.mark.parametrize('floating', [False, True])
def test_one_change_of_representation(floating):
    """
    ``change_representation`` is the change the Jacobian kernels make, bit for bit.

    ``jacobian(rep)`` is computed in body-fixed columns mapped at the end (``body_to``);
    mapping ``jacobian('body')`` with the public function (poses, twists in a batch) must
    give the same bits; the maps agree with Table 3's matrices (test above) and invert.
    """
    rng = np.random.default_rng(12)
    model = random_model(6, rng, branching=0.3, floating=floating)
    link = model.link_names[-1]
    base = random_pose(rng) if floating else None
    for _ in range(5):
        q = rng.uniform(-2, 2, model.nq)
        C = lm.link_pose(model, q, link, base)
        Jb = lm.jacobian(model, q, link, 'body', base)
        for rep in REPS:
            mapped = lm.change_representation(C, Jb.T, 'body', rep).T
            np.testing.assert_array_equal(mapped, lm.jacobian(model, q, link, rep, base))
    Cs = np.stack([random_pose(rng) for _ in range(7)])
    Vs = rng.normal(size=(7, 6))
    for a in REPS:
        for b in REPS:
            W = lm.change_representation(Cs, Vs, a, b)
            for k in range(7):   # a batch is the single calls, and the 6x6 map
                np.testing.assert_array_equal(W[k], lm.change_representation(Cs[k], Vs[k], a, b))
                np.testing.assert_allclose(lm.representation_map(Cs[k], a, b) @ Vs[k], W[k],
                                           rtol=0, atol=1e-12)
            np.testing.assert_allclose(lm.change_representation(Cs, W, b, a), Vs, rtol=0,
                                       atol=1e-12)
    with pytest.raises(ValueError, match='unknown representation'):
        lm.change_representation(Cs[0], Vs[0], 'body', 'world')
    with pytest.raises(ValueError, match='NaN'):
        lm.change_representation(Cs[0], np.full(6, np.nan), 'body', 'hybrid')
    with pytest.raises(ValueError, match='shape'):
        lm.change_representation(Cs[:2], Vs, 'body', 'hybrid')


def test_jacobian_dependence_remarks(rng):
    """[M18k] Remarks 5 and 11: J^b_{i,j} does not depend on q_1..q_j; J^s_j not on q_j..q_n."""
    model = random_model(6, rng, branching=0.0)
    q = rng.standard_normal(model.nq)
    link = model.link_names[-1]
    Jb = lm.jacobian(model, q, link, 'body')
    Js = lm.jacobian(model, q, link, 'spatial')
    for k in range(model.nq):
        q2 = q.copy()
        q2[k] += 0.7
        Jb2 = lm.jacobian(model, q2, link, 'body')
        Js2 = lm.jacobian(model, q2, link, 'spatial')
        np.testing.assert_allclose(Jb2[:, k:], Jb[:, k:], atol=1e-12)   # columns j >= k
        np.testing.assert_allclose(Js2[:, :k + 1], Js[:, :k + 1], atol=1e-12)  # j <= k


def test_batch_equals_single(rng):
    model = random_model(5, rng, floating=True)
    Q = rng.standard_normal((4, model.nq))
    QD = rng.standard_normal((4, model.nv))
    bases = np.stack([random_pose(rng) for _ in range(4)])
    link = model.link_names[3]
    for rep in REPS:
        Jb = lm.jacobian(model, Q, link, rep, base_pose=bases)
        Jdb = lm.jacobian_derivative(model, Q, QD, link, rep, base_pose=bases)
        Vb = lm.link_twist(model, Q, QD, link, rep, base_pose=bases)
        for k in range(4):
            np.testing.assert_array_equal(Jb[k], lm.jacobian(model, Q[k], link, rep,
                                                             base_pose=bases[k]))
            np.testing.assert_array_equal(Jdb[k], lm.jacobian_derivative(
                model, Q[k], QD[k], link, rep, base_pose=bases[k]))
            # the batch sums J q̇, a single call the twist recursion: equal to round-off
            np.testing.assert_allclose(Vb[k], lm.link_twist(model, Q[k], QD[k], link, rep,
                                                            base_pose=bases[k]), atol=1e-14)
            # and independently: the twist from central differences of the pose
            eps = 1e-6
            Cp, Cm = (lm.link_pose(model, Q[k] + t * QD[k, 6:], link,
                                   base_pose=bases[k] @ sla.expm(hat6(t * QD[k, :6])))
                      for t in (eps, -eps))
            C0 = lm.link_pose(model, Q[k], link, base_pose=bases[k])
            np.testing.assert_allclose(Vb[k], twist_from_pose_rate(C0, (Cp - Cm) / (2 * eps),
                                                                   rep), atol=1e-7)
    Cs = lm.forward_kinematics(model, Q, base_pose=bases)
    Cl = lm.link_pose(model, Q, link, base_pose=bases)
    assert Cs.shape == (4, len(model.link_names), 4, 4)
    for k in range(4):
        np.testing.assert_array_equal(Cs[k], lm.forward_kinematics(model, Q[k], bases[k]))
        np.testing.assert_array_equal(Cl[k], lm.link_pose(model, Q[k], link, bases[k]))
    # link_pose multiplies the same POE from the tip, forward_kinematics from the root:
    # equal up to the association of the products
    np.testing.assert_allclose(Cs[:, 3], Cl, rtol=0, atol=1e-14)


@pytest.mark.parametrize('floating', [False, True])
def test_results_written_into_out(rng, floating):
    """``out=`` (forward_kinematics, mass_matrix): the same numbers, in the caller's array."""
    model = random_model(5, rng, floating=floating)
    Q = rng.standard_normal((4, model.nq))
    bases = np.stack([random_pose(rng) for _ in range(4)]) if floating else None
    nl = len(model.link_names)
    for fn, shape in ((lm.forward_kinematics, (nl, 4, 4)), (lm.mass_matrix, (model.nv,) * 2)):
        out = np.full((4,) + shape, np.nan)
        assert fn(model, Q, base_pose=bases, out=out) is out
        np.testing.assert_array_equal(out, fn(model, Q, base_pose=bases))
        one = np.full(shape, np.nan)
        for k in range(4):
            b = None if bases is None else bases[k]
            assert fn(model, Q[k], base_pose=b, out=one) is one
            np.testing.assert_array_equal(one, out[k])
        for bad, why in ((np.empty((3,) + shape), r'shape \(4,'),
                         (np.empty((4,) + shape, dtype=np.float32), 'float32'),
                         (np.empty((4,) + shape[:-1] + (2 * shape[-1],))[..., ::2],
                          'not C-contiguous'),
                         ([[0.0]], 'list')):
            with pytest.raises(ValueError, match='out must be a writeable.*' + why):
                fn(model, Q, base_pose=bases, out=bad)
        ro = np.empty((4,) + shape)
        ro.setflags(write=False)
        with pytest.raises(ValueError, match='not C-contiguous, aligned and writeable'):
            fn(model, Q, base_pose=bases, out=ro)


@pytest.mark.parametrize('floating', [False, True])
def test_out_overlapping_an_input_is_refused(rng, floating):
    """``out=`` sharing memory with ``q`` or ``base_pose`` raises a ValueError naming it."""
    model = random_model(4, rng, floating=floating)
    nl = len(model.link_names)
    for fn, shape in ((lm.forward_kinematics, (nl, 4, 4)), (lm.mass_matrix, (model.nv,) * 2)):
        size = int(np.prod(shape))
        buf = rng.standard_normal(size + model.nq)
        out = buf[:size].reshape(shape)
        with pytest.raises(ValueError, match='out overlaps q'):
            fn(model, buf[size - model.nq // 2:size - model.nq // 2 + model.nq], out=out)
        base = random_pose(rng)
        buf = np.zeros(size + 16)
        buf[size:] = base.ravel()
        with pytest.raises(ValueError, match='out overlaps base_pose'):
            fn(model, np.zeros(model.nq), base_pose=buf[size - 8:size + 8].reshape(4, 4),
               out=buf[:size].reshape(shape))
        # adjacent, not overlapping: accepted, and the input is left alone
        q = buf[size:size + model.nq]
        kept = q.copy()
        fn(model, q, out=buf[:size].reshape(shape))
        np.testing.assert_array_equal(q, kept)


def test_bad_input_messages(rng):
    model = random_model(3, rng)
    q = np.zeros(3)
    with pytest.raises(ValueError, match="unknown link 'nope'"):
        lm.jacobian(model, q, 'nope')
    with pytest.raises(ValueError, match="unknown representation 'world'"):
        lm.jacobian(model, q, 'b1', 'world')
    with pytest.raises(ValueError, match=r'q must have shape \(3,\)'):
        lm.link_pose(model, np.zeros(4), 'b1')
    with pytest.raises(ValueError, match='q contains NaN'):
        lm.jacobian(model, np.array([0.0, np.nan, 0.0]), 'b1')
    with pytest.raises(ValueError, match='qd contains NaN'):
        lm.jacobian_derivative(model, q, np.array([0.0, np.inf, 0.0]), 'b1')
    with pytest.raises(ValueError, match='base_pose'):
        lm.link_pose(model, q, 'b1', base_pose=np.eye(3))
    with pytest.raises(ValueError, match='qdd contains NaN'):
        lm.link_acceleration(model, q, q, np.array([np.nan, 0, 0]), 'b1')


@pytest.mark.parametrize('floating', [False, True])
def test_recursions_of_each_representation(rng, floating):
    """[M18k] eqs. (15), (31), (58), (68) give the same twists as J q̇."""
    from liemb_ros.core.kinematics import body_twists
    model = random_model(7, rng, branching=0.4, floating=floating)
    base = random_pose(rng)
    q = rng.standard_normal(model.nq)
    qd = rng.standard_normal(model.nv)
    for rep in REPS:
        V = body_twists(model, q, qd, rep, base_pose=base)
        for i, name in enumerate(model.body_names):
            np.testing.assert_allclose(V[i], lm.link_twist(model, q, qd, name, rep,
                                                           base_pose=base), atol=1e-12)


def test_system_jacobian_factorisations(rng):
    """[M18k] §3: J = A X, A (I - D) = I, D nilpotent, A^s = Ad_C A^b Ad_C^-1."""
    from liemb_ros.core.kinematics import body_poses, jacobian_factors, representation_map
    model = random_model(6, rng, branching=0.4)
    q = rng.standard_normal(model.nq)
    n6 = 6 * model.nb
    stacked = {}
    factors = {}
    for rep in REPS:
        J, A, X, D = jacobian_factors(model, q, rep)
        factors[rep] = A
        stacked[rep] = np.vstack([lm.jacobian(model, q, n, rep) for n in model.body_names])
        np.testing.assert_allclose(J, stacked[rep], atol=1e-12)
        np.testing.assert_allclose(A @ (np.eye(n6) - D), np.eye(n6), atol=1e-12)
        np.testing.assert_array_equal(np.linalg.matrix_power(D, model.nb), 0.0)
        series = sum(np.linalg.matrix_power(D, k) for k in range(model.nb))
        np.testing.assert_allclose(A, series, atol=1e-12)
    Cs = body_poses(model, q)
    AdC = sla.block_diag(*[representation_map(C, 'body', 'spatial') for C in Cs])
    np.testing.assert_allclose(factors['spatial'], AdC @ factors['body'] @ np.linalg.inv(AdC),
                               atol=1e-12)
    AdR = sla.block_diag(*[representation_map(C, 'body', 'hybrid') for C in Cs])
    np.testing.assert_allclose(factors['hybrid'], AdR @ factors['body'] @ AdR.T, atol=1e-12)
