"""
The main job a newcomer runs (``./dev.sh demo`` -> ``liemb demo``).

1. The screw model of the shipped default arm (joint table and link tree) and the
   end-effector twist in all four representations at a sample motion.
2. The ROS 2 part: starts the node set ``sim`` of ``config/launch.yaml`` (simulation node
   + dynamics node, as ``liemb launch sim``): the dynamics node's gravity-compensation
   torques drive the simulated arm, with a sinusoidal test torque on top.  A live status
   line shows simulation time, real-time factor, the dynamics node's rate and p99
   compute time.  Runs for ``--duration`` seconds or until Ctrl-C.
3. Saves a plot (joint trajectories, torques, energy) and a picture of the robot.
"""
import os

import numpy as np

from ..core import resources
from .robots import inspect_text, load_robot
from ..core.kinematics import jacobian, link_pose, link_twist
from ..core.model import REPRESENTATIONS
from .plots import plot_run
from ..sim.scenario import sample_configuration, sample_tip, test_torque
from .viz import draw_robot

DEFAULT_ROBOT = 'liemb_arm7'


def default_robot():
    """Return the name of the default robot (the first shipped one if it is missing)."""
    names = resources.shipped_robots()
    if DEFAULT_ROBOT in names or not names:
        return DEFAULT_ROBOT
    return names[0]


def explain(model):
    """Print the screw model and the tip twist in the four representations (part 1)."""
    print(inspect_text(model))
    tip = sample_tip(model)
    q = sample_configuration(model)
    qd = np.cos(np.arange(1, model.nv + 1))
    print(f'\nsample state: q = {np.round(q, 3).tolist()}')
    print(f'               qd = {np.round(qd, 3).tolist()}')
    C = link_pose(model, q, tip)
    print(f"\npose of '{tip}' (world frame):\n{np.array2string(C, precision=4)}")
    print(f"\ntwist of '{tip}' (angular first):")
    for rep in REPRESENTATIONS:
        V = link_twist(model, q, qd, tip, rep)
        print(f'  {rep:<8} ω = {np.array2string(V[:3], precision=4):<34} '
              f'v = {np.array2string(V[3:], precision=4)}')
    J = jacobian(model, q, tip, 'hybrid')
    s = np.linalg.svd(J, compute_uv=False)
    print(f'\nhybrid Jacobian singular values: {np.array2string(s, precision=4)}')


def run(robot=None, out_dir='out/demo', duration=10.0):
    """Run the demo; return a dict of the files it wrote."""
    model = load_robot(robot or default_robot())
    explain(model)
    os.makedirs(out_dir, exist_ok=True)
    record = run_sim(model, duration=duration, out_dir=out_dir,
                     amplitude=test_torque(model), q0=sample_configuration(model))
    if record['t_end'] <= 0.0:
        raise SystemExit(f'liemb demo: the simulation did not advance; see '
                         f'{os.path.join(out_dir, "nodes.log")}')
    files = {'plot': plot_run(model, record, os.path.join(out_dir, 'simulation.png'))}
    q = record['q'][-1] if len(record['q']) else model.neutral()
    files['picture'] = draw_robot(model, q, os.path.join(out_dir, f'{model.name}.png'),
                                  title=f"{model.name} at t = {record['t_end']:.2f} s")
    for what, path in files.items():
        print(f'wrote {path}  ({what})')
    return files


def run_sim(model, duration=10.0, out_dir='out/demo', amplitude=None, q0=None, echo=print):
    """
    Simulate ``model`` under the dynamics node's gravity compensation; return the record.

    The node set ``sim`` (as ``liemb launch sim``) watched by
    :func:`liemb_ros.ros.monitor.watch` (its record).  ``amplitude``: test torque per joint
    [N m] (sinusoid at the configured frequency); ``q0``: initial joint positions (default:
    the simulation node's, neutral).  The nodes' output goes to ``out_dir/nodes.log``.
    """
    from .launcher import NodeSet
    from ..ros import monitor
    # Loopback discovery unless the user chose otherwise (works without a network).
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    params = ['liemb_simulation:publish_clock:=true',
              'liemb_simulation:diagnostics_period:=0.25',
              'liemb_dynamics:diagnostics_period:=0.25']
    launch_args = {'robot': str(model.source)} if os.path.isfile(str(model.source)) else {}
    if amplitude is not None:
        amp = ', '.join(f'{float(a):g}' for a in np.broadcast_to(amplitude, (model.nq,)))
        params.append(f'liemb_simulation:test_torque_amplitude:=[{amp}]')
    if q0 is not None:
        params.append('liemb_simulation:initial_positions:=['
                      + ', '.join(f'{float(x):.6g}' for x in q0) + ']')
    log_path = os.path.join(out_dir, 'nodes.log')
    with open(log_path, 'w', encoding='utf-8') as log:
        nodes = NodeSet('sim', params, stdout=log, echo=echo, launch_args=launch_args)
        return monitor.watch(nodes, model, duration=duration, log_path=log_path, echo=echo)
