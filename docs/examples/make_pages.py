"""
Write the pages of docs/examples/ (python docs/examples/make_pages.py [--cache DIR] [--replot]).

Each page: the paper's claim (texts below, with section and figure), what we measure, where
they differ and why, the single-run table kept from the page (or the CLI output for new
pages), and the convergence table of ``liemb reproduce NAME --convergence`` with its
figure (:func:`liemb_ros.app.reproduce.convergence_table`, the one the command prints, here in
markdown).  Convergence studies missing from the cache (JSON, default /tmp/liemb_examples) are
run first (all of them: about 10 minutes); delete the cache to recompute.  ``--replot``
redraws every figure (the one-run figures by rerunning that run, about a minute).
"""
import argparse
import contextlib
import io
import json
import os
import re
import sys

D = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(D, '..', '..', 'liemb_ros'))
from liemb_ros.app import reproduce as rp  # noqa: E402

C = '/tmp/liemb_examples'
REF000 = ('[MT14] A. Müller, Z. Terze, "The significance of the configuration space Lie group '
          'for the constraint satisfaction in numerical time integration of multibody systems", '
          'Mechanism and Machine Theory 82 (2014) 173-202')
REF001 = ('[MT13] A. Müller, Z. Terze, "Is there an optimal choice of configuration space for Lie '
          'group integration schemes applied to constrained MBS?", Proc. ASME IDETC 2013, '
          'Portland (the text we have lacks title, authors and references; identified by its '
          'content and by reference [49] of [MT14])')
REF003 = ('[HGS18] S. Holzinger, J. Gerstmayr, J. Schöberl, "A rigid body formulation with '
          'non-redundant unified local velocity coordinates", 5th Joint International '
          'Conference on Multibody System Dynamics (IMSD 2018), Lisbon')

PAGES = {}


def page(name, title, refs, setup, claim, measured, differ, figs=('se3', 'so3r3')):
    """Register the texts of one page."""
    PAGES[name] = dict(title=title, refs=refs, setup=setup, claim=claim, measured=measured,
                       differ=differ, figs=figs)


page('box_com_rotation', '[MT14] §5.1, "Spatial Rotation"', [REF000],
     'Box 0.8 x 0.4 x 0.1 m, aluminium, m = 86.4 kg, frame at the COM, C0 = (I, 0), '
     'omega0 = (10pi, 2pi, 0) rad/s, v0 = 0, 10 s.',
     '[MT14] §5.1.3 (Fig. 2): "Both formulations exactly preserve the COM position r^s = 0"; '
     'they "perform identical" and show the same kinetic-energy drift (Fig. 2); T0 = 696.399 J '
     '(§5.2.3).',
     'COM drift exactly 0 with both updates at every step size; the same energy drift for both; '
     'T0 = 696.399 J.',
     'None.')
page('box_com_screw', '[MT14] §5.1, "Rotation about fixed axis plus linear translation"', [REF000],
     'Same box, frame at the COM, omega0 = (0, 0, 2pi) rad/s, v0 = (10, 0, 0) m/s, 10 s.',
     '[MT14] §5.1.3 (Figs. 3, 4): "For the translation the SO(3)xR^3 update yields very good '
     'reconstruction for any step size while the accuracy achieved with the SE(3) update '
     'depends on the step size. Clearly visible is the 4th order convergence of the MK '
     'method." The rotation is equally accurate for both.',
     'SO(3)xR^3 COM drift at round-off at every step size; SE(3) converges (fitted order in '
     'the table).',
     'The paper\'s analytic solution r^s(t) = (t, 0, 0) "m/s" is a misprint for (10 t, 0, 0) m '
     '([errata](../theory/errata.md#mt14-s5-1)); we compare with (10 t, 0, 0).')
page('box_offset_rotation', '[MT14] §5.2, "Spatial Rotation"', [REF000],
     'Same box, frame at the end face (COM at r0 = (0.4, 0, 0) in the body frame), '
     'omega0 = (10pi, 2pi, 0) rad/s, COM at rest (v0 = r0 x omega0), 10 s.',
     '[MT14] §5.2.3 (Fig. 5): the SE(3) COM position "is within the computation accuracy of '
     '1e-15 for all step sizes, while that achieved with the SO(3)xR^3 formulation depends on '
     'the integration step size"; "the SE(3) update satisfies the constraints for arbitrary '
     'time step sizes"; identical kinetic-energy drift.',
     'SE(3) COM drift at round-off at every step size (at most 1.3e-13 m); SO(3)xR^3 '
     'converges with order 4.00 (8.1e-6 m at 1e-3 s); the same energy drift for both.',
     'Our round-off level is 1e-13 m, the paper\'s figure shows 1e-15 m; otherwise none.')
page('box_offset_screw', '[MT14] §5.2, "Rotation about fixed axis plus linear translation"',
     [REF000],
     'Frame at the end face, omega0 = (10pi, 2pi, 0) rad/s, v0 = r0 x omega0 + (10, 0, 0) m/s '
     '(a screw motion of the frame), 10 s.',
     '[MT14] §5.2.3 (Fig. 6): "the accuracy of both formulations depends on the step size. '
     'The SO(3)xR^3 update yields the best accuracy".',
     'Both converge with order 4; SO(3)xR^3 is about 10x more accurate than SE(3).',
     'None.')
page('heavy_top_spring', '[MT14] §5.3', [REF000],
     'm = 21.6 kg, Theta0 = diag(0.36, 0.306, 0.09) kg m^2, pivot r0 = (-0.5, 0, 0) from the COM, '
     'spring c = 1e4 N/m from the COM to (1, 0, 0.5), gravity; r(0) = (0.5, 0, 0) (the printed '
     'C0 = (I, r0) violates the constraint: [errata](../theory/errata.md#mt14-s5-3)), '
     'omega0 = (0, 0, 0.5), 8 s.',
     '[MT14] §5.3.3 (Fig. 8): "the SE(3) update preserves the center of rotation with '
     'accuracy closed to the computation precision for all three step size values ... The '
     'SO(3)xR^3 formulation on the other hand leads to a significant drift." Fig. 9: the '
     'total-energy error "starting from E(0) = 5000.69 J" is clearly smaller with SE(3).',
     'SE(3) pivot at round-off at 1e-2, 1e-3, 1e-4 s (at most 2.8e-13 m); SO(3)xR^3 pivot of '
     'order 4.00 (1.3e-6 m at 1e-3 s); the energy drift is smaller with SE(3) at every step '
     'size (5.1e-5 J vs 8.9e-3 J at 1e-3 s).',
     'E(0): we use the potential c |d|^2 / 2 of the stated linear spring, E(0) = 2500.69 J; the '
     'paper\'s 5000.69 J is c |d|^2 ([errata](../theory/errata.md#mt14-s5-3)).')
page('double_pendulum', '[MT14] §5.4, [MT13] §5.2', [REF000, REF001],
     'Two aluminium boxes 0.2 x 0.1 x 0.05 m (m = 2.7 kg: our assumption, the papers give no '
     'mass, [errata](../theory/errata.md#mt14-s5-4)), spherical joints, gravity; '
     'omega10 = (10, 0, 0), omega20 = '
     '(10pi, 10pi, 20pi) rad/s, linear velocities from the constraints; 5 s.',
     '[MT14] §5.4 (Figs. 11-13): "exact constraint satisfaction up to the computation '
     'precision for joint 1" with SE(3); "Both formulations achieve a similar constraint '
     'satisfaction for joint 2"; the energy drift "becomes significant for the SO(3)xR^3 '
     'update with the large step size". [MT13] §5.2 (Figs. 5-7, 1e-3 s only): "Figure 5 and 6 '
     'reveal a generally better performance of the SE(3) formulation"; the violation of joint '
     '2 is higher than that of joint 1; "The total energy drift is comparable for both '
     'formulations".',
     'Joint 1 at round-off with SE(3) and with the tailored update (SE(3) for link 1, '
     'SO(3)xR^3 for link 2); joint 2 of order 4 and of similar size for all updates. At '
     '1e-3 s: joint 1 2.1e-14 m (SE(3)) vs 3.8e-5 m (SO(3)xR^3), joint 2 8.4e-5 m vs '
     '9.0e-5 m, energy drift 2.4e-3 J vs 4.7e-3 J.',
     'Masses are ours. [MT13]\'s "generally better performance of the SE(3) formulation" is '
     'what we see at joint 1 (exact against 3.8e-5 m); at joint 2 SE(3) is better by 7 % only '
     '(8.4e-5 vs 9.0e-5 m), a margin [MT13]\'s Fig. 6 does not let us compare (its two panels '
     'span 5 s and 14 s). Joint 2 is above joint 1 with both updates, and the energy drifts '
     '(a factor 2 apart) are comparable, as [MT13] says. At dt = 1e-2 s the second link turns '
     '~0.8 rad per step and the explicit scheme is far from its asymptotic range there.',
     figs=('se3', 'so3r3'))
page('four_bar', '[MT14] §5.5', [REF000],
     'Own geometry (the paper gives only L0 = 0.5 m; Fig. 14 is not in our text): pivots '
     '(0,0,0) and (0.5,0,0), crank 0.2 m, coupler to (0.5, 0.4, 0); 20 x 20 mm aluminium '
     'bars, frames at the COMs; crank at 10pi rad/s, other rates from the loop; joint 4 '
     'spherical (the captions name "spherical joint 4", '
     '[errata](../theory/errata.md#mt14-s5-5)); no gravity; 2 s.',
     '[MT14] §5.5 (Figs. 15, 16): "The orientation constraints are exactly satisfied by '
     'the both formulations." "This example confirms again the statement that the SE(3) '
     'update exactly preserves the lower pair constraints restricting the body 1 and 3 to a '
     'subgroup (corollary 1), and also that the joint constraints are exactly satisfied '
     '(lemma 2)."',
     'Orientation rows exactly 0 for both updates; ground revolutes 1 and 3 at round-off with '
     'SE(3) (and tailored), of order 4 with SO(3)xR^3; the coupler joints 2 and 4 are NOT '
     'exact with any update: order 4, e.g. joint 2 5.3e-4 m with SE(3) at 1e-3 s over 2 s.',
     'The paper\'s "joint constraints are exactly satisfied (lemma 2)" does not hold for the '
     'coupler joints in our geometry, and we read it as applying to the ground joints only. '
     'Lemma 2 needs the two bodies\' motion groups G1, G2 with G2 = G1 H, H the relative '
     'joint\'s group. The crank moves in SO(2) about its pivot, but the coupler moves in the '
     'planar group SE(2), which is not SO(2) times a rotation about the moving joint 2 axis; '
     'crank and coupler are updated by independent exponentials, so the point coincidence of '
     'joints 2 and 4 is only satisfied to O(dt^4) (Corollary 3). Planarity (the orientation '
     'rows) is a subgroup property of every body and stays exact, as the paper says. The '
     'paper\'s figures for joints 2 and 4 are not in our text, so we cannot tell what its '
     'geometry showed. At dt = 1e-2 s the explicit scheme diverges (energy drift > 10 % of E0 '
     'by t = 0.85 s), and is reported as diverged.')
page('rp_mechanism', '[MT14] §5.6', [REF000],
     'Given masses/inertias; own geometry: ring COM 0.1 m off the revolute axis z, slider COM '
     'at (0.25, 0, 0.1) sliding along z, spring 1e4 N/m (rest 0.1 m); omega = 20pi rad/s '
     'about z, slider at 1 m/s; gravity; 2 s.',
     '[MT14] §5.6 (Figs. 18, 19): with SE(3) "constraint satisfaction, indicating an '
     'excellent motion reconstruction"; with SO(3)xR^3 "the accuracy depending on the '
     'integration step size"; "the step size can be arbitrarily large and the SE(3) update '
     'still satisfies the kinematic joint constraints".',
     'Both joints at round-off with SE(3) at every step size; SO(3)xR^3 of order 4.',
     'Geometry, spring rest length and initial configuration are ours (Fig. 17 is not in our '
     'text).')
page('rp_cylindrical', '[MT14] §5.6, joint 1 cylindrical', [REF000],
     'The RP mechanism above with joint 1 a cylindrical joint: the ring may also slide along '
     'z (gravity and the spring act along it).',
     '[MT14] §5.6: "The same accuracy is achieved when the joint 1 is a cylindrical joint. '
     'Note again that the step size can be arbitrarily large and the SE(3) update still '
     'satisfies the kinematic joint constraints." (no figure)',
     'Both joints at round-off with SE(3) at every step size; SO(3)xR^3 of order 4.',
     'Geometry as in rp_mechanism (ours).')
page('cardan', '[MT14] §5.7', [REF000],
     'Own geometry: shaft 1 (box 0.04 x 0.2 x 0.04 m) on a revolute about y with its frame on '
     'the axis, hook centre at (0, 0.2, 0), shaft 2 tilted 30 deg; omega1 = (0, pi, 0), '
     'omega2 = (pi, pi, 0) projected onto the joint constraints (kinetic-energy metric); no '
     'gravity; 5 s.',
     '[MT14] §5.7 (Figs. 21, 22): joint 1: "both formulations yield a perfect constraint '
     'satisfaction" (frame on the axis); hook-joint position constraints "perfectly '
     'satisfied" with SE(3), not with SO(3)xR^3; the hook-joint orientation constraint "not '
     'exactly satisfied, but only according to the time step size ... the same constraint '
     'satisfaction of both configuration update variants".',
     'Joint 1 at round-off for both; the hook centre at round-off with SE(3), order 4 with '
     'SO(3)xR^3; the hook angle of order 4 and equal for both.',
     'Geometry is ours (the paper gives none).')
page('heavy_top', '[MT13] §5.1', [REF001],
     'Same box as heavy_top_spring, COM 0.5 m from the pivot ([MT13] measures r0 from the pivot '
     'to the COM, the opposite of [MT14]), no gravity (the title says "in Gravity Field" but '
     'M = F = 0: [errata](../theory/errata.md#mt13-s5-1)); omega0 = (0, 20pi, 10pi) rad/s, '
     'v0 = omega0 x r0; 10 s.',
     '[MT13] §5.1: Fig. 2 "The SE(3) integration yields the correct result within the '
     'computation accuracy while the SO(3)xR^3 formulation shows significant drifts" (axes '
     '+-5e-15 m and +-3e-5 m at 1e-3 s); Fig. 3: the SE(3) kinetic-energy drift "is two orders '
     'of magnitude smaller than the drift of the SO(3)xR^3 formulation" (axes 6e-4 J and '
     '5e-3 J); T0 = 13.97 kJ.',
     'Pivot: SE(3) at round-off at every step size, SO(3)xR^3 order 4 (8.1e-6 m at 1e-3 s, '
     'within the paper\'s axis). T0 = 13972.4 J (our value of the paper\'s 13.97 kJ). '
     'Energy: 3.94e-3 J (SE(3)) vs 4.14e-3 J (SO(3)xR^3) at 1e-3 s.',
     'Our SE(3) pivot error is round-off, but at a level 650x the paper\'s: 3.3e-12 m at '
     '1e-3 s against the +-5e-15 m of Fig. 2a. It is not a drift (no order: 6.0e-12, 3.3e-12, '
     '9.7e-13 m at 1e-2, 1e-3, 1e-4 s, i.e. it does not grow with the number of steps) and '
     'stays below our floor of 1e-11 m; we do not know which arithmetic gave the paper its '
     'level. The energy claim is NOT reproduced: the two drifts differ by 5 %, not by two orders '
     '(the paper\'s own axes, 6e-4 vs 5e-3 J, suggest one order: '
     '[errata](../theory/errata.md#mt13-fig3)). In the '
     'body-fixed SE(3) form without loads the twist equations do not depend on the '
     'configuration, so the SE(3) energy drift is RK4\'s drift on the (constrained) Euler '
     'equations alone, and the SO(3)xR^3 form adds little to it. We do not know what the '
     'paper integrated differently; [MT13] uses 1e-3 s only, the other step sizes are '
     '[MT14]\'s.')
page('floating_pair', '[MT13] §5.3', [REF001],
     'The two links of the double pendulum joined by one spherical joint, no gravity; '
     'omega10 = (0, 0, -10), omega20 = (1, -1, 2pi) rad/s, v10 = 0 (our choice), v20 from the '
     'joint; 10 s.',
     '[MT13] §5.3 (Figs. 9, 10): "both formulations perform similarly regarding constraint '
     'satisfaction. Also the kinetic energy drifts are similar." (axes ~1e-7 m)',
     'Joint violations of order 4 and of similar size for both updates, about 1e-8 m at '
     '1e-3 s.',
     'Our magnitudes at 1e-3 s are below the paper\'s axes: about 20x for the joint (1.3e-8 '
     'vs 3e-7 m with SE(3), 1.25e-8 vs 2.5e-7 m with SO(3)xR^3) and 30-40x for the kinetic '
     'energy (3.3e-9 vs 1.2e-7 J, 2.7e-9 vs 8e-8 J): v10 and the masses are our choices.')
page('three_bar', '[MT13] §5.4', [REF001],
     'Own geometry ([MT13] gives none): link 1 from the ground point (0,0,0) along x, link 2 from '
     '(0.2, 0, 0) to the ground point (0.2, 0.2, 0), spherical joints, gravity; '
     'omega1 = (3, 0, 5) projected onto the constraints; 10 s.',
     '[MT13] §5.4 (Figs. 12-15): "the constraints are perfectly satisfied if only the motion '
     'of one body is to be estimated, i.e. the base joints. The constraint violation of joint 2 '
     'connecting the two bodies is similar for both formulations. Also the energy drift of both '
     'formulations is similar."',
     'Ground joints 1 and 3 at round-off with SE(3) and tailored, order 4 with SO(3)xR^3; '
     'joint 2 of order 4 and similar for all updates.',
     'Geometry and initial velocities are ours.')
page('flip', '[HGS18] §6', [REF003],
     'm = 1, J = diag(5.2988, 1.1775, 4.3568), Omega0 = (0.01, 0, 100) rad/s, U0 = 0, '
     'torque-free, H0 = I, 1 s. Two formulations: `se3` (body-twist Munthe-Kaas RK4 on '
     'SE(3)) and `ulv` ([HGS18]\'s unified local velocity coordinates w = D (U; Omega) with '
     'its RK4 Lie group scheme, eqs. (82)-(87), printed misprints corrected: '
     '`liemb_ros.sim.mbs.ulv`).',
     '[HGS18] §6: Fig. 11, 4th-order convergence of ||Omega - Omega_converged|| over '
     'h = 1/10, 1/40, 1/80, ..., 1/5120 against a solution with h = 1e-5 ("all methods '
     'converged to the same solution (up to machine precision)"); Fig. 12, |det R - 1| '
     '< 1e-13 for all h; the largest difference in Omega to the earlier scheme "f1" (Terze '
     'et al.) is 0.0581; the body flips (Figs. 7-9).',
     'Order of the Omega error at t = 1 s: 4.05 in both formulations (from h = 1/160 ... 1/640; '
     'from 1/1280 on the error is at the round-off floor of the reference); |det R - 1| <= '
     '3.4e-14 at every h; the two formulations agree to 3.3e-8 in Omega at h = 1/1280 (they '
     'are the same arithmetic up to the constant D: RK4 is affine covariant). The paper\'s own '
     'assembly of M_bar and Gamma_bar (N of (27), E_dot of (40), P of (42), the Gibbs-Appell '
     'integrals (48)-(49): `liemb_ros.sim.mbs.ulv.gibbs_appell`, `UnifiedBody(assembly='
     '\'gibbs-appell\')`) equals the Newton-Euler route (56) and Gauss quadrature over a '
     'solid box to 1e-12 relative, for the paper\'s l = 1 and other half sides, and a run '
     'under loads is the same with either to 1e-12 (`test_ulv_gibbs_appell.py`).',
     '(1) h = 1/10 rotates ~10 rad per step, past the pole of dexp^-1 (T^-1) at 2 pi: '
     'refused by the step guard; with --no-step-guard it runs and diverges at t = 0.3 s. '
     'h = 1/40 (2.5 rad per step) runs and diverges (explicit RK4 on Euler\'s equations is '
     'unstable there; energy drift 95 % of E0 by t = 0.875 s). What the paper plotted at '
     'these two steps is unknown. (2) "Up to machine precision" is not reachable: round-off '
     'is amplified ~1e6 by the three passes near the unstable axis; our reference (RK4 on '
     'Euler\'s equations, h = 1e-5) differs from h = 2e-5 by 2.4e-5, the floor of the study. '
     '(3) We do not implement the earlier scheme "f1" (its formulation is not in [HGS18]), '
     'so the 0.0581 is not checked; our comparison is ULV against our body-twist MK-RK4. '
     'Any RK4 scheme that integrates Euler\'s equations for Omega in the body frame gives '
     'ULV\'s Omega (those equations do not depend on the configuration, and ULV\'s Omega is '
     'classical RK4 on them), so a difference of 0.0581 must come from a part of f1\'s '
     'formulation that [HGS18] does not describe. '
     '(4) Our own derivation, not a number of [HGS18]: the analytic time between flips '
     '2K(k)/p = 0.29933 s (Landau-Lifshitz), which the measured flips (t = 0.14966, 0.44899, '
     '0.74832 s) match.',
     figs=('se3', 'ulv'))
page('rotating_frame', '[MT14] §4, Fig. 1', [REF000],
     'A frame at distance r = 1 m from a fixed axis (world z) turning at omega = 1 rad/s; its '
     'velocity is prescribed as the exact function of time (the paper\'s V_{i+1/2} = '
     'V(t_i + dt/2)): the constant body twist (omega xi, omega p x xi) on SE(3), the mixed '
     'velocity on SO(3)xR^3; the paper\'s two-stage "explicit trapezoidal" scheme, which is '
     'the explicit midpoint rule ([errata](../theory/errata.md#mt14-s4)); 10 s.',
     '[MT14] §4 (eq. (19), Fig. 1): with SE(3) the update "is in fact the exact solution" '
     '(for any step); with SO(3)xR^3 "the orientation update is exact but the position ... '
     'update r_{i+1} = r_i + dt v_{i+1/2} is not correct" (Fig. 1b).',
     'SE(3) position error at round-off for dt = 1, 0.1, 0.01 s. SO(3)xR^3: the first step\'s '
     'error equals r omega dt - 2 r sin(omega dt/2) (4.1661e-5 m at dt = 0.1 s) to 1e-9 '
     'relative, order 3 per step and 2 over the run (the midpoint rule).',
     'The step-error formula (arc minus chord) is our derivation from the paper\'s scheme; the '
     'paper shows the error only as a figure.')

page('spherical_four_bar', '[MT14] §5.4, remark: spherical four-bar pendulum', [REF000],
     'Own geometry (the paper gives none): the three_bar of [MT13] §5.4 with a third link. '
     'Three aluminium boxes 0.2 x 0.1 x 0.05 m along their loop edges: ground point (0,0,0), '
     'link 1 to (0.2,0,0), link 2 to (0.2,0.2,0), link 3 to the ground point (0.4,0.2,0); '
     'spherical joints, gravity; omega1 = (3, 0, 5) rad/s projected onto the constraints '
     '(kinetic-energy metric); 5 s. The loop has 6 degrees of freedom, three of them the '
     'links\' spins about their own axes.',
     '[MT14] §5.4, after the double pendulum\'s results: "Similar results were obtained for a '
     'spherical three-bar and a four-bar pendulum." (no figure, no data). Read with §5.4: the '
     'joints to the ground exact with SE(3) "up to the computation precision", the joints '
     'between the links "a similar constraint satisfaction" with both updates, an energy '
     'drift that "becomes significant for the SO(3)xR^3 update with the large step size".',
     'Joints 1 and 4 (to the ground) at round-off with SE(3) and with the tailored update at '
     'every step size (at most 4.3e-14 m), of order 4 with SO(3)xR^3 (3.0e-7 m at 1e-3 s); '
     'joints 2 and 3 (between the links) of order 4.00 and within 30 % of each other for all '
     'updates (joint 2 at 1e-3 s: 1.21e-6 m SE(3), 1.05e-6 m SO(3)xR^3, 1.30e-6 m '
     'tailored); energy drift of order 4, 1.31e-4 J (SE(3)) vs 1.52e-4 J (SO(3)xR^3) at '
     '1e-3 s.',
     'The paper gives no geometry, figure or number, so only the pattern can be compared, and '
     'it is the double pendulum\'s. The energy drift of SO(3)xR^3 is 16 % above SE(3)\'s at '
     '1e-3 and 1e-4 s, not "significant"; at 1e-2 s both drifts (1.33 J, 1.51 J) exceed the '
     'initial energy (0.11 J: the links start in the horizontal plane and fall) and the '
     'scheme is far from its asymptotic range. Geometry and initial velocity are ours.')
page('heavy_top_reference', '[MT13] §5.1, the reference trajectory', [REF001],
     'The top of [heavy_top](heavy_top.md) (no loads, pivot fixed, omega0 = (0, 20pi, 10pi) '
     'rad/s, 10 s) against two references of its rotation, both sampled every 0.01 s '
     '(`liemb_ros.app.reproduce.top_reference`): (1) [MT13]\'s: Euler\'s equations about '
     'the pivot (J_p = diag(0.36, 5.706, 5.49) kg m^2) with the unit quaternion, classical '
     'RK4 with variable step size (step doubling; a step is accepted when its local error '
     'is at most 1e-9 + 1e-6 |y| in every component); (2) a tight one: the same equations '
     'with DOP853 (scipy) at 1e-13, checked against the flip\'s scalar RK4 on Euler\'s '
     'equations and by the conservation of the spatial angular momentum and the kinetic '
     'energy to 1e-8 relative (`test_reproduce.py`). Measures: the orientation error '
     'angle(R_ref^T R) [rad] of the Lie group solutions against each, and the pivot.',
     '[MT13] §5.1: "A reference trajectory was numerically determined by integrating the '
     'dynamic Euler-equations in quaternion parameterization using a RK4 integration scheme '
     'with variable step size and relative and absolute accuracy goal of 10^-6 and 10^-9, '
     'respectively." The paper shows no comparison with it (its figures show the pivot and '
     'the energy, which need no reference).',
     'The reference at [MT13]\'s tolerances takes 3850 accepted steps and is 1.7e-5 rad from '
     'the tight one after 1 s, 3.0e-4 rad after 10 s. Against the tight reference the '
     'orientation error is the same for both updates (the same rotation update): 5.21e-5 rad '
     'at 1e-3 s, 1.3e-9 rad at 1e-4 s, order 4.6 from these two points (at 1e-2 s the run '
     'has lost the orientation, error pi). Against [MT13]\'s reference the error stays at '
     'that reference\'s own 2.6e-4 to 3.0e-4 rad.',
     '[MT13] shows no comparison with its reference, so there is no number to differ from. '
     'What the measurement adds: at the paper\'s step of 1e-3 s the Lie group solution '
     '(5.2e-5 rad after 10 s) is about 6x closer to the motion than a reference at the '
     'paper\'s tolerances (3.0e-4 rad), so such a reference cannot judge the 1e-3 s results: '
     'its accuracy goal bounds the error of each step, and over 10 s at |omega| = 70 rad/s '
     'the global error grows to 3e-4 rad. The step-size control is ours ([MT13] does not '
     'give it): step doubling with the usual 0.9 err^(-1/5) rule; the step sizes 1e-2 and '
     '1e-4 s are [MT14]\'s.')

page('sprung_box', '[HGS18] §6 box, translating under gravity and a spring (own)', [REF003],
     'Own example: the box of [flip](flip.md) (m = 1 kg, J = diag(5.2988, 1.1775, 4.3568) '
     'kg m^2), R(0) = I at the origin, COM velocity (1, -2, 0.5) m/s, body angular velocity '
     '(1, 5, -2) rad/s; gravity (0, 0, -9.81) m/s^2 and a zero-length spring of 50 N/m from '
     'the body point (0.5, 0.2, 0.1) m to the world point (0, 0, 1) m; 1 s. Force and moment '
     'depend on the configuration, and the box translates while it rotates. Three schemes: '
     '`se3` (body-twist Munthe-Kaas RK4), `ulv` ([HGS18]\'s unified local velocity '
     'coordinates and RK4 Lie group scheme with the forces at the stage configurations '
     'H exp(K1/2), H exp(K2/2), H exp(K3)) and `ulv-paper` (the same with the forces at H_i '
     'in every stage, as (82)-(85) print). Reference: the Newton-Euler equations with the '
     'unit quaternion, DOP853 at 1e-13 (scipy, dense output), no Lie group code.',
     '[HGS18] has no such example: its one example (§6, the flip) is torque-free with U = 0, '
     'so the translational coupling of the tangent operator (the T_2 term of (73)-(78)) and '
     'the configurations at which the stages evaluate the forces do not matter there. What '
     'it claims for the scheme (82)-(87) in general: 4th-order convergence (Fig. 11).',
     'SE(3) and ULV with the stage configurations: COM position and orientation of order '
     '4.00 and 4.03 against the reference (6.05e-6 m and 2.55e-6 rad at h = 1/80, 9.2e-11 m '
     'at 1/1280, round-off below), energy drift of order 4.7; the two agree to three digits '
     'at every step size. ULV with the printed stages: order 1.00 in all three (9.2e-3 m at '
     '1/1280, 1e8 times the others).',
     '(1) As printed, with the forces at H_i in every stage, the scheme is first order as soon '
     'as the forces depend on the configuration (here gravity in the body frame and the '
     'spring): [errata](../theory/errata.md#hgs18-eq82). With the stage configurations it is '
     '4th order and equal to the body-twist Munthe-Kaas RK4 (the same arithmetic up to the '
     'constant D). (2) The printed (78) would make the translation second order '
     '([errata](../theory/errata.md#hgs18-eq78), `test_ulv.py`); this example runs the '
     'corrected (78) with n_T and n_R both nonzero, and its COM converges with order 4. '
     '(3) The example and all its numbers are ours.',
     figs=('ulv', 'ulv-paper'))

TEXT_ANCHOR = 'Run:'


def old_run_block(name):
    """Return the single-run block ("Run: ..." and its table) of the page now, or None."""
    path = os.path.join(D, name + '.md')
    if not os.path.exists(path):
        return None
    text = open(path).read()
    if TEXT_ANCHOR not in text:
        return None
    block = text[text.index(TEXT_ANCHOR):]
    block = block.split('\n![')[0]
    block = block.replace('| max |det R - 1| |', '| max \\|det R - 1\\| |')
    block = block.replace('s; analytic spacing 2K/p',
                          's; our analytic spacing 2K/p (Landau-Lifshitz)')
    block = re.split(r'\n## ', block)[0]
    return block.strip()


def main():
    """Write every page."""
    rows = []
    for name, p in PAGES.items():
        jpath = os.path.join(C, name + '.json')
        study = json.load(open(jpath)) if os.path.exists(jpath) else None
        out = [f"# {name} ({p['title']})", '', p['setup'], '',
               f"**Paper claim.** {p['claim']}", '',
               f"**What we measure.** {p['measured']}", '',
               f"**Where they differ, and why.** {p['differ']}", '']
        block = old_run_block(name)
        if block is None:
            single = []
            for u in p['figs']:
                tp = os.path.join(C, f'{name}_{u}.txt')
                if os.path.exists(tp):
                    single.append(f'`liemb reproduce {name} --update {u}`:\n\n```\n'
                                  + open(tp).read().strip() + '\n```')
            block = '\n\n'.join(single)
        out += ['## One run (default step)', '', block, '']
        if study is not None:
            out += ['## Convergence (`liemb reproduce ' + name + ' --convergence`)', '',
                    rp.convergence_table(study, markdown=True), '',
                    f'![convergence]({name}_convergence.png)', '']
        for u in p['figs']:
            if os.path.exists(os.path.join(D, f'{name}_{u}.png')):
                out += [f'![{rp.UPDATE_NAMES[u]}]({name}_{u}.png)', '']
        out += ['Sources: ' + '; '.join(p['refs']) + '. Bibliography: [../theory/README.md]'
                '(../theory/README.md); the misprints we correct, and how we checked them: '
                '[../theory/errata.md](../theory/errata.md).', '']
        open(os.path.join(D, name + '.md'), 'w').write('\n'.join(out))
        rows.append(name)
    print('wrote', len(rows))


def summary(q):
    """Return 'round-off (level)' or 'order p' of one quantity."""
    if q is None:
        return '-'
    if q['roundoff']:
        return f"round-off ({q['level']:.0e})"
    return f"order {q['order']:.2f}" if q['order'] is not None else '-'


KEYS = {'box_com_rotation': 'COM drift [m]', 'box_com_screw': 'COM drift [m]',
        'box_offset_rotation': 'COM drift [m]', 'box_offset_screw': 'COM drift [m]',
        'heavy_top_spring': 'pivot position [m]', 'double_pendulum': 'joint1 position [m]',
        'four_bar': 'joint1 position [m]', 'rp_mechanism': 'joint2 position [m]',
        'rp_cylindrical': 'joint1 position [m]', 'cardan': 'joint2 position [m]',
        'heavy_top': 'pivot position [m]', 'floating_pair': 'joint1 position [m]',
        'three_bar': 'joint1 position [m]', 'flip': '|Omega(t_end) - Omega_ref|',
        'rotating_frame': 'position error [m]', 'spherical_four_bar': 'joint1 position [m]',
        'heavy_top_reference': 'orientation vs tight reference [rad]',
        'sprung_box': 'COM position vs reference [m]'}


def readme():
    """Write README.md: the table of examples with the key quantity's result."""
    EXAMPLES = rp.EXAMPLES
    out = ['# Reproduced examples of [MT14], [MT13] and [HGS18]', '',
           'References: ' + '; '.join((REF000, REF001, REF003)) + '. Bibliography and '
           'equation numbering: [../theory/README.md](../theory/README.md); the theory: '
           '[../theory/integrators.md](../theory/integrators.md).', '',
           'Each page states the paper\'s claim with its section and figure, what we measure, '
           'and where they differ and why; numbers that are our own derivations are labelled '
           'so. One run: `liemb reproduce NAME --update se3|so3r3|tailored --plot FILE.png` '
           '(MK-RK4, index-1 equations, no stabilisation). Convergence, as in the papers\' '
           'figures: `liemb reproduce NAME --convergence [--dts ...] [--json] [--plot '
           'FILE.png]` (the papers\' step sizes by default).', '',
           '| example | paper | claim | key quantity | SE(3) | SO(3)xR^3 (flip, sprung_box: '
           'ULV) |',
           '|---|---|---|---|---|---|']
    for name, spec in EXAMPLES.items():
        jpath = os.path.join(C, name + '.json')
        if not os.path.exists(jpath):
            continue
        st = json.load(open(jpath))
        key = KEYS[name]
        other = spec.updates[1]
        a = st['updates']['se3']['quantities'].get(key)
        b = st['updates'][other]['quantities'].get(key)
        claim = spec.claim + (f'; derived: {spec.derived}' if spec.derived else '')
        out.append(f'| [{name}]({name}.md) | {spec.section} | {rp.escape_cell(claim)} | '
                   f'{rp.escape_cell(key)} | {summary(a)} | {summary(b)} |')
    out += ['', 'Orders are fitted over the papers\' step sizes (`--convergence`); tests of the '
            'claims on short runs: `liemb_ros/test/test_reproduce.py`, '
            '`liemb_ros/test/test_ulv.py`. The pages and this table are written by '
            '`python docs/examples/make_pages.py` (it runs the missing convergence studies, '
            'about 10 minutes).', '']
    open(os.path.join(D, 'README.md'), 'w').write('\n'.join(out))


def ensure(name, replot=False):
    """
    Run the convergence study (and, for new pages, the single runs) missing from C.

    ``replot``: also redraw the convergence figure from the cached study and the page's
    one-run figures (``liemb reproduce NAME --update U --plot``), e.g. after their titles
    changed.
    """
    jpath = os.path.join(C, name + '.json')
    cpng = os.path.join(D, f'{name}_convergence.png')
    if not os.path.exists(jpath):
        study = rp.convergence(name, progress=True)
        rp.plot_convergence(study, cpng)
        with open(jpath, 'w') as f:
            json.dump(study, f)
    elif replot:
        with open(jpath) as f:
            rp.plot_convergence(json.load(f), cpng)
    if old_run_block(name) is not None and not replot:
        return
    parser = argparse.ArgumentParser()
    rp.add_arguments(parser)
    for u in PAGES[name]['figs']:
        tpath = os.path.join(C, f'{name}_{u}.txt')
        if not os.path.exists(tpath) or replot:
            buf = io.StringIO()
            args = parser.parse_args([name, '--update', u, '--plot',
                                      os.path.join(D, f'{name}_{u}.png')])
            with contextlib.redirect_stdout(buf):
                rp.run(args)
            with open(tpath, 'w') as f:
                f.write(buf.getvalue())


if __name__ == '__main__':
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[1])
    ap.add_argument('--cache', default=C, help='folder of the JSON studies')
    ap.add_argument('--replot', action='store_true',
                    help="redraw every page's figures (the one-run figures are rerun)")
    opts = ap.parse_args()
    C = opts.cache
    os.makedirs(C, exist_ok=True)
    for example in PAGES:
        ensure(example, opts.replot)
    main()
    readme()
