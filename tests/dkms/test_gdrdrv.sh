#!/bin/bash
# gdrdrv from gdrcopy's real release (shared/trees/gdrcopy-2.6.tar.xz) through `p2pnode apply` and
# this machine's real DKMS, for the two newest kernels with headers, built against the NVIDIA
# module's staged tree: here a small Kbuild module standing in for the NVIDIA tree, carrying the
# real 550.90.07-p2p tree's kernel-open/nvidia/nv-p2p.h (the one header gdrdrv reads; the real
# tree's own build is tests/dkms/test_real_tree.sh's, minutes long). Never loads a module.
#  1. one apply places the NVIDIA tree and builds gdrdrv/2.6 for both kernels (DKMS package gdrdrv,
#     modinfo: built for the open NVIDIA flavour, vermagic of each kernel); gdrcopy.kernels is ok
#     for both; a second apply builds nothing;
#  2. a changed NVIDIA tree (its source's sha256 in the profile) rebuilds gdrdrv for both kernels;
#  3. a gdrcopy source whose build fails for the newest kernel (a planted error in its Makefile):
#     gdrdrv is installed for the older one only, gdrcopy.kernels names the failed build and its
#     make.log, and the plan's boot guard holds GRUB on the older kernel, naming gdrdrv (plan only:
#     this host's GRUB is never touched);
#  4. libgdrapi (gdrcopy.library) from the same real source: built with gdrcopy's `make lib` into
#     /var/lib/p2pnode/gdrcopy/2.6, soname libgdrapi.so.2, version 2.6 by its own
#     gdr_runtime_get_version, and its gdr_open refusing here as on any box without gdrdrv or a
#     CUDA 13.3 driver; nothing the second time; built again for step 3's changed source.
# Cost: about eight small DKMS builds, 1-2 min. Exit 77 without root, dkms, jq, the trees or two
# kernels with headers (scripts/install-deps.sh test installs a second).
# Usage: bash tests/dkms/test_gdrdrv.sh path/to/p2pnode
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"
set -uo pipefail
P2PNODE=$(readlink -f "${1:?usage: $0 path/to/p2pnode}")
cd "$(dirname "$0")/../.."
REPO=$PWD
[ "$(id -u)" -eq 0 ] || skip "needs root: DKMS writes /usr/src, /var/lib/dkms and /lib/modules"
require dkms jq modinfo tar xz
. tests/dkms/trees.sh
find_trees "$REPO"
GDR_TAR=$TREES/gdrcopy-2.6.tar.xz
[ -f "$GDR_TAR" ] || skip "no $GDR_TAR"
# gdrdrv is a fixed DKMS name (and libgdrapi a fixed place): never on a machine that has its own.
[ -e /var/lib/dkms/gdrdrv ] || [ -e /usr/src/gdrdrv-2.6 ] || [ -e /var/lib/p2pnode/gdrcopy/2.6 ] && skip "gdrdrv is already registered with DKMS here (/var/lib/dkms/gdrdrv, /usr/src/gdrdrv-2.6, /var/lib/p2pnode/gdrcopy/2.6): this test would replace it"
mapfile -t KS < <(for k in $(ls /lib/modules | sort -V -r); do [ -d "/lib/modules/$k/build" ] && echo "$k"; done | head -2)
[ "${#KS[@]}" -ge 2 ] || die "fewer than two kernels with headers in /lib/modules (scripts/install-deps.sh test installs a second)"
NEW=${KS[0]} OLD=${KS[1]}
echo "== kernels: $NEW and $OLD"

TMP=$(temp_dir gdrdrv)
RND=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
NV=p2pgdrnv-$RND KO=p2pgdrnv_$RND NVVER=550.90.07
cleanup() {
  for m in gdrdrv:2.6 "$NV:$NVVER"; do dkms remove -m "${m%%:*}" -v "${m#*:}" --all >/dev/null 2>&1 || true; done
  rm -rf /usr/src/gdrdrv-2.6 "/usr/src/$NV-$NVVER" /var/lib/dkms/gdrdrv "/var/lib/dkms/$NV" \
    /var/lib/p2pnode/dkms/{gdrdrv-2.6,"$NV-$NVVER"}.json /var/lib/p2pnode/dkms/stage/{gdrdrv-2.6,"$NV-$NVVER"} \
    /var/lib/p2pnode/dkms/locks/{gdrdrv-2.6,"$NV-$NVVER"}.lock /var/lib/p2pnode/dkms/prev/{gdrdrv-2.6,"$NV-$NVVER"} \
    /var/lib/p2pnode/dkms/failed/{gdrdrv,"$NV"} /var/lib/p2pnode/dkms/trial/{gdrdrv-2.6,"$NV-$NVVER"} "$TMP" \
    /var/lib/p2pnode/gdrcopy/2.6 /var/lib/p2pnode/gdrcopy/build
  find /lib/modules -name "gdrdrv.ko*" -path "*/updates/dkms/*" -delete 2>/dev/null
  find /lib/modules -name "$KO.ko*" -delete 2>/dev/null
  for k in "${KS[@]}"; do depmod -a "$k" 2>/dev/null; done
  return 0
}
trap cleanup EXIT

# The NVIDIA module's tree: one small module, and the real tree's nv-p2p.h where gdrdrv looks.
nv_tree() {  # nv_tree DIR MARK
  mkdir -p "$1/kernel-open/nvidia"
  printf '#include <linux/module.h>\nMODULE_LICENSE("Dual MIT/GPL");\n/* %s */\n' "$2" > "$1/$KO.c"
  echo "obj-m += $KO.o" > "$1/Makefile"
  tar -xJf "$TREES/ogkm-550.90.07-p2p.tar.xz" -O --wildcards '*/kernel-open/nvidia/nv-p2p.h' > "$1/kernel-open/nvidia/nv-p2p.h"
  [ -s "$1/kernel-open/nvidia/nv-p2p.h" ] || die "no kernel-open/nvidia/nv-p2p.h in ogkm-550.90.07-p2p.tar.xz"
}
tree_sha() { (cd "$1" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1); }
profile() {  # profile NVDIR GDRSRC GDRSHA
  cat > "$TMP/p.yaml" <<Y
apiVersion: p2pnode/v1
kind: NodeProfile
metadata: {name: gdrdrv-test}
driver:
  version: "$NVVER"
  kernel_module:
    name: $NV
    source: {path: $1, sha256: $(tree_sha "$1")}
gdrcopy:
  version: "2.6"
  source: {path: $2, sha256: $3}
  device: {owner: root, group: root, mode: "0660"}
Y
}
run() { "$P2PNODE" "$@" --root / --profile "$TMP/p.yaml"; }
state_of() { jq -r --arg k "$1" '[.findings[] | select(.check == "gdrcopy.kernels" and .subject == $k) | .severity][0]' "$TMP/check.json"; }
builds_of() { grep -c "dkms build -m gdrdrv -v 2.6 -k $1" "$2"; }

nv_tree "$TMP/nv1" one
profile "$TMP/nv1" "$GDR_TAR" "$(sha256sum "$GDR_TAR" | cut -d' ' -f1)"

echo "== 1. one apply: the NVIDIA tree placed, gdrdrv built for $NEW and $OLD"
t0=$SECONDS
run apply --only driver.module --only gdrcopy.module > "$TMP/apply1.log" 2>&1 || { tail -30 "$TMP/apply1.log"; die "the first apply failed"; }
echo "   first apply: $((SECONDS - t0)) s"
for k in "$NEW" "$OLD"; do
  dkms status -m gdrdrv -v 2.6 -k "$k" 2>/dev/null | grep -q installed && pass "DKMS: gdrdrv/2.6 installed for $k" || fail "dkms status for $k: $(dkms status -m gdrdrv 2>&1)"
  ko=$(ls /lib/modules/"$k"/updates/dkms/gdrdrv.ko* 2>/dev/null | head -1)
  [ -n "$ko" ] || { fail "no gdrdrv.ko in /lib/modules/$k/updates/dkms"; continue; }
  desc=$(modinfo -F description "$ko"); vm=$(modinfo -F vermagic "$ko")
  [[ "$desc" == *"built for opensource NVIDIA driver"* ]] && [[ "$vm" == "$k "* ]] &&
    pass "$k: $(basename "$ko"): '$desc', vermagic $k" || fail "$k: modinfo says '$desc', vermagic '$vm'"
done
# MAKE[0] as DKMS reads it (the file sourced by bash): the directory single-quoted for DKMS's eval.
make0=$(bash -c '. /usr/src/gdrdrv-2.6/dkms.conf; printf %s "${MAKE[0]}"')
[[ "$make0" == *"NVIDIA_SRC_DIR='/usr/src/$NV-$NVVER/kernel-open/nvidia' NVIDIA_IS_OPENSOURCE=y" ]] &&
  pass "dkms.conf builds it against /usr/src/$NV-$NVVER/kernel-open/nvidia, the open flavour" || fail "dkms.conf: $(grep MAKE /usr/src/gdrdrv-2.6/dkms.conf)"
grep -q "^AUTOINSTALL" /usr/src/gdrdrv-2.6/dkms.conf && fail "dkms.conf has AUTOINSTALL" || pass "no AUTOINSTALL: p2pnode's kernel hook builds new kernels"
run check --only gdrcopy.kernels --json > "$TMP/check.json"
[ "$(state_of "$NEW")" = ok ] && [ "$(state_of "$OLD")" = ok ] && pass "gdrcopy.kernels ok for both kernels" || fail "gdrcopy.kernels: $(jq -c '.findings' "$TMP/check.json")"
run apply --only driver.module --only gdrcopy.module > "$TMP/apply2.log" 2>&1 || fail "the second apply failed: $(tail -5 "$TMP/apply2.log")"
grep -q "dkms build" "$TMP/apply2.log" && fail "the second apply built something: $(grep 'dkms build' "$TMP/apply2.log" | head -2)" || pass "a second apply builds nothing"

echo "== 4. libgdrapi from the same source (gdrcopy.library)"
LIB=/var/lib/p2pnode/gdrcopy/2.6/libgdrapi.so.2
lib_step() { jq -r '[.steps[] | select(.action == "gdrcopy.library") | .outcome][0]' "$1"; }
t0=$SECONDS
run apply --only gdrcopy.library --json > "$TMP/lib1.json" 2> "$TMP/lib1.err"
[ "$(lib_step "$TMP/lib1.json")" = changed ] && pass "gdrcopy.library built it in $((SECONDS - t0)) s: $(jq -r '.steps[0].message' "$TMP/lib1.json")" ||
  fail "gdrcopy.library: $(cat "$TMP/lib1.json") $(tail -5 "$TMP/lib1.err")"
soname=$(readelf -d "$LIB" 2>/dev/null | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ "$soname" = libgdrapi.so.2 ] && pass "$LIB: soname $soname" || fail "$LIB: soname '$soname'"
[ "$(cat /var/lib/p2pnode/gdrcopy/2.6/source.sha256)" = "$(sha256sum "$GDR_TAR" | cut -d' ' -f1)" ] && pass "its source's sha256 recorded beside it" || fail "source.sha256: $(cat /var/lib/p2pnode/gdrcopy/2.6/source.sha256)"
said=$(python3 - "$LIB" <<'PY' 2>&1
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
major, minor = ctypes.c_int(), ctypes.c_int()
lib.gdr_runtime_get_version(ctypes.byref(major), ctypes.byref(minor))
lib.gdr_open.restype = ctypes.c_void_p
print("version %d.%d, gdr_open %s" % (major.value, minor.value, "a handle" if lib.gdr_open() else "NULL"))
PY
)
[ "$said" = "version 2.6, gdr_open NULL" ] && pass "the library loads: $said (no gdrdrv, no CUDA driver here)" || fail "the library says: $said"
run apply --only gdrcopy.library --json > "$TMP/lib2.json" 2>/dev/null
[ "$(jq '[.steps[] | select(.action == "gdrcopy.library")] | length' "$TMP/lib2.json")" = 0 ] && pass "a second apply builds no library" || fail "second apply: $(cat "$TMP/lib2.json")"

echo "== 2. a changed NVIDIA tree rebuilds gdrdrv"
nv_tree "$TMP/nv2" two
profile "$TMP/nv2" "$GDR_TAR" "$(sha256sum "$GDR_TAR" | cut -d' ' -f1)"
t0=$SECONDS
run apply --only driver.module --only gdrcopy.module > "$TMP/apply3.log" 2>&1 || { tail -30 "$TMP/apply3.log"; fail "the apply after the NVIDIA tree changed failed"; }
echo "   apply after the change: $((SECONDS - t0)) s"
[ "$(builds_of "$NEW" "$TMP/apply3.log")" -ge 1 ] && [ "$(builds_of "$OLD" "$TMP/apply3.log")" -ge 1 ] &&
  pass "gdrdrv rebuilt for $NEW and $OLD: its identity carries the NVIDIA tree's" || fail "gdrdrv not rebuilt for both: $(grep -E 'gdrcopy.module|gdrdrv' "$TMP/apply3.log" | tail -5)"
grep -q "dkms build -m $NV -v $NVVER" "$TMP/apply3.log" && pass "the NVIDIA module rebuilt first" || fail "the NVIDIA module was not rebuilt"

echo "== 3. gdrdrv fails to build for $NEW: the boot guard holds $OLD"
dkms remove -m gdrdrv -v 2.6 --all >/dev/null 2>&1
rm -rf /usr/src/gdrdrv-2.6 /var/lib/p2pnode/dkms/gdrdrv-2.6.json /var/lib/dkms/gdrdrv
mkdir -p "$TMP/gdr" && tar -xJf "$GDR_TAR" -C "$TMP/gdr" --strip-components=1
# The planted error: Kbuild stops for the newest kernel only.
{ printf 'ifeq ($(KERNELRELEASE),%s)\n$(error planted: gdrdrv does not build for %s)\nendif\n' "$NEW" "$NEW"
  cat "$TMP/gdr/src/gdrdrv/Makefile"; } > "$TMP/Makefile.planted" && mv "$TMP/Makefile.planted" "$TMP/gdr/src/gdrdrv/Makefile"
profile "$TMP/nv2" "$TMP/gdr" "$(tree_sha "$TMP/gdr")"
run apply --only driver.module --only gdrcopy.module > "$TMP/apply4.log" 2>&1 && fail "the apply with a gdrdrv that fails for $NEW exited 0"
dkms status -m gdrdrv -v 2.6 -k "$OLD" 2>/dev/null | grep -q installed && ! dkms status -m gdrdrv -v 2.6 -k "$NEW" 2>/dev/null | grep -q installed &&
  pass "gdrdrv installed for $OLD only" || fail "dkms status: $(dkms status -m gdrdrv 2>&1)"
run check --only gdrcopy.kernels --json > "$TMP/check.json"
sum=$(jq -r --arg k "$NEW" '[.findings[] | select(.check == "gdrcopy.kernels" and .subject == $k) | .summary][0]' "$TMP/check.json")
[ "$(state_of "$NEW")" = error ] && [[ "$sum" == *"its DKMS build failed"* ]] && pass "gdrcopy.kernels: $sum" || fail "gdrcopy.kernels for $NEW: $sum"
[ "$(state_of "$OLD")" = ok ] || fail "gdrcopy.kernels not ok for $OLD"
guard=$(run plan --json | jq -r '[.steps[] | select(.action == "driver.boot_guard") | .description][0]')
[[ "$guard" == "hold GRUB's default on $OLD"*"$NEW has no module (gdrdrv/2.6)"* ]] && pass "plan: $guard" || fail "plan's boot guard: $guard"

run apply --only gdrcopy.library --json > "$TMP/lib3.json" 2>/dev/null
[ "$(lib_step "$TMP/lib3.json")" = changed ] && [ "$(cat /var/lib/p2pnode/gdrcopy/2.6/source.sha256)" = "$(tree_sha "$TMP/gdr")" ] &&
  pass "step 3's changed source: libgdrapi built again from it" || fail "library after the source changed: $(cat "$TMP/lib3.json")"

finish || exit 1
echo "PASS: gdrdrv through p2pnode and DKMS for $NEW and $OLD, rebuilt with the NVIDIA tree, a failed build held by the boot guard; libgdrapi from the same source"
