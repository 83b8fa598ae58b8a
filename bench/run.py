"""
Benchmark liemb_ros beside Pinocchio, Modern Robotics and MuJoCo in one process and one run.

Run: ``python bench/run.py [--smoke] [--json PATH|-] [--out DIR]``.

* Single call: UR5, Panda, solo12 and talos_reduced (floating bases as free flyers) on the
  same random states; link pose of a tip, all link poses, the Jacobian and J̇ in each
  representation, inverse dynamics, mass matrix, forward dynamics and ∂τ/∂q.  Before any
  timing every peer's result is mapped into our conventions and compared with ours
  (``max|ours - peer| / max(1, max|peer|) <= --tol``); the JSON records each error.  Time:
  median over chunks of a loop of calls (``time.perf_counter_ns``), ours and Pinocchio
  interleaved chunk by chunk so that load from other processes hits both alike, after a
  warm-up that includes numba's compilation.  Modern Robotics (pure Python; fixed-base
  serial chains only: UR5 and the 7-joint Panda arm) gets a time budget per row instead of
  the full call count.
* Batch: ``--batch`` states through our batched call on one thread vs a Python loop over
  Pinocchio.
* Parallel batch: the same batched calls on ``--threads`` threads (default: every core
  available) vs one thread; before timing, the threaded result must equal the serial one
  bit for bit (``np.array_equal``).  Serial and threaded runs alternate, best of
  ``--reps``.
* Scaling: random chains (``random_model``) of 5 … 200 bodies; inverse dynamics, forward
  dynamics and mass matrix; the exponent of a least-squares line on log-log axes.
* Start-up: ``import liemb_ros`` to the first inverse-dynamics result in a fresh subprocess
  with the warm numba cache and with a fresh empty ``NUMBA_CACHE_DIR`` (cold).
* Beside MuJoCo (where the ``mujoco`` package is installed: a benchmark and test dependency
  only; the robots loaded by MuJoCo's own URDF import, ``bench/_mujoco.py``): simulation
  steps per second at 1 ms of our ``Simulator`` and ``mj_step`` on the shipped arm and the
  Panda as the ideal rigid-body robot (no damping, friction, limits), with explicit RK4 in
  both (the final states compared) and with each one's implicit step (our ROS2 vs MuJoCo's
  ``implicitfast``); solo12 standing on the ground (each engine's own contact model: speed
  only); ``mj_inverse`` / ``mj_forward`` beside our inverse / forward dynamics (checked,
  then timed interleaved).  Ratios are our time over MuJoCo's.

Prints the tables, writes bar/scaling charts (PNG) to ``--out`` (``out/bench``) and, with
``--json``, every number.  ``--smoke`` runs a few hundred calls on two robots with tiny
batches and a few hundred steps beside MuJoCo, and skips the cold start (CI runs it through
test/test_bench.py).
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import _mujoco  # noqa: E402
import _peers  # noqa: E402
import liemb_ros as lm  # noqa: E402
from liemb_ros.core import resources  # noqa: E402
from liemb_ros.core.model.synthetic import random_model  # noqa: E402
from liemb_ros.sim.contact import ContactModel  # noqa: E402
from liemb_ros.sim.scenario import sample_configuration  # noqa: E402
from liemb_ros.sim.simulator import Simulator  # noqa: E402

ROOT = os.path.dirname(HERE)
SCALING_ALGOS = ('inverse_dynamics', 'forward_dynamics', 'mass_matrix')
TARGET_RATIO = 3.0
TARGET_EXPONENT = 1.1
TARGET_WARM_S = 2.0
TARGET_SPEEDUP_2 = 1.7   # threads=2 vs 1 on a two-core machine
SIM_DT = 1e-3            # the step of every simulation row beside MuJoCo [s]
#: solo12's standing posture (test_contact.py), held by a joint PD law
STANDING = np.array([0.1, 0.8, -1.6, -0.1, 0.8, -1.6, 0.1, -0.8, 1.6, -0.1, -0.8, 1.6])

FULL = {'robots': list(_peers.ROBOTS), 'calls': 10000, 'chunk': 50, 'batch': 10000,
        'checks': 3, 'mr_budget_s': 0.3, 'scaling_n': [5, 10, 20, 50, 100, 200],
        'scaling_calls': 2000, 'cold': True, 'parallel_reps': 5,
        'mj_robots': ['liemb_arm7', 'panda'], 'mj_steps': 2000, 'mj_stand_steps': 1000,
        'mj_settle': 300, 'mj_reps': 3}
SMOKE = {'robots': ['panda', 'solo12'], 'calls': 300, 'chunk': 20, 'batch': 16, 'checks': 2,
         'mr_budget_s': 0.02, 'scaling_n': [5, 20, 50], 'scaling_calls': 100, 'cold': False,
         'parallel_reps': 1, 'mj_robots': ['liemb_arm7'], 'mj_steps': 200, 'mj_stand_steps': 50,
         'mj_settle': 20, 'mj_reps': 1}


# --------------------------------------------------------------------------- timing
def _chunk_ns(fn, chunk):
    t0 = time.perf_counter_ns()
    for _ in range(chunk):
        fn()
    return (time.perf_counter_ns() - t0) / chunk


def time_interleaved(groups, calls, chunk, warm=100):
    """
    Median time per call in µs of each group of callables (one callable per state).

    Chunks of ``chunk`` calls of one state, groups interleaved chunk by chunk, states in
    turn; ``calls`` calls per group after ``warm`` warm-up calls per callable.
    """
    for fns in groups:
        for fn in fns:
            for _ in range(warm):
                fn()
    per = [[] for _ in groups]
    for j in range(max(1, calls // chunk)):
        for g, fns in enumerate(groups):
            per[g].append(_chunk_ns(fns[j % len(fns)], chunk))
    return [statistics.median(p) / 1e3 for p in per]


def _noop():
    return None


def time_budget(fns, calls, budget_s):
    """Median µs per call of slow callables: as many calls as fit ``budget_s`` (≥ 5)."""
    t0 = time.perf_counter()
    fns[0]()
    est = max(time.perf_counter() - t0, 1e-7)
    n = int(min(calls, max(5, budget_s / est)))
    times = []
    for j in range(n):
        times.append(_chunk_ns(fns[j % len(fns)], 1))
    return statistics.median(times) / 1e3, n


def scaled_error(a, b):
    """``max|a - b| / max(1, max|b|)``: relative for large values, absolute for small."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        return float('inf')
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))


# --------------------------------------------------------------------------- suites
def bench_robot(name, algos, cfg, tol, rng, log):
    """Check then time every algorithm on one robot; return (single, batch, parallel rows)."""
    robot = _peers.Robot(name)
    chain = None
    if _peers.import_mr() is not None and not robot.floating:
        chain = _peers.MRChain(robot)
    states = robot.states(max(cfg['checks'], 8), rng)
    batch_states = robot.stack(robot.states(cfg['batch'], rng))
    single, batch, parallel = [], [], []
    for a in algos:
        row = {'robot': name, 'algo': a.key, 'nv': robot.model.nv, 'note': a.note}
        errs = []
        for s in states[:cfg['checks']]:
            errs.append(scaled_error(*a.pin_map(robot, s, a.pin(robot, s)())))
        row['err_pin'] = max(errs)
        use_mr = chain is not None and a.mr is not None
        if use_mr:
            row['err_mr'] = max(scaled_error(*a.mr_map(robot, chain, s, a.mr(robot, chain, s)()))
                                for s in states[:cfg['checks']])
        row['agree'] = row['err_pin'] <= tol and (not use_mr or row['err_mr'] <= tol)
        ours, theirs = time_interleaved(
            [[a.ours(robot, s) for s in states], [a.pin(robot, s) for s in states]],
            cfg['calls'], cfg['chunk'])
        row.update(ours_us=ours, pin_us=theirs, ratio_pin=ours / theirs, calls=cfg['calls'])
        if use_mr:
            row['mr_us'], row['mr_calls'] = time_budget(
                [a.mr(robot, chain, s) for s in states], cfg['calls'], cfg['mr_budget_s'])
            row['ratio_mr'] = ours / row['mr_us']
        else:
            row['mr_us'] = row['ratio_mr'] = None
        single.append(row)
        batch.append(bench_batch(robot, a, batch_states))
        parallel.append(bench_parallel(robot, a, batch_states, cfg['threads'],
                                       cfg['parallel_reps']))
        log(f"  {name:<14} {a.key:<28} ours {ours:9.2f} us  pin {theirs:9.2f} us  "
            f"err {row['err_pin']:.1e}  threads x{parallel[-1]['speedup']:.2f}")
    return single, batch, parallel


def bench_batch(robot, a, S, reps=3):
    """Per-configuration µs of our batched call (one thread) and of a Python loop over pin."""
    lm.set_num_threads(1)   # Pinocchio's loop runs on one core
    try:
        return _bench_batch(robot, a, S, reps)
    finally:
        lm.set_num_threads(None)


def _bench_batch(robot, a, S, reps):
    B = S['q'].shape[0]
    tiny = {k: (None if v is None else v[:2]) for k, v in S.items()}
    a.ours_batch(robot, tiny)()  # compile the batch kernel
    run = a.ours_batch(robot, S)
    pfn = a.pin
    pstates = [{'pq': S['pq'][k], 'pv': S['pv'][k], 'pa': S['pa'][k], 'ptau': S['ptau'][k]}
               for k in range(B)]
    calls = [pfn(robot, s) for s in pstates]

    def loop():
        for c in calls:
            c()

    # where our call takes out=, also into one reused array: a new result pays for its
    # first touch on every call (on this VM up to 2 µs per 4 KiB page: more than the
    # arithmetic for talos' 115 MB of mass matrices), the pin loop pays none
    run_out = None
    if a.out_shape is not None:
        shape = a.out_shape(robot, B)
        out = (tuple(np.empty(sh) for sh in shape) if isinstance(shape, list)
               else np.empty(shape))
        run_out = partial(run, out=out)
        run_out()
    ours, ours_out, theirs = [], [], []
    for _ in range(reps):
        ours.append(_chunk_ns(run, 1) / B / 1e3)
        if run_out is not None:
            ours_out.append(_chunk_ns(run_out, 1) / B / 1e3)
        theirs.append(_chunk_ns(loop, 1) / B / 1e3)
    o, t = statistics.median(ours), statistics.median(theirs)
    oo = statistics.median(ours_out) if ours_out else None
    return {'robot': robot.name, 'algo': a.key, 'batch': B, 'ours_us_per_config': o,
            'ours_out_us_per_config': oo, 'pin_loop_us_per_config': t, 'ratio_pin': o / t,
            'ratio_pin_out': None if oo is None else oo / t,
            'ratio_pin_best': o / t if oo is None else min(o, oo) / t}


def _equal(a, b):
    if isinstance(a, tuple):
        return all(_equal(x, y) for x, y in zip(a, b))
    return a.shape == b.shape and bool(np.array_equal(a, b))


def bench_parallel(robot, a, S, threads, reps):
    """
    Our batched call on ``threads`` threads vs one: checked bit for bit, then timed.

    Best of ``reps`` alternating runs of each: with a new result array per call (as a
    caller without ``out=`` gets it: its page faults are part of the time) and, where the
    call takes ``out=``, into one reused array.  ``cores_used``: CPU time over wall time of
    the fastest threaded run, the cores it got (other processes take the rest).
    """
    B = S['q'].shape[0]
    run = a.ours_batch(robot, S)
    runs = [run]
    if a.out_shape is not None:
        shape = a.out_shape(robot, B)
        out = (tuple(np.empty(sh) for sh in shape) if isinstance(shape, list)
               else np.empty(shape))
        runs.append(partial(run, out=out))
    cores = []   # (time, CPU time / wall time) of each threaded run: the cores it got
    lm.set_num_threads(1)
    try:
        serial = run()
        lm.set_num_threads(threads)
        same = _equal(run(), serial)
        if len(runs) > 1:
            same = same and _equal(runs[1](), serial)
        best = []
        for fn in runs:
            one, many = [], []
            for _ in range(reps):
                lm.set_num_threads(1)
                one.append(_chunk_ns(fn, 1) / B / 1e3)
                lm.set_num_threads(threads)
                c0 = time.process_time()
                many.append(_chunk_ns(fn, 1) / B / 1e3)
                cores.append((many[-1], (time.process_time() - c0) * 1e6 / B / many[-1]))
            best.append((min(one), min(many)))
    finally:
        lm.set_num_threads(None)
    (one, many), out_pair = best[0], (best[1] if len(best) > 1 else (None, None))
    return {'robot': robot.name, 'algo': a.key, 'batch': B, 'threads': threads,
            'identical': same, 'serial_us_per_config': one, 'threads_us_per_config': many,
            'speedup': one / many, 'cores_used': min(cores)[1],
            'serial_out_us_per_config': out_pair[0],
            'threads_out_us_per_config': out_pair[1],
            'speedup_out': None if out_pair[0] is None else out_pair[0] / out_pair[1]}


def fit_exponent(n, t):
    """Slope of the least-squares line through (log n, log t)."""
    return float(np.polyfit(np.log(n), np.log(t), 1)[0])


def bench_scaling(cfg, rng, log):
    """Time ID, FD and CRBA on random chains; return {algo: {n, us, exponent, ...}}."""
    out = {k: {'n': [], 'us': []} for k in SCALING_ALGOS}
    for n in cfg['scaling_n']:
        model = random_model(n, rng, kinds='R', branching=0.0)
        q = model.random_configuration(rng)
        qd, qdd = rng.standard_normal(model.nv), rng.standard_normal(model.nv)
        tau = lm.inverse_dynamics(model, q, qd, qdd)
        fns = {'inverse_dynamics': lambda: lm.inverse_dynamics(model, q, qd, qdd),
               'forward_dynamics': lambda: lm.forward_dynamics(model, q, qd, tau),
               'mass_matrix': lambda: lm.mass_matrix(model, q)}
        times = time_interleaved([[fns[k]] for k in SCALING_ALGOS], cfg['scaling_calls'],
                                 max(1, min(cfg['chunk'], cfg['scaling_calls'] // 10)), warm=20)
        for k, t in zip(SCALING_ALGOS, times):
            out[k]['n'].append(n)
            out[k]['us'].append(t)
        log(f'  chain of {n:3d}: ' + '  '.join(f'{k} {t:8.2f} us'
                                               for k, t in zip(SCALING_ALGOS, times)))
    for k, d in out.items():
        d['exponent'] = fit_exponent(d['n'], d['us'])
        tail = [i for i, n in enumerate(d['n']) if n >= 50]
        d['exponent_n_ge_50'] = (fit_exponent([d['n'][i] for i in tail],
                                              [d['us'][i] for i in tail])
                                 if len(tail) >= 2 else None)
    return out


START_SCRIPT = """
import time
from functools import partial
t0 = time.perf_counter()
import liemb_ros as lm
t1 = time.perf_counter()
import json, sys
import numpy as np
m = lm.load_urdf(sys.argv[1])
q = m.neutral()
z = np.zeros(m.nv)
tau = lm.inverse_dynamics(m, q, z, z)
t2 = time.perf_counter()
print(json.dumps({'import_s': t1 - t0, 'first_result_s': t2 - t0}))
"""


def start_time(cache_dir=None):
    """Run START_SCRIPT in a fresh interpreter; return its timings and the process wall time."""
    env = dict(os.environ)
    if cache_dir is not None:
        env['NUMBA_CACHE_DIR'] = cache_dir
    urdf = os.path.join(_peers.erd_robots_dir(), _peers.ROBOTS['panda'][0])
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, '-c', START_SCRIPT, urdf], env=env, cwd=ROOT,
                         capture_output=True, text=True, check=True)
    out = json.loads(res.stdout.strip().splitlines()[-1])
    out['process_s'] = time.perf_counter() - t0
    return out


def bench_start(cfg, log):
    """Warm start (median of three after one run that fills the cache) and cold start."""
    start_time()
    warm = [start_time() for _ in range(3 if cfg['cold'] else 1)]
    res = {'what': 'import liemb_ros + load_urdf(panda) + first inverse_dynamics, fresh process',
           'warm_import_s': statistics.median(w['import_s'] for w in warm),
           'warm_first_result_s': statistics.median(w['first_result_s'] for w in warm),
           'warm_process_s': statistics.median(w['process_s'] for w in warm),
           'cold_import_s': None, 'cold_first_result_s': None, 'cold_process_s': None,
           'cold_skipped': not cfg['cold']}
    log(f"  warm: import {res['warm_import_s']:.2f} s, first result "
        f"{res['warm_first_result_s']:.2f} s")
    if cfg['cold']:
        with tempfile.TemporaryDirectory(prefix='liemb-numba-') as d:
            cold = start_time(d)
        res.update(cold_import_s=cold['import_s'], cold_first_result_s=cold['first_result_s'],
                   cold_process_s=cold['process_s'])
        log(f"  cold: import {cold['import_s']:.2f} s, first result "
            f"{cold['first_result_s']:.2f} s")
    return res


# --------------------------------------------------------------------------- MuJoCo
def _ideal_simulator(model, q0, integrator):
    """Our Simulator on the ideal rigid-body robot (no damping, friction, limits, armature)."""
    return Simulator(model, dt=SIM_DT, integrator=integrator, damping=0.0, friction=0.0,
                     limits=False, effort_limits=False, armature=0.0, q0=q0)


def _time_pair(ours, theirs, reps, setup=_noop):
    """
    Best of ``reps`` alternating timed runs of two zero-argument callables.

    ``setup()`` (untimed) before each pair: back to the initial state.  Returns the best
    wall-clock seconds of each and the best CPU seconds of each (``time.process_time``: on
    a shared machine the steadier of the two, as time the process waits is not counted).
    """
    wall, cpu = [np.inf, np.inf], [np.inf, np.inf]
    for _ in range(reps):
        setup()
        for k, fn in enumerate((ours, theirs)):
            t0, c0 = time.perf_counter(), time.process_time()
            fn()
            wall[k] = min(wall[k], time.perf_counter() - t0)
            cpu[k] = min(cpu[k], time.process_time() - c0)
    return wall, cpu


def bench_mujoco_arm(name, cfg, tol, rng, log):
    """
    Time one fixed-base arm beside MuJoCo: simulation rows and single-call rows.

    Simulation: ``n`` steps of 1 ms from ``sample_configuration`` at rest under the constant
    torque ``g(q0) + 0.1 diag M(q0)`` (the arm moves), one call each (``sim.step(tau, n)``,
    ``mj_step(m, d, n)``), best of ``mj_reps`` alternating runs; ``rk4``: explicit RK4 in
    both, ``euler``: our semi-implicit Euler and MuJoCo's (the same scheme), the final joint
    positions compared (to ``tol`` [rad]); ``best``: our semi-implicit Euler vs MuJoCo's
    ``implicitfast`` (each one's one-stage step; their difference is reported, not
    checked).  Single calls: our ``inverse_dynamics`` /
    ``forward_dynamics`` vs ``mj_inverse`` / ``mj_forward`` (the state copied into
    ``MjData`` first, inside the timed call), checked at every state before timing (scaled
    error to ``tol``).
    """
    path = resources.robot_path(name) if name == 'liemb_arm7' else os.path.join(
        _peers.erd_robots_dir(), _peers.ROBOTS[name][0])
    model = lm.load_urdf(path)
    q0 = sample_configuration(model)
    tau = lm.gravity_torques(model, q0) + 0.1 * np.diag(lm.mass_matrix(model, q0))
    n = cfg['mj_steps']
    sim_rows, single = [], []
    for case, ours, integrator in (('rk4', 'rk4', 'RK4'),
                                   ('euler', 'semi_implicit_euler', 'EULER'),
                                   ('best', 'semi_implicit_euler', 'IMPLICITFAST')):
        sim = _ideal_simulator(model, q0, ours)
        mj = _mujoco.MjRobot(model, path, integrator=integrator, dt=SIM_DT)
        sim.step(tau, n=10)   # compile / load the numba cache

        def reset():
            sim.reset()
            mj.mujoco.mj_resetData(mj.m, mj.d)
            mj.set_joint_state(q0, tau=tau)

        (t_ours, t_mj), cpu = _time_pair(partial(sim.step, tau, n=n),
                                         partial(mj.mujoco.mj_step, mj.m, mj.d, n),
                                         cfg['mj_reps'], reset)
        diff = float(np.max(np.abs(sim.q - mj.joints(mj.d.qpos))))
        row = {'robot': name, 'case': case, 'nv': model.nv, 'steps': n,
               'ours': f"Simulator integrator='{ours}'",
               'mujoco': f'mjINT_{integrator}', 'ours_steps_per_s': n / t_ours,
               'mujoco_steps_per_s': n / t_mj, 'ratio': t_ours / t_mj,
               'ratio_cpu': cpu[0] / cpu[1], 'ours_cpu_us_per_step': cpu[0] / n * 1e6,
               'mujoco_cpu_us_per_step': cpu[1] / n * 1e6, 'max_dq': diff,
               'agree': case == 'best' or diff <= tol}
        sim_rows.append(row)
        log(f"  {name:<12} sim {case:<5} ours {row['ours_steps_per_s']:8.0f} steps/s  MuJoCo "
            f"{row['mujoco_steps_per_s']:8.0f} steps/s  |dq| {diff:.1e} after {n} steps")
    mj = _mujoco.MjRobot(model, path, integrator='RK4', dt=SIM_DT)
    states = [(model.random_configuration(rng), *rng.standard_normal((3, model.nv)))
              for _ in range(8)]
    mjs = []
    for q, qd, qdd, tq in states:
        mj.set_joint_state(q, qd, qacc=qdd, tau=tq)
        mjs.append((mj.d.qpos.copy(), mj.d.qvel.copy(), mj.d.qacc.copy(),
                    mj.d.qfrc_applied.copy()))

    def mj_call(fn, s, out):
        m, d = mj.m, mj.d

        def call():
            d.qpos[:], d.qvel[:], d.qacc[:], d.qfrc_applied[:] = s
            fn(m, d)
            return out(d)
        return call

    for algo, ours_fn, mj_fn, out in (
            ('inverse_dynamics', lambda q, qd, qdd, tq: partial(lm.inverse_dynamics, model, q,
                                                                qd, qdd),
             mj.mujoco.mj_inverse, lambda d: d.qfrc_inverse),
            ('forward_dynamics', lambda q, qd, qdd, tq: partial(lm.forward_dynamics, model, q,
                                                                qd, tq),
             mj.mujoco.mj_forward, lambda d: d.qacc)):
        ours = [ours_fn(*s) for s in states]
        theirs = [mj_call(mj_fn, s, out) for s in mjs]
        err = max(scaled_error(o(), mj.joints(t())) for o, t in zip(ours, theirs))
        t_ours, t_mj = time_interleaved([ours, theirs], cfg['calls'], cfg['chunk'])
        single.append({'robot': name, 'algo': algo, 'nv': model.nv, 'ours_us': t_ours,
                       'mujoco_us': t_mj, 'ratio': t_ours / t_mj, 'err': err,
                       'agree': err <= tol,
                       'mujoco': mj_fn.__name__ + ' (state copied into MjData first)'})
        log(f"  {name:<12} {algo:<17} ours {t_ours:8.2f} us  MuJoCo {t_mj:8.2f} us  "
            f"err {err:.1e}")
    return sim_rows, single


def bench_mujoco_standing(cfg, log):
    """
    Time solo12 standing on the ground in each engine: steps per second only.

    solo12 (floating base, mesh collision geometry) set down 5 mm above its standing height
    under the joint PD posture hold of test_contact.py (``g(q*) + 10 (q* - q) - 0.1 q̇``,
    computed in the same Python loop for both, one step per call); ``mj_settle`` steps to
    land, then ``mj_steps`` timed, best of ``mj_reps``.  Ours: the defaults with
    ``contact=ContactModel(model, urdf)`` (compliant normal force, regularised Coulomb
    friction, ROS2 steps while in contact); MuJoCo: the URDF's joints, ``implicitfast`` at
    1 ms, its soft-constraint contacts of the collision meshes' convex hulls with a plane.
    The contact models differ: the base heights and contact counts are reported, not
    compared.
    """
    path = os.path.join(_peers.erd_robots_dir(), _peers.ROBOTS['solo12'][0])
    model = lm.load_urdf(path, floating_base=True)
    base = np.eye(4)
    base[2, 3] = 0.24
    g = lm.gravity_torques(model, STANDING, base_pose=base)[6:]
    sim = Simulator(model, dt=SIM_DT, contact=ContactModel(model, path), base_pose=base,
                    q0=STANDING)
    mj = _mujoco.MjRobot(model, path, ideal=False, floating=True, ground=True,
                         integrator='IMPLICITFAST', dt=SIM_DT)
    mjs, m, d = mj.mujoco, mj.m, mj.d

    def law(q, qd):
        return g + 10.0 * (STANDING - q) - 0.1 * qd

    def run_ours(n):
        for _ in range(n):
            sim.step(law(sim.q, sim.qd[6:]))

    def run_mj(n):
        for _ in range(n):
            d.qfrc_applied[mj.dadr] = law(d.qpos[mj.qadr], d.qvel[mj.dadr])
            mjs.mj_step(m, d)

    def settle():
        sim.reset()
        run_ours(cfg['mj_settle'])
        mjs.mj_resetData(m, d)
        d.qpos[:7] = (0.0, 0.0, 0.24, 1.0, 0.0, 0.0, 0.0)
        mj.set_joint_state(STANDING, np.zeros(model.nq))
        run_mj(cfg['mj_settle'])

    n = cfg['mj_stand_steps']
    best, cpu = _time_pair(partial(run_ours, n), partial(run_mj, n), cfg['mj_reps'], settle)
    row = {'robot': 'solo12', 'case': 'standing, ground contact', 'nv': model.nv, 'steps': n,
           'ours': 'Simulator defaults, contact=ContactModel (ROS2 steps in contact)',
           'mujoco': 'mjINT_IMPLICITFAST, ground plane', 'ours_steps_per_s': n / best[0],
           'mujoco_steps_per_s': n / best[1], 'ratio': best[0] / best[1],
           'ratio_cpu': cpu[0] / cpu[1], 'ours_cpu_us_per_step': cpu[0] / n * 1e6,
           'mujoco_cpu_us_per_step': cpu[1] / n * 1e6, 'max_dq': None,
           'agree': True, 'ours_base_z': float(sim.base_pose[2, 3]),
           'mujoco_base_z': float(d.qpos[2]), 'ours_contacts': len(sim.contacts()),
           'mujoco_contacts': int(d.ncon)}
    log(f"  solo12       standing ours {row['ours_steps_per_s']:8.0f} steps/s  MuJoCo "
        f"{row['mujoco_steps_per_s']:8.0f} steps/s  base z {row['ours_base_z']:.4f} / "
        f"{row['mujoco_base_z']:.4f} m")
    return row


def bench_mujoco(cfg, tol, rng, log):
    """Every row beside MuJoCo; None (and a line in the log) when it is not installed."""
    if _mujoco.import_mujoco() is None:
        log('  mujoco is not installed: no rows beside MuJoCo')
        return None
    res = {'sim': [], 'single': []}
    for name in cfg['mj_robots']:
        s, c = bench_mujoco_arm(name, cfg, tol, rng, log)
        res['sim'] += s
        res['single'] += c
    res['sim'].append(bench_mujoco_standing(cfg, log))
    res['all_agree'] = all(r['agree'] for r in res['sim'] + res['single'])
    return res


# --------------------------------------------------------------------------- report
def targets(res):
    """Evaluate the issue-6 targets from the measured numbers."""
    t = []
    single = {(r['robot'], r['algo']): r for r in res['single']}
    for algo in ('inverse_dynamics', 'jacobian body', 'jacobian spatial', 'jacobian hybrid',
                 'jacobian mixed', 'link_pose', 'forward_kinematics'):
        r = single.get(('panda', algo))
        if r is not None:
            t.append({'target': f'panda {algo} single call <= {TARGET_RATIO:g}x pin',
                      'value': r['ratio_pin'], 'holds': r['ratio_pin'] <= TARGET_RATIO})
    worst = max(res['batch'], key=lambda b: b['ratio_pin_best'])
    slow = [f"{b['robot']} {b['algo']}" for b in res['batch'] if b['ratio_pin_best'] > 1.0]
    t.append({'target': 'batch per config <= pin loop (every row; into out= where offered)',
              'value': worst['ratio_pin_best'],
              'holds': not slow, 'failing': slow})
    par = res['parallel']
    if par and par[0]['threads'] == 2:
        keys = ('forward_kinematics', 'jacobian body', 'jacobian_derivative body',
                'inverse_dynamics', 'mass_matrix', 'forward_dynamics', 'dtau_dq')
        rows = [p for p in par if p['algo'] in keys]

        def best(p):
            return max(p['speedup'], p['speedup_out'] or 0.0)

        low = [f"{p['robot']} {p['algo']}" for p in rows if best(p) < TARGET_SPEEDUP_2]
        t.append({'target': f'batch on 2 threads >= {TARGET_SPEEDUP_2:g}x one thread (FK, '
                            'J, J̇, ID, M, FD, ∂τ; into out= where offered)',
                  'value': min(best(p) for p in rows), 'holds': not low, 'failing': low})
    t.append({'target': 'batch on threads bit for bit the serial batch (every row)',
              'value': float(sum(p['identical'] for p in par)),
              'holds': all(p['identical'] for p in par),
              'failing': [f"{p['robot']} {p['algo']}" for p in par if not p['identical']]})
    for algo in ('inverse_dynamics', 'forward_dynamics'):
        # Judged on the worse of the whole fit and the n >= 50 tail: the fixed per-call
        # cost flattens the whole fit, the tail shows the asymptotic slope.
        d = res['scaling'][algo]
        e = max(x for x in (d['exponent'], d.get('exponent_n_ge_50')) if x is not None)
        t.append({'target': f'{algo} scaling exponent (whole fit and n >= 50) '
                            f'<= {TARGET_EXPONENT}', 'value': e,
                  'holds': e <= TARGET_EXPONENT})
    w = res['start']['warm_first_result_s']
    t.append({'target': f'warm start to first result < {TARGET_WARM_S:g} s', 'value': w,
              'holds': w < TARGET_WARM_S})
    return t


def _f(x, fmt='9.2f'):
    return f'{"n/a":>9}' if x is None else format(x, fmt)


def print_report(res):
    """Print every table."""
    print(f"\nSingle call, median µs ({res['meta']['calls']} calls; MR time-budgeted; "
          'agreement = max scaled error vs each peer)')
    hdr = (f"{'robot':<14} {'algorithm':<28} {'ours':>9} {'pin':>9} {'ours/pin':>9} "
           f"{'MR':>9} {'ours/MR':>9} {'err pin':>8} {'err MR':>8}")
    print(hdr)
    print('-' * len(hdr))
    for r in res['single']:
        emr = r.get('err_mr')
        print(f"{r['robot']:<14} {r['algo']:<28} {r['ours_us']:9.2f} {r['pin_us']:9.2f} "
              f"{r['ratio_pin']:9.2f} {_f(r['mr_us'])} {_f(r['ratio_mr'], '9.4f')} "
              f"{r['err_pin']:8.1e} {'n/a' if emr is None else format(emr, '8.1e'):>8}")
    print(f"\nBatch of {res['meta']['batch']}: µs per configuration (ours batched on one "
          'thread vs a Python loop over pin)')
    hdr = (f"{'robot':<14} {'algorithm':<28} {'ours':>9} {'pin loop':>9} {'ours/pin':>9} "
           f"{'ours out=':>9} {'ratio':>9}")
    print(hdr)
    print('-' * len(hdr))
    for b in res['batch']:
        print(f"{b['robot']:<14} {b['algo']:<28} {b['ours_us_per_config']:9.2f} "
              f"{b['pin_loop_us_per_config']:9.2f} {b['ratio_pin']:9.2f} "
              f"{_f(b['ours_out_us_per_config'])} {_f(b['ratio_pin_out'])}")
    print('("ours": a new result array per call; "ours out=": written into one reused array, '
          'where the call takes out=)')
    par = res['parallel']
    if par:
        print(f"\nParallel batch of {res['meta']['batch']} on {par[0]['threads']} threads "
              f"({res['meta']['cores']} cores available): µs per configuration, best of "
              f"{res['meta']['parallel_reps']}; load average before the run: "
              f"{res['meta']['load_before']}, after: {res['meta']['load_after']}")
        hdr = (f"{'robot':<14} {'algorithm':<28} {'1 thread':>9} {'threads':>9} "
               f"{'speed-up':>9} {'cores':>6} {'out= 1':>9} {'out= N':>9} {'speed-up':>9} "
               f"{'identical':>9}")
        print(hdr)
        print('-' * len(hdr))
        for p in par:
            print(f"{p['robot']:<14} {p['algo']:<28} {p['serial_us_per_config']:9.3f} "
                  f"{p['threads_us_per_config']:9.3f} {p['speedup']:9.2f} "
                  f"{p['cores_used']:6.2f} {_f(p['serial_out_us_per_config'], '9.3f')} "
                  f"{_f(p['threads_out_us_per_config'], '9.3f')} "
                  f"{_f(p['speedup_out'])} {'yes' if p['identical'] else 'NO':>9}")
        print('(cores: CPU time / wall time of the fastest threaded run, the cores it got on '
              'this shared machine; out=: into one reused array, where the call takes out=; '
              'identical: the threaded result equals the serial one bit for bit)')
    print('\nScaling on random chains (µs; exponent of a log-log least-squares fit)')
    sc = res['scaling']
    ns = sc[SCALING_ALGOS[0]]['n']
    print(f"{'algorithm':<18} " + ' '.join(f'{n:>8d}' for n in ns)
          + f" {'exp':>6} {'exp n>=50':>9}")
    for k in SCALING_ALGOS:
        tail = sc[k]['exponent_n_ge_50']
        print(f'{k:<18} ' + ' '.join(f'{t:8.2f}' for t in sc[k]['us'])
              + f" {sc[k]['exponent']:6.2f} {_f(tail, '9.2f')}")
    st = res['start']
    print(f"\nStart-up ({st['what']}): warm {st['warm_first_result_s']:.2f} s (import "
          f"{st['warm_import_s']:.2f} s); cold (empty NUMBA_CACHE_DIR) "
          + ('skipped' if st['cold_skipped'] else
             f"{st['cold_first_result_s']:.2f} s (import {st['cold_import_s']:.2f} s)"))
    if res['mujoco'] is not None:
        print_mujoco(res['mujoco'])
    print(f"\nAgreement with the peers to {res['meta']['tol']:g}: "
          + ('all rows agree' if res['all_agree'] else 'DISAGREEMENT in ' + ', '.join(
              f"{r['robot']} {r['algo']}" for r in res['single'] if not r['agree'])))
    print('\nTargets')
    for t in res['targets']:
        print(f"  [{'ok' if t['holds'] else 'NO'}] {t['target']}: {t['value']:.3g}"
              + (f" (failing: {', '.join(t['failing'])})" if t.get('failing') else ''))
    print(f"\nNote: {res['meta']['note']}; the timing loop itself costs "
          f"{res['meta']['loop_overhead_us']:.3f} µs per call (included in every time)")


def print_mujoco(mj):
    """Print the rows beside MuJoCo (steps per second, single calls, ratios ours/MuJoCo)."""
    print(f"\nBeside MuJoCo {mj['version']}: simulation at 1 ms, steps per second (best of "
          f"{mj['reps']}; ratio = our time / MuJoCo's)")
    hdr = (f"{'robot':<12} {'case':<26} {'ours':>9} {'MuJoCo':>9} {'ours/MuJoCo':>11} "
           f"{'CPU µs/step':>14} {'CPU ratio':>9} {'max|dq|':>8}")
    print(hdr)
    print('-' * len(hdr))
    for r in mj['sim']:
        dq = 'n/a' if r['max_dq'] is None else format(r['max_dq'], '8.1e')
        print(f"{r['robot']:<12} {r['case']:<26} {r['ours_steps_per_s']:9.0f} "
              f"{r['mujoco_steps_per_s']:9.0f} {r['ratio']:11.2f} "
              f"{r['ours_cpu_us_per_step']:6.1f} / {r['mujoco_cpu_us_per_step']:5.1f} "
              f"{r['ratio_cpu']:9.2f} {dq:>8}")
    print('(CPU µs/step: ours / MuJoCo, best CPU time, steadier on a shared machine; CPU '
          'ratio: of those; rk4 / euler: explicit RK4 / semi-implicit Euler in both, the '
          'ideal rigid-body arm, max|dq| after the run: the agreement; best: '
          "ours semi_implicit_euler vs MuJoCo implicitfast (both order 1), "
          "max|dq|: the two schemes apart after the run; solo12: each engine's own contact "
          'model, speed only: '
          + ', '.join(f"base z {r['ours_base_z']:.3f} / {r['mujoco_base_z']:.3f} m, "
                      f"{r['ours_contacts']} / {r['mujoco_contacts']} contacts"
                      for r in mj['sim'] if 'ours_base_z' in r) + ')')
    print('\nSingle call beside MuJoCo, median µs')
    hdr = (f"{'robot':<12} {'algorithm':<26} {'ours':>9} {'MuJoCo':>9} {'ours/MuJoCo':>11} "
           f"{'err':>8}")
    print(hdr)
    print('-' * len(hdr))
    for r in mj['single']:
        print(f"{r['robot']:<12} {r['algo']:<26} {r['ours_us']:9.2f} {r['mujoco_us']:9.2f} "
              f"{r['ratio']:11.2f} {r['err']:8.1e}")
    print('(MuJoCo: the state copied into MjData, then mj_inverse / mj_forward: the whole '
          'pipeline, contacts off)')


def plot(res, out_dir):
    """Write single.png, batch.png and scaling.png; return their paths."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    robots = list(dict.fromkeys(r['robot'] for r in res['single']))
    for kind, rows, cols in (
            ('single', res['single'], (('ours_us', 'ours'), ('pin_us', 'pin'),
                                       ('mr_us', 'Modern Robotics'))),
            ('batch', res['batch'], (('ours_us_per_config', 'ours (batched)'),
                                     ('ours_out_us_per_config', 'ours (batched, out=)'),
                                     ('pin_loop_us_per_config', 'pin (Python loop)')))):
        fig, axes = plt.subplots(len(robots), 1, figsize=(12, 3.2 * len(robots)), squeeze=False)
        for ax, robot in zip(axes[:, 0], robots):
            rr = [r for r in rows if r['robot'] == robot]
            x = np.arange(len(rr))
            w = 0.8 / len(cols)
            for k, (key, label) in enumerate(cols):
                vals = [np.nan if r.get(key) is None else r[key] for r in rr]
                ax.bar(x + (k - (len(cols) - 1) / 2) * w, vals, w, label=label)
            ax.set_yscale('log')
            ax.set_xticks(x, [r['algo'] for r in rr], rotation=30, ha='right', fontsize=7)
            ax.set_ylabel('µs per call' if kind == 'single' else 'µs per config')
            ax.set_title(f'{robot}: ' + ('single call' if kind == 'single' else
                                         f"batch of {rr[0]['batch']}"), fontsize=9)
            ax.legend(fontsize=7)
        fig.tight_layout()
        p = os.path.join(out_dir, f'{kind}.png')
        fig.savefig(p, dpi=90)
        plt.close(fig)
        paths.append(p)
    fig, ax = plt.subplots(figsize=(6, 4.5))
    for k in SCALING_ALGOS:
        d = res['scaling'][k]
        ax.loglog(d['n'], d['us'], 'o-', label=f"{k} (n^{d['exponent']:.2f})")
    ax.set_xlabel('bodies in a random chain')
    ax.set_ylabel('µs per call')
    ax.legend(fontsize=8)
    ax.grid(True, which='both', alpha=0.3)
    fig.tight_layout()
    p = os.path.join(out_dir, 'scaling.png')
    fig.savefig(p, dpi=90)
    plt.close(fig)
    paths.append(p)
    return paths


def _versions():
    import numba
    pin = _peers.import_pin()
    mr = _peers.import_mr()
    mj = _mujoco.import_mujoco()
    return {'python': platform.python_version(), 'numpy': np.__version__,
            'numba': numba.__version__, 'pinocchio': pin.__version__,
            'modern_robotics': None if mr is None else getattr(mr, '__version__', 'installed'),
            'mujoco': None if mj is None else mj.__version__,
            'liemb_ros': lm.__version__}


def main(argv=None):
    """Run every suite, print the tables, write the charts and optionally the JSON."""
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument('--smoke', action='store_true', help='a few hundred calls, two robots')
    ap.add_argument('--json', metavar='PATH', help="write every number as JSON ('-': stdout)")
    ap.add_argument('--out', default=os.path.join(ROOT, 'out', 'bench'), help='chart folder')
    ap.add_argument('--robots', nargs='+', choices=list(_peers.ROBOTS))
    ap.add_argument('--calls', type=int)
    ap.add_argument('--batch', type=int)
    ap.add_argument('--tol', type=float, default=1e-8, help='agreement tolerance')
    ap.add_argument('--no-cold', action='store_true', help='skip the cold-cache start-up')
    ap.add_argument('--seed', type=int, default=6)
    ap.add_argument('--threads', type=int, help='threads of the parallel batch rows '
                    '(default: every core available)')
    args = ap.parse_args(argv)
    cfg = dict(SMOKE if args.smoke else FULL)
    for key in ('robots', 'calls', 'batch'):
        if getattr(args, key) is not None:
            cfg[key] = getattr(args, key)
    cfg['cold'] = cfg['cold'] and not args.no_cold
    cores = len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count()
    cfg['threads'] = args.threads or max(2, cores)
    quiet = args.json == '-'

    def log(msg):
        print(msg, file=sys.stderr if quiet else sys.stdout, flush=True)

    t0 = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    algos = _peers.algorithms()
    res = {'meta': {'date': datetime.datetime.now().isoformat(timespec='seconds'),
                    'machine': f'{platform.machine()}, {os.cpu_count()} cores',
                    'versions': _versions(), 'smoke': args.smoke, 'calls': cfg['calls'],
                    'chunk': cfg['chunk'], 'batch': cfg['batch'], 'tol': args.tol,
                    'robots': cfg['robots'], 'cores': cores,
                    'parallel_reps': cfg['parallel_reps'],
                    'load_before': ' '.join(f'{x:.2f}' for x in os.getloadavg()),
                    'note': 'shared machine: other processes run beside this one, so times '
                            'are noisy; ours and pin are interleaved chunk by chunk so that '
                            'their ratio is steadier than either time'},
           'single': [], 'batch': [], 'parallel': []}
    log('single call and batch')
    for name in cfg['robots']:
        s, b, p = bench_robot(name, algos, cfg, args.tol, rng, log)
        res['single'] += s
        res['batch'] += b
        res['parallel'] += p
    log('beside MuJoCo')
    res['mujoco'] = bench_mujoco(cfg, args.tol, rng, log)
    if res['mujoco'] is not None:
        res['mujoco'].update(version=_mujoco.import_mujoco().__version__, reps=cfg['mj_reps'],
                             robots=cfg['mj_robots'])
    log('scaling')
    res['scaling'] = bench_scaling(cfg, rng, log)
    log('start-up')
    res['start'] = bench_start(cfg, log)
    res['all_agree'] = all(r['agree'] for r in res['single'])
    res['targets'] = targets(res)
    res['charts'] = plot(res, args.out)
    res['meta']['loop_overhead_us'] = time_interleaved([[_noop]], cfg['calls'], cfg['chunk'])[0]
    res['meta']['wall_s'] = time.perf_counter() - t0
    res['meta']['load_after'] = ' '.join(f'{x:.2f}' for x in os.getloadavg())
    if quiet:
        json.dump(res, sys.stdout, indent=1)
    else:
        print_report(res)
        print(f"\ncharts: {', '.join(res['charts'])}; {res['meta']['wall_s']:.0f} s")
        if args.json:
            with open(args.json, 'w') as fh:
                json.dump(res, fh, indent=1)
    mj_agree = res['mujoco'] is None or res['mujoco']['all_agree']
    return 0 if (res['all_agree'] and mj_agree
                 and all(p['identical'] for p in res['parallel'])) else 1


if __name__ == '__main__':
    sys.exit(main())
