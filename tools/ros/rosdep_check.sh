#!/usr/bin/env bash
# Resolve every rosdep key of this repository's packages against a rosdistro checkout,
# offline, for the platforms Kilted targets; write the result to tools/ros/rosdep_keys.txt.
#
#   [ROSDISTRO_REV=...] tools/ros/rosdep_check.sh /path/to/rosdistro [ROSDEP]
# (ROSDEP: the rosdep executable, `pip install rosdep`; no network needed)
#
# The rosdistro checkout (github.com/ros/rosdistro) gives rosdep/base.yaml, python.yaml and
# kilted/distribution.yaml; tools/ros/rosdep.yaml adds the keys rosdistro lacks.  A key
# that does not resolve on a platform fails the script.  test_package.py checks that the
# recorded keys are exactly those of package.xml.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
DISTRO="$(cd "$1" && pwd)"
ROSDEP="${2:-rosdep}"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$TMP/sources.list.d" "$TMP/ws/src"
cat > "$TMP/index-v4.yaml" <<YAML
%YAML 1.1
---
distributions:
  kilted:
    distribution: [file://$DISTRO/kilted/distribution.yaml]
    distribution_status: active
    distribution_type: ros2
    python_version: 3
type: index
version: 4
YAML
printf 'yaml file://%s\n' "$DISTRO/rosdep/base.yaml" "$DISTRO/rosdep/python.yaml" \
  > "$TMP/sources.list.d/20-default.list"
printf 'yaml file://%s\n' "$HERE/rosdep.yaml" > "$TMP/sources.list.d/50-liemb-ros.list"
export ROSDEP_SOURCE_PATH="$TMP/sources.list.d" ROSDISTRO_INDEX_URL="file://$TMP/index-v4.yaml"
export ROS_DISTRO=kilted ROS_HOME="$TMP/home"
"$ROSDEP" update --rosdistro kilted > /dev/null 2>&1
cp -r "$ROOT/liemb_ros" "$ROOT/liemb_interfaces" "$TMP/ws/src/"
OUT="$HERE/rosdep_keys.txt"
{
  echo "# rosdep keys of liemb_ros and liemb_interfaces resolved with tools/ros/rosdep_check.sh"
  echo "# rosdistro ${ROSDISTRO_REV:-$(git -C "$DISTRO" log -1 --format='%h %cs' 2>/dev/null || echo '(revision unknown: set ROSDISTRO_REV)')}"
  echo "# key | ubuntu:noble | debian:bookworm"
} > "$OUT"
fail=0
for key in $("$ROSDEP" keys --from-paths "$TMP/ws/src" --ignore-src | sort -u); do
  line="$key"
  for os in ubuntu:noble debian:bookworm; do
    if r="$("$ROSDEP" resolve "$key" --os="$os" 2>/dev/null)"; then
      line="$line | $(echo "$r" | grep -v '^#' | tr '\n' ' ' | sed 's/ *$//') ($(echo "$r" | grep '^#' | tr -d '#' | head -1))"
    else
      echo "rosdep_check: $key does not resolve on $os" >&2
      fail=1
    fi
  done
  echo "$line" >> "$OUT"
done
[ "$fail" = 0 ] && echo "rosdep_check: every key resolves; wrote $OUT"
exit "$fail"
