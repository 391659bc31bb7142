#!/bin/bash
# The Debian package, for real: built from make test's build tree (scripts/build-deb.sh: 
# dpkg-buildpackage, dh, `cmake --install` with DESTDIR), its contents, control data and maintainer
# scripts, lintian (no errors; every warning explained in README), then installed with
# `apt-get install ./p2pnode_*.deb` into a fresh root of this machine's Debian release
# (debootstrap --variant=minbase, cached in /var/cache/p2pnode-tests: tests/lib/debian_root.sh) whose apt fetches
# the libraries from Debian's archive; `p2pnode --version` and `p2pnode check --root <fixture>`
# run there; the maintainer scripts enable both units, start (upgrade: restart) only the daemon,
# stop it at removal; a purge removes the configuration and keeps /var/lib/p2pnode, saying so.
# P2PNODE_RELEASE=<the other release> (ctest script.package.test_package_other): the same checks
# on the package tests/dist/test_release_build.sh made for that release in a root of it, with that
# release's lintian report, in a fresh root of that release.
# Cost: ~1 min with the cached root (the first run adds debootstrap, ~2-4 min).
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"
set -uo pipefail
bin=${1:?usage: test_package.sh path/to/p2pnode}
bin=$(readlink -f "$bin")  # absolute: the script changes directory
source tests/dist/release.sh
require debootstrap chroot
why=$(debian_root_skip_reason); [ -z "$why" ] || { echo "SKIP: $why"; exit 77; }
DEBIAN_SUITE=${P2PNODE_RELEASE:-$(host_suite)}
release=$(suite_name "$DEBIAN_SUITE")
require dpkg-buildpackage dh lintian
build=$(cd "$(dirname "$bin")/.." && pwd)
work=$(temp_dir package)
root=$work/root
cleanup() { mountpoint -q "$root/proc" && umount "$root/proc"; rm -rf "$work"; }
trap cleanup EXIT
t0=$SECONDS

version=$(sed -n 's/^project(p2pnode VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
arch=$(dpkg --print-architecture)
if [ "$DEBIAN_SUITE" = "$(host_suite)" ]; then
  if ! deb=$(scripts/build-deb.sh "$work/deb" "$build"); then fail "scripts/build-deb.sh"; exit 1; fi
  lintian --tag-display-limit 0 "$deb" > "$work/lintian" 2>&1; lrc=$?
else
  rdir=$(release_dir "$build" "$DEBIAN_SUITE")
  deb=$(ls "$rdir"/p2pnode_*.deb 2>/dev/null | head -1)
  [ -n "$deb" ] || { fail "no package for $release in $rdir (tests/dist/test_release_build.sh makes it)"; exit 1; }
  cp "$rdir/lintian.txt" "$work/lintian"; lrc=$(cat "$rdir/lintian.rc")
fi
echo "release: $release, package $deb"
t_build=$((SECONDS - t0))
[ "$(basename "$deb")" = "p2pnode_${version}_${arch}.deb" ] && pass "built $(basename "$deb") (version from CMakeLists.txt)" || fail "package name: $deb"

# Contents: the layout cmake/install.cmake decides.
dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' > "$work/contents"
# The units where the release's systemd.pc says: /lib/systemd/system on Debian 12, /usr/lib/... on 13.
units=/lib/systemd/system; [ "$DEBIAN_SUITE" = bookworm ] || units=/usr/lib/systemd/system
for f in /usr/bin/p2pnode /usr/libexec/p2pnode/p2pnode-serve $units/p2pnode.service \
         $units/p2pnode-apply.service /etc/p2pnode/p2pnode.yaml /etc/p2pnode/profiles/ \
         /usr/share/p2pnode/profiles/tinybox-6x4090.yaml /usr/share/p2pnode/grafana/p2pnode-cluster.json \
         /usr/share/p2pnode/grafana/p2pnode-fleet.json /usr/share/p2pnode/prometheus/p2pnode-rules.yml \
         /usr/share/p2pnode/prometheus/p2pnode-alerts.yml /var/lib/p2pnode/ /usr/share/man/man1/p2pnode.1.gz \
         /etc/kernel/postinst.d/z50-p2pnode /etc/kernel/header_postinst.d/z50-p2pnode \
         /usr/lib/p2pnode/slurm/p2pnode-slurm-health /usr/lib/p2pnode/slurm/p2pnode-slurm-prolog \
         /usr/lib/p2pnode/slurm/p2pnode-slurm.sh /etc/nhc/scripts/p2pnode.nhc \
         /usr/share/p2pnode/prometheus/alertmanager.example.yml; do
  grep -qx "$f" "$work/contents" && pass "contains $f" || fail "contains $f"
done
if [ "$DEBIAN_SUITE" != "$(host_suite)" ]; then
  # The other release's root has no CUDA compiler: its build leaves the agent out, as a node without nvcc does.
  grep -qx /usr/libexec/p2pnode/p2pnode-agent "$work/contents" && fail "an agent in a package built without CUDA" ||
    echo "note: the $release build had no CUDA compiler, so the package has no agent (as on a node without nvcc)"
elif [ -x "$build/agent/p2pnode-agent" ]; then
  grep -qx /usr/libexec/p2pnode/p2pnode-agent "$work/contents" && pass "contains the agent (built here)" || fail "contains the agent"
else
  echo "note: p2pnode-agent was not built here (no CUDA compiler), so the package has none"
fi

# Control data: Depends computed by dpkg-shlibdeps, the config a conffile, the units handled by
# deb-systemd-helper (the daemon enabled and started, which its condition defers until a profile
# exists; the boot-time apply enabled only), restarted after an upgrade, stopped at removal.
# openssl is a program (apply makes DKMS's module signing key with it on Secure Boot nodes).
grep -q '^Depends: ${shlibs:Depends}, ${misc:Depends}, openssl$' debian/control && pass "debian/control lists no library by hand (openssl: the program)" || fail "debian/control Depends"
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
yaml=libyaml-cpp0.7; [ "$DEBIAN_SUITE" = trixie ] && yaml=libyaml-cpp0.8
for lib in $yaml libc6 libstdc++6 libssl3 libsystemd0; do
  [[ "$depends" == *"$lib"* ]] && pass "Depends has $lib (from dpkg-shlibdeps)" || fail "Depends has $lib"
done
[[ ", $depends," == *", openssl,"* ]] && pass "Depends has openssl (DKMS's signing key)" || fail "Depends has openssl"
mkdir "$work/ctrl" && dpkg-deb -e "$deb" "$work/ctrl"
grep -qx /etc/p2pnode/p2pnode.yaml "$work/ctrl/conffiles" && pass "/etc/p2pnode/p2pnode.yaml is a conffile" || fail "conffile"
grep -q 'deb-systemd-helper .*enable.*p2pnode.service' "$work/ctrl/postinst" && grep -q "p2pnode-apply.service" "$work/ctrl/postinst" \
  && pass "postinst enables both units (deb-systemd-helper)" || fail "postinst enables both units"
grep -q 'deb-systemd-invoke \$_dh_action .*p2pnode.service' "$work/ctrl/postinst" && ! grep -q 'deb-systemd-invoke \$_dh_action .*p2pnode-apply' "$work/ctrl/postinst" \
  && pass "postinst starts (on upgrade: restarts) the daemon only, never the boot-time apply" || { fail "postinst start/restart"; grep -n invoke "$work/ctrl/postinst"; }
grep -q 'restart' "$work/ctrl/postinst" && pass "postinst restarts after an upgrade" || fail "postinst restarts after an upgrade"
grep -q 'deb-systemd-invoke stop .*p2pnode.service' "$work/ctrl/prerm" && pass "prerm stops the daemon at removal" || fail "prerm stops"
grep -q 'systemd-sysusers.*p2pnode' "$work/ctrl/postinst" && pass "postinst creates the HTTP process's account (systemd-sysusers)" || fail "postinst creates the account"
grep -q '^ConditionPathExistsGlob=/etc/p2pnode/profiles/\*.yaml' systemd/p2pnode.service && pass "the daemon starts only once a profile exists" || fail "condition"

# lintian (this release's): no errors; each warning left is explained in docs/development.md
# (section "The package: lintian and hardening").
cat "$work/lintian"
if grep -q '^E:' "$work/lintian" || [ $lrc -ge 2 ]; then fail "lintian reports errors (exit $lrc)"; else pass "lintian: no errors"; fi
for tag in $(sed -n 's/^W: [^:]*: \([a-z0-9-]*\).*/\1/p' "$work/lintian" | sort -u); do
  grep -q "\`$tag\`" docs/development.md && pass "lintian warning $tag is explained in docs/development.md" || fail "lintian warning $tag is not explained in docs/development.md"
done

# A fresh root of the release; apt installs the package and what it depends on.
t1=$SECONDS
debian_root "$root" || { fail "making the $release root"; exit 1; }
t_root=$((SECONDS - t1))
mount -t proc proc "$root/proc"
cp "$deb" "$root/tmp/"
chroot "$root" /usr/bin/p2pnode --version >/dev/null 2>&1 && fail "the fresh root has no p2pnode before" || pass "the fresh root has no p2pnode before"
t2=$SECONDS
if chroot "$root" sh -c "cd /tmp && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ./$(basename "$deb")" > "$work/apt.log" 2>&1; then
  pass "apt-get install ./$(basename "$deb") in a fresh $release root ($(grep -c '^Setting up' "$work/apt.log") packages set up)"
else
  fail "apt-get install in the fresh root"; tail -20 "$work/apt.log"
fi
t_apt=$((SECONDS - t2))
out=$(chroot "$root" p2pnode --version 2>&1)
[[ "$out" == *"$version"* ]] && pass "p2pnode --version there: $out" || fail "p2pnode --version there: $out"
chroot "$root" ldd /usr/libexec/p2pnode/p2pnode-serve | grep -q 'not found' && fail "p2pnode-serve has unresolved libraries" || pass "p2pnode-serve's libraries all resolve"
chroot "$root" getent passwd p2pnode | grep -q ':/nonexistent:/usr/sbin/nologin$' && pass "the install made the system account p2pnode (no home, no shell)" || fail "no account p2pnode after the install"
mkdir -p "$root/srv"
cp -a tests/fixtures/tinybox-6x4090-bios-default "$root/srv/bios-default"
cp -a tests/fixtures/tinybox-6x4090 "$root/srv/fixed"
chroot "$root" p2pnode check --root /srv/bios-default --profiles /usr/share/p2pnode/profiles > "$work/check1" 2>&1; rc=$?
[ $rc = 1 ] && grep -q 'rebar' "$work/check1" && pass "p2pnode check --root <tinybox as its BIOS left it> there: exit 1, rebar errors" \
  || { fail "check of the BIOS-default tinybox there (exit $rc)"; head -20 "$work/check1"; }
chroot "$root" p2pnode check --root /srv/fixed --profiles /usr/share/p2pnode/profiles > "$work/check2" 2>&1; rc=$?
[ $rc = 0 ] && pass "p2pnode check --root <the tinybox after the fix> there: exit 0" || { fail "check of the fixed tinybox there (exit $rc)"; head -20 "$work/check2"; }
# The README's quick start, steps 3 to 5 as written there (the box's own profile copied from the
# examples, validated; check and plan against the recorded box, since this root has no GPU).
chroot "$root" sh -c 'cp /usr/share/p2pnode/profiles/tinybox-6x4090.yaml /etc/p2pnode/profiles/ &&
  p2pnode profiles validate /etc/p2pnode/profiles' > "$work/qs" 2>&1 \
  && pass "quick start: the example profile copied to /etc/p2pnode/profiles validates there" || { fail "quick start: profiles validate"; cat "$work/qs"; }
chroot "$root" p2pnode check --root /srv/bios-default --profiles /etc/p2pnode/profiles > "$work/qs-check" 2>&1; rc=$?
chroot "$root" p2pnode plan --root /srv/bios-default --profiles /etc/p2pnode/profiles > "$work/qs-plan" 2>&1; prc=$?
[ $rc = 1 ] && grep -q 'profile tinybox-6x4090' "$work/qs-check" && [ $prc = 0 ] && grep -q '^p2pnode plan: profile tinybox-6x4090' "$work/qs-plan" \
  && pass "quick start: check (exit 1, errors) and plan (profile tinybox-6x4090) from /etc/p2pnode/profiles" \
  || { fail "quick start: check exit $rc, plan exit $prc"; head -5 "$work/qs-check" "$work/qs-plan"; }
rm -f "$root/etc/p2pnode/profiles/tinybox-6x4090.yaml"
chroot "$root" p2pnode serve --check-config --config /etc/p2pnode/p2pnode.yaml > "$work/cc" 2>&1 \
  && pass "the shipped config passes serve --check-config there" || { fail "shipped config: serve --check-config"; cat "$work/cc"; }

# The maintainer scripts against systemd: a chroot has no systemd, so /run/systemd/system is made
# and systemctl is a stand-in that records its arguments (deb-systemd-invoke calls it); the
# enable symlinks are deb-systemd-helper's own, made whether systemd runs or not.
wants=$root/etc/systemd/system/multi-user.target.wants
[ -L "$wants/p2pnode.service" ] && [ -L "$wants/p2pnode-apply.service" ] && pass "install enabled both units" || fail "install enabled both units"
# (apt runs dpkg with PATH=/usr/sbin:/usr/bin:/sbin:/bin, so the stand-in goes in /usr/sbin; the
# units count as enabled, as deb-systemd-helper just made them.)
mkdir -p "$root/run/systemd/system"
printf '#!/bin/sh\necho "$*" >> /var/log/systemctl.calls\ncase "$*" in *is-enabled*) echo enabled;; esac\nexit 0\n' > "$root/usr/sbin/systemctl"
chmod +x "$root/usr/sbin/systemctl"
next="$work/p2pnode_${version}+1_${arch}.deb"
dpkg-deb -R "$deb" "$work/next" && sed -i "s/^Version: .*/Version: ${version}+1/" "$work/next/DEBIAN/control" &&
  dpkg-deb --root-owner-group -b "$work/next" "$next" >/dev/null && cp "$next" "$root/tmp/"
calls() { cat "$root/var/log/systemctl.calls" 2>/dev/null; : > "$root/var/log/systemctl.calls"; }
chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq p2pnode >/dev/null 2>&1; calls >/dev/null
chroot "$root" sh -c "cd /tmp && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ./$(basename "$deb")" >/dev/null 2>&1
c=$(calls); echo "systemctl at install: $(echo "$c" | tr '\n' ';')"
echo "$c" | grep -q 'start.*p2pnode.service' && ! echo "$c" | grep -q 'start.*p2pnode-apply' \
  && pass "install starts p2pnode.service (held back by its profile condition), never p2pnode-apply" || fail "install: systemctl calls"
chroot "$root" sh -c "cd /tmp && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ./$(basename "$next")" >/dev/null 2>&1
c=$(calls); echo "systemctl at upgrade: $(echo "$c" | tr '\n' ';')"
echo "$c" | grep -q 'restart.*p2pnode.service' && pass "upgrade restarts p2pnode.service" || fail "upgrade: systemctl calls"
echo "$c" | grep -qE '(^| )(re)?start .*p2pnode-apply' && fail "upgrade (re)started p2pnode-apply" || pass "upgrade leaves p2pnode-apply alone"
chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq p2pnode >/dev/null 2>&1
c=$(calls); echo "systemctl at remove: $(echo "$c" | tr '\n' ';')"
echo "$c" | grep -q 'stop.*p2pnode.service' && pass "remove stops p2pnode.service" || fail "remove: systemctl calls"
rm -rf "$root/run/systemd/system" "$root/usr/sbin/systemctl"
chroot "$root" sh -c "cd /tmp && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ./$(basename "$deb")" >/dev/null 2>&1 || fail "reinstall"

# Purge: the configuration and the cache of NVIDIA cores go, /var/lib/p2pnode stays and the purge says so.
echo '{}' > "$root/var/lib/p2pnode/state.json"
mkdir -p "$root/var/cache/p2pnode/nvidia-core/0123abcd" && echo x > "$root/var/cache/p2pnode/nvidia-core/0123abcd/nv-kernel.o"
(umask 077; echo secret > "$root/etc/p2pnode/token"); cp profiles/h100-1gpu.yaml "$root/etc/p2pnode/profiles/"
chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get purge -y p2pnode > "$work/purge.log" 2>&1 || fail "apt-get purge"
[ ! -e "$root/etc/p2pnode" ] && pass "purge removed /etc/p2pnode (config, token, profiles)" || fail "purge left $(find "$root/etc/p2pnode" | tr '\n' ' ')"
[ ! -e "$root/var/cache/p2pnode" ] && pass "purge removed /var/cache/p2pnode (cores DKMS's sources also hold)" || fail "purge left /var/cache/p2pnode"
[ -f "$root/var/lib/p2pnode/state.json" ] && pass "purge kept /var/lib/p2pnode" || fail "purge removed /var/lib/p2pnode"
grep -q 'kept /var/lib/p2pnode' "$work/purge.log" && pass "and said so" || { fail "purge did not say it kept /var/lib/p2pnode"; cat "$work/purge.log"; }

echo "figures: deb build ${t_build} s, root ${t_root} s, apt-get install ${t_apt} s, whole test $((SECONDS - t0)) s"
finish
