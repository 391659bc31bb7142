#!/bin/bash
# The remediation ladder (docs/remediation.md) in the node VM (tests/node/README.md): a Debian node
# booted by QEMU TCG through SeaBIOS and GRUB, systemd as PID 1, p2pnode installed by apt. The node
# has no GPU: a stand-in for the agent (ladder_agent.py, named by the daemon's agent.path) reports
# two GPUs whose peer access the test takes away and gives back; everything else is real: the
# miniature NVIDIA tree built by DKMS and reloaded by the reload_module rung, the reboot rung's
# `systemctl reboot` through GRUB, the ladder's record in /var/lib/p2pnode across a power cut.
#  A. P2P lost (the self-test fails): the ladder takes reload_module (the module really reloaded),
#     a self-test after it still fails; the power is cut in that self-test (between the rungs). The
#     next boot resumes where the record says: the self-test the reload wanted, then the reboot
#     rung, not the reload again. The node reboots; after that boot the self-test passes and the
#     ladder ends (recovered); the node is not ready until then.
#  B. Lost again within the profile's reboot_window: reload_module, a failed self-test, no second
#     reboot: the ladder stops at service_required, and stays there.
#  C. A person fixes it: still not ready until a self-test passes; then ready.
# Not in make test (which is at its time limit): run it by hand, as root:
#   bash tests/node/ladder_vm.sh path/to/build/daemon/p2pnode    (P2P_NODE_DEB=x.deb, P2P_NODE_KEEP=1
#   as for test_node.sh)
# Exit 0 all passed, 1 a check failed, 77 skipped (the reason is printed).
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"
set -u
exec </dev/null
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$repo/tests/lib/debian_root.sh"
DEBIAN_SUITE=${P2PNODE_RELEASE:-$(host_suite)}
. "$repo/tests/dist/release.sh"
. "$here/image.sh"
. "$here/vm.sh"
. "$here/case_kernel.sh"  # case_kernel_profile: the node's profile with the miniature driver
bin=${1:-build/daemon/p2pnode}
require debootstrap chroot qemu-system-x86_64 mkfs.ext4 ssh ssh-keygen python3
reason=$(node_image_skip_reason); [ -z "$reason" ] || skip "$reason"
[ -x "$bin" ] || [ -n "${P2P_NODE_DEB:-}" ] || die "p2pnode binary '$bin' is missing (build it first)"

NODE_DIR=$(temp_dir ladder)
trap '[ -n "${NODE_QEMU_PID:-}" ] && { [ -n "${P2P_NODE_KEEP:-}" ] && node_flush_journal; kill -9 $NODE_QEMU_PID; wait $NODE_QEMU_PID; } 2>/dev/null; [ -n "${P2P_NODE_KEEP:-}" ] && echo "kept $NODE_DIR" || rm -rf "$NODE_DIR"' EXIT
NODE_PORT=$(node_free_port)
in_node() { node_ssh "$@"; }
T=/var/lib/p2pnode-test  # the stand-in's files (ladder_agent.py says what each means)

# api PATH: the daemon's answer in the node: the HTTP status on the first line, the body after.
api() {
  in_node python3 - "$1" <<'PY'
import sys, urllib.request, urllib.error
try:
    r = urllib.request.urlopen("http://127.0.0.1:9470" + sys.argv[1], timeout=20)
    print(r.status); print(r.read().decode())
except urllib.error.HTTPError as e:
    print(e.code); print(e.read().decode())
except Exception as e:
    print("000"); print(e)
PY
}
readyz() { api /readyz | head -1; }
is_ready() { [ "$(readyz)" = 200 ]; }
# status PYEXPR: PYEXPR holds for /v1/status (s: the document, r: its remediation).
status_is() {
  api /v1/status | tail -n +2 > "$NODE_DIR/status.json"
  python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); r=s.get("remediation") or {}; sys.exit(0 if eval(sys.argv[2]) else 1)' \
    "$NODE_DIR/status.json" "$1" 2>/dev/null
}
# state_is PYEXPR: PYEXPR holds for the state file on the node's disk (r: its remediation record).
state_is() {
  in_node cat /var/lib/p2pnode/state.json > "$NODE_DIR/state.json"
  python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); r=s["remediation"]; sys.exit(0 if eval(sys.argv[2]) else 1)' \
    "$NODE_DIR/state.json" "$1" 2>/dev/null
}
# metric SERIES: its value in /metrics (empty when absent), e.g. metric 'p2pnode_remediation_active'.
metric() { api /metrics | awk -v k="$1" '$1 == k { print $2 + 0 }'; }
show_remediation() {
  api /v1/status | tail -n +2 | python3 -c 'import json,sys; s=json.load(sys.stdin); r=s.get("remediation") or {}
print("  state:", s.get("state"), "|", "; ".join(s.get("reasons", []))[:300])
print("  remediation: active %s, next %s, taken %s, service_required %s, why: %s" % (r.get("active"), r.get("next"), r.get("taken"), r.get("service_required"), r.get("why")))
for h in r.get("history", []): print("    rung %-13s outcome %-24s before: %.60s | after: %.60s" % (h["rung"], h["outcome"][:24], h["before"], h["after"]))' 2>&1
}
# The stand-in's self-tests: "BOOT VERDICT" per run, BOOT numbered by the order boots appear in its log.
agent_runs() {
  in_node cat /var/log/p2pnode-test-agent.log 2>/dev/null | python3 -c 'import json,sys
boots = []
for line in sys.stdin:
    d = json.loads(line)
    if d["boot_id"] not in boots: boots.append(d["boot_id"])
    if d["run"] == "selftest": print(boots.index(d["boot_id"]) + 1, d["verdict"])'
}
boot_id() { in_node cat /proc/sys/kernel/random/boot_id; }
agent_said_in_this_boot() {  # VERDICT: the stand-in logged a self-test with it in the running boot
  local b
  b=$(boot_id) || return 1
  in_node cat /var/log/p2pnode-test-agent.log 2>/dev/null | python3 -c 'import json,sys
sys.exit(not any(d["boot_id"] == sys.argv[1] and d["verdict"] == sys.argv[2] for d in map(json.loads, sys.stdin)))' "$b" "$1"
}
journal_has() { in_node "journalctl $1 -u p2pnode --no-pager -o cat | grep -qF -- '$2'"; }
journal_count() { in_node "journalctl $1 -u p2pnode --no-pager -o cat | grep -cF -- '$2'"; }
nvrm_loads() { in_node "journalctl -k $1 --no-pager -o cat | grep -c 'NVRM: loading'"; }

t0=$SECONDS
if [ -n "${P2P_NODE_DEB:-}" ]; then deb=$P2P_NODE_DEB
else deb=$(release_deb "$(cd "$(dirname "$bin")/.." && pwd)" "$DEBIAN_SUITE" "$NODE_DIR/deb" | tail -1); fi
[ -s "$deb" ] || die "no p2pnode package for $(suite_name "$DEBIAN_SUITE")"
echo "ladder: $(suite_name "$DEBIAN_SUITE"), package $(basename "$deb") ($((SECONDS - t0)) s)"
node_image "$NODE_DIR" "$deb" "$here/profiles/node-vm.yaml" || die "making the node image"
node_drives
node_start
node_wait_ssh || die "first boot"
in_node systemctl is-system-running --wait >/dev/null

# The operator adds the driver (the miniature tree through DKMS, reload allowed), a self-test and
# the ladder to the running node's profile, and points the daemon at the agent (the stand-in).
sha=$(cd "$repo/tests/vm/nvidia-mini" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
{ case_kernel_profile "$sha"; cat <<'Y'
selftest:
  when: idle
  cases: [peer_access]
# No GPU to reset in the VM, and nothing runs on the GPUs to wait for: reload, then reboot.
remediation:
  rungs: [reload_module, reboot]
  idle_wait: 10m
  reboot_window: 24h
Y
} > "$NODE_DIR/node-vm.yaml"
tar -C "$repo/tests/vm" -cf - nvidia-mini | in_node "mkdir -p /opt/p2pnode-test && tar -C /opt/p2pnode-test -xf -"
in_node "mkdir -p /usr/local/libexec/p2pnode-test && cat > /usr/local/libexec/p2pnode-test/p2pnode-agent && chmod 755 /usr/local/libexec/p2pnode-test/p2pnode-agent" < "$here/ladder_agent.py"
in_node "mkdir -p $T && cat > /etc/systemd/system/p2pnode-test-reboot-mark.service" <<UNIT
# tests/node/ladder_vm.sh: an orderly shutdown after the test took P2P away leaves $T/rebooted
# (a power cut leaves nothing): the stand-in agent's "a reboot gives the path back".
[Unit]
Description=p2pnode test: mark an orderly shutdown after a P2P loss
[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/true
ExecStop=/bin/sh -c 'if [ -e $T/lost ]; then date +%%s > $T/rebooted; sync; fi'
[Install]
WantedBy=multi-user.target
UNIT
in_node "systemctl daemon-reload && systemctl enable --now p2pnode-test-reboot-mark.service" 2>/dev/null
# The journal on the disk, so each boot's can be read in the next.
in_node "mkdir -p /var/log/journal && systemd-tmpfiles --create --prefix /var/log/journal && journalctl --flush"
in_node "install -m 600 /dev/null /etc/p2pnode/token && od -An -N32 -tx1 /dev/urandom | tr -d ' \n' > /etc/p2pnode/token"
in_node "sed -i 's|^  path: /usr/libexec/p2pnode/p2pnode-agent\$|  path: /usr/local/libexec/p2pnode-test/p2pnode-agent|' /etc/p2pnode/p2pnode.yaml"
in_node "cat > /etc/p2pnode/profiles/node-vm.yaml" < "$NODE_DIR/node-vm.yaml"
check "the profile with the ladder validates" in_node p2pnode profiles validate /etc/p2pnode/profiles/node-vm.yaml
check "the daemon's configuration names the stand-in agent" in_node \
  "grep -qx '  path: /usr/local/libexec/p2pnode-test/p2pnode-agent' /etc/p2pnode/p2pnode.yaml && p2pnode serve --check-config --strict"
t=$SECONDS
in_node p2pnode apply --once --json > "$NODE_DIR/apply-driver.json" 2> "$NODE_DIR/apply-driver.err"
check "apply built nvidia/550.90.07 through DKMS and loaded it ($((SECONDS - t)) s)" in_node "grep -q 550.90.07 /proc/driver/nvidia/version"
in_node systemctl restart p2pnode
wait_until 300 is_ready || { echo "ladder: not ready 300 s after the restart:"; show_remediation; }
check "boot 1: /readyz 200 with the profile's self-test passed" is_ready
check "boot 1: /v1/status: the self-test passed (the stand-in's document judged)" status_is 's["selftest"]["verdict"] == "passed"'
check "boot 1: /v1/status: remediation enabled, no ladder" status_is 'r["enabled"] and not r["active"] and not r["history"]'
check "boot 1: /metrics: no rung taken yet" test "$(metric 'p2pnode_remediation_rungs_total{rung="reload_module"}') $(metric 'p2pnode_remediation_rungs_total{rung="reboot"}')" = "0 0"
echo "ladder: node ready with the ladder at $((SECONDS - t0)) s"

# A. P2P lost until a reboot; the stand-in stops in the first self-test after the reload.
ino=$(in_node stat -c %i /sys/module/nvidia)
loads=$(nvrm_loads -b)
boot1=$(boot_id)
in_node "rm -f $T/rebooted; echo 40 > $T/delay_s; echo '{\"until\": \"reboot\", \"boot_id\": \"$boot1\", \"module_ino\": $ino, \"pause_after_reload\": true}' > $T/lost; sync"  # on disk before the power cut
check "A: a self-test requested (p2pnode selftest run)" in_node p2pnode selftest run
wait_until 300 agent_said_in_this_boot paused || { echo "ladder: the stand-in did not reach the self-test after a reload:"; agent_runs; show_remediation; }
echo "ladder: A: the self-test after the reload is running at $((SECONDS - t0)) s; the stand-in's runs: $(agent_runs | tr '\n' ',')"
check "A: the self-test failed first (peer access lost), then one ran after the reload" \
  test "$(agent_runs | tail -2 | tr '\n' ' ')" = "1 failed 1 paused "
check "A: the journal: the ladder took reload_module for the failed self-test" journal_has -b "remediation: taking reload_module (self-test failed"
check "A: the journal: reload_module done" journal_has -b "remediation: reload_module done"
check "A: the module was really reloaded (a new /sys/module/nvidia)" test "$(in_node stat -c %i /sys/module/nvidia)" != "$ino"
check "A: the kernel loaded it once more (NVRM: loading, $loads -> $(nvrm_loads -b))" test "$(nvrm_loads -b)" = $((loads + 1))
check "A: no reboot taken yet" test "$(journal_count -b 'remediation: taking reboot')" = 0
check "A: the record on disk before the power cut: reload_module taken and done, reboot next" \
  state_is 'r["active"] and r["taken"] == "reload_module" and r["next"] == 1 and [(h["rung"], h["outcome"]) for h in r["history"]] == [("reload_module", "done")] and r["trigger"].startswith("self-test failed")'
check "A: while the self-test after the reload runs: /readyz 503" test "$(readyz)" = 503
check "A: meanwhile /v1/status: degraded, the ladder's rung first among the reasons" \
  status_is 's["state"] == "degraded" and s["reasons"][0].startswith("remediation: taking reload_module") and r["active"]'
node_kill
echo "ladder: A: power cut (QEMU SIGKILLed) between reload_module and reboot at $((SECONDS - t0)) s"

# The next boot resumes the ladder: the self-test the reload wanted, then the reboot rung.
node_start
if node_wait_exit 600; then
  pass "A: boot 2 (after the power cut) rebooted by itself (the reboot rung; QEMU exits on a reboot)"
else
  fail "A: boot 2 did not reboot within 600 s"
  show_remediation; in_node "journalctl -b -u p2pnode --no-pager -o cat | tail -30"; die "no reboot"
fi
echo "ladder: A: boot 2 ended in a reboot $((SECONDS - NODE_T0)) s after it started"
node_start
node_wait_ssh || die "boot 3"
# The self-test after the reboot takes delay_s: the node says it is not ready while it runs.
wait_until 120 agent_said_in_this_boot started || echo "ladder: no self-test started in boot 3 within 120 s"
code=$(readyz); status_is 'r["active"] and r["taken"] == "reboot"'; st=$?
if agent_said_in_this_boot passed; then
  fail "A: boot 3: the self-test after the reboot passed before the test could look (delay_s too short)"
else
  check "A: boot 3: not ready while the self-test after the reboot runs (/readyz $code)" test "$code" = 503
  check "A: boot 3: meanwhile /v1/status: the ladder active, reboot the rung taken last" test $st = 0
fi
wait_until 300 is_ready || echo "ladder: not ready 300 s into boot 3"
show_remediation
check "A: boot 3: /readyz 200 once the self-test passed" is_ready
check "A: boot 3: the self-test passed" status_is 's["selftest"]["verdict"] == "passed" and s["state"] == "ready"'
check "A: /v1/status: the ladder ended: a self-test passed after reboot" status_is 'not r["active"] and not r["service_required"] and "passed after reboot" in r["why"]'
# reload_module's outcome was on disk before the self-test after it ran (and was cut): "done", and
# that self-test "failed".
check "A: /v1/status history: reload_module (done; the self-test after it failed), then reboot (done; passed), each once" \
  status_is '[(h["rung"], h["after"].split(":")[0], h["outcome"].split(":")[0]) for h in r["history"]] == [("reload_module", "failed", "done"), ("reboot", "passed", "done")]'
check "A: /v1/status: the reboot is remembered (last_reboot_unix)" status_is 'r["last_reboot_unix"] > 0'
check "A: the stand-in's self-tests after the loss: boot 1 failed, paused (cut); boot 2 failed; boot 3 passed" \
  test "$(agent_runs | grep -vx '1 passed' | tr '\n' ' ')" = "1 failed 1 paused 2 failed 3 started 3 passed "
check "A: boot 2 (journal -b -1): the resumed ladder took the reboot" journal_has "-b -1" "remediation: taking reboot (self-test failed"
check "A: boot 2 (journal -b -1): reload_module not taken again" test "$(journal_count "-b -1" "remediation: taking reload_module")" = 0
check "A: boot 2 ended in an orderly shutdown ($T/rebooted), not a power cut" in_node test -e $T/rebooted
check "A: boot 3: the journal: P2P is back, the ladder ends" journal_has -b "remediation: P2P is back, a self-test passed after reboot"
check "A: /metrics: rungs_total reload_module 1, reboot 1" test \
  "$(metric 'p2pnode_remediation_rungs_total{rung="reload_module"}') $(metric 'p2pnode_remediation_rungs_total{rung="reboot"}')" = "1 1"
check "A: /metrics: ladders_total recovered 1, service_required 0; active 0" test \
  "$(metric 'p2pnode_remediation_ladders_total{outcome="recovered"}') $(metric 'p2pnode_remediation_ladders_total{outcome="service_required"}') $(metric p2pnode_remediation_active)" = "1 0 0"
echo "ladder: A done at $((SECONDS - t0)) s"

# B. Lost again, within the reboot window: reload, a failed self-test, no second reboot.
boot3=$(boot_id)
in_node "echo '{\"until\": \"never\"}' > $T/lost; sync"
in_node p2pnode selftest run --wait > "$NODE_DIR/selftest-b.txt" 2>&1
sed 's/^/  selftest run: /' "$NODE_DIR/selftest-b.txt" | tail -2
show_remediation
check "B: the self-test failed" grep -qx "self-test failed" "$NODE_DIR/selftest-b.txt"
check "B: /v1/status: service required: the reboot window holds the reboot" \
  status_is 'r["active"] and r["service_required"] and "the profile allows one in 24 h" in r["why"]'
check "B: /v1/status: the node is not ready, the reason names service required" \
  status_is 's["state"] in ("blocked", "failed") and any(x.startswith("remediation: service required") for x in s["reasons"])'
check "B: /readyz 503" test "$(readyz)" = 503
check "B: the journal: reload_module taken for the new loss, then service required" in_node \
  "journalctl -b -u p2pnode --no-pager -o cat | grep -e '^remediation: taking' -e '^remediation: service required' | tail -2 | tr '\n' '|' | grep -q '^remediation: taking reload_module (self-test failed.*|remediation: service required: a reboot .* ago did not bring P2P back'"
check "B: /metrics: rungs_total reload_module 2, reboot still 1" test \
  "$(metric 'p2pnode_remediation_rungs_total{rung="reload_module"}') $(metric 'p2pnode_remediation_rungs_total{rung="reboot"}')" = "2 1"
check "B: /metrics: ladders_total service_required 1; p2pnode_remediation_service_required 1" test \
  "$(metric 'p2pnode_remediation_ladders_total{outcome="service_required"}') $(metric p2pnode_remediation_service_required)" = "1 1"
# It stays there: two health passes later (each may start a pass) nothing more is taken.
health_at() { api /v1/health | tail -n +2 | python3 -c 'import json,sys; print(json.load(sys.stdin).get("last_pass_unix") or 0)'; }
h0=$(health_at)
health_moved() { [ "$(health_at)" -gt $((h0 + 10)) ]; }
wait_until 120 health_moved || echo "ladder: the health pass did not run twice in 120 s"
check "B: two health passes later: no rung more, still service required, no reboot" test \
  "$(metric 'p2pnode_remediation_rungs_total{rung="reload_module"}') $(metric 'p2pnode_remediation_rungs_total{rung="reboot"}') $(metric p2pnode_remediation_service_required) $(boot_id)" = "2 1 1 $boot3"
echo "ladder: B done at $((SECONDS - t0)) s"

# C. A person gives P2P back: not ready until a self-test says so.
in_node rm $T/lost
check "C: P2P back, no self-test yet: still /readyz 503" test "$(readyz)" = 503
in_node p2pnode selftest run --wait > "$NODE_DIR/selftest-c.txt" 2>&1
check "C: the self-test passed" grep -qx "self-test passed" "$NODE_DIR/selftest-c.txt"
wait_until 120 is_ready
check "C: /readyz 200 after it" test "$(readyz)" = 200
check "C: the ladder ended recovered (ladders_total recovered 2), none active" test \
  "$(metric 'p2pnode_remediation_ladders_total{outcome="recovered"}') $(metric p2pnode_remediation_active) $(metric p2pnode_remediation_service_required)" = "2 0 0"
show_remediation
echo "ladder: total $((SECONDS - t0)) s"
finish
