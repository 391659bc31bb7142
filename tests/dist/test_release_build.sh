#!/bin/bash
# p2pnode built for the other Debian release make test covers (Debian 13 on a Debian 12 machine,
# Debian 12 on a Debian 13 one) in a fresh root of that release (tests/dist/release.sh): that
# release's compiler (gcc 12 / gcc 14) and libraries (yaml-cpp 0.7 / 0.8, cpp-httplib 0.11 / 0.18,
# libmicrohttpd 0.9 / 1.0, ...) with warnings as errors, its build dependencies installed by
# scripts/install-deps.sh inside the root, then its package by scripts/build-deb.sh there and
# lintian's report by that release's lintian. The programs and package land in
# BUILD/dist/<release>/ for the package, node and DKMS tests of that release (ctest fixture
# release_other). Cost: the root once (debootstrap and apt, ~2 min, cached in
# /var/cache/p2pnode-tests), then the two programs' build (~4-6 min of both cores).
# Exit 77 only where Debian roots cannot be made (no root, no debootstrap, no archive).
# Usage: bash tests/dist/test_release_build.sh path/to/build/daemon/p2pnode
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"
set -uo pipefail
take_binary "${1:-}"
. tests/dist/release.sh
require debootstrap chroot
why=$(debian_root_skip_reason); [ -z "$why" ] || { echo "SKIP: $why"; exit 77; }
require unshare
DEBIAN_SUITE=${P2PNODE_RELEASE:-$(other_suite)}
out=$(release_dir "$build" "$DEBIAN_SUITE")
t0=$SECONDS
# `make test` builds it beside its own build and its first tests (tests/dist/prebuild.sh, which holds
# the lock while it runs): what it left is checked here when it was made from this very source; else
# it is built now.
if [ -e "$build/dist/.prebuild.lock" ]; then
  exec 8<"$build/dist/.prebuild.lock"
  flock -w 1500 8 || echo "note: tests/dist/prebuild.sh still holds $build/dist/.prebuild.lock after 25 min"
  [ $((SECONDS - t0)) -lt 2 ] || echo "waited $((SECONDS - t0)) s for the build beside make test (tests/dist/prebuild.sh)"
fi
if [ -s "$out/source.stamp" ] && [ "$(cat "$out/source.stamp")" = "$(source_stamp "$PWD")" ]; then
  pass "built for $(suite_name "$DEBIAN_SUITE") with warnings as errors from this source, beside make test's build: $(grep -m1 '^compiler: ' "$out/build.log" | cut -c11-)"
elif release_build "$PWD" "$out"; then
  pass "built for $(suite_name "$DEBIAN_SUITE") with warnings as errors ($((SECONDS - t0)) s): $(grep -m1 '^compiler: ' "$out/build.log" | cut -c11-)"
else
  grep -E "error|warning" "$out/build.log" | head -40
  tail -20 "$out/build.log"
  fail "building for $(suite_name "$DEBIAN_SUITE") (log: $out/build.log)"
  exit 1
fi
version=$(sed -n 's/^project(p2pnode VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
deb=$(ls "$out"/p2pnode_"$version"_*.deb 2>/dev/null | head -1)
[ -n "$deb" ] && pass "package $(basename "$deb")" || fail "no p2pnode_${version}_*.deb in $out"
for p in p2pnode p2pnode-serve; do
  [ -x "$out/$p" ] && pass "$p built" || fail "$p missing"
done
# Linked against that release's libraries: the package's Depends say which (dpkg-shlibdeps).
case $DEBIAN_SUITE in
  trixie) want=libyaml-cpp0.8 ;;
  bookworm) want=libyaml-cpp0.7 ;;
  *) want="" ;;
esac
if [ -n "$want" ] && [ -n "$deb" ]; then
  dpkg-deb -f "$deb" Depends | grep -q "$want" && pass "Depends names $want" || fail "Depends lacks $want: $(dpkg-deb -f "$deb" Depends)"
fi
echo "lintian ($(suite_name "$DEBIAN_SUITE")), exit $(cat "$out/lintian.rc" 2>/dev/null):"
cat "$out/lintian.txt" 2>/dev/null
finish
