#!/bin/bash
# The systemd protocol without systemd: a fake NOTIFY_SOCKET (a Unix datagram socket) and
# WATCHDOG_USEC, as systemd sets them for Type=notify with WatchdogSec=. READY=1 must come after
# the first reconcile decided the state, with a STATUS= a person can read; WATCHDOG=1 pings follow;
# SIGHUP sends RELOADING=1 then READY=1; SIGTERM sends STOPPING=1.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
BIN=${1:?usage: test_notify.sh PATH-TO-p2pnode}
source "$(dirname "$0")/lib.sh"
require curl jq python3
RESULT="$SRC/tests/fixtures/gpu-runs/h200x4-rounds.json"
make_node notify h200-4gpu "$SRC/profiles/h200-nvlink.yaml"
write_config notify "$SRC/tests/serve/agents/replay.sh" "[\"$RESULT\", \"0\", \"0.3\"]"
SOCK="$WORK/notify.sock"
python3 - "$SOCK" > "$WORK/notify.log" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(60)
while True:
    try:
        msg = s.recv(4096).decode()
    except socket.timeout:
        break
    print(msg.replace("\n", "|"), flush=True)
    if msg.startswith("STOPPING=1"):
        break
PY
LISTENER=$!
PIDS+=("$LISTENER")
wait_until 10 test -S "$SOCK" || { fail "the fake notify socket did not appear"; exit 1; }
NOTIFY_SOCKET="$SOCK" WATCHDOG_USEC=400000 "$BIN" serve --root "$WORK/notify/root" --config "$WORK/notify/p2pnode.yaml" \
  --port-file "$WORK/notify/port" > "$WORK/notify/log" 2>&1 &
DPID=$!
PIDS+=("$DPID")
wait_until 30 grep -q '^READY=1' "$WORK/notify.log" && pass "READY=1 sent" || fail "READY=1 sent"
READY=$(grep -m1 '^READY=1' "$WORK/notify.log")
echo "     $READY"
check "READY=1 carries STATUS with the decided state" grep -Eq 'STATUS=(ready|degraded|reboot_required|blocked|failed): profile h200-nvlink' <<<"$READY"
URL="http://127.0.0.1:$(cat "$WORK/notify/port")"
check "READY came after the first reconcile decided" bash -c "curl -s '$URL/v1/status' | jq -e '.state != \"starting\"'"
check "a STATUS line before READY says it is reconciling" grep -q '^STATUS=reconciling' "$WORK/notify.log"
wait_until 10 bash -c "[ \$(grep -c '^WATCHDOG=1' '$WORK/notify.log') -ge 3 ]" && pass "WATCHDOG=1 pings (every WatchdogSec/2)" || fail "WATCHDOG=1 pings"
kill -HUP $DPID
wait_until 10 grep -q '^RELOADING=1' "$WORK/notify.log" && pass "SIGHUP sends RELOADING=1" || fail "SIGHUP sends RELOADING=1"
wait_until 10 bash -c "grep -A5 '^RELOADING=1' '$WORK/notify.log' | grep -q '^READY=1'" && pass "then READY=1" || fail "then READY=1"
kill -TERM $DPID
wait_until 15 grep -q '^STOPPING=1' "$WORK/notify.log" && pass "SIGTERM sends STOPPING=1" || fail "SIGTERM sends STOPPING=1"
wait_until 15 bash -c "! kill -0 $DPID" && pass "and exits" || fail "and exits"
wait $DPID; check "exit status 0 on SIGTERM" test $? -eq 0
finish
