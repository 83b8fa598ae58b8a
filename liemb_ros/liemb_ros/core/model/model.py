"""
The Model: a robot as a tree of 1-DOF joint screws on SE(3) ([M18k] §2).

A :class:`Model` is built once from a URDF and never mutated by algorithms.  It
holds the three equivalent descriptions of [M18k] §2 for every 1-DOF joint
``i`` (bodies and joints share the index; ``parent[i]`` is the predecessor body
``λ(i)``, ``-1`` for the base):

(a) joint frames: ``S_parent[i]`` = S_{i,λ(i)} (joint frame on body λ(i) in its
    body frame), ``S_child[i]`` = S_{i,i} (joint frame on body i in its body frame)
    and ``JX[i]`` = ^J X_i, the screw in the joint frame (eq. (3));
(b) body-fixed POE: ``A_rel[i]`` = A_{λ(i),i} = S_{i,λ(i)} S_{i,i}^-1 (eq. (4)) and
    ``X[i]`` = ^i X_i = Ad_{S_{i,i}} ^J X_i, the screw in body frame i (eq. (5));
(c) spatial POE: ``A[i]`` = A_i = C_i(0) (eq. (11)) and ``Y[i]`` = Y_i = Ad_{A_i} ^i X_i,
    the screw in the base frame at q = 0 (eq. (12)).

Forward kinematics: ``C_i(q) = C_base exp(Y_1 q_1) ... exp(Y_i q_i) A_i`` over the
support path of ``i`` (eq. (10)), or ``C_i = C_λ(i) A_{λ(i),i} exp(^i X_i q_i)`` (eq. (8)).

URDF links are attached rigidly to bodies: ``link_body[l]`` (``-1`` = the base) and
``link_offset[l]`` (pose of the link frame in the body frame); fixed joints are folded
into these offsets and their inertias merged into the body inertia.

Coordinates: ``q`` has ``nq`` entries, one per independent 1-DOF joint, in the order
of ``joint_names``.  Joint ``i`` moves by ``q_mult[i] * q[q_index[i]] + q_offset[i]``
(identity unless mimic joints are coupled to their leaders).

Floating base (``floating=True``): the base body's pose ``C_base`` in SE(3) is an
argument of every algorithm (``base_pose``) and its body-fixed twist
``V_base = (ω^b, v^b)`` leads the velocity vector: ``qd = (V_base, q̇)`` with
``nv = 6 + nq``.  The base pose is integrated on the group, never as Euler angles.
For a fixed base ``nv = nq`` and ``base_pose`` optionally places the robot's root in
the world (identity by default).

Spatial inertias ``inertia[i]`` are 6x6 body-fixed matrices in body frame i,
angular first: ``[[Θ, m d~], [-m d~, m I]]`` ([M18d] eq. (40)), so the kinetic
energy of body i is ``½ V_i^bᵀ inertia[i] V_i^b``.

Model and data (as Pinocchio's): the model is what the robot is; ``model.data``
(:class:`~liemb_ros.core.model.data.Data`) is where the compiled single calls work,
allocated once with the model.
"""
import math
from types import MappingProxyType

import numpy as np

from .._kernels import layout
from . import joints as J
from .assembly import model_arguments
from .data import Data
from .inertia import (  # noqa: F401 (importable from here as before)
    Ad_matrix, Ad_vector, pose_inverse, spatial_inertia, transform_inertia)
from .urdf import URDFError, URDFWarning, parse_urdf, parse_urdf_string

REPRESENTATIONS = layout.REPRESENTATIONS


class Model:
    """
    A robot as joint screws on SE(3); see the module docstring for every field.

    Build with :func:`liemb_ros.load_urdf`.  Arrays are read-only.
    """

    def __init__(self, *, name, source, body_names, parent, kind, S_parent, S_child, JX,
                 inertia, base_inertia, joint_names, q_index, q_mult, q_offset,
                 link_names, link_body, link_offset, floating, root_link, base_link,
                 lower, upper, velocity_limit, effort_limit, damping, friction,
                 gravity=(0.0, 0.0, -9.81), mimic=None, body_joint_type=None,
                 link_parent=None):
        self.name = name
        self.source = source
        self.body_names = list(body_names)
        self.nb = len(self.body_names)
        self.parent = np.asarray(parent, dtype=np.int64).reshape(self.nb)
        self.kind = np.asarray(kind, dtype=np.int64).reshape(self.nb)
        self.S_parent = np.asarray(S_parent, dtype=float).reshape(self.nb, 4, 4)
        self.S_child = np.asarray(S_child, dtype=float).reshape(self.nb, 4, 4)
        self.JX = np.asarray(JX, dtype=float).reshape(self.nb, 6)
        self.inertia = np.asarray(inertia, dtype=float).reshape(self.nb, 6, 6)
        self.base_inertia = np.asarray(base_inertia, dtype=float).reshape(6, 6)
        self.joint_names = list(joint_names)
        self.nq = len(self.joint_names)
        self.floating = bool(floating)
        self.nv = self.nq + (6 if self.floating else 0)
        self.q_index = np.asarray(q_index, dtype=np.int64).reshape(self.nb)
        self.q_mult = np.asarray(q_mult, dtype=float).reshape(self.nb)
        self.q_offset = np.asarray(q_offset, dtype=float).reshape(self.nb)
        self.link_names = list(link_names)
        self.link_body = np.asarray(link_body, dtype=np.int64)
        self.link_offset = np.asarray(link_offset, dtype=float).reshape(-1, 4, 4)
        self.root_link = root_link
        self.base_link = base_link
        self.lower = np.asarray(lower, dtype=float)
        self.upper = np.asarray(upper, dtype=float)
        self.velocity_limit = np.asarray(velocity_limit, dtype=float)
        self.effort_limit = np.asarray(effort_limit, dtype=float)
        self.damping = np.asarray(damping, dtype=float)
        self.friction = np.asarray(friction, dtype=float)
        self.gravity = np.asarray(gravity, dtype=float).reshape(3)
        self.mimic = dict(mimic or {})
        kinds = {J.REVOLUTE: 'revolute', J.PRISMATIC: 'prismatic', J.HELICAL: 'helical'}
        self.body_joint_type = (list(body_joint_type) if body_joint_type is not None
                                else [kinds[int(k)] for k in self.kind])
        if link_parent is None:  # every link hangs from the link of its body's parent
            link_parent = [None if i == 0 else self.link_names[0]
                           for i in range(len(self.link_names))]
        self.link_parent = list(link_parent)
        self._link_index = {n: i for i, n in enumerate(self.link_names)}
        self._joint_index = {n: i for i, n in enumerate(self.joint_names)}
        self._derive()

    # -- derived quantities ------------------------------------------------------------
    def _derive(self):
        nb = self.nb
        self.A_rel = np.empty((nb, 4, 4))
        self.X = np.empty((nb, 6))
        self.A = np.empty((nb, 4, 4))
        self.Y = np.empty((nb, 6))
        for i in range(nb):
            self.A_rel[i] = self.S_parent[i] @ pose_inverse(self.S_child[i])   # eq. (4)
            self.X[i] = Ad_vector(self.S_child[i], self.JX[i])                # eq. (5)
            p = self.parent[i]
            self.A[i] = self.A_rel[i] if p < 0 else self.A[p] @ self.A_rel[i]  # eq. (11)
            self.Y[i] = Ad_vector(self.A[i], self.X[i])                        # eq. (12)
            if p >= i:
                raise ValueError('bodies must be in topological order (parent before child)')
        self.mass = float(np.trace(self.inertia[:, 3:, 3:], axis1=1, axis2=2).sum() / 3.0
                          + self.base_inertia[3, 3])
        # subtree flags: support[i, j] is True when body j is on the path root -> i
        # (the parent's row plus the body itself: O(nb) row copies, not a walk per body)
        self.support = np.zeros((nb, nb), dtype=bool)
        for i in range(nb):
            if self.parent[i] >= 0:
                self.support[i] = self.support[self.parent[i]]
            self.support[i, i] = True
        self.link_frames = {n: (int(self.link_body[i]), self.link_offset[i])
                            for i, n in enumerate(self.link_names)}
        self.link_ids = {n: i for i, n in enumerate(self.link_names)}
        self.fk_shape = (len(self.link_names), 4, 4)   # forward kinematics' result
        self.mass_shape = (self.nv, self.nv)
        self.jacobian_shape = (6, self.nv)
        # the kernels' view of the model: a named tuple of these arrays for the batched
        # kernels (layout.Tree), and the same data packed into one int64 and one float64
        # array for single calls (two arrays to unbox instead of a dozen); the layout is
        # defined once, in liemb_ros.core._kernels.layout
        self.tree = layout.tree(self)
        self.kinematic_tree = layout.kinematics(self)
        self.packed_int, self.packed_float = layout.pack(self)
        # the workspace of the single calls (Pinocchio's Data), and the compiled entry points
        # the algorithms cache per kernel and argument types, bound to the packed model and
        # that workspace (liemb_ros.core._kernels.dispatch.fast)
        self.data = Data(self)
        self.entry_points = {}
        self.shared_coordinates = len(set(self.q_index.tolist())) != nb  # coupled mimic joints
        # read-only, every one: single calls read copies packed above, batches the arrays
        # themselves; a writable array would let the two drift apart (use replace())
        for arr in (self.parent, self.kind, self.S_parent, self.S_child, self.JX,
                    self.inertia, self.base_inertia, self.q_index, self.q_mult, self.q_offset,
                    self.link_body, self.link_offset, self.A_rel, self.X, self.A, self.Y,
                    self.lower, self.upper, self.velocity_limit, self.effort_limit,
                    self.damping, self.friction, self.gravity, self.support):
            arr.setflags(write=False)

    def __getstate__(self):
        """Pickle and copy without the compiled entry points (process-local, rebuilt on use)."""
        state = self.__dict__.copy()
        state['entry_points'] = {}
        state['data'] = Data(self)
        return state

    # -- look-ups ------------------------------------------------------------------------
    def link_index(self, link):
        """Return the index of a link in :attr:`link_names` (given by name or index)."""
        if isinstance(link, (int, np.integer)):
            if 0 <= link < len(self.link_names):
                return int(link)
            raise ValueError(f'link index {link} out of range 0..{len(self.link_names) - 1}')
        try:
            return self._link_index[link]
        except (KeyError, TypeError):
            raise ValueError(f"unknown link {link!r} in model '{self.name}'; links: "
                             f"{', '.join(self.link_names)}") from None

    @property
    def joint_indices(self):
        """Return a read-only mapping of each joint name to its coordinate's index in ``q``."""
        return MappingProxyType(self._joint_index)

    def joint_index(self, joint):
        """Return the index of an independent joint coordinate in ``q`` by name."""
        try:
            return self._joint_index[joint]
        except (KeyError, TypeError):
            raise ValueError(f"unknown joint {joint!r} in model '{self.name}'; joints: "
                             f"{', '.join(self.joint_names)}") from None

    def neutral(self):
        """Return the reference configuration ``q = 0`` (shape ``(nq,)``)."""
        return np.zeros(self.nq)

    def random_configuration(self, rng=None, size=None):
        """Draw a uniform random ``q`` within the joint limits (±π where unlimited)."""
        rng = np.random.default_rng(rng)
        lo = np.where(np.isfinite(self.lower), self.lower, -math.pi)
        hi = np.where(np.isfinite(self.upper), self.upper, math.pi)
        shape = (self.nq,) if size is None else (size, self.nq)
        return rng.uniform(lo, hi, size=shape)

    def moved_body_frame(self, body, S):
        """
        Return a copy of the model with body ``body``'s frame moved by ``S``: ``C_i' = C_i S``.

        Only the representation changes ([M18k] Remark 7): ``A_i' = A_i S``,
        ``^i X_i' = Ad_S^-1 ^i X_i``, inertia and attached link offsets follow, and the
        spatial screws ``Y`` are unchanged.
        """
        S = np.asarray(S, dtype=float)
        Si = pose_inverse(S)
        S_parent = self.S_parent.copy()
        S_child = self.S_child.copy()
        inertia = self.inertia.copy()
        offsets = self.link_offset.copy()
        S_child[body] = Si @ S_child[body]
        for k in np.nonzero(self.parent == body)[0]:
            S_parent[k] = Si @ S_parent[k]
        inertia[body] = transform_inertia(inertia[body], Si)
        for l_ in np.nonzero(self.link_body == body)[0]:
            offsets[l_] = Si @ offsets[l_]
        return self.replace(S_parent=S_parent, S_child=S_child, inertia=inertia,
                            link_offset=offsets)

    def replace(self, **changes):
        """
        Return a new model with some construction arguments changed; this one is unchanged.

        E.g. ``model.replace(gravity=(0, 0, -1.62))`` (the Moon), ``damping=...``,
        ``effort_limit=...``.  Every derived array is rebuilt from the new arguments.
        """
        args = dict(
            name=self.name, source=self.source, body_names=self.body_names,
            parent=self.parent, kind=self.kind, S_parent=self.S_parent, S_child=self.S_child,
            JX=self.JX, inertia=self.inertia, base_inertia=self.base_inertia,
            joint_names=self.joint_names, q_index=self.q_index, q_mult=self.q_mult,
            q_offset=self.q_offset, link_names=self.link_names, link_body=self.link_body,
            link_offset=self.link_offset, floating=self.floating, root_link=self.root_link,
            base_link=self.base_link, lower=self.lower, upper=self.upper,
            velocity_limit=self.velocity_limit, effort_limit=self.effort_limit,
            damping=self.damping, friction=self.friction, gravity=self.gravity,
            mimic=self.mimic, body_joint_type=self.body_joint_type,
            link_parent=self.link_parent)
        unknown = set(changes) - set(args)
        if unknown:
            raise ValueError(f'Model.replace: unknown argument(s) {sorted(unknown)}')
        args.update(changes)
        return Model(**args)

    def __repr__(self):
        base = 'floating' if self.floating else 'fixed'
        return (f"Model('{self.name}', nq={self.nq}, nv={self.nv}, bodies={self.nb}, "
                f'links={len(self.link_names)}, {base} base)')


def build_model(desc, *, floating_base=None, mimic='independent', gravity=(0.0, 0.0, -9.81),
                strict=False):
    """
    Build a :class:`Model` from a :class:`~liemb_ros.core.model.urdf.RobotDescription`.

    ``floating_base``: ``None`` (default) makes the base floating exactly when the URDF
    has a ``floating`` joint at its root; ``True`` makes the root link (or the child of a
    root floating joint) a floating SE(3) base, ``False`` fixes it.
    ``mimic``: ``'independent'`` keeps every mimic joint an independent coordinate (as
    Pinocchio's URDF reader does); ``'couple'`` drives it by its leader,
    ``q = multiplier * q_leader + offset``.  A mimic tag naming an unknown joint is a
    :class:`URDFError` when coupling (or with ``strict``), otherwise a warning.
    The translation itself is :func:`~liemb_ros.core.model.assembly.model_arguments`.
    """
    return Model(**model_arguments(desc, floating_base=floating_base, mimic=mimic,
                                   strict=strict), gravity=gravity)


def load_urdf(path_or_xml, *, floating_base=None, mimic='independent',
              gravity=(0.0, 0.0, -9.81), strict=False, xacro_args=None):
    """
    Load a URDF or xacro file (path) or URDF XML text into a :class:`Model`.

    Parameters
    ----------
    path_or_xml : str, os.PathLike or bytes
        A file path (a ``str`` without ``<``), or the XML itself.  ``*.xacro`` files
        (e.g. ``robot.urdf.xacro``) are expanded with xacro first.  Text received from
        elsewhere (a topic, a parameter) belongs in :func:`load_urdf_string`, which never
        takes it for a path.
    floating_base, mimic, gravity
        See :func:`build_model`.
    strict : bool
        Refuse physically impossible inertials instead of warning.
    xacro_args : dict or str, optional
        The xacro arguments, ``{'name': value}`` or ``'name:=value name2:=value2'``.  Not
        ``None`` (even empty) runs xacro on the file whatever its extension.

    Returns
    -------
    Model

    Raises
    ------
    URDFError
        Naming the file and the offending link or joint (see
        :func:`~liemb_ros.core.model.urdf.parse_urdf`,
        :func:`~liemb_ros.core.model.urdf.expand_xacro`).

    """
    return build_model(parse_urdf(path_or_xml, strict=strict, xacro_args=xacro_args),
                       floating_base=floating_base, mimic=mimic, gravity=gravity,
                       strict=strict)


def load_urdf_string(xml, *, source='<string>', floating_base=None, mimic='independent',
                     gravity=(0.0, 0.0, -9.81), strict=False):
    """
    Load URDF XML text into a :class:`Model`, never touching the file system.

    The safe entry for text from outside (the ``robot_description`` topic or parameter):
    whatever it holds, it is never opened as a file path and never run through xacro.

    Parameters
    ----------
    xml : str or bytes
        The URDF document (bytes must be UTF-8).
    source : str
        The text's name in error messages (e.g. ``'/robot_description'``).
    floating_base, mimic, gravity, strict
        As for :func:`load_urdf`.

    Returns
    -------
    Model

    Raises
    ------
    URDFError
        ``'<source>: not URDF XML'`` for text that does not start with an XML element
        (after whitespace, byte-order mark, XML declaration and comments),
        ``'<source>: not UTF-8 text at byte N'``, and every problem :func:`load_urdf`
        reports, naming ``source`` and the link or joint.

    """
    return build_model(parse_urdf_string(xml, source=source, strict=strict),
                       floating_base=floating_base, mimic=mimic, gravity=gravity,
                       strict=strict)


__all__ = ['Model', 'load_urdf', 'load_urdf_string', 'build_model', 'URDFError', 'URDFWarning',
           'REPRESENTATIONS', 'spatial_inertia', 'transform_inertia']
