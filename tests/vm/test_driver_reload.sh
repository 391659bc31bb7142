#!/bin/bash
# In a real kernel: `p2pnode apply` builds the miniature open-gpu-kernel-modules tree
# (tests/vm/nvidia-mini) through real DKMS on this machine, for the kernel the VM boots; the VM
# (QEMU/TCG, Debian's kernel, busybox initramfs carrying the DKMS state, kmod, dkms and p2pnode)
# then has p2pnode swap a "stock" build of another version for it (tests/vm/guest/driver.sh):
# reboot required without reload.allow, refused while a process holds /dev/nvidiactl, unload in
# order + load + verify when free, nothing on a second apply. Then gdrcopy: gdrdrv from gdrcopy
# 2.6's real release, built on the host through DKMS by `p2pnode apply` (gdrcopy.module) against
# the tree's kernel-open/nvidia/nv-p2p.h (the real 550.90.07-p2p tree's header, copied in: the
# miniature nvidia.ko then exports the five nvidia_p2p_* entry points gdrdrv links against, with
# the CRCs that header gives), is loaded in the VM by p2pnode after nvidia and /dev/gdrdrv made
# with the profile's mode (gdrcopy.device); a second apply does nothing. (The real nvidia.ko does
# not stay loaded without a GPU, so nothing can load on top of it in a VM.) Modules are never
# loaded here.
# Usage: bash tests/vm/test_driver_reload.sh path/to/p2pnode   (root; exit 77 = skipped, reason printed)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/kernel_hooks.sh"
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
P2PNODE=$(readlink -f "${1:-build/daemon/p2pnode}")

[ "$(id -u)" -eq 0 ] || vm_skip "needs root: DKMS writes /usr/src, /var/lib/dkms and /lib/modules"
skip() { vm_skip "$*"; }
. "$here/../dkms/trees.sh"
find_trees "$here/../.."
[ -f "$TREES/gdrcopy-2.6.tar.xz" ] || vm_skip "no $TREES/gdrcopy-2.6.tar.xz"
[ -e /var/lib/dkms/gdrdrv ] || [ -e /usr/src/gdrdrv-2.6 ] && vm_skip "gdrdrv is already registered with DKMS here: this test would replace it"
# This test installs modules named nvidia through DKMS: never on a box that has a real one.
[ -d /sys/module/nvidia ] && vm_skip "an NVIDIA module is loaded on this machine; the test would shadow it"
ls /lib/modules/*/updates/dkms/nvidia.ko* /lib/modules/*/kernel/drivers/video/nvidia.ko* >/dev/null 2>&1 &&
  vm_skip "an nvidia.ko is installed on this machine; the test would shadow it"
export DEBIAN_FRONTEND=noninteractive
require dkms jq kmod
DKMS_BIN=$(command -v dkms)
vm_prepare "$P2PNODE"
KV=$VM_KV
if [ ! -d "/lib/modules/$KV/build" ]; then
  apt-get install -y -qq --no-install-recommends "linux-headers-$KV" >/dev/null 2>&1 ||
    { echo "FAIL: no headers for the VM's kernel $KV and apt-get could not install linux-headers-$KV"; exit 1; }
fi

RND=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
NAME=nvidia-p2ptest-$RND
VER=$(sed -n 's/^NVIDIA_VERSION *= *//p' "$here/nvidia-mini/version.mk")
STOCK=535.183.01
TMP=$(temp_dir drv)
# apply writes the kernel-install hook (driver.kernel_hook): take it away again unless it was there.
note_kernel_hooks
# apply runs update-initramfs for the kernel it built for where initramfs-tools pulls the modules in: keep the host's initramfs as it was either way.
INITRD=/boot/initrd.img-$KV
INITRD_KEPT=$(mktemp /var/tmp/p2pnode-initrd.XXXXXX)
if [ -f "$INITRD" ]; then cp -p "$INITRD" "$INITRD_KEPT"; else rm -f "$INITRD_KEPT"; INITRD_KEPT=; fi
cleanup() {
  if [ -n "$INITRD_KEPT" ]; then
    cmp -s "$INITRD_KEPT" "$INITRD" || { cp -p "$INITRD_KEPT" "$INITRD.p2pnode-tmp" && mv -f "$INITRD.p2pnode-tmp" "$INITRD"; }
    rm -f "$INITRD_KEPT"
  fi
  restore_kernel_hooks
  rm -rf /var/lib/p2pnode/dkms/failed/"$NAME"
  "$DKMS_BIN" remove -m "$NAME" -v "$VER" --all >/dev/null 2>&1
  "$DKMS_BIN" remove -m gdrdrv -v 2.6 --all >/dev/null 2>&1
  rm -rf /usr/src/gdrdrv-2.6 /var/lib/dkms/gdrdrv /var/lib/p2pnode/dkms/gdrdrv-2.6.json /var/lib/p2pnode/dkms/stage/gdrdrv-2.6 \
         /var/lib/p2pnode/dkms/locks/gdrdrv-2.6.lock /var/lib/p2pnode/dkms/prev/gdrdrv-2.6 /var/lib/p2pnode/dkms/failed/gdrdrv \
         /var/lib/p2pnode/gdrcopy/2.6 /var/lib/p2pnode/gdrcopy/build
  rm -f /lib/modules/"$KV"/updates/dkms/gdrdrv.ko*
  rm -rf "/usr/src/$NAME-$VER" "/var/lib/dkms/$NAME" /var/lib/p2pnode/dkms/"$NAME-$VER".json \
         /var/lib/p2pnode/dkms/stage/"$NAME-$VER" /var/lib/p2pnode/dkms/locks/"$NAME-$VER".lock /var/lib/p2pnode/dkms/prev/"$NAME-$VER" \
         /var/lib/p2pnode/dkms/logs/"$NAME-$VER"-* "$TMP" "$VM_TMP"
  depmod "$KV" 2>/dev/null
}
trap cleanup EXIT

# The source, and a stock build of another version (plain Kbuild, outside DKMS) for the VM to start from.
cp -r "$here/nvidia-mini" "$TMP/src"
tar -xJf "$TREES/ogkm-550.90.07-p2p.tar.xz" -O --wildcards '*/kernel-open/nvidia/nv-p2p.h' > "$TMP/src/kernel-open/nvidia/nv-p2p.h"
[ -s "$TMP/src/kernel-open/nvidia/nv-p2p.h" ] || die "no kernel-open/nvidia/nv-p2p.h in ogkm-550.90.07-p2p.tar.xz"
cp -r "$here/nvidia-mini" "$TMP/stock"
sed -i "s/^NVIDIA_VERSION.*/NVIDIA_VERSION = $STOCK/" "$TMP/stock/version.mk"
make -s -C "$TMP/stock" modules KERNEL_UNAME="$KV" >"$TMP/stock.log" 2>&1 || { tail -20 "$TMP/stock.log"; die "building the stock modules"; }
SRC_SHA=$(cd "$TMP/src" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)

profile() {  # profile FILE ALLOW-RELOAD
  cat >"$1" <<Y
apiVersion: p2pnode/v1
kind: NodeProfile
metadata:
  name: driver-reload-vm
  description: the miniature open-gpu-kernel-modules tree, loaded in the VM
driver:
  version: "$VER"
  kernel_module:
    name: $NAME
    source:
      path: $TMP/src
      sha256: $SRC_SHA
  reload:
    allow: $2
Y
}
profile "$TMP/noreload.yaml" false
profile "$TMP/reload.yaml" true
GDR_SHA=$(sha256sum "$TREES/gdrcopy-2.6.tar.xz" | cut -d' ' -f1)
{ cat "$TMP/reload.yaml"; printf 'gdrcopy:\n  version: "2.6"\n  source: {path: %s, sha256: %s}\n  device: {owner: root, group: root, mode: "0640"}\n' \
    "$TREES/gdrcopy-2.6.tar.xz" "$GDR_SHA"; } > "$TMP/gdr.yaml"

echo "== host: p2pnode apply builds $NAME/$VER through DKMS for $KV (reload not allowed here)"
t0=$(date +%s)
"$P2PNODE" apply --root / --profile "$TMP/noreload.yaml" --json >"$TMP/host.json" 2>"$TMP/host.err"
rc=$?
step() { jq -r --arg a "$2" '[.steps[] | select(.action == $a)][0].outcome' "$1"; }
[ $rc = 0 ] || { cat "$TMP/host.err"; die "host apply exited $rc: $(cat "$TMP/host.json")"; }
[ "$(step "$TMP/host.json" driver.module)" = changed ] || die "host: driver.module not changed: $(cat "$TMP/host.json")"
[ "$(step "$TMP/host.json" driver.reload)" = reboot_required ] || die "host: driver.reload is not reboot_required: $(cat "$TMP/host.json")"
"$DKMS_BIN" status -m "$NAME" | grep -q "$NAME/$VER, $KV, .*: installed" || die "dkms status: $("$DKMS_BIN" status -m "$NAME")"
echo "   built and installed in $(( $(date +%s) - t0 )) s; five modules: $(ls /lib/modules/$KV/updates/dkms/ | grep -c '^nvidia')"
echo "== host: p2pnode apply builds gdrdrv/2.6 through DKMS for $KV against /usr/src/$NAME-$VER/kernel-open/nvidia, and libgdrapi"
t0=$(date +%s)
"$P2PNODE" apply --root / --profile "$TMP/gdr.yaml" --only gdrcopy.module --only gdrcopy.library --json >"$TMP/gdr-host.json" 2>"$TMP/gdr-host.err" ||
  { tail -20 "$TMP/gdr-host.err"; die "host apply of gdrcopy.module: $(cat "$TMP/gdr-host.json")"; }
[ "$(step "$TMP/gdr-host.json" gdrcopy.module)" = changed ] || die "host: gdrcopy.module not changed: $(cat "$TMP/gdr-host.json")"
[ "$(step "$TMP/gdr-host.json" gdrcopy.library)" = changed ] || die "host: gdrcopy.library not changed: $(cat "$TMP/gdr-host.json")"
ls /lib/modules/$KV/updates/dkms/gdrdrv.ko* >/dev/null 2>&1 || die "no gdrdrv.ko for $KV"
echo "   built and installed in $(( $(date +%s) - t0 )) s"

# Into the initramfs: DKMS's state, p2pnode's stamp, the installed modules, the stock build,
# kmod, jq and dkms (a bash script), and the profiles. build/ is an empty directory: p2pnode
# counts a kernel as one DKMS serves by its headers' directory; the guest never builds.
r=$VM_TMP/root
mkdir -p "$r/usr/src" "$r/var/lib/dkms" "$r/var/lib/p2pnode/dkms" "$r/lib/modules/$KV/updates/dkms" \
         "$r/lib/modules/$KV/build" "$r/stock" "$r/guest/drv" "$r/etc" "$r$TMP"
cp -a "/usr/src/$NAME-$VER" /usr/src/gdrdrv-2.6 "$r/usr/src/"
cp -a "/var/lib/dkms/$NAME" /var/lib/dkms/gdrdrv "$r/var/lib/dkms/"
cp "/var/lib/p2pnode/dkms/$NAME-$VER.json" /var/lib/p2pnode/dkms/gdrdrv-2.6.json "$r/var/lib/p2pnode/dkms/"
mkdir -p "$r/var/lib/p2pnode/gdrcopy" && cp -a /var/lib/p2pnode/gdrcopy/2.6 "$r/var/lib/p2pnode/gdrcopy/"  # libgdrapi, built here
cp /lib/modules/$KV/updates/dkms/nvidia*.ko* /lib/modules/$KV/updates/dkms/gdrdrv.ko* "$r/lib/modules/$KV/updates/dkms/"
# Accounts, for /dev/gdrdrv's owner and group (p2pnode names them through these, chown reads them).
[ -e "$r/etc/passwd" ] || echo "root:x:0:0:root:/root:/bin/sh" > "$r/etc/passwd"
[ -e "$r/etc/group" ] || echo "root:x:0:" > "$r/etc/group"
cp "$TMP"/stock/kernel-open/*.ko "$r/stock/"
cp -a "$TMP/src" "$r$TMP/"
cp -a /etc/dkms "$r/etc/"
cp -L /etc/os-release "$r/etc/os-release"  # dkms picks updates/dkms by the distribution
depmod -b "$r" "$KV"
vm_add_program /bin/bash /bin/bash
vm_add_program "$(command -v kmod)" /sbin/kmod
vm_add_program "$(command -v jq)" /sbin/jq
cp "$DKMS_BIN" "$r/sbin/dkms"
for t in modprobe modinfo insmod rmmod lsmod depmod; do ln -sf kmod "$r/sbin/$t"; done
cp "$TMP/noreload.yaml" "$TMP/reload.yaml" "$TMP/gdr.yaml" "$r/guest/drv/"
echo "$VER" >"$r/guest/drv/want-version"
echo "$STOCK" >"$r/guest/drv/stock-version"
vm_pack
echo "== vm: kernel $KV, initramfs $(du -h "$VM_INITRD" | cut -f1)"
t0=$(date +%s)
vm_boot driver ""
echo "   one boot in $(( $(date +%s) - t0 )) s"
vm_report driver
