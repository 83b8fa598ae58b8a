"""
One compiled specialisation per kernel (issue 19: compile time).

numba compiles a kernel once per combination of argument types, and an array's type holds
its dtype, dimensions, layout and writeability.  The public functions pass every kernel
canonical arrays of one type whatever the call: a fixed or a floating base, the base pose
omitted (the identity) or given, wrenches omitted or given, one base pose for a whole batch
or one per configuration.  So each kernel compiles (or loads from numba's cache) exactly
once: ``liemb prepare`` compiles each once, not once per case.
"""
import numpy as np

import liemb_ros as lm
from liemb_ros.core import eom
from liemb_ros.core._kernels import aba, crba, derivatives, jacobian, rnea, tree
from liemb_ros.core.dynamics import FORMS, forward_dynamics_function
from liemb_ros.core.model import random_model
from liemb_ros.core.model.synthetic import random_pose

KERNELS = [getattr(mod, name) for mod in (tree, jacobian, rnea, crba, aba, derivatives)
           for name in dir(mod) if hasattr(getattr(mod, name), 'signatures')
           and getattr(mod, name).__module__ == mod.__name__]


def _calls(model, rng, B):
    """Call every public function in every case on ``model``; B: None or a batch size."""
    size = None if B is None else B
    q = model.random_configuration(rng, size=size)
    shape = (model.nv,) if B is None else (B, model.nv)
    qd, qdd, tau = (rng.standard_normal(shape) for _ in range(3))
    link = model.link_names[-1]
    nl = len(model.link_names)
    poses = [None, random_pose(rng)]
    wrenches = [None, rng.standard_normal((nl, 6))]
    if B is not None:
        poses.append(np.array([random_pose(rng) for _ in range(B)]))
        wrenches.append(rng.standard_normal((B, nl, 6)))
    for base in poses:
        lm.link_pose(model, q, link, base_pose=base)
        lm.forward_kinematics(model, q, base_pose=base)
        for rep in lm.REPRESENTATIONS:
            lm.jacobian(model, q, link, rep, base_pose=base)
            lm.jacobian_derivative(model, q, qd, link, rep, base_pose=base)
            lm.link_twist(model, q, qd, link, rep, base_pose=base)
        lm.gravity_torques(model, q, base_pose=base)
        lm.mass_matrix(model, q, base_pose=base)
        lm.mass_matrix_derivative(model, q, qd, base_pose=base)
        lm.coriolis_matrix(model, q, qd, base_pose=base)
        if B is None:
            lm.body_twists(model, q, qd, 'hybrid', base_pose=base)
            lm.body_poses(model, q, base_pose=base)
        for f_ext in wrenches:
            for form in FORMS:
                lm.inverse_dynamics(model, q, qd, qdd, form=form, f_ext=f_ext, base_pose=base)
            lm.joint_wrenches(model, q, qd, qdd, f_ext=f_ext, base_pose=base)
            lm.forward_dynamics(model, q, qd, tau, f_ext=f_ext, base_pose=base)
            lm.forward_dynamics(model, q, qd, tau, f_ext=f_ext, base_pose=base, armature=0.1)
            eom.inverse_dynamics_derivatives(model, q, qd, qdd, f_ext=f_ext, base_pose=base)


def test_one_specialisation_per_kernel(rng):
    before = {k: set(k.signatures) for k in KERNELS}
    for floating in (False, True):
        model = random_model(5, rng, floating=floating)
        for B in (None, 3):
            _calls(model, rng, B)
        fd = forward_dynamics_function(model)
        q = model.random_configuration(rng)
        z = np.zeros(model.nv)
        fd(q, z, z)
        fd(q, z, z, random_pose(rng))
    new = {k.__name__: [str(s) for s in set(k.signatures) - before[k]] for k in KERNELS}
    # id_plain (no base pose, no wrenches: fewer arguments to unbox) hands the spatial and
    # hybrid forms the constant identity, a read-only array: their second specialisation
    # (passing them a writeable copy instead cost the floating-base ID 5 %)
    allowed = {'rnea_spatial': 2, 'rnea_hybrid': 2}
    assert {name: sigs for name, sigs in new.items() if len(sigs) > allowed.get(name, 1)} == {}
