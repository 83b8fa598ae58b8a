"""
MuJoCo as a peer of liemb_ros: the same URDF in MuJoCo, and the map between the coordinates.

Used by ``bench/run.py`` (simulation steps and single calls beside MuJoCo) and by
``test/test_mujoco_oracle.py`` (MuJoCo as one more independent oracle).  MuJoCo is a
benchmark and test dependency only (``requirements-test.txt``): the package never imports it.

MuJoCo reads the URDF through its own importer (:func:`mujoco_urdf`): ``<visual>`` elements
removed (no meshes needed), ``<collision>`` removed unless the robot touches the ground (then
its meshes named by the files our contact model reads), ``<mimic>`` removed (we load mimic
joints as independent coordinates by default), and a ``<mujoco><compiler>`` element that
keeps the URDF's inertias exactly (``balanceinertia="false"``) and fuses the links on fixed
joints into their parent (``fusestatic``: the same rigid bodies as our model's).

:class:`MjRobot` compiles it, sets MuJoCo's gravity to our model's and, for the ideal
rigid-body robot (``ideal=True``: what our ``Simulator(damping=0, friction=0, limits=False,
effort_limits=False, armature=0)`` simulates), zeroes the joint damping, friction loss and
armature and switches the joint limits off.  MuJoCo orders ``qpos``/``qvel`` by its joint
tree; :class:`MjRobot` maps our joint coordinates by joint name.  A floating base gets a
free joint (position, unit quaternion ``w x y z``; ``qvel`` = linear velocity in the world
frame, angular velocity in the body frame): only the simulation benchmark uses one, and it
reads the joints (mapped) and the base height, so no map of the base is offered.
"""
import os
import xml.etree.ElementTree as ET

import numpy as np

from liemb_ros.core import resources


def import_mujoco():
    """Return the ``mujoco`` module, or None when it is not installed (a test dependency)."""
    try:
        import mujoco
    except ImportError:
        return None
    return mujoco


def mujoco_urdf(path, contact=False):
    """
    Return the text of the URDF at ``path`` prepared for MuJoCo's URDF import.

    ``<visual>`` and ``<mimic>`` removed; ``<collision>`` removed unless ``contact``, else
    each collision mesh's filename replaced by the absolute path our contact model reads
    (:func:`liemb_ros.core.resources.resolve_mesh`); a ``<mujoco><compiler>`` element added
    (``discardvisual``, ``balanceinertia="false"``, ``fusestatic="true"``,
    ``strippath="false"``).  Raises FileNotFoundError for a collision mesh not found.
    """
    root = ET.parse(path).getroot()
    base_dir = os.path.dirname(os.path.abspath(path))
    for parent in list(root.iter()):
        for child in list(parent):
            if child.tag in ('visual', 'mimic') or (child.tag == 'collision' and not contact):
                parent.remove(child)
    for mesh in root.iter('mesh'):
        found, tried = resources.resolve_mesh(mesh.get('filename'), base_dir)
        if found is None:
            raise FileNotFoundError(f'{mesh.get("filename")}: not found in {tried}')
        mesh.set('filename', os.path.abspath(found))
    for old in root.findall('mujoco'):
        root.remove(old)
    ET.SubElement(ET.SubElement(root, 'mujoco'), 'compiler', discardvisual='true',
                  balanceinertia='false', fusestatic='true', strippath='false')
    return ET.tostring(root, encoding='unicode')


class MjRobot:
    """
    One of our models in MuJoCo: ``m`` (``MjModel``), ``d`` (``MjData``), coordinate maps.

    Parameters
    ----------
    model : Model
        Our model of the same URDF (its joint names and gravity are used).
    path : str
        The URDF file.
    ideal : bool
        Zero joint damping, friction loss and armature, joint limits off (the ideal
        rigid-body robot); else the URDF's ``<dynamics>`` and ``<limit>`` as MuJoCo reads
        them.
    floating : bool
        Give the root body a free joint.
    ground : bool
        Keep the collision geometry and add a ground plane ``z = 0`` (contact on).
    integrator : str
        ``opt.integrator``: ``'RK4'``, ``'IMPLICITFAST'``, ``'IMPLICIT'`` or ``'EULER'``.
    dt : float
        ``opt.timestep`` [s].

    ``qadr`` / ``dadr`` (nq,): the ``qpos`` / ``qvel`` index of each of our joints (our
    order), after the base's 7 / 6 coordinates for a floating base.

    """

    def __init__(self, model, path, *, ideal=True, floating=False, ground=False,
                 integrator='RK4', dt=1e-3):
        mujoco = import_mujoco()
        self.mujoco = mujoco
        spec = mujoco.MjSpec.from_string(mujoco_urdf(path, contact=ground))
        if floating:
            spec.worldbody.first_body().add_freejoint()
        if ground:
            spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0.0, 0.0, 1.0])
        m = self.m = spec.compile()
        m.opt.gravity[:] = model.gravity
        m.opt.timestep = dt
        m.opt.integrator = getattr(mujoco.mjtIntegrator, f'mjINT_{integrator}')
        if ideal:
            m.dof_damping[:] = 0.0
            m.dof_frictionloss[:] = 0.0
            m.dof_armature[:] = 0.0
            m.jnt_limited[:] = 0
        if not ground:
            m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
        self.d = mujoco.MjData(m)
        ids = [m.joint(name).id for name in model.joint_names]
        self.qadr = np.array([m.jnt_qposadr[i] for i in ids])
        self.dadr = np.array([m.jnt_dofadr[i] for i in ids])
        if m.nv != model.nv or m.nq != model.nq + (7 if floating else 0):
            raise RuntimeError(f'{path}: MuJoCo nq/nv {m.nq}/{m.nv}, ours {model.nq}/{model.nv}')

    def set_joint_state(self, q, qd=None, qacc=None, tau=None):
        """
        Write our joint arrays (our order) into ``d.qpos``, ``qvel``, ``qacc``, ``qfrc_applied``.

        ``q`` (nq,) [rad or m]; ``qd``, ``qacc``, ``tau`` (nq,) or None (left as they are).
        """
        d = self.d
        d.qpos[self.qadr] = q
        for target, value in ((d.qvel, qd), (d.qacc, qacc), (d.qfrc_applied, tau)):
            if value is not None:
                target[self.dadr] = value

    def joints(self, array):
        """Return a MuJoCo per-dof (nv,) or per-qpos array's joint entries in our order."""
        return np.array(array[self.dadr if array.shape[0] == self.m.nv else self.qadr])
