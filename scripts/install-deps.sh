#!/bin/bash
# Installs the Debian packages p2pnode builds and tests with, on Debian 12 (bookworm) or Debian 13
# (trixie): the same names on both; does nothing when all are present.
# Usage: scripts/install-deps.sh [build|deb|test] [--list]   (--list: print the packages, install nothing)
#   deb adds the Debian packaging tools; test adds those, QEMU, DKMS, promtool, debootstrap,
#   Ansible with its collections (the chroot connection), ansible-lint, Slurm with munge, Alertmanager
#   and friends.
set -euo pipefail
want=(cmake make g++ pkg-config libyaml-cpp-dev nlohmann-json3-dev libmicrohttpd-dev libcpp-httplib-dev
      prometheus-cpp-dev libsystemd-dev libgtest-dev libgmock-dev libcli11-dev libfmt-dev
      libssl-dev liblzma-dev libzstd-dev python3)
# systemd.pc, which says where units go: in systemd itself on Debian 12, in systemd-dev from 13 on.
if apt-cache show systemd-dev >/dev/null 2>&1; then want+=(systemd-dev); else want+=(systemd); fi
if [ "${1:-build}" = deb ] || [ "${1:-build}" = test ]; then
  want+=(build-essential debhelper dpkg-dev fakeroot lintian)
fi
if [ "${1:-build}" = test ]; then
  want+=(clang libclang-rt-dev python3-jsonschema python3-yaml jq
         qemu-system-x86 linux-image-amd64 busybox-static kmod cpio dkms
         prometheus prometheus-node-exporter systemd wrk ansible-core openssl
         debootstrap ansible ansible-lint
         python3-matplotlib  # scripts/render_dashboards.py (docs/images; tests/grafana/test_dashboard.sh draws with it)
         # The store beyond one Prometheus, its rule engine (vmalert) and Alertmanager (tests/fleet/test_victoriametrics.sh).
         victoria-metrics
         patch xz-utils linux-headers-amd64  # builtin DKMS patches against the real trees and headers (tests/dkms/test_builtin_patch*.sh)
         # What the test scripts run that a minimal Debian lacks (tests/deps/programs.py checks the
         # whole list against the scripts): curl (the API tests), GNU time (peak RSS in the DKMS
         # benchmark), mkfs.ext4 (the node VM's disk), git (git: artifacts), ssh (the node VM and
         # Ansible), file (the VM harness's busybox check), ip (network namespaces), ps and pgrep.
         curl time e2fsprogs git openssh-client file iproute2 procps
         # Slurm's side (tests/slurm): the real controller, node daemon, client commands and munge;
         # amtool and Alertmanager for the example routing and inhibition (tests/prometheus).
         slurmctld slurmd slurm-client munge prometheus-alertmanager)
fi
# Node.js and npm run the OpenAPI validator and Grafana's dashboard schema (tests/lib/npm.sh); a
# machine that has them from elsewhere (NodeSource's nodejs carries its own npm) keeps its own.
if [ "${1:-build}" = test ] && { ! command -v npm >/dev/null || [ "${2:-}" = --list ]; }; then want+=(nodejs npm); fi
if [ "${2:-}" = --list ]; then printf '%s\n' "${want[@]}"; exit 0; fi

# A second kernel's headers of the distribution's own series (Debian 12: linux-headers-6.1.0-N-amd64,
# Debian 13: linux-headers-6.12.N+deb13-amd64), for the tests that build for every kernel
# (tests/dkms/test_every_kernel.sh) and reuse the NVIDIA core for a second one (test_real_tree.sh).
second_headers() {
  local n=0 d pkg try series
  for d in /lib/modules/*/build; do [ -d "$d" ] && n=$((n + 1)); done
  [ "$n" -ge 2 ] && return 0
  for try in 1 2; do
    # The series of the default headers: 6.1.0- on Debian 12, 6.12. on Debian 13.
    series=$(apt-cache depends linux-headers-amd64 2>/dev/null |
             sed -n 's/^ *Depends: linux-headers-\(6\.1\.0-\|[0-9]*\.[0-9]*\.\).*-amd64$/\1/p' | head -1)
    for pkg in $(apt-cache pkgnames "linux-headers-$series" 2>/dev/null |
                 grep -E '^linux-headers-[0-9][^ ]*-amd64$' | grep -vE -- '-(cloud|rt)-amd64$' | sort -V -r); do
      dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" && continue
      echo "install-deps: installing $pkg (a second kernel's headers for the DKMS tests)" >&2
      apt-get install -y -qq --no-install-recommends "$pkg" >/dev/null 2>&1 && return 0
    done
    if [ "$try" = 1 ]; then apt-get update -qq || echo "install-deps: apt-get update failed" >&2; fi
  done
  echo "install-deps: no second linux-headers-$series*-amd64 could be installed; the second-kernel tests say so" >&2
}

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: missing packages: ${missing[*]}; run as root or install them" >&2
    exit 1
  fi
  echo "install-deps: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if [ "${1:-build}" = test ] && [ "$(id -u)" -eq 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  second_headers
fi
exit 0
