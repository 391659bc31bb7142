#!/bin/bash
# The P2P trees on Debian 13's kernel 6.12 through `p2pnode apply` and Debian 13's real DKMS (3.2),
# in a fresh Debian 13 root (tests/dist/release.sh's kernel root: debootstrap minbase, dkms, gcc,
# g++, make, linux-image-amd64 and linux-headers-amd64, shared with the Secure Boot test) with
# p2pnode's Debian 13 package installed by apt:
#  1. before any build, `check` names what each tree will hit on these headers from the breakage
#     table: pci-resize-resource-exclude-bars for 570.86.16 (aikitoria's 4090 tree), 565.57.01 and
#     550.90.07, drm-output-poll-changed for 550.90.07 only (and io-memory-pfn, a run-time
#     breakage, for all three); `plan` forecasts it from the version, `apply` reads the staged
#     source and refuses before any build (DKMS knows nothing, /usr/src is untouched);
#  2. each builtin patch against the real tree and headers, compiled for real (NVIDIA's conftest
#     and the one object the breakage stops: 570's nv-pci.o, 550's nvidia-drm-drv.o): without the
#     patch the compiler's line matches the table's signature, with it the object builds (570's
#     with the patch is step 3's whole build);
#  3. aikitoria's 570.86.16-p2p with an RTX 4090 profile and its builtin patches through `p2pnode
#     apply`: the core built once by p2pnode, DKMS 3.2 builds and installs the kernel layer, `dkms
#     status` says installed, modinfo names 570.86.16 and the kernel; a second apply builds nothing;
#     3b. gdrcopy 2.6 (shared/trees) against that placed tree: gdrdrv built and installed by DKMS
#     3.2 for 6.12 through `apply` (gdrcopy.module; open flavour, the 570 tree's nv-p2p.h) and
#     libgdrapi built with Debian 13's gcc (gdrcopy.library); gdrcopy.kernels ok; nothing the
#     second time (about 30 s of CPU);
#  4. that nvidia.ko loaded in QEMU on the same 6.12 kernel (the root's own image and modules):
#     `NVRM: No NVIDIA GPU found.`, no unknown symbol;
#  5. the next kernel: with trixie-security in the root's apt sources, `p2pnode judge-kernel` finds
#     linux-image-amd64's candidate there, downloads its headers into p2pnode's cache (nothing
#     installed: dpkg's status unchanged) and compiles the staged 570 tree's kernel layer against
#     them with its builtin patches: it keeps P2P; `check` then shows the judged candidate;
#  6. the next kernel from trixie-backports: with backports in the sources and a pin that takes
#     linux-* from there, judge-kernel's candidate is backports' 7.3.4 (apt's own choice) and the
#     570 tree breaks there (extra-cflags-ignored); apt installs it anyway, and `apply` refuses the
#     build before it starts while the boot guard holds GRUB on 6.12, the kernel with the module.
# P2PNODE_ALL_TREES=1 adds step 3 for 565.57.01-p2p and 550.90.07-p2p (about 10 min more; README
# and tests/dkms/README.md have the figures of such a run).
# Cost in make test: the root once (about 3 min), three conftests and objects (~2 min of CPU), the
# 570 tree's core and kernel layer (~5-8 min of both cores), one VM boot (~40 s), the judge's
# compile of the kernel layer (~2 min of CPU), backports' kernel downloaded and installed (~2 min).
# Exit 77 only without root, debootstrap, Debian's archive, QEMU or the trees.
# Usage: bash tests/dkms/test_trees_612.sh path/to/build/daemon/p2pnode
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"
set -uo pipefail
take_binary "${1:-}"
. tests/dist/release.sh
. tests/dkms/trees.sh
find_trees "$REPO"
require debootstrap chroot
why=$(debian_root_skip_reason); [ -z "$why" ] || skip "$why"
require unshare qemu-system-x86_64 dpkg-deb
DEBIAN_SUITE=trixie
t_start=$SECONDS

TMP=$(temp_dir trees612)
trap 'rm -rf "$TMP"' EXIT
ROOT=$TMP/root
tar=$(kernel_root_tarball) || die "making the Debian 13 kernel root"
root_with_package "$ROOT" "$tar" "$build" "$TMP" || die "p2pnode's Debian 13 package in the Debian 13 root"
KV=$(ls "$ROOT/lib/modules" | sort -V | tail -1)
HDR=$(chroot "$ROOT" dpkg-query -W -f='${Package} ${Version}' "linux-headers-$KV")
echo "== Debian 13 root: $HDR, $(chroot "$ROOT" dkms --version), $(chroot "$ROOT" gcc --version | head -1), p2pnode $(chroot "$ROOT" p2pnode --version)"
grep -q "exclude_bars" "$ROOT/lib/modules/$KV/source/include/linux/pci.h" && pass "$KV's pci.h declares pci_resize_resource with exclude_bars" ||
  fail "$KV's pci.h has no exclude_bars (the breakage table's header test would not fire)"

# tree VERSION: the tarball of that P2P tree, copied into the root's artifacts.
tree() {
  local f=$TREES/ogkm-$1-p2p.tar.xz
  [ -f "$f" ] || die "no $f"
  mkdir -p "$ROOT/var/lib/p2pnode/artifacts"
  [ -f "$ROOT/var/lib/p2pnode/artifacts/$(basename "$f")" ] || cp "$f" "$ROOT/var/lib/p2pnode/artifacts/"
  echo "/var/lib/p2pnode/artifacts/$(basename "$f")"
}
# profile VERSION NAME PATCH...: a profile for the tree, for RTX 4090s (570.86.16-p2p is a 4090 tree: its
# README says "P2P for 4090"; the 5090 needs 575.64.05-p2p or later, daemon/nvidia/gpu_arch.cpp).
profile() {
  local ver=$1 name=$2; shift 2
  local path sha dev=0x2684 p
  path=$(tree "$ver"); sha=$(sha256sum "$ROOT$path" | cut -d' ' -f1)
  {
    echo "apiVersion: p2pnode/v1"
    echo "kind: NodeProfile"
    echo "metadata: {name: $name, description: the $ver P2P tree on Debian 13}"
    echo "match: {gpus: {vendor: 0x10de, devices: [$dev]}}"
    echo "driver:"
    echo "  version: \"$ver\""
    echo "  kernel_module:"
    echo "    name: nvidia-p2p"
    echo "    source: {path: $path, sha256: $sha}"
    if [ $# -gt 0 ]; then echo "    patches:"; for p in "$@"; do echo "      - builtin: $p"; done; fi
  } > "$ROOT/etc/p2pnode/profiles/$name.yaml"
  echo "/etc/p2pnode/profiles/$name.yaml"
}
run_in() { in_root "$ROOT" "$@"; }

echo "== 1. before any build: what check, plan and apply say on $KV"
# (io-memory-pfn: predicted on every 6.10+ kernel, a warning: the module builds, I/O-memory
# registration fails at run time.)
for spec in "570.86.16 pci-resize-resource-exclude-bars io-memory-pfn" "565.57.01 pci-resize-resource-exclude-bars io-memory-pfn" \
            "550.90.07 pci-resize-resource-exclude-bars io-memory-pfn drm-output-poll-changed"; do
  set -- $spec; ver=$1; shift; want="$*"
  prof=$(profile "$ver" "bare-${ver%%.*}")
  run_in p2pnode check --root / --profile "$prof" --only driver.kernels --json > "$TMP/check-$ver.json" 2>"$TMP/check-$ver.err"; rc=$?
  got=$(jq -r --arg k "$KV" '[.findings[] | select(.subject == $k and .severity == "error") | .observed.predicted_breakages[]?] | join(" ")' "$TMP/check-$ver.json" 2>/dev/null)
  summary=$(jq -r --arg k "$KV" '[.findings[] | select(.subject == $k and .severity == "error")][0].summary' "$TMP/check-$ver.json" 2>/dev/null)
  missing=""; for w in $want; do [[ " $got " == *" $w "* ]] || missing="$missing $w"; done
  extra=""; for g in $got; do [[ " $want " == *" $g "* ]] || extra="$extra $g"; done
  [ "$rc" = 1 ] && [ -z "$missing" ] && [ -z "$extra" ] &&
    pass "check, $ver without patches: exit 1, predicts $want ($summary)" ||
    fail "check, $ver without patches: exit $rc, predicted '$got', expected '$want': $(head -c 600 "$TMP/check-$ver.json") $(cat "$TMP/check-$ver.err")"
done
prof=$(profile 570.86.16 bare-570)
plan=$(run_in p2pnode plan --root / --profile "$prof" --json 2>&1)
# The tree is not staged yet: the forecast is from its version (plan says so), and apply reads the
# source once it is staged and refuses then, before any build.
echo "$plan" | jq -e '.steps[] | select(.action == "driver.module") | .description | contains("forecast from the version: '"$KV"': known breakage pci-resize-resource-exclude-bars")' >/dev/null &&
  pass "plan forecasts the breakage for 570.86.16 without the patch (from the version: the source is not staged)" || fail "plan: $(echo "$plan" | head -c 800)"
run_in p2pnode apply --root / --profile "$prof" --only driver.module > "$TMP/refused.log" 2>&1; rc=$?
grep -q "refused before any build (the staged source read): $KV: known breakage pci-resize-resource-exclude-bars" "$TMP/refused.log" &&
  pass "apply reads the staged source and refuses before any build (exit $rc)" || fail "apply without the patch: $(tail -5 "$TMP/refused.log")"
grep -q "core build\|dkms build" "$TMP/refused.log" && fail "the refused apply built something" || pass "nothing was built"
[ -z "$(run_in dkms status 2>/dev/null)" ] && [ ! -e "$ROOT/usr/src/nvidia-p2p-570.86.16" ] &&
  pass "nothing staged, DKMS knows no module" || fail "the refused apply left: $(run_in dkms status 2>&1) $(ls "$ROOT/usr/src")"

echo "== 2. each builtin patch compiled for real against $KV's headers (conftest and the object it fixes)"
# obj_build VERSION MODULE OBJECT PATCH|-: the tree unpacked (and patched), NVIDIA's conftest and one object.
obj_build() {
  local ver=$1 mod=$2 obj=$3 patch=$4 d=$TMP/obj-$1-$4
  mkdir -p "$ROOT/tmp/obj" && rm -rf "$ROOT/tmp/obj/t" && mkdir "$ROOT/tmp/obj/t"
  tar -xJf "$TREES/ogkm-$ver-p2p.tar.xz" --strip-components=1 -C "$ROOT/tmp/obj/t"
  [ "$patch" = - ] || (cd "$ROOT/tmp/obj/t" && patch -p1 -s < "$REPO/daemon/nvidia/patches/$patch.patch") || return 2
  run_in make -C "/lib/modules/$KV/source" KBUILD_OUTPUT="/lib/modules/$KV/build" M=/tmp/obj/t/kernel-open ARCH=x86_64 \
    NV_KERNEL_SOURCES="/lib/modules/$KV/source" NV_KERNEL_OUTPUT="/lib/modules/$KV/build" NV_KERNEL_MODULES="$mod" \
    NV_SPECTRE_V2=0 -j"$(nproc)" "$mod/$obj" > "$TMP/make-$ver-$patch.log" 2>&1
}
# signature_of ID: the breakage table's regex for ID.
signature_of() { python3 -c "import yaml,sys; print(next(b['signature'] for b in yaml.safe_load(open('daemon/nvidia/breakages.yaml'))['breakages'] if b['id']==sys.argv[1]))" "$1"; }
# With the patch: 550's object here; 570's is compiled by step 3, which builds that whole tree with
# the same builtin patch through DKMS (a second compile of it here would prove nothing more).
for spec in "570.86.16 nvidia nv-pci.o pci-resize-resource-exclude-bars step3" "550.90.07 nvidia-drm nvidia-drm-drv.o drm-output-poll-changed here"; do
  set -- $spec; ver=$1 mod=$2 obj=$3 id=$4 with=$5
  sig=$(signature_of "$id")
  t0=$SECONDS
  if obj_build "$ver" "$mod" "$obj" -; then
    fail "$ver $mod/$obj built without $id on $KV (the table says it breaks)"
  else
    line=$(grep -m1 -E "error:" "$TMP/make-$ver--.log")
    grep -qE -- "$sig" "$TMP/make-$ver--.log" && pass "$ver without $id: $(echo "$line" | sed 's|.*/kernel-open/|kernel-open/|') (matches the table's signature; $((SECONDS - t0)) s)" ||
      fail "$ver without $id failed, but not with the table's signature '$sig': $line"
  fi
  [ "$with" = step3 ] && { echo "   $ver with {builtin: $id}: compiled in step 3 (the whole tree through DKMS)"; continue; }
  t0=$SECONDS
  if obj_build "$ver" "$mod" "$obj" "$id" && [ -s "$ROOT/tmp/obj/t/kernel-open/$mod/$obj" ]; then
    pass "$ver with {builtin: $id}: $mod/$obj builds on $KV ($((SECONDS - t0)) s)"
  else
    fail "$ver with {builtin: $id}: $(grep -m3 -E 'error' "$TMP/make-$ver-$id.log")"
  fi
done
rm -rf "$ROOT/tmp/obj"

# apply_tree VERSION PATCH...: step 3 for one tree; sets KO to the installed nvidia.ko (in-root path).
apply_tree() {
  local ver=$1; shift
  local prof t0 rc status
  prof=$(profile "$ver" "p2p-${ver%%.*}" "$@")
  t0=$SECONDS
  run_in /usr/bin/time -f '%e %U %S %M' -o /tmp/apply.time p2pnode apply --root / --profile "$prof" --only driver.module \
    > "$TMP/apply-$ver.log" 2>&1; rc=$?
  read -r wall user sys rss < "$ROOT/tmp/apply.time"
  status=$(run_in dkms status -m nvidia-p2p -v "$ver" 2>&1)
  if [ "$rc" = 0 ] && grep -q "nvidia-p2p/$ver, $KV, x86_64: installed" <<<"$status"; then
    pass "$ver through p2pnode apply and DKMS 3.2: installed for $KV (${wall} s wall, ${user} s user + ${sys} s sys, peak RSS $((rss / 1024)) MiB): $(grep -oE '\[core build src/nvidia\] exit 0 after [0-9.]+ s|\[dkms build [^]]*\] exit 0 after [0-9.]+ s' "$TMP/apply-$ver.log" | paste -sd';')"
  else
    fail "$ver: apply exit $rc, dkms status '$status'"
    grep -E "error|refused|failed" "$TMP/apply-$ver.log" | head -10
    for f in "$ROOT"/var/lib/p2pnode/dkms/failed/nvidia-p2p/"$ver"/*/make.log; do [ -f "$f" ] && grep -m5 "error:" "$f"; done
    return 1
  fi
  # DKMS applies each PATCH[] whose PATCH_MATCH takes this kernel (io-memory-pfn: 6.10 and later).
  local pt
  for pt in "$@"; do
    grep -qiE "applying patch [0-9]+-$pt\.patch" "$TMP/apply-$ver.log" && pass "$ver: DKMS 3.2 applied $pt on $KV" ||
      fail "$ver: DKMS did not say it applied $pt on $KV: $(grep -i 'patch' "$TMP/apply-$ver.log" | head -3)"
  done
  KO=$(ls "$ROOT/lib/modules/$KV/updates/dkms/"nvidia.ko* 2>/dev/null | head -1)
  [ -n "$KO" ] || { fail "$ver: no nvidia.ko in /lib/modules/$KV/updates/dkms"; return 1; }
  local mi; mi=$(run_in modinfo -F version "${KO#"$ROOT"}"; run_in modinfo -F vermagic "${KO#"$ROOT"}")
  [[ "$mi" == "$ver"*"$KV "* ]] && pass "$ver: modinfo: version $ver, vermagic $KV ($(ls "$ROOT/lib/modules/$KV/updates/dkms" | tr '\n' ' '))" ||
    fail "$ver: modinfo says '$mi'"
  echo "   DKMS 3.2 on signing: $(grep -iE 'sign|mok' "$TMP/apply-$ver.log" | head -2 | tr '\n' ' ')$(run_in modinfo -F signer "${KO#"$ROOT"}" | sed 's/^/signer: /')"
  t0=$SECONDS
  run_in p2pnode apply --root / --profile "$prof" --only driver.module > "$TMP/apply2-$ver.log" 2>&1 || fail "$ver: the second apply failed"
  grep -q "dkms build" "$TMP/apply2-$ver.log" && fail "$ver: the second apply built again" ||
    pass "$ver: a second apply builds nothing ($((SECONDS - t0)) s)"
}

echo "== 3. the trees through p2pnode apply and DKMS 3.2 on $KV"
apply_tree 570.86.16 pci-resize-resource-exclude-bars io-memory-pfn || die "the 570 tree did not install"
KO570=$KO

echo "== 3b. gdrcopy 2.6 against the placed 570 tree on $KV: gdrdrv through DKMS 3.2, libgdrapi"
gdr_tar=$TREES/gdrcopy-2.6.tar.xz
[ -f "$gdr_tar" ] || die "no $gdr_tar"
cp "$gdr_tar" "$ROOT/var/lib/p2pnode/artifacts/"
gprof=/etc/p2pnode/profiles/gdr-570.yaml
{ cat "$ROOT/etc/p2pnode/profiles/p2p-570.yaml"
  printf 'gdrcopy:\n  version: "2.6"\n  source: {path: /var/lib/p2pnode/artifacts/gdrcopy-2.6.tar.xz, sha256: %s}\n' "$(sha256sum "$gdr_tar" | cut -d' ' -f1)"
} > "$ROOT$gprof"
t0=$SECONDS
run_in p2pnode apply --root / --profile "$gprof" --only driver.module --only gdrcopy.module --only gdrcopy.library --json \
  > "$TMP/gdr.json" 2> "$TMP/gdr.err"; rc=$?
gstatus=$(run_in dkms status -m gdrdrv -v 2.6 2>&1)
[ "$rc" = 0 ] && grep -q "gdrdrv/2.6, $KV, x86_64: installed" <<<"$gstatus" &&
  pass "gdrdrv/2.6 built by DKMS 3.2 for $KV against /usr/src/nvidia-p2p-570.86.16/kernel-open/nvidia ($((SECONDS - t0)) s, with libgdrapi)" ||
  { fail "gdrdrv on $KV: apply exit $rc, dkms status '$gstatus'"; grep -iE "error|failed" "$TMP/gdr.err" | head -5
    for f in "$ROOT"/var/lib/p2pnode/dkms/failed/gdrdrv/2.6/*/make.log; do [ -f "$f" ] && grep -m5 "error" "$f"; done; }
gko=$(ls "$ROOT/lib/modules/$KV/updates/dkms/"gdrdrv.ko* 2>/dev/null | head -1)
gmi=$( [ -n "$gko" ] && { run_in modinfo -F description "${gko#"$ROOT"}"; run_in modinfo -F vermagic "${gko#"$ROOT"}"; } | paste -sd'|')
[[ "$gmi" == *"built for opensource NVIDIA driver|$KV "* ]] && pass "gdrdrv.ko: $gmi" || fail "gdrdrv.ko modinfo: '$gmi'"
[ "$(jq -r '[.steps[] | select(.action == "gdrcopy.library") | .outcome][0]' "$TMP/gdr.json")" = changed ] &&
  [ -f "$ROOT/var/lib/p2pnode/gdrcopy/2.6/libgdrapi.so.2" ] && pass "libgdrapi built with Debian 13's gcc: $(readelf -d "$ROOT/var/lib/p2pnode/gdrcopy/2.6/libgdrapi.so.2" | grep -o "soname: .*")" ||
  fail "gdrcopy.library on Debian 13: $(jq -c '[.steps[] | select(.action == "gdrcopy.library")]' "$TMP/gdr.json")"
run_in p2pnode check --root / --profile "$gprof" --only gdrcopy.kernels --json > "$TMP/gdrk.json" 2>/dev/null
[ "$(jq -r --arg k "$KV" '[.findings[] | select(.subject == $k) | .severity][0]' "$TMP/gdrk.json")" = ok ] && pass "gdrcopy.kernels ok for $KV" ||
  fail "gdrcopy.kernels: $(jq -c '.findings' "$TMP/gdrk.json")"
run_in p2pnode apply --root / --profile "$gprof" --only driver.module --only gdrcopy.module --only gdrcopy.library --json > "$TMP/gdr2.json" 2>/dev/null
[ "$(jq '.steps | length' "$TMP/gdr2.json")" = 0 ] && pass "a second apply does nothing" || fail "second apply: $(jq -c '.steps' "$TMP/gdr2.json")"

echo "== 4. the 570.86.16 nvidia.ko loaded in QEMU on $KV"
VM_SYSROOT=$ROOT
. tests/vm/lib.sh
vm_prepare "$bin"
[ "$VM_KV" = "$KV" ] || die "the VM would boot $VM_KV, not $KV"
if vm_load_nvidia trees612 nvidia; then
  pass "nvidia.ko 570.86.16 (+$VM_MODULES_ADDED) loads on $KV in QEMU to 'NVRM: No NVIDIA GPU found.' ($VM_LOAD_S s)"
else
  fail "the VM load of the 570 nvidia.ko"
fi

echo "== 5. the next kernel: judge-kernel against trixie-security's candidate"
echo "deb http://deb.debian.org/debian-security trixie-security main" > "$ROOT/etc/apt/sources.list.d/security.list"
run_in apt-get update -qq > "$TMP/update.log" 2>&1 || fail "apt-get update with trixie-security: $(tail -2 "$TMP/update.log")"
CAND=$(run_in apt-cache policy linux-image-amd64 | sed -n 's/^ *Candidate: //p')
INST=$(run_in apt-cache policy linux-image-amd64 | sed -n 's/^ *Installed: //p')
echo "   linux-image-amd64: installed $INST, candidate $CAND"
dpkg_before=$(md5sum < "$ROOT/var/lib/dpkg/status")
prof=$ROOT/etc/p2pnode/profiles/p2p-570.yaml
t0=$SECONDS
run_in p2pnode judge-kernel --root / --profile /etc/p2pnode/profiles/p2p-570.yaml --modules nvidia --json \
  > "$TMP/judge.json" 2> "$TMP/judge.err"; rc=$?
jf() { jq -r "$1" "$TMP/judge.json" 2>/dev/null; }
NEXT=$(jf .release)
if [ "$CAND" = "$INST" ]; then
  fail "trixie-security offers no newer linux-image-amd64 than $INST: nothing to judge"
elif [ "$rc" = 0 ] && [ "$(jf .keeps_p2p)" = true ] && [ -n "$NEXT" ] && [ "$NEXT" != "$KV" ]; then
  pass "judge-kernel: the next kernel $NEXT ($(jf .package_version), trixie-security) keeps P2P with the staged tree's builtin patches ($((SECONDS - t0)) s): $(jf .summary)"
else
  fail "judge-kernel: exit $rc: $(head -c 600 "$TMP/judge.json") $(tail -5 "$TMP/judge.err")"
fi
[ -n "$NEXT" ] && [ -f "$ROOT/var/cache/p2pnode/kernels/$NEXT/root/usr/src/linux-headers-$NEXT/.config" ] &&
  pass "its headers were downloaded into p2pnode's cache (/var/cache/p2pnode/kernels/$NEXT)" || fail "no headers for '$NEXT' in p2pnode's cache"
[ "$(md5sum < "$ROOT/var/lib/dpkg/status")" = "$dpkg_before" ] && [ ! -d "$ROOT/lib/modules/$NEXT" ] &&
  pass "nothing was installed (dpkg's status and /lib/modules as before)" || fail "judge-kernel installed something"
run_in p2pnode check --root / --profile /etc/p2pnode/profiles/p2p-570.yaml --only driver.kernels --json > "$TMP/check-next.json" 2>/dev/null
jq -e --arg k "$NEXT" '.findings[] | select(.subject == $k and .observed.candidate == true and .severity == "ok")' "$TMP/check-next.json" >/dev/null &&
  pass "check shows the judged candidate $NEXT as keeping P2P" || fail "check does not show the candidate: $(head -c 400 "$TMP/check-next.json")"

echo "== 6. a node that follows trixie-backports: its candidate judged, then held off GRUB's default"
# The node's own apt configuration decides the candidate: backports in the sources, and the pin
# (tests/dist/release.sh's KERNEL_BPO_PIN) that takes the kernel packages from there.
echo "deb $DEBIAN_MIRROR trixie-backports main" > "$ROOT/etc/apt/sources.list.d/trixie-backports.list"
echo "$KERNEL_BPO_PIN" > "$ROOT/etc/apt/preferences.d/p2pnode-kernel-bpo"
run_in apt-get update -qq > "$TMP/update-bpo.log" 2>&1 || fail "apt-get update with trixie-backports: $(tail -2 "$TMP/update-bpo.log")"
pol=$(run_in apt-cache policy linux-image-amd64)
BCAND=$(sed -n 's/^ *Candidate: //p' <<<"$pol")
# The version table: the candidate's line (marked *** only once installed), then its sources.
awk -v c="$BCAND" '($1 == c || ($1 == "***" && $2 == c)) { getline; print; exit }' <<<"$pol" | grep -q trixie-backports &&
  pass "the pin makes linux-image-amd64's candidate trixie-backports' $BCAND" ||
  fail "linux-image-amd64's candidate under the pin: $pol"
dpkg_before=$(md5sum < "$ROOT/var/lib/dpkg/status")
t0=$SECONDS
run_in p2pnode judge-kernel --root / --profile /etc/p2pnode/profiles/p2p-570.yaml --modules nvidia --json \
  > "$TMP/judge.json" 2> "$TMP/judge.err"; rc=$?
BKV=$(jf .release)
[ "$rc" = 1 ] && [ "$(jf .package_version)" = "$BCAND" ] && [ "$(jf .keeps_p2p)" = false ] && [ "$(jf '.breakages[0]')" = extra-cflags-ignored ] &&
  pass "judge-kernel: the pinned candidate $BKV ($BCAND) breaks 570.86.16 ($((SECONDS - t0)) s): $(jf .summary | cut -c1-200)" ||
  fail "judge-kernel on backports' candidate: exit $rc: $(head -c 600 "$TMP/judge.json") $(tail -5 "$TMP/judge.err")"
[ "$(md5sum < "$ROOT/var/lib/dpkg/status")" = "$dpkg_before" ] && pass "nothing was installed by the judgement" || fail "judge-kernel installed something"
# apt installs it anyway (an unattended upgrade): the boot guard must keep GRUB on $KV. The root has
# GRUB's tools but no grub.cfg yet: update-grub makes the one a node has.
mkdir -p "$ROOT/boot/grub"
run_in update-grub > "$TMP/grub.log" 2>&1 || fail "update-grub: $(tail -3 "$TMP/grub.log")"
t0=$SECONDS
run_in env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends linux-image-amd64 linux-headers-amd64 \
  > "$TMP/apt-bpo.log" 2>&1 || fail "installing backports' kernel: $(tail -5 "$TMP/apt-bpo.log")"
[ -d "$ROOT/lib/modules/$BKV" ] && [ -e "$ROOT/lib/modules/$BKV/build" ] && pass "apt installed $BKV and its headers from trixie-backports ($((SECONDS - t0)) s)" ||
  fail "$BKV is not installed: $(tail -5 "$TMP/apt-bpo.log")"
run_in p2pnode apply --root / --profile /etc/p2pnode/profiles/p2p-570.yaml --only driver.module --only driver.boot_guard \
  > "$TMP/guard.log" 2>&1; rc=$?
# fixed strings: the release has a "+", a quantifier to grep -E
grep -q "refused before any download or build" "$TMP/guard.log" && grep -Fq "$BKV: known breakage extra-cflags-ignored" "$TMP/guard.log" &&
  pass "apply refuses 570.86.16 on $BKV before any build (extra-cflags-ignored)" || fail "apply on $BKV: exit $rc: $(head -c 800 "$TMP/guard.log")"
grep -q "dkms build $BKV\|\[core build" "$TMP/guard.log" && fail "apply built something for $BKV" || true
grep -q "GRUB held on $KV" "$TMP/guard.log" && pass "the boot guard: $(grep -o "GRUB held on $KV.*" "$TMP/guard.log" | head -1 | cut -c1-200)" ||
  fail "no GRUB hold on $KV: $(grep -i "boot_guard\|grub" "$TMP/guard.log" | head -5)"
grep -q "saved_entry=.*$KV" "$ROOT/boot/grub/grubenv" 2>/dev/null && pass "grubenv: $(grep saved_entry "$ROOT/boot/grub/grubenv")" ||
  fail "grubenv does not name $KV: $(cat "$ROOT/boot/grub/grubenv" 2>/dev/null | grep -v '^#')"
run_in p2pnode check --root / --profile /etc/p2pnode/profiles/p2p-570.yaml --only driver.boot_guard --only driver.kernels --json \
  > "$TMP/check-bpo.json" 2>/dev/null
jq -e --arg k "$BKV" '.findings[] | select(.check == "driver.kernels" and .subject == $k and .severity == "error") | .observed.build_stops | index("extra-cflags-ignored")' "$TMP/check-bpo.json" >/dev/null &&
  pass "check: $BKV is an error naming extra-cflags-ignored" || fail "check on $BKV: $(jq -c --arg k "$BKV" '[.findings[] | select(.subject == $k)]' "$TMP/check-bpo.json" | head -c 600)"
jq -e --arg k "$KV" '.findings[] | select(.check == "driver.boot_guard" and .severity == "warning" and (.summary | contains($k)))' "$TMP/check-bpo.json" >/dev/null &&
  pass "check: driver.boot_guard warns that GRUB is held on $KV" || fail "driver.boot_guard: $(jq -c '[.findings[] | select(.check == "driver.boot_guard")]' "$TMP/check-bpo.json" | head -c 600)"

# unstage VERSION: the tree taken out of DKMS and /usr/src (and p2pnode's stamp), so the next tree's
# modules (the same names) are the only ones.
unstage() {
  run_in dkms remove -m nvidia-p2p -v "$1" --all >/dev/null 2>&1
  rm -rf "$ROOT/usr/src/nvidia-p2p-$1" "$ROOT/var/lib/p2pnode/dkms/nvidia-p2p-$1.json"
  [ -z "$(run_in dkms status -m nvidia-p2p 2>/dev/null)" ] || fail "nvidia-p2p/$1 still in DKMS after dkms remove"
}
if [ "${P2PNODE_ALL_TREES:-0}" = 1 ]; then
  echo "== 3 (all trees). 565.57.01 and 550.90.07 through p2pnode apply and DKMS 3.2 on $KV"
  unstage 570.86.16
  apply_tree 565.57.01 pci-resize-resource-exclude-bars io-memory-pfn
  unstage 565.57.01
  apply_tree 550.90.07 pci-resize-resource-exclude-bars drm-output-poll-changed io-memory-pfn
fi

echo "figures: whole test $((SECONDS - t_start)) s"
finish
