"""
Synthetic models: random trees and chains of R, P and H joints.

Used by tests (finite-difference and cross-form checks on topologies and joint types a
URDF cannot express, e.g. helical joints and joint screws off the frame origin) and by
the scaling benchmarks.  Everything is drawn from a seeded generator.
"""
import numpy as np

from . import joints as J
from .inertia import spatial_inertia
from .model import Model


def random_pose(rng, scale=0.5):
    """Draw a random 4x4 pose: uniform rotation (QR of a Gaussian), translation ~ N(0, scale)."""
    Q, R = np.linalg.qr(rng.standard_normal((3, 3)))
    Q = Q @ np.diag(np.sign(np.diag(R)))
    if np.linalg.det(Q) < 0:
        Q[:, 0] = -Q[:, 0]
    C = np.eye(4)
    C[:3, :3] = Q
    C[:3, 3] = scale * rng.standard_normal(3)
    return C


def random_inertia(rng, mass_range=(0.5, 5.0)):
    """Draw a random, physically valid 6x6 spatial inertia (COM off the frame origin)."""
    m = rng.uniform(*mass_range)
    a, b = np.sort(rng.uniform(0.05, 1.0, 2))
    c = rng.uniform(b - a + 1e-3, a + b)  # principal moments obey the triangle inequality
    moments = m * 0.1 * np.array([a, b, c])
    com = random_pose(rng, scale=0.2)
    return spatial_inertia(m, com, np.diag(moments))


def random_model(n, rng=None, *, kinds='RPH', branching=0.3, floating=False,
                 offset_screws=True, name='random_tree'):
    """
    Build a random tree of ``n`` 1-DOF joints.

    ``kinds``: joint kinds to draw from ('R', 'P', 'H'); ``branching``: probability that
    a body attaches to a random earlier body instead of the previous one (0 gives a
    chain); ``offset_screws``: joint-frame screws through points off the frame origin
    and body frames away from the joint frames (S_{i,i} != I), as in [M18k] eq. (3).
    """
    rng = np.random.default_rng(rng)
    code = {'R': J.REVOLUTE, 'P': J.PRISMATIC, 'H': J.HELICAL}
    parent, kind, S_parent, S_child, JX, inertia = [], [], [], [], [], []
    for i in range(n):
        p = i - 1
        if i > 0 and rng.random() < branching:
            p = int(rng.integers(-1, i))
        k = code[kinds[int(rng.integers(len(kinds)))]]
        axis = rng.standard_normal(3)
        point = 0.3 * rng.standard_normal(3) if offset_screws else np.zeros(3)
        if k == J.PRISMATIC:
            screw = J.prismatic_screw(axis)
        else:
            pitch = rng.uniform(-0.2, 0.2) if k == J.HELICAL else 0.0
            screw = J.revolute_screw(axis, point, pitch)
        parent.append(p)
        kind.append(k)
        S_parent.append(random_pose(rng))
        S_child.append(random_pose(rng, 0.2) if offset_screws else np.eye(4))
        JX.append(screw)
        inertia.append(random_inertia(rng))
    names = [f'b{i}' for i in range(n)]
    return Model(name=name, source='<synthetic>', body_names=names, parent=parent, kind=kind,
                 S_parent=S_parent, S_child=S_child, JX=JX, inertia=inertia,
                 base_inertia=random_inertia(rng) if floating else np.zeros((6, 6)),
                 joint_names=[f'j{i}' for i in range(n)], q_index=np.arange(n),
                 q_mult=np.ones(n), q_offset=np.zeros(n), link_names=['base'] + names,
                 link_body=[-1] + list(range(n)), link_offset=[np.eye(4)] * (n + 1),
                 floating=floating, root_link='base', base_link='base',
                 lower=np.full(n, -np.inf), upper=np.full(n, np.inf),
                 velocity_limit=np.full(n, np.inf), effort_limit=np.full(n, np.inf),
                 damping=np.zeros(n), friction=np.zeros(n),
                 link_parent=[None] + ['base' if p < 0 else names[p] for p in parent])
