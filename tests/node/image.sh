# Sourced by tests/node/test_*.sh: a Debian node disk image (release DEBIAN_SUITE) booted by SeaBIOS -> GRUB -> systemd.
# The root (debootstrap minbase + python3, then kernel, systemd, udev, openssh-server, GRUB's i386-pc
# files and update-grub, DKMS with gcc and the kernel's headers) is made once and cached as a tarball in $P2PNODE_TEST_CACHE like tests/package's roots; the
# p2pnode .deb is installed into a fresh copy each run with apt. The disk is made without mounting:
# mkfs.ext4 -d fills the root file system from the directory, an MBR is written by hand and GRUB's
# boot.img + core.img (grub-mkimage from the root's own grub-pc-bin) go in with dd.
here_node=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here_node/../lib/debian_root.sh"
. "$here_node/kernels.sh"

NODE_ROOT_UUID=5b0d2c3a-6f1e-4a57-9c1d-0de5e0a1b2c3

_node_root() {
  local base
  base=$(_debian_root_tarball "$DEBIAN_SUITE-minbase-python3" _debootstrap_python) || return 1
  mkdir -p "$1" && tar -C "$1" -xf "$base"
  cp /etc/resolv.conf "$1/etc/resolv.conf"
  # initramfs-tools in a chroot cannot see the VM's disk: include every storage driver (MODULES=most).
  # DKMS, make, gcc and the kernel's headers: a node that builds the P2P module for every kernel.
  # The kernel: the second-newest of the release's series, so that the newest can arrive through apt
  # (case 4, tests/node/kernels.sh).
  local old
  old=$(node_kernel_series "$1" | tail -2 | head -1)
  [ -n "$old" ] || { echo "no kernel of linux-image-amd64's series in the root's apt lists"; return 1; }
  chroot "$1" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "linux-image-$old" "linux-headers-$old" systemd-sysv udev openssh-server grub-pc-bin grub2-common dbus \
    iproute2 kmod pciutils dkms make gcc > "$1.apt.log" 2>&1 || { tail -30 "$1.apt.log"; return 1; }
  rm -f "$1.apt.log"
  chroot "$1" apt-get clean
}

# node_image_skip_reason: why the node image cannot be made here (empty: it can).
node_image_skip_reason() {
  local r
  r=$(debian_root_skip_reason); [ -n "$r" ] && { echo "$r"; return; }
}

# _mbr_entry START SIZE: the 16-byte bootable Linux partition entry (LBA only; CHS fields say "use LBA").
_le32() { printf "$(printf '\\x%02x' $(($1 & 255)) $(($1 >> 8 & 255)) $(($1 >> 16 & 255)) $(($1 >> 24 & 255)))"; }

# node_image DIR DEB [PROFILE]: makes DIR/root (cached root + DEB via apt, PROFILE in
# /etc/p2pnode/profiles as an operator's image would carry it), DIR/disk.img, DIR/id_ed25519.
node_image() {
  local dir=$1 deb=$2 profile=${3:-} t0=$SECONDS
  local r=$dir/root tar
  tar=$(_debian_root_tarball "$DEBIAN_SUITE-node-dkms" _node_root) || return 1
  mkdir -p "$r" && tar -C "$r" -xf "$tar" && cp /etc/resolv.conf "$r/etc/resolv.conf"
  echo "node image: root unpacked ($((SECONDS - t0)) s)"
  cp "$deb" "$r/tmp/p2pnode.deb"
  chroot "$r" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends /tmp/p2pnode.deb \
    > "$dir/apt.log" 2>&1 || { tail -30 "$dir/apt.log"; return 1; }
  rm -f "$r/tmp/p2pnode.deb"
  echo "node image: p2pnode installed by apt ($((SECONDS - t0)) s)"
  [ -z "$profile" ] || install -D -m 644 "$profile" "$r/etc/p2pnode/profiles/$(basename "$profile")"
  # Identity, login by the test's key only, networking by DHCP from QEMU's user network.
  echo p2pnode-vm > "$r/etc/hostname"
  printf '127.0.0.1 localhost\n127.0.1.1 p2pnode-vm\n' > "$r/etc/hosts"
  printf 'UUID=%s / ext4 errors=remount-ro 0 1\nUUID=8c1e7a52-3d44-4b0b-a7f2-5a1d2e3f4b5c /data ext4 defaults,nofail 0 2\n' "$NODE_ROOT_UUID" > "$r/etc/fstab"; mkdir -p "$r/data"
  ssh-keygen -q -t ed25519 -N '' -f "$dir/id_ed25519" -C p2pnode-node-test
  install -d -m 700 "$r/root/.ssh"
  install -m 600 "$dir/id_ed25519.pub" "$r/root/.ssh/authorized_keys"
  printf 'PermitRootLogin prohibit-password\nPasswordAuthentication no\nUseDNS no\n' > "$r/etc/ssh/sshd_config.d/p2pnode-test.conf"
  # Host keys are made per image (the cached root must not carry one shared key).
  rm -f "$r"/etc/ssh/ssh_host_*; chroot "$r" ssh-keygen -A >/dev/null
  printf '[Match]\nName=en*\n[Network]\nDHCP=yes\n' > "$r/etc/systemd/network/50-dhcp.network"
  chroot "$r" systemctl enable systemd-networkd.service >/dev/null 2>&1
  chroot "$r" systemctl mask systemd-timesyncd.service apt-daily.timer apt-daily-upgrade.timer man-db.timer e2scrub_all.timer >/dev/null 2>&1
  : > "$r/etc/machine-id"
  rm -f "$r/etc/resolv.conf"
  # GRUB: core.img from the root's own modules; grub.cfg names the kernels Debian installed.
  local kv
  kv=$(ls "$r"/boot/vmlinuz-* | sed 's|.*/vmlinuz-||' | sort -V | tail -1)
  mkdir -p "$r/boot/grub"
  cat > "$r/boot/grub/grub.cfg" <<CFG
set timeout=0
serial --unit=0 --speed=115200
terminal_input serial
terminal_output serial
search --no-floppy --fs-uuid --set=root $NODE_ROOT_UUID
menuentry 'Debian GNU/Linux, with Linux $kv' {
  linux /boot/vmlinuz-$kv root=UUID=$NODE_ROOT_UUID ro console=ttyS0,115200 intel_iommu=on quiet
  initrd /boot/initrd.img-$kv
}
CFG
  # What grub-install would leave: the modules beside grub.cfg (a generated grub.cfg insmods
  # loadenv, gzio, ...), and /etc/default/grub for update-grub, which the kernel packages' hooks run
  # in the VM (zz-update-grub), with the serial console and the IOMMU this VM needs.
  cp -r "$r/usr/lib/grub/i386-pc" "$r/boot/grub/i386-pc"
  cat > "$r/etc/default/grub" <<'DEF'
GRUB_DEFAULT=0
GRUB_TIMEOUT=0
GRUB_DISTRIBUTOR=Debian
GRUB_CMDLINE_LINUX_DEFAULT="quiet"
GRUB_CMDLINE_LINUX="console=ttyS0,115200 intel_iommu=on"
GRUB_TERMINAL=serial
GRUB_SERIAL_COMMAND="serial --unit=0 --speed=115200"
GRUB_DISABLE_OS_PROBER=true
DEF
  chroot "$r" grub-mkimage -O i386-pc -o /tmp/core.img -p '(hd0,msdos1)/boot/grub' \
    biosdisk part_msdos ext2 search search_fs_uuid linux normal configfile serial terminal echo test || return 1
  local core=$r/tmp/core.img boot=$r/usr/lib/grub/i386-pc/boot.img
  # Disk: 1 MiB for MBR + core.img, then the root partition (its size: the files + room).
  local mb start=2048 sectors
  # Room for a second kernel with its headers and initramfs (about 700 MiB) arriving through apt.
  mb=$(( $(du -sm "$r" | cut -f1) + 2048 ))
  sectors=$(( mb * 2048 ))
  rm -f "$dir/root.ext4"
  mkfs.ext4 -q -F -L node-root -U "$NODE_ROOT_UUID" -d "$r" "$dir/root.ext4" "${mb}M" >/dev/null || return 1
  echo "node image: root file system made ($((SECONDS - t0)) s, ${mb} MiB)"
  truncate -s $(( (start + sectors) * 512 )) "$dir/disk.img"
  dd if="$boot" of="$dir/disk.img" bs=440 count=1 conv=notrunc status=none
  { printf '\x80\xfe\xff\xff\x83\xfe\xff\xff'; _le32 $start; _le32 $sectors; } |
    dd of="$dir/disk.img" bs=1 seek=446 conv=notrunc status=none
  printf '\x55\xaa' | dd of="$dir/disk.img" bs=1 seek=510 conv=notrunc status=none
  [ "$(stat -c %s "$core")" -lt $(( (start - 1) * 512 )) ] || { echo "core.img does not fit before the partition"; return 1; }
  dd if="$core" of="$dir/disk.img" bs=512 seek=1 conv=notrunc status=none
  dd if="$dir/root.ext4" of="$dir/disk.img" bs=1M seek=1 conv=notrunc,sparse status=none
  rm -f "$dir/root.ext4" "$core"
  echo "node image: disk.img ready ($((SECONDS - t0)) s)"
}
