"""
A sample scenario for any robot: the link to watch, a configuration, a test torque.

What the demo, ``liemb view --simulate`` and ``liemb prepare`` show or exercise on a robot
they know nothing about: its tool link (:func:`sample_tip`), a deterministic configuration
inside its limits and away from the symmetric singular ones (:func:`sample_configuration`),
one from which the tool can be flown in every direction (:func:`ready_configuration`), and a
small sinusoidal test torque per joint (:func:`test_torque`).
"""
import numpy as np

from ..core.kinematics import jacobian


def sample_tip(model):
    """Return the tool link (``tool0``, ``*_tcp``, ...) or else the deepest link."""
    for name in ('tool0', 'flange'):
        if name in model.link_names:
            return name
    tcp = [n for n in model.link_names if n.endswith(('_tcp', 'tool', 'ee_link', 'hand'))]
    if tcp:
        return tcp[0]
    depth = [int(model.support[b].sum()) if b >= 0 else 0 for b in model.link_body]
    return model.link_names[int(np.argmax(depth))]


def sample_configuration(model):
    """Return a deterministic, non-singular configuration inside the joint limits."""
    lo = np.where(np.isfinite(model.lower), model.lower, -np.pi)
    hi = np.where(np.isfinite(model.upper), model.upper, np.pi)
    return lo + (hi - lo) * (0.5 + 0.3 * np.sin(np.arange(1, model.nq + 1)))


def test_torque(model, fraction=0.02):
    """Return a test-torque amplitude per joint: ``fraction`` of each effort limit."""
    limit = np.where(np.isfinite(model.effort_limit) & (model.effort_limit > 0),
                     model.effort_limit, 10.0)
    return np.round(fraction * limit, 3)


def ready_configuration(model, link=None, candidates=64):
    """
    Return a configuration from which ``link`` (default: :func:`sample_tip`) can be flown.

    The neutral pose of many arms (straight up) is exactly singular: a servo halts there
    at once.  Of ``candidates`` deterministic configurations inside the joint limits by a
    fifth of each range (the first one is :func:`sample_configuration`), the one whose
    hybrid Jacobian of ``link`` has the smallest condition number (the servo's measure of
    a singularity).  A floating base: :func:`sample_configuration` (no servo flies one).
    """
    q0 = sample_configuration(model)
    if model.floating or model.nq == 0:
        return q0
    lo = np.where(np.isfinite(model.lower), model.lower, -np.pi)
    hi = np.where(np.isfinite(model.upper), model.upper, np.pi)
    k = np.arange(1, model.nq + 1)
    Q = np.array([lo + (hi - lo) * (0.5 + 0.3 * np.sin(k * (1.0 + 0.618 * c)))
                  for c in range(candidates)])
    s = np.linalg.svd(jacobian(model, Q, link or sample_tip(model), 'hybrid'),
                      compute_uv=False)
    cond = s[:, 0] / np.maximum(s[:, -1], 1e-300)
    return Q[int(np.argmin(cond))]
