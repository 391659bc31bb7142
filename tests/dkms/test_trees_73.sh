#!/bin/bash
# The newest tree on the newest kernel: NVIDIA's 595.45.04 with p2pnode's port of the P2P patch
# (tests/fixtures/p2p-patches/595.45.04-p2p.patch, a path patch with its sha256) and the 7.x
# builtin patches, against trixie-backports' 7.3.4, in a Debian 13 root as a node that follows
# trixie-backports for its kernel has it (tests/dist/release.sh's kernel_bpo_root_tarball: the
# release's kernel root plus backports in apt's sources, a pin that takes linux-* from there, and
# backports' linux-image-amd64 and linux-headers-amd64 installed), with p2pnode's Debian 13
# package installed by apt. Four builtins make the tree build and link on 7.3.4 (the whole build
# and the QEMU load are scripts/newest-tree-on-73.sh: the core alone takes longer than make test
# can give it); this test holds everything p2pnode decides before a build:
#  1. `check` on 7.3.4 without the builtins names of-gpio-h-removed, strncpy-removed,
#     drm-atomic-state-renamed and pahole-awk-gen-btf from the installed headers (an error); with
#     the three compile fixes it names pahole-awk-gen-btf alone; with all four, none;
#  2. apt's candidate follows the node's pin: linux-image-amd64's candidate is trixie-backports'
#     7.3.4, and `judge-kernel` takes it (installed already here, so it defers to `check`);
#  3. `apply` with three of the four stages the tree, tries its four patches on it (they fit),
#     reads its source and refuses before any build, naming pahole-awk-gen-btf and its builtin: no
#     core build, no DKMS build, DKMS and /usr/src as before; `plan` with all four builds the module;
#  4. the 570.86.16-p2p patch (made for another release) instead of the port: `apply` refuses
#     before any build, naming the hunk that failed and showing it;
#  5. with P2PNODE_73_BUILD=1 only: `apply` with all four builds the whole tree through DKMS for
#     7.3.4 and its nvidia.ko loads in QEMU booted on 7.3.4 (about 5 more minutes on 2 cores, which
#     make test cannot give; docs/drivers-and-kernels.md has the run).
# The 6.12 headers are purged from the root first, so nothing would be built for 6.12 either.
# Without the P2P patch file (P2PNODE_P2P_PATCHES names its folder) the tree is NVIDIA's 595.45.04
# with the builtins only, and the output says so.
# Cost: the root once (about 2 min beyond the kernel root), then seconds.
# Exit 77 only without root, debootstrap, Debian's archive or the trees.
# Usage: bash tests/dkms/test_trees_73.sh path/to/build/daemon/p2pnode
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"
set -uo pipefail
take_binary "${1:-}"
. tests/dist/release.sh
. tests/dkms/trees.sh
find_trees "$REPO"
require debootstrap chroot
why=$(debian_root_skip_reason); [ -z "$why" ] || skip "$why"
require unshare dpkg-deb jq
DEBIAN_SUITE=trixie
t_start=$SECONDS
VER=595.45.04
TREE=$TREES/ogkm-$VER.tar.xz
[ -f "$TREE" ] || skip "no $TREE"
PDIR=${P2PNODE_P2P_PATCHES:-$REPO/tests/fixtures/p2p-patches}
P2P=$PDIR/$VER-p2p.patch
BUILTINS="of-gpio-h-removed strncpy-removed drm-atomic-state-renamed"   # the compile fixes
LINK=pahole-awk-gen-btf                                              # the link's

TMP=$(temp_dir trees73)
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
[ "$rc" = 1 ] && [ "$got" = "$BUILTINS $LINK" ] &&
  pass "check without the builtins: exit 1, $KV's headers stop $VER on: $got ($(jq -r --arg k "$KV" '[.findings[] | select(.subject == $k and .severity == "error")][0].summary' "$TMP/check-bare.json" | cut -c1-160)…)" ||
  fail "check without the builtins: exit $rc, build stops '$got', expected '$BUILTINS $LINK': $(head -c 800 "$TMP/check-bare.json") $(cat "$TMP/check-bare.err")"
prof=$(profile p2p-595 $BUILTINS)
run_in p2pnode check --root / --profile "$prof" --only driver.kernels --json > "$TMP/check.json" 2>/dev/null
got=$(jq -r --arg k "$KV" '[.findings[] | select(.subject == $k) | .observed.build_stops[]?] | join(" ")' "$TMP/check.json" 2>/dev/null)
[ "$got" = "$LINK" ] && pass "check with {builtin: …} for the three compile fixes: only $LINK stops the build on $KV" || fail "check with three builtins forecasts '$got', expected '$LINK'"
jq -r --arg k "$KV" '.findings[] | select(.subject == $k) | .remediation' "$TMP/check.json" 2>/dev/null | grep -q "builtin: $LINK" &&
  pass "its remediation names {builtin: $LINK}" || fail "the remediation does not name {builtin: $LINK}: $(jq -c --arg k "$KV" '[.findings[] | select(.subject == $k)]' "$TMP/check.json" | head -c 600)"
full=$(profile p2p-595-full $BUILTINS $LINK)
run_in p2pnode check --root / --profile "$full" --only driver.kernels --json > "$TMP/check-full.json" 2>/dev/null; rc=$?
got=$(jq -r --arg k "$KV" '[.findings[] | select(.subject == $k) | .observed.build_stops[]?] | join(" ")' "$TMP/check-full.json" 2>/dev/null)
fixed=$(jq -r --arg k "$KV" '[.findings[] | select(.subject == $k) | .observed.fixed_by_profile[]?] | join(" ")' "$TMP/check-full.json" 2>/dev/null)
summ=$(jq -r --arg k "$KV" '[.findings[] | select(.subject == $k) | .summary] | join(" ")' "$TMP/check-full.json" 2>/dev/null)
# Still an error: nothing is built for 7.3.4 yet (apply would build it); but no breakage stops it.
[ "$rc" -le 1 ] && [ -z "$got" ] && [ "$fixed" = "$BUILTINS $LINK" ] && ! grep -q "known breakage" <<<"$summ" &&
  pass "check with all four builtins: nothing stops $VER on $KV, all four fixed by the profile ($(cut -c1-160 <<<"$summ"))" ||
  fail "check with all four builtins: exit $rc, stops '$got', fixed '$fixed': $(head -c 800 "$TMP/check-full.json")"
[ -z "$(run_in dkms status 2>/dev/null)" ] && pass "nothing built or registered by check" || fail "check touched DKMS"

echo "== 2. apt's candidate follows the node's pin"
pol=$(run_in apt-cache policy linux-image-amd64)
cand=$(sed -n 's/^ *Candidate: //p' <<<"$pol")
grep -A1 -F "*** $cand" <<<"$pol" | grep -q "trixie-backports" &&
  pass "linux-image-amd64's candidate $cand comes from trixie-backports ($(cat "$ROOT/etc/apt/preferences.d/p2pnode-test-kernel-bpo" | paste -sd' '))" ||
  fail "linux-image-amd64's candidate is not backports': $pol"
out=$(run_in p2pnode judge-kernel --root / --profile "$prof" 2>&1); rc=$?
[ "$rc" = 0 ] && grep -q "apt's next kernel $KV (linux-image-amd64 $cand) is installed already" <<<"$out" &&
  pass "judge-kernel takes apt's (pinned) candidate: $out" || fail "judge-kernel: exit $rc: $out"

echo "== 3. $VER through p2pnode apply on $KV without the link's builtin: refused before any build"
run_in p2pnode apply --root / --profile "$prof" --only driver.module > "$TMP/apply.log" 2>&1; rc=$?
grep -q "refused before any build.*$KV: known breakage $LINK" "$TMP/apply.log" && grep -q "builtin: $LINK" "$TMP/apply.log" &&
  pass "apply refuses $VER on $KV before any build (exit $rc): $(grep -m1 -o "known breakage $LINK.*" "$TMP/apply.log" | cut -c1-200)" ||
  fail "apply with three of the builtins: exit $rc: $(tail -5 "$TMP/apply.log")"
grep -q "core build\|dkms build" "$TMP/apply.log" && fail "the refused apply built something" || pass "nothing was built"
[ -z "$(run_in dkms status 2>/dev/null)" ] && [ ! -e "$ROOT/usr/src/nvidia-p2p-$VER" ] &&
  pass "DKMS knows no module, /usr/src untouched" || fail "the refused apply left: $(run_in dkms status 2>&1) $(ls "$ROOT/usr/src")"

run_in p2pnode plan --root / --profile "$full" --json > "$TMP/plan-full.json" 2>&1
desc=$(jq -r '.steps[] | select(.action == "driver.module") | .description' "$TMP/plan-full.json" 2>/dev/null)
[ -n "$desc" ] && ! grep -qi "known breakage\|refuse" <<<"$desc" &&
  pass "plan with all four builtins builds the module on $KV: $(cut -c1-200 <<<"$desc")" ||
  fail "plan with all four builtins: $(head -c 800 "$TMP/plan-full.json")"

echo "== 4. a P2P patch made for another release: 570.86.16's on $VER, refused naming the hunk"
OLDP=$PDIR/570.86.16-p2p.patch
if [ -f "$OLDP" ] && [ -n "$P2PSHA" ]; then
  cp "$OLDP" "$ROOT/var/lib/p2pnode/artifacts/"
  sed -e "s|$VER-p2p.patch, sha256: $P2PSHA|570.86.16-p2p.patch, sha256: $(sha256sum "$OLDP" | cut -d' ' -f1)|" \
    -e 's|name: p2p-595,|name: old-patch-595,|' "$ROOT$prof" > "$ROOT/etc/p2pnode/profiles/old-patch-595.yaml"
  grep -q "570.86.16-p2p.patch" "$ROOT/etc/p2pnode/profiles/old-patch-595.yaml" || die "the profile with 570.86.16's patch was not written"
  run_in p2pnode apply --root / --profile /etc/p2pnode/profiles/old-patch-595.yaml --only driver.module > "$TMP/apply-old.log" 2>&1; rc=$?
  grep -q "refused before any build: patch 01-570.86.16-p2p.patch does not apply to the staged tree of nvidia-p2p/$VER: hunk #[0-9]* of src/nvidia/[^ ]* FAILED at line [0-9]*" "$TMP/apply-old.log" &&
    grep -q "the hunk that failed:" "$TMP/apply-old.log" &&
    pass "apply refuses 570.86.16's patch on $VER (exit $rc): $(grep -m1 -o "hunk #[0-9]* of [^ ]* FAILED at line [0-9]*" "$TMP/apply-old.log"), the hunk shown" ||
    fail "apply with 570.86.16's patch on $VER: exit $rc: $(head -c 1500 "$TMP/apply-old.log")"
  [ -z "$(run_in dkms status 2>/dev/null)" ] && [ ! -e "$ROOT/usr/src/nvidia-p2p-$VER" ] &&
    pass "DKMS knows no module, /usr/src untouched" || fail "the refused apply left: $(run_in dkms status 2>&1) $(ls "$ROOT/usr/src")"
  grep -q "patches: 4 apply to the staged tree of nvidia-p2p/$VER in order" "$TMP/apply.log" &&
    pass "step 3's port and builtins all fit the tree (patch -p1, the port with no fuzz)" || fail "step 3 did not say its patches fit: $(grep -m3 patch "$TMP/apply.log")"
else
  fail "no $OLDP or no port: the refusal of a patch for another release is not tested"
fi

# The whole tree through apply and DKMS, and its nvidia.ko in QEMU on 7.3.4: only when asked (the
# core alone is 10-30 minutes on 2 cores, beyond what make test can give; docs/drivers-and-kernels.md
# has the run's figures).
if [ "${P2PNODE_73_BUILD:-0}" = 1 ]; then
  echo "== 5. $VER with all four builtins through p2pnode apply and DKMS on $KV, loaded in QEMU"
  t0=$SECONDS
  run_in p2pnode apply --root / --profile "$full" --only driver.module > "$TMP/apply-full.log" 2>&1; rc=$?
  st=$(run_in dkms status -m nvidia-p2p -v "$VER" 2>&1)
  [ "$rc" = 0 ] && grep -q "$KV.*installed" <<<"$st" &&
    pass "apply built and installed $VER for $KV through DKMS ($((SECONDS - t0)) s): $st; $(grep -o '\[core build[^]]*\] exit 0 after [0-9.]* s\|\[dkms build[^]]*\] exit 0 after [0-9.]* s' "$TMP/apply-full.log" | paste -sd';')" ||
    { fail "apply with all four builtins: exit $rc, dkms: $st"; grep -E "error|Error|refused" "$TMP/apply-full.log" | head -20; }
  grep -q "awk: [0-9]*: unexpected character" "$ROOT"/var/lib/dkms/nvidia-p2p/"$VER"/build/make.log 2>/dev/null && fail "the link met the awk error"
  mods=$(ls "$ROOT/lib/modules/$KV/updates/dkms/" 2>/dev/null | paste -sd' ')
  [ -n "$mods" ] && pass "installed for $KV: $mods" || fail "no module in /lib/modules/$KV/updates/dkms"
  VM_SYSROOT=$ROOT
  . tests/vm/lib.sh
  vm_prepare "$bin"
  [ "$VM_KV" = "$KV" ] || die "the VM would boot $VM_KV, not $KV"
  if vm_load_nvidia trees73 nvidia; then
    pass "nvidia.ko $VER (+$VM_MODULES_ADDED) loads on $KV in QEMU to 'NVRM: No NVIDIA GPU found.' ($VM_LOAD_S s)"
  else
    fail "the VM load of the $VER nvidia.ko on $KV"
  fi
fi

echo "figures: whole test $((SECONDS - t_start)) s"
finish
