#!/usr/bin/env bash
# The passive health pass on a GPU box (any kind: nvidia-h100-x1, nvidia-h200, nvidia-h200-x2 …),
# read-only: `p2pnode-agent --health` (NVML only, no CUDA context) and `p2pnode serve` with apply
# off, no self-test, a health pass every 2 s, for HEALTH_SECONDS (20 by default). Run from the
# repository root after `bash tests/gpu/pack-expect.sh` here, carrying build-expect/:
#   run(kind=nvidia-h200-x2, carry=["build-expect"], command="bash tests/gpu/run-health.sh")
# Into $OUT:
#   health-log.txt        the box (nvidia-smi -L, topo -m, nvlink -s/-e, AER files of every GPU and
#                         the bridges above them), each command with its exit status and wall time
#   agent-health.json     `p2pnode-agent --health --json`, as the daemon reads it
#   agent-health-2.json   the same again 5 s later (counters compared in the log)
#   health-api.json         GET /v1/health after the passes: devices on P2P paths with AER and link,
#                         NVLink per GPU and link, Xid events from /dev/kmsg, findings
#   health-metrics.txt    the health families of GET /metrics
#   status-api.json         GET /v1/status (its health summary)
#   serve-log.txt         the daemon's log
set -u
. "$(dirname "$0")/lib.sh"
gpu_setup health
SECONDS_TO_RUN=${HEALTH_SECONDS:-20}
timed() {  # timed NAME OUTFILE COMMAND...: stdout to OUTFILE, stderr to the log; logs rc and wall seconds
  local name=$1 out=$2 t0 rc; shift 2
  t0=$(date +%s.%N)
  "$@" >"$out" 2>>"$LOG"; rc=$?
  say "$name: rc=$rc in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }') s"
  return $rc
}
{
  date -u; uname -r; id -u; nvidia-smi -L; nvidia-smi topo -m
  nvidia-smi --query-gpu=index,pci.bus_id,driver_version,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max --format=csv
  nvidia-smi nvlink -s 2>&1 | head -40
  echo "-- nvidia-smi nvlink -e (the counters the agent reads through NVML)"; nvidia-smi nvlink -e 2>&1 | head -80
  echo "-- AER statistics of every NVIDIA function and the bridges above it"
  for d in /sys/bus/pci/devices/*; do
    [ "$(cat "$d/vendor")" = 0x10de ] || continue
    p=$(readlink -f "$d")
    while [ "$(basename "$p")" != "${p##*/pci}" ] && [ -e "$p/vendor" ]; do
      echo "$(basename "$p"): link $(cat "$p/current_link_speed" 2>/dev/null) x$(cat "$p/current_link_width" 2>/dev/null) of $(cat "$p/max_link_speed" 2>/dev/null) x$(cat "$p/max_link_width" 2>/dev/null);" \
        "correctable $(sed -n 's/^TOTAL_ERR_COR //p' "$p/aer_dev_correctable" 2>/dev/null || echo -)" \
        "nonfatal $(sed -n 's/^TOTAL_ERR_NONFATAL //p' "$p/aer_dev_nonfatal" 2>/dev/null || echo -)" \
        "fatal $(sed -n 's/^TOTAL_ERR_FATAL //p' "$p/aer_dev_fatal" 2>/dev/null || echo -)"
      p=$(dirname "$p")
    done
  done | sort -u
  echo "-- Xid lines in the kernel log"; dmesg 2>/dev/null | grep -c 'NVRM: Xid' ; dmesg 2>/dev/null | grep 'NVRM: Xid' | tail -5
} >>"$LOG" 2>&1

say "p2pnode-agent --health --json (NVML only)"
timed "agent --health" "$OUT/agent-health.json" "$AGENT" --health --json
sleep 5
timed "agent --health (again)" "$OUT/agent-health-2.json" "$AGENT" --health --json
python3 - "$OUT/agent-health.json" "$OUT/agent-health-2.json" >>"$LOG" 2>&1 <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
print("nvml:", json.dumps(a["nvml"]))
for g, h in zip(a["gpus"], b["gpus"]):
    act = sum(1 for l in g["links"] if l["active"])
    sums = {k: sum((l["errors"].get(k) or 0) for l in g["links"]) for k in ("replay", "recovery", "crc_flit", "crc_data", "ecc_data")}
    sums2 = {k: sum((l["errors"].get(k) or 0) for l in h["links"]) for k in sums}
    unsupported = sorted({k for l in g["links"] for k, v in l["errors"].items() if v is None})
    print(f'{g["pci_bus_id"]} {g["name"]}: {len(g["links"])} links, {act} active; errors {sums} -> {sums2}; not supported: {unsupported}')
PY

gpu_daemon_config "selftest:" "  on_start: false" "health:" "  interval: 2s" "  window: 10m"
say "p2pnode serve (apply off, no self-test, health every 2 s) for $SECONDS_TO_RUN s"
"$P2PNODE" serve --root / --config "$WORK/p2pnode.yaml" --port-file "$WORK/port" >"$OUT/serve-log.txt" 2>&1 &
pid=$!
for _ in $(seq 100); do [ -s "$WORK/port" ] && break; sleep 0.2; done
URL="http://127.0.0.1:$(cat "$WORK/port" 2>/dev/null)"
sleep "$SECONDS_TO_RUN"
get() { python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' "$URL$1"; }
get /v1/health >"$OUT/health-api.json"; say "GET /v1/health rc=$?"
get /v1/status >"$OUT/status-api.json"; say "GET /v1/status rc=$?"
get /metrics | grep -E '^(# (HELP|TYPE) )?p2pnode_(pcie_aer|pcie_link_degraded|nvlink|gpu_xid|health)' >"$OUT/health-metrics.txt"
kill -TERM "$pid"; wait "$pid"; say "serve stopped rc=$?"
python3 - "$OUT/health-api.json" >>"$LOG" 2>&1 <<'PY'
import json, sys
h = json.load(open(sys.argv[1]))
print("passes", h["passes"], "last pass took", h["pass_duration_s"], "s; problem:", h["problem"])
print("devices watched:", len(h["devices"]), {d["kind"] for d in h["devices"]})
print("without AER statistics:", [d["bdf"] for d in h["devices"] if d["aer"] is None])
print("nvlink:", {k: h["nvlink"][k] for k in ("read", "skipped", "driver_version")} if h["nvlink"] else None)
print("xid: source", h["xid"]["source"], "problem", h["xid"]["problem"], "counts", h["xid"]["counts"], "recent", len(h["xid"]["recent"]))
for f in h["findings"]:
    print("finding:", f["severity"], f["check"], f["subject"], f["summary"])
PY
rm -rf "$WORK"
ls -la "$OUT" >>"$LOG"
