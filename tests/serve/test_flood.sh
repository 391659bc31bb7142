#!/bin/bash
# The API under a hostile client: from 127.0.0.1, 1,000 connections that send nothing
# and 100 that trickle a request head one byte a second (tests/serve/flood.py; each one the daemon
# closes is opened again a second later). After 15 s (past TCP_DEFER_ACCEPT and every accept,
# handshake and request-head limit), for 30 s, a second client bound to 127.0.0.2 asks for /livez,
# /readyz and /metrics in turn, ten requests a second, a new connection each: every answer 200, p90 under
# 100 ms and none over 1 s, and the daemon's RSS (with its HTTP process) stays under 64 MiB (the peak is printed). Plain HTTP, then HTTPS.
# The daemon sheds what the limits refuse, counts it in
# p2pnode_http_connections_rejected_total{reason} and logs it (rate-limited).
# Cost: about 2 x 50 s wall (FLOOD_SECONDS=60 measures longer); RESOURCE_LOCK heavy_cpu (tests/CMakeLists.txt).
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
BIN=${1:?usage: test_flood.sh PATH-TO-p2pnode}
source "$(dirname "$0")/lib.sh"
require curl jq python3 openssl
python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.2", 0))' 2>/dev/null ||
  skip "cannot bind a client to 127.0.0.2 (loopback is not 127.0.0.0/8 here)"
SECONDS_MEASURED=${FLOOD_SECONDS:-30}
MIN_ANSWERS=$((SECONDS_MEASURED * 10 * 8 / 30))
RSS_LIMIT_KIB=$((64 * 1024))
RESULT="$SRC/tests/fixtures/gpu-runs/h200x4-rounds.json"

# rss PID: VmRSS of the daemon and its HTTP process together (KiB).
rss() {
  local p sum=0 v
  for p in "$1" $(cat /proc/"$1"/task/*/children 2>/dev/null); do
    v=$(awk '/^VmRSS:/ {print $2}' "/proc/$p/status" 2>/dev/null)
    sum=$((sum + ${v:-0}))
  done
  echo "$sum"
}
# rss_peak PID OUT: samples rss every 200 ms into OUT (one number, KiB) until PID is gone or
# the sampler is killed.
rss_peak() {
  local pid=$1 out=$2 peak=0 v
  while kill -0 "$pid" 2>/dev/null; do
    v=$(rss "$pid")
    [ -n "$v" ] && [ "$v" -gt "$peak" ] && { peak=$v; echo "$peak" > "$out"; }
    sleep 0.2
  done
}

# flood NAME [flood.py args]: runs the flood against node NAME and judges it.
flood() {
  local name=$1; shift
  local pid; pid=$(cat "$WORK/$name/pid")
  local before; before=$(rss "$pid")
  rss_peak "$pid" "$WORK/$name/rss" &
  local sampler=$!
  python3 "$SRC/tests/serve/flood.py" --port "$PORT" --seconds "$SECONDS_MEASURED" "$@" > "$WORK/$name/flood.json"
  local rc=$?
  kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null
  [ $rc -eq 0 ] || { fail "$name: flood.py failed ($rc)"; return; }
  local peak; peak=$(cat "$WORK/$name/rss" 2>/dev/null || echo "$before")
  echo "$name: $(jq -c .flood "$WORK/$name/flood.json")"
  local p
  for p in /livez /readyz /metrics; do
    local r; r=$(jq -c --arg p "$p" '.paths[$p]' "$WORK/$name/flood.json")
    echo "$name: $p $r"
    # One probe every 0.1 s, the three paths in turn: SECONDS_MEASURED * 10 / 3 each; 80 % of
    # that must have answered (the probes' own time stretches the interval).
    check "$name: $p answered $(jq .ok <<<"$r") times under the flood (at least $MIN_ANSWERS), no failure" \
      jq -e --argjson min "$MIN_ANSWERS" '.failures == 0 and .ok >= $min' <<<"$r"
    # About 100 probes: p99 is the slowest one, which a neighbour's burst on the shared 2 cores sets
    # (a clean-clone make test saw 195 ms once beside a QEMU boot). Starvation is what this asserts:
    # p90 under 100 ms and no probe over a second; the latency figures are scripts/bench-serve.sh's.
    check "$name: $p p90 $(jq .p90_ms <<<"$r") ms < 100 ms, slowest $(jq .max_ms <<<"$r") ms < 1000 ms" \
      jq -e '.p90_ms != null and .p90_ms < 100 and .max_ms < 1000' <<<"$r"
  done
  echo "$name: daemon RSS ${before} KiB before, peak ${peak} KiB during the flood"
  check "$name: peak RSS ${peak} KiB under ${RSS_LIMIT_KIB} KiB" test "$peak" -lt "$RSS_LIMIT_KIB"
  local shed
  shed=$(curl -s "${CURL_TLS[@]}" "$URL/metrics" | awk '/^p2pnode_http_connections_rejected_total/ {s += $2} END {print s + 0}')
  check "$name: the daemon counted what it shed ($shed connections)" test "$shed" -gt 0
  check "$name: and logged it" grep -q "shed" "$WORK/$name/log"
  check "$name: still serving after the flood" curl -sf "${CURL_TLS[@]}" "$URL/livez" -o /dev/null
}

# --- plain HTTP ---
make_node plain h200-4gpu "$SRC/profiles/h200-nvlink.yaml"
write_config plain "$SRC/tests/serve/agents/replay.sh" "[\"$RESULT\"]"
start_daemon plain || exit 1
flood plain

# --- HTTPS: the trickled bytes are a handshake that never completes ---
make_node tls h200-4gpu "$SRC/profiles/h200-nvlink.yaml"
TLS="$WORK/tls/root/etc/p2pnode/tls"
mkdir -p "$TLS"
(umask 077; openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=p2pnode-flood \
  -addext "subjectAltName=IP:127.0.0.1" -keyout "$TLS/key.pem" -out "$TLS/cert.pem" 2>/dev/null)
chmod 644 "$TLS/cert.pem"
write_config tls "$SRC/tests/serve/agents/replay.sh" "[\"$RESULT\"]" \
  "tls:
  cert_file: /etc/p2pnode/tls/cert.pem
  key_file: /etc/p2pnode/tls/key.pem"
SCHEME=https
CURL_TLS=(--cacert "$TLS/cert.pem")
start_daemon tls || exit 1
flood tls --cacert "$TLS/cert.pem"

finish
