"""
The URDF visual geometry the view draws: :class:`Visual`, :func:`read_visuals`, the meshes.

Boxes, cylinders, spheres and mesh files of each link, with their origin in the link frame
and their colour.  A robot description may come from anyone on the ROS graph, and what the
view reads goes to every browser that opens the page, so a mesh file is read only

* from the folder its URI belongs to (:func:`liemb_ros.core.resources.mesh_candidates`): a
  ``package://PKG/...`` mesh from the package's folder (in a ``--package-dir``, an installed
  package's), a relative one from the folder it is relative to (the URDF's folder, a
  ``--package-dir``), a ``file://`` or absolute one from the URDF's folder, a
  ``--package-dir`` or the ``share`` folder of an install prefix (the Python prefix,
  ``AMENT_PREFIX_PATH``, pip's ``cmeel.prefix``: installed packages); or from anywhere inside
  an ``allow_paths`` folder (``--allow-path``).  Paths are compared as the real paths
  (``..`` and symbolic links resolved), so neither leaves its folder;
* if it is a regular file of a mesh type trimesh reads alone (:data:`MESH_TYPES`: no
  materials or textures fetched beside it), at most :data:`MAX_MESH_BYTES` (its size is
  checked on the open file before reading, and no more is read), and while the robot's
  meshes stay within :data:`MAX_ROBOT_MESH_BYTES` together.

A mesh that is missing, refused or unreadable becomes a ``'missing'`` visual, drawn as a
magenta marker box of :data:`MISSING_MESH_SIZE`, and is logged with the link, the URI and
the path and the reason.  :func:`load_meshes` reads one mesh at a time in the process (the
view calls it from a thread of its own: the page and the feeds are served meanwhile).
"""
import io
import os
import threading
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import numpy as np

from ..core.model.urdf import rpy_to_matrix
from ..core.resources import (MAX_MESH_BYTES, TooLarge, mesh_candidates, mesh_prefixes,
                              read_bounded)

#: edge [m] of the box drawn for a mesh file that is missing or unreadable
MISSING_MESH_SIZE = 0.05
#: colour of geometry without a URDF material, and of missing meshes (RGB 0..1)
DEFAULT_COLOR = (0.6, 0.6, 0.62)
MISSING_COLOR = (1.0, 0.0, 1.0)
#: the most bytes of mesh files one robot's view reads, each distinct file counted once
MAX_ROBOT_MESH_BYTES = 200_000_000
#: file types (the name's extension, any case) read as meshes: formats whose one file holds
#: the triangles (``dae`` needs pycollada installed)
MESH_TYPES = ('stl', 'obj', 'ply', 'off', 'glb', 'dae')
_READING = threading.Lock()   # one mesh parsed at a time in the process: memory stays bounded


@dataclass
class Visual:
    """One ``<visual>`` of a link: its geometry in the link frame and its colour."""

    link: str
    kind: str                       # 'box' | 'cylinder' | 'sphere' | 'mesh' | 'missing'
    origin: np.ndarray              # (4, 4) visual frame in the link frame
    color: tuple                    # RGB 0..1
    size: tuple = ()                # box: (x, y, z); cylinder: (radius, length); sphere: (r,)
    path: str = None                # mesh: the file found (as the URI leads to it)
    real: str = None                # mesh: its real path, the one read
    filename: str = None            # mesh: the URDF's URI
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


def _inside(path, root):
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _real(path):
    """Return the real path of ``path`` (None: it cannot be one, e.g. a NUL in it)."""
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return None


def _installed_shares():
    """Return the real ``share`` folders of the install prefixes (installed packages)."""
    shares = (_real(os.path.join(p, 'share')) for p in mesh_prefixes())
    return [d for d in shares if d and os.path.isdir(d)]


def find_mesh(filename, base_dir=None, package_dirs=(), allow_paths=(), quote=repr):
    """
    Return ``(path, real, problem)`` for a URDF mesh URI: the file found and its real path.

    The first of :func:`~liemb_ros.core.resources.mesh_candidates` that is a file inside the
    folder it belongs to (or inside one of ``allow_paths``; see the module docstring);
    ``problem`` (and no path) when none is: not found (with the places looked in), or
    found outside its folder (with the real path), or not a regular file.  ``quote``
    quotes the URI and paths in ``problem`` (:func:`liemb_ros.ros.conversions.shown` for
    a description from a message).
    """
    allowed = [r for r in map(_real, allow_paths) if r]
    if filename.startswith('package://'):
        pkg = filename[len('package://'):].partition('/')[0]
        if pkg in ('.', '..'):
            return None, None, (f'refused: {quote(pkg)} is not a package name (it leaves the '
                                'package folders)')
    else:
        pkg = None
    general = None
    tried, refused, odd = [], None, None
    for path, root in mesh_candidates(filename, base_dir, package_dirs):
        tried.append(path)
        real = _real(path)
        if real is None or not os.path.exists(real):
            continue
        if root is not None:
            roots = [_real(root)]
        else:   # file:// and absolute paths: the robot's folders and installed packages
            if general is None:
                general = [_real(d) for d in (base_dir, *package_dirs) if d]
                general += _installed_shares()
            roots = general
        if not any(r and _inside(real, r) for r in roots + allowed):
            refused = refused or (real, root)
        elif not os.path.isfile(real):
            odd = odd or real
        else:
            return path, real, None
    if refused is not None:
        real, root = refused
        where = (f'outside its folder {quote(root)}' if root is not None else
                 "outside the URDF's folder, the --package-dir folders and the installed "
                 'packages')
        return None, None, (f'refused: it is {quote(real)}, {where}; --allow-path '
                            f'{quote(os.path.dirname(real))} allows that folder')
    if odd is not None:
        return None, None, f'refused: {quote(odd)} is not a regular file'
    hint = ''
    if pkg is not None:
        hint = f'; --package-dir gives the folder holding package {quote(pkg)}'
    looked = ', '.join(quote(t) for t in tried[:12]) or 'nowhere'
    more = f' and {len(tried) - 12} more' if len(tried) > 12 else ''
    return None, None, f'not found (looked in: {looked}{more}{hint})'


def read_mesh_file(real, budget=MAX_MESH_BYTES):
    """
    Return ``(mesh, size)``: the trimesh of the mesh file at real path ``real`` and its bytes.

    The file is opened without following a final symbolic link and checked to be a regular
    file of at most :data:`MAX_MESH_BYTES` and ``budget`` bytes before anything is read;
    no more is read, and it is parsed from memory (no file beside it is opened).  One file
    is read at a time in the process.  Raises ValueError with the reason (too large, not a
    mesh type, no triangles, a reader's error) or OSError.
    """
    ext = real.rpartition('.')[2].lower() if '.' in os.path.basename(real) else ''
    if ext not in MESH_TYPES:
        raise ValueError(f'not a mesh file type the view reads ({", ".join(MESH_TYPES)})')
    limit = min(MAX_MESH_BYTES, budget)
    with _READING:
        try:
            data = read_bounded(real, limit)
        except TooLarge as exc:
            why = (f'over the {MAX_MESH_BYTES / 1e6:.0f} MB one mesh may have'
                   if exc.size > MAX_MESH_BYTES else
                   f"over the {budget} bytes left of the {MAX_ROBOT_MESH_BYTES / 1e6:.0f} MB "
                   "the robot's meshes may have together")
            raise ValueError(f'{exc.size} bytes, {why} (not read)') from None
        except ValueError as exc:   # the path is the caller's to say
            raise ValueError(str(exc).removeprefix(f'{real}: ')) from None
        import trimesh
        mesh = trimesh.load_mesh(io.BytesIO(data), file_type=ext)
    if not isinstance(mesh, trimesh.Trimesh) or len(mesh.faces) == 0:
        raise ValueError('no triangles in it')
    return mesh, len(data)


def load_meshes(visuals, log=print, quote=repr, done=None, stop=None):
    """
    Read the mesh files of ``visuals`` (the ``'mesh'`` ones), one at a time.

    Each distinct real path is read once (with :func:`read_mesh_file`, within what is left
    of :data:`MAX_ROBOT_MESH_BYTES`); a visual whose file cannot be used becomes
    ``'missing'`` with its ``problem``, logged.  ``done(k, visual)`` is called after each
    (``k`` its index in ``visuals``); a set ``stop`` event ends the reading early.  Returns
    the bytes read.
    """
    cache, used = {}, 0
    for k, v in enumerate(visuals):
        if v.kind != 'mesh' or v.mesh is not None:
            continue
        if stop is not None and stop.is_set():
            break
        if v.real not in cache:
            try:
                mesh, size = read_mesh_file(v.real, MAX_ROBOT_MESH_BYTES - used)
                used += size
                cache[v.real] = mesh
            except Exception as exc:   # any reader error: draw the marker instead
                cache[v.real] = exc
        got = cache[v.real]
        if isinstance(got, Exception):
            _missing(v, f'mesh file {quote(v.filename)} of link {quote(v.link)} '
                        f'({quote(v.real)}) not used: {got}', log)
        else:
            v.mesh = got
        if done is not None:
            done(k, v)
    return used


def _missing(v, problem, log):
    v.kind, v.problem = 'missing', problem
    log(f'liemb view: {problem}; drawn as a {MISSING_MESH_SIZE} m marker box')


def read_visuals(xml, base_dir=None, package_dirs=(), log=print, allow_paths=(), quote=repr,
                 load=True):
    """
    Return the :class:`Visual` list of URDF text ``xml`` (links without visuals: none).

    Mesh files are found with :func:`find_mesh` (``base_dir``: the URDF's folder, None for
    a description without one; ``package_dirs``, ``allow_paths``: see the module
    docstring) and, with ``load``, read now with :func:`load_meshes` (else the caller
    does, e.g. in a thread); one that is missing, refused or unreadable becomes a
    ``'missing'`` visual (a marker box) and is logged with the link, the URI and the reason.
    ``quote`` quotes text of the description in the log.
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
                v.filename = shape.get('filename', '')
                v.scale = _floats(shape.get('scale'), 3, (1.0, 1.0, 1.0))
                v.path, v.real, problem = find_mesh(v.filename, base_dir, package_dirs,
                                                    allow_paths, quote)
                if problem:
                    _missing(v, f'mesh file {quote(v.filename)} of link {quote(name)} {problem}',
                             log)
            else:
                log(f'liemb view: link {quote(name)} has an unknown geometry '
                    f'{quote(shape.tag)}; not drawn')
                continue
            out.append(v)
    if load:
        load_meshes(out, log, quote)
    return out
