#!/bin/bash
# In a real kernel: `p2pnode serve` under a real systemd-journald and systemd-udevd (both run
# without systemd as PID 1) in the VM (QEMU/TCG, Debian's kernel, busybox initramfs). An emulated
# NVMe drive is removed and rescanned through sysfs: the daemon's sd-device monitor must reconcile
# each time, and not for a PCI device it does not care about (pci-testdev); its log must reach the
# journal as structured entries (SYSLOG_IDENTIFIER, PRIORITY, STEP=, CHECK=, DEVICE=). The guest
# half is tests/vm/guest/serve.sh. Usage: bash tests/vm/test_serve_vm.sh path/to/p2pnode
# (p2pnode-serve is taken from beside it). Exit 0 passed, 1 failed, 77 skipped (reason printed).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
P2PNODE=$(readlink -f "${1:-build/daemon/p2pnode}")
SERVE_BIN=$(dirname "$P2PNODE")/p2pnode-serve
[ -x "$SERVE_BIN" ] || { echo "FAIL: $SERVE_BIN is missing (p2pnode serve execs it; build both)"; exit 1; }

JOURNALD=/lib/systemd/systemd-journald
export DEBIAN_FRONTEND=noninteractive
need() {  # need PROGRAM PACKAGE
  [ -x "$1" ] || command -v "$1" >/dev/null && return 0
  [ "$(id -u)" -eq 0 ] && apt-get install -y -qq --no-install-recommends "$2" >/dev/null 2>&1
  [ -x "$1" ] || command -v "$1" >/dev/null || { echo "FAIL: $1 is not installed and apt-get could not install $2"; exit 1; }
}
need $JOURNALD systemd
need journalctl systemd
need systemd-cat systemd
need udevadm udev
need jq jq

vm_prepare "$P2PNODE"
r=$VM_TMP/root
vm_add_program "$SERVE_BIN" /bin/p2pnode-serve
vm_add_program $JOURNALD /lib/systemd/systemd-journald
vm_add_program "$(command -v journalctl)" /bin/journalctl
vm_add_program "$(command -v systemd-cat)" /bin/systemd-cat
vm_add_program "$(readlink -f "$(command -v udevadm)")" /bin/udevadm
ln -s /bin/udevadm "$r/lib/systemd/systemd-udevd"  # udevadm is udevd when called by that name
vm_add_program "$(command -v jq)" /bin/jq
vm_pack
echo "vm: kernel $VM_KV, initramfs $(du -h "$VM_INITRD" | cut -f1), work dir $VM_TMP"
t0=$(date +%s)
# pci-testdev (class 00ff00) is the PCI device the daemon must not react to.
vm_boot serve "" $(vm_drive a P2PVM-A) -device pci-testdev
echo "vm: one boot in $(( $(date +%s) - t0 )) s"
vm_report serve
