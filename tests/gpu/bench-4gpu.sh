#!/usr/bin/env bash
# P2pnode-agent's default suite beside nvbandwidth's seven matching cases on one box,
# in one call: 4 GPUs (ROUNDS alternating rounds, default 3), then 2 and 1 GPUs by
# CUDA_VISIBLE_DEVICES (ROUNDS_SMALL rounds, default 2); wall time and peak RSS of each process
# (tests/gpu/runone.py: os.wait4, so each run's own peak), the figures of every case, the ratios
# (tests/gpu/bench_compare.py), and the planted corruption, which must still fail its cell.
#
# Build here (the GPU box has no compiler and no network), into a git-ignored folder that
# travels with the call (the device tool sends the session's checkout; see tests/gpu/README.md):
#   cmake --build build --target p2pnode-agent        # the agent, -DP2PNODE_AGENT=ON
#   nvbandwidth v0.8 from github.com/NVIDIA/nvbandwidth, built outside the repository for sm_90
#   (it needs Boost program_options and nvml.h; its code is never committed here)
#   mkdir -p build-bench/tests/gpu && cp build/agent/p2pnode-agent NVBANDWIDTH build-bench/ &&
#   strip --strip-debug build-bench/p2pnode-agent && cp tests/gpu/{bench-4gpu.sh,runone.py,bench_compare.py} build-bench/tests/gpu/
#   run(kind=nvidia-h100-x4, carry=["build-bench"], command="cd build-bench && B=. bash tests/gpu/bench-4gpu.sh")
# Writes under $OUT: bench-log.txt (the box,
# every run, the agent's --timings), runs.tsv, tables.md, agent-*.json (one per GPU count, the
# planted corruption) and nvbandwidth-*.txt (its JSON, kept out of the agent's schema test).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
B=${B:-build-bench}
ROUNDS=${ROUNDS:-3}
ROUNDS_SMALL=${ROUNDS_SMALL:-2}
W=$(mktemp -d)
LOG=$OUT/bench-log.txt
TSV=$OUT/runs.tsv
A="$B/p2pnode-agent"
NVB="$B/nvbandwidth"
# nvbandwidth's cases that measure what the agent's default suite measures (the agent also runs
# ce_bidir_bandwidth and its integrity passes, which nvbandwidth has no match for).
NVB_CASES="device_to_device_memcpy_write_ce device_to_device_memcpy_read_ce device_to_device_memcpy_write_sm
device_to_device_memcpy_read_sm device_to_device_latency_sm host_to_device_memcpy_ce device_to_host_memcpy_ce"
{
  date -u; uname -r; nvidia-smi -L; nvidia-smi topo -m
  nvidia-smi --query-gpu=index,pci.bus_id,clocks.sm,clocks.mem,power.draw,pstate,persistence_mode --format=csv
  for d in /sys/bus/pci/devices/*; do
    [ "$(cat "$d/vendor" 2>/dev/null)" = 0x10de ] && [ "$(cat "$d/class" 2>/dev/null | cut -c1-6)" = 0x0302 ] &&
      echo "$(basename "$d") numa_node=$(cat "$d/numa_node") local_cpus=$(cat "$d/local_cpulist")"
  done
  echo "NUMA nodes: $(ls -d /sys/devices/system/node/node* 2>/dev/null | wc -l); CPUs: $(nproc)"
  "$A" --version
} >"$LOG" 2>&1
printf 'tool\tgpus\tround\twall_s\tmaxrss_kb\trc\toutput\n' >"$TSV"

run() {  # tool gpus round name, then the command
  local tool=$1 gpus=$2 round=$3 name=$4; shift 4
  local r
  r=$(python3 tests/gpu/runone.py "$W/$name" "$@" 2>>"$W/$name.err")
  read -r wall rss rc <<<"$r"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$tool" "$gpus" "$round" "$wall" "$rss" "$rc" "$W/$name" >>"$TSV"
  echo "RUN $name gpus=$gpus round=$round wall_s=$wall maxrss_kb=$rss rc=$rc :: $*" | tee -a "$LOG"
}

visible() {  # the first N GPUs
  seq -s, 0 $(($1 - 1))
}

# 4 GPUs (or as many as the box has, up to 4): alternating rounds, nvbandwidth first in odd rounds.
N=$(nvidia-smi -L | wc -l); [ "$N" -gt 4 ] && N=4
for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) -eq 1 ]; then
    run nvbandwidth "$N" "$r" "nvb-$N-$r" env CUDA_VISIBLE_DEVICES=$(visible "$N") "$NVB" -j -t $NVB_CASES
    run agent "$N" "$r" "agent-$N-$r" env CUDA_VISIBLE_DEVICES=$(visible "$N") "$A" --timings
  else
    run agent "$N" "$r" "agent-$N-$r" env CUDA_VISIBLE_DEVICES=$(visible "$N") "$A" --timings
    run nvbandwidth "$N" "$r" "nvb-$N-$r" env CUDA_VISIBLE_DEVICES=$(visible "$N") "$NVB" -j -t $NVB_CASES
  fi
done
# Fewer GPUs, same box.
for g in 2 1; do
  [ "$g" -ge "$N" ] && continue
  for r in $(seq 1 "$ROUNDS_SMALL"); do
    run nvbandwidth "$g" "$r" "nvb-$g-$r" env CUDA_VISIBLE_DEVICES=$(visible "$g") "$NVB" -j -t $NVB_CASES
    run agent "$g" "$r" "agent-$g-$r" env CUDA_VISIBLE_DEVICES=$(visible "$g") "$A" --timings
  done
done
# Beside them, for the record (not in the ratios): serial mode.
run agent-serial "$N" 1 "agent-$N-serial" env CUDA_VISIBLE_DEVICES=$(visible "$N") "$A" --mode serial --timings
# The planted corruption must still fail its cell, by name (exit 1).
run agent-inject "$N" 1 "agent-inject" env CUDA_VISIBLE_DEVICES=$(visible "$N") "$A" --cases integrity --inject-corruption 0:1

python3 tests/gpu/bench_compare.py "$TSV" >"$OUT/tables.md" 2>&1
cat "$OUT/tables.md" >>"$LOG"
python3 - "$W" <<'PY' | tee -a "$LOG"
import json, sys, os
w = sys.argv[1]
for n in ("agent-4-serial", "agent-inject"):
    try:
        d = json.load(open(os.path.join(w, n)))
    except Exception as e:
        print(n, "no JSON", e); continue
    figs = {}
    for c in d["cases"]:
        for k, m in c.get("matrices", {}).items():
            v = [x for r in m for x in (r if isinstance(r, list) else [r]) if x]
            if v and k in ("bandwidth_gbps", "latency_ns", "h2d_bandwidth_gbps", "d2h_bandwidth_gbps"):
                figs[c["key"] + "/" + k] = round(sum(v) / len(v), 3)
    failed = [cell.get("reason") for c in d["cases"] for cell in c["cells"] if cell.get("status") == "failed"]
    print(n, "exit", d["exit_code"], "duration_s", d["duration_s"], "peak_rss", d["host"]["peak_rss_bytes"],
          "mode", d["schedule"]["mode"], "bad_bytes", d["summary"]["integrity_bad_bytes"], "failed cells", failed, figs)
PY
for f in "$W"/agent-*.err; do echo "--- $(basename "$f")"; cat "$f"; done >>"$LOG" 2>&1
for f in "$W"/nvb-*.err; do [ -s "$f" ] && { echo "--- $(basename "$f")"; tail -3 "$f"; }; done >>"$LOG" 2>&1
# At most 8 files come back: the log, the table, the TSV, one agent JSON per GPU count, the
# planted corruption, and every nvbandwidth output in one text file.
sed -i "s#$W/##" "$TSV"
cp "$W/agent-$N-1" "$OUT/agent-$N.json"
for g in 2 1; do [ -f "$W/agent-$g-1" ] && cp "$W/agent-$g-1" "$OUT/agent-$g.json"; done
cp "$W/agent-inject" "$OUT/agent-inject.json"
for f in "$W"/nvb-*[0-9]; do echo "=== $(basename "$f")"; cat "$f"; done >"$OUT/nvbandwidth-all.txt"
ls -la "$OUT"
