"""Christoffel symbols ([M18d] (85)-(86)) against differences of M, coriolis_matrix, (86)."""
import numpy as np
import pytest

import liemb_ros as lm
from liemb_ros.core.lie import se3
from liemb_ros.core.model.synthetic import random_model
from conftest import erd_path
from test_dynamics import make_tree

H = 1e-3        # step of the fourth-order central differences of M [rad or m]


def gamma_by_differences(model, q, h=H):
    """Γ_ijk = ½ (∂M_ij/∂q_k + ∂M_ik/∂q_j - ∂M_jk/∂q_i), ∂M by fourth-order differences."""
    n = model.nq
    dM = np.empty((n, n, n))
    for k in range(n):
        e = h * np.eye(n)[k]
        M = lambda s: lm.mass_matrix(model, q + s * e)   # noqa: E731
        dM[:, :, k] = (M(-2) - 8 * M(-1) + 8 * M(1) - M(2)) / (12 * h)
    return 0.5 * (dM + dM.transpose(0, 2, 1) - dM.transpose(2, 0, 1))


@pytest.mark.parametrize('seed', range(3))
def test_against_differences_of_the_mass_matrix(seed):
    """Random trees of R/P/H joints: Γ to 1e-7 of its largest entry; C = Γ q̇ to round-off."""
    rng = np.random.default_rng(seed)
    model = make_tree(rng, 7)
    q, qd = rng.standard_normal(model.nq), rng.standard_normal(model.nv)
    G = lm.christoffel_symbols(model, q)
    np.testing.assert_allclose(G, gamma_by_differences(model, q), rtol=0,
                               atol=1e-7 * np.abs(G).max())
    np.testing.assert_array_equal(G, G.transpose(0, 2, 1))
    C = lm.coriolis_matrix(model, q, qd)
    np.testing.assert_allclose(np.einsum('ijk,k->ij', G, qd), C, rtol=0,
                               atol=1e-12 * np.abs(C).max())


def test_mimic_coupling_and_batches():
    """Panda with coupled fingers (one coordinate, two bodies); a batch = its configurations."""
    model = lm.load_urdf(erd_path('panda'), mimic='couple')
    rng = np.random.default_rng(4)
    q = np.stack([model.random_configuration(rng) for _ in range(2)])
    G = lm.christoffel_symbols(model, q)
    assert G.shape == (2, model.nq, model.nq, model.nq)
    for b in range(2):
        np.testing.assert_allclose(G[b], gamma_by_differences(model, q[b]), rtol=0,
                                   atol=1e-7 * np.abs(G[b]).max())
        np.testing.assert_array_equal(G[b], lm.christoffel_symbols(model, q[b]))


def test_paper_86_corrected_on_its_domain():
    """(86) with r = max(j, k), s = min(j, k) (docs/theory/errata.md) on i<j≤k or j≤i<k."""
    model = random_model(6, 5, branching=0.0)
    rng = np.random.default_rng(5)
    q = rng.standard_normal(model.nq)
    G = lm.christoffel_symbols(model, q)
    J = lm.jacobian_factors(model, q, 'body')[0]
    n = model.nb
    col = lambda b, a: J[6 * b:6 * b + 6, a]   # noqa: E731
    br = lambda x, y: se3.ad(x) @ y            # noqa: E731
    checked = 0
    for i in range(n):
        for j in range(n):
            for k in range(j, n):
                if not (i < j <= k or j <= i < k):
                    continue
                r, s = max(j, k), min(j, k)
                g = 0.5 * sum(
                    col(b, k) @ model.inertia[b] @ br(col(b, i), col(b, j))
                    + col(b, j) @ model.inertia[b] @ br(col(b, i), col(b, k))
                    + col(b, i) @ model.inertia[b] @ br(col(b, s), col(b, r))
                    for b in range(k, n))          # the paper's sum over bodies l ≥ k
                assert abs(G[i, j, k] - g) <= 1e-12 * np.abs(G).max()
                checked += 1
    assert checked > 30
    outside = [G[i, j, k] for i in range(n) for j in range(n) for k in range(n)
               if i >= max(j, k)]          # not covered by (86), and not zero
    assert np.abs(outside).max() > 1e-2 * np.abs(G).max()


def test_bad_input(rng):
    with pytest.raises(ValueError, match='fixed-base'):
        lm.christoffel_symbols(make_tree(rng, 3, True), np.zeros(3))
    model = make_tree(rng, 3)
    with pytest.raises(ValueError, match='NaN'):
        lm.christoffel_symbols(model, np.array([0.0, np.nan, 0.0]))
    with pytest.raises(ValueError, match='shape'):
        lm.christoffel_symbols(model, np.zeros(4))
