# Sourced by the scripts that use the real NVIDIA trees (tests/dkms/test_builtin_*.sh,
# test_trees_612.sh, scripts/bench-dkms.sh). Needs skip() from the caller.

# find_trees REPO: sets TREES to the directory holding ogkm-550.90.07-p2p.tar.xz (P2PNODE_TREES, or
# shared/trees beside the checkout), or skips saying where it looked.
find_trees() {
  local repo=$1 d
  TREES=""
  for d in "${P2PNODE_TREES:-}" "$repo/../shared/trees" "$repo/../../shared/trees" /work/shared/trees; do
    [ -n "$d" ] && [ -f "$d/ogkm-550.90.07-p2p.tar.xz" ] && { TREES=$(readlink -f "$d"); return 0; }
  done
  skip "no shared/trees with ogkm-550.90.07-p2p.tar.xz (set P2PNODE_TREES)"
}

# build_nv_object TREE SRC BUILD OBJECT LOG: NVIDIA's conftest and one object of kernel-open/ with
# the Kbuild call NVIDIA's Makefile makes (SRC: the kernel source headers, BUILD: the configured
# output tree; the same directory on a plain kernel, -common and -amd64 on Debian).
build_nv_object() {
  local tree=$1 src=$2 bld=$3 obj=$4 log=$5
  make -C "$src" KBUILD_OUTPUT="$bld" M="$tree/kernel-open" ARCH=x86_64 \
    NV_KERNEL_SOURCES="$src" NV_KERNEL_OUTPUT="$bld" NV_KERNEL_MODULES=nvidia NV_SPECTRE_V2=0 \
    -j"$(nproc)" "$obj" > "$log" 2>&1
}
