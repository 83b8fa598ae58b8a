"""
The papers' claims on fast versions of the examples (liemb_ros.app.reproduce).

[MT14] Corollary 1 / Lemma 2: lower pairs to the ground are exact with SE(3) for any step;
SO(3)xR^3 converges with order 4 there; the free body with its frame at the COM is exact
with SO(3)xR^3; joints between moving bodies show the same order for both updates.
[HGS18]: energy and momentum drift shrink at 4th order, flips at the analytic interval.
"""
import json
import math

import numpy as np
import pytest

from liemb_ros.app import reproduce as rp


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


def test_flip_drift_order4_and_flip_interval():
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


def test_convergence_heavy_top_se3_roundoff_so3r3_order4():
    """The papers' figure as a study: SE(3) pivot at round-off at every step, SO(3)xR^3 order 4."""
    study = rp.convergence('heavy_top', dts=(4e-3, 2e-3, 1e-3), t_end=0.5)
    se3 = study['updates']['se3']['quantities']['pivot position [m]']
    so3 = study['updates']['so3r3']['quantities']['pivot position [m]']
    assert se3['roundoff'] and all(v <= 1e-11 for v in se3['values'])
    assert not so3['roundoff'] and abs(so3['order'] - 4) < 0.3, so3
    assert len(so3['used']) == 3


def test_convergence_flip_order4_in_omega_both_formulations():
    study = rp.convergence('flip', dts=(1 / 160, 1 / 320, 1 / 640))
    for update in ('se3', 'ulv'):
        q = study['updates'][update]['quantities']
        assert abs(q['|Omega(t_end) - Omega_ref|']['order'] - 4) < 0.3, q
        assert q['|det R - 1|']['level'] < 1e-13                  # [HGS18] Fig. 12
    ref = study['omega_reference']
    np.testing.assert_allclose(ref['omega'], [5.86216, 6.76901, -99.72874], atol=1e-4)
    assert 1e-7 < ref['roundoff_spread'] < 1e-4


def test_fit_order_leaves_out_floor_and_pre_asymptotic_values():
    dts = [0.1, 0.05, 0.025, 0.0125, 0.00625]
    order, used = rp.fit_order(dts, [None, 5.0, 0.3, 0.02, 0.03], 1e-3, 1.0)
    assert used == [2, 3] and order == pytest.approx(math.log2(15))
    assert rp.fit_order(dts, [1e-14] * 5, 1e-11, 1.0) == (None, [])


def test_step_guard_at_the_pole_of_dexpinv_and_divergence_reported():
    refused = rp.run_example('flip', 'se3', 0.1, 1.0)
    assert refused['status'] == 'refused' and refused['t_stop'] == 0.0
    assert '--no-step-guard' in refused['message']
    for update in ('se3', 'ulv'):
        run_on = rp.run_example('flip', update, 0.1, 1.0, step_guard=False)
        assert run_on['status'] == 'diverged' and 0 < run_on['t_stop'] < 1.0
    # the paper's h = 1/40 passes the guard (2.5 rad per step) and diverges (RK4 on Euler)
    assert rp.run_example('flip', 'se3', 0.025, 1.0)['status'] == 'diverged'
    assert rp.run_example('four_bar', 'se3', 0.01, 2.0)['status'] == 'diverged'


def test_tailored_update_exact_on_ground_joints():
    res = rp.run_example('double_pendulum', 'tailored', 0.004, 0.3)
    assert res['max_violation']['joint1 position [m]'] <= 1e-11
    assert res['max_violation']['joint2 position [m]'] > 1e-9
    assert rp.build('double_pendulum', 'tailored').system.tailored_updates() == ['se3', 'so3r3']
    with pytest.raises(ValueError, match='flip'):
        rp.build('heavy_top', 'ulv')


def test_cli_convergence_json_and_plot(tmp_path, capsys):
    import argparse
    parser = argparse.ArgumentParser()
    rp.add_arguments(parser)
    png = tmp_path / 'c.png'
    args = parser.parse_args(['heavy_top', '--convergence', '--dts', '0.004', '0.002',
                              '--t-end', '0.2', '--json', '--plot', str(png)])
    assert rp.run(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out['updates']) == {'se3', 'so3r3'} and out['dts'] == [0.004, 0.002]
    assert out['updates']['se3']['quantities']['pivot position [m]']['roundoff']
    assert png.stat().st_size > 1000
    args = parser.parse_args(['flip', '--dt', '0.1', '--update', 'ulv', '--no-step-guard'])
    assert rp.run(args) == 1
    assert 'DIVERGED' in capsys.readouterr().out
    assert rp.run(parser.parse_args(['heavy_top', '--update', 'ulv'])) == 2
    assert rp.run(parser.parse_args(['rotating_frame', '--update', 'tailored'])) == 2
    assert 'multibody' in capsys.readouterr().err


def test_rotating_frame_se3_exact_so3r3_step_error():
    """SE(3): the midpoint rule is exact for any step; SO(3)xR^3: the paper's step error."""
    for dt in (0.1, 1.0):
        assert viol('rotating_frame', 'se3', dt, 3.0, 'position error [m]') < 1e-14
        step = rp.run_example('rotating_frame', 'so3r3', dt, dt)
        assert step['max_violation']['first-step error [m]'] == pytest.approx(
            rp.rotating_frame_step_error(dt), rel=1e-9)
    assert rp.rotating_frame_step_error(0.1) == pytest.approx(0.1 ** 3 / 24, rel=2e-4)


def test_rp_with_cylindrical_joint1_exact_with_se3_for_large_steps():
    for key in ('joint1 position [m]', 'joint2 position [m]'):
        assert viol('rp_cylindrical', 'se3', 0.02, 0.5, key) <= 1e-11
    assert viol('rp_cylindrical', 'so3r3', 0.02, 0.5, 'joint1 position [m]') > 1e-6


def test_convergence_json_serialisable_with_numpy_values():
    study = rp.convergence('rp_mechanism', dts=(0.02, 0.01), t_end=0.1)
    assert json.loads(json.dumps(study))['updates']['se3']['quantities']


def test_convergence_table_text_and_markdown():
    """One formatter: the command's text table and the pages' markdown table of a study."""
    q = {'values': [2.5e-3, None], 'roundoff': False, 'order': 3.987, 'floor': 1e-11,
         'level': 0.0, 'used': [0, 1]}
    r = {'values': [1e-14, 2e-14], 'roundoff': True, 'order': None, 'floor': 1e-11,
         'level': 2e-14, 'used': []}
    study = {'example': 'ex', 'paper': '[MT14]', 'claim': 'a claim', 't_end': 1.0,
             'dts': [0.01, 0.005], 'dts_source': 'the paper',
             'updates': {'se3': {'quantities': {'max |det R - 1|': q, 'pivot [m]': r},
                                 'runs': [{'dt': 0.005, 'status': 'diverged', 't_stop': 0.5,
                                           'message': 'non-finite (step h=0.005); reduce dt'}]}}}
    text = rp.convergence_table(study).split('\n')
    assert text[:3] == ['ex ([MT14]): convergence over t_end = 1 s, step sizes from the paper',
                        '  paper: a claim', '  update se3']
    assert text[4].split()[-5:] == ['-', '3.99', '(from', '2', 'points)']
    assert text[5].endswith('round-off (<= 1e-11)')
    assert text[6] == ('    dt = 0.005: diverged at t = 0.5 s: non-finite (step h=0.005); '
                       'reduce dt')
    md = rp.convergence_table(study, markdown=True).split('\n')
    assert md[2:6] == ['| update | quantity | dt = 0.01 | dt = 0.005 | order |',
                       '|---|---|---|---|---|',
                       '| SE(3) | max \\|det R - 1\\| | 2.50e-03 | - | 3.99 |',
                       '| SE(3) | pivot [m] | 1.00e-14 | 2.00e-14 | round-off (max 2.0e-14) |']
    assert md[7] == '- SE(3), dt = 0.005 s: diverged at t = 0.5 s (non-finite)'
    assert md[-1].startswith('Orders: least-squares slope')


def test_example_pages_carry_the_generators_prose():
    """docs/examples/*.md hold the set-up, claim and findings make_pages.py writes, verbatim."""
    import importlib.util
    import os
    import sys
    here = os.path.join(os.path.dirname(__file__), '..', '..', 'docs', 'examples')
    if not os.path.isfile(os.path.join(here, 'make_pages.py')):
        pytest.skip('docs/examples is not in this installation (a colcon install has no docs)')
    spec = importlib.util.spec_from_file_location('make_pages',
                                                  os.path.join(here, 'make_pages.py'))
    pages = importlib.util.module_from_spec(spec)
    argv, sys.argv = sys.argv, ['make_pages.py']
    try:
        spec.loader.exec_module(pages)
    finally:
        sys.argv = argv
    missing = []
    for name, fields in pages.PAGES.items():
        with open(os.path.join(here, f'{name}.md'), encoding='utf-8') as f:
            text = f.read()
        missing += [(name, key) for key, value in fields.items()
                    if isinstance(value, str) and len(value) > 40 and value not in text]
    assert len(pages.PAGES) >= 15 and not missing, missing


def test_our_derivations_print_as_derived_not_as_the_papers(capsys):
    """[MT14] §4 prints no step error and [MT13] §5.1 prints T0 = 13.97 kJ: ours are 'derived:'."""
    import argparse
    parser = argparse.ArgumentParser()
    rp.add_arguments(parser)
    for name, ours in (('rotating_frame', '4.166e-5'), ('heavy_top', '13972.4')):
        assert rp.run(parser.parse_args([name, '--dt', '0.01', '--t-end', '0.02'])) == 0
        lines = capsys.readouterr().out.split('\n')
        paper = [x for x in lines if x.startswith('  paper:')]
        derived = [x for x in lines if x.startswith('  derived:')]
        assert len(paper) == 1 and ours not in paper[0] and ours in derived[0], lines
    assert '13.97 kJ' in rp.EXAMPLES['heavy_top'].claim
    study = rp.convergence('rotating_frame', updates=('se3',), dts=(0.1,), t_end=0.1)
    assert '  derived: SO(3)xR^3 step error' in rp.convergence_table(study)


def test_spherical_four_bar_ground_joints_exact_with_se3_inner_joints_order4():
    """[MT14] §5.4's remark: the four-bar pendulum behaves as the double pendulum."""
    hs = [0.004, 0.002, 0.001]
    runs = {u: [rp.run_example('spherical_four_bar', u, h, 0.5) for h in hs]
            for u in ('se3', 'so3r3')}
    for r in runs['se3']:
        assert max(r['max_violation'][f'joint{k} position [m]'] for k in (1, 4)) <= 1e-11
    for k in (1, 4):
        errs = [r['max_violation'][f'joint{k} position [m]'] for r in runs['so3r3']]
        assert errs[-1] > 1e-9 and np.all(np.abs(order(errs, hs) - 4) < 0.3), errs
    for u in ('se3', 'so3r3'):
        for k in (2, 3):
            errs = [r['max_violation'][f'joint{k} position [m]'] for r in runs[u]]
            assert np.all(np.abs(order(errs, hs) - 4) < 0.3), (u, k, errs)
    j2 = [runs[u][-1]['max_violation']['joint2 position [m]'] for u in ('se3', 'so3r3')]
    assert 0.5 < j2[0] / j2[1] < 2                                     # "similar"


def test_top_reference_variable_step_rk4_against_independent_solutions():
    """[MT13] §5.1's reference: the quaternion DOP853 and the variable-step RK4 it checks."""
    from liemb_ros.app.reproduce import top_reference as tr
    # the step-doubling RK4 meets its accuracy goal on y' = -2 y (closed form)
    t = np.linspace(0, 2, 5)
    for tol in (1e-6, 1e-9):
        y, steps = tr.adaptive_rk4(lambda t, y: -2.0 * y, [1.0], t, tol, tol * 1e-3)
        assert np.abs(y[:, 0] - np.exp(-2 * t)).max() < 10 * tol and steps > 4
    J = tr.pivot_inertia(21.6, np.diag([0.36, 0.306, 0.09]), [0.5, 0, 0])
    np.testing.assert_allclose(J, np.diag([0.36, 5.706, 5.49]), atol=1e-12)
    w0 = (0.0, 20 * math.pi, 10 * math.pi)
    ref = tr.top_reference(tuple(J.ravel()), w0, 10.0)
    # Omega of the tight reference against scalar RK4 on Euler's equations (flip's code)
    np.testing.assert_allclose(ref['tight_omega'][100], rp.euler_rk4(np.diag(J), w0, 1.0, 1e-5),
                               atol=1e-8)
    # the spatial angular momentum R J Omega is constant; the kinetic energy too
    L = np.einsum('nij,jk,nk->ni', ref['tight'], J, ref['tight_omega'])
    assert np.abs(L - L[0]).max() < 1e-8 * np.linalg.norm(L[0])
    T = 0.5 * np.einsum('ni,ij,nj->n', ref['tight_omega'], J, ref['tight_omega'])
    assert T[0] == pytest.approx(13972.4, abs=0.1) and np.ptp(T) < 1e-8 * T[0]
    # [MT13]'s tolerances: the reference is accurate to ~3e-4 rad over 10 s, no better
    err = [tr.rotation_angle(a.T @ b) for a, b in zip(ref['paper'], ref['tight'])]
    assert 1e-4 < max(err) < 1e-3


def test_heavy_top_against_its_reference_order4_until_the_reference_floor():
    hs = [0.002, 0.001, 0.0005]
    res = [rp.run_example('heavy_top_reference', 'se3', h, 1.0) for h in hs]
    tight = [r['max_violation']['orientation vs tight reference [rad]'] for r in res]
    assert np.all(np.abs(order(tight, hs) - 4) < 0.35), tight
    paper = [r['max_violation']['orientation vs [MT13] reference [rad]'] for r in res]
    assert paper[-1] > 2 * tight[-1]               # the paper's reference is the coarser one
    so3 = rp.run_example('heavy_top_reference', 'so3r3', 0.0005, 1.0)['max_violation']
    assert so3['orientation vs tight reference [rad]'] == pytest.approx(tight[-1], rel=0.05)


def test_sprung_box_ulv_fourth_order_with_stage_configurations_first_order_as_printed():
    """[HGS18]'s scheme under H-dependent loads against Newton-Euler in quaternions (DOP853)."""
    hs = [1 / 80, 1 / 160, 1 / 320]
    key = 'COM position vs reference [m]'
    runs = {u: [rp.run_example('sprung_box', u, h, 0.5) for h in hs]
            for u in ('se3', 'ulv', 'ulv-paper')}
    for u, want, tol in (('ulv', 4, 0.3), ('se3', 4, 0.3), ('ulv-paper', 1, 0.15)):
        for k in (key, 'orientation vs reference [rad]'):
            errs = [r['max_violation'][k] for r in runs[u]]
            assert np.all(np.abs(order(errs, hs) - want) < tol), (u, k, errs)
    drift = [r['max_energy_drift'] for r in runs['ulv']]
    assert np.all(order(drift, hs) > 3.7), drift             # at least 4th order (~5 here)
    # ULV and the body-twist Munthe-Kaas RK4 are the same arithmetic up to the constant D
    for a, b in zip(runs['ulv'], runs['se3']):
        assert a['max_violation'][key] == pytest.approx(b['max_violation'][key], rel=1e-6)
    with pytest.raises(ValueError, match='sprung_box'):
        rp.build('flip', 'ulv-paper')
