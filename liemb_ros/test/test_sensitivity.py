"""Sensitivity of τ to the reference poses and joint screws ([M18d] §6.2) by differences."""
import numpy as np
import pytest

import liemb_ros as lm
from liemb_ros.core.lie import se3
from liemb_ros.core.model.synthetic import random_pose
from liemb_ros.core.sensitivity import geometric_sensitivity
from conftest import erd_path
from test_dynamics import make_tree

H = 1e-4        # step of the fourth-order central differences of τ


def moved_reference(model, c, k, eps):
    """The model with ``A_{λ(c),c} → A_{λ(c),c} exp(eps e_k)`` (joint screw unchanged)."""
    S_parent = model.S_parent.copy()
    Sc = model.S_child[c]
    S_parent[c] = model.A_rel[c] @ se3.exp(eps * np.eye(6)[k]) @ Sc
    return model.replace(S_parent=S_parent)


def moved_screw(model, c, k, eps):
    """The model with ``^cX_c → ^cX_c + eps e_k``."""
    JX = model.JX.copy()
    JX[c] = se3.Ad_inv(model.S_child[c]) @ (model.X[c] + eps * np.eye(6)[k])
    return model.replace(JX=JX)


def fd(model, q, qd, qdd, move, c, k):
    tau = lambda e: lm.inverse_dynamics(move(model, c, k, e), q, qd, qdd)   # noqa: E731
    return (tau(-2 * H) - 8 * tau(-H) + 8 * tau(H) - tau(2 * H)) / (12 * H)


@pytest.mark.parametrize('model_name', ['tree', 'panda'])
def test_against_differences(model_name):
    """Every reference-pose and screw direction of every body, to 1e-7 of the largest entry."""
    rng = np.random.default_rng(2)
    if model_name == 'tree':
        model = make_tree(rng, 5, gravity=(0.5, -0.3, -9.81))
        q = rng.standard_normal(model.nq)
    else:
        model = lm.load_urdf(erd_path('panda'), mimic='couple')
        q = model.random_configuration(rng)
    qd, qdd = rng.standard_normal((2, model.nv))
    d_ref, d_scr = geometric_sensitivity(model, q, qd, qdd)
    scale = max(np.abs(d_ref).max(), np.abs(d_scr).max())
    for c in range(model.nb):
        for k in range(6):
            np.testing.assert_allclose(d_ref[c, k], fd(model, q, qd, qdd, moved_reference, c, k),
                                       rtol=0, atol=1e-7 * scale, err_msg=f'ref {c} {k}')
            np.testing.assert_allclose(d_scr[c, k], fd(model, q, qd, qdd, moved_screw, c, k),
                                       rtol=0, atol=1e-7 * scale, err_msg=f'screw {c} {k}')


def test_a_pure_frame_change_leaves_tau_alone():
    """Moving body c's frame (C_c → C_c S, [M18k] Remark 7) changes A, X and the inertia
    together and leaves τ unchanged; the sensitivities of A and X alone do not vanish."""
    rng = np.random.default_rng(6)
    model = make_tree(rng, 4)
    q, qd, qdd = rng.standard_normal((3, model.nq))
    moved = model.moved_body_frame(2, random_pose(rng))
    np.testing.assert_allclose(lm.inverse_dynamics(moved, q, qd, qdd),
                               lm.inverse_dynamics(model, q, qd, qdd), rtol=0, atol=1e-12)
    d_ref, d_scr = geometric_sensitivity(model, q, qd, qdd)
    assert np.abs(d_ref[2]).max() > 1e-3 and np.abs(d_scr[2]).max() > 1e-3


def test_bad_input(rng):
    with pytest.raises(ValueError, match='fixed-base'):
        geometric_sensitivity(make_tree(rng, 3, True), np.zeros(3), np.zeros(9), np.zeros(9))
    with pytest.raises(ValueError, match='qdd must be'):
        geometric_sensitivity(make_tree(rng, 3), np.zeros(3), np.zeros(3), np.zeros(2))
