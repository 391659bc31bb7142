# Sourced by tests/node/test_node.sh: a second Debian 12 kernel for the node, as apt would bring it.
# The packages (image, headers, headers-common, and the linux-kbuild they need) are fetched from
# Debian's archive with `apt-get download` on first use and kept in $P2PNODE_TEST_CACHE/kernels/
# RELEASE/; the host's own packages and /lib/modules are not touched.

# node_kernel_debs OLD: the newest linux-image-6.1.0-N-amd64 that sorts after OLD (the node's
# kernel), its .debs cached; prints the directory (with a file `release`), or on failure the
# reason on stderr and nothing on stdout.
node_kernel_debs() {
  local old=$1 rel dir ver pkgs t0=$SECONDS
  rel=$(apt-cache pkgnames linux-image-6.1.0- 2>/dev/null | grep -E '^linux-image-6\.1\.0-[0-9]+-amd64$' |
        sed 's/^linux-image-//' | sort -V | tail -1)
  if [ -z "$rel" ] || [ "$(printf '%s\n%s\n' "$old" "$rel" | sort -V | tail -1)" = "$old" ]; then
    echo "the host's apt lists offer no Debian 12 kernel newer than the node's $old (run apt-get update with bookworm-security)" >&2
    return 1
  fi
  dir=$P2PNODE_TEST_CACHE/kernels/$rel
  if [ ! -s "$dir/release" ]; then
    ver=$(apt-cache show "linux-headers-$rel" 2>/dev/null | sed -n 's/^Version: //p' | head -1)
    pkgs=("linux-image-$rel=$ver" "linux-headers-$rel=$ver" "linux-headers-${rel%-amd64}-common=$ver" "linux-kbuild-6.1=$ver")
    rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
    (cd "$dir.tmp" && apt-get download "${pkgs[@]}" >download.log 2>&1) ||
      { echo "apt-get download ${pkgs[*]} failed: $(tail -2 "$dir.tmp/download.log")" >&2; return 1; }
    rm -f "$dir.tmp/download.log"; echo "$rel" > "$dir.tmp/release"
    rm -rf "$dir" && mv "$dir.tmp" "$dir"
    echo "node: kernel $rel downloaded from Debian's archive ($((SECONDS - t0)) s, $(du -sm "$dir" | cut -f1) MiB)" >&2
  fi
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
