#!/bin/bash
# `p2pnode judge-kernel` with real headers from Debian's archive: the newest 6.1 headers apt knows
# (linux-headers-amd64's dependency, 6.1.19x with pci_resize_resource's exclude_bars) downloaded by
# p2pnode into its cache under a scratch root, tinygrad's 550.90.07-p2p tree staged there as
# `p2pnode apply` stages it. Without the builtin patch the verdict names
# pci-resize-resource-exclude-bars (exit 1); with it staged (dkms.conf PATCH[0]) the kernel keeps P2P
# (exit 0); `check` then shows the candidate. The host's /lib/modules, DKMS, dpkg and apt state list
# as before. The staged tree carries no prebuilt core, so the judge compiles the 50 kernel-layer
# objects of nvidia without linking (--modules nvidia): 138 s and 223 s measured on the shared 2-core box (about
# 75 s quiet), the headers (~10 MB) downloaded once and reused by the second judgement.
# Exit 77 without the trees, apt-get/dpkg-deb/make/gcc, or when the archive cannot be reached.
# Usage: bash tests/dkms/test_judge_kernel.sh <path-to-p2pnode>
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
P2PNODE=$(realpath "${1:?usage: $0 <path-to-p2pnode>}")
. tests/dkms/trees.sh
find_trees "$REPO"
for t in apt-get apt-cache dpkg-deb make gcc patch python3; do command -v $t >/dev/null || skip "$t is not installed"; done
REL=$(apt-cache depends linux-headers-amd64 2>/dev/null | sed -n 's/^ *Depends: linux-headers-\([0-9].*-amd64\)$/\1/p' | head -1)
VER=$(apt-cache policy linux-headers-amd64 2>/dev/null | sed -n 's/^ *Candidate: //p')
[ -n "$REL" ] && [ -n "$VER" ] && [ "$VER" != "(none)" ] || skip "apt knows no linux-headers-amd64 (not Debian?)"

host_state() {
  ls -la --time-style=+%s /lib/modules /lib/modules/* 2>&1
  dkms status 2>&1 || true
  md5sum /var/lib/dpkg/status /var/lib/apt/extended_states 2>/dev/null || true
  apt-mark showhold
  ls /var/cache/apt/archives /usr/src
}
BEFORE=$(host_state)

TMP=$(mktemp -d /tmp/p2pnode-judge.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
ROOT=$TMP/root
mkdir -p "$ROOT/usr/src"
tar -xf "$TREES/ogkm-550.90.07-p2p.tar.xz" -C "$ROOT/usr/src"
mv "$ROOT"/usr/src/*550.90.07* "$ROOT/usr/src/nvidia-p2p-550.90.07"
SRC=$ROOT/usr/src/nvidia-p2p-550.90.07
printf 'PACKAGE_NAME="nvidia-p2p"\nPACKAGE_VERSION="550.90.07"\n' > "$SRC/dkms.conf"

judge() {
  local rc=0
  "$P2PNODE" judge-kernel --root "$ROOT" --profile tests/profiles/judge-550.yaml --release "$REL" --version "$VER" \
    --modules nvidia --json > "$TMP/verdict.json" 2> "$TMP/judge.err" || rc=$?
  if [ $rc = 2 ] && grep -qi "failed to fetch\|could not resolve\|temporary failure" "$TMP/judge.err"; then
    skip "Debian's archive cannot be reached: $(tail -1 "$TMP/judge.err")"
  fi
  echo $rc
}
field() { python3 -c "import json,sys; print(json.load(open('$TMP/verdict.json'))$1)"; }

t0=$SECONDS
rc=$(judge)
[ "$rc" = 1 ] || fail "unpatched: exit $rc, expected 1: $(cat "$TMP/judge.err" "$TMP/verdict.json")"
[ "$(field "['breakages']")" = "['pci-resize-resource-exclude-bars']" ] || fail "unpatched: breakages $(field "['breakages']")"
[ "$(field "['fixes']")" = "['pci-resize-resource-exclude-bars']" ] || fail "unpatched: fixes $(field "['fixes']")"
field "['first_error']" | grep -q "nv-pci.c:[0-9]*:[0-9]*: error: too few arguments to function .pci_resize_resource" ||
  fail "unpatched: first error $(field "['first_error']")"
[ -f "$ROOT/var/cache/p2pnode/kernels/$REL/root/usr/src/linux-headers-$REL/.config" ] || fail "no headers in p2pnode's cache"
echo "ok: $REL ($VER) judged without the patch in $((SECONDS - t0)) s: $(field "['summary']")"

t1=$SECONDS
mkdir -p "$SRC/patches"
cp daemon/nvidia/patches/pci-resize-resource-exclude-bars.patch "$SRC/patches/01-pci-resize-resource-exclude-bars.patch"
echo 'PATCH[0]="01-pci-resize-resource-exclude-bars.patch"' >> "$SRC/dkms.conf"
rc=$(judge)
[ "$rc" = 0 ] || fail "patched: exit $rc, expected 0: $(cat "$TMP/judge.err" "$TMP/verdict.json")"
[ "$(field "['keeps_p2p']")" = True ] || fail "patched: keeps_p2p is not true"
[ "$(field "['patches_applied']")" = "['01-pci-resize-resource-exclude-bars.patch']" ] || fail "patched: patches $(field "['patches_applied']")"
grep -c "CC \[M\].*/kernel-open/nvidia/" "$ROOT/var/cache/p2pnode/kernels/$REL/make-nvidia-p2p-550.90.07.log" |
  { read -r n; [ "$n" -ge 40 ] || fail "patched: only $n nvidia objects compiled"; echo "ok: $n nvidia objects compiled"; }
echo "ok: with the builtin patch $REL keeps P2P ($((SECONDS - t1)) s, headers reused from the cache)"

# Once per candidate: the same kernel, module and staged patches keep their verdict, nothing is rebuilt.
t2=$SECONDS
out=$("$P2PNODE" judge-kernel --root "$ROOT" --profile tests/profiles/judge-550.yaml --release "$REL" --version "$VER" 2>&1) ||
  fail "judged again: $out"
case "$out" in *"keeps P2P"*"(judged before; --force judges again)") ;; *) fail "expected the recorded verdict, got: $out" ;; esac
[ $((SECONDS - t2)) -lt 10 ] || fail "the recorded verdict took $((SECONDS - t2)) s: rebuilt?"
echo "ok: a third judgement of the same candidate reuses the verdict"

# check shows the judged candidate (the scratch root has no kernel installed, so it is not "installed").
out=$("$P2PNODE" check --root "$ROOT" --profile tests/profiles/judge-550.yaml --only driver.kernels --json |
  python3 -c 'import json,sys; f=[x for x in json.load(sys.stdin)["findings"] if x["observed"].get("candidate")][0]; print(f["severity"], f["subject"])')
[ "$out" = "ok $REL" ] || fail "check: expected the candidate $REL ok, got: $out"
echo "ok: check shows the candidate: $out"

[ "$BEFORE" = "$(host_state)" ] || fail "the host's /lib/modules, DKMS, dpkg or apt state changed"
echo "ok: the host's /lib/modules, DKMS, dpkg and apt state list as before"
echo "PASS in $((SECONDS - t0)) s"
