#!/bin/bash
# The builtin DKMS patches (daemon/nvidia/patches/, compiled into p2pnode) against the real trees
# they are for: both P2P branches in shared/trees (550.90.07-p2p, 565.57.01-p2p) take each patch
# with `patch -p1 --dry-run` (DKMS applies them with -p1), and applied for real the result holds
# what the patch promises (the conftest, the #if'd 4-argument call, the vm_pgoff fallback, the
# peer-address alignment check that reports instead of refusing). And `p2pnode check` on the AM5
# fixture with each real tree staged in /usr/src tells from its source, before and after the
# peer-address-alignment patch, whether the tree refuses an unaligned peer address.
# Cost: unpacking the two trees, about 10 s. Needs the trees (P2PNODE_TREES or ../shared/trees
# beside the checkout); exit 77 when they are absent.
# Usage: bash tests/dkms/test_builtin_patches.sh <path-to-p2pnode>
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"
set -euo pipefail
cd "$(dirname "$0")/../.."

. tests/dkms/trees.sh
find_trees "$PWD"
require patch

TMP=$(temp_dir patches)
trap 'rm -rf "$TMP"' EXIT
PATCHES=daemon/nvidia/patches
P2PNODE=$(realpath "${1:?usage: $0 <path-to-p2pnode>}")
KB=src/nvidia/src/kernel/gpu/bus/arch/hopper/kern_bus_gh100.c
checks=0
for tree in ogkm-550.90.07-p2p ogkm-565.57.01-p2p; do
  [ -f "$TREES/$tree.tar.xz" ] || die "$TREES/$tree.tar.xz is missing"
  tar -xf "$TREES/$tree.tar.xz" -C "$TMP"
  dir=$(find "$TMP" -maxdepth 1 -mindepth 1 -type d -name "*${tree#ogkm-}")
  # Before any patch: the real source refuses (p2pnode reads it where apply stages it).
  ver=${tree#ogkm-}; ver=${ver%-p2p}
  align_check() {
    local root="$TMP/root-$ver"
    rm -rf "$root" && cp -a tests/fixtures/am5-2x5090 "$root"
    mkdir -p "$root/usr/src/nvidia-p2p-$ver/$(dirname "$KB")"
    cp "$dir/$KB" "$root/usr/src/nvidia-p2p-$ver/$KB"
    sed "s/595.58.03/$ver/" tests/profiles/two-5090-am5.yaml > "$TMP/profile.yaml"
    "$P2PNODE" check --root "$root" --profile "$TMP/profile.yaml" --only platform.peer_alignment --json |
      python3 -c 'import json,sys; f=json.load(sys.stdin)["findings"][0]; print(f["severity"], f["observed"]["demands_512mib_alignment"], f["summary"])'
  }
  out=$(align_check)
  case "$out" in "warning True /usr/src/nvidia-p2p-$ver refuses peer DMA addresses not aligned at 512 MiB"*) ;;
    *) fail "$tree unpatched: expected the refusal to be found in its source, got: $out" ;; esac
  echo "ok: p2pnode reads the 512 MiB refusal in $tree's source"
  for p in pci-resize-resource-exclude-bars io-memory-pfn peer-address-alignment; do
    out=$(cd "$dir" && patch -p1 --dry-run < "$OLDPWD/$PATCHES/$p.patch" 2>&1) || die "$p does not apply to $tree: $out"
    echo "$out" | grep -qi "fail\|reject" && die "$p applies to $tree only in part: $out"
    (cd "$dir" && patch -p1 -s < "$OLDPWD/$PATCHES/$p.patch") || die "$p: applying for real to $tree failed"
    echo "ok: $p applies to $tree"
    checks=$((checks + 1))
  done
  grep -q 'pci_resize_resource(pci_dev, NV_GPU_BAR1, requested_size, 0);' "$dir/kernel-open/nvidia/nv-pci.c" ||
    die "$tree: the 4-argument call is not in nv-pci.c"
  grep -q '^NV_CONFTEST_TYPE_COMPILE_TESTS += pci_resize_resource_has_exclude_bars_arg$' "$dir/kernel-open/nvidia/nvidia.Kbuild" ||
    die "$tree: the conftest is not listed in nvidia.Kbuild"
  grep -q '^        pci_resize_resource_has_exclude_bars_arg)$' "$dir/kernel-open/conftest.sh" || die "$tree: no conftest case"
  bash -n "$dir/kernel-open/conftest.sh" || die "$tree: conftest.sh is no longer valid shell"
  grep -q 'vma->vm_pgoff + ((address - vma->vm_start) >> PAGE_SHIFT)' "$dir/kernel-open/nvidia/os-mlock.c" ||
    die "$tree: the vm_pgoff fallback is not in os-mlock.c"
  grep -q 'NV_PRINTF(LEVEL_WARNING, "The peer DMA address 0x%llx is not aligned at 0x%llx (accepted)' "$dir/$KB" ||
    die "$tree: the alignment check does not report the accepted address"
  sed -n '/NV_IS_ALIGNED64(peerDmaAddr, RM_PAGE_SIZE_512M)/,/^    }/p' "$dir/$KB" | grep -q 'return' &&
    die "$tree: the alignment check still returns an error"
  out=$(align_check)
  case "$out" in "ok False /usr/src/nvidia-p2p-$ver accepts peer DMA addresses"*) ;;
    *) fail "$tree patched: expected p2pnode to read the source as accepting, got: $out" ;; esac
  echo "ok: after peer-address-alignment p2pnode reads $tree as accepting unaligned peer addresses"
  checks=$((checks + 1))
  # Applying twice must fail (DKMS would report exit 6): the patch is not silently a no-op.
  if (cd "$dir" && patch -p1 --dry-run -N < "$OLDPWD/$PATCHES/io-memory-pfn.patch" >/dev/null 2>&1); then
    die "$tree: io-memory-pfn applies a second time"
  fi
  rm -rf "$dir"
done
echo "PASS: $checks patch/tree pairs"
