#!/bin/bash
# The real DKMS round trip, on this machine's /usr/src, /var/lib/dkms and /lib/modules:
# `p2pnode apply` builds and installs a small test module with a patch through DKMS; then
#  - dkms status says installed, and the patch is visible in the built .ko (modinfo);
#  - a second apply runs no dkms build (a dkms wrapper on PATH counts the calls);
#  - a corrupted sha256 refuses and changes nothing;
#  - a patch that does not apply is refused before any build, naming its hunk, and leaves the install intact;
#  - a patch that does not compile fails with exit 10 and the compiler's first error, install intact.
# Modules are never loaded here (this machine's kernel cannot): tests/vm/test_driver_reload.sh has
# p2pnode load a DKMS-built tree in the VM.
# Usage: bash tests/dkms/test_dkms_roundtrip.sh <path-to-p2pnode>     (root; exit 77 = skipped)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/kernel_hooks.sh"
set -euo pipefail
P2PNODE=$(readlink -f "${1:?usage: $0 <path-to-p2pnode>}")
say() { echo "== $*"; }

[ "$(id -u)" -eq 0 ] || skip "needs root: DKMS writes /usr/src, /var/lib/dkms and /lib/modules"
require jq dkms
export DEBIAN_FRONTEND=noninteractive
DKMS_BIN=$(command -v dkms)

# A kernel with headers: the newest /lib/modules entry that has build/, or whose headers apt can install.
KV=""
for k in $(ls /lib/modules | sort -V -r); do
  if [ -d "/lib/modules/$k/build" ]; then KV=$k; break; fi
  if apt-get install -y -qq --no-install-recommends "linux-headers-$k" >/dev/null 2>&1 && [ -d "/lib/modules/$k/build" ]; then
    KV=$k; break
  fi
done
[ -n "$KV" ] || die "no kernel in /lib/modules has headers and apt-get could not install linux-headers for any"
say "building against $KV"

TMP=$(temp_dir dkms)
RND=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
NAME=p2ptest-$RND
KO=p2ptest_$RND
VER=1.$((RND % 100000))
# apply writes the kernel-install hook (driver.kernel_hook): take it away again unless it was there.
note_kernel_hooks
cleanup() {
  restore_kernel_hooks
  rm -rf /var/lib/p2pnode/dkms/failed/"$NAME"
  "$DKMS_BIN" remove -m "$NAME" -v "$VER" --all >/dev/null 2>&1 || true
  rm -rf "/usr/src/$NAME-$VER" "/var/lib/dkms/$NAME" /var/lib/p2pnode/dkms/"$NAME-$VER".json \
         /var/lib/p2pnode/dkms/stage/"$NAME-$VER" /var/lib/p2pnode/dkms/locks/"$NAME-$VER".lock /var/lib/p2pnode/dkms/prev/"$NAME-$VER" \
         /var/lib/p2pnode/dkms/logs/"$NAME-$VER"-* /var/lib/p2pnode/dkms/trial/"$NAME-$VER"
  rmdir /var/lib/p2pnode/dkms/stage /var/lib/p2pnode/dkms/logs /var/lib/p2pnode/dkms/prev /var/lib/p2pnode/dkms/locks 2>/dev/null || true
  find /lib/modules -name "$KO.ko*" -delete 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT

# The module source: one .c and a Kbuild Makefile, and a -p1 patch that changes a modinfo string.
mkdir -p "$TMP/src" "$TMP/bin"
cat > "$TMP/src/$KO.c" <<C
#include <linux/module.h>
#include <linux/init.h>
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("p2pnode DKMS round-trip test module");
MODULE_INFO(p2pnode_patch, "unpatched");
static int __init p2ptest_init(void) { pr_info("p2ptest: loaded\n"); return 0; }
static void __exit p2ptest_exit(void) {}
module_init(p2ptest_init);
module_exit(p2ptest_exit);
C
echo "obj-m += $KO.o" > "$TMP/src/Makefile"
mkdir -p "$TMP/a" "$TMP/b"
cp "$TMP/src/$KO.c" "$TMP/a/"
sed 's/"unpatched"/"applied-by-dkms"/' "$TMP/src/$KO.c" > "$TMP/b/$KO.c"
(cd "$TMP" && diff -u "a/$KO.c" "b/$KO.c" > "$TMP/0001-mark.patch" || true)
# A patch that cannot apply: its context is not in the file.
cat > "$TMP/0002-broken.patch" <<P
--- a/$KO.c
+++ b/$KO.c
@@ -1,3 +1,3 @@
 #include <linux/this_line_is_not_there.h>
-int nothing_here;
+int still_nothing;
 /* end */
P
# A patch that applies (after 0001) but does not compile.
mkdir -p "$TMP/c" "$TMP/d"
cp "$TMP/b/$KO.c" "$TMP/c/"
sed 's/"applied-by-dkms");/"applied-by-dkms");\nthis is not C;/' "$TMP/b/$KO.c" > "$TMP/d/$KO.c"
(cd "$TMP/c" && diff -u "$KO.c" "../d/$KO.c" | sed "1s|.*|--- a/$KO.c|; 2s|.*|+++ b/$KO.c|" > "$TMP/0003-no-compile.patch" || true)
tree_sha() { (cd "$1" && find . -type f ! -path './.git/*' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1); }
SRC_SHA=$(tree_sha "$TMP/src")
P1_SHA=$(sha256sum "$TMP/0001-mark.patch" | cut -d' ' -f1)
P2_SHA=$(sha256sum "$TMP/0002-broken.patch" | cut -d' ' -f1)
P3_SHA=$(sha256sum "$TMP/0003-no-compile.patch" | cut -d' ' -f1)

profile() {  # profile <file> <patch sha256> [second patch lines]
  cat > "$1" <<Y
apiVersion: p2pnode/v1
kind: NodeProfile
metadata:
  name: dkms-roundtrip
  description: the DKMS round-trip test module
driver:
  version: "$VER"
  kernel_module:
    name: $NAME
    source:
      path: $TMP/src
      sha256: $SRC_SHA
    patches:
      - path: $TMP/0001-mark.patch
        sha256: $2
$3
Y
}
profile "$TMP/good.yaml" "$P1_SHA" ""
BAD_SHA=$(echo "$P1_SHA" | tr '0-9a-f' '1-9a-f0')
profile "$TMP/corrupt.yaml" "$BAD_SHA" ""
profile "$TMP/broken.yaml" "$P1_SHA" "      - path: $TMP/0002-broken.patch
        sha256: $P2_SHA"
profile "$TMP/nocompile.yaml" "$P1_SHA" "      - path: $TMP/0003-no-compile.patch
        sha256: $P3_SHA"

# A dkms wrapper that records every call, so "builds nothing" is counted, not guessed.
cat > "$TMP/bin/dkms" <<W
#!/bin/bash
echo "\$*" >> "$TMP/dkms.calls"
exec "$DKMS_BIN" "\$@"
W
chmod +x "$TMP/bin/dkms"
touch "$TMP/dkms.calls"
apply() {  # apply <profile> <json-out>; prints p2pnode's exit status
  local rc=0
  PATH="$TMP/bin:$PATH" "$P2PNODE" apply --root / --profile "$1" --json > "$2" 2> "$2.log" || rc=$?
  echo $rc
}
step() { jq -c --arg a "$2" '[.steps[] | select(.action == $a)][0]' "$1"; }
builds() { grep -c '^build' "$TMP/dkms.calls" || true; }
state() {  # everything that must not change on a refused or failed apply
  { "$DKMS_BIN" status -m "$NAME"; tree_sha "/usr/src/$NAME-$VER"; sha256sum "/lib/modules/$KV/updates/dkms/$KO.ko"*; } 2>&1
}

say "1. first apply builds and installs $NAME/$VER"
t0=$(date +%s.%N)
rc=$(apply "$TMP/good.yaml" "$TMP/1.json")
t1=$(date +%s.%N)
s=$(step "$TMP/1.json" driver.module)
[ "$rc" = 0 ] || { cat "$TMP/1.json.log"; die "first apply exited $rc: $s"; }
[ "$(jq -r .outcome <<<"$s")" = changed ] || die "first apply: driver.module is not 'changed': $s"
"$DKMS_BIN" status -m "$NAME" | grep -q "$NAME/$VER, $KV, .*: installed" || die "dkms status does not say installed: $("$DKMS_BIN" status -m "$NAME")"
KOFILE=$(ls /lib/modules/"$KV"/updates/dkms/"$KO".ko* | head -1)
[ "$(modinfo -F p2pnode_patch "$KOFILE")" = applied-by-dkms ] || die "the patch is not in the built module: $(modinfo "$KOFILE")"
# MAKE[0] as DKMS reads it (dkms.conf sourced by bash): the make command quoted, so no alias or
# function of that name in DKMS's shell runs instead.
[[ "$(bash -c '. "$1"; printf %s "${MAKE[0]}"' _ "/usr/src/$NAME-$VER/dkms.conf")" == "'make' "* ]] || die "MAKE is not quoted in dkms.conf"
[ -f "/usr/src/$NAME-$VER/patches/01-0001-mark.patch" ] || die "the patch is not in /usr/src/$NAME-$VER/patches/"
# With --json the document is stdout and the progress lines stderr (an operator sees the build move).
grep -q "^\[driver.module $NAME/$VER\] \[dkms build $KV\] exit 0 after" "$TMP/1.json.log" ||
  die "apply --json printed no progress on stderr: $(head -5 "$TMP/1.json.log")"
jq -e .steps "$TMP/1.json" >/dev/null || die "apply --json: stdout is not the JSON document"
awk -v a="$t0" -v b="$t1" 'BEGIN { printf "   first apply (fetch, stage, dkms add/build/install): %.1f s wall\n", b - a }'
echo "   built module: $KOFILE"

say "2. second apply builds nothing"
before_builds=$(builds)
LOG=$(ls /var/lib/dkms/"$NAME"/"$VER"/"$KV"/*/log/make.log)
log_mtime=$(stat -c %Y "$LOG")
rc=$(apply "$TMP/good.yaml" "$TMP/2.json")
[ "$rc" = 0 ] || die "second apply exited $rc"
[ "$(builds)" = "$before_builds" ] || die "second apply ran dkms build: $(cat "$TMP/dkms.calls")"
[ "$(stat -c %Y "$LOG")" = "$log_mtime" ] || die "second apply wrote a new make.log"
[ "$(jq '.writes' "$TMP/2.json")" = 0 ] || die "second apply wrote something: $(cat "$TMP/2.json")"
p=$(PATH="$TMP/bin:$PATH" "$P2PNODE" plan --root / --profile "$TMP/good.yaml" --json | jq '[.steps[] | select(.action == "driver.module")] | length')
[ "$p" = 0 ] || die "plan still has a driver.module step after the install"

say "3. a corrupted sha256 refuses and changes nothing"
before=$(state); before_calls=$(wc -l < "$TMP/dkms.calls")
rc=$(apply "$TMP/corrupt.yaml" "$TMP/3.json")
s=$(step "$TMP/3.json" driver.module)
[ "$rc" != 0 ] || die "apply with a corrupted sha256 succeeded: $s"
[ "$(jq -r .outcome <<<"$s")" = refused ] || die "corrupted sha256: not refused: $s"
jq -r .message <<<"$s" | grep -q "sha256 mismatch" || die "corrupted sha256: the message does not say so: $s"
[ "$(state)" = "$before" ] || die "corrupted sha256 changed the machine"
grep -v '^status' <(tail -n +$((before_calls + 1)) "$TMP/dkms.calls") | grep -q . && die "corrupted sha256 ran dkms: $(tail -n +$((before_calls + 1)) "$TMP/dkms.calls")"
echo "   $(jq -r .message <<<"$s" | cut -c1-160)"

say "4. a patch that does not apply is refused before any build, naming the hunk; the install stays"
before=$(state); before_calls=$(wc -l < "$TMP/dkms.calls")
rc=$(apply "$TMP/broken.yaml" "$TMP/4.json")
s=$(step "$TMP/4.json" driver.module)
[ "$rc" != 0 ] || die "apply with a broken patch succeeded: $s"
[ "$(jq -r .outcome <<<"$s")" = refused ] || die "broken patch: not refused: $s"
jq -r .message <<<"$s" | grep -q "refused before any build: patch 02-0002-broken.patch does not apply to the staged tree of $NAME/$VER: hunk #1 of $KO.c FAILED at line 1" ||
  die "broken patch: the message does not name the patch and its hunk: $s"
jq -r .message <<<"$s" | grep -q "^  -int nothing_here;" || die "broken patch: the failed hunk is not shown: $s"
grep -v '^status' <(tail -n +$((before_calls + 1)) "$TMP/dkms.calls") | grep -q . && die "a broken patch ran dkms: $(tail -n +$((before_calls + 1)) "$TMP/dkms.calls")"
[ "$(state)" = "$before" ] || die "the refused patch changed the installed module: before: $before after: $(state)"
echo "   $(jq -r .message <<<"$s" | cut -c1-200)"

say "5. a patch that does not compile fails with exit 10, names the compiler error, keeps the install"
before=$(state)
rc=$(apply "$TMP/nocompile.yaml" "$TMP/5c.json")
s=$(step "$TMP/5c.json" driver.module)
[ "$rc" != 0 ] && [ "$(jq -r .outcome <<<"$s")" = failed ] || die "a compile error did not fail: $s"
[ "$(jq -r .after.dkms_exit_code <<<"$s")" = 10 ] || die "compile error: DKMS exit code is not 10: $s"
jq -r .after.first_error <<<"$s" | grep -q "error:" || die "compile error: no first compiler error in the report: $s"
[ "$(jq -r '.after.make_log_tail | length' <<<"$s")" -gt 0 ] || die "compile error: no make.log tail: $s"
[ "$(state)" = "$before" ] || die "the failed build changed the installed module"
echo "   $(jq -r .after.first_error <<<"$s" | tail -1 | cut -c1-200)"

say "6. back to the good profile: nothing to do"
rc=$(apply "$TMP/good.yaml" "$TMP/5.json")
[ "$rc" = 0 ] && [ "$(jq '.writes' "$TMP/5.json")" = 0 ] || die "after the failed update, the good profile is not in place: $(cat "$TMP/5.json")"

echo "PASS: DKMS round trip ($NAME/$VER on $KV)"
