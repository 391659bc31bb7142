#!/bin/bash
# `make test` as a new user meets it: a fresh minimal Debian root (debootstrap --variant=minbase)
# of the release named, with what a booted machine has mounted (/proc, /sys, /dev, /dev/pts,
# /dev/shm, /run), the repository's files (tracked and untracked, not ignored: what a clone of this
# working tree would hold) and ../shared copied in beside each other, `make` installed with apt as
# the README says, then the README's command, `make test`, run inside. The root is made anew each
# run (empty caches) and kept afterwards for a look at its logs; the mounts live in a private mount
# namespace, so nothing stays mounted on this machine.
#
# Not part of `make test` (it is one: about 40-60 min on 2 cores, more with other work beside it);
# docs/testing.md has its figures. What it takes from this machine, and why: /etc/resolv.conf, and
# this machine's own CA bundle and npm settings where it has them (a network that inspects TLS needs
# them; a fresh machine elsewhere has its own).
#
# Usage: sudo bash tests/dist/fresh-root-make-test.sh bookworm|trixie [DIR]   (DIR: /var/tmp/p2pnode-fresh-SUITE)
#        RERUN=1 ... reuses DIR's root and its build: copies the working tree in again and runs
#        `make test` there again (CTEST_ARGS='-R faults' runs only those).
set -euo pipefail
suite=${1:?usage: $0 bookworm|trixie [DIR]}
dir=${2:-/var/tmp/p2pnode-fresh-$suite}
repo=$(cd "$(dirname "$0")/../.." && pwd)
shared=$(cd "$repo/../shared" 2>/dev/null && pwd) || { echo "no ../shared beside $repo" >&2; exit 1; }
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
[ "$(id -u)" -eq 0 ] || { echo "needs root (debootstrap, chroot, mounts)" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "debootstrap is not installed (apt-get install debootstrap)" >&2; exit 1; }
root=$dir/root
log=$dir/make-test.log
t0=$SECONDS

if [ "${RERUN:-0}" != 1 ]; then
  rm -rf "$dir" && mkdir -p "$dir"
  echo "== debootstrap --variant=minbase $suite into $root"
  debootstrap --variant=minbase "$suite" "$root" "$mirror" > "$dir/debootstrap.log" 2>&1 ||
    { tail -20 "$dir/debootstrap.log"; exit 1; }
  echo "   $((SECONDS - t0)) s"
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
  mkdir -p "$root/etc/ssl/certs" && cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
fi
# This machine's local CAs where Debian keeps them, so that the root's own ca-certificates (which
# install-deps pulls in) rebuilds its bundle with them rather than without.
if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
  mkdir -p "$root/usr/local/share/ca-certificates" && cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
fi
for f in /etc/npmrc /usr/etc/npmrc /root/.npmrc; do [ -f "$f" ] && install -D -m 600 "$f" "$root$f"; done

echo "== the working tree into /src/p2pnode, shared/ into /src/shared"
mkdir -p "$root/src/p2pnode"
(cd "$repo" && git ls-files -z -c -o --exclude-standard) | (cd "$repo" && tar --null -T - -cf -) | tar -C "$root/src/p2pnode" -xf -
rm -rf "$root/src/shared" && cp -a "$shared" "$root/src/shared" && chmod -R a-w "$root/src/shared"

# The machine's own environment for TLS (a CA bundle where it set one), nothing of the project's.
envs=(HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive)
for v in SSL_CERT_FILE NODE_EXTRA_CA_CERTS CURL_CA_BUNDLE GIT_SSL_CAINFO; do
  [ -n "${!v:-}" ] && [ -f "$root${!v}" ] && envs+=("$v=${!v}")
done

echo "== in the root: apt-get install make, then make test (log: $log)"
set +e
unshare -m --propagation private bash -s "$root" "${CTEST_ARGS:-}" "${envs[@]}" > "$log" 2>&1 <<'IN'
r=$1 args=$2; shift 2
# The root a mount point of its own, as a booted machine's / is: the tests' own `unshare -m
# --propagation private` fails on a chroot whose / is only a directory.
mount --bind "$r" "$r" && mount --make-private "$r" &&
  mount -t proc proc "$r/proc" && mount -t sysfs sysfs "$r/sys" && mount --rbind /dev "$r/dev" &&
  mount -t tmpfs -o mode=1777 shm "$r/dev/shm" && mount -t tmpfs -o mode=755 run "$r/run" || exit 90
exec chroot "$r" env -i "$@" bash -c '
  set -e
  apt-get update -qq && apt-get install -y -qq --no-install-recommends make >/dev/null
  cd /src/p2pnode
  make test ${1:+CTEST_ARGS="$1"}' inroot "$args"
IN
rc=$?
set -e
grep -E 'tests passed|tests failed|^\s+[0-9]+ - |Not Run|\*\*\*Skipped|Total Test time' "$log" | tail -40
echo "== make test in a fresh $suite root: exit $rc, $((SECONDS - t0)) s in all (log: $log)"
exit $rc
