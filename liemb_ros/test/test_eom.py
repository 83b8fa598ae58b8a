"""Closed-form EOM (Kane, Lagrange), derivatives of the inverse dynamics, τ̇, linearisation."""
import ast
import os
import subprocess
import sys

import numpy as np
import pinocchio as pin
import pytest
import scipy.linalg as sla

from liemb_ros.core import dynamics as D
from liemb_ros.core import eom as E
from liemb_ros.core.model.synthetic import random_model, random_pose
from conftest import erd_path, ROOT
from test_dynamics import hat6, make_tree, pin_q, pin_setup, state


def perturbed(model, q, base, k, h):
    """Return ``(q, base)`` moved by ``h`` along tangent direction ``k`` (base: C exp(h e_k))."""
    off = model.nv - model.nq
    if k < off:
        return q, base @ sla.expm(hat6(h * np.eye(6)[k]))
    q = q.copy()
    q[k - off] += h
    return q, base


# --------------------------------------------------------------------------- closed forms
@pytest.mark.parametrize('seed', range(3))
def test_kane_equals_recursive_inverse_dynamics(seed):
    rng = np.random.default_rng(seed)
    model = make_tree(rng, 7, gravity=(0.5, -0.3, -9.81))
    q, qd, qdd, _, f = state(model, rng)
    for fext in (None, f):
        tau = D.inverse_dynamics(model, q, qd, qdd, f_ext=fext)
        np.testing.assert_allclose(E.kane_eom(model, q, qd, qdd, f_ext=fext), tau,
                                   atol=1e-12 * np.abs(tau).max())


@pytest.mark.parametrize('seed', range(3))
def test_lagrange_form(seed):
    """M = Jᵀ M^b J is the CRBA; M q̈ + C₈₄ q̇ + g = τ; only q̇ᵀ(Ṁ - 2C₈₄)q̇ vanishes."""
    rng = np.random.default_rng(seed)
    model = random_model(7, rng, branching=0.4)
    q, qd, qdd, _, _ = state(model, rng)
    M, C, g = E.lagrange_eom(model, q, qd)
    scale = np.abs(M).max()
    np.testing.assert_allclose(M, D.mass_matrix(model, q), atol=1e-13 * scale)
    np.testing.assert_allclose(g, D.gravity_torques(model, q), atol=1e-12 * np.abs(g).max())
    tau = D.inverse_dynamics(model, q, qd, qdd)
    np.testing.assert_allclose(M @ qdd + C @ qd + g, tau, atol=1e-12 * np.abs(tau).max())
    # (84) and the Christoffel matrix give the same C q̇, but only the latter is skew
    np.testing.assert_allclose(C @ qd, D.coriolis_matrix(model, q, qd) @ qd,
                               atol=1e-12 * np.abs(tau).max())
    Md = D.mass_matrix_derivative(model, q, qd)
    assert abs(qd @ (Md - 2 * C) @ qd) < 1e-11 * scale * (qd @ qd)
    S = Md - 2 * C
    assert np.abs(S + S.T).max() > 1e-3 * scale


def test_closed_forms_refuse_floating_base(rng):
    model = make_tree(rng, 3, floating=True)
    q, qd, qdd, _, _ = state(model, rng)
    with pytest.raises(ValueError, match='fixed-base'):
        E.kane_eom(model, q, qd, qdd)
    fixed = make_tree(rng, 3)
    with pytest.raises(ValueError, match='shapes'):
        E.lagrange_eom(fixed, q[:2], qd[:3])


# --------------------------------------------------------------------------- derivatives
@pytest.mark.parametrize('name', ['ur5', 'panda', 'solo12'])
def test_derivatives_against_pinocchio(name, rng):
    model, pm, data, P, Pq = pin_setup(name)
    for _ in range(3):
        q = model.random_configuration(rng)
        base = random_pose(rng) if model.floating else np.eye(4)
        qd, qdd = rng.standard_normal(model.nv), rng.standard_normal(model.nv)
        qp = pin_q(model, Pq, q, base if model.floating else None)
        dq, dqd = E.inverse_dynamics_derivatives(model, q, qd, qdd,
                                                 base_pose=base if model.floating else None)
        pdq, pdv, pda = pin.computeRNEADerivatives(pm, data, qp, P @ qd, P @ qdd)
        np.testing.assert_allclose(P @ dq @ P.T, pdq, atol=1e-9)
        np.testing.assert_allclose(P @ dqd @ P.T, pdv, atol=1e-9)


@pytest.mark.parametrize('floating', [False, True])
def test_derivatives_by_finite_differences(floating, rng):
    """∂τ/∂q (base along C exp(δ^)) and ∂τ/∂q̇ against central differences, with link wrenches."""
    model = make_tree(rng, 7, floating, gravity=(0.3, 0.2, -9.81))
    q, qd, qdd, base, f = state(model, rng)
    base = np.eye(4) if base is None else base
    dq, dqd = E.inverse_dynamics_derivatives(model, q, qd, qdd, f_ext=f, base_pose=base)
    h = 1e-6

    def tau(q_, qd_, b_):
        return D.inverse_dynamics(model, q_, qd_, qdd, f_ext=f, base_pose=b_)

    def dtau_dk(k):
        (qp, bp), (qm, bm) = perturbed(model, q, base, k, h), perturbed(model, q, base, k, -h)
        return (tau(qp, qd, bp) - tau(qm, qd, bm)) / (2 * h)
    fdq = np.array([dtau_dk(k) for k in range(model.nv)]).T
    fdqd = np.array([(tau(q, qd + h * e, base) - tau(q, qd - h * e, base)) / (2 * h)
                     for e in np.eye(model.nv)]).T
    scale = np.abs(dq).max()
    np.testing.assert_allclose(dq, fdq, atol=1e-6 * scale)
    np.testing.assert_allclose(dqd, fdqd, atol=1e-6 * np.abs(dqd).max())
    if not floating:   # C q̇ is quadratic with Γ_ijk = Γ_ikj: ∂τ/∂q̇ = 2 C_Γ
        np.testing.assert_allclose(dqd, 2 * D.coriolis_matrix(model, q, qd),
                                   atol=1e-12 * np.abs(dqd).max())


def test_derivatives_with_mimic_coupling(rng):
    """A mimic-coupled Panda (one coordinate drives both fingers, with link wrenches)."""
    import liemb_ros as lm
    from conftest import erd_path
    model = lm.load_urdf(erd_path('panda'), mimic='couple')
    assert model.nq == 8
    q, qd, qdd = (rng.standard_normal(model.nq) for _ in range(3))
    f = {'panda_leftfinger': rng.standard_normal(6), 'panda_link5': rng.standard_normal(6)}
    dq, dqd = E.inverse_dynamics_derivatives(model, q, qd, qdd, f_ext=f)
    h = 1e-6

    def tau(q_, qd_):
        return D.inverse_dynamics(model, q_, qd_, qdd, f_ext=f)
    units = np.eye(model.nq)
    fdq = np.array([(tau(q + h * e, qd) - tau(q - h * e, qd)) / (2 * h) for e in units]).T
    fdqd = np.array([(tau(q, qd + h * e) - tau(q, qd - h * e)) / (2 * h) for e in units]).T
    np.testing.assert_allclose(dq, fdq, atol=1e-6 * np.abs(dq).max())
    np.testing.assert_allclose(dqd, fdqd, atol=1e-6 * np.abs(dqd).max())
    assert np.abs(dq[:, 7]).max() > 1e-3   # the coupled fingers' column is live


@pytest.mark.parametrize('floating', [False, True])
def test_time_derivative_of_inverse_dynamics(floating, rng):
    """τ̇ against a 4th-order difference of τ along (q, q̇, q̈)(t) with constant jerk."""
    model = make_tree(rng, 6, floating)
    q, qd, qdd, base, _ = state(model, rng)
    base = np.eye(4) if base is None else base
    qddd = rng.standard_normal(model.nv)
    off = model.nv - model.nq

    def tau(t):
        # any smooth base path with Ċ(0) = C V̂_base(0) has the same first derivative
        v = qd + t * qdd + t * t / 2 * qddd
        a = qdd + t * qddd
        dq = qd * t + qdd * t * t / 2 + qddd * t ** 3 / 6
        b = base @ sla.expm(hat6(dq[:6])) if off else base
        return D.inverse_dynamics(model, q + dq[off:], v, a, base_pose=b)
    h = 1e-4
    fd = (tau(-2 * h) - 8 * tau(-h) + 8 * tau(h) - tau(2 * h)) / (12 * h)
    td = E.inverse_dynamics_time_derivative(model, q, qd, qdd, qddd, base_pose=base)
    np.testing.assert_allclose(td, fd, rtol=1e-7, atol=1e-7 * np.abs(td).max())


@pytest.mark.parametrize('floating', [False, True])
def test_linearize_against_finite_differences(floating, rng):
    """A, B of δẋ = A δx + B δτ: columns by central differences of the forward dynamics."""
    model = make_tree(rng, 5, floating)
    q, qd, _, base, _ = state(model, rng)
    base = np.eye(4) if base is None else base
    tau = rng.standard_normal(model.nv)
    A, B = E.linearize(model, q, qd, tau, base_pose=base)
    nv, h = model.nv, 1e-6

    def fd(q_, qd_, b_, tau_):
        return D.forward_dynamics(model, q_, qd_, tau_, base_pose=b_)
    for k in range(nv):
        (qp, bp), (qm, bm) = perturbed(model, q, base, k, h), perturbed(model, q, base, k, -h)
        col = (fd(qp, qd, bp, tau) - fd(qm, qd, bm, tau)) / (2 * h)
        np.testing.assert_allclose(A[nv:, k], col, atol=1e-6 * max(1.0, np.abs(col).max()))
        e = np.eye(nv)[k]
        col = (fd(q, qd + h * e, base, tau) - fd(q, qd - h * e, base, tau)) / (2 * h)
        np.testing.assert_allclose(A[nv:, nv + k], col, atol=1e-6 * max(1.0, np.abs(col).max()))
        col = (fd(q, qd, base, tau + h * e) - fd(q, qd, base, tau - h * e)) / (2 * h)
        np.testing.assert_allclose(B[nv:, k], col, atol=1e-6 * max(1.0, np.abs(col).max()))
    np.testing.assert_array_equal(A[:nv, nv:], np.eye(nv))
    np.testing.assert_array_equal(B[:nv], 0.0)
    if floating:
        # the base error δ of C exp(δ^) against the nominal C(t): δ̇ = δV - ad_V δ
        d0 = 1e-6 * rng.standard_normal(6)
        t = 1e-4
        V = qd[:6]
        Cn = base @ sla.expm(hat6(t * V))
        Cp = base @ sla.expm(hat6(d0)) @ sla.expm(hat6(t * V))
        delta = sla.logm(np.linalg.inv(Cn) @ Cp)
        dlog = np.array([delta[2, 1], delta[0, 2], delta[1, 0], *delta[:3, 3]]).real
        np.testing.assert_allclose((dlog - d0) / t, A[:6, :6] @ d0, rtol=1e-3, atol=1e-12)


def test_batched_derivatives(rng):
    model = make_tree(rng, 5, floating=True)
    Bn = 3
    Q = rng.standard_normal((Bn, model.nq))
    QD, QDD = rng.standard_normal((Bn, model.nv)), rng.standard_normal((Bn, model.nv))
    dq, dqd = E.inverse_dynamics_derivatives(model, Q, QD, QDD)
    assert dq.shape == dqd.shape == (Bn, model.nv, model.nv)
    for k in range(Bn):
        a, b = E.inverse_dynamics_derivatives(model, Q[k], QD[k], QDD[k])
        np.testing.assert_array_equal(dq[k], a)
        np.testing.assert_array_equal(dqd[k], b)
        one = (np.full((model.nv, model.nv), np.nan), np.full((model.nv, model.nv), np.nan))
        got = E.inverse_dynamics_derivatives(model, Q[k], QD[k], QDD[k], out=one)
        assert got[0] is one[0] and got[1] is one[1]
        np.testing.assert_array_equal(one[0], a)
        np.testing.assert_array_equal(one[1], b)
    # out=: the same numbers in the caller's arrays; clear errors for unusable ones
    out = (np.full(dq.shape, np.nan), np.full(dq.shape, np.nan))
    got = E.inverse_dynamics_derivatives(model, Q, QD, QDD, out=out)
    assert got[0] is out[0] and got[1] is out[1]
    np.testing.assert_array_equal(out[0], dq)
    np.testing.assert_array_equal(out[1], dqd)
    with pytest.raises(ValueError, match='out must be a pair'):
        E.inverse_dynamics_derivatives(model, Q, QD, QDD, out=out[0])
    with pytest.raises(ValueError, match=r'out must be a writeable.*shape \(3,'):
        E.inverse_dynamics_derivatives(model, Q, QD, QDD, out=(out[0], out[1][:2]))
    with pytest.raises(ValueError, match='must not overlap'):
        E.inverse_dynamics_derivatives(model, Q, QD, QDD, out=(out[0], out[0]))
    n = model.nv
    for k, name in enumerate(('qd', 'qdd')):   # out over an input: refused, named
        buf = np.zeros((2, n * n))
        args = [Q[0], QD[0], QDD[0]]
        args[1 + k] = buf[1, :n]
        with pytest.raises(ValueError, match=f'out overlaps {name}'):
            E.inverse_dynamics_derivatives(model, *args,
                                           out=(buf[0].reshape(n, n), buf[1].reshape(n, n)))
    with pytest.raises(ValueError, match='single configuration'):
        E.linearize(model, Q, QD, QDD)
    with pytest.raises(ValueError, match='qddd contains NaN'):
        E.inverse_dynamics_time_derivative(model, Q[0], QD[0], QDD[0], np.full(model.nv, np.nan))
    with pytest.raises(ValueError, match='qd contains NaN'):
        E.inverse_dynamics_derivatives(model, Q[0], np.full(model.nv, np.nan), QDD[0])


_NO_JIT = """
import numpy as np
import liemb_ros as lm
from liemb_ros.core import eom as E
from liemb_ros.core.model.synthetic import random_model, random_pose
rng = np.random.default_rng(3)
out = []
for m in (random_model(4, rng, branching=0.5, floating=True),
          lm.load_urdf(SOLO, floating_base=True)):
    q = m.random_configuration(rng)
    qd, qdd, b = rng.standard_normal(m.nv), rng.standard_normal(m.nv), random_pose(rng)
    out.append([o.tolist() for o in (q, qd, qdd, b)
                + E.inverse_dynamics_derivatives(m, q, qd, qdd, base_pose=b)])
print(repr(out))
"""


@pytest.mark.slow
def test_derivatives_without_jit_agree():
    """
    ``NUMBA_DISABLE_JIT=1`` gives the same derivatives as the compiled kernels.

    A random tree and solo12; solo12's plain-Python derivatives are also checked against
    Pinocchio's ``computeRNEADerivatives``.
    """
    solo = f'SOLO = {erd_path("solo12")!r}\n'
    env = dict(os.environ, NUMBA_DISABLE_JIT='1')
    proc = subprocess.run([sys.executable, '-c', solo + _NO_JIT], capture_output=True,
                          text=True, env=env, cwd=ROOT, check=True)
    slow = ast.literal_eval(proc.stdout)
    ns = {}
    exec(solo + _NO_JIT, ns)
    for got, ref in zip(slow, ns['out']):
        for a, b in zip(got, ref):
            b = np.asarray(b)
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * np.abs(b).max())
    model, pm, data, P, Pq = pin_setup('solo12')
    q, qd, qdd, b, dq, dqd = (np.asarray(x) for x in slow[1])
    pdq, pdv, _ = pin.computeRNEADerivatives(pm, data, pin_q(model, Pq, q, b), P @ qd, P @ qdd)
    for ours, ref in ((dq, pdq), (dqd, pdv)):
        assert np.abs(P @ ours @ P.T - ref).max() <= 1e-10 * np.abs(ref).max()
