"""
The packed model layout: what the compiled kernels read of a :class:`~liemb_ros.core.model.Model`.

Every kernel reads the model as one :class:`Tree`: a named tuple of its arrays
(``m.parent``, ``m.X``, ``m.inertia``, ...), never a position in a tuple.  Two routes
build it, reading the same numbers (the model is immutable):

* a batched kernel takes the Tree of the model's own arrays (:func:`tree`, kept as
  ``model.tree``): unboxed once per batch;
* a single call passes the model as two flat read-only arrays, ``model.packed_int``
  (int64) and ``model.packed_float`` (float64), because numba unboxes each array argument
  of a call (about 25 ns each, docs/design.md, "Model and Data"): two arrays instead
  of a dozen.  The entry point rebuilds the Tree from them as views (:func:`unpack`,
  inlined: no copy, no call).

This module is the one place that knows the packed layout; it writes it (:func:`pack`)
and reads it back (:func:`unpack`).  It also sizes the workspace of the single calls
(:func:`work_floats`; Pinocchio's ``Data``, MuJoCo's ``mjData``): one float64 array per
model (:class:`~liemb_ros.core.model.data.Data`), from which every kernel takes its work
arrays as views instead of allocating them per call.

``packed_int``: a header of :data:`HEADER` numbers (``nb``, ``nbase``, the number of links
``nl``, the number of joint coordinates ``nq`` at :data:`NB`, :data:`NBASE`, :data:`NL`,
:data:`NQ`), then ``parent`` (nb), ``q_index`` (nb), ``link_body`` (nl).

``packed_float``: the per-body blocks, each ``nb`` times its width (offset of block ``k`` =
``nb`` times the sum of the widths before it: :data:`X_AT` ... :data:`INERTIA_AT`), then
the model blocks at ``PER_BODY * nb`` (:data:`BASE_INERTIA_AT`, :data:`GRAVITY_AT`,
:data:`SCALE_AT`), then
the per-link block at ``PER_BODY * nb + MODEL_FLOATS``:

==============  ======  ==================================================================
field           width   meaning (see :mod:`liemb_ros.core.model.model`)
==============  ======  ==================================================================
X               6       ``^i X_i``, joint screw in body frame i ([M18k] eq. (5))
A_rel           16      ``A_{λ(i),i}``, relative reference pose ([M18k] eq. (4))
q_mult          1       ``θ_i = q_mult[i] q[q_index[i]] + q_offset[i]``
q_offset        1
inertia         36      6x6 body-fixed spatial inertia ([M18d] eq. (40))
base_inertia    36      once: the base's 6x6 inertia
gravity         3       once: the gravity vector in the world frame
inertia_scale   1       once: the largest ``|inertia|`` entry (:func:`inertia_scale`)
link_offset     16      per link: pose of the link frame in its body's frame
==============  ======  ==================================================================

This module imports nothing of ours but :func:`~.numba_entry.c_view`, so the model layer can use
:func:`pack`.
"""
from collections import namedtuple

import numpy as np
from numba import njit

from .numba_entry import c_view

#: the four twist representations, in the order the kernels number them (``rep`` 0..3);
#: the model and every public function take these names
REPRESENTATIONS = ('body', 'spatial', 'hybrid', 'mixed')

#: The model as every kernel reads it: named fields, no positions to remember.
#: A numba-typed named tuple (numba compiles attribute reads to the field itself, so it
#: costs what a plain tuple does).  Kernels take it as ``model`` and read ``model.parent``,
#: ``model.X``, ...; its fields are the arrays of :class:`~liemb_ros.core.model.Model` of the
#: same names (``nbase`` is 6 for a floating base, else 0).
#: ``inertia_scale``: the largest ``|inertia|`` entry of any body, the unit of the
#: articulated-body algorithm's singularity tolerance (computed once, not per call).
Tree = namedtuple('Tree', ('parent', 'X', 'A_rel', 'q_index', 'q_mult', 'q_offset', 'nbase',
                           'inertia', 'base_inertia', 'gravity', 'link_body', 'link_offset',
                           'inertia_scale'))
#: The kinematic fields of a :class:`Tree`, same names: what the single-call kinematics
#: entry points unpack (:func:`unpack_kinematics`).  Every array view a call builds costs
#: reference counting (an atomic increment and decrement): the whole Tree made the
#: single-call link pose 25 % slower (panda, 0.88 against 1.1 µs per call).  A kernel
#: written against ``model.<field>`` takes either.
#: Without the link fields, which the sweeps do not read (forward kinematics takes them
#: beside it: :func:`unpack_links`): two arrays fewer to count on every configuration of
#: a batch (the batched link pose of UR5 11 ns a configuration faster, 60 against 71 ns).
Kinematics = namedtuple('Kinematics', ('parent', 'X', 'A_rel', 'q_index', 'q_mult', 'q_offset',
                                       'nbase'))

# packed_int
NB = 0
NBASE = 1
NL = 2
NQ = 3
HEADER = 4

# packed_float: per-body blocks, as multiples of nb
X_AT = 0
A_REL_AT = X_AT + 6
Q_MULT_AT = A_REL_AT + 16
Q_OFFSET_AT = Q_MULT_AT + 1
INERTIA_AT = Q_OFFSET_AT + 1
PER_BODY = INERTIA_AT + 36            # 60
# model blocks, after PER_BODY * nb
BASE_INERTIA_AT = 0
GRAVITY_AT = BASE_INERTIA_AT + 36
SCALE_AT = GRAVITY_AT + 3
MODEL_FLOATS = SCALE_AT + 1           # 40
# per-link block, after PER_BODY * nb + MODEL_FLOATS
PER_LINK = 16


def pack(model):
    """
    Return ``(packed_int, packed_float)`` of ``model``, read-only (the layout above).

    Called once by the model when it is built.
    """
    nb = model.nb
    ints = np.concatenate(([nb, 6 if model.floating else 0, len(model.link_names), model.nq],
                           model.parent, model.q_index, model.link_body)).astype(np.int64)
    floats = np.concatenate(
        [np.ravel(a) for a in (model.X, model.A_rel, model.q_mult, model.q_offset,
                               model.inertia, model.base_inertia, model.gravity,
                               [inertia_scale(model)], model.link_offset)])
    assert ints.shape[0] == HEADER + 2 * nb + len(model.link_names)
    assert floats.shape[0] == PER_BODY * nb + MODEL_FLOATS + PER_LINK * len(model.link_names)
    ints.setflags(write=False)
    floats.setflags(write=False)
    return ints, floats


def tree(model):
    """
    Return the :class:`Tree` of ``model``'s own arrays.

    The batched kernels take this (one unboxing per batch, not per configuration); the
    single-call entry points read the same numbers from the packed arrays (:func:`unpack`).
    """
    return Tree(model.parent, model.X, model.A_rel, model.q_index, model.q_mult,
                model.q_offset, np.int64(6 if model.floating else 0), model.inertia,
                model.base_inertia, model.gravity, model.link_body, model.link_offset,
                np.float64(inertia_scale(model)))


def inertia_scale(model):
    """The largest ``|inertia|`` entry of ``model``'s bodies (0 without bodies)."""
    return float(np.abs(model.inertia).max()) if model.nb else 0.0


def kinematics(model):
    """
    Return the :class:`Kinematics` of ``model``'s own arrays (the batched kinematics kernels).

    A batch passes the model to the inlined sweeps once per configuration, and numba
    counts a reference to every array of the tuple each time: the kinematic fields alone
    made the batched Jacobian 15 % faster than the whole :class:`Tree` (Panda, 460 against
    550 ns a configuration).
    """
    return Kinematics(model.parent, model.X, model.A_rel, model.q_index, model.q_mult,
                      model.q_offset, np.int64(6 if model.floating else 0))


@njit(cache=True, inline='always')
def unpack_kinematics(ki, kf):
    """Return the :class:`Kinematics` of a packed model, as views."""
    nb = ki[NB]
    return Kinematics(ki[HEADER:HEADER + nb],
                      c_view(kf[X_AT * nb:A_REL_AT * nb], (nb, 6)),
                      c_view(kf[A_REL_AT * nb:Q_MULT_AT * nb], (nb, 4, 4)),
                      ki[HEADER + nb:HEADER + 2 * nb],
                      kf[Q_MULT_AT * nb:Q_OFFSET_AT * nb],
                      kf[Q_OFFSET_AT * nb:INERTIA_AT * nb],
                      ki[NBASE])


@njit(cache=True, inline='always')
def unpack_links(ki, kf):
    """Return ``(link_body, link_offset)`` of a packed model, as views (the Tree's fields)."""
    nb = ki[NB]
    nl = ki[NL]
    lo = PER_BODY * nb + MODEL_FLOATS
    return (ki[HEADER + 2 * nb:HEADER + 2 * nb + nl],
            c_view(kf[lo:lo + PER_LINK * nl], (nl, 4, 4)))


@njit(cache=True, inline='always')
def unpack(ki, kf):
    """Return the :class:`Tree` of a packed model (``packed_int``, ``packed_float``), as views."""
    nb = ki[NB]
    nl = ki[NL]
    o = PER_BODY * nb
    lo = o + MODEL_FLOATS
    return Tree(ki[HEADER:HEADER + nb],
                c_view(kf[X_AT * nb:A_REL_AT * nb], (nb, 6)),
                c_view(kf[A_REL_AT * nb:Q_MULT_AT * nb], (nb, 4, 4)),
                ki[HEADER + nb:HEADER + 2 * nb],
                kf[Q_MULT_AT * nb:Q_OFFSET_AT * nb],
                kf[Q_OFFSET_AT * nb:INERTIA_AT * nb],
                ki[NBASE],
                c_view(kf[INERTIA_AT * nb:o], (nb, 6, 6)),
                c_view(kf[o + BASE_INERTIA_AT:o + GRAVITY_AT], (6, 6)),
                kf[o + GRAVITY_AT:o + SCALE_AT],
                ki[HEADER + 2 * nb:HEADER + 2 * nb + nl],
                c_view(kf[lo:lo + PER_LINK * nl], (nl, 4, 4)),
                kf[o + SCALE_AT])


# --------------------------------------------------------------------------- the workspace
# The floats each kernel's work arrays take (the kernels slice them in this order from the
# workspace: see each kernel's ``_*_work``).  ``nb`` bodies, ``ncol = nbase + nb`` columns.
@njit(cache=True, inline='always')
def id_floats(nb):
    """Body-fixed RNEA: ``fb`` (nb + 3, 6), ``V``, ``A``, ``W`` (nb + 1, 6), ``G`` (nb, 4, 4)."""
    return 4 * 6 * (nb + 1) + 12 + 16 * nb


@njit(cache=True, inline='always')
def id_frame_floats(nb):
    """Spatial or hybrid RNEA past ``fb``: ``C``, ``V``, ``A``, ``W``, ``Js`` or ``Z``, scratch."""
    return 16 * (nb + 1) + 18 * (nb + 1) + 6 * nb + 16 + 10 + 12 + 6


@njit(cache=True, inline='always')
def aba_floats(nb):
    """ABA: ``G``, ``IA``, five node 6-vectors, ``Dinv``, ``u``, two 6x6, two 6-vectors."""
    n1 = nb + 1
    return 16 * nb + 36 * n1 + 30 * n1 + 2 * n1 + 84


@njit(cache=True, inline='always')
def crba_floats(nb, ncol):
    """CRBA: poses, column 6-vectors ``Js``, ``Jd``, twists, two 10-parameter sums, scratch."""
    n1 = nb + 1
    return 16 * n1 + 12 * ncol + 6 * n1 + 20 * n1 + 12


@njit(cache=True, inline='always')
def coriolis_floats(nb, ncol):
    """Coriolis matrix: poses, column and node 6-vectors, two 10-parameter subtree sums."""
    n1 = nb + 1
    return 16 * n1 + 6 * (2 * ncol + 2 * n1 + 5) + 20 * n1


@njit(cache=True, inline='always')
def poses_floats(nb):
    """Forward kinematics: the base and body poses ``C`` (nb + 1, 4, 4)."""
    return 16 * (nb + 1)


@njit(cache=True, inline='always')
def jacobian_floats(nb, ncol):
    """Jacobian sweep: poses, scratch, the link pose, the support path (int64), ``J`` (6, ncol)."""
    return 16 * nb + 44 + nb + 6 * ncol


@njit(cache=True, inline='always')
def derivatives_floats(nb, ncol):
    """∂τ/∂q, ∂τ/∂q̇: poses, node 6-vectors, 10-parameter inertias, column 6-vectors."""
    n1 = nb + 1
    return 16 * n1 + 30 * n1 + 24 + 20 * n1 + 48 * ncol


@njit(cache=True, inline='always')
def regressor_floats(nb):
    """Regressor: ``V``, ``A``, ``W`` (nb + 1, 6), ``G``, a (10, 6) block, ``fb``, ``tau``."""
    return 18 * (nb + 1) + 16 * nb + 60 + 6 * (nb + 3) + nb + 6


def _size(f, *args):
    """``f(*args)`` by its plain Python function (no compilation; also without the JIT)."""
    return getattr(f, 'py_func', f)(*args)


def work_floats(nb, ncol):
    """Return the size of a workspace that every single-call kernel can work in (floats)."""
    return max(_size(id_floats, nb) + ncol,                       # + τ of the joint wrenches
               6 * (nb + 3) + _size(id_frame_floats, nb),
               _size(aba_floats, nb), _size(poses_floats, nb),
               _size(crba_floats, nb, ncol), _size(coriolis_floats, nb, ncol),
               _size(jacobian_floats, nb, ncol), _size(derivatives_floats, nb, ncol),
               _size(regressor_floats, nb))
