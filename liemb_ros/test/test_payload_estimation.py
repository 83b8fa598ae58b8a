"""
Online payload estimation (:mod:`liemb_ros.core.payload_estimation`) against Pinocchio.

The "measured" efforts are Pinocchio's RNEA of the 7-joint arm with a payload added to the
inertia of the joint that carries ``tool0`` (the payload given about its centre of mass in
``tool0``'s frame, moved by Pinocchio's own frame placement); the estimator sees only
``(t, q, q̇, τ)`` of a smooth multi-sine motion, never ``q̈``.
"""
import numpy as np
import pinocchio as pin
import pytest

import liemb_ros as lm
from liemb_ros.control.engine_settings import EngineSettings
from liemb_ros.core.payload_estimation import PayloadEstimator
from liemb_ros.core.resources import robot_path

PATH = robot_path('liemb_arm7')
#: (link, mass, com in the link frame, inertia about the com: ixx ixy ixz iyy iyz izz)
PAYLOAD = ('tool0', 1.5, (0.02, -0.01, 0.08), (0.004, 0.0002, -0.0001, 0.005, 0.0003, 0.003))
OTHER = ('tool0', 0.8, (-0.03, 0.02, 0.05), (0.002, 0.0, 0.0, 0.002, 0.0, 0.001))
DT = 0.004   # the node's turn: it estimates from the latest joint state every 4 ms


@pytest.fixture(scope='module')
def model():
    return lm.load_urdf(PATH)


def pinocchio_model(payload):
    """Pinocchio's model of the arm holding ``payload`` (None: nothing)."""
    pm = pin.buildModelFromUrdf(PATH)
    if payload is not None:
        link, mass, com, i6 = payload
        frame = pm.frames[pm.getFrameId(link)]
        ixx, ixy, ixz, iyy, iyz, izz = i6
        Ic = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
        pm.inertias[frame.parentJoint] += frame.placement.act(
            pin.Inertia(mass, np.array(com), Ic))
    return pm


def pinocchio_torques(payload, q, qd, qdd):
    """Pinocchio's inverse dynamics of the arm holding ``payload`` (N, nv)."""
    pm = pinocchio_model(payload)
    data = pm.createData()
    return np.array([pin.rnea(pm, data, *x) for x in zip(q, qd, qdd)])


def motion(seconds, seed=1, t0=0.0, t=None):
    """
    A smooth motion of every joint, three sines each: ``(t, q, q̇, q̈)``.

    At the times ``t`` (N,), else every :data:`DT` for ``seconds`` from ``t0``.
    """
    rng = np.random.default_rng(seed)
    w, amp, phase = rng.uniform(0.5, 2.0, (3, 7)), rng.uniform(0.2, 0.6, (3, 7)), \
        rng.uniform(0.0, 6.0, (3, 7))
    t = t0 + np.arange(0.0, seconds, DT) if t is None else np.atleast_1d(t)
    arg = w * t[:, None, None] + phase
    return (t, (amp * np.sin(arg)).sum(1), (amp * w * np.cos(arg)).sum(1),
            (-amp * w * w * np.sin(arg)).sum(1))


def feed(estimator, t, q, qd, tau):
    for sample in zip(t, q, qd, tau):
        assert estimator.update(*sample)
    return estimator.estimate()


def test_the_truth_is_the_engines(model):
    """Pinocchio's torques with the payload are the dynamics engine's (the test's source)."""
    _, q, qd, qdd = motion(0.4)
    settings = EngineSettings(model)
    settings.set_payload(PAYLOAD)
    np.testing.assert_allclose(pinocchio_torques(PAYLOAD, q, qd, qdd),
                               lm.inverse_dynamics(settings.model, q, qd, qdd), atol=1e-10)


def test_converges_to_the_payload_without_noise(model):
    """
    20 s at 250 Hz, no noise: mass, centre of mass and inertia of the payload.

    Measured: mass 6e-6 relative, centre of mass 4e-6 m, inertia 2.4e-5 kg m² (1 % and
    1 mm were asked for); the estimate is consistent and ready.
    """
    t, q, qd, qdd = motion(20.0)
    est = feed(PayloadEstimator(model, 'tool0'), t, q, qd, pinocchio_torques(PAYLOAD, q, qd,
                                                                             qdd))
    p = est.payload
    assert p.link == 'tool0' and p.samples == t.size - 1
    assert abs(p.mass - PAYLOAD[1]) < 1e-4 * PAYLOAD[1]
    assert np.abs(p.com - PAYLOAD[2]).max() < 1e-5
    assert np.abs(p.inertia - PAYLOAD[3]).max() < 5e-5
    assert est.consistent and est.ready and est.excitation > 0.1
    assert p.mass_std < 1e-4 and np.all(np.isfinite(est.std))
    settings = EngineSettings(model)
    settings.set_payload(p.setting)   # what the dynamics engine takes, unchanged
    assert tuple(p.node_parameters()) == ('payload.link', 'payload.mass', 'payload.com',
                                          'payload.inertia')


def test_standard_errors_agree_with_the_noise(model):
    """
    Torque noise 0.1 N m (white, every sample), 8 runs of 8 s: the errors' z-scores.

    The mass's and the centre of mass's errors over their standard errors (32 values) have
    an RMS within [0.6, 1.6] (a unit normal's, with the filter's correlation accounted for
    by ``κ``; measured 1.04): the standard errors (0.76 g, 0.13-0.5 mm) are honest.
    """
    t, q, qd, qdd = motion(8.0, seed=3)
    tau = pinocchio_torques(PAYLOAD, q, qd, qdd)
    rng = np.random.default_rng(7)
    z = []
    for _ in range(8):
        p = feed(PayloadEstimator(model, 'tool0'), t, q, qd,
                 tau + 0.1 * rng.standard_normal(tau.shape)).payload
        z += [(p.mass - PAYLOAD[1]) / p.mass_std, *((p.com - PAYLOAD[2]) / p.com_std)]
    assert 0.6 < np.sqrt(np.mean(np.square(z))) < 1.6
    assert abs(p.mass - PAYLOAD[1]) < 0.01 * PAYLOAD[1]


def test_forgetting_follows_a_changed_payload(model):
    """
    10 s with one payload, then 10 s with another: a 1 s memory follows, none does not.

    With ``memory=1`` the second mass within 1e-3 relative and its centre of mass within
    0.1 mm at the end; without forgetting the estimate is a fit to both loads' data, its
    mass 0.68 kg from the second one's (measured).
    """
    t1, q1, qd1, qdd1 = motion(10.0, seed=4)
    t2, q2, qd2, qdd2 = motion(10.0, seed=4, t0=t1[-1] + DT)
    tau1 = pinocchio_torques(PAYLOAD, q1, qd1, qdd1)
    tau2 = pinocchio_torques(OTHER, q2, qd2, qdd2)
    results = {}
    for memory in (0.0, 1.0):
        e = PayloadEstimator(model, 'tool0', memory=memory)
        feed(e, t1, q1, qd1, tau1)
        results[memory] = feed(e, t2, q2, qd2, tau2).payload
    assert abs(results[1.0].mass - OTHER[1]) < 1e-3 * OTHER[1]
    assert np.abs(results[1.0].com - OTHER[2]).max() < 1e-4
    assert abs(results[0.0].mass - OTHER[1]) > 0.5   # the average of the two loads' data


def test_standing_still_the_covariance_stays_bounded(model):
    """
    Stabilised forgetting: 30 s at rest after the motion (memory 1 s) lose the excitation.

    The rest's torques identify only gravity's (mass and horizontal first moment), so the
    estimate is no longer ``ready``, yet its covariance stays finite (the prior's bound) and
    the mass stays right.
    """
    t, q, qd, qdd = motion(10.0, seed=5)
    e = PayloadEstimator(model, 'tool0', memory=1.0)
    moving = feed(e, t, q, qd, pinocchio_torques(PAYLOAD, q, qd, qdd))
    assert moving.ready
    rest = np.repeat(q[-1:], 7500, axis=0)
    zero = np.zeros_like(rest)
    still = feed(e, t[-1] + DT * np.arange(1, 7501), rest, zero,
                 pinocchio_torques(PAYLOAD, rest, zero, zero))
    assert not still.ready and still.excitation < moving.excitation
    assert np.all(np.isfinite(still.payload.covariance))
    assert abs(still.payload.mass - PAYLOAD[1]) < 1e-3


def test_bad_samples_are_skipped_and_counted(model):
    """NaN, wrong sizes, time going back: counted, never raised; a gap restarts the filters."""
    e = PayloadEstimator(model, 'tool0')
    q = np.full(7, 0.2)
    assert e.update(0.0, q, q, q)
    assert not e.update(0.004, q, q, np.r_[q[:6], np.nan])
    assert not e.update(0.008, q, q, q[:6])
    assert not e.update(0.0, q, q, q)
    assert not e.update(0.01, 'x', q, q)
    assert e.skipped == {'not finite': 1, 'wrong sizes': 1, 'time not increasing': 1,
                         'not numbers': 1}
    assert e.update(0.004, q, q, q) and e.samples == 1
    assert e.update(1.0, q, q, q) and e.restarts == 1 and e.samples == 1
    e.reset()
    assert e.samples == 0 and not e.skipped and e.estimate().excitation == 0.0


def test_refusals(model):
    with pytest.raises(ValueError, match="link 'base_link' is fixed to the base"):
        PayloadEstimator(model, 'base_link')
    with pytest.raises(ValueError, match='cutoff must be a finite number > 0'):
        PayloadEstimator(model, 'tool0', cutoff=0.0)
    with pytest.raises(ValueError, match='memory must be a finite number >= 0'):
        PayloadEstimator(model, 'tool0', memory=-1.0)
    with pytest.raises(ValueError, match='armature must be 7 finite values'):
        PayloadEstimator(model, 'tool0', armature=[1.0, 2.0])
    with pytest.raises(ValueError, match='fixed base'):
        PayloadEstimator(lm.load_urdf(PATH, floating_base=True), 'tool0')
