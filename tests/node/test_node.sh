#!/bin/bash
# The node VM: a Debian disk image (tests/node/image.sh) with p2pnode's package installed by apt,
# booted by QEMU TCG through SeaBIOS and GRUB with systemd as PID 1; checks over real SSH.
# The release: P2PNODE_RELEASE (bookworm or trixie; default this machine's). Its package: made
# from the build dir for this machine's release, else the one tests/dist/test_release_build.sh made.
# The cases each release runs (tests/node/README.md says why): P2P_NODE_CASES="1 2 3 4 5 6" runs all.
# Usage: bash tests/node/test_node.sh path/to/p2pnode
# Exit 0 all passed, 1 a check failed, 77 skipped (the reason is printed).
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"
set -u
# stdin from /dev/null: ansible-playbook refuses a non-blocking stdin ("Ansible requires blocking IO"),
# which another program sharing ctest's stdin may leave behind.
exec </dev/null
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$repo/tests/lib/debian_root.sh"
DEBIAN_SUITE=${P2PNODE_RELEASE:-$(host_suite)}
case $DEBIAN_SUITE in
  trixie) default_cases="1 6 4" ;;  # the current stable: first boot, the kernel through apt (GRUB 2.12, DKMS 3.2)
  *) default_cases="1 2 3 6 5" ;;   # oldstable: first boot, every boot, crashes and the power cut, Ansible
esac
NODE_CASES=" ${P2P_NODE_CASES:-$default_cases} "
has_case() { [[ "$NODE_CASES" == *" $1 "* ]]; }
. "$repo/tests/dist/release.sh"
. "$here/image.sh"
. "$here/vm.sh"
. "$here/kernels.sh"
. "$here/case_kernel.sh"
bin=${1:-build/daemon/p2pnode}
require debootstrap chroot qemu-system-x86_64 mkfs.ext4 ssh ssh-keygen
reason=$(node_image_skip_reason); [ -z "$reason" ] || { echo "SKIP: $reason"; exit 77; }
[ -x "$bin" ] || { echo "FAIL: p2pnode binary '$bin' is missing (build it first)"; exit 1; }
build=$(cd "$(dirname "$bin")/.." && pwd)

NODE_DIR=$(temp_dir node)
trap '[ -n "${NODE_QEMU_PID:-}" ] && { [ -n "${P2P_NODE_KEEP:-}" ] && node_flush_journal; kill -9 $NODE_QEMU_PID; wait $NODE_QEMU_PID; } 2>/dev/null; [ -n "${P2P_NODE_KEEP:-}" ] && echo "kept $NODE_DIR" || rm -rf "$NODE_DIR"' EXIT
NODE_PORT=$(node_free_port)
in_node() { node_ssh "$@"; }

t0=$SECONDS
if [ -n "${P2P_NODE_DEB:-}" ]; then deb=$P2P_NODE_DEB
else deb=$(release_deb "$build" "$DEBIAN_SUITE" "$NODE_DIR/deb" | tail -1); fi
[ -s "$deb" ] || { echo "FAIL: no p2pnode package for $(suite_name "$DEBIAN_SUITE") from $build"; exit 1; }
echo "node: $(suite_name "$DEBIAN_SUITE"), cases${NODE_CASES% }; package $(basename "$deb") ($((SECONDS - t0)) s)"
# The profile is in the image: the first boot is the first boot with a profile (case 1), as for a node
# whose image or installer carries it (one boot fewer than placing it and rebooting: ~50 s of TCG).
node_image "$NODE_DIR" "$deb" "$here/profiles/node-vm.yaml" || { echo "FAIL: making the node image"; exit 1; }
node_drives
echo "node: image built in $((SECONDS - t0)) s"

node_start
node_wait_ssh || { echo "FAIL: first boot"; exit 1; }
check "booted through GRUB (its menu entry on the console)" grep -qa "Booting .Debian GNU/Linux" "$NODE_CONSOLE"
check "the kernel was loaded by GRUB (BOOT_IMAGE= on its command line)" in_node grep -q BOOT_IMAGE=/boot/vmlinuz- /proc/cmdline
check "systemd is PID 1" test "$(in_node cat /proc/1/comm)" = systemd
check "the data drive is mounted at /data from fstab" in_node findmnt -n /data
check "the package is installed by apt" in_node dpkg -s p2pnode
in_node systemctl is-system-running --wait; echo "node: system state: $(in_node systemctl is-system-running)"
in_node systemctl --failed --no-legend
readyz() { in_node "python3 -c 'import urllib.request,sys
try: print(urllib.request.urlopen(\"http://127.0.0.1:9470/readyz\", timeout=10).status)
except urllib.error.HTTPError as e: print(e.code)
except Exception as e: print(e)'"; }
# Developers: P2P_NODE_ONLY=kernel runs the kernel case alone.
if [ "${P2P_NODE_ONLY:-}" = kernel ]; then
  case_kernel
  echo "node: total $((SECONDS - t0)) s"
  finish; exit
fi

# Case 1: the first boot with the profile: the boot-time apply binds the free drive before
# multi-user.target.
check "no unit failed (systemctl --failed)" test -z "$(in_node systemctl --failed --no-legend)"
bdf_of() { in_node "for d in /sys/bus/pci/devices/*; do grep -q '^$1 *\$' \$d/nvme/nvme*/serial 2>/dev/null && basename \$d; done"; }
data=$(bdf_of P2PVM-DATA)
# The free drive: the other NVMe controller (once on vfio-pci it has no nvme/ serial in sysfs).
free=$(in_node "grep -lx 0x010802 /sys/bus/pci/devices/*/class" | sed 's|/class||; s|.*/||' | grep -vx "$data")
echo "node: data drive $data, free drive $free"
[ -n "$data" ] && [ "$(echo "$free" | wc -w)" = 1 ] || { echo "FAIL: the two NVMe drives not found (data '$data', free '$free')"; exit 1; }
driver_of() { in_node "basename \$(readlink /sys/bus/pci/devices/$1/driver)"; }
drive_ok() {
  check "boot $NODE_BOOTS: free drive bound to vfio-pci" test "$(driver_of $free)" = vfio-pci
  check "boot $NODE_BOOTS: free drive in D0" test "$(in_node cat /sys/bus/pci/devices/$free/power_state)" = D0
  check "boot $NODE_BOOTS: free drive COMMAND has memory + bus master" in_node "[ \$(( 0x\$(setpci -s $free COMMAND) & 6 )) -eq 6 ]"
  check "boot $NODE_BOOTS: data drive still on nvme" test "$(driver_of $data)" = nvme
  check "boot $NODE_BOOTS: data drive still mounted, its file intact" test "$(in_node cat /data/payload)" = "data the node must keep"
  check "boot $NODE_BOOTS: p2pnode-apply finished before multi-user.target was reached" in_node \
    '[ $(systemctl show -P ExecMainExitTimestampMonotonic p2pnode-apply) -gt 0 ] && [ $(systemctl show -P ExecMainExitTimestampMonotonic p2pnode-apply) -le $(systemctl show -P ActiveEnterTimestampMonotonic multi-user.target) ]'
}
drive_ok
check "p2pnode.service sent READY=1 with a status text" in_node "systemctl show -P StatusText p2pnode | grep -q ." 
echo "node: p2pnode status text: $(in_node systemctl show -P StatusText p2pnode)"
check "/readyz answers 200" test "$(readyz)" = 200
# The HTTP side runs without root: the listening socket is held by the daemon (for the next HTTP
# process, should this one die) and by its child that accepts, as the package's account p2pnode,
# with no capability and no_new_privs; the daemon is root.
mainpid=$(in_node systemctl show -P MainPID p2pnode)
holders=$(in_node "ss -ltnpH 'sport = :9470'" | grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -u)
httppid=$(grep -vx "$mainpid" <<<"$holders")
echo "node: daemon $mainpid, listening socket held by: $(tr '\n' ' ' <<<"$holders")"
check "the listening socket is held by the daemon and one other process" \
  test "$(wc -l <<<"$holders") $(grep -cx "$mainpid" <<<"$holders")" = "2 1"
in_node "grep -E '^(Name|PPid|Uid|Gid|Groups|CapPrm|CapEff|CapBnd|NoNewPrivs):' /proc/$httppid/status" | sed 's/^/  http process: /'
field() { in_node "awk '\$1 == \"$2:\" { \$1 = \"\"; print }' /proc/$1/status" | sed 's/^ *//'; }
check "that process is the daemon's child" test "$(field "$httppid" PPid)" = "$mainpid"
uid=$(in_node id -u p2pnode) gid=$(in_node id -g p2pnode)
check "the HTTP process runs as the account p2pnode, uid $uid (Uid: $(field "$httppid" Uid))" \
  test "$(field "$httppid" Uid)" = "$uid $uid $uid $uid"
check "its gids are p2pnode's, $gid (Gid: $(field "$httppid" Gid))" test "$(field "$httppid" Gid)" = "$gid $gid $gid $gid"
check "it has no supplementary group" test -z "$(field "$httppid" Groups)"
check "it has no capability (CapEff, CapPrm 0)" test "$(field "$httppid" CapEff) $(field "$httppid" CapPrm)" = "0000000000000000 0000000000000000"
check "it has no_new_privs" test "$(field "$httppid" NoNewPrivs)" = 1
check "the daemon is still root" test "$(field "$mainpid" Uid | cut -d' ' -f2)" = 0
check "systemd-analyze verify passes for both units" in_node systemd-analyze verify /lib/systemd/system/p2pnode.service /lib/systemd/system/p2pnode-apply.service
check "journalctl -o json carries p2pnode's structured fields (STEP or CHECK)" in_node \
  "journalctl -b -u p2pnode -o json | grep -q -e '\"STEP\"' -e '\"CHECK\"'"
in_node p2pnode check --json > "$NODE_DIR/check.json" 2>&1
datafind() { python3 -c 'import json,sys
d=json.load(open(sys.argv[1])); fs=[f for f in d["findings"] if f.get("subject")==sys.argv[2] and f["check"].startswith("nvme.")]
print("\n".join("  check: %s %s %s: %s" % (f["severity"], f["check"], f["subject"], f["summary"]) for f in fs)); sys.exit(not fs)' "$NODE_DIR/check.json" "$data"; }
check "p2pnode check --json names the mounted data drive ($data) in an nvme finding" datafind
datafind
echo "node: boot time (systemd-analyze): $(in_node systemd-analyze time | head -1)"
in_node systemd-analyze blame | grep -e p2pnode | sed 's/^/  blame: /'
in_node systemd-analyze critical-chain p2pnode.service | sed 's/^/  chain: /'
echo "node: case 1 done at $((SECONDS - t0)) s"

# Case 3: crashes. kill -9 -> restarted by Restart=on-failure and ready again.
if has_case 3; then
pid1=$(in_node systemctl show -P MainPID p2pnode)
in_node kill -9 "$pid1"
# Restarted (a new main PID) and ready: polled, for systemd's RestartSec and the daemon's start.
restarted_ready() { local p; p=$(in_node systemctl show -P MainPID p2pnode); [ "$p" != 0 ] && [ "$p" != "$1" ] && [ "$(readyz)" = 200 ]; }
wait_until 90 restarted_ready "$pid1" || echo "node: not restarted and ready within 90 s of kill -9"
pid2=$(in_node systemctl show -P MainPID p2pnode)
check "kill -9: p2pnode restarted (pid $pid1 -> $pid2)" sh -c "[ '$pid2' != 0 ] && [ '$pid2' != '$pid1' ]"
check "kill -9: active again" test "$(in_node systemctl is-active p2pnode)" = active
check "kill -9: /readyz 200 again" test "$(readyz)" = 200
# SIGSTOP: the watchdog (WatchdogSec=, shortened by a drop-in so the test waits 20 s, not 60) kills and restarts it.
in_node 'mkdir -p /run/systemd/system/p2pnode.service.d && printf "[Service]\nWatchdogSec=10s\n" > /run/systemd/system/p2pnode.service.d/watchdog.conf && systemctl daemon-reload && systemctl restart p2pnode'
pid1=$(in_node systemctl show -P MainPID p2pnode)
in_node kill -STOP "$pid1"
wait_until 120 restarted_ready "$pid1" || echo "node: not restarted by the watchdog and ready within 120 s of SIGSTOP"
pid2=$(in_node systemctl show -P MainPID p2pnode)
check "SIGSTOP: the watchdog killed it (journal says so)" in_node "journalctl -b -u p2pnode | grep -qi watchdog"
check "SIGSTOP: restarted (pid $pid1 -> $pid2)" sh -c "[ '$pid2' != 0 ] && [ '$pid2' != '$pid1' ]"
check "SIGSTOP: /readyz 200 again" test "$(readyz)" = 200
in_node 'rm -r /run/systemd/system/p2pnode.service.d && systemctl daemon-reload'
echo "node: case 3 (daemon crashes) done at $((SECONDS - t0)) s"

# Power cut during an apply: unbind the free drive so the apply has work, start it, cut QEMU.
state_files() { in_node 'for f in /var/lib/p2pnode/state.json /etc/modprobe.d/*p2pnode* /etc/p2pnode/profiles/*.yaml; do [ -f "$f" ] && md5sum "$f"; done'; }
in_node "echo $free > /sys/bus/pci/drivers/vfio-pci/unbind; sync; (p2pnode apply --once >/dev/null 2>&1 &)"
sleep 0.5
node_kill
echo "node: QEMU killed (SIGKILL) during an apply"
node_start
node_wait_ssh || { echo "FAIL: boot after the power cut"; exit 1; }
in_node systemctl is-system-running --wait >/dev/null
check "power cut: state.json parses (or is absent)" in_node "[ ! -e /var/lib/p2pnode/state.json ] || python3 -c 'import json; json.load(open(\"/var/lib/p2pnode/state.json\"))'"
check "power cut: no temporary file left beside p2pnode's files" test -z "$(in_node 'find /var/lib/p2pnode /etc/p2pnode /etc/modprobe.d -name "*.tmp*" -o -name ".*.p2pnode*" 2>/dev/null')"
sum_vm=$(in_node md5sum /etc/p2pnode/profiles/node-vm.yaml | cut -d' ' -f1); sum_host=$(md5sum < "$here/profiles/node-vm.yaml" | cut -d' ' -f1)
check "power cut: the profile is intact" test "$sum_vm" = "$sum_host"
check "power cut: modprobe.d files written by p2pnode are complete (end with a newline)" in_node 'for f in $(grep -l p2pnode /etc/modprobe.d/* 2>/dev/null); do [ "$(tail -c1 $f | od -An -c | tr -d " ")" = "\n" ] || exit 1; done'
drive_ok
check "power cut: /readyz 200 after the boot" test "$(readyz)" = 200
echo "node: state after the power cut:"; state_files | sed 's/^/  /'
echo "node: case 3 done at $((SECONDS - t0)) s"
fi

# Case 2: every boot binds again (the power cut's boot of case 3 and case 4's two reboots check it
# too, so with case 3 this is the boot after the power cut, not one more boot); a second apply in
# the same boot writes nothing.
if has_case 2; then
if ! has_case 3; then
  node_reboot && node_wait_ssh || { echo "FAIL: reboot"; exit 1; }
  in_node systemctl is-system-running --wait >/dev/null
  drive_ok
fi
check "boot $NODE_BOOTS: no unit failed" test -z "$(in_node systemctl --failed --no-legend)"
in_node p2pnode apply --once --json > "$NODE_DIR/apply2.json" 2>"$NODE_DIR/apply2.err"
check "a second apply in the same boot writes nothing (\"writes\": 0)" python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(d["writes"] != 0 or d["failed"])' "$NODE_DIR/apply2.json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("  apply again: writes", d["writes"], "steps", [(s["action"], s.get("outcome")) for s in d["steps"]])' "$NODE_DIR/apply2.json" 2>&1 | head -3
echo "node: case 2 done at $((SECONDS - t0)) s"
fi

# Case 6: systemd's exposure scores of both units (the README records them).
if has_case 6; then
for u in p2pnode p2pnode-apply; do
  echo "node: systemd-analyze security $u: $(in_node systemd-analyze security $u.service --no-pager | tail -1)"
done
fi

# Case 5: Ansible over real SSH rolls the package out (again) and upgrades it, gated on /readyz.
if ! has_case 5; then :
elif command -v ansible-playbook >/dev/null; then
  version=$(sed -n 's/^project(p2pnode VERSION \([0-9.]*\).*/\1/p' "$repo/CMakeLists.txt")
  # The role takes packages named as build-deb.sh names them.
  mkdir -p "$NODE_DIR/debs"; cp "$deb" "$NODE_DIR/debs/p2pnode_${version}_amd64.deb"; deb=$NODE_DIR/debs/p2pnode_${version}_amd64.deb
  d=$NODE_DIR/repack; dpkg-deb -R "$deb" "$d"; sed -i "s/^Version: .*/Version: $version+1/" "$d/DEBIAN/control"
  deb2=$NODE_DIR/debs/p2pnode_${version}+1_amd64.deb; dpkg-deb --root-owner-group -b "$d" "$deb2" >/dev/null
  cat > "$NODE_DIR/inventory.yml" <<INV
all:
  children:
    gpu_nodes:
      hosts:
        node-vm:
          ansible_host: 127.0.0.1
          ansible_port: $NODE_PORT
          ansible_user: root
          ansible_connection: ssh
          ansible_ssh_private_key_file: $NODE_DIR/id_ed25519
          ansible_ssh_common_args: "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"
          ansible_python_interpreter: /usr/bin/python3
          p2pnode_service_manager: systemd
          p2pnode_profiles_dir: $here/profiles
          p2pnode_profiles: [node-vm.yaml]
          p2pnode_apt_cache_valid_time: 315360000
          p2pnode_ready_timeout: 180
INV
  echo marker > "$NODE_DIR/marker"; in_node "echo kept > /var/lib/p2pnode/upgrade-marker"
  pid1=$(in_node systemctl show -P MainPID p2pnode)
  # One run: it rolls the role out over the node apt made (profiles, configuration, token, the
  # package) and upgrades the package to VERSION+1 on the way, gated on /readyz.
  t=$SECONDS
  ANSIBLE_HOST_KEY_CHECKING=False ansible-playbook -i "$NODE_DIR/inventory.yml" "$repo/ansible/site.yml" -e "p2pnode_deb=$deb2" > "$NODE_DIR/ansible.log" 2>&1
  rc=$?; echo "node: ansible run rc $rc ($((SECONDS - t)) s)"; [ $rc = 0 ] || tail -25 "$NODE_DIR/ansible.log"
  check "ansible over SSH succeeded (gated on /readyz)" test $rc = 0
  check "ansible: the role's tasks ran over SSH (changed > 0)" grep -Eq "node-vm +: ok=[0-9]+ +changed=[1-9]" "$NODE_DIR/ansible.log"
  pid2=$(in_node systemctl show -P MainPID p2pnode)
  check "ansible upgrade: version $version+1 installed" test "$(in_node dpkg-query -W -f '\${Version}' p2pnode)" = "$version+1"
  check "ansible upgrade: the unit restarted (pid $pid1 -> $pid2)" sh -c "[ '$pid2' != 0 ] && [ '$pid2' != '$pid1' ]"
  check "ansible upgrade: /var/lib/p2pnode kept" test "$(in_node cat /var/lib/p2pnode/upgrade-marker)" = kept
  check "ansible upgrade: /readyz 200" test "$(readyz)" = 200
else
  fail "ansible-playbook is not installed: the Ansible case cannot run (scripts/install-deps.sh test)"
fi

# Case 4 (last: it changes the profile and the kernel): a kernel through apt, broken then fixed.
has_case 4 && case_kernel
echo "node: total $((SECONDS - t0)) s"
finish
