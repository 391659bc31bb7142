# Sourced by the tests that need p2pnode built for a Debian release other than this machine's
# (tests/dist/test_release_build.sh makes it, the package, node and DKMS tests of that release use
# it). The release's build root (debootstrap minbase + what scripts/install-deps.sh deb installs
# there, run inside the root as a new user would) is cached as $P2PNODE_TEST_CACHE/SUITE-build.tar.
here_dist=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here_dist/../lib/debian_root.sh"

# _build_root DIR: the release's minbase root with the build and packaging dependencies.
_build_root() {
  local base
  base=$(_debian_root_tarball "$DEBIAN_SUITE-minbase" _debootstrap_minbase) || return 1
  mkdir -p "$1/tmp/deps" && tar -C "$1" -xf "$base"
  cp /etc/resolv.conf "$1/etc/resolv.conf"
  cp "$here_dist/../../scripts/install-deps.sh" "$1/tmp/deps/"
  chroot "$1" /tmp/deps/install-deps.sh deb > "$1.deps.log" 2>&1 || { tail -30 "$1.deps.log"; return 1; }
  rm -rf "$1/tmp/deps" "$1.deps.log"
  chroot "$1" apt-get clean
}

# in_root ROOT CMD...: CMD in a chroot with /proc and /dev, in a private mount namespace (the
# mounts end with the command; nothing is left mounted on the host).
in_root() {
  local r=$1; shift
  unshare -m --propagation private bash -c 'r=$1; shift; mount -t proc proc "$r/proc" && mount --bind /dev "$r/dev" &&
    exec chroot "$r" "$@"' in_root "$r" "$@"
}

# release_dir BUILD SUITE: where the release's programs and package go (BUILD/dist/SUITE).
release_dir() { echo "$1/dist/$2"; }

# source_stamp SRC: a hash of the source as release_build copies it (what a build in OUT was made from).
source_stamp() {
  tar -C "$1" --exclude='./build*' --exclude=./.git --exclude=./out --sort=name --mtime=@0 --owner=0 --group=0 \
    --numeric-owner -cf - . | sha256sum | cut -d' ' -f1
}

# release_build SRC OUT: p2pnode built for DEBIAN_SUITE in a fresh copy of its build root, with
# warnings as errors (that release's compiler and libraries), then its package (scripts/build-deb.sh
# in the root) and lintian's report on it by that release's lintian. OUT gets p2pnode,
# p2pnode-serve, p2pnode_<version>_<arch>.deb, lintian.txt and build.log.
release_build() {
  local src=$1 out=$2 tar root rc=0
  tar=$(_debian_root_tarball "$DEBIAN_SUITE-build" _build_root) || return 1
  rm -rf "$out"; mkdir -p "$out"
  root=$(mktemp -d "${TMPDIR:-/tmp}/p2pnode-release-$DEBIAN_SUITE.XXXXXX")
  tar -C "$root" -xf "$tar" || { rm -rf "$root"; return 1; }
  mkdir -p "$root/src"
  tar -C "$src" --exclude='./build*' --exclude=./.git --exclude=./out -cf - . | tar -C "$root/src" -xf -
  # Release (-O2, no debug info) as in make test; -O2 keeps the warnings that need the optimiser.
  in_root "$root" bash -c "echo compiler: \$(g++ --version | head -1) && cd /src && cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release -DP2PNODE_WERROR=ON -DP2PNODE_AGENT=OFF >/dev/null &&
      cmake --build /build -j$(nproc) --target p2pnode p2pnode-serve p2pnode-nvme-doorbell &&
      deb=\$(scripts/build-deb.sh /out /build) && echo \"\$deb\" > /out/deb.path &&
      { lintian --tag-display-limit 0 \"\$deb\" > /out/lintian.txt 2>&1; echo \$? > /out/lintian.rc; }" \
    > "$out/build.log" 2>&1 || rc=$?
  if [ $rc -eq 0 ]; then
    cp "$root/build/daemon/p2pnode" "$root/build/daemon/p2pnode-serve" "$root/out/lintian.txt" "$root/out/lintian.rc" "$out/" &&
      cp "$root$(cat "$root/out/deb.path")" "$out/" || rc=1
  fi
  rm -rf "$root"
  [ $rc -eq 0 ] && source_stamp "$src" > "$out/source.stamp"
  return $rc
}

# release_deb BUILD SUITE SCRATCH: prints the path of p2pnode's package for SUITE: made here from the
# build tree BUILD (scripts/build-deb.sh into SCRATCH) when SUITE is this machine's release, else the
# one tests/dist/test_release_build.sh left in BUILD/dist/SUITE.
release_deb() {
  local build=$1 suite=$2 scratch=$3 deb
  if [ "$suite" = "$(host_suite)" ]; then
    "$here_dist/../../scripts/build-deb.sh" "$scratch" "$build"
    return
  fi
  deb=$(ls "$(release_dir "$build" "$suite")"/p2pnode_*.deb 2>/dev/null | head -1)
  [ -n "$deb" ] || { echo "no p2pnode package for $suite in $(release_dir "$build" "$suite") (tests/dist/test_release_build.sh makes it)" >&2; return 1; }
  echo "$deb"
}

# root_with_package ROOT TARBALL BUILD SCRATCH: ROOT unpacked from TARBALL (a cached root of
# $DEBIAN_SUITE) with p2pnode's package for that release installed by apt, as on a node. Prints why
# when it fails.
root_with_package() {
  local root=$1 tar=$2 build=$3 scratch=$4 deb
  mkdir -p "$root" && tar -C "$root" -xf "$tar" && cp /etc/resolv.conf "$root/etc/resolv.conf" || return 1
  deb=$(release_deb "$build" "$DEBIAN_SUITE" "$scratch/deb") || return 1
  cp "$deb" "$root/tmp/p2pnode.deb"
  in_root "$root" sh -c "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends /tmp/p2pnode.deb" \
    > "$scratch/apt.log" 2>&1 || { tail -20 "$scratch/apt.log"; echo "apt-get install of $(basename "$deb") failed"; return 1; }
}

# kernel_root_tarball: prints the path of the release's kernel root, made once and cached as
# $P2PNODE_TEST_CACHE/SUITE-kernel.tar: minbase plus the release's default kernel and its headers
# (linux-image-amd64: a VM boots it, judge-kernel asks apt for its next version), DKMS with openssl
# (it makes and uses its signing key), gcc and g++ (NVIDIA's core has C++), make, patch, and the
# signed boot chain (shim, GRUB, OVMF, virt-firmware). One root for the tests that build modules
# against the release's kernel (tests/dkms/test_trees_612.sh) and boot it under Secure Boot
# (tests/secureboot/test_secureboot_vm.sh): one apt run of the kernel and its headers, not two.
_kernel_root() {
  local base
  base=$(_debian_root_tarball "$DEBIAN_SUITE-minbase" _debootstrap_minbase) || return 1
  mkdir -p "$1" && tar -C "$1" -xf "$base"
  cp /etc/resolv.conf "$1/etc/resolv.conf"
  # A chroot cannot see a disk (MODULES=dep fails there): an initramfs with every storage driver.
  mkdir -p "$1/etc/initramfs-tools/conf.d" && echo MODULES=most > "$1/etc/initramfs-tools/conf.d/p2pnode-test"
  in_root "$1" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    linux-image-amd64 linux-headers-amd64 dkms make gcc g++ patch xz-utils kmod time openssl \
    shim-signed grub-efi-amd64-signed ovmf python3-virt-firmware > "$1.apt.log" 2>&1 ||
    { tail -30 "$1.apt.log"; return 1; }
  rm -f "$1.apt.log"
  chroot "$1" apt-get clean
}
kernel_root_tarball() { _debian_root_tarball "$DEBIAN_SUITE-kernel" _kernel_root; }

# kernel_bpo_root_tarball: the kernel root as a node that follows trixie-backports for its kernel
# has it, cached as $P2PNODE_TEST_CACHE/SUITE-kernel-bpo.tar: trixie-backports in apt's sources, a
# pin (/etc/apt/preferences.d/p2pnode-test-kernel-bpo) that makes the kernel packages (linux-*)
# come from there, and backports' linux-image-amd64 and linux-headers-amd64 installed beside the
# release's own kernel (their gcc-14-for-host with them). tests/dkms/test_trees_73.sh builds and
# boots on it.
KERNEL_BPO_PIN='Package: linux-*
Pin: release n=trixie-backports
Pin-Priority: 500'
_kernel_bpo_root() {
  local base
  base=$(kernel_root_tarball) || return 1
  mkdir -p "$1" && tar -C "$1" -xf "$base"
  cp /etc/resolv.conf "$1/etc/resolv.conf"
  echo "deb $DEBIAN_MIRROR trixie-backports main" > "$1/etc/apt/sources.list.d/trixie-backports.list"
  echo "$KERNEL_BPO_PIN" > "$1/etc/apt/preferences.d/p2pnode-test-kernel-bpo"
  in_root "$1" apt-get update -qq > "$1.apt.log" 2>&1 &&
    in_root "$1" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      linux-image-amd64 linux-headers-amd64 >> "$1.apt.log" 2>&1 || { tail -30 "$1.apt.log"; return 1; }
  rm -f "$1.apt.log"
  chroot "$1" apt-get clean
}
kernel_bpo_root_tarball() { _debian_root_tarball "$DEBIAN_SUITE-kernel-bpo" _kernel_bpo_root; }
