#!/bin/bash
# `make test` runs this beside its own build: p2pnode and its package for the other Debian release
# (tests/dist/release.sh), so that the tests of that release (its package, its node VM, the 6.12
# trees on a Debian 12 machine) can start with ctest instead of after a build of several minutes.
# tests/dist/test_release_build.sh then checks what this made (or builds it, when run alone or when
# this did not finish). Never fails make test itself: a failure here is that test's to report.
# Usage: bash tests/dist/prebuild.sh BUILD_DIR
build=$(cd "${1:?usage: prebuild.sh BUILD_DIR}" && pwd)
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
exit 0
