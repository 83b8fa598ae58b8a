"""
The URDF visual geometry the view draws: :class:`Visual` and :func:`read_visuals`.

Boxes, cylinders, spheres and mesh files (``package://`` and relative paths resolved with
:func:`liemb_ros.resources.resolve_mesh`, loaded with trimesh) of each link, with their
origin in the link frame and their colour; a mesh file that is missing or unreadable
becomes a ``'missing'`` visual, drawn as a marker box of :data:`MISSING_MESH_SIZE`.
"""
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import numpy as np

from ..model.urdf import rpy_to_matrix
from ..resources import resolve_mesh

#: edge [m] of the box drawn for a mesh file that is missing or unreadable
MISSING_MESH_SIZE = 0.05
#: colour of geometry without a URDF material, and of missing meshes (RGB 0..1)
DEFAULT_COLOR = (0.6, 0.6, 0.62)
MISSING_COLOR = (1.0, 0.0, 1.0)


@dataclass
class Visual:
    """One ``<visual>`` of a link: its geometry in the link frame and its colour."""

    link: str
    kind: str                       # 'box' | 'cylinder' | 'sphere' | 'mesh' | 'missing'
    origin: np.ndarray              # (4, 4) visual frame in the link frame
    color: tuple                    # RGB 0..1
    size: tuple = ()                # box: (x, y, z); cylinder: (radius, length); sphere: (r,)
    path: str = None                # mesh: the resolved file
    scale: tuple = (1.0, 1.0, 1.0)
    problem: str = None             # why a mesh is drawn as a marker
    mesh: object = field(default=None, repr=False)


def _floats(text, n, default):
    if text is None:
        return default
    values = tuple(float(x) for x in text.split())
    return values if len(values) == n else default


def _origin(el):
    C = np.eye(4)
    if el is not None:
        C[:3, :3] = rpy_to_matrix(_floats(el.get('rpy'), 3, (0.0, 0.0, 0.0)))
        C[:3, 3] = _floats(el.get('xyz'), 3, (0.0, 0.0, 0.0))
    return C


def _color(material, named):
    if material is None:
        return DEFAULT_COLOR
    c = material.find('color')
    if c is not None and c.get('rgba'):
        return _floats(c.get('rgba'), 4, DEFAULT_COLOR + (1.0,))[:3]
    return named.get(material.get('name'), DEFAULT_COLOR)


def _load_mesh(path):
    import trimesh
    mesh = trimesh.load(path, force='mesh')
    if not isinstance(mesh, trimesh.Trimesh) or len(mesh.faces) == 0:
        raise ValueError('no triangles in it')
    return mesh


def read_visuals(xml, base_dir=None, package_dirs=(), log=print):
    """
    Return the :class:`Visual` list of URDF text ``xml`` (links without visuals: none).

    Mesh files are resolved (:func:`resolve_mesh`) and loaded with trimesh; one that is
    missing or unreadable becomes a ``'missing'`` visual (a marker box) and is logged with
    the link and the paths tried.
    """
    root = ET.fromstring(xml)
    named = {}
    for m in root.findall('material'):
        c = m.find('color')
        if c is not None and c.get('rgba'):
            named[m.get('name')] = _floats(c.get('rgba'), 4, DEFAULT_COLOR + (1.0,))[:3]
    out = []
    for link in root.findall('link'):
        name = link.get('name')
        for vis in link.findall('visual'):
            geom = vis.find('geometry')
            shape = None if geom is None else next(iter(geom), None)
            if shape is None:
                continue
            v = Visual(name, shape.tag, _origin(vis.find('origin')),
                       _color(vis.find('material'), named))
            if shape.tag == 'box':
                v.size = _floats(shape.get('size'), 3, (0.1, 0.1, 0.1))
            elif shape.tag == 'cylinder':
                v.size = (float(shape.get('radius', 0.05)), float(shape.get('length', 0.1)))
            elif shape.tag == 'sphere':
                v.size = (float(shape.get('radius', 0.05)),)
            elif shape.tag == 'mesh':
                filename = shape.get('filename', '')
                v.scale = _floats(shape.get('scale'), 3, (1.0, 1.0, 1.0))
                v.path, tried = resolve_mesh(filename, base_dir, package_dirs)
                if v.path is None:
                    hint = ''
                    if filename.startswith('package://'):
                        pkg = filename[len('package://'):].partition('/')[0]
                        hint = f'; --package-dir gives the folder holding package {pkg!r}'
                    v.problem = (f"mesh file {filename!r} of link {name!r} not found "
                                 f"(looked in: {', '.join(tried) or 'nowhere'}{hint})")
                else:
                    try:
                        v.mesh = _load_mesh(v.path)
                    except Exception as exc:   # any reader error: draw the marker instead
                        v.problem = f'mesh file {v.path!r} of link {name!r} unreadable: {exc}'
                if v.problem:
                    v.kind = 'missing'
                    log(f'liemb view: {v.problem}; drawn as a {MISSING_MESH_SIZE} m marker box')
            else:
                log(f'liemb view: link {name!r} has an unknown geometry <{shape.tag}>; '
                    'not drawn')
                continue
            out.append(v)
    return out
