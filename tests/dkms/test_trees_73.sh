#!/bin/bash
# The newest tree on the newest kernel: NVIDIA's 595.45.04 with p2pnode's port of the P2P patch
# (tests/fixtures/p2p-patches/595.45.04-p2p.patch, a path patch with its sha256) and the three 7.x
# builtin patches, through `p2pnode apply` and Debian 13's DKMS on trixie-backports' 7.3.4, in a
# Debian 13 root as a node that follows trixie-backports for its kernel has it
# (tests/dist/release.sh's kernel_bpo_root_tarball: the release's kernel root plus backports in
# apt's sources, a pin that takes linux-* from there, and backports' linux-image-amd64 and
# linux-headers-amd64 installed), with p2pnode's Debian 13 package installed by apt:
#  1. before any build: `check` on 7.3.4 without the builtins names of-gpio-h-removed,
#     strncpy-removed and drm-atomic-state-renamed from the installed headers (an error); with them
#     it forecasts no build stop;
#  2. apt's candidate follows the node's pin: linux-image-amd64's candidate is trixie-backports'
#     7.3.4, and `judge-kernel` takes it (installed already here, so it defers to `check`);
#  3. the tree through `p2pnode apply`: the core built once with the P2P patch, DKMS builds and
#     installs every module (nvidia, nvidia-uvm, nvidia-modeset, nvidia-drm, nvidia-peermem) for
#     7.3.4 after applying the three builtin patches; modinfo names 595.45.04 and 7.3.4;
#  4. that nvidia.ko loaded in QEMU booted on 7.3.4 (the root's own image and modules): `NVRM: No
#     NVIDIA GPU found.`, no unknown symbol (nvidia-drm's symbols are checked by modpost at the build).
# The 6.12 headers are purged from the root first so DKMS builds for 7.3.4 only (make test's time);
# the builtins on 6.12 are proven by the breakage table's measurements (make -k against 6.12.117).
# Without the P2P patch file (P2PNODE_P2P_PATCHES names its folder) the tree is NVIDIA's 595.45.04
# with the builtins only, and the output says so.
# Cost: the root once (about 2 min beyond the kernel root), 595's core (~5 min of both cores), the
# kernel layer for 7.3.4 (~4 min), one VM boot (~1 min).
# Exit 77 only without root, debootstrap, Debian's archive, QEMU or the trees.
# Usage: bash tests/dkms/test_trees_73.sh path/to/build/daemon/p2pnode
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
set -uo pipefail
bin=${1:?usage: test_trees_73.sh path/to/p2pnode}
bin=$(readlink -f "$bin")
cd "$(dirname "$0")/../.."
REPO=$PWD
build=$(cd "$(dirname "$bin")/.." && pwd)
skip() { echo "SKIP: $*"; exit 77; }
FAILS=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
die() { echo "FAIL: $*"; exit 1; }
. tests/dist/release.sh
. tests/dkms/trees.sh
find_trees "$REPO"
require debootstrap chroot
why=$(debian_root_skip_reason); [ -z "$why" ] || skip "$why"
require unshare qemu-system-x86_64 dpkg-deb
DEBIAN_SUITE=trixie
t_start=$SECONDS
VER=595.45.04
TREE=$TREES/ogkm-$VER.tar.xz
[ -f "$TREE" ] || skip "no $TREE"
PDIR=${P2PNODE_P2P_PATCHES:-$REPO/tests/fixtures/p2p-patches}
P2P=$PDIR/$VER-p2p.patch
BUILTINS="of-gpio-h-removed strncpy-removed drm-atomic-state-renamed"

TMP=$(mktemp -d /tmp/p2pnode-trees73.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
ROOT=$TMP/root
tar=$(kernel_bpo_root_tarball) || die "making the Debian 13 root with trixie-backports' kernel"
root_with_package "$ROOT" "$tar" "$build" "$TMP" || die "p2pnode's Debian 13 package in the root"
run_in() { in_root "$ROOT" "$@"; }
KV=$(ls "$ROOT/lib/modules" | sort -V | tail -1)
OLD=$(ls "$ROOT/lib/modules" | sort -V | head -1)
case $KV in 7.*) ;; *) die "trixie-backports' kernel is $KV, not a 7.x (the test is about 7.x's breakages)" ;; esac
echo "== root: $(run_in dpkg-query -W -f='${Package} ${Version}' "linux-headers-$KV"), beside $OLD; $(run_in dkms --version); $(run_in gcc --version | head -1)"
# DKMS builds for every kernel with headers: 7.3.4's only (make test's time; see the header).
run_in env DEBIAN_FRONTEND=noninteractive dpkg --purge "linux-headers-$OLD" >/dev/null 2>&1
[ ! -e "$ROOT/lib/modules/$OLD/build" ] || die "$OLD still has headers"

mkdir -p "$ROOT/var/lib/p2pnode/artifacts"
cp "$TREE" "$ROOT/var/lib/p2pnode/artifacts/"
if [ -f "$P2P" ]; then
  cp "$P2P" "$ROOT/var/lib/p2pnode/artifacts/"
  want=$(grep " $VER-p2p.patch\$" "$PDIR/SHA256SUMS" 2>/dev/null | cut -d' ' -f1)
  P2PSHA=$(sha256sum "$P2P" | cut -d' ' -f1)
  [ -z "$want" ] || [ "$want" = "$P2PSHA" ] || die "$P2P: sha256 $P2PSHA, SHA256SUMS says $want"
  echo "== the tree: NVIDIA's $VER + $(basename "$P2P") (sha256 $P2PSHA) + builtins $BUILTINS"
else
  P2PSHA=""
  echo "== the tree: NVIDIA's $VER + builtins $BUILTINS (no $P2P: without the P2P patch)"
fi
# profile NAME BUILTIN...: an RTX 4090 profile for the tree, the P2P patch first.
profile() {
  local name=$1 b; shift
  {
    echo "apiVersion: p2pnode/v1"
    echo "kind: NodeProfile"
    echo "metadata: {name: $name, description: NVIDIA's $VER with the P2P patch on trixie-backports' kernel}"
    echo "match: {gpus: {vendor: 0x10de, devices: [0x2684]}}"
    echo "driver:"
    echo "  version: \"$VER\""
    echo "  kernel_module:"
    echo "    name: nvidia-p2p"
    echo "    source: {path: /var/lib/p2pnode/artifacts/ogkm-$VER.tar.xz, sha256: $(sha256sum "$TREE" | cut -d' ' -f1)}"
    echo "    patches:"
    [ -n "$P2PSHA" ] && echo "      - {path: /var/lib/p2pnode/artifacts/$VER-p2p.patch, sha256: $P2PSHA}"
    for b in "$@"; do echo "      - builtin: $b"; done
    [ -n "$P2PSHA" ] || [ $# -gt 0 ] || echo "      []"
  } > "$ROOT/etc/p2pnode/profiles/$name.yaml"
  echo "/etc/p2pnode/profiles/$name.yaml"
}

echo "== 1. before any build: check on $KV"
bare=$(profile bare-595)
run_in p2pnode check --root / --profile "$bare" --only driver.kernels --json > "$TMP/check-bare.json" 2>"$TMP/check-bare.err"; rc=$?
got=$(jq -r --arg k "$KV" '[.findings[] | select(.subject == $k and .severity == "error") | .observed.build_stops[]?] | join(" ")' "$TMP/check-bare.json" 2>/dev/null)
[ "$rc" = 1 ] && [ "$got" = "$BUILTINS" ] &&
  ok "check without the builtins: exit 1, $KV's headers stop $VER on: $got ($(jq -r --arg k "$KV" '[.findings[] | select(.subject == $k and .severity == "error")][0].summary' "$TMP/check-bare.json" | cut -c1-160)…)" ||
  bad "check without the builtins: exit $rc, build stops '$got', expected '$BUILTINS': $(head -c 800 "$TMP/check-bare.json") $(cat "$TMP/check-bare.err")"
prof=$(profile p2p-595 $BUILTINS)
run_in p2pnode check --root / --profile "$prof" --only driver.kernels --json > "$TMP/check.json" 2>/dev/null
got=$(jq -r --arg k "$KV" '[.findings[] | select(.subject == $k) | .observed.build_stops[]?] | join(" ")' "$TMP/check.json" 2>/dev/null)
[ -z "$got" ] && ok "check with {builtin: …} for the three: no build stop forecast on $KV" || bad "check with the builtins still forecasts: $got"
[ -z "$(run_in dkms status 2>/dev/null)" ] && ok "nothing built or registered by check" || bad "check touched DKMS"

echo "== 2. apt's candidate follows the node's pin"
pol=$(run_in apt-cache policy linux-image-amd64)
cand=$(sed -n 's/^ *Candidate: //p' <<<"$pol")
grep -A1 -F "*** $cand" <<<"$pol" | grep -q "trixie-backports" &&
  ok "linux-image-amd64's candidate $cand comes from trixie-backports ($(cat "$ROOT/etc/apt/preferences.d/p2pnode-test-kernel-bpo" | paste -sd' '))" ||
  bad "linux-image-amd64's candidate is not backports': $pol"
out=$(run_in p2pnode judge-kernel --root / --profile "$prof" 2>&1); rc=$?
[ "$rc" = 0 ] && grep -q "apt's next kernel $KV (linux-image-amd64 $cand) is installed already" <<<"$out" &&
  ok "judge-kernel takes apt's (pinned) candidate: $out" || bad "judge-kernel: exit $rc: $out"

echo "== 3. $VER through p2pnode apply and DKMS on $KV"
run_in /usr/bin/time -f '%e %U %S %M' -o /tmp/apply.time p2pnode apply --root / --profile "$prof" --only driver.module \
  > "$TMP/apply.log" 2>&1; rc=$?
read -r wall user sys rss < "$ROOT/tmp/apply.time"
status=$(run_in dkms status -m nvidia-p2p -v "$VER" 2>&1)
if [ "$rc" = 0 ] && grep -q "nvidia-p2p/$VER, $KV, x86_64: installed" <<<"$status"; then
  ok "$VER through p2pnode apply and DKMS: installed for $KV (${wall} s wall, ${user} s user + ${sys} s sys, peak RSS $((rss / 1024)) MiB): $(grep -oE '\[core build src/nvidia\] exit 0 after [0-9.]+ s|\[dkms build [^]]*\] exit 0 after [0-9.]+ s' "$TMP/apply.log" | paste -sd';')"
else
  bad "$VER: apply exit $rc, dkms status '$status'"
  grep -E "error|refused|failed" "$TMP/apply.log" | head -10
  for f in "$ROOT"/var/lib/p2pnode/dkms/failed/nvidia-p2p/"$VER"/*/make.log; do [ -f "$f" ] && grep -m8 "error:" "$f"; done
  die "the tree did not install"
fi
for pt in $BUILTINS; do
  grep -qiE "applying patch [0-9]+-$pt\.patch" "$TMP/apply.log" && ok "DKMS applied $pt on $KV" ||
    bad "DKMS did not say it applied $pt: $(grep -i 'patch' "$TMP/apply.log" | head -3)"
done
[ -z "$P2PSHA" ] || { c=$(ls "$ROOT"/var/cache/p2pnode/nvidia-core/*/core.json 2>/dev/null | head -1)
  [ -n "$c" ] && grep -q "$P2PSHA\|$VER-p2p" "$c" && ok "the core was built with the P2P patch ($(basename "$(dirname "$c")")/core.json names it)" ||
    bad "the core's record does not name the P2P patch: $(head -c 400 "$c" 2>/dev/null)"; }
D=$ROOT/lib/modules/$KV/updates/dkms
mods=$(ls "$D" 2>/dev/null | sed 's/\.ko.*//' | sort | paste -sd' ')
[ "$mods" = "nvidia nvidia-drm nvidia-modeset nvidia-peermem nvidia-uvm" ] && ok "DKMS installed every module for $KV: $mods" ||
  bad "modules in $D: '$mods'"
KO=$(ls "$D"/nvidia.ko* 2>/dev/null | head -1)
mi=$(run_in modinfo -F version "${KO#"$ROOT"}"; run_in modinfo -F vermagic "${KO#"$ROOT"}")
[[ "$mi" == "$VER"*"$KV "* ]] && ok "modinfo: version $VER, vermagic $KV" || bad "modinfo says '$mi'"

echo "== 4. nvidia.ko loaded in QEMU on $KV"
VM_SYSROOT=$ROOT
. tests/vm/lib.sh
vm_prepare "$bin"
trap 'rm -rf "$TMP" "$VM_TMP"' EXIT  # vm_prepare's trap took VM_TMP only
[ "$VM_KV" = "$KV" ] || die "the VM would boot $VM_KV, not $KV"
r=$VM_TMP/root
todo=(nvidia) seen=" " DEPS=""
while [ ${#todo[@]} -gt 0 ]; do
  m=${todo[0]}; todo=("${todo[@]:1}")
  case "$seen" in *" $m "*) continue ;; esac
  seen="$seen$m "
  f=$(vm_modinfo -F filename "$m" 2>/dev/null) || { bad "$m is needed and $KV does not have it"; continue; }
  case "$f" in /*) ;; *) continue ;; esac
  [ "$m" = nvidia ] || DEPS="$DEPS $m"
  g=$(vm_module_path "$f"); mkdir -p "$r$(dirname "$g")"; cp "$f" "$r$g"
  for d in $(vm_modinfo -F depends "$m" | tr ',' ' '); do todo+=("$d"); done
done
depmod -b "$r" "$KV"
vm_add_program "$(command -v kmod)" /sbin/kmod
for t in modprobe lsmod; do ln -sf kmod "$r/sbin/$t"; done
cat >>"$r/guest/scenarios.sh" <<'G'
# tests/dkms/test_trees_73.sh: 595.45.04's modules DKMS built for trixie-backports' 7.3.4.
scenario_trees73() {
  local out rc
  out=$(/sbin/modprobe nvidia 2>&1); rc=$?
  echo "P2P-INFO modprobe nvidia: exit $rc: $out"
  dmesg | grep -iE 'NVRM|nvidia|unknown symbol|disagrees about version|module verification|taint' | sed 's/^/P2P-KLOG /'
  check "kernel log: NVRM: No NVIDIA GPU found." sh -c "dmesg | grep -q 'NVRM: No NVIDIA GPU found\.'"
  check "kernel log: no unknown symbol" sh -c "! dmesg | grep -qiE 'unknown symbol|disagrees about version of symbol'"
}
G
vm_pack
t0=$SECONDS
VM_TIMEOUT=${VM_TIMEOUT:-600} vm_boot trees73 ""
log=$VM_TMP/trees73.log
grep -E '^P2P-(CHECK|INFO|KLOG)' "$log" | tr -d '\r' | sed 's/^/   /'
if grep -q '^P2P-END trees73' "$log" && ! grep -q '^P2P-CHECK FAIL' "$log" && [ "$(grep -c '^P2P-CHECK PASS' "$log")" -ge 2 ]; then
  ok "nvidia.ko $VER (+$DEPS) loads on $KV in QEMU to 'NVRM: No NVIDIA GPU found.' ($((SECONDS - t0)) s)"
else
  tail -30 "$log"; bad "the VM load of the $VER nvidia.ko on $KV"
fi

echo "figures: whole test $((SECONDS - t_start)) s"
echo "$FAILS failure(s)"
[ "$FAILS" -eq 0 ]
