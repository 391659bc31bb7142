#!/bin/sh
# p2pnode's kernel-install hook: /etc/kernel/postinst.d/z50-p2pnode, written by `p2pnode apply`
# (driver.kernel_hook) and shipped by the package. A kernel package's postinst runs every script
# there as `<script> <kernel version> <image path>`, DKMS's own hook (dkms, autoinstall) first.
# It builds and installs the profile's module for the new kernel through DKMS when it is missing
# (`p2pnode apply --only driver.module`, which names a known breakage and its fix when the build
# fails), and gdrcopy's gdrdrv where the profile has a gdrcopy section (gdrcopy.module); when the
# newest kernel still lacks either module, holds GRUB's default on the newest kernel
# that has it (driver.boot_guard: this runs before Debian's zz-update-grub, which then keeps
# that default), and lifts the hold once the newest has it; prints driver.kernels (and
# gdrcopy.kernels) for every kernel, and asks the daemon to reconcile now (SIGHUP) so
# p2pnode_kernel_module_installed reports the new kernel without waiting for the schedule.
# It never fails the kernel's installation: a failed build is reported here, by `p2pnode check`
# and by the daemon, and the previous module stays installed.
# Its outcome also goes to the journal (logger, tag p2pnode-kernel-hook), where an operator who did
# not watch apt finds it.
# Environment (tests only): P2PNODE (the binary), P2PNODE_HOOK_ARGS (e.g. --root DIR --profile
# FILE), SYSTEMCTL (the systemctl to signal the daemon with), LOGGER (the logger to write the journal
# with). The installed hook (under /etc/kernel) ignores them: it runs as root from whatever runs apt,
# whose environment must not choose the programs it runs; a copy elsewhere (a test's scratch root)
# takes them.
set -u
version=${1:-}
if [ -z "$version" ]; then
  echo "p2pnode kernel hook: called without a kernel version; nothing to do" >&2
  exit 0
fi
case "$(readlink -f "$0" 2>/dev/null || echo "$0")" in
  /etc/kernel/*) P2PNODE=/usr/bin/p2pnode SYSTEMCTL=systemctl LOGGER=logger P2PNODE_HOOK_ARGS= ;;
esac
P2PNODE=${P2PNODE:-/usr/bin/p2pnode}
SYSTEMCTL=${SYSTEMCTL:-systemctl}
if [ ! -x "$P2PNODE" ]; then
  echo "p2pnode kernel hook: $P2PNODE is not installed; nothing to do for $version" >&2
  exit 0
fi
echo "p2pnode kernel hook: kernel $version installed; building the profile's module where it is missing"
# shellcheck disable=SC2086
"$P2PNODE" apply --only driver.module --only gdrcopy.module --only driver.boot_guard ${P2PNODE_HOOK_ARGS:-}
rc=$?
# shellcheck disable=SC2086
"$P2PNODE" check --only driver.kernels --only gdrcopy.kernels ${P2PNODE_HOOK_ARGS:-}
journal() {  # journal PRIORITY MESSAGE
  command -v "${LOGGER:-logger}" >/dev/null 2>&1 && "${LOGGER:-logger}" -t p2pnode-kernel-hook -p "daemon.$1" -- "$2" 2>/dev/null
  return 0
}
if [ $rc -ne 0 ]; then
  msg="the module is NOT installed for every kernel; do not reboot into $version until it is (driver.boot_guard says where GRUB was held)"
  echo "p2pnode kernel hook: $msg (see above)" >&2
  journal err "kernel $version: $msg; \`p2pnode check --only driver.kernels --only driver.boot_guard\` says why"
else
  journal info "kernel $version: the profile's module is built and installed for it"
fi
if "$SYSTEMCTL" is-active --quiet p2pnode.service 2>/dev/null; then
  "$SYSTEMCTL" kill --signal=HUP p2pnode.service || echo "p2pnode kernel hook: could not signal p2pnode.service" >&2
fi
exit 0
