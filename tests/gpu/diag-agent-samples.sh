#!/usr/bin/env bash
# The agent benchmark's second look on 4x H100: the samples now follow each other in one hold (warm-up once);
# copies per sample, SM copy launch shapes, host buffer size and the memory and exit knobs, beside
# nvbandwidth's bandwidth cases on the same boot. Writes diag2-log.txt and diag2.tgz under $OUT.
# It ran (2026-11-27, on 4x H100) against a working build
# with experiment switches taken out once measured (P2PNODE_SM_COPY_SHAPE, P2PNODE_FAST_EXIT:
# leaving the teardown to the kernel saved nothing); kept as the record of what was measured.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
B=${B:-build-bench}
W=$(mktemp -d)
LOG=$OUT/diag2-log.txt
{ date -u; nvidia-smi -L; } >"$LOG" 2>&1
run() {
  local name=$1; shift
  local r
  r=$(python3 tests/gpu/runone.py "$W/$name.json" "$@" 2>>"$W/$name.err")
  echo "RUN $name wall_s/maxrss_kb/rc: $r :: $*" | tee -a "$LOG"
}
A="$B/p2pnode-agent"
run agent-c8w2 "$A" --timings
run agent-c6w1 "$A" --timings --copies 6 --warmup 1
run agent-c4w1 "$A" --timings --copies 4 --warmup 1
run nvb-6 "$B/nvbandwidth" -j -t device_to_device_memcpy_write_ce device_to_device_memcpy_read_ce device_to_device_memcpy_write_sm device_to_device_memcpy_read_sm host_to_device_memcpy_ce device_to_host_memcpy_ce
run agent-c6w1-b "$A" --copies 6 --warmup 1
for shape in 2:4 4:4 1:12 2:8; do
  run "agent-sm-${shape/:/x}" env P2PNODE_SM_COPY_SHAPE=$shape "$A" --cases sm_read_bandwidth,sm_write_bandwidth --copies 6 --warmup 1
done
run agent-sm-2x4-c16 "$A" --cases sm_read_bandwidth --copies 16 --warmup 1
for hs in 8 16 32; do run "agent-host-$hs" "$A" --cases host_device_bandwidth --host-size ${hs}MiB --copies 6 --warmup 1; done
run agent-base "$A" --timings --cases peer_access
run agent-arena env MALLOC_ARENA_MAX=1 "$A" --timings --cases peer_access
run agent-queues env CUDA_SCALE_LAUNCH_QUEUES=0.25x "$A" --timings --cases peer_access
run agent-fastexit env P2PNODE_FAST_EXIT=1 "$A" --timings --cases peer_access
run agent-all3 env MALLOC_ARENA_MAX=1 CUDA_SCALE_LAUNCH_QUEUES=0.25x P2PNODE_FAST_EXIT=1 "$A" --timings --host-size 8MiB --copies 6 --warmup 1
run agent-inject "$A" --cases integrity --inject-corruption 0:1
python3 - "$W" <<'PY' | tee -a "$LOG"
import json, os, statistics, sys
w = sys.argv[1]
def doc(n):
    try: return json.load(open(os.path.join(w, n + ".json")))
    except Exception: return None
def mean_of(d, case, key):
    for c in (d or {}).get("cases", []):
        if c["key"] == case:
            v = [x for r in c["matrices"].get(key, []) for x in (r if isinstance(r, list) else [r]) if x]
            return round(statistics.mean(v), 3) if v else None
nv = doc("nvb-6"); nvv = {}
if nv:
    for t in nv["nvbandwidth"]["testcases"]:
        v = [float(x) for r in t.get("bandwidth_matrix", []) for x in r if x not in ("N/A", None)]
        nvv[t["name"]] = statistics.mean(v) if v else None
        print("nvb", t["name"], round(nvv[t["name"]], 3) if v else None)
M = [("cew", "ce_write_bandwidth", "bandwidth_gbps", "device_to_device_memcpy_write_ce"), ("cer", "ce_read_bandwidth", "bandwidth_gbps", "device_to_device_memcpy_read_ce"),
     ("smw", "sm_write_bandwidth", "bandwidth_gbps", "device_to_device_memcpy_write_sm"), ("smr", "sm_read_bandwidth", "bandwidth_gbps", "device_to_device_memcpy_read_sm"),
     ("lat", "latency", "latency_ns", None), ("h2d", "host_device_bandwidth", "h2d_bandwidth_gbps", "host_to_device_memcpy_ce"), ("d2h", "host_device_bandwidth", "d2h_bandwidth_gbps", "device_to_host_memcpy_ce")]
for n in sorted(f[:-5] for f in os.listdir(w) if f.endswith(".json") and f.startswith("agent")):
    d = doc(n)
    if not d: print(n, "no JSON"); continue
    out = {}
    for k, c, m, nk in M:
        v = mean_of(d, c, m)
        if v: out[k] = (v, round(v / nvv[nk], 4) if nk and nvv.get(nk) else None)
    print(n, "dur", d.get("duration_s"), "rss", d["host"]["peak_rss_bytes"] // 1000000, out, "bad", d["summary"]["integrity_bad_bytes"])
    print("   cases", {c["key"]: c["duration_s"] for c in d["cases"] if c["duration_s"] > 0.001})
PY
for n in agent-c6w1 agent-base agent-arena agent-queues agent-fastexit agent-all3; do echo "--- $n"; cat "$W/$n.err"; done >>"$LOG" 2>&1
tar czf "$OUT/diag2.tgz" -C "$W" .
