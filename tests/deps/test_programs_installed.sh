#!/bin/bash
# Every program the test scripts run is installed by `make test` (scripts/install-deps.sh test, with
# what its packages depend on) or is part of a minimal Debian (tests/deps/programs.py says how it
# reads the scripts). Then a copy of the scripts whose install-deps.sh lacks GNU time must fail,
# naming it: the check can fail. About 15 s.
# Usage: bash tests/deps/test_programs_installed.sh [ignored]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$repo/tests/lib/require.sh"
require python3 dpkg-query
python3 "$here/programs.py" "$repo" || { echo "FAIL: programs the tests run that make test does not install (above)"; exit 1; }
tmp=$(mktemp -d /tmp/p2pnode-deps.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cp -r "$repo/tests" "$repo/scripts" "$tmp/"
sed -i 's/ curl time e2fsprogs / curl e2fsprogs /' "$tmp/scripts/install-deps.sh"
grep -q ' curl e2fsprogs ' "$tmp/scripts/install-deps.sh" || { echo "FAIL: the negative case could not remove 'time' from the copy"; exit 1; }
if python3 "$here/programs.py" "$tmp" > "$tmp/out" 2>&1; then
  cat "$tmp/out"; echo "FAIL: without GNU time in install-deps.sh the check still passes"; exit 1
fi
grep -q '^FAIL: /usr/bin/time (package time)' "$tmp/out" || { cat "$tmp/out"; echo "FAIL: the check did not name /usr/bin/time"; exit 1; }
echo "PASS: every program the test scripts run is installed by make test; without GNU time the check names it"
