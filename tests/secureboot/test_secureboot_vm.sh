#!/bin/bash
# Secure Boot for real: Debian 13's signed boot chain (OVMF's Secure Boot firmware with Microsoft's
# keys enrolled, shim-signed, grub-efi-amd64-signed, Debian's signed 6.12 kernel) under QEMU, and the
# nvidia-mini modules (tests/vm/nvidia-mini) built by `p2pnode apply` through DKMS 3.2, which signs
# them with the key it makes (/var/lib/dkms/mok.key, mok.pub), in a Debian 13 root that stands for
# the build host. Two boots of a busybox initramfs carrying p2pnode:
#  1. the firmware as shipped (the key not enrolled): Secure Boot on, lockdown [integrity];
#     `p2pnode check` says the kernel would refuse the module (secureboot.module_signing error,
#     untrusted) and `p2pnode plan` refuses the build; the kernel refuses the signed module ("Key
#     was rejected by service") and an unsigned one;
#  2. the same firmware with DKMS's certificate enrolled as a Machine Owner Key (written into the
#     firmware's variable store with virt-fw-vars --add-mok, as MokManager would after a person
#     confirmed it: the one step no test can do at the console): shim mirrors it to MokListRT,
#     `check` says trusted, the signed module loads and `modinfo` names its signer; the unsigned
#     one is still refused; and with DKMS's module unsigned for the running kernel and signed for
#     an older one, `plan`'s boot guard holds GRUB on the older (p2pnode asks kmod's modinfo).
# Exit 77 only without root, debootstrap, Debian's archive, QEMU or the trees' helpers.
# Usage: bash tests/secureboot/test_secureboot_vm.sh path/to/build/daemon/p2pnode
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"
set -uo pipefail
take_binary "${1:-}"
. tests/dist/release.sh
require debootstrap chroot
why=$(debian_root_skip_reason); [ -z "$why" ] || skip "$why"
require unshare qemu-system-x86_64 busybox cpio gzip
DEBIAN_SUITE=trixie
t_start=$SECONDS

TMP=$(temp_dir secureboot)
trap 'rm -rf "$TMP"' EXIT
ROOT=$TMP/root
tar=$(kernel_root_tarball) || die "making the Debian 13 kernel root (tests/dist/release.sh)"
root_with_package "$ROOT" "$tar" "$build" "$TMP" || die "p2pnode's Debian 13 package in the Secure Boot root"
KV=$(ls "$ROOT/lib/modules" | sort -V | tail -1)
run_in() { in_root "$ROOT" "$@"; }
echo "== Debian 13 root: kernel $KV, $(run_in dkms --version), shim $(run_in dpkg-query -W -f '${Version}' shim-signed), grub $(run_in dpkg-query -W -f '${Version}' grub-efi-amd64-signed), ovmf $(run_in dpkg-query -W -f '${Version}' ovmf)"

# The modules: nvidia-mini through p2pnode apply and DKMS, which signs them with its own key.
sha=$(cd tests/vm/nvidia-mini && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
mkdir -p "$ROOT/opt/p2pnode-test" && cp -a tests/vm/nvidia-mini "$ROOT/opt/p2pnode-test/"
cat > "$ROOT/etc/p2pnode/profiles/sb.yaml" <<Y
apiVersion: p2pnode/v1
kind: NodeProfile
metadata: {name: secure-boot-node, description: the miniature tree on a Secure Boot node}
driver:
  version: "550.90.07"
  kernel_module:
    name: nvidia
    source: {path: /opt/p2pnode-test/nvidia-mini, sha256: $sha}
Y
run_in p2pnode apply --root / --profile /etc/p2pnode/profiles/sb.yaml --only driver.module > "$TMP/apply.log" 2>&1 ||
  { tail -20 "$TMP/apply.log"; die "p2pnode apply of nvidia-mini in the build root"; }
KO=$(ls "$ROOT/lib/modules/$KV/updates/dkms/"nvidia.ko* 2>/dev/null | head -1)
[ -n "$KO" ] || die "no nvidia.ko from DKMS"
signer=$(run_in modinfo -F signer "${KO#"$ROOT"}")
[ -n "$signer" ] && pass "DKMS 3.2 signed the module p2pnode built: signer '$signer' ($(grep -o 'Signing key: [^ ]*' "$TMP/apply.log" | head -1))" ||
  fail "DKMS did not sign the module: $(grep -iE 'sign|mok|openssl' "$TMP/apply.log" | head -3)"
[ -f "$ROOT/var/lib/dkms/mok.pub" ] && pass "DKMS made its key pair (/var/lib/dkms/mok.key, mok.pub)" || fail "no /var/lib/dkms/mok.pub"
# An unsigned copy of the same module: the signature is appended, after the ELF; Kbuild's own
# build of the tree (no signing key in the headers) leaves modules unsigned.
run_in make -C /opt/p2pnode-test/nvidia-mini modules KERNEL_UNAME="$KV" > "$TMP/unsigned.log" 2>&1 ||
  { tail -10 "$TMP/unsigned.log"; die "building the unsigned module"; }
UNSIGNED=$(ls "$ROOT"/opt/p2pnode-test/nvidia-mini/kernel-open/nvidia.ko 2>/dev/null | head -1)
[ -n "$UNSIGNED" ] && [ -z "$(run_in modinfo -F signer "${UNSIGNED#"$ROOT"}")" ] || die "no unsigned nvidia.ko"

# The initramfs: busybox, kmod, p2pnode with its libraries, the modules, DKMS's certificate, the
# profile (as on the node), and an init that reports what the kernel and p2pnode say.
I=$TMP/initrd
mkdir -p "$I"/{bin,sbin,etc,proc,sys,dev,tmp,run,usr/bin,var/lib/dkms,etc/p2pnode/profiles,m,lib/modules/$KV}
cp "$(command -v busybox)" "$I/bin/busybox"
# p2pnode is the build under test, kmod this machine's, both with this machine's libraries (the
# initramfs is a world of its own).
put() {  # put SRC_ROOT PROGRAM LDD...: the program and the libraries ldd names into the initramfs
  local src=$1 p=$2; shift 2
  mkdir -p "$I/usr/bin"; cp "$src$p" "$I/usr/bin/$(basename "$p")"
  for lib in $("$@" "$p" | grep -o '/[^ ]*'); do
    [ -e "$I$lib" ] && continue
    mkdir -p "$I$(dirname "$lib")"; cp -L "$src$lib" "$I$lib"
  done
}
put "" "$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")" ldd
[ -x "$I/usr/bin/p2pnode" ] || die "the build under test is not named p2pnode: $bin"
put "" /usr/bin/kmod ldd
# kmod 34 (Debian 13) opens its decompressors with dlopen, which ldd does not name: .ko.xz needs liblzma.
for lib in /usr/lib/x86_64-linux-gnu/liblzma.so.5* /usr/lib/x86_64-linux-gnu/libzstd.so.1*; do
  mkdir -p "$I/usr/lib/x86_64-linux-gnu"; cp -a "$lib" "$I/usr/lib/x86_64-linux-gnu/"
done
# efivarfs is a module in Debian's kernel (systemd loads and mounts it on a real boot).
cp "$ROOT/lib/modules/$KV/kernel/fs/efivarfs/"efivarfs.ko* "$I/m/"
touch "$I/lib/modules/$KV/modules.dep"  # modinfo opens it before reading a module by path
mkdir -p "$I/usr/local/bin"  # kmod's, first in PATH: busybox --install puts its own in /sbin
for t in insmod modinfo; do ln -sf /usr/bin/kmod "$I/usr/local/bin/$t"; done
cp "$KO" "$I/m/signed.ko${KO##*.ko}"; cp "$UNSIGNED" "$I/m/unsigned.ko"
cp "$ROOT/var/lib/dkms/mok.pub" "$I/var/lib/dkms/mok.pub"; (umask 077; echo "not the key" > "$I/var/lib/dkms/mok.key")  # 0600, as DKMS makes it
cp "$ROOT/etc/p2pnode/profiles/sb.yaml" "$I/etc/p2pnode/profiles/"
# For the boot guard: DKMS's module installed for two kernels, the running one's unsigned (built
# before the key existed), an older one's signed; modinfo (kmod) reads them for p2pnode's plan.
KOLD=6.12.116+deb13-amd64
for k in "$KV" "$KOLD"; do
  if [ "$k" = "$KV" ]; then f=$UNSIGNED; n=nvidia.ko; else f=$KO; n=nvidia.ko${KO##*.ko}; fi
  mkdir -p "$I/lib/modules/$k/updates/dkms" "$I/var/lib/dkms/nvidia/550.90.07/$k/x86_64/module" "$I/boot"
  cp "$f" "$I/lib/modules/$k/updates/dkms/$n"; cp "$f" "$I/var/lib/dkms/nvidia/550.90.07/$k/x86_64/module/$n"
  touch "$I/lib/modules/$k/modules.dep" "$I/boot/vmlinuz-$k"
done
mkdir -p "$I/lib/modules/$KV/build"  # headers present: the plan would build for this kernel
cat > "$I/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/usr/local/bin:/usr/bin:/sbin:/bin  # for p2pnode's modinfo (busybox sh runs its own applets)
mount -t proc proc /proc; mount -t sysfs sysfs /sys; mount -t devtmpfs devtmpfs /dev
insmod /m/efivarfs.ko*; mount -t efivarfs efivarfs /sys/firmware/efi/efivars; mount -t securityfs securityfs /sys/kernel/security
boot=$(sed -n 's/.*p2p\.boot=\([^ ]*\).*/\1/p' /proc/cmdline)
echo "SB-BEGIN $boot"
echo "SB-LOCKDOWN $(cat /sys/kernel/security/lockdown)"
echo "SB-SIG_ENFORCE $(cat /sys/module/module/parameters/sig_enforce 2>/dev/null)"
p2pnode check --root / --profile /etc/p2pnode/profiles/sb.yaml --only secureboot.module_signing --json > /tmp/check.json 2>&1
echo "SB-CHECK $(tr -d '\n' < /tmp/check.json)"
p2pnode plan --root / --profile /etc/p2pnode/profiles/sb.yaml --json > /tmp/plan.json 2>&1
echo "SB-PLAN $(tr -d '\n' < /tmp/plan.json)"
out=$(/usr/local/bin/insmod /m/signed.ko* 2>&1); echo "SB-SIGNED rc=$? $out"
echo "SB-SIGNER $(/usr/local/bin/modinfo -F signer /m/signed.ko* 2>&1)"
grep -q '^nvidia ' /proc/modules && echo "SB-LOADED signed" && echo "SB-PROC $(head -1 /proc/driver/nvidia/version)"
out=$(/usr/local/bin/insmod /m/unsigned.ko 2>&1); echo "SB-UNSIGNED rc=$? $out"
dmesg | grep -iE 'lockdown|secure boot|module verification|Key was rejected|signature|Loaded X.509|MOK|nvidia' | sed 's/^/SB-KLOG /'
echo "SB-END $boot"
sync; poweroff -f
INIT
chmod +x "$I/init"
(cd "$I" && find . | cpio -o -H newc 2>/dev/null | gzip -1) > "$TMP/initrd.gz"

# The ESP, as a directory QEMU presents as a FAT disk: shim as the removable-media loader, Debian's
# signed GRUB beside it, its config, the signed kernel and the initramfs.
E=$TMP/esp
mkdir -p "$E/EFI/BOOT" "$E/EFI/debian"
cp "$ROOT/usr/lib/shim/shimx64.efi.signed" "$E/EFI/BOOT/BOOTX64.EFI"
cp "$ROOT/usr/lib/grub/x86_64-efi-signed/grubx64.efi.signed" "$E/EFI/BOOT/grubx64.efi"
cp "$ROOT/boot/vmlinuz-$KV" "$E/vmlinuz"
cp "$TMP/initrd.gz" "$E/initrd.gz"
for c in "$E/EFI/debian/grub.cfg" "$E/EFI/BOOT/grub.cfg"; do
  cat > "$c" <<'CFG'
set timeout=0
serial --unit=0 --speed=115200
terminal_input serial
terminal_output serial
search --no-floppy --file --set=root /vmlinuz
menuentry 'p2pnode secure boot test' {
  linux /vmlinuz console=ttyS0 panic=-1 quiet p2p.boot=BOOT
  initrd /initrd.gz
}
CFG
done
CODE=$ROOT/usr/share/OVMF/OVMF_CODE_4M.secboot.fd
VARS_MS=$ROOT/usr/share/OVMF/OVMF_VARS_4M.ms.fd
[ -f "$CODE" ] && [ -f "$VARS_MS" ] || die "no OVMF Secure Boot firmware in the root ($(ls "$ROOT/usr/share/OVMF" | tr '\n' ' '))"

sb_boot() {  # sb_boot NAME VARS: one boot, the console into $TMP/NAME.log
  local name=$1 vars=$2 t0=$SECONDS
  sed -i "s/p2p.boot=[A-Za-z0-9_]*/p2p.boot=$name/" "$E/EFI/debian/grub.cfg" "$E/EFI/BOOT/grub.cfg"
  cp "$vars" "$TMP/$name.vars.fd"
  timeout 600 qemu-system-x86_64 -machine q35,smm=on -accel tcg -m 1024 -nographic -no-reboot -net none \
    -global driver=cfi.pflash01,property=secure,value=on \
    -drive if=pflash,format=raw,unit=0,file="$CODE",readonly=on \
    -drive if=pflash,format=raw,unit=1,file="$TMP/$name.vars.fd" \
    -drive file=fat:"$E",format=raw,if=virtio,readonly=on </dev/null > "$TMP/$name.log" 2>&1
  echo "== boot '$name': $((SECONDS - t0)) s (QEMU exit $?)"
  grep -a '^SB-' "$TMP/$name.log" | tr -d '\r' | cut -c1-400 | sed 's/^/   /'
  grep -aq "^SB-END $name" "$TMP/$name.log" || { tail -40 "$TMP/$name.log"; fail "boot '$name' did not finish"; return 1; }
}
field() { grep -a "^SB-$2 " "$TMP/$1.log" | head -1 | tr -d '\r' | cut -d' ' -f2-; }

echo "== 1. Secure Boot on, DKMS's key not enrolled"
if sb_boot untrusted "$VARS_MS"; then
  field untrusted LOCKDOWN | grep -q '\[integrity\]' && pass "the kernel is locked down: $(field untrusted LOCKDOWN)" || fail "lockdown: $(field untrusted LOCKDOWN)"
  field untrusted CHECK | python3 -c 'import json,sys; f=json.loads(sys.stdin.read())["findings"][0]; print(f["summary"]); sys.exit(not (f["severity"]=="error" and f["observed"]["trust"]=="untrusted" and f["observed"]["secure_boot"] is True))' \
    > "$TMP/c1" 2>&1 && pass "check before the build: $(cat "$TMP/c1")" || fail "check on the Secure Boot node: $(cat "$TMP/c1") $(field untrusted CHECK | cut -c1-300)"
  field untrusted PLAN | python3 -c 'import json,sys; s=[s for s in json.loads(sys.stdin.read())["steps"] if s["action"]=="driver.module"]; print(s[0]["description"][:160] if s else "no driver.module step"); sys.exit(not (s and s[0]["description"].startswith("refused: Secure Boot is on")))' \
    > "$TMP/p1" 2>&1 && pass "plan refuses the build: $(cat "$TMP/p1")" || fail "plan on the Secure Boot node: $(cat "$TMP/p1")"
  field untrusted SIGNED | grep -q "Key was rejected by service" && pass "the kernel refuses the DKMS-signed module: $(field untrusted SIGNED)" ||
    fail "the signed module without its key enrolled: $(field untrusted SIGNED)"
  field untrusted UNSIGNED | grep -qiE "Key was rejected|not permitted|Operation not permitted" && pass "and the unsigned one: $(field untrusted UNSIGNED)" ||
    fail "the unsigned module: $(field untrusted UNSIGNED)"
  grep -aq '^SB-LOADED' "$TMP/untrusted.log" && fail "a module loaded with its key not enrolled"
fi

echo "== 2. DKMS's certificate enrolled as a Machine Owner Key"
openssl x509 -inform DER -in "$ROOT/var/lib/dkms/mok.pub" -out "$TMP/mok.pem" 2>/dev/null ||
  run_in openssl x509 -inform DER -in /var/lib/dkms/mok.pub -out /tmp/mok.pem && cp -f "$ROOT/tmp/mok.pem" "$TMP/mok.pem" 2>/dev/null
cp "$VARS_MS" "$ROOT/tmp/vars.fd"; cp "$TMP/mok.pem" "$ROOT/tmp/mok.pem"
run_in virt-fw-vars --input /tmp/vars.fd --output /tmp/vars-mok.fd --add-mok 605dab50-e046-4300-abb6-3dd810dd8b23 /tmp/mok.pem \
  > "$TMP/fwvars.log" 2>&1 || { cat "$TMP/fwvars.log"; die "virt-fw-vars --add-mok"; }
if sb_boot trusted "$ROOT/tmp/vars-mok.fd"; then
  field trusted CHECK | python3 -c 'import json,sys; f=json.loads(sys.stdin.read())["findings"][0]; print(f["summary"]); sys.exit(not (f["severity"]=="ok" and f["observed"]["trust"]=="trusted"))' \
    > "$TMP/c2" 2>&1 && pass "check: $(cat "$TMP/c2")" || fail "check with the key enrolled: $(cat "$TMP/c2")"
  grep -aq '^SB-LOADED signed' "$TMP/trusted.log" && pass "the module p2pnode built loads: $(field trusted PROC)" || fail "the signed module did not load: $(field trusted SIGNED)"
  [ "$(field trusted SIGNER)" = "DKMS module signing key" ] && pass "modinfo names its signer: $(field trusted SIGNER)" ||
    fail "modinfo's signer: '$(field trusted SIGNER)'"
  field trusted UNSIGNED | grep -qiE "Key was rejected|not permitted" && pass "an unsigned module is still refused" || fail "the unsigned module with the key enrolled: $(field trusted UNSIGNED)"
  field trusted PLAN | python3 -c 'import json,sys; s=[s for s in json.loads(sys.stdin.read())["steps"] if s["action"]=="driver.boot_guard"]; print(s[0]["description"] if s else "no driver.boot_guard step"); sys.exit(not (s and s[0]["description"].startswith("hold GRUB'"'"'s default on '"$KOLD"'") and "unsigned" in s[0]["description"]))' \
    > "$TMP/g2" 2>&1 && pass "the boot guard counts the unsigned module as none (modinfo): $(cat "$TMP/g2")" || fail "boot guard with an unsigned module: $(cat "$TMP/g2")"
fi

echo "figures: whole test $((SECONDS - t_start)) s"
finish
