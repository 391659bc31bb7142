#!/usr/bin/env bash
# The agent benchmark's first look on 4x H100 (device kind nvidia-h100-x4): where the agent's time and memory
# go at four GPUs, beside nvbandwidth v0.8's seven cases, and the knobs that might take them down.
# Run from the repository root with build-bench/ carried (p2pnode-agent and nvbandwidth, built
# here: see bench-4gpu.sh's header). Writes diag-log.txt and diag.tgz (every JSON) under $OUT.
# It ran (2026-11-27, on 4x H100) against a working build
# with three experiment switches that were taken out once measured: P2PNODE_SMAPS_OUT (copy of
# /proc/self/smaps at the fullest), P2PNODE_SM_COPY_SHAPE (blocks per SM:words per thread) and
# the then default of one sample per hold; kept as the record of what was measured.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
B=${B:-build-bench}
W=$(mktemp -d)
LOG=$OUT/diag-log.txt
{
  date -u; uname -r; nvidia-smi -L; nvidia-smi topo -m
  nvidia-smi --query-gpu=index,pci.bus_id,clocks.sm,clocks.mem,power.draw,pstate --format=csv
} >"$LOG" 2>&1

run() {  # name, then the command (env assignments through env)
  local name=$1; shift
  local r
  r=$(python3 tests/gpu/runone.py "$W/$name.json" "$@" 2>>"$W/$name.err")
  echo "RUN $name wall_s/maxrss_kb/rc: $r :: $*" | tee -a "$LOG"
}
A="$B/p2pnode-agent"
NVB_CASES="device_to_device_memcpy_write_ce device_to_device_memcpy_read_ce device_to_device_memcpy_write_sm device_to_device_memcpy_read_sm device_to_device_latency_sm host_to_device_memcpy_ce device_to_host_memcpy_ce"

# The default suite with the breakdown (stderr), twice; smaps at its fullest once.
run agent-default-1 env P2PNODE_SMAPS_OUT="$W/smaps.txt" "$A" --timings
run agent-default-2 "$A" --timings
# nvbandwidth's seven cases in one process.
run nvb-7 "$B/nvbandwidth" -j -t $NVB_CASES
# Memory knobs.
run agent-queues-025 env CUDA_SCALE_LAUNCH_QUEUES=0.25x "$A" --timings --cases peer_access,ce_write_bandwidth
run agent-queues-1 "$A" --timings --cases peer_access,ce_write_bandwidth
run agent-eager env CUDA_MODULE_LOADING=EAGER "$A" --timings --cases peer_access
run agent-host4m "$A" --timings --cases peer_access --host-size 4MiB
run agent-1gpu env CUDA_VISIBLE_DEVICES=0 "$A" --timings
run agent-2gpu env CUDA_VISIBLE_DEVICES=0,1 "$A" --timings
# SM copy launch shapes (blocks per SM : 16-byte words in flight per thread), one launch per sample.
for shape in 2:4 1:12 1:8 2:8 4:4; do
  run "agent-sm-${shape/:/x}" env P2PNODE_SM_COPY_SHAPE=$shape "$A" --cases sm_read_bandwidth,sm_write_bandwidth --pairs 0:1,1:0,2:3,3:2
done
# Latency: every SM (the default now) and 8 SMs; fewer accesses.
run agent-lat-all "$A" --cases latency
run agent-lat-8 "$A" --cases latency --latency-sms 8
run agent-lat-all-8k "$A" --cases latency --latency-accesses 8192
run agent-lat-all-1m "$A" --cases latency --latency-accesses 1000000 --pairs 0:1,1:0
# Host copies: buffer size and copies per sample.
for hs in 32 64 128 512; do run "agent-host-$hs" "$A" --cases host_device_bandwidth --host-size ${hs}MiB; done
run agent-host-32-c16 "$A" --cases host_device_bandwidth --copies 16
# Warm-up and copies per sample for the CE cases.
run agent-ce-w2c8 "$A" --cases ce_write_bandwidth,ce_read_bandwidth
run agent-ce-w1c8 "$A" --cases ce_write_bandwidth,ce_read_bandwidth --warmup 1
run agent-ce-w2c4 "$A" --cases ce_write_bandwidth,ce_read_bandwidth --copies 4
run agent-rounds "$A" --mode rounds --timings
# Planted corruption still caught.
run agent-inject "$A" --cases integrity --inject-corruption 0:1

python3 - "$W" <<'PY' | tee -a "$LOG"
import json, os, statistics, sys
w = sys.argv[1]
def doc(n):
    try: return json.load(open(os.path.join(w, n + ".json")))
    except Exception as e: return None
def mean_of(d, case, key):
    for c in (d or {}).get("cases", []):
        if c["key"] == case:
            v = [x for r in c["matrices"].get(key, []) for x in (r if isinstance(r, list) else [r]) if x]
            return round(statistics.mean(v), 3) if v else None
for n in sorted(f[:-5] for f in os.listdir(w) if f.endswith(".json") and f.startswith("agent")):
    d = doc(n)
    if not d: print(n, "no JSON"); continue
    figs = {k: mean_of(d, c, m) for k, c, m in [("cew", "ce_write_bandwidth", "bandwidth_gbps"), ("cer", "ce_read_bandwidth", "bandwidth_gbps"),
            ("smw", "sm_write_bandwidth", "bandwidth_gbps"), ("smr", "sm_read_bandwidth", "bandwidth_gbps"),
            ("lat", "latency", "latency_ns"), ("latwin", "latency", "latency_window_ns"),
            ("h2d", "host_device_bandwidth", "h2d_bandwidth_gbps"), ("d2h", "host_device_bandwidth", "d2h_bandwidth_gbps")]}
    print(n, "dur", d.get("duration_s"), "rss", d["host"]["peak_rss_bytes"] // 1000000, {k: v for k, v in figs.items() if v},
          "cases", {c["key"]: c["duration_s"] for c in d["cases"]}, "bad", d["summary"]["integrity_bad_bytes"], d.get("error"))
    if n == "agent-inject":
        print("  inject:", [c.get("reason") for c in d["cases"] if c["key"] == "integrity"], [cell.get("reason") for c in d["cases"] for cell in c["cells"] if cell.get("status") == "failed"][:2])
nv = doc("nvb-7")
if nv:
    for t in nv["nvbandwidth"]["testcases"]:
        v = [float(x) for r in t.get("bandwidth_matrix", []) for x in r if x not in ("N/A", None)]
        print("nvb", t["name"], round(statistics.mean(v), 3) if v else None, t.get("status"))
# The largest mappings of the fullest agent (default run 1).
try:
    cur, rows = None, []
    for line in open(os.path.join(w, "smaps.txt")):
        p = line.split()
        if p and not p[0].endswith(":"):
            cur = " ".join(p[5:]) or "[anon]"; size = 0
        elif p and p[0] == "Rss:":
            rows.append((int(p[1]), cur))
    agg = {}
    for kb, name in rows: agg[name] = agg.get(name, 0) + kb
    print("smaps: total Rss kB", sum(agg.values()))
    for name, kb in sorted(agg.items(), key=lambda x: -x[1])[:15]: print("  ", kb, name)
    big = sorted(rows, key=lambda x: -x[0])[:25]
    print("  largest single mappings kB:", [(kb, n) for kb, n in big])
except Exception as e:
    print("smaps:", e)
PY
for f in "$W"/agent-default-1.err "$W"/agent-1gpu.err "$W"/agent-2gpu.err "$W"/agent-queues-025.err "$W"/agent-queues-1.err "$W"/agent-eager.err "$W"/agent-host4m.err "$W"/agent-rounds.err; do
  echo "--- $f"; cat "$f"; done >>"$LOG" 2>&1
tail -5 "$W"/nvb-7.err >>"$LOG" 2>&1
tar czf "$OUT/diag.tgz" -C "$W" .
ls -la "$OUT"
