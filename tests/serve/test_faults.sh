#!/bin/bash
# Faults the daemon must answer clearly and survive: a config that does not parse, a listen
# address beyond loopback, no profile that matches, an agent that hangs, crashes, prints garbage,
# lies or is missing, a stop during a self-test, a missing token file, idle connections that
# try to starve the server, and a client that trickles its request.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
BIN=${1:?usage: test_faults.sh PATH-TO-p2pnode}
source "$(dirname "$0")/lib.sh"
require curl jq python3
RESULT="$SRC/tests/fixtures/gpu-runs/h200x4-rounds.json"
AGENTS="$SRC/tests/serve/agents"

# --- a config that does not parse: refused at start, with file:line:col ---
make_node badcfg h200-4gpu "$SRC/profiles/h200-nvlink.yaml"
printf 'listen: 127.0.0.1:0\nstate_dir: [oops\n' > "$WORK/badcfg/p2pnode.yaml"
"$BIN" serve --root "$WORK/badcfg/root" --config "$WORK/badcfg/p2pnode.yaml" > "$WORK/badcfg/out" 2>&1
check "a bad config exits 2" test $? = 2
check "and names the file and line" grep -q 'p2pnode.yaml:[0-9]*:[0-9]*' "$WORK/badcfg/out"
printf 'listen: 0.0.0.0:9470\n' > "$WORK/badcfg/p2pnode.yaml"
"$BIN" serve --root "$WORK/badcfg/root" --config "$WORK/badcfg/p2pnode.yaml" > "$WORK/badcfg/out" 2>&1
check "listening beyond loopback needs allow_non_loopback" bash -c "grep -q allow_non_loopback '$WORK/badcfg/out'"
: > "$WORK/badcfg/empty.yaml"
"$BIN" serve --root "$WORK/badcfg/root" --listen 0.0.0.0:0 --config "$WORK/badcfg/empty.yaml" > "$WORK/badcfg/out" 2>&1
check "--listen beyond loopback is refused too" grep -q 'not a loopback' "$WORK/badcfg/out"
# Plain HTTP beyond loopback needs its own setting (the token would cross the network in clear).
printf 'listen: 0.0.0.0:0\nallow_non_loopback: true\n' > "$WORK/badcfg/p2pnode.yaml"
"$BIN" serve --root "$WORK/badcfg/root" --config "$WORK/badcfg/p2pnode.yaml" > "$WORK/badcfg/out" 2>&1
check "plain HTTP beyond loopback exits 2" test $? = 2
check "and names allow_plaintext_beyond_loopback" grep -q allow_plaintext_beyond_loopback "$WORK/badcfg/out"
# A name is not loopback, whatever its text says (it resolves when the server binds).
printf 'listen: 127.0.0.1.nip.io:0\n' > "$WORK/badcfg/p2pnode.yaml"
"$BIN" serve --root "$WORK/badcfg/root" --config "$WORK/badcfg/p2pnode.yaml" > "$WORK/badcfg/out" 2>&1
check "a listen name that merely starts with 127. is not loopback" grep -q 'not a loopback' "$WORK/badcfg/out"

# --- no profile matches: failed, with the reason, still serving ---
make_node noprofile h200-4gpu "$SRC/tests/profiles/two-4090.yaml"
write_config noprofile "$AGENTS/replay.sh" "[\"$RESULT\"]"
start_daemon noprofile || exit 1
record noprofile_readyz GET /readyz
check "no matching profile: /readyz 503" test "$STATUS" = 503
check "the reason says no profile applies" bash -c "jq -r '.reasons[]' '$RESP/noprofile_readyz.body' | grep -q 'no profile applies'"
record noprofile_status GET /v1/status
check "state failed" test "$(jq -r .state <<<"$BODY")" = failed
record noprofile_findings GET /v1/findings
record noprofile_metrics GET /metrics
# DNS rebinding: a page of another site reaching the daemon under that site's name.
check "a forged Host is answered 421" test "$(curl -s -o /dev/null -w '%{http_code}' -H 'Host: evil.example' "$URL_noprofile/livez")" = 421
check "the address as Host is answered" test "$(curl -s -o /dev/null -w '%{http_code}' "$URL_noprofile/livez")" = 200
check "metrics say failed" grep -q '^p2pnode_node_state{state="failed"} 1' "$RESP/noprofile_metrics.body"
check "serving a recorded root with apply: true warns that fixes write into it" \
  grep -q -- "--root .* with apply: true: the daemon's fixes write into that tree" "$WORK/noprofile/log"
# A self-test asked of a failed node: skipped, and said so (it printed "self-test none" before).
"$BIN" selftest run --url "$URL_noprofile" --root "$WORK/noprofile/root" --config "$WORK/noprofile/p2pnode.yaml" \
  --wait --timeout 30 > "$WORK/noprofile/selftest.out" 2>&1
code=$?
check "selftest run --wait on a failed node: exit 1" test "$code" = 1
check "and prints why it was skipped" grep -q 'self-test skipped (api-selftest): no profile applies to this box: no profile matches' "$WORK/noprofile/selftest.out"
record noprofile_selftest GET /v1/selftest
check "/v1/selftest's skipped says why" bash -c "jq -r .skipped.reason '$RESP/noprofile_selftest.body' | grep -q 'no profile applies'"

# --- agents that fail: each a verdict with its reason, the daemon keeps serving ---
agent_case() {  # NAME AGENT ARGS EXPECTED-VERDICT REASON-REGEX
  local name=$1 agent=$2 args=$3 verdict=$4 reason=$5
  make_node "$name" h200-4gpu "$SRC/profiles/h200-nvlink.yaml"
  write_config "$name" "$agent" "$args" $'selftest:\n  time_limit: 2s'
  local t0; t0=$(date +%s)
  start_daemon "$name" || return
  record "${name}_selftest" GET /v1/selftest
  check "$name agent: verdict $verdict" test "$(jq -r .verdict <<<"$BODY")" = "$verdict"
  check "$name agent: reason matches /$reason/" bash -c "jq -r '.reasons[]' '$RESP/${name}_selftest.body' | grep -Eq '$reason'"
  record "${name}_readyz" GET /readyz
  check "$name agent: /readyz 503" test "$STATUS" = 503
  check "$name agent: the daemon still serves" curl -sf "$URL/livez" -o /dev/null
  grep -q "self-test $verdict" "$WORK/$name/log" && pass "$name agent: logged" || fail "$name agent: logged"
  echo "     $name: decided in $(( $(date +%s) - t0 )) s"
}
# The hung agent sleeps a number of seconds of this run's own (600.PID), which is how its process is
# told from another run's of this test on the same machine.
HANG="600.$$"
agent_case hang "$AGENTS/hang.sh" "[\"$HANG\"]" error "hung"
check "the hung agent's process group is gone (no 'sleep $HANG' left)" bash -c "! pgrep -f '[s]leep $HANG'"
agent_case crash "$AGENTS/crash.sh" "[]" error "crashed"
agent_case garbage "$AGENTS/garbage.sh" "[]" error "not valid JSON"
agent_case liar "$AGENTS/liar.sh" "[\"$RESULT\"]" error "exit"
agent_case missing "/nonexistent/p2pnode-agent" "[]" error "could not be started"
agent_case corrupt "$AGENTS/replay.sh" "[\"$SRC/tests/fixtures/gpu-runs/h200x4-inject.json\", \"1\"]" failed "integrity"

# --- SIGTERM while a self-test runs: the agent is killed, the daemon exits at once ---
make_node stopdur h200-4gpu "$SRC/profiles/h200-nvlink.yaml"
write_config stopdur "$AGENTS/hang.sh" "[\"$HANG\"]" $'selftest:\n  time_limit: 10m'
"$BIN" serve --root "$WORK/stopdur/root" --config "$WORK/stopdur/p2pnode.yaml" --listen 127.0.0.1:0 \
  --port-file "$WORK/stopdur/port" >>"$WORK/stopdur/log" 2>&1 &
SPID=$!
PIDS+=("$SPID")
if wait_until 60 grep -q 'self-test: running' "$WORK/stopdur/log" && wait_until 10 pgrep -f "[s]leep $HANG" >/dev/null; then
  T0=$(date +%s%N)
  kill -TERM "$SPID"
  wait_until 20 bash -c "! kill -0 $SPID"
  MS=$(( ($(date +%s%N) - T0) / 1000000 ))
  check "stop during a 10-minute self-test: exited in $MS ms (under 5 s)" test "$MS" -lt 5000
  check "the agent's process group is gone" bash -c "! pgrep -f '[s]leep $HANG'"
  check "the log says the self-test was cancelled and the last result kept" \
    grep -q 'self-test cancelled (the daemon is stopping.*previous result is kept' "$WORK/stopdur/log"
else
  fail "stop during a self-test: the self-test did not start"; tail -20 "$WORK/stopdur/log"
fi

# --- a pass that runs past reconcile.time_limit: cancelled, its command killed, the daemon serving ---
make_node overdue h200-4gpu "$SRC/profiles/h200-nvlink.yaml"
write_config overdue "$AGENTS/hang.sh" "[\"$HANG\"]" $'selftest:\n  time_limit: 10m\nreconcile:\n  time_limit: 3s'
"$BIN" serve --root "$WORK/overdue/root" --config "$WORK/overdue/p2pnode.yaml" --listen 127.0.0.1:0 \
  --port-file "$WORK/overdue/port" >>"$WORK/overdue/log" 2>&1 &
OPID=$!
PIDS+=("$OPID")
if wait_until 60 grep -q 'ran past reconcile.time_limit (3 s): cancelled' "$WORK/overdue/log"; then
  pass "a pass past reconcile.time_limit is cancelled and says so"
  check "its hung command (the agent) is killed" wait_until 10 bash -c "! pgrep -f '[s]leep $HANG'"
  URL="http://127.0.0.1:$(cat "$WORK/overdue/port" 2>/dev/null)"
  wait_until 20 bash -c "curl -s '$URL/v1/status' | jq -e '.reasons[0] | test(\"ran past reconcile.time_limit\")' >/dev/null" \
    && pass "the node is failed with the reason" || fail "the node is failed with the reason"
  check "the daemon keeps serving" bash -c "kill -0 $OPID"
  kill -TERM "$OPID"
else
  fail "a pass past reconcile.time_limit is cancelled and says so"; tail -20 "$WORK/overdue/log"
fi

# --- no token file: POSTs are refused with 503 and why ---
rm -f "$WORK/crash/root/etc/p2pnode/token"
kill -HUP "$(cat "$WORK/crash/pid")"
URL=$URL_crash
wait_until 20 bash -c "curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Authorization: Bearer $TOKEN' '$URL/v1/reconcile' | grep -q 503" \
  && pass "no token file: POST is 503" || fail "no token file: POST is 503"
record notoken POST /v1/reconcile -H "Authorization: Bearer $TOKEN"
check "and says why" bash -c "jq -r .detail '$RESP/notoken.body' | grep -q 'token file'"

# --- idle and slow clients cannot starve the server (4 worker threads in these configs) ---
URL=$URL_noprofile
PORT=${URL##*:}
python3 - "$PORT" > "$WORK/starve.out" 2>&1 <<'PY' &
import socket, sys, time
port = int(sys.argv[1])
idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(16)]   # connect, send nothing
slow = []
for _ in range(4):   # start a request and never finish it
    s = socket.create_connection(("127.0.0.1", port)); s.sendall(b"GET /v1/status HTTP/1.1\r\nHost: x\r\n"); slow.append(s)
print("holding", len(idle) + len(slow), flush=True)
time.sleep(12)
PY
STARVER=$!
PIDS+=("$STARVER")
wait_until 10 grep -q holding "$WORK/starve.out"
T0=$(date +%s%N)
curl -sf -m 15 "$URL/livez" -o /dev/null && pass "served while 20 connections idle or half-sent" || fail "served while 20 connections idle or half-sent"
MS=$(( ($(date +%s%N) - T0) / 1000000 ))
# The server is event-driven (libmicrohttpd): idle and half-sent connections hold a socket, never a
# worker, so the answer does not wait for them (tests/serve/test_flood.sh does this with 1,100).
check "answered in $MS ms, not after the 12 s the clients hold on" test "$MS" -lt 3000
kill "$STARVER" 2>/dev/null

# --- a client trickling a header line a second: cut off at http.max_connection_time (5 s here) ---
make_node trickle h200-4gpu "$SRC/profiles/h200-nvlink.yaml"
write_config trickle "$AGENTS/replay.sh" "[\"$RESULT\"]" "  max_connection_time: 5s"
if start_daemon trickle; then
  CUT=$(python3 - "${URL_trickle##*:}" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET /v1/status HTTP/1.1\r\nHost: x\r\n")
t0 = time.monotonic()
s.settimeout(1.0)
while time.monotonic() - t0 < 20:
    try:
        s.sendall(b"X-Slow: 1\r\n")       # every read arrives within the 3 s read timeout
        if s.recv(1) == b"":
            break
    except socket.timeout:
        continue
    except OSError:
        break
print("%.1f" % (time.monotonic() - t0))
PY
)
  check "a trickling client is cut off after ${CUT} s (between 4 and 9 s for a 5 s limit)" \
    python3 -c "import sys; sys.exit(0 if 4 <= float('$CUT') <= 9 else 1)"
  check "the daemon still serves after it" curl -sf "$URL_trickle/livez" -o /dev/null
fi

if ensure_validator; then
  validate_responses > "$WORK/validate.out"; RC=$?
  # Only the responses this script recorded; the coverage check is test_serve.sh's.
  grep -v 'no response recorded' "$WORK/validate.out" | grep -q '^FAIL' && { cat "$WORK/validate.out"; fail "fault responses match api/openapi.yaml"; } \
    || pass "fault responses match api/openapi.yaml"
  : "$RC"
else
  fail "OpenAPI validation: npm could not install openapi-response-validator and swagger-parser (npm is installed by scripts/install-deps.sh test; its output is above)"
fi

finish
