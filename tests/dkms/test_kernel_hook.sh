#!/bin/bash
# The kernel-install hook, run as a kernel package's postinst runs
# /etc/kernel/postinst.d/*: `z50-p2pnode <version> <image>`. In a scratch root with a DKMS stand-in
# on PATH (it writes what dkms build/install write, and fails the way the real build of
# 550.90.07-p2p fails on 6.1.192 headers for the kernels named in FAKE_DKMS_FAIL, with the
# recorded make.log) and a systemctl stand-in that records the signal:
#  1. `p2pnode apply` installs the module for the one kernel there is and writes the hook (driver.kernel_hook);
#  2. a new kernel appears (/lib/modules/<k> with headers, /boot/vmlinuz-<k>) and the hook runs:
#     DKMS builds for it, driver.kernels passes for both kernels, the daemon gets SIGHUP;
#  3. a kernel whose build fails: the hook still exits 0 (the kernel's installation goes on),
#     says not to reboot into it, and driver.kernels names the kernel, the compiler's first error
#     and the known breakage with its builtin fix; the installed kernels keep their module;
#  4. the next apply (as at boot) does not try that build again with the same inputs; new headers do.
# Cost: about 3 s (no compiler runs). Usage: bash tests/dkms/test_kernel_hook.sh <path-to-p2pnode>
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"
set -euo pipefail
P2PNODE=$(readlink -f "${1:?usage: $0 <path-to-p2pnode>}")
cd "$(dirname "$0")/../.."
REPO=$PWD
[ -x "$P2PNODE" ] || { echo "SKIP: no p2pnode binary at $P2PNODE"; exit 77; }
require jq

TMP=$(temp_dir hook)
trap 'rm -rf "$TMP"' EXIT
ROOT=$TMP/root
BIN=$TMP/bin
mkdir -p "$ROOT/proc/sys/kernel" "$ROOT/srv/src" "$ROOT/etc" "$BIN"
echo 6.1.0-56-amd64 > "$ROOT/proc/sys/kernel/osrelease"
add_kernel() { mkdir -p "$ROOT/lib/modules/$1/kernel" "$ROOT/lib/modules/$1/build" "$ROOT/boot"; : > "$ROOT/boot/vmlinuz-$1"; }
add_kernel 6.1.0-56-amd64
printf 'obj-m += p2phook.o\n' > "$ROOT/srv/src/Makefile"
printf 'int x;\n' > "$ROOT/srv/src/p2phook.c"
sha=$(cd "$ROOT/srv/src" && find . -type f ! -path './.git/*' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
cat > "$TMP/profile.yaml" <<YAML
apiVersion: p2pnode/v1
kind: NodeProfile
metadata:
  name: hook-test
driver:
  version: 550.90.07
  kernel_module:
    name: p2phook
    source:
      path: /srv/src
      sha256: $sha
YAML

# The DKMS stand-in: status, add, build, install, remove as DKMS 3 prints and lays them out.
cat > "$BIN/dkms" <<'SH'
#!/bin/bash
echo "dkms $*" >> "$FAKE_ROOT/dkms.calls"
cmd=$1; shift
m=""; v=""; k=""
while [ $# -gt 0 ]; do case $1 in -m) m=$2; shift 2;; -v) v=$2; shift 2;; -k) k=$2; shift 2;; *) shift;; esac; done
case $cmd in
  status)
    for d in "$FAKE_ROOT"/var/lib/dkms/"$m"/*/; do
      [ -d "$d" ] || continue; ver=$(basename "$d"); any=0
      for kd in "$d"*/x86_64; do
        [ -d "$kd" ] || continue; kk=$(basename "$(dirname "$kd")")
        [ -f "$FAKE_ROOT/lib/modules/$kk/updates/dkms/$m.ko" ] && { echo "$m/$ver, $kk, x86_64: installed"; any=1; }
      done
      [ $any = 1 ] || echo "$m/$ver: added"
    done ;;
  add) mkdir -p "$FAKE_ROOT/var/lib/dkms/$m/$v/source"; echo "Creating symlink /var/lib/dkms/$m/$v/source" ;;
  build)
    mkdir -p "$FAKE_ROOT/var/lib/dkms/$m/$v/build"
    if [[ " ${FAKE_DKMS_FAIL:-} " == *" $k "* ]]; then
      cp "$FAKE_MAKE_LOG" "$FAKE_ROOT/var/lib/dkms/$m/$v/build/make.log"
      echo "Error! Bad return status for module build on kernel: $k (x86_64)" >&2
      exit 10
    fi
    echo "  CC [M]  p2phook.o" > "$FAKE_ROOT/var/lib/dkms/$m/$v/build/make.log"
    mkdir -p "$FAKE_ROOT/var/lib/dkms/$m/$v/$k/x86_64/module"; echo ko > "$FAKE_ROOT/var/lib/dkms/$m/$v/$k/x86_64/module/$m.ko" ;;
  install)
    mkdir -p "$FAKE_ROOT/lib/modules/$k/updates/dkms"; cp "$FAKE_ROOT/var/lib/dkms/$m/$v/$k/x86_64/module/$m.ko" "$FAKE_ROOT/lib/modules/$k/updates/dkms/" ;;
  remove) rm -rf "${FAKE_ROOT:?}/var/lib/dkms/$m/$v" ;;
esac
SH
cat > "$BIN/systemctl" <<'SH'
#!/bin/bash
echo "systemctl $*" >> "$FAKE_ROOT/systemctl.calls"
exit 0
SH
cat > "$BIN/logger" <<'SH'
#!/bin/bash
echo "logger $*" >> "$FAKE_ROOT/logger.calls"
SH
chmod +x "$BIN/dkms" "$BIN/systemctl" "$BIN/logger"
export PATH=$BIN:$PATH FAKE_ROOT=$ROOT FAKE_MAKE_LOG=$REPO/tests/fixtures/make-logs/550.90.07-p2p-6.1.0-56-amd64.make.log

# 1. apply: module for 6.1.0-56, and the hook.
"$P2PNODE" apply --root "$ROOT" --profile "$TMP/profile.yaml" > "$TMP/apply.out" 2>&1 || { cat "$TMP/apply.out"; die "the first apply failed"; }
HOOK=$ROOT/etc/kernel/postinst.d/z50-p2pnode
[ -x "$HOOK" ] || { cat "$TMP/apply.out"; die "apply did not write an executable $HOOK"; }
cmp -s "$HOOK" "$REPO/daemon/lifecycle/kernel-postinst.sh" || die "the hook apply wrote is not daemon/lifecycle/kernel-postinst.sh"
# The same hook for the headers' postinst (dpkg may configure the image before its headers).
cmp -s "$ROOT/etc/kernel/header_postinst.d/z50-p2pnode" "$HOOK" || die "apply did not write the same hook to /etc/kernel/header_postinst.d"
[ -x "$ROOT/etc/kernel/header_postinst.d/z50-p2pnode" ] || die "the headers' hook is not executable"
[ -f "$ROOT/lib/modules/6.1.0-56-amd64/updates/dkms/p2phook.ko" ] || die "the module was not installed for 6.1.0-56-amd64"
echo "ok: apply installed the module and the hook"

export P2PNODE P2PNODE_HOOK_ARGS="--root $ROOT --profile $TMP/profile.yaml" SYSTEMCTL=$BIN/systemctl LOGGER=$BIN/logger
# 2. A new kernel, as its package's postinst would call the hook.
add_kernel 6.1.0-57-amd64
: > "$ROOT/dkms.calls"
"$HOOK" 6.1.0-57-amd64 /boot/vmlinuz-6.1.0-57-amd64 > "$TMP/hook.out" 2>&1 || { cat "$TMP/hook.out"; die "the hook exited non-zero"; }
grep -q "^dkms build -m p2phook -v 550.90.07 -k 6.1.0-57-amd64" "$ROOT/dkms.calls" || { cat "$TMP/hook.out" "$ROOT/dkms.calls"; die "no dkms build for the new kernel"; }
if grep -q "^dkms build .*-k 6.1.0-56-amd64" "$ROOT/dkms.calls"; then die "the hook rebuilt the kernel that already had the module"; fi
grep -q "ok  *driver.kernels  *6.1.0-57-amd64 .*is built and installed by DKMS for 6.1.0-57-amd64 (next boot)" "$TMP/hook.out" || { cat "$TMP/hook.out"; die "driver.kernels does not pass for the new kernel"; }
grep -q "ok  *driver.kernels  *6.1.0-56-amd64" "$TMP/hook.out" || die "driver.kernels does not pass for the old kernel"
grep -q "^systemctl kill --signal=HUP p2pnode.service" "$ROOT/systemctl.calls" || die "the daemon was not signalled"
echo "ok: the hook built for 6.1.0-57-amd64, driver.kernels passes, the daemon got SIGHUP"

# 3. A kernel whose build fails.
add_kernel 6.1.0-58-amd64
: > "$ROOT/systemctl.calls"
FAKE_DKMS_FAIL=6.1.0-58-amd64 "$HOOK" 6.1.0-58-amd64 /boot/vmlinuz-6.1.0-58-amd64 > "$TMP/hook2.out" 2>&1 || { cat "$TMP/hook2.out"; die "the hook failed the kernel's installation"; }
grep -q "do not reboot into 6.1.0-58-amd64" "$TMP/hook2.out" || { cat "$TMP/hook2.out"; die "no warning not to reboot"; }
grep -q "^logger -t p2pnode-kernel-hook -p daemon.err -- kernel 6.1.0-58-amd64: the module is NOT installed" "$ROOT/logger.calls" ||
  { cat "$ROOT/logger.calls"; die "the failure was not written to the journal (logger)"; }
# This root has no GRUB: the boot guard says it could not hold the default, and why.
grep -q "driver.boot_guard  grub  holding GRUB on .*: no /boot/grub/grub.cfg" "$TMP/hook2.out" || { cat "$TMP/hook2.out"; die "the boot guard's outcome is not in the hook's output"; }
grep -q "ERROR  *driver.kernels  *6.1.0-58-amd64 .*its DKMS build failed: .*nv-pci.c:234:9: error: too few arguments" "$TMP/hook2.out" ||
  { cat "$TMP/hook2.out"; die "driver.kernels does not name the kernel and the compiler's error"; }
rc=0; "$P2PNODE" check --only driver.kernels --json $P2PNODE_HOOK_ARGS > "$TMP/check.json" || rc=$?
[ "$rc" = 1 ] || die "check with a kernel whose build failed exited $rc, expected 1 (errors found)"
jq -e '.findings[] | select(.subject == "6.1.0-58-amd64") | .remediation | test("known breakage pci-resize-resource-exclude-bars.*add \\{builtin: pci-resize-resource-exclude-bars\\}")' "$TMP/check.json" >/dev/null ||
  { jq '.findings' "$TMP/check.json"; die "driver.kernels does not name the known breakage and its builtin fix"; }
[ -f "$ROOT/lib/modules/6.1.0-57-amd64/updates/dkms/p2phook.ko" ] || die "the failed build took the installed module away"
grep -q "^systemctl kill --signal=HUP p2pnode.service" "$ROOT/systemctl.calls" || die "the daemon was not signalled after the failure"
echo "ok: a failed build is reported by the hook and driver.kernels, with the breakage and its fix; nothing installed was lost"
# 4. The boot-time apply with nothing changed: the failed build is not tried again (with the real
#    tree that would be minutes on every boot), and the step still fails with why; new headers retry it.
: > "$ROOT/dkms.calls"
rc=0; FAKE_DKMS_FAIL=6.1.0-58-amd64 "$P2PNODE" apply --once --only driver.module $P2PNODE_HOOK_ARGS > "$TMP/apply2.out" 2>&1 || rc=$?
[ "$rc" = 1 ] || { cat "$TMP/apply2.out"; die "apply with a kernel whose build failed exited $rc, expected 1"; }
if grep -q "^dkms build .*-k 6.1.0-58-amd64" "$ROOT/dkms.calls"; then die "the failed build was tried again with the same source and headers"; fi
grep -q "build for 6.1.0-58-amd64 not retried: it failed with the same source, patches and headers" "$TMP/apply2.out" ||
  { cat "$TMP/apply2.out"; die "apply does not say why it did not build for 6.1.0-58-amd64"; }
mkdir -p "$ROOT/lib/modules/6.1.0-58-amd64/build/include/generated"
echo '#define CONFIG_FIXED 1' > "$ROOT/lib/modules/6.1.0-58-amd64/build/include/generated/autoconf.h"
"$HOOK" 6.1.0-58-amd64 /boot/vmlinuz-6.1.0-58-amd64 > "$TMP/hook3.out" 2>&1 || { cat "$TMP/hook3.out"; die "the hook failed with fixed headers"; }
grep -q "^dkms build -m p2phook -v 550.90.07 -k 6.1.0-58-amd64" "$ROOT/dkms.calls" || { cat "$TMP/hook3.out"; die "new headers did not retry the build"; }
grep -q "ok  *driver.kernels  *6.1.0-58-amd64" "$TMP/hook3.out" || { cat "$TMP/hook3.out"; die "driver.kernels does not pass once the headers are fixed"; }
echo "ok: a failed build is not retried until its inputs change; new headers build it"
# 5. Installed under /etc/kernel, the hook takes no program from the environment (apt's caller
#    chooses that): in a private mount namespace, the hook at /etc/kernel/postinst.d with P2PNODE,
#    SYSTEMCTL and LOGGER pointing at a planted program; /usr/bin/p2pnode is a stub there (bound over
#    the real one if this machine has it), so nothing of this machine changes.
cat > "$BIN/planted" <<'SH'
#!/bin/sh
echo "PLANTED RAN: $*"
SH
printf '#!/bin/sh\necho "stub p2pnode: $*"\n' > "$TMP/stub-p2pnode"
chmod +x "$BIN/planted" "$TMP/stub-p2pnode"
out=$(P2PNODE=$BIN/planted SYSTEMCTL=$BIN/planted LOGGER=$BIN/planted P2PNODE_HOOK_ARGS="--root /nonexistent" \
  unshare -m --propagation private sh -c '
    mount -t tmpfs hook /etc/kernel && mkdir -p /etc/kernel/postinst.d && cp "$1" /etc/kernel/postinst.d/z50-p2pnode || exit 90
    if [ -e /usr/bin/p2pnode ]; then mount --bind "$2" /usr/bin/p2pnode || exit 91; fi
    /etc/kernel/postinst.d/z50-p2pnode 6.1.0-57-amd64 /boot/vmlinuz-6.1.0-57-amd64' hook "$HOOK" "$TMP/stub-p2pnode" 2>&1) ||
  { echo "$out"; die "the installed hook exited non-zero"; }
case "$out" in *"PLANTED RAN"*) echo "$out"; die "the installed hook ran a program named by the environment" ;; esac
echo "$out" | grep -qE "stub p2pnode: apply --only driver.module|/usr/bin/p2pnode is not installed" ||
  { echo "$out"; die "the installed hook did not use /usr/bin/p2pnode"; }
case "$out" in *"--root /nonexistent"*) echo "$out"; die "the installed hook took P2PNODE_HOOK_ARGS from the environment" ;; esac
echo "ok: the hook installed under /etc/kernel ignores P2PNODE, SYSTEMCTL, LOGGER and P2PNODE_HOOK_ARGS"
echo "PASS"
