# Sourced by tests/package, tests/ansible, tests/node and tests/dist: fresh Debian roots made by
# debootstrap, of the release DEBIAN_SUITE names (bookworm = Debian 12, trixie = Debian 13; default:
# this machine's own). debootstrap --variant=minbase from Debian's archive takes a minute or more,
# so each root is made once and kept as a tarball in $P2PNODE_TEST_CACHE (default
# /var/cache/p2pnode-tests), named after its release; delete that directory to make them again. A
# flock per tarball keeps two tests from making the same one at once.
P2PNODE_TEST_CACHE=${P2PNODE_TEST_CACHE:-/var/cache/p2pnode-tests}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

# host_suite: this machine's Debian release (bookworm, trixie), from /etc/os-release.
host_suite() { (. /etc/os-release && echo "${VERSION_CODENAME:-unknown}"); }
# other_suite: the other release make test covers (trixie on Debian 12, bookworm on Debian 13).
other_suite() { if [ "$(host_suite)" = trixie ]; then echo bookworm; else echo trixie; fi; }
# suite_name SUITE: "Debian 12 (bookworm)".
suite_name() { case $1 in bookworm) echo "Debian 12 (bookworm)";; trixie) echo "Debian 13 (trixie)";; *) echo "$1";; esac; }
DEBIAN_SUITE=${DEBIAN_SUITE:-$(host_suite)}

# debian_root_skip_reason: prints why roots cannot be made here (empty: they can): not root, or no
# Debian archive to reach. (debootstrap and chroot are the caller's to `require`: missing, they fail.)
debian_root_skip_reason() {
  [ "$(id -u)" -eq 0 ] || { echo "debootstrap and chroot need root"; return; }
  local host
  host=$(echo "$DEBIAN_MIRROR" | sed 's|^[a-z]*://||; s|/.*||')
  timeout 15 bash -c "exec 3<>/dev/tcp/$host/80" 2>/dev/null ||
    echo "$DEBIAN_MIRROR is unreachable (apt inside the root needs Debian's archive)"
}

# _debian_root_tarball NAME SETUP...: makes $P2PNODE_TEST_CACHE/NAME.tar once (SETUP runs with the
# fresh root as $1), prints its path.
_debian_root_tarball() {
  local name=$1; shift
  local tar="$P2PNODE_TEST_CACHE/$name.tar" tmp
  mkdir -p "$P2PNODE_TEST_CACHE"
  (
    flock 9 || exit 1
    [ -s "$tar" ] && exit 0
    tmp=$(mktemp -d "$P2PNODE_TEST_CACHE/.make-$name.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    "$@" "$tmp/root" >&2 || { echo "making the $name root failed" >&2; exit 1; }
    tar -C "$tmp/root" --numeric-owner -cf "$tmp/root.tar" . && mv "$tmp/root.tar" "$tar"
  ) 9>"$P2PNODE_TEST_CACHE/.$name.lock" || return 1
  echo "$tar"
}

_debootstrap_minbase() {
  local t0=$SECONDS
  echo "debootstrap --variant=minbase $DEBIAN_SUITE from $DEBIAN_MIRROR (once; cached in $P2PNODE_TEST_CACHE)"
  debootstrap --variant=minbase "$DEBIAN_SUITE" "$1" "$DEBIAN_MIRROR" > "$1.log" 2>&1 || { tail -20 "$1.log"; return 1; }
  rm -f "$1.log"
  # apt's lists, so apt-get install works at once; /etc/resolv.conf is the host's while in use.
  cp /etc/resolv.conf "$1/etc/resolv.conf"
  chroot "$1" apt-get update -qq || return 1
  chroot "$1" apt-get clean
  echo "debootstrap took $((SECONDS - t0)) s"
}

# The same plus python3, which Ansible needs on a node (a fresh node would get it the same way).
_debootstrap_python() {
  local base
  base=$(_debian_root_tarball "$DEBIAN_SUITE-minbase" _debootstrap_minbase) || return 1
  mkdir -p "$1" && tar -C "$1" -xf "$base"
  cp /etc/resolv.conf "$1/etc/resolv.conf"
  chroot "$1" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3 >/dev/null || return 1
  chroot "$1" apt-get clean
}

# debian_root DIR [python]: DIR becomes a fresh copy of the cached root of DEBIAN_SUITE (made first
# if needed).
debian_root() {
  local dir=$1 tar
  if [ "${2:-}" = python ]; then tar=$(_debian_root_tarball "$DEBIAN_SUITE-minbase-python3" _debootstrap_python) || return 1
  else tar=$(_debian_root_tarball "$DEBIAN_SUITE-minbase" _debootstrap_minbase) || return 1; fi
  mkdir -p "$dir" && tar -C "$dir" -xf "$tar" && cp /etc/resolv.conf "$dir/etc/resolv.conf"
}
