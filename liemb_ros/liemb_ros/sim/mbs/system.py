"""
Constrained rigid-body systems in absolute coordinates ([MT14] §2-3, [MT13] §2-4).

Each body has its own configuration group, chosen per body (the papers' *tailored update*):
``'se3'`` (pose on SE(3), body-fixed twist ``(omega, v)``) or ``'so3r3'`` (``(R, r)`` on
SO(3)xR^3, mixed velocity ``(omega, r')``).  The state is ``(C_1, ..., C_n, V)`` on
``G_1 x ... x G_n x R^6n`` ([MT13] §3), integrated by :mod:`liemb_ros.sim.integrators`.
"""
import numpy as np

from .. import integrators as itg
from . import _kernels as K

UPDATES = {'se3': K.SE3_KIND, 'so3r3': K.SO3R3_KIND}


def _unit(v, what):
    v = np.asarray(v, dtype=float).reshape(3)
    n = np.linalg.norm(v)
    if not n > 0:
        raise ValueError(f'{what} must be a non-zero vector')
    return v / n


def _perpendiculars(u):
    """Two unit vectors completing ``u`` (unit) to a right-handed orthonormal frame."""
    a = np.array([1.0, 0.0, 0.0]) if abs(u[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    p = np.cross(u, a)
    p /= np.linalg.norm(p)
    return p, np.cross(u, p)


class Body:
    """
    A rigid body with its own configuration group.

    ``mass``, ``inertia`` (3x3 about the COM, body axes), ``com`` (COM in the body frame;
    the body frame may sit anywhere on the body), ``update`` ('se3'|'so3r3').
    """

    def __init__(self, name, mass, inertia, com=(0.0, 0.0, 0.0), update='se3'):
        if update not in UPDATES:
            raise ValueError(f"body {name!r}: update must be 'se3' or 'so3r3', got {update!r}")
        self.name = name
        self.mass = float(mass)
        if not self.mass > 0:
            raise ValueError(f'body {name!r}: mass must be positive, got {mass}')
        self.inertia = np.asarray(inertia, dtype=float).reshape(3, 3)
        self.com = np.asarray(com, dtype=float).reshape(3)
        self.update = update

    @property
    def theta_frame(self):
        """Rotational inertia about the body frame origin ``Theta0 - m c~^2`` (eq. (23))."""
        c = self.com
        return self.inertia + self.mass * (c @ c * np.eye(3) - np.outer(c, c))


class System:
    """
    Bodies, joints (as constraint primitives), springs and joint actuators.

    Build with :meth:`add_body`, joints ``spherical``, ``revolute``, ``prismatic``,
    ``cylindrical``, ``universal`` (body ``j=None`` is the ground; its points and axes are
    then world coordinates) and :meth:`spring`; then :meth:`state`, :meth:`rhs`,
    :meth:`simulate`.  Joint points and axes are given in the respective body frames.
    """

    def __init__(self, gravity=(0.0, 0.0, 0.0)):
        self.bodies = []
        self.gravity = np.asarray(gravity, dtype=float).reshape(3)
        self._prims = []          # (type, i, j, p1, p2, p3, val)
        self.joints = []          # (name, kind, [(row0, row1, is_position)])
        self._springs = []
        self._acts = []           # (child, parent, screw6)
        self.tau = np.zeros(0)
        self.alpha = 0.0          # Baumgarte: eta = -gamma - 2 alpha h' - beta^2 h
        self.beta = 0.0
        self._compiled = None

    # -- building ----------------------------------------------------------------------
    def add_body(self, body):
        """Append a :class:`Body`; return its index."""
        self.bodies.append(body)
        self._compiled = None
        return len(self.bodies) - 1

    def _idx(self, b):
        if b is None:
            return -1
        if isinstance(b, str):
            names = [x.name for x in self.bodies]
            if b not in names:
                raise ValueError(f'unknown body {b!r}')
            return names.index(b)
        if not 0 <= int(b) < len(self.bodies):
            raise ValueError(f'no body {b}')
        return int(b)

    def _prim(self, typ, i, j, p1, p2, p3=(0, 0, 0), val=0.0):
        rows = 3 if typ == K.POINT else 1
        row = sum(3 if p[0] == K.POINT else 1 for p in self._prims)
        self._prims.append((typ, i, j, np.asarray(p1, float), np.asarray(p2, float),
                            np.asarray(p3, float), float(val)))
        self._compiled = None
        return (row, row + rows, typ != K.DOT)

    def _joint(self, name, kind, parts):
        name = name or f'{kind}{len(self.joints)}'
        self.joints.append((name, kind, parts))
        return len(self.joints) - 1

    def spherical(self, i, a_i, j, a_j, name=None):
        """Point ``a_i`` of body i coincides with ``a_j`` of body j (3 constraints)."""
        i, j = self._idx(i), self._idx(j)
        return self._joint(name, 'spherical', [self._prim(K.POINT, i, j, a_i, a_j)])

    def universal(self, i, a_i, u_i, j, a_j, u_j, name=None, value=0.0):
        """Spherical joint plus ``(R_i u_i).(R_j u_j) = value`` (the axes' cosine, 4)."""
        i, j = self._idx(i), self._idx(j)
        parts = [self._prim(K.POINT, i, j, a_i, a_j),
                 self._prim(K.DOT, i, j, _unit(u_i, 'u_i'), _unit(u_j, 'u_j'), val=value)]
        return self._joint(name, 'universal', parts)

    def _parallel(self, i, e_i, j, e_j):
        p, q = _perpendiculars(e_j)
        return [self._prim(K.DOT, i, j, e_i, p), self._prim(K.DOT, i, j, e_i, q)], p, q

    def revolute(self, i, a_i, e_i, j, a_j, e_j, name=None):
        """Point coincidence and parallel axes ``e_i`` (body i), ``e_j`` (body j) (5)."""
        i, j = self._idx(i), self._idx(j)
        e_i, e_j = _unit(e_i, 'axis e_i'), _unit(e_j, 'axis e_j')
        par, _, _ = self._parallel(i, e_i, j, e_j)
        return self._joint(name, 'revolute', [self._prim(K.POINT, i, j, a_i, a_j)] + par)

    def cylindrical(self, i, a_i, e_i, j, a_j, e_j, name=None):
        """Parallel axes and ``a_i`` on the line through ``a_j`` along ``e_j`` (4)."""
        i, j = self._idx(i), self._idx(j)
        e_i, e_j = _unit(e_i, 'axis e_i'), _unit(e_j, 'axis e_j')
        par, p, q = self._parallel(i, e_i, j, e_j)
        line = [self._prim(K.LINE, i, j, a_i, a_j, p), self._prim(K.LINE, i, j, a_i, a_j, q)]
        return self._joint(name, 'cylindrical', par + line)

    def prismatic(self, i, a_i, e_i, f_i, j, a_j, e_j, f_j, name=None):
        """
        Cylindrical joint without rotation about the axis (5 constraints).

        ``f_i`` and ``f_j`` (perpendicular to the axes) must coincide in the world; the
        constraint keeps ``R_i f_i`` perpendicular to ``e_j x f_j``.
        """
        jid = self.cylindrical(i, a_i, e_i, j, a_j, e_j, name=name)
        e_j, f_j = _unit(e_j, 'axis e_j'), _unit(f_j, 'f_j')
        part = self._prim(K.DOT, self._idx(i), self._idx(j), _unit(f_i, 'f_i'),
                          np.cross(e_j, f_j))
        name, _, parts = self.joints[jid]
        self.joints[jid] = (name, 'prismatic', parts + [part])
        return jid

    def spring(self, i, a_i, j, a_j, stiffness, rest_length=0.0, damping=0.0):
        """Connect point ``a_i`` of body i and ``a_j`` of body j by a linear spring-damper."""
        self._springs.append((self._idx(i), self._idx(j), np.asarray(a_i, float),
                              np.asarray(a_j, float), float(stiffness), float(rest_length),
                              float(damping)))
        self._compiled = None

    def actuator(self, child, parent, screw):
        """
        Add a joint torque/force input: ``tau_k`` times ``screw = (u, s)`` (child frame).

        The child receives the moment ``tau R_c u`` and the force ``tau R_c s`` at its
        origin, the parent (``None`` = ground) the opposite wrench.  Set :attr:`tau`.
        """
        self._acts.append((self._idx(child), self._idx(parent),
                           np.asarray(screw, dtype=float).reshape(6)))
        self.tau = np.zeros(len(self._acts))
        self._compiled = None
        return len(self._acts) - 1

    def set_actuator_screws(self, index, screws):
        """
        Replace the screws (k, 6) of actuators ``index`` (k,) without recompiling.

        For joint axes that move with the state (merged joint chains of :mod:`.from_model`).
        """
        d = self._compiled or self._compile()
        screws = np.asarray(screws, dtype=float).reshape(len(index), 6)
        for k, s in zip(index, screws):
            c, p, _ = self._acts[k]
            self._acts[k] = (c, p, s.copy())
        d[14][index] = screws

    def fix_dot_values(self, y):
        """Set the constants of DOT constraints (universal joints) from the state ``y``."""
        self._compile()
        h = self.constraint_values(y)
        for k, p in enumerate(self._prims):
            if p[0] == K.DOT:
                row = self._rows[k]
                self._prims[k] = p[:6] + (p[6] + h[row],)
        self._compiled = None

    def grounded_bodies(self):
        """Return the indices of the bodies with a joint to the ground (sorted)."""
        out = set()
        for _, i, j, *_ in self._prims:
            if j < 0 <= i:
                out.add(i)
            if i < 0 <= j:
                out.add(j)
        return sorted(out)

    def tailored_updates(self):
        """
        Per body ``'se3'`` if it has a joint to the ground, else ``'so3r3'``.

        The papers' tailored update ([MT14] §6, [MT13] §6): SE(3) where a lower pair to
        the ground confines the body to an SE(3) subgroup (exact, Corollary 1), the cheaper
        SO(3)xR^3 elsewhere (Corollary 3: the same order).
        """
        ground = set(self.grounded_bodies())
        return ['se3' if b in ground else 'so3r3' for b in range(len(self.bodies))]

    def set_updates(self, updates, y):
        """
        Switch the bodies to ``updates`` (one per body); return ``y`` in the new forms.

        Velocities are converted between body twists ``(omega, R^T r')`` and mixed
        velocities ``(omega, r')``; poses are unchanged.
        """
        if len(updates) != len(self.bodies):
            raise ValueError(f'need {len(self.bodies)} updates, got {len(updates)}')
        for body, u in zip(self.bodies, updates):
            if u not in UPDATES:
                raise ValueError(f"body {body.name!r}: update must be 'se3' or 'so3r3', "
                                 f'got {u!r}')
        self._compile()
        y = np.array(y, dtype=float)
        C, V = self.split(y)
        for b, (body, u) in enumerate(zip(self.bodies, updates)):
            R = C[b, :3, :3]
            if body.update == 'se3' and u == 'so3r3':
                V[b, 3:] = R @ V[b, 3:]
            elif body.update == 'so3r3' and u == 'se3':
                V[b, 3:] = R.T @ V[b, 3:]
            body.update = u
        self._compiled = None
        self._compile()
        return y

    # -- compiled data ---------------------------------------------------------------------
    def _compile(self):
        if self._compiled is not None:
            return self._compiled
        nb = len(self.bodies)
        if nb == 0:
            raise ValueError('the system has no bodies')
        kinds = np.array([UPDATES[b.update] for b in self.bodies], dtype=np.int64)
        mass = np.array([b.mass for b in self.bodies])
        com = np.array([b.com for b in self.bodies]).reshape(nb, 3)
        theta = np.array([b.theta_frame for b in self.bodies]).reshape(nb, 3, 3)
        npr = len(self._prims)
        prims = np.zeros((npr, 4), dtype=np.int64)
        pvec = np.zeros((npr, 3, 3))
        pval = np.zeros(npr)
        row = 0
        self._rows = []
        for k, (typ, i, j, p1, p2, p3, val) in enumerate(self._prims):
            prims[k] = (typ, i, j, row)
            pvec[k] = (p1, p2, p3)
            pval[k] = val
            self._rows.append(row)
            row += 3 if typ == K.POINT else 1
        ns = len(self._springs)
        sp_idx = np.zeros((ns, 2), dtype=np.int64)
        sp_vec = np.zeros((ns, 2, 3))
        sp_par = np.zeros((ns, 3))
        for s, (i, j, a, b, k, L0, c) in enumerate(self._springs):
            sp_idx[s] = (i, j)
            sp_vec[s] = (a, b)
            sp_par[s] = (k, L0, c)
        na = len(self._acts)
        act_idx = np.zeros((na, 2), dtype=np.int64)
        act_screw = np.zeros((na, 6))
        for a, (c, p, s) in enumerate(self._acts):
            act_idx[a] = (c, p)
            act_screw[a] = s
        self.m = row
        self.nb = nb
        self.space = itg.Product(*[itg.SE3() if b.update == 'se3' else itg.SO3R3()
                                   for b in self.bodies], itg.Vector(6 * nb))
        self._compiled = (nb, kinds, mass, com, theta, self.gravity, prims, pvec, pval, row,
                          sp_idx, sp_vec, sp_par, act_idx, act_screw)
        self._out = np.empty(12 * nb)
        self._lam = np.empty(row)
        return self._compiled

    # -- state -------------------------------------------------------------------------------
    def state(self, poses, velocities):
        """Flat state from poses (nb, 4, 4) and velocities (nb, 6) in each body's form."""
        self._compile()
        poses = np.asarray(poses, dtype=float).reshape(self.nb, 4, 4)
        vel = np.asarray(velocities, dtype=float).reshape(self.nb * 6)
        return np.concatenate([poses.reshape(-1), vel])

    def split(self, y):
        """Return ``(poses (nb, 4, 4), velocities (nb, 6))`` views of a state."""
        self._compile()
        y = np.asarray(y)
        return y[:16 * self.nb].reshape(self.nb, 4, 4), y[16 * self.nb:].reshape(self.nb, 6)

    def rhs(self, t, y):
        """Left-trivialised velocity ``(V, V')`` of the state (for the integrators)."""
        d = self._compiled or self._compile()
        K.rhs(y, *d, self.tau, self.alpha, self.beta, self._out, self._lam)
        return self._out.copy()

    def multipliers(self, y):
        """Constraint forces ``lambda`` (m,) of the index-1 system at ``y``."""
        self.rhs(0.0, y)
        return self._lam.copy()

    def _eval(self, y):
        d = self._compiled or self._compile()
        C, V = self.split(y)
        h = np.empty(self.m)
        J = np.empty((self.m, 6 * self.nb))
        g = np.empty(self.m)
        hd = np.empty(self.m)
        K.constraints(d[1], C, V, d[6], d[7], d[8], self.m, h, J, g, hd)
        return h, J, hd

    def constraint_values(self, y):
        """``h(g)`` (m,): position-level residuals of all constraint rows."""
        return self._eval(y)[0]

    def constraint_jacobian(self, y):
        """``J`` (m, 6 nb) with ``h' = J V`` (left-trivialised velocities)."""
        return self._eval(y)[1]

    def joint_violations(self, y):
        """
        Per joint ``(name, position violation [m], orientation violation)``.

        Position: largest |residual| of the joint's point/line rows; orientation: largest
        |residual| of its axis rows (dot products, dimensionless; 0 if none).
        """
        h = self.constraint_values(y)
        out = []
        for name, _, parts in self.joints:
            pos = max([np.abs(h[a:b]).max() for a, b, isp in parts if isp], default=0.0)
            ori = max([np.abs(h[a:b]).max() for a, b, isp in parts if not isp], default=0.0)
            out.append((name, float(pos), float(ori)))
        return out

    def _mass_blocks(self, y):
        d = self._compiled or self._compile()
        C, V = self.split(y)
        Mb = np.empty((self.nb, 6, 6))
        Q = np.empty((self.nb, 6))
        K.mass_and_bias(d[1], d[2], d[3], d[4], C, V, np.zeros(3), Mb, Q)
        return Mb

    def kinetic_energy(self, y):
        """``sum_i V_i^T M_i V_i / 2`` (either velocity form)."""
        _, V = self.split(y)
        Mb = self._mass_blocks(y)
        return 0.5 * float(np.einsum('bi,bij,bj->', V, Mb, V))

    def potential_energy(self, y):
        """Gravity ``-m g.x_com`` plus springs ``k (|d| - L0)^2 / 2``."""
        C, _ = self.split(y)
        e = 0.0
        for b, body in enumerate(self.bodies):
            xc = C[b, :3, :3] @ body.com + C[b, :3, 3]
            e -= body.mass * self.gravity @ xc
        for i, j, a, b2, k, L0, _ in self._springs:
            x1 = a if i < 0 else C[i, :3, :3] @ a + C[i, :3, 3]
            x2 = b2 if j < 0 else C[j, :3, :3] @ b2 + C[j, :3, 3]
            e += 0.5 * k * (np.linalg.norm(x2 - x1) - L0) ** 2
        return e

    def energy(self, y):
        """Return the sum of kinetic and potential energy."""
        return self.kinetic_energy(y) + self.potential_energy(y)

    # -- projection --------------------------------------------------------------------------
    def project_velocities(self, y):
        """Return ``y`` with ``V`` projected onto ``J V = 0`` in the kinetic-energy metric."""
        y = np.array(y, dtype=float)
        if self.m == 0:
            return y
        _, J, _ = self._eval(y)
        Mi = _blockdiag_inv(self._mass_blocks(y))
        _, V = self.split(y)
        v = V.reshape(-1)
        A = J @ Mi @ J.T
        lam = np.linalg.lstsq(A, J @ v, rcond=1e-12)[0]
        V[:] = (v - Mi @ J.T @ lam).reshape(self.nb, 6)
        return y

    def project(self, y, tol=1e-13, max_iter=10):
        """
        Project positions onto ``h = 0``, then velocities onto ``J V = 0``.

        Gauss-Newton steps ``y exp(dx)`` with the minimum-norm ``dx`` in the metric M.
        Off by default in every simulation.
        """
        y = np.array(y, dtype=float)
        if self.m == 0:
            return y
        space = self.space
        for _ in range(max_iter):
            h, J, _ = self._eval(y)
            if np.abs(h).max() <= tol:
                break
            Mi = _blockdiag_inv(self._mass_blocks(y))
            lam = np.linalg.lstsq(J @ Mi @ J.T, h, rcond=1e-12)[0]
            dx = np.concatenate([-(Mi @ J.T @ lam), np.zeros(6 * self.nb)])
            y = space.exp_mul(y, dx)
        return self.project_velocities(y)

    # -- simulation --------------------------------------------------------------------------
    def simulate(self, y0, t_end, h, tableau=itg.RK4, every=1, callback=None, project=False):
        """
        Fixed-step RKMK simulation; returns :class:`~liemb_ros.sim.integrators.Solution`.

        ``project=True`` projects positions and velocities after every step (off when
        reproducing the papers).  ``callback(t, y)`` after each step.
        """
        self._compile()
        stepper = itg.Stepper(self.space, self.rhs, tableau)
        n = int(round(t_end / h))
        y = np.array(y0, dtype=float)
        ts, ys = [0.0], [y.copy()]
        for k in range(n):
            y = stepper.step(k * h, y, h)
            if project:
                y = self.project(y)
            if callback is not None:
                callback((k + 1) * h, y)
            if (k + 1) % every == 0:
                ts.append((k + 1) * h)
                ys.append(y.copy())
        return itg.Solution(self.space, ts, ys, n, 0, stepper.n_f)


def _blockdiag_inv(Mb):
    nb = Mb.shape[0]
    out = np.zeros((6 * nb, 6 * nb))
    for b in range(nb):
        out[6 * b:6 * b + 6, 6 * b:6 * b + 6] = np.linalg.inv(Mb[b])
    return out
