#!/usr/bin/env bash
# The agent on 2x H200 (device kind nvidia-h200-x2). Run from the repository root with the agent
# built here and carried in build-agent/:
#   run(kind=nvidia-h200-x2, carry=["build-agent"], command="bash tests/gpu/run-h200x2.sh")
# Writes the JSON documents and a log under $OUT.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
AGENT=${AGENT:-build-agent/p2pnode-agent}
. "$(dirname "$0")/lib.sh"
gpu_setup h200x2
{
  date -u; uname -r; nvidia-smi -L; nvidia-smi topo -m
  nvidia-smi --query-gpu=index,pci.bus_id,clocks.sm,clocks.mem,power.draw,pstate --format=csv
} >"$LOG" 2>&1

# The default suite, three times (the figures and the spread between runs).
agent_timed h200x2-default-1
agent_timed h200x2-default-2
agent_timed h200x2-default-3
# Rounds mode.
agent_timed h200x2-rounds --mode rounds
# Planted corruption: must be caught and named (exit 1, pair 0->1).
agent_timed h200x2-inject --cases integrity --inject-corruption 0:1
# Latency: from one SM, and as nvbandwidth (every SM, 1,000,000 loads), beside the default (8 SMs).
agent_timed h200x2-latency-1sm --cases latency --latency-sms 1
agent_timed h200x2-latency-allsm --cases latency --latency-sms 1024 --latency-accesses 1000000
# Human table, once.
"$AGENT" --format table --cases ce_write_bandwidth,latency,host_device_bandwidth >>"$LOG" 2>&1
echo "table rc=$?" >>"$LOG"

python3 tests/gpu/summarize.py "$OUT/h200x2-default-1.json" "$OUT/h200x2-rounds.json" | tee -a "$LOG"
python3 tests/gpu/summarize.py "$OUT/h200x2-default-2.json" "$OUT/h200x2-default-3.json" "$OUT/h200x2-inject.json" | tee -a "$LOG"
for f in latency-1sm latency-allsm; do python3 tests/gpu/summarize.py "$OUT/h200x2-$f.json"; done | tee -a "$LOG"
# Keep at most 8 files: fold the time -v outputs into the log.
for f in "$OUT"/time-*.txt; do echo "--- $f"; grep -E "Elapsed|Maximum resident" "$f"; done >>"$LOG" 2>/dev/null
rm -f "$OUT"/time-*.txt
# Default runs 2 and 3 are summarized in the log; keep their JSON small (drop cells).
for n in 2 3; do python3 - "$OUT/h200x2-default-$n.json" <<'PY'
import json, sys
p = sys.argv[1]; d = json.load(open(p))
for c in d["cases"]: c["cells"] = []
json.dump(d, open(p, "w"), indent=1)
PY
done
ls -la "$OUT"
