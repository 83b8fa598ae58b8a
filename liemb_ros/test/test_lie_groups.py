"""
Group axioms and exp/log/Ad/ad/dexp identities, parametrized over SO(3), SE(3), SO(3)xR^3.

Independent sources: ``scipy.linalg.expm`` of the algebra matrices, the power series of
dexp ([MT14] eq. (39)) and dexp^-1 (Bernoulli, eq. (43)), and central finite differences
of the exponential.  The strategies here are imported by the per-group test modules.
"""
import ast
from fractions import Fraction
import math
import os
import subprocess
import sys

from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays
import numpy as np
import pytest
import scipy.linalg as sl

from liemb_ros.core._kernels import lie as _core
from liemb_ros.core.lie import dual_quaternion, quaternion, se3, so3, so3r3

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FEW = settings(deadline=None, max_examples=40)
SOME = settings(deadline=None, max_examples=80)

# angles at and around every branch switch, near 0 and near pi
SPECIAL_ANGLES = [0.0, 1e-200, 1e-12, 1e-8, so3.LOG_SERIES_ANGLE, 1e-3, _core.SMALL_ANGLE,
                  np.nextafter(_core.SMALL_ANGLE, 0.0), so3.SERIES_ANGLE,
                  np.nextafter(so3.SERIES_ANGLE, 0.0), 1.0, math.pi / 2, 2.5, 3.0,
                  math.pi - 1e-6, math.pi - 1e-9]


def angles(max_angle=math.pi - 1e-9):
    """Angles in ``[0, max_angle]``, half of them from :data:`SPECIAL_ANGLES`."""
    special = [a for a in SPECIAL_ANGLES if a <= max_angle]
    return st.one_of(st.sampled_from(special), st.floats(0.0, max_angle))


@st.composite
def algebra(draw, dim=6, max_angle=math.pi - 1e-9, lin=3.0):
    """Draw an algebra element ``(xi, rest)``: ``|xi|`` from :func:`angles`, ``rest`` in a box."""
    axis = draw(arrays(np.float64, 3, elements=st.floats(-1.0, 1.0))
                .filter(lambda a: np.linalg.norm(a) > 0.1))
    xi = axis / np.linalg.norm(axis) * draw(angles(max_angle))
    rest = draw(arrays(np.float64, dim - 3, elements=st.floats(-lin, lin)))
    return np.concatenate([xi, rest])


seeds = st.integers(0, 2**32 - 1)


class Spec:
    """What the generic tests need to know about one group."""

    def __init__(self, mod, dim, n):
        self.mod = mod
        self.dim = dim
        self.eye = np.eye(n)


GROUPS = {'so3': Spec(so3, 3, 3), 'se3': Spec(se3, 6, 4), 'so3r3': Spec(so3r3, 6, 4)}
group = pytest.mark.parametrize('g', list(GROUPS.values()), ids=list(GROUPS))


def bernoulli(n):
    """Bernoulli numbers ``B_0..B_n`` with ``B_1 = -1/2`` (exact fractions)."""
    B = [Fraction(1)]
    for m in range(1, n + 1):
        B.append(-sum(math.comb(m + 1, k) * B[k] for k in range(m)) / Fraction(m + 1))
    return B


BERNOULLI = bernoulli(40)


def ad_series(A, coeffs):
    """Return ``sum_k coeffs[k] A^k``."""
    out = np.zeros_like(A)
    P = np.eye(A.shape[0])
    for c in coeffs:
        out += float(c) * P
        P = P @ A
    return out


def dexp_series(A, terms=40):
    """[MT14] eq. (39): ``sum_k A^k / (k+1)!``."""
    return ad_series(A, [Fraction(1, math.factorial(k + 1)) for k in range(terms)])


def dexpinv_series(A, terms=40):
    """[MT14] eq. (43): ``sum_k B_k / k! A^k``."""
    return ad_series(A, [BERNOULLI[k] / math.factorial(k) for k in range(terms)])


def left_fd(g, X, Xd, h=1e-5):
    """Return ``(C^-1 C')^v`` of ``C(t) = exp(X + t Xd)`` at ``t = 0`` (central FD)."""
    m = g.mod
    C0i = m.inverse(m.exp(X))
    return (m.log(m.compose(C0i, m.exp(X + h * Xd)))
            - m.log(m.compose(C0i, m.exp(X - h * Xd)))) / (2 * h)


def right_fd(g, X, Xd, h=1e-5):
    """Return ``(C' C^-1)^v`` of ``C(t) = exp(X + t Xd)`` at ``t = 0`` (central FD)."""
    m = g.mod
    C0i = m.inverse(m.exp(X))
    return (m.log(m.compose(m.exp(X + h * Xd), C0i))
            - m.log(m.compose(m.exp(X - h * Xd), C0i))) / (2 * h)


def tol(*xs, rel=1e-13):
    """Absolute tolerance ``rel * (1 + sum |x|)``."""
    return rel * (1.0 + sum(np.abs(np.asarray(x)).max() for x in xs))


# --------------------------------------------------------------------------- group axioms
@group
@FEW
@given(seed=seeds)
def test_group_axioms(g, seed):
    rng = np.random.default_rng(seed)
    C1, C2, C3 = g.mod.random(rng, 3)
    m = g.mod
    np.testing.assert_allclose(m.compose(m.compose(C1, C2), C3),
                               m.compose(C1, m.compose(C2, C3)), atol=1e-13)
    np.testing.assert_allclose(m.compose(C1, m.inverse(C1)), g.eye, atol=1e-14)
    np.testing.assert_allclose(m.compose(m.inverse(C1), C1), g.eye, atol=1e-14)
    np.testing.assert_allclose(m.compose(g.eye, C1), C1, atol=0)
    np.testing.assert_allclose(m.inverse(m.compose(C1, C2)),
                               m.compose(m.inverse(C2), m.inverse(C1)), atol=1e-14)


@group
@SOME
@given(data=st.data())
def test_log_exp_round_trip(g, data):
    X = data.draw(algebra(g.dim))
    np.testing.assert_allclose(g.mod.log(g.mod.exp(X)), X, rtol=0, atol=tol(X, rel=1e-12))


@group
@FEW
@given(seed=seeds)
def test_exp_log_round_trip(g, seed):
    C = g.mod.random(np.random.default_rng(seed))
    X = g.mod.log(C)
    assert np.linalg.norm(X[:3]) <= math.pi + 1e-15
    np.testing.assert_allclose(g.mod.exp(X), C, atol=1e-13)


@group
@FEW
@given(data=st.data())
def test_one_parameter_subgroup(g, data):
    X = data.draw(algebra(g.dim, max_angle=2.0))
    s, t = data.draw(st.floats(-1.5, 1.5)), data.draw(st.floats(-1.5, 1.5))
    m = g.mod
    np.testing.assert_allclose(m.compose(m.exp(s * X), m.exp(t * X)), m.exp((s + t) * X),
                               atol=tol(X, rel=1e-13))


# --------------------------------------------------------------------------- Ad and ad
@group
@SOME
@given(data=st.data())
def test_Ad_of_exp_is_expm_of_ad(g, data):
    X = data.draw(algebra(g.dim))
    np.testing.assert_allclose(g.mod.Ad(g.mod.exp(X)), sl.expm(g.mod.ad(X)),
                               atol=tol(X, rel=1e-13))


@group
@FEW
@given(seed=seeds)
def test_Ad_is_a_homomorphism(g, seed):
    C1, C2 = g.mod.random(np.random.default_rng(seed), 2)
    m = g.mod
    np.testing.assert_allclose(m.Ad(m.compose(C1, C2)), m.Ad(C1) @ m.Ad(C2), atol=1e-13)
    np.testing.assert_allclose(m.Ad(m.inverse(C1)), np.linalg.inv(m.Ad(C1)), atol=1e-12)


@group
@FEW
@given(data=st.data())
def test_Ad_preserves_the_bracket(g, data):
    """``Ad_C ad_X Ad_C^-1 = ad_{Ad_C X}`` (docs/theory/conventions.md#se3-hat-ad-ad)."""
    X = data.draw(algebra(g.dim))
    C = g.mod.random(np.random.default_rng(data.draw(seeds)))
    A = g.mod.Ad(C)
    np.testing.assert_allclose(A @ g.mod.ad(X) @ np.linalg.inv(A), g.mod.ad(A @ X),
                               atol=tol(X, rel=1e-12))


@group
@FEW
@given(data=st.data())
def test_ad_is_antisymmetric_and_satisfies_jacobi(g, data):
    X, Y, Z = (data.draw(algebra(g.dim)) for _ in range(3))
    ad = g.mod.ad
    np.testing.assert_allclose(ad(X) @ Y, -(ad(Y) @ X), atol=1e-13)
    jacobi = ad(X) @ ad(Y) @ Z + ad(Y) @ ad(Z) @ X + ad(Z) @ ad(X) @ Y
    np.testing.assert_allclose(jacobi, 0.0, atol=1e-11)


# --------------------------------------------------------------------------- dexp
@group
@SOME
@given(data=st.data())
def test_dexp_times_dexpinv_is_identity(g, data):
    X = data.draw(algebra(g.dim, max_angle=2 * math.pi - 0.5))
    np.testing.assert_allclose(g.mod.dexp(X) @ g.mod.dexpinv(X), np.eye(g.dim),
                               atol=tol(X, rel=1e-12))
    np.testing.assert_allclose(g.mod.dexpinv(X) @ g.mod.dexp(X), np.eye(g.dim),
                               atol=tol(X, rel=1e-12))


@group
@SOME
@given(data=st.data())
def test_dexp_and_dexpinv_against_ad_series(g, data):
    """[MT14] eqs. (39), (43), summed to 40 terms for ``|xi| <= 1`` (converges fast)."""
    X = data.draw(algebra(g.dim, max_angle=1.0, lin=1.0))
    A = g.mod.ad(X)
    np.testing.assert_allclose(g.mod.dexp(X), dexp_series(A), atol=1e-14)
    np.testing.assert_allclose(g.mod.dexpinv(X), dexpinv_series(A), atol=1e-14)


@group
@FEW
@given(data=st.data())
def test_dexpinv_low_order_bernoulli_terms(g, data):
    """``dexp^-1 = I - ad/2 + ad^2/12 - ad^4/720 + O(|X|^6)`` ([MT14] eq. (43)) for small X."""
    X = data.draw(algebra(g.dim, max_angle=1e-2, lin=1e-2))
    A = g.mod.ad(X)
    A2 = A @ A
    approx = np.eye(g.dim) - A / 2 + A2 / 12 - A2 @ A2 / 720
    np.testing.assert_allclose(g.mod.dexpinv(X), approx, atol=1e-15)


@group
@SOME
@given(data=st.data())
def test_body_twist_is_dexp_of_minus_x_times_xdot(g, data):
    """``V = dexp_{-X} X'`` ([MT14] eq. (53)) and ``V^s = dexp_X X'``, against central FD."""
    X = data.draw(algebra(g.dim, max_angle=3.0))
    Xd = data.draw(algebra(g.dim, max_angle=2.0, lin=2.0))
    np.testing.assert_allclose(g.mod.dexp(-X) @ Xd, left_fd(g, X, Xd),
                               atol=tol(X, Xd, rel=1e-8))
    np.testing.assert_allclose(g.mod.dexp(X) @ Xd, right_fd(g, X, Xd),
                               atol=tol(X, Xd, rel=1e-8))


@group
@FEW
@given(data=st.data())
def test_Ad_exp_times_dexp_minus_x_is_dexp_x(g, data):
    """``Ad_{exp X} dexp_{-X} = dexp_X`` (in every group; [MT14] Remark 5 uses it on SO(3))."""
    X = data.draw(algebra(g.dim))
    np.testing.assert_allclose(g.mod.Ad(g.mod.exp(X)) @ g.mod.dexp(-X), g.mod.dexp(X),
                               atol=tol(X, rel=1e-13))


# --------------------------------------------------------------------------- branch switches
THRESHOLDS = [so3.LOG_SERIES_ANGLE, _core.SMALL_ANGLE, so3.SERIES_ANGLE,
              quaternion.QUAT_SERIES, 2 * math.atan(quaternion.QUAT_SERIES),
              2 * so3.SERIES_ANGLE]
CONTINUOUS = {
    'so3.exp': (so3.exp, 3), 'so3.dexp': (so3.dexp, 3), 'so3.dexpinv': (so3.dexpinv, 3),
    'so3.log': (lambda x: so3.log(so3.exp(x)), 3),
    'se3.exp': (se3.exp, 6), 'se3.dexp': (se3.dexp, 6), 'se3.dexpinv': (se3.dexpinv, 6),
    'se3.log': (lambda x: se3.log(se3.exp(x)), 6),
    'quaternion.exp': (quaternion.exp, 3),
    'quaternion.log': (lambda x: quaternion.log(quaternion.exp(x)), 3),
    'dual_quaternion.exp': (dual_quaternion.exp, 6),
    'dual_quaternion.log': (lambda x: dual_quaternion.log(dual_quaternion.exp(x)), 6),
}


@pytest.mark.parametrize('name', list(CONTINUOUS))
@pytest.mark.parametrize('threshold', THRESHOLDS)
def test_continuous_across_small_angle_branch(name, threshold, rng):
    """Values one ulp below and at each series threshold agree to 1e-12."""
    f, dim = CONTINUOUS[name]
    for _ in range(5):
        X = rng.uniform(-2, 2, dim)
        e = X[:3] / np.linalg.norm(X[:3])
        below, at = X.copy(), X.copy()
        below[:3] = e * np.nextafter(threshold, 0.0)
        at[:3] = e * threshold
        np.testing.assert_allclose(f(below), f(at), rtol=0, atol=1e-12)


# --------------------------------------------------------------------------- batching
BATCHED = [
    (so3.hat, [(3,)]), (so3.vee, [(3, 3)]), (so3.exp, [(3,)]), (so3.log, ['so3']),
    (so3.dexp, [(3,)]), (so3.dexpinv, [(3,)]), (so3.Ad, ['so3']), (so3.ad, [(3,)]),
    (so3.compose, ['so3', 'so3']), (so3.inverse, ['so3']), (so3.act, ['so3', (3,)]),
    (se3.hat, [(6,)]), (se3.vee, [(4, 4)]), (se3.exp, [(6,)]), (se3.log, ['se3']),
    (se3.Ad, ['se3']), (se3.Ad_inv, ['se3']), (se3.ad, [(6,)]), (se3.ad_star, [(6,)]),
    (se3.dexp, [(6,)]), (se3.dexpinv, [(6,)]), (se3.compose, ['se3', 'se3']),
    (se3.inverse, ['se3']), (se3.act, ['se3', (3,)]), (se3.Ad_R, ['so3']),
    (se3.Ad_r, [(3,)]), (se3.from_Rr, ['so3', (3,)]), (se3.to_Rr, ['se3']),
    (so3r3.compose, ['se3', 'se3']), (so3r3.inverse, ['se3']), (so3r3.exp, [(6,)]),
    (so3r3.log, ['se3']), (so3r3.Ad, ['se3']), (so3r3.ad, [(6,)]), (so3r3.dexp, [(6,)]),
    (so3r3.dexpinv, [(6,)]),
    (quaternion.from_matrix, ['so3']), (quaternion.to_matrix, ['quat']),
    (quaternion.multiply, ['quat', 'quat']), (quaternion.conjugate, ['quat']),
    (quaternion.normalize, ['quat']), (quaternion.exp, [(3,)]), (quaternion.log, ['quat']),
    (quaternion.act, ['quat', (3,)]), (quaternion.from_xyzw, ['quat']),
    (quaternion.to_xyzw, ['quat']),
    (dual_quaternion.from_matrix, ['se3']), (dual_quaternion.to_matrix, ['dq']),
    (dual_quaternion.multiply, ['dq', 'dq']), (dual_quaternion.conjugate, ['dq']),
    (dual_quaternion.exp, [(6,)]), (dual_quaternion.log, ['dq']),
]


def _sample(kind, lead, rng):
    if kind == 'so3':
        return so3.random(rng, lead)
    if kind == 'se3':
        return se3.random(rng, lead)
    if kind == 'quat':
        return quaternion.normalize(rng.standard_normal(lead + (4,)))
    if kind == 'dq':
        return dual_quaternion.from_matrix(se3.random(rng, lead))
    return rng.uniform(-2.0, 2.0, lead + kind)


def _name(f):
    return f.__module__.rsplit('.', 1)[-1] + '.' + f.__name__


@pytest.mark.parametrize('f,kinds', BATCHED, ids=[_name(f) for f, _ in BATCHED])
def test_batch_shapes_equal_per_element_results(f, kinds, rng):
    args = [_sample(k, (2, 3), rng) for k in kinds]
    out = f(*args)
    outs = out if isinstance(out, tuple) else (out,)
    for i in range(2):
        for j in range(3):
            single = f(*[a[i, j] for a in args])
            singles = single if isinstance(single, tuple) else (single,)
            for o, s in zip(outs, singles):
                assert o.shape == (2, 3) + s.shape
                np.testing.assert_array_equal(o[i, j], s)
    if len(kinds) == 2:  # leading axes broadcast: one element against the batch
        out1 = f(args[0][0, 0], args[1])
        first = out1[0] if isinstance(out1, tuple) else out1
        assert first.shape[:2] == (2, 3)


@pytest.mark.parametrize('f,kinds', BATCHED, ids=[_name(f) for f, _ in BATCHED])
def test_wrong_trailing_shape_raises(f, kinds, rng):
    args = [_sample(k, (), rng) for k in kinds]
    bad = np.zeros(args[0].shape[:-1] + (args[0].shape[-1] + 1,))
    with pytest.raises(ValueError, match=f.__name__):
        f(bad, *args[1:])


def test_mismatched_leading_shapes_raise(rng):
    with pytest.raises(ValueError, match='do not broadcast'):
        se3.compose(se3.random(rng, 2), se3.random(rng, 3))


def test_results_without_jit_agree():
    """``NUMBA_DISABLE_JIT=1`` runs the same kernels as plain Python (slow but correct)."""
    code = ('import numpy as np\n'
            'from liemb_ros.core.lie import se3, so3r3, quaternion, dual_quaternion\n'
            'X = np.array([[0.3, -1.2, 2.0, 0.5, 0.1, -2.0], [1e-9, 0, 0, 1, 2, 3]])\n'
            'C = se3.exp(X)\n'
            'out = [C, se3.log(C), se3.dexp(X), se3.dexpinv(X), so3r3.exp(X),\n'
            '       quaternion.exp(X[:, :3]), dual_quaternion.exp(X),\n'
            '       dual_quaternion.log(dual_quaternion.exp(X))]\n'
            'print(repr(np.concatenate([o.ravel() for o in out]).tolist()))\n')
    env = dict(os.environ, NUMBA_DISABLE_JIT='1')
    proc = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                          env=env, cwd=ROOT, check=True)
    slow = np.array(ast.literal_eval(proc.stdout))
    X = np.array([[0.3, -1.2, 2.0, 0.5, 0.1, -2.0], [1e-9, 0, 0, 1, 2, 3]])
    C = se3.exp(X)
    fast = [C, se3.log(C), se3.dexp(X), se3.dexpinv(X), so3r3.exp(X), quaternion.exp(X[:, :3]),
            dual_quaternion.exp(X), dual_quaternion.log(dual_quaternion.exp(X))]
    np.testing.assert_allclose(slow, np.concatenate([o.ravel() for o in fast]), atol=1e-15)
