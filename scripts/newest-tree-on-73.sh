#!/bin/bash
# The newest P2P tree on the newest Debian kernel, built whole and loaded: NVIDIA's 595.45.04 with
# the ported P2P patch (tests/fixtures/p2p-patches) and the builtin patches p2pnode adds for 7.x
# (of-gpio-h-removed, strncpy-removed, drm-atomic-state-renamed, pahole-awk-gen-btf), built as
# DKMS's MAKE line does (`make modules`: the core, then kernel-open/ and its link with module BTF)
# against trixie-backports' 7.3.4 headers in a Debian 13 root, then nvidia.ko (+ what it depends
# on) loaded in QEMU booted on 7.3.4's own kernel, to "NVRM: No NVIDIA GPU found.".
#
# Not part of `make test`: the core alone is 10-30 minutes on 2 cores. `make test` keeps
# tests/dkms/test_trees_73.sh (the forecast, apply's patch trial and its refusal without the
# builtins) and test_trees_612.sh (a whole tree through apply, DKMS and QEMU on 6.12).
#
# Usage (as root): scripts/newest-tree-on-73.sh [-w WORK] [-p P2PNODE] [-k]
#   WORK     the matrix script's work folder; its root-trixie is made there by
#            `scripts/tree-kernel-matrix.sh -r -k trixie-backports:7.3.4+deb13-amd64` when missing
#   P2PNODE  a p2pnode built from this checkout (the VM's initramfs carries it; default build/)
#   -k       keep the built tree (ROOT/root/newest-tree-on-73) for a later run to reuse
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
WORK=/var/tmp/p2pnode-matrix P2PNODE=$REPO/build/daemon/p2pnode KEEP=0
while getopts "w:p:kh" o; do
  case $o in w) WORK=$OPTARG;; p) P2PNODE=$OPTARG;; k) KEEP=1;; *) sed -n '2,/^set -uo/p' "$0" | sed '$d'; exit 2;; esac
done
die() { echo "newest-tree-on-73: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (chroot, unshare)"
KV=7.3.4+deb13-amd64 VER=595.45.04
TREES=$(cd "${P2PNODE_TREES:-$REPO/../shared/trees}" && pwd) || die "no trees directory"
ROOT=$WORK/root-trixie
[ -e "$ROOT/lib/modules/$KV/build/Makefile" ] ||
  "$REPO/scripts/tree-kernel-matrix.sh" -r -w "$WORK" -p "$P2PNODE" -k "trixie-backports:$KV" || die "the Debian 13 root"
t0=$SECONDS
# The kernel itself (QEMU boots it, its modules satisfy nvidia.ko's) and the core's C++ compiler.
if [ ! -e "$ROOT/boot/vmlinuz-$KV" ] || [ ! -e "$ROOT/usr/bin/g++" ]; then
  DEBIAN_FRONTEND=noninteractive chroot "$ROOT" apt-get install -y -qq --no-install-recommends -t trixie-backports \
    "linux-image-$KV" g++ > "$WORK/newest-tree-apt.log" 2>&1 || die "linux-image-$KV: $(tail -3 "$WORK/newest-tree-apt.log")"
fi
SRC=/root/newest-tree-on-73/open-gpu-kernel-modules-$VER
BUILTINS="of-gpio-h-removed strncpy-removed drm-atomic-state-renamed pahole-awk-gen-btf"
LOG=$WORK/newest-tree-on-73.log
if [ ! -e "$ROOT$SRC/kernel-open/nvidia.ko" ]; then
  rm -rf "$ROOT/root/newest-tree-on-73"; mkdir -p "$ROOT/root/newest-tree-on-73"
  tar -xJf "$TREES/ogkm-$VER.tar.xz" -C "$ROOT/root/newest-tree-on-73" || die "unpacking $VER"
  (cd "$ROOT$SRC" && patch -p1 --fuzz=0 -s < "$REPO/tests/fixtures/p2p-patches/$VER-p2p.patch") || die "the P2P port"
  for b in $BUILTINS; do
    (cd "$ROOT$SRC" && patch -p1 --fuzz=0 -s < "$REPO/daemon/nvidia/patches/$b.patch") || die "builtin $b does not apply"
  done
  echo "== make modules: $VER + P2P port + $BUILTINS on $KV (log: $LOG)"
  unshare -m --propagation private bash -c '
    mount -t proc proc "$1/proc" &&
    chroot "$1" env PATH=/usr/sbin:/usr/bin:/sbin:/bin make -C "$2" -j"$(nproc)" modules KERNEL_UNAME="$3"' \
    _ "$ROOT" "$SRC" "$KV" > "$LOG" 2>&1 || die "the build failed: $(grep -m3 -E 'error|Error' "$LOG")"
  echo "   built in $((SECONDS - t0)) s"
fi
grep -q "awk: [0-9]*: unexpected character" "$LOG" 2>/dev/null && die "pahole-awk-gen-btf: the link still met the awk error"
for m in nvidia nvidia-uvm nvidia-modeset nvidia-drm nvidia-peermem; do
  f=$ROOT$SRC/kernel-open/$m.ko
  [ -s "$f" ] || die "no $m.ko"
  readelf -S "$f" | grep -q '\.BTF ' || readelf -S "$f" | grep -q '\.BTF$' || die "$m.ko has no .BTF section"
  echo "ok: $m.ko linked with BTF ($(stat -c %s "$f") bytes): $(modinfo -F vermagic "$f")"
done
# Installed where DKMS would put them, then the VM.
DEST=$ROOT/lib/modules/$KV/updates/dkms
mkdir -p "$DEST" && cp "$ROOT$SRC"/kernel-open/*.ko "$DEST/" && depmod -b "$ROOT" "$KV" || die "installing the modules"
cd "$REPO" || exit 1
VM_SYSROOT=$ROOT
. tests/vm/lib.sh
vm_prepare "$P2PNODE"
[ "$VM_KV" = "$KV" ] || die "the VM would boot $VM_KV, not $KV"
vm_load_nvidia newest73 nvidia nvidia-drm; rc=$?
[ "$KEEP" = 1 ] || rm -rf "$ROOT/root/newest-tree-on-73" "$DEST"
if [ "$rc" = 0 ]; then
  echo "ok: nvidia.ko and nvidia-drm.ko $VER (+$VM_MODULES_ADDED) load on $KV in QEMU to 'NVRM: No NVIDIA GPU found.' ($VM_LOAD_S s); $((SECONDS - t0)) s in all"
  exit 0
fi
echo "FAIL: the VM load on $KV"; exit 1
