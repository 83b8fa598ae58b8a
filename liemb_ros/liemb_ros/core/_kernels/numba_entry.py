"""
The one place that touches numba's internals: a kernel's compiled entry point.

numba's dispatcher (``kernel(*args)``) resolves the numba type of every argument on every
call, about 30 ns per array and more for a named tuple of arrays: more than a small
kernel's work.  A compiled overload keeps the native function behind it,
``kernel.overloads[signature].entry_point``, which takes the arguments without that
look-up.  :func:`~.dispatch.fast` caches it per model and kernel.

That attribute and ``Dispatcher.typeof_pyval`` are not numba's public API, so they are
read here and nowhere else, for the numba releases of :data:`TESTED` (the test
``test_fast_calls.py::test_numba_entry_points_of_the_supported_releases`` pins them).
On any other release, or under ``NUMBA_DISABLE_JIT=1``, :func:`entry_point` returns the
kernel itself: the dispatcher's slower, public call, with the same results.

The single-call kernels are compiled without numba's reference counting of arrays
(:data:`SINGLE_CALL`): they allocate nothing (their work arrays are views of the model's
workspace), and every view a kernel takes of its arguments would otherwise count a
reference up and down (two atomic operations each): 25-30 % of a small robot's call
(UR5's mass matrix 1.31 against 0.91 µs, its Jacobian 0.53 against 0.41 µs through the
entry point).  ``_nrt`` is numba's own option for this, not documented either; the
releases of :data:`TESTED` honour it.  A kernel that allocated would not compile with it.
"""
import numba

#: numba releases (major, minor) whose dispatcher internals this module was checked with
TESTED = ((0, 60), (0, 69))


def _version(text):
    """Return ``(major, minor)`` of a numba version string such as ``'0.68.1'``."""
    major, minor = text.split('.')[:2]
    return int(major), int(''.join(c for c in minor if c.isdigit()) or 0)


#: whether the running numba is one of :data:`TESTED` (else the public, slower call)
SUPPORTED = TESTED[0] <= _version(numba.__version__) <= TESTED[1]

#: ``njit`` options of the single-call kernels (module docstring): cached, and without
#: reference counting where the numba release is one of :data:`TESTED`
SINGLE_CALL = {'cache': True, '_nrt': False} if SUPPORTED else {'cache': True}


def entry_point(kernel, args):
    """Return the compiled entry point of ``kernel`` for the types of ``args``, else ``kernel``."""
    if not SUPPORTED:
        return kernel
    try:
        return kernel.overloads[tuple(kernel.typeof_pyval(a) for a in args)].entry_point
    except (AttributeError, KeyError):  # NUMBA_DISABLE_JIT=1: a plain Python function
        return kernel
