"""
Reproduce the Lie group integration examples of [MT14], [MT13] and [HGS18].

References: docs/theory/README.md; theory: docs/theory/integrators.md.

``liemb reproduce NAME [--update se3|so3r3|tailored|ulv|ulv-paper] [--dt H] [--t-end T] [--json]
[--plot FILE.png] [--no-step-guard]`` runs one example with MK-RK4 (index-1 equations, no
stabilisation, as in the papers) and prints the maximum violation of each constraint (for
free bodies: the drift from the analytic solution), the maximum energy drift and the run
time.  ``--convergence [--dts H1 H2 ...]`` runs the paper's sequence of step sizes instead
and prints, per quantity, the value at each step size, the fitted order and, where the
values stay at round-off, that level; ``--plot`` then draws the papers' log-log figure with
the updates side by side.  ``--list`` lists the examples with their paper sections;
parameters the papers do not give are documented choices (see docs/examples/).

Updates: ``se3`` (body-fixed twists), ``so3r3`` (mixed velocities), ``tailored`` (SE(3) for
bodies with a joint to the ground, SO(3)xR^3 for the others: [MT14] §6) and, for the
flip of [HGS18] and the sprung box, ``ulv`` ([HGS18]'s unified local velocity coordinates
and its RK4 Lie group scheme, :mod:`liemb_ros.sim.mbs.ulv`; ``ulv-paper``: with the forces
at ``H_i`` in every stage, as printed).  A run that leaves the state finite-less stops and
reports where it diverged; a step whose stage rotates a body by more than
:data:`~liemb_ros.sim.integrators.MAX_STEP_ANGLE` (0.9 * 2 pi, the pole of ``dexp^-1``) is refused
unless ``--no-step-guard``.
"""
# The parts: examples.py (the examples and what their papers claim), flip_solutions.py (the
# flip's analytic interval and reference solution), top_reference.py ([MT13] §5.1's
# quaternion variable-step RK4 reference of the heavy top), study.py (one run and the convergence
# study), command.py (the command's options, report and plots), table.py (the convergence
# table, as the command prints it and as the example pages show it).  Everything is
# importable from here, as from the one module this package was.
from .command import add_arguments, plot, plot_convergence, run
from .examples import (EXAMPLES, PAPER_000_DTS, PAPER_003_DTS, RHO, ROUNDOFF, UPDATES, Example,
                       Spec, build, cardan, double_pendulum, flip, floating_pair, four_bar,
                       free_box, G, heavy_top_001, heavy_top_reference, heavy_top_spring,
                       rotating_frame, rotating_frame_step_error, rp_mechanism,
                       spherical_four_bar, sprung_box, three_bar)
from .flip_solutions import (FLIP_J, FLIP_OMEGA0, FLIP_REFERENCE_H, euler_rk4, flip_interval,
                             flip_reference, newton_euler_reference)
from .study import ASYMPTOTIC, DIVERGED, convergence, fit_order, run_example
from .table import UPDATE_NAMES, convergence_table, escape_cell

__all__ = [
    'add_arguments', 'plot', 'plot_convergence', 'run',
    'EXAMPLES', 'FLIP_J', 'FLIP_OMEGA0', 'FLIP_REFERENCE_H', 'PAPER_000_DTS', 'PAPER_003_DTS',
    'RHO', 'ROUNDOFF', 'UPDATES', 'Example', 'Spec', 'build', 'cardan', 'double_pendulum',
    'euler_rk4', 'flip', 'flip_interval', 'flip_reference', 'floating_pair', 'four_bar',
    'newton_euler_reference', 'sprung_box',
    'free_box', 'G', 'heavy_top_001', 'heavy_top_reference', 'heavy_top_spring',
    'rotating_frame', 'rotating_frame_step_error', 'rp_mechanism', 'spherical_four_bar',
    'three_bar',
    'ASYMPTOTIC', 'DIVERGED', 'convergence', 'fit_order', 'run_example',
    'UPDATE_NAMES', 'convergence_table', 'escape_cell',
]
