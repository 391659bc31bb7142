#!/bin/bash
# The builtin patch io-memory-pfn compiled for real where it is meant to apply: kernels >= 6.10, which
# have no follow_pfn() (and 6.12 no exported follow_pte() either), so the 550.90.07-p2p tree's
# nv_follow_pfn() always fails and cudaHostRegisterIoMemory of an NVMe BAR cannot work (issue 13).
# Debian 12's own kernels are 6.1, so the newest linux-headers-6.12* of bookworm-backports is fetched
# into a private directory (apt-get download with its own lists; the host's apt sources and
# /lib/modules are not touched; cached in /var/cache/p2pnode-tests/backports-headers), unpacked with
# dpkg -x, and NVIDIA's conftest plus nvidia/os-mlock.o are built against it with the Kbuild call
# NVIDIA's Makefile makes. Checks: the conftest says neither follow_pfn nor follow_pte is there (the
# patched branch is the one compiled), the patch applies and os-mlock.o builds with it.
# Cost: about 45 s of CPU (the conftest), 16 MB downloaded once. heavy_cpu.
# Exit 77 without the trees, make/gcc-12/patch, or when Debian's archive cannot be reached.
# Usage: bash tests/dkms/test_io_memory_pfn_compiles.sh <path-to-p2pnode>
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
. tests/dkms/trees.sh
find_trees "$REPO"
for t in make patch dpkg apt-get x86_64-linux-gnu-gcc-12; do
  command -v $t >/dev/null || skip "$t is not installed"
done

CACHE=${P2PNODE_TEST_CACHE:-/var/cache/p2pnode-tests}/backports-headers
mkdir -p "$CACHE/lists/partial" "$CACHE/archives/partial" "$CACHE/debs"
echo "deb http://deb.debian.org/debian bookworm-backports main" > "$CACHE/sources.list"
APT=(-o Dir::Etc::SourceList="$CACHE/sources.list" -o Dir::Etc::SourceParts=/dev/null
     -o Dir::State::Lists="$CACHE/lists" -o Dir::Cache="$CACHE" -o Debug::NoLocking=1)
if ! apt-get "${APT[@]}" -qq update >"$CACHE/update.log" 2>&1; then
  ls "$CACHE"/debs/linux-headers-6.12*-amd64_*.deb >/dev/null 2>&1 ||
    skip "bookworm-backports cannot be reached and nothing is cached: $(tail -1 "$CACHE/update.log")"
fi
# The newest 6.12 generic amd64 headers and the two packages they need.
PKG=$(apt-cache "${APT[@]}" pkgnames linux-headers-6.12 2>/dev/null |
      grep -E '^linux-headers-6\.12\.[0-9]+\+deb12-amd64$' | sort -V | tail -1 || true)
if [ -n "$PKG" ]; then
  REL=${PKG#linux-headers-}; REL=${REL%-amd64}
  (cd "$CACHE/debs" && ls linux-headers-$REL-amd64_*.deb >/dev/null 2>&1 ||
     apt-get "${APT[@]}" -qq download "linux-headers-$REL-amd64" "linux-headers-$REL-common" "linux-kbuild-$REL" \
       >"$CACHE/download.log" 2>&1) || fail "apt-get download of linux-headers-$REL from bookworm-backports: $(tail -2 "$CACHE/download.log")"
else
  REL=$(ls "$CACHE"/debs/linux-headers-6.12*-amd64_*.deb 2>/dev/null | sed -E 's#.*/linux-headers-(.*)-amd64_.*#\1#' | sort -V | tail -1)
  [ -n "$REL" ] || skip "bookworm-backports lists no linux-headers-6.12*-amd64"
fi
echo "== kernel headers $REL-amd64 (bookworm-backports)"

TMP=$(mktemp -d /tmp/p2pnode-iomem.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
for f in "$CACHE"/debs/linux-headers-$REL-amd64_*.deb "$CACHE"/debs/linux-headers-$REL-common_*.deb \
         "$CACHE"/debs/linux-kbuild-${REL}_*.deb; do
  [ -f "$f" ] || fail "missing $f"
  dpkg -x "$f" "$TMP/root"
done
SRC=$TMP/root/usr/src/linux-headers-$REL-common
BLD=$TMP/root/usr/src/linux-headers-$REL-amd64
# Debian's per-flavour Makefile includes the common one by its absolute /usr/src path.
sed -i "s#include /usr/src/#include $TMP/root/usr/src/#" "$BLD/Makefile"

tar -xf "$TREES/ogkm-550.90.07-p2p.tar.xz" -C "$TMP"
dir=$(find "$TMP" -maxdepth 1 -mindepth 1 -type d -name 'open-gpu-kernel-modules*')
(cd "$dir" && patch -p1 -s < "$REPO/daemon/nvidia/patches/io-memory-pfn.patch") || fail "io-memory-pfn does not apply to 550.90.07-p2p"
t0=$SECONDS
if ! build_nv_object "$dir" "$SRC" "$BLD" nvidia/os-mlock.o "$TMP/make.log"; then
  grep -m3 "error:" "$TMP/make.log" >&2 || tail -20 "$TMP/make.log" >&2
  fail "os-mlock.o does not build with io-memory-pfn against $REL's headers"
fi
[ -s "$dir/kernel-open/nvidia/os-mlock.o" ] || fail "no os-mlock.o"
grep -q "^#undef NV_FOLLOW_PFN_PRESENT" "$dir/kernel-open/conftest/functions.h" ||
  fail "the conftest found follow_pfn on $REL: the patched branch was not the one compiled"
grep -q "^#define NV_IS_EXPORT_SYMBOL_PRESENT_follow_pte 0" "$dir/kernel-open/conftest/symbols.h" ||
  fail "the conftest found follow_pte exported on $REL: the patched branch was not the one compiled"
grep -q "p2pnode builtin patch io-memory-pfn" "$dir/kernel-open/nvidia/os-mlock.c" || fail "the patch is not in os-mlock.c"
echo "ok: $REL has neither follow_pfn nor an exported follow_pte; os-mlock.o built with the vm_pgoff fallback"
echo "PASS in $((SECONDS - t0)) s"
