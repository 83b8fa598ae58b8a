"""
``Data``: the workspace the compiled single calls of one model work in.

Pinocchio splits a robot into a ``Model`` (the constant description) and a ``Data`` (the
work arrays of the algorithms), MuJoCo into ``mjModel`` and ``mjData``; here the same
split.  :class:`~liemb_ros.core.model.Model` is immutable and owns one :class:`Data`,
``model.data``: one float64 array, sized once (:func:`~liemb_ros.core._kernels.layout.work_floats`)
for the largest single-call kernel, from which each kernel takes its work arrays as views
(poses, twists, wrenches, articulated inertias, ...) instead of allocating them on every
call.  The results a function returns are never views of it: every call returns arrays of
its own.

One workspace per model is enough because a single call holds Python's global interpreter
lock from its first to its last write to the workspace (the single-call kernels are
compiled without ``nogil``): two threads calling the same model take turns.  The batched
kernels release the lock and run in threads (:func:`~liemb_ros.core._kernels.dispatch.run_batch`);
each batch allocates one workspace of its own per thread, once for all its configurations.
"""
import numpy as np

from .._kernels import layout


class Data:
    """
    The work arrays of the single-call kernels of one model (Pinocchio's ``Data``).

    ``work``: float64, (:func:`~liemb_ros.core._kernels.layout.work_floats`,); its contents
    between calls mean nothing (every kernel writes what it reads).
    """

    __slots__ = ('work',)

    def __init__(self, model):
        ncol = model.nb + (6 if model.floating else 0)    # columns: a body each, the base
        self.work = np.empty(layout.work_floats(model.nb, max(ncol, model.nv)))

    def __repr__(self):
        return f'Data({self.work.shape[0]} floats)'
