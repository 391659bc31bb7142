# Sourced by tests/node/test_*.sh: boots the node image (tests/node/image.sh) under QEMU TCG through
# SeaBIOS and GRUB, with two emulated NVMe drives behind PCIe root ports and SSH forwarded to
# 127.0.0.1 only (user networking, restrict=on: the guest reaches nothing outside).
# NODE_DIR holds disk.img, id_ed25519, the drives and console-N.log; NODE_PORT the forwarded port.

NODE_BOOTS=0

# node_drives: the data drive (ext4, mounted by the node's fstab) and the free one, made on the host.
NODE_DATA_UUID=8c1e7a52-3d44-4b0b-a7f2-5a1d2e3f4b5c
node_drives() {
  truncate -s 64M "$NODE_DIR/free.img"
  rm -f "$NODE_DIR/data.img"
  mkdir -p "$NODE_DIR/data-files" && echo "data the node must keep" > "$NODE_DIR/data-files/payload"
  mkfs.ext4 -q -F -L node-data -U "$NODE_DATA_UUID" -d "$NODE_DIR/data-files" "$NODE_DIR/data.img" 64M >/dev/null
}

# node_start: boots the VM in the background (returns at once); console in console-N.log.
node_start() {
  NODE_BOOTS=$((NODE_BOOTS + 1))
  NODE_CONSOLE=$NODE_DIR/console-$NODE_BOOTS.log
  # cache=unsafe on the root disk: the guest's flushes (dpkg syncs every file it unpacks, a kernel
  # package is thousands) are not passed on to this host's disk. What the guest wrote reaches QEMU's
  # file at once all the same, so killing QEMU (the power cut of case 3) loses only what the guest
  # had not written yet, as before; only a crash of this host would lose more, which no test needs.
  qemu-system-x86_64 -M q35 -accel tcg -m 1536 -smp 1 -display none -monitor none \
    -serial "file:$NODE_CONSOLE" -no-reboot \
    -device intel-iommu,intremap=off \
    -drive file="$NODE_DIR/disk.img",if=virtio,format=raw,cache=unsafe \
    -device pcie-root-port,id=rp1,bus=pcie.0,chassis=1,slot=1,addr=0x10 \
    -device pcie-root-port,id=rp2,bus=pcie.0,chassis=2,slot=2,addr=0x11 \
    -drive file="$NODE_DIR/data.img",if=none,id=data,format=raw -device nvme,serial=P2PVM-DATA,drive=data,bus=rp1 \
    -drive file="$NODE_DIR/free.img",if=none,id=free,format=raw -device nvme,serial=P2PVM-FREE,drive=free,bus=rp2 \
    -netdev "user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:$NODE_PORT-:22" -device virtio-net-pci,netdev=n0 \
    </dev/null >"$NODE_DIR/qemu-$NODE_BOOTS.log" 2>&1 &
  NODE_QEMU_PID=$!
  NODE_T0=$SECONDS
}

node_ssh() {
  ssh -q -i "$NODE_DIR/id_ed25519" -p "$NODE_PORT" -o BatchMode=yes -o StrictHostKeyChecking=no \
    -o UserKnownHostsFile=/dev/null -o ConnectTimeout=10 -o ServerAliveInterval=15 root@127.0.0.1 "$@"
}

# node_wait_ssh [SECONDS]: waits until SSH answers; fails (console tail printed) when QEMU exits or time runs out.
node_wait_ssh() {
  local limit=${1:-400}
  while [ $((SECONDS - NODE_T0)) -lt "$limit" ]; do
    kill -0 "$NODE_QEMU_PID" 2>/dev/null || { echo "QEMU exited; console:"; tail -30 "$NODE_CONSOLE"; return 1; }
    node_ssh true 2>/dev/null && { echo "node: boot $NODE_BOOTS answers SSH after $((SECONDS - NODE_T0)) s"; return 0; }
    sleep 3
  done
  echo "node: no SSH after $limit s; console:"; tail -30 "$NODE_CONSOLE"; return 1
}

# node_reboot: `systemctl reboot` in the guest; -no-reboot makes QEMU exit, then a new boot starts.
node_reboot() {
  node_ssh systemctl reboot 2>/dev/null
  node_wait_exit 120 || return 1
  node_start
}

node_wait_exit() {
  local i
  for ((i = 0; i < $1; i++)); do kill -0 "$NODE_QEMU_PID" 2>/dev/null || { wait "$NODE_QEMU_PID" 2>/dev/null; return 0; }; sleep 1; done
  echo "node: QEMU still running $1 s after the reboot"; return 1
}

# node_failed_units: the units systemd lists as failed, one line ("a.service b.service "; empty when none).
node_failed_units() { node_ssh systemctl --failed --no-legend --plain | awk '{print $1}' | tr '\n' ' '; }

# node_flush_journal: the guest's journal written to its disk, so that a kept VM's last boot can be read
# from disk.img after QEMU is killed (journald keeps it in memory until then).
node_flush_journal() { node_ssh 'timeout 20 journalctl --flush; sync' 2>/dev/null || echo "node: the guest's journal could not be flushed (no SSH): the kept image may lack the last boot"; }

# node_kill: power cut.
node_kill() { kill -9 "$NODE_QEMU_PID" 2>/dev/null; wait "$NODE_QEMU_PID" 2>/dev/null; return 0; }

# node_free_port: a free TCP port on 127.0.0.1.
node_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
