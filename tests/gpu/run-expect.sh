#!/usr/bin/env bash
# On a 2x H200 box (device kind nvidia-h200-x2; any number of GPUs works). Run from the
# repository root after `bash tests/gpu/pack-expect.sh` here, carrying build-expect/:
#   run(kind=nvidia-h200-x2, carry=["build-expect"], command="bash tests/gpu/run-expect.sh")
# What it shows, into $OUT (8 files, the most a run returns):
#   expect-log.txt      the box (nvidia-smi topo -m, topo -p2p r/w, driver), every command and its
#                       exit status, `p2pnode check` without and with the agent's result (PHB -> NV18)
#   expect-1..3.json    three default agent runs (each carries `interconnect`, read through NVML)
#   expect-4mib.json    planted regressions: the same suite with --size 4MiB, and with --size 1MiB
#   expect-1mib.json    --copies 2 (copies too short to reach full bandwidth), judged in turn against
#                       the baseline of the three runs
#   expect-judge.txt    `p2pnode selftest judge` over the sequence with no hand-set thresholds: per
#                       cell measured / expected (ratio), threshold, baseline, and the regression
#   expect-judge-json.txt   the same as JSON
# The judge runs twice, the planted run in a second call that reads the state file the first one
# wrote: the baseline survives a restart as the daemon's does.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
. "$(dirname "$0")/lib.sh"
gpu_setup expect
{
  date -u; uname -r; nvidia-smi -L; nvidia-smi topo -m; nvidia-smi topo -p2p r; nvidia-smi topo -p2p w
  nvidia-smi --query-gpu=index,pci.bus_id,driver_version,clocks.sm,clocks.mem,power.draw,pstate --format=csv
  nvidia-smi nvlink -s -i 0 2>&1 | head -5
  ldconfig -p | grep -E 'libnvidia-ml|libcuda\.so\.1' || true
} >"$LOG" 2>&1

# The profile the judge uses: the H200 one without its hand-set min_bandwidth, so every threshold
# is a fraction (0.85) of the expected figure.
sed -e '/min_bandwidth:/,/any:/d' profiles/h200-nvlink.yaml > "$WORK/h200-expect.yaml"
say "profile without min_bandwidth:"; sed -n '/selftest:/,$p' "$WORK/h200-expect.yaml" >>"$LOG"

agent() {  # name, then agent arguments
  local name=$1; shift
  "$AGENT" "$@" >"$OUT/$name.json" 2>>"$LOG"
  say "agent $name rc=$? args: $*"
  python3 - "$OUT/$name.json" >>"$LOG" 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("   interconnect:", json.dumps(d.get("interconnect")))
PY
}
agent expect-1
agent expect-2
agent expect-3
agent expect-4mib --size 4MiB
agent expect-1mib --size 1MiB --copies 2

say "p2pnode check (sysfs only): the pair class the thresholds used before"
"$P2PNODE" check --root / --profile "$WORK/h200-expect.yaml" >>"$LOG" 2>&1; echo "rc=$?" >>"$LOG"
say "p2pnode check --agent-result expect-1.json: NVLink pairs as the driver reports them"
"$P2PNODE" check --root / --profile "$WORK/h200-expect.yaml" --agent-result "$OUT/expect-1.json" >>"$LOG" 2>&1
echo "rc=$?" >>"$LOG"

STATE=$WORK/state.json
J=$OUT/expect-judge.txt
{
  echo "== judge 1: three healthy runs build the baseline (no hand-set thresholds)"
  "$P2PNODE" selftest judge --root / --profile "$WORK/h200-expect.yaml" --state "$STATE" \
    "$OUT/expect-1.json" "$OUT/expect-2.json" "$OUT/expect-3.json"
  echo "rc=$?"
  echo "== judge 2 (a new process, the state file from judge 1): the planted regressions (--size 4MiB, then 1MiB)"
  "$P2PNODE" selftest judge --root / --profile "$WORK/h200-expect.yaml" --state "$STATE" \
    "$OUT/expect-4mib.json" "$OUT/expect-1mib.json"
  echo "rc=$?"
} >"$J" 2>&1
cat "$J" >>"$LOG"
# The same sequence as JSON, in one call over a fresh state.
"$P2PNODE" selftest judge --root / --profile "$WORK/h200-expect.yaml" --state "$WORK/state2.json" --json \
  "$OUT/expect-1.json" "$OUT/expect-2.json" "$OUT/expect-3.json" "$OUT/expect-4mib.json" "$OUT/expect-1mib.json" \
  >"$OUT/expect-judge-json.txt" 2>>"$LOG"
say "judge --json rc=$?"
rm -rf "$WORK"
ls -la "$OUT" >>"$LOG"
