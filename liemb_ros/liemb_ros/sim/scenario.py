"""
A sample scenario for any robot: the link to watch, a configuration, a test torque.

What the demo, ``liemb view --simulate`` and ``liemb prepare`` show or exercise on a robot
they know nothing about: its tool link (:func:`sample_tip`), a deterministic configuration
inside its limits and away from the symmetric singular ones (:func:`sample_configuration`),
and a small sinusoidal test torque per joint (:func:`test_torque`).
"""
import numpy as np


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
