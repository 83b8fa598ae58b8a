"""Jerk of links and bodies, J̈ ([M18d] §2) against finite differences and the closed form (13)."""
import numpy as np
import pytest

import liemb_ros as lm
from liemb_ros.core import jerk as JK
from liemb_ros.core.lie import se3
from liemb_ros.core.model.synthetic import random_model, random_pose
from conftest import erd_path
from test_dynamics import make_tree

REPS = ('body', 'spatial', 'hybrid', 'mixed')
H = 1e-3        # step of the fourth-order central differences below [s]


def d1(f, h=H):
    """Fourth-order central first derivative of ``f(t)`` at 0."""
    return (f(-2 * h) - 8 * f(-h) + 8 * f(h) - f(2 * h)) / (12 * h)


def d2(f, h=H):
    """Fourth-order central second derivative of ``f(t)`` at 0."""
    return (-f(-2 * h) + 16 * f(-h) - 30 * f(0.0) + 16 * f(h) - f(2 * h)) / (12 * h * h)


def trajectory(model, q, qd, qdd, qddd, base):
    """
    ``t -> (q, q̇, q̈, C_base)(t)``, exact to third order in ``t`` at 0.

    Joints: the cubic with jerk ``qddd``.  Floating base: ``C(t) = C₀ exp(t a) exp(t²/2 b)
    exp(t³/6 c)``, whose body twist is ``Ad_{E₃⁻¹E₂⁻¹} a + Ad_{E₃⁻¹} t b + t²/2 c``, with
    ``V(0) = a``, ``V̇(0) = b``, ``V̈(0) = c + ad_a b``; its ``V̇(t)`` by a fine difference.
    """
    off = model.nv - model.nq
    a, b = qd[:off], qdd[:off]
    c = qddd[:off] - (se3.ad(a) @ b if off else 0.0)

    def base_twist(t):
        E2, E3 = se3.exp(t * t / 2 * b), se3.exp(t ** 3 / 6 * c)
        return (se3.Ad_inv(E2 @ E3) @ a + se3.Ad_inv(E3) @ (t * b) + t * t / 2 * c)

    def at(t):
        qt = q + qd[off:] * t + qdd[off:] * t * t / 2 + qddd[off:] * t ** 3 / 6
        v = qd + qdd * t + qddd * t * t / 2
        acc = qdd + qddd * t
        if not off:
            return qt, v, acc, base
        v[:6] = base_twist(t)
        acc[:6] = d1(lambda s: base_twist(t + s), 1e-4)
        C = base @ se3.exp(t * a) @ se3.exp(t * t / 2 * b) @ se3.exp(t ** 3 / 6 * c)
        return qt, v, acc, C
    return at


def setup(floating, seed, n=6):
    rng = np.random.default_rng(seed)
    model = make_tree(rng, n, floating)
    q = rng.standard_normal(model.nq)
    qd, qdd, qddd = rng.standard_normal((3, model.nv))
    base = random_pose(rng) if floating else np.eye(4)
    return model, q, qd, qdd, qddd, base


@pytest.mark.parametrize('floating', [False, True])
def test_link_jerk_is_the_derivative_of_the_acceleration(floating):
    """``link_jerk`` = d/dt ``link_acceleration`` along a cubic, every link, all four forms."""
    model, q, qd, qdd, qddd, base = setup(floating, 3)
    path = trajectory(model, q, qd, qdd, qddd, base)
    for link in model.link_names[1:]:
        for rep in REPS:
            jerk = lm.link_jerk(model, q, qd, qdd, qddd, link, rep, base_pose=base)

            def acc(t):
                qt, v, a, C = path(t)
                return lm.link_acceleration(model, qt, v, a, link, rep, base_pose=C)
            np.testing.assert_allclose(jerk, d1(acc), rtol=0, atol=1e-7 * np.abs(jerk).max())


@pytest.mark.parametrize('floating', [False, True])
def test_jacobian_second_derivative(floating):
    """``J̈`` = d/dt ``jacobian_derivative`` along the motion; ``V̈ = J q⃛ + 2 J̇ q̈ + J̈ q̇``."""
    model, q, qd, qdd, qddd, base = setup(floating, 5)
    path = trajectory(model, q, qd, qdd, np.zeros(model.nv), base)
    link = model.link_names[-1]
    for rep in REPS:
        Jdd = lm.jacobian_second_derivative(model, q, qd, qdd, link, rep, base_pose=base)

        def jd(t):
            qt, v, _, C = path(t)
            return lm.jacobian_derivative(model, qt, v, link, rep, base_pose=C)
        np.testing.assert_allclose(Jdd, d1(jd), rtol=0, atol=1e-7 * np.abs(Jdd).max())
        J = lm.jacobian(model, q, link, rep, base_pose=base)
        Jd = lm.jacobian_derivative(model, q, qd, link, rep, base_pose=base)
        np.testing.assert_allclose(
            lm.link_jerk(model, q, qd, qdd, qddd, link, rep, base_pose=base),
            J @ qddd + 2 * Jd @ qdd + Jdd @ qd, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize('floating', [False, True])
def test_body_jerks_of_the_four_recursions(floating):
    """Each form's recursion = the second difference of ``body_twists`` in that form."""
    model, q, qd, qdd, qddd, base = setup(floating, 7)
    path = trajectory(model, q, qd, qdd, qddd, base)
    for form in REPS:
        jerk = lm.body_jerks(model, q, qd, qdd, qddd, form, base_pose=base)

        def twists(t):
            qt, v, _, C = path(t)
            return lm.body_twists(model, qt, v, form, base_pose=C)
        np.testing.assert_allclose(jerk, d2(twists), rtol=0, atol=1e-7 * np.abs(jerk).max())


def closed_form_13(model, q, qd, qdd, qddd, factor):
    """[M18d] (13) on a chain, from the body-fixed Jacobian blocks; ``factor(k, r)``: last sum."""
    J = lm.jacobian_factors(model, q, 'body')[0]
    n = model.nb
    col = [[J[6 * i:6 * i + 6, j] for j in range(n)] for i in range(n)]
    br = lambda x, y: se3.ad(x) @ y   # noqa: E731
    out = np.zeros((n, 6))
    for i in range(n):
        for j in range(i + 1):
            out[i] += col[i][j] * qddd[j]
            for k in range(j + 1, i + 1):
                b = br(col[i][j], col[i][k])
                out[i] += b * (2 * qdd[j] * qd[k] + qd[j] * qdd[k])
                for r in range(k, i + 1):
                    out[i] += factor(k, r) * br(b, col[i][r]) * qd[j] * qd[k] * qd[r]
    return out


def test_closed_form_13_and_its_erratum():
    """The body-fixed recursion = (13) with ``2 - δ_kr`` (docs/theory/errata.md), not printed."""
    model = random_model(6, 2, branching=0.0)
    rng = np.random.default_rng(2)
    q = rng.standard_normal(model.nq)
    qd, qdd, qddd = rng.standard_normal((3, model.nv))
    jerk = lm.body_jerks(model, q, qd, qdd, qddd, 'body')
    right = closed_form_13(model, q, qd, qdd, qddd, lambda k, r: 2.0 - (k == r))
    printed = closed_form_13(model, q, qd, qdd, qddd, lambda k, r: 2.0)
    np.testing.assert_allclose(jerk, right, rtol=0, atol=1e-12 * np.abs(jerk).max())
    assert np.abs(printed - jerk).max() > 1e-2 * np.abs(jerk).max()


def test_mimic_coupling_and_batches():
    """Coupled joints (panda's fingers) by differences; a batch equals its configurations."""
    model = lm.load_urdf(erd_path('panda'), mimic='couple')
    rng = np.random.default_rng(11)
    B = 3
    q = np.stack([model.random_configuration(rng) for _ in range(B)])
    qd, qdd, qddd = rng.standard_normal((3, B, model.nv))
    link = 'panda_leftfinger'
    jerk = lm.link_jerk(model, q, qd, qdd, qddd, link, 'hybrid')
    Jdd = lm.jacobian_second_derivative(model, q, qd, qdd, link, 'mixed')
    for b in range(B):
        path = trajectory(model, q[b], qd[b], qdd[b], qddd[b], np.eye(4))

        def acc(t):
            qt, v, a, _ = path(t)
            return lm.link_acceleration(model, qt, v, a, link, 'hybrid')
        np.testing.assert_allclose(jerk[b], d1(acc), rtol=0, atol=1e-7 * np.abs(jerk[b]).max())
        np.testing.assert_array_equal(
            Jdd[b], lm.jacobian_second_derivative(model, q[b], qd[b], qdd[b], link, 'mixed'))


def test_bad_input():
    model, q, qd, qdd, qddd, _ = setup(False, 1, 3)
    with pytest.raises(ValueError, match='representation'):
        lm.link_jerk(model, q, qd, qdd, qddd, 'b2', 'world')
    with pytest.raises(ValueError, match='qddd'):
        lm.link_jerk(model, q, qd, qdd, qddd[:2], 'b2')
    with pytest.raises(ValueError, match='NaN'):
        lm.link_jerk(model, q, qd, qdd, np.full(model.nv, np.nan), 'b2')
    with pytest.raises(ValueError, match='single configuration'):
        lm.body_jerks(model, q[None], qd[None], qdd[None], qddd[None])
    with pytest.raises(ValueError, match='batch shapes'):
        JK.link_jerk(model, q[None], qd, qdd, qddd, 'b2')


@pytest.mark.parametrize('robot', ['ur5', 'panda'])
def test_against_pinocchio_acceleration_derivatives(robot):
    """Body and spatial jerk = Pinocchio's ∂a/∂q q̇ + ∂a/∂v q̈ + ∂a/∂a q⃛ (LOCAL, WORLD)."""
    import pinocchio as pin
    from conftest import SWAP
    path = erd_path(robot)
    model = lm.load_urdf(path)
    pm = pin.buildModelFromUrdf(path)
    data = pm.createData()
    rng = np.random.default_rng(21)
    q = model.random_configuration(rng)
    qd, qdd, qddd = rng.standard_normal((3, model.nv))
    link = model.link_names[-1]
    pin.computeForwardKinematicsDerivatives(pm, data, q, qd, qdd)
    for rep, ref in (('body', pin.LOCAL), ('spatial', pin.WORLD)):
        _, da_dq, da_dv, da_da = pin.getFrameAccelerationDerivatives(
            pm, data, pm.getFrameId(link), ref)
        expect = SWAP @ (da_dq @ qd + da_dv @ qdd + da_da @ qddd)
        jerk = lm.link_jerk(model, q, qd, qdd, qddd, link, rep)
        np.testing.assert_allclose(jerk, expect, rtol=0, atol=1e-10 * np.abs(jerk).max())
