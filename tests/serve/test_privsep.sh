#!/bin/bash
# The HTTP side runs without root: `p2pnode serve` forks a process that alone holds the listening
# socket, and as root that process becomes an unprivileged account (p2pnode, else nobody) with no
# capabilities and no_new_privs. The API still answers through it: GETs, /metrics with the
# server's own counters, POSTs with and without the token, a forged Host. Its death stops the
# daemon (exit 1, for systemd to restart it); the daemon's death ends it. About 5 s.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
BIN=${1:?usage: test_privsep.sh PATH-TO-p2pnode}
source "$(dirname "$0")/lib.sh"
require curl jq
RESULT="$SRC/tests/gpu/results/h200x4-rounds.json"

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
check "the HTTP process alone holds the listening socket (holders: ${OWNERS//$'\n'/ })" test "$OWNERS" = "$HTTP_PID"
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

# The HTTP process dies: the daemon stops with status 1, for systemd to restart it.
kill -KILL "$HTTP_PID"
if wait_until 10 bash -c "! kill -0 $PARENT"; then
  wait "$PARENT"; rc=$?
  check "the daemon exits 1 when its HTTP process dies (exit $rc)" test "$rc" = 1
  check "and says why" grep -q "the HTTP process $HTTP_PID killed by signal.*systemd to restart" "$WORK/ps/log"
else
  fail "the daemon kept running without its HTTP process"
fi

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

echo "$FAILS failure(s)"
[ "$FAILS" -eq 0 ]
