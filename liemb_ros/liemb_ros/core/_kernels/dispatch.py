"""
Dispatch: between the public functions and the compiled kernels.

* **Status codes.**  Kernels never raise for bad numbers: they return a status (``OK``,
  which input is NaN/inf, or a singular articulated inertia), checked inside the kernel
  (:func:`finite`, :func:`check_state`, :func:`check_inputs`), because a Python-side
  ``isfinite`` costs more than the whole call (design.md, "Model and Data").
  :func:`check` turns a status into the ValueError naming the argument; batch loops raise
  inside the kernel (:func:`raise_status`).
* **Canonicalisation.**  :func:`as_batch`, :func:`base_arg`, :func:`fext_arg`, :func:`states`,
  :func:`out_array`, :func:`armature_arg`: user input as float64, C-contiguous, aligned,
  writeable arrays of checked shapes, and the stand-ins for an omitted argument (identity
  base pose, no wrenches, no armature) of the same types, so that each kernel argument has
  one numba type whatever the call (fixed or floating base, pose or wrenches given or not,
  one base pose for a batch or one each: :func:`at`) and each kernel compiles once.
* **Entry-point cache.**  :func:`fast` calls a single-call kernel (the packed model, and
  the model's workspace ``model.data`` for a kernel with work arrays, first) through the
  compiled entry point of its overload, cached in ``model.entry_points``: numba's
  dispatcher would resolve the type of every argument on every call.
* **The shortest path.**  The most common single calls (no base pose or wrenches, or a
  base pose given as a 4x4 array) check in Python only what the entry point cannot
  survive: that each array argument is an ``ndarray`` of dtype float64 with the right
  number of dimensions (numba's unboxing writes one shape and one stride per dimension
  the array has, and checks nothing but the item size).  They call the cached entry
  point at once; its kernel checks the lengths, strides and alignment (:func:`plain`,
  :func:`plain_pose`) and answers :data:`LAYOUT` for anything else, and the function then
  takes its checked path (canonicalisation above), which copies, converts or refuses with
  a message.  Any other non-zero status also takes the checked path, which raises it.
* **Batches on every core.**  :func:`run_batch` splits a batch into contiguous chunks of
  configurations and runs the batch kernel (compiled ``nogil=True``) on each chunk, in the
  calling thread and the threads of a persistent pool (each takes the next chunk left).  A
  chunk is a slice of the same arrays, so the kernel runs its one compiled specialisation
  on it and each configuration is computed by exactly the code of the serial loop:
  results are bit for bit those of ``threads=1``.  ``threads`` (:func:`threads_arg`) is a
  keyword of the batch calls, its default :func:`set_num_threads`, else every core the
  process may run on (``os.sched_getaffinity``); a batch too small to pay for the
  hand-off (:data:`CHUNK_NS`) runs serially.

The packed model the single-call kernels read is defined in :mod:`.layout`.
"""
import itertools
import os
import threading

import numpy as np
from numba import njit

from .layout import NBASE, NQ, REPRESENTATIONS
from .numba_entry import entry_point

OK = 0
BAD_Q = 1
BAD_QD = 2
BAD_BASE = 3
BAD_QDD = 4
BAD_TAU = 5
BAD_FEXT = 6
SINGULAR = 7   # SINGULAR: the floating base; SINGULAR + 1 + b: body b
LAYOUT = -1    # an argument is not of the canonical shape and layout (:func:`plain`)
STATUS_NAMES = {BAD_Q: 'q', BAD_QD: 'qd', BAD_BASE: 'base_pose', BAD_QDD: 'qdd',
                BAD_TAU: 'tau', BAD_FEXT: 'f_ext'}

FORMS = ('body', 'spatial', 'hybrid')
FORM_INDEX = {name: i for i, name in enumerate(FORMS)}
REP_INDEX = {name: i for i, name in enumerate(REPRESENTATIONS)}

F64 = np.dtype(np.float64)
ND = np.ndarray   # the shortest paths test ``x.__class__ is ND`` (a global, not np.ndarray)
# The stand-ins for an omitted argument are writeable, C-contiguous float64 arrays like the
# caller's canonical ones (:func:`canonical`): numba types an array by dtype, dimensions,
# layout and writeability, so an identity base pose of another type (read-only, say) would
# compile every kernel twice, once for a fixed base and once for a given base pose.  No
# kernel writes into an input; NO_FEXT and NO_ARM have no elements to write.
EYE4 = np.eye(4)
NO_FEXT = np.zeros((0, 6))
NO_ARM = np.zeros(0)
# batches: one base pose (one set of wrenches) for every configuration is a first axis of
# length 1 (a view), which the batch kernels use for every k (:func:`at`)
EYE4_ONE = EYE4.reshape((1, 4, 4))
NO_FEXT_ONE = NO_FEXT.reshape((1, 0, 6))


# --------------------------------------------------------------------------- in kernels
@njit(cache=True, inline='always')
def finite(a):
    """Tell whether no element of ``a`` is NaN or inf (``x * 0`` is NaN exactly for those)."""
    acc = 0.0
    for x in a.flat:  # no branch per element: vectorizes (5 ns for 25 numbers, not 90)
        acc += x * 0.0
    return acc == 0.0


@njit(cache=True, inline='always')
def plain(a, n):
    """
    Whether the vector ``a`` holds ``n`` float64 contiguously at an aligned address.

    A single call's shortest path (module docstring) hands the caller's arrays to the
    entry point after checking only their class, dtype and number of dimensions in
    Python (about 65 ns an array; ``flags.carray`` and a shape tuple cost as much again,
    and the entry point itself checks nothing but the item size); the kernel checks the
    rest, for next to nothing, and answers :data:`LAYOUT` for anything else: the caller
    then takes the checked path, which copies or refuses the argument.
    """
    return (a.shape[0] == n and (n < 2 or a.strides[0] == 8)
            and a.ctypes.data % 8 == 0)


@njit(cache=True, inline='always')
def plain_pose(a):
    """Whether the 2-d array ``a`` is a contiguous, aligned 4x4 float64 matrix (:func:`plain`)."""
    return (a.shape[0] == 4 and a.shape[1] == 4 and a.strides[0] == 32 and a.strides[1] == 8
            and a.ctypes.data % 8 == 0)


@njit(cache=True, inline='always')
def sizes(ki):
    """``(nq, nv)`` of a packed model (``packed_int``): joint coordinates and velocities."""
    nq = ki[NQ]
    return nq, nq + ki[NBASE]


@njit(cache=True, inline='always')
def check_state(q, qd, base):
    """Return the status of the first non-finite of ``q``, ``qd``, ``base``, else ``OK``."""
    if not finite(q):
        return BAD_Q
    if not finite(qd):
        return BAD_QD
    if not finite(base):
        return BAD_BASE
    return OK


@njit(cache=True, inline='always')
def check_inputs(q, qd, qdd, base, fext):
    """Return the status of the first non-finite argument, else ``OK``."""
    if not finite(q):
        return BAD_Q
    if not finite(qd):
        return BAD_QD
    if not finite(qdd):
        return BAD_QDD
    if not finite(base):
        return BAD_BASE
    if not finite(fext):
        return BAD_FEXT
    return OK


@njit(cache=True, inline='always')
def at(a, k):
    """Row ``k`` of a batch argument, or its one row for all (a first axis of length 1)."""
    return a[k if a.shape[0] != 1 else 0]


@njit(cache=True)
def raise_status(st):
    """Raise the ValueError of a non-finite-input status inside a compiled batch loop."""
    if st == BAD_Q:
        raise ValueError('q contains NaN or inf')
    if st == BAD_QD:
        raise ValueError('qd contains NaN or inf')
    if st == BAD_QDD:
        raise ValueError('qdd contains NaN or inf')
    if st == BAD_BASE:
        raise ValueError('base_pose contains NaN or inf')
    if st == BAD_TAU:
        raise ValueError('tau contains NaN or inf')
    if st == BAD_FEXT:
        raise ValueError('f_ext contains NaN or inf')


# --------------------------------------------------------------------------- statuses
def check(model, st):
    """Raise the ValueError of a kernel status (non-finite input, singular inertia)."""
    if st == LAYOUT:   # the checked paths pass canonical arrays: never, unless a bug
        raise ValueError(f"model '{model.name}': an argument is not a contiguous, aligned "
                         'float64 array of the expected shape')
    if st >= SINGULAR:
        raise singular(model, st)
    if st != OK:
        raise ValueError(f'{STATUS_NAMES[st]} contains NaN or inf')


def singular(model, st):
    """Return the ValueError of a singular articulated inertia (status ``>= SINGULAR``)."""
    b = st - SINGULAR - 1
    what = (f"body '{model.body_names[b]}'" if b >= 0 else 'the floating base')
    return ValueError(f"forward dynamics of model '{model.name}': the articulated inertia of "
                      f'{what} is singular (a massless leaf or a body without inertia about '
                      'its joint); the mass matrix is not invertible')


# --------------------------------------------------------------------------- entry points
def fast(model, key, kernel, args):
    """
    Return ``kernel(*args)``, after the first call through the entry point cached under ``key``.

    ``args`` begin with the packed model (``model.packed_int``, ``model.packed_float``)
    and, for a kernel with work arrays, its workspace ``model.data.work``
    (:class:`~liemb_ros.core.model.data.Data`).  numba's dispatcher resolves the type of
    every argument on every call; the entry point of the overload the first call compiled
    or loaded from the cache skips that (docs/design.md, "Model and Data").  The entry
    point does not check types, so ``key`` and ``model`` must fix the numba type of every
    argument: arrays are the model's own, module constants, or canonical (float64, C
    contiguous, aligned, writeable: :func:`as_batch`, :func:`base_arg`, or the stand-ins
    :data:`EYE4`, :data:`NO_FEXT`, :data:`NO_ARM` of the same types), and ``key`` names
    the kernel.
    """
    entry = model.entry_points.get(key)
    if entry is None:
        out = kernel(*args)
        model.entry_points[key] = entry_point(kernel, args)
        return out
    return entry(*args)


# --------------------------------------------------------------------------- canonical input
def canonical(x):
    """``x`` as a float64, C-contiguous, aligned, writeable ndarray (a copy unless it is one)."""
    if x.__class__ is np.ndarray and x.dtype is F64 and x.flags.carray:
        return x
    return np.array(x, dtype=F64, order='C')


def plain_vectors(model, q, a, b):
    """
    Whether ``q`` (nq,), ``a`` and ``b`` (nv,) go to an entry point as they are.

    Float64, one-dimensional, C-contiguous ndarrays of those lengths: what
    :func:`as_batch` returns unchanged for a single configuration (the contact
    evaluation's check; the public single calls leave most of it to their kernels).
    """
    nv = model.nv
    return (q.__class__ is np.ndarray and a.__class__ is np.ndarray
            and b.__class__ is np.ndarray and q.dtype is F64 and a.dtype is F64
            and b.dtype is F64 and q.shape == (model.nq,) and a.shape == (nv,)
            and b.shape == (nv,) and q.flags.carray and a.flags.carray and b.flags.carray)


def as_batch(model, x, n, name):
    """``(array, batched)`` with x of shape (n,) or (B, n) as a canonical float64 array."""
    a = x if (x.__class__ is np.ndarray and x.dtype is F64 and x.flags.carray) else (
        np.array(x, dtype=F64, order='C'))
    if a.ndim == 1:
        if a.shape[0] == n:
            return a, False
    elif a.ndim == 2 and a.shape[1] == n:
        return a, True
    raise ValueError(f"{name} must have shape ({n},) or (B, {n}) for model '{model.name}', "
                     f'got {a.shape}')


def states(model, q, vectors):
    """Check shapes: ``q`` (nq,)/(B, nq) and each of ``vectors`` (nv,)/(B, nv), same B."""
    q, batched = as_batch(model, q, model.nq, 'q')
    out = [q]
    for name, v in vectors:
        v, vb = as_batch(model, v, model.nv, name)
        if vb != batched or (batched and v.shape[0] != q.shape[0]):
            raise ValueError(f'q and {name} batch shapes differ: {q.shape} vs {v.shape}')
        out.append(v)
    return out, (q.shape[0] if batched else None)


def base_arg(model, base_pose, B):
    """
    Return the base pose as a canonical (4, 4) array (``B`` None), else (1 or B, 4, 4).

    The identity if omitted.  A batch's poses have a first axis of length ``B``, or of
    length 1 (a view) for one pose of every configuration (the kernels read it with
    :func:`at`): one numba type in all cases.
    """
    if base_pose is None:
        return EYE4 if B is None else EYE4_ONE
    b = canonical(base_pose)
    if B is None:
        if b.shape != (4, 4):
            raise ValueError(f'base_pose must be a 4x4 pose, got shape {b.shape}')
        return b
    if b.shape == (4, 4):
        return b.reshape((1, 4, 4))
    if b.shape != (B, 4, 4):
        raise ValueError(f'base_pose must have shape (4, 4) or ({B}, 4, 4), got {b.shape}')
    return b


def fext_arg(model, f_ext, B):
    """``f_ext`` as an (nl, 6) (or (1 or B, nl, 6), see :func:`base_arg`) canonical array."""
    if f_ext is None:
        return NO_FEXT if B is None else NO_FEXT_ONE
    nl = len(model.link_names)
    if isinstance(f_ext, dict):
        arr = np.zeros((nl, 6))
        for link, w in f_ext.items():
            w = np.asarray(w, dtype=float)
            if w.shape != (6,):
                raise ValueError(f'f_ext[{link!r}] must be a wrench (m, f) of shape (6,), '
                                 f'got {w.shape}')
            arr[model.link_index(link)] += w
    else:
        arr = canonical(f_ext)
    if B is None:
        if arr.shape != (nl, 6):
            raise ValueError(f'f_ext must have shape ({nl}, 6) (one wrench per link of '
                             f"model '{model.name}') or be a {{link: wrench}} dict, "
                             f'got {arr.shape}')
        return arr
    if arr.shape == (nl, 6):
        return arr.reshape((1, nl, 6))
    if arr.shape != (B, nl, 6):
        raise ValueError(f'f_ext must have shape ({nl}, 6) or ({B}, {nl}, 6), got {arr.shape}')
    return arr


def armature_arg(model, armature):
    """``armature`` (scalar or (nq,)) as a canonical, finite, non-negative (nq,) array."""
    arm = np.array(np.broadcast_to(np.asarray(armature, dtype=float), (model.nq,)),
                   dtype=F64, order='C')
    if not (np.all(np.isfinite(arm)) and np.all(arm >= 0)):
        raise ValueError('armature must be finite and non-negative')
    return arm


def rep_index(representation):
    """Index of a twist representation name (``REPRESENTATIONS``); ValueError if unknown."""
    try:
        return REP_INDEX[representation]
    except (KeyError, TypeError):
        raise ValueError(f'unknown representation {representation!r}; expected one of '
                         f"{', '.join(REPRESENTATIONS)}") from None


def form_index(form):
    """Index of an inverse-dynamics form name (:data:`FORMS`); ValueError if unknown."""
    try:
        return FORM_INDEX[form]
    except (KeyError, TypeError):
        raise ValueError(f"unknown form {form!r}; expected one of {', '.join(FORMS)}") from None


def out_array(out, shape, inputs=()):
    """
    Return ``out`` for a result of ``shape``: a new array, or the caller's after checks.

    The kernels write into it without further checks, so it must be float64, C-contiguous,
    aligned and writeable, of exactly ``shape``, and must not overlap the inputs: ``inputs``
    are ``(name, array)`` pairs, and an ``out`` sharing memory with one of them is refused
    with a ValueError naming it (a kernel would overwrite its input while reading it).
    """
    if out is None:
        return np.empty(shape)
    if not (isinstance(out, np.ndarray) and out.dtype == F64 and out.shape == shape
            and out.flags.carray):
        if isinstance(out, np.ndarray):
            got = f'{out.dtype} {out.shape}'
            if not out.flags.carray:
                got += ', not C-contiguous, aligned and writeable'
        else:
            got = type(out).__name__
        raise ValueError(f'out must be a writeable, C-contiguous float64 array of shape '
                         f'{shape}; got {got}')
    for name, a in inputs:
        if np.may_share_memory(out, a) and np.shares_memory(out, a):
            raise ValueError(f'out overlaps {name}: the result would overwrite its own input; '
                             'pass an array that shares no memory with the arguments')
    return out


# --------------------------------------------------------------------------- batches on every core
CHUNK_NS = 100_000
"""Least estimated work [ns] of a chunk: handing one to a pool thread costs ~10-50 µs."""
CHUNKS_PER_THREAD = 4
"""Chunks a batch is cut into per thread, at most (:func:`run_batch`)."""

_SETTING = {'threads': None}   # set_num_threads; None: every core available to the process
_POOL = {'pool': None, 'workers': 0, 'pid': None}
_POOL_LOCK = threading.Lock()


def available_cores():
    """Number of cores this process may run on (its affinity mask; ``os.cpu_count()`` else)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


def _positive_int(n, what):
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f'{what} must be a positive integer (1 runs a batch serially, in the '
                         f'calling thread), got {n!r}')
    return int(n)


def threads_arg(threads):
    """The number of threads a batch call uses: ``threads``, checked, or the default."""
    if threads is None:
        n = _SETTING['threads']
        return available_cores() if n is None else n
    return _positive_int(threads, 'threads')


def set_num_threads(n):
    """
    Set how many threads the batch calls use by default (``threads=`` overrides it per call).

    ``n``: a positive integer (1: every batch runs serially in the calling thread, as before
    this setting existed), or None for every core available to the process
    (``os.sched_getaffinity``, the default).  Results do not depend on it: each
    configuration of a batch is computed by the same compiled code whichever thread runs it.
    """
    _SETTING['threads'] = None if n is None else _positive_int(n, 'the number of threads')


def get_num_threads():
    """The number of threads a batch call uses by default (:func:`set_num_threads`)."""
    return threads_arg(None)


def _pool(workers):
    """The persistent pool of batch threads, grown to ``workers`` threads if smaller."""
    from concurrent.futures import ThreadPoolExecutor  # (on the first threaded batch only)
    with _POOL_LOCK:
        pool = _POOL['pool']
        if pool is None or _POOL['workers'] < workers or _POOL['pid'] != os.getpid():
            if pool is not None and _POOL['pid'] == os.getpid():
                pool.shutdown(wait=False)  # its queued chunks still run
            # (a forked child inherits the pool object but not its threads: a new one)
            pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix='liemb-batch')
            _POOL.update(pool=pool, workers=workers, pid=os.getpid())
        return pool


def _status(result):
    """The status of a batch kernel's result: an int status, ``(out, status)``, or OK."""
    if isinstance(result, (int, np.integer)):
        return int(result)
    if isinstance(result, tuple):
        return int(result[-1])
    return OK


def run_batch(kernel, args, batched, threads, cost_ns):
    """
    Run the batch kernel ``kernel(*args)`` over its configurations; return its status.

    ``batched``: the positions in ``args`` of the arrays with the leading batch axis (inputs
    and outputs; the first one's length is the batch size ``B``, one of length 1 is one row
    for every configuration, :func:`at`); ``threads``: the ``threads`` argument of the
    public call (:func:`threads_arg`); ``cost_ns``: the estimated time of one
    configuration.  With one chunk the kernel runs as it always did.  Otherwise the arrays
    of ``B`` rows are cut into contiguous chunks (those of one row go whole to every chunk)
    of at least two configurations and at least
    :data:`CHUNK_NS` of work, up to :data:`CHUNKS_PER_THREAD` per thread, which the
    calling thread and ``threads - 1`` pool threads take in turn until none is left (on a
    shared machine a thread that is not scheduled for a while holds up one small chunk, not
    a share of the batch).  All chunks finish before it returns or raises; the outcome is
    the serial loop's: the first chunk (in batch order) that raised or returned a non-OK
    status decides, and since each chunk stops at its first bad configuration as the
    serial loop does, that is the serial loop's first bad configuration.
    """
    B = args[batched[0]].shape[0]
    if B * cost_ns < 2 * CHUNK_NS or B < 4 or threads == 1:
        # too small to split (the common case of a few configurations: no more checks)
        if threads is not None:
            threads_arg(threads)
        result = kernel(*args)
        return result if result.__class__ is int else _status(result)
    min_chunk = max(2, -(-CHUNK_NS // max(int(cost_ns), 1)))
    n = min(threads_arg(threads), B // min_chunk)
    if n <= 1:
        return _status(kernel(*args))
    m = min(B // min_chunk, CHUNKS_PER_THREAD * n)
    bounds = [B * i // m for i in range(m + 1)]
    outcomes = [None] * m
    take = itertools.count()   # next() is atomic under the GIL: each chunk runs once

    def work():
        i = next(take)
        while i < m:
            a = list(args)
            for p in batched:
                if args[p].shape[0] == B:
                    a[p] = args[p][bounds[i]:bounds[i + 1]]
            try:
                outcomes[i] = (kernel(*a), None)
            except Exception as e:  # noqa: BLE001 (re-raised below, in batch order)
                outcomes[i] = (None, e)
            i = next(take)

    from concurrent.futures import wait
    pool = _pool(n - 1)
    futures = [pool.submit(work) for _ in range(n - 1)]
    try:
        work()
    finally:
        # those still queued (behind another caller's chunks) have nothing left to take;
        # the others may still run a chunk, which must not write into the caller's arrays
        # after this returns (wait() would also wait for a cancelled one to be dequeued)
        futures = [f for f in futures if not f.cancel()]
        wait(futures)
    for f in futures:
        f.result()      # (re-raises what work() does not catch)
    for result, error in outcomes:
        if error is not None:
            raise error
        st = _status(result)
        if st != OK:
            return st
    return OK
