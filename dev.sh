#!/usr/bin/env bash
# One entry point for a newcomer and for CI.
#   ./dev.sh demo   set everything up, then run the main job (the demo)
#   ./dev.sh test   set everything up, then run all tests and linters (and the colcon build
#                   check when no pytest arguments are given)
#   ./dev.sh setup  only set up (.venv with the package and every dependency, kernels compiled)
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$PWD
VENV=${LIEMB_VENV:-$ROOT/.venv}
PY=$VENV/bin/python

need_apt=()
python3 -c 'import venv, ensurepip' 2>/dev/null || need_apt+=(python3-venv)
# the browser test of liemb view drives a headless chromium (Playwright, never its download)
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq "${need_apt[@]}"
fi

setup() {
  local stamp="$VENV/.liemb-setup-$(cat requirements*.txt liemb_ros/setup.py liemb_ros/package.xml | sha1sum | cut -c1-12)"
  if [ -f "$stamp" ]; then return; fi
  echo "== setting up $VENV (first run takes a few minutes)"
  [ -x "$PY" ] || python3 -m venv "$VENV"
  "$PY" -m pip install -q --upgrade pip
  "$PY" -m pip install -q -r requirements.txt -r requirements-test.txt
  # compat mode: the package folder goes on sys.path (a .pth entry), so the library is found
  # even where the working directory's liemb_ros/ folder (the ROS package) comes first
  "$PY" -m pip install -q --no-deps -e liemb_ros --config-settings editable_mode=compat
  touch "$stamp"
}

setup_ros() {
  # ROS 2 Kilted from PyPI wheels + our interfaces and tf2_msgs built into the venv (idempotent).
  tools/ros/setup_ros.sh "$VENV"
}

prepare() {
  # Compile every kernel once into the package's cache folder (liemb_ros._cache: one per
  # installation and state of the sources, found by every command and node), so that nodes
  # and commands start at once; a folder already prepared returns at once.
  rm -rf "$VENV/numba-cache"   # where earlier versions of this script kept them
  "$VENV/bin/liemb" prepare
}

cmd=${1:-demo}; shift || true
case "$cmd" in
  setup) setup; setup_ros; prepare ;;
  demo)
    setup; setup_ros; prepare
    "$VENV/bin/liemb" demo "$@" ;;
  test)
    setup; setup_ros; prepare
    if [ $# -eq 0 ]; then
      # The package must also build in a colcon workspace (both packages found and importable).
      tools/ros/colcon_check.sh "$VENV"
    fi
    LIEMB_REQUIRE_ROS=1 "$PY" -m pytest -q "$@" ;;
  *) echo "usage: $0 demo|test|setup" >&2; exit 2 ;;
esac
