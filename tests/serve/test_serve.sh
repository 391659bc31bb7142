#!/bin/bash
# `p2pnode serve` end to end on a recorded 4x H200 node with a replayed agent result: every
# endpoint, every response validated against api/openapi.yaml, promtool on /metrics, the token,
# the one-at-a-time queue, `p2pnode status`, SIGHUP with a bad and a good config, a restart that
# keeps the last self-test, and a state file cut in half.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
BIN=${1:?usage: test_serve.sh PATH-TO-p2pnode}
source "$(dirname "$0")/lib.sh"
require curl jq python3

RESULT="$SRC/tests/fixtures/gpu-runs/h200x4-rounds.json"
make_node h200 h200-4gpu "$SRC/profiles/h200-nvlink.yaml"
write_config h200 "$SRC/tests/serve/agents/replay.sh" "[\"$RESULT\", \"0\", \"0.5\"]"
start_daemon h200 || exit 1

# --- every endpoint ---
record livez GET /livez
check "GET /livez is 200" test "$STATUS" = 200
record status GET /v1/status
check "GET /v1/status is 200" test "$STATUS" = 200
STATE=$(jq -r .state <<<"$BODY")
check "status names the profile" test "$(jq -r .profile <<<"$BODY")" = h200-nvlink
check "status counts 4 GPUs" test "$(jq -r .counts.gpus <<<"$BODY")" = 4
check "the start self-test passed" test "$(jq -r .selftest.verdict <<<"$BODY")" = passed
record readyz GET /readyz
if [ "$STATE" = ready ]; then
  check "GET /readyz is 200 when ready" test "$STATUS" = 200
else
  check "GET /readyz is 503 when $STATE" test "$STATUS" = 503
  check "readyz gives the reasons" jq -e '.reasons | length > 0' "$RESP/readyz.body"
fi
echo "     node state: $STATE $(jq -c .reasons <<<"$BODY")"
record findings GET /v1/findings
check "GET /v1/findings lists findings" jq -e '.findings | length > 0' "$RESP/findings.body"
record findings_text GET /v1/findings -H 'Accept: text/plain'
check "findings as text is the check table" grep -q '^RESULT *CHECK' "$RESP/findings_text.body"
record devices GET /v1/devices
check "GET /v1/devices has 4 GPUs with apertures" jq -e '(.gpus | length) == 4 and (.gpus[0].aperture_bytes > 0)' "$RESP/devices.body"
record topology GET /v1/topology
check "GET /v1/topology is a 4x4 matrix" jq -e '(.matrix | length) == 4 and (.matrix[0][0] == "X")' "$RESP/topology.body"
record plan GET /v1/plan
check "GET /v1/plan is 200" test "$STATUS" = 200
record selftest GET /v1/selftest
check "GET /v1/selftest has the full matrices" jq -e '.verdict == "passed" and (.result.cases | length) == 9' "$RESP/selftest.body"
record health GET /v1/health
check "GET /v1/health is 200, health on" jq -e '.schema_version == 1 and .enabled == true' "$RESP/health.body"
record metrics GET /metrics
check "GET /metrics is text 0.0.4" grep -q 'version=0.0.4' "$RESP/metrics.meta"
check "metrics have pair bandwidth" grep -q '^p2pnode_p2p_bandwidth_bytes_per_second{.*gpu="0000:00:06.0"' "$RESP/metrics.body"
record head_status HEAD /v1/status
rm -f "$RESP/head_status.meta" "$RESP/head_status.body"  # HEAD has no body to validate
if require promtool; then
  check "promtool check metrics passes" bash -c "promtool check metrics < '$RESP/metrics.body'"
fi

# --- tokens ---
record post_no_token POST /v1/reconcile
check "POST without a token is 401" test "$STATUS" = 401
check "401 is problem+json" grep -q 'application/problem+json' "$RESP/post_no_token.meta"
record post_bad_token POST /v1/reconcile -H "Authorization: Bearer ${TOKEN}x"
check "POST with a wrong token is 401" test "$STATUS" = 401
record post_basic POST /v1/selftest -H "Authorization: Basic $TOKEN"
check "POST with another scheme is 401" test "$STATUS" = 401

# --- one at a time; a request during one is queued once ---
AUTH=(-H "Authorization: Bearer $TOKEN")
record post_selftest POST /v1/selftest "${AUTH[@]}"
check "POST /v1/selftest is accepted" test "$STATUS" = 202
FIRST=$(jq -r .request <<<"$BODY")
record post_reconcile POST /v1/reconcile "${AUTH[@]}"
SECOND=$(jq -r .request <<<"$BODY")
record post_reconcile_again POST /v1/reconcile "${AUTH[@]}"
THIRD=$(jq -r .request <<<"$BODY")
check "requests during a pass: $FIRST, $SECOND, $THIRD" test "$FIRST/$SECOND/$THIRD" = "started/queued/already_queued"
RUNS_BEFORE=$(jq '[.reconcile.runs[]] | add' "$RESP/status.body")
wait_until 30 decided "$URL" || fail "the queued passes did not finish"
RUNS_AFTER=$(curl -s "$URL/v1/status" | jq '[.reconcile.runs[]] | add')
check "three POSTs ran two passes ($RUNS_BEFORE -> $RUNS_AFTER)" test "$RUNS_AFTER" -eq $((RUNS_BEFORE + 2))

# --- errors ---
record unknown GET /v1/nothing
check "unknown path is 404 problem+json" bash -c "test $STATUS = 404 && grep -q problem+json '$RESP/unknown.meta'"
record wrong_method DELETE /v1/status
check "DELETE /v1/status is 405" test "$STATUS" = 405
record get_reconcile GET /v1/reconcile
check "GET /v1/reconcile is 405" test "$STATUS" = 405
head -c 100000 /dev/zero | tr '\0' x > "$WORK/big"
record too_big POST /v1/reconcile "${AUTH[@]}" --data-binary @"$WORK/big"
check "an oversized body is 413" test "$STATUS" = 413
HDRS=(); for i in $(seq 1 100); do HDRS+=(-H "X-Filler-$i: $i"); done
record many_headers GET /v1/status "${HDRS[@]}"
check "too many header fields is 431" test "$STATUS" = 431
RAW=$(python3 - "$PORT" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
s.sendall(b"THIS IS NOT HTTP\r\n\r\n")
print(s.recv(4096).decode(errors="replace").split("\r\n")[0])
PY
)
check "malformed HTTP gets 400 ($RAW)" grep -q ' 400 ' <<<"$RAW"
check "still serving after the faults" curl -sf "$URL/livez" -o /dev/null

# --- p2pnode status ---
"$BIN" status --url "$URL" > "$WORK/status.txt"; RC=$?
check "p2pnode status prints the check table" grep -q '^RESULT *CHECK' "$WORK/status.txt"
check "p2pnode status prints the node state" grep -q "^node state: $STATE" "$WORK/status.txt"
if [ "$STATE" = ready ]; then check "status exits 0 when ready" test $RC = 0; else check "status exits 1 when $STATE" test $RC = 1; fi
"$BIN" status --url "http://127.0.0.1:1" >/dev/null 2>&1
check "status against no daemon exits 2" test $? = 2

# --- SIGHUP: a bad config keeps the old one; a good one clears the problem ---
cp "$WORK/h200/p2pnode.yaml" "$WORK/h200/good.yaml"
printf 'listen: 127.0.0.1:0\nthis_is_not_a_key: 1\n' > "$WORK/h200/p2pnode.yaml"
kill -HUP "$(cat "$WORK/h200/pid")"
wait_until 20 bash -c "curl -s '$URL/v1/status' | jq -e '.daemon.config_problem != null' >/dev/null" \
  && pass "a bad config on SIGHUP is reported" || fail "a bad config on SIGHUP is reported"
check "the bad config names file:line" bash -c "curl -s '$URL/v1/status' | jq -r .daemon.config_problem | grep -q 'p2pnode.yaml:2:'"
check "still serving with the old config" curl -sf "$URL/livez" -o /dev/null
record status_bad_reload GET /v1/status
cp "$WORK/h200/good.yaml" "$WORK/h200/p2pnode.yaml"
kill -HUP "$(cat "$WORK/h200/pid")"
wait_until 20 bash -c "curl -s '$URL/v1/status' | jq -e '.daemon.config_problem == null' >/dev/null" \
  && pass "a good config on SIGHUP clears the problem" || fail "a good config on SIGHUP clears the problem"

# --- SIGHUP applies the HTTP limits: a smaller body limit at once, new threads on the same socket ---
head -c 2048 /dev/zero | tr '\0' x > "$WORK/body2k"
post_2k() { curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' --data-binary @"$WORK/body2k" "$URL/v1/reconcile"; }
check "a 2 KiB body is within max_body 4KiB" test "$(post_2k)" != 413
sed -i 's/^  max_body: 4KiB$/  max_body: 1KiB/; s/^  threads: 4$/  threads: 2/' "$WORK/h200/p2pnode.yaml"
kill -HUP "$(cat "$WORK/h200/pid")"
wait_until 20 bash -c "test \"\$(curl -s -o /dev/null -w '%{http_code}' -X POST --data-binary @'$WORK/body2k' '$URL/v1/reconcile')\" = 413" \
  && pass "after SIGHUP with max_body 1KiB the same body gets 413" || fail "SIGHUP applied max_body"
check "still serving after the server's threads changed" curl -sf "$URL/livez" -o /dev/null
check "no error about the new limits in the log" bash -c "! grep -q 'new HTTP limits could not' '$WORK/h200/log'"
cp "$WORK/h200/good.yaml" "$WORK/h200/p2pnode.yaml"
kill -HUP "$(cat "$WORK/h200/pid")"
wait_until 20 bash -c "test \"\$(curl -s -o /dev/null -w '%{http_code}' -X POST --data-binary @'$WORK/body2k' '$URL/v1/reconcile')\" != 413" \
  && pass "and back to 4KiB on the next SIGHUP" || fail "SIGHUP restored max_body"

# --- restart: the last self-test survives ---
wait_until 30 decided "$URL"
LAST=$(curl -s "$URL/v1/selftest" | jq .started_unix)
stop_daemon h200
check "the state file is valid JSON" jq -e '.schema_version == 1' "$WORK/h200/root/var/lib/p2pnode/state.json"
printf 'selftest:\n  on_start: false\n' >> "$WORK/h200/p2pnode.yaml"
start_daemon h200 || exit 1
check "the last self-test survived the restart" test "$(curl -s "$URL/v1/selftest" | jq .started_unix)" = "$LAST"
check "no state problem after a clean restart" bash -c "curl -s '$URL/v1/status' | jq -e '.daemon.state_problem == null' >/dev/null"

# --- a state file cut in half ---
stop_daemon h200
F="$WORK/h200/root/var/lib/p2pnode/state.json"
truncate -s $(( $(stat -c %s "$F") / 2 )) "$F"
start_daemon h200 || exit 1
record status_corrupt GET /v1/status
check "a state file cut in half is reported" bash -c "jq -r .daemon.state_problem '$RESP/status_corrupt.body' | grep -q corrupt"
check "and rebuilt" bash -c "wait_until() { :; }; jq -e '.schema_version == 1' '$F' >/dev/null"
grep -q 'corrupt' "$WORK/h200/log" && pass "the corrupt state file is logged" || fail "the corrupt state file is logged"

# --- every response against the OpenAPI document ---
if ensure_validator; then
  validate_responses && pass "every response matches api/openapi.yaml" || fail "responses match api/openapi.yaml"
else
  fail "OpenAPI validation: npm could not install openapi-response-validator and swagger-parser (npm is installed by scripts/install-deps.sh test; its output is above)"
fi

finish
