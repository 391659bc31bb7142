#!/usr/bin/env bash
# A healthy box stays quiet, read-only: `p2pnode serve` on the real root with its default
# health pass (every 10 s, a 10-minute window, NVLink counters through `p2pnode-agent --health`),
# three runs of the agent's self-tests while it watches, then IDLE_S seconds of quiet (600 by
# default; less where the device budget is short). /metrics is scraped every 15 s: the series the
# alert rules would see (tests/gpu/quiet-alerts.py turns them into promtool cases that expect no
# alert), /v1/health at the end (no finding expected), `nvidia-smi nvlink -e` before and after.
# Run from the repository root after `bash tests/gpu/pack-expect.sh` here, carrying build-expect/:
#   run(kind=nvidia-h100-x4, carry=["build-expect"], command="IDLE_S=360 bash tests/gpu/run-quiet-box.sh")
# Into $OUT: quiet-log.txt, health-api.json,
# metrics-series.txt, serve-log.txt, nvlink-e.txt. Changes nothing on the box.
set -u
. "$(dirname "$0")/lib.sh"
gpu_setup quiet
IDLE_S=${IDLE_S:-600}
{ date -u; uname -r; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,pcie.link.gen.current --format=csv,noheader; } >>"$LOG" 2>&1
{ echo "-- before"; nvidia-smi nvlink -e; } >"$OUT/nvlink-e.txt" 2>&1

gpu_daemon_config
"$BIN/p2pnode" serve --root / --config "$WORK/p2pnode.yaml" --port-file "$WORK/port" >"$OUT/serve-log.txt" 2>&1 &
pid=$!
for _ in $(seq 100); do [ -s "$WORK/port" ] && break; sleep 0.2; done
URL="http://127.0.0.1:$(cat "$WORK/port" 2>/dev/null)"
say "p2pnode serve at $URL (pid $pid), default health pass"
get() { python3 -c 'import sys, urllib.request
try: sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())
except Exception as e: sys.stdout.write(getattr(e, "read", lambda: b"")().decode())' "$URL$1"; }
# Every 15 s: "# t=<unix>" and the health series (what Prometheus would scrape).
scrape() {
  while kill -0 "$pid" 2>/dev/null; do
    echo "# t=$(date +%s)"
    get /metrics | grep -E '^p2pnode_(nvlink_errors_total|nvlink_active_links|pcie_aer_errors_total|pcie_link_degraded|gpu_pcie_replays_total|gpu_recovery_action|gpu_memory_untrusted|gpu_xid_events_total|health_finding|health_last_pass_timestamp_seconds)[{ ]'
    sleep 15
  done >"$OUT/metrics-series.txt"
}
scrape & spid=$!
sleep 30
for i in 1 2 3; do
  t0=$(date +%s.%N)
  "$AGENT" --json >"$WORK/selftest-$i.json" 2>>"$LOG"; rc=$?
  say "self-test $i: rc=$rc in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b - a}') s, $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d.get("summary", {}) if isinstance(d, dict) else "")' "$WORK/selftest-$i.json" 2>&1 | head -c 300)"
done
say "quiet for $IDLE_S s"
sleep "$IDLE_S"
get /v1/health >"$OUT/health-api.json"
get /v1/selftest >"$WORK/selftest-api.json"
kill -TERM "$pid"; wait "$pid"; kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
{ echo "-- after"; nvidia-smi nvlink -e; } >>"$OUT/nvlink-e.txt" 2>&1
python3 - "$OUT/health-api.json" >>"$LOG" 2>&1 <<'PY'
import json, sys
h = json.load(open(sys.argv[1]))
print("daemon: passes", h["passes"], "window_s", h["window_s"], "problem", h.get("problem"),
      "agent read:", h["nvlink"]["read"] if h.get("nvlink") else None)
for g in h["nvlink"]["gpus"]:
    sums, rates = {}, {}
    for l in g["links"]:
        for k, v in l["errors"].items(): sums[k] = sums.get(k, 0) + (v or 0)
        for k, v in (l.get("rise") or {}).items(): rates[k] = rates.get(k, 0) + v
    print(" ", g["gpu"], "active links", g["active_links"], "counters", sums, "rise in window", rates)
for g in h.get("gpus", []): print(" ", g["gpu"], "pcie replays", g["pcie"]["replay"])
print("findings:", len(h["findings"]))
for f in h["findings"]: print("  finding:", f["severity"], f["check"], f["subject"], f["summary"])
PY
say "done: $(grep -c '^# t=' "$OUT/metrics-series.txt") scrapes"
rm -rf "$WORK"
