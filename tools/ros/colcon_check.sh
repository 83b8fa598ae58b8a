#!/usr/bin/env bash
# Prove that a workspace holding this repository, as a plain clone in src/, builds both packages.
#
#   tools/ros/colcon_check.sh VENV [WORKSPACE]
#
# The repository holds two sibling packages, liemb_ros/ (ament_python) and liemb_interfaces/
# (ament_cmake); its root is not a package, so colcon and rosdep (catkin_pkg) find both with no
# --base-paths.  WORKSPACE/src/liemb_ros links to the repository root, as `git clone` would put it.
# Runs tools/ros/setup_ros.sh VENV first (ROS wheels + build deps), pip installs colcon into VENV,
# checks `colcon list` and catkin_pkg's package discovery (what `rosdep install --from-paths src`
# reads), runs `colcon build` and checks that both packages built and import from
# WORKSPACE/install, the dynamics node with its messages.
# WORKSPACE defaults to a fresh temporary directory, removed at the end unless KEEP_WS=1.
set -euo pipefail

say() { printf '[colcon_check] %s\n' "$*"; }
die() { printf '[colcon_check] ERROR: %s\n' "$*" >&2; exit 1; }
now_ms() { echo "$(( $(date +%s%N) / 1000000 ))"; }

[ $# -ge 1 ] && [ $# -le 2 ] || die "usage: $0 VENV [WORKSPACE]"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
"$HERE/setup_ros.sh" "$1" || die "setup_ros.sh $1 failed"
VENV=$(cd "$1" && pwd)
PY=$VENV/bin/python
T0=$(now_ms)

if [ $# -eq 2 ]; then
  mkdir -p "$2"
  WS=$(cd "$2" && pwd)
else
  WS=$(mktemp -d "${TMPDIR:-/tmp}/liemb_colcon.XXXXXX")
  [ -n "${KEEP_WS:-}" ] || trap 'rm -rf "$WS"' EXIT
fi

COLCON_MODULES=colcon_core,colcon_ros,colcon_cmake,colcon_python_setup_py
COLCON_MODULES+=,colcon_package_information,colcon_package_selection
if ! "$PY" -c "import $COLCON_MODULES" 2>/dev/null; then
  say "pip: installing colcon into $VENV"
  "$PY" -m pip install -q --disable-pip-version-check colcon-core colcon-ros colcon-cmake \
    colcon-python-setup-py colcon-package-information colcon-package-selection >"$WS/pip.log" 2>&1 ||
    { grep -v "^WARNING: Location 'file:" "$WS/pip.log" | tail -n 30 >&2;
      die "pip install colcon failed"; }
fi

mkdir -p "$WS/src"
ln -sfn "$ROOT" "$WS/src/liemb_ros"
cd "$WS"
# Only the venv's ROS (as in setup_ros.sh): ignore a sourced /opt/ros environment.
export PATH="$VENV/bin:$PATH" AMENT_PREFIX_PATH="$VENV" CMAKE_PREFIX_PATH="$VENV"
unset COLCON_PREFIX_PATH PYTHONPATH

found=$(colcon list --names-only | sort | tr '\n' ' ') || die "colcon list failed"
say "workspace $WS: colcon list -> $found"
[ "$found" = "liemb_interfaces liemb_ros " ] ||
  die "expected exactly liemb_interfaces and liemb_ros, colcon found: $found"
found=$("$PY" -c 'import sys; from catkin_pkg.packages import find_packages
print(" ".join(sorted(p.name for p in find_packages(sys.argv[1]).values())))' src) ||
  die "catkin_pkg find_packages failed"
say "catkin_pkg.packages.find_packages (rosdep --from-paths) -> $found"
[ "$found" = "liemb_interfaces liemb_ros" ] ||
  die "expected liemb_interfaces and liemb_ros, catkin_pkg found: $found"

say "colcon build (liemb_interfaces: cmake + rosidl, liemb_ros: setup.py)"
t=$(now_ms)
if ! colcon build \
     --cmake-args -DPython3_EXECUTABLE="$PY" -DBUILD_TESTING=OFF >"$WS/build.log" 2>&1; then
  grep -v "^WARNING: Location 'file:" "$WS/build.log" | tail -n 40 >&2
  die "colcon build failed (log: $WS/build.log, $WS/log/latest_build; KEEP_WS=1 keeps them)"
fi
say "colcon build: done in $(( $(now_ms) - t )) ms"

# Both packages must come from the workspace's install space after sourcing it.
set +u  # the generated setup scripts read unset variables
# shellcheck disable=SC1091
. "$WS/install/setup.sh"
set -u
"$PY" - "$WS/install" <<'PYEOF' || die "packages built but do not import from $WS/install"
import importlib.util
import os
import sys

from ament_index_python.packages import get_package_prefix, get_package_share_directory
import liemb_interfaces.srv

install = os.path.realpath(sys.argv[1])
# find_spec: liemb_ros itself needs numpy/numba/...; only its location is checked here.
for path in (liemb_interfaces.srv.__file__, importlib.util.find_spec('liemb_ros').origin):
    assert os.path.realpath(path).startswith(install), path
for pkg in ('liemb_ros', 'liemb_interfaces'):
    share = get_package_share_directory(pkg)
    assert os.path.realpath(share).startswith(install), share
    assert os.path.isfile(os.path.join(share, 'package.xml')), share
node = os.path.join(get_package_prefix('liemb_ros'), 'lib', 'liemb_ros', 'dynamics_node')
assert os.access(node, os.X_OK), node  # where `ros2 run liemb_ros dynamics_node` looks
type(liemb_interfaces.srv.GetJacobian).__import_type_support__()
import liemb_ros.ros.dynamics_node  # noqa: F401  (the node imports its messages)
print('[colcon_check] liemb_interfaces and liemb_ros are installed in', install)
PYEOF
say "OK in $(( $(now_ms) - T0 )) ms (after setup_ros.sh)"
