"""
Where the compiled kernels live: one folder per installation and state of the sources.

Imported first by ``import liemb_ros``, before any kernel is defined: importing this module
points numba at the folder (:data:`KERNEL_CACHE`).

numba keeps a kernel compiled with ``cache=True`` beside its source (``__pycache__``) unless
``NUMBA_CACHE_DIR`` names a folder, and it checks a cached kernel against its own file
only, not against the kernels it calls: an edit of one kernel would leave its callers'
cached machine code stale.  So the package decides, before any kernel is defined
(:func:`install`), that its kernels live in

    ``$XDG_CACHE_HOME/liemb_ros/<installation>/<version>-<sources>``

(``~/.cache`` when ``XDG_CACHE_HOME`` is not set; ``<installation>`` a hash of the package's
folder, ``<sources>`` a hash of the text of every module), so that every process that imports
the package — every ``liemb`` command, every node, ``ros2 run``, a user's script — loads what
``liemb prepare`` compiled, and any change of the sources starts a new folder.  Folders of
other source states of the same installation are removed when a new one is made.  A folder
``liemb prepare`` filled holds :data:`MANIFEST` (:func:`prepared`).
``NUMBA_CACHE_DIR``, numba's own setting, wins when it is set; ``LIEMB_CACHE_HOME`` replaces
``$XDG_CACHE_HOME/liemb_ros``.  Where the home folder cannot be written, a folder of the
user's in the temporary directory is used.
"""
import hashlib
import json
import os
import shutil
import sys
import tempfile

PACKAGE = os.path.dirname(os.path.abspath(__file__))


def source_hash(root=PACKAGE):
    """Return 12 hex digits of a hash of every ``.py`` file's path and text under ``root``."""
    h = hashlib.sha1()
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != '__pycache__')
        for name in sorted(f for f in files if f.endswith('.py')):
            path = os.path.join(folder, name)
            h.update(os.path.relpath(path, root).encode())
            with open(path, 'rb') as f:
                h.update(f.read())
    return h.hexdigest()[:12]


def _home():
    home = os.environ.get('LIEMB_CACHE_HOME')
    if home:
        return home
    xdg = os.environ.get('XDG_CACHE_HOME') or os.path.join(os.path.expanduser('~'), '.cache')
    return os.path.join(xdg, 'liemb_ros')


def _writable(folder):
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:
        return False
    return os.access(folder, os.W_OK | os.X_OK)


#: whether ``NUMBA_CACHE_DIR`` named the folder when the package was imported (the user's
#: choice), rather than :func:`cache_dir`
FROM_ENVIRONMENT = bool(os.environ.get('NUMBA_CACHE_DIR'))


def cache_dir(version):
    """
    Return the kernel cache folder of this installation and source state (see the module).

    ``NUMBA_CACHE_DIR`` when set; otherwise the folder is made, and the folders of other
    source states of this installation are removed.
    """
    given = os.environ.get('NUMBA_CACHE_DIR')
    if given:
        return given
    installation = hashlib.sha1(PACKAGE.encode()).hexdigest()[:8]
    state = f'{version}-{source_hash()}'
    for home in (_home(), os.path.join(tempfile.gettempdir(), f'liemb_ros-{os.getuid()}')):
        parent = os.path.join(home, installation)
        folder = os.path.join(parent, state)
        if os.path.isdir(folder) or _writable(folder):
            break
    else:
        return ''   # numba's default: beside the sources
    for other in os.listdir(parent):
        if other != state:
            shutil.rmtree(os.path.join(parent, other), ignore_errors=True)
    return folder


def install(version):
    """
    Point numba at :func:`cache_dir` for this process and the processes it starts.

    Called by ``import liemb_ros`` before any kernel is defined (numba picks a kernel's
    cache folder when the kernel is defined).  Returns the folder ('' for numba's default).
    """
    folder = cache_dir(version)
    if folder:
        os.environ['NUMBA_CACHE_DIR'] = folder
        config = sys.modules.get('numba.core.config')
        if config is not None:   # numba was imported first: its setting too
            config.CACHE_DIR = folder
    return folder


def package_version():
    """Return the installed version (package.xml's in a source tree never installed)."""
    from importlib import metadata
    try:
        return metadata.version('liemb_ros')
    except metadata.PackageNotFoundError:
        import xml.etree.ElementTree as ET
        xml = os.path.join(os.path.dirname(PACKAGE), 'package.xml')
        return ET.parse(xml).getroot().findtext('version') if os.path.isfile(xml) else 'unknown'


#: the file of a prepared cache folder that lists its files
MANIFEST = 'prepared.json'


def cache_files(folder):
    """Return ``{path relative to folder: size}`` of numba's files in a cache folder."""
    files = {}
    for root, _, names in os.walk(folder):
        for name in names:
            if name.endswith(('.nbi', '.nbc')):
                path = os.path.join(root, name)
                files[os.path.relpath(path, folder)] = os.path.getsize(path)
    return files


def prepared(folder):
    """Tell whether ``folder`` holds a preparation's manifest and every file it lists."""
    try:
        with open(os.path.join(folder, MANIFEST), encoding='utf-8') as f:
            files = json.load(f)['files']
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return all(os.path.isfile(os.path.join(folder, name)) for name in files)


def hint_once(folder, stream=None):
    """
    Say once per cache folder, on the first import, how to prepare the kernels.

    Where ``liemb prepare`` has not filled ``folder`` (a wheel just installed, a source tree
    just edited), every function compiles its kernels on its first call (seconds to a
    minute each); the line says so, and where, once (a marker file in the folder), on
    stderr.  Nothing is said with numba's JIT off (``NUMBA_DISABLE_JIT=1``: nothing
    compiles) or when the folder cannot be written.
    """
    if not folder or os.environ.get('NUMBA_DISABLE_JIT', '0') not in ('', '0'):
        return
    marker = os.path.join(folder, 'hinted')
    if os.path.exists(marker) or prepared(folder):
        return
    try:
        open(marker, 'w').close()
    except OSError:
        return
    print(f'liemb_ros: no prepared kernels in {folder}: each function compiles its kernels '
          'on its first call (seconds to a minute); `liemb prepare` compiles every one once '
          '(about 270 s on two cores)', file=stream or sys.stderr)


#: the package's version
VERSION = package_version()
#: the folder the kernels of this process are cached in ('' : numba's default)
KERNEL_CACHE = install(VERSION)
hint_once(KERNEL_CACHE)
