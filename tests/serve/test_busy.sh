#!/bin/bash
# Self-tests beside jobs, through the daemon: the recorded 4x H200 node, an agent stand-in that
# answers `--processes` from a jobs file as NVML would (or says it has no NVML) and replays the
# real NV18 run with its contention samples (bandwidth at 54 % while a job runs, as measured on the
# real box beside a copy loop). selftest.when idle skips a busy node's run naming the job, with
# /readyz 200; {"force": true} runs it and the run is contended: reported, not judged, the
# baseline untouched; when: always runs and marks it; when: never runs nothing by itself; the
# scheduler's busy file and, without NVML, the holders of /dev/nvidia* make it busy too. About 10 s.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
BIN=${1:?usage: test_busy.sh PATH-TO-p2pnode}
source "$(dirname "$0")/lib.sh"
require curl jq python3

JOBS=$WORK/jobs          # "GPU PID NAME" per line: what NVML would list
NONVML=$WORK/no-nvml     # present: the stand-in says NVML is not there
AGENT=$WORK/agent.sh
cat > "$AGENT" <<SH
#!/bin/sh
exec python3 "$WORK/agent.py" "\$@"
SH
chmod +x "$AGENT"
cat > "$WORK/agent.py" <<PY
import json, os, sys
jobs = []
if os.path.exists("$JOBS"):
    for line in open("$JOBS"):
        gpu, pid, name = line.split()
        jobs.append({"gpu": gpu, "pid": int(pid), "name": name, "used_memory_bytes": 1717986918})
nvml = not os.path.exists("$NONVML")
if "--processes" in sys.argv:
    print(json.dumps({"schema_version": 1, "kind": "gpu_processes", "agent": {"name": "p2pnode-agent", "version": "test"},
                      "source": "nvml" if nvml else "none", "reason": None if nvml else "NVML not available: libnvidia-ml.so.1 not found",
                      "gpus": [], "processes": jobs if nvml else []}))
    sys.exit(0)
d = json.load(open("$SRC/tests/unit/agent/data/h200x2-nv18.json"))
f = 0.54 if jobs else 1.0
for c in d["cases"]:
    for cell in c["cells"]:
        for k in ("bandwidth_gbps", "direction_bandwidth_gbps"):
            if isinstance(cell.get(k), dict):
                for s in ("median", "mean", "min", "max", "p10", "p90"): cell[k][s] *= f
    c["foreign_processes"] = jobs if nvml else []
d["contention"] = {"source": "nvml" if nvml else "none", "reason": None if nvml else "no NVML",
                   "before": jobs if nvml else [], "after": jobs if nvml else []}
print(json.dumps(d))
PY

profile() {  # profile WHEN [EXTRA-SELFTEST-YAML]
  sed -e '/min_bandwidth:/,/any:/d' -e "s|^selftest:|selftest:\n  when: $1\n  retry_busy: 1h${2:+\n$2}|" \
    "$SRC/profiles/h200-nvlink.yaml" > "$WORK/h200/root/etc/p2pnode/profiles/h200-nvlink.yaml"
}
make_node h200 h200-4gpu "$SRC/profiles/h200-nvlink.yaml"
profile idle
write_config h200 "$AGENT" "[]"
start_daemon h200 || exit 1
AUTH=(-H "Authorization: Bearer $TOKEN" -H "Content-Type: application/json")
ST=$WORK/h200/root/var/lib/p2pnode/state.json
sel() { curl -s "$URL/v1/selftest"; }
# post_selftest [BODY]: POST /v1/selftest, then wait until that pass is over: a pass that was
# running when it came ends with the request still queued, so queued must be false too.
# retry_busy is an hour (the profile above): on a loaded machine this test may take over a minute,
# and a retry of the busy skip must not run between a request and the checks that read it.
post_selftest() {
  local runs; runs=$(curl -s "$URL/v1/status" | jq '.reconcile.runs | add')
  record "post_selftest_$RANDOM" POST /v1/selftest "${AUTH[@]}" ${1:+--data "$1"}
  wait_until 30 bash -c "curl -s '$URL/v1/status' | jq -e '(.reconcile.runs | add) > $runs and .reconcile.running == false and .reconcile.queued == false' >/dev/null"
}

check "idle GPUs: the start self-test passed" jq -e '.verdict == "passed" and .skipped == null and .contended_run == null' <(sel)
for _ in 1 2; do post_selftest; done
check "three clean runs: passed" jq -e '.verdict == "passed"' <(sel)
BASE=$(jq -c .baselines "$ST")

# --- a job on two GPUs; selftest.when idle (the default) ---
printf '0000:00:06.0 4242 python3\n0000:00:07.0 4242 python3\n' > "$JOBS"
post_selftest
record selftest_skipped GET /v1/selftest
check "a busy node's requested run is skipped" jq -e '.skipped.trigger == "api-selftest" and .skipped.busy == true' <<<"$BODY"
check "the skip names the job and how to force it" \
  jq -e '.skipped.reason | test("pid 4242 \\(python3, 1.60 GiB\\) on 0000:00:06.0, 0000:00:07.0") and test("force")' <<<"$BODY"
check "the judged run is still the clean one" jq -e '.verdict == "passed"' <<<"$BODY"
record readyz_busy GET /readyz
check "/readyz stays 200 while the job runs" test "$STATUS" = 200
record status_busy GET /v1/status
check "/v1/status says why no self-test ran" jq -e '.selftest_note | test("^self-test skipped \\(api-selftest\\): the GPUs are busy")' <<<"$BODY"
check "p2pnode_selftest_skipped_busy 1, the job counted" \
  bash -c "curl -s '$URL/metrics' | grep -q '^p2pnode_selftest_skipped_busy 1' && curl -s '$URL/metrics' | grep -q '^p2pnode_selftest_other_processes 2'"
"$BIN" status --url "$URL" > "$WORK/status.txt"
check "p2pnode status prints the skip" grep -q '^self-test skipped (api-selftest): the GPUs are busy' "$WORK/status.txt"
CLI=("$BIN" selftest run --url "$URL" --root "$WORK/h200/root" --config "$WORK/h200/p2pnode.yaml" --wait --timeout 30)
"${CLI[@]}" > "$WORK/run.txt" 2>&1; rc=$?
check "p2pnode selftest run --wait on the busy node: skipped, exit 1" \
  bash -c "test $rc = 1 && grep -q '^self-test skipped (api-selftest): the GPUs are busy; compute processes on the GPUs (NVML): pid 4242' '$WORK/run.txt'"

# --- forced (the CLI's --force): it runs, and is contended ---
"${CLI[@]}" --force > "$WORK/run.txt" 2>&1; rc=$?
check "p2pnode selftest run --force --wait: contended, exit 0" \
  bash -c "test $rc = 0 && grep -q '(force: even beside other jobs)' '$WORK/run.txt' && grep -q '^self-test contended (api-selftest): another process used the GPUs' '$WORK/run.txt'"
record selftest_contended GET /v1/selftest
check "forced: the run is contended" jq -e '.contended_run.verdict == "contended" and .skipped == null' <<<"$BODY"
check "it names the job and where it was seen" \
  jq -e '.contended_run.contention.processes[0].pid == 4242 and (.contended_run.contention.seen_at | index("before") != null)' <<<"$BODY"
check "its figures are shown, not judged (54 % of expected)" \
  jq -e '(.contended_run.reasons[0] | test("^another process used the GPUs during the run")) and ([.contended_run.reasons[] | select(test("^not judged: "))] | length > 0) and ([.contended_run.expectations[] | .ratio] | min < 0.6)' <<<"$BODY"
check "the judged run stays passed" jq -e '.verdict == "passed"' <<<"$BODY"
check "/readyz 200 after a contended run" test "$(curl -s -o /dev/null -w '%{http_code}' "$URL/readyz")" = 200
check "the baseline did not take the shared run's figures" test "$(jq -c .baselines "$ST")" = "$BASE"
check "p2pnode_selftest_contended 1" bash -c "curl -s '$URL/metrics' | grep -q '^p2pnode_selftest_contended 1'"
check "p2pnode_selftest_runs_total{result=\"contended\"} 1" bash -c "curl -s '$URL/metrics' | grep -q '^p2pnode_selftest_runs_total{result=\"contended\"} 1'"

# --- bad bodies ---
record post_bad_body POST /v1/selftest "${AUTH[@]}" --data 'force'
check "a body that is not JSON: 400" test "$STATUS" = 400
record post_bad_force POST /v1/selftest "${AUTH[@]}" --data '{"force": "yes"}'
check "force must be a boolean: 400 naming it" bash -c "test '$STATUS' = 400 && jq -e '.detail | test(\"force: expected true or false\")' <<<'$BODY' >/dev/null"

# --- selftest.when always: runs beside the job, marked ---
profile always
before=$(sel | jq .contended_run.started_unix)
sleep 1
post_selftest
check "when: always runs beside the job and marks it contended" \
  jq -e ".skipped == null and .contended_run.started_unix > $before and .verdict == \"passed\"" <(sel)

# --- the scheduler's busy file (idle GPUs) ---
: > "$JOBS"
profile idle "  scheduler: {busy_file: /run/p2pnode-busy}"
mkdir -p "$WORK/h200/root/run"
printf 'drained for job 812\n' > "$WORK/h200/root/run/p2pnode-busy"
post_selftest
check "the scheduler's busy file makes the node busy, by its presence alone (its text is never served)" \
  jq -e '.skipped.reason | test("the scheduler says the node is in use: /run/p2pnode-busy exists") and (test("drained for job 812") | not)' <(sel)
rm -f "$WORK/h200/root/run/p2pnode-busy"

# --- no NVML: the holders of /dev/nvidia* (the recorded root's /proc) ---
touch "$NONVML"
mkdir -p "$WORK/h200/root/proc/777/fd"
printf 'trainer\n' > "$WORK/h200/root/proc/777/comm"
ln -s /dev/nvidia0 "$WORK/h200/root/proc/777/fd/5"
post_selftest
check "without NVML a process holding /dev/nvidia0 makes the node busy" \
  jq -e '.skipped.seen.source == "device files" and (.skipped.reason | test("pid 777 \\(trainer\\) holding /dev/nvidia0")) and (.skipped.seen.note | test("NVML not available"))' <(sel)
rm -rf "$WORK/h200/root/proc/777" "$NONVML"

# --- after the job: a clean run passes against the baseline from before ---
# Waits for the run itself (started now or later), not only for a reconcile to end: one still
# finishing from the skip above would otherwise be read.
t_after=$(date +%s)
post_selftest
wait_until 20 bash -c "curl -s '$URL/v1/selftest' | jq -e '(.started_unix // 0) >= $t_after and .skipped == null' >/dev/null"
record selftest_after GET /v1/selftest
check "the job gone: a run passes, no regression, nothing contended or skipped" \
  jq -e '.verdict == "passed" and (.warnings | length) == 0 and .contended_run == null and .skipped == null' <<<"$BODY"

# --- selftest.when never: nothing runs by itself; the node is not degraded for it ---
profile never
stop_daemon h200
start_daemon h200 || exit 1
check "when: never: the start run is skipped, saying so" jq -e '.skipped.trigger == "start" and .skipped.busy == false and (.skipped.reason | test("never"))' <(sel)
check "and the node stays ready" test "$(curl -s -o /dev/null -w '%{http_code}' "$URL/readyz")" = 200
check "no schedule with when: never" jq -e '.next_selftest_unix == null' <(curl -s "$URL/v1/status")
post_selftest '{"force": true}'
check "a forced request still runs" jq -e '.skipped == null and .verdict == "passed"' <(sel)

# The rest of the API once, so every response of this run is checked against the spec.
for p in /livez /v1/findings /v1/devices /v1/topology /v1/plan /metrics; do record "get${p//\//_}" GET "$p"; done
record post_reconcile POST /v1/reconcile "${AUTH[@]}"
if ensure_validator; then
  validate_responses --recorded-only && pass "every response matches api/openapi.yaml" || fail "responses against api/openapi.yaml"
else
  skip_note="npm could not install the validator"; echo "note: $skip_note; responses not validated"; fail "$skip_note"
fi
finish
