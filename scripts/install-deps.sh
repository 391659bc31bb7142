#!/bin/bash
# Installs the Debian 12 packages p2pnode builds and tests with; does nothing when all are present.
# Usage: scripts/install-deps.sh [build|deb|test]
#   deb adds the Debian packaging tools; test adds those, QEMU, DKMS, promtool, debootstrap,
#   Ansible with its collections (the chroot connection) and friends.
set -euo pipefail
want=(cmake make g++ pkg-config libyaml-cpp-dev nlohmann-json3-dev libmicrohttpd-dev libcpp-httplib-dev
      prometheus-cpp-dev libsystemd-dev libgtest-dev libgmock-dev libcli11-dev libfmt-dev
      libssl-dev python3)
if [ "${1:-build}" = deb ] || [ "${1:-build}" = test ]; then
  want+=(debhelper dpkg-dev fakeroot lintian)
fi
if [ "${1:-build}" = test ]; then
  want+=(clang libclang-rt-14-dev python3-jsonschema python3-yaml jq
         qemu-system-x86 linux-image-amd64 busybox-static kmod cpio dkms
         prometheus prometheus-node-exporter systemd wrk ansible-core openssl
         debootstrap ansible
         patch xz-utils linux-headers-amd64)  # builtin DKMS patches against the real trees and headers (tests/dkms/test_builtin_patch*.sh)
fi
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages: ${missing[*]}; run as root or install them" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
