# Shared by tests/vm/test_*.sh and scripts/bench-nvme-vm.sh: find QEMU and Debian's kernel, build a
# busybox initramfs carrying p2pnode, the modules it needs and tests/vm/guest/, boot it under TCG.
# Source it; call vm_prepare BINARY first. Everything lands in a mktemp directory ($VM_TMP).

vm_skip() { echo "SKIP: $*"; exit 77; }

# VM_SYSROOT=DIR (optional): boot the kernel under DIR/boot and take its modules from DIR/lib/modules
# (a kernel package unpacked with dpkg-deb -x: another Debian release's), not this machine's.
# vm_modinfo ARGS...: modinfo of the VM's kernel; vm_module_path FILE: FILE as the guest sees it.
vm_modinfo() { if [ -n "${VM_SYSROOT:-}" ]; then modinfo -b "$VM_SYSROOT" -k "$VM_KV" "$@"; else modinfo -k "$VM_KV" "$@"; fi; }
vm_module_path() { local f=$1; [ -n "${VM_SYSROOT:-}" ] && f=${f#"$VM_SYSROOT"}; echo "$f"; }

# Sets VM_KERNEL, VM_KV, VM_TMP, VM_INITRD. Exits 77 when QEMU or the kernel cannot be had.
vm_prepare() {
  local bin=$1 here
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  [ -x "$bin" ] || { echo "FAIL: p2pnode binary '$bin' is missing (build it first)"; exit 1; }
  if ! command -v qemu-system-x86_64 >/dev/null || ! ls /boot/vmlinuz-* >/dev/null 2>&1 || ! command -v busybox >/dev/null; then
    [ "$(id -u)" -eq 0 ] && "$here/../../scripts/install-deps.sh" test >/dev/null 2>&1
  fi
  . "$here/../lib/require.sh"
  require qemu-system-x86_64 busybox file modinfo depmod cpio gzip
  local sr=${VM_SYSROOT:-}
  VM_KERNEL=$(ls "$sr"/boot/vmlinuz-* 2>/dev/null | sort -V | tail -1)
  [ -n "$VM_KERNEL" ] && [ -r "$VM_KERNEL" ] || { echo "FAIL: no readable $sr/boot/vmlinuz-* (linux-image-amd64: scripts/install-deps.sh test)"; exit 1; }
  VM_KV=${VM_KERNEL#"$sr"/boot/vmlinuz-}
  [ -d "$sr/lib/modules/$VM_KV" ] || { echo "FAIL: no $sr/lib/modules/$VM_KV for $VM_KERNEL"; exit 1; }
  local bb
  bb=$(command -v busybox)
  file -L "$bb" 2>/dev/null | grep -q 'statically linked' || [ -x /bin/busybox ] || { echo "FAIL: busybox-static is not installed (scripts/install-deps.sh test)"; exit 1; }
  VM_TMP=$(mktemp -d /tmp/p2pnode-vm.XXXXXX)
  # the caller's own EXIT trap (its scratch root) still runs after this one
  local prev
  prev=$(trap -p EXIT | sed -E "s/^trap -- '(.*)' EXIT$/\1/")
  trap "rm -rf \"\$VM_TMP\"${prev:+; $prev}" EXIT
  local r=$VM_TMP/root
  mkdir -p $r/bin $r/sbin $r/etc $r/proc $r/sys $r/dev $r/tmp $r/mnt $r/run $r/var/lib $r/lib/modules/$VM_KV
  cp "$bb" $r/bin/busybox
  # Modules with their dependencies (modinfo -F depends, recursively).
  local todo=(nvme vfio-pci vfio_iommu_type1 ext4 crc32c_generic) seen=" " m f g
  while [ ${#todo[@]} -gt 0 ]; do
    m=${todo[0]}; todo=("${todo[@]:1}")
    case "$seen" in *" $m "*) continue ;; esac
    seen="$seen$m "
    f=$(vm_modinfo -F filename "$m" 2>/dev/null) || continue
    case "$f" in /*) ;; *) continue ;; esac  # built in
    g=$(vm_module_path "$f")
    mkdir -p "$r$(dirname "$g")"
    cp "$f" "$r$g"
    for d in $(vm_modinfo -F depends "$m" | tr ',' ' '); do todo+=("$d"); done
  done
  cp "$sr"/lib/modules/$VM_KV/modules.builtin* "$sr"/lib/modules/$VM_KV/modules.order $r/lib/modules/$VM_KV/ 2>/dev/null
  depmod -b "$r" "$VM_KV"
  # p2pnode and the libraries it links (it is dynamically linked), plus any extra programs.
  vm_add_program "$bin" /bin/p2pnode
  mkdir -p $r/guest && cp -r "$here/guest/." $r/guest/
  cp "$here/guest/init" $r/init
  chmod +x $r/init
}

# vm_add_program HOSTPATH GUESTPATH: copies a program and its shared libraries into the initramfs.
vm_add_program() {
  local r=$VM_TMP/root lib
  mkdir -p "$r$(dirname "$2")"
  cp "$1" "$r$2"
  strip --strip-debug "$r$2" 2>/dev/null || true  # a debug build is 30x larger; TCG unpacks it slowly
  for lib in $(ldd "$1" 2>/dev/null | grep -o '/[^ ]*'); do
    [ -e "$r$lib" ] && continue
    mkdir -p "$r$(dirname "$lib")"
    cp -L "$lib" "$r$lib"
  done
}

# vm_add_modules MODULE...: the modules and every module they depend on (modinfo of the VM's
# kernel, so DKMS's updates/ first) into the initramfs, depmod there, and kmod as modprobe and
# lsmod. VM_MODULES_ADDED: what was added beside the modules named. Returns 1, with VM_MODULES_MISSING
# set, when the kernel has no module of a name needed.
vm_add_modules() {
  local r=$VM_TMP/root todo=("$@") seen=" " named=" $* " m f g d
  VM_MODULES_ADDED="" VM_MODULES_MISSING=""
  while [ ${#todo[@]} -gt 0 ]; do
    m=${todo[0]}; todo=("${todo[@]:1}")
    case "$seen" in *" $m "*) continue ;; esac
    seen="$seen$m "
    f=$(vm_modinfo -F filename "$m" 2>/dev/null) || { VM_MODULES_MISSING="$VM_MODULES_MISSING $m"; continue; }
    case "$f" in /*) ;; *) continue ;; esac   # built into the kernel
    [[ "$named" == *" $m "* ]] || VM_MODULES_ADDED="$VM_MODULES_ADDED $m"
    g=$(vm_module_path "$f"); mkdir -p "$r$(dirname "$g")"; cp "$f" "$r$g"
    for d in $(vm_modinfo -F depends "$m" | tr ',' ' '); do todo+=("$d"); done
  done
  depmod -b "$r" "$VM_KV"
  vm_add_program "$(command -v kmod)" /sbin/kmod
  for d in modprobe lsmod; do ln -sf kmod "$r/sbin/$d"; done
  [ -z "$VM_MODULES_MISSING" ]
}

# vm_load_nvidia NAME MODULE...: after vm_prepare, boots the VM's kernel with the modules (and what
# they depend on), modprobes each in order and checks the kernel log: "NVRM: No NVIDIA GPU found."
# (the VM has no GPU), no unknown symbol, no BTF complaint. Prints the guest's lines. Returns 0 when
# every check passed; VM_LOAD_S: the boot's seconds; VM_MODULES_ADDED as vm_add_modules.
vm_load_nvidia() {
  local name=$1 m log t0; shift
  vm_add_modules "$@" || { echo "   the kernel has no module$VM_MODULES_MISSING"; return 1; }
  {
    echo "scenario_$name() {"
    echo "  local out rc"
    for m in "$@"; do
      echo "  out=\$(/sbin/modprobe $m 2>&1); rc=\$?"
      echo "  echo \"P2P-INFO modprobe $m: exit \$rc: \$out\""
    done
    cat <<'G'
  dmesg | grep -iE 'NVRM|nvidia|unknown symbol|disagrees about version|BTF|taint' | sed 's/^/P2P-KLOG /'
  check "kernel log: NVRM: No NVIDIA GPU found." sh -c "dmesg | grep -q 'NVRM: No NVIDIA GPU found\.'"
  check "kernel log: no unknown symbol" sh -c "! dmesg | grep -qiE 'unknown symbol|disagrees about version of symbol'"
  check "kernel log: no BTF complaint" sh -c "! dmesg | grep -qiE 'BTF.*(fail|error|invalid)'"
}
G
  } >>"$VM_TMP/root/guest/scenarios.sh"
  vm_pack
  t0=$SECONDS
  VM_TIMEOUT=${VM_TIMEOUT:-900} vm_boot "$name" ""
  VM_LOAD_S=$((SECONDS - t0))
  log=$VM_TMP/$name.log
  grep -E '^P2P-(CHECK|INFO|KLOG)' "$log" | tr -d '\r' | sed 's/^/   /'
  grep -q "^P2P-END $name" "$log" && ! grep -q '^P2P-CHECK FAIL' "$log" && [ "$(grep -c '^P2P-CHECK PASS' "$log")" -ge 3 ] &&
    return 0
  tail -30 "$log"
  return 1
}

vm_pack() {
  VM_INITRD=$VM_TMP/initrd.gz
  (cd $VM_TMP/root && find . | cpio -o -H newc 2>/dev/null | gzip -1) > $VM_INITRD
}

# vm_boot NAME "KERNEL ARGS" QEMU-ARGS...: boots once, the serial console into $VM_TMP/NAME.log.
vm_boot() {
  local name=$1 args=$2
  shift 2
  local log=$VM_TMP/$name.log
  timeout "${VM_TIMEOUT:-300}" qemu-system-x86_64 -M q35 -accel tcg -m 1024 -smp 1 -nographic -no-reboot -net none \
    -kernel "$VM_KERNEL" -initrd "$VM_INITRD" \
    -append "console=ttyS0 quiet panic=-1 p2p.scenario=$name $args" "$@" </dev/null >"$log" 2>&1
  echo $? >$VM_TMP/$name.rc
}

# vm_drive NAME SERIAL: a 64 MiB emulated NVMe drive's QEMU arguments.
vm_drive() {
  truncate -s 64M $VM_TMP/$1.img
  echo "-drive file=$VM_TMP/$1.img,if=none,id=$1,format=raw -device nvme,serial=$2,drive=$1"
}

# vm_report BOOT...: prints each boot's P2P-CHECK/INFO lines (and p2pnode's output where a check
# failed); exits 0 when every boot finished and passed at least one check with none failing.
vm_report() {
  local failed=0 s log pass fail
  for s in "$@"; do
    log=$VM_TMP/$s.log
    echo "=== scenario boot '$s' (qemu exit $(cat $VM_TMP/$s.rc))"
    grep -E '^P2P-(CHECK|INFO)' "$log" | tr -d '\r'
    if ! grep -q "^P2P-END $s" "$log"; then
      echo "FAIL: boot '$s' did not finish; the console said:"
      tail -40 "$log"
      failed=1
    fi
    if grep -q '^P2P-CHECK FAIL' "$log"; then
      failed=1
      echo "--- p2pnode output of '$s':"
      grep -E '^P2P-(OUT|ERR)' "$log" | tr -d '\r' | head -150
    fi
    [ "$(grep -c '^P2P-CHECK PASS' "$log")" -gt 0 ] || failed=1
  done
  pass=$(cat $VM_TMP/*.log | grep -c '^P2P-CHECK PASS')
  fail=$(cat $VM_TMP/*.log | grep -c '^P2P-CHECK FAIL')
  echo "vm: $pass checks passed, $fail failed"
  [ $failed -eq 0 ] && [ "$fail" -eq 0 ] && exit 0
  [ -n "${P2P_VM_KEEP:-}" ] && { trap - EXIT; echo "kept $VM_TMP"; }
  exit 1
}
