"""
``liemb prepare``: compile every kernel ahead of time into numba's on-disk cache.

The kernels are compiled on first use and cached (``@njit(cache=True)``); on a fresh machine
the first node start, the first ``liemb`` command and the first call of each public function
would otherwise pay for it (minutes in all on two cores).  :func:`prepare` calls, once, every
kernel the nodes, the CLI and the public functions use — kinematics and dynamics single and
batched, fixed and floating base, the node engine with its controllers and trajectory
checks, the Simulator in joint and absolute coordinates with explicit and implicit damping,
joint limits, pushes and ground contact, the servo law, the nodes' message readers — so
that later processes load them from the cache in well under a second (a test runs every
node set and command on a copy of the prepared folder and fails when anything compiles).
The batch kernels are compiled ``nogil=True`` (batches run on several threads); a batch on
threads runs each chunk through the specialisation the serial batch compiled (chunks are
slices of the same arrays), so the batch steps prepare both, and one step runs batches
split over two threads.  The README's set-up (``./dev.sh setup``) runs it; on a colcon
install run ``ros2 run liemb_ros liemb prepare`` (or ``liemb prepare``) once after
building.

The kernels go to the package's cache folder (:data:`liemb_ros.KERNEL_CACHE`, chosen by
:mod:`liemb_ros._cache`: one per installation and state of the sources, or
``NUMBA_CACHE_DIR``), which every process that imports the package uses.  A prepared folder
holds :data:`MANIFEST`, the cache files as the preparation left them (name and size): a
later ``liemb prepare`` finds them all and returns at once (``--force`` runs every step
again), and the tests check that no node or command compiles anything beyond them.
"""
import json
import os
import time
import warnings

import numpy as np

from .._cache import MANIFEST, cache_files, prepared  # noqa: F401 (also here)


def _steps():
    """Return ``(label, function)`` pairs; each function exercises one family of kernels."""
    import liemb_ros as lm
    from ..core import resources
    from ..control.engine import DynamicsEngine
    from ..sim.simulator import Simulator

    path = resources.robot_path('liemb_arm7')
    fixed = lm.load_urdf(path)
    floating = lm.load_urdf(path, floating_base=True)
    rng = np.random.default_rng(0)

    def state(model, batch=None):
        q = model.random_configuration(rng, size=batch)
        shape = (model.nv,) if batch is None else (batch, model.nv)
        base = None
        if model.floating:
            base = np.eye(4)
            base[:3, 3] = (0.1, -0.2, 0.3)
            if batch is not None:
                base = np.broadcast_to(base, (batch, 4, 4)).copy()
        return q, rng.normal(size=shape), rng.normal(size=shape), base

    def kinematics(model, batch):
        q, qd, qdd, base = state(model, batch)
        link = model.link_names[-1]
        lm.link_pose(model, q, link, base_pose=base)
        lm.forward_kinematics(model, q, base_pose=base)
        if batch is None:   # single configurations only
            lm.body_twists(model, q, qd, 'spatial', base_pose=base)
            lm.change_representation(lm.link_pose(model, q, link, base_pose=base), qd[:6],
                                     'spatial', 'mixed')
        for rep in lm.REPRESENTATIONS:
            lm.jacobian(model, q, link, rep, base_pose=base)
            lm.jacobian_derivative(model, q, qd, link, rep, base_pose=base)
            lm.link_twist(model, q, qd, link, rep, base_pose=base)
            lm.link_acceleration(model, q, qd, qdd, link, rep, base_pose=base)

    def dynamics(model, batch):
        q, qd, qdd, base = state(model, batch)
        for form in ('body', 'spatial', 'hybrid'):
            lm.inverse_dynamics(model, q, qd, qdd, form=form, base_pose=base)
        tau = lm.inverse_dynamics(model, q, qd, qdd, base_pose=base)
        lm.gravity_torques(model, q, base_pose=base)
        lm.joint_wrenches(model, q, qd, qdd, base_pose=base)
        lm.mass_matrix(model, q, base_pose=base)
        lm.mass_matrix_derivative(model, q, qd, base_pose=base)
        lm.coriolis_matrix(model, q, qd, base_pose=base)
        lm.forward_dynamics(model, q, qd, tau, base_pose=base)
        lm.forward_dynamics(model, q, qd, tau, base_pose=base, method='cholesky')
        lm.inverse_dynamics_derivatives(model, q, qd, qdd, base_pose=base)
        lm.regressor(model, q, qd, qdd, base_pose=base, friction=True)

    def armature(model):
        # a rotor inertia per joint: what liemb launch control gives both nodes
        q, qd, _, base = state(model)
        lm.forward_dynamics(model, q, qd, np.zeros(model.nv), base_pose=base,
                            armature=np.full(model.nv, 0.01))
        simulate(model, armature=0.01)

    def threaded(model):
        # large enough to split into two chunks (dispatch.CHUNK_NS): the thread pool's path
        q, qd, qdd, base = state(model, 4000)
        lm.forward_kinematics(model, q, base_pose=base, threads=2)
        lm.jacobian(model, q, model.link_names[-1], base_pose=base, threads=2)
        lm.inverse_dynamics(model, q, qd, qdd, base_pose=base, threads=2)
        lm.mass_matrix(model, q, base_pose=base, threads=2)

    def engine(model):
        e = DynamicsEngine(model)
        q, qd, _, base = state(model)
        e.update_state(model.joint_names, q, qd[model.nv - model.nq:])
        if model.floating:
            e.update_base(base, qd[:6])
        e.warm_up()
        e.cycle()

    def simulate(model, **kwargs):
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            sim = Simulator(model, **kwargs)
        sim.warm_up()
        sim.step(n=2)

    def limits(model):
        # every joint pushed past its upper limit by its effort limit, a wrench on the tool:
        # the limits' engagement, the plausibility checks, the step retaken
        q0 = np.where(np.isfinite(model.upper), model.upper - 1e-3, 0.0)
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            sim = Simulator(model, q0=q0)
        sim.set_wrench(model.link_names[-1], np.r_[0.0, 0.0, 0.0, 5.0, 0.0, 0.0])
        sim.step(np.where(np.isfinite(model.effort_limit), model.effort_limit, 1.0), n=20)
        sim.check()

    def contact():
        # the arm on a floating base dropped onto the ground (liemb view --simulate --contact)
        from ..sim.contact import ContactModel, is_stiff
        from ..sim.scenario import sample_configuration
        xml, where = resources.read_robot_description('liemb_arm7')
        model = lm.load_urdf_string(xml, source=where, floating_base=True)
        base = np.eye(4)
        base[2, 3] = 0.5
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            sim = Simulator(model, q0=sample_configuration(model), base_pose=base,
                            contact=ContactModel(model, xml, urdf_path=where))
        sim.warm_up()
        while not sim.contacts() and sim.t < 2.0:
            sim.step(n=50)
        sim.step(n=20)
        sim.check()
        # a contact step whose damping is not implicit asks first whether the contacts are
        # stiff (is_stiff: the simulation node's default damping_method 'auto'); this short
        # scenario need not get there
        n = model.nv
        is_stiff(np.eye(n), np.eye(n), np.eye(n), 1.0)

    def servo(model):
        from ..control.servo import Servo
        law = Servo(model, model.link_names[-1])
        q = model.neutral() + 0.3
        for rep in lm.REPRESENTATIONS:
            law.twist_step(q, np.r_[0.1, 0.0, 0.0, 0.0, 0.05, 0.0], representation=rep)
        law.joint_step(q, np.full(model.nq, 0.1))

    def papers():
        from .reproduce.examples import EXAMPLES, UPDATES
        from .reproduce.study import run_example
        for name, spec in EXAMPLES.items():
            for update in UPDATES:
                try:
                    run_example(name, update, t_end=3 * spec.dt)
                except ValueError:   # an update the example has not (ULV: the flip only)
                    pass

    def messages():
        from ..core.lie import quaternion
        # /tf and odometry out, poses in (odometry, target poses)
        quaternion.to_matrix(quaternion.from_matrix(np.eye(3)))
        try:   # the dynamics node's trajectory reader (needs ROS 2's messages)
            from ..ros import trajectory_intake
        except ImportError:
            return
        trajectory_intake.warm_up()

    steps = []
    for name, model in (('fixed base', fixed), ('floating base', floating)):
        steps += [
            (f'kinematics, {name}', lambda m=model: kinematics(m, None)),
            (f'kinematics, {name}, batch', lambda m=model: kinematics(m, 3)),
            (f'dynamics, {name}', lambda m=model: dynamics(m, None)),
            (f'dynamics, {name}, batch', lambda m=model: dynamics(m, 3)),
            (f'dynamics node engine, {name}', lambda m=model: engine(m)),
            # the arm's URDF damping is stiff at the default step ('auto' takes the implicit
            # step), so the explicit tableau a robot without it takes is asked for by name
            (f'simulation, {name}', lambda m=model: simulate(m, damping_method='explicit')),
            (f'simulation, {name}, implicit damping',
             lambda m=model: simulate(m, damping=1.0, damping_method='implicit')),
        ]
    steps.append(('simulation, absolute coordinates',
                  lambda: simulate(fixed, coordinates='absolute')))
    steps.append(('batches on two threads', lambda: threaded(floating)))
    steps.append(('simulation, joint limits and a push', lambda: limits(fixed)))
    steps.append(('rotor inertia (armature)', lambda: armature(fixed)))
    steps.append(('simulation, ground contact', contact))
    steps.append(('servo law', lambda: servo(fixed)))
    steps.append(('node messages (/tf, trajectories)', messages))
    steps.append(("the papers' examples (liemb reproduce)", papers))
    return steps


#: the steps in stages: the stages one after another, the groups of a stage in parallel
#: processes (each group's steps in order, in one process).  numba caches each kernel in a
#: file of its own, so processes compiling different kernels share nothing; the second
#: stage loads what the first compiled.  Groups are balanced by their compile times
#: (fixed base, two cores: kinematics 77 s, dynamics 126 s, batched dynamics 94 s, the
#: engine 40 s; the floating base and the simulator reuse most of it).
STAGES = (
    (('kinematics, fixed base', 'kinematics, fixed base, batch', 'dynamics, fixed base, batch'),
     ('dynamics, fixed base', 'dynamics node engine, fixed base')),
)


def _run_steps(labels):
    """Run the steps ``labels`` in this process (a worker of :func:`prepare`)."""
    steps = dict(_steps())
    for label in labels:
        steps[label]()
    return labels


def _plan(labels, workers):
    """Return the stages of groups to run: :data:`STAGES`, then every other step."""
    if workers == 1:
        return [[list(labels)]]
    staged = {label for stage in STAGES for group in stage for label in group}
    rest = [label for label in labels if label not in staged]
    # the rest (floating base, simulation: mostly loading what the stages compiled) split
    # evenly over the workers
    return [list(stage) for stage in STAGES] + [
        [rest[k::workers] for k in range(workers) if rest[k::workers]]]


def prepare(progress=True, echo=print, force=False, workers=None):
    """
    Compile every kernel the nodes, the CLI and the public functions use; return seconds.

    ``progress``: show a progress bar (tqdm) with the step being compiled.  A folder that is
    already prepared (:func:`prepared`) is left as it is unless ``force``.  ``workers``:
    processes compiling at once (default: the cores this process may run on, at most 2;
    1: every step in this process).
    """
    from concurrent.futures import ProcessPoolExecutor, as_completed
    import multiprocessing

    from .. import KERNEL_CACHE
    start = time.perf_counter()
    where = KERNEL_CACHE or "numba's default (__pycache__ beside the sources)"
    if KERNEL_CACHE and not force and prepared(KERNEL_CACHE):
        echo(f'liemb prepare: the kernels are prepared in {where}')
        return 0.0
    if workers is None:
        workers = min(2, len(os.sched_getaffinity(0)))
    labels = [label for label, _ in _steps()]
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=len(labels), desc='compiling kernels', unit='step')
    for stage in _plan(labels, workers):
        if workers == 1:
            for group in stage:
                for label in group:
                    if bar is not None:
                        bar.set_postfix_str(label)
                    _run_steps([label])
                    if bar is not None:
                        bar.update(1)
            continue
        # spawn: fresh interpreters (no LLVM state or threads of this one), which find the
        # cache folder as every process does
        with ProcessPoolExecutor(len(stage), mp_context=multiprocessing.get_context('spawn')) \
                as pool:
            if bar is not None:
                bar.set_postfix_str(' | '.join(group[0] for group in stage))
            for done in as_completed([pool.submit(_run_steps, group) for group in stage]):
                group = done.result()   # a worker's exception is raised here
                if bar is not None:
                    bar.update(len(group))
    if bar is not None:
        bar.close()
    seconds = time.perf_counter() - start
    if KERNEL_CACHE:
        with open(os.path.join(KERNEL_CACHE, MANIFEST), 'w', encoding='utf-8') as f:
            json.dump({'seconds': round(seconds, 1), 'files': cache_files(KERNEL_CACHE)}, f,
                      indent=0)
    echo(f'liemb prepare: every kernel compiled or loaded from the cache in {seconds:.1f} s '
         f'({workers} process{"es" if workers > 1 else ""}), in {where}')
    return seconds
