"""
The URDF ``<collision>`` geometry as contact spheres, and ``<gazebo>`` friction.

What :mod:`liemb_ros.sim.contact` (whose module docstring describes the conversion of each
primitive and mesh) reads a robot's contact geometry with; the public names are
importable from there.
"""
import os
import struct
import xml.etree.ElementTree as ET

import numpy as np

from ..core.model.urdf import rpy_to_matrix
from ..core.resources import read_bounded, resolve_mesh

#: points on each rim of a ``<cylinder>``
CYLINDER_RIM_POINTS = 8
MESH_MODES = ('points', 'box', 'sphere')


class ContactError(ValueError):
    """Contact parameters or collision geometry that cannot be used (naming the link)."""


def _numbers(el, attr, count, link, what, default=None):
    text = el.get(attr) if el is not None else None
    if text is None:
        if default is None:
            raise ContactError(f"link '{link}': {what} has no {attr}")
        return np.array(default, dtype=float)
    try:
        vals = np.array([float(w) for w in text.split()])
    except ValueError:
        vals = None
    if vals is None or vals.shape != (count,) or not np.all(np.isfinite(vals)):
        raise ContactError(f"link '{link}': {what} {attr}={text!r} must be {count} finite "
                           'number' + ('s' if count > 1 else ''))
    return vals


def _positive(value, link, what):
    if not value > 0:
        raise ContactError(f"link '{link}': {what} must be positive, got {value:g}")
    return float(value)


# -- meshes ---------------------------------------------------------------------------------
def read_mesh_vertices(path):
    """
    Return the vertices (n, 3) of an STL (binary or ASCII) or OBJ file; raise ContactError.

    At most :data:`~liemb_ros.core.resources.MAX_MESH_BYTES` are read, checked before
    reading (:func:`~liemb_ros.core.resources.read_bounded`).
    """
    ext = os.path.splitext(path)[1].lower()
    if ext not in ('.stl', '.obj'):
        raise ContactError(f'{path}: mesh format {ext or "(none)"} not read (STL and OBJ are)')
    try:   # a description may name any file: a bounded read, checked before it reads
        data = read_bounded(path)
    except OSError as exc:
        raise ContactError(f'{path}: {exc.strerror}') from None
    except ValueError as exc:   # too large, not a regular file
        raise ContactError(str(exc)) from None
    if ext == '.stl':
        n = struct.unpack('<I', data[80:84])[0] if len(data) >= 84 else -1
        if n >= 0 and len(data) == 84 + 50 * n:      # binary (may start with 'solid' too)
            rec = np.frombuffer(data, dtype=np.dtype([('n', '<f4', 3), ('v', '<f4', (3, 3)),
                                                      ('a', '<u2')]), count=n, offset=84)
            v = rec['v'].reshape(-1, 3).astype(float)
        else:
            v = np.array([line.split()[1:4] for line in data.decode('ascii', 'replace')
                          .splitlines() if line.strip().startswith('vertex')], dtype=float)
    else:
        v = np.array([line.split()[1:4] for line in data.decode('utf-8', 'replace')
                      .splitlines() if line.startswith('v ')], dtype=float)
    if v.ndim != 2 or len(v) == 0 or not np.all(np.isfinite(v)):
        raise ContactError(f'{path}: no finite vertices')
    return v


def _farthest_points(v, k):
    """``k`` of the points ``v`` by farthest-point sampling (from the lowest in z)."""
    if len(v) <= k:
        return v
    keep = [int(np.argmin(v[:, 2]))]
    d = np.linalg.norm(v - v[keep[0]], axis=1)
    for _ in range(k - 1):
        i = int(np.argmax(d))
        keep.append(i)
        d = np.minimum(d, np.linalg.norm(v - v[i], axis=1))
    return v[keep]


def _mesh_spheres(v, mode, mesh_points):
    """Contact spheres (centres (k, 3), radii (k,)) of mesh vertices ``v`` in the link frame."""
    lo, hi = v.min(axis=0), v.max(axis=0)
    if mode == 'sphere':
        c = 0.5 * (lo + hi)
        return c[None], np.array([float(np.max(np.linalg.norm(v - c, axis=1)))])
    if mode == 'box':
        corners = np.array([[(lo, hi)[i][0], (lo, hi)[j][1], (lo, hi)[k][2]]
                            for i in (0, 1) for j in (0, 1) for k in (0, 1)])
        return corners, np.zeros(8)
    try:
        from scipy.spatial import ConvexHull
        v = v[ConvexHull(v).vertices]
    except Exception:   # flat or degenerate meshes, or no scipy: all vertices
        v = np.unique(v, axis=0)
    pts = _farthest_points(v, mesh_points)
    return pts, np.zeros(len(pts))


# -- the URDF -------------------------------------------------------------------------------
def _urdf_root(urdf):
    """Parse ``urdf`` (XML text or a file path); return ``(root element, file path or None)``."""
    if isinstance(urdf, ET.Element):
        return urdf, None
    text, path = urdf, None
    if isinstance(urdf, os.PathLike) or (isinstance(urdf, str) and '<' not in urdf):
        from ..core.resources import read_robot_description
        text, path = read_robot_description(os.fspath(urdf))
    if isinstance(text, bytes):
        text = text.decode('utf-8')
    try:
        return ET.fromstring(text), path
    except ET.ParseError as exc:
        raise ContactError(f'malformed URDF XML: {exc}') from None


def collision_geometry(urdf, *, mesh='points', mesh_points=32, urdf_path=None):
    """
    Return ``{link: (centres (k, 3), radii (k,))}``, the contact spheres of the links.

    The spheres stand for every link's ``<collision>`` elements, in the link frame
    (module docstring).

    ``urdf``: XML text or a file path; ``urdf_path``: where relative and ``package://``
    mesh names are looked for when ``urdf`` is text.  Links without ``<collision>`` are
    absent.  Raises :class:`ContactError` naming the link for a geometry it cannot use
    (no or unknown geometry, non-positive size, unreadable mesh).
    """
    if mesh not in MESH_MODES:
        raise ContactError(f"mesh must be one of {', '.join(MESH_MODES)}, got {mesh!r}")
    if not (int(mesh_points) == mesh_points and mesh_points >= 1):
        raise ContactError(f'mesh_points must be a positive integer, got {mesh_points!r}')
    root, path = _urdf_root(urdf)
    path = path or urdf_path
    out = {}
    for link_el in root.findall('link'):
        name = link_el.get('name')
        centres, radii = [], []
        for col in link_el.findall('collision'):
            org = col.find('origin')
            C = np.eye(4)
            C[:3, 3] = _numbers(org, 'xyz', 3, name, 'collision origin', (0.0, 0.0, 0.0))
            C[:3, :3] = rpy_to_matrix(_numbers(org, 'rpy', 3, name, 'collision origin',
                                               (0.0, 0.0, 0.0)))
            geo = col.find('geometry')
            shape = geo[0] if geo is not None and len(geo) else None
            if shape is None:
                raise ContactError(f"link '{name}': <collision> has no <geometry>")
            what = f'collision <{shape.tag}>'
            if shape.tag == 'sphere':
                r = _positive(_numbers(shape, 'radius', 1, name, what)[0], name,
                              'sphere radius')
                pts, rad = np.zeros((1, 3)), np.array([r])
            elif shape.tag == 'capsule':
                r = _positive(_numbers(shape, 'radius', 1, name, what)[0], name,
                              'capsule radius')
                ln = _numbers(shape, 'length', 1, name, what)[0]
                if ln < 0:
                    raise ContactError(f"link '{name}': capsule length must not be negative")
                pts, rad = np.array([[0, 0, -ln / 2], [0, 0, ln / 2]]), np.array([r, r])
            elif shape.tag == 'box':
                s = _numbers(shape, 'size', 3, name, what)
                if not np.all(s > 0):
                    raise ContactError(f"link '{name}': box size {s.tolist()} must be positive")
                pts = 0.5 * s * np.array([[i, j, k] for i in (-1, 1) for j in (-1, 1)
                                          for k in (-1, 1)])
                rad = np.zeros(8)
            elif shape.tag == 'cylinder':
                r = _positive(_numbers(shape, 'radius', 1, name, what)[0], name,
                              'cylinder radius')
                ln = _positive(_numbers(shape, 'length', 1, name, what)[0], name,
                               'cylinder length')
                a = 2 * np.pi * np.arange(CYLINDER_RIM_POINTS) / CYLINDER_RIM_POINTS
                ring = np.stack([r * np.cos(a), r * np.sin(a), np.zeros_like(a)], axis=1)
                pts = np.concatenate([ring + [0, 0, -ln / 2], ring + [0, 0, ln / 2]])
                rad = np.zeros(len(pts))
            elif shape.tag == 'mesh':
                fn = shape.get('filename') or ''
                folder = os.path.dirname(os.path.abspath(path)) if path else None
                file = resolve_mesh(fn, folder)[0] if fn else None
                if file is None:
                    raise ContactError(f"link '{name}': collision mesh {fn!r} not found; "
                                       "leave the link out of the contacts (links) or give "
                                       'it a primitive')
                try:
                    v = read_mesh_vertices(file)
                except ContactError as exc:
                    raise ContactError(f"link '{name}': {exc}") from None
                v = v * _numbers(shape, 'scale', 3, name, what, (1.0, 1.0, 1.0))
                pts, rad = _mesh_spheres(v, mesh, int(mesh_points))
            else:
                raise ContactError(f"link '{name}': collision geometry <{shape.tag}> is not "
                                   'one of sphere, box, cylinder, capsule, mesh')
            centres.append(pts @ C[:3, :3].T + C[:3, 3])
            radii.append(rad)
        if centres:
            out[name] = (np.concatenate(centres), np.concatenate(radii))
    return out


def gazebo_friction(urdf):
    """
    Return ``{link: μ}`` from ``<gazebo reference="link"><mu1>``.

    ``<mu2>`` is not used: friction here is isotropic.  Raises ContactError naming the
    link for a bad value.
    """
    root, _ = _urdf_root(urdf)
    out = {}
    for gz in root.findall('gazebo'):
        link = gz.get('reference')
        el = gz.find('mu1')
        if link is None or el is None:
            continue
        try:
            mu = float((el.text or '').strip())
        except ValueError:
            mu = float('nan')
        if not (np.isfinite(mu) and mu >= 0):
            raise ContactError(f"link '{link}': <gazebo><mu1> {el.text!r} must be a finite "
                               'non-negative number')
        out[link] = mu
    return out
