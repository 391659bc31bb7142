# Sourced by tests/node/test_node.sh: the node's kernels, as its own Debian release's archive has
# them. The node is made with the second-newest kernel of its release's series (OLD) so that the
# newest (NEW) can arrive through apt in case 4. The packages of NEW (image, headers and the
# packages the headers depend on: headers-common, linux-kbuild) are fetched with `apt-get download`
# inside a root of the node's release on first use and kept in $P2PNODE_TEST_CACHE/kernels/NEW/;
# the host's own packages and /lib/modules are not touched.

# node_kernel_series ROOT: the releases of the kernel series linux-image-amd64 follows in ROOT's
# apt lists (6.1.0-N-amd64 on Debian 12, 6.12.N+deb13-amd64 on Debian 13), oldest first.
node_kernel_series() {
  local root=$1 dep prefix
  dep=$(chroot "$root" apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/^ *Depends: linux-image-\([0-9][^ ]*-amd64\)$/\1/p' | head -1)
  [ -n "$dep" ] || return 1
  prefix=${dep%%[-+]*}           # 6.1.0 or 6.12.117
  case $dep in *+deb*) prefix=${prefix%.*}. ;; *) prefix=$prefix- ;; esac  # 6.12. / 6.1.0-
  chroot "$root" apt-cache pkgnames "linux-image-$prefix" 2>/dev/null | grep -E '^linux-image-[0-9][^ ]*-amd64$' |
    grep -vE -- '-(cloud|rt)-amd64$|-unsigned$' | sed 's/^linux-image-//' | sort -V
}

# node_kernel_debs ROOT OLD: the newest kernel of ROOT's release that sorts after OLD (the node's
# kernel), its .debs cached; prints the directory (with a file `release`), or on failure the
# reason on stderr and nothing on stdout. ROOT: a root of the node's release with apt lists.
node_kernel_debs() {
  local root=$1 old=$2 rel dir ver pkgs t0=$SECONDS
  rel=$(node_kernel_series "$root" | tail -1)
  if [ -z "$rel" ] || [ "$(printf '%s\n%s\n' "$old" "$rel" | sort -V | tail -1)" = "$old" ]; then
    echo "the node's apt lists offer no kernel newer than the node's $old" >&2
    return 1
  fi
  dir=$P2PNODE_TEST_CACHE/kernels/$rel
  mkdir -p "$P2PNODE_TEST_CACHE/kernels"
  (
    flock 9 || exit 1
    [ -s "$dir/release" ] && exit 0
    ver=$(chroot "$root" apt-cache show "linux-headers-$rel" 2>/dev/null | sed -n 's/^Version: //p' | head -1)
    pkgs=("linux-image-$rel=$ver" "linux-headers-$rel=$ver")
    for p in $(chroot "$root" apt-cache depends "linux-headers-$rel" 2>/dev/null | sed -n 's/^ *Depends: \(linux-\(headers\|kbuild\)-[^ ]*\)$/\1/p'); do
      pkgs+=("$p")
    done
    rm -rf "$root/tmp/kdebs" && mkdir -p "$root/tmp/kdebs"
    cp /etc/resolv.conf "$root/etc/resolv.conf"
    chroot "$root" sh -c "cd /tmp/kdebs && apt-get download $(printf '%q ' "${pkgs[@]}")" > "$root/tmp/kdebs.log" 2>&1 ||
      { echo "apt-get download ${pkgs[*]} failed: $(tail -2 "$root/tmp/kdebs.log")" >&2; exit 1; }
    rm -rf "$dir.tmp" && mv "$root/tmp/kdebs" "$dir.tmp" && echo "$rel" > "$dir.tmp/release"
    rm -rf "$dir" && mv "$dir.tmp" "$dir"
    echo "node: kernel $rel downloaded from Debian's archive ($((SECONDS - t0)) s, $(du -sm "$dir" | cut -f1) MiB)" >&2
  ) 9>"$P2PNODE_TEST_CACHE/kernels/.$rel.lock" || return 1
  echo "$dir"
}
# node_break_headers DEB OUT: OUT is DEB (a linux-headers-RELEASE package) with a compile error
# planted in include/generated/autoconf.h, which every module build includes first: the breakage a
# changed kernel API brings, for this test.
node_break_headers() {
  local deb=$1 out=$2 d
  d=$(mktemp -d /tmp/p2pnode-headers.XXXXXX)
  dpkg-deb -R "$deb" "$d/pkg" || { rm -rf "$d"; return 1; }
  local conf
  conf=$(find "$d/pkg/usr/src" -path '*/include/generated/autoconf.h' | head -1)
  [ -n "$conf" ] || { echo "no include/generated/autoconf.h in $deb" >&2; rm -rf "$d"; return 1; }
  printf '#error "planted breakage: this kernel API changed (p2pnode node test)"\n' >> "$conf"
  # md5sums must match, or debsums would flag the package; dpkg itself does not check them.
  (cd "$d/pkg" && find . -path ./DEBIAN -prune -o -type f -print | sed 's|^\./||' | LC_ALL=C sort | xargs md5sum > DEBIAN/md5sums)
  dpkg-deb -Zgzip -z1 --root-owner-group -b "$d/pkg" "$out" >/dev/null || { rm -rf "$d"; return 1; }
  rm -rf "$d"
}
