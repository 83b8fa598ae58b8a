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

:func:`c_view` reshapes a contiguous vector (a slice of the packed model or of the
workspace) into the work arrays' shapes without numba's ``reshape``, which calls a C helper
for every view (``numba_attempt_nocopy_reshape``, 11.5 against 0.8 ns a view): a single call
takes 5 to 12 of them (the mass matrix of UR5: 134 of its 686 ns in the kernel).
"""
import numba
from numba import njit, types
from numba.core import cgutils
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic
from numba.np.arrayobj import make_array, populate_array

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


@intrinsic
def _c_view(typingctx, a, shape):
    """``a.reshape(shape)`` of a C-contiguous vector whose length is the shape's product."""
    if not (isinstance(a, types.Array) and a.ndim == 1 and a.layout == 'C'
            and isinstance(shape, types.UniTuple) and isinstance(shape.dtype, types.Integer)):
        return None
    sig = a.copy(ndim=shape.count, layout='C')(a, shape)

    def codegen(context, builder, sig, args):
        ary = make_array(sig.args[0])(context, builder, args[0])
        out = make_array(sig.return_type)(context, builder)
        intp = context.get_value_type(types.intp)
        dims = [builder.sext(d, intp) if d.type.width < intp.width else d
                for d in cgutils.unpack_tuple(builder, args[1], shape.count)]
        strides = [ary.itemsize]             # C order: the last axis is the contiguous one
        for d in reversed(dims[1:]):
            strides.insert(0, builder.mul(strides[0], d))
        populate_array(out, data=ary.data, shape=dims, strides=strides, itemsize=ary.itemsize,
                       meminfo=ary.meminfo, parent=ary.parent)
        return impl_ret_borrowed(context, builder, sig.return_type, out._getvalue())
    return sig, codegen


def _reshape(a, shape):
    return a.reshape(shape)


#: ``c_view(a, shape)``: the view of the C-contiguous vector ``a`` as an array of ``shape``
#: (``a.reshape(shape)``; module docstring), inside compiled kernels.  The caller sizes
#: ``a`` (nothing checks that its length is the shape's product).  Without the JIT, or on a
#: numba release not in :data:`TESTED`, it is ``reshape`` itself.
c_view = (_c_view if SUPPORTED and not numba.config.DISABLE_JIT
          else njit(inline='always')(_reshape))


def entry_point(kernel, args):
    """Return the compiled entry point of ``kernel`` for the types of ``args``, else ``kernel``."""
    if not SUPPORTED:
        return kernel
    try:
        return kernel.overloads[tuple(kernel.typeof_pyval(a) for a in args)].entry_point
    except (AttributeError, KeyError):  # NUMBA_DISABLE_JIT=1: a plain Python function
        return kernel
