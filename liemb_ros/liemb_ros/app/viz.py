"""
Pictures a person would rather look at than read: a robot drawn as sticks and frames.

Matplotlib only (Agg backend, files only); no ROS needed.
"""
import numpy as np


def draw_robot(model, q, path, base_pose=None, title=None, frame_scale=None):
    """
    Save a 3D stick-and-frame drawing of ``model`` at configuration ``q`` to ``path``.

    Every link frame is drawn as an RGB triad (x red, y green, z blue); sticks join
    each link's origin to its parent link's origin.  Returns ``path``.
    """
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    from ..core.kinematics import forward_kinematics

    Cs = forward_kinematics(model, np.asarray(q, dtype=float), base_pose=base_pose)
    pos = Cs[:, :3, 3]
    index = {n: i for i, n in enumerate(model.link_names)}
    span = float(np.ptp(pos, axis=0).max()) or 1.0
    scale = frame_scale or 0.08 * span
    fig = plt.figure(figsize=(7, 7))
    ax = fig.add_subplot(projection='3d')
    for i, parent in enumerate(model.link_parent):
        if parent is not None:
            a, b = pos[index[parent]], pos[i]
            ax.plot(*np.stack([a, b]).T, color='0.3', lw=3, solid_capstyle='round')
    for C in Cs:
        for k, color in enumerate('rgb'):
            ax.plot(*np.stack([C[:3, 3], C[:3, 3] + scale * C[:3, k]]).T, color=color, lw=1)
    ax.scatter(*pos.T, s=12, color='k')
    centre = pos.mean(axis=0)
    half = 0.6 * span
    ax.set_xlim(centre[0] - half, centre[0] + half)
    ax.set_ylim(centre[1] - half, centre[1] + half)
    ax.set_zlim(centre[2] - half, centre[2] + half)
    ax.set_box_aspect((1, 1, 1))
    ax.set_xlabel('x [m]')
    ax.set_ylabel('y [m]')
    ax.set_zlabel('z [m]')
    ax.set_title(title or f'{model.name} ({model.nq} DOF)')
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
