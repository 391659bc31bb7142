#!/usr/bin/env bash
# The agent on 4x H200 (device kind nvidia-h200-x4). Run from the repository root with the agent
# built here and carried in build-agent/:
#   run(kind=nvidia-h200-x4, carry=["build-agent"], command="bash tests/gpu/run-h200x4.sh")
# Writes the JSON documents and a log under $OUT.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
AGENT=${AGENT:-build-agent/p2pnode-agent}
. "$(dirname "$0")/lib.sh"
gpu_setup h200x4
{
  date -u; uname -r; nvidia-smi -L; nvidia-smi topo -m
  nvidia-smi --query-gpu=index,pci.bus_id,clocks.sm,clocks.mem,power.draw,pstate --format=csv
} >"$LOG" 2>&1

# The default suite in serial and in rounds mode, twice each (run-to-run noise).
agent_timed h200x4-serial
agent_timed h200x4-rounds --mode rounds
agent_timed h200x4-serial-2
agent_timed h200x4-rounds-2 --mode rounds
# Planted corruption on a pair of the second round, in rounds mode: caught and named?
agent_timed h200x4-inject --mode rounds --cases integrity --inject-corruption 2:3
# A time budget shorter than the suite: what is left is waived with the reason.
agent_timed h200x4-budget --time-budget 1
"$AGENT" --format table --mode rounds --cases ce_write_bandwidth,ce_bidir_bandwidth,latency >>"$LOG" 2>&1
echo "table rc=$?" >>"$LOG"
python3 tests/gpu/summarize.py "$OUT/h200x4-serial.json" "$OUT/h200x4-rounds.json" | tee -a "$LOG"
python3 tests/gpu/summarize.py "$OUT/h200x4-serial-2.json" "$OUT/h200x4-rounds-2.json" | tee -a "$LOG"
python3 tests/gpu/summarize.py "$OUT/h200x4-serial.json" "$OUT/h200x4-serial-2.json" | grep -E "compare|largest|>3%" | tee -a "$LOG"
for f in inject budget; do python3 tests/gpu/summarize.py "$OUT/h200x4-$f.json"; done | tee -a "$LOG"
# Memory checker over the kernels and copies, small sizes, no stream hold (the checker
# serializes launches). Its report goes to the log.
if command -v compute-sanitizer >/dev/null; then
  compute-sanitizer --tool memcheck --print-limit 5 --log-file "$OUT/sanitizer.txt" "$AGENT" --no-hold \
    --size 4MiB --integrity-size 1MiB --host-size 1MiB --iterations 1 --copies 1 --warmup 0 \
    --latency-accesses 256 >"$OUT/sanitizer.json"
  rc=$?
  echo "compute-sanitizer memcheck rc=$rc $(grep -h -E "ERROR SUMMARY" "$OUT/sanitizer.txt")" | tee -a "$LOG"
  python3 tests/gpu/summarize.py "$OUT/sanitizer.json" | head -3 | tee -a "$LOG"
  tail -3 "$OUT/sanitizer.txt" >>"$LOG"; rm -f "$OUT/sanitizer.json" "$OUT/sanitizer.txt"
fi
# Keep at most 8 files: fold the time -v outputs into the log.
for f in "$OUT"/time-*.txt; do echo "--- $f"; grep -E "Elapsed|Maximum resident" "$f"; done >>"$LOG" 2>/dev/null
rm -f "$OUT"/time-*.txt
ls -la "$OUT"
