#!/bin/bash
# Makes the tests' cached Debian roots (tests/package, tests/ansible, the node VM: about 4 min on a
# fresh machine, mostly downloads and dpkg) while `make test` compiles, so the node VM test, the
# longest of all, does not start by waiting for them. Each root is made once under a lock
# (tests/package/debian_root.sh), so a test that needs one meanwhile waits for it, and one made
# already is left as it is. Prints why it does nothing where roots cannot be made.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/tests/node/image.sh"
why=$(debian_root_skip_reason)
[ -z "$why" ] || { echo "warm-test-caches: nothing made: $why"; exit 0; }
t0=$SECONDS
for root in "bookworm-minbase _debootstrap_minbase" "bookworm-minbase-python3 _debootstrap_python" "bookworm-node-dkms _node_root"; do
  # shellcheck disable=SC2086
  _debian_root_tarball $root >/dev/null || { echo "warm-test-caches: making ${root%% *} failed (the tests will try again)"; exit 1; }
  echo "warm-test-caches: ${root%% *} ready ($((SECONDS - t0)) s)"
done
