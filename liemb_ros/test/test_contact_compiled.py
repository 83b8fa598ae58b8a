"""
The contacts' compiled evaluation (``sim/_contact_forces.py``) against numpy formulas.

The near pairs, which look at a link's spheres only where a sphere about all of them is
near a plane, are the pairs of every sphere and plane by the gap formula of
``sim/contact.py``'s module docstring; the diagonal bound of ``is_stiff`` is numpy's.
"""
import numpy as np
import pytest

import liemb_ros as lm
from liemb_ros.sim._contact_forces import _diagonal_rate_exceeds
from liemb_ros.sim.contact import ContactModel

from conftest import erd_path


def _pairs_by_numpy(cm, q, base, margin):
    """Every (sphere, plane) pair with ``n·c - d - ρ < margin``: keys, points, gaps."""
    Cs = lm.forward_kinematics(cm.model, q, base_pose=base)
    C = Cs[cm.point_link]
    c = np.einsum('nij,nj->ni', C[:, :3, :3], cm.point_pos) + C[:, :3, 3]
    hc = c @ cm.normals.T - cm.offsets                      # (spheres, planes)
    gap = hc - cm.point_radius[:, None]
    i, j = np.nonzero(gap < margin)
    x = c[i] - hc[i, j, None] * cm.normals[j]
    return i * len(cm.offsets) + j, x, gap[i, j]


@pytest.mark.parametrize('margin', [0.0, 5e-3, 0.05, np.inf])
def test_near_pairs_are_every_pair_within_the_margin(margin):
    """solo12 over two planes at random postures and heights: the same pairs, x and gaps."""
    path = erd_path('solo12')
    model = lm.load_urdf(path, floating_base=True)
    cm = ContactModel(model, path, planes=[((0.0, 0.0, 1.0), 0.0),
                                           ((1.0, 0.0, 0.2), 0.15)])
    rng = np.random.default_rng(3)
    found = 0
    for _ in range(40):
        q = rng.uniform(-1.5, 1.5, model.nq)
        base = np.eye(4)
        a = rng.uniform(-0.6, 0.6)
        base[:3, :3] = [[np.cos(a), 0.0, np.sin(a)], [0.0, 1.0, 0.0],
                        [-np.sin(a), 0.0, np.cos(a)]]
        base[:3, 3] = (rng.uniform(-0.1, 0.1), 0.0, rng.uniform(0.05, 0.4))
        keys, x, gap = _pairs_by_numpy(cm, q, base, margin)
        n = cm._evaluate(q, np.zeros(model.nv), base, margin, None, None, None)[0]
        assert np.array_equal(cm._keys[:n], keys)
        np.testing.assert_allclose(cm._x[:n], x, rtol=0, atol=1e-12)
        np.testing.assert_allclose(cm._gap[:n], gap, rtol=0, atol=1e-12)
        found += n
    assert found > 0


def test_diagonal_bound_is_numpys():
    """``max(diag(A) / diag(M)) > limit`` as numpy says it, NaN (no decision) included."""
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(1, 8))
        M = np.diag(rng.uniform(0.1, 2.0, n))
        A = np.diag(rng.uniform(0.0, 10.0, n))
        if rng.uniform() < 0.2:
            A[rng.integers(n), rng.integers(n)] = np.nan
        limit = rng.uniform(0.0, 20.0)
        with np.errstate(invalid='ignore'):
            expected = bool(np.max(np.diag(A) / np.diag(M)) > limit)
        assert _diagonal_rate_exceeds(M, A, limit) == expected
