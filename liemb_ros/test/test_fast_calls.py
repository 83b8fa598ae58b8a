"""
Single calls through cached compiled entry points (_kernels.dispatch.fast) see canonical input.

After the first call of each algorithm has cached its entry point, the same algorithm called
with the same numbers in other layouts and dtypes (a strided view, read-only, float32,
big-endian, a list, misaligned, Fortran-order base pose, read-only wrenches, integers) must
give the same result bit for bit, and bad shapes must still raise: the shortest paths check
only class, dtype and dimensions in Python and leave lengths, strides and alignment to the
kernel (_kernels.dispatch.plain), so each of these must reach the checked path.
"""
import copy
import pickle

import numpy as np
import pytest

import liemb_ros as lm
from conftest import URDF_DIR
from liemb_ros.core import dynamics
from liemb_ros.core.model import random_model
from liemb_ros.core.model.synthetic import random_pose


def _misaligned(x):
    """A float64 copy of ``x`` one byte past an 8-byte boundary (numpy: not aligned)."""
    raw = np.zeros(x.nbytes + 8, dtype=np.uint8)
    out = raw[1:1 + x.nbytes].view(np.float64).reshape(x.shape)
    out[...] = x
    assert not out.flags.aligned
    return out


def _variants(x):
    """The same numbers as ``x`` in other array layouts and dtypes."""
    strided = np.empty((x.shape[0], 2) + x.shape[1:])
    strided[:, 0] = x
    ro = x.copy()
    ro.setflags(write=False)
    out = [strided[:, 0], ro, x.astype('>f8'), x.tolist(), _misaligned(x)]
    if x.ndim == 2:
        out.append(np.asfortranarray(x))
    if np.all(x == x.astype(np.float32)):
        out.append(x.astype(np.float32))
    return out


def _calls(model, link):
    return {
        'link_pose': lambda q, qd, qdd, b, f: lm.link_pose(model, q, link, b),
        'forward_kinematics': lambda q, qd, qdd, b, f: lm.forward_kinematics(model, q, b),
        'jacobian': lambda q, qd, qdd, b, f: lm.jacobian(model, q, link, 'mixed', b),
        'jacobian_derivative':
            lambda q, qd, qdd, b, f: lm.jacobian_derivative(model, q, qd, link, 'body', b),
        'link_twist': lambda q, qd, qdd, b, f: lm.link_twist(model, q, qd, link, 'hybrid', b),
        'inverse_dynamics':
            lambda q, qd, qdd, b, f: lm.inverse_dynamics(model, q, qd, qdd, f_ext=f,
                                                         base_pose=b),
        'gravity_torques': lambda q, qd, qdd, b, f: lm.gravity_torques(model, q, b),
        'mass_matrix': lambda q, qd, qdd, b, f: lm.mass_matrix(model, q, b),
        'mass_matrix_derivative':
            lambda q, qd, qdd, b, f: lm.mass_matrix_derivative(model, q, qd, b),
        'coriolis_matrix': lambda q, qd, qdd, b, f: lm.coriolis_matrix(model, q, qd, b),
        'forward_dynamics':
            lambda q, qd, qdd, b, f: lm.forward_dynamics(model, q, qd, qdd, f_ext=f,
                                                         base_pose=b),
        'regressor': lambda q, qd, qdd, b, f: lm.regressor(model, q, qd, qdd, base_pose=b),
    }


@pytest.mark.parametrize('floating', [False, True])
def test_layouts_and_dtypes_after_cached_entry(floating):
    rng = np.random.default_rng(7)
    model = random_model(6, rng, floating=floating)
    link = model.link_names[-1]
    # values exactly representable in float32, so the float32 variant is the same input
    q = np.round(rng.standard_normal(model.nq), 3)
    qd = np.round(rng.standard_normal(model.nv), 3)
    qdd = np.round(rng.standard_normal(model.nv), 3)
    base = random_pose(rng)
    fext = rng.standard_normal((len(model.link_names), 6))
    for name, call in _calls(model, link).items():
        for b in (None, base):
            for f in (None, fext):
                ref = call(q, qd, qdd, b, f)  # canonical: caches the entry point
                assert np.all(np.isfinite(ref)), name
                for qv in _variants(q):
                    np.testing.assert_array_equal(call(qv, qd, qdd, b, f), ref, err_msg=name)
                for qdv in _variants(qd):
                    np.testing.assert_array_equal(call(q, qdv, qdd, b, f), ref, err_msg=name)
                for qddv in _variants(qdd):
                    np.testing.assert_array_equal(call(q, qd, qddv, b, f), ref, err_msg=name)
                if b is not None:
                    for bv in _variants(b):
                        np.testing.assert_array_equal(call(q, qd, qdd, bv, f), ref,
                                                      err_msg=name)
                if f is not None:
                    for fv in _variants(f):
                        np.testing.assert_array_equal(call(q, qd, qdd, b, fv), ref,
                                                      err_msg=name)
                with pytest.raises(ValueError, match='must have shape'):
                    call(q[:-1], qd, qdd, b, f)
                with pytest.raises(ValueError, match='must have shape'):
                    call(q[None, None], qd, qdd, b, f)
                nan = q.copy()
                nan[0] = np.nan
                with pytest.raises(ValueError, match='q contains NaN'):
                    call(nan, qd, qdd, b, f)


@pytest.mark.parametrize('floating', [False, True])
def test_integer_arrays_are_converted_not_misread(floating):
    """int64 has float64's item size, all numba's unboxing checks: converted, never read as is."""
    rng = np.random.default_rng(10)
    model = random_model(5, rng, floating=floating)
    link = model.link_names[-1]
    qi, qdi = rng.integers(-2, 3, model.nq), rng.integers(-2, 3, model.nv)
    q, qd = qi.astype(float), qdi.astype(float)
    for name, call in _calls(model, link).items():
        for b in (None, random_pose(rng)):
            ref = call(q, qd, qd, b, None)       # canonical: caches the entry point
            np.testing.assert_array_equal(call(qi, qdi, qdi, b, None), ref, err_msg=name)
            np.testing.assert_array_equal(call(q, qdi, qd, b, None), ref, err_msg=name)
            np.testing.assert_array_equal(call(q, qd, qdi, b, None), ref, err_msg=name)


def test_forward_dynamics_function_any_layout():
    rng = np.random.default_rng(8)
    model = random_model(5, rng)
    fd = dynamics.forward_dynamics_function(model)
    q, qd, tau = (np.round(rng.standard_normal(model.nv), 3) for _ in range(3))
    ref = lm.forward_dynamics(model, q, qd, tau)
    np.testing.assert_array_equal(fd(q, qd, tau), ref)
    for qv in _variants(q)[:2]:
        np.testing.assert_array_equal(fd(qv, qd, tau), ref)


def test_model_pickles_and_copies_after_calls():
    rng = np.random.default_rng(9)
    model = random_model(5, rng)
    q, qd, qdd = (rng.standard_normal(model.nv) for _ in range(3))
    ref = lm.inverse_dynamics(model, q, qd, qdd)
    for other in (pickle.loads(pickle.dumps(model)), copy.deepcopy(model), copy.copy(model)):
        np.testing.assert_array_equal(lm.inverse_dynamics(other, q, qd, qdd), ref)
        np.testing.assert_array_equal(lm.jacobian(other, q, other.link_names[-1]),
                                      lm.jacobian(model, q, model.link_names[-1]))


def test_numba_entry_points_of_the_supported_releases(monkeypatch):
    """
    The entry-point short cut reads numba internals: pinned to the releases it was checked on.

    On the installed numba (requirements.txt keeps it within ``TESTED``) the entry point is
    the native function of the compiled overload, not the dispatcher, and gives the
    dispatcher's result bit for bit; on a release outside the range it is the dispatcher.
    A numba upgrade past ``TESTED`` fails here first: check ``overloads[...].entry_point``
    and ``typeof_pyval`` still exist and mean the same, then widen the range.
    """
    import numba
    from liemb_ros.core._kernels import numba_entry
    from liemb_ros.core._kernels.rnea import id_plain
    assert numba_entry.SUPPORTED, (numba.__version__, numba_entry.TESTED)
    model = lm.load_urdf(f'{URDF_DIR}/liemb_arm7.urdf')
    rng = np.random.default_rng(3)
    q, qd, qdd = rng.normal(size=(3, model.nv))
    args = (model.packed_int, model.packed_float, np.empty_like(model.data.work), q, qd, qdd, 0,
            1.0, np.empty(model.nv))
    assert id_plain(*args) == 0
    want = args[-1].copy()
    entry = numba_entry.entry_point(id_plain, args)
    assert entry is not id_plain and not isinstance(entry, numba.core.dispatcher.Dispatcher)
    args[-1][:] = np.nan
    assert entry(*args) == 0
    assert np.array_equal(args[-1], want)
    np.testing.assert_allclose(want, lm.inverse_dynamics(model, q, qd, qdd), rtol=0, atol=0)
    monkeypatch.setattr(numba_entry, 'SUPPORTED', False)
    assert numba_entry.entry_point(id_plain, args) is id_plain
    assert numba_entry._version('0.61.0rc1') == (0, 61) and numba_entry._version('1.2') == (1, 2)
