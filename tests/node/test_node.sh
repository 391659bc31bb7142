#!/bin/bash
# The node VM: a Debian 12 disk image (tests/node/image.sh) with the package from build-deb.sh
# installed by apt, booted by QEMU TCG through SeaBIOS and GRUB with systemd as PID 1; checks over
# real SSH. Usage: bash tests/node/test_node.sh path/to/p2pnode (its build dir is packaged).
# Exit 0 all passed, 1 a check failed, 77 skipped (the reason is printed).
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$here/image.sh"
. "$here/vm.sh"
bin=${1:-build/daemon/p2pnode}
reason=$(node_image_skip_reason); [ -z "$reason" ] || { echo "SKIP: $reason"; exit 77; }
[ -x "$bin" ] || { echo "FAIL: p2pnode binary '$bin' is missing (build it first)"; exit 1; }
build=$(cd "$(dirname "$bin")/.." && pwd)

NODE_DIR=$(mktemp -d /tmp/p2pnode-node.XXXXXX)
trap '[ -n "${NODE_QEMU_PID:-}" ] && kill -9 $NODE_QEMU_PID 2>/dev/null; [ -n "${P2P_NODE_KEEP:-}" ] && echo "kept $NODE_DIR" || rm -rf "$NODE_DIR"' EXIT
NODE_PORT=$(node_free_port)
fails=0 passes=0
check() { local what=$1; shift; if "$@" >/dev/null 2>&1; then echo "PASS: $what"; passes=$((passes+1)); else echo "FAIL: $what"; fails=$((fails+1)); fi; }
in_node() { node_ssh "$@"; }

t0=$SECONDS
if [ -n "${P2P_NODE_DEB:-}" ]; then deb=$P2P_NODE_DEB
else deb=$("$repo/scripts/build-deb.sh" "$NODE_DIR/deb" "$build" | tail -1) || { echo "FAIL: build-deb.sh"; exit 1; }; fi
echo "node: package $(basename "$deb") ($((SECONDS - t0)) s)"
node_image "$NODE_DIR" "$deb" || { echo "FAIL: making the node image"; exit 1; }
node_drives
echo "node: image built in $((SECONDS - t0)) s"

node_start
node_wait_ssh || { echo "FAIL: first boot"; exit 1; }
check "booted through GRUB (its menu entry on the console, BOOT_IMAGE= on the kernel command line)" sh -c "grep -qa \"Booting .Debian GNU/Linux\" $NODE_CONSOLE \check "booted through GRUB (GRUB's banner or menu on the console)" grep -qa "GRUB" "$NODE_CONSOLE"\check "booted through GRUB (GRUB's banner or menu on the console)" grep -qa "GRUB" "$NODE_CONSOLE" node_cmdline_has BOOT_IMAGE="
check "systemd is PID 1" test "$(in_node cat /proc/1/comm)" = systemd
check "the data drive is mounted at /data from fstab" in_node findmnt -n /data
check "the package is installed by apt" in_node dpkg -s p2pnode
in_node systemctl is-system-running --wait; echo "node: system state: $(in_node systemctl is-system-running)"
in_node systemctl --failed --no-legend

# Case 1: profile placed, reboot, the boot-time apply binds the free drive before multi-user.target.
in_node mkdir -p /etc/p2pnode/profiles
in_node "cat > /etc/p2pnode/profiles/node-vm.yaml" < "$here/profiles/node-vm.yaml"
node_reboot && node_wait_ssh || { echo "FAIL: reboot after placing the profile"; exit 1; }
in_node systemctl is-system-running --wait >/dev/null
free=$(in_node 'for d in /sys/bus/pci/devices/*; do [ "$(cat $d/class)" = 0x010802 ] || continue; s=$(cat $d/nvme/nvme*/serial 2>/dev/null); echo "$(basename $d) $s"; done')
echo "node: NVMe: $(echo $free)"
in_node systemctl status p2pnode-apply.service p2pnode.service --no-pager | head -40
in_node 'lspci -nnk' | grep -A3 -i 'non-volatile'
in_node systemctl --failed --no-legend
in_node journalctl -b -u p2pnode-apply -u p2pnode --no-pager | tail -30
echo "node: $passes checks passed, $fails failed; whole test $((SECONDS - t0)) s"
[ $fails -eq 0 ]
