"""
Peers of liemb_ros for ``bench/run.py``: the same robots and random states in each library.

Pinocchio (``pin``) loads the same URDF (with ``JointModelFreeFlyer`` for a floating base);
Modern Robotics (``modern_robotics``, pure Python) can only express fixed-base serial chains,
so its ``Slist``/``Mlist``/``Glist`` are built from our :class:`~liemb_ros.Model` (bodies on
the support path of the tip; other bodies, e.g. the Panda fingers, are locked and lumped into
their parent).  Each algorithm is an :class:`Algo`: a maker of our call, of each peer's call
and a map of each peer's result into our conventions (angular-first twists, moment-first
wrenches, our coordinate order; Pinocchio's ``v = P qd``, conftest.SWAP on 6-vectors).
"""
from functools import partial
import os
import sys

import numpy as np

import liemb_ros as lm
from liemb_ros.core.model.model import pose_inverse, transform_inertia
from liemb_ros.core.model.synthetic import random_pose

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'liemb_ros', 'test'))

from conftest import erd_robots_dir, SWAP  # noqa: E402

# name: (path inside example-robot-data's robots/, floating base, tip link)
ROBOTS = {
    'ur5': ('ur_description/urdf/ur5_robot.urdf', False, 'tool0'),
    'panda': ('panda_description/urdf/panda.urdf', False, 'panda_hand'),
    'solo12': ('solo_description/robots/solo12.urdf', True, 'FL_FOOT'),
    'talos_reduced': ('talos_data/robots/talos_reduced.urdf', True, 'left_sole_link'),
}
PANDA_FINGER = 0.02  # locked finger opening [m], so the Panda arm is a 7-joint serial chain
REPS = ('body', 'spatial', 'hybrid', 'mixed')


def import_pin():
    """Return the ``pinocchio`` module (a test dependency)."""
    import pinocchio
    return pinocchio


def import_mr():
    """Return the ``modern_robotics`` module, or None when it is not installed."""
    try:
        import modern_robotics
    except ImportError:
        return None
    return modern_robotics


class Robot:
    """One robot in our library and in Pinocchio, with the map between their coordinates."""

    def __init__(self, name):
        pin = import_pin()
        rel, floating, tip = ROBOTS[name]
        self.name, self.tip, self.floating = name, tip, floating
        self.path = os.path.join(erd_robots_dir(), rel)
        self.model = lm.load_urdf(self.path, floating_base=floating)
        self.pm = (pin.buildModelFromUrdf(self.path, pin.JointModelFreeFlyer()) if floating
                   else pin.buildModelFromUrdf(self.path))
        self.data = self.pm.createData()
        m = self.model
        if self.pm.nv != m.nv:
            raise RuntimeError(f'{name}: Pinocchio nv {self.pm.nv} != ours {m.nv}')
        self.P = np.zeros((m.nv, m.nv))  # v_pin = P qd_ours, tau_pin = P tau_ours
        self.Pq = np.zeros((self.pm.nq, m.nq))
        off = 6 if floating else 0
        if floating:
            self.P[:6, :6] = SWAP
        for k, jn in enumerate(m.joint_names):
            j = self.pm.joints[self.pm.getJointId(jn)]
            self.P[j.idx_v, off + k] = 1.0
            self.Pq[j.idx_q, k] = 1.0
        self.fid = self.pm.getFrameId(tip)
        self.frames = [(i, self.pm.getFrameId(ln)) for i, ln in enumerate(m.link_names)
                       if self.pm.existFrame(ln)]
        self.fingers = ([m.joint_index(j) for j in m.joint_names if 'finger' in j]
                        if name == 'panda' else [])

    def states(self, n, rng):
        """
        Draw ``n`` random states, each a dict of ours and Pinocchio's arrays.

        ``q`` within the joint limits, base pose uniform on SO(3) with a Gaussian position,
        ``qd``, ``qdd``, ``tau`` standard normal; Panda fingers locked at ``PANDA_FINGER``
        with zero rate (so that all three libraries see the same motion).
        """
        pin = import_pin()
        m, out = self.model, []
        for _ in range(n):
            q = m.random_configuration(rng)
            base = random_pose(rng) if self.floating else None
            qd, qdd, tau = (rng.standard_normal(m.nv) for _ in range(3))
            for k in self.fingers:
                q[k], qd[k], qdd[k] = PANDA_FINGER, 0.0, 0.0
            qp = self.Pq @ q
            if self.floating:
                qp[:7] = pin.SE3ToXYZQUAT(pin.SE3(base[:3, :3], base[:3, 3]))
            out.append({'q': q, 'base': base, 'qd': qd, 'qdd': qdd, 'tau': tau,
                        'pq': qp, 'pv': self.P @ qd, 'pa': self.P @ qdd, 'ptau': self.P @ tau})
        return out

    def stack(self, states):
        """Return the states as batch arrays (``base`` None for a fixed base)."""
        S = {k: np.array([s[k] for s in states]) for k in ('q', 'qd', 'qdd', 'tau', 'pq', 'pv',
                                                           'pa', 'ptau')}
        S['base'] = np.array([s['base'] for s in states]) if self.floating else None
        return S

    def motion_to_ours(self, J):
        """Map a Pinocchio (6, nv) Jacobian-like matrix (rows (v, ω)) into ours."""
        return SWAP @ J @ self.P


class MRChain:
    """Modern Robotics' description of a fixed-base serial chain built from our Model."""

    def __init__(self, robot):
        m = robot.model
        path, b = [], m.link_body[m.link_index(robot.tip)]
        while b >= 0:
            path.append(b)
            b = m.parent[b]
        path = path[::-1]
        if m.floating or path != list(range(len(path))):
            raise ValueError(f'{robot.name}: not a fixed-base serial chain')
        n = self.n = len(path)
        q0 = np.zeros(m.nq)
        for k in robot.fingers:
            q0[k] = PANDA_FINGER
        C = lm.body_poses(m, q0)
        home = lm.body_poses(m, np.zeros(m.nq))
        G = [m.inertia[i].copy() for i in range(n)]
        for e in range(n, m.nb):  # lock the bodies off the chain into their chain ancestor
            c = e
            while c >= n:
                c = m.parent[c]
            G[c] += transform_inertia(m.inertia[e], pose_inverse(C[c]) @ C[e])
        self.M = lm.link_pose(m, np.zeros(m.nq), robot.tip)
        Mlist = [home[0]] + [pose_inverse(home[i - 1]) @ home[i] for i in range(1, n)]
        self.Mlist = np.array(Mlist + [pose_inverse(home[n - 1]) @ self.M])
        self.Glist = np.array(G)
        self.Slist = np.array([m.Y[i] for i in range(n)]).T
        Ad = _Ad(pose_inverse(self.M))
        self.Blist = Ad @ self.Slist
        self.g = np.asarray(m.gravity, dtype=float)
        self.Ftip = np.zeros(6)


def _Ad(C):
    R, p = C[:3, :3], C[:3, 3]
    px = np.array([[0.0, -p[2], p[1]], [p[2], 0.0, -p[0]], [-p[1], p[0], 0.0]])
    A = np.zeros((6, 6))
    A[:3, :3] = R
    A[3:, 3:] = R
    A[3:, :3] = px @ R
    return A


class Algo:
    """
    One algorithm: how each library calls it and how its results compare with ours.

    ``ours(r, s)`` / ``ours_batch(r, S)`` / ``pin(r, s)`` / ``mr(r, c, s)`` return zero-argument
    callables for state ``s`` (batch ``S``); ``pin_map(r, s, raw)`` and ``mr_map(r, c, s, raw)``
    put a peer's raw result into our conventions and return ``(ours_part, peer_part)``.
    ``out_shape(r, B)``: the batch result's shape where our call takes ``out=`` (a list of
    shapes where ``out=`` takes a tuple of arrays).
    """

    def __init__(self, key, ours, ours_batch, pin, pin_map, mr=None, mr_map=None, note='',
                 out_shape=None):
        self.key, self.ours, self.ours_batch, self.out_shape = key, ours, ours_batch, out_shape
        self.pin, self.pin_map, self.mr, self.mr_map, self.note = pin, pin_map, mr, mr_map, note


def _sym(M):
    return np.triu(M) + np.triu(M, 1).T


def algorithms():
    """Return the list of :class:`Algo` the benchmark runs, in table order."""
    pin, mr = import_pin(), import_mr()
    ref = {'body': pin.LOCAL, 'spatial': pin.WORLD, 'hybrid': pin.LOCAL_WORLD_ALIGNED,
           'mixed': pin.LOCAL_WORLD_ALIGNED}
    algos = []

    def pose_pin(r, s):
        pm, d, q, f = r.pm, r.data, s['pq'], r.fid
        return lambda: (pin.forwardKinematics(pm, d, q), pin.updateFramePlacement(pm, d, f))[1]

    algos.append(Algo(
        'link_pose',
        lambda r, s: partial(lm.link_pose, r.model, s['q'], r.tip, base_pose=s['base']),
        lambda r, S: partial(lm.link_pose, r.model, S['q'], r.tip, base_pose=S['base']),
        pose_pin,
        lambda r, s, raw: (lm.link_pose(r.model, s['q'], r.tip, base_pose=s['base']),
                           raw.homogeneous),
        mr=None if mr is None else (lambda r, c, s: partial(mr.FKinSpace, c.M, c.Slist,
                                                            s['q'][:c.n])),
        mr_map=lambda r, c, s, raw: (lm.link_pose(r.model, s['q'], r.tip), raw),
        note='pin: forwardKinematics + updateFramePlacement(tip)'))

    def fk_map(r, s, raw):
        Cs = lm.forward_kinematics(r.model, s['q'], base_pose=s['base'])
        return (np.array([Cs[i] for i, _ in r.frames]),
                np.array([r.data.oMf[f].homogeneous for _, f in r.frames]))

    algos.append(Algo(
        'forward_kinematics',
        lambda r, s: partial(lm.forward_kinematics, r.model, s['q'], base_pose=s['base']),
        lambda r, S: partial(lm.forward_kinematics, r.model, S['q'], base_pose=S['base']),
        lambda r, s: partial(pin.framesForwardKinematics, r.pm, r.data, s['pq']),
        fk_map, note='all links; pin: framesForwardKinematics (all frames)',
        out_shape=lambda r, B: (B, len(r.model.link_names), 4, 4)))

    def jac_pin_ref(r, s, rf):
        return r.motion_to_ours(pin.computeFrameJacobian(r.pm, r.data, s['pq'], r.fid, rf))

    for rep in REPS:
        def jac_map(r, s, raw, rep=rep):
            ours = lm.jacobian(r.model, s['q'], r.tip, rep, base_pose=s['base'])
            if rep != 'mixed':
                return ours, r.motion_to_ours(raw)
            Jl, Jw = jac_pin_ref(r, s, pin.LOCAL), jac_pin_ref(r, s, pin.LOCAL_WORLD_ALIGNED)
            return ours, np.vstack([Jl[:3], Jw[3:]])

        mr_fn = mr_map = None
        if mr is not None and rep in ('body', 'spatial'):
            def mr_fn(r, c, s, rep=rep):
                if rep == 'body':
                    return partial(mr.JacobianBody, c.Blist, s['q'][:c.n])
                return partial(mr.JacobianSpace, c.Slist, s['q'][:c.n])

            def mr_map(r, c, s, raw, rep=rep):
                return lm.jacobian(r.model, s['q'], r.tip, rep)[:, :c.n], raw
        algos.append(Algo(
            f'jacobian {rep}',
            lambda r, s, rep=rep: partial(lm.jacobian, r.model, s['q'], r.tip, rep,
                                          base_pose=s['base']),
            lambda r, S, rep=rep: partial(lm.jacobian, r.model, S['q'], r.tip, rep,
                                          base_pose=S['base']),
            lambda r, s, rep=rep: partial(pin.computeFrameJacobian, r.pm, r.data, s['pq'], r.fid,
                                          ref[rep]),
            jac_map, mr_fn, mr_map,
            note='pin: computeFrameJacobian '
                 + ('LOCAL_WORLD_ALIGNED (mixed has no pin name)' if rep == 'mixed'
                    else str(ref[rep]))))

    def jdot_pin(r, s, rf):
        pm, d, q, v, f = r.pm, r.data, s['pq'], s['pv'], r.fid
        return lambda: (pin.computeJointJacobiansTimeVariation(pm, d, q, v),
                        pin.getFrameJacobianTimeVariation(pm, d, f, rf))[1]

    for rep in REPS:
        def jdot_map(r, s, raw, rep=rep):
            ours = lm.jacobian_derivative(r.model, s['q'], s['qd'], r.tip, rep,
                                          base_pose=s['base'])
            if rep != 'mixed':
                return ours, r.motion_to_ours(raw)
            Jl = r.motion_to_ours(jdot_pin(r, s, pin.LOCAL)())
            Jw = r.motion_to_ours(jdot_pin(r, s, pin.LOCAL_WORLD_ALIGNED)())
            return ours, np.vstack([Jl[:3], Jw[3:]])  # d/dt of mixed = (d/dt body ω, d/dt ṙ)

        algos.append(Algo(
            f'jacobian_derivative {rep}',
            lambda r, s, rep=rep: partial(lm.jacobian_derivative, r.model, s['q'], s['qd'],
                                          r.tip, rep, base_pose=s['base']),
            lambda r, S, rep=rep: partial(lm.jacobian_derivative, r.model, S['q'], S['qd'],
                                          r.tip, rep, base_pose=S['base']),
            lambda r, s, rep=rep: jdot_pin(r, s, ref[rep]), jdot_map,
            note='pin: computeJointJacobiansTimeVariation + getFrameJacobianTimeVariation'))

    def mr_states(c, s):
        return s['q'][:c.n], s['qd'][:c.n], s['qdd'][:c.n], s['tau'][:c.n]

    algos.append(Algo(
        'inverse_dynamics',
        lambda r, s: partial(lm.inverse_dynamics, r.model, s['q'], s['qd'], s['qdd'],
                             base_pose=s['base']),
        lambda r, S: partial(lm.inverse_dynamics, r.model, S['q'], S['qd'], S['qdd'],
                             base_pose=S['base']),
        lambda r, s: partial(pin.rnea, r.pm, r.data, s['pq'], s['pv'], s['pa']),
        lambda r, s, raw: (r.P @ lm.inverse_dynamics(r.model, s['q'], s['qd'], s['qdd'],
                                                     base_pose=s['base']), raw.copy()),
        mr=None if mr is None else (lambda r, c, s: partial(
            mr.InverseDynamics, *mr_states(c, s)[:3], c.g, c.Ftip, c.Mlist, c.Glist, c.Slist)),
        mr_map=lambda r, c, s, raw: (lm.inverse_dynamics(r.model, s['q'], s['qd'],
                                                         s['qdd'])[:c.n], raw),
        note='body form; pin: rnea'))
    algos.append(Algo(
        'mass_matrix',
        lambda r, s: partial(lm.mass_matrix, r.model, s['q'], base_pose=s['base']),
        lambda r, S: partial(lm.mass_matrix, r.model, S['q'], base_pose=S['base']),
        lambda r, s: partial(pin.crba, r.pm, r.data, s['pq']),
        lambda r, s, raw: (r.P @ lm.mass_matrix(r.model, s['q'], base_pose=s['base']) @ r.P.T,
                           _sym(raw)),
        mr=None if mr is None else (lambda r, c, s: partial(
            mr.MassMatrix, s['q'][:c.n], c.Mlist, c.Glist, c.Slist)),
        mr_map=lambda r, c, s, raw: (lm.mass_matrix(r.model, s['q'])[:c.n, :c.n], raw),
        note='pin: crba (upper triangle only)',
        out_shape=lambda r, B: (B, r.model.nv, r.model.nv)))

    def fd_mr_map(r, c, s, raw):
        # MR's q̈ of the chain, put through our inverse dynamics, must give back its τ
        qdd = np.zeros(r.model.nv)
        qdd[:c.n] = raw
        return lm.inverse_dynamics(r.model, s['q'], s['qd'], qdd)[:c.n], s['tau'][:c.n]

    algos.append(Algo(
        'forward_dynamics',
        lambda r, s: partial(lm.forward_dynamics, r.model, s['q'], s['qd'], s['tau'],
                             base_pose=s['base']),
        lambda r, S: partial(lm.forward_dynamics, r.model, S['q'], S['qd'], S['tau'],
                             base_pose=S['base']),
        lambda r, s: partial(pin.aba, r.pm, r.data, s['pq'], s['pv'], s['ptau']),
        lambda r, s, raw: (r.P @ lm.forward_dynamics(r.model, s['q'], s['qd'], s['tau'],
                                                     base_pose=s['base']), raw.copy()),
        mr=None if mr is None else (lambda r, c, s: partial(
            mr.ForwardDynamics, *mr_states(c, s)[:2], mr_states(c, s)[3], c.g, c.Ftip,
            c.Mlist, c.Glist, c.Slist)),
        mr_map=fd_mr_map, note='ABA; pin: aba; MR: checked as ID(MR q̈) = τ'))

    def did_map(r, s, raw):
        dq, _ = lm.inverse_dynamics_derivatives(r.model, s['q'], s['qd'], s['qdd'],
                                                base_pose=s['base'])
        return r.P @ dq @ r.P.T, np.array(raw[0])

    algos.append(Algo(
        'dtau_dq',
        lambda r, s: partial(lm.inverse_dynamics_derivatives, r.model, s['q'], s['qd'],
                             s['qdd'], base_pose=s['base']),
        lambda r, S: partial(lm.inverse_dynamics_derivatives, r.model, S['q'], S['qd'],
                             S['qdd'], base_pose=S['base']),
        lambda r, s: partial(pin.computeRNEADerivatives, r.pm, r.data, s['pq'], s['pv'],
                             s['pa']),
        did_map, note='ours: eom.inverse_dynamics_derivatives (∂τ/∂q and ∂τ/∂q̇); '
                      'pin: computeRNEADerivatives (∂τ/∂q, ∂τ/∂v, ∂τ/∂a)',
        out_shape=lambda r, B: [(B, r.model.nv, r.model.nv)] * 2))

    def regressor_map(r, s, raw):
        # Pinocchio's columns: ten per joint in its order (the free flyer's first); ours: the
        # base's, then ten per body, body b the joint of its coordinate
        m = r.model
        cols = list(range(10)) if m.floating else []
        for b in range(m.nb):
            j = r.pm.getJointId(m.joint_names[m.q_index[b]])
            cols += range(10 * (j - 1), 10 * j)
        ours = lm.regressor(m, s['q'], s['qd'], s['qdd'], base_pose=s['base'])
        return r.P @ ours, raw[:, cols]

    algos.append(Algo(
        'regressor',
        lambda r, s: partial(lm.regressor, r.model, s['q'], s['qd'], s['qdd'],
                             base_pose=s['base']),
        lambda r, S: partial(lm.regressor, r.model, S['q'], S['qd'], S['qdd'],
                             base_pose=S['base']),
        lambda r, s: partial(pin.computeJointTorqueRegressor, r.pm, r.data, s['pq'], s['pv'],
                             s['pa']),
        regressor_map, note='τ = Y π, ten inertial parameters per body; '
                            'pin: computeJointTorqueRegressor',
        out_shape=lambda r, B: (B, r.model.nv, 10 * (r.model.nb + r.model.floating))))
    return algos
