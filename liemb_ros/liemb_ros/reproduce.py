"""
Reproduce the Lie group integration examples of seeds 000, 001 and 003.

``liemb reproduce NAME --update se3|so3r3 --dt H [--t-end T] [--json] [--plot FILE.png]``
runs one example with MK-RK4 (index-1 equations, no stabilisation, as in the papers) and
prints the maximum violation of each constraint (for free bodies: the drift from the
analytic solution), the maximum energy drift and the run time.  ``--list`` lists the
examples with their paper sections; parameters the papers do not give are documented
choices (see docs/examples/).
"""
import json
import math
import sys
import time

import numpy as np

from .integrators import RK4, Stepper
from .mbs import Body, System

RHO = 2700.0            # aluminium, implied by the papers' masses (digest §5)
G = (0.0, 0.0, -9.81)


def _box(a, b, c):
    m = RHO * a * b * c
    return m, m / 12.0 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])


def _pose(r, R=None):
    C = np.eye(4)
    C[:3, 3] = r
    if R is not None:
        C[:3, :3] = R
    return C


def _twist(update, C, w, v_world):
    """Velocity of a body with frame pose C, omega (body), frame-origin velocity (world)."""
    v = C[:3, :3].T @ v_world if update == 'se3' else v_world
    return np.concatenate([w, v])


class Example:
    """A built example: system, initial state, measures ``{name: f(t, y) -> float}``."""

    def __init__(self, system, y0, measures, energy='total'):
        self.system = system
        self.y0 = y0
        self.measures = measures
        self.energy = energy

    def energy_of(self, y):
        """Return the total (or kinetic, for force-free examples) energy of ``y``."""
        s = self.system
        return s.kinetic_energy(y) if self.energy == 'kinetic' else s.energy(y)


def _joint_measures(s):
    out = {}
    for k, (name, _, parts) in enumerate(s.joints):
        has_ori = any(not p for _, _, p in parts)
        out[f'{name} position [m]'] = (lambda t, y, k=k: s.joint_violations(y)[k][1])
        if has_ori:
            out[f'{name} orientation'] = (lambda t, y, k=k: s.joint_violations(y)[k][2])
    return out


# ----------------------------------------------------------------------------- examples
def free_box(update, offset, screw):
    """Seed 000 §5.1/5.2: free 0.8x0.4x0.1 m box, frame at the COM or at the end face."""
    m, theta = _box(0.8, 0.4, 0.1)
    c = np.array([0.4, 0.0, 0.0]) if offset else np.zeros(3)
    s = System()
    s.add_body(Body('box', m, theta, com=c, update=update))
    if screw and not offset:
        w, vcom = np.array([0.0, 0.0, 2 * math.pi]), np.array([10.0, 0.0, 0.0])
    elif screw:
        w, vcom = np.array([10 * math.pi, 2 * math.pi, 0.0]), np.array([10.0, 0.0, 0.0])
    else:
        w, vcom = np.array([10 * math.pi, 2 * math.pi, 0.0]), np.zeros(3)
    v0 = vcom + np.cross(w, -c)              # velocity of the frame origin (R = I)
    y0 = s.state([np.eye(4)], [_twist(update, np.eye(4), w, v0)])

    def com_error(t, y):
        C = s.split(y)[0][0]
        return float(np.linalg.norm(C[:3, :3] @ c + C[:3, 3] - (c + vcom * t)))
    return Example(s, y0, {'COM drift [m]': com_error}, energy='kinetic')


def heavy_top_spring(update):
    """Seed 000 §5.3: box 0.1x0.2x0.4 on a spherical joint, spring c = 1e4 N/m, gravity."""
    s = System(gravity=G)
    b = s.add_body(Body('top', 21.6, np.diag([0.36, 0.306, 0.09]), update=update))
    r0 = np.array([-0.5, 0.0, 0.0])
    s.spherical(b, r0, None, np.zeros(3), name='pivot')
    s.spring(b, np.zeros(3), None, np.array([1.0, 0.0, 0.5]), 1e4)
    C = _pose([0.5, 0, 0])
    w = np.array([0.0, 0.0, 0.5])
    y0 = s.state([C], [_twist(update, C, w, np.cross(w, -r0))])
    return Example(s, y0, _joint_measures(s))


def heavy_top_001(update):
    """Seed 001 §5.1: the same box, COM at r0 = (0.5, 0, 0) from the pivot, no gravity."""
    s = System()
    b = s.add_body(Body('top', 21.6, np.diag([0.36, 0.306, 0.09]), update=update))
    r0 = np.array([0.5, 0.0, 0.0])
    s.spherical(b, -r0, None, np.zeros(3), name='pivot')
    C = _pose(r0)
    w = np.array([0.0, 20 * math.pi, 10 * math.pi])
    y0 = s.state([C], [_twist(update, C, w, np.cross(w, r0))])
    return Example(s, y0, _joint_measures(s), energy='kinetic')


def _links(s, update, n):
    m, theta = _box(0.2, 0.1, 0.05)
    return [s.add_body(Body(f'link{i + 1}', m, theta, update=update)) for i in range(n)]


def double_pendulum(update):
    """Seed 000 §5.4 / 001 §5.2: two 0.2x0.1x0.05 aluminium boxes, spherical joints."""
    s = System(gravity=G)
    b1, b2 = _links(s, update, 2)
    h = np.array([0.1, 0.0, 0.0])
    s.spherical(b1, -h, None, np.zeros(3), name='joint1')
    s.spherical(b1, h, b2, -h, name='joint2')
    C1, C2 = _pose([0.1, 0, 0]), _pose([0.3, 0, 0])
    w1, w2 = np.array([10.0, 0, 0]), np.array([10, 10, 20]) * math.pi
    v1 = np.cross(w1, h)
    v2 = v1 + np.cross(w1, h) + np.cross(w2, h)
    y0 = s.state([C1, C2], [_twist(update, C1, w1, v1), _twist(update, C2, w2, v2)])
    return Example(s, y0, _joint_measures(s))


def floating_pair(update):
    """Seed 001 §5.3: the two links joined by one spherical joint, free, no gravity."""
    s = System()
    b1, b2 = _links(s, update, 2)
    h = np.array([0.1, 0.0, 0.0])
    s.spherical(b1, h, b2, -h, name='joint1')
    C1, C2 = _pose([0.1, 0, 0]), _pose([0.3, 0, 0])
    w1, w2 = np.array([0, 0, -10.0]), np.array([1.0, -1.0, 2 * math.pi])
    v2 = np.cross(w1, h) + np.cross(w2, h)
    y0 = s.state([C1, C2], [_twist(update, C1, w1, np.zeros(3)), _twist(update, C2, w2, v2)])
    return Example(s, y0, _joint_measures(s), energy='kinetic')


def three_bar(update):
    """Seed 001 §5.4 (own geometry): ground-link1-link2-ground loop of spherical joints."""
    s = System(gravity=G)
    m, th = _box(0.2, 0.1, 0.05)
    b1 = s.add_body(Body('link1', m, th, update=update))
    b2 = s.add_body(Body('link2', m, np.diag(th.diagonal()[[1, 0, 2]]), update=update))
    s.spherical(b1, [-0.1, 0, 0], None, np.zeros(3), name='joint1')
    s.spherical(b1, [0.1, 0, 0], b2, [0, -0.1, 0], name='joint2')
    s.spherical(b2, [0, 0.1, 0], None, [0.2, 0.2, 0], name='joint3')
    C1, C2 = _pose([0.1, 0, 0]), _pose([0.2, 0.1, 0])
    w1 = np.array([3.0, 0.0, 5.0])
    y = s.state([C1, C2], [_twist(update, C1, w1, np.cross(w1, [0.1, 0, 0])), np.zeros(6)])
    return Example(s, s.project_velocities(y), _joint_measures(s))


def four_bar(update):
    """Seed 000 §5.5 (own geometry, L0 = 0.5 m): crank, coupler, rocker; joint 4 spherical."""
    s = System()
    pts = ([0, 0, 0], [0, 0.2, 0], [0.5, 0.4, 0], [0.5, 0, 0])
    A, B, Cp, D = (np.array(p, float) for p in pts)
    bodies, coms = [], []
    for name, p, q in (('crank', A, B), ('coupler', B, Cp), ('rocker', D, Cp)):
        L = np.linalg.norm(q - p)
        u = (q - p) / L
        m = RHO * 0.02 * 0.02 * L
        th = m * L * L / 12 * (np.eye(3) - np.outer(u, u)) + m * 0.02 ** 2 / 6 * np.eye(3)
        bodies.append(s.add_body(Body(name, m, th, update=update)))
        coms.append((p + q) / 2)
    z = np.array([0.0, 0.0, 1.0])
    c1, c2, c3 = coms
    s.revolute(bodies[0], A - c1, z, None, A, z, name='joint1')
    s.revolute(bodies[0], B - c1, z, bodies[1], B - c2, z, name='joint2')
    s.revolute(bodies[2], D - c3, z, None, D, z, name='joint3')
    s.spherical(bodies[1], Cp - c2, bodies[2], Cp - c3, name='joint4')
    w0 = 10 * math.pi
    vB = np.cross(w0 * z, B - A)
    # v_C = vB + w2 z x (C - B) = w3 z x (C - D): two equations for (w2, w3)
    M = np.column_stack([np.cross(z, Cp - B)[:2], -np.cross(z, Cp - D)[:2]])
    w2, w3 = np.linalg.solve(M, -vB[:2])
    Cs = [_pose(c) for c in coms]
    vel = [_twist(update, Cs[0], w0 * z, np.cross(w0 * z, c1 - A)),
           _twist(update, Cs[1], w2 * z, vB + np.cross(w2 * z, c2 - B)),
           _twist(update, Cs[2], w3 * z, np.cross(w3 * z, c3 - D))]
    return Example(s, s.state(Cs, vel), _joint_measures(s))


def rp_mechanism(update):
    """Seed 000 §5.6 (own geometry, given masses): ring on a revolute, slider, spring."""
    s = System(gravity=G)
    z = np.array([0.0, 0.0, 1.0])
    r1, r2 = np.array([0.1, 0.0, 0.0]), np.array([0.25, 0.0, 0.1])
    b1 = s.add_body(Body('ring', 6.82825, np.diag([0.0507567, 0.0507567, 0.0986682]),
                         update=update))
    b2 = s.add_body(Body('slider', 0.864, np.diag([0.0002304, 0.0029952, 0.0029952]),
                         update=update))
    x = np.array([1.0, 0, 0])
    s.revolute(b1, -r1, z, None, np.zeros(3), z, name='joint1')
    s.prismatic(b2, np.zeros(3), z, x, b1, r2 - r1, z, x, name='joint2')
    s.spring(b1, r2 - r1 - 0.1 * z, b2, np.zeros(3), 1e4, rest_length=0.1)
    w = 20 * math.pi * z
    C1, C2 = _pose(r1), _pose(r2)
    y0 = s.state([C1, C2], [_twist(update, C1, w, np.cross(w, r1)),
                            _twist(update, C2, w, np.cross(w, r2) + z)])
    return Example(s, y0, _joint_measures(s))


def cardan(update):
    """Seed 000 §5.7 (own geometry): shaft on a revolute (frame on the axis), Hooke joint."""
    s = System()
    y_ax = np.array([0.0, 1.0, 0.0])
    m1, th1 = _box(0.04, 0.2, 0.04)
    b1 = s.add_body(Body('shaft1', m1, th1, update=update))
    a = math.radians(30)
    R2 = np.array([[math.cos(a), -math.sin(a), 0], [math.sin(a), math.cos(a), 0], [0, 0, 1]])
    b2 = s.add_body(Body('shaft2', m1, th1, update=update))
    hook = np.array([0.0, 0.2, 0.0])
    c2 = hook + R2 @ [0, 0.1, 0]
    s.revolute(b1, [0, -0.1, 0], y_ax, None, [0, 0, 0], y_ax, name='joint1')
    s.universal(b1, [0, 0.1, 0], [0, 0, 1], b2, [0, -0.1, 0], [1, 0, 0], name='joint2')
    C1, C2 = _pose([0, 0.1, 0]), _pose(c2, R2)
    w1, w2 = np.array([0, math.pi, 0]), np.array([math.pi, math.pi, 0])
    y = s.state([C1, C2], [_twist(update, C1, w1, np.zeros(3)),
                           _twist(update, C2, R2.T @ w2,
                                  np.cross(w1, hook) + np.cross(w2, c2 - hook))])
    return Example(s, s.project_velocities(y), _joint_measures(s), energy='kinetic')


FLIP_J = np.array([5.2988, 1.1775, 4.3568])


def flip(update):
    """Seed 003 §6: free box J = diag(5.2988, 1.1775, 4.3568), Omega0 = (0.01, 0, 100)."""
    s = System()
    s.add_body(Body('box', 1.0, np.diag(FLIP_J), update=update))
    w0 = np.array([0.01, 0.0, 100.0])
    y0 = s.state([np.eye(4)], [np.concatenate([w0, np.zeros(3)])])
    L0 = FLIP_J * w0

    def momentum(t, y):
        C, V = s.split(y)
        return float(np.linalg.norm(C[0, :3, :3] @ (FLIP_J * V[0, :3]) - L0)
                     / np.linalg.norm(L0))

    def det_error(t, y):
        return abs(float(np.linalg.det(s.split(y)[0][0, :3, :3])) - 1.0)
    return Example(s, y0, {'rel. angular momentum drift': momentum, '|det R - 1|': det_error},
                   energy='kinetic')


def flip_interval():
    """Analytic time between flips ``2 K(k) / p`` (Landau-Lifshitz; digest §7.2)."""
    from scipy.special import ellipk
    w0 = np.array([0.01, 0.0, 100.0])
    T2 = float(FLIP_J @ w0 ** 2)
    L2 = float(np.sum((FLIP_J * w0) ** 2))
    C, B, A = FLIP_J[0], FLIP_J[2], FLIP_J[1]
    k2 = (B - A) * (C * T2 - L2) / ((C - B) * (L2 - A * T2))
    p = math.sqrt((C - B) * (L2 - A * T2) / (A * B * C))
    return 2.0 * ellipk(k2) / p


EXAMPLES = {
    'box_com_rotation': (lambda u: free_box(u, False, False), '000 §5.1 A', 10.0, 1e-3,
                         'COM stays at 0 for both updates; T0 = 696.399 J'),
    'box_com_screw': (lambda u: free_box(u, False, True), '000 §5.1 B', 10.0, 1e-3,
                      'SO(3)xR^3 exact; SE(3) 4th order'),
    'box_offset_rotation': (lambda u: free_box(u, True, False), '000 §5.2 A', 10.0, 1e-3,
                            'SE(3) exact for any step; SO(3)xR^3 4th order'),
    'box_offset_screw': (lambda u: free_box(u, True, True), '000 §5.2 B', 10.0, 1e-3,
                         'both 4th order, SO(3)xR^3 more accurate'),
    'heavy_top_spring': (heavy_top_spring, '000 §5.3', 8.0, 1e-3,
                         'SE(3) pivot at round-off; SO(3)xR^3 drifts; energy better with SE(3)'),
    'double_pendulum': (double_pendulum, '000 §5.4, 001 §5.2', 5.0, 1e-3,
                        'joint 1 exact with SE(3); joint 2 similar for both'),
    'four_bar': (four_bar, '000 §5.5', 2.0, 1e-3,
                 'ground revolutes exact with SE(3); orientation exact for both'),
    'rp_mechanism': (rp_mechanism, '000 §5.6', 2.0, 1e-3,
                     'revolute and prismatic exact with SE(3) even for large steps'),
    'cardan': (cardan, '000 §5.7', 5.0, 1e-3,
               'joint 1 exact for both; hook centre exact with SE(3); hook angle same order'),
    'heavy_top': (heavy_top_001, '001 §5.1', 10.0, 1e-3,
                  'SE(3) pivot at round-off; SO(3)xR^3 ~1e-5 m; T0 = 13972.4 J'),
    'floating_pair': (floating_pair, '001 §5.3', 10.0, 1e-3,
                      'both updates similar (~1e-7 m)'),
    'three_bar': (three_bar, '001 §5.4', 10.0, 1e-3,
                  'ground joints exact with SE(3); joint 2 similar for both'),
    'flip': (flip, '003 §6', 1.0, 1.0 / 1280,
             'det R - 1 < 1e-13; 4th order; flips every 2K/p = 0.29933 s'),
}


def build(name, update):
    """Return the :class:`Example` ``name`` with every body on ``update``."""
    if name not in EXAMPLES:
        raise ValueError(f'unknown example {name!r}; try --list')
    return EXAMPLES[name][0](update)


def run_example(name, update='se3', dt=None, t_end=None, every=1, progress=False):
    """
    Simulate an example; return a dict of results and the sampled history.

    Keys: ``max_violation`` {measure: max}, ``energy0``, ``max_energy_drift``,
    ``run_time_s``, ``steps``, ``flips`` (times where the tracked body axis z crosses the
    horizontal plane, flip example), ``history`` (t, measures, energy drift).
    """
    _, section, t_def, dt_def, claim = EXAMPLES[name]
    ex = build(name, update)
    dt = dt_def if dt is None else float(dt)
    t_end = t_def if t_end is None else float(t_end)
    s = ex.system
    stepper = Stepper(s.space, s.rhs, RK4)
    n = int(round(t_end / dt))
    y = ex.y0
    E0 = ex.energy_of(y)
    worst = {k: 0.0 for k in ex.measures}
    drift = 0.0
    hist_t, hist_m, hist_e = [], [], []
    flips = []
    prev_pz = s.split(y)[0][0, 2, 2]
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=n, mininterval=1.0, delay=1.0, file=sys.stderr, leave=False)
    t0 = time.perf_counter()
    for k in range(n):
        y = stepper.step(k * dt, y, dt)
        t = (k + 1) * dt
        vals = {key: f(t, y) for key, f in ex.measures.items()}
        for key, v in vals.items():
            worst[key] = max(worst[key], v)
        e = abs(ex.energy_of(y) - E0)
        drift = max(drift, e)
        pz = s.split(y)[0][0, 2, 2]
        if name == 'flip' and pz * prev_pz < 0:
            flips.append(t - dt * pz / (pz - prev_pz))
        prev_pz = pz
        if (k + 1) % every == 0:
            hist_t.append(t)
            hist_m.append([vals[key] for key in ex.measures])
            hist_e.append(e)
        if bar is not None:
            bar.update(1)
    run_time = time.perf_counter() - t0
    if bar is not None:
        bar.close()
    return {'example': name, 'paper': section, 'claim': claim, 'update': update, 'dt': dt,
            't_end': t_end, 'steps': n, 'max_violation': worst, 'energy0': E0,
            'max_energy_drift': drift, 'run_time_s': run_time, 'flips': flips,
            'history': (np.array(hist_t), np.array(hist_m).reshape(len(hist_t), -1),
                        np.array(hist_e), list(ex.measures))}


def plot(res, path):
    """Save violation and energy drift over time (log scale) to ``path`` (PNG)."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    t, m, e, names = res['history']
    fig, ax = plt.subplots(1, 2, figsize=(8, 3), dpi=80)
    for k, name in enumerate(names):
        ax[0].semilogy(t, np.maximum(m[:, k], 1e-17), label=name, lw=0.8)
    ax[0].set_xlabel('t [s]')
    ax[0].set_title('constraint violation / drift', fontsize=9)
    ax[0].legend(fontsize=6)
    ax[1].semilogy(t, np.maximum(e, 1e-17), lw=0.8)
    ax[1].set_xlabel('t [s]')
    ax[1].set_title('|energy - E0| [J]', fontsize=9)
    fig.suptitle(f"{res['example']} ({res['paper']}), {res['update']}, dt={res['dt']:g}",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def add_arguments(parser):
    """Add the ``reproduce`` options to an argparse parser."""
    parser.add_argument('name', nargs='?', help='example name (see --list)')
    parser.add_argument('--list', action='store_true', help='list the examples')
    parser.add_argument('--update', choices=('se3', 'so3r3'), default='se3',
                        help='configuration update group of every body')
    parser.add_argument('--dt', type=float, default=None, help='step size [s]')
    parser.add_argument('--t-end', type=float, default=None, help='duration [s]')
    parser.add_argument('--json', action='store_true', help='emit one JSON object')
    parser.add_argument('--plot', metavar='FILE.png', help='save violation/energy plot')


def run(args):
    """Run ``liemb reproduce`` with parsed ``args``; return the exit status."""
    if args.list or not args.name:
        for name, (_, section, t_end, dt, claim) in EXAMPLES.items():
            print(f'{name:<20} {section:<20} t_end={t_end:g} s dt={dt:g} s  {claim}')
        return 0
    if args.name not in EXAMPLES:
        print(f'liemb reproduce: unknown example {args.name!r} (see --list)', file=sys.stderr)
        return 2
    n = (args.t_end or EXAMPLES[args.name][2]) / (args.dt or EXAMPLES[args.name][3])
    res = run_example(args.name, args.update, args.dt, args.t_end,
                      every=max(1, int(n) // 2000), progress=not args.json)
    if args.plot:
        plot(res, args.plot)
    out = {k: v for k, v in res.items() if k != 'history'}
    if args.name == 'flip':
        out['flip_interval_analytic_s'] = flip_interval()
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"{res['example']} ({res['paper']}): update {res['update']}, dt = {res['dt']:g} s, "
          f"t_end = {res['t_end']:g} s, {res['steps']} steps")
    print(f"  paper: {res['claim']}")
    for k, v in res['max_violation'].items():
        print(f'  max {k:<32} {v:.3e}')
    print(f"  energy E0 = {res['energy0']:.6g} J, max |E - E0| = {res['max_energy_drift']:.3e} J")
    if res['flips']:
        print('  flips at t = ' + ', '.join(f'{t:.5f}' for t in res['flips'])
              + f' s (analytic spacing {flip_interval():.5f} s)')
    print(f"  run time {res['run_time_s']:.2f} s")
    return 0
