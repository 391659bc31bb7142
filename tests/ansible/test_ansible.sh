#!/bin/bash
# The roll-out, for real: the real ansible-playbook runs ansible/site.yml against three fresh
# Debian 12 nodes made here (copies of the debootstrap root cached by tests/lib/debian_root.sh,
# plus python3), reached through Ansible's chroot connection. Each node holds a different recorded
# machine from tests/fixtures (its sys, proc, dev, lib/modules, hostname; the process's own
# /proc/self comes from a real procfs), runs its daemon without systemd (p2pnode_service_manager:
# direct) on its own 127.0.0.N, with a stand-in agent replaying a passing self-test for its GPUs.
# The inventory is the example one (ansible/inventory.example.yml) with the three nodes added to its
# groups (the canary, then one group per kind, each naming its profile) and every play limited to
# them; their connection, addresses and plain HTTP are the test's own.
# The package is built from make test's build tree; apt inside each node fetches its libraries
# from Debian's archive.
# Asserts: canary order, the bad-BIOS node stops the roll-out with /readyz's reasons and the node
# after it is untouched, the summary, the good nodes ready with only their group's profile (a stray
# one removed), a second run changes nothing, an
# upgrade restarts the daemon and keeps its state, a failed upgrade is rolled back, the config
# and TLS checks of the role, the Prometheus configuration from the same inventory passes
# promtool check config, and ansible/kernel-upgrade.yml holds and stops where the next kernel breaks P2P. Cost: ~5-8 min (figures printed at the end).
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"
set -uo pipefail
# stdin from /dev/null: ansible-playbook refuses a non-blocking stdin ("Ansible requires blocking IO"),
# which another program sharing ctest's stdin may leave behind.
exec </dev/null
bin=${1:?usage: test_ansible.sh path/to/p2pnode}
bin=$(readlink -f "$bin")  # absolute: the script changes directory
source tests/lib/debian_root.sh
require ansible-playbook
ansible-doc -t connection community.general.chroot >/dev/null 2>&1 ||
  { echo "FAIL: Ansible's community.general.chroot connection is missing (package ansible: scripts/install-deps.sh test)"; exit 1; }
require debootstrap chroot
why=$(debian_root_skip_reason); [ -z "$why" ] || { echo "SKIP: $why"; exit 77; }
require dpkg-buildpackage dh promtool curl jq
build=$(cd "$(dirname "$bin")/.." && pwd)
src=$(pwd)
work=$(temp_dir ansible)
nodes=(node1 node2 node3)
declare -A fixture=([node1]=h200-4gpu [node2]=tinybox-6x4090-bios-default [node3]=epyc-8x4090-4nvme)
declare -A addr=([node1]=127.0.0.11 [node2]=127.0.0.12 [node3]=127.0.0.13)
cleanup() {
  local n p
  for n in "${nodes[@]}"; do
    p=$(cat "$work/$n/run/p2pnode.pid" 2>/dev/null) && kill "$p" 2>/dev/null
    mountpoint -q "$work/$n/.hostproc" && umount "$work/$n/.hostproc"
  done
  [ -n "${KEEP:-}" ] && { echo "work dir kept: $work"; return; }
  rm -rf "$work"
}
trap cleanup EXIT
t0=$SECONDS

# Packages: the one built from this tree, a next version, and a next-but-one whose daemon cannot
# start (its p2pnode-serve replaced by a program that exits 1), for the roll-back.
version=$(sed -n 's/^project(p2pnode VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
arch=$(dpkg --print-architecture)
deb1=$(scripts/build-deb.sh "$work/debs" "$build") || { fail "scripts/build-deb.sh"; exit 1; }
repack() {  # repack VERSION [broken] -> prints the new .deb
  local v=$1 d="$work/repack-$1" out="$work/debs/p2pnode_${1}_${arch}.deb"
  dpkg-deb -R "$deb1" "$d"
  sed -i "s/^Version: .*/Version: $v/" "$d/DEBIAN/control"
  if [ "${2:-}" = broken ]; then
    printf '#!/bin/sh\necho "p2pnode-serve: a broken build (tests/ansible)" >&2\nexit 1\n' > "$d/usr/libexec/p2pnode/p2pnode-serve"
    (cd "$d" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | xargs -0 md5sum > DEBIAN/md5sums)
  fi
  dpkg-deb --root-owner-group -b "$d" "$out" >/dev/null && echo "$out"
}
deb2=$(repack "$version+t1") && deb3=$(repack "$version+t2" broken) || { fail "repacking the next versions"; exit 1; }
t_debs=$((SECONDS - t0))

# Nodes.
t1=$SECONDS
for n in "${nodes[@]}"; do
  r=$work/$n f=tests/fixtures/${fixture[$n]}
  debian_root "$r" python || { fail "making node $n"; exit 1; }
  cp -a "$f/sys" "$r/"
  [ -d "$f/dev" ] && cp -a "$f/dev/." "$r/dev/"
  [ -d "$f/lib" ] && cp -a "$f/lib/." "$r/usr/lib/"
  for e in hostname default modprobe.d; do [ -e "$f/etc/$e" ] && cp -a "$f/etc/$e" "$r/etc/"; done
  rm -rf "${r:?}/proc"; cp -a "$f/proc" "$r/proc"
  mkdir "$r/.hostproc" && mount -t proc proc "$r/.hostproc" && ln -s /.hostproc/self "$r/proc/self"
  mkdir -p "$r/usr/local/lib/p2pnode-test"
  cp tests/serve/agents/replay.sh "$r/usr/local/lib/p2pnode-test/"
  gpus=$("$bin" check --root "$f" --profiles profiles --json | jq -r '.node.gpus[].bdf' | tr '\n' ' ')
  # shellcheck disable=SC2086
  python3 tests/serve/synth_agent_result.py tests/fixtures/gpu-runs/h200x4-rounds.json $gpus > "$r/usr/local/lib/p2pnode-test/result.json"
done
t_nodes=$((SECONDS - t1))
# The example inventory's groups get the nodes: node1 the canary and an H200 server, node2 a
# tinybox, node3 an 8x RTX 4090 server. Group test_nodes (a child of gpu_nodes, so its variables win
# over the example's fleet-wide TLS) holds what only the test has.
declare -A group=([node1]=h200_servers [node2]=rtx4090_workstations [node3]=rtx4090_servers)
{
  echo "gpu_nodes:"
  echo "  children:"
  echo "    test_nodes:"
  echo "      vars:"
  echo "        ansible_connection: community.general.chroot"
  echo "        ansible_python_interpreter: /usr/bin/python3"
  echo "        ansible_become: false"
  echo "        p2pnode_service_manager: direct"
  echo "        p2pnode_agent_path: /usr/local/lib/p2pnode-test/replay.sh"
  echo "        p2pnode_agent_args: [/usr/local/lib/p2pnode-test/result.json]"
  echo "        p2pnode_ready_timeout: 30"
  echo "        p2pnode_ready_delay: 1"
  echo "        p2pnode_allow_non_loopback: false"
  echo "        p2pnode_tls_cert_file: \"\""
  echo "        p2pnode_tls_key_file: \"\""
  echo "      hosts:"
  for n in "${nodes[@]}"; do
    echo "        $n: {ansible_host: $work/$n, p2pnode_listen: \"${addr[$n]}:9470\"}"
  done
  echo "    canary: {hosts: {node1: }}"
  for n in "${nodes[@]}"; do echo "    ${group[$n]}: {hosts: {$n: }}"; done
} > "$work/test-nodes.yml"
inventory=(-i ansible/inventory.example.yml -i "$work/test-nodes.yml")
export ANSIBLE_NOCOLOR=1 ANSIBLE_RETRY_FILES_ENABLED=0 ANSIBLE_PIPELINING=1
play() {  # play LOG ARGS...: ansible-playbook site.yml; its exit status
  local log=$1; shift
  local t=$SECONDS
  ansible-playbook "${inventory[@]}" ansible/site.yml -e '{"p2pnode_serial": [1, 1, "100%"]}' "$@" > "$work/$log" 2>&1
  local rc=$?
  echo "  ($log: ansible-playbook took $((SECONDS - t)) s, exit $rc)"
  return $rc
}
readyz() { curl -s -o /dev/null -w '%{http_code}' "http://${addr[$1]}:9470/readyz"; }
pkgver() { chroot "$work/$1" dpkg-query -W -f='${Version}' p2pnode 2>/dev/null; }
daemon_pid() { cat "$work/$1/run/p2pnode.pid" 2>/dev/null; }
runs_total() { jq '[.reconcile_runs // {} | .[]] | add // 0' "$work/$1/var/lib/p2pnode/state.json" 2>/dev/null; }
summary_line() { sed -n '/P2PNODE ROLL-OUT SUMMARY/,$p' "$work/$1" | grep "^$2 "; }
profile_of() { ansible-inventory "${inventory[@]}" --host "$1" | jq -r '.p2pnode_profiles | join(" ")'; }

ansible-playbook "${inventory[@]}" ansible/site.yml --syntax-check >/dev/null && pass "syntax" || fail "syntax"

# 1. All three: node1 is the canary, node2 (the tinybox as its BIOS left it) fails and stops the
# roll-out, node3 is never touched.
if play run1.log -e "p2pnode_deb=$deb1" --limit test_nodes; then fail "run 1 fails on the bad-BIOS node"; else pass "run 1 fails on the bad-BIOS node"; fi
[ "$(readyz node1)" = 200 ] && pass "node1 (${fixture[node1]}) is ready" || { fail "node1 ready: $(readyz node1)"; tail -40 "$work/run1.log"; }
grep -q "node2 is .*rebar" "$work/run1.log" && pass "node2 fails with the reasons from /readyz (rebar)" \
  || { fail "node2 fails with /readyz's reasons"; grep -n 'FAILED\|fatal' "$work/run1.log" | head; }
[ ! -e "$work/node3/usr/bin/p2pnode" ] && [ ! -e "$work/node3/etc/p2pnode" ] && pass "node3 is untouched (no package, no config)" || fail "node3 untouched"
summary_line run1.log node1 | grep -q 'ready, p2pnode' && summary_line run1.log node2 | grep -q FAILED &&
  summary_line run1.log node3 | grep -q untouched && pass "the summary lists every node with its state" \
  || { fail "summary"; sed -n '/P2PNODE ROLL-OUT SUMMARY/,$p' "$work/run1.log"; }
grep -q "^ok: \[node1\]" "$work/run1.log" && [ "$(grep -n 'node1\]' "$work/run1.log" | head -1 | cut -d: -f1)" -lt "$(grep -n 'node2\]' "$work/run1.log" | head -1 | cut -d: -f1)" ] \
  && pass "node1 ran first, as the canary" || fail "canary order"

# 2. Without the bad node: node3 is rolled out and ready; node1 unchanged (same daemon).
pid1=$(daemon_pid node1)
if play run2.log -e "p2pnode_deb=$deb1" --limit 'test_nodes:!node2'; then pass "run 2 (without node2) succeeds"; else fail "run 2"; tail -30 "$work/run2.log"; fi
[ "$(readyz node3)" = 200 ] && pass "node3 (${fixture[node3]}) is ready" || fail "node3 ready: $(readyz node3)"
[ "$(daemon_pid node1)" = "$pid1" ] && pass "node1's daemon was left running" || fail "node1's daemon restarted"
chroot "$work/node3" /usr/bin/p2pnode profiles validate /etc/p2pnode/profiles >/dev/null && pass "profiles installed and valid on node3" || fail "profiles on node3"
for n in node1 node3; do
  [ "$(ls "$work/$n/etc/p2pnode/profiles")" = "$(profile_of $n)" ] && pass "$n has its group's profile only: $(profile_of $n)" \
    || fail "$n's profiles: $(ls "$work/$n/etc/p2pnode/profiles" | tr '\n' ' ')(its group's: $(profile_of $n))"
done
[ "$(stat -c %a "$work/node3/etc/p2pnode/token" 2>/dev/null)" = 600 ] && pass "token is root-only" || fail "token is root-only"
grep -q "listen: \"${addr[node3]}:9470\"" "$work/node3/etc/p2pnode/p2pnode.yaml" && pass "config rendered with the node's own address" || fail "config rendered"
chroot "$work/node3" /usr/bin/p2pnode serve --check-config --config /etc/p2pnode/p2pnode.yaml >/dev/null 2>"$work/cc.err" \
  && pass "the rendered config is one the daemon accepts" || { fail "rendered config accepted"; cat "$work/cc.err"; }

# 3. Again: nothing changes.
if play run3.log -e "p2pnode_deb=$deb1" --limit 'test_nodes:!node2' && grep -Eq 'node1 +: ok=[0-9]+ +changed=0 ' "$work/run3.log" &&
   grep -Eq 'node3 +: ok=[0-9]+ +changed=0 ' "$work/run3.log"; then pass "a second run changes nothing"
else fail "a second run changes nothing"; grep -E 'changed:|PLAY RECAP' -A4 "$work/run3.log" | tail -12; fi

# 4. Upgrade to the next version: the daemon restarts, its state stays. A profile of another group
# left on node1 (as a roll-out that shipped every example left them) is removed.
cp profiles/epyc-8x4090.yaml "$work/node1/etc/p2pnode/profiles/"
pid1=$(daemon_pid node1); runs1=$(runs_total node1)
if play run4.log -e "p2pnode_deb=$deb2" --limit 'test_nodes:!node2'; then pass "run 4 upgrades to $version+t1"; else fail "run 4 (upgrade)"; tail -30 "$work/run4.log"; fi
[ "$(pkgver node1)" = "$version+t1" ] && [ "$(pkgver node3)" = "$version+t1" ] && pass "both nodes have $version+t1" || fail "versions after the upgrade: $(pkgver node1) $(pkgver node3)"
[ -n "$pid1" ] && [ "$(daemon_pid node1)" != "$pid1" ] && pass "the upgrade restarted the daemon" || fail "the upgrade restarted the daemon ($pid1 -> $(daemon_pid node1))"
[ "$(readyz node1)" = 200 ] && pass "and it is ready again" || fail "ready after the upgrade"
runs2=$(runs_total node1)
[ "${runs2:-0}" -gt "${runs1:-0}" ] && [ "${runs1:-0}" -gt 0 ] && pass "its state was kept (/var/lib/p2pnode: reconcile count $runs1 -> $runs2)" \
  || fail "state kept across the upgrade (reconcile count $runs1 -> $runs2)"
[ -f "$work/node1/var/cache/p2pnode/debs/p2pnode_${version}_${arch}.deb" ] && pass "the previous package is kept on the node" || fail "previous package kept"
[ "$(ls "$work/node1/etc/p2pnode/profiles")" = "$(profile_of node1)" ] && pass "the other group's profile left on node1 was removed" \
  || fail "node1's profiles after the run: $(ls "$work/node1/etc/p2pnode/profiles" | tr '\n' ' ')"

# 5. A broken next version: the canary does not become ready, is rolled back, the roll-out stops.
pid3=$(daemon_pid node3)
if play run5.log -e "p2pnode_deb=$deb3" --limit 'test_nodes:!node2'; then fail "run 5 (broken upgrade) fails"; else pass "run 5 (broken upgrade) fails"; fi
[ "$(pkgver node1)" = "$version+t1" ] && pass "node1 was rolled back to $version+t1" || fail "node1 rolled back (has $(pkgver node1))"
[ "$(readyz node1)" = 200 ] && pass "node1 is ready on the previous version" || fail "node1 ready after the roll-back"
grep -q "rolled back to $version+t1, which is ready" "$work/run5.log" && pass "the failure says it was rolled back" || { fail "roll-back message"; grep -n 'fatal\|FAILED' "$work/run5.log" | head; }
[ "$(pkgver node3)" = "$version+t1" ] && [ "$(daemon_pid node3)" = "$pid3" ] && pass "node3 untouched by the failed upgrade" || fail "node3 untouched by the failed upgrade"
summary_line run5.log node3 | grep -q untouched && pass "summary: node3 untouched" || fail "summary after the failed upgrade"

# 6. Roll-back off (p2pnode_upgrade_failure: stop), on node3: the broken version stays, saying so.
if play run6.log -e "p2pnode_deb=$deb3" -e p2pnode_upgrade_failure=stop --limit node3; then fail "run 6 (stop) fails"; else pass "run 6 (stop) fails"; fi
[ "$(pkgver node3)" = "$version+t2" ] && grep -q 'Left in place' "$work/run6.log" && pass "with stop, the new version is left in place, saying so" || fail "stop mode ($(pkgver node3))"

# 7. TLS: the template's tls block, validated by the daemon before it lands; a key readable by
# others fails the play at validation and the config in place stays.
tls_dir=$work/node1/etc/p2pnode/tls; mkdir -p "$tls_dir"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=${addr[node1]} \
  -addext subjectAltName=IP:${addr[node1]} -keyout "$tls_dir/key.pem" -out "$tls_dir/cert.pem" >/dev/null 2>&1
chmod 600 "$tls_dir/key.pem"
tls=(-e p2pnode_tls_cert_file=/etc/p2pnode/tls/cert.pem -e p2pnode_tls_key_file=/etc/p2pnode/tls/key.pem)
cfg=$work/node1/etc/p2pnode/p2pnode.yaml
if play run8.log -e "p2pnode_deb=$deb2" "${tls[@]}" --limit node1 && grep -q 'cert_file: /etc/p2pnode/tls/cert.pem' "$cfg" &&
   [ "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$tls_dir/cert.pem" "https://${addr[node1]}:9470/readyz")" = 200 ]; then
  pass "tls vars: a tls block the daemon accepts, restarted onto HTTPS, ready"
else fail "tls vars"; tail -20 "$work/run8.log"; fi
before=$(sha256sum "$cfg"); chmod 644 "$tls_dir/key.pem"
if play run9.log -e "p2pnode_deb=$deb2" "${tls[@]}" -e p2pnode_listen=${addr[node1]}:9471 --limit node1; then
  fail "a group/other-readable key fails the play"
else
  grep -q 'readable by group or others' "$work/run9.log" && pass "a group/other-readable key fails the play at validation, saying why" \
    || { fail "a group/other-readable key fails the play, saying why"; tail -20 "$work/run9.log"; }
fi
[ "$(sha256sum "$cfg")" = "$before" ] && pass "and the config in place is unchanged" || fail "and the config in place is unchanged"
chmod 600 "$tls_dir/key.pem"

# 7b. A hostile profile among the good ones: the play fails at validation on the node, and the
# profile never reaches /etc/p2pnode/profiles (which the daemon and the kernel hook read).
mkdir -p "$work/profiles-bad" && cp profiles/*.yaml "$work/profiles-bad/" && cp tests/profiles/hostile/module-name-cmdsubst.yaml "$work/profiles-bad/zz-hostile.yaml"
listed=$(ls "$work/node1/etc/p2pnode/profiles")
if play run10.log -e "p2pnode_deb=$deb2" "${tls[@]}" -e "p2pnode_profiles_dir=$work/profiles-bad" \
     -e '{"p2pnode_profiles": ["h200-nvlink.yaml", "zz-hostile.yaml"]}' --limit node1; then
  fail "a hostile profile fails the play"
else
  grep -q 'zz-hostile.yaml.*kernel_module.name' "$work/run10.log" && pass "a hostile profile fails the play at validation, naming the file and field" \
    || { fail "a hostile profile fails the play, naming the file and field"; grep -n 'fatal\|FAILED\|msg' "$work/run10.log" | head; }
fi
[ ! -e "$work/node1/etc/p2pnode/profiles/zz-hostile.yaml" ] && [ "$(ls "$work/node1/etc/p2pnode/profiles")" = "$listed" ] &&
  pass "and it never reached /etc/p2pnode/profiles" || fail "the hostile profile reached /etc/p2pnode/profiles"

# 8. Prometheus from the same inventory: file_sd targets, the rules, promtool check config.
if ansible-playbook "${inventory[@]}" ansible/prometheus.yml -e "p2pnode_prometheus_dir=$work/prom" > "$work/prom.log" 2>&1 &&
   promtool check config "$work/prom/prometheus.yml" > "$work/promtool.log" 2>&1; then
  pass "prometheus.yml from the inventory passes promtool check config"
else fail "prometheus config"; cat "$work/prom.log" "$work/promtool.log" | tail -20; fi
targets=$(jq -r '[.[] | select(.labels.node | test("^node[0-9]$")) | .targets[]] | join(" ")' "$work/prom/p2pnode-targets.json" 2>/dev/null)
[ "$targets" = "${addr[node1]}:9470 ${addr[node2]}:9470 ${addr[node3]}:9470" ] && pass "file_sd lists every test node: $targets" || fail "file_sd targets: $targets"
all_nodes=$(ansible-inventory "${inventory[@]}" --list | jq '[.gpu_nodes.children[] as $g | .[$g].hosts // [] | .[]] | unique | length')
[ "$(jq length "$work/prom/p2pnode-targets.json")" = "$all_nodes" ] && pass "and every other host of gpu_nodes ($all_nodes in all)" || fail "file_sd has $(jq length "$work/prom/p2pnode-targets.json") targets, gpu_nodes $all_nodes hosts"

# 9. ansible/kernel-upgrade.yml: the canary judges first; a node whose next kernel breaks P2P gets
# the kernel metapackages held (apt-mark, the node's real apt) and the roll-out stops, saying why.
# `p2pnode judge-kernel` itself (Debian's real headers, the real tree) is tests/dkms/test_judge_kernel.sh;
# here a stand-in on each node answers as it would (its exit status and verdict line).
for n in node1 node3; do
  cat > "$work/$n/usr/local/lib/p2pnode-test/judge.sh" <<'SH'
#!/bin/sh
[ "$1" = judge-kernel ] || { echo "judge.sh: expected judge-kernel, got $*" >&2; exit 2; }
echo "judge-kernel $(date +%s%N)" >> /usr/local/lib/p2pnode-test/judge.calls
cat /usr/local/lib/p2pnode-test/verdict.txt; exit "$(cat /usr/local/lib/p2pnode-test/verdict.rc)"
SH
  chmod +x "$work/$n/usr/local/lib/p2pnode-test/judge.sh"
done
verdict() { echo "$2" > "$work/$1/usr/local/lib/p2pnode-test/verdict.txt"; echo "$3" > "$work/$1/usr/local/lib/p2pnode-test/verdict.rc"; }
verdict node1 "the next kernel 6.1.0-56-amd64 (6.1.192-2) keeps P2P: nvidia-p2p/550.90.07 builds" 0
verdict node3 "the next kernel 6.1.0-56-amd64 (6.1.192-2) breaks nvidia-p2p/550.90.07: known breakage pci-resize-resource-exclude-bars" 1
kplay() {  # kplay LOG ARGS...
  local log=$1; shift
  ansible-playbook "${inventory[@]}" ansible/kernel-upgrade.yml -e p2pnode_bin=/usr/local/lib/p2pnode-test/judge.sh "$@" > "$work/$log" 2>&1
}
held() { chroot "$work/$1" apt-mark showhold | sort | tr '\n' ' '; }
if kplay kernel1.log --limit 'test_nodes:!node2'; then fail "kernel-upgrade.yml fails where the next kernel breaks P2P"; else pass "kernel-upgrade.yml fails where the next kernel breaks P2P"; fi
[ "$(held node3)" = "linux-headers-amd64 linux-image-amd64 " ] && pass "node3's kernel metapackages are held (apt-mark showhold)" || { fail "node3 held: '$(held node3)'"; tail -20 "$work/kernel1.log"; }
[ -z "$(held node1)" ] && pass "node1 (keeps P2P) holds nothing" || fail "node1 held: $(held node1)"
grep -q "node3: the next kernel 6.1.0-56-amd64 (6.1.192-2) breaks nvidia-p2p/550.90.07: known breakage pci-resize-resource-exclude-bars; held linux-image-amd64, linux-headers-amd64" "$work/kernel1.log" &&
  pass "the failure names the node, the verdict and what was held" || { fail "the failure's message"; grep -n 'fatal\|msg' "$work/kernel1.log" | head; }
[ "$(cut -d' ' -f2 "$work/node1/usr/local/lib/p2pnode-test/judge.calls")" -lt "$(cut -d' ' -f2 "$work/node3/usr/local/lib/p2pnode-test/judge.calls")" ] &&
  pass "the canary (node1) judged first" || fail "canary order in kernel-upgrade.yml"
# The canary itself breaking: the roll-out stops before the next batch, node3 is not judged.
chroot "$work/node3" apt-mark unhold linux-image-amd64 linux-headers-amd64 >/dev/null
verdict node1 "the next kernel 6.1.0-56-amd64 (6.1.192-2) breaks nvidia-p2p/550.90.07: nv-pci.c:234:9: error" 1
rm -f "$work"/node{1,3}/usr/local/lib/p2pnode-test/judge.calls
if kplay kernel2.log --limit 'test_nodes:!node2'; then fail "a breaking canary fails kernel-upgrade.yml"; else pass "a breaking canary fails kernel-upgrade.yml"; fi
[ ! -e "$work/node3/usr/local/lib/p2pnode-test/judge.calls" ] && [ -z "$(held node3)" ] && pass "and the nodes after it are not judged or held" || fail "nodes after a breaking canary were touched"
chroot "$work/node1" apt-mark unhold linux-image-amd64 linux-headers-amd64 >/dev/null

echo "figures: packages ${t_debs} s, 3 nodes ${t_nodes} s, whole test $((SECONDS - t0)) s"
finish
