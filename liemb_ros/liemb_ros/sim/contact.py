"""
Ground contact: the URDF ``<collision>`` geometry of a robot against planes (issue 21).

A :class:`ContactModel` holds the robot's collision geometry as **contact spheres** in the
link frames (centre, radius; radius 0: a point) and one or more planes ``n·x = d`` (unit
normal ``n`` pointing out of the ground, world frame; a normal of another length scales
the equation, and both are divided by it).  The URDF primitives become:

* ``<sphere radius>``: one sphere (exact);
* ``<capsule radius length>`` (where given): the spheres at its two ends (exact against a
  plane: the lowest point of a capsule is the lowest point of an end sphere);
* ``<box size>``: its 8 corners (exact against a plane: a box rests on corners, edges or
  faces, and these are spanned by the corners);
* ``<cylinder radius length>``: :data:`CYLINDER_RIM_POINTS` points on each rim circle (an
  approximation: a cylinder rolling on its side sits on one rim point of each end, and
  between two of the points the rim dips below their chord by ``r (1 - cos(π/n))``, 7.6 %
  of the radius for 8 points);
* ``<mesh filename scale>`` (STL, binary or ASCII, and Wavefront OBJ; ``package://``,
  ``file://`` and paths relative to the URDF): ``mesh='points'`` (default) the vertices
  of its convex hull thinned to ``mesh_points`` by farthest-point sampling (the hull is
  what touches a plane; thinning rounds it off by at most the spacing of the kept points);
  ``'box'`` the corners of its bounding box in the link frame; ``'sphere'`` the sphere
  about the bounding box's centre through the farthest vertex.  A mesh that cannot be read
  (missing file, COLLADA) raises :class:`ContactError` naming the link: leave the link out
  (``links``) or give it a primitive.

**Normal force** (a compliant contact; the same law as the joint limits of
:mod:`liemb_ros.sim.simulator`): a sphere of radius ``ρ`` whose centre ``c`` is ``n·c - d <
ρ`` penetrates the plane by ``p = ρ - (n·c - d)``; at the point ``x = c - (n·c - d) n`` of
the plane under the centre it is pushed by ``f_n = max(0, k p + b ṗ)`` along ``n``, ``ṗ =
-n·v(x)`` (``v(x)``: the velocity of the body's material point at ``x``).  ``k`` and ``b``
come from a time constant ``τ_c`` and a damping ratio ``ζ`` as in MuJoCo's ``solref``:
``k = m / (τ_c ζ)²``, ``b = 2 m / τ_c`` with ``m`` the robot's total mass, so the whole
robot on one contact is an oscillator of natural frequency ``1/(τ_c ζ)`` and damping ratio
``ζ``; at rest on ``n_c`` contacts under gravity each sinks ``g τ_c² ζ² / n_c`` at most
(0.25 mm for one contact at the default :data:`TIME_CONSTANT`).  ``stiffness`` and
``damping`` [N/m, N s/m] override them.  Its stored energy ``½ k p²`` is a potential (the
spring), the rest (damper, clamp) is dissipated.

**Friction**: regularised Coulomb friction ``f_t = -μ f_n tanh(|v_t| / v_s) v_t / |v_t|``
on the tangential velocity ``v_t`` of the material point at ``x``; ``μ`` per link from the
URDF ``<gazebo reference="link"><mu1>`` (``friction``: a number for every link, or a dict
``{link: μ}`` overriding it).  The regularisation makes sticking a creep: a tangential
load ``F_t < μ f_n`` holds the point creeping at ``v_s atanh(F_t / (μ f_n))``
(:data:`FRICTION_VELOCITY`).

**Plausible parameters** (issue 28): a plane within :data:`PLANE_OFFSET_MAX` of the
origin, μ up to :data:`FRICTION_MAX` (a URDF's Gazebo "no slip" ``<mu1>`` of 1e3..1e5 is
taken as it), ``τ_c``, ``ζ`` and ``v_s`` within :data:`TIME_CONSTANT_RANGE`,
:data:`DAMPING_RATIO_RANGE` and :data:`FRICTION_VELOCITY_RANGE`, ``k`` and ``b`` at most
the whole robot's at the shortest time constant; others raise :class:`ContactError` with
the bound.

Everything is in world coordinates; forces act on the robot through the point Jacobian
``J_x = J_v - [x - r]ˣ J_ω`` of the link (hybrid Jacobian rows ``(ω, ṙ)``), generalized
force ``Σ J_xᵀ f``.  For the implicit step the contact's stiffness and damping
``K = Σ k J_nᵀ J_n``, ``B = Σ b J_nᵀ J_n + J_xᵀ B_t J_x`` (``J_n = nᵀ J_x``, ``B_t`` the
friction's slope) are provided by :meth:`ContactModel.evaluate`.
"""
import warnings
from collections import namedtuple

import numpy as np

from ._contact_geometry import (  # noqa: F401 (public here)
    CYLINDER_RIM_POINTS, MESH_MODES, ContactError, collision_geometry, gazebo_friction,
    read_mesh_vertices)
from ._contact_forces import is_stiff  # noqa: F401 (public here)
from ._contact_forces import evaluate_into, raise_status
from ..core._kernels.dispatch import F64, NO_ARM, armature_arg, as_batch, base_arg, canonical
from ..core._kernels.dispatch import fast, plain_vectors
from ..core.model.urdf import rpy_to_matrix as rpy_matrix  # noqa: F401 (public here)

#: default time constant ``τ_c`` [s] of the contact spring-damper (MuJoCo's default is 0.02 s;
#: this one sinks a resting body 16 times less and still steps stably at 1 ms, implicitly)
TIME_CONSTANT = 0.005
#: default regularisation velocity ``v_s`` [m/s] of the contact friction
FRICTION_VELOCITY = 1e-3
#: default friction coefficient (Gazebo's and MuJoCo's)
FRICTION = 1.0
#: a point whose plane gap is below ``h`` times this speed [m/s] is checked for reaching the
#: plane within a step ``h`` (:meth:`ContactModel.evaluate`)
REACH_SPEED = 5.0

# Plausible parameters (issue 28): values outside these ranges are refused with the range.
#: a plane farther than this from the world origin [m] (at 1e6 m double precision still
#: resolves 1e-10 m, far below a contact's sink; a robot does not walk 1000 km)
PLANE_OFFSET_MAX = 1e6
#: the largest Coulomb coefficient (no material pair exceeds ~3; Gazebo URDFs write 1e3 to
#: 1e5 for "no slip", which a tangential load of 10 times the normal one also means)
FRICTION_MAX = 10.0
#: time constant ``τ_c`` [s] and damping ratio ``ζ`` of the spring-damper: (lowest, highest)
TIME_CONSTANT_RANGE = (1e-5, 10.0)
DAMPING_RATIO_RANGE = (1e-3, 100.0)
#: regularisation velocity ``v_s`` of the friction [m/s]: (lowest, highest)
FRICTION_VELOCITY_RANGE = (1e-7, 10.0)

#: one contact of :meth:`ContactModel.evaluate` / ``Simulator.contacts()`` (world frame)
Contact = namedtuple('Contact', 'link point normal force penetration plane')


class ContactWarning(UserWarning):
    """A URDF value was changed to be plausible (a ``<mu1>`` beyond :data:`FRICTION_MAX`)."""


# -- the model ------------------------------------------------------------------------------
def _plane_list(planes):
    """
    Turn ``[(normal, offset)]`` into unit normals (m, 3) and offsets (m,).

    ``n·x = d`` with ``|n| ≠ 1`` is the plane ``(n/|n|)·x = d/|n|``: both are divided by
    ``|n|``, so the plane stays where the equation puts it.  The offset must be within
    :data:`PLANE_OFFSET_MAX` of the origin.
    """
    normals, offsets = [], []
    for k, pl in enumerate(planes):
        try:
            n, d = pl
            n = np.asarray(n, dtype=float).reshape(3)
            d = float(d)
        except (TypeError, ValueError):
            raise ContactError(f'plane {k}: expected (normal (3,), offset), got {pl!r}') from None
        with np.errstate(over='ignore'):
            norm = np.linalg.norm(n)
        if not (np.all(np.isfinite(n)) and np.isfinite(d) and np.isfinite(norm)
                and norm > 1e-9):
            raise ContactError(f'plane {k}: normal {n.tolist()} and offset {d} must be finite, '
                               'the normal nonzero')
        if not abs(d / norm) <= PLANE_OFFSET_MAX:
            raise ContactError(f'plane {k}: offset {d / norm:.4g} m (the equation divided by '
                               f'the normal\'s length) is beyond the plausible '
                               f'{PLANE_OFFSET_MAX:g} m from the origin')
        normals.append(n / norm)
        offsets.append(d / norm)
    if not normals:
        raise ContactError('no contact planes given')
    return np.array(normals), np.array(offsets)


def _check_nonnegative(value, link, what, most=np.inf, why=''):
    """``value`` as a float in ``[0, most]``, else ContactError naming the link and the bound."""
    v = float(value)
    where = f"link '{link}': " if link else ''
    if not (np.isfinite(v) and v >= 0):
        raise ContactError(f'{where}{what} must be finite and non-negative, got {value!r}')
    if v > most:
        raise ContactError(f'{where}{what} {v:.4g} is beyond the plausible {most:.4g}{why}')
    return v


def _check_range(value, what, bounds, unit=''):
    """``value`` as a float within ``bounds`` (lowest, highest), else ContactError."""
    lo, hi = bounds
    v = float(value)
    if not (np.isfinite(v) and lo <= v <= hi):
        raise ContactError(f'contact {what} must be within {lo:g}..{hi:g}{unit}, got {value!r}')
    return v


class ContactModel:
    """
    The contacts of a robot with planes; used by ``Simulator(model, contact=...)``.

    Parameters
    ----------
    model : Model
    urdf : str or path, optional
        The robot's URDF (text or file) for its ``<collision>`` geometry and ``<gazebo>``
        friction; or ``geometry``.
    geometry : dict, optional
        ``{link: (centres (k, 3), radii (k,))}`` in the link frame (e.g. from
        :func:`collision_geometry`), instead of the URDF's.
    links : list of str, optional
        Only these links touch the planes (default: every link with collision geometry that
        can move; links fixed to the world never touch).
    planes : list of ``(normal (3,), offset)``
        Planes ``n·x = offset`` (world frame, ``n`` out of the ground).  A normal whose
        length is not 1 scales the equation: normal and offset are both divided by
        ``|n|`` (the plane stays where ``n·x = offset`` puts it).  The offset must be within
        :data:`PLANE_OFFSET_MAX` of the origin.  Default: the ground ``z = 0``.
    time_constant, damping_ratio : float
        ``τ_c`` [s] and ``ζ`` of the normal spring-damper (module docstring), within
        :data:`TIME_CONSTANT_RANGE` and :data:`DAMPING_RATIO_RANGE`.
    stiffness, damping : float, optional
        ``k`` [N/m] and ``b`` [N s/m] per contact, overriding ``time_constant`` and
        ``damping_ratio``; at most those of the whole robot's mass at the shortest time
        constant (``m / τ_min²``, ``2 m / τ_min``).
    friction : float or dict
        Coulomb coefficient μ of every link, or ``{link: μ}`` (others: the URDF's
        ``<gazebo><mu1>`` or :data:`FRICTION`), within ``0..``:data:`FRICTION_MAX`.  A
        number overrides the URDF's values; a URDF value beyond the bound (Gazebo's "no
        slip" idiom) is taken as the bound, with a :class:`ContactWarning`.
    friction_velocity : float
        ``v_s`` [m/s] of the regularised friction, within :data:`FRICTION_VELOCITY_RANGE`.
    mesh, mesh_points, urdf_path
        How meshes become contact points (:func:`collision_geometry`).

    Raises
    ------
    ContactError
        (a ``ValueError``) naming the link and the bound: a stiffness, damping, friction,
        time constant or plane outside its plausible range, unusable collision geometry,
        an unknown link.

    """

    def __init__(self, model, urdf=None, *, geometry=None, links=None,
                 planes=(((0.0, 0.0, 1.0), 0.0),), time_constant=TIME_CONSTANT,
                 damping_ratio=1.0, stiffness=None, damping=None, friction=None,
                 friction_velocity=FRICTION_VELOCITY, mesh='points', mesh_points=32,
                 urdf_path=None):
        self.model = model
        if geometry is None:
            if urdf is None:
                raise ContactError('give the URDF (urdf=) or the contact geometry (geometry=)')
            geometry = collision_geometry(urdf, mesh=mesh, mesh_points=mesh_points,
                                          urdf_path=urdf_path)
        mus = gazebo_friction(urdf) if urdf is not None else {}
        if links is None:
            links = [n for n in geometry if n in model.link_ids
                     and (model.floating or model.link_body[model.link_ids[n]] >= 0)]
        else:
            links = list(links)
            for n in links:
                if n not in model.link_ids:
                    raise ContactError(f"link '{n}': no such link in '{model.name}'")
                if n not in geometry:
                    raise ContactError(f"link '{n}': has no collision geometry")
                if not model.floating and model.link_body[model.link_ids[n]] < 0:
                    raise ContactError(f"link '{n}': is fixed to the world and cannot move")
        for n in geometry:
            if n not in model.link_ids:
                raise ContactError(f"link '{n}': no such link in '{model.name}'")
        for n, mu in mus.items():
            if mu > FRICTION_MAX:
                warnings.warn(f"link '{n}': <gazebo><mu1> {mu:g} taken as {FRICTION_MAX:g} "
                              '(no slip: the plausible Coulomb coefficient at most)',
                              ContactWarning, stacklevel=2)
                mus[n] = FRICTION_MAX
        if isinstance(friction, dict):
            for n, mu in friction.items():
                if n not in model.link_ids:
                    raise ContactError(f"link '{n}': friction given for a link not in "
                                       f"'{model.name}'")
                mus[n] = _check_nonnegative(mu, n, 'friction coefficient', FRICTION_MAX)
            default_mu = FRICTION
        elif friction is None:
            default_mu = FRICTION
        else:
            default_mu = _check_nonnegative(friction, None, 'friction coefficient',
                                            FRICTION_MAX)
            mus = {}
        idx, pts, rad, mu, groups, bounds = [], [], [], [], [], []
        for n in links:
            c, r = geometry[n]
            c = np.asarray(c, dtype=float).reshape(-1, 3)
            r = np.asarray(r, dtype=float).reshape(len(c))
            if not (np.all(np.isfinite(c)) and np.all(np.isfinite(r)) and np.all(r >= 0)):
                raise ContactError(f"link '{n}': contact spheres must be finite with "
                                   'non-negative radii')
            groups.append((len(idx), len(idx) + len(c)))
            idx += [model.link_ids[n]] * len(c)
            mid = 0.5 * (c.min(axis=0) + c.max(axis=0)) if len(c) else np.zeros(3)
            reach = np.linalg.norm(c - mid, axis=1) + r
            bounds.append((*mid, float(np.max(reach, initial=0.0))))
            pts.append(c)
            rad.append(r)
            mu += [mus.get(n, default_mu)] * len(c)
        self.links = links
        self.point_link = np.array(idx, dtype=np.int64)
        self.point_pos = np.concatenate(pts) if pts else np.zeros((0, 3))
        self.point_radius = np.concatenate(rad) if rad else np.zeros(0)
        self.point_mu = np.array(mu, dtype=float)
        # each link's spheres (start, end) and a sphere about them (centre, radius; link frame)
        self._groups = np.array(groups, dtype=np.int64).reshape(-1, 2)
        self._bounds = np.array(bounds, dtype=float).reshape(-1, 4)
        self.normals, self.offsets = _plane_list(planes)
        self.mass = float(model.inertia[:, 3, 3].sum()
                          + (model.base_inertia[3, 3] if model.floating else 0.0))
        self.time_constant = _check_range(time_constant, 'time_constant',
                                          TIME_CONSTANT_RANGE, ' s')
        self.damping_ratio = _check_range(damping_ratio, 'damping_ratio', DAMPING_RATIO_RANGE)
        k = self.mass / (self.time_constant * self.damping_ratio) ** 2
        b = 2.0 * self.mass / self.time_constant
        # the stiffest and most damped contact: the whole robot at the shortest time constant
        tau = TIME_CONSTANT_RANGE[0]
        why = f' (the robot\'s {self.mass:.4g} kg at a time constant of {tau:g} s)'
        self.stiffness = k if stiffness is None else _check_nonnegative(
            stiffness, None, 'contact stiffness', self.mass / tau ** 2, f' N/m{why}')
        self.damping = b if damping is None else _check_nonnegative(
            damping, None, 'contact damping', 2.0 * self.mass / tau, f' N s/m{why}')
        self.friction_velocity = _check_range(friction_velocity, 'friction_velocity',
                                              FRICTION_VELOCITY_RANGE, ' m/s')
        # the work arrays of an evaluation (evaluate_into): the link poses and, for every
        # (sphere, plane) pair that may be near, its pair, key, plane point, gap, Jacobian
        # slot and force; the hybrid Jacobians of the contact links
        npairs = len(self.point_pos) * len(self.offsets)
        self._pairs = np.empty((npairs, 2), dtype=np.int64)
        self._keys = np.empty(npairs, dtype=np.int64)
        self._x = np.empty((npairs, 3))
        self._gap = np.empty(npairs)
        self._F = np.empty((npairs, 3))
        self._work = (np.empty((len(model.link_names), 4, 4)), self._pairs, self._keys,
                      self._x, self._gap, np.empty(npairs, dtype=np.int64),
                      np.empty((len(links), 6, model.nv)), self._F)

    def __repr__(self):
        return (f'ContactModel({len(self.links)} links, {len(self.point_pos)} contact spheres, '
                f'{len(self.offsets)} planes, k={self.stiffness:.4g} N/m, '
                f'b={self.damping:.4g} N s/m)')

    def deepest(self, q, base=None):
        """
        Return ``(p, link, plane)``: the deepest penetration [m] at ``q`` and where.

        ``(0.0, None, -1)`` when nothing touches.
        """
        npairs = self._evaluate(q, np.zeros(self.model.nv), base, 0.0, None, None, None)[0][0]
        if not npairs:
            return 0.0, None, -1
        gap = self._gap[:npairs]
        n = int(np.argmin(gap))
        i, j = self._pairs[n]
        return float(-gap[n]), self.model.link_names[self.point_link[i]], int(j)

    def link_mu(self, link):
        """Friction coefficient of ``link``."""
        return float(self.point_mu[self.point_link == self.model.link_ids[link]][0])

    # -- evaluation -------------------------------------------------------------------------
    def _evaluate(self, q, V, base, margin, h, armature, keep):
        """
        :func:`evaluate_into` at ``(q, V, base)``: its counts, and its arrays of each call.

        Returns its counts ``(npairs, power, energy, nt, nh)`` and its ``out`` arrays
        (:meth:`outputs`); the pairs, keys, plane points, gaps and forces are in the work
        arrays until the next call.  Raises ValueError for a non-finite or misshapen state
        and a mass matrix that is not positive definite.
        """
        m = self.model
        if not plain_vectors(m, q, V, V):
            q, batched = as_batch(m, q, m.nq, 'q')
            V = canonical(V)
            if batched or V.shape != (m.nv,):
                raise ValueError(f'q and V must be one state, shapes ({m.nq},) and ({m.nv},), '
                                 f'got {q.shape} and {V.shape}')
        jac = h is not None
        if jac and armature is not None and not (
                armature.__class__ is np.ndarray and armature.dtype is F64
                and armature.shape == (m.nq,) and armature.flags.carray):
            armature = armature_arg(m, armature)
        out = self.outputs(jac)
        spheres, planes, law, work = self.kernel_args()
        st, npairs, power, energy, nt, nh = fast(
            m, 'contact evaluation', evaluate_into,
            (m.packed_int, m.packed_float, m.data.work, q, base_arg(m, base, None),
             base is not None, V, spheres, planes, law, margin, jac, 0.0 if h is None else h,
             NO_ARM if armature is None else armature, _NONE if keep is None else keep, work,
             out))
        raise_status(m, st)
        return (npairs, power, energy, nt, nh), out

    def kernel_args(self):
        """
        ``(spheres, planes, law, work)`` of :func:`evaluate_into`: the model's arrays.

        ``spheres``: each sphere's link, centre (link frame), radius and μ, each link's
        spheres and a sphere about them; ``planes``: unit normals (m, 3) and offsets (m,);
        ``law``: ``(k, b, v_s)``; ``work``: the work arrays (poses, pairs, keys, plane
        points, gaps, Jacobian slots, Jacobians, forces).
        """
        return ((self.point_link, self.point_pos, self.point_radius, self.point_mu,
                 self._groups, self._bounds), (self.normals, self.offsets),
                (self.stiffness, self.damping, self.friction_velocity), self._work)

    def outputs(self, jac):
        """
        Fresh output arrays ``(gen, K, B, M, L, touching, held)`` of :func:`evaluate_into`.

        ``jac``: with the (nv, nv) matrices of a step (else empty ones).  Fresh each time:
        a Simulator keeps an evaluation's results (the end of a step serves the next).
        """
        nv, npairs = self.model.nv, len(self._keys)
        if jac:
            return (np.zeros(nv), np.zeros((nv, nv)), np.zeros((nv, nv)), np.empty((nv, nv)),
                    np.empty((nv, nv)), np.empty(npairs, dtype=np.int64),
                    np.empty(npairs, dtype=np.int64))
        return (np.zeros(nv), _NO_MATRIX, _NO_MATRIX, _NO_MATRIX, _NO_MATRIX,
                np.empty(npairs, dtype=np.int64), _NONE)

    def evaluate(self, q, V, base=None, forces=False, h=None, armature=None, keep=None):
        """
        Contact forces at the state ``(q, V, base)`` (base: the floating base's pose).

        Returns ``(gen, power, energy, contacts, KB, touching)``: the generalized force
        (nv,) ``Σ J_xᵀ f`` (None when nothing touches), the power of its non-conservative
        part (damper, clamp, friction) [W], the springs' energy ``Σ ½ k p²`` [J], with
        ``forces`` the list of :data:`Contact` (each pair of sphere and plane that
        touches), with a step ``h`` ``(K, B, M, held)``: the stiffness and damping (nv, nv)
        of the contacts for an implicit step, the mass matrix at ``q`` (its joints'
        diagonal plus ``armature``, a scalar or (nq,), when given; a float64 (nq,) array is
        taken as it is, unchecked: the Simulator's, checked once) and the keys of the pairs
        they hold (None when no pair touches or reaches its plane within the step), and the
        keys of the pairs that touch.  A pair's key is ``sphere * len(planes) + plane``
        (int64, ascending).

        ``K`` and ``B`` hold the pairs in contact, those that reach the plane within the
        step at their present velocity (``gap + h n·v < 0``: the damper acts in full the
        moment they touch, and a Jacobian without it lets the second stage's impact force
        through undamped; pairs farther than ``h`` :data:`REACH_SPEED` are not looked
        at) and the pairs of ``keep`` (sorted keys, wherever they are: the Simulator
        retakes a step with the pairs it met that its Jacobian did not hold):
        ``K = Σ k J_nᵀ J_n``, ``B = Σ b J_nᵀ J_n + J_xᵀ B_t J_x`` (``J_n = nᵀ J_x``,
        ``f_n`` the force now or, for a pair about to touch, its damper's ``-b n·v``).
        The friction's slope ``B_t`` is the one the step will meet: a point whose sliding
        the friction impulse stops within the step (``μ f_n h e·J_x M⁻¹ J_xᵀ e ≥ |v_t|``,
        ``e`` the sliding direction) sticks, ``B_t = μ f_n / v_s P_t`` (``P_t = I - n
        nᵀ``, the slope at rest); a sliding point keeps the law's slope at its speed ``s``,
        ``μ f_n (sech²(s/v_s)/v_s e eᵀ + tanh(s/v_s)/s (P_t - e eᵀ))``.  (The slope at
        the sliding speed is hundreds of times too small once the step stops the sliding,
        and the second stage then meets the stiff friction undamped; the slope at rest on
        a sliding point damps the whole tangential motion of the step.)
        """
        margin = 0.0 if h is None else h * REACH_SPEED if keep is None else np.inf
        return self.result(*self._evaluate(q, V, base, margin, h, armature, keep), forces)

    def result(self, counts, out, forces=False):
        """
        :meth:`evaluate`'s tuple from an evaluation's ``counts`` and ``out`` arrays.

        With ``forces`` the list of :data:`Contact` from the work arrays: right after the
        evaluation only.
        """
        npairs, power, energy, nt, nh = counts
        gen, K, B, M, _, touching, held = out
        contacts = []
        if forces:
            names, x, F, gap = self.model.link_names, self._x, self._F, self._gap
            contacts = [Contact(names[self.point_link[i]], x[n].copy(), self.normals[j].copy(),
                                F[n].copy(), float(-gap[n]), int(j))
                        for n, (i, j) in enumerate(self._pairs[:npairs].tolist())
                        if gap[n] < 0.0]
        return (gen if nt else None, power, energy, contacts,
                (K, B, M, held[:nh]) if nh else None, touching[:nt])


_NONE = np.zeros(0, dtype=np.int64)   # no pairs kept
_NO_MATRIX = np.zeros((0, 0))         # no K, B, M, L (an evaluation without a step)
