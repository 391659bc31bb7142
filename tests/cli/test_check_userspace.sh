#!/bin/bash
# `p2pnode check` on the real root finds the userspace driver as the daemon does: when no libcuda
# file answers, `ldconfig -p`, then nvidia-smi (here stand-ins first on PATH, since this machine
# has no NVIDIA driver); on a recorded root it runs no program of this host. Reads only.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"
BIN=${1:?usage: test_check_userspace.sh PATH-TO-p2pnode}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
require jq
[ -e /usr/lib/x86_64-linux-gnu/libcuda.so.1 ] && { echo "SKIP: this machine has a libcuda.so.1; the files would answer first"; exit 77; }
W=$(temp_dir userspace); trap 'rm -rf "$W"' EXIT
printf '#!/bin/sh\necho ran >> %s/ldconfig.calls\nexit 1\n' "$W" > "$W/ldconfig"
printf '#!/bin/sh\necho ran >> %s/smi.calls\necho 550.90.07\n' "$W" > "$W/nvidia-smi"
chmod +x "$W/ldconfig" "$W/nvidia-smi"
profile=$SRC/tests/profiles/two-4090.yaml
out=$(PATH="$W:$PATH" "$BIN" check --profile "$profile" --only driver.state --json | jq -c '.findings[0].observed | [.userspace_version, .userspace_source]')
[ "$out" = '["550.90.07","nvidia-smi"]' ] && pass "the real root: ldconfig -p said nothing, nvidia-smi named 550.90.07" || fail "real root: $out"
[ -s "$W/ldconfig.calls" ] && [ -s "$W/smi.calls" ] && pass "both programs ran, ldconfig first" || fail "the programs did not run"
rm -f "$W"/*.calls
out=$(PATH="$W:$PATH" "$BIN" check --root "$SRC/tests/fixtures/rebar-not-resized" --profile "$profile" --only driver.state --json | jq -c '.findings[0].observed.userspace_source')
[ ! -e "$W/ldconfig.calls" ] && [ ! -e "$W/smi.calls" ] && pass "a recorded root runs no program of this host (source $out)" || fail "a recorded root ran a program"
finish
