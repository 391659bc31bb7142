#!/bin/bash
# systemd units: `systemd-analyze verify` (offline) on p2pnode.service, p2pnode-apply.service and
# the next-kernel judge's service and timer,
# with ExecStart pointed at the built binary (verify checks that the program exists).
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
BIN=${1:?usage: test_units.sh PATH-TO-p2pnode}
source "$(dirname "$0")/lib.sh"
require systemd-analyze
BIN=$(readlink -f "$BIN")
for u in p2pnode.service p2pnode-apply.service p2pnode-judge-kernel.service p2pnode-judge-kernel.timer; do
  sed "s|/usr/bin/p2pnode|$BIN|g" "$SRC/systemd/$u" > "$WORK/$u"
done
OUT=$(systemd-analyze verify --recursive-errors=no "$WORK/p2pnode.service" "$WORK/p2pnode-apply.service" \
  "$WORK/p2pnode-judge-kernel.service" "$WORK/p2pnode-judge-kernel.timer" 2>&1); RC=$?
if [ $RC -ne 0 ] && grep -qiE 'Failed to (connect|initialize)|No such file or directory.*(bus|manager)|not been booted with systemd' <<<"$OUT"; then
  skip "systemd-analyze cannot run in this container: $OUT"
fi
echo "$OUT"
check "systemd-analyze verify passes" test $RC -eq 0 -a -z "$OUT"
for key in "Type=notify" "WatchdogSec=" "Restart=on-failure" "ExecReload=" "StateDirectory=p2pnode" "ProtectSystem=strict"; do
  check "p2pnode.service has $key" grep -q "^$key" "$SRC/systemd/p2pnode.service"
done
for bad in ProtectKernelTunables ProtectKernelModules PrivateDevices ProtectKernelLogs; do
  check "p2pnode.service does not set $bad (FACTS.md)" bash -c "! grep -q '^$bad' '$SRC/systemd/p2pnode.service'"
done
# Under ProtectSystem=strict only what a unit names is writable (ReadWritePaths=, StateDirectory=,
# CacheDirectory=, PrivateTmp=): every path p2pnode's actions write, or a program they run writes,
# must be one of them in both units, or the apply fails with EROFS on a real node.
WRITES=(/sys/bus/pci/devices/0000:01:00.0/resource1_resize  # BAR resize, ACS, NVMe binding and power
        /etc/modprobe.d/p2pnode-nvidia.conf /etc/kernel/postinst.d/z50-p2pnode /etc/default/grub
        /usr/src/nvidia-p2p-550.90.07/dkms.conf /var/lib/dkms/nvidia-p2p /lib/modules/6.1.0-56-amd64/updates/dkms
        /boot/initrd.img-6.1.0-56-amd64 /boot/grub/grub.cfg
        /var/lib/p2pnode/state.json /var/cache/p2pnode/nvidia-core   # daemon/lifecycle/nvidia_core.hpp
        /usr/lib/x86_64-linux-gnu/libcuda.so.550.90.07 /usr/bin/nvidia-smi /usr/lib/firmware/nvidia  # the .run installer
        /etc/ld.so.cache /etc/OpenCL/vendors/nvidia.icd /var/log/nvidia-installer.log /var/lib/nvidia
        /var/tmp/mkinitramfs_x /tmp/x)
writable() {  # writable UNIT PATH: PATH is under a directory the unit makes writable
  local unit=$1 path=$2 d
  for d in $(sed -n 's/^ReadWritePaths=//p' "$unit" | tr ' ' '\n' | sed 's/^-//') \
           $(sed -n 's/^StateDirectory=/\/var\/lib\//p; s/^CacheDirectory=/\/var\/cache\//p' "$unit") \
           $(grep -q '^PrivateTmp=yes' "$unit" && echo /tmp /var/tmp); do
    case "$path/" in "$d"/*) return 0 ;; esac
  done
  return 1
}
for u in p2pnode.service p2pnode-apply.service; do
  missing=()
  for w in "${WRITES[@]}"; do writable "$SRC/systemd/$u" "$w" || missing+=("$w"); done
  check "$u lets the actions write everything they write (not: ${missing[*]:-none})" test ${#missing[@]} -eq 0
done
grep -q '"/var/cache/p2pnode/nvidia-core"' "$SRC/daemon/lifecycle/nvidia_core.hpp"
check "the cache the units open is the one the code writes" test $? -eq 0
# The daemon's HTTP process drops root with setgroups, setresgid and setresuid (privsep/drop.cpp).
keeps_setuid() {
  local set; set=$(sed -n 's/^CapabilityBoundingSet=//p' "$SRC/systemd/p2pnode.service")
  case $set in
    "") return 0 ;;
    "~"*) ! grep -qwE 'CAP_SETUID|CAP_SETGID' <<<"$set" ;;
    *) grep -qw CAP_SETUID <<<"$set" && grep -qw CAP_SETGID <<<"$set" ;;
  esac
}
check "p2pnode.service keeps CAP_SETUID and CAP_SETGID (the HTTP process drops root)" keeps_setuid
check "p2pnode.service leaves @setuid system calls allowed" bash -c "! grep -E '^SystemCallFilter=~.*@(setuid|privileged)' '$SRC/systemd/p2pnode.service'"
check "the apply unit runs before the daemon" grep -q '^Before=p2pnode.service' "$SRC/systemd/p2pnode-apply.service"
finish
