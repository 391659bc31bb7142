#!/bin/bash
# The builtin patch pci-resize-resource-exclude-bars compiled for real: tinygrad's 550.90.07-p2p tree
# (shared/trees) with the patch, NVIDIA's conftest and nv-pci.o built with the Kbuild invocation
# NVIDIA's Makefile makes, against the newest installed kernel headers (Debian 12: 6.1.0-56, 6.1.192,
# where the unpatched tree fails with `too few arguments to function 'pci_resize_resource'`).
# Checks the conftest found the argument on these headers and nv-pci.o was built; only the one
# object, not the 5-minute src/ build. Cost: about 45 s of CPU (conftest ~40 s). heavy_cpu.
# Exit 77 without the trees, make/gcc, or kernel headers (none in /lib/modules/*/build).
# Usage: bash tests/dkms/test_builtin_patch_compiles.sh <path-to-p2pnode>
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
. tests/dkms/trees.sh
find_trees "$REPO"
require make gcc patch
K=""
for k in $(ls /lib/modules 2>/dev/null | sort -V -r); do
  [ -d "/lib/modules/$k/build" ] && { K=$k; break; }
done
[ -n "$K" ] || { echo "FAIL: no kernel headers in /lib/modules/*/build (linux-headers-amd64: scripts/install-deps.sh test)"; exit 1; }
SRC=/lib/modules/$K/source
[ -d "$SRC" ] || SRC=/lib/modules/$K/build

TMP=$(temp_dir patchbuild)
trap 'rm -rf "$TMP"' EXIT
tar -xf "$TREES/ogkm-550.90.07-p2p.tar.xz" -C "$TMP"
dir=$(find "$TMP" -maxdepth 1 -mindepth 1 -type d)
(cd "$dir" && patch -p1 -s < "$REPO/daemon/nvidia/patches/pci-resize-resource-exclude-bars.patch")
t0=$SECONDS
if ! build_nv_object "$dir" "$SRC" "/lib/modules/$K/build" nvidia/nv-pci.o "$TMP/make.log"; then
  grep -m3 "error:" "$TMP/make.log" >&2 || tail -20 "$TMP/make.log" >&2
  die "nv-pci.o does not build with the patch against $K's headers"
fi
[ -s "$dir/kernel-open/nvidia/nv-pci.o" ] || die "no nv-pci.o"
if grep -q "exclude_bars" "$SRC/include/linux/pci.h" "/lib/modules/$K/build/include/linux/pci.h" 2>/dev/null; then
  grep -q "^#define NV_PCI_RESIZE_RESOURCE_HAS_EXCLUDE_BARS_ARG" "$dir/kernel-open/conftest/types.h" ||
    die "$K's pci.h has exclude_bars but the conftest did not find it"
  echo "ok: $K has the exclude_bars argument; the conftest found it and nv-pci.o built with the 4-argument call"
else
  grep -q "^#undef NV_PCI_RESIZE_RESOURCE_HAS_EXCLUDE_BARS_ARG" "$dir/kernel-open/conftest/types.h" ||
    die "$K's pci.h has no exclude_bars but the conftest says it does"
  echo "ok: $K has no exclude_bars argument; nv-pci.o built with the 3-argument call"
fi
echo "PASS in $((SECONDS - t0)) s"
