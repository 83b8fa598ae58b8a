"""
The papers' claims on fast versions of the examples (liemb_ros.reproduce).

Seed 000 Corollary 1 / Lemma 2: lower pairs to the ground are exact with SE(3) for any step;
SO(3)xR^3 converges with order 4 there; the free body with its frame at the COM is exact
with SO(3)xR^3; joints between moving bodies show the same order for both updates.
Seed 003: energy and momentum drift shrink at 4th order, flips at the analytic interval.
"""
import json

import numpy as np
import pytest

from liemb_ros import reproduce as rp


def viol(name, update, dt, t_end, key):
    return rp.run_example(name, update, dt, t_end)['max_violation'][key]


def order(errs, hs):
    e = np.asarray(errs)
    return np.log(e[:-1] / e[1:]) / np.log(np.asarray(hs[:-1]) / hs[1:])


@pytest.mark.parametrize('name,key,big', [
    ('heavy_top_spring', 'pivot position [m]', 0.01),
    ('heavy_top', 'pivot position [m]', 0.004),
    ('double_pendulum', 'joint1 position [m]', 0.004),
    ('three_bar', 'joint1 position [m]', 0.01),
    ('four_bar', 'joint3 position [m]', 0.004),
    ('rp_mechanism', 'joint2 position [m]', 0.02),
    ('cardan', 'joint2 position [m]', 0.05),
    ('box_offset_rotation', 'COM drift [m]', 0.02),
])
def test_ground_lower_pairs_exact_with_se3(name, key, big):
    for dt in (big, big / 4):
        assert viol(name, 'se3', dt, 0.5, key) <= 1e-11


@pytest.mark.parametrize('name,key', [('heavy_top_spring', 'pivot position [m]'),
                                      ('box_offset_rotation', 'COM drift [m]'),
                                      ('rp_mechanism', 'joint1 position [m]')])
def test_so3r3_order4_where_se3_exact(name, key):
    hs = [0.008, 0.004, 0.002]
    errs = [viol(name, 'so3r3', h, 0.4, key) for h in hs]
    assert np.all(np.abs(order(errs, hs) - 4) < 0.7), errs


def test_free_body_com_frame_exact_with_so3r3_only():
    assert viol('box_com_screw', 'so3r3', 0.01, 2.0, 'COM drift [m]') < 1e-11
    hs = [0.02, 0.01, 0.005]
    errs = [viol('box_com_screw', 'se3', h, 2.0, 'COM drift [m]') for h in hs]
    assert errs[-1] > 1e-9 and np.all(np.abs(order(errs, hs) - 4) < 0.5), errs


@pytest.mark.parametrize('update', ['se3', 'so3r3'])
def test_joint_between_moving_bodies_same_order(update):
    hs = [0.004, 0.002, 0.001]
    errs = [viol('double_pendulum', update, h, 0.3, 'joint2 position [m]') for h in hs]
    assert np.all(np.abs(order(errs, hs) - 4) < 0.8), errs


def test_box_kinetic_energy_matches_paper():
    for name in ('box_com_rotation', 'box_offset_rotation'):
        assert rp.run_example(name, 'se3', 0.01, 0.01)['energy0'] == pytest.approx(
            696.399, abs=5e-4)
    assert rp.run_example('heavy_top', 'se3', 0.01, 0.01)['energy0'] == pytest.approx(
        13972.4, abs=0.1)


def test_flip_seed_003():
    res = [rp.run_example('flip', 'se3', h, 1.0) for h in (1 / 320, 1 / 640)]
    drifts = [r['max_energy_drift'] / r['energy0'] for r in res]
    mom = [r['max_violation']['rel. angular momentum drift'] for r in res]
    assert drifts[0] / drifts[1] > 12 and mom[0] / mom[1] > 12
    assert res[1]['max_violation']['|det R - 1|'] < 1e-13
    flips = np.array(res[1]['flips'])
    assert flips.size == 3
    np.testing.assert_allclose(np.diff(flips), rp.flip_interval(), atol=2e-4)
    np.testing.assert_allclose(flips, [0.149662, 0.448988, 0.748316], atol=5e-4)


def test_cli_json_list_and_plot(tmp_path, capsys):
    import argparse
    parser = argparse.ArgumentParser()
    rp.add_arguments(parser)
    assert rp.run(parser.parse_args(['--list'])) == 0
    assert 'heavy_top_spring' in capsys.readouterr().out
    png = tmp_path / 'a.png'
    args = parser.parse_args(['heavy_top', '--dt', '0.01', '--t-end', '0.2', '--json',
                              '--plot', str(png)])
    assert rp.run(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out['max_violation']['pivot position [m]'] < 1e-11 and png.stat().st_size > 1000
    assert rp.run(parser.parse_args(['nope'])) == 2
