#!/usr/bin/env bash
# The remediation ladder on a lent GPU box, read-only: the rung a lent box allows (wait_idle: the
# ladder never resets, reloads or reboots a machine it does not own), with the real agent, NVML's
# view of the processes and a real job on the GPUs. Any box with NVIDIA GPUs, one or more. Run from
# the repository root after `bash tests/gpu/pack-busy.sh BUILD_DIR` here, carrying build-expect/:
#   run(carry=["build-expect"], command="bash tests/gpu/run-remediation.sh")
# The lost P2P path is a planted one: $W/fault holds how many self-tests are still to fail, each a
# real agent run that reports corrupted bytes (below: PLANT), so the self-test fails as a pair that
# copied wrong bytes does. The daemon
# serves the real root with apply: false; its profile, state and token live in a scratch directory.
# Into $OUT:
#   remediation-log.txt        every step and what the daemon answered (PASS/FAIL lines, a count)
#   remediation-*-api.json     /v1/status's remediation after each scenario
#   remediation-metrics.txt    the last scrape; remediation-daemon-log.txt the daemon's log
# Scenarios (each a fresh daemon and state):
#   R) one failed self-test: the ladder starts, wait_idle runs on idle GPUs, the self-test after it
#      passes: ready again, the rung's record has what it saw before and after, one ladder recovered.
#   B) the failed self-test beside a job (selftest.when: always; a wrong byte fails under load too):
#      the ladder waits and says why, no rung while the job runs (1 min; the self-tests beside it
#      are contended, not judged); the job ends within idle_wait and the next self-test passes:
#      P2P is back, the ladder ends recovered (with or without its rung), ready again.
#   S) every self-test fails: wait_idle, a self-test that fails again, no rung left: blocked with
#      "remediation: service required", /readyz 503, the alert's metric 1, no rung taken again.
set -u
. "$(dirname "$0")/lib.sh"
gpu_setup remediation
W=$WORK
{ date -u; nvidia-smi -L; } >"$LOG" 2>&1
N=$(nvidia-smi -L | grep -c '^GPU ')
# pci.device_id is 0xDDDDVVVV: the device id is its first half.
DEV=$(nvidia-smi --query-gpu=pci.device_id --format=csv,noheader | head -n 1 | cut -c1-6 | tr 'A-F' 'a-f')

mkdir -p "$W/profiles"
(umask 077; head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$W/token")
TOKEN=$(cat "$W/token")
profile() {  # profile WHEN IDLE_WAIT: the box's GPUs, a self-test, and the one rung a lent box allows
  cat >"$W/profiles/ladder.yaml" <<Y
apiVersion: p2pnode/v1
kind: NodeProfile
metadata:
  name: ladder
  description: the lent box, its ladder limited to what a borrowed machine allows
match:
  gpus:
    vendor: 0x10de
    devices: [$DEV]
    count: $N
selftest:
  when: $1
  schedule: 6h
  time_limit: 2m
remediation:
  rungs: [wait_idle]
  idle_wait: $2
Y
}
# How a fault is planted: with two GPUs the agent's own --inject-corruption 0:1 (one integrity copy
# of pair 0->1 skewed, which its check must catch); a one-GPU box has no pair to skew, so the real
# run's document is given 4096 corrupted bytes in its summary (and the status and exit code an agent
# gives them), which the judge fails the same way.
if [ "$N" -ge 2 ]; then
  PLANT="exec \"$BIN/p2pnode-agent\" \"\$@\" --inject-corruption 0:1"
else
  PLANT="\"$BIN/p2pnode-agent\" \"\$@\" | jq -c '.summary.integrity_bad_bytes = 4096 | .status = \"failed\" | .exit_code = 1'; exit 1"
fi
cat >"$W/agent" <<A
#!/bin/sh
# The real agent. $W/fault holds how many self-tests are still to fail; each takes one. The
# process and health probes pass through untouched.
case " \$* " in *" --processes "*|*" --health "*) exec "$BIN/p2pnode-agent" "\$@" ;; esac
n=\$(cat "$W/fault" 2>/dev/null || echo 0)
if [ "\$n" -gt 0 ]; then
  echo \$((n - 1)) > "$W/fault"
  $PLANT
fi
exec "$BIN/p2pnode-agent" "\$@"
A
chmod +x "$W/agent"

DPID= URL=
start() {  # start SCENARIO: a fresh state directory and daemon
  mkdir -p "$W/state-$1"
  cat >"$W/p2pnode-$1.yaml" <<Y
apiVersion: p2pnode/v1
kind: DaemonConfig
listen: 127.0.0.1:0
token_file: $W/token
profiles_dir: $W/profiles
state_dir: $W/state-$1
apply: false
device_monitor: false
agent: {path: $W/agent, args: []}
selftest: {on_start: true}
Y
  rm -f "$W/port"
  "$BIN/p2pnode-serve" serve --root / --config "$W/p2pnode-$1.yaml" --port-file "$W/port" >>"$W/daemon.log" 2>&1 &
  DPID=$!
  for _ in $(seq 100); do [ -s "$W/port" ] && break; sleep 0.1; done
  URL=http://127.0.0.1:$(cat "$W/port")
}
stop() { kill "$DPID" 2>/dev/null; wait "$DPID" 2>/dev/null; }
get() { curl -s "$URL$1"; }
code() { curl -s -o /dev/null -w '%{http_code}' "$URL$1"; }
reconcile() { curl -s -o /dev/null -X POST -H "Authorization: Bearer $TOKEN" "$URL/v1/reconcile"; }
rem() { get /v1/status | jq -c '.remediation'; }
# until SECONDS JQ-FILTER: polls /v1/status until the filter is true, asking for a pass every 5 s
# (the daemon's own ladder pass comes once a minute).
until_status() {
  local deadline=$((SECONDS + $1)) next=$((SECONDS + 5))
  while [ $SECONDS -lt $deadline ]; do
    get /v1/status | jq -e "$2" >/dev/null 2>&1 && return 0
    [ $SECONDS -lt $next ] || { reconcile; next=$((SECONDS + 5)); }
    sleep 1
  done
  return 1
}
metric() { get /metrics | awk -v m="$1" '$1 == m {print $2}'; }

# The daemon's log reaches $OUT as it grows, so a run cut short still leaves it.
(while sleep 10; do cp "$W/daemon.log" "$OUT/remediation-daemon-log.txt" 2>/dev/null; done) &
COPIER=$!
say "R: one failed self-test (a planted fault), then a passing one: recovered"
profile idle 1m
echo 1 >"$W/fault"
start R
until_status 90 '.remediation.ladders.recovered == 1' &&
  pass "R: a ladder ran and recovered: $(rem)" || fail "R: $(get /v1/status | jq -c '{state, reasons, selftest: .selftest.verdict, remediation}')"
[ "$(metric 'p2pnode_selftest_runs_total{result="failed"}')" = 1 ] && pass "R: one self-test failed (the planted pair)" ||
  fail "R: $(get /metrics | grep '^p2pnode_selftest_runs_total')"
get /v1/status | jq -e '.remediation.history[0] | .rung == "wait_idle" and (.outcome | test("^done")) and (.before | test("self-test failed")) and (.after | test("passed"))' >/dev/null &&
  pass "R: wait_idle's record: before '$(get /v1/status | jq -r '.remediation.history[0].before')', after '$(get /v1/status | jq -r '.remediation.history[0].after')'" ||
  fail "R: the rung's record: $(get /v1/status | jq -c '.remediation.history')"
until_status 60 '.state == "ready"' && [ "$(code /readyz)" = 200 ] && pass "R: ready again, /readyz 200" ||
  fail "R: $(get /v1/status | jq -c '{state, reasons}')"
[ "$(metric 'p2pnode_remediation_ladders_total{outcome="recovered"}')" = 1 ] && pass "R: ladders_total{outcome=recovered} 1" ||
  fail "R: $(get /metrics | grep '^p2pnode_remediation')"
[ "$(metric 'p2pnode_remediation_rungs_total{rung="wait_idle"}')" = 1 ] && pass "R: rungs_total{rung=wait_idle} 1" ||
  fail "R: $(get /metrics | grep '^p2pnode_remediation_rungs')"
get /v1/status | jq '.remediation' >"$OUT/remediation-R-api.json"
stop

say "S: the fault stays: service required"
profile idle 1m
echo 99 >"$W/fault"
start S
until_status 150 '.remediation.service_required == true' && pass "S: service required: '$(get /v1/status | jq -r '.remediation.why')'" ||
  fail "S: $(get /v1/status | jq -c '{state, reasons, remediation}')"
# Blocked at least: failed when the last self-test's own verdict is worse.
get /v1/status | jq -e '(.state == "blocked" or .state == "failed") and any(.reasons[]; test("remediation: service required"))' >/dev/null &&
  pass "S: $(get /v1/status | jq -r .state), the first reason: $(get /v1/status | jq -c '.reasons[0]')" || fail "S: $(get /v1/status | jq -c '{state, reasons}')"
[ "$(code /readyz)" = 503 ] && pass "S: /readyz 503" || fail "S: /readyz $(code /readyz)"
[ "$(metric p2pnode_remediation_service_required)" = 1 ] && pass "S: p2pnode_remediation_service_required 1" ||
  fail "S: $(get /metrics | grep '^p2pnode_remediation')"
n=$(metric 'p2pnode_remediation_rungs_total{rung="wait_idle"}')
reconcile; sleep 5; reconcile; sleep 5
[ "$(metric 'p2pnode_remediation_rungs_total{rung="wait_idle"}')" = "$n" ] && pass "S: no rung again after service required ($n taken)" ||
  fail "S: rungs went on: $(get /metrics | grep '^p2pnode_remediation_rungs')"
get /v1/status | jq '.remediation' >"$OUT/remediation-S-api.json"
stop
cp "$W/daemon.log" "$OUT/remediation-daemon-log.txt"

say "B: a fault found beside a job (selftest.when: always; integrity fails under load too): the ladder waits"
profile always 4m
"$BIN/p2pnode-copy-load" --seconds 60 >"$W/load.log" 2>&1 &
LOAD=$!
sleep 5  # the job's contexts are up and copying
nvidia-smi --query-compute-apps=gpu_bus_id,pid,process_name --format=csv >>"$LOG" 2>&1
echo 1 >"$W/fault"
start B
until_status 50 '.remediation.active == true' && pass "B: the failed self-test beside the job started the ladder: $(rem)" ||
  fail "B: no ladder: $(get /v1/status | jq -c '{state, reasons, selftest: .selftest.verdict, remediation}')"
reconcile; sleep 2
until_status 10 '.remediation.why | test("idle|job|process")' && pass "B: the ladder waits: '$(get /v1/status | jq -r '.remediation.why')'" ||
  fail "B: why: $(rem)"
[ "$(metric 'p2pnode_remediation_rungs_total{rung="wait_idle"}')" = 0 ] && pass "B: no rung taken while the job runs" ||
  fail "B: a rung under the job: $(get /metrics | grep '^p2pnode_remediation_rungs')"
wait "$LOAD"
say "B: the job ended"
get /v1/status | jq '.remediation' >"$OUT/remediation-B-api.json"
until_status 120 '.remediation.ladders.recovered == 1' &&
  pass "B: after the job the ladder ended recovered: '$(get /v1/status | jq -r '.remediation.why')' (rungs: $(get /v1/status | jq -c '.remediation.rungs_taken'))" || fail "B: $(get /v1/status | jq -c '{state, reasons, selftest: .selftest, remediation}')"
until_status 60 '.state == "ready"' && pass "B: ready again" || fail "B: $(get /v1/status | jq -c '{state, reasons}')"
get /v1/status | jq '.remediation' >"$OUT/remediation-B-api.json"
get /metrics >"$OUT/remediation-metrics.txt"
stop


kill "$COPIER" 2>/dev/null
cp "$W/daemon.log" "$OUT/remediation-daemon-log.txt"
finish >/dev/null
cat "$LOG"
rm -rf "$W"
[ "$FAILS" -eq 0 ]
