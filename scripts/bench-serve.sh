#!/bin/bash
# Benchmark of `p2pnode serve` on loopback with wrk (Debian): /metrics and /v1/status of an 8-GPU
# node (tests/fixtures/epyc-8x4090-4nvme) holding a full 8-GPU self-test result, beside Debian's
# prometheus-node-exporter serving its own /metrics in the same run. Prints a Markdown table.
#   latency at 500 req/s: wrk has no constant-rate mode (that is wrk2, not in Debian), so each of
#     8 connections waits 16 ms between requests (wrk's Lua delay()): about 500 req/s offered.
#   saturation: 2 threads, 8 connections, as fast as it answers.
#   flood (BENCH_FLOOD=1, the default): the p2pnode runs again while tests/serve/flood.py holds
#     1,000 idle and 100 trickling connections from 127.0.0.3 (wrk connects from 127.0.0.1),
#     reopening each one the daemon closes; 15 s to settle first.
#   RSS from /proc/PID/status; idle CPU from /proc/PID/stat (utime+stime) over 10 s of no requests.
# usage: scripts/bench-serve.sh [PATH-TO-p2pnode]   (BENCH_SECONDS=10 per run)
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BIN=$(readlink -f "${1:-$SRC/build/daemon/p2pnode}")
SECS=${BENCH_SECONDS:-10}
command -v wrk >/dev/null || { echo "bench-serve: wrk is not installed (apt-get install wrk)" >&2; exit 77; }
WORK=$(mktemp -d /tmp/p2pnode-bench.XXXXXX)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill $p 2>/dev/null || true; done; rm -rf "$WORK"' EXIT

wait_until() {
  local deadline=$(( $(date +%s) + $1 )); shift
  until "$@" 2>/dev/null; do [ "$(date +%s)" -lt "$deadline" ] || return 1; sleep 0.1; done
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# --- the node: 8x RTX 4090 fixture, its profile, a synthesised 8-GPU self-test result ---
source "$SRC/tests/serve/eight_gpu_node.sh"
rc=0; start_eight_gpu_node "$BIN" "$SRC" "$WORK" || rc=$?
DPID=$NODE_PID; PIDS+=($DPID)
[ $rc -eq 0 ] || { echo "bench-serve: the node did not come up" >&2; exit 1; }
P2P="http://$NODE_ADDR"
STATE=$(curl -s "$P2P/v1/status" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')

NE=""
if command -v prometheus-node-exporter >/dev/null; then
  NEPORT=$(free_port)
  prometheus-node-exporter --web.listen-address="127.0.0.1:$NEPORT" > "$WORK/ne.log" 2>&1 &
  NEPID=$!; PIDS+=($NEPID)
  NE="http://127.0.0.1:$NEPORT"
  wait_until 20 curl -sf "$NE/metrics" -o /dev/null
else
  echo "bench-serve: prometheus-node-exporter is not installed; its column is left out" >&2
fi

cat > "$WORK/pace.lua" <<'LUA'
-- About 500 requests/s in total: 8 connections, each waiting 16 ms between requests.
function delay() return 16 end
LUA

# run URL MODE -> "p50 p90 p99 max req/s"
run() {
  local out
  if [ "$2" = paced ]; then out=$(wrk -t2 -c8 -d"${SECS}s" --latency -s "$WORK/pace.lua" "$1")
  else out=$(wrk -t2 -c8 -d"${SECS}s" --latency "$1"); fi
  echo "$out" >> "$WORK/wrk.log"
  python3 - "$out" <<'PY'
import re, sys
t = sys.argv[1]
def ms(v):
    m = re.match(r"([\d.]+)(us|ms|s)", v)
    x = float(m.group(1)); return x / 1000 if m.group(2) == "us" else x * 1000 if m.group(2) == "s" else x
pct = dict(re.findall(r"^\s+(\d+)%\s+(\S+)", t, re.M))
mx = re.search(r"Latency\s+\S+\s+\S+\s+(\S+)", t)
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", t).group(1))
errs = re.search(r"Non-2xx or 3xx responses: (\d+)", t)
sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", t)
bad = (int(errs.group(1)) if errs else 0) + (sum(int(x) for x in sock.groups()) if sock else 0)
if "50" not in pct or not mx:  # nothing answered
    print("- - - - %.0f %d" % (rps, bad))
else:
    print("%.3f %.3f %.3f %.3f %.0f %d" % (ms(pct["50"]), ms(pct["90"]), ms(pct["99"]), ms(mx.group(1)), rps, bad))
PY
}
rss_mb() { awk '/VmRSS/ {printf "%.1f", $2/1024}' /proc/$1/status; }
cpu_ticks() { awk '{print $14 + $15}' /proc/$1/stat; }
idle_cpu() {  # percent of one CPU over 10 s with no requests
  local a b; a=$(cpu_ticks $1); sleep 10; b=$(cpu_ticks $1)
  python3 -c "print('%.2f' % (($b - $a) / $(getconf CLK_TCK) / 10 * 100))"
}

echo "measuring idle CPU (10 s each)…" >&2
P2P_IDLE=$(idle_cpu $DPID); NE_IDLE=""
[ -n "$NE" ] && NE_IDLE=$(idle_cpu $NEPID)
P2P_RSS0=$(rss_mb $DPID)
declare -A R
for target in p2p_metrics p2p_status ne_metrics; do
  case $target in
    p2p_metrics) url="$P2P/metrics" ;;
    p2p_status) url="$P2P/v1/status" ;;
    ne_metrics) [ -n "$NE" ] || continue; url="$NE/metrics" ;;
  esac
  echo "wrk $url…" >&2
  R[$target.paced]=$(run "$url" paced)
  R[$target.sat]=$(run "$url" saturate)
  R[$target.bytes]=$(curl -s "$url" | wc -c)
done
P2P_RSS=$(rss_mb $DPID); NE_RSS=""
[ -n "$NE" ] && NE_RSS=$(rss_mb $NEPID)

P2P_RSS_FLOOD="-"; FLOOD=""
if [ "${BENCH_FLOOD:-1}" = 1 ]; then
  echo "flood from 127.0.0.3 (15 s to settle)…" >&2
  python3 "$SRC/tests/serve/flood.py" --port "${NODE_ADDR##*:}" --flood-source 127.0.0.3 --settle 15 \
    --hold $(( SECS * 4 + 5 )) > "$WORK/flood.json" &
  FPID=$!; PIDS+=($FPID)
  sleep 15
  for target in p2p_metrics p2p_status; do
    url="$P2P/metrics"; [ $target = p2p_status ] && url="$P2P/v1/status"
    echo "wrk $url under the flood…" >&2
    R[$target.flood.paced]=$(run "$url" paced)
    R[$target.flood.sat]=$(run "$url" saturate)
    R[$target.flood.bytes]=${R[$target.bytes]}
  done
  P2P_RSS_FLOOD=$(rss_mb $DPID)
  wait $FPID || true
  FLOOD=$(python3 -c 'import json,sys; f=json.load(open(sys.argv[1]))["flood"]; print("flood: %d connections opened, %d closed by the daemon, %d held when it settled" % (f["opened"], f["closed_by_server"], f["held_at_start"]))' "$WORK/flood.json" 2>/dev/null || echo "flood: no figures")
fi

f() { echo "${R[$1]:-- - - - - -}" | awk -v i=$2 '{print $i}'; }
echo
echo "Node: epyc-8x4090-4nvme fixture (8 GPUs, 56 pairs, full self-test), node state: $STATE; $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)."
echo
echo "| endpoint | body bytes | p50 / p90 / p99 / max ms at ~500 req/s | achieved req/s | p99 ms at saturation | req/s at saturation (8 conns) | non-2xx or socket errors |"
echo "|---|---|---|---|---|---|---|"
for t in p2p_metrics p2p_status ne_metrics p2p_metrics.flood p2p_status.flood; do
  [ -n "${R[$t.paced]:-}" ] || continue
  case $t in
    p2p_metrics) name="p2pnode /metrics" ;;
    p2p_status) name="p2pnode /v1/status" ;;
    ne_metrics) name="node_exporter /metrics" ;;
    p2p_metrics.flood) name="p2pnode /metrics, flood beside" ;;
    p2p_status.flood) name="p2pnode /v1/status, flood beside" ;;
  esac
  echo "| $name | ${R[$t.bytes]} | $(f $t.paced 1) / $(f $t.paced 2) / $(f $t.paced 3) / $(f $t.paced 4) | $(f $t.paced 5) | $(f $t.sat 3) | $(f $t.sat 5) | $(( $(f $t.paced 6) + $(f $t.sat 6) )) |"
done
echo
[ -n "$FLOOD" ] && { echo; echo "$FLOOD"; }
echo
echo "| process | RSS MiB idle | RSS MiB after the runs | RSS MiB under the flood | idle CPU % of one core (10 s) |"
echo "|---|---|---|---|---|"
echo "| p2pnode serve | $P2P_RSS0 | $P2P_RSS | $P2P_RSS_FLOOD | $P2P_IDLE |"
[ -n "$NE" ] && echo "| prometheus-node-exporter | - | $NE_RSS | - | $NE_IDLE |"
exit 0
