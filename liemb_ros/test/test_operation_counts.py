"""The operation counts of the three Newton–Euler forms against [M18d] §4.5."""
import numpy as np
import pytest

import liemb_ros.core.operation_counts as OC
from liemb_ros.core import dynamics as D
from liemb_ros.core.model.synthetic import random_model
from conftest import erd_path
from test_dynamics import make_tree
import liemb_ros as lm


@pytest.mark.parametrize('form', OC.FORMS)
def test_instrumented_recursions_are_the_inverse_dynamics(form):
    """The counted recursions give the compiled inverse dynamics' τ (gravity, trees, mimic)."""
    rng = np.random.default_rng(1)
    for model in (make_tree(rng, 7, gravity=(0.5, -0.3, -9.81)),
                  lm.load_urdf(erd_path('panda'), mimic='couple')):
        q = model.random_configuration(rng) if model.name != 'tree' else \
            rng.standard_normal(model.nq)
        qd, qdd = rng.standard_normal((2, model.nv))
        tau = D.inverse_dynamics(model, q, qd, qdd)
        np.testing.assert_allclose(OC.newton_euler_counts(model, q, qd, qdd, form)[0], tau,
                                   rtol=0, atol=1e-12 * np.abs(tau).max())
        no_g = D.inverse_dynamics(model.replace(gravity=np.zeros(3)), q, qd, qdd)
        np.testing.assert_allclose(
            OC.newton_euler_counts(model, q, qd, qdd, form, gravity=False)[0], no_g,
            rtol=0, atol=1e-12 * np.abs(no_g).max())


@pytest.mark.parametrize('n', [1, 2, 6, 11])
@pytest.mark.parametrize('form', OC.FORMS)
def test_chain_counts_are_the_papers(form, n):
    """A chain of n bodies without gravity: exactly the counts the paper states."""
    model = random_model(n, n, branching=0.0)
    z = np.ones(model.nq)
    counts = OC.newton_euler_counts(model, z, z, z, form, gravity=False)[1]
    assert counts.pop('pose products') == n
    assert counts == {k: v for k, v in OC.paper_counts(n, form).items() if v}


def test_trees_and_gravity():
    """A tree with r bodies on the ground: each '-1' of the paper becomes '-r'; gravity adds r
    frame transformations to the body-fixed form only."""
    model = random_model(9, 3, branching=0.6)
    n, r = model.nb, int((model.parent < 0).sum())
    assert r > 1
    z = np.ones(model.nq)
    count = lambda form, g: OC.newton_euler_counts(model, z, z, z, form, g)[1]   # noqa: E731
    assert count('body', False)['frame transformations'] == 3 * (n - r)
    assert count('body', False)['Lie brackets'] == 2 * n - r
    assert count('body', True)['frame transformations'] == 3 * (n - r) + r
    assert count('spatial', True) == count('spatial', False)
    assert count('hybrid', False)['translational transformations'] == 3 * (n - r)
    assert count('hybrid', False)['Lie brackets'] == 3 * n - r
    assert count('hybrid', True) == count('hybrid', False)


def test_bad_input(rng):
    model = make_tree(rng, 3)
    z = np.zeros(3)
    with pytest.raises(ValueError, match='unknown form'):
        OC.newton_euler_counts(model, z, z, z, 'mixed')
    with pytest.raises(ValueError, match='qd must be'):
        OC.newton_euler_counts(model, z, z[:2], z)
    with pytest.raises(ValueError, match='fixed-base'):
        OC.newton_euler_counts(make_tree(rng, 3, True), z, np.zeros(9), np.zeros(9))
