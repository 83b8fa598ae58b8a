"""
The sample scenario of any robot (``liemb_ros.sim.scenario``): a ready configuration from
which the tool can be flown, on robots no test is written for.
"""
import numpy as np
import pytest

import liemb_ros as lm
from liemb_ros.core.resources import robot_path
from liemb_ros.sim.scenario import ready_configuration, sample_tip

#: the servo's default lower_singularity_threshold (config/servo.yaml): above it, it slows
SERVO_SLOWS_AT = 17.0


@pytest.mark.parametrize('robot', ['liemb_arm7', 'panda', 'ur5_robot', 'ur3_robot', 'z1',
                                   'kinova'])
def test_the_ready_configuration_can_be_flown(robot):
    """Inside every limit by a fifth of its range, and the tool's hybrid Jacobian (6 rows)
    conditioned below the servo's threshold, where the neutral pose is singular."""
    model = lm.load_urdf(robot_path(robot))
    q = ready_configuration(model)
    lo, hi = model.lower, model.upper
    span = np.where(np.isfinite(hi - lo), hi - lo, 2 * np.pi)
    inner = np.isfinite(lo)
    assert np.all(q[inner] >= lo[inner] + 0.2 * span[inner] - 1e-12)
    assert np.all(q[inner] <= hi[inner] - 0.2 * span[inner] + 1e-12)
    s = np.linalg.svd(lm.jacobian(model, q, sample_tip(model), 'hybrid'), compute_uv=False)
    assert s[0] / s[-1] < SERVO_SLOWS_AT, (robot, s[0] / s[-1])
    assert np.array_equal(q, ready_configuration(model))     # deterministic
