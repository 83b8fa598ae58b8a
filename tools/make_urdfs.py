#!/usr/bin/env python3
"""
Generate the robot descriptions shipped in ``urdf/`` (the generator is the source of truth).

Every ``<inertial>`` written here is *computed*, never typed in: a link is a list of solid
primitives (cylinders, boxes, spheres) of one density, each with a pose in the link frame.
The link's mass is the sum of the primitive masses, its centre of mass the mass-weighted
mean, and its inertia tensor about the centre of mass the sum of each primitive's
principal tensor rotated into the link frame (``R I R^T``) and shifted by the parallel-axis
theorem (``m (|d|^2 I - d d^T)``).  The same primitives are written as ``<visual>`` and
``<collision>`` geometry, so the file's geometry and inertia agree (the tests recompute
the inertia from the ``<collision>`` elements).  Geometry that the model of a paper
declares massless (the rod of the heavy top) is written as ``<visual>`` only.

Robots written:

``liemb_arm7``
    The default demo arm: 7 revolute joints with alternating axes, joint frames with
    non-trivial ``rpy``, tilted links (non-zero products of inertia), effort limits sized
    from a static bound on the gravity torques.
``heavy_top``
    The heavy top of [MT14] section 5.3 (and [MT13] section 5.1): an aluminium box on a
    massless rod, the spherical joint at the fixed point as revolute joints about x, y, z.
``spherical_double_pendulum``
    [MT14] section 5.4 / [MT13] section 5.2: two aluminium boxes, two spherical joints.
``planar_double_pendulum``
    Two aluminium rods and two parallel revolute joints, for quick tests.

It also writes ``urdf/README.md`` (the table of the shipped robots).  The papers [MT14],
[MT13] are listed in docs/theory/README.md (bibliography).

Usage::

    python tools/make_urdfs.py              # rewrite urdf/ in this checkout
    python tools/make_urdfs.py --out DIR    # write into DIR instead
    python tools/make_urdfs.py --check      # exit 1 if urdf/ differs from the generator

Only numpy is needed; the output is deterministic (byte-identical on every run).
"""
import argparse
import math
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DENSITY = 2700.0  # kg/m^3, aluminium: the density the papers' masses imply ([MT14] section 5)
GRAVITY = 9.81  # m/s^2
EFFORT_MARGIN = 0.55  # effort = static gravity-torque bound / EFFORT_MARGIN, rounded up
PI = math.pi

SOURCE_REFS = ('[MT14] = A. Mueller, Z. Terze, "The significance of the configuration space\n'
               'Lie group for the constraint satisfaction in numerical time integration of\n'
               'multibody systems", Mechanism and Machine Theory 82 (2014) 173-202; [MT13] =\n'
               'A. Mueller, Z. Terze, "Is there an optimal choice of configuration space for\n'
               'Lie group integration schemes applied to constrained MBS?", ASME IDETC 2013;\n'
               'bibliography: docs/theory/README.md; the papers\' misprints corrected here:\n'
               'docs/theory/errata.md')


# ----------------------------------------------------------------------------------------
# numbers and rotations
# ----------------------------------------------------------------------------------------

def fmt(x, digits=12):
    """
    Format a float with ``digits`` significant digits, without '-0' and without noise.

    12 digits keep the output byte-identical even if a libm differs in the last bit of a
    computed value; angles get 15 (``fmta``) so that pi/2 frames compose to 1e-15.
    """
    x = float(x)
    if abs(x) < 1e-14:
        return '0'
    s = f'{x:.{digits}g}'
    return '0' if s in ('-0', '0') else s


def fmtv(v):
    """Format a vector as space-separated numbers."""
    return ' '.join(fmt(x) for x in v)


def fmta(v):
    """Format roll-pitch-yaw angles."""
    return ' '.join(fmt(x, 15) for x in v)


def rpy_matrix(rpy):
    """Return the rotation of URDF roll-pitch-yaw angles: ``Rz(yaw) Ry(pitch) Rx(roll)``."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = (math.cos(r), math.sin(r), math.cos(p), math.sin(p),
                              math.cos(y), math.sin(y))
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


AXIS_RPY = {'x': (0.0, PI / 2, 0.0), 'y': (PI / 2, 0.0, 0.0), 'z': (0.0, 0.0, 0.0)}


# ----------------------------------------------------------------------------------------
# primitives
# ----------------------------------------------------------------------------------------

class Primitive:
    """A solid of uniform density: 'cylinder' (radius, length along its z), 'box', 'sphere'."""

    def __init__(self, kind, dims, xyz=(0.0, 0.0, 0.0), rpy=(0.0, 0.0, 0.0), name=''):
        self.kind, self.dims = kind, tuple(float(d) for d in dims)
        self.xyz = np.array(xyz, dtype=float)
        self.rpy = tuple(float(a) for a in rpy)
        self.name = name

    def volume(self):
        """Return the volume in m^3."""
        if self.kind == 'cylinder':
            r, h = self.dims
            return PI * r * r * h
        if self.kind == 'box':
            a, b, c = self.dims
            return a * b * c
        (r,) = self.dims
        return 4.0 / 3.0 * PI * r ** 3

    def principal_inertia(self, mass):
        """Return the inertia tensor about the primitive's centre, in its own frame."""
        if self.kind == 'cylinder':
            r, h = self.dims
            ixx = mass * (3.0 * r * r + h * h) / 12.0
            return np.diag([ixx, ixx, mass * r * r / 2.0])
        if self.kind == 'box':
            a, b, c = self.dims
            return mass / 12.0 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
        (r,) = self.dims
        return np.eye(3) * 0.4 * mass * r * r

    def geometry_xml(self):
        """Return the URDF <geometry> child element."""
        if self.kind == 'cylinder':
            return f'<cylinder radius="{fmt(self.dims[0])}" length="{fmt(self.dims[1])}"/>'
        if self.kind == 'box':
            return f'<box size="{fmtv(self.dims)}"/>'
        return f'<sphere radius="{fmt(self.dims[0])}"/>'


def cylinder(radius, length, center, axis='z', name=''):
    """Return a cylinder centred at ``center`` with its axis along a link-frame axis."""
    return Primitive('cylinder', (radius, length), center, AXIS_RPY[axis], name)


def segment(p0, p1, radius, name=''):
    """Return a cylinder whose axis runs from point p0 to point p1 (link frame)."""
    p0, p1 = np.asarray(p0, float), np.asarray(p1, float)
    d = p1 - p0
    length = float(np.linalg.norm(d))
    pitch = math.atan2(math.hypot(d[0], d[1]), d[2])  # Rz(yaw) Ry(pitch) e_z = d / |d|
    yaw = math.atan2(d[1], d[0]) if math.hypot(d[0], d[1]) > 1e-15 else 0.0
    return Primitive('cylinder', (radius, length), 0.5 * (p0 + p1), (0.0, pitch, yaw), name)


def box(size, center, rpy=(0.0, 0.0, 0.0), name=''):
    """Return a box of edge lengths ``size`` (along its own x, y, z)."""
    return Primitive('box', size, center, rpy, name)


def rigid_body(prims, density=DENSITY):
    """Return (mass, com, inertia about the com in link axes) of solid primitives."""
    masses = [density * p.volume() for p in prims]
    mass = sum(masses)
    com = sum(m * p.xyz for m, p in zip(masses, prims)) / mass
    inertia = np.zeros((3, 3))
    for m, p in zip(masses, prims):
        R = rpy_matrix(p.rpy)
        d = p.xyz - com
        inertia += R @ p.principal_inertia(m) @ R.T + m * (d @ d * np.eye(3) - np.outer(d, d))
    inertia = 0.5 * (inertia + inertia.T)
    inertia[np.abs(inertia) < 1e-13 * np.abs(inertia).max()] = 0.0  # rotation round-off
    return mass, com, inertia


# ----------------------------------------------------------------------------------------
# robot description (links, joints) and XML writer
# ----------------------------------------------------------------------------------------

class Link:
    """A link: mass-carrying primitives, massless visual-only primitives, or neither."""

    def __init__(self, name, prims=(), visual_only=(), color='grey'):
        self.name = name
        self.prims = list(prims)
        self.visual_only = list(visual_only)
        self.color = color
        # (mass, com, inertia about the com), always computed from the primitives
        self.inertial = rigid_body(self.prims) if self.prims else None


class Joint:
    """A joint of the URDF; ``limit`` is (lower, upper, velocity) and effort is computed."""

    def __init__(self, name, kind, parent, child, xyz=(0, 0, 0), rpy=(0, 0, 0), axis=None,
                 limit=None, damping=None, friction=None, effort=None):
        self.name, self.kind, self.parent, self.child = name, kind, parent, child
        self.xyz = np.array(xyz, dtype=float)
        self.rpy = tuple(float(a) for a in rpy)
        self.axis = None if axis is None else np.array(axis, dtype=float)
        self.limit = limit
        self.damping, self.friction = damping, friction
        self.effort = effort


def static_gravity_bounds(links, joints, point_masses=None, g=GRAVITY):
    """
    Return upper bounds of |gravity torque| of every moving joint over *all* configurations.

    For joint i with unit axis a and a point p on it (its frame origin), the gravity
    torque is ``tau_i = a . (u x g)`` with ``u = sum_k m_k (c_k - p)`` over the links k
    outboard of i.  Hence ``|tau_i| <= g sum_k m_k |a x (c_k - p)|`` (distances from the
    axis), and by the triangle inequality ``|a x (c_k - p)|`` is at most ``|a x t|`` for
    the first offset t (fixed in the joint's child frame, in which a is constant), plus
    the lengths of the further joint-origin offsets on the path to k, plus ``|com_k|``.
    If no moving joint lies between the world and joint i, a is fixed in the world and
    ``|tau_i| <= g |e_g x a| |u|``: zero for a vertical first axis.  ``point_masses``
    ({link: kg}, at the link frame origin) adds a rated payload that is not in the URDF.
    """
    point_masses = point_masses or {}
    by_link = {lk.name: lk for lk in links}
    children, parent_joint = {}, {}
    for j in joints:
        children.setdefault(j.parent, []).append(j)
        parent_joint[j.child] = j

    def moment(link_name, lever, first):
        """Sum of m_k times the lever bound over the subtree; lever(v) measures offsets."""
        lk = by_link[link_name]
        total = point_masses.get(link_name, 0.0) * lever
        if lk.inertial is not None:
            m, com, _ = lk.inertial
            total += m * (lever + (first(com) if first else float(np.linalg.norm(com))))
        for j in children.get(link_name, []):
            step = first(j.xyz) if first else float(np.linalg.norm(j.xyz))
            total += moment(j.child, lever + step, None)
        return total

    def world_axis(j):
        """Return the joint's axis in world axes if no moving joint is above it, else None."""
        R = rpy_matrix(j.rpy)
        link = j.parent
        while link in parent_joint:
            up = parent_joint[link]
            if up.kind != 'fixed':
                return None
            R = rpy_matrix(up.rpy) @ R
            link = up.parent
        return R @ (j.axis / np.linalg.norm(j.axis))

    bounds = {}
    for j in joints:
        if j.kind == 'fixed':
            continue
        a = j.axis / np.linalg.norm(j.axis)
        a_world = world_axis(j)
        if a_world is not None:
            factor = float(np.linalg.norm(np.cross([0.0, 0.0, 1.0], a_world)))
            bounds[j.name] = g * factor * moment(j.child, 0.0, None)
        else:
            bounds[j.name] = g * moment(j.child, 0.0,
                                        lambda v: float(np.linalg.norm(np.cross(a, v))))
    return bounds


def nice_ceil(x):
    """Round a torque up: to 1 N m below 20, to 5 N m above."""
    step = 1.0 if x < 20.0 else 5.0
    return max(step, step * math.ceil(x / step - 1e-9))


def size_efforts(links, joints, drive_class=None, point_masses=None):
    """
    Set the effort limits of the moving joints that have none from the gravity bounds.

    Joints of one drive class (a list of class labels in joint order) share one drive:
    the largest bound of the class divided by ``EFFORT_MARGIN``, rounded up.
    """
    bounds = static_gravity_bounds(links, joints, point_masses)
    moving = [j for j in joints if j.kind != 'fixed']
    classes = drive_class or list(range(len(moving)))
    worst = {}
    for j, c in zip(moving, classes):
        worst[c] = max(worst.get(c, 0.0), bounds[j.name])
    for j, c in zip(moving, classes):
        if j.effort is None:
            j.effort = nice_ceil(worst[c] / EFFORT_MARGIN)
    return bounds


MATERIALS = {'grey': '0.75 0.75 0.78 1', 'orange': '0.95 0.45 0.1 1',
             'dark': '0.25 0.25 0.28 1', 'blue': '0.2 0.4 0.8 1'}


def origin_xml(xyz, rpy):
    """Return an <origin> element."""
    return f'<origin xyz="{fmtv(xyz)}" rpy="{fmta(rpy)}"/>'


def link_xml(lk):
    """Return the XML lines of one link."""
    if lk.inertial is None and not lk.prims and not lk.visual_only:
        return [f'  <link name="{lk.name}"/>']
    out = [f'  <link name="{lk.name}">']
    if lk.inertial is not None:
        m, c, inertia = lk.inertial
        out += ['    <inertial>',
                f'      {origin_xml(c, (0, 0, 0))}',
                f'      <mass value="{fmt(m)}"/>',
                f'      <inertia ixx="{fmt(inertia[0, 0])}" ixy="{fmt(inertia[0, 1])}" '
                f'ixz="{fmt(inertia[0, 2])}" iyy="{fmt(inertia[1, 1])}" '
                f'iyz="{fmt(inertia[1, 2])}" izz="{fmt(inertia[2, 2])}"/>',
                '    </inertial>']
    for p in lk.prims + lk.visual_only:
        name = f' name="{p.name}"' if p.name else ''
        out += [f'    <visual{name}>',
                f'      {origin_xml(p.xyz, p.rpy)}',
                f'      <geometry>{p.geometry_xml()}</geometry>',
                f'      <material name="{lk.color}"/>',
                '    </visual>']
    for p in lk.prims:
        name = f' name="{p.name}"' if p.name else ''
        out += [f'    <collision{name}>',
                f'      {origin_xml(p.xyz, p.rpy)}',
                f'      <geometry>{p.geometry_xml()}</geometry>',
                '    </collision>']
    out.append('  </link>')
    return out


def joint_xml(j):
    """Return the XML lines of one joint."""
    out = [f'  <joint name="{j.name}" type="{j.kind}">',
           f'    <parent link="{j.parent}"/>',
           f'    <child link="{j.child}"/>',
           f'    {origin_xml(j.xyz, j.rpy)}']
    if j.kind != 'fixed':
        out.append(f'    <axis xyz="{fmtv(j.axis)}"/>')
        lo, hi, vel = j.limit
        out.append(f'    <limit lower="{fmt(lo, 15)}" upper="{fmt(hi, 15)}" velocity="{fmt(vel)}" '
                   f'effort="{fmt(j.effort)}"/>')
        out.append(f'    <dynamics damping="{fmt(j.damping)}" friction="{fmt(j.friction)}"/>')
    out.append('  </joint>')
    return out


def comment(text, indent=''):
    """Return an XML comment block (the text must not contain a double hyphen)."""
    assert '--' not in text, text
    lines = text.strip('\n').split('\n')
    return [f'{indent}<!--'] + [f'{indent}  {ln}'.rstrip() for ln in lines] + [f'{indent}-->']


def robot_xml(name, header, links, joints, notes=None):
    """Return the whole URDF text."""
    used = sorted({lk.color for lk in links if lk.prims or lk.visual_only})
    out = ['<?xml version="1.0"?>']
    out += comment(header)
    out.append(f'<robot name="{name}">')
    if notes:
        out += comment(notes, '  ')
    for c in used:
        out.append(f'  <material name="{c}"><color rgba="{MATERIALS[c]}"/></material>')
    by_parent = {j.child: j for j in joints}
    for lk in links:
        if lk.name in by_parent:
            out += joint_xml(by_parent[lk.name])
        out += link_xml(lk)
    out.append('</robot>')
    return '\n'.join(out) + '\n'


def total_mass(links):
    """Return the sum of the link masses."""
    return sum(lk.inertial[0] for lk in links if lk.inertial is not None)


def header_text(what, source, links, joints, extra=''):
    """Return the common header comment of a generated file."""
    dof = sum(1 for j in joints if j.kind != 'fixed')
    return (f'GENERATED by tools/make_urdfs.py; do not edit by hand (re-run the generator).\n'
            f'Units: SI (m, kg, kg m^2, rad, rad/s, N m, N m s/rad); angles in radians.\n'
            f'Model: {what}\n'
            f'Degrees of freedom: {dof}; total mass {total_mass(links):.4f} kg.\n'
            f'Inertials: computed from the solid <collision> primitives, density '
            f'{DENSITY:g} kg/m^3\n'
            f'(aluminium), parallel-axis theorem, tensors about the COM in link axes.\n'
            f'Parameter source: {source}\n' + extra)


# ----------------------------------------------------------------------------------------
# liemb_arm7
# ----------------------------------------------------------------------------------------

ARM_VELOCITY = (2.0, 2.0, 2.2, 2.2, 2.6, 2.6, 3.0)  # rad/s, Panda/iiwa-like design values
ARM_LIMITS = ((-2.9, 2.9), (-2.0, 2.0), (-2.9, 2.9), (-2.1, 2.1), (-2.9, 2.9), (-2.0, 2.0),
              (-3.0, 3.0))  # rad
ARM_PAYLOAD = 2.0  # kg, rated payload at tool0, used to size the efforts (not in the URDF)
ARM_DRIVES = ('shoulder', 'shoulder', 'elbow', 'elbow', 'wrist', 'wrist', 'wrist')
ARM_DAMPING_PER_EFFORT = 0.01  # damping [N m s/rad] = 1 % of the effort limit [N m]
ARM_FRICTION_PER_EFFORT = 0.02  # Coulomb friction [N m] = 2 % of the effort limit


def arm7():
    """Return (links, joints) of the 7-DOF demo arm."""
    half = PI / 2
    links = [
        Link('world'),
        Link('base_link', [cylinder(0.065, 0.09, (0, 0, 0.045), 'z', 'base')], color='dark'),
        # shoulder: motor housing of joint 1, column up to the housing of joint 2
        Link('link1', [cylinder(0.05, 0.07, (0, 0, 0.035), 'z', 'j1_housing'),
                       segment((0, 0, 0.07), (0, 0, 0.185), 0.038, 'column')]),
        # joint 2 frame: z horizontal (parent -y), y up the arm
        Link('link2', [cylinder(0.05, 0.10, (0, 0, 0), 'z', 'j2_housing'),
                       segment((0, 0.05, 0), (0, 0.145, 0), 0.036, 'upper_arm_a')],
             color='orange'),
        # joint 3 frame: z along the upper arm; the arm kinks out to the elbow offset
        Link('link3', [cylinder(0.045, 0.09, (0, 0, 0), 'z', 'j3_housing'),
                       segment((0, 0, 0.045), (0.06, 0, 0.155), 0.034, 'upper_arm_b')]),
        # elbow (joint 4 about y, no rpy); the forearm kinks back onto the arm line
        Link('link4', [cylinder(0.045, 0.09, (0, 0, 0), 'y', 'j4_housing'),
                       segment((0, 0, 0.045), (-0.06, 0, 0.15), 0.032, 'forearm_a')],
             color='orange'),
        Link('link5', [cylinder(0.04, 0.08, (0, 0, 0), 'z', 'j5_housing'),
                       segment((0, 0, 0.04), (0, 0, 0.17), 0.03, 'forearm_b')]),
        # wrist (joint 6 axis = parent x via rpy (pi/2, 0, pi/2)); bracket out to joint 7
        Link('link6', [cylinder(0.04, 0.08, (0, 0, 0), 'z', 'j6_housing'),
                       segment((0, 0.03, 0), (0.07, 0.05, 0), 0.025, 'wrist_bracket')],
             color='orange'),
        Link('link7', [cylinder(0.035, 0.07, (0, 0, 0), 'z', 'j7_housing'),
                       cylinder(0.04, 0.015, (0, 0, 0.0425), 'z', 'flange_plate')]),
        Link('flange'),
        Link('tool0'),
    ]
    o = (0, 0, 0)
    joints = [
        Joint('world_joint', 'fixed', 'world', 'base_link'),
        Joint('joint1', 'revolute', 'base_link', 'link1', (0, 0, 0.09), o, (0, 0, 1)),
        Joint('joint2', 'revolute', 'link1', 'link2', (0, 0, 0.235), (half, 0, 0), (0, 0, 1)),
        Joint('joint3', 'revolute', 'link2', 'link3', (0, 0.19, 0), (-half, 0, 0), (0, 0, 1)),
        Joint('joint4', 'revolute', 'link3', 'link4', (0.06, 0, 0.2), o, (0, 1, 0)),
        Joint('joint5', 'revolute', 'link4', 'link5', (-0.06, 0, 0.19), o, (0, 0, 1)),
        Joint('joint6', 'revolute', 'link5', 'link6', (0, 0, 0.21), (half, 0, half), (0, 0, 1)),
        Joint('joint7', 'revolute', 'link6', 'link7', (0.07, 0.085, 0), (-half, 0, 0),
              (0, 0, 1)),
        Joint('flange_joint', 'fixed', 'link7', 'flange', (0, 0, 0.05)),
        Joint('tool0_joint', 'fixed', 'flange', 'tool0'),
    ]
    for j, lim, vel in zip(joints[1:8], ARM_LIMITS, ARM_VELOCITY):
        j.limit = (lim[0], lim[1], vel)
    size_efforts(links, joints, ARM_DRIVES, {'tool0': ARM_PAYLOAD})
    for j in joints[1:8]:
        j.damping = ARM_DAMPING_PER_EFFORT * j.effort
        j.friction = ARM_FRICTION_PER_EFFORT * j.effort
    return links, joints


def arm7_urdf():
    """Return the URDF text of liemb_arm7."""
    links, joints = arm7()
    bounds = static_gravity_bounds(links, joints, {'tool0': ARM_PAYLOAD})
    rows = '\n'.join(f'  {j.name} ({c} drive): bound {bounds[j.name]:.2f} N m, '
                     f'effort {fmt(j.effort)} N m'
                     for j, c in zip(joints[1:8], ARM_DRIVES))
    header = header_text(
        'liemb_arm7, the default demo robot of liemb_ros: a 7-DOF revolute arm with\n'
        'Panda/iiwa-like proportions (shoulder-to-flange 0.925 m stretched), alternating\n'
        'joint axes, a 0.06 m elbow offset and a 0.07 m wrist offset, joint frames with\n'
        'non-trivial rpy (joints 2, 3, 6, 7) and tilted links (non-zero products of inertia).',
        'designed for liemb_ros (no real robot); aluminium solids.', links, joints,
        'Effort limits: a static upper bound on |gravity torque| over all configurations\n'
        '(sum of m_k g times the longest possible distance of COM k from the joint axis),\n'
        f'with a rated payload of {fmt(ARM_PAYLOAD)} kg at tool0 (not part of this model), the\n'
        f'largest per drive size (shoulder, elbow, wrist), divided by {EFFORT_MARGIN:g}, '
        'rounded up:\n'
        + rows + '\n'
        f'Damping = {ARM_DAMPING_PER_EFFORT:g} s times effort, Coulomb friction = '
        f'{ARM_FRICTION_PER_EFFORT:g} times effort.\n'
        'Links flange and tool0 are massless frames (tool0 = flange: z out of the flange).')
    return robot_xml('liemb_arm7', header, links, joints)


# ----------------------------------------------------------------------------------------
# paper models: spherical joints as revolute joints about x, y, z through the joint centre
# ----------------------------------------------------------------------------------------

SPHERICAL_LIMIT = (-PI, PI, 1000.0)  # not physical: the papers' spherical joints are free
SPHERICAL_NOTE = (
    'Each spherical joint is written as three revolute joints about x, y and z through the\n'
    'joint centre, with two massless intermediate links (no <inertial>): R(x) R(y) R(z),\n'
    'i.e. XYZ Euler angles, singular at the middle angle = +-pi/2 (gimbal lock). The\n'
    'limits (+-pi, 1000 rad/s, effort 0 = passive) are not physical; the papers\' joints\n'
    'are ideal (no damping, no friction). The papers integrate the bodies on SE(3) or\n'
    'SO(3)xR3 in absolute coordinates; this chain is the same mechanism in joint space.')


def spherical(prefix, parent, child, xyz):
    """Return (intermediate links, joints) of a spherical joint as R(x) R(y) R(z)."""
    mids = [Link(f'{prefix}_x_link'), Link(f'{prefix}_y_link')]
    chain = [parent, mids[0].name, mids[1].name, child]
    joints = []
    for k, (ax, axis) in enumerate((('x', (1, 0, 0)), ('y', (0, 1, 0)), ('z', (0, 0, 1)))):
        j = Joint(f'{prefix}_{ax}', 'revolute', chain[k], chain[k + 1],
                  xyz if k == 0 else (0, 0, 0), (0, 0, 0), axis, SPHERICAL_LIMIT,
                  damping=0.0, friction=0.0, effort=0.0)
        joints.append(j)
    return mids, joints


def check_paper_inertial(link, mass, com, inertia_diag):
    """Assert that the computed inertial of a link reproduces a paper's stated numbers."""
    m, c, inertia = link.inertial
    assert abs(m - mass) < 1e-9 * mass, (link.name, m, mass)
    assert np.allclose(c, com, atol=1e-12), (link.name, c, com)
    assert np.allclose(inertia, np.diag(inertia_diag), rtol=1e-9, atol=1e-12), \
        (link.name, inertia)


# heavy top ([MT14] section 5.3; [MT13] section 5.1)
TOP_BOX = (0.1, 0.2, 0.4)  # m, edges along the body x, y, z axes
TOP_MASS = 21.6  # kg
TOP_INERTIA = (0.36, 0.306, 0.09)  # kg m^2 about the COM
TOP_COM = (0.5, 0.0, 0.0)  # m, COM seen from the pivot ([MT14]: r0 = (-0.5, 0, 0) COM->pivot)


def heavy_top():
    """Return (links, joints) of the heavy top."""
    top = Link('top', [box(TOP_BOX, TOP_COM, name='box')],
               visual_only=[segment((0, 0, 0), (TOP_COM[0] - TOP_BOX[0] / 2, 0, 0), 0.005,
                                    'massless_rod')],
               color='blue')
    check_paper_inertial(top, TOP_MASS, TOP_COM, TOP_INERTIA)
    mids, joints = spherical('pivot', 'world', 'top', (0, 0, 0))
    return [Link('world')] + mids + [top], joints


def heavy_top_urdf():
    """Return the URDF text of the heavy top."""
    links, joints = heavy_top()
    header = header_text(
        'the heavy top: an aluminium box 0.1 x 0.2 x 0.4 m (m = 21.6 kg, inertia about the\n'
        'COM diag(0.36, 0.306, 0.09) kg m^2) on a massless rod, held at the fixed point Q\n'
        '(the world origin) by a spherical joint; COM at (0.5, 0, 0) m from Q in the body.',
        '[MT14] section 5.3 and [MT13] section 5.1;\n' + SOURCE_REFS + '.', links, joints)
    notes = (
        'What this URDF cannot express, and where the example code takes it from:\n'
        '1. The spring of [MT14] section 5.3: stiffness c = 1e4 N/m (10 N/mm) from the\n'
        '   COM to the space-fixed point p0 = (1, 0, 0.5) m, zero rest length, force\n'
        '   c (p0 - r) at the COM. Gravity g = (0, 0, -9.81) m/s^2. [MT13] section 5.1 has\n'
        '   neither spring nor gravity. Code that reproduces the papers applies these forces\n'
        '   itself, with these constants.\n'
        '2. The papers\' body frame is at the COM (box centre), parallel to the world frame\n'
        '   in the reference configuration. Here the link frame "top" is at the pivot Q,\n'
        '   parallel to the papers\' frame: C_paper = C_top * (I, (0.5, 0, 0)). That code\n'
        '   converts with this constant offset ([MT14]: r0 = (-0.5, 0, 0) COM to pivot;\n'
        '   [MT13]: r0 = (0.5, 0, 0) pivot to COM).\n'
        '3. The initial conditions ([MT14]: omega0 = (0, 0, 0.5) rad/s, COM at (0.5, 0, 0)\n'
        '   as corrected in docs/theory/errata.md#mt14-s5-3; [MT13]: omega0 = (0, 20 pi,\n'
        '   10 pi) rad/s) are example settings, not model data; q = 0 is the reference\n'
        '   configuration R = I.\n'
        'The rod is drawn as <visual> only: it is massless in the papers.\n\n'
        + SPHERICAL_NOTE)
    return robot_xml('heavy_top', header, links, joints, notes)


# spherical double pendulum ([MT14] section 5.4; [MT13] section 5.2)
SDP_BOX = (0.2, 0.1, 0.05)  # m, a, b, c along the body x, y, z axes
SDP_MASS = 2.7  # kg (not given in the papers: aluminium, as in their other examples)
SDP_INERTIA = (0.0028125, 0.0095625, 0.01125)  # kg m^2 about the COM (derived, aluminium)
SDP_COM = (0.1, 0.0, 0.0)  # m, COM from the body's proximal joint (joint i at -a/2 on x)


def spherical_double_pendulum():
    """Return (links, joints) of the spherical double pendulum."""
    links, joints = [Link('world')], []
    parents = ('world', 'link1')
    origins = ((0, 0, 0), (SDP_BOX[0], 0, 0))
    for i in (1, 2):
        body = Link(f'link{i}', [box(SDP_BOX, SDP_COM, name='box')],
                    color='orange' if i == 1 else 'blue')
        check_paper_inertial(body, SDP_MASS, SDP_COM, SDP_INERTIA)
        mids, js = spherical(f'joint{i}', parents[i - 1], body.name, origins[i - 1])
        links += mids + [body]
        joints += js
    return links, joints


def spherical_double_pendulum_urdf():
    """Return the URDF text of the spherical double pendulum."""
    links, joints = spherical_double_pendulum()
    header = header_text(
        'the spherical double pendulum: two identical aluminium boxes a x b x c =\n'
        '0.2 x 0.1 x 0.05 m (edges along body x, y, z), joint 1 (spherical) from the world\n'
        'origin to box 1 at -a/2 on its x axis, joint 2 (spherical) from +a/2 of box 1 to\n'
        '-a/2 of box 2. At q = 0 the pendulum lies along the world x axis (the papers\'\n'
        'initial configuration C1 = (I, (0.1, 0, 0)), C2 = (I, (0.3, 0, 0))).',
        '[MT14] section 5.4 and [MT13] section 5.2;\n' + SOURCE_REFS + '.\n'
        'The papers give no masses or inertias: m = 2.7 kg and\n'
        'diag(0.0028125, 0.0095625, 0.01125) kg m^2 follow from the aluminium (2700 kg/m^3)\n'
        'of their other examples (docs/theory/errata.md#mt14-s5-4).', links, joints)
    notes = (
        'What this URDF cannot express, and where the example code takes it from:\n'
        '1. The papers\' body frames are at the box centres (COM); here each link frame is\n'
        '   at the body\'s proximal joint, parallel to the papers\' frame:\n'
        '   C_paper_i = C_link_i * (I, (0.1, 0, 0)). In the papers\' notation\n'
        '   r0 = r20 = (-0.1, 0, 0) and r10 = (0.1, 0, 0) (COM to joint, body axes).\n'
        '2. Gravity g = (0, 0, -9.81) m/s^2 and the initial conditions omega10 = (10, 0, 0),\n'
        '   omega20 = (10 pi, 10 pi, 20 pi) rad/s are example settings ([MT14] section 5.4).\n'
        '3. [MT13] section 5.3 uses the same two bodies joined only by the spherical joint\n'
        '   between them, with no ground joint and no gravity (a floating pair): link1 as a\n'
        '   floating base, joint2 and link2. It is built in code, not shipped.\n\n'
        + SPHERICAL_NOTE)
    return robot_xml('spherical_double_pendulum', header, links, joints, notes)


# planar double pendulum (quick tests)
PDP_ROD = (0.02, 0.4)  # m, radius and length of each solid aluminium rod


def planar_double_pendulum():
    """Return (links, joints) of the planar double pendulum (hanging along -z at q = 0)."""
    r, length = PDP_ROD
    links = [Link('world'),
             Link('link1', [cylinder(r, length, (0, 0, -length / 2), 'z', 'rod')],
                  color='orange'),
             Link('link2', [cylinder(r, length, (0, 0, -length / 2), 'z', 'rod')],
                  color='blue'),
             Link('tip')]
    lim = (-PI, PI, 20.0)
    joints = [Joint('joint1', 'revolute', 'world', 'link1', (0, 0, 0), (0, 0, 0), (0, 1, 0),
                    lim, 0.0, 0.0),
              Joint('joint2', 'revolute', 'link1', 'link2', (0, 0, -length), (0, 0, 0),
                    (0, 1, 0), lim, 0.0, 0.0),
              Joint('tip_joint', 'fixed', 'link2', 'tip', (0, 0, -length))]
    size_efforts(links, joints)
    return links, joints


def planar_double_pendulum_urdf():
    """Return the URDF text of the planar double pendulum."""
    links, joints = planar_double_pendulum()
    r, length = PDP_ROD
    header = header_text(
        f'a planar double pendulum for quick tests: two solid aluminium rods\n'
        f'(radius {fmt(r)} m, length {fmt(length)} m), joints about the world y axis at the\n'
        f'world origin and at the end of rod 1; q = 0 hangs straight down (-z), the stable\n'
        f'equilibrium; link "tip" marks the end of rod 2. Ideal joints (no damping or\n'
        f'friction), so energy is conserved.',
        'designed for liemb_ros tests.', links, joints,
        f'Effort limits: static gravity-torque bound / {EFFORT_MARGIN:g}, rounded up.')
    return robot_xml('planar_double_pendulum', header, links, joints)


# ----------------------------------------------------------------------------------------
# README and main
# ----------------------------------------------------------------------------------------

ROBOTS = (
    ('liemb_arm7', arm7, arm7_urdf,
     'default demo robot (`liemb demo`, dynamics node); kinematics/dynamics tests with '
     'rotated joint frames and full inertia tensors', 'designed here (Panda/iiwa-like)'),
    ('heavy_top', heavy_top, heavy_top_urdf,
     'Lie group integration examples ([MT14] §5.3 with spring and gravity; [MT13] §5.1 '
     'torque-free)', '[MT14] §5.3, [MT13] §5.1'),
    ('spherical_double_pendulum', spherical_double_pendulum, spherical_double_pendulum_urdf,
     'Lie group integration examples: joint 1 exact on SE(3), joint 2 of order 4',
     '[MT14] §5.4, [MT13] §5.2; masses assumed aluminium'),
    ('planar_double_pendulum', planar_double_pendulum, planar_double_pendulum_urdf,
     'quick tests (2 DOF, energy conservation, hanging equilibrium at q = 0)', 'designed here'),
)


def readme_text():
    """Return urdf/README.md."""
    rows = []
    for name, build, _, use, source in ROBOTS:
        links, joints = build()
        dof = sum(1 for j in joints if j.kind != 'fixed')
        rows.append(f'| `{name}.urdf` | {dof} | {total_mass(links):.3f} | {use} | {source} |')
    return '\n'.join([
        '# Shipped robots',
        '',
        'Generated by `tools/make_urdfs.py` (this file too): edit the generator, then run',
        '`.venv/bin/python tools/make_urdfs.py` (`--check` verifies that the files are up to',
        'date; `test/test_urdf_files.py` does the same).  Every `<inertial>` is computed from',
        'the solid primitives that are also the `<visual>`/`<collision>` geometry, density',
        f'{DENSITY:g} kg/m³ (aluminium, the density the papers\' masses imply): mass, centre of',
        'mass, and the inertia tensor about the centre of mass in link axes (rotated primitive',
        'tensors plus the parallel-axis theorem).  SI units throughout.',
        '',
        '| file | DOF | mass [kg] | for | parameter source |',
        '|---|---|---|---|---|',
        *rows,
        '',
        'Notes:',
        '',
        '- `liemb_arm7`: links `base_link`, `link1`..`link7`, `flange`, `tool0` under a `world`',
        '  root; joints `joint1`..`joint7`.  Effort limits: a static upper bound of the gravity',
        f'  torque over all configurations (with a rated {fmt(ARM_PAYLOAD)} kg payload at '
        '`tool0`), the largest',
        '  per drive size (shoulder: joints 1-2, elbow: 3-4, wrist: 5-7), divided by '
        f'{EFFORT_MARGIN:g}, so gravity',
        '  never needs more than that fraction of an effort limit (the tests check < 60 % with',
        '  Pinocchio at 200 random configurations).',
        '  Damping and Coulomb friction are 1 % and 2 % of the effort limit (design values).',
        '- Spherical joints are three revolute joints about x, y, z through the joint centre',
        '  (two massless intermediate links), singular at a middle angle of ±π/2.  Their',
        '  limits are placeholders (passive: effort 0).  The heavy top\'s spring, gravity,',
        '  initial conditions and the papers\' COM body frames are not in the URDFs: see the',
        '  comments in the files and the example pages',
        '  [docs/examples/](../../docs/examples/README.md) (`heavy_top_spring`, `heavy_top`,',
        '  `double_pendulum`).',
        '- [MT14], [MT13]: the papers, listed in',
        '  [docs/theory/README.md](../../docs/theory/README.md#bibliography); the misprints',
        '  that the parameters here correct:',
        '  [docs/theory/errata.md](../../docs/theory/errata.md).',
        '- Link frames of the paper models sit at the proximal joint, parallel to the papers\'',
        '  COM frames (a constant offset along body x).',
        '',
    ])


def outputs():
    """Return {file name: text} of everything the generator writes."""
    files = {f'{name}.urdf': make() for name, _, make, _, _ in ROBOTS}
    files['README.md'] = readme_text()
    return files


def main(argv=None):
    """Write (or with --check compare) the generated files; return the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0].strip())
    ap.add_argument('--out', default=os.path.join(ROOT, 'liemb_ros', 'urdf'), help='output folder')
    ap.add_argument('--check', action='store_true',
                    help='compare with the files in --out instead of writing')
    args = ap.parse_args(argv)
    stale = []
    for fname, text in outputs().items():
        path = os.path.join(args.out, fname)
        if args.check:
            try:
                with open(path, encoding='utf-8', newline='') as f:
                    if f.read() != text:
                        stale.append(fname)
            except FileNotFoundError:
                stale.append(fname)
            continue
        os.makedirs(args.out, exist_ok=True)
        with open(path, 'w', encoding='utf-8', newline='\n') as f:
            f.write(text)
        print(path)
    if stale:
        print('out of date (re-run tools/make_urdfs.py): ' + ', '.join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
