#!/bin/bash
# The HTTP side runs without root: `p2pnode serve` starts a process that accepts on the listening
# socket (the daemon keeps it too, for the next one), and as root that process becomes an
# unprivileged account (p2pnode, else nobody) with no capabilities and no_new_privs. The API still
# answers through it: GETs, /metrics with the server's own counters, POSTs with and without the
# token, a forged Host. Killed (by anyone of its uid), it is started again after a backoff (100 ms,
# doubling) while the daemon goes on, and a client that connects in the gap is answered; the
# daemon's death ends it. About 8 s.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
BIN=${1:?usage: test_privsep.sh PATH-TO-p2pnode}
source "$(dirname "$0")/lib.sh"
require curl jq
RESULT="$SRC/tests/fixtures/gpu-runs/h200x4-rounds.json"

make_node ps h200-4gpu "$SRC/profiles/h200-nvlink.yaml"
write_config ps "$SRC/tests/serve/agents/replay.sh" "[\"$RESULT\"]"
start_daemon ps || exit 1
PARENT=$(cat "$WORK/ps/pid")

children() { cat /proc/"$1"/task/*/children 2>/dev/null | tr ' ' '\n' | grep -v '^$'; }
# The pids holding the socket that listens on 127.0.0.1:$PORT.
socket_owners() {
  local hex inode p
  hex=$(printf '0100007F:%04X' "$PORT")
  inode=$(awk -v a="$hex" '$2 == a && $4 == "0A" { print $10 }' /proc/net/tcp)
  [ -n "$inode" ] || return 1
  for p in "$PARENT" $(children "$PARENT"); do
    ls -l /proc/"$p"/fd 2>/dev/null | grep -q "socket:\[$inode\]" && echo "$p"
  done
}
status_field() { awk -v k="$2:" '$1 == k { $1 = ""; sub(/^ /, ""); print }' /proc/"$1"/status; }

OWNERS=$(socket_owners)
HTTP_PID=$(children "$PARENT" | head -1)
check "the daemon has one child, the HTTP process" test "$(children "$PARENT" | wc -l)" -eq 1
check "the daemon and its HTTP process hold the listening socket (holders: ${OWNERS//$'\n'/ })" \
  test "$(sort <<<"$OWNERS" | tr '\n' ' ')" = "$(printf '%s\n' "$PARENT" "$HTTP_PID" | sort | tr '\n' ' ')"
check "it is named p2pnode-http" test "$(cat /proc/"$HTTP_PID"/comm)" = p2pnode-http
echo "HTTP process $HTTP_PID of daemon $PARENT:"
for k in Uid Gid Groups CapInh CapPrm CapEff CapBnd CapAmb NoNewPrivs; do echo "  $k: $(status_field "$HTTP_PID" "$k")"; done
echo "  fds: $(ls -l /proc/"$HTTP_PID"/fd | awk 'NR > 1 { print $9 "->" $11 }' | tr '\n' ' ')"
check "the HTTP process has no_new_privs" test "$(status_field "$HTTP_PID" NoNewPrivs)" = 1
check "the HTTP process has no effective capability" test "$(status_field "$HTTP_PID" CapEff)" = 0000000000000000
check "the HTTP process has no permitted capability" test "$(status_field "$HTTP_PID" CapPrm)" = 0000000000000000
check "the HTTP process holds no file (only sockets, pipes, /dev/null, anon inodes)" \
  bash -c "! ls -l /proc/$HTTP_PID/fd | awk 'NR > 1 { print \$11 }' | grep -v -e '^socket:' -e '^pipe:' -e '^anon_inode:' -e '^/dev/null$' -e '^/dev/pts/' -e \"^$WORK/ps/log\$\""
if [ "$(id -u)" = 0 ]; then
  read -r ruid euid suid fsuid <<<"$(status_field "$HTTP_PID" Uid)"
  read -r rgid egid sgid fsgid <<<"$(status_field "$HTTP_PID" Gid)"
  check "its uids are not root (Uid: $ruid $euid $suid $fsuid)" test "$ruid" != 0 -a "$euid" != 0 -a "$suid" != 0 -a "$fsuid" != 0
  check "its gids are not root (Gid: $rgid $egid $sgid $fsgid)" test "$rgid" != 0 -a "$egid" != 0 -a "$sgid" != 0 -a "$fsgid" != 0
  check "it has no supplementary group" test -z "$(status_field "$HTTP_PID" Groups)"
  check "the daemon itself is still root" test "$(status_field "$PARENT" Uid | awk '{print $2}')" = 0
  check "the log names the account" grep -q "HTTP served by process $HTTP_PID as \(p2pnode\|nobody\)" "$WORK/ps/log"
else
  echo "not root: the HTTP process keeps this user (nothing to drop)"
fi

AUTH=(-H "Authorization: Bearer $TOKEN")
check "GET /v1/status answers through it" test "$(curl -s -o /dev/null -w '%{http_code}' "$URL/v1/status")" = 200
M=$(curl -s "$URL/metrics")
check "/metrics carries the daemon's state" grep -q '^p2pnode_node_state' <<<"$M"
check "/metrics carries the HTTP process's counters" grep -q '^p2pnode_http_connections_rejected_total' <<<"$M"
check "POST without the token: 401" test "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$URL/v1/reconcile")" = 401
check "POST with a wrong token: 401" test "$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Authorization: Bearer wrong-token-0123456789' "$URL/v1/reconcile")" = 401
check "POST with the token: 202" test "$(curl -s -o /dev/null -w '%{http_code}' -X POST "${AUTH[@]}" "$URL/v1/reconcile")" = 202
check "a forged Host: 421" test "$(curl -s -o /dev/null -w '%{http_code}' -H 'Host: evil.example' "$URL/v1/status")" = 421
check "a body over max_body: 413" test "$(head -c 8192 /dev/zero | curl -s -o /dev/null -w '%{http_code}' -X POST "${AUTH[@]}" --data-binary @- "$URL/v1/selftest")" = 413

# The HTTP process dies (killed by a process of its own uid where this runs as root): the daemon
# starts another and goes on; a client that connects in the gap waits in the backlog and is answered.
restarts() { curl -s "$URL/metrics" | awk '$1 == "p2pnode_http_child_restarts_total" { print $2 }'; }
check "no restart yet: p2pnode_http_child_restarts_total 0" test "$(restarts)" = 0
read -r ruid _ <<<"$(status_field "$HTTP_PID" Uid)"
read -r rgid _ <<<"$(status_field "$HTTP_PID" Gid)"
if [ "$(id -u)" = 0 ] && [ "$ruid" != 0 ] && command -v setpriv >/dev/null; then
  setpriv --reuid="$ruid" --regid="$rgid" --clear-groups kill -KILL "$HTTP_PID"
  echo "killed $HTTP_PID as uid $ruid"
else
  kill -KILL "$HTTP_PID"
fi
check "a request made at once is answered by the next HTTP process" \
  test "$(curl -s -m 10 -o /dev/null -w '%{http_code}' "$URL/livez")" = 200
check "the daemon goes on" kill -0 "$PARENT"
NEXT=$(children "$PARENT" | head -1)
check "by another HTTP process ($HTTP_PID, then ${NEXT:-none})" test -n "$NEXT" -a "$NEXT" != "$HTTP_PID"
check "the daemon logs how it ended and when the next starts" \
  grep -q "the HTTP process $HTTP_PID killed by signal .* starting another in 0.1 s" "$WORK/ps/log"
check "p2pnode_http_child_restarts_total 1" test "$(restarts)" = 1
check "the next one is confined the same (NoNewPrivs 1, CapEff 0)" \
  test "$(status_field "$NEXT" NoNewPrivs)/$(status_field "$NEXT" CapEff)" = 1/0000000000000000
check "POST with the token answers through it: 202" test "$(curl -s -o /dev/null -w '%{http_code}' -X POST "${AUTH[@]}" "$URL/v1/reconcile")" = 202
check "a forged Host through it: 421" test "$(curl -s -o /dev/null -w '%{http_code}' -H 'Host: evil.example' "$URL/v1/status")" = 421
# Deaths in a row: the wait doubles (200 ms, 400 ms, 800 ms), the daemon never gives up.
for wait in 0.2 0.4 0.8; do
  victim=$(children "$PARENT" | head -1)
  kill -KILL "$victim"
  check "killed again ($victim): the next in $wait s" wait_until 10 grep -q "the HTTP process $victim killed by signal .* starting another in $wait s" "$WORK/ps/log"
  wait_until 10 bash -c "[ -n \"\$(cat /proc/$PARENT/task/*/children 2>/dev/null)\" ]"
done
check "answered again after four deaths" test "$(curl -s -m 10 -o /dev/null -w '%{http_code}' "$URL/livez")" = 200
check "p2pnode_http_child_restarts_total 4" test "$(restarts)" = 4
check "the daemon never exited" kill -0 "$PARENT"
stop_daemon ps

# The daemon dies: its HTTP process goes with it, by PR_SET_PDEATHSIG alone (stopped, it could not
# read the end of the stream).
start_daemon ps || exit 1
PARENT=$(cat "$WORK/ps/pid")
HTTP_PID=$(children "$PARENT" | head -1)
kill -STOP "$HTTP_PID"
kill -KILL "$PARENT"
check "the HTTP process ends with the daemon" wait_until 10 bash -c "! kill -0 $HTTP_PID 2>/dev/null || grep -q '^State:.*Z' /proc/$HTTP_PID/status"

# A clean stop ends both.
start_daemon ps || exit 1
PARENT=$(cat "$WORK/ps/pid")
HTTP_PID=$(children "$PARENT" | head -1)
kill -TERM "$PARENT"
wait_until 10 bash -c "! kill -0 $PARENT" && { wait "$PARENT"; rc=$?; }
check "SIGTERM stops the daemon with status 0 (exit ${rc:-none})" test "${rc:-1}" = 0
check "and its HTTP process" wait_until 5 bash -c "! kill -0 $HTTP_PID 2>/dev/null"

finish
