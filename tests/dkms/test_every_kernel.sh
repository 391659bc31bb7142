#!/bin/bash
# driver.kernels with real DKMS and two real kernels' headers: the newest two kernels in
# /lib/modules with headers (a second linux-headers-6.1.0-N from Debian's archive is installed with
# apt when there is only one). p2pnode apply builds a small test module for both; the module is then
# removed by DKMS for the older kernel (as if that kernel had come without it): `p2pnode check --only
# driver.kernels` fails naming that kernel, `plan` has a driver.module step for it, `apply` builds
# for it alone, and the check passes for both. Never loads a module.
# Cost: two small DKMS builds and one more, about 30 s. Exit 77 without root; a missing dkms, jq or second kernel's headers
# (scripts/install-deps.sh test installs them) fails.
# Usage: bash tests/dkms/test_every_kernel.sh <path-to-p2pnode>
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/kernel_hooks.sh"
P2PNODE=$(readlink -f "${1:?usage: $0 <path-to-p2pnode>}")
[ "$(id -u)" -eq 0 ] || skip "needs root: DKMS writes /usr/src, /var/lib/dkms and /lib/modules"
. "$(dirname "$0")/../lib/require.sh"
require dkms jq
with_headers() { for k in $(ls /lib/modules | sort -V -r); do [ -d "/lib/modules/$k/build" ] && echo "$k"; done; }
mapfile -t KS < <(with_headers | head -2)
[ "${#KS[@]}" -ge 2 ] || die "fewer than two kernels with headers in /lib/modules: scripts/install-deps.sh test installs a second linux-headers of the distribution's series"
NEW=${KS[0]} OLD=${KS[1]}
echo "== kernels: $NEW and $OLD"

TMP=$(temp_dir kernels)
RND=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
NAME=p2pkern-$RND KO=p2pkern_$RND VER=1.${RND:0:4}
note_kernel_hooks
cleanup() {
  restore_kernel_hooks
  dkms remove -m "$NAME" -v "$VER" --all >/dev/null 2>&1 || true
  rm -rf "/usr/src/$NAME-$VER" "/var/lib/dkms/$NAME" /var/lib/p2pnode/dkms/"$NAME-$VER".json \
         /var/lib/p2pnode/dkms/stage/"$NAME-$VER" /var/lib/p2pnode/dkms/locks/"$NAME-$VER".lock /var/lib/p2pnode/dkms/prev/"$NAME-$VER" /var/lib/p2pnode/dkms/failed/"$NAME" "$TMP"
  find /lib/modules -name "$KO.ko*" -delete 2>/dev/null || true
}
trap cleanup EXIT
mkdir -p "$TMP/src"
printf '#include <linux/module.h>\nMODULE_LICENSE("GPL");\n' > "$TMP/src/$KO.c"
echo "obj-m += $KO.o" > "$TMP/src/Makefile"
sha=$(cd "$TMP/src" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
cat > "$TMP/p.yaml" <<Y
apiVersion: p2pnode/v1
kind: NodeProfile
metadata:
  name: every-kernel
driver:
  version: "$VER"
  kernel_module:
    name: $NAME
    source:
      path: $TMP/src
      sha256: $sha
Y
run() { "$P2PNODE" "$@" --root / --profile "$TMP/p.yaml"; }
# A kernel's state is its worst driver.kernels finding: a kernel can carry several (on 6.10 and later
# the io-memory-pfn forecast warns beside "is not built").
state_of() {
  jq -r --arg k "$1" '[.findings[] | select(.check == "driver.kernels" and .subject == $k) | .severity]
    | (map({"ok": 0, "info": 1, "warning": 2, "error": 3}[.] // 3) | max) as $w
    | if $w == null then "none" else ["ok", "info", "warning", "error"][$w] end' "$TMP/check.json"
}

t0=$SECONDS
run apply --only driver.module > "$TMP/apply1.out" 2>&1 || { cat "$TMP/apply1.out"; die "the first apply failed"; }
echo "   first apply (both kernels): $((SECONDS - t0)) s"
run check --only driver.kernels --json > "$TMP/check.json" || { jq '.findings' "$TMP/check.json"; die "driver.kernels fails after the first apply"; }
for k in "$NEW" "$OLD"; do
  case $(state_of "$k") in ok|info|warning) ;; *) jq '.findings' "$TMP/check.json"; die "driver.kernels is not passing for $k";; esac
done

echo "== $OLD loses the module (dkms remove -k $OLD)"
dkms remove -m "$NAME" -v "$VER" -k "$OLD" >/dev/null
run check --only driver.kernels --json > "$TMP/check.json" && die "driver.kernels passes with no module for $OLD"
[ "$(state_of "$OLD")" = error ] || { jq '.findings' "$TMP/check.json"; die "driver.kernels does not fail for $OLD"; }
case $(state_of "$NEW") in ok|info|warning) ;; *) fail "driver.kernels no longer passes for $NEW";; esac
jq -r --arg k "$OLD" '.findings[] | select(.subject == $k) | .summary + " | " + .remediation' "$TMP/check.json"
run plan --json | jq -e --arg k "$OLD" '[.steps[] | select(.action == "driver.module") | .details.gaps[]? | select(contains($k))] | length > 0' >/dev/null ||
  die "plan has no driver.module step naming $OLD"

t0=$SECONDS
run apply --only driver.module > "$TMP/apply2.out" 2>&1 || { cat "$TMP/apply2.out"; die "the second apply failed"; }
echo "   apply for $OLD only: $((SECONDS - t0)) s"
grep -q "dkms build -m $NAME -v $VER -k $OLD" "$TMP/apply2.out" || die "the apply did not build for $OLD"
if grep -q "dkms build -m $NAME -v $VER -k $NEW" "$TMP/apply2.out"; then die "the apply rebuilt $NEW, which had the module"; fi
run check --only driver.kernels --json > "$TMP/check.json" || { jq '.findings' "$TMP/check.json"; die "driver.kernels fails after apply"; }
echo "PASS: driver.kernels failed for $OLD without the module and passes for $NEW and $OLD after apply"
