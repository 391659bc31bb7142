#!/bin/bash
# `make test` runs this beside its own build: p2pnode and its package for the other Debian release
# (tests/dist/release.sh), so that the tests of that release (its package, its node VM, the 6.12
# trees on a Debian 12 machine) need not wait for a build of several minutes of their own. It holds
# BUILD/dist/.prebuild.lock while it runs: tests/dist/test_release_build.sh waits for it there, then
# checks what this made (or builds it, when run alone or when this did not finish). Never fails make
# test itself: a failure here is that test's to report.
# Usage: bash tests/dist/prebuild.sh BUILD_DIR
build=$(cd "${1:?usage: prebuild.sh BUILD_DIR}" && pwd)
mkdir -p "$build/dist"
exec 9>"$build/dist/.prebuild.lock"
flock 9
cd "$(dirname "$0")/../.."
. tests/dist/release.sh
[ -z "$(debian_root_skip_reason)" ] || exit 0
DEBIAN_SUITE=$(other_suite)
out=$(release_dir "$build" "$DEBIAN_SUITE")
t0=$SECONDS
if release_build "$PWD" "$out"; then
  echo "prebuild: p2pnode for $(suite_name "$DEBIAN_SUITE") built in $((SECONDS - t0)) s ($out)"
else
  echo "prebuild: p2pnode for $(suite_name "$DEBIAN_SUITE") did not build ($out/build.log); tests/dist/test_release_build.sh says why"
fi
# Unlocked here, not at exit: a process apt left behind in the root may still hold the descriptor.
flock -u 9
exit 0
