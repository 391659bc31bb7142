#!/bin/bash
# Builds p2pnode_<version>_<arch>.deb (version: project() in CMakeLists.txt, which must be
# debian/changelog's too) with dpkg-buildpackage in a scratch copy of the tree, so nothing is
# written into the tree or beside it.
# Usage: scripts/build-deb.sh OUT_DIR [BUILD_DIR]
#   BUILD_DIR: package the programs already built there (cmake --install) instead of building;
#   then no -dbgsym package either (noautodbgsym: compressing 130 MB of debug info is most of the
#   time), unless DEB_BUILD_OPTIONS says otherwise.
set -euo pipefail
out=${1:?usage: scripts/build-deb.sh OUT_DIR [BUILD_DIR]}
reuse=${2:-}
src=$(cd "$(dirname "$0")/.." && pwd)
version=$(sed -n 's/^project(p2pnode VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
[ -n "$version" ] || { echo "build-deb: no 'project(p2pnode VERSION x.y.z' line in $src/CMakeLists.txt" >&2; exit 2; }
changelog=$(sed -n '1s/^p2pnode (\([^)]*\)).*/\1/p' "$src/debian/changelog")
if [ "$changelog" != "$version" ]; then
  echo "build-deb: CMakeLists.txt says version $version, debian/changelog's first entry says '$changelog';" \
       "add a changelog entry for $version (dch -v $version) so both agree" >&2
  exit 2
fi
for tool in dpkg-buildpackage dh; do
  command -v $tool >/dev/null || { echo "build-deb: $tool is missing (apt-get install dpkg-dev debhelper, or scripts/install-deps.sh test)" >&2; exit 2; }
done
if [ -n "$reuse" ]; then
  reuse=$(cd "$reuse" && pwd)
  [ -f "$reuse/CMakeCache.txt" ] || { echo "build-deb: $reuse is not a configured CMake build tree (no CMakeCache.txt)" >&2; exit 2; }
fi
mkdir -p "$out"; out=$(cd "$out" && pwd)
scratch=$(mktemp -d "${TMPDIR:-/tmp}/p2pnode-deb.XXXXXX"); trap 'rm -rf "$scratch"' EXIT
mkdir "$scratch/p2pnode-$version"
tar -C "$src" --exclude='./build*' --exclude=./.git --exclude=./out --exclude=./obj-* \
    --exclude=./tests -cf - . | tar -C "$scratch/p2pnode-$version" -xf -
(cd "$scratch/p2pnode-$version" &&
 P2PNODE_BUILD_DIR=$reuse DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:-${reuse:+noautodbgsym}}" \
   dpkg-buildpackage -b -us -uc -j"${JOBS:-$(nproc)}" > "$scratch/build.log" 2>&1) ||
  { tail -40 "$scratch/build.log" >&2; echo "build-deb: dpkg-buildpackage failed (log above)" >&2; exit 1; }
arch=$(dpkg --print-architecture)
cp "$scratch/p2pnode_${version}_${arch}.deb" "$out/"
echo "$out/p2pnode_${version}_${arch}.deb"
