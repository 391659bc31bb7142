#!/usr/bin/env bash
# Self-tests beside someone else's job, on a lent 2-GPU box (device kind nvidia-h200-x2 or any box
# with two GPUs). Run from the repository root after `bash tests/gpu/pack-busy.sh` here, carrying
# build-expect/:  run(kind=nvidia-h200-x2, carry=["build-expect"], command="bash tests/gpu/run-busy.sh")
# The daemon serves the real root read-only (apply: false, no device monitor; its state, profiles
# and token in a scratch directory); the job is build-expect/p2pnode-copy-load, copying between
# every pair of GPUs. It changes no setting of the box. What it shows, into $OUT:
#   busy-log.txt        every step and what the daemon answered (PASS/FAIL lines, then a count)
#   busy-processes.json p2pnode-agent --processes while the job runs (the job named per GPU)
#   busy-agent.json     an agent run beside the job (its contention samples), and busy-judge.txt:
#                       `p2pnode selftest judge` over it: contended, not "below threshold"
#   busy-selftest-api.json  GET /v1/selftest after each phase ({"A": …, "B": …, "C": …, "D": …});
#   busy-metrics.txt    the last scrape; busy-daemon-log.txt the daemon's log
# Phases: A) three runs on idle GPUs build the baseline; B) the job starts: the daemon restarted
# on the busy box skips its on-start run naming the job, /readyz stays 200, and the retry a
# minute later (trigger schedule) skips again; POST /v1/selftest without force is skipped too;
# C) selftest.when: always: the run is contended, reported, /readyz 200, baseline untouched;
# D) the job ends: a run passes against the baseline built in A.
set -u
. "$(dirname "$0")/lib.sh"
gpu_setup busy
W=$WORK
{ date -u; nvidia-smi -L; nvidia-smi --query-compute-apps=gpu_bus_id,pid,process_name,used_memory --format=csv; } >"$LOG" 2>&1

mkdir -p "$W/profiles" "$W/state"
(umask 077; head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$W/token")
TOKEN=$(cat "$W/token")
profile() {  # profile WHEN: the H200 profile, thresholds from the expectations, retry after 1m
  sed -e '/min_bandwidth:/,/any:/d' profiles/h200-nvlink.yaml | sed -e "s/^selftest:/selftest:\n  when: $1\n  retry_busy: 1m/" >"$W/profiles/h200.yaml"
}
profile idle
cat >"$W/p2pnode.yaml" <<Y
apiVersion: p2pnode/v1
kind: DaemonConfig
listen: 127.0.0.1:0
token_file: $W/token
profiles_dir: $W/profiles
state_dir: $W/state
apply: false
device_monitor: false
agent: {path: $BIN/p2pnode-agent, args: []}
selftest: {on_start: true}
Y
DPID=
start() {
  rm -f "$W/port"
  "$BIN/p2pnode-serve" serve --root / --config "$W/p2pnode.yaml" --port-file "$W/port" >>"$W/daemon.log" 2>&1 &
  DPID=$!
  for _ in $(seq 100); do [ -s "$W/port" ] && break; sleep 0.1; done
  URL=http://127.0.0.1:$(cat "$W/port")
}
stop() { kill "$DPID" 2>/dev/null; wait "$DPID" 2>/dev/null; }
get() { curl -s "$URL$1"; }
code() { curl -s -o /dev/null -w '%{http_code}' "$URL$1"; }
post() { curl -s -X POST -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' ${2:+--data "$2"} "$URL$1"; }
# wait_for SECONDS JQ-FILTER: polls /v1/selftest until the filter is true.
wait_for() {
  local deadline=$((SECONDS + $1))
  while [ $SECONDS -lt $deadline ]; do
    get /v1/selftest | jq -e "$2" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  return 1
}
runs() { get /metrics | awk -v r="$1" '$1 == "p2pnode_selftest_runs_total{result=\""r"\"}" {print $2}'; }

say "A: idle GPUs: the on-start run and two more build the baseline"
start
wait_for 120 '.verdict == "passed"' && pass "on-start self-test passed" || fail "on-start self-test: $(get /v1/selftest | jq -c '{verdict,reasons}')"
for i in 2 3; do
  before=$(get /v1/selftest | jq .started_unix)
  post /v1/selftest >/dev/null
  wait_for 120 ".started_unix != $before and .verdict == \"passed\"" && pass "run $i passed" || fail "run $i: $(get /v1/selftest | jq -c '{verdict,reasons}')"
  sleep 1
done
get /v1/selftest >"$W/selftest-A.json"

say "B: the job starts; the daemon restarts on the busy box"
"$BIN/p2pnode-copy-load" --seconds 200 >"$W/load.log" 2>&1 &
LOAD=$!
sleep 3
cat "$W/load.log" >>"$LOG"
nvidia-smi --query-compute-apps=gpu_bus_id,pid,process_name,used_memory --format=csv >>"$LOG" 2>&1
"$BIN/p2pnode-agent" --processes >"$OUT/busy-processes.json" 2>>"$LOG"
jq -e --argjson p "$LOAD" '[.processes[] | select(.pid == $p)] | length >= 2' "$OUT/busy-processes.json" >/dev/null \
  && pass "p2pnode-agent --processes names the job (pid $LOAD) on both GPUs" || fail "--processes: $(cat "$OUT/busy-processes.json")"
"$BIN/p2pnode-agent" >"$OUT/busy-agent.json" 2>>"$LOG"
jq -e --argjson p "$LOAD" '[.contention.before[], .contention.after[] | select(.pid == $p)] | length >= 2' "$OUT/busy-agent.json" >/dev/null \
  && pass "an agent run beside the job records it before and after" || fail "agent contention: $(jq -c .contention "$OUT/busy-agent.json")"
"$BIN/p2pnode" selftest judge --root / --profile "$W/profiles/h200.yaml" "$OUT/busy-agent.json" >"$OUT/busy-judge.txt" 2>&1
jrc=$?
grep -q ": contended" "$OUT/busy-judge.txt" && [ $jrc = 0 ] && pass "selftest judge calls that run contended (exit 0), naming the job" \
  || fail "selftest judge (exit $jrc): $(head -5 "$OUT/busy-judge.txt")"
stop
skips=0
start
wait_for 60 '.skipped != null and .skipped.trigger == "start"' && pass "restarted on busy GPUs: the on-start run is skipped" \
  || fail "on-start skip: $(get /v1/selftest | jq -c .skipped)"
get /v1/selftest | jq -e --argjson p "$LOAD" '[.skipped.seen.processes[] | select(.pid == $p)] | length >= 1' >/dev/null \
  && pass "the skip names the job: $(get /v1/selftest | jq -r .skipped.reason | cut -c1-160)" || fail "skip names the job"
[ "$(code /readyz)" = 200 ] && pass "/readyz 200 while the job runs" || fail "/readyz $(code /readyz): $(get /readyz)"
get /metrics | grep -q '^p2pnode_selftest_skipped_busy 1' && pass "p2pnode_selftest_skipped_busy 1" || fail "skipped_busy metric"
say "waiting for the retry (retry_busy: 1m)"
wait_for 100 '.skipped.trigger == "schedule"' && pass "the scheduled retry is skipped too (trigger schedule)" || fail "scheduled retry: $(get /v1/selftest | jq -c .skipped)"
skips=$(runs skipped)
post /v1/selftest >/dev/null
deadline=$((SECONDS + 60))
while [ $SECONDS -lt $deadline ] && [ "$(runs skipped)" = "$skips" ]; do sleep 0.5; done
get /v1/selftest | jq -e '.skipped.trigger == "api-selftest"' >/dev/null && [ "$(runs skipped)" != "$skips" ] \
  && pass "POST /v1/selftest without force is skipped" || fail "POST without force: $(get /v1/selftest | jq -c .skipped.trigger)"
get /v1/selftest >"$W/selftest-B.json"

say "C: selftest.when: always, beside the job"
profile always
before=$(get /v1/selftest | jq '.contended_run.started_unix // 0')
post /v1/selftest >/dev/null
wait_for 120 ".contended_run != null and .contended_run.started_unix != $before" && pass "the run beside the job is contended" \
  || fail "contended: $(get /v1/selftest | jq -c '{verdict, contended_run: .contended_run.reasons, skipped}')"
get /v1/selftest | jq -e --argjson p "$LOAD" '[.contended_run.contention.processes[] | select(.pid == $p)] | length >= 1' >/dev/null \
  && pass "it names the job" || fail "contended names the job"
[ "$(code /readyz)" = 200 ] && pass "/readyz stays 200" || fail "/readyz $(code /readyz): $(get /readyz)"
get /v1/selftest | jq -e '.verdict == "passed"' >/dev/null && pass "the judged run is still the last clean one (passed)" || fail "judged verdict"
get /metrics | grep -q '^p2pnode_selftest_contended 1' && pass "p2pnode_selftest_contended 1" || fail "contended metric"
get /v1/selftest >"$W/selftest-C.json"
say "the contended run's lowest cells (measured / expected):"
jq -r '.contended_run.expectations | sort_by(.ratio) | .[0:4][] | "\(.case) \(.gpu)->\(.peer_gpu // "host") \(.measured_gbps) / \(.expected_gbps) = \(.ratio)"' "$W/selftest-C.json" >>"$LOG"

say "D: the job ends; a run passes against the baseline from A"
kill "$LOAD" 2>/dev/null; wait "$LOAD" 2>/dev/null
cat "$W/load.log" >>"$LOG"
profile idle
before=$(get /v1/selftest | jq .started_unix)
post /v1/selftest >/dev/null
wait_for 120 ".started_unix != $before" || true
get /v1/selftest >"$W/selftest-D.json"
jq -e '.verdict == "passed" and (.warnings | length) == 0 and .contended_run == null' "$W/selftest-D.json" >/dev/null \
  && pass "after the job: passed, no regression against the baseline" || fail "after the job: $(jq -c '{verdict, reasons, warnings}' "$W/selftest-D.json")"
jq -e '[.expectations[] | select(.baseline_gbps != null)] | length > 0' "$W/selftest-D.json" >/dev/null \
  && pass "its cells were compared with the baseline the three clean runs built ($(jq '[.expectations[] | select(.baseline_gbps != null)] | length' "$W/selftest-D.json") cells)" \
  || fail "no baseline in the run after the job"
jq -n --slurpfile a "$W/selftest-A.json" --slurpfile b "$W/selftest-B.json" --slurpfile c "$W/selftest-C.json" \
  --slurpfile d "$W/selftest-D.json" '{A: $a[0], B: $b[0], C: $c[0], D: $d[0]}' >"$OUT/busy-selftest-api.json"
[ "$(code /readyz)" = 200 ] && pass "/readyz 200" || fail "/readyz after"
get /metrics >"$OUT/busy-metrics.txt"
grep -E '^p2pnode_selftest_(runs_total|contended|skipped_busy|other_processes)' "$OUT/busy-metrics.txt" >>"$LOG"
stop
cp "$W/daemon.log" "$OUT/busy-daemon-log.txt"
finish >/dev/null
tail -1 "$LOG"
rm -rf "$W"
[ "$FAILS" = 0 ]
