"""
Batching of the Lie group functions: shape checks and flattening of leading axes.

Every public function of :mod:`liemb_ros.core.lie` takes arrays ``[..., k]`` and runs a
compiled single-element kernel over the flattened leading axes; these helpers check the
trailing shape, flatten the leading axes (broadcasting them for two arguments) and hand
back the leading shape to restore.  Internal to the :mod:`liemb_ros.core.lie` package.
"""
import numpy as np


def as_batch(x, trailing, func, name='x'):
    """Return ``(x as contiguous float64 (N,) + trailing, leading shape)``; check the shape."""
    a = np.asarray(x, dtype=np.float64)
    k = len(trailing)
    if a.ndim < k or a.shape[a.ndim - k:] != tuple(trailing):
        raise ValueError(f'{func}: {name} must have shape (..., '
                         f"{', '.join(str(n) for n in trailing)}), got {a.shape}")
    lead = a.shape[:a.ndim - k]
    return np.ascontiguousarray(a.reshape((-1,) + tuple(trailing))), lead


def as_batch2(x, tx, y, ty, func, names=('x', 'y')):
    """Like :func:`as_batch` for two arguments whose leading axes broadcast together."""
    a, la = as_batch(x, tx, func, names[0])
    b, lb = as_batch(y, ty, func, names[1])
    try:
        lead = np.broadcast_shapes(la, lb)
    except ValueError:
        raise ValueError(f'{func}: leading shapes {la} of {names[0]} and {lb} of '
                         f'{names[1]} do not broadcast') from None
    a = np.broadcast_to(a.reshape(la + tuple(tx)), lead + tuple(tx)).reshape((-1,) + tuple(tx))
    b = np.broadcast_to(b.reshape(lb + tuple(ty)), lead + tuple(ty)).reshape((-1,) + tuple(ty))
    return np.ascontiguousarray(a), np.ascontiguousarray(b), lead


def run_batch(loop, x, trailing, out_shape, func, name='X'):
    """
    Check and flatten ``x`` (``(..., *trailing)``), run ``loop(x, out)`` into a new array.

    ``loop`` is a compiled loop over the flattened leading axis writing ``out``
    ``(N, *out_shape)``; the result has ``x``'s leading axes restored.
    """
    a, lead = as_batch(x, trailing, func, name)
    out = np.empty((a.shape[0],) + tuple(out_shape))
    loop(a, out)
    return out.reshape(lead + tuple(out_shape))


def shape_tuple(shape):
    """Return ``shape`` (an int or a sequence of ints) as a tuple."""
    return (int(shape),) if np.ndim(shape) == 0 else tuple(int(n) for n in shape)
